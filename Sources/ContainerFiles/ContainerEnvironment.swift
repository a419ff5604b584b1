/// The environment under which a program on Linux finds an iOS app's
/// folders where a device puts them: what `appsandboxfs env` prints,
/// `appsandboxfs run` sets, and `MountedContainer.environment` gives.
///
/// Foundation on Linux (swift-foundation, swift-corelibs-foundation) reads:
///
/// | variable          | value                            | what reads it |
/// |-------------------|----------------------------------|---------------|
/// | HOME              | the container's root             | shells and tools; the fallback of the XDG variables |
/// | CFFIXED_USER_HOME | the container's root             | `NSHomeDirectory()`, `homeDirectoryForCurrentUser`, so `documentDirectory` (home/Documents); Foundation reads it before the password database, never HOME |
/// | TMPDIR            | `tmp/`, with the slash           | `NSTemporaryDirectory()`, `FileManager.temporaryDirectory` |
/// | XDG_DATA_HOME     | `Library/Application Support`    | `applicationSupportDirectory` (else $HOME/.local/share) |
/// | XDG_CACHE_HOME    | `Library/Caches`                 | `cachesDirectory` (else $HOME/.cache); SwiftPM's and clang's caches |
/// | XDG_CONFIG_HOME   | `Library/Preferences`            | `UserDefaults` (its plists, else $HOME/.config); SwiftPM's configuration |
///
/// Foundation on Linux has no `libraryDirectory` (an empty list) whatever
/// the environment: `ContainerFolder.library.url` gives it.
public enum ContainerEnvironment {
    /// The variables for the container whose root is `root` (a path without
    /// a trailing slash), in the order above.
    public static func variables(root: String) -> [(name: String, value: String)] {
        func folder(_ folder: ContainerFolder) -> String { root + "/" + folder.relativePath }
        return [
            ("HOME", root),
            ("CFFIXED_USER_HOME", root),
            ("TMPDIR", folder(.tmp) + "/"),
            ("XDG_DATA_HOME", folder(.applicationSupport)),
            ("XDG_CACHE_HOME", folder(.caches)),
            ("XDG_CONFIG_HOME", folder(.preferences)),
        ]
    }
}
