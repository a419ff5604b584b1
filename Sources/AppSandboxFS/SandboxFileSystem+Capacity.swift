import BackingStore
import CLinux
import FuseKit
import Glibc
import SystemPackage

// The hooks of `mount --capacity` (Q1-Q3): each changing handler passes its
// backing call through one of these. Without a capacity each is the call
// itself (one nil check), so other mounts do no extra work.
extension SandboxFileSystem {
    /// What a new name may need: one block of its folder (or of an
    /// attribute). Refused with ENOSPC when not even that is free.
    var newEntrySpace: Int64 { capacity?.blockSize ?? 0 }

    /// `body` changes the allocation of the files `fds` hold and needs at
    /// most `bytes` of new space.
    @inline(__always)
    func charged<T>(reserving bytes: Int64 = 0, _ fds: @autoclosure () -> [FileDescriptor],
                    _ body: () throws(Errno) -> T) throws(Errno) -> T {
        guard let capacity else { return try body() }
        return try capacity.change(reserving: bytes, tracking: fds(), body)
    }

    /// `body` may remove the last name of `name` in `folder` (unlink, rmdir,
    /// rename over it): its space is freed, or kept until its last close.
    @inline(__always)
    func charged<T>(removing name: UnsafePointer<CChar>?, in folder: FileDescriptor,
                    also others: @autoclosure () -> [FileDescriptor] = [],
                    _ body: () throws(Errno) -> T) throws(Errno) -> T {
        guard let capacity else { return try body() }
        let victim = name.flatMap { try? Backing.openPath(in: folder, $0) }
        defer { if let victim { Backing.close(victim) } }
        return try capacity.change(reserving: 0, tracking: [folder] + others() + (victim.map { [$0] } ?? []), body)
    }

    /// A write through the driver: all of it, a prefix that fits, or ENOSPC.
    @inline(__always)
    func chargedWrite(_ fd: FileDescriptor, at offset: off_t, length: Int, _ body: (Int) throws(Errno) -> Int) throws(Errno) -> Int {
        guard let capacity else { return try body(length) }
        return try capacity.write(fd, offset: offset, length: length, body)
    }

    /// fallocate: allocating modes reserve their whole range (all or
    /// nothing, as on ext4); punching and zeroing holes only measure.
    @inline(__always)
    func chargedAllocate(_ fd: FileDescriptor, mode: Int32, offset: off_t, length: off_t, _ body: () throws(Errno) -> Void) throws(Errno) {
        guard let capacity else { return try body() }
        let allocates = mode & ~Int32(asfs_FALLOC_FL_KEEP_SIZE) == 0
        guard allocates else { return try capacity.change(reserving: 0, tracking: [fd], body) }
        _ = try capacity.write(fd, offset: offset, length: Int(length)) { (allowed) throws(Errno) -> Int in
            guard allowed == Int(length) else { throw Errno.noSpace }
            try body()
            return allowed
        }
    }

    /// A file, folder or link was just made: count its own blocks.
    @inline(__always)
    func chargeAdded(_ node: Node) {
        guard let capacity else { return }
        try? node.withFD { (fd) throws(Errno) in capacity.added(fd) }
    }
}
