// Issue 11, item 8 (the file system's part): a rename that leaves a whiteout
// adds a name where names may not be added (I4, S1); set-ID bits whose
// clearing fails fail the write, as on ext4; a mode changed in the backing
// folder while mounted shows through the mount within the attribute
// timeout (1 s), not after a day.

import Glibc
import Testing

@Suite("Rules: what a change leaves behind (I4, S1, set-ID bits, attributes)")
struct ChangeFailureRulesTests {
    static let renameWhiteout: UInt32 = 4

    @Test("I4 S1 RENAME_WHITEOUT out of the Inbox or the root fails with EPERM: the whiteout would be a new entry there")
    func whiteoutIsAnAdd() throws {
        try withRulesContainer(prepare: { backing in
            try writeFile(backing + "/Documents/Inbox/a.pdf", "pdf\n")
            try makeDirectory(backing + "/SystemData")
        }) { m in
            m.expectDenial("rename whiteout out of the Inbox", EPERM, "file-write-rename",
                           at: m.inbox + "/a.pdf", m.documents + "/a.pdf") {
                RulesSys.renameat2(m.inbox + "/a.pdf", m.documents + "/a.pdf", Self.renameWhiteout)
            }
            m.expectDenial("rename whiteout out of the root", EPERM, "file-write-rename",
                           at: m.mountpoint + "/SystemData", m.documents + "/SystemData") {
                RulesSys.renameat2(m.mountpoint + "/SystemData", m.documents + "/SystemData", Self.renameWhiteout)
            }
            // Where a new name is allowed, it works.
            try writeFile(m.documents + "/w.txt", "w\n")
            m.expectAllowed("rename whiteout in Documents") {
                RulesSys.renameat2(m.documents + "/w.txt", m.library + "/w.txt", Self.renameWhiteout)
            }
        }
    }

    @Test("A write whose set-user-ID bit cannot be cleared (append-only file) fails, as on ext4; the bit is never left on silently")
    func setIDClearingFailureFailsTheWrite() throws {
        try withRulesContainer(prepare: { backing in
            try writeFile(backing + "/Documents/suid", "x\n", mode: 0o4777)
        }) { m in
            let backingFile = m.backingPath("Documents/suid")
            #expect(Glibc.chmod(backingFile, 0o4777) == 0)
            #expect(runProcess(["chattr", "+a", backingFile]).status == 0)
            defer { _ = runProcess(["chattr", "-a", backingFile]) }
            let write = runProcess(["sh", "-c", "printf y >> " + m.documents + "/suid"], asUser: 65534)
            guard case .success(let s) = RulesSys.lstat(backingFile) else { Issue.record("lstat"); return }
            // Either the write failed, or the bit went: never written with the bit on.
            let written = readFileText(backingFile) != "x\n"
            #expect(!(written && s.st_mode & S_ISUID != 0), "written with the set-user-ID bit left on: \(write)")
            #expect(write.status != 0, "the write succeeded: \(write)")
        }
    }

    @Test("A mode changed in the backing folder while mounted shows through the mount within the attribute timeout")
    func backingModeChangeShows() throws {
        try withRulesContainer(prepare: { backing in
            try writeFile(backing + "/Documents/m.txt", "m\n", mode: 0o644)
        }) { m in
            let file = m.documents + "/m.txt"
            guard case .success(let before) = RulesSys.stat(file) else { Issue.record("stat"); return }
            #expect(before.st_mode & 0o777 == 0o644)
            #expect(Glibc.chmod(m.backingPath("Documents/m.txt"), 0o600) == 0)
            let deadline = monotonicNow() + 5
            var mode = before.st_mode & 0o777
            while mode != 0o600 && monotonicNow() < deadline {
                if case .success(let now) = RulesSys.stat(file) { mode = now.st_mode & 0o777 }
                if mode != 0o600 { usleep(50_000) }
            }
            #expect(mode == 0o600, "the mount still shows \(String(mode, radix: 8)) after 5 s")
        }
    }
}
