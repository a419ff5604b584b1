// A file with names in two zones (a hard link between the Inbox and
// Documents, or out of the bundle: made in the backing directory, or
// brought back by `restore`) is one inode, and FUSE names it to the driver
// by one node whichever name the caller used. Each request must still be
// judged by the name it came through (B2, I4, W1), and a denial must name
// that path; a symbolic link linked into another folder is judged where
// each name lies (E1, E2). Found by a black-box pass: the node took the
// zone of the name looked up last.

import Glibc
import Testing

@Suite("Rules: a file with names in two zones is judged by the name used (B2, I4, W1, E2)")
struct HardLinkZoneTests {
    static func prepare(_ backing: String) throws {
        try writeFile(backing + "/Documents/Inbox/letter.pdf", "inbox\n")
        #expect(RulesSys.link(backing + "/Documents/Inbox/letter.pdf", backing + "/Documents/letter-copy.pdf") == 0)
        try writeFile(backing + "/TestApp.app/asset.bin", "bundle\n")
        #expect(RulesSys.link(backing + "/TestApp.app/asset.bin", backing + "/Documents/asset-copy.bin") == 0)
    }

    static func append(_ path: String, _ text: String) -> Int32 {
        let fd = Glibc.open(path, O_WRONLY | O_APPEND | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        defer { Glibc.close(fd) }
        return RulesSys.writeAll(fd, Array(text.utf8))
    }

    @Test("I4 B2 W1 the Inbox or bundle name looked up first, then the Documents name: the first still refuses every change, the second takes them")
    func protectedNameFirst() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let inboxName = m.inbox + "/letter.pdf", inboxCopy = m.documents + "/letter-copy.pdf"
            let bundleName = m.bundle + "/asset.bin", bundleCopy = m.documents + "/asset-copy.bin"
            for path in [inboxName, inboxCopy, bundleName, bundleCopy] { #expect(RulesSys.stat(path).rulesValue != nil, "stat \(path)") }
            m.expectDenial("append through the Inbox name", EPERM, "file-write-data", at: inboxName) { Self.append(inboxName, "x") }
            m.expectDenial("chmod through the Inbox name", EPERM, "file-write-mode", at: inboxName) { RulesSys.chmod(inboxName, 0o600) }
            m.expectDenial("setxattr through the Inbox name", EPERM, "file-write-xattr", at: inboxName) {
                RulesSys.setxattr(inboxName, "user.tag", [1])
            }
            m.expectDenial("append through the bundle name", EROFS, "file-write-data", at: bundleName) { Self.append(bundleName, "x") }
            m.expectDenial("setxattr through the bundle name", EROFS, "file-write-xattr", at: bundleName) {
                RulesSys.setxattr(bundleName, "user.tag", [1])
            }
            m.expectAllowed("append through the Documents name of the Inbox file") { Self.append(inboxCopy, "more\n") }
            m.expectAllowed("chmod through the Documents name of the bundle file") { RulesSys.chmod(bundleCopy, 0o640) }
            #expect(readFileText(m.backingPath("Documents/Inbox/letter.pdf")) == "inbox\nmore\n")
        }
    }

    @Test("I4 B2 W1 the Documents name looked up first, then the Inbox or bundle name: the Documents name still takes changes, the other refuses them, and the denial names the path used")
    func writableNameFirst() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let inboxName = m.inbox + "/letter.pdf", inboxCopy = m.documents + "/letter-copy.pdf"
            let bundleName = m.bundle + "/asset.bin", bundleCopy = m.documents + "/asset-copy.bin"
            for path in [inboxCopy, inboxName, bundleCopy, bundleName] { #expect(RulesSys.stat(path).rulesValue != nil, "stat \(path)") }
            m.expectAllowed("append through the Documents name") { Self.append(inboxCopy, "ok\n") }
            m.expectAllowed("utimens through the Documents name") { RulesSys.utimens(bundleCopy, atime: 1_000_000, mtime: 2_000_000) }
            m.expectDenial("append through the Inbox name", EPERM, "file-write-data", at: inboxName) { Self.append(inboxName, "x") }
            m.expectDenial("truncate through the bundle name", EROFS, "file-write-data", at: bundleName) {
                RulesSys.open(bundleName, O_WRONLY | O_TRUNC)
            }
            // And again the other way round, each name as often as it is used.
            m.expectAllowed("append through the Documents name again") { Self.append(inboxCopy, "again\n") }
            m.expectDenial("chmod through the Inbox name again", EPERM, "file-write-mode", at: inboxName) { RulesSys.chmod(inboxName, 0o600) }
            #expect(readFileText(m.backingPath("Documents/Inbox/letter.pdf")) == "inbox\nok\nagain\n")
        }
    }

    @Test("P2 P6 a class set through the Documents name holds through the Inbox name at once: locked, neither name opens")
    func classThroughEitherName() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let inboxName = m.inbox + "/letter.pdf", inboxCopy = m.documents + "/letter-copy.pdf"
            #expect(readFileText(inboxName) == "inbox\n")   // the Inbox name's node reads its class now
            #expect(readFileText(inboxCopy) == "inbox\n")
            #expect(RulesSys.setxattr(inboxCopy, "NSFileProtectionKey", Array("NSFileProtectionComplete".utf8)) == 0)
            m.lock(grace: 0)
            defer { m.unlock() }
            #expect(RulesSys.open(inboxCopy, O_RDONLY) == EPERM, "the Documents name opened while locked")
            #expect(RulesSys.open(inboxName, O_RDONLY) == EPERM, "the Inbox name opened while locked: its node kept the old class")
        }
    }

    @Test("E1 E2 a symbolic link hard-linked into another folder: each name's target is judged from its own folder")
    func symlinkLinkedElsewhere() throws {
        try withRulesContainer { m in
            let folder = m.library + "/d"
            #expect(RulesSys.mkdir(folder) == 0)
            try writeFile(m.documents + "/here.txt", "here\n")
            let original = folder + "/s", linked = m.documents + "/s2"
            m.expectAllowed("symlink ../../Documents in Library/d") { RulesSys.symlink("../../Documents", original) }
            #expect(RulesSys.readlink(original).rulesValue == "../../Documents")
            // link(2) of a symbolic link names the link itself.
            m.expectAllowed("link of the symbolic link into Documents") { RulesSys.link(original, linked) }
            m.expectDenial("readlink of the Documents name (climbs out from there)", EPERM, "file-read-data", at: linked) {
                if case .failure(let error) = RulesSys.readlink(linked) { return error.code }
                return 0
            }
            #expect(RulesSys.readlink(original).rulesValue == "../../Documents", "the Library name, which stays inside, was refused")
            #expect(readFileText(original + "/here.txt") == "here\n")
        }
    }
}
