import ContainerFiles
import Foundation
import Locking
import POSIXHelpers
#if os(Linux)
internal import FoundationBridge
import MountInfo
import Spawning
#endif

/// A device of many apps (part three) mounted by the real appsandboxfs
/// driver, for a test: apps installed from descriptions, launched as child
/// processes (`appsandboxfs launch`: confined, each seeing only its own
/// containers), suspended and resumed.
///
///     /var/lib/appsandboxfs-testing/appsandboxfs-test-XXXXXX/
///       device/        the device's backing directory (`appsandboxfs device init`)
///       mnt/           the mountpoint: what the code under test uses
///       builds/        the .app folders made from the apps' descriptions
///       launches/      what each launch started with `start` printed
///       denials.log    the denial log, with the termination lines (`terminations()`)
///       driver.log     what the driver printed
///
/// Use it through `withMountedDevice(_:_:)` (or the `.mountedDevice()`
/// trait), which always unmounts, or `mount(_:)` and `unmount()`. The
/// unmount kills whatever launch still runs, stops the driver, checks that
/// it ended cleanly and removes the folder. `launch` is confined (rules
/// R1-R5): it needs root, and a device outside /tmp and /var/tmp, hence the
/// default `Options.temporaryDirectory`.
public final class MountedDevice: Sendable {
    /// How to lay out and mount the device.
    public struct Options: Sendable {
        /// Apps installed right after the mount, in this order.
        public var apps: [AppDescription]
        /// The device's capacity (`--capacity`, rule M1).
        public var capacity: String?
        /// The appsandboxfs program. Default: `MountedContainer.locateAppSandboxFS()`.
        public var appsandboxfs: String?
        /// Where the temporary folder is made: outside /tmp and /var/tmp,
        /// for `launch` (its world replaces those with the app's tmp).
        public var temporaryDirectory: String
        public var mountTimeout: Double
        public var unmountTimeout: Double
        /// Leave the temporary folder in place after the unmount. Also set
        /// by APPSANDBOXFS_KEEP_TEST_FILES=1.
        public var keepFiles: Bool

        public init(apps: [AppDescription] = [], capacity: String? = nil, appsandboxfs: String? = nil,
                    temporaryDirectory: String = MountedContainer.confinableTemporaryDirectory,
                    mountTimeout: Double = 30, unmountTimeout: Double = 15, keepFiles: Bool = false) {
            self.apps = apps
            self.capacity = capacity
            self.appsandboxfs = appsandboxfs
            self.temporaryDirectory = temporaryDirectory
            self.mountTimeout = mountTimeout
            self.unmountTimeout = unmountTimeout
            self.keepFiles = keepFiles || environmentValue("APPSANDBOXFS_KEEP_TEST_FILES") == "1"
        }
    }

    /// What an app's executable does when launched.
    public enum Executable: Sendable {
        /// This shell script (`#!/bin/sh` is put first when it has no `#!`
        /// line); the launch's arguments are its "$@".
        case script(String)
        /// This command, with the launch's arguments after it:
        /// `.command(["python3", "-c", code])`.
        case command([String])
        /// A copy of this file: a program built for the test.
        case program(String)
    }

    /// An app to install: a `<name>.app` folder is made from it with an
    /// Info.plist (CFBundleIdentifier, CFBundleName, CFBundleExecutable =
    /// `name`), the executable `<name>.app/<name>` and the resources.
    public struct AppDescription: Sendable {
        public var bundleID: String
        public var name: String
        /// The App Group ids it lists (its entitlements).
        public var groups: [String]
        public var executable: Executable
        /// Files put into the .app: path in the .app to contents.
        public var resources: [String: String]

        public init(bundleID: String, name: String, groups: [String] = [], executable: Executable = .script("exit 0"),
                    resources: [String: String] = [:]) {
            self.bundleID = bundleID
            self.name = name
            self.groups = groups
            self.executable = executable
            self.resources = resources
        }
    }

    /// An installed app, with its containers' paths through the mount (the
    /// paths the app itself sees when launched).
    public struct App: Sendable, Equatable {
        public let bundleID: String
        public let name: String
        /// `<name>.app` in its bundle container (read-only).
        public let bundle: String
        /// Its data container (HOME when launched).
        public let data: String
        /// Each group it lists, to its group container.
        public let groups: [String: String]

        /// The container of `group`; a fixture error when the app does not list it.
        public func group(_ id: String) throws -> String {
            guard let path = groups[id] else { throw FixtureError("\(bundleID) lists no group \(id) (it lists \(groups.keys.sorted()))") }
            return path
        }

        /// A path in the data container: `app.path("Documents/notes.txt")`.
        public func path(_ relative: String) -> String { data + "/" + relative }
    }

    /// The mountpoint.
    public let mountpoint: String
    /// The device's backing directory: the same files, without the rules.
    public let backing: String
    /// The temporary folder that holds everything; removed at the unmount.
    public let root: String
    public let denialLogPath: String
    public let driverLogPath: String
    public let appsandboxfs: String

    #if os(Linux)
    private let driver: Driver
    #endif
    private let options: Options
    private let tornDown = Locked(false)
    /// The launches `start` made, killed at the teardown.
    private let started = Locked<[LaunchedApp]>([])
    private let serials = Locked(0)

    #if os(Linux)
    private init(root: String, appsandboxfs: String, driver: Driver, options: Options) {
        self.root = root
        self.mountpoint = root + "/mnt"
        self.backing = root + "/device"
        self.denialLogPath = root + "/denials.log"
        self.driverLogPath = root + "/driver.log"
        self.appsandboxfs = appsandboxfs
        self.driver = driver
        self.options = options
    }
    #endif

    deinit {
        if let problem = tearDown() {
            FileHandle.standardError.write(Data("AppSandboxTesting: \(problem)\n".utf8))
        }
    }

    /// Whether a device can be mounted and its apps launched here: Linux
    /// with /dev/fuse, as root (`launch` makes mount namespaces).
    public static var canLaunch: Bool { MountedContainer.canConfine }

    // MARK: Mounting

    /// Lays out a device in a fresh temporary folder (`appsandboxfs device
    /// init`), mounts it with a driver program, installs `options.apps`;
    /// returns once all is ready. Pair it with `unmount()`.
    public static func mount(_ options: Options = Options()) throws -> MountedDevice {
        #if os(Linux)
        guard MountedContainer.isSupported else {
            throw FixtureError("AppSandboxTesting mounts devices only on Linux with /dev/fuse (FUSE)")
        }
        FoundationBridge.install()
        let program = try MountedContainer.locateAppSandboxFS(options.appsandboxfs)
        let root = try MountedContainer.makeTemporaryFolder(in: options.temporaryDirectory)
        var handedOver = false
        defer { if !handedOver && !options.keepFiles { FixtureSystem.removeTree(root) } }
        for folder in [root + "/mnt", root + "/builds", root + "/launches"] where mkdir(folder, 0o755) != 0 {
            throw FixtureError("mkdir \(folder): \(errorText(errno))")
        }
        let made = try Subprocess.run([program, "device", "init", root + "/device"])
        guard made.succeeded else { throw FixtureError("appsandboxfs device init failed (\(made.status)): \(made.standardError)") }
        for file in [root + "/denials.log", root + "/driver.log"] {
            let fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw FixtureError("\(file): \(errorText(errno))") }
            close(fd)
        }
        var arguments = [program, "mount", root + "/device", root + "/mnt", "--foreground", "--denial-log", root + "/denials.log"]
        if let capacity = options.capacity { arguments += ["--capacity", capacity] }
        var startOptions = MountedContainer.Options(mountTimeout: options.mountTimeout)
        startOptions.inProcess = false
        let server = try MountedContainer.startDriver(arguments, backing: root + "/device", mountpoint: root + "/mnt",
                                                      appName: "", root: root, options: startOptions)
        guard let driver = server as? Driver else { throw FixtureError("a device is served by a driver program only") }
        handedOver = true
        let device = MountedDevice(root: root, appsandboxfs: program, driver: driver, options: options)
        do {
            for app in options.apps { try device.install(app) }
        } catch {
            device.unmountAfterFailure()
            throw error
        }
        return device
        #else
        throw FixtureError("AppSandboxTesting mounts devices only on Linux with /dev/fuse (FUSE)")
        #endif
    }

    /// Kills the launches still running, unmounts, waits for the driver and
    /// removes the temporary folder. Throws, after cleaning up all the
    /// same, when something was wrong. Calling it again does nothing.
    public func unmount() throws {
        if let problem = tearDown() { throw FixtureError(problem) }
    }

    func unmountAfterFailure() {
        if let problem = tearDown() {
            FileHandle.standardError.write(Data("AppSandboxTesting: \(problem)\n".utf8))
        }
    }

    public var isMounted: Bool {
        #if os(Linux)
        return MountTable.isContainerMount(mountpoint)
        #else
        return false
        #endif
    }

    private func tearDown() -> String? {
        #if os(Linux)
        let first = tornDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return nil }
        var problems: [String] = []
        // A launch's world dies with its `launch` process (PR_SET_PDEATHSIG),
        // stopped or not; until then it keeps the mount busy.
        for launch in started.withLock({ $0 }) { launch.kill() }
        let early = driver.exitStatus
        if let early { problems.append("appsandboxfs ended during the test (status \(early))") }
        problems += MountedContainer.unmountAndEnd(driver, mountpoint: mountpoint, root: root,
                                                   unmountTimeout: options.unmountTimeout, keepFiles: options.keepFiles,
                                                   unmount: true, endedEarly: early != nil)
        guard !problems.isEmpty else { return nil }
        return problems.joined(separator: "; ") + "\nThe driver's last lines:\n" + lastLines(readText(driverLogPath) ?? "")
        #else
        return nil
        #endif
    }

    // MARK: Apps

    /// Makes `<name>.app` from `description` and installs it (`appsandboxfs
    /// install`); installing a bundle id again updates the app (its data
    /// container is kept).
    @discardableResult
    public func install(_ description: AppDescription) throws -> App {
        let folder = try makeBundle(description)
        let groups = description.groups.flatMap { ["--group", $0] }
        try command("install", [folder, "--bundle-id", description.bundleID] + groups)
        return try app(description.bundleID)
    }

    /// Removes the app (`appsandboxfs uninstall`; `kill`: also while it runs).
    public func uninstall(_ app: App, kill: Bool = false) throws {
        try command("uninstall", [app.bundleID] + (kill ? ["--kill"] : []))
    }

    /// The installed apps (`appsandboxfs listapps --json`).
    public func apps() throws -> [App] {
        let listed = try command("listapps", ["--json"])
        struct Listed: Decodable {
            struct Group: Decodable { var id: String; var path: String? }
            var bundleID: String, name: String, bundlePath: String, dataPath: String?, groups: [Group]
        }
        guard let decoded = try? JSONDecoder().decode([Listed].self, from: Data(listed.standardOutput.utf8)) else {
            throw FixtureError("appsandboxfs listapps --json printed no list: \(listed.standardOutput)")
        }
        return decoded.map { app in
            App(bundleID: app.bundleID, name: app.name, bundle: app.bundlePath, data: app.dataPath ?? "",
                groups: Dictionary(app.groups.compactMap { group in group.path.map { (group.id, $0) } }, uniquingKeysWith: { a, _ in a }))
        }
    }

    /// The installed app `bundleID`.
    public func app(_ bundleID: String) throws -> App {
        guard let app = try apps().first(where: { $0.bundleID == bundleID }) else {
            throw FixtureError("\(bundleID) is not installed in \(mountpoint)")
        }
        return app
    }

    private func makeBundle(_ description: AppDescription) throws -> String {
        let name = description.name
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else {
            throw FixtureError("app name \"\(name)\": not a file name")
        }
        let serial = serials.withLock { count in
            count += 1
            return count
        }
        let parent = root + "/builds/\(serial)"
        let folder = parent + "/\(name).app"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let info: [String: Any] = ["CFBundleIdentifier": description.bundleID, "CFBundleName": name,
                                   "CFBundleExecutable": name, "CFBundlePackageType": "APPL"]
        try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
            .write(to: URL(fileURLWithPath: folder + "/Info.plist"))
        let executable = folder + "/" + name
        switch description.executable {
        case .script(let text):
            try Data(((text.hasPrefix("#!") ? "" : "#!/bin/sh\n") + text + "\n").utf8).write(to: URL(fileURLWithPath: executable))
        case .command(let arguments):
            guard !arguments.isEmpty else { throw FixtureError("\(description.bundleID): an empty command") }
            let quoted = arguments.map { "'" + $0.replacingOccurrences(of: "'", with: #"'\''"#) + "'" }.joined(separator: " ")
            try Data("#!/bin/sh\nexec \(quoted) \"$@\"\n".utf8).write(to: URL(fileURLWithPath: executable))
        case .program(let path):
            try FileManager.default.copyItem(atPath: path, toPath: executable)
        }
        chmod(executable, 0o755)
        for (relative, contents) in description.resources {
            let path = folder + "/" + relative
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        }
        return folder
    }

    // MARK: Launching

    /// Launches the app (`appsandboxfs launch MOUNTPOINT ID -- ARGUMENTS`)
    /// and waits for it: confined, seeing only its own containers, its
    /// environment pointing into its data container. The status is the
    /// app's (128 + the signal that ended it). Root only (see `canLaunch`).
    public func launch(_ app: App, arguments: [String] = [], user: String? = nil, timeout: Double = 120) throws -> ProcessResult {
        try Subprocess.run(launchCommand(app, arguments: arguments, user: user), timeout: timeout)
    }

    /// Launches the app without waiting: the app runs until it ends, `kill()`
    /// or the unmount. Its output goes to files (`LaunchedApp.output`).
    public func start(_ app: App, arguments: [String] = [], user: String? = nil) throws -> LaunchedApp {
        #if os(Linux)
        let serial = serials.withLock { count in
            count += 1
            return count
        }
        let output = root + "/launches/\(serial).out", errors = root + "/launches/\(serial).err"
        let pid: pid_t
        do {
            pid = try ChildProcess.start(launchCommand(app, arguments: arguments, user: user),
                                         SpawnOptions(standardInput: .nullDevice, standardOutput: .path(output),
                                                      standardError: .path(errors), closeOtherDescriptors: true)).pid
        } catch {
            throw FixtureError(error.description)
        }
        let launched = LaunchedApp(app: app, pid: pid, outputPath: output, errorPath: errors)
        started.withLock { $0.append(launched) }
        return launched
        #else
        throw FixtureError("AppSandboxTesting launches apps only on Linux")
        #endif
    }

    private func launchCommand(_ app: App, arguments: [String], user: String?) -> [String] {
        [appsandboxfs, "launch", mountpoint, app.bundleID] + (user.map { ["--user", $0] } ?? []) + ["--"] + arguments
    }

    /// What `suspend` did.
    public struct Suspension: Sendable {
        /// 0: every process of the app stopped; 3: killed for a lock held in
        /// a group container (0xdead10cc, rule Z1).
        public let status: Int32
        /// The termination lines (`Termination: <id> <process>(<pid>)
        /// 0xdead10cc <path>`), one per locked file; empty when stopped.
        public let terminations: [String]
        public var killed: Bool { status == 3 }
    }

    /// Suspends the app as iOS does when it goes to the background
    /// (`appsandboxfs suspend`): stopped, or killed with the termination
    /// lines when it holds a lock on a file in a group container (Z1, Z2).
    @discardableResult
    public func suspend(_ app: App) throws -> Suspension {
        let result = try Subprocess.run([appsandboxfs, "suspend", mountpoint, app.bundleID])
        guard result.status == 0 || result.status == 3 else {
            throw FixtureError("appsandboxfs suspend \(app.bundleID) failed (\(result.status)): \(result.standardError)")
        }
        return Suspension(status: result.status,
                          terminations: result.standardOutput.split(separator: "\n").map(String.init)
                              .filter { $0.hasPrefix("Termination: ") })
    }

    /// Lets a suspended app run on (`appsandboxfs resume`).
    public func resume(_ app: App) throws {
        try command("resume", [app.bundleID])
    }

    /// The termination lines in the denial log so far, oldest first.
    public func terminations() -> [String] {
        (readText(denialLogPath) ?? "").split(separator: "\n").map(String.init).filter { $0.hasPrefix("Termination: ") }
    }

    /// Every denial the driver logged so far, oldest first.
    public func denials() -> [Denial] {
        (readText(denialLogPath) ?? "").split(separator: "\n").compactMap { Denial(line: String($0)) }
    }

    // MARK: Acting as an app in the test process

    /// The environment `launch` gives the app (what ContainerFiles reads):
    /// HOME, TMPDIR, the XDG folders of its data container and
    /// APPSANDBOXFS_GROUP_CONTAINERS for its groups.
    public func environment(for app: App) -> [String: String] {
        var variables = Dictionary(uniqueKeysWithValues: ContainerEnvironment.variables(root: app.data).map { ($0.name, $0.value) })
        variables[GroupContainers.environmentName] = GroupContainers.json(app.groups)
        return variables
    }

    /// Runs `body` in the test process as `app` for the group containers
    /// (G3): in it (and in the tasks it starts), ContainerFiles'
    /// `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)`
    /// answers the app's group containers, and nil for any other group, as
    /// inside `launch`. It is a task-local value, not the environment:
    /// tests that act as different apps at once do not mix, but a thread
    /// the body starts outside Swift concurrency (a Thread, a
    /// DispatchQueue) does not see it; launch the code there instead.
    public func actAs<T>(_ app: App, _ body: () throws -> T) rethrows -> T {
        try GroupContainers.$acting.withValue(app.groups, operation: body)
    }

    /// The same for an async body.
    public func actAs<T>(_ app: App, isolation: isolated (any Actor)? = #isolation,
                         _ body: () async throws -> T) async rethrows -> T {
        try await GroupContainers.$acting.withValue(app.groups, operation: body, isolation: isolation)
    }

    // MARK: Helpers

    /// `appsandboxfs VERB MOUNTPOINT ARGUMENTS`, which must succeed.
    @discardableResult
    private func command(_ verb: String, _ arguments: [String]) throws -> ProcessResult {
        let result = try Subprocess.run([appsandboxfs, verb, mountpoint] + arguments)
        guard result.succeeded else {
            throw FixtureError("appsandboxfs \(verb) \(arguments.joined(separator: " ")) failed (\(result.status)): \(result.standardError)")
        }
        return result
    }
}

/// An app launched by `MountedDevice.start`: the `appsandboxfs launch`
/// process, a child of the test process.
public final class LaunchedApp: Sendable {
    public let app: MountedDevice.App
    /// The `appsandboxfs launch` process (the app's world dies with it).
    public let pid: Int32
    public let outputPath: String
    public let errorPath: String
    private let ended = Locked<Int32?>(nil)

    init(app: MountedDevice.App, pid: Int32, outputPath: String, errorPath: String) {
        self.app = app
        self.pid = pid
        self.outputPath = outputPath
        self.errorPath = errorPath
    }

    /// What the app printed so far.
    public var output: String { readText(outputPath) ?? "" }
    public var errorOutput: String { readText(errorPath) ?? "" }

    /// Waits up to `timeout` seconds for the app to end; its status (128 +
    /// the signal that ended it), or nil while it runs.
    public func wait(timeout: Double = 120) -> Int32? {
        #if os(Linux)
        if let status = ended.withLock({ $0 }) { return status }
        guard let status = ChildProcess(pid: pid).wait(timeout: timeout)?.code else { return nil }
        return ended.withLock { value in
            if value == nil { value = status }
            return value
        }
        #else
        return nil
        #endif
    }

    /// Ends the app (SIGKILL to the launch, whose world then dies) and reaps it.
    public func kill() {
        #if os(Linux)
        guard ended.withLock({ $0 }) == nil else { return }
        Glibc.kill(pid, SIGKILL)
        _ = wait(timeout: 30)
        #endif
    }
}

/// Mounts a device for the length of `body` and always unmounts it, also
/// when `body` throws.
///
///     let notes = MountedDevice.AppDescription(bundleID: "com.example.notes", name: "Notes",
///                                              groups: ["group.com.example.notes"])
///     try withMountedDevice(.init(apps: [notes])) { device in
///         let app = try device.app("com.example.notes")
///         let result = try device.launch(app, arguments: ["hello"])
///     }
public func withMountedDevice<T>(_ options: MountedDevice.Options = MountedDevice.Options(),
                                 _ body: (MountedDevice) throws -> T) throws -> T {
    try runThenUnmount(try MountedDevice.mount(options), body)
}

/// The same for an async body.
@available(macOS 10.15, iOS 13, tvOS 13, watchOS 6, *)
public func withMountedDevice<T>(_ options: MountedDevice.Options = MountedDevice.Options(),
                                 isolation: isolated (any Actor)? = #isolation,
                                 _ body: (MountedDevice) async throws -> T) async throws -> T {
    try await runThenUnmount(try MountedDevice.mount(options), isolation: isolation, body)
}
