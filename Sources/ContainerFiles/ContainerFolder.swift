import Foundation
// Defined once, in SandboxPolicy (pure Swift, every platform); re-exported,
// so that `import ContainerFiles` is all an app needs.
@_exported import enum SandboxPolicy.ContainerFolder

/// The standard folders of an iOS app's container, as the app finds them
/// (the list itself is in SandboxPolicy).
///
/// On iOS and macOS `url` is what Foundation answers (`FileManager.urls(for:in:)`,
/// `NSTemporaryDirectory()`). Foundation on Linux has no `libraryDirectory`
/// and finds the others through XDG variables, so there `url` is the
/// folder's place below `NSHomeDirectory()` (tmp: `NSTemporaryDirectory()`),
/// which is the container's root when the program runs under
/// `appsandboxfs run` (see `ContainerEnvironment`).
extension ContainerFolder {
    /// The folder in the container whose root is `root` (a test's mountpoint, say).
    public func url(inContainer root: URL) -> URL {
        root.appendingPathComponent(relativePath, isDirectory: true)
    }

    /// The folder of the running app's own container. It may not exist yet:
    /// an app creates Application Support itself.
    public var url: URL {
        if self == .tmp { return URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true) }
        #if canImport(Darwin)
        let manager = FileManager.default
        func first(_ directory: FileManager.SearchPathDirectory) -> URL {
            manager.urls(for: directory, in: .userDomainMask)[0]
        }
        switch self {
        case .documents: return first(.documentDirectory)
        case .inbox: return first(.documentDirectory).appendingPathComponent("Inbox", isDirectory: true)
        case .library: return first(.libraryDirectory)
        case .applicationSupport: return first(.applicationSupportDirectory)
        case .caches: return first(.cachesDirectory)
        case .preferences: return first(.libraryDirectory).appendingPathComponent("Preferences", isDirectory: true)
        case .tmp: return URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        }
        #else
        return url(inContainer: URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true))
        #endif
    }
}
