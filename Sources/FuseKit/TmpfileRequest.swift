import CFuse
import Glibc

/// FUSE_TMPFILE (open(2) with O_TMPFILE), which libfuse 3.14 does not know:
/// it would answer ENOSYS, and the kernel would then fail every O_TMPFILE
/// open on the mount with EOPNOTSUPP. The request carries what a CREATE
/// carries (fuse_create_in, then a name), and its reply is a CREATE's
/// (entry and open), so it is handed to libfuse as a CREATE. Its name is
/// the one the kernel gives the unnamed dentry, "/", which no real entry
/// can have: the create callback tells the two apart by it and calls
/// `FileSystemOperations.tmpfile`.
enum TmpfileRequest {
    static let tmpfileOpcode: UInt32 = 51
    static let createOpcode: UInt32 = 35

    /// Rewrites a FUSE_TMPFILE request in `buffer` (one request as read
    /// from /dev/fuse, `length` bytes) into a FUSE_CREATE, in place.
    static func mapToCreate(_ buffer: UnsafeMutableRawPointer?, length: Int) {
        guard let buffer, length >= MemoryLayout<cfuse_in_header>.size else { return }
        let opcodeOffset = MemoryLayout<UInt32>.size  // fuse_in_header: len, opcode, ...
        guard buffer.load(fromByteOffset: opcodeOffset, as: UInt32.self) == tmpfileOpcode else { return }
        buffer.storeBytes(of: createOpcode, toByteOffset: opcodeOffset, as: UInt32.self)
    }

    /// Whether a CREATE's name is the one a mapped FUSE_TMPFILE carries.
    static func isTmpfile(_ name: UnsafePointer<CChar>) -> Bool {
        name[0] == 0x2F && name[1] == 0
    }
}
