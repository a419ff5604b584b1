import Glibc
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
        if let entry = MountTable.entry(at: path) {
            guard entry.fsType == MountTable.containerType else {
                throw Failure("\(path): a mount point of \(entry.fsType), not of a container")
            }
            backing = entry.source
        } else {
            backing = path
        }
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
        let name = try appName ?? MountCommand.guessAppName(in: backing)
        if let problem = ContainerLayout.problemWithAppName(name) {
            throw Failure("app name \"\(name)\": \(problem)")
        }
        return ContainerLayout(appName: name)
    }
}

extension MountTable {
    static let containerType = "fuse.appsandboxfs"

    /// The mountpoints at which the backing directory `backing` is mounted
    /// as a container. The mount table names each container mount's backing
    /// directory as its source; a source is this one when it is the same
    /// path or the same folder (device and inode), so another spelling of
    /// the path (through a symbolic link, say) is found too. A stale mount
    /// (its driver died) still counts: it must be unmounted first.
    static func mountpoints(ofBacking backing: String) -> [String] {
        var own = stat()
        let known = stat(backing, &own) == 0
        return entries().filter { entry in
            guard entry.fsType == containerType else { return false }
            if entry.source == backing { return true }
            var other = stat()
            return known && entry.source.hasPrefix("/") && stat(entry.source, &other) == 0
                && other.st_dev == own.st_dev && other.st_ino == own.st_ino
        }.map(\.mountpoint)
    }
}

/// Whether `path` is a folder (not a symbolic link to one).
func isFolder(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
}

/// Whether `path` is `folder` or lies below it (both absolute, standardized).
func isInside(_ path: String, _ folder: String) -> Bool {
    path == folder || path.hasPrefix(folder.hasSuffix("/") ? folder : folder + "/")
}
