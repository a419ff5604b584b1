import BackingStore
import CLinux
import FuseKit
import Glibc
import Locking
import SandboxPolicy
import Synchronization
import SystemPackage

/// All nodes the kernel holds, in two shapes under one lock:
///
/// - an index by the backing file's (st_dev, st_ino), so that a lookup of a
///   file the kernel already knows (by another name: a hard link) finds its
///   node;
/// - a tree of names that mirrors the kernel's own: each node knows its
///   folder's node and its name there, each folder the names of it the
///   kernel holds. Lookup, create, link, rename and unlink keep it as the
///   kernel keeps its dentries, so a node's zone and its container path are
///   derived from it, exactly and without a system call, and a node below a
///   folder that moved is at its new place at once.
///
/// A file with several names (hard links) in zones with the same rules has
/// one node and one place: the name the kernel used last (lookup, create,
/// link, the target of a rename). A request never says through which name
/// it came, which is harmless there. Names judged by other rules (the Inbox
/// and Documents, the bundle and Documents) or a symbolic link's names in
/// other folders get a node each (`needsOwnNode`), so that each request is
/// judged, and each denial logged, by the name the caller used; the index
/// keeps the first, the others are found by their names. When a name goes
/// (unlink) its node keeps its place until another name of it is looked
/// up: a file open after its last name went is judged where it was.
///
/// No system call is made under the lock: whatever needs the backing store
/// (a descriptor, a file handle) is obtained before taking it.
final class NodeTable: Sendable {
    let root: Node
    let cache: DescriptorCache
    let layout: ContainerLayout
    private let state = Locked<[InodeKey: Node]>([:])
    /// The most nodes held since the table last shrank. Changed only under
    /// the lock.
    private let peak = Atomic<Int>(0)

    init(rootFD: FileDescriptor, stat: stat, layout: ContainerLayout, cache: DescriptorCache) {
        self.cache = cache
        self.layout = layout
        root = Node(fd: rootFD, stat: stat, parent: nil, name: NodeName([]), handle: nil, cache: cache)
    }

    /// The file system is gone, and with it every request: the kernel's
    /// references end with the connection. Give back the retain each node
    /// the kernel still held had, and cut the two kinds of cycles nodes are
    /// in (a folder and its children; the descriptor cache's ring and the
    /// nodes in it, which point back at the cache), so that every node is
    /// freed (and LeakSanitizer sees only real leaks).
    deinit {
        var all: [Node] = []
        var seen = Set<ObjectIdentifier>()
        func gather(_ node: Node) {
            guard seen.insert(ObjectIdentifier(node)).inserted else { return }
            all.append(node)
            for child in node.children.values { gather(child) }
        }
        gather(root)
        state.withLock { index in
            for node in index.values { gather(node) }
            index = [:]
        }
        for node in all {
            node.children = [:]
            node.parent = nil
            guard node !== root else { continue }
            cache.retire(node)
            if node.lookups.exchange(0, ordering: .relaxed) > 0 {
                Unmanaged.passUnretained(node).release()
            }
        }
        // The root's descriptor too: tmp was emptied through a descriptor of
        // its own (ContainerTmp), and a file system served in a process that
        // goes on (the test fixture's in-process mode) must give back every
        // descriptor it opened.
        root.retire()
    }

    /// The node behind a node id. The id must be one the kernel still holds.
    @inline(__always)
    func node(_ id: NodeID) -> Node {
        if id == .root { return root }
        return Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(id.rawValue))!).takeUnretainedValue()
    }

    // MARK: Lookups

    /// Records one more lookup of the file opened as `fd` (which the table
    /// takes), found as `name` in `parent`. If the table already has a node
    /// for that file, that node is returned, at its new place.
    ///
    /// A node found by (st_dev, st_ino) is the same file only if it holds a
    /// descriptor now (then its inode cannot have been freed and its number
    /// reused: `fd` and that descriptor hold the same inode) or if its file
    /// handle equals the new file's (the handle carries the inode's
    /// generation). Otherwise the old file was deleted and its inode number
    /// reused: the new file gets a node of its own, and the old node lives
    /// on, detached from the index, until the kernel forgets it (its
    /// descriptor, if it ever gets one, reaches only the old file).
    func remember(fd: FileDescriptor, stat: stat, parent: Node, name: NodeName) -> Node {
        remember(fd: fd, handle: nil, stat: stat, parent: parent, name: name)
    }

    /// The same for a file just created through the mount and still open
    /// (`open`, any descriptor on it, which stays the caller's): the node
    /// is made from the file's handle alone, without an O_PATH descriptor
    /// of its own, which saves an open by name (and its close later) per
    /// created file; a request that needs the node's descriptor opens it
    /// from the handle. nil when the file has no usable handle (then the
    /// caller looks the file up).
    func rememberCreated(open: FileDescriptor, stat: stat, parent: Node, name: NodeName) -> Node? {
        guard let handle = cache.handle(for: open) else { return nil }
        // `open` holds the inode while the table compares: a node with a
        // descriptor found for its (st_dev, st_ino) is the same file.
        return remember(fd: nil, handle: handle, stat: stat, parent: parent, name: name)
    }

    /// `fd`, if given, is the table's; without it `knownHandle` is the
    /// file's, and the caller holds the file open meanwhile.
    private func remember(fd: FileDescriptor?, handle knownHandle: BackingHandle?, stat: stat,
                          parent: Node, name: NodeName) -> Node {
        let key = InodeKey(stat)
        if key == root.key {
            if let fd { Backing.close(fd) }
            return root
        }
        // The common case: a known node with its descriptor open, found
        // first by this very name in the tree (a name given a node of its
        // own, see `needsOwnNode`, is found again that way), else by inode.
        // A created file (its handle known already) is rarely known: it
        // goes straight to the one pass below.
        let pinned = knownHandle != nil ? nil : state.withLock { index -> (Node, Node.Borrowed)? in
            if let named = parent.children[name], named.key == key, let borrowed = named.pinIfOpen() {
                addLookup(named)
                return (named, borrowed)
            }
            guard let existing = index[key], !needsOwnNode(existing, in: parent, as: name),
                  let borrowed = existing.pinIfOpen() else { return nil }
            addLookup(existing)
            place(existing, in: parent, as: name)
            return (existing, borrowed)
        }
        if let (node, borrowed) = pinned {
            node.giveBack(borrowed)
            if let fd { Backing.close(fd) }
            return node
        }
        // The handle is made outside the lock: another thread may make a
        // node for the same file meanwhile, and then this one is dropped.
        let handle = knownHandle ?? fd.flatMap { cache.handle(for: $0) }
        let made = Node(fd: fd, stat: stat, parent: parent, name: name, handle: handle, cache: cache)
        var pin: Node.Borrowed?
        var pinOfExisting: (Node, Node.Borrowed)?
        let node = state.withLock { index -> Node in
            if let named = parent.children[name], named.key == key {
                var same = named.handle != nil && named.handle == handle
                if !same, let borrowed = named.pinIfOpen() { (same, pin) = (true, borrowed) }
                if same {
                    addLookup(named)
                    return named
                }
            }
            if let existing = index[key] {
                var same = existing.handle != nil && existing.handle == handle
                if !same, let borrowed = existing.pinIfOpen() { (same, pin) = (true, borrowed) }
                if same && !needsOwnNode(existing, in: parent, as: name) {
                    addLookup(existing)
                    place(existing, in: parent, as: name)
                    return existing
                }
                if let borrowed = pin {
                    // Given back after the lock (it may close a descriptor).
                    pinOfExisting = (existing, borrowed)
                    pin = nil
                }
                if same {
                    // Another name of a file the kernel knows, judged by
                    // other rules: a node of its own, outside the index
                    // (which keeps the first), found again by its name.
                    existing.sharesItsFile.store(true, ordering: .relaxed)
                    made.sharesItsFile.store(true, ordering: .relaxed)
                    addLookup(made)
                    place(made, in: parent, as: name, isNew: true)
                    return made
                }
            }
            index[key] = made
            addLookup(made)
            place(made, in: parent, as: name, isNew: true)
            if index.count > peak.load(ordering: .relaxed) { peak.store(index.count, ordering: .relaxed) }
            return made
        }
        if let pin { node.giveBack(pin) }
        if let (existing, borrowed) = pinOfExisting { existing.giveBack(borrowed) }
        if node === made {
            if made.handle != nil && fd != nil { cache.admit(made) }
        } else if let fd {
            // `made` was never handed out (it closes nothing when it goes):
            // its descriptor goes to the node found, or is closed.
            cache.offer(fd, to: node)
        }
        return node
    }

    /// A file with no name yet (O_TMPFILE) in `parent`, held by `fd` (an
    /// O_PATH descriptor the table takes). Its node keeps the descriptor for
    /// good (a handle of a file without a name opens nothing) and is in no
    /// folder's map: when linkat(2) names it, `remember` finds it by its
    /// inode and places it.
    func rememberUnnamed(fd: FileDescriptor, stat: stat, parent: Node) -> Node {
        let made = Node(fd: fd, stat: stat, parent: parent, name: NodeName([]), handle: nil, cache: cache)
        state.withLock { index in
            index[made.key] = made
            addLookup(made)
            if index.count > peak.load(ordering: .relaxed) { peak.store(index.count, ordering: .relaxed) }
        }
        return made
    }

    /// Whether `name` in `parent`, another name of the file `existing` is
    /// a node for, must be a node of its own: when the two names are judged
    /// by different rules (zones whose rules differ for a file,
    /// `SandboxPolicy.sameRulesForFiles`), or for a symbolic link in another
    /// folder (where its target leads depends on its folder: E1, E2). FUSE
    /// names a file by its node only, whichever name the caller used; with a
    /// node per such name, every request is judged by the name it came
    /// through (and a denial names that path). Under the lock.
    private func needsOwnNode(_ existing: Node, in parent: Node, as name: NodeName) -> Bool {
        guard existing !== root, existing.parent !== parent || existing.name != name else { return false }
        if existing.isSymlink { return existing.parent !== parent }
        guard !existing.isDirectory else { return false }
        let here = name.withBytes { layout.zone(ofChild: $0, in: zoneLocked(parent)) }
        return !SandboxPolicy.sameRulesForFiles(zoneLocked(existing), here)
    }

    /// One more lookup; the first one takes the kernel's reference. Under the lock.
    private func addLookup(_ node: Node) {
        if node.lookups.add(1, ordering: .relaxed).newValue == 1 {
            _ = Unmanaged.passUnretained(node).retain()
        }
    }

    /// The kernel forgot `count` lookups of a node.
    func forget(_ id: NodeID, count: UInt64) {
        guard id != .root else { return }
        let node = node(id)
        var shrank = false
        let dropped = state.withLock { index -> Bool in
            let left = node.lookups.subtract(min(count, node.lookups.load(ordering: .relaxed)), ordering: .relaxed).newValue
            guard left == 0 else { return false }
            if index[node.key] === node { index[node.key] = nil }
            if let parent = node.parent { parent.removeChild(node) }
            shrank = shrinkIfMostlyEmpty(&index)
            return true
        }
        if dropped {
            cache.retire(node)
            // The kernel's reference: the node may go now (its children,
            // if any are still known, keep it as their parent).
            Unmanaged.passUnretained(node).release()
        }
        // The kernel forgot most of what it knew (memory pressure): give
        // the freed nodes' memory back, which free() alone keeps in the
        // worker threads' arenas.
        if shrank { asfs_malloc_trim() }
    }

    /// A dictionary never gives back its storage as it empties: rebuild it
    /// once it is down to a quarter of its peak (amortized: each rebuild
    /// follows three times as many removals).
    private func shrinkIfMostlyEmpty(_ index: inout [InodeKey: Node]) -> Bool {
        let high = peak.load(ordering: .relaxed)
        guard high >= 4096, index.count * 4 < high else { return false }
        index = Dictionary(uniqueKeysWithValues: index.map { ($0.key, $0.value) })
        peak.store(index.count, ordering: .relaxed)
        return true
    }

    /// The node for a backing file, if the kernel holds one.
    func existing(_ key: InodeKey) -> Node? {
        state.withLock { $0[key] }
    }

    var count: Int { state.withLock { $0.count } }

    /// Before `name` in `folder` loses its name (unlink, rmdir, rename over
    /// it): if that is the file's last name and the kernel knows the file,
    /// its node keeps its descriptor, which still reaches the file (fstat
    /// of an open file, setattr through it) where a handle would not.
    ///
    /// The tree answers first, without a system call: when the node at
    /// `name` holds its descriptor and is its file's only node, it keeps
    /// that descriptor whether or not this is the last name (a descriptor
    /// kept for a file that has other names costs one descriptor until the
    /// kernel forgets the node, and saves a stat by name per unlink).
    /// Otherwise `name` is looked at in the backing store. `.noNode` tells a
    /// rename that the kernel holds no node at `name` and nothing was
    /// looked at (see `SandboxFileSystem.backingRename`).
    @discardableResult
    func keepIfLastName(_ name: NodeName, in parent: Node, folder: FileDescriptor,
                        _ cName: UnsafePointer<CChar>, lookingIfNoNode: Bool = true) -> LastNameCheck {
        guard cache.usesHandles else { return .done }
        let named = state.withLock { _ in parent.children[name] }
        if let named, !named.sharesItsFile.load(ordering: .relaxed), let borrowed = named.pinIfOpen() {
            cache.keep(named)
            named.giveBack(borrowed)
            return .done
        }
        if named == nil && !lookingIfNoNode { return .noNode }
        keepIfLastName(in: folder, cName)
        return .done
    }

    enum LastNameCheck { case done, noNode }

    private func keepIfLastName(in folder: FileDescriptor, _ name: UnsafePointer<CChar>) {
        guard let stat = try? Backing.stat(in: folder, name),
              stat.st_mode & S_IFMT == S_IFDIR || stat.st_nlink <= 1,
              let node = existing(InodeKey(stat)) else { return }
        cache.keep(node)
    }

    // MARK: The name tree

    /// Puts `node` at `name` in `parent`. Under the lock. A move that would
    /// put a folder below itself (a tree gone stale by changes made in the
    /// backing directory behind the driver's back) is refused: the node
    /// stays where it was, and the tree stays a tree.
    private func place(_ node: Node, in parent: Node, as name: NodeName, isNew: Bool = false) {
        if !isNew {
            if node === root { return }
            if node.parent !== parent || node.name != name {
                if isSelfOrAbove(node, parent) { return }
                if let old = node.parent { old.removeChild(node) }
                node.parent = parent
                node.name = name
            }
        }
        // One hash of the name, whether it is new or there already.
        parent.children.updateValue(node, forKey: name)
    }

    /// Whether `node` is `folder` or one of its ancestors. Under the lock.
    private func isSelfOrAbove(_ node: Node, _ folder: Node) -> Bool {
        var ancestor: Node? = folder
        while let current = ancestor {
            if current === node { return true }
            ancestor = current.parent
        }
        return false
    }

    /// The kernel's view of a rename that succeeded: the node at `name` in
    /// `parent` is now `newName` in `newParent`; with `exchange` the node
    /// that was there took the old place, else that node lost its name.
    ///
    /// Two searches of the maps for a rename (a folder's map can hold many
    /// thousands of names, and each search there costs cache misses): one
    /// takes the node out of its old place, one puts it in the new place
    /// and hands back what was there.
    func renamed(_ name: NodeName, in parent: Node, to newName: NodeName, in newParent: Node, exchange: Bool) {
        state.withLock { _ in
            let moved = parent.children.removeValue(forKey: name)
            let other: Node?
            if let moved, !isSelfOrAbove(moved, newParent) {
                other = newParent.children.updateValue(moved, forKey: newName)
                moved.parent = newParent
                moved.name = newName
            } else {
                // Nothing known at the old name, or a stale tree (see
                // `place`): the moved node, if any, stays out of the maps.
                other = newParent.children.removeValue(forKey: newName)
            }
            if exchange, let other, !isSelfOrAbove(other, parent) {
                parent.children[name] = other
                other.parent = parent
                other.name = name
            }
        }
    }

    /// The kernel's view of an unlink or rmdir that succeeded: `name` is
    /// gone from `parent`. Its node keeps its place (see the type's comment).
    func removed(_ name: NodeName, in parent: Node) {
        state.withLock { _ in parent.children[name] = nil }
    }

    /// The zone of a node, from its first `ContainerLayout.zoneDepth` names.
    func zone(of node: Node) -> Zone {
        state.withLock { _ in zoneLocked(node) }
    }

    /// The zone an entry `name` of `parent` has (or would have).
    func zone(ofChild name: some Collection<UInt8>, in parent: Node) -> Zone {
        let folder = zone(of: parent)
        return layout.zone(ofChild: name, in: folder)
    }

    private func zoneLocked(_ node: Node) -> Zone {
        // Walk to the root keeping the last three nodes met: the root's
        // child, its child and its child's child. Every request walks this
        // way, and the nodes near the root are the same for all of them:
        // references taken on the way would have every worker thread write
        // to those few nodes' reference counts. None is needed: under the
        // lock no link changes, and each node met is held by the link of
        // the one before it, the first by the caller.
        guard !layout.isDevice else { return deviceZoneLocked(node) }
        var current = Unmanaged.passUnretained(node)
        var first: Unmanaged<Node>?, second: Unmanaged<Node>?, third: Unmanaged<Node>?
        while let parent = current._withUnsafeGuaranteedRef({ $0.parent.map { Unmanaged.passUnretained($0) } }) {
            (third, second, first) = (second, first, current)
            current = parent
        }
        var zone = Zone.root
        if let first { zone = first._withUnsafeGuaranteedRef { $0.name.withBytes { layout.zone(ofChild: $0, in: zone) } } }
        if let second { zone = second._withUnsafeGuaranteedRef { $0.name.withBytes { layout.zone(ofChild: $0, in: zone) } } }
        if let third { zone = third._withUnsafeGuaranteedRef { $0.name.withBytes { layout.zone(ofChild: $0, in: zone) } } }
        return zone
    }

    /// The same on a device, whose zones need the first
    /// `ContainerLayout.deviceZoneDepth` names: the nodes met are kept in a
    /// ring of that size on the stack, without references (as above).
    private func deviceZoneLocked(_ node: Node) -> Zone {
        let depth = ContainerLayout.deviceZoneDepth
        return withUnsafeTemporaryAllocation(of: Unmanaged<Node>.self, capacity: depth) { ring in
            var current = Unmanaged.passUnretained(node)
            var count = 0
            while let parent = current._withUnsafeGuaranteedRef({ $0.parent.map { Unmanaged.passUnretained($0) } }) {
                ring[count % depth] = current
                count += 1
                current = parent
            }
            // The ring holds the last `min(count, depth)` nodes met, the one
            // nearest the root at index (count - 1) % depth, going down from there.
            var zone = layout.rootZone
            var index = count - 1
            let stop = max(count - depth, 0)
            while index >= stop {
                zone = ring[index % depth]._withUnsafeGuaranteedRef { $0.name.withBytes { layout.zone(ofChild: $0, in: zone) } }
                index -= 1
            }
            return zone
        }
    }

    /// The folder holding the node's name (nil for the root).
    func parent(of node: Node) -> Node? {
        state.withLock { _ in node.parent }
    }

    /// The node's path from the container root, as names.
    func components(of node: Node) -> [[UInt8]] {
        state.withLock { _ in
            var names: [[UInt8]] = []
            var current = node
            while let parent = current.parent {
                names.append(current.name.bytes)
                current = parent
            }
            return names.reversed()
        }
    }
}
