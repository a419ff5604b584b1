// E1 and E2 against links that lead through other links: the kernel takes a
// `..` after a link from where the link led, not from the link's folder, so
// the check must follow the container's own links as the kernel will
// (issue 11, item 1). And a node's place comes from the driver's name tree,
// not from its backing path, so a backing folder given through a symbolic
// link behaves as its real path (issue 12).

import Glibc
import Testing

@Suite("Rules: link chains and the name tree (E1, E2)")
struct LinkChainRulesTests {
    @Test("E1 E2 a chain of links to '.' followed by '..' cannot climb out, made in either order, as another user")
    func chainOfLinksCannotEscape() throws {
        try withRulesContainer(prepare: { backing in
            try makeDirectory(backing + "/Documents/s", mode: 0o777)
            try makeDirectory(backing + "/Documents/t", mode: 0o777)
        }) { m in
            let s = m.documents + "/s", t = m.documents + "/t"
            // E1: `d` is a link when `esc` is made: the link is refused.
            let script = "ln -s . d && ln -s d/d/d/d/d/d/../../../../../../etc/passwd esc; head -1 esc"
            let first = runProcess(["sh", "-c", script], asUser: 65534, cwd: s)
            #expect(!first.stdout.contains("root:"), "read /etc/passwd through the mount: \(first)")
            #expect(first.stderr.contains("Operation not permitted"), "\(first)")
            #expect(RulesSys.lstat(s + "/esc").isFailure, "esc was made")
            // E2: `esc` made first (then it stays inside), `d` after: readlink refuses.
            let second = runProcess(["sh", "-c", "ln -s d/d/d/d/d/d/../../../../../../etc/passwd esc && ln -s . d && head -1 esc"],
                                    asUser: 65534, cwd: t)
            #expect(!second.stdout.contains("root:"), "read /etc/passwd through the mount: \(second)")
            #expect(second.status != 0 && second.stderr.contains("Operation not permitted"), "\(second)")
            #expect(m.parsedDenials().contains { $0.operation == "file-read-data" && $0.path == t + "/esc" },
                    "no E2 denial line for \(t)/esc:\n\(m.denialLines().joined(separator: "\n"))")
        }
    }

    @Test("E2 a link read once while it stays inside, then a folder on its way swapped for a link to '.': the next use is checked again, not served from the kernel's cache")
    func swappedFolderAfterARead() throws {
        try withRulesContainer(prepare: { backing in
            try makeDirectory(backing + "/Documents/s", mode: 0o777)
        }) { m in
            let s = m.documents + "/s"
            // With six real folders, esc climbs no higher than the
            // container's root: it is allowed, and reading it once makes the
            // kernel ask for its target (ENOENT: the container has no etc).
            let made = runProcess(["sh", "-c", "mkdir -p d/d/d/d/d/d && ln -s d/d/d/d/d/d/../../../../../../../../etc/passwd esc && cat esc"],
                                  asUser: 65534, cwd: s)
            #expect(made.stderr.contains("No such file or directory"), "\(made)")
            #expect(RulesSys.lstat(s + "/esc").isFailure == false, "esc was not made: \(made)")
            // Now `d` leads back to s, and the same text climbs out of the
            // mount: every later use must be judged on the tree as it is.
            let swapped = runProcess(["sh", "-c", "mv d dreal && ln -s . d && head -1 esc"], asUser: 65534, cwd: s)
            #expect(!swapped.stdout.contains("root:"), "read /etc/passwd through the mount: \(swapped)")
            #expect(swapped.status != 0 && swapped.stderr.contains("Operation not permitted"), "\(swapped)")
            #expect(m.parsedDenials().contains { $0.operation == "file-read-data" && $0.path == s + "/esc" },
                    "no E2 denial line for \(s)/esc:\n\(m.denialLines().joined(separator: "\n"))")
        }
    }

    @Test("E1 a '..' after a real folder, or after a link that stays inside, still works")
    func insideChainsWork() throws {
        try withRulesContainer(prepare: { backing in
            for folder in ["a", "a/b", "a/b/c"] { try makeDirectory(backing + "/Documents/" + folder) }
            try writeFile(backing + "/Documents/a/doc.txt", "a document\n")
        }) { m in
            let a = m.documents + "/a"
            m.expectAllowed("symlink b/c/../../doc.txt") { RulesSys.symlink("b/c/../../doc.txt", a + "/viaFolders") }
            #expect(readFileText(a + "/viaFolders") == "a document\n")
            // `down` leads to b/c: `down/..` is b, `down/../..` is a.
            m.expectAllowed("symlink down -> b/c") { RulesSys.symlink("b/c", a + "/down") }
            m.expectAllowed("symlink down/../../doc.txt") { RulesSys.symlink("down/../../doc.txt", a + "/viaLink") }
            #expect(readFileText(a + "/viaLink") == "a document\n")
            // A link through itself: the kernel would give ELOOP; readlink
            // refuses it as a chain of more than 40 links.
            m.expectAllowed("symlink loop/.. (no loop yet)") { RulesSys.symlink("loop/..", a + "/loop") }
            m.expectDenial("readlink loop", EPERM, "file-read-data", at: a + "/loop") {
                if case .failure(let error) = RulesSys.readlink(a + "/loop") { return error.code }
                return 0
            }
        }
    }

    @Test("E1 with the backing folder given through a symbolic link, a link that stays inside works (issue 12)")
    func backingThroughASymlink() throws {
        try withRulesMount { m in
            for folder in ["a", "a/b"] { try makeDirectory(m.backingPath("Documents/" + folder)) }
            try writeFile(m.backingPath("Library/lib.txt"), "library\n")
            let via = m.root + "/via"
            #expect(Glibc.symlink(m.backing, via) == 0)
            let mounted = m.run(["mount", via, m.mountpoint, "--app-name", m.appName, "--log", m.root + "/background.log"])
            try #require(mounted.status == 0, "\(mounted)")
            #expect(RulesSys.symlink("../../Library", m.path("Documents/a/b/asInIssue12")) == 0,
                    "ln -s ../../Library Documents/a/b/asInIssue12")
            let up = m.path("Documents/a/b/up")
            #expect(RulesSys.symlink("../../../Library", up) == 0, "ln -s ../../../Library Documents/a/b/up")
            #expect(readFileText(up + "/lib.txt") == "library\n")
            // And one that climbs out is still refused.
            #expect(RulesSys.symlink("../../../../x", m.path("Documents/a/b/out")) == EPERM)
        }
    }
}

extension Result {
    var isFailure: Bool {
        if case .failure = self { return true }
        return false
    }
}
