// Rules I1-I6: Documents/Inbox holds files handed in from outside. The app
// may read them, delete them and move them out; every other change is a
// sandbox denial (EPERM).

import Glibc
import Testing

@Suite("Rules: the Inbox (I1-I6)")
struct InboxRulesTests {
    /// An Inbox as Mail would leave it, and Documents files to play with.
    static func prepareInbox(_ backing: String) throws {
        let inbox = backing + "/Documents/Inbox"
        try writeFile(inbox + "/a.pdf", RulesSys.pattern(8192, seed: 3), mode: 0o644)
        #expect(RulesSys.setxattr(inbox + "/a.pdf", "user.sender", Array("mail".utf8)) == 0)
        try writeFile(inbox + "/b.txt", "second delivery\n", mode: 0o644)
        try writeFile(inbox + "/my file.txt", "a name with a space\n", mode: 0o644)
        try makeDirectory(inbox + "/sub")
        try writeFile(inbox + "/sub/c.txt", "in a folder\n", mode: 0o644)
        try makeDirectory(inbox + "/emptydir")
        try writeFile(backing + "/Documents/doc.txt", "a document\n", mode: 0o644)
        try makeDirectory(backing + "/Documents/emptydir")
    }

    @Test("I1 reads work in the Inbox as in the bundle")
    func readsWork() throws {
        try withRulesContainer(prepare: Self.prepareInbox) { m in
            let before = RulesTreeSnapshot(of: m.backing)
            let a = m.inbox + "/a.pdf"
            #expect(readFileBytes(a) == RulesSys.pattern(8192, seed: 3))
            let fd = open(a, O_RDONLY | O_CLOEXEC)
            #expect(fd >= 0)
            if fd >= 0 {
                defer { close(fd) }
                for flags in [MAP_PRIVATE, MAP_SHARED] {
                    let map = RulesSys.mmap(fd, 8192, PROT_READ, flags)
                    #expect(map != nil, "mmap: \(posixError(errno))")
                    if let map {
                        #expect(Array(UnsafeRawBufferPointer(start: map, count: 8192)) == RulesSys.pattern(8192, seed: 3))
                        munmap(map, 8192)
                    }
                }
            }
            #expect(RulesSys.stat(a).rulesValue.map { Int($0.st_size) } == 8192)
            #expect(RulesSys.list(m.inbox).rulesValue == ["a.pdf", "b.txt", "emptydir", "my file.txt", "sub"])
            #expect(RulesSys.list(m.inbox + "/sub").rulesValue == ["c.txt"])
            #expect(RulesSys.getxattr(a, "user.sender").rulesValue == Array("mail".utf8))
            #expect(RulesSys.listxattr(a).rulesValue?.contains("user.sender") == true)
            #expect(RulesSys.outcome(RulesSys.access(a, R_OK)) == "ok")
            #expect(RulesSys.outcome(RulesSys.access(m.inbox, R_OK | X_OK)) == "ok")
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
            #expect(RulesTreeSnapshot(of: m.backing).changes(since: before).isEmpty)
        }
    }

    @Test("I2 unlink of a file and rmdir of an empty folder in the Inbox work")
    func deletesWork() throws {
        try withRulesContainer(prepare: Self.prepareInbox) { m in
            m.expectAllowed("unlink") { RulesSys.unlink(m.inbox + "/b.txt") }
            #expect(RulesSys.lstat(m.backingPath("Documents/Inbox/b.txt")).rulesOutcome == "ENOENT")
            m.expectAllowed("unlink in a subfolder") { RulesSys.unlink(m.inbox + "/sub/c.txt") }
            m.expectAllowed("rmdir of an empty folder") { RulesSys.rmdir(m.inbox + "/emptydir") }
            m.expectAllowed("rmdir of a folder just emptied") { RulesSys.rmdir(m.inbox + "/sub") }
            #expect(RulesSys.list(m.backingPath("Documents/Inbox")).rulesValue == ["a.pdf", "my file.txt"])
            // The backing file system's own errors pass through.
            m.expectPassedThrough("unlink of a missing file", ENOENT) { RulesSys.unlink(m.inbox + "/missing") }
            try makeDirectory(m.backingPath("Documents/Inbox/full"))
            try writeFile(m.backingPath("Documents/Inbox/full/x"), "x")
            m.expectPassedThrough("rmdir of a full folder", ENOTEMPTY) { RulesSys.rmdir(m.inbox + "/full") }
            // rm as a user would run it.
            let rm = runProcess(["rm", "-r", m.inbox + "/full", m.inbox + "/my file.txt"])
            #expect(rm.status == 0, "\(rm.stderr)")
            #expect(RulesSys.list(m.inbox).rulesValue == ["a.pdf"])
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
        }
    }

    @Test("I3 rename of a file out of the Inbox to a writable place works, and the file can then be edited")
    func moveOutWorks() throws {
        try withRulesContainer(prepare: Self.prepareInbox) { m in
            let inode = RulesSys.lstat(m.backingPath("Documents/Inbox/a.pdf")).rulesValue?.st_ino
            m.expectAllowed("rename to Documents") { RulesSys.rename(m.inbox + "/a.pdf", m.documents + "/a.pdf") }
            #expect(RulesSys.lstat(m.backingPath("Documents/a.pdf")).rulesValue?.st_ino == inode,
                    "not a rename: the inode changed")
            #expect(RulesSys.getxattr(m.documents + "/a.pdf", "user.sender").rulesValue == Array("mail".utf8))
            // Taken in, it is the app's: it can be edited.
            m.expectAllowed("open for writing once out") { RulesSys.open(m.documents + "/a.pdf", O_WRONLY | O_APPEND) }
            let fd = open(m.documents + "/a.pdf", O_WRONLY | O_APPEND | O_CLOEXEC)
            #expect(RulesSys.writeAll(fd, Array("edited".utf8)) == 0)
            close(fd)
            #expect(readFileBytes(m.backingPath("Documents/a.pdf")) == RulesSys.pattern(8192, seed: 3) + Array("edited".utf8))
            m.expectAllowed("chmod once out") { RulesSys.chmod(m.documents + "/a.pdf", 0o600) }

            m.expectAllowed("RENAME_NOREPLACE to Library") {
                RulesSys.renameat2(m.inbox + "/b.txt", m.library + "/b.txt", RulesLinux.renameNoReplace)
            }
            m.expectAllowed("rename to tmp") { RulesSys.rename(m.inbox + "/my file.txt", m.tmp + "/my file.txt") }
            m.expectAllowed("rename over an existing Documents file") {
                RulesSys.rename(m.inbox + "/sub/c.txt", m.documents + "/doc.txt")
            }
            #expect(readFileText(m.backingPath("Documents/doc.txt")) == "in a folder\n")
            m.expectAllowed("rename of a folder out to Library/Caches") {
                RulesSys.rename(m.inbox + "/emptydir", m.caches + "/fromInbox")
            }
            #expect(RulesSys.list(m.backingPath("Documents/Inbox")).rulesValue == ["sub"])
            #expect(RulesSys.list(m.backingPath("Library")).rulesValue?.contains("b.txt") == true)
            #expect(RulesSys.list(m.backingPath("tmp")).rulesValue == ["my file.txt"])

            // `mv` does the same with a plain rename(2).
            try writeFile(m.backingPath("Documents/Inbox/mv.txt"), "moved by mv\n")
            let mv = runProcess(["mv", m.inbox + "/mv.txt", m.documents + "/"])
            #expect(mv.status == 0, "\(mv.stderr)")
            #expect(readFileText(m.backingPath("Documents/mv.txt")) == "moved by mv\n")
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
        }
    }

    @Test("I3 out of the Inbox means to a writable place: into the bundle is EROFS, into the root EPERM")
    func moveOutOnlyToWritablePlaces() throws {
        try withRulesContainer(prepare: Self.prepareInbox) { m in
            let a = m.inbox + "/a.pdf"
            m.expectDenial("rename into the bundle", EROFS, "file-write-rename", at: a, m.bundle + "/a.pdf") {
                RulesSys.rename(a, m.bundle + "/a.pdf")
            }
            m.expectDenial("rename into the root", EPERM, "file-write-rename", at: a, m.mountpoint + "/a.pdf") {
                RulesSys.rename(a, m.mountpoint + "/a.pdf")
            }
            m.expectDenial("rename out over a system folder", EPERM, "file-write-rename",
                           at: m.inbox + "/emptydir", m.caches) {
                RulesSys.rename(m.inbox + "/emptydir", m.caches)
            }
        }
    }

    @Test("I4 every change in the Inbox fails with EPERM and changes nothing")
    func everyChangeFails() throws {
        try withRulesContainer(prepare: Self.prepareInbox) { m in
            let inbox = m.inbox
            let a = inbox + "/a.pdf"
            let doc = m.documents + "/doc.txt"

            m.expectDenial("create", EPERM, "file-write-create", at: inbox + "/new.txt") {
                RulesSys.open(inbox + "/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0o644)
            }
            m.expectDenial("create in a subfolder", EPERM, "file-write-create", at: inbox + "/sub/new.txt") {
                RulesSys.open(inbox + "/sub/new.txt", O_RDWR | O_CREAT, 0o644)
            }
            m.expectDenial("mknod regular", EPERM, "file-write-create", at: inbox + "/node") {
                RulesSys.mknod(inbox + "/node", S_IFREG | 0o644)
            }
            m.expectDenial("mknod fifo", EPERM, "file-write-create", at: inbox + "/fifo") { RulesSys.mkfifo(inbox + "/fifo") }
            m.expectDenial("mkdir", EPERM, "file-write-create", at: inbox + "/folder") { RulesSys.mkdir(inbox + "/folder") }
            m.expectDenial("mkdir in a subfolder", EPERM, "file-write-create", at: inbox + "/sub/folder") {
                RulesSys.mkdir(inbox + "/sub/folder")
            }

            m.expectDenial("open O_WRONLY", EPERM, "file-write-data", at: a) { RulesSys.open(a, O_WRONLY) }
            m.expectDenial("open O_RDWR", EPERM, "file-write-data", at: a) { RulesSys.open(a, O_RDWR) }
            m.expectDenial("open O_WRONLY|O_APPEND", EPERM, "file-write-data", at: a) { RulesSys.open(a, O_WRONLY | O_APPEND) }
            m.expectDenial("open O_RDONLY|O_TRUNC", EPERM, "file-write-data", at: a) { RulesSys.open(a, O_RDONLY | O_TRUNC) }
            m.expectDenial("open O_WRONLY|O_CREAT of an existing file", EPERM, "file-write-data", at: a) {
                RulesSys.open(a, O_WRONLY | O_CREAT)
            }
            m.expectDenial("open for writing in a subfolder", EPERM, "file-write-data", at: inbox + "/sub/c.txt") {
                RulesSys.open(inbox + "/sub/c.txt", O_WRONLY)
            }
            m.expectDenial("truncate", EPERM, "file-write-data", at: a) { RulesSys.truncate(a, 0) }
            m.expectDenial("chmod", EPERM, "file-write-mode", at: a) { RulesSys.chmod(a, 0o600) }
            m.expectDenial("chmod of a subfolder", EPERM, "file-write-mode", at: inbox + "/sub") {
                RulesSys.chmod(inbox + "/sub", 0o700)
            }
            m.expectDenial("chown", EPERM, "file-write-owner", at: a) { RulesSys.chown(a, 1000, 1000) }
            m.expectDenial("utimens now", EPERM, "file-write-times", at: a) { RulesSys.touch(a) }
            m.expectDenial("utimens to a time", EPERM, "file-write-times", at: inbox + "/b.txt") {
                RulesSys.utimens(inbox + "/b.txt", atime: 0, mtime: 0)
            }
            m.expectDenial("setxattr", EPERM, "file-write-xattr", at: a) { RulesSys.setxattr(a, "user.x", [1]) }
            m.expectDenial("setxattr of the skip-backup attribute", EPERM, "file-write-xattr", at: a) {
                RulesSys.setxattr(a, "com.apple.metadata:com_apple_backup_excludeItem", Array("com.apple.backupd".utf8))
            }
            m.expectDenial("removexattr", EPERM, "file-write-xattr", at: a) { RulesSys.removexattr(a, "user.sender") }

            m.expectDenial("symlink into", EPERM, "file-write-create", at: inbox + "/link") {
                RulesSys.symlink("a.pdf", inbox + "/link")
            }
            m.expectDenial("link into from Documents", EPERM, "file-link", at: inbox + "/doc.txt", doc) {
                RulesSys.link(doc, inbox + "/doc.txt")
            }
            m.expectDenial("link within", EPERM, "file-link", at: inbox + "/a2.pdf", a) { RulesSys.link(a, inbox + "/a2.pdf") }
            m.expectDenial("link of an Inbox file to Documents", EPERM, "file-link", at: m.documents + "/a.pdf", a) {
                RulesSys.link(a, m.documents + "/a.pdf")
            }

            m.expectDenial("rename into from Documents", EPERM, "file-write-rename", at: doc, inbox + "/doc.txt") {
                RulesSys.rename(doc, inbox + "/doc.txt")
            }
            m.expectDenial("rename a folder into from Documents", EPERM, "file-write-rename",
                           at: m.documents + "/emptydir", inbox + "/emptydir2") {
                RulesSys.rename(m.documents + "/emptydir", inbox + "/emptydir2")
            }
            m.expectDenial("rename from Documents over an Inbox file", EPERM, "file-write-rename", at: doc, inbox + "/b.txt") {
                RulesSys.rename(doc, inbox + "/b.txt")
            }
            m.expectDenial("rename within", EPERM, "file-write-rename", at: a, inbox + "/renamed.pdf") {
                RulesSys.rename(a, inbox + "/renamed.pdf")
            }
            m.expectDenial("rename within over another Inbox file", EPERM, "file-write-rename", at: a, inbox + "/b.txt") {
                RulesSys.rename(a, inbox + "/b.txt")
            }
            m.expectDenial("rename into a subfolder", EPERM, "file-write-rename", at: a, inbox + "/sub/a.pdf") {
                RulesSys.rename(a, inbox + "/sub/a.pdf")
            }
            m.expectDenial("RENAME_NOREPLACE into", EPERM, "file-write-rename", at: doc, inbox + "/doc.txt") {
                RulesSys.renameat2(doc, inbox + "/doc.txt", RulesLinux.renameNoReplace)
            }
            m.expectDenial("RENAME_EXCHANGE with Documents", EPERM, "file-write-rename", at: a, doc) {
                RulesSys.renameat2(a, doc, RulesLinux.renameExchange)
            }
            m.expectDenial("RENAME_EXCHANGE within", EPERM, "file-write-rename", at: a, inbox + "/b.txt") {
                RulesSys.renameat2(a, inbox + "/b.txt", RulesLinux.renameExchange)
            }

            #expect(readFileBytes(a) == RulesSys.pattern(8192, seed: 3))
        }
    }

    @Test("I5 the Inbox folder itself cannot be removed, renamed or changed (EPERM)")
    func inboxFolderStays() throws {
        try withRulesContainer(prepare: Self.prepareInbox) { m in
            let inbox = m.inbox
            m.expectDenial("rmdir of the full Inbox", EPERM, "file-write-unlink", at: inbox) { RulesSys.rmdir(inbox) }
            m.expectDenial("rename to Documents/Inbox2", EPERM, "file-write-rename", at: inbox, m.documents + "/Inbox2") {
                RulesSys.rename(inbox, m.documents + "/Inbox2")
            }
            m.expectDenial("rename to Library", EPERM, "file-write-rename", at: inbox, m.library + "/Inbox") {
                RulesSys.rename(inbox, m.library + "/Inbox")
            }
            m.expectDenial("RENAME_EXCHANGE with a Documents folder", EPERM, "file-write-rename",
                           at: inbox, m.documents + "/emptydir") {
                RulesSys.renameat2(inbox, m.documents + "/emptydir", RulesLinux.renameExchange)
            }
            m.expectDenial("chmod", EPERM, "file-write-mode", at: inbox) { RulesSys.chmod(inbox, 0o777) }
            m.expectDenial("chown", EPERM, "file-write-owner", at: inbox) { RulesSys.chown(inbox, 1000, 1000) }
            m.expectDenial("utimens", EPERM, "file-write-times", at: inbox) { RulesSys.touch(inbox) }
            m.expectDenial("setxattr", EPERM, "file-write-xattr", at: inbox) { RulesSys.setxattr(inbox, "user.x", [1]) }

            // Emptied (I2 allows that), it still cannot go.
            let rm = runProcess(["sh", "-c", "rm -rf \"$1\"/* \"$1\"/.[!.]*; true", "sh", inbox])
            #expect(rm.status == 0)
            #expect(RulesSys.list(inbox).rulesValue == [], "\(rm.stderr)")
            m.expectDenial("rmdir of the empty Inbox", EPERM, "file-write-unlink", at: inbox) { RulesSys.rmdir(inbox) }
            m.expectDenial("rename of the empty Inbox", EPERM, "file-write-rename", at: inbox, m.tmp + "/Inbox") {
                RulesSys.rename(inbox, m.tmp + "/Inbox")
            }
            m.expectDenial("rename a Documents folder over the empty Inbox", EPERM, "file-write-rename",
                           at: m.documents + "/emptydir", inbox) {
                RulesSys.rename(m.documents + "/emptydir", inbox)
            }
            #expect(isDirectory(m.backingPath("Documents/Inbox")))
        }
    }

    @Test("I6 deliver puts a file into the Inbox of a mounted container, byte for byte, numbering clashes")
    func deliverIntoMountedContainer() throws {
        let source = try makeTemporaryDirectory(prefix: "asfs-rules-deliver")
        defer { removeTree(source) }
        try writeFile(source + "/report.pdf", RulesSys.pattern(100_000, seed: 9))
        try writeFile(source + "/notes", "no extension\n")
        try withRulesContainer { m in
            let first = runProcess([Binaries.appsandboxfs, "deliver", source + "/report.pdf", source + "/notes",
                                    "--to", m.mountpoint])
            #expect(first.status == 0, "\(first.stderr)")
            #expect(readFileBytes(m.inbox + "/report.pdf") == RulesSys.pattern(100_000, seed: 9))
            #expect(readFileText(m.inbox + "/notes") == "no extension\n")
            let second = runProcess([Binaries.appsandboxfs, "deliver", source + "/report.pdf", "--to", m.mountpoint])
            #expect(second.status == 0, "\(second.stderr)")
            #expect(RulesSys.list(m.inbox).rulesValue == ["notes", "report-1.pdf", "report.pdf"])
            #expect(readFileBytes(m.inbox + "/report-1.pdf") == RulesSys.pattern(100_000, seed: 9))
            // Delivered files are Inbox files: read and delete only.
            m.expectDenial("writing a delivered file", EPERM, "file-write-data", at: m.inbox + "/report.pdf") {
                RulesSys.open(m.inbox + "/report.pdf", O_WRONLY)
            }
            m.expectAllowed("taking a delivered file in") {
                RulesSys.rename(m.inbox + "/report-1.pdf", m.documents + "/report.pdf")
            }
            // The source is left as it was.
            #expect(readFileBytes(source + "/report.pdf") == RulesSys.pattern(100_000, seed: 9))
        }
    }

    @Test("I6 deliver puts a file into the Inbox of an unmounted container, and refuses what is not a file")
    func deliverIntoBackingDirectory() throws {
        let root = try makeTemporaryDirectory(prefix: "asfs-rules-deliver")
        defer { removeTree(root) }
        let made = runProcess([Binaries.appsandboxfs, "init", root + "/backing", "--app-name", "Mailer"])
        #expect(made.status == 0, "\(made.stderr)")
        try writeFile(root + "/letter.txt", "Dear app,\n")
        let delivered = runProcess([Binaries.appsandboxfs, "deliver", root + "/letter.txt", "--to", root + "/backing"])
        #expect(delivered.status == 0, "\(delivered.stderr)")
        #expect(readFileText(root + "/backing/Documents/Inbox/letter.txt") == "Dear app,\n")
        #expect(RulesSys.list(root + "/backing/Documents/Inbox").rulesValue == ["letter.txt"], "no leftovers")

        let before = RulesTreeSnapshot(of: root + "/backing")
        try makeDirectory(root + "/folder")
        let folder = runProcess([Binaries.appsandboxfs, "deliver", root + "/folder", "--to", root + "/backing"])
        #expect(folder.status != 0)
        #expect(folder.stderr.contains(root + "/folder"), "\(folder.stderr)")
        let missing = runProcess([Binaries.appsandboxfs, "deliver", root + "/absent.txt", "--to", root + "/backing"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("absent.txt"), "\(missing.stderr)")
        let noContainer = runProcess([Binaries.appsandboxfs, "deliver", root + "/letter.txt", "--to", root + "/folder"])
        #expect(noContainer.status != 0)
        #expect(noContainer.stderr.contains(root + "/folder"), "\(noContainer.stderr)")
        #expect(RulesTreeSnapshot(of: root + "/backing").changes(since: before).isEmpty)
    }

    /// Whoever can write the backing folder can make Documents/Inbox a link;
    /// root's deliver must not follow it (docs/security.md).
    @Test("I6 deliver into a backing folder whose Documents/Inbox is a link: refused, the link's target untouched, a set-ID source delivered without its bits")
    func deliverDoesNotFollowALinkedInbox() throws {
        let root = try makeTemporaryDirectory(prefix: "asfs-rules-deliver")
        defer { removeTree(root) }
        #expect(runProcess([Binaries.appsandboxfs, "init", root + "/backing", "--app-name", "Mailer"]).status == 0)
        try writeFile(root + "/letter.txt", "Dear app,\n")
        #expect(chmod(root + "/letter.txt", 0o4755) == 0)
        let delivered = runProcess([Binaries.appsandboxfs, "deliver", root + "/letter.txt", "--to", root + "/backing"])
        #expect(delivered.status == 0, "\(delivered.stderr)")
        #expect(RulesSys.lstat(root + "/backing/Documents/Inbox/letter.txt").rulesValue.map { $0.st_mode & 0o7777 } == 0o755)

        try makeDirectory(root + "/victim")
        let before = RulesTreeSnapshot(of: root + "/victim")
        #expect(rename(root + "/backing/Documents/Inbox", root + "/backing/Documents/Inbox.real") == 0)
        #expect(symlink(root + "/victim", root + "/backing/Documents/Inbox") == 0)
        let redirected = runProcess([Binaries.appsandboxfs, "deliver", root + "/letter.txt", "--to", root + "/backing"])
        #expect(redirected.status != 0)
        #expect(RulesTreeSnapshot(of: root + "/victim").changes(since: before).isEmpty, "deliver wrote through the link")
    }
}
