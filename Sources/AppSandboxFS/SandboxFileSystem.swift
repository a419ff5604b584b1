import BackingStore
import CLinux
import FuseKit
import Glibc
import Locking
import MountInfo
import Logging
import SandboxPolicy
import SystemPackage
import Foundation

/// The container file system: a passthrough of the backing directory in
/// the manner of libfuse's passthrough_hp (every backing call an `*at()`
/// call relative to a node's O_PATH descriptor, which a node holds only
/// while it is in the `DescriptorCache`), with every change
/// first put to `SandboxPolicy`. Its operations live in the extensions
/// beside this file, grouped by what they touch.
public final class SandboxFileSystem: FileSystemOperations {
    let configuration: MountConfiguration
    let nodes: NodeTable
    let denials: DenialLog
    /// Held while a class is written through the mount (see `protectionClass(of:)`).
    let classWriters = Locked(())
    /// O_PATH descriptor of the folder shown as `<App>.app`, when it comes
    /// from outside the backing directory (`mount --bundle`).
    let bundleRoot: FileDescriptor?
    /// `<App>.app`, as bytes: names are compared byte for byte (B2).
    let bundleName: [UInt8]
    /// The disk of `mount --capacity` (Q1-Q3), nil without one.
    let capacity: CapacityLedger?
    /// On a device, what each app owns, for its links (A6); learned lazily.
    let deviceOwners = DeviceOwners()
    /// tmp's life with this mount (T2-T4), from the root descriptor opened
    /// at mount: the driver empties it before mounting and after its
    /// session ends.
    public let tmp: ContainerTmp
    /// Who owns what the driver makes before it gives it to the caller.
    let driverUID = geteuid()
    /// The session, for telling the kernel to drop cached entries. Held
    /// weakly: the session holds this file system strongly, and a strong
    /// reference back would keep both alive, so that the session's deinit
    /// (fuse_session_destroy) would never run.
    let session = Locked(WeakSession())
    /// The mount's device ("major:minor", as the mount table lists it),
    /// noted once mounted: where the mountpoint's path must still lead for
    /// an absolute link target to count as inside (E1, E2).
    let mountedDevice = Locked<String?>(nil)
    /// The same device as stat(2)'s st_dev, for the driver's status record
    /// (one read of the mount table serves both).
    public var mountedDeviceNumber: UInt64? {
        mountedDevice.withLock { $0 }.flatMap { MountEntry.deviceNumber(of: $0) }
    }
    /// Whether the driver runs as root, which alone can give a file it
    /// creates to another user (`giveToCaller`).
    let driverIsRoot = geteuid() == 0

    /// Nodes, the descriptor cache and tmp close their own descriptors; the
    /// bundle's root (only ever opened from) is the file system's.
    deinit {
        if let bundleRoot { Backing.close(bundleRoot) }
    }

    struct WeakSession {
        weak var value: FuseSession?
    }

    public init(configuration: MountConfiguration) throws {
        self.configuration = configuration
        let rootFD: FileDescriptor
        do {
            rootFD = try Backing.openRoot(configuration.backing)
        } catch {
            throw MountError.backingMissing(path: configuration.backing, errno: error.rawValue)
        }
        do {
            tmp = try ContainerTmp(root: rootFD, keep: configuration.keepTmp, lockFolder: configuration.lockFolder,
                                   device: configuration.layout.isDevice)
        } catch {
            throw MountError.backingMissing(path: configuration.backing, errno: error.rawValue)
        }
        let rootStat: stat
        do { rootStat = try Backing.stat(rootFD) } catch {
            throw MountError.backingMissing(path: configuration.backing, errno: error.rawValue)
        }
        if let bundle = configuration.bundleOverride {
            do { bundleRoot = try Backing.openRoot(bundle) } catch {
                throw MountError.bundleMissing(path: bundle, errno: error.rawValue)
            }
        } else {
            bundleRoot = nil
        }
        var roots = [(fd: rootFD, path: configuration.backing)]
        if let bundleRoot, let bundle = configuration.bundleOverride { roots.append((bundleRoot, bundle)) }
        let cache = DescriptorCache(capacity: configuration.descriptorCacheSize ?? DescriptorCache.defaultCapacity(), roots: roots)
        nodes = NodeTable(rootFD: rootFD, stat: rootStat, layout: configuration.layout, cache: cache)
        bundleName = Array(configuration.layout.bundleName.utf8)
        denials = try DenialLog(file: configuration.denialLogFile, logger: configuration.denialLogger)
        capacity = configuration.capacity.map { CapacityLedger(capacity: $0, roots: roots.map(\.fd)) }
    }

    /// Gives the file system its session, once mounted.
    public func attach(_ session: FuseSession) {
        self.session.withLock { $0.value = session }
        // From the table, not stat(2): nothing is served yet, and a stat
        // would wait for this very driver.
        let device = MountTable.entry(at: configuration.mountpoint)?.device
        mountedDevice.withLock { $0 = device }
    }

    // MARK: Connection

    public func initialize(_ settings: inout ConnectionSettings) {
        var want = Capability(rawValue: settings.want)
        // No export support: it would bring lookups of "..", which could climb
        // out of the backing root.
        want.remove(.exportSupport)
        want.insert([.readdirPlus, .readdirPlusAuto, .parallelDirOps, .asyncRead, .atomicOTrunc])
        // Never FUSE_CACHE_SYMLINKS: a link's text never changes, but whether
        // it stays inside does (E2). `d/../..` read once while `d` is a
        // folder would climb out of the mount, served from the kernel's
        // cache, once `d` becomes a link to `.`; every use must reach
        // readlink, which judges the target on the tree as it is now.
        want.remove(.cacheSymlinks)
        // Locks stay in the kernel: with neither flag set it keeps POSIX and
        // flock locks itself, which is exact for a single mount.
        want.remove([.posixLocks, .flockLocks])
        if configuration.writebackCache { want.insert(.writebackCache) } else { want.remove(.writebackCache) }
        settings.want = want.rawValue
        settings.maxWrite = 1 << 20
        settings.maxReadahead = 1 << 20
        settings.timeGranularity = 1
    }

    // The checks of each request, and the one path through them: `checked`
    // (SandboxFileSystem+Checks.swift).

    func entry(for node: Node, stat: stat) -> Entry {
        Entry(node: node.id, stat: stat, attributeTimeout: configuration.attributeTimeout,
              entryTimeout: entryTimeout(of: node))
    }

    /// How long the kernel may trust a name. On a device, the UUID folders
    /// come and go by `install` and `uninstall` in the backing directory:
    /// the kernel keeps them no longer than attributes (a name it does not
    /// find is not cached, so a new container shows at once).
    func entryTimeout(of node: Node) -> Double {
        guard nodes.layout.isDevice else { return configuration.entryTimeout }
        switch zone(of: node) {
        case .bundleContainer, .dataContainer, .groupContainer:
            return min(configuration.entryTimeout, MountConfiguration.longestAttributeTimeout)
        default:
            return configuration.entryTimeout
        }
    }

    func zone(of node: Node) -> Zone { nodes.zone(of: node) }

    func zone(ofChild name: UnsafePointer<CChar>, in parent: Node) -> Zone {
        nodes.zone(ofChild: UnsafeRawBufferPointer(start: name, count: strlen(name)), in: parent)
    }

    /// Opens `name` in `parent` (O_PATH) and records a lookup of it.
    func lookupChild(_ parent: Node, _ name: UnsafePointer<CChar>) throws(Errno) -> (Node, stat) {
        // The kernel never asks for these without export support; refuse
        // them anyway so that ".." can never lead above the backing root.
        if Self.isDotOrDotDot(name) { throw .noSuchFileOrDirectory }
        let fd: FileDescriptor
        if parent === nodes.root, let bundleRoot, strlen(name) == bundleName.count,
           memcmp(name, bundleName, bundleName.count) == 0 {
            fd = try Backing.openPath(in: bundleRoot, ".")
        } else {
            fd = try parent.withFD { (folder) throws(Errno) in try Backing.openPath(in: folder, name) }
        }
        let attributes: stat
        do { attributes = try Backing.stat(fd) } catch {
            Backing.close(fd)
            throw error
        }
        let node = nodes.remember(fd: fd, stat: attributes, parent: parent, name: NodeName(name))
        return (node, attributes)
    }

    /// Records a lookup of `name` in `parent`, a regular file the driver
    /// just created and holds open as `open`: its attributes and handle
    /// come from that descriptor, and its node opens no descriptor of its
    /// own until a request needs one (`NodeTable.rememberCreated`).
    func createdChild(_ parent: Node, _ name: UnsafePointer<CChar>, open: FileDescriptor) throws(Errno) -> (Node, stat) {
        let attributes = try Backing.stat(open)
        guard let node = nodes.rememberCreated(open: open, stat: attributes, parent: parent, name: NodeName(name)) else {
            // No handle: an O_PATH descriptor of its own, opened through
            // `open`, not by name (which may hold another file by now).
            let fd = try Backing.reopen(open, flags: Int32(asfs_O_PATH))
            return (nodes.remember(fd: fd, stat: attributes, parent: parent, name: NodeName(name)), attributes)
        }
        return (node, attributes)
    }

    /// Gives a file the driver just created (as root) in `parent` to the
    /// caller, as the kernel would have: the caller's uid, and its gid
    /// unless the folder is set-group-ID (then the folder's group, which
    /// the backing store set). Through the descriptor of what the driver
    /// made (an O_PATH one for a folder, a link or a device), never by
    /// name. Returns whether it changed the owner. A driver that is not
    /// root changes nothing: it cannot give a file away, and the file is
    /// already its user's, who made the mount and (without allow_other) is
    /// the only caller; where allow_other lets others in, their files stay
    /// the mounting user's, as with any FUSE file system a user mounts.
    @discardableResult
    func giveToCaller(_ request: Request, _ fd: FileDescriptor, folder parent: Node) throws(Errno) -> Bool {
        let caller = request.caller
        // A driver that is not root gives nothing away (see above); a
        // caller whose identity is root's, the driver's own, needs nothing.
        if !driverIsRoot || (caller.uid == 0 && caller.gid == 0) { return false }
        let parentStat = try parent.withFD { (folder) throws(Errno) in try Backing.stat(folder) }
        let inheritsGroup = parentStat.st_mode & S_ISGID != 0
        let gid = inheritsGroup ? gid_t.max : caller.gid
        if caller.uid == 0 && (inheritsGroup || caller.gid == 0) { return false }
        try Backing.chown(fd, uid: caller.uid, gid: gid)
        return true
    }

    // MARK: Paths, for denial lines and escape checks (from the tree)

    /// The absolute path through the mountpoint, for the denial log, as bytes.
    func mountPath(_ place: Place) -> [UInt8] {
        var components: [[UInt8]]
        switch place {
        case .node(let node):
            components = nodes.components(of: node)
        case .child(let folder, let name):
            components = nodes.components(of: folder)
            components.append(nameBytes(name))
        }
        var path = Array(configuration.mountpoint.utf8)
        if path.last == UInt8(ascii: "/") && !components.isEmpty { path.removeLast() }
        for name in components {
            path.append(UInt8(ascii: "/"))
            path += name
        }
        return path
    }
}

/// A name the kernel passed, as its bytes.
@inline(__always)
func nameBytes(_ name: UnsafePointer<CChar>) -> [UInt8] {
    Array(UnsafeRawBufferPointer(start: name, count: strlen(name)))
}

// Answering a checked request's result.
extension SandboxFileSystem {
    func send(_ result: Result<Void, Errno>, _ reply: consuming ReplyStatus) {
        switch result {
        case .success: reply.ok()
        case .failure(let error): reply.error(error)
        }
    }

    func send(_ result: Result<stat, Errno>, _ reply: consuming ReplyAttributes) {
        switch result {
        case .success(let attributes): reply.attributes(attributes, timeout: configuration.attributeTimeout)
        case .failure(let error): reply.error(error)
        }
    }

    func send(_ result: Result<Int, Errno>, _ reply: consuming ReplyWrite) {
        switch result {
        case .success(let count): reply.written(count)
        case .failure(let error): reply.error(error)
        }
    }
}
