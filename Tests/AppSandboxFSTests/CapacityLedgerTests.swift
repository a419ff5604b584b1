// Q2 in the ledger alone: the kernel sends a file's RELEASE after close(2)
// has returned, so a caller's `rm big; write` can reach the driver before
// that release. The ledger lets such a write wait for the release of a file
// orphaned moments ago; one that is really kept open keeps its space.

@testable import AppSandboxFS
import BackingStore
import Foundation
import Glibc
import POSIXHelpers
import Synchronization
import SystemPackage
import Testing

@Suite("Q2 the capacity ledger and releases on their way")
struct CapacityLedgerTests {
    static let capacity: Int64 = 8 << 20
    static let size = 6 << 20

    /// A folder of its own, and the ledger of a disk of 8 MiB over it.
    final class Disk: Sendable {
        let folder: String
        let root: FileDescriptor
        let ledger: CapacityLedger

        /// `releaseWait`: how long a refusal may wait for a release (ms).
        init(releaseWait: Int, recentOrphan: Int = 1_000) throws {
            var template = Array("/tmp/asfs-ledger-XXXXXX".utf8CString)
            let made = try #require(mkdtemp(&template))
            folder = String(cString: made)
            root = FileDescriptor(rawValue: open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
            ledger = CapacityLedger(capacity: CapacityLedgerTests.capacity, roots: [root], releaseWait: releaseWait, recentOrphan: recentOrphan)
        }

        deinit {
            close(root.rawValue)
            try? FileManager.default.removeItem(atPath: folder)
        }

        /// A new file with a handle open on it (create, then open).
        func create(_ name: String) throws -> FileDescriptor {
            let fd = openat(root.rawValue, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            try #require(fd >= 0, "create \(name): \(errno)")
            ledger.added(FileDescriptor(rawValue: fd))
            ledger.opened(FileDescriptor(rawValue: fd))
            return FileDescriptor(rawValue: fd)
        }

        /// What the driver's write does: the length the ledger allows, written.
        func write(_ fd: FileDescriptor, _ length: Int) throws -> Int {
            let bytes = [UInt8](repeating: 0x5a, count: length)
            return try ledger.write(fd, offset: 0, length: length) { (allowed) throws(Errno) -> Int in
                bytes.withUnsafeBytes { pwrite(fd.rawValue, $0.baseAddress, allowed, 0) }
            }
        }

        /// What the driver's unlink does: the victim tracked by an O_PATH descriptor.
        func unlink(_ name: String) throws {
            let victim = try Backing.openPath(in: root, name)
            defer { close(victim.rawValue) }
            try ledger.change(reserving: 0, tracking: [root, victim]) { () throws(Errno) in
                if unlinkat(root.rawValue, name, 0) != 0 { throw Errno(rawValue: errno) }
            }
        }

        /// What the driver's mkdir does: a new entry's block reserved.
        func mkdir(_ name: String) throws {
            try ledger.change(reserving: ledger.blockSize, tracking: [root]) { () throws(Errno) in
                if mkdirat(root.rawValue, name, 0o755) != 0 { throw Errno(rawValue: errno) }
            }
        }

        /// An O_TMPFILE file in the folder, with a handle open on it.
        func unnamed() throws -> FileDescriptor {
            let fd = try Backing.openTemporary(in: root, flags: O_RDWR, mode: 0o600)
            ledger.added(fd)
            ledger.opened(fd)
            return fd
        }

        /// The release of a handle, as the driver serves it.
        func release(_ fd: FileDescriptor) {
            ledger.releasing(fd)
            close(fd.rawValue)
        }
    }

    @Test("A write that needs the space of a file just removed waits for that file's release, and then gets all of it")
    func waitsForARelease() throws {
        // A wait far longer than the release takes, so that a loaded
        // machine cannot make the thread late enough to matter.
        let disk = try Disk(releaseWait: 20_000)
        let video = try disk.create("video.mov")
        #expect(try disk.write(video, Self.size) == Self.size)
        // The caller has closed video.mov; its release is still on the way.
        try disk.unlink("video.mov")
        let late = startThread { [video] in
            usleep(60_000)
            disk.release(video)
        }
        #expect(late != nil)
        let photo = try disk.create("photo.heic")
        #expect(try disk.write(photo, Self.size) == Self.size, "the write did not wait for the release")
        if let late { pthread_join(late, nil) }
        disk.release(photo)
    }

    @Test("A file removed while really kept open still holds its space: the write that needs it gets a prefix or ENOSPC, once the wait is over")
    func keptOpenStillCounts() throws {
        let disk = try Disk(releaseWait: 100)
        let held = try disk.create("held.bin")
        #expect(try disk.write(held, Self.size) == Self.size)
        try disk.unlink("held.bin")
        let next = try disk.create("next.bin")
        let written = try disk.write(next, Self.size)
        #expect(written < 3 << 20, "\(written) bytes written while 6 MiB of 8 are held")
        disk.release(held)
        disk.release(next)
    }

    /// Releases `fd` from a thread of its own after `seconds`.
    static func releaseLater(_ disk: Disk, _ fd: FileDescriptor, after seconds: Double) -> pthread_t? {
        startThread {
            usleep(useconds_t(seconds * 1_000_000))
            disk.release(fd)
        }
    }

    @Test("A mkdir that needs the space of a file just removed waits for its release too")
    func createWaitsForARelease() throws {
        let disk = try Disk(releaseWait: 20_000)
        let filler = try disk.create("filler.bin")
        // Fill the disk to its last block, then remove what holds most of it.
        var written = 0
        while true {
            let bytes = [UInt8](repeating: 1, count: 1 << 20)
            let n = try disk.ledger.write(filler, offset: off_t(written), length: bytes.count) { (allowed) throws(Errno) -> Int in
                bytes.withUnsafeBytes { pwrite(filler.rawValue, $0.baseAddress, allowed, off_t(written)) }
            }
            if n <= 0 { break }
            written += n
            if n < bytes.count { break }
        }
        #expect(throws: Errno.noSpace) { try disk.mkdir("refused") }
        try disk.unlink("filler.bin")
        let late = Self.releaseLater(disk, filler, after: 0.06)
        try disk.mkdir("after")
        if let late { pthread_join(late, nil) }
    }

    @Test("An orphan older than the grace makes no refusal wait: the write gets a prefix before the release comes")
    func oldOrphanNoWait() throws {
        let disk = try Disk(releaseWait: 20_000, recentOrphan: 50)
        let held = try disk.create("held.bin")
        #expect(try disk.write(held, Self.size) == Self.size)
        try disk.unlink("held.bin")
        usleep(200_000)
        let late = Self.releaseLater(disk, held, after: 3)
        let next = try disk.create("next.bin")
        #expect(try disk.write(next, Self.size) < 3 << 20, "the write waited for a release")
        if let late { pthread_join(late, nil) }
        disk.release(next)
    }

    @Test("An O_TMPFILE file (never named) makes no refusal wait: no release of it is on its way")
    func unnamedFileNoWait() throws {
        // Waits and grace far longer than the release's 3 s: a write that
        // waited would get all of it once the release came.
        let disk = try Disk(releaseWait: 20_000, recentOrphan: 60_000)
        let scratch = try disk.unnamed()
        #expect(try disk.write(scratch, Self.size) == Self.size)
        let late = Self.releaseLater(disk, scratch, after: 3)
        let next = try disk.create("next.bin")
        #expect(try disk.write(next, Self.size) < 3 << 20, "the write waited for an unnamed file's release")
        if let late { pthread_join(late, nil) }
        disk.release(next)
    }

    @Test("A refusal that the files on their way could not let through does not wait")
    func smallOrphanNoWait() throws {
        let disk = try Disk(releaseWait: 20_000, recentOrphan: 60_000)
        let big = try disk.create("big.bin")
        #expect(try disk.write(big, Self.size) == Self.size)
        let small = try disk.create("small.bin")
        #expect(try disk.write(small, 4096) == 4096)
        try disk.unlink("small.bin")
        let released = Atomic<Bool>(false)
        let late = startThread {
            usleep(3_000_000)
            disk.release(small)
            released.store(true, ordering: .releasing)
        }
        // 6 MiB more cannot fit even once small.bin's 4 KiB is back: a
        // prefix at once, before that release.
        let next = try disk.create("next.bin")
        #expect(try disk.write(next, Self.size) < 3 << 20)
        let waited = released.load(ordering: .acquiring)
        #expect(!waited, "the write waited for a release that cannot make room")
        if let late { pthread_join(late, nil) }
        disk.release(big)
        disk.release(next)
    }
}
