import ContainerBackup
import Glibc
import Testing

@Suite("Purge, on a backing directory: K2")
struct BackupPurgeUnitTests {
    static func filled() throws -> ScratchContainer {
        let c = try ScratchContainer()
        try c.mkdirs("Library/Caches/thumbs/small")
        try c.write("Library/Caches/thumbs/small/1.png", "1")
        try c.write("Library/Caches/thumbs/2.png", "22")
        try c.mkdirs("Library/Caches/models/v1")
        try c.write("Library/Caches/models/v1/weights", "weights")
        try c.mkdirs("Library/Caches/mixed")
        try c.write("Library/Caches/mixed/keep.db", "keep")
        try c.write("Library/Caches/mixed/drop.db", "drop")
        try c.write("Library/Caches/loose", "loose")
        try c.mkdirs("tmp/work")
        try c.write("tmp/work/part", "part")
        try c.write("tmp/flagged", "f")
        try c.write("Documents/doc.txt", "doc")
        try c.flag("Library/Caches/models", .excludeItem)
        try c.flag("Library/Caches/mixed/keep.db", .mobileBackup)
        try c.flag("tmp/flagged", .excludeItem)
        return c
    }

    @Test("K2 purge empties Caches and tmp but keeps flagged entries, the subtrees of flagged folders and the folders that lead to them")
    func keepsFlagged() throws {
        let c = try Self.filled()
        let outcomes = try Purge.run(root: c.root, targets: [.caches, .tmp])
        #expect(c.listing().filter { $0.hasPrefix("Library/Caches") || $0.hasPrefix("tmp") } == [
            "Library/Caches", "Library/Caches/mixed", "Library/Caches/mixed/keep.db",
            "Library/Caches/models", "Library/Caches/models/v1", "Library/Caches/models/v1/weights",
            "tmp", "tmp/flagged",
        ])
        #expect(c.exists("Documents/doc.txt"))
        let caches = try #require(outcomes.first { $0.target == .caches })
        #expect(caches.kept.map(\.path) == ["Library/Caches/mixed/keep.db", "Library/Caches/models"])
        #expect((caches.removed.files, caches.removed.folders, caches.removed.bytes) == (4, 2, 1 + 2 + 4 + 5))
        #expect(caches.problems.isEmpty)
        let tmp = try #require(outcomes.first { $0.target == .tmp })
        #expect(tmp.kept.map(\.path) == ["tmp/flagged"])
        #expect((tmp.removed.files, tmp.removed.folders) == (1, 1))
    }

    @Test("K2 only the targets asked for are purged")
    func targets() throws {
        let c = try Self.filled()
        _ = try Purge.run(root: c.root, targets: [.caches])
        #expect(c.exists("tmp/work/part"))
        #expect(!c.exists("Library/Caches/loose"))
        _ = try Purge.run(root: c.root, targets: [.tmp])
        #expect(!c.exists("tmp/work"))
    }

    @Test("K2 a dry run changes nothing and says what would go")
    func dryRun() throws {
        let c = try Self.filled()
        let before = c.listing()
        let outcomes = try Purge.run(root: c.root, targets: [.caches, .tmp], dryRun: true)
        #expect(c.listing() == before)
        let real = try Purge.run(root: c.root, targets: [.caches, .tmp])
        #expect(outcomes.map(\.removed) == real.map(\.removed))
        #expect(outcomes.map(\.kept) == real.map(\.kept))
    }

    @Test("X5 K2 a flag on Library, the root, Caches or tmp itself keeps all of it",
          arguments: [("Library", Purge.Target.caches), ("", .caches), ("Library/Caches", .caches), ("", .tmp), ("tmp", .tmp)])
    func flaggedAbove(folder: String, target: Purge.Target) throws {
        let c = try Self.filled()
        try c.flag(folder, .excludeItem)
        let before = c.listing()
        let outcome = try #require(try Purge.run(root: c.root, targets: [target]).first)
        #expect(c.listing() == before)
        #expect(outcome.removed.entries == 0)
        #expect(outcome.kept.map(\.path) == [folder.isEmpty ? "." : folder])
        #expect(outcome.kept.first?.wholeFolder == true)
    }

    @Test("K2 a MobileBackup value iOS does not read still keeps the entry")
    func unrecognizedValueKeeps() throws {
        let c = try Self.filled()
        try c.write("Library/Caches/odd", "odd")
        try c.flag("Library/Caches/odd", .mobileBackup, Array("true".utf8))
        let outcome = try #require(try Purge.run(root: c.root, targets: [.caches]).first)
        #expect(c.exists("Library/Caches/odd"))
        #expect(outcome.kept.first { $0.path == "Library/Caches/odd" }?.unrecognizedValue == true)
    }

    @Test("K2 symbolic links are removed as links, never followed")
    func symlinks() throws {
        let c = try Self.filled()
        try c.symlink("Library/Caches/to-documents", to: c.path("Documents"))
        try c.symlink("Library/Caches/to-doc", to: "../../Documents/doc.txt")
        try c.symlink("tmp/to-root", to: "/")
        _ = try Purge.run(root: c.root, targets: [.caches, .tmp])
        #expect(!c.exists("Library/Caches/to-documents") && !c.exists("Library/Caches/to-doc") && !c.exists("tmp/to-root"))
        #expect(c.exists("Documents/doc.txt"))
    }

    @Test("K2 read-only folders are emptied too")
    func readOnlyFolders() throws {
        let c = try Self.filled()
        try c.mkdirs("Library/Caches/locked/inner")
        try c.write("Library/Caches/locked/inner/x", "x")
        chmod(c.path("Library/Caches/locked/inner"), 0o500)
        chmod(c.path("Library/Caches/locked"), 0o500)
        let outcome = try #require(try Purge.run(root: c.root, targets: [.caches]).first)
        #expect(outcome.problems.isEmpty)
        #expect(!c.exists("Library/Caches/locked"))
    }
}
