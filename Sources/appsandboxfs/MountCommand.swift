import AppSandboxFS
import ArgumentParser
import FuseKit
import Glibc
import Logging
import MountInfo
import SandboxPolicy
import SystemPackage

struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount a container's backing directory.",
        discussion: """
            Returns once the mount is ready, unless --foreground is given. -o takes the
            options of `mount -t fuse.appsandboxfs` too (app_name=NAME, keep_tmp, ...; see
            docs/cli.md): each stands for its flag. A background driver logs to syslog (the
            journal: journalctl -t appsandboxfs, and -t appsandboxfs-denial for the denial
            lines) unless --log is given.
            Examples:
              appsandboxfs mount ~/containers/MyApp /mnt/MyApp --app-name MyApp
              appsandboxfs mount ~/containers/MyApp /mnt/MyApp -o app_name=MyApp,ro
              appsandboxfs mount data /mnt/c --foreground -o ro
            """)

    @Argument(help: "The container's backing directory.")
    var backing: String

    @Argument(help: "An empty folder to mount on.")
    var mountpoint: String

    @Option(help: "The app's name; the bundle shows as NAME.app. Default: the one *.app folder in BACKING.")
    var appName: String?

    @Flag(help: "Stay in the foreground until unmounted.")
    var foreground = false

    @Option(name: .customShort("o"), help: "Mount options, comma-separated (as for mount -o).")
    var options: [String] = []

    @Flag(help: "Log every FUSE request (libfuse's -d).")
    var debug = false

    @Option(help: "Append each sandbox denial line to this file too.")
    var denialLog: String?

    @Option(help: "Where the background driver's messages go (default: syslog).")
    var log: String?

    @Option(help: "The least important messages logged: trace, debug, info, notice, warning, error or critical (default: info; debug with --debug).")
    var logLevel: LogLevelName?

    @Flag(help: "Create the container's folders if the backing directory lacks them.")
    var create = false

    @Option(help: "Show this folder read-only as NAME.app instead of the backing one (it is never written).")
    var bundle: String?

    @Flag(help: "Keep tmp's contents at unmount (for debugging; rule T4).")
    var keepTmp = false

    @Flag(help: "If the mountpoint is a stale mount (its driver died), clean it up first.")
    var recover = false

    @Option(help: "Give the container a disk of SIZE bytes (K, M, G, T: powers of 1024): df shows it, writes past it fail with ENOSPC. Turns passthrough off.")
    var capacity: ByteSize?

    @Option(help: "Seconds the kernel may cache names (attributes: at most 1 s, so that a change made in the backing directory shows).")
    var cacheTimeout: Double = 86400

    @Flag(inversion: .prefixedNo, help: "Let the kernel cache writes and send them in large batches (writeback cache).")
    var writeback = false

    @Flag(inversion: .prefixedNo,
          help: "Let the kernel read and write open files' backing files directly (FUSE passthrough; needs root and Linux 6.9+, off with --writeback).")
    var passthrough = true

    /// To compare: with passthrough, leave clearing set-ID bits to the
    /// kernel, at a GETXATTR round trip per passthrough write.
    @Flag(name: .customLong("killpriv-v2"), inversion: .prefixedNo, help: .hidden)
    var killPrivV2 = true

    @Flag(name: .customLong("io-uring"),
          help: "Serve requests through FUSE over io_uring when the kernel offers it (Linux 6.14+, fuse module parameter enable_uring=Y, which this option does not set); else /dev/fuse, with one line saying why.")
    var ioUring = false

    @Flag(inversion: .prefixedNo, help: "Keep the kernel's page cache of a file across opens.")
    var keepCache = true

    @Option(help: "The device state the mount starts in (P5): unlocked, locked (no grace) or before-first-unlock.")
    var deviceState: String = "unlocked"

    @Option(help: "Worker threads serving requests.")
    var threads: Int = 10

    /// Descriptors kept open for files the kernel knows; the others are
    /// opened again from their file handles (default: a quarter of the
    /// descriptor limit, at most 4096). Hidden: a tuning knob for tests and
    /// measurements, not part of the documented interface.
    @Option(help: .hidden)
    var descriptorCache: Int?

    /// Internal: the descriptor a background parent waits on for "ready".
    @Option(help: .hidden)
    var readyFD: Int32?

    /// For the mount helper's -f (mount --fake): check the command line and
    /// the -o options, print what they amount to, mount nothing.
    @Flag(help: .hidden)
    var fake = false

    mutating func run() throws {
        try applyMountOptions()
        if fake {
            print((["mount", backing, mountpoint] + effectiveArguments).joined(separator: " "))
            return
        }
        // Absolute from here on: the driver works from / (it must keep no
        // folder of its caller busy).
        backing = absolutePath(backing)
        // Without links, as the kernel will list it: an absolute link
        // target is inside only through the mount's own path (E1), and a
        // link in that path could be re-pointed.
        mountpoint = resolvedPath(absolutePath(mountpoint))
        bundle = bundle.map(absolutePath)
        log = log.map(absolutePath)
        denialLog = denialLog.map(absolutePath)
        let backingPath = backing
        let mountPath = mountpoint
        let (layout, name) = try DeviceMount.layout(backing: backingPath, appName: appName)
        let container = Container(backing: backingPath, layout: layout)
        let bundlePath = bundle
        let startState = try ProtectionArguments.deviceState(deviceState)
        if readyFD == nil {
            // Checks first (L1): nothing is changed when one fails.
            if recover && MountTable.isStale(mountPath) {
                FileHandleless.warn("\(mountPath): stale mount found; cleaning it up (--recover)")
                _ = runTool("/usr/bin/fusermount3", ["-u", "-z", mountPath])
            }
            if !create { try MountChecks.folder(backingPath, role: "backing directory") }
            if let bundlePath { try MountChecks.folder(bundlePath, role: "bundle") }
            if capacity != nil && writeback {
                throw Failure("--capacity cannot be used with --writeback: the kernel would accept cached writes that the disk has no room for")
            }
            if let log { try MountChecks.writableFile(log, role: "log file") }
            if let denialLog { try MountChecks.writableFile(denialLog, role: "denial log") }
            try MountChecks.mountpointUsable(mountPath)
            try MountChecks.fuseDeviceUsable()
            if create {
                do { try container.create(withBundle: bundlePath == nil) } catch {
                    throw Failure("\(backingPath): cannot create the container: \(error)")
                }
            }
            if !layout.isDevice { try MountChecks.container(container, bundleElsewhere: bundlePath != nil) }
            if !foreground {
                try Daemon.startInBackground(logFile: log)
                return
            }
        }
        Self.raiseDescriptorLimit()
        var configuration = MountConfiguration(backing: backingPath, mountpoint: mountPath, layout: layout)
        configuration.bundleOverride = bundlePath
        configuration.keepTmp = keepTmp
        // The locks that order drivers of this container around tmp go in
        // the driver's own state folder, where no other user can hold them
        // (T2); kept open for the driver's life. In a folder of their own:
        // they stay once made (two per container), and every mount, status
        // and unmount lists the records beside them (3,500 lock files there
        // made a test fixture's mount and unmount 5 ms slower).
        configuration.lockFolder = StatusFile.openLockFolder()
        configuration.denialLogFile = denialLog
        configuration.entryTimeout = cacheTimeout
        configuration.attributeTimeout = min(cacheTimeout, MountConfiguration.longestAttributeTimeout)
        configuration.maxThreads = threads
        configuration.descriptorCacheSize = descriptorCache
        configuration.writebackCache = writeback
        configuration.passthrough = passthrough
        configuration.killPrivV2 = killPrivV2
        configuration.keepCache = keepCache
        configuration.capacity = capacity?.bytes
        configuration.dataProtection = DataProtection(defaultClass: container.defaultProtectionClass(), state: startState)

        // A background driver without --log has no standard error to speak to.
        let toSyslog = readyFD != nil && log == nil
        DriverLogging.bootstrap(toSyslog: toSyslog, level: logLevel?.level ?? (debug ? .debug : .info))
        let logger = Logger(label: DriverLogging.label)
        configuration.denialLogger = Logger(label: DriverLogging.denialLabel)
        umask(0)
        _ = chdir("/")

        // Everything that can fail comes before anything in the backing
        // directory changes (L1).
        let mount: ContainerMount
        do {
            mount = try ContainerMount(configuration: configuration,
                                       options: try MountOptions.split(options),
                                       debug: debug, ioUring: ioUring, logger: logger)
            logger.debug("\(mountPath): libfuse options \(mount.mountOptions.joined(separator: ",")); names cached \(configuration.entryTimeout) s, attributes \(configuration.attributeTimeout) s; \(configuration.maxThreads) threads; writeback \(configuration.writebackCache ? "on" : "off"), keep cache \(configuration.keepCache ? "on" : "off"), passthrough \(mount.configuration.usesPassthrough ? "asked" : "off")")
        } catch {
            if toSyslog { logger.error("\(backingPath) at \(mountPath): \(error)") }
            Daemon.reportFailure("\(error)", readyFD: readyFD)
            throw ExitCode(1)
        }
        let readyFD = readyFD
        do {
            try mount.mount { Daemon.warn($0, readyFD: readyFD) }
        } catch {
            Daemon.reportFailure("\(error)", readyFD: readyFD)
            throw ExitCode(1)
        }
        // For `appsandboxfs status`: this driver's pid and options. (Whether
        // the kernel took passthrough up is known only once INIT is answered,
        // on the loop's first request: the transport logs it then.)
        let statusRecord = StatusFile.publish(for: self, backing: backingPath, mountpoint: mountPath, appName: name,
                                              passthrough: mount.configuration.usesPassthrough, deviceState: startState.rawValue)
        logger.info("appsandboxfs \(Version.description): serving \(backingPath) at \(mountPath) as \(name) (pid \(getpid()), passthrough \(mount.configuration.usesPassthrough ? "asked for" : "off"))")
        // For `appsandboxfs lock|unlock|reboot`.
        let controlSocket = DeviceControl.serve(configuration.dataProtection, record: statusRecord)
        Daemon.reportReady(readyFD: readyFD)
        // Until the mount is gone (unmounted, SIGTERM or SIGINT); then tmp
        // is emptied (T2). `unmount` waits for this process to exit.
        let status = mount.serve { logger.warning("\($0)") }
        if status != 0 { logger.error("\(mountPath): reading /dev/fuse failed: \(String(cString: strerror(-status)))") }
        statusRecord?.remove()
        if let controlSocket { unlink(controlSocket) }
        logger.info("\(mountPath): unmounted; exiting")
    }

    /// Each node the kernel holds keeps a descriptor open: allow as many as
    /// the system lets this process have.
    static func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    static func guessAppName(in backing: String) throws -> String {
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
enum FileManagerless {
    static func list(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else { throw ValidationError("\(path): \(String(cString: strerror(errno)))") }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
