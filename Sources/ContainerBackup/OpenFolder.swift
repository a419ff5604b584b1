import BackingStore
import Glibc
import SystemPackage

/// One name in a folder, as the raw bytes the file system keeps (names need
/// not be UTF-8), without a NUL.
public typealias RawName = [UInt8]

extension Array where Element == UInt8 {
    /// Calls `body` with the bytes as a NUL-terminated C string.
    func withCName<T>(_ body: (UnsafePointer<CChar>) throws(Errno) -> T) throws(Errno) -> T {
        let terminated = self + [0]
        return try terminated.withUnsafeBufferPointer { buffer in
            Result { () throws(Errno) in
                try buffer.withMemoryRebound(to: CChar.self) { (chars) throws(Errno) in try body(chars.baseAddress!) }
            }
        }.get()
    }

    /// The bytes shown as text: invalid UTF-8 becomes U+FFFD.
    var displayText: String { String(decoding: self, as: UTF8.self) }
}

/// A path below the container root as text, names joined with "/";
/// "." for the root itself.
func displayPath(_ components: [RawName]) -> String {
    components.isEmpty ? "." : components.map(\.displayText).joined(separator: "/")
}

/// A folder of the backing directory, held open for reading its entries.
///
/// Every lookup is one name relative to this descriptor and never follows a
/// symbolic link (rule E3), so a walk that starts at the backing root can
/// never leave it. The descriptor closes with the value.
final class OpenFolder {
    let fd: FileDescriptor
    /// The folder's own lstat.
    let status: stat

    private init(fd: FileDescriptor) throws(Errno) {
        self.fd = fd
        do {
            status = try Backing.stat(fd)
        } catch {
            Backing.close(fd)
            throw error
        }
    }

    deinit { Backing.close(fd) }

    /// Opens the folder at an absolute path: the root of a walk. The path
    /// itself may go through symbolic links (the user named it); nothing
    /// below it will.
    static func root(_ path: String) throws(Errno) -> OpenFolder {
        let fd = try check { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        return try OpenFolder(fd: FileDescriptor(rawValue: fd))
    }

    /// Opens the folder `name` inside this one; ENOTDIR or ELOOP when it is
    /// not a folder (a symbolic link to one included).
    func folder(_ name: RawName) throws(Errno) -> OpenFolder {
        let fd = try name.withCName { (cName) throws(Errno) in
            try check { openat(self.fd.rawValue, cName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        }
        return try OpenFolder(fd: FileDescriptor(rawValue: fd))
    }

    /// The names in the folder, without "." and "..", sorted byte by byte so
    /// that every walk of the same tree visits it in the same order.
    func names() throws(Errno) -> [RawName] {
        // A duplicate for the stream: closedir closes it, not `fd`.
        let copy = try check { openat(fd.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard let stream = fdopendir(copy) else {
            let code = errno
            Glibc.close(copy)
            throw Errno(rawValue: code)
        }
        defer { closedir(stream) }
        var names: [RawName] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw Errno(rawValue: errno) }
                break
            }
            let name: RawName = directoryEntryName(entry)
            if name != [0x2E] && name != [0x2E, 0x2E] { names.append(name) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// lstat of `name` in this folder.
    func status(of name: RawName) throws(Errno) -> stat {
        try name.withCName { (cName) throws(Errno) in try Backing.stat(in: fd, cName) }
    }

    /// The backup flags of `name` in this folder. Symbolic links carry none
    /// (Linux keeps no `user.` attributes on them).
    func flags(of name: RawName, kind: EntryKind) throws(Errno) -> FlagReading {
        if kind == .symlink || kind == .socket { return .none }
        let path = try name.withCName { (cName) throws(Errno) in try Backing.openPath(in: fd, cName) }
        defer { Backing.close(path) }
        return try FlagReading.read(path)
    }

    /// The backup flags of this folder itself.
    func ownFlags() throws(Errno) -> FlagReading {
        try FlagReading.read(fd)
    }

    func unlink(_ name: RawName) throws(Errno) {
        try name.withCName { (cName) throws(Errno) in try Backing.unlink(in: fd, cName) }
    }

    func removeFolder(_ name: RawName) throws(Errno) {
        try name.withCName { (cName) throws(Errno) in try Backing.rmdir(in: fd, cName) }
    }

    /// chmod of `name` in this folder (a folder: never a link).
    func setMode(of name: RawName, _ mode: mode_t) throws(Errno) {
        _ = try name.withCName { (cName) throws(Errno) in try check { fchmodat(fd.rawValue, cName, mode, 0) } }
    }
}

/// What an entry is, as a backup sees it.
public enum EntryKind: String, Sendable, Hashable, Codable {
    case file, folder, symlink
    /// A FIFO or a device node: archived as such.
    case other
    /// A socket: no archive can hold one.
    case socket

    init(mode: mode_t) {
        switch mode & S_IFMT {
        case S_IFREG: self = .file
        case S_IFDIR: self = .folder
        case S_IFLNK: self = .symlink
        case S_IFSOCK: self = .socket
        default: self = .other
        }
    }
}
