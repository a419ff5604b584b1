// A container served by threads of the test process (`Options.inProcess`):
// no program is started to lay it out, mount it or unmount it, so a
// container's life costs a few milliseconds instead of the tens that
// process starts take (docs/performance.md, "A container's life for a test
// fixture"). The mount is the driver's own (DriverRuntime's
// `ContainerDriver`, with `appsandboxfs mount`'s configuration and
// defaults, making AppSandboxFS's `ContainerMount`, the one way a mount is
// made); what differs is the process around it, see `InProcessDriver.start`.

#if os(Linux)
import AppSandboxFS
import DriverRuntime
import Glibc
import Locking
import Logging
import POSIXHelpers
import SandboxPolicy
import Spawning

final class InProcessDriver: ContainerServer {
    /// The mount while it is served; let go as soon as serving ends, so
    /// that the file system's node table and the backing descriptors it
    /// keeps open are closed then, not when the `MountedContainer` goes (a
    /// suite may keep many). (The connection itself ends earlier: libfuse
    /// closes /dev/fuse when the session unmounts, so a file still open in
    /// a detached mount fails with ENOTCONN.)
    private let mount: Locked<ContainerMount?>
    /// The device around the container (P5): `lock()` and `unlock()` change
    /// it directly, where a driver process is reached through its socket.
    let dataProtection: AppSandboxFS.DataProtection
    /// What it was mounted with, as `appsandboxfs mount` would be, and the
    /// file system's configuration made from it.
    let settings: DriverConfiguration
    let configuration: MountConfiguration
    private let watcher: MountWatcher?
    /// Readable once serving has ended (many waiters may poll it).
    private let ended: (read: Int32, write: Int32)
    private let status = Locked<Int32?>(nil)
    private let logDescriptor: Int32

    private init(mount: ContainerMount, dataProtection: AppSandboxFS.DataProtection, settings: DriverConfiguration,
                 configuration: MountConfiguration, watcher: MountWatcher?, ended: (read: Int32, write: Int32),
                 logDescriptor: Int32) {
        self.mount = Locked(mount)
        self.dataProtection = dataProtection
        self.settings = settings
        self.configuration = configuration
        self.watcher = watcher
        self.ended = ended
        self.logDescriptor = logDescriptor
    }

    deinit {
        close(ended.read)
        close(ended.write)
        close(logDescriptor)
    }

    /// Mounts `backing` at `mountpoint` with the settings of `appsandboxfs
    /// mount` without options, and serves it on a thread of this process
    /// until it is unmounted. The driver log and the denial log are the
    /// same files as a driver process's. What a driver process does for
    /// itself is done per thread or left out here: each serving thread has
    /// umask 0 in a file-system context of its own (the test process keeps
    /// its umask), the session takes no signal (the test process keeps its
    /// handlers), and no status record or control socket is published.
    static func start(backing: String, mountpoint: String, layout: ContainerLayout, root: String,
                      options: MountedContainer.Options) throws -> InProcessDriver {
        let logDescriptor = open(root + "/driver.log", O_WRONLY | O_APPEND | O_CLOEXEC)
        guard logDescriptor >= 0 else { throw FixtureError("\(root)/driver.log: \(errorText(errno))") }
        var handedOver = false
        defer { if !handedOver { close(logDescriptor) } }
        let logger = Logger(label: "appsandboxfs") { _ in LineLogHandler(descriptor: logDescriptor, bare: false) }
        let denialLogger = Logger(label: "appsandboxfs.denials") { _ in
            var handler = LineLogHandler(descriptor: logDescriptor, bare: true)
            handler.logLevel = .trace
            return handler
        }
        // `appsandboxfs mount`'s settings: the driver runtime's defaults,
        // with this container's options.
        let settings = driverConfiguration(backing: backing, mountpoint: mountpoint, appName: layout.appName,
                                           root: root, options: options)
        let mount: ContainerMount
        let configuration: MountConfiguration
        do {
            (mount, configuration) = try ContainerDriver(settings).mountInCallersProcess(
                layout: layout, logger: logger, denialLogger: denialLogger) { logger.warning("\($0)") }
        } catch {
            throw FixtureError("mounting \(backing) at \(mountpoint) in-process: \(error)")
        }
        options.trace?.mark("mounted (session, tmp, mount(2))")
        guard let ended = try? makePipe() else {
            mount.session.unmount()
            throw FixtureError("pipe2: \(errorText(errno))")
        }
        let driver = InProcessDriver(mount: mount, dataProtection: configuration.dataProtection,
                                     settings: settings, configuration: configuration,
                                     watcher: MountWatcher.start(mountpoint: mountpoint),
                                     ended: ended, logDescriptor: logDescriptor)
        handedOver = true
        options.trace?.mark("watcher started")
        logger.info("serving \(backing) at \(mountpoint) as \(layout.appName) in the test process (pid \(getpid()))")
        // A thread of its own, not a task: serving blocks, and the task
        // pool's few threads must never wait on file I/O.
        guard startThread(detached: true, { driver.serveUntilUnmounted(logger: logger) }) != nil else {
            mount.session.unmount()
            driver.watcher?.release()
            throw FixtureError("pthread_create: \(errorText(errno))")
        }
        options.trace?.mark("serving thread started")
        return driver
    }

    private func serveUntilUnmounted(logger: Logger) {
        let loop: Int32
        do {
            guard let serving = mount.withLock({ $0 }) else { return }
            loop = serving.serve(privateUmask: true) { logger.warning("\($0)") }
        }
        mount.withLock { $0 = nil }
        if loop != 0 { logger.error("reading /dev/fuse failed: \(errorText(-loop))") }
        logger.info("unmounted; serving ended")
        status.withLock { $0 = loop == 0 ? 0 : 1 }
        var byte: UInt8 = 1
        _ = write(ended.write, &byte, 1)
    }

    var pid: pid_t { getpid() }

    var exitStatus: Int32? { status.withLock { $0 } }

    var hasExited: Bool { exitStatus != nil }

    func waitForExit(timeout: Double) -> Int32? {
        var descriptor = pollfd(fd: ended.read, events: Int16(POLLIN), revents: 0)
        let deadline = monotonicSeconds() + timeout
        while exitStatus == nil {
            let left = deadline - monotonicSeconds()
            if left <= 0 { return nil }
            _ = poll(&descriptor, 1, Int32(min(left * 1000, 1000).rounded(.up)))
        }
        return exitStatus
    }

    /// No signal reaches the test process: SIGTERM, SIGINT, SIGHUP and
    /// SIGKILL end serving as a driver process's handlers (or its death)
    /// would: the loop stops and the mount is detached.
    func signal(_ number: Int32) {
        guard [SIGTERM, SIGINT, SIGHUP, SIGKILL].contains(number) else { return }
        mount.withLock { $0 }?.session.requestExit()
    }

    func releaseWatcher() { watcher?.release() }

    /// The configuration the fixture's driver process gets from its command
    /// line (`appsandboxfs mount BACKING MOUNTPOINT --foreground ...`, made
    /// in `MountedContainer.mount`): the runtime's defaults, this
    /// container's options, the fixture's denial log.
    static func driverConfiguration(backing: String, mountpoint: String, appName: String, root: String,
                                    options: MountedContainer.Options) -> DriverConfiguration {
        var settings = DriverConfiguration(backing: backing, mountpoint: mountpoint, appName: appName)
        settings.bundle = options.bundle
        settings.keepTmp = options.keepTmp
        settings.denialLog = root + "/denials.log"
        settings.mountOptions = options.mountOptions.flatMap { $0.split(separator: ",").map(String.init) }
        settings.foreground = true
        return settings
    }
}
#endif
