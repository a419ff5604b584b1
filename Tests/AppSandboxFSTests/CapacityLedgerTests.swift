// Q2 in the ledger alone: the kernel sends a file's RELEASE after close(2)
// has returned, so a caller's `rm big; write` can reach the driver before
// that release. The ledger lets such a write wait for the release of a file
// orphaned moments ago; one that is really kept open keeps its space.

@testable import AppSandboxFS
import BackingStore
import Foundation
import Glibc
import POSIXHelpers
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
        init(releaseWait: Int) throws {
            var template = Array("/tmp/asfs-ledger-XXXXXX".utf8CString)
            let made = try #require(mkdtemp(&template))
            folder = String(cString: made)
            root = FileDescriptor(rawValue: open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
            ledger = CapacityLedger(capacity: CapacityLedgerTests.capacity, roots: [root], releaseWait: releaseWait, recentOrphan: 1_000)
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
}
