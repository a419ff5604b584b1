// The conventions of a Unix tool and daemon (issue 18): a version, a
// background driver that logs to syslog (denials as their own stream) at the
// --log-level asked and keeps no folder busy, `unmount` that names what keeps a mount busy and
// detaches lazily only when asked, and a status folder that is refused when
// someone else could have planted it (issue 11, item 8).

import Foundation
import Glibc
import Testing

@Suite("Ecosystem: tool conventions (version, syslog, chdir, unmount --lazy, safe status folder)")
struct ToolConventionsTests {
    @Test("appsandboxfs --version prints the version, and status --json shows it")
    func version() throws {
        let result = runProcess([Binaries.appsandboxfs, "--version"])
        #expect(result.status == 0)
        #expect(result.stdout.range(of: #"^[0-9]+\.[0-9]+\.[0-9]+( \(.+\))?\n$"#, options: .regularExpression) != nil,
                "\(result.stdout)")
        let status = runProcess([Binaries.appsandboxfs, "status", "--json"])
        #expect(jsonObject(status.stdout)?["version"] as? String == result.stdout.trimmingCharacters(in: .newlines))
    }

    @Test("A background driver logs to syslog: its start line with the version, and each denial under its own name")
    func backgroundDenialReachesSyslog() throws {
        try withEcoMount(isolatedState: true) { m in
            // A syslog socket of our own, as /dev/log would be.
            let socketPath = m.root + "/log.sock"
            let listener = try DatagramListener(path: socketPath)
            let mounted = m.command(["env", "APPSANDBOXFS_SYSLOG_SOCKET=\(socketPath)", Binaries.appsandboxfs, "mount",
                                     m.backing, m.mountpoint, "--app-name", m.appName])
            try #require(mounted.status == 0, "\(mounted.stderr)")
            if let pid = m.driverPID() { m.track(pid) }
            #expect(mkdir(m.mountpoint + "/TestApp.app/x", 0o755) != 0)

            var messages: [String] = []
            let sawDenial = waitForCondition(timeout: 15) {
                messages += listener.receiveAll()
                return messages.contains { $0.contains("appsandboxfs-denial[") }
            }
            #expect(sawDenial, "no denial reached the socket; got:\n\(messages.joined(separator: "\n"))")
            let denial = messages.first { $0.contains("appsandboxfs-denial[") } ?? ""
            #expect(denial.hasPrefix("<29>"), "facility daemon, severity notice: \(denial)")
            #expect(denial.contains(" deny(1) file-write-create \(m.mountpoint)/TestApp.app/x"), "\(denial)")
            let version = runProcess([Binaries.appsandboxfs, "--version"]).stdout.trimmingCharacters(in: .newlines)
            #expect(messages.contains { $0.hasPrefix("<30>") && $0.contains(" appsandboxfs[") && $0.contains("appsandboxfs \(version): serving \(m.backing)") },
                    "no start line with the version:\n\(messages.joined(separator: "\n"))")
            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
        }
    }

    @Test("--log-level: at error the driver logs no info or debug lines (denials still), by default info but no debug, at debug both")
    func logLevelThreshold() throws {
        try withEcoMount(isolatedState: true) { m in
            // (--log-level, info lines expected, debug lines expected)
            for (level, wantsInfo, wantsDebug) in [("error", false, false), (nil, true, false), ("debug", true, true)] {
                let log = m.root + "/driver-\(level ?? "default").log"
                let mounted = m.appsandboxfs(["mount", m.backing, m.mountpoint, "--app-name", m.appName, "--log", log]
                                             + (level.map { ["--log-level", $0] } ?? []))
                try #require(mounted.status == 0, "\(mounted.stderr)")
                let pid = try #require(m.driverPID())
                #expect(mkdir(m.mountpoint + "/TestApp.app/x", 0o755) != 0)
                #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
                #expect(processGone(pid, within: 15))

                let text = readFileText(log)
                let lines = text.split(separator: "\n")
                let context = "--log-level \(level ?? "(default)"):\n\(text)"
                #expect(lines.contains { $0.hasPrefix("Sandbox: ") && $0.hasSuffix(" deny(1) file-write-create \(m.mountpoint)/TestApp.app/x") },
                        "denials are logged at every level: \(context)")
                #expect(lines.contains { $0.hasPrefix("appsandboxfs: info: appsandboxfs ") && $0.contains(": serving \(m.backing)") } == wantsInfo,
                        "the start line (info): \(context)")
                #expect(lines.contains { $0.hasPrefix("appsandboxfs: info: \(m.mountpoint): unmounted") } == wantsInfo,
                        "the last line (info): \(context)")
                #expect(lines.contains { $0.hasPrefix("appsandboxfs: debug: \(m.mountpoint): libfuse options allow_other,") } == wantsDebug,
                        "the options line (debug): \(context)")
                if level == "error" {
                    let below = lines.filter { line in ["trace", "debug", "info", "notice", "warning"].contains { line.hasPrefix("appsandboxfs: \($0): ") } }
                    #expect(below.isEmpty, "lines below error: \(context)")
                }
            }
        }
    }

    @Test("A background driver works from /: it keeps its caller's working folder free")
    func daemonLeavesWorkingFolder() throws {
        try withEcoMount(isolatedState: true) { m in
            try makeDirectory(m.root + "/caller")
            let mounted = m.appsandboxfs(["mount", "backing", "mnt", "--app-name", m.appName, "--log", m.driverLog],
                                         cwd: m.root)
            try #require(mounted.status == 0, "\(mounted.stderr)")
            let pid = try #require(m.driverPID())
            var buffer = [CChar](repeating: 0, count: 4096)
            let count = readlink("/proc/\(pid)/cwd", &buffer, buffer.count - 1)
            #expect(count > 0 && String(cString: buffer) == "/", "the driver's working folder: \(String(cString: buffer))")
            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
        }
    }

    @Test("unmount of a busy mount names the process keeping it busy and leaves it mounted; --lazy detaches it")
    func busyUnmount() throws {
        try withEcoMount(isolatedState: true) { m in
            try m.mountInBackground()
            // A process with its working folder in the mount.
            let holder = try spawn(["sleep", "300"], cwd: m.mountpoint + "/Documents", stdin: "/dev/null",
                                   stdout: "/dev/null", stderr: "/dev/null")
            defer {
                kill(holder, SIGKILL)
                _ = waitForExit(holder, timeout: 15)
            }
            let refused = m.appsandboxfs(["unmount", m.mountpoint])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("busy"), "\(refused.stderr)")
            #expect(refused.stderr.contains("sleep (pid \(holder)): working folder \(m.mountpoint)/Documents"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--lazy"), "\(refused.stderr)")
            #expect(m.isMounted, "a busy mount was detached without --lazy")

            let lazy = m.appsandboxfs(["unmount", "--lazy", m.mountpoint])
            #expect(lazy.status == 0, "\(lazy.stderr)")
            #expect(lazy.stderr.contains("sleep (pid \(holder))"), "\(lazy.stderr)")
            #expect(!m.isMounted)
        }
    }

    @Test("unmount waits out a hold of a moment (another tool looking at the mount) instead of failing busy")
    func momentaryHold() throws {
        try withEcoMount(isolatedState: true) { m in
            try m.mountInBackground()
            // A process in the mount for a fifth of a second, as `status`'s
            // statfs or an `ls` finishing is for the moment its driver answers.
            let holder = try spawn(["sleep", "0.2"], cwd: m.mountpoint + "/Documents", stdin: "/dev/null",
                                   stdout: "/dev/null", stderr: "/dev/null")
            defer { _ = waitForExit(holder, timeout: 15) }
            let unmounted = m.appsandboxfs(["unmount", m.mountpoint])
            #expect(unmounted.status == 0, "\(unmounted.stderr)")
            #expect(!m.isMounted)
        }
    }

    @Test("unmount names a busy mount's holders escaped: a process name and a folder name with terminal escape sequences print none (issue 25, adversarial pass)")
    func busyUnmountHostileNames() throws {
        try withEcoMount(isolatedState: true) { m in
            try m.mountInBackground()
            // The app (or any user, through allow_other) chooses both: its
            // process name (here the name it was started by) and its folder.
            let program = m.root + "/s\u{1B}]0;OWNED\u{07}"
            #expect(symlink("/bin/sleep", program) == 0)
            let folder = m.mountpoint + "/Documents/d\u{1B}[2J"
            try makeDirectory(folder)
            let holder = try spawn([program, "300"], cwd: folder, stdin: "/dev/null", stdout: "/dev/null", stderr: "/dev/null")
            defer {
                kill(holder, SIGKILL)
                _ = waitForExit(holder, timeout: 15)
            }
            let refused = m.appsandboxfs(["unmount", m.mountpoint])
            #expect(refused.status == 1)
            #expect(!refused.stderr.utf8.contains(0x1B) && !refused.stderr.utf8.contains(0x07), "\(refused.stderr.debugDescription)")
            #expect(refused.stderr.contains("s\\x1B]0;OWNED\\x07 (pid \(holder)): working folder \(m.mountpoint)/Documents/d\\x1B[2J"),
                    "\(refused.stderr.debugDescription)")
            kill(holder, SIGKILL)
            _ = waitForExit(holder, timeout: 15)
            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
        }
    }

    @Test("A status folder owned by someone else or writable by others is refused; records are not written through links")
    func unsafeStatusFolder() throws {
        try withEcoMount(isolatedState: true) { m in
            let state = try #require(m.stateDirectory)
            // Planted by another user: refused, the mount still works.
            try makeDirectory(state, mode: 0o777)
            chmod(state, 0o777)
            #expect(chown(state, nobody, nobody) == 0)
            let mounted = m.appsandboxfs(["mount", m.backing, m.mountpoint, "--app-name", m.appName, "--log", m.driverLog])
            try #require(mounted.status == 0, "\(mounted.stderr)")
            let log = readFileText(m.driverLog)
            #expect(log.contains("owned by uid \(nobody)"), "\(log)")
            #expect((try? FileManager.default.contentsOfDirectory(atPath: state))?.isEmpty == true)
            let status = m.appsandboxfs(["status", m.mountpoint])
            #expect(status.stderr.contains("owned by uid \(nobody)"), "\(status.stderr)")
            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
            #expect(waitForCondition(timeout: 15) { !m.isMounted })

            // Ours, but a link where the record goes: never written through.
            #expect(chown(state, 0, 0) == 0 && chmod(state, 0o700) == 0)
            let victim = m.root + "/victim"
            try writeFile(victim, "precious\n")
            let mounted2 = m.appsandboxfs(["mount", m.backing, m.mountpoint, "--app-name", m.appName, "--log", m.driverLog])
            try #require(mounted2.status == 0, "\(mounted2.stderr)")
            let pid = try #require(m.driverPID())
            #expect(access(state + "/\(pid).json", F_OK) == 0)
            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
            _ = processGone(pid, within: 15)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: state)) ?? [] {
                unlink(state + "/" + name)
            }
            // A link planted as a record: read without following it (and
            // pruned, never written through, by the next driver).
            #expect(symlink(victim, state + "/4242.json") == 0)
            // (Without MOUNTPOINT, status lists other tests' mounts too,
            // stale ones included: exit 2 is theirs.)
            let listed = m.appsandboxfs(["status"])
            #expect(listed.status == 0 || listed.status == 2, "\(listed.stderr)")
            #expect(!listed.stdout.contains("4242"), "\(listed.stdout)")
            #expect(readFileText(victim) == "precious\n")
        }
    }
}

/// Waits until `condition` holds, up to `timeout` seconds (checking every
/// 20 ms); whether it held.
func waitForCondition(timeout: Double, _ condition: () -> Bool) -> Bool {
    let deadline = monotonicNow() + timeout
    while true {
        if condition() { return true }
        if monotonicNow() >= deadline { return false }
        usleep(20_000)
    }
}

/// A Unix datagram socket bound at a path: a stand-in for /dev/log.
final class DatagramListener {
    let fd: Int32
    let path: String

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw SupportError("socket: \(posixError(errno))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw SupportError("bind \(path): \(posixError(errno))") }
        chmod(path, 0o666)
    }

    /// Every datagram waiting now.
    func receiveAll() -> [String] {
        var messages: [String] = []
        var buffer = [UInt8](repeating: 0, count: 8192)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return messages }
            messages.append(String(decoding: buffer[0..<count], as: UTF8.self))
        }
    }

    deinit {
        close(fd)
        unlink(path)
    }
}

@Suite("Docs: docs/cli.md's table of -o names is what mount -o does")
struct MountOptionTableTests {
    @Test("Each name of the table maps to the flag the table names, through appsandboxfs mount --fake")
    func table() throws {
        let cli = repositoryFile("docs/cli.md")
        let start = try #require(cli.range(of: "| option | flag |"), "docs/cli.md has no option table")
        let rows = cli[start.upperBound...].split(separator: "\n").dropFirst().prefix { $0.hasPrefix("|") }
        var checked = 0
        for row in rows {
            let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 2 else { continue }
            let names = cells[0].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            let flags = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            guard names.count == flags.count, !names.isEmpty else { continue }  // the prose rows
            for (name, flag) in zip(names, flags) {
                // NAME, DIR, S ... stand for values: give one of the right kind.
                let option = name.replacingOccurrences(of: "=SIZE", with: "=1048576").replacingOccurrences(of: "=STATE", with: "=locked")
                    .replacingOccurrences(of: "=S", with: "=2").replacingOccurrences(of: "=N", with: "=3")
                    .replacingOccurrences(of: "=LEVEL", with: "=debug")
                let expected = flag.replacingOccurrences(of: " SIZE", with: " 1048576").replacingOccurrences(of: " STATE", with: " locked")
                    .replacingOccurrences(of: " S", with: " 2").replacingOccurrences(of: " N", with: " 3")
                    .replacingOccurrences(of: " LEVEL", with: " debug")
                let result = runProcess([Binaries.appsandboxfs, "mount", "/b", "/m", "-o", option, "--fake"])
                #expect(result.status == 0, "-o \(option): \(result.stderr)")
                // Defaults print nothing: the flag that turns a default on is its absence.
                let defaults = ["--no-writeback", "--keep-cache", "--passthrough"]
                let words = " " + result.stdout.trimmingCharacters(in: .newlines) + " "
                #expect(defaults.contains(expected) ? !words.contains(" -o ") : words.contains(" " + expected + " "),
                        "docs/cli.md says -o \(name) is \(flag); mount --fake printed: \(result.stdout)")
                checked += 1
            }
        }
        #expect(checked >= 15, "only \(checked) names checked")
    }

    @Test("-o fsname= and -o subtype= are refused with one line naming the option: the mount table's source and type stay the driver's")
    func driverOwnOptionsRefused() {
        for option in ["fsname=/srv/Other", "subtype=ext4", "ro,fsname=x"] {
            let result = runProcess([Binaries.appsandboxfs, "mount", "/b", "/m", "-o", option, "--fake"])
            let name = option.contains("fsname") ? "fsname" : "subtype"
            #expect(result.status != 0, "-o \(option) was accepted: \(result.stdout)")
            #expect(result.stderr.contains("-o \(name)"), "-o \(option): \(result.stderr)")
        }
    }
}
