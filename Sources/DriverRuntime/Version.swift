import CLinux

/// Which appsandboxfs this is: `appsandboxfs --version`, `status --json`
/// and the driver's first log line say it.
public enum Version {
    /// Raised by hand at each release.
    public static let number = "0.1.0"

    /// `git describe --always --dirty` of the checkout it was built from,
    /// when the build passed it (mount-scripts/setup.sh does); nil else.
    public static var commit: String? {
        let text = String(cString: asfs_build_commit())
        return text.isEmpty ? nil : text
    }

    /// "0.1.0" or "0.1.0 (v0.1.0-12-gabc1234)".
    public static var description: String { commit.map { "\(number) (\($0))" } ?? number }
}
