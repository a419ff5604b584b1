import CLinux
import Glibc
import SystemPackage

/// A Linux file handle (name_to_handle_at): names a file for as long as it
/// exists, without holding a descriptor, so a node can give its descriptor
/// back and open the file again later with open_by_handle_at.
///
/// Kept inline (no allocation per node): ext4's handles are 8 bytes, xfs's
/// and btrfs's at most 24 without the parent. A larger one is refused and
/// the node keeps its descriptor instead.
public struct BackingHandle: Sendable, Equatable {
    public static let capacity = 32
    public let type: Int32
    /// The mount the file was reached through; the handle is opened
    /// relative to a descriptor on that mount.
    public let mountID: Int32
    let length: UInt8
    var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// The handle of the file an O_PATH descriptor holds. Fails with
    /// EOPNOTSUPP when the file system cannot make handles, EOVERFLOW when
    /// its handle is larger than `capacity`.
    public init(of fd: FileDescriptor) throws(Errno) {
        var length = 0
        var type: Int32 = 0
        var mountID: Int32 = 0
        var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        _ = try withUnsafeMutableBytes(of: &bytes) { (raw) throws(Errno) in
            try check { asfs_name_to_handle(fd.rawValue, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), raw.count,
                                            &length, &type, &mountID) }
        }
        self.type = type
        self.mountID = mountID
        self.length = UInt8(length)
        self.bytes = bytes
    }
}

extension BackingHandle {
    /// Two handles name the same file: the same bytes (on ext4 the inode
    /// number and its generation, so a reused inode number gets another
    /// handle) on the same mount.
    public static func == (a: BackingHandle, b: BackingHandle) -> Bool {
        a.type == b.type && a.mountID == b.mountID && a.length == b.length
            && a.bytes.0 == b.bytes.0 && a.bytes.1 == b.bytes.1 && a.bytes.2 == b.bytes.2 && a.bytes.3 == b.bytes.3
    }
}

extension Backing {
    /// Opens the file a handle names, as an O_PATH descriptor. `mount` is
    /// any descriptor on the handle's mount that is not itself O_PATH.
    /// ESTALE when the file no longer exists; EPERM without
    /// CAP_DAC_READ_SEARCH.
    public static func openHandle(_ handle: BackingHandle, mount: FileDescriptor) throws(Errno) -> FileDescriptor {
        var bytes = handle.bytes
        let length = Int(handle.length)
        let fd = try withUnsafeBytes(of: &bytes) { (raw) throws(Errno) in
            try check { asfs_open_by_handle(mount.rawValue, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), length, handle.type,
                                            Int32(asfs_O_PATH) | O_NOFOLLOW | O_CLOEXEC) }
        }
        return FileDescriptor(rawValue: fd)
    }

    /// A descriptor to open handles against: O_PATH ones are refused there.
    public static func openMount(_ path: String) throws(Errno) -> FileDescriptor {
        try FileDescriptor(rawValue: check { Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) })
    }
}
