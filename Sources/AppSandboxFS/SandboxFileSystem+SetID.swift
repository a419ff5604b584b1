import BackingStore
import FuseKit
import Glibc
import SystemPackage

// Set-user-ID and set-group-ID bits on write. With FUSE passthrough the
// session takes FUSE_HANDLE_KILLPRIV_V2 (a GETXATTR round trip less per
// passthrough write), and the kernel then leaves clearing these bits to the
// driver, whose own writes, as root, clear nothing on the backing file.
extension SandboxFileSystem {
    /// Whether this request's write, truncation or fallocate must clear the
    /// bits: the kernel left it to the driver and the caller is not root
    /// (the kernel asks for CAP_FSETID, which a non-root caller of this
    /// mount does not have).
    func mustClearSetIDBits(_ request: Request) -> Bool {
        request.serverClearsSetIDBits && request.caller.uid != 0
    }

    /// The bits a write by a caller without CAP_FSETID clears: S_ISUID,
    /// and S_ISGID if the group may execute (otherwise it marks mandatory
    /// locking, not set-group-ID).
    static func setIDBitsToClear(_ mode: mode_t) -> mode_t {
        var bits = mode & S_ISUID
        if mode & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP { bits |= S_ISGID }
        return bits
    }

    /// Clears the bits of an open file. A failure fails the request that
    /// asked for it, as the kernel fails a write whose privileges it cannot
    /// remove: the bits must never stay on silently.
    static func dropSetIDBits(_ fd: FileDescriptor) throws(Errno) {
        let now = try Backing.stat(fd)
        let bits = setIDBitsToClear(now.st_mode)
        if bits != 0 { _ = try check { fchmod(fd.rawValue, now.st_mode & 0o7777 & ~bits) } }
    }

    /// Clears the bits of a node (its O_PATH descriptor).
    static func dropSetIDBits(node fd: FileDescriptor) throws(Errno) {
        let now = try Backing.stat(fd)
        let bits = setIDBitsToClear(now.st_mode)
        if bits != 0 { try Backing.chmod(fd, mode: now.st_mode & 0o7777 & ~bits) }
    }

    /// A write through passthrough never reaches the driver, so a non-root
    /// caller opening for writing a file whose bits a write must clear gets
    /// plain WRITE requests instead, with direct I/O: the kernel lets later
    /// passthrough opens of the file stand beside such a handle (not beside
    /// a cached one). While the file has passthrough handles open, the
    /// kernel fails any open without passthrough; then the bits go at this
    /// open already, as the write would clear them, only earlier.
    func openOptions(_ request: Request, node: NodeID, flags: OpenFlags, descriptor fd: FileDescriptor) -> OpenOptions {
        var options = openOptions(descriptor: fd)
        guard options.backingDescriptor != nil, flags.writes, mustClearSetIDBits(request),
              let now = try? Backing.stat(fd), Self.setIDBitsToClear(now.st_mode) != 0 else { return options }
        if request.hasPassthroughHandles(node) {
            // Best effort here: the open itself succeeded, and a write
            // through passthrough cannot be failed later. A failure is rare
            // (the driver is root) and leaves the bits as ext4 would after
            // a failed clear: the open is answered, the write not refused.
            try? Self.dropSetIDBits(fd)
            return options
        }
        options.backingDescriptor = nil
        options.directIO = true
        options.keepCache = false
        return options
    }
}
