// Mounts that a rule test starts, stops, kills and restarts itself (T2, T4,
// L1-L4), where the fixture's one-mount-per-closure does not fit.
//
//   try withRulesMount { m in
//       try m.mountForeground()
//       ...
//       m.signalDriver(SIGKILL)
//   }   // always: unmounted (lazily if need be), drivers gone, folder removed
//
// Layout: /tmp/asfs-rules-XXXXXX/{backing,mnt,driver-N.stderr}. Drivers run
// in the background (`mount` without --foreground) are found by their command
// line in /proc and stopped by pid at the end if they are still there.

import Glibc
import Testing

final class RulesMount {
    let root: String
    let backing: String
    let mountpoint: String
    let appName = "TestApp"
    /// The driver started with --foreground, while it runs.
    private(set) var foregroundPID: pid_t?
    private(set) var foregroundStatus: ExitStatus?
    /// The stderr file of the latest foreground driver.
    private(set) var stderrPath: String
    private var starts = 0

    init(layOut: Bool = true) throws {
        root = try makeTemporaryDirectory(prefix: "asfs-rules")
        backing = root + "/backing"
        mountpoint = root + "/mnt"
        stderrPath = root + "/driver-0.stderr"
        if layOut { try layOutContainer(at: backing, appName: appName) }
        try makeDirectory(mountpoint)
    }

    var isMounted: Bool { isFuseMount(mountpoint) }
    func backingPath(_ relative: String) -> String { relative.isEmpty ? backing : backing + "/" + relative }
    func path(_ relative: String) -> String { mountpoint + "/" + relative }
    func stderrText() -> String { readFileText(stderrPath) }

    /// Starts `appsandboxfs mount BACKING MNT --app-name TestApp --foreground EXTRA`
    /// and waits (30 s at most) until the mount is there.
    func mountForeground(_ extra: [String] = []) throws {
        starts += 1
        stderrPath = root + "/driver-\(starts).stderr"
        try writeFile(stderrPath, "")
        if access(root + "/driver.stdout", F_OK) != 0 { try writeFile(root + "/driver.stdout", "") }
        let argv = [Binaries.appsandboxfs, "mount", backing, mountpoint, "--app-name", appName, "--foreground"] + extra
        let pid = try spawn(argv, stdin: "/dev/null", stdout: root + "/driver.stdout", stderr: stderrPath)
        foregroundPID = pid
        foregroundStatus = nil
        let deadline = monotonicNow() + 30
        while !isMounted {
            if let status = waitForExit(pid, timeout: 0) {
                foregroundPID = nil
                foregroundStatus = status
                throw SupportError("appsandboxfs exited (\(status)) before mounting: \(argv.joined(separator: " "))\n"
                                   + tail(stderrText()))
            }
            if monotonicNow() > deadline {
                throw SupportError("appsandboxfs did not mount within 30 s\n" + tail(stderrText()))
            }
            usleep(10_000)
        }
        // Serving requests means started: statfs always reaches the driver.
        let code = rulesStatfs(mountpoint)
        if code != 0 { throw SupportError("statfs of the new mount: \(posixError(code))") }
    }

    /// Runs `appsandboxfs ARGS` to its end (the background `mount`, `unmount`, ...).
    func run(_ arguments: [String], cwd: String? = nil) -> (status: Int32, stdout: String, stderr: String) {
        runProcess([Binaries.appsandboxfs] + arguments, cwd: cwd, timeout: 60)
    }

    /// `appsandboxfs mount BACKING MNT --app-name TestApp EXTRA` in its default,
    /// background mode: returns once the mount is ready (or failed).
    func mountBackground(_ extra: [String] = []) -> (status: Int32, stdout: String, stderr: String) {
        run(["mount", backing, mountpoint, "--app-name", appName, "--log", root + "/background.log"] + extra)
    }
    // (A background mount returns only once the driver says it is ready,
    // after its start-up: no waiting needed.)

    func signalDriver(_ signal: Int32) {
        if let foregroundPID { kill(foregroundPID, signal) }
    }

    /// Waits for the foreground driver to end; nil if it is still running.
    @discardableResult
    func waitForDriverExit(timeout: Double = 15) -> ExitStatus? {
        guard let pid = foregroundPID else { return foregroundStatus }
        if let status = waitForExit(pid, timeout: timeout) {
            foregroundPID = nil
            foregroundStatus = status
        }
        return foregroundStatus
    }

    /// The pids of drivers serving this mountpoint (or this backing
    /// directory), by their command lines, whoever started them.
    func driverPIDs() -> [pid_t] {
        guard let proc = opendir("/proc") else { return [] }
        defer { closedir(proc) }
        var found: [pid_t] = []
        while let entry = readdir(proc) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard let pid = pid_t(name), pid != getpid() else { continue }
            let argv = (readFileBytes("/proc/\(pid)/cmdline") ?? []).split(separator: 0)
                .map { String(decoding: $0, as: UTF8.self) }
            guard argv.count > 2, argv[0].hasSuffix("appsandboxfs"), argv[1] == "mount" else { continue }
            var cwd = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink("/proc/\(pid)/cwd", &cwd, cwd.count - 1)
            let directory = n > 0 ? String(decoding: cwd[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "/"
            let absolute = argv.map { $0.hasPrefix("/") ? $0 : directory + "/" + $0 }
            if absolute.contains(mountpoint) || absolute.contains(backing) { found.append(pid) }
        }
        return found
    }

    /// Waits until no driver serves this mountpoint; false if one still does.
    func waitUntilNoDriver(timeout: Double = 15) -> Bool {
        let deadline = monotonicNow() + timeout
        while true {
            // A zombie still has a /proc entry but an empty cmdline.
            if driverPIDs().isEmpty { return true }
            if monotonicNow() > deadline { return false }
            usleep(20_000)
        }
    }

    /// Unmounts whatever is still there, stops our drivers, removes the folder.
    func cleanUp(sourceLocation: SourceLocation = #_sourceLocation) {
        if isMounted { _ = runProcess(["fusermount3", "-u", mountpoint], timeout: 15) }
        if isMounted { _ = runProcess(["fusermount3", "-u", "-z", mountpoint], timeout: 15) }
        if let pid = foregroundPID {
            if waitForExit(pid, timeout: 10) == nil {
                kill(pid, SIGKILL)
                _ = waitForExit(pid, timeout: 15)
            }
            foregroundPID = nil
        }
        if !waitUntilNoDriver(timeout: 10) {
            for pid in driverPIDs() { kill(pid, SIGKILL) }
            _ = waitUntilNoDriver(timeout: 10)
        }
        if isMounted { _ = runProcess(["umount", "-l", mountpoint], timeout: 15) }
        if isMounted {
            Issue.record("\(mountpoint) is still mounted; leaving \(root)", sourceLocation: sourceLocation)
        } else {
            removeTree(root)
        }
    }
}

/// A fresh RulesMount for `body`, always cleaned up after.
func withRulesMount<T>(layOut: Bool = true, sourceLocation: SourceLocation = #_sourceLocation,
                       _ body: (RulesMount) throws -> T) throws -> T {
    let mount = try RulesMount(layOut: layOut)
    defer { mount.cleanUp(sourceLocation: sourceLocation) }
    return try body(mount)
}

/// A folder outside any container, with a few files, that a link in a
/// container can point at (T3, E2, E3): its snapshot must never change.
/// Removed at the end of `body`.
func withRulesSentinel<T>(_ body: (String) throws -> T) throws -> T {
    let sentinel = try makeTemporaryDirectory(prefix: "asfs-rules-sentinel")
    defer { removeTree(sentinel) }
    try writeFile(sentinel + "/precious.txt", "do not touch\n", mode: 0o644)
    try makeDirectory(sentinel + "/folder", mode: 0o755)
    try writeFile(sentinel + "/folder/inner.txt", "inner\n", mode: 0o600)
    try makeDirectory(sentinel + "/readonly", mode: 0o555)
    return try body(sentinel)
}
