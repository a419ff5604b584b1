// The mount fixture: a fresh container in a temporary folder, mounted by the
// real driver for the length of one closure, and always unmounted after.
//
//   try withMountedContainer { mounted in
//       let dir = try mounted.scratch()          // a fresh folder in Documents
//       ...
//   }
//
// Layout (all under one /tmp/asfs-tests-XXXXXX, removed at the end):
//   backing/   the container the driver serves
//   mnt/       the mountpoint
//   driver.stdout, driver.stderr   what the driver printed

import Glibc
import Synchronization
import Testing

/// One mounted container. Tests read paths from it; the fixture owns the
/// driver process and unmounts it.
final class MountedContainer: Sendable {
    /// Absolute mountpoint.
    let mountpoint: String
    /// Absolute backing directory.
    let backing: String
    let appName: String
    let driverPID: pid_t
    /// The temporary folder that holds backing, mountpoint and logs.
    let root: String
    let stdoutPath: String
    let stderrPath: String

    private struct DriverState {
        /// Set once the driver has been reaped.
        var exit: ExitStatus?
        /// The test stopped the driver on purpose (waitForDriverExit).
        var exitExpected = false
        var scratchCount = 0
    }
    private let state = Mutex(DriverState())

    fileprivate init(mountpoint: String, backing: String, appName: String, driverPID: pid_t, root: String,
                     stdoutPath: String, stderrPath: String) {
        self.mountpoint = mountpoint
        self.backing = backing
        self.appName = appName
        self.driverPID = driverPID
        self.root = root
        self.stdoutPath = stdoutPath
        self.stderrPath = stderrPath
    }

    // MARK: Paths through the mount

    var documents: String { mountpoint + "/Documents" }
    var inbox: String { mountpoint + "/Documents/Inbox" }
    var library: String { mountpoint + "/Library" }
    var applicationSupport: String { mountpoint + "/Library/Application Support" }
    var caches: String { mountpoint + "/Library/Caches" }
    var preferences: String { mountpoint + "/Library/Preferences" }
    var tmp: String { mountpoint + "/tmp" }
    /// The bundle, `<AppName>.app`.
    var bundle: String { mountpoint + "/" + appName + ".app" }

    /// A path through the mount, relative to its root ("Documents/a.txt").
    func path(_ relative: String) -> String { mountpoint + "/" + relative }

    /// The same relative path in the backing directory.
    func backingPath(_ relative: String) -> String {
        relative.isEmpty ? backing : backing + "/" + relative
    }

    /// A fresh, empty, uniquely named folder in Documents (mode 0755, owned by
    /// root), made through the mount: a plain read-write POSIX folder.
    func scratch(_ name: String = #function) throws -> String {
        let n = state.withLock { s in
            s.scratchCount += 1
            return s.scratchCount
        }
        let path = documents + "/" + plainName(name) + "-\(n)"
        guard mkdir(path, 0o755) == 0 else {
            throw SupportError("scratch: mkdir \(path): \(posixError(errno))")
        }
        guard chmod(path, 0o755) == 0 else {
            throw SupportError("scratch: chmod \(path): \(posixError(errno))")
        }
        return path
    }

    // MARK: The driver

    /// What the driver wrote to standard error so far (the denial log).
    func stderrText() -> String { readFileText(stderrPath) }
    func stdoutText() -> String { readFileText(stdoutPath) }

    /// The denial-log lines ("Sandbox: ... deny(1) ...") the driver wrote so far.
    func denialLines() -> [String] {
        stderrText().split(separator: "\n").map(String.init).filter { $0.contains(" deny(1) ") }
    }

    /// Whether /proc/self/mountinfo shows a FUSE mount at the mountpoint.
    var isMounted: Bool { isFuseMount(mountpoint) }

    /// Sends the driver a signal (SIGTERM to test a clean shutdown, say).
    func signalDriver(_ signal: Int32) {
        kill(driverPID, signal)
    }

    /// Waits for the driver to end, up to `timeout` seconds, and says how it
    /// ended (nil: still running). A test that stops the driver itself calls
    /// this; the fixture then does not count the exit as a failure.
    func waitForDriverExit(timeout: Double = 15) -> ExitStatus? {
        state.withLock { s in
            s.exitExpected = true
            if s.exit == nil { s.exit = waitForExit(driverPID, timeout: timeout) }
            return s.exit
        }
    }

    /// Unmounts and stops the driver; records an issue for anything abnormal.
    /// Returns whether the mountpoint is free afterwards.
    fileprivate func tearDown(sourceLocation: SourceLocation) -> Bool {
        let (earlyExit, expected) = state.withLock { s in
            if s.exit == nil { s.exit = waitForExit(driverPID, timeout: 0) }
            return (s.exit, s.exitExpected)
        }
        if let earlyExit, !expected {
            Issue.record("appsandboxfs ended during the test (\(earlyExit)); its stderr:\n\(tail(stderrText()))",
                         sourceLocation: sourceLocation)
        }

        var unmountedNormally = earlyExit == nil
        if isMounted {
            let result = runProcess(["fusermount3", "-u", mountpoint], timeout: 15)
            if result.status != 0 {
                unmountedNormally = false
                Issue.record("fusermount3 -u \(mountpoint) failed (\(result.status)): \(result.stderr) (a descriptor or working directory still inside the mount?); unmounting lazily",
                             sourceLocation: sourceLocation)
                _ = runProcess(["fusermount3", "-u", "-z", mountpoint], timeout: 15)
            }
        }

        if earlyExit == nil {
            var status = waitForExit(driverPID, timeout: 15)
            if status == nil {
                Issue.record("appsandboxfs did not exit within 15 s of the unmount; killing it; its stderr:\n\(tail(stderrText()))",
                             sourceLocation: sourceLocation)
                kill(driverPID, SIGKILL)
                status = waitForExit(driverPID, timeout: 15)
            } else if unmountedNormally, let status, status != .exited(0) {
                Issue.record("appsandboxfs ended with \(status) on a normal unmount; its stderr:\n\(tail(stderrText()))",
                             sourceLocation: sourceLocation)
            }
            state.withLock { $0.exit = status }
        }

        if isMounted {
            _ = runProcess(["umount", "-l", mountpoint], timeout: 15)
        }
        return !isMounted
    }
}

/// Lays out a fresh container in a new temporary folder (in `parent`: /tmp,
/// or `outsideTemporaryFolders` for `run --confine`), mounts it with
///   <bin>/appsandboxfs mount <backing> <mountpoint> --app-name TestApp --foreground [extraArguments]
/// runs `body`, and always unmounts (also when `body` throws or an
/// expectation fails), then removes the temporary folders. `prepare` may
/// change the backing directory before the mount.
///
/// Throws when the driver is missing or does not mount within 30 s (with its
/// stderr). Records an issue when the driver dies during `body`, does not exit
/// cleanly (status 0) on the unmount, or the unmount fails.
func withMountedContainer<T>(
    extraArguments: [String] = [],
    in parent: String = "/tmp",
    prepare: (String) throws -> Void = { _ in },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (MountedContainer) throws -> T
) throws -> T {
    let container = try MountedContainer.mount(extraArguments: extraArguments, parent: parent, prepare: prepare)
    defer { container.finish(sourceLocation: sourceLocation) }
    return try body(container)
}

/// The same for an async body (task groups, `await`).
func withMountedContainer<T>(
    extraArguments: [String] = [],
    in parent: String = "/tmp",
    prepare: (String) throws -> Void = { _ in },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (MountedContainer) async throws -> T
) async throws -> T {
    let container = try MountedContainer.mount(extraArguments: extraArguments, parent: parent, prepare: prepare)
    defer { container.finish(sourceLocation: sourceLocation) }
    return try await body(container)
}

extension MountedContainer {
    /// Lays out the container, starts the driver and waits for the mount.
    fileprivate static func mount(extraArguments: [String], parent: String, prepare: (String) throws -> Void) throws
        -> MountedContainer
    {
        let appName = "TestApp"
        let driver = Binaries.appsandboxfs
        guard access(driver, X_OK) == 0 else {
            throw SupportError("no appsandboxfs at \(driver) (build it, or set APPSANDBOXFS_BIN)")
        }
        let root = try makeTemporaryDirectory(in: parent)
        var started = false
        defer { if !started { removeTree(root) } }

        let backing = root + "/backing", mountpoint = root + "/mnt"
        try layOutContainer(at: backing, appName: appName)
        try makeDirectory(mountpoint)
        try prepare(backing)

        let stdoutPath = root + "/driver.stdout", stderrPath = root + "/driver.stderr"
        try writeFile(stdoutPath, "")
        try writeFile(stderrPath, "")
        let argv = [driver, "mount", backing, mountpoint, "--app-name", appName, "--foreground"] + extraArguments
        let pid = try spawn(argv, stdin: "/dev/null", stdout: stdoutPath, stderr: stderrPath)

        let deadline = monotonicNow() + 30
        while !isFuseMount(mountpoint) {
            if let status = waitForExit(pid, timeout: 0) {
                throw SupportError("appsandboxfs exited (\(status)) before mounting: \(argv.joined(separator: " "))\n"
                    + tail(readFileText(stderrPath)))
            }
            if monotonicNow() > deadline {
                kill(pid, SIGKILL)
                _ = waitForExit(pid, timeout: 15)
                if isFuseMount(mountpoint) { _ = runProcess(["umount", "-l", mountpoint], timeout: 15) }
                throw SupportError("appsandboxfs did not mount within 30 s: \(argv.joined(separator: " "))\n"
                    + tail(readFileText(stderrPath)))
            }
            usleep(10_000)
        }
        started = true
        return MountedContainer(
            mountpoint: mountpoint, backing: backing, appName: appName, driverPID: pid, root: root,
            stdoutPath: stdoutPath, stderrPath: stderrPath)
    }

    /// Unmounts, then removes the temporary folders, unless the mount would
    /// not go away (never delete under a live mount).
    fileprivate func finish(sourceLocation: SourceLocation) {
        if tearDown(sourceLocation: sourceLocation) {
            removeTree(root)
        } else {
            Issue.record("\(mountpoint) is still mounted; leaving \(root) in place", sourceLocation: sourceLocation)
        }
    }
}

/// The container tree the fixture mounts: the system folders (0755), and a
/// bundle with an Info.plist and an executable.
func layOutContainer(at backing: String, appName: String) throws {
    try makeDirectory(backing)
    for folder in ["Documents", "Documents/Inbox", "Library", "Library/Application Support",
                   "Library/Caches", "Library/Preferences", "tmp", "\(appName).app"] {
        try makeDirectory(backing + "/" + folder)
    }
    let plist = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
            <key>CFBundleExecutable</key><string>app-binary</string>
            <key>CFBundleIdentifier</key><string>com.example.\(appName)</string>
            <key>CFBundleName</key><string>\(appName)</string>
        </dict>
        </plist>

        """
    try writeFile(backing + "/\(appName).app/Info.plist", plist, mode: 0o644)
    try writeFile(backing + "/\(appName).app/app-binary", "#!/bin/sh\necho \(appName)\n", mode: 0o755)
}

/// Whether /proc/self/mountinfo lists a FUSE file system (type fuse or
/// fuse.*) mounted at exactly this path.
func isFuseMount(_ path: String) -> Bool {
    for line in readFileText("/proc/self/mountinfo").split(separator: "\n") {
        // "36 35 0:52 / /tmp/x/mnt rw,nosuid - fuse.appsandboxfs appsandboxfs rw,..."
        let halves = line.split(separator: " - ", maxSplits: 1)
        guard halves.count == 2 else { continue }
        let fields = halves[0].split(separator: " ")
        guard fields.count >= 5, unescapeMountField(fields[4]) == path else { continue }
        if halves[1].hasPrefix("fuse") { return true }
    }
    return false
}

/// mountinfo writes space, tab, newline and backslash as \040 \011 \012 \134.
private func unescapeMountField(_ field: Substring) -> String {
    var out: [UInt8] = []
    var bytes = Array(field.utf8)[...]
    while let b = bytes.popFirst() {
        if b == UInt8(ascii: "\\"), bytes.count >= 3,
           let v = UInt8(String(decoding: bytes.prefix(3), as: UTF8.self), radix: 8) {
            out.append(v)
            bytes = bytes.dropFirst(3)
        } else {
            out.append(b)
        }
    }
    return String(decoding: out, as: UTF8.self)
}

/// A name safe for a folder: "testRenames()" -> "testRenames".
private func plainName(_ name: String) -> String {
    let kept = name.prefix { $0 != "(" }.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "_" }
    return kept.isEmpty ? "scratch" : String(kept.prefix(80))
}

/// The last lines of a log, for a failure message.
func tail(_ text: String, lines: Int = 40) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
}
