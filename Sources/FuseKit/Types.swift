import CFuse
import Glibc
import SystemPackage

/// The kernel's name for a file system object: chosen by the file system in
/// `lookup` (and friends) and handed back on every later request until the
/// kernel forgets it. 1 is always the root.
public struct NodeID: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public static let root = NodeID(rawValue: UInt64(FUSE_ROOT_ID))
}

/// A number the file system chose in `open`/`opendir`/`create` and gets back
/// on every request made through that open file.
public struct FileHandle: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
}

/// A file name as the kernel passed it: valid only during the call that
/// received it. The C string is there so that `*at()` calls need no copy.
/// Do not keep it past the call: the kernel's buffer is reused.
public struct FileName {
    public let cString: UnsafePointer<CChar>

    init(_ cString: UnsafePointer<CChar>) { self.cString = cString }

    public var string: String { String(cString: cString) }
}

/// Who made the request.
public struct Caller: Sendable, Hashable {
    public var uid: uid_t
    public var gid: gid_t
    public var pid: pid_t
    public var umask: mode_t
}

/// Attributes of a file plus how long the kernel may cache them.
public struct Attributes: Sendable {
    public var stat: stat
    public var timeout: Double
    public init(_ stat: stat, timeout: Double) {
        self.stat = stat
        self.timeout = timeout
    }
}

/// The answer to a lookup: which node, its attributes, and cache lifetimes.
public struct Entry: Sendable {
    public var node: NodeID
    public var generation: UInt64
    public var stat: stat
    public var attributeTimeout: Double
    public var entryTimeout: Double

    public init(node: NodeID, generation: UInt64 = 0, stat: stat, attributeTimeout: Double, entryTimeout: Double) {
        self.node = node
        self.generation = generation
        self.stat = stat
        self.attributeTimeout = attributeTimeout
        self.entryTimeout = entryTimeout
    }

    /// A negative entry: "no such name", cached by the kernel for `timeout`.
    public static func negative(timeout: Double) -> Entry {
        Entry(node: NodeID(rawValue: 0), stat: Glibc.stat(), attributeTimeout: 0, entryTimeout: timeout)
    }

    var cValue: fuse_entry_param {
        var e = fuse_entry_param()
        e.ino = fuse_ino_t(node.rawValue)
        e.generation = generation
        e.attr = stat
        e.attr_timeout = attributeTimeout
        e.entry_timeout = entryTimeout
        return e
    }
}

/// How the kernel should treat an open file.
public struct OpenOptions: Sendable, Hashable {
    public var directIO = false
    public var keepCache = false
    public var cacheDirectory = false
    public var noFlush = false
    /// A descriptor of the open file's backing file: with passthrough granted
    /// (`FuseSession(passthrough: true)`, a kernel that offers it, a driver
    /// allowed to register files), the kernel reads and writes that file
    /// itself and this handle sees no read or write requests. It must stay
    /// open until the handle's release. Regular files only.
    public var backingDescriptor: FileDescriptor?
    public init(directIO: Bool = false, keepCache: Bool = false, cacheDirectory: Bool = false,
                noFlush: Bool = false, backingDescriptor: FileDescriptor? = nil) {
        self.directIO = directIO
        self.keepCache = keepCache
        self.cacheDirectory = cacheDirectory
        self.noFlush = noFlush
        self.backingDescriptor = backingDescriptor
    }
}

/// Where a READ or WRITE comes from, as the kernel marks it.
public enum DataPath: Sendable, Hashable {
    /// The caller's own read(2) or write(2), passed on as it is: a READ
    /// naming the caller's lock owner (a handle opened with
    /// `OpenOptions.directIO`), a WRITE that is not writeback.
    case caller
    /// The kernel's page cache: a READ that fills it (a page fault on a
    /// mapping, readahead, or a read(2) through a handle without direct
    /// I/O), or a WRITE of its dirty pages (FUSE_WRITE_CACHE: writeback,
    /// msync, an invalidation; the handle is any writable one of the node
    /// and the request names no caller). So on a direct I/O handle, a
    /// `pageCache` READ serves a mapping of it, never a read(2).
    case pageCache
}

/// The open(2) flags of a request, as the kernel sent them.
public struct OpenFlags: RawRepresentable, Sendable, Hashable {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public var accessMode: Int32 { rawValue & O_ACCMODE }
    public var writes: Bool { accessMode == O_WRONLY || accessMode == O_RDWR }
    public var truncates: Bool { rawValue & O_TRUNC != 0 }
    public var appends: Bool { rawValue & O_APPEND != 0 }
}

/// A new time in setattr.
public enum TimeChange: Sendable, Hashable {
    case now
    case to(seconds: Int, nanoseconds: Int)
}

/// What a setattr request changes; nil means "leave as is".
public struct AttributeChanges: Sendable {
    public var mode: mode_t?
    public var uid: uid_t?
    public var gid: gid_t?
    public var size: off_t?
    public var accessTime: TimeChange?
    public var modificationTime: TimeChange?
    public var changesCtimeOnly = false
    public init() {}
}

/// Flags of rename(2)/renameat2(2).
public struct RenameFlags: OptionSet, Sendable, Hashable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let noReplace = RenameFlags(rawValue: 1)
    public static let exchange = RenameFlags(rawValue: 2)
    public static let whiteout = RenameFlags(rawValue: 4)
}

/// Flags of setxattr(2).
public struct XattrFlags: OptionSet, Sendable, Hashable {
    public var rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    public static let create = XattrFlags(rawValue: 1)
    public static let replace = XattrFlags(rawValue: 2)
}

/// The mount's kernel-side options, chosen by the file system in `initialize`.
public struct ConnectionSettings: Sendable {
    /// Capabilities the kernel offers (FUSE_CAP_* bits).
    public let capable: UInt32
    /// Capabilities the file system wants.
    public var want: UInt32
    public var maxWrite: UInt32
    public var maxReadahead: UInt32
    public var maxBackground: UInt32
    public var congestionThreshold: UInt32
    public var timeGranularity: UInt32
}

/// The FUSE_CAP_* bits the file systems here use.
public struct Capability: OptionSet, Sendable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let asyncRead = Capability(rawValue: 1 << 0)
    public static let posixLocks = Capability(rawValue: 1 << 1)
    public static let atomicOTrunc = Capability(rawValue: 1 << 3)
    public static let exportSupport = Capability(rawValue: 1 << 4)
    public static let dontMask = Capability(rawValue: 1 << 6)
    public static let spliceWrite = Capability(rawValue: 1 << 7)
    public static let spliceMove = Capability(rawValue: 1 << 8)
    public static let spliceRead = Capability(rawValue: 1 << 9)
    public static let flockLocks = Capability(rawValue: 1 << 10)
    public static let autoInvalidateData = Capability(rawValue: 1 << 12)
    public static let readdirPlus = Capability(rawValue: 1 << 13)
    public static let readdirPlusAuto = Capability(rawValue: 1 << 14)
    public static let asyncDirectIO = Capability(rawValue: 1 << 15)
    public static let writebackCache = Capability(rawValue: 1 << 16)
    public static let parallelDirOps = Capability(rawValue: 1 << 18)
    public static let handleKillPriv = Capability(rawValue: 1 << 20)
    public static let cacheSymlinks = Capability(rawValue: 1 << 23)
    public static let explicitInvalidateData = Capability(rawValue: 1 << 25)
}
