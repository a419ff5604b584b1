// chown(f, -1, -1) names no owner, yet it is a chown: a read-only file
// system refuses it with EROFS (the VFS asks for write access before it
// looks at the arguments), and the contract lists chown among what the
// bundle (B2), the Inbox (I4) and the root and system folders (S3) refuse.
// Where chown is allowed it only updates the ctime (W1: the differential
// case `chown_minus_one_updates_ctime_only`).

import Glibc
import Testing

@Suite("Rules: chown(-1, -1) is a chown (B2, I4, S3)")
struct ChownNoChangeRulesTests {
    @Test("B2 I4 S3 chown(-1, -1) of a bundle file, an Inbox file, Documents itself: refused and logged; of a Documents file: allowed")
    func chownOfNoOwner() throws {
        try withRulesContainer(prepare: { backing in
            try writeFile(backing + "/TestApp.app/asset.bin", "bundle\n")
            try writeFile(backing + "/Documents/Inbox/letter.pdf", "inbox\n")
            try writeFile(backing + "/Documents/mine.txt", "mine\n")
        }) { m in
            let asset = m.bundle + "/asset.bin", letter = m.inbox + "/letter.pdf"
            m.expectDenial("chown -1 -1 in the bundle", EROFS, "file-write-owner", at: asset) { RulesSys.chown(asset, uid_t.max, gid_t.max) }
            m.expectDenial("chown -1 -1 in the Inbox", EPERM, "file-write-owner", at: letter) { RulesSys.chown(letter, uid_t.max, gid_t.max) }
            m.expectDenial("chown -1 -1 of Documents", EPERM, "file-write-owner", at: m.documents) {
                RulesSys.chown(m.documents, uid_t.max, gid_t.max)
            }
            m.expectAllowed("chown -1 -1 in Documents") { RulesSys.chown(m.documents + "/mine.txt", uid_t.max, gid_t.max) }
        }
    }
}
