// Rules S1-S3: the container root admits no new entries; the system folders
// (Documents, Documents/Inbox, Library, Library/Caches, Library/Preferences,
// tmp) cannot be removed or renamed, and their modes, owners and times (and
// the root's) are fixed. Their contents can change.

import Glibc
import Testing

@Suite("Rules: the root and the system folders (S1-S3)")
struct SystemFolderRulesTests {
    /// The folders S2 protects, relative to the container root.
    static let systemFolders = ["Documents", "Documents/Inbox", "Library", "Library/Caches", "Library/Preferences", "tmp"]

    static func prepare(_ backing: String) throws {
        try writeFile(backing + "/Documents/doc.txt", "a document\n")
        try makeDirectory(backing + "/Documents/emptydir")
        try makeDirectory(backing + "/Library/emptydir")
        // An entry at the root that was there before the mount (iOS has some).
        try makeDirectory(backing + "/SystemData")
    }

    @Test("S1 the container root admits no new entries: create, mknod, mkdir, symlink, link, rename into it fail with EPERM")
    func rootAdmitsNoNewEntries() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let root = m.mountpoint
            let doc = m.documents + "/doc.txt"
            m.expectDenial("create", EPERM, "file-write-create", at: root + "/new.txt") {
                RulesSys.open(root + "/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0o644)
            }
            m.expectDenial("mknod", EPERM, "file-write-create", at: root + "/node") { RulesSys.mknod(root + "/node", S_IFREG | 0o644) }
            m.expectDenial("mkfifo", EPERM, "file-write-create", at: root + "/fifo") { RulesSys.mkfifo(root + "/fifo") }
            m.expectDenial("mkdir", EPERM, "file-write-create", at: root + "/Other") { RulesSys.mkdir(root + "/Other") }
            m.expectDenial("mkdir of a lowercase look-alike", EPERM, "file-write-create", at: root + "/documents") {
                RulesSys.mkdir(root + "/documents")
            }
            m.expectDenial("symlink", EPERM, "file-write-create", at: root + "/Docs") { RulesSys.symlink("Documents", root + "/Docs") }
            m.expectDenial("link", EPERM, "file-link", at: root + "/doc.txt", doc) { RulesSys.link(doc, root + "/doc.txt") }
            m.expectDenial("rename a file into", EPERM, "file-write-rename", at: doc, root + "/doc.txt") {
                RulesSys.rename(doc, root + "/doc.txt")
            }
            m.expectDenial("rename a folder into", EPERM, "file-write-rename", at: m.documents + "/emptydir", root + "/emptydir") {
                RulesSys.rename(m.documents + "/emptydir", root + "/emptydir")
            }
            m.expectDenial("RENAME_NOREPLACE into", EPERM, "file-write-rename", at: doc, root + "/doc.txt") {
                RulesSys.renameat2(doc, root + "/doc.txt", RulesLinux.renameNoReplace)
            }
            m.expectDenial("rename a root entry to a new root name", EPERM, "file-write-rename",
                           at: root + "/SystemData", root + "/SystemData2") {
                RulesSys.rename(root + "/SystemData", root + "/SystemData2")
            }
            m.expectDenial("rename a Library folder into the root", EPERM, "file-write-rename",
                           at: m.caches, root + "/Caches") {
                RulesSys.rename(m.caches, root + "/Caches")
            }
            // Nothing else is in the way: the same calls one level down work.
            m.expectAllowed("create in Documents") { RulesSys.open(m.documents + "/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0o644) }
            m.expectAllowed("mkdir in Library") { RulesSys.mkdir(m.library + "/Other") }
            #expect(RulesSys.list(root).rulesValue == ["Documents", "Library", "SystemData", "TestApp.app", "tmp"])
        }
    }

    @Test("S2 the system folders cannot be removed or renamed (EPERM)", arguments: systemFolders)
    func systemFoldersStay(_ folder: String) throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let path = m.path(folder)
            // Make it empty where it can be, so that only the rule stands in
            // the way (Documents keeps the Inbox, Library its subfolders).
            for name in RulesSys.list(m.backingPath(folder)).rulesValue ?? []
            where !["Inbox", "Caches", "Preferences", "Application Support"].contains(name) {
                _ = runProcess(["rm", "-rf", m.backingPath(folder) + "/" + name])
            }
            m.expectDenial("rmdir \(folder)", EPERM, "file-write-unlink", at: path) { RulesSys.rmdir(path) }
            m.expectDenial("rename \(folder) within its folder", EPERM, "file-write-rename",
                           at: path, path + "-renamed") {
                RulesSys.rename(path, path + "-renamed")
            }
            // Places to move it to that are not inside it (the kernel itself
            // refuses those with EINVAL before asking the driver).
            for place in ["Documents", "Library", "tmp"] where place != folder && !place.hasPrefix(folder + "/") {
                m.expectDenial("rename \(folder) into \(place)", EPERM, "file-write-rename",
                               at: path, m.path(place) + "/moved") {
                    RulesSys.rename(path, m.path(place) + "/moved")
                }
                m.expectDenial("RENAME_NOREPLACE \(folder) into \(place)", EPERM, "file-write-rename",
                               at: path, m.path(place) + "/moved") {
                    RulesSys.renameat2(path, m.path(place) + "/moved", RulesLinux.renameNoReplace)
                }
            }
            let other = folder.hasPrefix("Library") ? "Documents" : "Library"
            m.expectDenial("RENAME_EXCHANGE \(folder) with a plain folder", EPERM, "file-write-rename",
                           at: path, m.path(other) + "/emptydir") {
                RulesSys.renameat2(path, m.path(other) + "/emptydir", RulesLinux.renameExchange)
            }
            try makeDirectory(m.backingPath(other + "/replacement"))
            m.expectDenial("rename a plain empty folder over \(folder)", EPERM, "file-write-rename",
                           at: m.path(other) + "/replacement", path) {
                RulesSys.rename(m.path(other) + "/replacement", path)
            }
            let rm = runProcess(["rm", "-rf", path])
            #expect(rm.status != 0 && rm.stderr.contains("Operation not permitted"), "rm -rf \(folder): \(rm)")
            #expect(isDirectory(m.backingPath(folder)))
        }
    }

    @Test("S2 the contents of the system folders can change")
    func systemFolderContentsChange() throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            for folder in ["Documents", "Library", "Library/Caches", "Library/Preferences", "tmp"] {
                let path = m.path(folder)
                m.expectAllowed("create in \(folder)") { RulesSys.open(path + "/f", O_WRONLY | O_CREAT, 0o644) }
                m.expectAllowed("mkdir in \(folder)") { RulesSys.mkdir(path + "/d") }
                m.expectAllowed("rename in \(folder)") { RulesSys.rename(path + "/f", path + "/g") }
                m.expectAllowed("symlink in \(folder)") { RulesSys.symlink("g", path + "/s") }
                m.expectAllowed("unlink in \(folder)") { RulesSys.unlink(path + "/s") }
                m.expectAllowed("rename a folder in \(folder)") { RulesSys.rename(path + "/d", path + "/e") }
                m.expectAllowed("rmdir in \(folder)") { RulesSys.rmdir(path + "/e") }
                m.expectAllowed("unlink in \(folder)") { RulesSys.unlink(path + "/g") }
            }
            // The Inbox's contents change as I2 and I3 say: delete and move out.
            try writeFile(m.backingPath("Documents/Inbox/in.txt"), "in\n")
            try writeFile(m.backingPath("Documents/Inbox/out.txt"), "out\n")
            m.expectAllowed("unlink in the Inbox") { RulesSys.unlink(m.inbox + "/in.txt") }
            m.expectAllowed("move out of the Inbox") { RulesSys.rename(m.inbox + "/out.txt", m.documents + "/out.txt") }
            // Entries that were at the root before the mount may go (S1 forbids only new ones).
            m.expectAllowed("rmdir of a pre-existing root entry") { RulesSys.rmdir(m.mountpoint + "/SystemData") }
        }
    }

    @Test("S3 chmod, chown and utimens of the root and of the system folders fail with EPERM",
          arguments: [""] + systemFolders)
    func systemFolderAttributesFixed(_ folder: String) throws {
        try withRulesContainer(prepare: Self.prepare) { m in
            let path = folder.isEmpty ? m.mountpoint : m.path(folder)
            let name = folder.isEmpty ? "the root" : folder
            m.expectDenial("chmod \(name)", EPERM, "file-write-mode", at: path) { RulesSys.chmod(path, 0o700) }
            m.expectDenial("chmod \(name) to its own mode", EPERM, "file-write-mode", at: path) { RulesSys.chmod(path, 0o755) }
            m.expectDenial("chmod \(name) sticky", EPERM, "file-write-mode", at: path) { RulesSys.chmod(path, 0o1777) }
            m.expectDenial("chown \(name)", EPERM, "file-write-owner", at: path) { RulesSys.chown(path, 1000, 1000) }
            m.expectDenial("chgrp \(name)", EPERM, "file-write-owner", at: path) { RulesSys.chown(path, uid_t.max, 1000) }
            m.expectDenial("utimens now \(name)", EPERM, "file-write-times", at: path) { RulesSys.touch(path) }
            m.expectDenial("utimens to a time \(name)", EPERM, "file-write-times", at: path) {
                RulesSys.utimens(path, atime: 0, mtime: 0)
            }
            // The tools say so too.
            for command in [["chmod", "700", path], ["chown", "1000", path], ["touch", path]] {
                let result = runProcess(command)
                #expect(result.status != 0 && result.stderr.contains("Operation not permitted"),
                        "\(command.joined(separator: " ")): \(result)")
            }
        }
    }
}
