import ContainerFiles
import Foundation
// The standard folders' one definition: `path(.documents)`, `Zone.folder`.
@_exported import enum SandboxPolicy.ContainerFolder
import Locking
import POSIXHelpers
import Spawning
#if os(Linux)
internal import FoundationBridge
import MountInfo
#endif

/// An iOS app container mounted by the real appsandboxfs driver, for a test.
///
/// Each one lives in a fresh temporary folder of its own:
///
///     /tmp/appsandboxfs-test-XXXXXX/
///       container/     the backing directory (a fresh container, or a copy of a template)
///       mnt/           the mountpoint: what the code under test uses
///       denials.log    the denial log (`denials()`)
///       driver.log     what the driver printed (`driverLog`)
///
/// Use it through `withMountedContainer(_:_:)`, which always unmounts, or
/// call `mount(_:)` and `unmount()` yourself (in XCTest's `setUp` and
/// `tearDown`, say). Unmounting stops the driver, checks that it ended
/// cleanly and removes the temporary folder. A watcher beside each driver
/// unmounts the container if the test process dies without a teardown.
///
/// The driver is a program (`appsandboxfs mount --foreground`) unless
/// `Options.inProcess` asks for the file system to be served by threads of
/// the test process: the same file system and rules, a container's life in
/// a few milliseconds instead of tens (no process is started to lay it out,
/// mount it or unmount it), for suites that take a fresh container per test.
public final class MountedContainer: Sendable {
    /// How to lay out and mount the container.
    public struct Options: Sendable {
        /// The app's name: the bundle is `<appName>.app`. Default: "TestApp"
        /// for a fresh container, the one `*.app` folder of a template.
        public var appName: String?
        /// A backing directory to copy as the container (`cp -a`: modes,
        /// times and extended attributes kept; the template is never
        /// changed). Folders it lacks are created (`mount --create`).
        /// nil: a fresh, empty container (`appsandboxfs init`).
        public var template: String?
        /// A folder to show read-only as the bundle instead of the
        /// container's own (`mount --bundle`): a build output, say.
        public var bundle: String?
        /// Keep tmp's contents at unmount (`--keep-tmp`, rule T4).
        public var keepTmp: Bool
        /// A disk of this size (`--capacity`: "64M", "1G", bytes; rules
        /// Q1-Q3): df shows it and writes past it fail with ENOSPC.
        public var capacity: String?
        /// `-o` options: "ro", "noexec", ...
        public var mountOptions: [String]
        /// More `appsandboxfs mount` arguments ("--cache-timeout", "0").
        public var extraArguments: [String]
        /// The appsandboxfs program. Default: `MountedContainer.locateAppSandboxFS()`.
        public var appsandboxfs: String?
        /// Where the temporary folder is made.
        public var temporaryDirectory: String
        /// Seconds to wait for the mount to be ready.
        public var mountTimeout: Double
        /// Seconds to wait for the driver to end after the unmount.
        public var unmountTimeout: Double
        /// Leave the temporary folder in place after the unmount (to look
        /// at it after a failure). Also set by APPSANDBOXFS_KEEP_TEST_FILES=1.
        public var keepFiles: Bool
        /// Serve the container from threads of the test process instead of a
        /// driver program (see `MountedContainer`): the same file system and
        /// rules, mounted and unmounted without starting a process. What
        /// differs: `driverPID` is the test process's own, `signalDriver`
        /// with SIGTERM, SIGINT, SIGHUP or SIGKILL stops serving (the mount
        /// goes) and other signals are not sent, `lock()` and `unlock()`
        /// change the device state directly, and `capacity` and
        /// `extraArguments` (options of the program) are refused. Works for
        /// any user who can mount, as the program does (not as root: the
        /// mount is that user's alone unless /etc/fuse.conf has
        /// `user_allow_other`, and passthrough is off).
        public var inProcess: Bool
        /// Called with the backing directory before the mount: put files in
        /// place (the Inbox included, which the mount does not let a process
        /// write).
        public var prepare: (@Sendable (_ backing: String) throws -> Void)?
        /// Marks the end of each phase of the mount and the teardown
        /// (bench/FixtureBench).
        @_spi(Bench) public var trace: FixtureTrace?

        public init(
            appName: String? = nil,
            template: String? = nil,
            bundle: String? = nil,
            keepTmp: Bool = false,
            capacity: String? = nil,
            mountOptions: [String] = [],
            extraArguments: [String] = [],
            appsandboxfs: String? = nil,
            temporaryDirectory: String = "/tmp",
            mountTimeout: Double = 30,
            unmountTimeout: Double = 15,
            keepFiles: Bool = false,
            inProcess: Bool = false,
            prepare: (@Sendable (_ backing: String) throws -> Void)? = nil
        ) {
            self.appName = appName
            self.template = template
            self.bundle = bundle
            self.keepTmp = keepTmp
            self.capacity = capacity
            self.mountOptions = mountOptions
            self.extraArguments = extraArguments
            self.appsandboxfs = appsandboxfs
            self.temporaryDirectory = temporaryDirectory
            self.mountTimeout = mountTimeout
            self.unmountTimeout = unmountTimeout
            self.keepFiles = keepFiles || environmentValue("APPSANDBOXFS_KEEP_TEST_FILES") == "1"
            self.inProcess = inProcess
            self.prepare = prepare
        }

        /// A copy of the container `path`.
        public static func template(_ path: String, appName: String? = nil) -> Options {
            Options(appName: appName, template: path)
        }
    }

    /// The folders of a container, each with its own rules: the bundle, and
    /// each standard folder of the one list (`ContainerFolder`).
    public enum Zone: Hashable, Sendable, CaseIterable {
        /// `<App>.app`: read-only (EROFS).
        case bundle
        /// A standard folder: `Documents` and `Library` read-write and
        /// backed up; `Documents/Inbox` read and delete only (EPERM);
        /// `Library/Caches` not backed up; `tmp` emptied at every mount and
        /// unmount.
        case folder(ContainerFolder)

        /// The bundle, then every standard folder, each after its parent.
        public static var allCases: [Zone] { [.bundle] + ContainerFolder.allCases.map(Zone.folder) }

        /// The zone's path below the container root.
        public func relativePath(appName: String) -> String {
            switch self {
            case .bundle: appName + ".app"
            case .folder(let folder): folder.relativePath
            }
        }
    }

    /// The mountpoint: the container's root as the code under test sees it
    /// (what an iOS app gets from NSHomeDirectory()).
    public let mountpoint: String
    /// The backing directory: the same files, without the rules. Read it to
    /// check what the driver stored. Change it before the mount (Options.prepare,
    /// a template), not while mounted: the kernel caches names and attributes
    /// for a day, so a change made behind the driver's back may stay
    /// invisible through the mount. A test that must change it while
    /// mounted mounts with `extraArguments: ["--cache-timeout", "0"]`.
    public let backing: String
    public let appName: String
    /// The temporary folder that holds everything; removed at the unmount.
    public let root: String
    /// The file the driver appends each denial line to.
    public let denialLogPath: String
    /// What the driver printed.
    public let driverLogPath: String
    /// The appsandboxfs program that serves the mount.
    public let appsandboxfs: String

    /// The driver serving the mount now (`updateApp` starts another).
    private let currentDriver: Locked<any ContainerServer>
    var driver: any ContainerServer { currentDriver.withLock { $0 } }
    private let options: Options
    /// The `appsandboxfs mount` command line, to mount again.
    private let arguments: [String]
    private let tornDown = Locked(false)
    /// The test stopped the driver itself (`waitForDriverExit`): its end is
    /// no failure at the teardown.
    private let exitExpected = Locked(false)

    private init(mountpoint: String, backing: String, appName: String, root: String, appsandboxfs: String,
                 driver: any ContainerServer, options: Options, arguments: [String]) {
        self.mountpoint = mountpoint
        self.backing = backing
        self.appName = appName
        self.root = root
        self.denialLogPath = root + "/denials.log"
        self.driverLogPath = root + "/driver.log"
        self.appsandboxfs = appsandboxfs
        self.currentDriver = Locked(driver)
        self.options = options
        self.arguments = arguments
    }

    deinit {
        // A container that was never unmounted (a test that forgot to):
        // unmount it now rather than leave it mounted.
        if let problem = tearDown() {
            FileHandle.standardError.write(Data("AppSandboxTesting: \(problem)\n".utf8))
        }
    }

    // MARK: Paths

    /// The driver's pid (the test process's own with `Options.inProcess`).
    public var driverPID: Int32 { driver.pid }

    public var bundle: String { path(.bundle) }
    public var documents: String { path(.documents) }
    public var inbox: String { path(.inbox) }
    public var library: String { path(.library) }
    public var applicationSupport: String { path(.applicationSupport) }
    public var caches: String { path(.caches) }
    public var preferences: String { path(.preferences) }
    public var tmp: String { path(.tmp) }

    /// A zone's folder through the mount.
    public func path(_ zone: Zone) -> String { path(zone.relativePath(appName: appName)) }

    /// A standard folder through the mount: `path(.documents)`.
    public func path(_ folder: ContainerFolder) -> String { path(.folder(folder)) }

    /// A path through the mount, relative to the container root
    /// ("Documents/notes.txt"); "" is the mountpoint.
    public func path(_ relative: String) -> String {
        relative.isEmpty ? mountpoint : mountpoint + "/" + relative
    }

    /// The same relative path in the backing directory.
    public func backingPath(_ relative: String = "") -> String {
        relative.isEmpty ? backing : backing + "/" + relative
    }

    /// The environment an iOS app sees in this container, as
    /// `appsandboxfs env` prints it (`ContainerEnvironment`): HOME and
    /// CFFIXED_USER_HOME are the mountpoint, TMPDIR its tmp folder with a
    /// trailing slash, XDG_DATA_HOME, XDG_CACHE_HOME and XDG_CONFIG_HOME
    /// Library/Application Support, Library/Caches and Library/Preferences,
    /// so that Foundation on Linux finds each folder where iOS has it.
    public var environment: [String: String] {
        Dictionary(uniqueKeysWithValues: ContainerEnvironment.variables(root: mountpoint).map { ($0.name, $0.value) })
    }

    // MARK: The driver

    /// Whether the kernel's mount table lists the container at its mountpoint.
    public var isMounted: Bool { MountTable.isContainerMount(mountpoint) }

    /// Every denial the driver logged since the mount (or since
    /// `clearDenials()`), oldest first.
    public func denials() -> [Denial] {
        (readText(denialLogPath) ?? "").split(separator: "\n").compactMap { Denial(line: String($0)) }
    }

    /// Forgets the denials logged so far.
    public func clearDenials() {
        truncate(denialLogPath, 0)
    }

    /// What the driver printed so far.
    public var driverLog: String { readText(driverLogPath) ?? "" }

    /// Sends the driver a signal (SIGTERM to test a clean shutdown, say).
    public func signalDriver(_ signal: Int32) { driver.signal(signal) }

    /// Waits up to `timeout` seconds for the driver to end, and says how it
    /// ended (nil: it still runs). A test that stops the driver itself calls
    /// this; the teardown then does not count that end as a failure, and
    /// still unmounts whatever is mounted at the mountpoint then (a second
    /// driver the test started, say).
    public func waitForDriverExit(timeout: Double = 15) -> ExitStatus? {
        exitExpected.withLock { $0 = true }
        guard let code = driver.waitForExit(timeout: timeout) else { return nil }
        return code > 128 ? .signaled(code - 128) : .exited(code)
    }

    /// Runs a program "inside" the container, through `appsandboxfs run`:
    /// with `environment` set.
    public func run(_ arguments: [String], timeout: Double = 120) throws -> ProcessResult {
        try Subprocess.run([appsandboxfs, "run", mountpoint, "--"] + arguments, timeout: timeout)
    }

    /// Runs a program confined to the container, through
    /// `appsandboxfs run --confine` (rules R1-R5): the container read-write,
    /// the rest of the file system read-only (EROFS), /tmp the container's
    /// tmp, the backing directory an empty folder, no capabilities. `user`
    /// is `"UID"` or `"UID:GID"` (an app on a device runs as "501"; the
    /// container's folders must then let that user write). Needs root, and
    /// a container mounted outside /tmp and /var/tmp:
    ///
    ///     try withMountedContainer(.init(temporaryDirectory: MountedContainer.confinableTemporaryDirectory)) { container in
    ///         let result = try container.runConfined(["sh", "-c", "touch /etc/x"])
    ///         // result.standardError: "touch: cannot touch '/etc/x': Read-only file system"
    ///     }
    public func runConfined(_ arguments: [String], user: String? = nil, timeout: Double = 120) throws -> ProcessResult {
        for folder in ["/tmp", "/var/tmp"] where mountpoint.hasPrefix(folder + "/") {
            throw FixtureError("runConfined: \(mountpoint) lies in \(folder), which the confined world replaces with the container's tmp: mount with Options(temporaryDirectory: MountedContainer.confinableTemporaryDirectory)")
        }
        let userOption = user.map { ["--user", $0] } ?? []
        return try Subprocess.run([appsandboxfs, "run", mountpoint, "--confine"] + userOption + ["--"] + arguments,
                                  timeout: timeout)
    }

    /// A folder outside /tmp and /var/tmp for containers that `runConfined`
    /// uses (made when missing).
    public static let confinableTemporaryDirectory = "/var/lib/appsandboxfs-testing"

    /// Puts a copy of `file` into Documents/Inbox, as Mail or AirDrop would
    /// (`appsandboxfs deliver`), and returns its path through the mount
    /// (report-1.pdf when report.pdf is taken).
    @discardableResult
    public func deliver(_ file: String) throws -> String {
        let result = try Subprocess.run([appsandboxfs, "deliver", file, "--to", mountpoint, "--json"])
        guard result.succeeded else {
            throw FixtureError("appsandboxfs deliver \(file) failed (\(result.status)): \(result.standardError)")
        }
        struct Output: Decodable {
            struct Delivery: Decodable { var path: String }
            var delivered: [Delivery]
        }
        guard let path = try? JSONDecoder().decode(Output.self, from: Data(result.standardOutput.utf8)).delivered.first?.path
        else { throw FixtureError("appsandboxfs deliver printed no path: \(result.standardOutput)") }
        return path
    }

    // MARK: Mounting and unmounting

    /// Whether containers can be mounted here: on Linux, with /dev/fuse.
    /// Elsewhere (macOS, where an iOS team also builds its tests) `mount`
    /// throws; skip such tests with
    /// `@Test(.enabled(if: MountedContainer.isSupported))`.
    public static var isSupported: Bool {
        #if os(Linux)
        return access("/dev/fuse", F_OK) == 0
        #else
        return false
        #endif
    }

    /// Whether `runConfined` can work here: containers mount, and this
    /// process is root (the confined world is made with mount namespaces).
    /// Skip a confined test elsewhere with
    /// `@Test(.enabled(if: MountedContainer.canConfine))`.
    public static var canConfine: Bool {
        #if os(Linux)
        return isSupported && geteuid() == 0
        #else
        return false
        #endif
    }

    /// Lays out a container in a fresh temporary folder and mounts it;
    /// returns once the mount is ready. Pair it with `unmount()`.
    public static func mount(_ options: Options = Options()) throws -> MountedContainer {
        try mount(options, preparing: { _ in })
    }

    /// The same, with `prepare` called on the backing directory before the
    /// mount (after `options.prepare`), for a closure that need not escape.
    public static func mount(_ options: Options = Options(), preparing prepare: (_ backing: String) throws -> Void)
        throws -> MountedContainer
    {
        guard isSupported else {
            throw FixtureError("AppSandboxTesting mounts containers only on Linux with /dev/fuse (FUSE); skip this test elsewhere: @Test(.enabled(if: MountedContainer.isSupported))")
        }
        #if os(Linux)
        // F1: the code under test's own Foundation calls for the backup
        // mark and the protection class act on the container (once per
        // process; when it cannot, one line on standard error says so, F2).
        FoundationBridge.install()
        #endif
        options.trace?.mark("Foundation bridge")
        if options.inProcess {
            if options.capacity != nil || !options.extraArguments.isEmpty {
                throw FixtureError("Options.inProcess: capacity and extraArguments are options of the appsandboxfs program; mount without inProcess to use them")
            }
        }
        // In-process, the program is needed only for `run`, `deliver` and
        // `updateApp`: looked up on PATH then if it is not found now.
        let program = options.inProcess ? ((try? locateAppSandboxFS(options.appsandboxfs)) ?? "appsandboxfs")
            : try locateAppSandboxFS(options.appsandboxfs)
        let root = try makeTemporaryFolder(in: options.temporaryDirectory)
        var handedOver = false
        defer { if !handedOver && !options.keepFiles { removeTree(root) } }

        let backing = root + "/container", mountpoint = root + "/mnt"
        guard mkdir(mountpoint, 0o755) == 0 else { throw FixtureError("mkdir \(mountpoint): \(errorText(errno))") }
        var arguments = [program, "mount", backing, mountpoint, "--foreground", "--denial-log", root + "/denials.log"]
        let appName: String
        if let template = options.template {
            guard isFolderOrLinkToOne(template) else { throw FixtureError("template \(template): not a folder") }
            appName = try options.appName ?? appNameOfTemplate(template, bundle: options.bundle)
            guard mkdir(backing, 0o755) == 0 else { throw FixtureError("mkdir \(backing): \(errorText(errno))") }
            let copy = try Subprocess.run(["cp", "-a", "--reflink=auto", "--", template + "/.", backing + "/"])
            guard copy.succeeded else { throw FixtureError("copying the template \(template) failed: \(copy.standardError)") }
            arguments.append("--create")
        } else {
            appName = options.appName ?? "TestApp"
            // What `appsandboxfs init` does, without starting it.
            try FixtureSystem.layOutContainer(backing, appName: appName)
        }
        arguments += ["--app-name", appName]
        if let bundle = options.bundle { arguments += ["--bundle", bundle] }
        if options.keepTmp { arguments.append("--keep-tmp") }
        if let capacity = options.capacity { arguments += ["--capacity", capacity] }
        if !options.mountOptions.isEmpty { arguments += ["-o", options.mountOptions.joined(separator: ",")] }
        arguments += options.extraArguments
        try options.prepare?(backing)
        try prepare(backing)
        for file in [root + "/denials.log", root + "/driver.log"] {
            let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw FixtureError("\(file): \(errorText(errno))") }
            close(fd)
        }
        options.trace?.mark("container laid out")

        let driver = try startDriver(arguments, backing: backing, mountpoint: mountpoint, appName: appName, root: root,
                                     options: options)
        handedOver = true
        return MountedContainer(mountpoint: mountpoint, backing: backing, appName: appName, root: root,
                                appsandboxfs: program, driver: driver, options: options, arguments: arguments)
    }

    /// Starts `appsandboxfs mount ... --foreground` and waits until the
    /// mount is ready; in-process, mounts and starts serving.
    static func startDriver(_ arguments: [String], backing: String, mountpoint: String, appName: String,
                                    root: String, options: Options) throws -> any ContainerServer {
        if options.inProcess {
            return try FixtureSystem.serveInProcess(backing: backing, mountpoint: mountpoint, appName: appName,
                                                    root: root, options: options)
        }
        let driver = try Driver.start(arguments, mountpoint: mountpoint, log: root + "/driver.log")
        let deadline = monotonicSeconds() + options.mountTimeout
        let mountTable = MountTableChanges()
        while !MountTable.isContainerMount(mountpoint) {
            if let status = driver.exitStatus {
                driver.releaseWatcher()
                throw FixtureError("appsandboxfs ended (status \(status)) before the mount was ready: \(arguments.joined(separator: " "))\n"
                    + lastLines(readText(root + "/driver.log") ?? ""))
            }
            if monotonicSeconds() > deadline {
                driver.signal(SIGKILL)
                _ = driver.waitForExit(timeout: 15)
                lazyUnmount(mountpoint)
                driver.releaseWatcher()
                throw FixtureError("appsandboxfs did not mount within \(options.mountTimeout) s: \(arguments.joined(separator: " "))\n"
                    + lastLines(readText(root + "/driver.log") ?? ""))
            }
            // Woken by the next change of the mount table (5 ms at most).
            mountTable.wait(milliseconds: 5)
        }
        options.trace?.mark("driver program mounted")
        return driver
    }

    /// Installs a new build of the app as an App Store update does (rules
    /// U1-U3): unmounts (iOS stops the app), runs `appsandboxfs update
    /// <backing> --bundle <bundle>`, and mounts again at the same place with
    /// the same options. Documents and Library keep their contents; tmp is
    /// emptied by the unmount and mount, as at every launch (T2). Throws
    /// when the driver did not end cleanly, the update failed (the old build
    /// is mounted again then) or the new mount did not come up.
    public func updateApp(bundle: String) throws {
        let old = driver
        let result = Self.unmountRetrying(mountpoint)
        guard !isMounted else {
            throw FixtureError("updateApp: unmounting \(mountpoint) failed: \(result.standardError) (a file or working folder still open in it?)")
        }
        let status = old.waitForExit(timeout: options.unmountTimeout)
        old.releaseWatcher()
        guard status == 0 else {
            throw FixtureError("updateApp: appsandboxfs ended with status \(status.map(String.init) ?? "none") at the unmount")
        }
        let update = try Subprocess.run([appsandboxfs, "update", backing, "--bundle", bundle])
        let next = try Self.startDriver(arguments, backing: backing, mountpoint: mountpoint, appName: appName, root: root,
                                        options: options)
        currentDriver.withLock { $0 = next }
        guard update.succeeded else {
            throw FixtureError("appsandboxfs update \(backing) --bundle \(bundle) failed (\(update.status)): \(update.standardError)")
        }
    }

    /// Unmounts, waits for the driver to end and removes the temporary
    /// folder. Throws, after cleaning up all the same, when something was
    /// wrong: the driver died during the test or did not end cleanly, or the
    /// mount was busy (a file or working folder still open in it). Calling
    /// it again does nothing.
    public func unmount() throws {
        if let problem = tearDown() { throw FixtureError(problem) }
    }

    /// What `withMountedContainer` does when the body threw: clean up, and
    /// only print what went wrong (the body's error is the one to report).
    func unmountAfterFailure() {
        if let problem = tearDown() {
            FileHandle.standardError.write(Data("AppSandboxTesting: \(problem)\n".utf8))
        }
    }

    /// The one teardown: nil when all went well, else what went wrong.
    private func tearDown() -> String? {
        let first = tornDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return nil }
        var problems: [String] = []
        var earlyExit = driver.exitStatus
        if earlyExit == nil && driver.hasExited {
            // The driver died a moment ago (its threads may still be ending).
            // (A mount goes stale, ENOTCONN, only once its driver's end of
            // /dev/fuse is closed: as it dies, not while it serves.)
            earlyExit = driver.waitForExit(timeout: 5)
        }
        let expected = exitExpected.withLock { $0 }
        if let earlyExit, !expected {
            problems.append("appsandboxfs ended during the test (status \(earlyExit))")
        }
        options.trace?.mark("checks before the unmount")
        problems += Self.unmountAndEnd(driver, mountpoint: mountpoint, root: root, unmountTimeout: options.unmountTimeout,
                                       keepFiles: options.keepFiles, unmount: earlyExit == nil || expected,
                                       endedEarly: earlyExit != nil, trace: options.trace)
        guard !problems.isEmpty else { return nil }
        return problems.joined(separator: "; ") + "\nThe driver's last lines:\n" + lastLines(driverLog)
    }

    /// The end of a teardown (a container's or a device's): unmounts
    /// unless `unmount` is false or the mount is stale, stopping the driver
    /// (SIGTERM) when the unmount fails; waits for the driver to end
    /// (killed after `unmountTimeout` seconds); detaches what is still
    /// mounted, releases the watcher, and removes `root` (kept with
    /// `keepFiles`, or when still mounted). What went wrong; a
    /// non-zero exit status counts unless the driver `endedEarly` or the
    /// unmount failed. The mount table is read as few times as the outcome
    /// needs: each read is the whole table, which costs more than the umount2.
    static func unmountAndEnd(_ driver: any ContainerServer, mountpoint: String, root: String, unmountTimeout: Double,
                              keepFiles: Bool, unmount: Bool, endedEarly: Bool, trace: FixtureTrace? = nil) -> [String] {
        var problems: [String] = []
        var clean = !endedEarly
        var mounted = MountTable.isContainerMount(mountpoint)
        if unmount && mounted && !(endedEarly && MountTable.isStale(mountpoint)) {
            let result = unmountRetrying(mountpoint)
            mounted = MountTable.isContainerMount(mountpoint)
            if mounted {
                clean = false
                problems.append("unmounting \(mountpoint) failed: \(result.standardError.trimmingCharacters(in: .whitespacesAndNewlines)) (a file or working folder still open in it?); stopped the driver instead")
                driver.signal(SIGTERM)
            }
        }
        trace?.mark("umount")
        if driver.waitForExit(timeout: unmountTimeout) == nil {
            problems.append("appsandboxfs did not end within \(unmountTimeout) s of the unmount; killed it")
            driver.signal(SIGKILL)
            _ = driver.waitForExit(timeout: 15)
        } else if clean, let status = driver.exitStatus, status != 0 {
            problems.append("appsandboxfs ended with status \(status) at the unmount")
        }
        trace?.mark("serving ended, tmp emptied")
        if mounted {
            lazyUnmount(mountpoint)
            mounted = MountTable.isContainerMount(mountpoint)
        }
        driver.releaseWatcher()
        trace?.mark("watcher released")
        if mounted {
            problems.append("\(mountpoint) is still mounted; left \(root) in place")
        } else if !keepFiles {
            removeTree(root)
        }
        trace?.mark("folder removed")
        return problems
    }

    // MARK: Helpers

    /// The appsandboxfs program: `explicit` if given, else $APPSANDBOXFS_BIN
    /// (the program or its folder), else the one beside the running test
    /// binary (when the test target depends on the appsandboxfs product,
    /// SwiftPM builds it there: .build/debug/appsandboxfs), else the first
    /// on PATH.
    public static func locateAppSandboxFS(_ explicit: String? = nil) throws -> String {
        func program(_ path: String) -> String { isFolderOrLinkToOne(path) ? path + "/appsandboxfs" : path }
        var tried: [String] = []
        if let explicit {
            guard isExecutableFile(program(explicit)) else { throw FixtureError("appsandboxfs: \(program(explicit)) is not an executable") }
            return program(explicit)
        }
        if let variable = environmentValue("APPSANDBOXFS_BIN") {
            guard isExecutableFile(program(variable)) else {
                throw FixtureError("APPSANDBOXFS_BIN=\(variable): \(program(variable)) is not an executable")
            }
            return program(variable)
        }
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            let beside = (executable as NSString).deletingLastPathComponent + "/appsandboxfs"
            if isExecutableFile(beside) { return beside }
            tried.append(beside)
        }
        if let found = Subprocess.onPath("appsandboxfs") { return found }
        tried.append("PATH")
        throw FixtureError("appsandboxfs not found (looked at \(tried.joined(separator: ", "))): build it (swift build --product appsandboxfs), put it on PATH (mount-scripts/setup.sh does), or set APPSANDBOXFS_BIN")
    }

    private static func appNameOfTemplate(_ template: String, bundle: String?) throws -> String {
        let bundles = ((try? FileManager.default.contentsOfDirectory(atPath: template)) ?? [])
            .filter { $0.hasSuffix(".app") && $0.count > 4 && isFolderOrLinkToOne(template + "/" + $0) }
        guard bundles.count == 1 else {
            throw FixtureError("template \(template): cannot tell the app's name (\(bundles.count) *.app folders): give Options.appName")
        }
        return String(bundles[0].dropLast(4))
    }

    static func makeTemporaryFolder(in folder: String) throws -> String {
        if mkdir(folder, 0o755) != 0 && errno != EEXIST {
            throw FixtureError("mkdir \(folder): \(errorText(errno))")
        }
        var template = Array("\(folder)/appsandboxfs-test-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw FixtureError("mkdtemp in \(folder): \(errorText(errno))")
        }
        let path = String(cString: made)
        chmod(path, 0o755)  // so that code run as another user can reach the mount
        return path
    }

    /// Root unmounts with umount2(2) (what fusermount3 does for root, without
    /// a process start); others through fusermount3.
    static func unmountCommand(_ mountpoint: String) -> ProcessResult {
        if let answer = FixtureSystem.unmountAsRoot(mountpoint) { return answer }
        let arguments = Subprocess.onPath("fusermount3").map { [$0, "-u", mountpoint] } ?? ["umount", mountpoint]
        return (try? Subprocess.run(arguments, timeout: 30)) ?? ProcessResult(status: 127, standardOutput: "", standardError: "cannot run \(arguments[0])")
    }

    /// `unmountCommand`, again every 0.1 s (20 times at most) while it
    /// fails and the container is still mounted: a descriptor closed a
    /// moment ago may still hold the mount. The last attempt's result.
    static func unmountRetrying(_ mountpoint: String) -> ProcessResult {
        var result = unmountCommand(mountpoint)
        var tries = 0
        while !result.succeeded && MountTable.isContainerMount(mountpoint) && tries < 20 {
            usleep(100_000)
            tries += 1
            result = unmountCommand(mountpoint)
        }
        return result
    }

    static func lazyUnmount(_ mountpoint: String) {
        if let fusermount = Subprocess.onPath("fusermount3") {
            _ = try? Subprocess.run([fusermount, "-u", "-z", mountpoint], timeout: 30)
        }
        if MountTable.isContainerMount(mountpoint) {
            _ = try? Subprocess.run(["umount", "-l", mountpoint], timeout: 30)
        }
    }

    /// `rm -rf --one-file-system`: never descends into a mount still there.
    private static func removeTree(_ path: String) {
        FixtureSystem.removeTree(path)
    }
}

/// Mounts a container for the length of `body` and always unmounts it, also
/// when `body` throws or an expectation in it fails.
///
///     try withMountedContainer { container in
///         try Data("hi".utf8).write(to: URL(fileURLWithPath: container.documents + "/a.txt"))
///         #expect(container.denials().isEmpty)
///     }
///
/// Throws what `body` throws; else, when the teardown found something wrong
/// (see `MountedContainer.unmount()`), that.
public func withMountedContainer<T>(
    _ options: MountedContainer.Options = MountedContainer.Options(),
    _ body: (MountedContainer) throws -> T
) throws -> T {
    try runThenUnmount(try MountedContainer.mount(options), body)
}

/// The same for an async body; also unmounts when the task is cancelled.
@available(macOS 10.15, iOS 13, tvOS 13, watchOS 6, *)
public func withMountedContainer<T>(
    _ options: MountedContainer.Options = MountedContainer.Options(),
    isolation: isolated (any Actor)? = #isolation,
    _ body: (MountedContainer) async throws -> T
) async throws -> T {
    try await runThenUnmount(try MountedContainer.mount(options), isolation: isolation, body)
}
