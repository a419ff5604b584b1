// The rules as ordinary tools meet them: the messages a user sees (from
// strerror of the exact errno), and the everyday commands that must just work.

import Glibc
import Testing

@Suite("Rules: ordinary tools")
struct ToolBehaviourTests {
    static func prepare(_ backing: String) throws {
        try writeFile(backing + "/Documents/Inbox/a", "handed in\n")
        try writeFile(backing + "/Documents/Inbox/b.pdf", "another\n")
        try writeFile(backing + "/Documents/notes.txt", "notes\n")
        try makeDirectory(backing + "/Documents/Projects")
        try writeFile(backing + "/Library/Preferences/com.example.TestApp.plist", "<plist/>\n")
        try writeFile(backing + "/Library/Caches/thumb.jpg", "jpg\n")
        try writeFile(backing + "/Library/Application Support/store.db", "db\n")
    }

    @Test("B2 cp /etc/hosts into the bundle fails with \"Read-only file system\" and changes nothing")
    func cpIntoBundle() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let before = RulesTreeSnapshot(of: m.backing)
            let cp = runProcess(["cp", "/etc/hosts", m.bundle + "/"])
            #expect(cp.status != 0)
            #expect(cp.stderr.contains("Read-only file system"), "\(cp.stderr)")
            #expect(RulesTreeSnapshot(of: m.backing).changes(since: before).isEmpty)
            let line = m.parsedDenials().last
            #expect(line?.process == "cp" && line?.path == m.bundle + "/hosts", "\(m.denialLines())")
            #expect(line?.operation == "file-write-create")
        }
    }

    @Test("I4 touch Documents/Inbox/x fails with \"Operation not permitted\"")
    func touchInInbox() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let before = RulesTreeSnapshot(of: m.backing)
            let touch = runProcess(["touch", "Documents/Inbox/x"], cwd: m.mountpoint)
            #expect(touch.status != 0)
            #expect(touch.stderr.contains("Operation not permitted"), "\(touch.stderr)")
            // touch of an existing Inbox file: its times are fixed too.
            let again = runProcess(["touch", "Documents/Inbox/a"], cwd: m.mountpoint)
            #expect(again.status != 0 && again.stderr.contains("Operation not permitted"), "\(again.stderr)")
            #expect(RulesTreeSnapshot(of: m.backing).changes(since: before).isEmpty)
            // (touch of an existing file tries open for writing, then utimensat: two denials.)
            let denials = m.parsedDenials()
            #expect(denials.count >= 2 && denials.allSatisfy { $0.process == "touch" }, "\(m.denialLines())")
            #expect(denials.first?.path == m.inbox + "/x" && denials.last?.path == m.inbox + "/a")
        }
    }

    @Test("I3 mv Documents/Inbox/a Documents/ works")
    func mvOutOfInbox() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let mv = runProcess(["mv", "Documents/Inbox/a", "Documents/"], cwd: m.mountpoint)
            #expect(mv.status == 0, "\(mv.stderr)")
            #expect(readFileText(m.backingPath("Documents/a")) == "handed in\n")
            #expect(RulesSys.lstat(m.backingPath("Documents/Inbox/a")).rulesOutcome == "ENOENT")
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
        }
    }

    @Test("T1 sh -c 'rm -rf tmp/*' works")
    func rmInTmp() throws {
        try withRulesContainer { m in
            try writeFile(m.tmp + "/one.txt", "1")
            try writeFile(m.tmp + "/with space.txt", "2")
            #expect(RulesSys.mkdir(m.tmp + "/tree") == 0)
            #expect(RulesSys.mkdir(m.tmp + "/tree/sub") == 0)
            try writeFile(m.tmp + "/tree/sub/deep.txt", "3", mode: 0o444)
            #expect(RulesSys.chmod(m.tmp + "/tree/sub", 0o555) == 0)
            #expect(RulesSys.symlink("../Documents", m.tmp + "/docs") == 0)
            let rm = runProcess(["sh", "-c", "rm -rf tmp/*"], cwd: m.mountpoint)
            #expect(rm.status == 0, "\(rm.stderr)")
            #expect(RulesSys.list(m.tmp).rulesValue == [])
            #expect(isDirectory(m.backingPath("Documents/Inbox")), "rm followed tmp/docs")
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
        }
    }

    @Test("B1 I1 W1 T1 ls -la of every zone works and lists the expected names")
    func lsEveryZone() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            try writeFile(m.backingPath("tmp/scratch"), "x")
            let expected: [(String, [String])] = [
                ("", ["Documents", "Library", "TestApp.app", "tmp"]),
                ("TestApp.app", ["Info.plist", "app-binary"]),
                ("Documents", ["Inbox", "Projects", "notes.txt"]),
                ("Documents/Inbox", ["a", "b.pdf"]),
                ("Documents/Projects", []),
                ("Library", ["Application Support", "Caches", "Preferences"]),
                ("Library/Application Support", ["store.db"]),
                ("Library/Caches", ["thumb.jpg"]),
                ("Library/Preferences", ["com.example.TestApp.plist"]),
                ("tmp", ["scratch"]),
            ]
            for (zone, names) in expected {
                let path = zone.isEmpty ? m.mountpoint : m.path(zone)
                let ls = runProcess(["ls", "-la", "--quoting-style=literal", path])
                #expect(ls.status == 0, "ls -la \(zone): \(ls.stderr)")
                #expect(ls.stderr.isEmpty, "ls -la \(zone): \(ls.stderr)")
                // The last field of each entry line (names here hold no
                // spaces except "Application Support").
                let listed = ls.stdout.split(separator: "\n").dropFirst().compactMap { line -> String? in
                    let fields = line.split(separator: " ", maxSplits: 8, omittingEmptySubsequences: true)
                    return fields.count == 9 ? String(fields[8]) : nil
                }.filter { $0 != "." && $0 != ".." }
                #expect(listed.sorted() == names.sorted(), "ls -la \(zone):\n\(ls.stdout)")
            }
            let find = runProcess(["find", m.mountpoint, "-type", "f"])
            #expect(find.status == 0 && find.stdout.split(separator: "\n").count == 9, "\(find)")
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
        }
    }

    @Test("I2 S2 E1 B4 more everyday commands give the expected results and messages")
    func everydayCommands() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let source = try makeTemporaryDirectory(prefix: "asfs-rules-src")
            defer { removeTree(source) }
            try writeFile(source + "/a.txt", "a")
            try makeDirectory(source + "/nested")
            try writeFile(source + "/nested/b.txt", "b")

            func check(_ argv: [String], succeeds: Bool, message: String? = nil,
                       sourceLocation: SourceLocation = #_sourceLocation) {
                let result = runProcess(argv, cwd: m.mountpoint)
                let label = argv.joined(separator: " ")
                #expect((result.status == 0) == succeeds, "\(label): exit \(result.status) \(result.stderr)",
                        sourceLocation: sourceLocation)
                if let message {
                    #expect(result.stderr.contains(message), "\(label): \(result.stderr)", sourceLocation: sourceLocation)
                }
            }
            check(["rm", "Documents/Inbox/b.pdf"], succeeds: true)
            check(["mkdir", "Documents/Inbox/folder"], succeeds: false, message: "Operation not permitted")
            check(["sh", "-c", "echo x > Documents/Inbox/a"], succeeds: false, message: "Operation not permitted")
            check(["sh", "-c", "echo x >> Documents/Inbox/a"], succeeds: false, message: "Operation not permitted")
            check(["rmdir", "tmp"], succeeds: false, message: "Operation not permitted")
            check(["mv", "Library/Caches", "Documents/"], succeeds: false, message: "Operation not permitted")
            check(["mv", "TestApp.app", "Other.app"], succeeds: false, message: "Read-only file system")
            check(["chmod", "-R", "u+w", "TestApp.app"], succeeds: false, message: "Read-only file system")
            check(["mkdir", "NewTopLevel"], succeeds: false, message: "Operation not permitted")
            check(["ln", "-s", "/etc/passwd", "Documents/passwd"], succeeds: false, message: "Operation not permitted")
            check(["ln", "-s", "../notes.txt", "Documents/Projects/notes"], succeeds: true)
            check(["cat", "Documents/Projects/notes"], succeeds: true)
            check(["rsync", "-a", source + "/", "Documents/Projects/copy/"], succeeds: true)
            check(["cp", "-a", "TestApp.app", "Documents/Projects/bundle-copy"], succeeds: true)
            check(["tar", "-C", source, "-cf", "tmp/src.tar", "."], succeeds: true)
            check(["tar", "-C", "Library/Application Support", "-xf", "tmp/src.tar"], succeeds: true)
            check(["mv", "tmp/src.tar", "Library/Caches/"], succeeds: true)
            #expect(readFileText(m.backingPath("Documents/Projects/copy/nested/b.txt")) == "b")
            #expect(readFileText(m.backingPath("Library/Application Support/nested/b.txt")) == "b")
            #expect(readFileText(m.backingPath("Documents/Projects/bundle-copy/Info.plist")).contains("TestApp"))
            #expect(RulesSys.list(m.backingPath("Documents/Inbox")).rulesValue == ["a"])
        }
    }
}
