import Logging
import SystemPackage
import SandboxPolicy

/// Everything the file system needs to know about one mount. Its defaults
/// are `appsandboxfs mount`'s and the test fixture's (both modes): the
/// command line's options start from `Defaults`, the in-process fixture
/// from this type's own values, so no default is copied by hand.
public struct MountConfiguration: Sendable {
    /// The settings of a mount made without options.
    public enum Defaults {
        /// Names cached for a day: the driver makes every change.
        public static let entryTimeout = 86_400.0
        public static let keepCache = true
        public static let writebackCache = false
        public static let passthrough = true
        public static let killPrivV2 = true
        public static let maxThreads = 10
    }

    /// Absolute path of the backing directory (the container's data).
    public var backing: String
    /// Absolute path where the container is mounted.
    public var mountpoint: String
    public var layout: ContainerLayout
    /// A folder shown read-only as `<App>.app` instead of the backing one.
    public var bundleOverride: String?
    /// How long the kernel may trust names. The driver is the only one to
    /// change names through the mount, so long is safe; shorten it when
    /// something else adds or removes names in the backing directory while
    /// mounted.
    public var entryTimeout: Double = Defaults.entryTimeout
    /// How long the kernel may trust attributes. With default_permissions
    /// the kernel checks modes and owners against these, so a chmod or
    /// chown made in the backing directory while mounted must show soon:
    /// at most `longestAttributeTimeout`, whatever the entry timeout.
    public var attributeTimeout: Double = MountConfiguration.attributeTimeout(for: Defaults.entryTimeout)
    public static let longestAttributeTimeout = 1.0
    /// The attribute timeout that goes with an entry timeout: the same, at
    /// most `longestAttributeTimeout`.
    public static func attributeTimeout(for entryTimeout: Double) -> Double {
        min(entryTimeout, longestAttributeTimeout)
    }
    /// Keep the kernel's page cache across opens (invalidated by the driver
    /// when it learns a file changed).
    public var keepCache = Defaults.keepCache
    public var writebackCache = Defaults.writebackCache
    /// Let the kernel read and write open files' backing files itself (FUSE
    /// passthrough). Off with the writeback cache, which the kernel will not
    /// combine with it; each open falls back to plain requests when the
    /// kernel or the driver's privileges refuse.
    public var passthrough = Defaults.passthrough
    /// With passthrough, take over clearing set-ID bits from the kernel
    /// (FUSE_HANDLE_KILLPRIV_V2), which spares a GETXATTR round trip before
    /// each passthrough write. Off only to compare.
    public var killPrivV2 = Defaults.killPrivV2
    /// Whether opens ask for passthrough.
    public var usesPassthrough: Bool { passthrough && !writebackCache && capacity == nil }
    public var maxThreads = Defaults.maxThreads
    /// O_PATH descriptors kept open for files the kernel knows (the others
    /// are opened again from their file handles). nil: a quarter of the
    /// descriptor limit, at most 4,096.
    public var descriptorCacheSize: Int?
    /// Keep tmp's contents at unmount (T4).
    public var keepTmp = false
    /// A folder only the driver's user may write (the status records'):
    /// the locks that order drivers of one container around tmp are files
    /// there, out of reach of anyone who can open the backing folder. nil:
    /// the locks are taken on the backing folder and its tmp themselves.
    public var lockFolder: FileDescriptor?
    /// Where denial lines go besides standard error (or `denialLogger`).
    public var denialLogFile: String?
    /// The denial lines' own log stream (a background driver's goes to
    /// syslog under its own name); nil: standard error.
    public var denialLogger: Logger?
    /// `--capacity`: the disk's size in bytes (Q1), nil for the backing
    /// file system's own. Such mounts do not use passthrough: the driver
    /// counts every write.
    public var capacity: Int64?
    /// The device around the container: its state, the container's default
    /// class and the open handles (P1-P9). The command line keeps a
    /// reference to change the state (`appsandboxfs lock`).
    public var dataProtection = DataProtection(defaultClass: ProtectionClass.containerDefault, state: .unlocked)

    public init(backing: String, mountpoint: String, layout: ContainerLayout) {
        self.backing = backing
        self.mountpoint = mountpoint
        self.layout = layout
    }
}
