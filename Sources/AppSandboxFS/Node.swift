import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import Synchronization

/// A file the kernel knows: an O_PATH descriptor on the backing file, the
/// number of lookups the kernel has not yet forgotten, and the container
/// zone it was last seen in (so that a rule check costs no path walk).
///
/// The node id handed to the kernel is this object's address; the table
/// keeps the object alive until the kernel forgets the last lookup, and the
/// kernel sends no request for a node id after that.
final class Node: Sendable {
    let fd: Int32
    let key: InodeKey
    let isDirectory: Bool
    let isSymlink: Bool
    /// Changed only under the table's lock; read anywhere.
    let lookups = Atomic<UInt64>(0)
    private let zoneValue: Atomic<UInt8>
    private let noCapability = Atomic<Bool>(false)

    init(fd: Int32, stat: stat, zone: Zone) {
        self.fd = fd
        key = InodeKey(stat)
        isDirectory = stat.st_mode & S_IFMT == S_IFDIR
        isSymlink = stat.st_mode & S_IFMT == S_IFLNK
        zoneValue = Atomic(zone.rawValue)
    }

    var zone: Zone {
        get { Zone(rawValue: zoneValue.load(ordering: .relaxed))! }
        set { zoneValue.store(newValue.rawValue, ordering: .relaxed) }
    }

    /// Known to have no security.capability attribute. Only a setxattr
    /// through the mount can add one (a write by the driver, as root, never
    /// does), and it clears this.
    var hasNoCapability: Bool {
        get { noCapability.load(ordering: .relaxed) }
        set { noCapability.store(newValue, ordering: .relaxed) }
    }

    var id: NodeID { NodeID(rawValue: UInt64(UInt(bitPattern: Unmanaged.passUnretained(self).toOpaque()))) }
}

/// All nodes the kernel holds, keyed by the backing file's (st_dev, st_ino)
/// so that two names of one file (hard links) share one node.
final class NodeTable: Sendable {
    let root: Node
    private let nodes = Locked<[InodeKey: Node]>([:])

    init(root: Node) {
        self.root = root
    }

    /// The node behind a node id. The id must be one the kernel still holds.
    @inline(__always)
    func node(_ id: NodeID) -> Node {
        if id == .root { return root }
        return Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(id.rawValue))!).takeUnretainedValue()
    }

    /// Records one more lookup of the file opened as `fd`. If the table
    /// already has a node for that file, `fd` is closed and that node returned.
    func remember(fd: Int32, stat: stat, zone: Zone) -> Node {
        let key = InodeKey(stat)
        if key == root.key {
            Backing.close(fd)
            return root
        }
        let (node, duplicate) = nodes.withLock { table -> (Node, Bool) in
            // A node whose file was deleted while the kernel still held it
            // may see its inode number reused by a new file: that node is
            // stale, and the new file gets a node of its own.
            if let existing = table[key], !Self.isDeleted(existing) {
                existing.lookups.add(1, ordering: .relaxed)
                return (existing, true)
            }
            let node = Node(fd: fd, stat: stat, zone: zone)
            node.lookups.store(1, ordering: .relaxed)
            table[key] = node
            return (node, false)
        }
        if duplicate {
            Backing.close(fd)
            node.zone = zone
        }
        return node
    }

    /// Adds a lookup to a node already in the table (readdirplus of a known file, link).
    func retain(_ node: Node) {
        guard node !== root else { return }
        nodes.withLock { _ in _ = node.lookups.add(1, ordering: .relaxed) }
    }

    /// The kernel forgot `count` lookups of a node.
    func forget(_ id: NodeID, count: UInt64) {
        guard id != .root else { return }
        let node = node(id)
        let dropped = nodes.withLock { table -> Node? in
            let left = node.lookups.subtract(min(count, node.lookups.load(ordering: .relaxed)), ordering: .relaxed).newValue
            guard left == 0 else { return nil }
            if table[node.key] === node { table[node.key] = nil }
            return node
        }
        if let dropped { Backing.close(dropped.fd) }
    }

    private static func isDeleted(_ node: Node) -> Bool {
        guard let stat = try? Backing.stat(node.fd) else { return true }
        return stat.st_nlink == 0
    }

    /// The node for a backing file, if the kernel holds one.
    func existing(_ key: InodeKey) -> Node? {
        nodes.withLock { $0[key] }
    }

    var count: Int { nodes.withLock { $0.count } }
}
