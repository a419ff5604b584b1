// F1 in a test process: code under test that calls Foundation itself (no
// ContainerFiles, nothing of the bridge) sets and reads the real mark and
// classes of files in the fixture's container; the test only uses the
// fixture, which installs the Foundation bridge when it mounts. Both
// fixtures: the driver as a program, and served in-process.

import AppSandboxTesting
import ContainerFiles
import Foundation
import Testing

/// Storage code as an iOS app has it: Foundation's own calls only.
private enum AppStorage {
    static func markDoNotBackUp(_ url: URL, _ excluded: Bool) throws {
        var url = url
        var values = URLResourceValues()
        values.isExcludedFromBackup = excluded
        try url.setResourceValues(values)
    }

    static func isExcluded(_ url: URL) throws -> Bool? {
        try url.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup
    }

    static func protection(_ path: String) throws -> String? {
        (try FileManager.default.attributesOfItem(atPath: path)[.protectionKey] as? FileProtectionType)?.rawValue
    }
}

@Suite("The Foundation bridge in a test process that uses the fixture (F1)")
struct FoundationCallsInTestProcessTests {
    @Test("F1 X1, P2: the mark and classes set by Foundation's own calls are on the files; Foundation reads them back",
          arguments: [false, true])
    func markAndClasses(inProcess: Bool) throws {
        try withMountedContainer(.init(inProcess: inProcess)) { container in
            let file = URL(fileURLWithPath: container.documents + "/cache.db")
            try Data("db".utf8).write(to: file)
            #expect(try AppStorage.isExcluded(file) == false)
            try AppStorage.markDoNotBackUp(file, true)
            #expect(try AppStorage.isExcluded(file) == true)
            #expect(try ContainerFile.isExcludedFromBackup(file))
            try NSURL(fileURLWithPath: file.path).setResourceValue(false, forKey: .isExcludedFromBackupKey)
            #expect(try AppStorage.isExcluded(file) == false)
            #expect(try ContainerFile.isExcludedFromBackup(file) == false)

            try FileManager.default.setAttributes([.protectionKey: FileProtectionType.complete], ofItemAtPath: file.path)
            #expect(try container.protection(of: file.path) == .complete)
            #expect(try AppStorage.protection(file.path) == FileProtectionType.complete.rawValue)

            let created = container.documents + "/created"
            #expect(FileManager.default.createFile(atPath: created, contents: Data("c".utf8),
                                                   attributes: [.protectionKey: FileProtectionType.completeUnlessOpen]))
            #expect(try container.protection(of: created) == .completeUnlessOpen)
            try FileManager.default.createDirectory(atPath: container.documents + "/open", withIntermediateDirectories: false,
                                                    attributes: [.protectionKey: FileProtectionType.none])
            #expect(try container.protection(of: container.documents + "/open") == .none)
            let written = URL(fileURLWithPath: container.documents + "/written")
            try Data("w".utf8).write(to: written, options: [.atomic, .completeFileProtection])
            #expect(try container.protection(of: written.path) == .complete)
            #expect(try AppStorage.protection(written.path) == FileProtectionType.complete.rawValue)
            #expect(container.denials().isEmpty)
        }
    }

    @Test("F1 P6: a class A file created by Data.write while locked fails as on a device (513) and leaves no entry",
          arguments: [false, true])
    func createWhileLocked(inProcess: Bool) throws {
        try withMountedContainer(.init(inProcess: inProcess)) { container in
            try container.lock(grace: 0)
            let file = URL(fileURLWithPath: container.documents + "/secret")
            #expect {
                try Data("s".utf8).write(to: file, options: .completeFileProtection)
            } throws: { error in
                (error as? CocoaError)?.code == .fileWriteNoPermission
            }
            #expect(!FileManager.default.fileExists(atPath: file.path))
            #expect(try FileManager.default.contentsOfDirectory(atPath: container.documents) == ["Inbox"])
            try container.unlock()
        }
    }

    @Test("Q1: with ContainerFiles, the volume's capacity for important and opportunistic usage is the mount's; containerURL(forSecurityApplicationGroupIdentifier:) is nil")
    func capacityAndGroups() throws {
        try withMountedContainer(.init(capacity: "64M")) { container in
            let documents = URL(fileURLWithPath: container.documents, isDirectory: true)
            try Data(count: 1 << 20).write(to: documents.appendingPathComponent("megabyte"))
            let values = try documents.resourceValues(forKeys: [
                .volumeAvailableCapacityForImportantUsageKey, .volumeAvailableCapacityForOpportunisticUsageKey,
            ])
            let important = try #require(values.volumeAvailableCapacityForImportantUsage)
            var info = statvfs()
            #expect(statvfs(container.documents, &info) == 0)
            #expect(important == Int64(info.f_bavail) * Int64(info.f_frsize))
            #expect(important > 0 && important <= 63 << 20, "\(important)")
            #expect(values.volumeAvailableCapacityForOpportunisticUsage == important)
            #expect(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.app") == nil)
        }
    }

    @Test("F1: outside a container the same calls are Foundation on Linux's own (accepted, nothing stored, nil)")
    func outsideAContainer() throws {
        try withMountedContainer(.init(inProcess: true)) { container in
            // The fixture's own folder (beside the backing directory and the
            // mountpoint, removed with them): not in the container, also when
            // the test runs under `run` (TMPDIR in the container).
            let file = URL(fileURLWithPath: container.root + "/outside")
            try Data("f".utf8).write(to: file, options: .completeFileProtection)
            try AppStorage.markDoNotBackUp(file, true)
            #expect(try AppStorage.isExcluded(file) == nil)
            #expect(try AppStorage.protection(file.path) == nil)
        }
    }
}
