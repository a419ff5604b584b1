// K1-K3 (and X5 as the report and the archive see it) through the real
// appsandboxfs verbs, on containers filled through a real mount.

import Foundation
import Glibc
import Testing

@Suite("Backup verbs: K1-K3", .serialized)
struct BackupCommandTests {
    /// Files handed in from outside (I6): put in the backing directory before the mount.
    static func prepareInbox(_ backing: String) throws {
        try writeFile(backing + "/Documents/Inbox/mail.pdf", "%PDF-1.4\n")
    }

    /// A container with something in every zone, made through the mount.
    static func populate(_ m: MountedContainer) throws {
        try makeDirectory(m.documents + "/Notes")
        try writeFile(m.documents + "/Notes/a.txt", "note\n")
        try writeFile(m.documents + "/video.mov", [UInt8](repeating: 7, count: 2 << 20))
        try writeFile(m.documents + "/legacy.db", "legacy")
        try writeFile(m.documents + "/zero.db", "zero")
        guard symlink("Notes/a.txt", m.documents + "/link") == 0 else { throw SupportError("symlink: \(posixError(errno))") }
        try writeFile(m.applicationSupport + "/db.sqlite", "sqlite", mode: 0o600)
        try makeDirectory(m.applicationSupport + "/Downloads", mode: 0o750)
        try makeDirectory(m.applicationSupport + "/Downloads/sub")
        try writeFile(m.applicationSupport + "/Downloads/model.bin", [UInt8](repeating: 1, count: 3 << 19))
        try writeFile(m.applicationSupport + "/Downloads/sub/x", "x")
        try writeFile(m.preferences + "/com.example.TestApp.plist", "<plist/>")
        try makeDirectory(m.caches + "/thumbs")
        try writeFile(m.caches + "/thumbs/1.png", "png")
        try makeDirectory(m.caches + "/models")
        try writeFile(m.caches + "/models/w", "weights")
        try writeFile(m.tmp + "/upload.part", "part")
        let flags: [(String, String, [UInt8])] = [
            (m.applicationSupport + "/Downloads", BackupNames.excludeItem, BackupNames.appleValue),
            (m.documents + "/legacy.db", BackupNames.mobileBackup, [1]),
            (m.documents + "/zero.db", BackupNames.mobileBackup, [0]),
            (m.caches + "/models", BackupNames.excludeItem, BackupNames.appleValue),
            (m.applicationSupport + "/db.sqlite", "user.color", Array("red".utf8)),
            (m.applicationSupport + "/db.sqlite", "com.example.tag", [0, 1, 2, 3]),
        ]
        for (path, name, value) in flags {
            guard BackupXattr.set(path, name, value) == 0 else { throw SupportError("setxattr \(path) \(name): \(posixError(errno))") }
        }
    }

    /// What a backup of `populate`'s container holds, in walk order.
    static let expectedMembers = [
        "Documents", "Documents/Inbox", "Documents/Inbox/mail.pdf", "Documents/Notes", "Documents/Notes/a.txt",
        "Documents/link", "Documents/video.mov", "Documents/zero.db",
        "Library", "Library/Application Support", "Library/Application Support/db.sqlite",
        "Library/Preferences", "Library/Preferences/com.example.TestApp.plist",
    ]

    // MARK: K1

    @Test("K1 backup-report on the mountpoint and on the backing directory: what a backup holds, what it leaves out and why")
    func report() throws {
        try withMountedContainer(prepare: Self.prepareInbox) { m in
            try Self.populate(m)
            let fromMount = try backupReportJSON(m.mountpoint)
            let fromBacking = try backupReportJSON(m.backing)
            let sorted: ([String: Any]) throws -> Data = { try JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
            #expect(try sorted(fromMount) == sorted(fromBacking))
            #expect(fromMount["schema"] as? String == "appsandboxfs.backup-report/1")
            #expect(fromMount["container"] as? String == m.backing)
            #expect(fromMount["appName"] as? String == "TestApp")
            #expect(fromMount.backupInt("backup.files") == 6)
            #expect(fromMount.backupInt("backup.folders") == 6)
            #expect(fromMount.backupInt("backup.symlinks") == 1)
            #expect(fromMount.backupInt("backup.entries") == Self.expectedMembers.count)
            #expect(fromMount.backupInt("backup.bytes") == 9 + 5 + (2 << 20) + 4 + 6 + 8)  // a symlink counts no bytes
            let exclusions = (fromMount["exclusions"] as? [[String: Any]]) ?? []
            let why = exclusions.map { "\($0["path"] as? String ?? "?") \($0["reason"] as? String ?? "?") \(($0["flags"] as? [String]) ?? [])" }
            #expect(why == [
                "Documents/legacy.db flag [\"com.apple.MobileBackup\"]",
                "Library/Application Support/Downloads flag [\"com.apple.metadata:com_apple_backup_excludeItem\"]",
                "Library/Caches zone []",
                "TestApp.app zone []",
                "tmp zone []",
            ])
            #expect(fromMount.backupInt("excluded.folder.entries") == 3)   // model.bin, sub, sub/x
            let zones = fromMount.backupPaths("zones")
            #expect(zones == ["Documents", "Documents/Inbox", "Library", "Library/Preferences", "Library/Caches", "tmp", "TestApp.app", "."])
            let findings = ((fromMount["findings"] as? [[String: Any]]) ?? []).map { "\($0["kind"] as? String ?? "?") \($0["path"] as? String ?? "?")" }
            #expect(findings == ["large-file Documents/video.mov", "left-in-tmp tmp/upload.part"])
        }
    }

    @Test("K1 the table for people, --large-file-threshold, and --strict exit statuses for CI")
    func tableAndStrict() throws {
        try withMountedContainer(prepare: Self.prepareInbox) { m in
            try Self.populate(m)
            let table = backupRun(["backup-report", m.mountpoint])
            #expect(table.status == 0)
            #expect(table.stdout.contains("A backup holds 6 files, 6 folders, 1 symlink, 2.0 MiB."), "\(table.stdout)")
            #expect(table.stdout.contains("large-file: Documents/video.mov"))
            #expect(table.stdout.contains("Library/Application Support/Downloads"))
            #expect(backupRun(["backup-report", m.mountpoint, "--strict"]).status == 2)
            let raised = try backupReportJSON(m.mountpoint, ["--large-file-threshold", "3M"])
            #expect(raised.backupPaths("findings") == ["tmp/upload.part"])
            #expect(raised.backupInt("largeFileThreshold") == 3 << 20)
            #expect(unlink(m.tmp + "/upload.part") == 0)
            let clean = backupRun(["backup-report", m.mountpoint, "--strict", "--large-file-threshold", "3M"])
            #expect(clean.status == 0, "\(clean.stdout)")
            #expect(clean.stdout.contains("No findings."))
            let notContainer = backupRun(["backup-report", m.root])
            #expect(notContainer.status == 1)
            #expect(notContainer.stderr.contains("not a container"), "\(notContainer.stderr)")
        }
    }

    // MARK: K2

    @Test("K2 purge refuses while the container is mounted (by mountpoint, backing path, or another spelling of it) and changes nothing")
    func purgeRefusesWhenMounted() throws {
        try withMountedContainer(prepare: Self.prepareInbox) { m in
            try Self.populate(m)
            let alias = m.root + "/alias"
            #expect(symlink(m.backing, alias) == 0)
            let before = try backupSnapshot(root: m.backing)
            for argument in [m.mountpoint, m.backing, alias, m.backing + "/"] {
                for options in [[], ["--caches"], ["--tmp"], ["--dry-run"]] {
                    let result = backupRun(["purge", argument] + options)
                    #expect(result.status == 1, "purge \(argument) \(options): \(result.stdout)")
                    #expect(result.stderr.contains("mounted at \(m.mountpoint)"), "\(result.stderr)")
                }
            }
            #expect(try backupSnapshot(root: m.backing) == before)
            #expect(access(m.caches + "/thumbs/1.png", F_OK) == 0 && access(m.tmp + "/upload.part", F_OK) == 0)
        }
    }

    @Test("K2 once unmounted, purge empties Caches and tmp and never removes what X1/X2 mark")
    func purgeKeepsFlagged() throws {
        try withMountedContainer(prepare: Self.prepareInbox) { m in
            try Self.populate(m)
            #expect(runProcess(["fusermount3", "-u", m.mountpoint]).status == 0)
            _ = m.waitForDriverExit()
            // What a killed app leaves in tmp (T2 emptied it at the unmount).
            try makeDirectory(m.backingPath("tmp/work"))
            try writeFile(m.backingPath("tmp/work/part"), "p")
            try writeFile(m.backingPath("tmp/keep"), "k")
            #expect(BackupXattr.setNoFollow(m.backingPath("tmp/keep"), BackupNames.backingMobileBackup, [1]) == 0)
            #expect(symlink(m.backingPath("Documents/Notes"), m.backingPath("Library/Caches/to-notes")) == 0)
            let data = try backupSnapshot(root: m.backing).filter { !$0.hasPrefix("Library/Caches") && !$0.hasPrefix("tmp") && !$0.hasPrefix("Library ") }

            let dry = backupRun(["purge", m.backing, "--dry-run"])
            #expect(dry.status == 0)
            #expect(dry.stdout.contains("Library/Caches: would remove"), "\(dry.stdout)")
            #expect(access(m.backingPath("Library/Caches/thumbs/1.png"), F_OK) == 0)

            let cachesOnly = backupRun(["purge", m.backing, "--caches"])
            #expect(cachesOnly.status == 0, "\(cachesOnly.stderr)")
            #expect(cachesOnly.stdout.contains("kept Library/Caches/models"), "\(cachesOnly.stdout)")
            #expect(access(m.backingPath("tmp/work/part"), F_OK) == 0)

            let both = backupRun(["purge", m.backing])
            #expect(both.status == 0, "\(both.stderr)")
            let left = try backupSnapshot(root: m.backing).map { $0.prefix { $0 != " " } }
            #expect(left.filter { $0.hasPrefix("Library/Caches") || $0.hasPrefix("tmp") }
                    == ["Library/Caches", "Library/Caches/models", "Library/Caches/models/w", "tmp", "tmp/keep"])
            // Nothing else changed, and the link's target is still there.
            #expect(try backupSnapshot(root: m.backing).filter { !$0.hasPrefix("Library/Caches") && !$0.hasPrefix("tmp") && !$0.hasPrefix("Library ") } == data)
            #expect(access(m.backingPath("Documents/Notes/a.txt"), F_OK) == 0)
        }
    }

    // MARK: K3

    @Test("K3 X5 backup writes a pax archive of exactly the report's set: no Caches, tmp, bundle, nor the flagged folder's subtree")
    func archiveHoldsTheReportSet() throws {
        try withMountedContainer(prepare: Self.prepareInbox) { m in
            try Self.populate(m)
            let archive = m.root + "/backup.tar"
            let result = backupRun(["backup", m.mountpoint, archive])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("Backed up \(m.backing) to \(archive): 6 files, 6 folders, 1 symlink"), "\(result.stdout)")
            let members = try backupArchiveMembers(archive)
            #expect(members == Self.expectedMembers)
            let report = try backupReportJSON(m.mountpoint)
            #expect(members.count == report.backupInt("backup.entries"))
            // X5: the flagged folder excludes its whole subtree from both.
            #expect(!members.contains { $0.contains("Downloads") })
            #expect(report.backupInt("backup.entries") == Self.expectedMembers.count)
            // A pax archive: our global header first, GNU tar lists modes, times and attributes.
            let head = readFileBytes(archive).map { Array($0.prefix(512)) } ?? []
            #expect(head.count == 512 && head[156] == UInt8(ascii: "g"))
            let verbose = runProcess(["tar", "--xattrs", "--numeric-owner", "-tvvf", archive])
            #expect(verbose.status == 0)
            #expect(verbose.stdout.contains("x: 3 user.color"), "\(verbose.stdout)")
            #expect(verbose.stdout.contains("x: 4 user.appsandboxfs.com.example.tag"))
            #expect(verbose.stdout.contains("x: 1 user.appsandboxfs.com.apple.MobileBackup"))
            #expect(verbose.stdout.contains("-rw-------* 0/0"), "db.sqlite keeps its mode")
            #expect(!verbose.stdout.contains("com_apple_backup_excludeItem"))
        }
    }

    @Test("K3 backup as root reads through tar in a namespace of its own that holds no copy of the container mounts (a copy would keep another container's driver serving after its unmount, until the tar ends)",
          .enabled(if: geteuid() == 0, "the namespace is made as root only"))
    func tarHoldsNoContainerMounts() throws {
        try withMountedContainer { m in
            try withMountedContainer { other in
                try writeFile(m.documents + "/a.txt", "a\n")
                // A tar first on PATH that notes its mount table, then runs GNU tar.
                let folder = try makeTemporaryDirectory()
                defer { removeTree(folder) }
                let realTar = runProcess(["sh", "-c", "command -v tar"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                try #require(realTar.hasPrefix("/"))
                try makeDirectory(folder + "/bin")
                try writeFile(folder + "/bin/tar", "#!/bin/sh\ncat /proc/self/mountinfo > '\(folder)/mountinfo'\nexec '\(realTar)' \"$@\"\n")
                #expect(chmod(folder + "/bin/tar", 0o755) == 0)
                let path = folder + "/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
                let result = runProcess(["env", "PATH=\(path)", Binaries.appsandboxfs, "backup", m.mountpoint, folder + "/backup.tar"])
                #expect(result.status == 0, "\(result.stderr)")
                let seen = readFileText(folder + "/mountinfo")
                #expect(seen.contains(" \(m.backing) ") && seen.contains("nosymfollow"), "tar did not run in its namespace: \(seen)")
                #expect(!seen.contains(" \(other.mountpoint) "), "tar's namespace holds a copy of \(other.mountpoint)")
                #expect(!seen.contains(" \(m.mountpoint) "), "tar's namespace holds a copy of \(m.mountpoint)")
            }
        }
    }

    @Test("K3 backup, restore, backup again: the same file set, contents and attributes; Caches and tmp empty")
    func roundTrip() throws {
        try withMountedContainer(prepare: Self.prepareInbox) { m in
            try Self.populate(m)
            let first = m.root + "/first.tar", second = m.root + "/second.tar", restored = m.root + "/restored"
            #expect(backupRun(["backup", m.mountpoint, first]).status == 0)
            let restore = backupRun(["restore", first, restored])
            #expect(restore.status == 0, "\(restore.stderr)")
            #expect(restore.stdout.contains("Library/Caches and tmp empty"))
            #expect(backupRun(["backup", restored, second]).status == 0)

            #expect(try backupArchiveMembers(second) == backupArchiveMembers(first))
            let original = try backupSnapshot(root: m.backing, paths: Self.expectedMembers)
            let copy = try backupSnapshot(root: restored, paths: Self.expectedMembers)
            #expect(copy == original)
            let listing = { (archive: String) in runProcess(["tar", "--xattrs", "--full-time", "--numeric-owner", "-tvvf", archive]).stdout }
            #expect(listing(second) == listing(first))
            // The rest of the container: a bundle, and empty Caches and tmp.
            #expect(access(restored + "/TestApp.app/Info.plist", F_OK) == 0)
            let rest = runProcess(["find", restored + "/Library/Caches", restored + "/tmp", "-mindepth", "1"])
            #expect(rest.stdout == "")
            #expect(access(restored + "/Library/Application Support/Downloads", F_OK) != 0)
        }
    }

    @Test("K3 an app survives a restore: the restored container mounts and shows its data and attributes")
    func restoredContainerMounts() throws {
        let archive = try withMountedContainer(prepare: Self.prepareInbox) { m -> String in
            try Self.populate(m)
            let archive = try makeTemporaryDirectory(prefix: "asfs-backup-archive") + "/backup.tar"
            let result = backupRun(["backup", m.mountpoint, archive])
            guard result.status == 0 else { throw SupportError("backup: \(result.stderr)") }
            return archive
        }
        defer { removeTree(parentDirectory(archive)) }
        try withMountedContainer(prepare: { backing in
            try writeFile(backing + "/Library/Caches/stale", "stale")
            let result = backupRun(["restore", archive, backing, "--replace"])
            guard result.status == 0 else { throw SupportError("restore --replace: \(result.stderr)") }
        }) { m in
            #expect(readFileText(m.documents + "/Notes/a.txt") == "note\n")
            #expect(readFileText(m.inbox + "/mail.pdf") == "%PDF-1.4\n")
            #expect(BackupXattr.get(m.applicationSupport + "/db.sqlite", "com.example.tag") == .success([0, 1, 2, 3]))
            #expect(BackupXattr.get(m.applicationSupport + "/db.sqlite", "user.color") == .success(Array("red".utf8)))
            #expect(BackupXattr.get(m.documents + "/zero.db", BackupNames.mobileBackup) == .success([0]))
            #expect(access(m.documents + "/legacy.db", F_OK) != 0)
            #expect(access(m.caches + "/stale", F_OK) != 0)
            #expect(access(m.bundle + "/app-binary", X_OK) == 0)  // the fixture's bundle was kept
            var st = stat()
            #expect(stat(m.applicationSupport + "/db.sqlite", &st) == 0 && st.st_mode & 0o777 == 0o600)
        }
    }

    @Test("K3 restore refuses a mounted container and a non-empty folder; a failed restore changes nothing")
    func restoreRefuses() throws {
        try withMountedContainer(prepare: Self.prepareInbox) { m in
            try Self.populate(m)
            let archive = m.root + "/backup.tar"
            #expect(backupRun(["backup", m.backing, archive]).status == 0)
            let before = try backupSnapshot(root: m.backing)
            for (target, options) in [(m.mountpoint, ["--replace"]), (m.backing, ["--replace"]), (m.backing, [])] {
                let result = backupRun(["restore", archive, target] + options)
                #expect(result.status == 1, "restore into \(target) \(options)")
                #expect(result.stderr.contains("mount"), "\(result.stderr)")
            }
            #expect(try backupSnapshot(root: m.backing) == before)

            let busy = m.root + "/busy"
            try makeDirectory(busy)
            try writeFile(busy + "/x", "x")
            let notEmpty = backupRun(["restore", archive, busy])
            #expect(notEmpty.status == 1)
            #expect(notEmpty.stderr.contains("not an empty folder"), "\(notEmpty.stderr)")

            let damaged = m.root + "/damaged.tar"
            let good = readFileBytes(archive) ?? []
            try writeFile(damaged, Array(good.prefix(good.count / 2)) + [UInt8](repeating: 0x5a, count: 4096))
            let failed = backupRun(["restore", damaged, m.root + "/never"])
            #expect(failed.status == 1)
            #expect(access(m.root + "/never", F_OK) != 0)
            let leftovers = runProcess(["find", m.root, "-maxdepth", "1", "-name", ".never.restore-*"])
            #expect(leftovers.stdout == "")
        }
    }

    @Test("K3 backup to standard output and restore from standard input, through a pipe")
    func throughAPipe() throws {
        try withMountedContainer(prepare: Self.prepareInbox) { m in
            try Self.populate(m)
            let restored = m.root + "/piped"
            let binary = Binaries.appsandboxfs
            let pipeline = runProcess(["sh", "-c", "\"$0\" backup \"$1\" - | \"$0\" restore - \"$2\"", binary, m.mountpoint, restored])
            #expect(pipeline.status == 0, "\(pipeline.stderr)")
            #expect(try backupSnapshot(root: restored, paths: Self.expectedMembers)
                    == backupSnapshot(root: m.backing, paths: Self.expectedMembers))
        }
    }

    /// Issue 11 item 2, through the command line as root: an archive made
    /// elsewhere with a set-user-ID root shell, a file with cap_setuid, a
    /// character device and a foreign owner lands none of it, and says so.
    @Test("K3 `restore` of a hostile archive as root: no set-ID file, capability, device node or foreign owner lands; each kind is reported; --preserve-privileges keeps them")
    func restoreHostileArchive() throws {
        let root = try makeTemporaryDirectory(prefix: "asfs-hostile")
        defer { removeTree(root) }
        let source = root + "/source"
        let made = runProcess(["sh", "-c", """
            set -e
            mkdir -p "$1/Documents" "$1/Library"
            cp /bin/sh "$1/Documents/rootsh"; chown 0:0 "$1/Documents/rootsh"; chmod 4755 "$1/Documents/rootsh"
            printf '#!/bin/sh\n' > "$1/Documents/capfile"; chmod 755 "$1/Documents/capfile"; setcap cap_setuid+ep "$1/Documents/capfile"
            mknod "$1/Documents/null" c 1 3
            echo theirs > "$1/Documents/foreign.txt"; chown 4321:4321 "$1/Documents/foreign.txt"
            tar --create --format=pax --xattrs --xattrs-include='*' --numeric-owner --file="$2" --directory="$1" Documents Library
            """, "sh", source, root + "/hostile.tar"])
        #expect(made.status == 0, "\(made.stderr)")
        let target = root + "/restored"
        let restore = backupRun(["restore", root + "/hostile.tar", target, "--app-name", "Demo", "--no-progress"])
        #expect(restore.status == 0, "\(restore.stderr)")
        for kind in ["set-user-ID or set-group-ID bits: Documents/rootsh", "file capabilities (security.capability): Documents/capfile",
                     "device nodes: Documents/null", "owners other than the container's:"] {
            #expect(restore.stderr.contains(kind), "not reported: \(kind)\n\(restore.stderr)")
        }
        #expect(runProcess(["find", target, "-perm", "/6000", "-o", "-type", "c", "-o", "!", "-uid", "0"]).stdout == "")
        #expect(runProcess(["getcap", "-r", target]).stdout == "")
        #expect(readFileText(target + "/Documents/foreign.txt") == "theirs\n")

        let kept = root + "/kept"
        let preserve = backupRun(["restore", root + "/hostile.tar", kept, "--app-name", "Demo", "--no-progress", "--preserve-privileges"])
        #expect(preserve.status == 0, "\(preserve.stderr)")
        #expect(!preserve.stderr.contains("left out"))
        #expect(runProcess(["find", kept + "/Documents/rootsh", "-perm", "-4000"]).stdout != "")
    }
}
