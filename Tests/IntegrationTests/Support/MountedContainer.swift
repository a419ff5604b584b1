// The mount fixture of the integration tests: the project's own
// AppSandboxTesting fixture, seen through the small API these tests call. A
// fresh container in a temporary folder, mounted by the real driver for the
// length of one closure, and always unmounted after.
//
//   try withMountedContainer { mounted in
//       let dir = try mounted.scratch()          // a fresh folder in Documents
//       ...
//   }
//
// Layout (all under one /tmp/appsandboxfs-test-XXXXXX, removed at the end):
//   container/    the backing directory the driver serves
//   mnt/          the mountpoint
//   denials.log   the denial lines; driver.log: what the driver printed

import AppSandboxTesting
import Glibc
import MountInfo
import Synchronization
import Testing

/// One mounted container: a thin layer over the project's own fixture
/// (`AppSandboxTesting.MountedContainer`), which lays out, mounts, watches
/// and tears down; this adds what the integration tests call (scratch
/// folders, the driver's output, issues recorded at the caller's line).
///
/// The backing directory is the fixture's: change it only before the mount
/// (`prepare`). The driver lets the kernel cache names and attributes for a
/// day, so a change made in it behind the driver's back while mounted may
/// stay invisible through the mount; a test that must do so mounts with
/// `extraArguments: ["--cache-timeout", "0"]`.
final class MountedContainer: Sendable {
    let fixture: AppSandboxTesting.MountedContainer
    private let scratchCount = Mutex(0)

    fileprivate init(_ fixture: AppSandboxTesting.MountedContainer) { self.fixture = fixture }

    /// Absolute mountpoint.
    var mountpoint: String { fixture.mountpoint }
    /// Absolute backing directory.
    var backing: String { fixture.backing }
    var appName: String { fixture.appName }
    var driverPID: pid_t { fixture.driverPID }
    /// The temporary folder that holds backing, mountpoint and logs.
    var root: String { fixture.root }
    /// Everything the driver printed (standard output and error).
    var stderrPath: String { fixture.driverLogPath }

    // MARK: Paths through the mount

    var documents: String { fixture.documents }
    var inbox: String { fixture.inbox }
    var library: String { fixture.library }
    var applicationSupport: String { fixture.applicationSupport }
    var caches: String { fixture.caches }
    var preferences: String { fixture.preferences }
    var tmp: String { fixture.tmp }
    /// The bundle, `<AppName>.app`.
    var bundle: String { fixture.bundle }

    /// A path through the mount, relative to its root ("Documents/a.txt").
    func path(_ relative: String) -> String { mountpoint + "/" + relative }

    /// The same relative path in the backing directory.
    func backingPath(_ relative: String) -> String { fixture.backingPath(relative) }

    /// A fresh, empty, uniquely named folder in Documents (mode 0755, owned by
    /// root), made through the mount: a plain read-write POSIX folder.
    func scratch(_ name: String = #function) throws -> String {
        let n = scratchCount.withLock { count in
            count += 1
            return count
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

    /// What the driver printed so far (its messages and, as on standard
    /// error, each denial line).
    func stderrText() -> String { fixture.driverLog }
    func stdoutText() -> String { fixture.driverLog }

    /// The denial lines ("Sandbox: ... deny(1) ...") the driver wrote to
    /// standard error so far (a test may send the denial log elsewhere
    /// with its own --denial-log).
    func denialLines() -> [String] {
        stderrText().split(separator: "\n").map(String.init).filter { $0.contains(" deny(1) ") }
    }

    /// Whether /proc/self/mountinfo shows the container at the mountpoint.
    var isMounted: Bool { fixture.isMounted }

    /// Sends the driver a signal (SIGTERM to test a clean shutdown, say).
    func signalDriver(_ signal: Int32) { fixture.signalDriver(signal) }

    /// Waits for the driver to end, up to `timeout` seconds, and says how it
    /// ended (nil: still running). A test that stops the driver itself calls
    /// this; the fixture then does not count the exit as a failure.
    func waitForDriverExit(timeout: Double = 15) -> ExitStatus? { fixture.waitForDriverExit(timeout: timeout) }

    /// Unmounts, stops the driver and removes the temporary folder (unless
    /// the mount would not go away); records an issue for anything abnormal.
    fileprivate func finish(sourceLocation: SourceLocation) {
        do {
            try fixture.unmount()
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
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
/// output). Records an issue when the driver dies during `body`, does not
/// exit cleanly (status 0) on the unmount, or the unmount fails.
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
    /// Lays out the container (`appsandboxfs init`, then the bundle's
    /// Info.plist and program), starts the driver and waits for the mount.
    fileprivate static func mount(extraArguments: [String], parent: String, prepare: (String) throws -> Void) throws
        -> MountedContainer
    {
        let options = AppSandboxTesting.MountedContainer.Options(
            appName: "TestApp", extraArguments: extraArguments, appsandboxfs: Binaries.appsandboxfs,
            temporaryDirectory: parent)
        do {
            return MountedContainer(try AppSandboxTesting.MountedContainer.mount(options) { backing in
                try fillBundle(at: backing + "/TestApp.app", appName: "TestApp")
                try prepare(backing)
            })
        } catch let error as FixtureError {
            throw SupportError(error.description)
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
    try fillBundle(at: backing + "/\(appName).app", appName: appName)
}

/// A bundle's Info.plist and program, as the fixture's containers have them.
func fillBundle(at bundle: String, appName: String) throws {
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
    try writeFile(bundle + "/Info.plist", plist, mode: 0o644)
    try writeFile(bundle + "/app-binary", "#!/bin/sh\necho \(appName)\n", mode: 0o755)
}

/// Whether /proc/self/mountinfo lists a FUSE file system (type fuse or
/// fuse.*) mounted at exactly this path.
func isFuseMount(_ path: String) -> Bool {
    MountTable.entry(at: path)?.fsType.hasPrefix("fuse") == true
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
