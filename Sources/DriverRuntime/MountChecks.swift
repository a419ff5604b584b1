import AppSandboxFS
import Glibc
import MountInfo
import POSIXHelpers
import SandboxPolicy

/// The checks `mount` makes before it mounts (rule L1): each failure is one
/// line naming the path and the problem, and nothing has been changed.
public enum MountChecks {
    public static func folder(_ path: String, role: String) throws {
        var s = stat()
        guard stat(path, &s) == 0 else {
            if errno == ENOTCONN {
                throw Failure("\(path): a stale mount (its driver died: transport endpoint is not connected); run `appsandboxfs unmount \(path)` or mount with --recover")
            }
            throw Failure("\(role) \(path): \(errorText(errno))")
        }
        guard s.st_mode & S_IFMT == S_IFDIR else { throw Failure("\(role) \(path): not a folder") }
    }

    /// A file the driver will append to: it can be opened (or created).
    /// Creating it is the only change a failed mount may leave, and only
    /// where the user asked for that file. A symbolic link there is refused
    /// (the driver runs as root: a link would aim its appends anywhere).
    public static func writableFile(_ path: String, role: String) throws {
        let fd = openLogFile(path)
        guard fd >= 0 else {
            if errno == ELOOP { throw Failure("\(role) \(path): a symbolic link; refused (name the file itself)") }
            throw Failure("\(role) \(path): \(errorText(errno))")
        }
        close(fd)
    }

    /// The one way a log file is opened for appending: never through a
    /// final symbolic link (ELOOP then).
    public static func openLogFile(_ path: String) -> Int32 {
        open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
    }

    public static func mountpointUsable(_ path: String) throws {
        // Only a mount can be stale: the probe (a statfs on a thread of its
        // own, which reaches the driver where stat may be answered from the
        // kernel's cache) runs for a path the mount table lists, not for
        // the plain folder a mountpoint usually is.
        let mounted = MountTable.entry(at: path)
        if mounted != nil && MountTable.isStale(path) {
            throw Failure("mountpoint \(path): a stale mount (its driver died: transport endpoint is not connected); run `appsandboxfs unmount \(path)` or mount with --recover")
        }
        try folder(path, role: "mountpoint")
        if let mounted {
            throw Failure("mountpoint \(path): already mounted (\(mounted.fsType))")
        }
        guard let entries = try? FileManagerless.list(path) else {
            throw Failure("mountpoint \(path): cannot be read")
        }
        if !entries.isEmpty { throw Failure("mountpoint \(path): not empty (\(entries.count) entries)") }
    }

    public static func fuseDeviceUsable() throws {
        let fd = open("/dev/fuse", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            throw Failure("/dev/fuse: \(errorText(errno)) (install fuse3, and run as root or a user allowed to use FUSE)")
        }
        close(fd)
    }

    public static func container(_ container: Container, bundleElsewhere: Bool) throws {
        let missing = container.missingParts(bundleElsewhere: bundleElsewhere)
        guard missing.isEmpty else {
            throw Failure("\(container.backing): not a container: missing \(missing.joined(separator: ", ")) (create it with `appsandboxfs init` or mount with --create)")
        }
    }
}

extension String {
    public init(contentsOfFileWithoutFoundation path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("\(path): \(errorText(errno))") }
        defer { close(fd) }
        // A read error ends the text where it stopped, as the end would.
        self = String(decoding: readToEnd(fd).bytes, as: UTF8.self)
    }
}

public enum FileHandleless {
    public static func warn(_ message: String) {
        var bytes = Array("appsandboxfs: \(message)\n".utf8)
        _ = write(STDERR_FILENO, &bytes, bytes.count)
    }
}
