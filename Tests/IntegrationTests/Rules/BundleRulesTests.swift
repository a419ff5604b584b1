// Rules B1-B4: the bundle, `<AppName>.app`, is read-only. Reads work as on
// any file system; every change fails with EROFS, changes nothing, and writes
// one denial line.

import Glibc
import Testing

@Suite("Rules: the bundle (B1-B4)")
struct BundleRulesTests {
    /// A bundle with some depth: a resource folder, an empty folder, a link,
    /// an attribute, and files of several modes; and a Documents file to
    /// link and rename with.
    static func prepareBundle(_ backing: String) throws {
        let app = backing + "/TestApp.app"
        try makeDirectory(app + "/Resources")
        try makeDirectory(app + "/Resources/Empty")
        try writeFile(app + "/Resources/data.bin", RulesSys.pattern(10_000), mode: 0o644)
        #expect(RulesSys.setxattr(app + "/Resources/data.bin", "user.origin", Array("build".utf8)) == 0)
        #expect(RulesSys.symlink("Resources/data.bin", app + "/current") == 0)
        try writeFile(app + "/shared.txt", "anyone may write this, but not here\n", mode: 0o666)
        try writeFile(app + "/private.bin", "owner only\n", mode: 0o600)
        try writeFile(backing + "/Documents/doc.txt", "a document\n", mode: 0o644)
        try makeDirectory(backing + "/Documents/emptydir")
    }

    @Test("B1 reads work in the bundle: open, read, mmap, stat, readdir, readlink, getxattr, listxattr, access")
    func readsWork() throws {
        try withRulesContainer(prepare: Self.prepareBundle) { m in
            let before = RulesTreeSnapshot(of: m.backing)
            let data = m.bundle + "/Resources/data.bin"
            let expected = RulesSys.pattern(10_000)

            // open O_RDONLY + read
            #expect(readFileBytes(data) == expected)
            #expect(readFileText(m.bundle + "/Info.plist").contains("<key>CFBundleIdentifier</key>"))

            // mmap, private and shared (read-only)
            let fd = open(data, O_RDONLY | O_CLOEXEC)
            #expect(fd >= 0, "open: \(posixError(errno))")
            if fd >= 0 {
                defer { close(fd) }
                for flags in [MAP_PRIVATE, MAP_SHARED] {
                    let map = RulesSys.mmap(fd, expected.count, PROT_READ, flags)
                    #expect(map != nil, "mmap \(flags): \(posixError(errno))")
                    if let map {
                        let bytes = Array(UnsafeRawBufferPointer(start: map, count: expected.count))
                        #expect(bytes == expected, "mmap flags \(flags) read other bytes")
                        munmap(map, expected.count)
                    }
                }
                // A private writable map is a copy: allowed, and never reaches the file.
                let map = RulesSys.mmap(fd, expected.count, PROT_READ | PROT_WRITE, MAP_PRIVATE)
                #expect(map != nil, "private writable mmap: \(posixError(errno))")
                if let map {
                    map.storeBytes(of: 0xFF, as: UInt8.self)
                    munmap(map, expected.count)
                }
            }

            // stat
            let st = try RulesSys.stat(data).get()
            #expect(st.st_size == 10_000)
            #expect(st.st_mode & S_IFMT == S_IFREG)
            #expect(st.st_mode & 0o7777 == 0o644)
            #expect(RulesSys.lstat(m.bundle + "/current").rulesValue.map { $0.st_mode & S_IFMT } == S_IFLNK)
            #expect(RulesSys.stat(m.bundle + "/app-binary").rulesValue.map { $0.st_mode & 0o7777 } == 0o755)

            // readdir
            #expect(RulesSys.list(m.bundle).rulesValue
                    == ["Info.plist", "Resources", "app-binary", "current", "private.bin", "shared.txt"])
            #expect(RulesSys.list(m.bundle + "/Resources").rulesValue == ["Empty", "data.bin"])
            #expect(RulesSys.list(m.bundle + "/Resources/Empty").rulesValue == [])

            // readlink, and following the link
            #expect(RulesSys.readlink(m.bundle + "/current").rulesValue == "Resources/data.bin")
            #expect(readFileBytes(m.bundle + "/current") == expected)

            // getxattr, listxattr
            #expect(RulesSys.getxattr(data, "user.origin").rulesValue == Array("build".utf8))
            #expect(RulesSys.listxattr(data).rulesValue?.contains("user.origin") == true)
            #expect(RulesSys.getxattr(data, "user.absent").rulesOutcome == "ENODATA")

            // access
            #expect(RulesSys.outcome(RulesSys.access(m.bundle + "/app-binary", R_OK | X_OK)) == "ok")
            #expect(RulesSys.outcome(RulesSys.access(data, R_OK)) == "ok")
            #expect(RulesSys.outcome(RulesSys.access(m.bundle, R_OK | X_OK)) == "ok")

            // Running the bundle's executable is a read too.
            let run = runProcess([m.bundle + "/app-binary"])
            #expect(run.status == 0 && run.stdout == "TestApp\n", "\(run)")

            #expect(m.denialLines().isEmpty, "reads wrote denial lines:\n\(m.denialLines().joined(separator: "\n"))")
            let changes = RulesTreeSnapshot(of: m.backing).changes(since: before)
            #expect(changes.isEmpty, "reads changed the backing directory:\n\(changes.joined(separator: "\n"))")
        }
    }

    @Test("B2 every change in the bundle fails with EROFS and changes nothing")
    func everyChangeFails() throws {
        try withRulesContainer(prepare: Self.prepareBundle) { m in
            let app = m.bundle
            let plist = app + "/Info.plist"
            let data = app + "/Resources/data.bin"
            let doc = m.documents + "/doc.txt"

            // Creating names
            m.expectDenial("create", EROFS, "file-write-create", at: app + "/new.txt") {
                RulesSys.open(app + "/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0o644)
            }
            m.expectDenial("create in a subfolder", EROFS, "file-write-create", at: app + "/Resources/new.txt") {
                RulesSys.open(app + "/Resources/new.txt", O_RDWR | O_CREAT, 0o644)
            }
            m.expectDenial("mknod regular", EROFS, "file-write-create", at: app + "/node") {
                RulesSys.mknod(app + "/node", S_IFREG | 0o644)
            }
            m.expectDenial("mknod fifo", EROFS, "file-write-create", at: app + "/fifo") {
                RulesSys.mkfifo(app + "/fifo")
            }
            m.expectDenial("mkdir", EROFS, "file-write-create", at: app + "/NewFolder") {
                RulesSys.mkdir(app + "/NewFolder")
            }
            m.expectDenial("mkdir in a subfolder", EROFS, "file-write-create", at: app + "/Resources/Empty/deeper") {
                RulesSys.mkdir(app + "/Resources/Empty/deeper")
            }
            m.expectDenial("symlink", EROFS, "file-write-create", at: app + "/link2") {
                RulesSys.symlink("Info.plist", app + "/link2")
            }

            // Writing data (write and fallocate need a writable descriptor,
            // which these opens refuse: there is no other way to get one).
            m.expectDenial("open O_WRONLY", EROFS, "file-write-data", at: plist) { RulesSys.open(plist, O_WRONLY) }
            m.expectDenial("open O_RDWR", EROFS, "file-write-data", at: data) { RulesSys.open(data, O_RDWR) }
            m.expectDenial("open O_WRONLY|O_APPEND", EROFS, "file-write-data", at: data) {
                RulesSys.open(data, O_WRONLY | O_APPEND)
            }
            m.expectDenial("open O_RDONLY|O_TRUNC", EROFS, "file-write-data", at: data) {
                RulesSys.open(data, O_RDONLY | O_TRUNC)
            }
            m.expectDenial("open O_WRONLY|O_CREAT of an existing file", EROFS, "file-write-data", at: plist) {
                RulesSys.open(plist, O_WRONLY | O_CREAT)
            }
            m.expectDenial("open O_RDWR of a 0666 file", EROFS, "file-write-data", at: app + "/shared.txt") {
                RulesSys.open(app + "/shared.txt", O_RDWR)
            }
            m.expectDenial("truncate", EROFS, "file-write-data", at: data) { RulesSys.truncate(data, 0) }
            m.expectDenial("truncate to grow", EROFS, "file-write-data", at: data) { RulesSys.truncate(data, 1 << 20) }

            // Attributes
            m.expectDenial("chmod", EROFS, "file-write-mode", at: plist) { RulesSys.chmod(plist, 0o600) }
            m.expectDenial("chmod of a folder", EROFS, "file-write-mode", at: app + "/Resources") {
                RulesSys.chmod(app + "/Resources", 0o700)
            }
            m.expectDenial("chown", EROFS, "file-write-owner", at: plist) { RulesSys.chown(plist, 1000, 1000) }
            m.expectDenial("chgrp", EROFS, "file-write-owner", at: data) { RulesSys.chown(data, uid_t.max, 1000) }
            m.expectDenial("lchown of a link", EROFS, "file-write-owner", at: app + "/current") {
                RulesSys.lchown(app + "/current", 1000, 1000)
            }
            m.expectDenial("utimens now (touch)", EROFS, "file-write-times", at: plist) { RulesSys.touch(plist) }
            m.expectDenial("utimens to a time", EROFS, "file-write-times", at: data) {
                RulesSys.utimens(data, atime: 1_000_000_000, mtime: 1_000_000_000)
            }
            m.expectDenial("setxattr", EROFS, "file-write-xattr", at: data) {
                RulesSys.setxattr(data, "user.added", Array("x".utf8))
            }
            m.expectDenial("setxattr replacing", EROFS, "file-write-xattr", at: data) {
                RulesSys.setxattr(data, "user.origin", Array("changed".utf8))
            }
            m.expectDenial("setxattr of the skip-backup name", EROFS, "file-write-xattr", at: plist) {
                RulesSys.setxattr(plist, "com.apple.MobileBackup", [1])
            }
            m.expectDenial("removexattr", EROFS, "file-write-xattr", at: data) {
                RulesSys.removexattr(data, "user.origin")
            }

            // Removing names
            m.expectDenial("unlink", EROFS, "file-write-unlink", at: plist) { RulesSys.unlink(plist) }
            m.expectDenial("unlink a link", EROFS, "file-write-unlink", at: app + "/current") {
                RulesSys.unlink(app + "/current")
            }
            m.expectDenial("rmdir of an empty folder", EROFS, "file-write-unlink", at: app + "/Resources/Empty") {
                RulesSys.rmdir(app + "/Resources/Empty")
            }
            m.expectDenial("rmdir of a full folder", EROFS, "file-write-unlink", at: app + "/Resources") {
                RulesSys.rmdir(app + "/Resources")
            }

            // Links, to and from the bundle
            m.expectDenial("link within the bundle", EROFS, "file-link", at: app + "/plist2", plist) {
                RulesSys.link(plist, app + "/plist2")
            }
            m.expectDenial("link from the bundle to Documents", EROFS, "file-link", at: m.documents + "/plist", plist) {
                RulesSys.link(plist, m.documents + "/plist")
            }
            m.expectDenial("link from Documents into the bundle", EROFS, "file-link", at: app + "/doc.txt", doc) {
                RulesSys.link(doc, app + "/doc.txt")
            }

            // Renames into, out of and within the bundle
            m.expectDenial("rename within", EROFS, "file-write-rename", at: plist, app + "/Renamed.plist") {
                RulesSys.rename(plist, app + "/Renamed.plist")
            }
            m.expectDenial("rename into a subfolder", EROFS, "file-write-rename", at: plist, app + "/Resources/Info.plist") {
                RulesSys.rename(plist, app + "/Resources/Info.plist")
            }
            m.expectDenial("rename out to Documents", EROFS, "file-write-rename", at: data, m.documents + "/data.bin") {
                RulesSys.rename(data, m.documents + "/data.bin")
            }
            m.expectDenial("rename a folder out to tmp", EROFS, "file-write-rename", at: app + "/Resources", m.tmp + "/Resources") {
                RulesSys.rename(app + "/Resources", m.tmp + "/Resources")
            }
            m.expectDenial("rename into from Documents", EROFS, "file-write-rename", at: doc, app + "/doc.txt") {
                RulesSys.rename(doc, app + "/doc.txt")
            }
            m.expectDenial("rename from Documents over a bundle file", EROFS, "file-write-rename", at: doc, plist) {
                RulesSys.rename(doc, plist)
            }
            m.expectDenial("rename a Documents folder over an empty bundle folder", EROFS, "file-write-rename",
                           at: m.documents + "/emptydir", app + "/Resources/Empty") {
                RulesSys.rename(m.documents + "/emptydir", app + "/Resources/Empty")
            }
            m.expectDenial("RENAME_NOREPLACE out", EROFS, "file-write-rename", at: plist, m.library + "/Info.plist") {
                RulesSys.renameat2(plist, m.library + "/Info.plist", RulesLinux.renameNoReplace)
            }
            m.expectDenial("RENAME_NOREPLACE into", EROFS, "file-write-rename", at: doc, app + "/doc.txt") {
                RulesSys.renameat2(doc, app + "/doc.txt", RulesLinux.renameNoReplace)
            }
            m.expectDenial("RENAME_EXCHANGE with Documents", EROFS, "file-write-rename", at: plist, doc) {
                RulesSys.renameat2(plist, doc, RulesLinux.renameExchange)
            }
            m.expectDenial("RENAME_EXCHANGE within", EROFS, "file-write-rename", at: plist, app + "/shared.txt") {
                RulesSys.renameat2(plist, app + "/shared.txt", RulesLinux.renameExchange)
            }

            // After all that, reads still work and give the original bytes.
            #expect(readFileBytes(data) == RulesSys.pattern(10_000))
        }
    }

    @Test("B2 a bundle given with --bundle is shown read-only as <AppName>.app and never written")
    func bundleFromElsewhere() throws {
        let outside = try makeTemporaryDirectory(prefix: "asfs-rules-bundle")
        defer { removeTree(outside) }
        try writeFile(outside + "/Info.plist", "<plist>built</plist>\n")
        try writeFile(outside + "/BuiltApp", "#!/bin/sh\necho built\n", mode: 0o755)
        try makeDirectory(outside + "/Assets")
        try writeFile(outside + "/Assets/icon.png", RulesSys.pattern(3000))
        let original = RulesTreeSnapshot(of: outside)

        try withRulesContainer(extraArguments: ["--bundle", outside]) { m in
            #expect(RulesSys.list(m.bundle).rulesValue == ["Assets", "BuiltApp", "Info.plist"])
            #expect(readFileText(m.bundle + "/Info.plist") == "<plist>built</plist>\n")
            #expect(readFileBytes(m.bundle + "/Assets/icon.png") == RulesSys.pattern(3000))

            m.expectDenial("create", EROFS, "file-write-create", at: m.bundle + "/new", watching: [outside]) {
                RulesSys.open(m.bundle + "/new", O_WRONLY | O_CREAT, 0o644)
            }
            m.expectDenial("open for writing", EROFS, "file-write-data", at: m.bundle + "/Info.plist", watching: [outside]) {
                RulesSys.open(m.bundle + "/Info.plist", O_WRONLY | O_TRUNC)
            }
            m.expectDenial("chmod", EROFS, "file-write-mode", at: m.bundle + "/BuiltApp", watching: [outside]) {
                RulesSys.chmod(m.bundle + "/BuiltApp", 0o777)
            }
            m.expectDenial("unlink", EROFS, "file-write-unlink", at: m.bundle + "/Assets/icon.png", watching: [outside]) {
                RulesSys.unlink(m.bundle + "/Assets/icon.png")
            }
            m.expectDenial("rename out", EROFS, "file-write-rename", at: m.bundle + "/Info.plist", m.documents + "/Info.plist",
                           watching: [outside]) {
                RulesSys.rename(m.bundle + "/Info.plist", m.documents + "/Info.plist")
            }
            m.expectDenial("setxattr", EROFS, "file-write-xattr", at: m.bundle + "/Assets", watching: [outside]) {
                RulesSys.setxattr(m.bundle + "/Assets", "user.x", [1])
            }
        }
        let changes = RulesTreeSnapshot(of: outside).changes(since: original)
        #expect(changes.isEmpty, "the --bundle folder changed:\n\(changes.joined(separator: "\n"))")
    }

    @Test("B3 access(2) in the bundle answers from the modes as on any file system; the write then fails with EROFS")
    func accessAnswersFromModes() throws {
        try withRulesContainer(prepare: Self.prepareBundle) { m in
            let plist = m.bundle + "/Info.plist"
            // As root, as on any file system: W_OK is granted (root may write
            // any file the modes allow), X_OK needs an x bit somewhere.
            #expect(RulesSys.outcome(RulesSys.access(plist, W_OK)) == "ok")
            #expect(RulesSys.outcome(RulesSys.access(plist, R_OK | W_OK)) == "ok")
            #expect(RulesSys.outcome(RulesSys.access(plist, X_OK)) == "EACCES")
            #expect(RulesSys.outcome(RulesSys.access(m.bundle + "/app-binary", X_OK)) == "ok")
            #expect(RulesSys.outcome(RulesSys.access(m.bundle, W_OK)) == "ok")
            // ... and the write itself is refused by the bundle rule.
            m.expectDenial("open for writing after access said yes", EROFS, "file-write-data", at: plist) {
                RulesSys.open(plist, O_WRONLY)
            }

            // As nobody: the modes answer, before any rule.
            let script = """
                access TestApp.app/Info.plist R
                access TestApp.app/Info.plist W
                access TestApp.app/shared.txt W
                access TestApp.app/private.bin R
                access TestApp.app/app-binary X
                access TestApp.app W
                open 0 TestApp.app/Info.plist WRONLY
                open 1 TestApp.app/private.bin RDONLY
                open 2 TestApp.app/shared.txt WRONLY
                open 3 TestApp.app/new.txt WRONLY|CREAT
                """
            let probe = runFSProbe(in: m.mountpoint, script: script, asUser: 65534)
            #expect(probe.lines == [
                "ok", "err EACCES", "ok", "err EACCES", "ok", "err EACCES",
                "err EACCES", "err EACCES", "err EROFS", "err EACCES",
            ], "\(probe)")
            // Only the one the modes let through reached the rule.
            let denials = m.parsedDenials().filter { $0.process == "fsprobe" }
            #expect(denials.map(\.path) == [m.bundle + "/shared.txt"], "\(denials)")
            #expect(denials.map(\.operation) == ["file-write-data"])
        }
    }

    @Test("B4 the bundle folder itself cannot be removed, renamed or changed (EROFS)")
    func bundleFolderStays() throws {
        try withRulesContainer(prepare: Self.prepareBundle) { m in
            let app = m.bundle
            m.expectDenial("rmdir", EROFS, "file-write-unlink", at: app) { RulesSys.rmdir(app) }
            m.expectDenial("rename within the root", EROFS, "file-write-rename", at: app, m.mountpoint + "/Other.app") {
                RulesSys.rename(app, m.mountpoint + "/Other.app")
            }
            m.expectDenial("rename into Documents", EROFS, "file-write-rename", at: app, m.documents + "/TestApp.app") {
                RulesSys.rename(app, m.documents + "/TestApp.app")
            }
            m.expectDenial("rename over it", EROFS, "file-write-rename", at: m.documents + "/emptydir", app) {
                RulesSys.rename(m.documents + "/emptydir", app)
            }
            m.expectDenial("RENAME_EXCHANGE with Documents", EROFS, "file-write-rename", at: app, m.documents) {
                RulesSys.renameat2(app, m.documents, RulesLinux.renameExchange)
            }
            m.expectDenial("RENAME_EXCHANGE with a Documents folder", EROFS, "file-write-rename",
                           at: app, m.documents + "/emptydir") {
                RulesSys.renameat2(app, m.documents + "/emptydir", RulesLinux.renameExchange)
            }
            m.expectDenial("chmod", EROFS, "file-write-mode", at: app) { RulesSys.chmod(app, 0o700) }
            m.expectDenial("chown", EROFS, "file-write-owner", at: app) { RulesSys.chown(app, 1000, 1000) }
            m.expectDenial("utimens", EROFS, "file-write-times", at: app) { RulesSys.touch(app) }
            m.expectDenial("setxattr", EROFS, "file-write-xattr", at: app) {
                RulesSys.setxattr(app, "com.apple.metadata:com_apple_backup_excludeItem", Array("com.apple.backupd".utf8))
            }

            // rm -rf gets nowhere, and says why.
            let before = RulesTreeSnapshot(of: m.backing)
            let rm = runProcess(["rm", "-rf", app])
            #expect(rm.status != 0)
            #expect(rm.stderr.contains("Read-only file system"), "\(rm.stderr)")
            #expect(RulesTreeSnapshot(of: m.backing).changes(since: before).isEmpty)
            #expect(RulesSys.list(app).rulesValue?.contains("Info.plist") == true)
        }
    }
}
