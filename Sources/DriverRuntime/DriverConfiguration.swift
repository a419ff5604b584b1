import AppSandboxFS
import Logging
import SandboxPolicy
import SystemPackage

/// What one driver run is asked to do: `appsandboxfs mount`'s options
/// (each field is the flag of the same name), with the same defaults for
/// every caller. The file system's own defaults are `MountConfiguration`'s
/// (`MountConfiguration.Defaults`): a field here that sets one of its
/// values starts from it, so the command line, the fixture's driver
/// process and the in-process fixture mount alike without copying a value.
public struct DriverConfiguration: Sendable {
    /// Absolute paths: the driver works from / (it keeps no folder of its
    /// caller busy).
    public var backing: String
    public var mountpoint: String
    /// nil: the one `*.app` folder in `backing` names the app.
    public var appName: String?
    public var bundle: String?
    public var keepTmp = false
    /// Where each denial line also goes (`--denial-log`).
    public var denialLog: String?
    /// Where a background driver's messages go (`--log`); nil: syslog.
    public var log: String?
    /// nil: info (debug with `debug`).
    public var logLevel: Logger.Level?
    /// libfuse's -d: every request logged.
    public var debug = false
    /// Seconds the kernel may cache names (attributes: at most
    /// `MountConfiguration.longestAttributeTimeout`).
    public var cacheTimeout = MountConfiguration.Defaults.entryTimeout
    public var writeback = MountConfiguration.Defaults.writebackCache
    public var passthrough = MountConfiguration.Defaults.passthrough
    public var killPrivV2 = MountConfiguration.Defaults.killPrivV2
    public var ioUring = false
    public var keepCache = MountConfiguration.Defaults.keepCache
    /// The device state the mount starts in (P5).
    public var deviceState = DeviceState.unlocked
    public var threads = MountConfiguration.Defaults.maxThreads
    public var descriptorCache: Int?
    /// `--capacity` in bytes (Q1).
    public var capacity: Int64?
    /// `-o` options for libfuse, one per element.
    public var mountOptions: [String] = []
    /// Create the container's folders when the backing directory lacks them.
    public var create = false
    /// Clean up a stale mount at the mountpoint first.
    public var recover = false
    /// Serve in this process until unmounted, instead of in a background
    /// driver started for it.
    public var foreground = false
    /// The background driver's side of a start: the descriptor its parent
    /// waits on for "ready" (`Daemon`).
    public var readyFD: Int32?

    public init(backing: String, mountpoint: String, appName: String? = nil) {
        self.backing = backing
        self.mountpoint = mountpoint
        self.appName = appName
    }

    /// The file system's configuration for `layout`. What only a running
    /// driver knows (the lock folder, the loggers, the device's starting
    /// class) is filled in by `ContainerDriver`.
    public func mountConfiguration(layout: ContainerLayout) -> MountConfiguration {
        var configuration = MountConfiguration(backing: backing, mountpoint: mountpoint, layout: layout)
        configuration.bundleOverride = bundle
        configuration.keepTmp = keepTmp
        configuration.denialLogFile = denialLog
        configuration.entryTimeout = cacheTimeout
        configuration.attributeTimeout = MountConfiguration.attributeTimeout(for: cacheTimeout)
        configuration.maxThreads = threads
        configuration.descriptorCacheSize = descriptorCache
        configuration.writebackCache = writeback
        configuration.passthrough = passthrough
        configuration.killPrivV2 = killPrivV2
        configuration.keepCache = keepCache
        configuration.capacity = capacity
        return configuration
    }

    /// The options as the status record keeps them (defaults included).
    /// `passthrough`: whether it is asked for (`usesPassthrough`).
    public func recordOptions(passthrough: Bool) -> MountRecord.Options {
        MountRecord.Options(
            bundle: bundle, keepTmp: keepTmp, denialLog: denialLog, log: log, cacheTimeout: cacheTimeout,
            writeback: writeback, keepCache: keepCache, threads: threads, debug: debug, passthrough: passthrough,
            mountOptions: mountOptions, capacity: capacity)
    }
}
