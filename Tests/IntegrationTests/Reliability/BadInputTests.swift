// Bad input to every command (rule L1, for all verbs): each case runs one
// command against a folder laid out for it (a container, an empty
// mountpoint, a file, an empty folder, a backup archive) and must give a
// documented non-zero exit status (1 for a command that cannot do its job,
// 64 for a command line that cannot be parsed), one line on standard error
// that names the path and the problem (64: the first line; the usage
// follows), and change nothing: the whole folder, byte for byte, is as it
// was, and nothing is mounted.
//
// The mount cases of LifecycleRulesTests (backing missing, empty, partial,
// a file; mountpoint missing, a file, not empty, mounted; app names; -o) are
// not repeated here.
//
// A case with a `knownIssue` fails today in the way it says: its checks run
// inside withKnownIssue, so the suite stays green and the day the command is
// fixed the case reports that its known issue is gone (then drop the note).

import Glibc
import Testing

/// The folder each case runs in: /tmp/asfs-badinput-XXXXXX with
///   c/            a container of TestApp, with data in Documents, tmp, Caches
///   mnt/          an empty folder
///   file.txt      a regular file
///   empty/        an empty folder
///   backup.tar    a backup of c
///   other/        a folder that is not a container (one file in it)
///   tfs/          a tmpfs mounted there (only when the case asks for it)
struct BadInputPlace: Sendable {
    let root: String
    var container: String { root + "/c" }
    var mountpoint: String { root + "/mnt" }
    var file: String { root + "/file.txt" }
    var empty: String { root + "/empty" }
    var archive: String { root + "/backup.tar" }
    var other: String { root + "/other" }
    var tmpfs: String { root + "/tfs" }
    func path(_ relative: String) -> String { root + "/" + relative }

    static func make(withTmpfs: Bool) throws -> BadInputPlace {
        let place = BadInputPlace(root: try makeTemporaryDirectory(prefix: "asfs-badinput"))
        try layOutContainer(at: place.container, appName: "TestApp")
        try writeFile(place.container + "/Documents/doc.txt", "data\n")
        try writeFile(place.container + "/tmp/keep.txt", "tmp must survive a failed command\n")
        try writeFile(place.container + "/Library/Caches/cache.bin", "cache\n")
        try makeDirectory(place.mountpoint)
        try writeFile(place.file, "a file, not a folder\n")
        try makeDirectory(place.empty)
        try makeDirectory(place.other)
        try writeFile(place.other + "/notes.txt", "not a container\n")
        let backup = Reliability.run(["backup", place.container, place.archive])
        guard backup.status == 0 else { throw SupportError("backup for the restore cases: \(backup.stderr)") }
        if withTmpfs {
            try makeDirectory(place.tmpfs)
            let mount = runProcess(["mount", "-t", "tmpfs", "-o", "size=1m,mode=755", "tmpfs", place.tmpfs])
            guard mount.status == 0 else { throw SupportError("mount tmpfs: \(mount.stderr)") }
            try writeFile(place.tmpfs + "/on-tmpfs.txt", "another file system\n")
        }
        return place
    }

    /// Unmounts what a case may have left mounted, then removes the folder.
    func cleanUp() {
        for point in [mountpoint, tmpfs] where MountTableReader.isMountpoint(point) {
            _ = runProcess(["umount", "-l", point], timeout: 30)
        }
        if !MountTableReader.isMountpoint(mountpoint) && !MountTableReader.isMountpoint(tmpfs) { removeTree(root) }
    }
}

/// Any mount at a path, whatever its type (isFuseMount sees only FUSE).
enum MountTableReader {
    static func isMountpoint(_ path: String) -> Bool {
        readFileText("/proc/self/mountinfo").split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 4 && fields[4] == Substring(path)
        }
    }
}

/// The /dev/fuse a bad-input case runs with.
enum FuseDevice: Sendable {
    /// The machine's.
    case host
    /// None: the command runs in a mount namespace whose /dev is an empty tmpfs.
    case missing
    /// One only root may open, and the command runs as uid 65534.
    case rootOnly
}

struct BadInputCase: Sendable, CustomTestStringConvertible {
    let label: String
    let arguments: @Sendable (BadInputPlace) -> [String]
    /// Strings the error line must contain (paths, the problem).
    let names: @Sendable (BadInputPlace) -> [String]
    var status: Int32 = 1
    /// Run in the place's root (for relative paths).
    var inRoot = false
    /// The /dev/fuse the command sees.
    var fuseDevice = FuseDevice.host
    var withTmpfs = false
    var knownIssue: String? = nil

    var testDescription: String { label }

    init(_ label: String, status: Int32 = 1, inRoot: Bool = false, fuseDevice: FuseDevice = .host,
         withTmpfs: Bool = false, knownIssue: String? = nil,
         _ arguments: @escaping @Sendable (BadInputPlace) -> [String],
         names: @escaping @Sendable (BadInputPlace) -> [String]) {
        self.label = label
        self.status = status
        self.inRoot = inRoot
        self.fuseDevice = fuseDevice
        self.withTmpfs = withTmpfs
        self.knownIssue = knownIssue
        self.arguments = arguments
        self.names = names
    }
}

@Suite("Reliability: bad input to every command (L1)")
struct BadInputTests {
    static let cases: [BadInputCase] = [
        // MARK: init
        BadInputCase("init: an app name with a slash", { ["init", $0.path("new"), "--app-name", "Test/App"] },
                     names: { _ in ["Test/App"] }),
        BadInputCase("init: the app name ..", { ["init", $0.path("new"), "--app-name", ".."] },
                     names: { _ in ["\"..\""] }),
        BadInputCase("init: an empty app name", { ["init", $0.path("new"), "--app-name", ""] },
                     names: { _ in ["app name"] }),
        BadInputCase("init: the backing directory is a file",
                     { ["init", $0.file, "--app-name", "TestApp"] }, names: { [$0.file] }),
        BadInputCase("init: an unreachable path (a file on the way)",
                     { ["init", $0.file + "/new", "--app-name", "TestApp"] }, names: { [$0.file] }),
        BadInputCase("init: --bundle-from a folder that does not exist",
                     { ["init", $0.path("new"), "--app-name", "TestApp", "--bundle-from", $0.path("no-bundle")] },
                     names: { [$0.path("no-bundle")] }),
        BadInputCase("init: --bundle-from a file",
                     { ["init", $0.path("new"), "--app-name", "TestApp", "--bundle-from", $0.file] },
                     names: { [$0.file, "not a folder"] }),
        BadInputCase("init: a container of another app (a second bundle would make it ambiguous)",
                     { ["init", $0.container, "--app-name", "OtherApp"] },
                     names: { [$0.container, "TestApp.app"] }),
        BadInputCase("init: an unknown option", status: 64, { ["init", $0.path("new"), "--app-name", "A", "--frobnicate"] },
                     names: { _ in ["--frobnicate"] }),

        // MARK: mount (the rest is in LifecycleRulesTests)
        BadInputCase("mount: a relative backing path that cannot be reached", inRoot: true,
                     { _ in ["mount", "file.txt/backing", "mnt", "--app-name", "TestApp"] },
                     names: { [$0.file + "/backing", "Not a directory"] }),
        BadInputCase("mount: a relative mountpoint that cannot be reached", inRoot: true,
                     { _ in ["mount", "c", "file.txt/mnt", "--app-name", "TestApp"] },
                     names: { [$0.file + "/mnt"] }),
        BadInputCase("mount: a name longer than the system allows",
                     { ["mount", $0.path(String(repeating: "n", count: 300)), $0.mountpoint, "--app-name", "TestApp"] },
                     names: { _ in ["File name too long"] }),
        BadInputCase("mount: /dev/fuse is missing", fuseDevice: .missing,
                     { ["mount", $0.container, $0.mountpoint, "--app-name", "TestApp"] },
                     names: { _ in ["/dev/fuse", "No such file or directory"] }),
        BadInputCase("mount --foreground: /dev/fuse is missing", fuseDevice: .missing,
                     { ["mount", $0.container, $0.mountpoint, "--app-name", "TestApp", "--foreground"] },
                     names: { _ in ["/dev/fuse", "No such file or directory"] }),
        BadInputCase("mount: /dev/fuse is not permitted (root's only, the command as uid 65534)", fuseDevice: .rootOnly,
                     { ["mount", $0.container, $0.mountpoint, "--app-name", "TestApp"] },
                     names: { _ in ["/dev/fuse", "Permission denied"] }),
        BadInputCase("mount: --bundle does not exist",
                     { ["mount", $0.container, $0.mountpoint, "--app-name", "TestApp", "--bundle", $0.path("no-bundle")] },
                     names: { [$0.path("no-bundle")] }),
        BadInputCase("mount: --denial-log in a folder that does not exist",
                     { ["mount", $0.container, $0.mountpoint, "--app-name", "TestApp", "--denial-log", $0.path("no/denials.log")] },
                     names: { [$0.path("no/denials.log")] }),
        BadInputCase("mount: --log in a folder that does not exist",
                     { ["mount", $0.container, $0.mountpoint, "--app-name", "TestApp", "--log", $0.path("no/driver.log")] },
                     names: { [$0.path("no/driver.log")] }),
        BadInputCase("mount: an unknown option", status: 64,
                     { ["mount", $0.container, $0.mountpoint, "--frobnicate"] }, names: { _ in ["--frobnicate"] }),

        // MARK: deliver
        BadInputCase("deliver: the file does not exist", { ["deliver", $0.path("missing.txt"), "--to", $0.container] },
                     names: { [$0.path("missing.txt"), "No such file"] }),
        BadInputCase("deliver: the file is a folder", { ["deliver", $0.empty, "--to", $0.container] },
                     names: { [$0.empty, "not a regular file"] }),
        BadInputCase("deliver: the container does not exist", { ["deliver", $0.file, "--to", $0.path("nowhere")] },
                     names: { [$0.path("nowhere")] }),
        BadInputCase("deliver: the container is a file", { ["deliver", $0.file, "--to", $0.file] },
                     names: { [$0.file] }),
        BadInputCase("deliver: the container is not a container", { ["deliver", $0.file, "--to", $0.other] },
                     names: { [$0.other] }),
        BadInputCase("deliver: one good file and one missing",
                     { ["deliver", $0.file, $0.path("missing.txt"), "--to", $0.container] },
                     names: { [$0.path("missing.txt")] }),
        BadInputCase("deliver: no --to", status: 64, { ["deliver", $0.file] }, names: { _ in ["--to"] }),

        // MARK: unmount
        BadInputCase("unmount: a folder that is not mounted",
                     { ["unmount", $0.mountpoint] }, names: { [$0.mountpoint] }),
        BadInputCase("unmount: a path that does not exist",
                     { ["unmount", $0.path("nowhere")] }, names: { [$0.path("nowhere")] }),
        BadInputCase("unmount: the mountpoint of another file system (tmpfs)", withTmpfs: true,
                     { ["unmount", $0.tmpfs] }, names: { [$0.tmpfs] }),

        // MARK: backup-report
        BadInputCase("backup-report: the container does not exist", { ["backup-report", $0.path("nowhere")] },
                     names: { [$0.path("nowhere")] }),
        BadInputCase("backup-report: the container is a file", { ["backup-report", $0.file] },
                     names: { [$0.file, "not a folder"] }),
        BadInputCase("backup-report: a folder that is not a container", { ["backup-report", $0.other] },
                     names: { [$0.other, "not a container"] }),
        BadInputCase("backup-report: the mountpoint of another file system", withTmpfs: true,
                     { ["backup-report", $0.tmpfs] }, names: { [$0.tmpfs, "tmpfs"] }),
        BadInputCase("backup-report: an app name with a slash", { ["backup-report", $0.container, "--app-name", "a/b"] },
                     names: { _ in ["a/b"] }),
        BadInputCase("backup-report: a threshold that is not a size", status: 64,
                     { ["backup-report", $0.container, "--large-file-threshold", "12Q"] }, names: { _ in ["12Q"] }),

        // MARK: purge
        BadInputCase("purge: the container does not exist", { ["purge", $0.path("nowhere")] },
                     names: { [$0.path("nowhere")] }),
        BadInputCase("purge: the container is a file", { ["purge", $0.file] }, names: { [$0.file, "not a folder"] }),
        BadInputCase("purge: a folder that is not a container", { ["purge", $0.other] }, names: { [$0.other] }),
        BadInputCase("purge: the mountpoint of another file system", withTmpfs: true, { ["purge", $0.tmpfs] },
                     names: { [$0.tmpfs] }),

        // MARK: backup
        BadInputCase("backup: the container does not exist", { ["backup", $0.path("nowhere"), $0.path("out.tar")] },
                     names: { [$0.path("nowhere")] }),
        BadInputCase("backup: the container is a file", { ["backup", $0.file, $0.path("out.tar")] },
                     names: { [$0.file] }),
        BadInputCase("backup: the archive's folder cannot be reached", { ["backup", $0.container, $0.path("no/out.tar")] },
                     names: { [$0.path("no/"), "No such file"] }),
        BadInputCase("backup: the archive is a folder", { ["backup", $0.container, $0.empty] },
                     names: { [$0.empty, "Is a directory"] }),
        BadInputCase("backup: the archive would be inside the container",
                     { ["backup", $0.container, $0.container + "/Documents/out.tar"] },
                     names: { [$0.container + "/Documents/out.tar", "inside the container"] }),

        // MARK: restore
        BadInputCase("restore: the archive does not exist", { ["restore", $0.path("none.tar"), $0.path("new")] },
                     names: { [$0.path("none.tar"), "No such file"] }),
        BadInputCase("restore: the archive is not an archive",
                     { ["restore", $0.file, $0.path("new"), "--app-name", "TestApp"] },
                     names: { [$0.file] }),
        BadInputCase("restore: the target is a file", { ["restore", $0.archive, $0.file] },
                     names: { [$0.file, "not an empty folder"] }),
        BadInputCase("restore: the target's folder cannot be reached", { ["restore", $0.archive, $0.file + "/new"] },
                     names: { [$0.file, "not a folder"] }),
        BadInputCase("restore: --replace of a container that does not exist",
                     { ["restore", $0.archive, $0.path("nowhere"), "--replace"] },
                     names: { [$0.path("nowhere"), "--replace"] }),
        BadInputCase("restore: an app name with ..", { ["restore", $0.archive, $0.path("new"), "--app-name", ".."] },
                     names: { _ in ["\"..\""] }),
    ]

    @Test("L1: a bad command gives a documented status, one line naming the path and the problem, and changes nothing",
          arguments: cases)
    func badInput(_ c: BadInputCase) throws {
        let place = try BadInputPlace.make(withTmpfs: c.withTmpfs)
        defer { place.cleanUp() }
        let before = RulesTreeSnapshot(of: place.root)
        var argv = [Binaries.appsandboxfs] + c.arguments(place)
        // Only the command's own mount namespace sees the other /dev; it
        // goes with the process.
        let newDev = "mount -t tmpfs -o size=64k,mode=755 tmpfs /dev"
        switch c.fuseDevice {
        case .host:
            break
        case .missing:
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\(newDev) && exec \"$@\"", "sh"] + argv
        case .rootOnly:
            // A /dev/fuse of mode 0600 whatever the host's is (often 0666),
            // and the command as uid 65534.
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                    "\(newDev) && mknod -m 600 /dev/fuse c 10 229 && mknod -m 666 /dev/null c 1 3 && "
                    + "exec setpriv --reuid=65534 --regid=65534 --clear-groups -- \"$@\"", "sh"] + argv
        }
        let result = runProcess(argv, cwd: c.inRoot ? place.root : nil, timeout: 60)

        let checks = {
            #expect(result.status == c.status, "exit \(result.status), expected \(c.status):\n\(result.stderr)")
            let lines = Reliability.lines(result.stderr)
            if c.status == 64 {
                #expect(lines.first?.hasPrefix("Error: ") == true, "\(result.stderr)")
            } else {
                #expect(lines.count == 1, "not one line:\n\(result.stderr)")
            }
            let first = String(lines.first ?? "")
            for name in c.names(place) {
                #expect(first.contains(name), "the line does not name \(name): \(first)")
            }
            #expect(!first.contains("Error Domain="), "a raw Foundation error: \(first)")
            // backup and restore write beside their output under a temporary
            // name and remove it when they fail: the folder's times move, its
            // contents do not.
            let changes = RulesTreeSnapshot(of: place.root).changes(since: before).filter { line in
                let fields = line.hasPrefix("~ .: ") ? line.dropFirst(5).split(separator: ",") : []
                return fields.isEmpty || !fields.allSatisfy { $0.contains("mtime") || $0.contains("ctime") }
            }
            #expect(changes.isEmpty, "the command changed \(place.root):\n\(changes.prefix(10).joined(separator: "\n"))")
            #expect(!isFuseMount(place.mountpoint), "something was mounted at \(place.mountpoint)")
            if c.withTmpfs {
                #expect(MountTableReader.isMountpoint(place.tmpfs), "the tmpfs at \(place.tmpfs) was unmounted")
            }
        }
        if let known = c.knownIssue {
            withKnownIssue(Comment(rawValue: known)) { checks() }
        } else {
            checks()
        }
    }

    @Test("L1: relative paths work for every command: they are made absolute")
    func relativePaths() throws {
        let place = try BadInputPlace.make(withTmpfs: false)
        defer { place.cleanUp() }
        let run = { (arguments: [String]) in Reliability.run(arguments, cwd: place.root) }
        let made = run(["init", "made", "--app-name", "Made"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(Reliability.containerProblems(place.path("made"), appName: "Made").isEmpty)
        #expect(run(["deliver", "file.txt", "--to", "c"]).status == 0)
        #expect(readFileText(place.container + "/Documents/Inbox/file.txt") == "a file, not a folder\n")
        let report = run(["backup-report", "c", "--json"])
        #expect(report.status == 0 && report.stdout.contains(place.container), "\(report.stderr)")
        #expect(run(["backup", "c", "again.tar"]).status == 0)
        #expect(access(place.path("again.tar"), F_OK) == 0)
        let restored = run(["restore", "again.tar", "restored"])
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(Reliability.containerProblems(place.path("restored")).isEmpty)
        let purge = run(["purge", "restored", "--caches"])
        #expect(purge.status == 0, "\(purge.stderr)")
    }

    @Test("L1 X6: a backing store without user xattrs (ramfs): mount warns in one line naming it, mounts, and changes nothing",
          arguments: [true, false])
    func withoutUserXattrs(foreground: Bool) throws {
        try withRulesMount(layOut: false) { r in
            try makeDirectory(r.backing)
            let ramfs = runProcess(["mount", "-t", "ramfs", "-o", "mode=755", "ramfs", r.backing])
            try #require(ramfs.status == 0, "cannot mount ramfs: \(ramfs.stderr)")
            defer { _ = runProcess(["umount", "-l", r.backing]) }
            try layOutContainer(at: r.backing, appName: r.appName)
            try writeFile(r.backingPath("Documents/doc.txt"), "kept\n")
            let before = RulesTreeSnapshot(of: r.backing)
            let warning: String
            if foreground {
                try r.mountForeground()
                warning = r.stderrText()
            } else {
                let mount = r.run(["mount", r.backing, r.mountpoint, "--app-name", r.appName])
                #expect(mount.status == 0, "\(mount.stderr)")
                warning = mount.stderr
            }
            #expect(r.isMounted)
            #expect(readFileText(r.path("Documents/doc.txt")) == "kept\n")
            // A foreground driver also says at info level that it serves the
            // mount: that is not a warning.
            let lines = Reliability.lines(warning).filter { !$0.contains(": info: ") }
            #expect(lines.count == 1, "not one line:\n\(warning)")
            #expect(lines.first?.contains(r.backing) == true && lines.first?.contains("extended attributes") == true,
                    "the warning does not name the backing store and the problem:\n\(warning)")
            let unmount = r.run(["unmount", r.mountpoint])
            #expect(unmount.status == 0, "\(unmount.stderr)")
            if foreground { #expect(r.waitForDriverExit() == .exited(0)) }
            #expect(r.waitUntilNoDriver())
            let changes = RulesTreeSnapshot(of: r.backing).changes(since: before)
            #expect(changes.isEmpty, "mount and unmount changed the backing store:\n\(changes.joined(separator: "\n"))")
        }
    }
}
