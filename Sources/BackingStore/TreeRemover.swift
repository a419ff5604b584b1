import CLinux
import Glibc
import SystemPackage

/// Empties a folder without ever leaving it (rule T3): every step is an
/// `*at()` call relative to a descriptor of a folder already inside, a
/// symbolic link is removed as a link and never followed, a mount point or
/// anything on another device is left alone, and read-only folders are made
/// writable first so that their contents can go.
public enum TreeRemover {
    /// What could not be removed, as paths relative to the folder, with the errno.
    public struct Failure: Sendable, CustomStringConvertible {
        public var path: String
        public var errno: Errno
        public var description: String { "\(path): \(errno)" }
    }

    /// Removes everything inside the folder at `path` (the folder itself stays).
    /// The folder itself is opened without following a link.
    public static func removeContents(ofFolderAt path: String) -> [Failure] {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return [Failure(path: ".", errno: Errno(rawValue: errno))] }
        defer { close(fd) }
        var failures: [Failure] = []
        var folderStat = stat()
        guard fstat(fd, &folderStat) == 0 else { return [Failure(path: ".", errno: Errno(rawValue: errno))] }
        removeContents(of: fd, device: folderStat.st_dev, prefix: "", failures: &failures)
        return failures
    }

    /// Removes everything inside the folder open as `folder` (an O_RDONLY
    /// or O_PATH descriptor of a folder; the folder itself stays): for callers
    /// that opened and checked the folder themselves.
    public static func removeContents(ofFolder folder: FileDescriptor) -> [Failure] {
        let fd = openat(folder.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return [Failure(path: ".", errno: Errno(rawValue: errno))] }
        defer { close(fd) }
        var folderStat = stat()
        guard fstat(fd, &folderStat) == 0 else { return [Failure(path: ".", errno: Errno(rawValue: errno))] }
        var failures: [Failure] = []
        removeContents(of: fd, device: folderStat.st_dev, prefix: "", failures: &failures)
        return failures
    }

    /// Makes the folder `name` in `folder` enterable (0700). chmod and
    /// fchmodat follow a final symbolic link (and AT_SYMLINK_NOFOLLOW is
    /// EOPNOTSUPP on Linux), and `name` may have been swapped for a link
    /// since it was looked at: so the chmod goes through an O_PATH
    /// descriptor opened without following, which must hold a folder.
    private static func openUp(_ name: UnsafePointer<CChar>, in folder: Int32) {
        let fd = openat(folder, name, Int32(asfs_O_PATH) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var held = stat()
        guard fstat(fd, &held) == 0, held.st_mode & S_IFMT == S_IFDIR else { return }
        _ = try? ProcPath.with(FileDescriptor(rawValue: fd)) { (path) throws(Errno) in chmod(path, 0o700) }
    }

    private static func removeContents(of folder: Int32, device: dev_t, prefix: String, failures: inout [Failure]) {
        // Read all names first: removing while reading a directory stream may skip entries.
        guard let names = entries(of: folder) else {
            failures.append(Failure(path: prefix.isEmpty ? "." : prefix, errno: Errno(rawValue: errno)))
            return
        }
        for rawName in names {
            let display = String(decoding: rawName.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let path = prefix.isEmpty ? display : prefix + "/" + display
            let name = rawName
            var entryStat = stat()
            guard fstatat(folder, name, &entryStat, AT_SYMLINK_NOFOLLOW) == 0 else {
                if errno != ENOENT { failures.append(Failure(path: path, errno: Errno(rawValue: errno))) }
                continue
            }
            if entryStat.st_mode & S_IFMT == S_IFDIR {
                guard entryStat.st_dev == device else {
                    failures.append(Failure(path: path, errno: .improperLink))
                    continue
                }
                var child = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if child < 0 && errno == EACCES {
                    openUp(name, in: folder)
                    child = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                }
                guard child >= 0 else {
                    failures.append(Failure(path: path, errno: Errno(rawValue: errno)))
                    continue
                }
                // A folder we cannot write to keeps its entries: open it up.
                if entryStat.st_mode & 0o700 != 0o700 { _ = fchmod(child, 0o700) }
                removeContents(of: child, device: device, prefix: path, failures: &failures)
                close(child)
                if unlinkat(folder, name, AT_REMOVEDIR) != 0 && errno != ENOENT {
                    failures.append(Failure(path: path, errno: Errno(rawValue: errno)))
                }
            } else if unlinkat(folder, name, 0) != 0 && errno != ENOENT {
                failures.append(Failure(path: path, errno: Errno(rawValue: errno)))
            }
        }
    }

    /// The names in a folder as raw NUL-terminated bytes (names need not be
    /// UTF-8), without "." and "..", read through a duplicate descriptor.
    private static func entries(of folder: Int32) -> [[CChar]]? {
        let fd = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = fdopendir(fd) else { return nil }
        defer { closedir(stream) }
        var names: [[CChar]] = []
        while let entry = readdir(stream) {
            let name: [CChar] = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { Array(UnsafeBufferPointer(start: $0, count: strlen($0) + 1)) }
            }
            if name != [0x2E, 0] && name != [0x2E, 0x2E, 0] { names.append(name) }
        }
        return names
    }
}
