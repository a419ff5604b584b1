// open(2) with O_TMPFILE through the mount (FUSE_TMPFILE, which libfuse
// 3.14 does not know and FuseKit hands over as a create): an unnamed file
// in the writable zones that linkat(2) can name, judged as a create
// everywhere else (I4: EPERM in the Inbox, B2: EROFS in the bundle, S1:
// EPERM at the root), with the denial line naming the folder.

import Foundation
import Glibc
import Testing

@Suite("W1 I4 B2 S1 O_TMPFILE: an unnamed file where creates work, refused as a create elsewhere")
struct TmpfileRulesTests {
    /// O_TMPFILE as the kernel headers spell it (__O_TMPFILE | O_DIRECTORY).
    static let tmpfileFlag: Int32 = 0o20000000 | O_DIRECTORY
    static let emptyPath: Int32 = 0x1000  // AT_EMPTY_PATH

    @Test("W1 an O_TMPFILE file in Documents, Library, Caches and tmp: no name, no link, written and read; linkat names it once")
    func unnamedThenNamed() throws {
        try withRulesContainer { m in
            for folder in [m.documents, m.library, m.library + "/Caches", m.tmp] {
                let fd = Glibc.open(folder, Self.tmpfileFlag | O_RDWR | O_CLOEXEC, 0o640)
                #expect(fd >= 0, "open O_TMPFILE in \(folder): errno \(errno)")
                guard fd >= 0 else { continue }
                defer { close(fd) }
                #expect(write(fd, "anonymous", 9) == 9)
                var status = stat()
                #expect(fstat(fd, &status) == 0)
                #expect(status.st_nlink == 0 && status.st_size == 9 && status.st_mode & 0o777 == 0o640,
                        "\(folder): nlink \(status.st_nlink), size \(status.st_size), mode \(String(status.st_mode & 0o777, radix: 8))")
                let listed = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                #expect(!listed.contains { $0.hasPrefix("#") }, "\(folder) lists \(listed)")
                let named = folder + "/named"
                #expect(linkat(fd, "", AT_FDCWD, named, Self.emptyPath) == 0, "linkat in \(folder): errno \(errno)")
                #expect(fstat(fd, &status) == 0 && status.st_nlink == 1)
                #expect(readFileText(named) == "anonymous")
                // The name leads to the same file: a write through it shows on the descriptor.
                try writeFile(named, "rewritten")
                var back = [UInt8](repeating: 0, count: 16)
                #expect(pread(fd, &back, 16, 0) == 9 && String(decoding: back[0..<9], as: UTF8.self) == "rewritten")
            }
        }
    }

    @Test("I4 B2 S1 O_TMPFILE in the Inbox is EPERM, in the bundle EROFS, at the root EPERM: a create's denial line naming the folder")
    func refusedLikeACreate() throws {
        try withRulesContainer { m in
            m.expectDenial("O_TMPFILE in the Inbox", EPERM, "file-write-create", at: m.inbox) {
                RulesSys.open(m.inbox, Self.tmpfileFlag | O_RDWR, 0o600)
            }
            m.expectDenial("O_TMPFILE in the bundle", EROFS, "file-write-create", at: m.bundle) {
                RulesSys.open(m.bundle, Self.tmpfileFlag | O_RDWR, 0o600)
            }
            m.expectDenial("O_TMPFILE at the container's root", EPERM, "file-write-create", at: m.mountpoint) {
                RulesSys.open(m.mountpoint, Self.tmpfileFlag | O_WRONLY, 0o600)
            }
        }
    }

    @Test("I4 an O_TMPFILE file made in Documents cannot be named in the Inbox (EPERM), and can in Documents")
    func notNamedIntoTheInbox() throws {
        try withRulesContainer { m in
            let fd = Glibc.open(m.documents, Self.tmpfileFlag | O_RDWR | O_CLOEXEC, 0o600)
            try #require(fd >= 0, "errno \(errno)")
            defer { close(fd) }
            m.expectDenial("linkat into the Inbox", EPERM, "file-link", at: m.inbox + "/smuggled") {
                linkat(fd, "", AT_FDCWD, m.inbox + "/smuggled", Self.emptyPath) == 0 ? 0 : errno
            }
            m.expectAllowed("linkat into Documents") {
                linkat(fd, "", AT_FDCWD, m.documents + "/kept", Self.emptyPath) == 0 ? 0 : errno
            }
        }
    }
}
