// Rule U1 (issue 25, item 1): a build folder is untrusted input, copied as
// root by `update`, `init --bundle-from` and `restore --bundle-from`. The
// bundle holds its regular files, folders and symbolic links, with their
// contents, modes, times and user. attributes, owned by the container's
// owner; no device nodes, FIFOs or sockets, no set-ID bits, no file
// capabilities, no security./trusted. attributes, no other owners; the verb
// prints what it left out, one line per kind. Item 11: a lock on the
// backing folder held by a user who cannot be its driver keeps no update out.

import Foundation
import Glibc
import Testing

@Suite("Device: a bundle copy takes nothing privileged from a hostile build folder (U1, issue 25)")
struct BundleCopyTests {
    static let stranger: uid_t = 65534
    /// The container's owner in these tests (not root, not the stranger).
    static let owner: uid_t = 4242

    /// A build folder holding what a hostile user would put there, next to
    /// ordinary files: set-user-ID root and set-group-ID files, a device
    /// node (/dev/kmsg's numbers), a FIFO, a socket, a file with a file
    /// capability, one with a trusted. attribute, entries of another uid.
    static func makeHostileBuild(_ path: String) throws {
        try makeDirectory(path)
        try writeFile(path + "/Info.plist", "<plist><dict><key>CFBundleIdentifier</key><string>com.example.Demo</string></dict></plist>\n")
        try writeFile(path + "/Demo", "#!/bin/sh\necho demo\n", mode: 0o755)
        #expect(RulesSys.setxattr(path + "/Demo", "user.build", Array("v2".utf8)) == 0)
        try writeFile(path + "/rootshell", "#!/bin/sh\nexec /bin/sh\n", mode: 0o755)
        #expect(RulesSys.chmod(path + "/rootshell", 0o4755) == 0)
        try writeFile(path + "/groupshell", "#!/bin/sh\n", mode: 0o755)
        #expect(RulesSys.chmod(path + "/groupshell", 0o2755) == 0)
        try makeDirectory(path + "/dev")
        #expect(RulesSys.mknod(path + "/dev/kmsg", S_IFCHR | 0o666, dev_t(1 << 8 | 11)) == 0)
        #expect(RulesSys.mkfifo(path + "/dev/pipe") == 0)
        #expect(Self.makeSocket(path + "/dev/socket"))
        try writeFile(path + "/capable", "#!/bin/sh\n", mode: 0o755)
        #expect(runProcess(["setcap", "cap_dac_override+ep", path + "/capable"]).status == 0)
        try writeFile(path + "/trusted", "data\n")
        #expect(RulesSys.setxattr(path + "/trusted", "trusted.overlay.opaque", Array("y".utf8)) == 0)
        try makeDirectory(path + "/theirs", mode: 0o2775)
        try writeFile(path + "/theirs/file", "theirs\n", mode: 0o6644)
        #expect(RulesSys.symlink("../Demo", path + "/theirs/link") == 0)
        for entry in ["theirs", "theirs/file"] { #expect(RulesSys.chown(path + "/" + entry, stranger, stranger) == 0) }
        #expect(RulesSys.chmod(path + "/theirs/file", 0o6644) == 0)  // chown cleared the bits
        #expect(RulesSys.lchown(path + "/theirs/link", stranger, stranger) == 0)
        #expect(RulesSys.utimens(path + "/theirs/file", atime: 1_000_000_000, mtime: 1_100_000_000) == 0)
    }

    /// A Unix socket bound at `path` (the node stays after the close).
    static func makeSocket(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }

    /// What U1 says the copy of `build` holds for a container owned by
    /// `owner`: its files, folders and links, set-ID bits cleared, owned
    /// by `owner`, only user. attributes (ctimes aside: a copy cannot keep them).
    static func expectedCopy(of build: String, owner: (uid_t, gid_t)) -> [String: RulesTreeSnapshot.Entry] {
        var entries: [String: RulesTreeSnapshot.Entry] = [:]
        for (path, entry) in RulesTreeSnapshot(of: build).entries where ["file", "dir", "symlink"].contains(entry.type) {
            var entry = entry
            entry.ctime = ""
            entry.uid = owner.0
            entry.gid = owner.1
            if entry.type != "symlink" { entry.mode &= ~UInt32(S_ISUID | S_ISGID) }
            entry.xattrs = entry.xattrs.filter { $0.hasPrefix("user.") }
            entries[path] = entry
        }
        return entries
    }

    static func copyDifferences(_ build: String, _ bundle: String, owner: (uid_t, gid_t)) -> [String] {
        let want = expectedCopy(of: build, owner: owner)
        let have = RulesTreeSnapshot(of: bundle).entries.mapValues { entry in
            var entry = entry
            entry.ctime = ""
            return entry
        }.filter { $0.key != "." }  // the bundle folder itself: checked apart
        return Set(want.keys).subtracting(["."]).union(have.keys).sorted().compactMap { path in
            want[path] == have[path] ? nil : "\(path): \(want[path].map { "\($0)" } ?? "missing") vs \(have[path].map { "\($0)" } ?? "missing")"
        }
    }

    /// No set-ID bit, no capability, no attribute but user.*, no owner but
    /// `owner`, nothing but files, folders and links, anywhere in `tree`.
    static func privileged(in tree: String, owner: uid_t) -> [String] {
        RulesTreeSnapshot(of: tree).entries.sorted { $0.key < $1.key }.compactMap { path, entry in
            var problems: [String] = []
            if !["file", "dir", "symlink"].contains(entry.type) { problems.append(entry.type) }
            if entry.type != "symlink" && entry.mode & UInt32(S_ISUID | S_ISGID) != 0 { problems.append("set-ID") }
            if entry.uid != owner || entry.gid != owner { problems.append("owner \(entry.uid):\(entry.gid)") }
            problems += entry.xattrs.filter { !$0.hasPrefix("user.") }
            return problems.isEmpty ? nil : "\(path): \(problems.joined(separator: ", "))"
        }
    }

    /// The left-out lines the verbs print (U1), one per kind, each naming
    /// where (paths relative to the build folder).
    static func expectLeftOutLines(_ stderr: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = stderr.split(separator: "\n").filter { $0.contains("left out of the bundle (U1)") }
        for (kind, paths) in [("4 set-user-ID or set-group-ID bits", ["groupshell", "rootshell", "theirs", "theirs/file"]),
                              ("1 file capabilities (security.capability)", ["capable"]),
                              ("1 trusted.* attributes", ["trusted"]),
                              ("1 device nodes", ["dev/kmsg"]), ("1 FIFOs", ["dev/pipe"]), ("1 sockets", ["dev/socket"]),
                              ("owners other than the container's: ", [])] {
            #expect(lines.contains { line in line.contains(kind) && paths.allSatisfy { line.contains($0) } },
                    "no line \"\(kind): \(paths)\" in:\n\(stderr)", sourceLocation: sourceLocation)
        }
        #expect(lines.count == 7, "\(lines)", sourceLocation: sourceLocation)
    }

    /// The verb succeeded, `bundle` is the copy of `build` U1 asks for,
    /// owned by `owner`, and every kind left out was named.
    static func expectU1Copy(_ result: (status: Int32, stdout: String, stderr: String), of build: String, in bundle: String,
                             owner: uid_t, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == 0, "\(result)", sourceLocation: sourceLocation)
        #expect(privileged(in: bundle, owner: owner) == [], sourceLocation: sourceLocation)
        #expect(copyDifferences(build, bundle, owner: (owner, owner)) == [], sourceLocation: sourceLocation)
        expectLeftOutLines(result.stderr, sourceLocation: sourceLocation)
    }

    @Test("U1 update from a hostile build folder: no set-ID bits, device node, FIFO, socket, capability, trusted. attribute or other owner in the bundle; the rest copied exactly; one line per kind left out")
    func updateFromHostileBuild() throws {
        let root = try makeTemporaryDirectory(prefix: "bundle-copy")
        defer { removeTree(root) }
        let backing = root + "/container", build = root + "/build"
        #expect(runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "Demo"]).status == 0)
        #expect(runProcess(["chown", "-R", "\(Self.owner):\(Self.owner)", backing]).status == 0)
        try Self.makeHostileBuild(build)
        let result = runProcess([Binaries.appsandboxfs, "update", backing, "--bundle", build])
        Self.expectU1Copy(result, of: build, in: backing + "/Demo.app", owner: Self.owner)
    }

    @Test("U1 init --bundle-from a hostile build folder: the same copy, owned by the backing folder's owner, the same lines")
    func initFromHostileBuild() throws {
        let root = try makeTemporaryDirectory(prefix: "bundle-copy")
        defer { removeTree(root) }
        let backing = root + "/container", build = root + "/build"
        try makeDirectory(backing)
        #expect(RulesSys.chown(backing, Self.owner, Self.owner) == 0)
        try Self.makeHostileBuild(build)
        let result = runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "Demo", "--bundle-from", build])
        Self.expectU1Copy(result, of: build, in: backing + "/Demo.app", owner: Self.owner)
    }

    @Test("U1 restore --bundle-from a hostile build folder (new container, and --replace of one owned by another user): the same copy and lines")
    func restoreFromHostileBuild() throws {
        let root = try makeTemporaryDirectory(prefix: "bundle-copy")
        defer { removeTree(root) }
        let backing = root + "/container", build = root + "/build", archive = root + "/backup.tar"
        #expect(runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "Demo"]).status == 0)
        try writeFile(backing + "/Documents/notes.txt", "notes\n")
        let backup = runProcess([Binaries.appsandboxfs, "backup", backing, archive])
        try #require(backup.status == 0, "\(backup)")
        try Self.makeHostileBuild(build)

        let restored = root + "/restored"
        let fresh = runProcess([Binaries.appsandboxfs, "restore", archive, restored, "--bundle-from", build])
        #expect(fresh.status == 0, "\(fresh)")
        #expect(Self.privileged(in: restored + "/Demo.app", owner: 0) == [])
        #expect(Self.copyDifferences(build, restored + "/Demo.app", owner: (0, 0)) == [])
        #expect(readFileText(restored + "/Documents/notes.txt") == "notes\n")
        let freshLines = fresh.stderr.split(separator: "\n").filter { $0.contains("left out of the bundle (U1)") }
        #expect(freshLines.count == 7, "\(fresh.stderr)")

        #expect(runProcess(["chown", "-R", "\(Self.owner):\(Self.owner)", backing]).status == 0)
        let replaced = runProcess([Binaries.appsandboxfs, "restore", archive, backing, "--replace", "--bundle-from", build])
        Self.expectU1Copy(replaced, of: build, in: backing + "/Demo.app", owner: Self.owner)
    }

    @Test("U1 a build folder served by a FUSE file system (bindfs, devices and set-ID bits shown as they are) is copied the same way")
    func updateFromFuseServedBuild() throws {
        let root = try makeTemporaryDirectory(prefix: "bundle-copy")
        defer { removeTree(root) }
        let backing = root + "/container", build = root + "/build", served = root + "/served"
        #expect(runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "Demo"]).status == 0)
        try Self.makeHostileBuild(build)
        try makeDirectory(served)
        // bindfs shows the folder as it is (owners, modes, devices, xattrs).
        let mounted = runProcess(["bindfs", "-o", "allow_other,dev,suid", build, served])
        try #require(mounted.status == 0, "bindfs: \(mounted)")
        defer { _ = runProcess(["fusermount3", "-u", "-z", served]) }
        let result = runProcess([Binaries.appsandboxfs, "update", backing, "--bundle", served], timeout: 120)
        #expect(result.status == 0, "\(result)")
        #expect(Self.privileged(in: backing + "/Demo.app", owner: 0) == [])
        #expect(readFileText(backing + "/Demo.app/theirs/file") == "theirs\n")
        let lines = result.stderr.split(separator: "\n").filter { $0.contains("left out of the bundle (U1)") }
        #expect(lines.contains { $0.contains("device nodes: dev/kmsg") } && lines.contains { $0.contains("FIFOs: dev/pipe") }, "\(result.stderr)")
    }

    @Test("Issue 25 item 11: uid 65534 holding a flock (shared or exclusive) on the backing folder does not make update fail or wait; U2 still refuses a mounted container")
    func strangersLockIgnored() throws {
        let root = try makeTemporaryDirectory(prefix: "bundle-copy")
        defer { removeTree(root) }
        let backing = root + "/container", build = root + "/build", flags = root + "/flags"
        #expect(runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "Demo"]).status == 0)
        try makeDirectory(build)
        try writeFile(build + "/Demo", "v2\n")
        try makeDirectory(flags, mode: 0o777)
        #expect(RulesSys.chmod(flags, 0o777) == 0)
        for mode in ["-x", "-s"] {
            let ready = flags + "/ready\(mode)"
            let holder = try spawn(["setpriv", "--reuid=\(Self.stranger)", "--regid=\(Self.stranger)", "--clear-groups", "--",
                                    "flock", "--no-fork", mode, backing, "sh", "-c", "touch \(ready); exec sleep 120"],
                                   stdin: "/dev/null", stdout: "/dev/null", stderr: root + "/holder.stderr")
            defer {
                kill(holder, SIGKILL)
                _ = waitForExit(holder, timeout: 30)
            }
            let deadline = monotonicNow() + 30
            while access(ready, F_OK) != 0 && monotonicNow() < deadline { usleep(10_000) }
            try #require(access(ready, F_OK) == 0, "the lock was not taken: \(readFileText(root + "/holder.stderr"))")
            let started = monotonicNow()
            let result = runProcess([Binaries.appsandboxfs, "update", backing, "--bundle", build], timeout: 60)
            #expect(result.status == 0, "flock \(mode): \(result)")
            #expect(monotonicNow() - started < 20, "update waited for the lock")
            #expect(readFileText(backing + "/Demo.app/Demo") == "v2\n")
            #expect(result.stderr.contains("uid \(Self.stranger)") && result.stderr.contains("not waited for"), "\(result.stderr)")
        }
        // U2 holds: a container a driver serves is refused.
        try withMountedContainer { m in
            let result = runProcess([Binaries.appsandboxfs, "update", m.backing, "--bundle", build])
            #expect(result.status != 0 && result.stderr.contains("mounted"), "\(result)")
        }
    }
}
