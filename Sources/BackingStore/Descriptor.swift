import CLinux
import Glibc
import SystemPackage

/// The identity of a file in the backing store. Node ids of the kernel come
/// and go; this pair stays as long as the file exists.
public struct InodeKey: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64
    public init(_ stat: stat) {
        device = UInt64(stat.st_dev)
        inode = UInt64(stat.st_ino)
    }

    /// The node table finds a node by its inode on every lookup and
    /// create; the default would run the seeded hasher over both numbers
    /// each time. Here they are mixed (splitmix64's finalizer) with a key
    /// the seeded hasher drew once for this process and with the table's
    /// own seed: as unpredictable to someone who makes files, at a few
    /// multiplies.
    public func _rawHashValue(seed: Int) -> Int {
        var mixed = inode ^ (device &* 0x9E37_79B9_7F4A_7C15) ^ Self.processKey ^ UInt64(bitPattern: Int64(seed))
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(bitPattern: UInt(mixed ^ (mixed >> 31)))
    }

    private static let processKey: UInt64 = {
        var hasher = Hasher()
        hasher.combine(0x6173_6673 as UInt64)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }()
}

/// System calls relative to a descriptor. Every path given here is one name
/// (the kernel never passes a slash inside a name), looked up in a folder
/// held by an O_PATH descriptor, and never followed if it is a symbolic link:
/// so nothing outside the backing root is ever reached (rule E3).
///
/// Descriptors come and go as swift-system `FileDescriptor`s (a zero-cost
/// wrapper of the raw number), failures as the `Errno` that `check` throws.
public enum Backing {
    // MARK: Looking up

    /// Opens `name` in `folder` as an O_PATH descriptor without following it.
    public static func openPath(in folder: FileDescriptor, _ name: UnsafePointer<CChar>) throws(Errno) -> FileDescriptor {
        try FileDescriptor(rawValue: check { openat(folder.rawValue, name, Int32(asfs_O_PATH) | O_NOFOLLOW | O_CLOEXEC) })
    }

    /// Opens a folder by absolute path as an O_PATH descriptor (the roots only).
    public static func openRoot(_ path: String) throws(Errno) -> FileDescriptor {
        try FileDescriptor(rawValue: check { open(path, Int32(asfs_O_PATH) | O_DIRECTORY | O_CLOEXEC) })
    }

    /// lstat of the file a descriptor holds.
    public static func stat(_ fd: FileDescriptor) throws(Errno) -> Glibc.stat {
        var result = Glibc.stat()
        _ = try check { fstatat(fd.rawValue, "", &result, Int32(asfs_AT_EMPTY_PATH) | AT_SYMLINK_NOFOLLOW) }
        return result
    }

    /// lstat of `name` in `folder`.
    public static func stat(in folder: FileDescriptor, _ name: UnsafePointer<CChar>) throws(Errno) -> Glibc.stat {
        var result = Glibc.stat()
        _ = try check { fstatat(folder.rawValue, name, &result, AT_SYMLINK_NOFOLLOW) }
        return result
    }

    // MARK: Opening

    /// Opens the file an O_PATH descriptor holds for I/O with `flags`.
    /// O_CREAT and O_EXCL are meaningless here and O_NOFOLLOW would refuse
    /// the /proc link itself, so they are dropped.
    public static func reopen(_ fd: FileDescriptor, flags: Int32) throws(Errno) -> FileDescriptor {
        let cleaned = (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY)) | O_CLOEXEC
        return try FileDescriptor(rawValue: ProcPath.with(fd) { (path) throws(Errno) in try check { open(path, cleaned) } })
    }

    /// Creates and opens a new regular file `name` in `folder`; EEXIST when
    /// the name is taken, whatever the caller's flags: the driver never
    /// opens, as a create, a file that someone else put there.
    public static func create(in folder: FileDescriptor, _ name: UnsafePointer<CChar>, flags: Int32, mode: mode_t) throws(Errno) -> FileDescriptor {
        try FileDescriptor(rawValue: check { openat(folder.rawValue, name, (flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC) & ~O_NOCTTY, mode) })
    }

    /// Opens a new regular file with no name in `folder` (O_TMPFILE), which
    /// linkat(2) may name later. Of `flags` only the access mode and the
    /// flags that shape later I/O are kept; never O_EXCL, which would make
    /// it unlinkable for the driver too (the kernel enforces the caller's
    /// O_EXCL on its own inode).
    public static func openTemporary(in folder: FileDescriptor, flags: Int32, mode: mode_t) throws(Errno) -> FileDescriptor {
        let kept = flags & (O_ACCMODE | O_APPEND | O_SYNC | O_DSYNC)
        return try FileDescriptor(rawValue: check { openat(folder.rawValue, ".", kept | Int32(asfs_O_TMPFILE) | O_CLOEXEC, mode) })
    }

    /// Opens a folder for reading its entries.
    public static func openDirectory(_ fd: FileDescriptor) throws(Errno) -> FileDescriptor {
        try FileDescriptor(rawValue: check { openat(fd.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
    }

    // MARK: Making and removing

    public static func mkdir(in folder: FileDescriptor, _ name: UnsafePointer<CChar>, mode: mode_t) throws(Errno) {
        _ = try check { mkdirat(folder.rawValue, name, mode) }
    }

    public static func mknod(in folder: FileDescriptor, _ name: UnsafePointer<CChar>, mode: mode_t, device: dev_t) throws(Errno) {
        _ = try check { mknodat(folder.rawValue, name, mode, device) }
    }

    public static func symlink(_ target: UnsafePointer<CChar>, in folder: FileDescriptor, _ name: UnsafePointer<CChar>) throws(Errno) {
        _ = try check { symlinkat(target, folder.rawValue, name) }
    }

    /// A new name for the file an O_PATH descriptor holds.
    public static func link(_ fd: FileDescriptor, in folder: FileDescriptor, _ name: UnsafePointer<CChar>) throws(Errno) {
        _ = try check { linkat(fd.rawValue, "", folder.rawValue, name, Int32(asfs_AT_EMPTY_PATH)) }
    }

    public static func unlink(in folder: FileDescriptor, _ name: UnsafePointer<CChar>) throws(Errno) {
        _ = try check { unlinkat(folder.rawValue, name, 0) }
    }

    public static func rmdir(in folder: FileDescriptor, _ name: UnsafePointer<CChar>) throws(Errno) {
        _ = try check { unlinkat(folder.rawValue, name, AT_REMOVEDIR) }
    }

    public static func rename(in folder: FileDescriptor, _ name: UnsafePointer<CChar>, to newFolder: FileDescriptor,
                              _ newName: UnsafePointer<CChar>, flags: UInt32) throws(Errno) {
        _ = try check { asfs_renameat2(folder.rawValue, name, newFolder.rawValue, newName, flags) }
    }

    public static func readlink(_ fd: FileDescriptor, into buffer: UnsafeMutableBufferPointer<CChar>) throws(Errno) -> Int {
        try check { readlinkat(fd.rawValue, "", buffer.baseAddress!, buffer.count) }
    }

    /// The target of the symbolic link `name` in `folder`, or nil when
    /// `name` is not one (or is missing).
    public static func linkTarget(in folder: FileDescriptor, _ name: UnsafePointer<CChar>) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = buffer.withUnsafeMutableBufferPointer { b in
            b.baseAddress!.withMemoryRebound(to: CChar.self, capacity: b.count) { readlinkat(folder.rawValue, name, $0, b.count) }
        }
        guard count > 0 else { return nil }
        buffer.removeLast(buffer.count - count)
        return buffer
    }

    // MARK: Attributes

    public static func chmod(_ fd: FileDescriptor, mode: mode_t) throws(Errno) {
        try ProcPath.with(fd) { (path) throws(Errno) in _ = try check { Glibc.chmod(path, mode) } }
    }

    /// chown of the file a descriptor holds (an O_PATH one of a symbolic
    /// link included: the link itself); -1 leaves a part as it is. There is
    /// no chown by name: a name may hold another file by the time it runs.
    public static func chown(_ fd: FileDescriptor, uid: uid_t, gid: gid_t) throws(Errno) {
        _ = try check { fchownat(fd.rawValue, "", uid, gid, Int32(asfs_AT_EMPTY_PATH) | AT_SYMLINK_NOFOLLOW) }
    }

    public static func truncate(_ fd: FileDescriptor, size: off_t) throws(Errno) {
        try ProcPath.with(fd) { (path) throws(Errno) in _ = try check { Glibc.truncate(path, size) } }
    }

    /// Sets times of the file a descriptor holds (an O_PATH one included).
    public static func setTimes(_ fd: FileDescriptor, _ times: (timespec, timespec), isSymlink: Bool) throws(Errno) {
        var pair = [times.0, times.1]
        if isSymlink {
            _ = try check { utimensat(fd.rawValue, "", &pair, Int32(asfs_AT_EMPTY_PATH) | AT_SYMLINK_NOFOLLOW) }
        } else {
            try ProcPath.with(fd) { (path) throws(Errno) in _ = try check { utimensat(AT_FDCWD, path, &pair, 0) } }
        }
    }

    public static func statfs(_ fd: FileDescriptor) throws(Errno) -> statvfs {
        var result = statvfs()
        _ = try check { fstatvfs(fd.rawValue, &result) }
        return result
    }

    // MARK: Extended attributes (by backing name; see XattrNames)

    public static func setxattr(_ fd: FileDescriptor, _ name: UnsafePointer<CChar>, _ value: UnsafeRawBufferPointer, flags: Int32) throws(Errno) {
        try ProcPath.with(fd) { (path) throws(Errno) in
            _ = try check { asfs_setxattr(path, name, value.baseAddress, value.count, flags) }
        }
    }

    public static func getxattr(_ fd: FileDescriptor, _ name: UnsafePointer<CChar>, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try ProcPath.with(fd) { (path) throws(Errno) in
            try check { asfs_getxattr(path, name, buffer.baseAddress, buffer.count) }
        }
    }

    public static func listxattr(_ fd: FileDescriptor, into buffer: UnsafeMutableBufferPointer<CChar>) throws(Errno) -> Int {
        try ProcPath.with(fd) { (path) throws(Errno) in
            try check { asfs_listxattr(path, buffer.baseAddress, buffer.count) }
        }
    }

    public static func removexattr(_ fd: FileDescriptor, _ name: UnsafePointer<CChar>) throws(Errno) {
        try ProcPath.with(fd) { (path) throws(Errno) in _ = try check { asfs_removexattr(path, name) } }
    }

    // MARK: Data on an open descriptor

    public static func pwrite(_ fd: FileDescriptor, _ data: UnsafeRawBufferPointer, at offset: off_t) throws(Errno) -> Int {
        try check { Glibc.pwrite(fd.rawValue, data.baseAddress, data.count, offset) }
    }

    public static func fallocate(_ fd: FileDescriptor, mode: Int32, offset: off_t, length: off_t) throws(Errno) {
        _ = try check { asfs_fallocate(fd.rawValue, mode, offset, length) }
    }

    public static func copyFileRange(from source: FileDescriptor, at sourceOffset: off_t, to destination: FileDescriptor, at destinationOffset: off_t,
                                     length: Int, flags: UInt32) throws(Errno) -> Int {
        var inOffset = sourceOffset
        var outOffset = destinationOffset
        return try check { asfs_copy_file_range(source.rawValue, &inOffset, destination.rawValue, &outOffset, length, flags) }
    }

    public static func lseek(_ fd: FileDescriptor, offset: off_t, whence: Int32) throws(Errno) -> off_t {
        try check { Glibc.lseek(fd.rawValue, offset, whence) }
    }

    /// Whether `offset` lies past the largest file the descriptor's file
    /// system allows (its s_maxbytes: 16 TiB on ext4 with 4 KiB blocks),
    /// which lseek(2) refuses as a position (EINVAL). Puts the position
    /// back; nothing of the driver reads or writes at it.
    public static func isPastMaximumSize(_ fd: FileDescriptor, _ offset: off_t) -> Bool {
        let position = Glibc.lseek(fd.rawValue, 0, SEEK_CUR)
        guard position >= 0 else { return false }
        let refused = Glibc.lseek(fd.rawValue, offset, SEEK_SET) < 0 && errno == EINVAL
        _ = Glibc.lseek(fd.rawValue, position, SEEK_SET)
        return refused
    }

    public static func fsync(_ fd: FileDescriptor, dataOnly: Bool) throws(Errno) {
        _ = try check { dataOnly ? fdatasync(fd.rawValue) : Glibc.fsync(fd.rawValue) }
    }

    public static func close(_ fd: FileDescriptor) {
        _ = Glibc.close(fd.rawValue)
    }
}
