// The denial log: one line per denial, in the iOS form
// `Sandbox: <process>(<pid>) deny(1) <operation> <absolute path through the mountpoint>`,
// on standard error and, when asked, appended to a file. Allowed operations,
// reads and the backing file system's own errors write nothing.

import Glibc
import Testing

@Suite("Rules: the denial log")
struct DenialLogTests {
    @Test("A denial line has the iOS form, with the calling process's name and pid")
    func lineForm() throws {
        try withRulesContainer { m in
            // sh prints its pid, then the redirection is refused.
            let sh = runProcess(["sh", "-c", "echo $$; : > \"$1\"", "sh", m.bundle + "/new.txt"])
            #expect(sh.status != 0)
            let shPID = sh.stdout.split(separator: "\n").first.map(String.init) ?? "?"
            // exec keeps the pid and changes the name.
            let touch = runProcess(["sh", "-c", "echo $$; exec touch \"$1\"", "sh", m.inbox + "/x"])
            #expect(touch.status != 0)
            let touchPID = touch.stdout.split(separator: "\n").first.map(String.init) ?? "?"
            #expect(m.denialLines() == [
                "Sandbox: sh(\(shPID)) deny(1) file-write-create \(m.bundle)/new.txt",
                "Sandbox: touch(\(touchPID)) deny(1) file-write-create \(m.inbox)/x",
            ], "\(m.stderrText())")
        }
    }

    @Test("Each of the ten operation names of the contract is used for its kind of denial")
    func operationNames() throws {
        try withRulesContainer(prepare: { backing in
            try writeFile(backing + "/Documents/Inbox/in.pdf", "handed in\n")
            #expect(RulesSys.symlink("/etc", backing + "/Documents/out") == 0)
        }) { m in
            let file = m.inbox + "/in.pdf"
            let cases: [(String, String, () -> Int32)] = [
                ("file-read-data", m.documents + "/out", { RulesSys.code { RulesSys.readlink(m.documents + "/out").rulesValue == nil ? -1 : 0 } }),
                ("file-write-create", m.inbox + "/new", { RulesSys.mkdir(m.inbox + "/new") }),
                ("file-write-data", file, { RulesSys.open(file, O_WRONLY) }),
                ("file-write-unlink", m.documents, { RulesSys.rmdir(m.documents) }),
                ("file-write-mode", file, { RulesSys.chmod(file, 0o600) }),
                ("file-write-owner", file, { RulesSys.chown(file, 1, 1) }),
                ("file-write-times", file, { RulesSys.touch(file) }),
                ("file-write-xattr", file, { RulesSys.setxattr(file, "user.x", [1]) }),
                ("file-link", m.documents + "/alias", { RulesSys.link(file, m.documents + "/alias") }),
                ("file-write-rename", file, { RulesSys.rename(file, m.inbox + "/renamed.pdf") }),
            ]
            for (operation, path, body) in cases {
                m.expectDenial(operation, EPERM, operation, at: path) { body() }
            }
            let used = Set(m.parsedDenials().map(\.operation))
            #expect(used == rulesOperationNames)
        }
    }

    @Test("--denial-log FILE gets the same lines as standard error, appended to what it held")
    func denialLogFile() throws {
        let folder = try makeTemporaryDirectory(prefix: "asfs-rules-log")
        defer { removeTree(folder) }
        let log = folder + "/denials.log"
        try writeFile(log, "an earlier line\n")
        try withRulesContainer(extraArguments: ["--denial-log", log]) { m in
            _ = RulesSys.mkdir(m.bundle + "/x")
            _ = RulesSys.chmod(m.documents, 0o700)
            _ = RulesSys.open(m.inbox + "/y", O_WRONLY | O_CREAT)
            let lines = m.denialLines()
            #expect(lines.count == 3)
            #expect(readFileText(log) == "an earlier line\n" + lines.map { $0 + "\n" }.joined())
        }
    }

    @Test("Allowed operations, reads and the backing file system's own errors write no denial line")
    func noLinesWithoutDenials() throws {
        try withRulesContainer(prepare: { backing in
            try writeFile(backing + "/Documents/Inbox/in.pdf", "handed in\n")
            try writeFile(backing + "/Documents/mine.txt", "root's, 0644\n")
            try makeDirectory(backing + "/Documents/full")
            try writeFile(backing + "/Documents/full/x", "x")
        }) { m in
            let folder = try m.scratch()
            let script = runFSProbe(in: folder, script: rulesWritableScript)
            #expect(script.status == 0)
            _ = readFileText(m.bundle + "/Info.plist")
            _ = RulesSys.list(m.bundle)
            _ = readFileText(m.inbox + "/in.pdf")
            #expect(RulesSys.rename(m.inbox + "/in.pdf", m.documents + "/in.pdf") == 0)
            // The backing's own errors and the kernel's permission checks.
            #expect(RulesSys.open(m.documents + "/missing", O_RDONLY) == ENOENT)
            #expect(RulesSys.rmdir(m.documents + "/full") == ENOTEMPTY)
            #expect(RulesSys.mkdir(m.documents + "/full") == EEXIST)
            #expect(RulesSys.unlink(m.inbox + "/missing") == ENOENT)
            let nobody = runFSProbe(in: m.mountpoint, script: """
                open 0 Documents/mine.txt wronly
                open 1 Documents/new.txt wronly|creat
                open 2 TestApp.app/new.txt wronly|creat
                mkdir Documents/Inbox/d
                """, asUser: 65534)
            #expect(nobody.lines == ["err EACCES", "err EACCES", "err EACCES", "err EACCES"], "\(nobody)")
            #expect(m.denialLines().isEmpty, "\(m.denialLines().joined(separator: "\n"))")
        }
    }

    @Test("A denial from another user's process names that process")
    func otherUsersProcess() throws {
        try withRulesContainer(prepare: { backing in
            // The Inbox open to all, so that the kernel lets the call through to the rule.
            chmod(backing + "/Documents/Inbox", 0o777)
        }) { m in
            let probe = runFSProbe(in: m.mountpoint, script: "open 0 Documents/Inbox/x wronly|creat\n", asUser: 65534)
            #expect(probe.lines == ["err EPERM"], "\(probe)")
            let lines = m.parsedDenials()
            #expect(lines.count == 1)
            #expect(lines.first?.process == "fsprobe")
            #expect(lines.first?.operation == "file-write-create")
            #expect(lines.first?.path == m.inbox + "/x")
        }
    }

    @Test("Denial paths are absolute through the mountpoint, with spaces and odd names as they are, one line each")
    func pathsInLines() throws {
        try withRulesContainer(prepare: { backing in
            try makeDirectory(backing + "/Documents/Inbox/Mail attachments")
            try writeFile(backing + "/Documents/Inbox/Mail attachments/my report (final) #2.pdf", "x")
            try writeFile(backing + "/Documents/Inbox/two\nlines.pdf", "x")
        }) { m in
            let odd = m.inbox + "/Mail attachments/my report (final) #2.pdf"
            m.expectDenial("chmod with spaces", EPERM, "file-write-mode", at: odd) { RulesSys.chmod(odd, 0o600) }
            // A newline in a name must not split the line: one denial, one line.
            let before = m.stderrText()
            #expect(RulesSys.chmod(m.inbox + "/two\nlines.pdf", 0o600) == EPERM)
            let added = String(m.stderrText().dropFirst(before.count))
            #expect(added.filter { $0 == "\n" }.count == 1, "one denial wrote:\n\(added)")
            #expect(added.hasPrefix("Sandbox: ") && added.contains(" deny(1) file-write-mode \(m.inbox)/two"), "\(added)")
            // The root itself is the mountpoint.
            m.expectDenial("chmod of the root", EPERM, "file-write-mode", at: m.mountpoint) { RulesSys.chmod(m.mountpoint, 0o700) }
        }
    }

    /// Any process names itself (prctl(PR_SET_NAME), or a write to its own
    /// /proc/PID/comm, which is the same call): the name is escaped like the
    /// path, so a hostile name can neither split the line (a parser would
    /// miss the denial) nor send an escape sequence to whoever tails the log.
    @Test("A process name with a newline, an escape sequence or ' deny(1) ' in it gives one escaped line that parses back")
    func hostileProcessName() throws {
        try withRulesContainer { m in
            let names = ["x\n\u{1B}]0;owned\u{07}", "a deny(1) b", "back\\slash\u{7F}"]
            for (index, name) in names.enumerated() {
                let target = m.inbox + "/named-\(index)"
                let before = m.stderrText().utf8.count
                // sh renames itself (the main thread: the process's name), then is refused.
                let sh = runProcess(["sh", "-c", "printf '%s' \"$1\" > /proc/$$/comm; echo $$; : > \"$2\"", "sh", name, target])
                #expect(sh.status != 0)
                let pid = Int32(sh.stdout.split(separator: "\n").first.map(String.init) ?? "") ?? -1
                let added = Array(m.stderrText().utf8.dropFirst(before))
                #expect(added.last == 0x0A && added.filter { $0 == 0x0A }.count == 1,
                        "one denial must be one line: \(String(decoding: added, as: UTF8.self).debugDescription)")
                let controls = added.dropLast().filter { $0 < 0x20 || $0 == 0x7F }
                #expect(controls.isEmpty, "raw control bytes \(controls) in \(String(decoding: added, as: UTF8.self).debugDescription)")
                let line = RulesDenialLine(String(decoding: added.dropLast(), as: UTF8.self))
                #expect(line?.process == name, "\(String(decoding: added, as: UTF8.self).debugDescription)")
                #expect(line?.pid == pid)
                #expect(line?.operation == "file-write-create")
                #expect(line?.path == target)
            }
        }
    }

    /// The FUSE request carries the calling thread's id; the line must still
    /// name the process (iOS logs name processes), not the thread.
    @Test("A denial made by a named thread names the process, not the thread")
    func processNotThread() throws {
        try withRulesContainer { m in
            let call = RulesThreadCall(path: m.inbox + "/from-a-thread")
            call.runOnNamedThread("asfs-worker")
            #expect(call.code == EPERM)
            let process = readFileText("/proc/self/comm").split(separator: "\n").first.map(String.init) ?? "?"
            let line = m.parsedDenials().first
            #expect(line?.process == process, "named \(line?.process ?? "nothing"), the process is \(process)")
            #expect(line.map { $0.pid == getpid() || $0.pid == call.threadID } == true, "\(m.denialLines())")
        }
    }
}

/// mkdir on a thread of its own with a name of its own.
final class RulesThreadCall: @unchecked Sendable {
    let path: String
    var code: Int32 = 0
    var threadID: Int32 = 0
    var name = ""

    init(path: String) { self.path = path }

    func runOnNamedThread(_ name: String) {
        self.name = name
        var thread = pthread_t()
        let argument = Unmanaged.passRetained(self).toOpaque()
        let started = pthread_create(&thread, nil, { argument in
            let call = Unmanaged<RulesThreadCall>.fromOpaque(argument!).takeRetainedValue()
            try? writeFile("/proc/thread-self/comm", call.name)
            // /proc/thread-self is "<pid>/task/<tid>".
            var buffer = [CChar](repeating: 0, count: 64)
            let n = readlink("/proc/thread-self", &buffer, buffer.count - 1)
            if n > 0 {
                let text = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                call.threadID = Int32(text.split(separator: "/").last ?? "") ?? 0
            }
            call.code = RulesSys.mkdir(call.path)
            return nil
        }, argument)
        if started == 0 { pthread_join(thread, nil) } else { Unmanaged<RulesThreadCall>.fromOpaque(argument).release() }
    }
}
