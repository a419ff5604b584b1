import ContainerBackup
import Foundation
import SandboxPolicy
import Testing

@Suite("Backup report: K1, X5")
struct BackupReportTests {
    /// A container with something in every zone.
    static func populated() throws -> ScratchContainer {
        let c = try ScratchContainer()
        try c.mkdirs("Documents/Notes")
        try c.write("Documents/Notes/a.txt", "aaaa")
        try c.write("Documents/Inbox/mail.pdf", "pdf")
        try c.mkdirs("Library/Application Support/db")
        try c.write("Library/Application Support/db/store.sqlite", "sqlite")
        try c.write("Library/Preferences/com.example.Demo.plist", "plist")
        try c.mkdirs("Library/Caches/thumbs")
        try c.write("Library/Caches/thumbs/1.png", "png")
        try c.write("tmp/upload.part", "part")
        try c.write("Demo.app/Demo", "binary")
        return c
    }

    @Test("K1 a backup holds Documents (Inbox included) and Library except Caches: the members, in walk order")
    func members() throws {
        let c = try Self.populated()
        let scan = try c.scan()
        #expect(scan.memberPaths == [
            "Documents", "Documents/Inbox", "Documents/Inbox/mail.pdf", "Documents/Notes", "Documents/Notes/a.txt",
            "Library", "Library/Application Support", "Library/Application Support/db",
            "Library/Application Support/db/store.sqlite", "Library/Preferences",
            "Library/Preferences/com.example.Demo.plist",
        ])
        #expect(scan.memberSizes.reduce(0, +) == scan.report.backup.bytes)
        let backup = scan.report.backup
        #expect((backup.files, backup.folders, backup.symlinks, backup.others) == (4, 7, 0, 0))
        #expect(backup.entries == scan.members.count)
        #expect(backup.bytes == 4 + 3 + 6 + 5)
    }

    @Test("K1 the zone rows: all eight, in order, with totals and the backed-up part")
    func zones() throws {
        let c = try Self.populated()
        let report = try c.scan().report
        #expect(report.zones.map(\.path) == ["Documents", "Documents/Inbox", "Library", "Library/Preferences",
                                             "Library/Caches", "tmp", "Demo.app", "."])
        #expect(report.zones.map(\.backupClass) == ["backedUp", "backedUp", "backedUp", "backedUp",
                                                    "caches", "temporary", "bundle", "outside"])
        let byPath = Dictionary(uniqueKeysWithValues: report.zones.map { ($0.path, $0) })
        #expect(byPath["Documents"]?.total.entries == 3)       // Documents, Notes, a.txt
        #expect(byPath["Documents/Inbox"]?.total.entries == 2)
        #expect(byPath["Library"]?.total.entries == 4)         // Library, Application Support, db, store.sqlite
        #expect(byPath["Library/Caches"]?.total.entries == 3)
        #expect(byPath["Library/Caches"]?.backup.entries == 0)
        #expect(byPath["tmp"]?.total.bytes == 4)
        #expect(byPath["Demo.app"]?.total.files == 2)
        #expect(report.zones.reduce(0) { $0 + $1.backup.entries } == report.backup.entries)
        #expect(report.zones.reduce(0) { $0 + $1.total.entries } == report.backup.entries + report.excluded.all.entries)
    }

    @Test("K1 top entries: one level below each system folder, with their subtrees")
    func topEntries() throws {
        let c = try Self.populated()
        let report = try c.scan().report
        let tops = Dictionary(uniqueKeysWithValues: report.topEntries.map { ($0.path, $0) })
        #expect(Set(tops.keys) == ["Documents/Notes", "Documents/Inbox/mail.pdf", "Library/Application Support",
                                   "Library/Preferences/com.example.Demo.plist", "Library/Caches/thumbs",
                                   "tmp/upload.part", "Demo.app/Demo", "Demo.app/Info.plist"])
        #expect(tops["Library/Application Support"]?.total.entries == 3)
        #expect(tops["Library/Application Support"]?.backup.bytes == 6)
        #expect(tops["Library/Caches/thumbs"]?.zone == "caches")
        #expect(tops["Library/Caches/thumbs"]?.backup.entries == 0)
    }

    @Test("K1 what is never backed up is excluded by its zone, one exclusion per system folder")
    func zoneExclusions() throws {
        let c = try Self.populated()
        let report = try c.scan().report
        #expect(report.exclusions.map(\.path) == ["Demo.app", "Library/Caches", "tmp"])
        #expect(report.exclusions.allSatisfy { $0.reason == .zone })
        #expect(report.exclusions.map(\.tally.entries) == [3, 3, 2])
        #expect(report.excluded.zone.entries == 8 && report.excluded.all.entries == 8)
    }

    @Test("X5 K1 a flag on a folder excludes its whole subtree; entries below count as excluded by the folder")
    func flaggedFolder() throws {
        let c = try Self.populated()
        try c.mkdirs("Library/Application Support/Downloads/deep/er")
        try c.write("Library/Application Support/Downloads/model.bin", "model")
        try c.write("Library/Application Support/Downloads/deep/er/x", "x")
        try c.flag("Library/Application Support/Downloads", .excludeItem)
        // A flag below a flagged folder changes nothing.
        try c.flag("Library/Application Support/Downloads/deep", .mobileBackup)
        let scan = try c.scan()
        #expect(!scan.memberPaths.contains { $0.hasPrefix("Library/Application Support/Downloads") })
        let exclusion = try #require(scan.report.exclusions.first { $0.path == "Library/Application Support/Downloads" })
        #expect(exclusion.reason == .flag)
        #expect(exclusion.flags == [.excludeItem])
        #expect((exclusion.tally.entries, exclusion.tally.bytes) == (5, 6))
        #expect(scan.report.excluded.flag.entries == 1)
        #expect(scan.report.excluded.folder.entries == 4)
    }

    @Test("X1 X2 K1 a flagged file is left out; MobileBackup 0 keeps a file in")
    func flaggedFiles() throws {
        let c = try Self.populated()
        try c.write("Documents/new.db", "n")
        try c.write("Documents/old.db", "o")
        try c.write("Documents/zero.db", "z")
        try c.flag("Documents/new.db", .excludeItem)
        try c.flag("Documents/old.db", .mobileBackup)
        try c.flag("Documents/zero.db", .mobileBackup, [0])
        let scan = try c.scan()
        #expect(!scan.memberPaths.contains("Documents/new.db"))
        #expect(!scan.memberPaths.contains("Documents/old.db"))
        #expect(scan.memberPaths.contains("Documents/zero.db"))
        let flagged = scan.report.exclusions.filter { $0.reason == .flag }
        #expect(flagged.map(\.path) == ["Documents/new.db", "Documents/old.db"])
        #expect(flagged.map(\.flags) == [[.excludeItem], [.mobileBackup]])
    }

    @Test("K1 the zone wins over a flag: a flagged entry in Caches is excluded by its zone")
    func zoneBeforeFlag() throws {
        let c = try Self.populated()
        try c.flag("Library/Caches/thumbs", .excludeItem)
        let report = try c.scan().report
        #expect(report.exclusions.filter { $0.path.hasPrefix("Library/Caches") }.map(\.path) == ["Library/Caches"])
        #expect(report.excluded.flag.entries == 0)
    }

    @Test("K1 symbolic links are archived as links and never followed; sockets are left out; FIFOs are kept")
    func specialEntries() throws {
        let c = try Self.populated()
        try c.mkdirs("Library/outside-data")
        try c.sparse("Library/outside-data/big", size: 50 << 20)
        try c.symlink("Documents/to-folder", to: c.path("Library/outside-data"))
        try c.symlink("Documents/to-etc", to: "/etc")
        try c.fifo("Documents/pipe")
        try c.socket("Documents/sock")
        let scan = try c.scan()
        #expect(scan.memberPaths.contains("Documents/to-folder"))
        #expect(scan.memberPaths.contains("Documents/to-etc"))
        #expect(!scan.memberPaths.contains { $0.hasPrefix("Documents/to-folder/") || $0.hasPrefix("Documents/to-etc/") })
        #expect(scan.memberPaths.contains("Documents/pipe"))
        #expect(!scan.memberPaths.contains("Documents/sock"))
        let documents = try #require(scan.report.zones.first { $0.path == "Documents" })
        #expect(documents.backup.symlinks == 2)
        #expect(documents.backup.others == 1)
        #expect(scan.report.exclusions.first { $0.path == "Documents/sock" }?.reason == .socket)
        #expect(scan.report.excluded.socket.entries == 1)
    }

    @Test("K1 names are kept as raw bytes: not UTF-8, with newlines")
    func rawNames() throws {
        let c = try Self.populated()
        let odd: [UInt8] = Array("Documents/bad".utf8) + [0xFF, 0x0A, 0x41]
        let path = Array(c.root.utf8) + [UInt8(ascii: "/")] + odd + [0]
        let fd = path.withUnsafeBufferPointer { p in
            p.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644) }
        }
        #expect(fd >= 0)
        close(fd)
        let scan = try c.scan()
        #expect(scan.members.contains(odd))
    }

    @Test("K1 findings: a large backed-up file, from the threshold on; not when excluded or in Caches")
    func largeFiles() throws {
        let c = try Self.populated()
        try c.sparse("Documents/at-threshold.mov", size: 1 << 20)
        try c.sparse("Documents/below.mov", size: (1 << 20) - 1)
        try c.sparse("Library/Application Support/big.bin", size: 5 << 20)
        try c.sparse("Documents/flagged.mov", size: 5 << 20)
        try c.flag("Documents/flagged.mov", .excludeItem)
        try c.sparse("Library/Caches/big.cache", size: 5 << 20)
        try c.sparse("Documents/Inbox/big.pdf", size: 2 << 20)
        let report = try c.scan().report
        let large = report.findings.filter { $0.kind == .largeFile }
        #expect(large.map(\.path) == ["Documents/Inbox/big.pdf", "Documents/at-threshold.mov", "Library/Application Support/big.bin"])
        #expect(large.map(\.bytes) == [2 << 20, 1 << 20, 5 << 20])
        let raised = try c.scan(threshold: 3 << 20).report.findings.filter { $0.kind == .largeFile }
        #expect(raised.map(\.path) == ["Library/Application Support/big.bin"])
    }

    @Test("K1 findings: each entry left in tmp")
    func leftInTmp() throws {
        let c = try Self.populated()
        try c.mkdirs("tmp/build/objects")
        try c.write("tmp/build/objects/a.o", "object")
        let findings = try c.scan().report.findings.filter { $0.kind == .leftInTmp }
        #expect(findings.map(\.path) == ["tmp/build", "tmp/upload.part"])
        #expect(findings.map(\.bytes) == [6, 4])
    }

    @Test("K1 findings: a flag on a system folder (Apple advises a folder of one's own), not on one's own folder",
          arguments: ["Documents", "Library", "Library/Application Support", "Library/Caches", "Library/Preferences", "tmp"])
    func flagOnSystemFolder(folder: String) throws {
        let c = try Self.populated()
        try c.mkdirs("Library/Application Support/Downloads")
        try c.flag("Library/Application Support/Downloads", .excludeItem)
        try c.flag(folder, .mobileBackup)
        let findings = try c.scan().report.findings.filter { $0.kind == .flagOnSystemFolder }
        #expect(findings.map(\.path) == [folder])
    }

    @Test("K1 findings: entries at the container root, except those iOS itself puts there")
    func entriesAtRoot() throws {
        let c = try Self.populated()
        try c.write("notes.txt", "n")
        try c.mkdirs("SystemData/x")
        try c.write(".com.apple.mobile_container_manager.metadata.plist", "m")
        let report = try c.scan().report
        #expect(report.findings.filter { $0.kind == .entryAtRoot }.map(\.path) == ["notes.txt"])
        let root = try #require(report.zones.last)
        #expect(root.path == "." && root.total.entries == 4 && root.backup.entries == 0)
    }

    @Test("X5 K1 a flag on the container root excludes everything")
    func flaggedRoot() throws {
        let c = try Self.populated()
        try c.flag("", .excludeItem)
        let scan = try c.scan()
        #expect(scan.members.isEmpty)
        #expect(scan.report.backup.entries == 0)
        #expect(scan.report.exclusions.map(\.path) == ["."])
        #expect(scan.report.exclusions.first?.tally == scan.report.excluded.all)
        #expect(scan.report.findings.first?.kind == .flagOnSystemFolder)
    }

    @Test("K1 a container with nothing to say has no findings")
    func clean() throws {
        let c = try ScratchContainer()
        try c.write("Documents/a.txt", "a")
        #expect(try c.scan().report.findings.isEmpty)
    }

    @Test("K1 the JSON schema: its top-level keys and the shapes tools rely on")
    func jsonSchema() throws {
        let c = try Self.populated()
        try c.sparse("Documents/big", size: 2 << 20)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(try c.scan().report)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(Set(object.keys) == ["schema", "container", "appName", "largeFileThreshold", "backup", "excluded",
                                     "zones", "topEntries", "exclusions", "findings", "problems", "protection"])
        #expect(object["schema"] as? String == "appsandboxfs.backup-report/1")
        let backup = try #require(object["backup"] as? [String: Any])
        #expect(Set(backup.keys) == ["entries", "files", "folders", "symlinks", "others", "bytes"])
        let excluded = try #require(object["excluded"] as? [String: Any])
        #expect(Set(excluded.keys) == ["all", "zone", "folder", "flag", "socket"])
        let zone = try #require((object["zones"] as? [[String: Any]])?.first)
        #expect(Set(zone.keys) == ["path", "zone", "backupClass", "total", "backup"])
        let top = try #require((object["topEntries"] as? [[String: Any]])?.first)
        #expect(Set(top.keys) == ["path", "zone", "kind", "total", "backup"])
        let exclusion = try #require((object["exclusions"] as? [[String: Any]])?.first)
        #expect(Set(exclusion.keys) == ["path", "reason", "flags", "kind", "tally"])
        let finding = try #require((object["findings"] as? [[String: Any]])?.first)
        #expect(Set(finding.keys) == ["kind", "path", "bytes", "message"])
        #expect(finding["kind"] as? String == "large-file")
        // Decodes back to the same report.
        let decoded = try JSONDecoder().decode(BackupReport.self, from: data)
        #expect(try encoder.encode(decoded) == data)
    }
}
