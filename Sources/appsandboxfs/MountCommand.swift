import AppSandboxFS
import ArgumentParser
import DriverRuntime

struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        _superCommandName: "appsandboxfs",
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
    var cacheTimeout: Double = MountConfiguration.Defaults.entryTimeout

    @Flag(inversion: .prefixedNo, help: "Let the kernel cache writes and send them in large batches (writeback cache).")
    var writeback = MountConfiguration.Defaults.writebackCache

    @Flag(inversion: .prefixedNo,
          help: "Let the kernel read and write open files' backing files directly (FUSE passthrough; needs root and Linux 6.9+, off with --writeback).")
    var passthrough = MountConfiguration.Defaults.passthrough

    /// To compare: with passthrough, leave clearing set-ID bits to the
    /// kernel, at a GETXATTR round trip per passthrough write.
    @Flag(name: .customLong("killpriv-v2"), inversion: .prefixedNo, help: .hidden)
    var killPrivV2 = MountConfiguration.Defaults.killPrivV2

    @Flag(name: .customLong("io-uring"),
          help: "Serve requests through FUSE over io_uring when the kernel offers it (Linux 6.14+, fuse module parameter enable_uring=Y, which this option does not set); else /dev/fuse, with one line saying why.")
    var ioUring = false

    @Flag(inversion: .prefixedNo, help: "Keep the kernel's page cache of a file across opens.")
    var keepCache = MountConfiguration.Defaults.keepCache

    @Option(help: "The device state the mount starts in (P5): unlocked, locked (no grace) or before-first-unlock.")
    var deviceState: String = "unlocked"

    @Option(help: "Worker threads serving requests.")
    var threads: Int = MountConfiguration.Defaults.maxThreads

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
        // The mountpoint without links, as the kernel will list it: an
        // absolute link target is inside only through the mount's own path
        // (E1), and a link in that path could be re-pointed.
        var driver = DriverConfiguration(backing: absolutePath(backing), mountpoint: resolvedPath(absolutePath(mountpoint)),
                                         appName: appName)
        driver.bundle = bundle.map(absolutePath)
        driver.keepTmp = keepTmp
        driver.denialLog = denialLog.map(absolutePath)
        driver.log = log.map(absolutePath)
        driver.logLevel = logLevel?.level
        driver.debug = debug
        driver.cacheTimeout = cacheTimeout
        driver.writeback = writeback
        driver.passthrough = passthrough
        driver.killPrivV2 = killPrivV2
        driver.ioUring = ioUring
        driver.keepCache = keepCache
        driver.deviceState = try ProtectionArguments.deviceState(deviceState)
        driver.threads = threads
        driver.descriptorCache = descriptorCache
        driver.capacity = capacity?.bytes
        driver.mountOptions = try MountOptions.split(options)
        driver.create = create
        driver.recover = recover
        driver.foreground = foreground
        driver.readyFD = readyFD
        do {
            try ContainerDriver(driver).run()
        } catch let exit as DriverExit {
            throw ExitCode(exit.code)
        }
    }
}
