// Protection classes, through real mounts: P1 (every entry has one), P2 (the
// NSFileProtectionKey attribute), P3 (inherited at creation), P4 (the
// container's default), P9 (kept in the backing directory).

import Foundation
import Glibc
import Testing

@Suite("Data protection: classes (P1-P4, P9)")
struct ProtectionClassTests {
    @Test("P1 Documents, Library, tmp and their entries have the default class; the bundle's files are NSFileProtectionNone")
    func everyEntryHasAClass() throws {
        try withMountedContainer(prepare: { backing in
            try writeFile(backing + "/Documents/Inbox/in.pdf", "pdf")
            try writeFile(backing + "/Library/Preferences/p.plist", "plist")
        }) { m in
            for folder in [m.documents, m.library, m.tmp, m.inbox, m.caches, m.preferences, m.applicationSupport,
                           m.inbox + "/in.pdf", m.preferences + "/p.plist"] {
                #expect(Protect.classOf(folder) == classC, "\(folder)")
            }
            try writeFile(m.documents + "/new.txt", "x")
            #expect(Protect.classOf(m.documents + "/new.txt") == classC)
            // A symbolic link and a FIFO too (they can hold no attribute of
            // their own: the container's default).
            #expect(RulesSys.symlink("new.txt", m.documents + "/link") == 0)
            let ofLink = runProcess(["getfattr", "-h", "--only-values", "-n", "NSFileProtectionKey", m.documents + "/link"])
            #expect(ofLink.status == 0 && ofLink.stdout == classC, "\(ofLink)")
            #expect(RulesSys.mkfifo(m.documents + "/fifo") == 0)
            #expect(Protect.classOf(m.documents + "/fifo") == classC)
            #expect(Protect.classOf(m.bundle + "/Info.plist") == classD)
            #expect(Protect.classOf(m.bundle + "/app-binary") == classD)
        }
    }

    @Test("P1 P3 the root, Documents, Library and tmp keep the default class: setting or removing one is EPERM and a DataProtection line; new entries at their root get the default")
    func systemFoldersKeepTheDefault() throws {
        try withMountedContainer { m in
            for folder in [m.mountpoint, m.documents, m.library, m.tmp] {
                #expect(Protect.setClass(folder, classD) == EPERM, "\(folder)")
                #expect(RulesSys.removexattr(folder, "NSFileProtectionKey") == EPERM, "\(folder)")
                #expect(Protect.classOf(folder) == classC, "\(folder)")
            }
            // Their entries take the default (P3), also a folder of
            // Library's own, which may take a class of its own.
            try writeFile(m.documents + "/new.txt", "x")
            #expect(Protect.classOf(m.documents + "/new.txt") == classC)
            #expect(Protect.setClass(m.caches, classD) == 0)
            try writeFile(m.caches + "/c.bin", "c")
            #expect(Protect.classOf(m.caches + "/c.bin") == classD)
            let lines = m.protectionLines()
            #expect(lines.filter { $0.contains(" deny(1) file-write-xattr \(m.documents) ") }.count == 2, "\(lines)")
            #expect(lines.count == 8, "\(lines)")
        }
    }

    @Test("P4 init --protection CLASS sets the container's default, kept in the container; an unknown class is one line and changes nothing")
    func containerDefault() throws {
        try withMountedContainer(prepare: { backing in
            let result = runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "TestApp", "--protection", classA])
            guard result.status == 0 else { throw SupportError("init --protection: \(result.stderr)") }
        }) { m in
            #expect(Protect.classOf(m.documents) == classA)
            #expect(Protect.classOf(m.library) == classA)
            try writeFile(m.documents + "/a.txt", "a")
            #expect(Protect.classOf(m.documents + "/a.txt") == classA)
            // The driver's own attribute on the root is not shown.
            #expect(RulesSys.listxattr(m.mountpoint).rulesValue == [])
        }
        let folder = try makeTemporaryDirectory(prefix: "asfs-protect-init")
        defer { removeTree(folder) }
        let bad = runProcess([Binaries.appsandboxfs, "init", folder + "/c", "--app-name", "TestApp", "--protection", "Complete"])
        #expect(bad.status == 1)
        #expect(bad.stderr == "Error: protection class \"Complete\": not one of NSFileProtectionComplete, NSFileProtectionCompleteUnlessOpen, NSFileProtectionCompleteUntilFirstUserAuthentication, NSFileProtectionNone; nothing changed\n")
        #expect(access(folder + "/c", F_OK) != 0)
    }

    @Test("P2 getxattr answers the class, listxattr lists it only where set, other values are EINVAL, removexattr goes back to the class at creation")
    func attribute() throws {
        try withMountedContainer { m in
            let file = m.documents + "/f.txt"
            try writeFile(file, "f")
            #expect(RulesSys.listxattr(file).rulesValue == [])
            #expect(Protect.setClass(file, classB) == 0)
            #expect(Protect.classOf(file) == classB)
            #expect(RulesSys.listxattr(file).rulesValue == ["NSFileProtectionKey"])
            // The exact raw values only: no NUL, no other name, no short form.
            for value in ["NSFileProtectionComplete\0", "Complete", "", "nsfileprotectionnone"] {
                #expect(RulesSys.setxattr(file, "NSFileProtectionKey", Array(value.utf8)) == EINVAL, "\(value)")
            }
            #expect(Protect.classOf(file) == classB)
            #expect(RulesSys.removexattr(file, "NSFileProtectionKey") == 0)
            #expect(Protect.classOf(file) == classC)
            #expect(RulesSys.listxattr(file).rulesValue == [])
            // The class from creation stays the driver's own.
            #expect(RulesSys.getxattr(file, "NSFileProtectionKey.atCreation").rulesOutcome == "ENODATA")
            #expect(RulesSys.setxattr(file, "NSFileProtectionKey.atCreation", Array(classD.utf8)) == EPERM)
        }
    }

    @Test("P2 zone rules first: setting a class in the bundle is EROFS, in the Inbox EPERM")
    func zoneRulesFirst() throws {
        try withMountedContainer(prepare: { backing in try writeFile(backing + "/Documents/Inbox/in.pdf", "pdf") }) { m in
            #expect(Protect.setClass(m.bundle + "/Info.plist", classA) == EROFS)
            #expect(Protect.setClass(m.inbox + "/in.pdf", classA) == EPERM)
            #expect(RulesSys.removexattr(m.inbox + "/in.pdf", "NSFileProtectionKey") == EPERM)
            #expect(Protect.classOf(m.inbox + "/in.pdf") == classC)
        }
    }

    @Test("P3 a new entry gets its folder's class; a folder's later change affects only entries created after it")
    func inheritedAtCreation() throws {
        try withMountedContainer { m in
            let folder = m.documents + "/vault"
            #expect(mkdir(folder, 0o755) == 0)
            #expect(Protect.setClass(folder, classA) == 0)
            try writeFile(folder + "/old.txt", "old")
            #expect(mkdir(folder + "/sub", 0o755) == 0)
            try writeFile(folder + "/sub/deep.txt", "deep")
            #expect(Protect.classOf(folder + "/old.txt") == classA)
            #expect(Protect.classOf(folder + "/sub") == classA)
            #expect(Protect.classOf(folder + "/sub/deep.txt") == classA)
            #expect(Protect.setClass(folder, classD) == 0)
            try writeFile(folder + "/new.txt", "new")
            #expect(Protect.classOf(folder + "/new.txt") == classD)
            #expect(Protect.classOf(folder + "/old.txt") == classA)
            // Created with its class: removing an explicit class falls back to it.
            #expect(Protect.setClass(folder + "/old.txt", classD) == 0)
            #expect(RulesSys.removexattr(folder + "/old.txt", "NSFileProtectionKey") == 0)
            #expect(Protect.classOf(folder + "/old.txt") == classA)
        }
    }

    @Test("P3 P4 an entry made in the backing directory directly has the default class; entries of the default class leave no attribute in the backing store")
    func madeOutsideTheDriver() throws {
        try withMountedContainer { m in
            #expect(mkdir(m.documents + "/vault", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/vault", classB) == 0)
            try writeFile(m.backingPath("Documents/vault/outside.txt"), "f")
            #expect(Protect.classOf(m.documents + "/vault/outside.txt") == classC)
            try writeFile(m.documents + "/plain.txt", "p")
            #expect(RulesLinux.llistxattr(m.backingPath("Documents/plain.txt"), nil, 0) == 0)
            // A class other than the default is kept on the entry (P3, P9).
            try writeFile(m.documents + "/vault/inside.txt", "i")
            #expect(RulesLinux.llistxattr(m.backingPath("Documents/vault/inside.txt"), nil, 0) > 0)
        }
    }

    @Test("P9 classes move with rename, and cp -a through the mount carries explicit classes")
    func renameAndCopy() throws {
        try withMountedContainer { m in
            let folder = try m.scratch()
            try writeFile(folder + "/a.txt", "a")
            #expect(Protect.setClass(folder + "/a.txt", classA) == 0)
            try writeFile(folder + "/d.txt", "d")
            #expect(Protect.setClass(folder + "/d.txt", classD) == 0)
            #expect(rename(folder + "/a.txt", m.library + "/moved.txt") == 0)
            #expect(Protect.classOf(m.library + "/moved.txt") == classA)
            let copy = runProcess(["cp", "-a", folder, m.tmp + "/copy"])
            #expect(copy.status == 0, "\(copy.stderr)")
            #expect(Protect.classOf(m.tmp + "/copy/d.txt") == classD)
            #expect(RulesSys.listxattr(m.tmp + "/copy/d.txt").rulesValue == ["NSFileProtectionKey"])
        }
    }

    @Test("P9 classes survive unmount and mount")
    func surviveRemount() throws {
        try withRulesMount { m in
            try m.mountForeground()
            #expect(mkdir(m.path("Documents/vault"), 0o755) == 0)
            #expect(Protect.setClass(m.path("Documents/vault"), classA) == 0)
            try writeFile(m.path("Documents/vault/f.txt"), "f")
            try writeFile(m.path("Documents/b.txt"), "b")
            #expect(Protect.setClass(m.path("Documents/b.txt"), classB) == 0)
            #expect(runProcess(["fusermount3", "-u", m.mountpoint]).status == 0)
            #expect(m.waitForDriverExit() == .exited(0))
            try m.mountForeground()
            #expect(Protect.classOf(m.path("Documents/vault")) == classA)
            #expect(Protect.classOf(m.path("Documents/vault/f.txt")) == classA)
            #expect(Protect.classOf(m.path("Documents/b.txt")) == classB)
        }
    }

    @Test("P9 backup and restore carry the classes, and the container's default (P4)")
    func backupRestore() throws {
        try withMountedContainer(prepare: { backing in
            let result = runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "TestApp", "--protection", classB])
            guard result.status == 0 else { throw SupportError("init --protection: \(result.stderr)") }
        }) { m in
            #expect(mkdir(m.documents + "/vault", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/vault", classA) == 0)
            try writeFile(m.documents + "/vault/f.txt", "f")
            try writeFile(m.library + "/d.txt", "d")
            #expect(Protect.setClass(m.library + "/d.txt", classD) == 0)
            let archive = m.root + "/backup.tar", restored = m.root + "/restored"
            let backup = runProcess([Binaries.appsandboxfs, "backup", m.mountpoint, archive])
            #expect(backup.status == 0, "\(backup.stderr)")
            let restore = runProcess([Binaries.appsandboxfs, "restore", archive, restored])
            #expect(restore.status == 0, "\(restore.stderr)")
            try withRestoredMount(restored) { mountpoint in
                #expect(Protect.classOf(mountpoint + "/Documents/vault") == classA)
                #expect(Protect.classOf(mountpoint + "/Documents/vault/f.txt") == classA)
                #expect(Protect.classOf(mountpoint + "/Library/d.txt") == classD)
                #expect(RulesSys.listxattr(mountpoint + "/Documents/vault/f.txt").rulesValue == [])
                #expect(Protect.classOf(mountpoint + "/Documents") == classB)
            }
        }
    }

    /// Mounts a restored container on a folder beside it for `body`.
    private func withRestoredMount(_ backing: String, _ body: (String) throws -> Void) throws {
        let mountpoint = backing + "-mnt"
        try makeDirectory(mountpoint)
        let mount = runProcess([Binaries.appsandboxfs, "mount", backing, mountpoint])
        guard mount.status == 0 else { throw SupportError("mount of the restored container: \(mount.stderr)") }
        defer {
            _ = runProcess([Binaries.appsandboxfs, "unmount", mountpoint])
            _ = Protect.waitUntil(timeout: 15) { !isFuseMount(mountpoint) }
        }
        try body(mountpoint)
    }

    @Test("P1 P9 backup-report shows each entry's class: every entry in --json, the others than the default in the table")
    func backupReport() throws {
        try withMountedContainer { m in
            #expect(mkdir(m.documents + "/vault", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/vault", classA) == 0)
            try writeFile(m.documents + "/vault/f.txt", "f")
            try writeFile(m.documents + "/plain.txt", "p")
            let json = runProcess([Binaries.appsandboxfs, "backup-report", m.mountpoint, "--json"])
            #expect(json.status == 0, "\(json.stderr)")
            let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
            let protection = object?["protection"] as? [String: Any]
            #expect(protection?["defaultClass"] as? String == classC)
            var classes: [String: String] = [:]
            for entry in protection?["entries"] as? [[String: Any]] ?? [] {
                classes[entry["path"] as? String ?? "?"] = (entry["protection"] as? String ?? "?") + ((entry["explicit"] as? Bool) == true ? " explicit" : "")
            }
            #expect(classes["Documents/vault"] == classA + " explicit")
            #expect(classes["Documents/vault/f.txt"] == classA)
            #expect(classes["Documents/plain.txt"] == classC)
            #expect(classes["TestApp.app/Info.plist"] == classD)
            let table = runProcess([Binaries.appsandboxfs, "backup-report", m.mountpoint])
            #expect(table.stdout.contains("Protection classes (container default \(classC))"), "\(table.stdout)")
            #expect(table.stdout.contains("  Documents/vault/f.txt  NSFileProtectionComplete  from its folder"), "\(table.stdout)")
        }
    }
}
