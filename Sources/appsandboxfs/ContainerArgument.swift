import DriverRuntime
import Glibc
import MountInfo
import POSIXHelpers
import SandboxPolicy

/// The CONTAINER argument of backup-report, purge and backup: a backing
/// directory, or the mountpoint of a mounted container (then its backing
/// directory is read, from the mount table).
struct ContainerArgument {
    /// As given, made absolute.
    let path: String
    /// The backing directory.
    let backing: String

    init(_ argument: String) throws {
        path = absolutePath(argument)
        backing = try backingDirectory(of: path)
        try MountChecks.folder(backing, role: "container")
    }

    /// A container known by its backing directory (an app's data container
    /// on a device, `--app`).
    init(backing: String) throws {
        path = backing
        self.backing = backing
        try MountChecks.folder(backing, role: "container")
    }

    /// Where the container is mounted now (empty when it is not).
    var mountpoints: [String] { MountTable.mountpoints(ofBacking: backing) }

    /// The container's layout: the app is `appName`, else the one `*.app`
    /// folder in the backing directory. Checks first that it is a container
    /// (the bundle may live elsewhere: `mount --bundle`).
    func layout(appName: String?) throws -> ContainerLayout {
        let missing = ContainerLayout.requiredFolders.filter { !isFolder(backing + "/" + $0) }
        if !missing.isEmpty {
            throw Failure("\(backing): not a container: missing \(missing.joined(separator: ", ")) (create it with `appsandboxfs init`)")
        }
        let name = try appName ?? ContainerDriver.guessAppName(in: backing)
        if let problem = ContainerLayout.problemWithAppName(name) {
            throw Failure("app name \"\(name)\": \(problem)")
        }
        return ContainerLayout(appName: name)
    }
}

/// The backing directory of `path`: read from the mount table (and
/// trusted as `trustedBacking` checks) when something is mounted there,
/// else `path` itself. For the CONTAINER and DEVICE arguments.
func backingDirectory(of path: String) throws -> String {
    guard let entry = MountTable.entry(at: path) else { return path }
    return try entry.trustedBacking()
}

/// Whether `path` is `folder` or lies below it (both absolute, standardized).
func isInside(_ path: String, _ folder: String) -> Bool {
    path == folder || path.hasPrefix(folder.hasSuffix("/") ? folder : folder + "/")
}
