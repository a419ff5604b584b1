import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// The hooks of `mount --capacity` (Q1-Q3): the checks combinator
// (`checked`, SandboxFileSystem+Checks.swift) passes a backing call through
// the one its request's `Reservation` names. Without a capacity each is the
// call itself (one nil check), so other mounts do no extra work.
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
    /// `bytes`: the new space it may need (a rename's new entry).
    @inline(__always)
    func charged<T>(reserving bytes: Int64 = 0, removing name: UnsafePointer<CChar>?, in folder: FileDescriptor,
                    also others: @autoclosure () -> [FileDescriptor] = [],
                    _ body: () throws(Errno) -> T) throws(Errno) -> T {
        guard let capacity else { return try body() }
        let victim = name.flatMap { try? Backing.openPath(in: folder, $0) }
        defer { if let victim { Backing.close(victim) } }
        return try capacity.change(reserving: bytes, tracking: [folder] + others() + (victim.map { [$0] } ?? []), body)
    }

    /// A rename of `name` in `from` to `newName` in `to`: may replace the
    /// file at `newName`, and reserves the space of a new entry in `to`
    /// when it may add one (`DiskSpace.renameMayAddEntry`). When that space
    /// is not free but `newName` exists, the rename, which then adds no
    /// entry, goes ahead without it.
    func chargedRename<T>(from: FileDescriptor, to: FileDescriptor, newName: UnsafePointer<CChar>, sameFolder: Bool,
                          flags: RenameFlags, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        let exchange = flags.contains(.exchange)
        let victim = exchange ? nil : newName
        guard capacity != nil, DiskSpace.renameMayAddEntry(intoOtherFolder: !sameFolder, exchange: exchange) else {
            return try charged(removing: victim, in: to, also: [from], body)
        }
        var ran = false
        do throws(Errno) {
            return try charged(reserving: newEntrySpace, removing: victim, in: to, also: [from]) { () throws(Errno) in
                ran = true
                return try body()
            }
        } catch {
            guard error == .noSpace, !ran, (try? Backing.stat(in: to, newName)) != nil else { throw error }
            return try charged(removing: victim, in: to, also: [from], body)
        }
    }

    /// A write through the driver: all of it, a prefix that fits, or ENOSPC.
    /// The writeback of a shared mapping's dirty pages (`path` .pageCache)
    /// is written whole and counted, even past the capacity
    /// (`DiskSpace.writebackPassesCapacity`): only the backing file
    /// system's own ENOSPC can refuse it.
    @inline(__always)
    func chargedWrite<T>(_ fd: FileDescriptor, at offset: off_t, length: Int, path: DataPath,
                         _ body: (Int) throws(Errno) -> T) throws(Errno) -> T {
        guard let capacity else { return try body(length) }
        if DiskSpace.writebackPassesCapacity(fromPageCache: path == .pageCache, writebackCache: configuration.writebackCache) {
            return try capacity.change(reserving: 0, tracking: [fd]) { () throws(Errno) in try body(length) }
        }
        return try capacity.write(fd, offset: offset, length: length, body)
    }

    /// fallocate: a mode that may allocate (plain, KEEP_SIZE, ZERO_RANGE,
    /// UNSHARE_RANGE ...) reserves its whole range (all or nothing, as on
    /// ext4); punching and collapsing, which free, and inserting a hole
    /// only measure (`DiskSpace.fallocateMayAllocate`).
    @inline(__always)
    func chargedAllocate<T>(_ fd: FileDescriptor, mode: Int32, offset: off_t, length: off_t,
                            _ body: () throws(Errno) -> T) throws(Errno) -> T {
        guard let capacity else { return try body() }
        guard DiskSpace.fallocateMayAllocate(mode: mode) else { return try capacity.change(reserving: 0, tracking: [fd], body) }
        return try capacity.allocate(fd, offset: offset, length: length, body)
    }
}
