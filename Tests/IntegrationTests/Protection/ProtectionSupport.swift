// Helpers for the data protection tests (P1-P9): the lock screen verbs run
// as a user would run them, and system calls that answer an errno.

import Glibc
import Testing

let classA = "NSFileProtectionComplete"
let classB = "NSFileProtectionCompleteUnlessOpen"
let classC = "NSFileProtectionCompleteUntilFirstUserAuthentication"
let classD = "NSFileProtectionNone"

extension MountedContainer {
    /// `appsandboxfs VERB MOUNTPOINT EXTRA` (lock, unlock, reboot).
    /// The driver publishes its status record and control socket just
    /// after the mount appears (which is all the fixture waits for): wait
    /// for the socket before the first verb.
    @discardableResult
    func device(_ verb: String, _ extra: [String] = []) -> (status: Int32, stdout: String, stderr: String) {
        _ = Protect.waitUntil(timeout: 30) { access(ControlSocket.path(driverPID: driverPID), F_OK) == 0 }
        return runProcess([Binaries.appsandboxfs, verb, mountpoint] + extra, timeout: 60)
    }

    /// Locks (grace 0 unless told), expecting success.
    func lock(grace: Double = 0, sourceLocation: SourceLocation = #_sourceLocation) {
        let result = device("lock", ["--grace", String(grace)])
        #expect(result.status == 0 && result.stdout == "locked\n", "lock: \(result.stderr)", sourceLocation: sourceLocation)
    }

    func unlock(sourceLocation: SourceLocation = #_sourceLocation) {
        let result = device("unlock")
        #expect(result.status == 0 && result.stdout == "unlocked\n", "unlock: \(result.stderr)", sourceLocation: sourceLocation)
    }

    func reboot(sourceLocation: SourceLocation = #_sourceLocation) {
        let result = device("reboot")
        #expect(result.status == 0 && result.stdout == "before-first-unlock\n", "reboot: \(result.stderr)",
                sourceLocation: sourceLocation)
    }

    /// The `DataProtection:` lines the driver wrote so far.
    func protectionLines() -> [String] {
        stderrText().split(separator: "\n").map(String.init).filter { $0.hasPrefix("DataProtection: ") }
    }
}

/// System calls for the protection tests: 0 or the errno.
enum Protect {
    /// The class through the mount (getxattr NSFileProtectionKey), or the errno's name.
    static func classOf(_ path: String) -> String {
        switch RulesSys.getxattr(path, "NSFileProtectionKey") {
        case .success(let bytes): String(decoding: bytes, as: UTF8.self)
        case .failure(let error): error.description
        }
    }

    static func setClass(_ path: String, _ protection: String) -> Int32 {
        RulesSys.setxattr(path, "NSFileProtectionKey", Array(protection.utf8))
    }

    /// open(2) keeping the descriptor: the fd, or the errno.
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644) -> Result<Int32, RulesErrno> {
        let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
        return fd >= 0 ? .success(fd) : .failure(RulesErrno(errno))
    }

    static func pread(_ fd: Int32, _ count: Int, at offset: off_t = 0) -> Result<[UInt8], RulesErrno> {
        var buffer = [UInt8](repeating: 0, count: count)
        let n = buffer.withUnsafeMutableBytes { Glibc.pread(fd, $0.baseAddress, count, offset) }
        return n >= 0 ? .success(Array(buffer[0..<n])) : .failure(RulesErrno(errno))
    }

    static func pwrite(_ fd: Int32, _ text: String, at offset: off_t = 0) -> Int32 {
        let bytes = Array(text.utf8)
        let n = bytes.withUnsafeBytes { Glibc.pwrite(fd, $0.baseAddress, bytes.count, offset) }
        return n == bytes.count ? 0 : (n < 0 ? errno : EIO)
    }

    static func fsync(_ fd: Int32) -> Int32 { RulesSys.code { Glibc.fsync(fd) } }
    static func fallocate(_ fd: Int32, length: Int64) -> Int32 { RulesSys.code { RulesLinux.fallocate(fd, 0, 0, length) } }
    static func ftruncate(_ fd: Int32, _ length: off_t) -> Int32 { RulesSys.code { Glibc.ftruncate(fd, length) } }

    /// Reads a whole file through the mount: its text, or the errno's name.
    static func cat(_ path: String) -> String {
        switch open(path, O_RDONLY) {
        case .failure(let error): return error.description
        case .success(let fd):
            defer { close(fd) }
            switch pread(fd, 1 << 16) {
            case .success(let bytes): return String(decoding: bytes, as: UTF8.self)
            case .failure(let error): return error.description
            }
        }
    }

    /// Polls `condition` every 10 ms until it holds or `timeout` seconds pass.
    static func waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = monotonicNow() + timeout
        while !condition() {
            if monotonicNow() > deadline { return false }
            usleep(10_000)
        }
        return true
    }
}

extension Result where Failure == RulesErrno {
    /// "ok" or the errno's name.
    var outcome: String { rulesOutcome }
}

/// The driver's control socket spoken to directly (docs/protection.md,
/// "The control socket"), for the race test: a flip then costs a round trip,
/// not the start of a program.
enum ControlSocket {
    /// Sends one request line to the driver `pid`; its answer line ("ok locked").
    static func path(driverPID pid: pid_t) -> String {
        stateDirectory + "/\(pid).control"
    }

    /// The drivers' state folder, chosen as `StatusFile.directory` chooses
    /// it: a user other than root has one of their own (issue 31).
    static var stateDirectory: String {
        let set = { (name: String) in environment(name).flatMap { $0.isEmpty ? nil : $0 } }
        if let override = set("APPSANDBOXFS_STATE_DIR") { return override }
        if geteuid() == 0 { return "/run/appsandboxfs" }
        return set("XDG_RUNTIME_DIR").map { $0 + "/appsandboxfs" } ?? "/tmp/appsandboxfs-\(geteuid())"
    }

    static func send(_ request: String, driverPID pid: pid_t) -> String {
        _ = Protect.waitUntil(timeout: 30) { access(Self.path(driverPID: pid), F_OK) == 0 }
        let path = Array(Self.path(driverPID: pid).utf8)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return "socket: \(posixError(errno))" }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path.prefix(raw.count - 1))
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { return "connect: \(posixError(errno))" }
        let line = Array((request + "\n").utf8)
        guard line.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == line.count else { return "write: \(posixError(errno))" }
        var answer: [UInt8] = []
        var byte: UInt8 = 0
        while Glibc.read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { answer.append(byte) }
        return String(decoding: answer, as: UTF8.self)
    }
}
