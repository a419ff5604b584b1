import AppSandboxFS
import BackingStore
import Glibc
import Logging
import MountInfo
import POSIXHelpers
import SandboxPolicy
import Spawning
import SystemPackage

/// A driver exits with `code`; what went wrong was already said (on
/// standard error and, for a background start, to the waiting parent).
public struct DriverExit: Error {
    public var code: Int32
    public init(_ code: Int32) { self.code = code }
}

/// One container's (or one device's: `DeviceMount` tells them apart)
/// driver, from the checks to the exit: what `appsandboxfs mount` is. `run()` checks (L1: nothing changes when one fails), starts
/// itself in the background unless `foreground`, then logs, mounts,
/// publishes the status record and the control socket (lock, unlock,
/// reboot), serves until unmounted, empties tmp (T2) and cleans up.
/// `mount(...)` is the part a process that serves the container itself
/// (the in-process fixture) shares with it: the same configuration, the
/// same `ContainerMount`.
public struct ContainerDriver: Sendable {
    public let configuration: DriverConfiguration

    public init(_ configuration: DriverConfiguration) {
        self.configuration = configuration
    }

    /// Runs to the end. Throws `Failure` (one line for the user), or
    /// `DriverExit` once the failure was reported.
    public func run() throws {
        let settings = configuration
        let backingPath = settings.backing
        let mountPath = settings.mountpoint
        let (layout, name) = try DeviceMount.layout(backing: backingPath, appName: settings.appName)
        let container = Container(backing: backingPath, layout: layout)
        let bundlePath = settings.bundle
        let readyFD = settings.readyFD
        if readyFD == nil {
            // Checks first (L1): nothing is changed when one fails.
            if settings.recover && MountTable.isStale(mountPath) {
                FileHandleless.warn("\(mountPath): stale mount found; cleaning it up (--recover)")
                _ = runTool("/usr/bin/fusermount3", ["-u", "-z", mountPath])
            }
            if !settings.create { try MountChecks.folder(backingPath, role: "backing directory") }
            if let bundlePath { try MountChecks.folder(bundlePath, role: "bundle") }
            if settings.capacity != nil && settings.writeback {
                throw Failure("--capacity cannot be used with --writeback: the kernel would accept cached writes that the disk has no room for")
            }
            if let log = settings.log { try MountChecks.writableFile(log, role: "log file") }
            if let denialLog = settings.denialLog { try MountChecks.writableFile(denialLog, role: "denial log") }
            try MountChecks.mountpointUsable(mountPath)
            try MountChecks.fuseDeviceUsable()
            if settings.create {
                do { try container.create(withBundle: bundlePath == nil) } catch {
                    throw Failure("\(backingPath): cannot create the container: \(error)")
                }
            }
            if !layout.isDevice { try MountChecks.container(container, bundleElsewhere: bundlePath != nil) }
            if !settings.foreground {
                // A forked child goes on here as the driver, as a new start
                // with --foreground --ready-fd would.
                if let readyFD = try Daemon.startInBackground(logFile: settings.log) {
                    var driver = settings
                    driver.foreground = true
                    driver.readyFD = readyFD
                    try ContainerDriver(driver).run()
                }
                return
            }
        }
        Self.raiseDescriptorLimit()
        var configuration = settings.mountConfiguration(layout: layout)
        // The locks that order drivers of this container around tmp go in
        // the driver's own state folder, where no other user can hold them
        // (T2); kept open for the driver's life. In a folder of their own:
        // they stay once made (two per container), and every mount, status
        // and unmount lists the records beside them (3,500 lock files there
        // made a test fixture's mount and unmount 5 ms slower).
        configuration.lockFolder = StatusFile.openLockFolder()
        configuration.dataProtection = DataProtection(defaultClass: container.defaultProtectionClass(),
                                                      state: settings.deviceState)

        // A background driver without --log has no standard error to speak to.
        let toSyslog = readyFD != nil && settings.log == nil
        DriverLogging.bootstrap(toSyslog: toSyslog, level: settings.logLevel ?? (settings.debug ? .debug : .info))
        let logger = Logger(label: DriverLogging.label)
        configuration.denialLogger = Logger(label: DriverLogging.denialLabel)
        umask(0)
        _ = chdir("/")

        // Everything that can fail comes before anything in the backing
        // directory changes (L1).
        let mount: ContainerMount
        do {
            mount = try ContainerMount(configuration: configuration, options: settings.mountOptions,
                                       debug: settings.debug, ioUring: settings.ioUring, logger: logger)
            logger.debug("\(mountPath): libfuse options \(mount.mountOptions.joined(separator: ",")); names cached \(configuration.entryTimeout) s, attributes \(configuration.attributeTimeout) s; \(configuration.maxThreads) threads; writeback \(configuration.writebackCache ? "on" : "off"), keep cache \(configuration.keepCache ? "on" : "off"), passthrough \(mount.configuration.usesPassthrough ? "asked" : "off")")
        } catch {
            if toSyslog { logger.error("\(backingPath) at \(mountPath): \(error)") }
            Daemon.reportFailure("\(error)", readyFD: readyFD)
            throw DriverExit(1)
        }
        do {
            try mount.mount { Daemon.warn($0, readyFD: readyFD) }
        } catch {
            Daemon.reportFailure("\(error)", readyFD: readyFD)
            throw DriverExit(1)
        }
        // For `appsandboxfs status`: this driver's pid and options. (Whether
        // the kernel took passthrough up is known only once INIT is answered,
        // on the loop's first request: the transport logs it then.)
        let statusRecord = StatusFile.publish(settings.recordOptions(passthrough: mount.configuration.usesPassthrough),
                                              backing: backingPath, mountpoint: mountPath, appName: name,
                                              device: mount.fileSystem.mountedDeviceNumber,
                                              deviceState: settings.deviceState.rawValue)
        // Logged before the control socket's thread starts: that thread's
        // first use of the Swift runtime's metadata, concurrent with this
        // thread's, once livelocked a forked driver (two threads spinning
        // in swift_once and a PI futex, under AddressSanitizer).
        logger.info("appsandboxfs \(Version.description): serving \(backingPath) at \(mountPath) as \(name) (pid \(getpid()), passthrough \(mount.configuration.usesPassthrough ? "asked for" : "off"))")
        // For `appsandboxfs lock|unlock|reboot`.
        let controlSocket = DeviceControl.serve(configuration.dataProtection, record: statusRecord)
        Daemon.reportReady(readyFD: readyFD)
        // Until the mount is gone (unmounted, SIGTERM or SIGINT); then tmp
        // is emptied (T2). `unmount` waits for the `watch` it asked for on
        // the control socket to end (or, without one, for this process).
        let status = mount.serve { logger.warning("\($0)") }
        if status != 0 { logger.error("\(mountPath): reading /dev/fuse failed: \(errorText(-status))") }
        statusRecord?.remove()
        // Every `unmount` waiting on a `watch` returns now.
        controlSocket?.finish()
        logger.info("\(mountPath): unmounted; exiting")
    }

    /// For a process that serves the container on threads of its own (the
    /// in-process fixture): the mount `run` would make, mounted, with the
    /// file system's configuration it was made from. The caller's process
    /// is left as it is: no signal handlers (it keeps its own), its
    /// standard error never swapped, its umask kept (serve with
    /// `privateUmask`), no status record or control socket. `layout` is
    /// the container's (the caller checked the app name).
    public func mountInCallersProcess(layout: ContainerLayout, logger: Logger, denialLogger: Logger,
                                      warn: (String) -> Void) throws -> (ContainerMount, MountConfiguration) {
        Self.raiseDescriptorLimit()
        var configuration = configuration.mountConfiguration(layout: layout)
        configuration.denialLogger = denialLogger
        let container = Container(backing: configuration.backing, layout: layout)
        configuration.dataProtection = DataProtection(defaultClass: container.defaultProtectionClass(),
                                                      state: self.configuration.deviceState)
        let mount = try ContainerMount(configuration: configuration, options: self.configuration.mountOptions,
                                       debug: self.configuration.debug, ioUring: self.configuration.ioUring,
                                       logger: logger)
        try mount.mount(handlingSignals: false, warn: warn)
        // As mounted: what this process's privileges allow (passthrough).
        return (mount, mount.configuration)
    }

    /// Each node the kernel holds keeps a descriptor open: allow as many as
    /// the system lets this process have.
    public static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// The app's name from the one `*.app` folder in `backing`.
    public static func guessAppName(in backing: String) throws -> String {
        guard let entries = try? FileManagerless.list(backing) else {
            throw Failure("\(backing): cannot read the backing directory")
        }
        let bundles = entries.filter { $0.hasSuffix(".app") && $0.count > 4 }
        guard bundles.count == 1 else {
            throw Failure("\(backing): cannot tell the app's name (found \(bundles.count) *.app folders); give --app-name")
        }
        return String(bundles[0].dropLast(4))
    }
}

/// Listing a folder without Foundation's FileManager.
public enum FileManagerless {
    public static func list(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw Failure("\(path): \(errorText(errno))") }
        return directoryNames(closing: dir)
    }
}
