// T2: the lock files that order the drivers of one container around its
// tmp (ContainerTmp) are removed by the last driver, and a driver that
// opened them just before takes its locks on the files the names lead to
// afterwards. Drivers here are ContainerTmp objects of one process: flock
// locks belong to open file descriptions, so two of them contend as two
// processes would.

@testable import AppSandboxFS
import BackingStore
import Glibc
import SystemPackage
import Testing

@Suite("T2 tmp lock files: removed by the last driver, never locked stale", .serialized)
struct TmpLockFileTests {
    /// A backing root with tmp, and a lock folder, in a temporary folder.
    final class Place {
        let path: String
        let root: FileDescriptor
        let locks: FileDescriptor

        init() throws {
            var template = Array("/var/tmp/asfs-locks-XXXXXX".utf8CString)
            guard mkdtemp(&template) != nil else { throw Errno(rawValue: errno) }
            path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            mkdir(path + "/c", 0o755)
            mkdir(path + "/c/tmp", 0o755)
            mkdir(path + "/locks", 0o700)
            root = try Backing.openRoot(path + "/c")
            locks = try Backing.openRoot(path + "/locks")
        }

        func driver() throws -> ContainerTmp {
            try ContainerTmp(root: root, keep: false, lockFolder: locks, startWait: 300)
        }

        var lockFiles: [String] { Self.names(path + "/locks") }
        var tmpEntries: [String] { Self.names(path + "/c/tmp") }

        func leaveInTmp(_ name: String) { close(creat(path + "/c/tmp/" + name, 0o644)) }

        static func names(_ folder: String) -> [String] {
            guard let stream = opendir(folder) else { return [] }
            defer { closedir(stream) }
            var names: [String] = []
            while let entry = readdir(stream) {
                let name = String(decoding: BackingStore.directoryEntryName(entry), as: UTF8.self)
                if name != "." && name != ".." { names.append(name) }
            }
            return names.sorted()
        }

        deinit {
            Backing.close(root)
            Backing.close(locks)
            _ = TreeRemover.removeContents(ofFolderAt: path)
            rmdir(path)
        }
    }

    @Test("the last driver of a container removes its two lock files once tmp is empty")
    func lastDriverRemovesThem() throws {
        let place = try Place()
        let driver = try place.driver()
        #expect(try driver.prepareForMount().0 == .cleared)
        #expect(place.lockFiles.count == 2)
        place.leaveInTmp("left")
        #expect(try driver.finishAfterUnmount().0 == .cleared)
        #expect(place.tmpEntries.isEmpty)
        #expect(place.lockFiles.isEmpty, "\(place.lockFiles)")
    }

    @Test("T4 the last driver of a container mounted with --keep-tmp removes its lock files too, and leaves tmp as it is")
    func keptTmpLastDriver() throws {
        let place = try Place()
        let driver = try ContainerTmp(root: place.root, keep: true, lockFolder: place.locks, startWait: 300)
        place.leaveInTmp("kept")
        #expect(try driver.prepareForMount().0 == .kept)
        #expect(place.lockFiles.count == 2)
        #expect(try driver.finishAfterUnmount().0 == .kept)
        #expect(place.tmpEntries == ["kept"])
        #expect(place.lockFiles.isEmpty, "\(place.lockFiles)")
    }

    @Test("a driver that still serves keeps the lock files: the one ending is not the last")
    func notTheLastDriver() throws {
        let place = try Place()
        let first = try place.driver(), second = try place.driver()
        #expect(try first.prepareForMount().0 == .cleared)
        #expect(try second.prepareForMount().0 == .inUseByAnotherDriver)
        place.leaveInTmp("in-use")
        #expect(try first.finishAfterUnmount().0 == .inUseByAnotherDriver)
        #expect(place.lockFiles.count == 2)
        #expect(place.tmpEntries == ["in-use"])
        #expect(try second.finishAfterUnmount().0 == .cleared)
        #expect(place.lockFiles.isEmpty)
    }

    @Test("a driver that opened the lock files before the last one removed them locks the new files: a third driver sees it serving")
    func openedBeforeRemoval() throws {
        let place = try Place()
        let ending = try place.driver()
        #expect(try ending.prepareForMount().0 == .cleared)
        // Opens the two files now, as a driver starting at this moment would.
        let starting = try place.driver()
        #expect(try ending.finishAfterUnmount().0 == .cleared)
        #expect(place.lockFiles.isEmpty)
        // Its locks are taken on files the names lead to again.
        #expect(try starting.prepareForMount().0 == .cleared)
        #expect(place.lockFiles.count == 2)
        // Without the check after locking, `starting` would serve holding a
        // lock on a removed file, and this driver, on new files, would think
        // itself alone and empty tmp under it.
        place.leaveInTmp("in-use")
        let third = try place.driver()
        #expect(try third.prepareForMount().0 == .inUseByAnotherDriver)
        #expect(place.tmpEntries == ["in-use"])
        #expect(try third.finishAfterUnmount().0 == .inUseByAnotherDriver)
        #expect(try starting.finishAfterUnmount().0 == .cleared)
        #expect(place.lockFiles.isEmpty)
    }
}
