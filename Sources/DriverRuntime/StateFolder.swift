import BackingStore
import Glibc
import POSIXHelpers

/// The folder of the drivers' status records, opened once and checked: a
/// folder (not a link to one) owned by this user (root's may also be owned
/// by root when we are root) and writable by no one else. In /tmp anyone
/// could have made /tmp/appsandboxfs-<uid> first, or put a link in it to
/// make a driver overwrite another file: such a folder is refused, and
/// every record is opened, written, renamed and removed relative to the
/// checked descriptor, without following links (O_NOFOLLOW).
public final class StateFolder: Sendable {
    /// The folder does not exist (and was not to be created).
    public struct Missing: Error {}

    public let path: String
    private let fd: Int32

    public init(_ path: String, create: Bool) throws {
        self.path = path
        if create, mkdir(path, 0o700) != 0, errno != EEXIST {
            throw Failure("\(path): cannot be created: \(errorText(errno))")
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw Missing() }
            throw Failure("\(path): \(errno == ELOOP || errno == ENOTDIR ? "not a folder (a link?)" : errorText(errno))")
        }
        var status = stat()
        guard fstat(fd, &status) == 0 else {
            close(fd)
            throw Failure("\(path): \(errorText(errno))")
        }
        if let problem = Self.problem(owner: status.st_uid, mode: status.st_mode) {
            close(fd)
            throw Failure("\(path): \(problem); not used (remove it, or set APPSANDBOXFS_STATE_DIR)")
        }
        self.fd = fd
    }

    /// Why a folder with this owner and mode is unsafe, nil when it is safe.
    public static func problem(owner: uid_t, mode: mode_t) -> String? {
        if owner != geteuid() { return "owned by uid \(owner), not by this user (uid \(geteuid()))" }
        if mode & 0o022 != 0 { return "writable by others (mode \(String(mode & 0o7777, radix: 8)))" }
        return nil
    }

    deinit { close(fd) }

    /// Writes `bytes` as `name` whole: to a hidden name first, then renamed.
    public func write(_ name: String, _ bytes: [UInt8]) throws {
        let temporary = ".\(name).partial"
        unlinkat(fd, temporary, 0)
        let file = openat(fd, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard file >= 0 else { throw Failure("\(path)/\(temporary): \(errorText(errno))") }
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(file, $0.baseAddress! + done, bytes.count - done) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let code = errno
                close(file)
                unlinkat(fd, temporary, 0)
                throw Failure("\(path)/\(temporary): \(errorText(code))")
            }
            done += count
        }
        close(file)
        guard renameat(fd, temporary, fd, name) == 0 else {
            let code = errno
            unlinkat(fd, temporary, 0)
            throw Failure("\(path)/\(name): \(errorText(code))")
        }
    }

    /// A record's bytes; nil when it cannot be read or is not a plain file.
    public func read(_ name: String) -> [UInt8]? {
        let file = openat(fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var status = stat()
        guard fstat(file, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size < 1 << 20 else { return nil }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = Glibc.read(file, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    public func remove(_ name: String) { unlinkat(fd, name, 0) }

    /// A new descriptor of the folder itself, for a caller that opens
    /// files in it later (the driver's tmp locks).
    public func duplicate() -> Int32? {
        let copy = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        return copy >= 0 ? copy : nil
    }

    public func names() -> [String] {
        let copy = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard copy >= 0, let dir = fdopendir(copy) else { return [] }
        return directoryNames(closing: dir)
    }
}
