// Rules E1-E4: the sandbox boundary. No symbolic link made through the mount
// may point out of the container (decided lexically); a link that already
// points out can be seen but not followed; the driver never touches anything
// outside the backing directory; and protected files get no writable alias.

import Glibc
import Testing

@Suite("Rules: escapes (E1-E4)")
struct EscapeRulesTests {
    @Test("E1 a symlink whose target lands outside the container fails with EPERM and creates nothing")
    func escapingSymlinksFail() throws {
        try withRulesContainer(prepare: { backing in
            try makeDirectory(backing + "/Documents/a")
            try makeDirectory(backing + "/Documents/a/b")
            try writeFile(backing + "/Documents/doc.txt", "a document\n")
        }) { m in
            let dir = m.documents + "/a/b"
            let targets = [
                "/etc/passwd",                       // absolute, elsewhere
                "/",                                 // the root of everything
                m.backing + "/Documents/doc.txt",    // the backing directory is not the container
                m.root,                              // the folder around the mountpoint
                m.mountpoint + "/..",                // folds to the mountpoint's parent
                m.mountpoint + "/Documents/../../x", // climbs out after entering
                m.mountpoint + "-other/Documents",   // a sibling whose name starts like the mountpoint
                m.mountpoint + "x",
                "../../../..",                       // from Documents/a/b: one level above the root
                "../../../../etc/passwd",
                "a/../../../../../x",
                "./../.././../../tmp",
                "../../../../../../../../../../../../../../../../etc",
            ]
            for (index, target) in targets.enumerated() {
                let link = dir + "/out\(index)"
                m.expectDenial("symlink -> \(target)", EPERM, "file-write-create", at: link) {
                    RulesSys.symlink(target, link)
                }
            }
            // From tmp and from the Library too.
            m.expectDenial("symlink in tmp -> /", EPERM, "file-write-create", at: m.tmp + "/root") {
                RulesSys.symlink("/", m.tmp + "/root")
            }
            m.expectDenial("symlink in Library -> ../..", EPERM, "file-write-create", at: m.library + "/up") {
                RulesSys.symlink("../..", m.library + "/up")
            }
            // ln -s says so.
            let ln = runProcess(["ln", "-s", "/etc", m.documents + "/etc"])
            #expect(ln.status != 0 && ln.stderr.contains("Operation not permitted"), "\(ln)")
        }
    }

    /// The order of a request's checks (SandboxPolicy/RequestChecks.swift):
    /// the zone answers before the escape check and the attribute-name
    /// rules, so the bundle's EROFS wins and only its line is written.
    @Test("B2 before E1 and X6: in the bundle an escaping symlink and a system. attribute are EROFS, one line each")
    func zoneAnswersFirst() throws {
        try withRulesContainer { m in
            m.expectDenial("symlink in the bundle -> /etc", EROFS, "file-write-create", at: m.bundle + "/out") {
                RulesSys.symlink("/etc", m.bundle + "/out")
            }
            m.expectDenial("symlink in the bundle -> ../..", EROFS, "file-write-create", at: m.bundle + "/up") {
                RulesSys.symlink("../..", m.bundle + "/up")
            }
            m.expectDenial("setxattr system. in the bundle", EROFS, "file-write-xattr", at: m.bundle) {
                RulesSys.setxattr(m.bundle, "system.x", [1])
            }
        }
    }

    @Test("E1 a symlink that stays inside works: relative within the container, and absolute under the mountpoint")
    func insideSymlinksWork() throws {
        try withRulesContainer(prepare: { backing in
            try makeDirectory(backing + "/Documents/a")
            try makeDirectory(backing + "/Documents/a/b")
            try writeFile(backing + "/Documents/doc.txt", "a document\n")
            try writeFile(backing + "/Library/Preferences/app.plist", "<plist/>\n")
        }) { m in
            let dir = m.documents + "/a/b"
            let cases: [(String, String, String?)] = [
                // (link name, target, what reading through it gives)
                ("rel", "../../doc.txt", "a document\n"),
                ("rel-root", "../../..", nil),                              // exactly the root
                ("rel-prefs", "../../../Library/Preferences/app.plist", "<plist/>\n"),
                ("rel-dots", "./../b/../../doc.txt", "a document\n"),
                ("abs", m.mountpoint + "/Documents/doc.txt", "a document\n"),
                ("abs-root", m.mountpoint, nil),
                ("abs-slashes", m.mountpoint + "//Documents/./a/../doc.txt", "a document\n"),
                ("abs-bundle", m.bundle + "/Info.plist", nil),
                ("dangling", "../../missing.txt", nil),                     // inside, just not there
            ]
            for (name, target, contents) in cases {
                m.expectAllowed("symlink \(name) -> \(target)") { RulesSys.symlink(target, dir + "/" + name) }
                #expect(RulesSys.readlink(dir + "/" + name).rulesValue == target)
                #expect(RulesSys.readlink(m.backingPath("Documents/a/b/" + name)).rulesValue == target,
                        "the backing link holds the target as given")
                if let contents {
                    #expect(readFileText(dir + "/" + name) == contents, "reading through \(name)")
                }
            }
            #expect(RulesSys.list(dir + "/rel-root").rulesValue == ["Documents", "Library", "TestApp.app", "tmp"])
            #expect(RulesSys.list(dir + "/abs-root").rulesValue == ["Documents", "Library", "TestApp.app", "tmp"])
            // Writing through an inside link writes the file inside.
            let fd = open(dir + "/abs", O_WRONLY | O_APPEND | O_CLOEXEC)
            #expect(fd >= 0)
            if fd >= 0 {
                #expect(RulesSys.writeAll(fd, Array("more\n".utf8)) == 0)
                close(fd)
            }
            #expect(readFileText(m.backingPath("Documents/doc.txt")) == "a document\nmore\n")
            // A link to the bundle still leads to a read-only file.
            #expect(RulesSys.outcome(RulesSys.open(dir + "/abs-bundle", O_WRONLY)) == "EROFS")
            let ln = runProcess(["ln", "-s", "../doc.txt", m.documents + "/a/doc-link"])
            #expect(ln.status == 0, "\(ln.stderr)")
        }
    }

    @Test("E2 a link that already points outside can be listed and lstat'ed, but readlink fails with EPERM and nothing follows it")
    func existingEscapingLinks() throws {
        try withRulesSentinel { sentinel in
            try withRulesContainer(prepare: { backing in
                #expect(RulesSys.symlink("/etc", backing + "/Documents/etc") == 0)
                #expect(RulesSys.symlink("/etc/passwd", backing + "/Documents/passwd") == 0)
                #expect(RulesSys.symlink(sentinel, backing + "/Documents/sentinel") == 0)
                #expect(RulesSys.symlink(sentinel + "/precious.txt", backing + "/Documents/precious") == 0)
                #expect(RulesSys.symlink("../../../..", backing + "/Documents/up") == 0)
                #expect(RulesSys.symlink(backing + "/Library", backing + "/Library/backing-abs") == 0)
                #expect(RulesSys.symlink("../../../" + String(sentinel.dropFirst("/tmp/".count)),
                                         backing + "/Documents/sentinel-rel") == 0)
            }) { m in
                let links = ["etc", "passwd", "sentinel", "precious", "up", "sentinel-rel"].map { m.documents + "/" + $0 }
                    + [m.library + "/backing-abs"]
                #expect(RulesSys.list(m.documents).rulesValue
                        == ["Inbox", "etc", "passwd", "precious", "sentinel", "sentinel-rel", "up"])
                for link in links {
                    let st = RulesSys.lstat(link)
                    #expect(st.rulesValue.map { $0.st_mode & S_IFMT } == S_IFLNK, "lstat \(link): \(st.rulesOutcome)")
                    m.expectDenial("readlink \(link)", EPERM, "file-read-data", at: link, watching: [sentinel]) {
                        RulesSys.code { RulesSys.readlink(link).rulesValue == nil ? -1 : 0 }
                    }
                }
                // Following any of them fails (the kernel needs readlink for that).
                let sentinelBefore = RulesTreeSnapshot(of: sentinel)
                let backingBefore = RulesTreeSnapshot(of: m.backing)
                for link in links {
                    #expect(RulesSys.outcome(RulesSys.open(link, O_RDONLY)) == "EPERM", "open \(link)")
                    #expect(RulesSys.stat(link).rulesOutcome == "EPERM", "stat \(link)")
                }
                #expect(RulesSys.outcome(RulesSys.open(m.documents + "/sentinel/precious.txt", O_RDONLY)) == "EPERM")
                #expect(RulesSys.outcome(RulesSys.open(m.documents + "/sentinel/new.txt", O_WRONLY | O_CREAT, 0o644)) == "EPERM")
                #expect(RulesSys.outcome(RulesSys.open(m.documents + "/precious", O_WRONLY | O_TRUNC)) == "EPERM")
                #expect(RulesSys.outcome(RulesSys.mkdir(m.documents + "/sentinel/newdir")) == "EPERM")
                #expect(RulesSys.outcome(RulesSys.unlink(m.documents + "/sentinel/precious.txt")) == "EPERM")
                #expect(RulesSys.outcome(RulesSys.chmod(m.documents + "/precious", 0o777)) == "EPERM")
                #expect(RulesSys.list(m.documents + "/etc").rulesOutcome == "EPERM")
                #expect(RulesSys.outcome(RulesSys.access(m.documents + "/passwd", F_OK)) == "EPERM")
                let cat = runProcess(["cat", m.documents + "/passwd"])
                #expect(cat.status != 0 && cat.stdout.isEmpty, "cat followed the link out: \(cat.stdout.prefix(200))")
                #expect(RulesTreeSnapshot(of: sentinel).changes(since: sentinelBefore).isEmpty)
                #expect(RulesTreeSnapshot(of: m.backing).changes(since: backingBefore).isEmpty)

                // They are the app's own entries, though: it may remove them
                // (which removes the link, never what it points at).
                m.expectAllowed("unlink an escaping link") { RulesSys.unlink(m.documents + "/precious") }
                m.expectAllowed("rename an escaping link") { RulesSys.rename(m.documents + "/etc", m.tmp + "/etc") }
                #expect(readFileText(sentinel + "/precious.txt") == "do not touch\n")
                #expect(RulesTreeSnapshot(of: sentinel).changes(since: sentinelBefore).isEmpty)
            }
        }
    }

    @Test("E3 a link to /etc or to a folder outside, planted in the backing directory, is never followed: reads fail and nothing is created outside")
    func plantedLinksAreNotFollowed() throws {
        try withRulesSentinel { sentinel in
            try withRulesContainer(prepare: { backing in
                #expect(RulesSys.symlink("/etc", backing + "/Documents/evil") == 0)
                #expect(RulesSys.symlink(sentinel, backing + "/Documents/outside") == 0)
                #expect(RulesSys.symlink(sentinel, backing + "/tmp-planted") == 0)
            }) { m in
                let before = RulesTreeSnapshot(of: sentinel)
                let attempts: [(String, () -> Int32)] = [
                    ("open evil/passwd", { RulesSys.open(m.documents + "/evil/passwd", O_RDONLY) }),
                    ("open evil/hostname for writing", { RulesSys.open(m.documents + "/evil/hostname", O_WRONLY) }),
                    ("create evil/asfs-created", { RulesSys.open(m.documents + "/evil/asfs-created", O_WRONLY | O_CREAT, 0o644) }),
                    ("create outside/new.txt", { RulesSys.open(m.documents + "/outside/new.txt", O_WRONLY | O_CREAT, 0o644) }),
                    ("mkdir outside/newdir", { RulesSys.mkdir(m.documents + "/outside/newdir") }),
                    ("mknod outside/fifo", { RulesSys.mkfifo(m.documents + "/outside/fifo") }),
                    ("symlink outside/link", { RulesSys.symlink("x", m.documents + "/outside/link") }),
                    ("unlink outside/precious.txt", { RulesSys.unlink(m.documents + "/outside/precious.txt") }),
                    ("rmdir outside/readonly", { RulesSys.rmdir(m.documents + "/outside/readonly") }),
                    ("rename outside/precious.txt", { RulesSys.rename(m.documents + "/outside/precious.txt", m.documents + "/stolen") }),
                    ("link outside/precious.txt", { RulesSys.link(m.documents + "/outside/precious.txt", m.documents + "/alias") }),
                    ("truncate outside/precious.txt", { RulesSys.truncate(m.documents + "/outside/precious.txt", 0) }),
                    ("chmod outside/folder", { RulesSys.chmod(m.documents + "/outside/folder", 0o777) }),
                    ("setxattr outside/precious.txt", { RulesSys.setxattr(m.documents + "/outside/precious.txt", "user.x", [1]) }),
                    ("open the planted root entry", { RulesSys.open(m.mountpoint + "/tmp-planted/precious.txt", O_RDONLY) }),
                ]
                for (label, attempt) in attempts {
                    let code = attempt()
                    #expect(code != 0, "\(label) succeeded")
                    #expect(RulesSys.outcome(code) == "EPERM", "\(label)")
                }
                #expect(access("/etc/asfs-created", F_OK) != 0, "a file was created in /etc")
                let changes = RulesTreeSnapshot(of: sentinel).changes(since: before)
                #expect(changes.isEmpty, "the folder outside changed:\n\(changes.joined(separator: "\n"))")
                // Every refusal came from the link itself (readlink), never from a change.
                let operations = Set(m.parsedDenials().map(\.operation))
                #expect(operations == ["file-read-data"], "\(m.denialLines().joined(separator: "\n"))")
            }
        }
    }

    @Test("E3 a folder swapped for a link to the outside while mounted is never followed")
    func swappedFolderIsNotFollowed() throws {
        try withRulesSentinel { sentinel in
            try withRulesContainer(prepare: { backing in
                try makeDirectory(backing + "/Documents/work")
                try writeFile(backing + "/Documents/work/a.txt", "a\n")
            }) { m in
                let before = RulesTreeSnapshot(of: sentinel)
                // The kernel now knows Documents/work and the driver holds it open.
                #expect(readFileText(m.documents + "/work/a.txt") == "a\n")
                let fd = open(m.documents + "/work", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                defer { if fd >= 0 { close(fd) } }
                // Someone outside the app swaps the folder for a link out.
                #expect(rename(m.backingPath("Documents/work"), m.backingPath("Documents/work-old")) == 0)
                #expect(symlink(sentinel, m.backingPath("Documents/work")) == 0)
                // Through the mount, at once (cached) and after the cache
                // timeout (looked up again): nothing reaches the sentinel.
                for round in 0..<2 {
                    _ = RulesSys.open(m.documents + "/work/created-\(round).txt", O_WRONLY | O_CREAT, 0o644)
                    _ = RulesSys.mkdir(m.documents + "/work/dir-\(round)")
                    _ = RulesSys.unlink(m.documents + "/work/precious.txt")
                    _ = RulesSys.chmod(m.documents + "/work/folder", 0o777)
                    _ = RulesSys.truncate(m.documents + "/work/precious.txt", 0)
                    let created = openat(fd, "via-fd-\(round).txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
                    if created >= 0 { close(created) }
                    _ = unlinkat(fd, "precious.txt", 0)
                    let changes = RulesTreeSnapshot(of: sentinel).changes(since: before)
                    #expect(changes.isEmpty, "round \(round): the folder outside changed:\n\(changes.joined(separator: "\n"))")
                    usleep(1_500_000)
                }
            }
        }
    }

    @Test("E4 link of a bundle file to a writable place fails with EROFS, of an Inbox file with EPERM")
    func noWritableAliases() throws {
        try withRulesContainer(prepare: { backing in
            try writeFile(backing + "/Documents/Inbox/in.pdf", "handed in\n")
            try makeDirectory(backing + "/Documents/Inbox/sub")
            try writeFile(backing + "/Documents/Inbox/sub/deep.pdf", "deeper\n")
        }) { m in
            let bundleFile = m.bundle + "/Info.plist"
            let inboxFile = m.inbox + "/in.pdf"
            for place in [m.documents, m.library, m.applicationSupport, m.caches, m.preferences, m.tmp] {
                m.expectDenial("link bundle file -> \(place)", EROFS, "file-link", at: place + "/alias", bundleFile) {
                    RulesSys.link(bundleFile, place + "/alias")
                }
                m.expectDenial("link bundle executable -> \(place)", EROFS, "file-link", at: place + "/exe", m.bundle + "/app-binary") {
                    RulesSys.link(m.bundle + "/app-binary", place + "/exe")
                }
                m.expectDenial("link Inbox file -> \(place)", EPERM, "file-link", at: place + "/alias", inboxFile) {
                    RulesSys.link(inboxFile, place + "/alias")
                }
                m.expectDenial("link deeper Inbox file -> \(place)", EPERM, "file-link", at: place + "/deep", m.inbox + "/sub/deep.pdf") {
                    RulesSys.link(m.inbox + "/sub/deep.pdf", place + "/deep")
                }
            }
            // The tool says so, and cp -l cannot sneak one in either.
            let ln = runProcess(["ln", inboxFile, m.documents + "/alias"])
            #expect(ln.status != 0 && ln.stderr.contains("Operation not permitted"), "\(ln)")
            let cpl = runProcess(["cp", "-l", bundleFile, m.documents + "/alias"])
            #expect(cpl.status != 0 && cpl.stderr.contains("Read-only file system"), "\(cpl)")
            #expect(RulesSys.lstat(m.backingPath("Documents/alias")).rulesOutcome == "ENOENT")
            // A copy (not an alias) is fine.
            let cp = runProcess(["cp", inboxFile, m.documents + "/copy.pdf"])
            #expect(cp.status == 0, "\(cp.stderr)")
        }
    }
}
