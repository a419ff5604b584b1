import BackingStore
import CLinux
import FuseKit
import Glibc
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
    let logger: Logger
    /// O_PATH descriptor of the folder shown as `<App>.app`, when it comes
    /// from outside the backing directory (`mount --bundle`).
    let bundleRoot: Int32?
    let bundleName: String
    /// tmp's life with this mount (T2-T4), from the root descriptor opened
    /// at mount: the driver empties it before mounting and after its
    /// session ends.
    public let tmp: ContainerTmp
    /// The session, for telling the kernel to drop cached entries.
    let session = Locked<FuseSession?>(nil)

    public init(configuration: MountConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        let rootFD: Int32
        do {
            rootFD = try Backing.openRoot(configuration.backing)
        } catch {
            throw MountError.backingMissing(path: configuration.backing, errno: error.rawValue)
        }
        do { tmp = try ContainerTmp(root: rootFD, keep: configuration.keepTmp) } catch {
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
        nodes = NodeTable(rootFD: rootFD, stat: rootStat, cache: cache)
        bundleName = configuration.layout.bundleName
        denials = try DenialLog(file: configuration.denialLogFile)
    }

    /// Gives the file system its session, once mounted.
    public func attach(_ session: FuseSession) {
        self.session.withLock { $0 = session }
    }

    // MARK: Connection

    public func initialize(_ settings: inout ConnectionSettings) {
        var want = Capability(rawValue: settings.want)
        // No export support: it would bring lookups of "..", which could climb
        // out of the backing root.
        want.remove(.exportSupport)
        want.insert([.readdirPlus, .readdirPlusAuto, .parallelDirOps, .asyncRead, .atomicOTrunc])
        // Locks stay in the kernel: with neither flag set it keeps POSIX and
        // flock locks itself, which is exact for a single mount.
        want.remove([.posixLocks, .flockLocks])
        if configuration.writebackCache { want.insert(.writebackCache) } else { want.remove(.writebackCache) }
        settings.want = want.rawValue
        settings.maxWrite = 1 << 20
        settings.maxReadahead = 1 << 20
        settings.timeGranularity = 1
    }

    // MARK: Rule checks

    /// Asks the policy about `operation`; on a denial logs it and answers the errno.
    @inline(__always)
    func denial(_ operation: FileOperation, _ request: Request, path: () -> String) -> Errno? {
        switch SandboxPolicy.decide(operation) {
        case .allow:
            return nil
        case .deny(let denial, let sandboxOperation):
            denials.record(pid: request.caller.pid, operation: sandboxOperation, path: path())
            return Errno(rawValue: denial.errno)
        }
    }

    func entry(for node: Node, stat: stat) -> Entry {
        Entry(node: node.id, stat: stat, attributeTimeout: configuration.attributeTimeout,
              entryTimeout: configuration.entryTimeout)
    }

    func zone(ofChild name: UnsafePointer<CChar>, in parent: Node) -> Zone {
        configuration.layout.zone(ofChild: String(cString: name), in: parent.zone)
    }

    /// Opens `name` in `parent` (O_PATH) and records a lookup of it.
    func lookupChild(_ parent: Node, _ name: UnsafePointer<CChar>) throws(Errno) -> (Node, stat) {
        // The kernel never asks for these without export support; refuse
        // them anyway so that ".." can never lead above the backing root.
        if Self.isDotOrDotDot(name) { throw .noSuchFileOrDirectory }
        let fd: Int32
        if parent === nodes.root, let bundleRoot, String(cString: name) == bundleName {
            fd = try Backing.openPath(in: bundleRoot, ".")
        } else {
            fd = try parent.withFD { (folder) throws(Errno) in try Backing.openPath(in: folder, name) }
        }
        let attributes: stat
        do { attributes = try Backing.stat(fd) } catch {
            Backing.close(fd)
            throw error
        }
        let node = nodes.remember(fd: fd, stat: attributes, zone: zone(ofChild: name, in: parent))
        return (node, attributes)
    }

    /// Gives a file the driver just created (as root) to the caller, as the
    /// kernel would have: the caller's uid, and its gid unless the folder is
    /// set-group-ID (then the folder's group, which the backing store set).
    /// Returns whether it changed the owner.
    @discardableResult
    func giveToCaller(_ request: Request, in parent: Node, _ name: UnsafePointer<CChar>) throws(Errno) -> Bool {
        let caller = request.caller
        // The driver's own identity is root's: nothing to change.
        if caller.uid == 0 && caller.gid == 0 { return false }
        return try parent.withFD { (folder) throws(Errno) in
            let parentStat = try Backing.stat(folder)
            let inheritsGroup = parentStat.st_mode & S_ISGID != 0
            let gid = inheritsGroup ? gid_t.max : caller.gid
            if caller.uid == 0 && (inheritsGroup || caller.gid == 0) { return false }
            try Backing.chown(in: folder, name, uid: caller.uid, gid: gid)
            return true
        }
    }

    // MARK: Paths, for denial lines and escape checks (cold paths only)

    /// The backing path of a node's file, from /proc.
    func backingPath(of node: Node) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = (try? node.withFD { (fd) throws(Errno) in Glibc.readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1) }) ?? -1
        guard count > 0 else { return "?" }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The node's path relative to the container root, as components.
    func containerComponents(of node: Node) -> [String] {
        if node === nodes.root { return [] }
        let path = backingPath(of: node)
        if let bundle = configuration.bundleOverride, path == bundle || path.hasPrefix(bundle + "/") {
            return [bundleName] + path.dropFirst(bundle.count).split(separator: "/").map(String.init)
        }
        let root = configuration.backing
        guard path.hasPrefix(root) else { return [] }
        return path.dropFirst(root.count).split(separator: "/").map(String.init)
    }

    /// The absolute path through the mountpoint, for the denial log.
    func mountPath(of node: Node, child: UnsafePointer<CChar>? = nil) -> String {
        var components = containerComponents(of: node)
        if let child { components.append(String(cString: child)) }
        let base = configuration.mountpoint.hasSuffix("/") ? String(configuration.mountpoint.dropLast()) : configuration.mountpoint
        return components.isEmpty ? configuration.mountpoint : base + "/" + components.joined(separator: "/")
    }
}

extension SandboxFileSystem {
    /// A folder moved to another zone: the kernel may still hold entries
    /// below it, each looked up with the old zone. Ask it to forget the
    /// folder's entries, so that the next lookups record the new zones.
    /// Done on a thread of its own: the kernel waits for the rename to finish
    /// before it drops anything, and a worker thread must not wait on that.
    func forgetEntries(below folder: Node) {
        guard let session = session.withLock({ $0 }) else { return }
        let id = folder.id
        guard let fd = try? folder.withFD({ (fd) throws(Errno) in try Backing.openDirectory(fd) }),
              let stream = DirectoryStream(fd: fd) else { return }
        var names: [String] = []
        let folderZone = folder.zone
        _ = stream.forEach(from: 0) { name, _, _, _ in
            guard !Self.isDotOrDotDot(name) else { return true }
            names.append(String(cString: name))
            // Children the kernel holds get their new zone at once; deeper
            // ones when the kernel looks them up again.
            if let childStat = try? Backing.stat(in: fd, name), let child = nodes.existing(InodeKey(childStat)) {
                child.zone = configuration.layout.zone(ofChild: String(cString: name), in: folderZone)
            }
            return true
        }
        nodes.retain(folder)
        let table = nodes
        let listed = names
        Thread.detachNewThread {
            for name in listed { session.invalidateEntry(parent: id, name: name) }
            table.forget(id, count: 1)
        }
    }
}
