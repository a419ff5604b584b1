import BackingStore
import CLinux
import FuseKit
import Glibc
import Locking
import SandboxPolicy
import Synchronization
import SystemPackage

/// A file the kernel knows: how to reach the backing file, the number of
/// lookups the kernel has not yet forgotten, and the container zone it was
/// last seen in (so that a rule check costs no path walk).
///
/// A node reaches its file through a Linux file handle and holds an O_PATH
/// descriptor only while it is in the `DescriptorCache`: the kernel may
/// know far more files than the driver may hold descriptors. A node keeps
/// its descriptor for good ("kept") when handles cannot be used for it (no
/// CAP_DAC_READ_SEARCH, a file system without handles) or when its file
/// lost its last name while the kernel still knows it (a handle of a
/// deleted file opens nothing, but the descriptor still reaches it).
///
/// The node id handed to the kernel is this object's address; the table
/// keeps the object alive until the kernel forgets the last lookup, and the
/// kernel sends no request for a node id after that.
final class Node: Sendable {
    let key: InodeKey
    let isDirectory: Bool
    let isSymlink: Bool
    /// Changed only under the table's lock; read anywhere.
    let lookups = Atomic<UInt64>(0)
    private let zoneValue: Atomic<UInt8>
    private let noCapability = Atomic<Bool>(false)
    /// nil: the node keeps its descriptor for its whole life.
    let handle: BackingHandle?
    let cache: DescriptorCache
    /// Descriptor, borrowers and flags in one word, so that borrowing is one
    /// compare-and-swap and the cache can close a descriptor only when no
    /// one borrows it (see `Slot`).
    let slot: Atomic<UInt64>
    /// Position in the cache's clock ring, -1 when not in it. Changed only
    /// under the cache's lock.
    let ringIndex = Atomic<Int>(-1)

    /// A node holding `fd`, an O_PATH descriptor on its file. With a handle
    /// the descriptor still has to be given to the cache (`admit`).
    init(fd: Int32, stat: stat, zone: Zone, handle: BackingHandle?, cache: DescriptorCache) {
        key = InodeKey(stat)
        isDirectory = stat.st_mode & S_IFMT == S_IFDIR
        isSymlink = stat.st_mode & S_IFMT == S_IFLNK
        zoneValue = Atomic(zone.rawValue)
        self.handle = handle
        self.cache = cache
        slot = Atomic(Slot.encode(fd) | (handle == nil ? Slot.kept : Slot.referenced))
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

    /// Runs `body` with an O_PATH descriptor on the node's file, which stays
    /// open until `body` returns. A file deleted since the kernel learned of
    /// it answers ENOENT.
    @inline(__always)
    func withFD<T>(_ body: (Int32) throws(Errno) -> T) throws(Errno) -> T {
        let borrowed = try borrow()
        defer { giveBack(borrowed) }
        return try body(borrowed.fd)
    }

    // MARK: The descriptor slot

    /// A descriptor lent out; `owned` ones are the borrower's to close (a
    /// node the kernel already forgot gets no cached descriptor).
    struct Borrowed {
        let fd: Int32
        let owned: Bool
    }

    /// The slot word: descriptor + 1 (0: none) in the low 32 bits, the
    /// number of borrowers above, and three flags: referenced (the clock's
    /// second chance), kept (never evicted) and retired (forgotten: closed
    /// by whoever gives it back last).
    enum Slot {
        static let fdMask: UInt64 = 0xFFFF_FFFF
        static let pin: UInt64 = 1 << 32
        static let pinMask: UInt64 = 0xFF_FFFF << 32
        static let referenced: UInt64 = 1 << 60
        static let kept: UInt64 = 1 << 61
        static let retired: UInt64 = 1 << 62

        @inline(__always) static func encode(_ fd: Int32) -> UInt64 { UInt64(UInt32(bitPattern: fd)) &+ 1 }
        @inline(__always) static func fd(_ word: UInt64) -> Int32 { Int32(bitPattern: UInt32(truncatingIfNeeded: word & fdMask) &- 1) }
    }

    /// The lock-free path: pin the descriptor if the node has one.
    @inline(__always)
    func pinIfOpen() -> Borrowed? {
        var word = slot.load(ordering: .acquiring)
        while word & Slot.fdMask != 0 {
            let (done, now) = slot.compareExchange(expected: word, desired: (word &+ Slot.pin) | Slot.referenced,
                                                   ordering: .acquiringAndReleasing)
            if done { return Borrowed(fd: Slot.fd(word), owned: false) }
            word = now
        }
        return nil
    }

    @inline(__always)
    func borrow() throws(Errno) -> Borrowed {
        if let borrowed = pinIfOpen() { return borrowed }
        return try cache.reopen(self)
    }

    @inline(__always)
    func giveBack(_ borrowed: Borrowed) {
        if borrowed.owned {
            Backing.close(borrowed.fd)
            return
        }
        let now = slot.subtract(Slot.pin, ordering: .acquiringAndReleasing).newValue
        if now & Slot.retired != 0 && now & Slot.pinMask == 0 { closeIfUnpinned() }
    }

    /// Takes the descriptor out of the slot if no one borrows it and the
    /// clock gave it its second chance already; the caller closes it.
    /// Under the cache's lock.
    func evict() -> Int32? {
        let word = slot.load(ordering: .acquiring)
        guard word & Slot.fdMask != 0, word & (Slot.pinMask | Slot.kept) == 0 else { return nil }
        if word & Slot.referenced != 0 {
            _ = slot.compareExchange(expected: word, desired: word & ~Slot.referenced, ordering: .acquiringAndReleasing)
            return nil
        }
        let (done, _) = slot.compareExchange(expected: word, desired: word & ~(Slot.fdMask | Slot.referenced),
                                            ordering: .acquiringAndReleasing)
        return done ? Slot.fd(word) : nil
    }

    /// Puts `fd` in an empty slot, pinned once if `pinned`. Under the
    /// cache's lock. False if the slot has a descriptor or the node was
    /// forgotten: then `fd` is still the caller's.
    func install(_ fd: Int32, pinned: Bool) -> Bool {
        var word = slot.load(ordering: .acquiring)
        while word & (Slot.fdMask | Slot.retired) == 0 {
            let desired = (word & Slot.kept) | Slot.encode(fd) | Slot.referenced | (pinned ? Slot.pin : 0)
            let (done, now) = slot.compareExchange(expected: word, desired: desired, ordering: .acquiringAndReleasing)
            if done { return true }
            word = now
        }
        return false
    }

    /// Marks the descriptor as never to be evicted. Under the cache's lock,
    /// with the descriptor pinned by the caller.
    func markKept() {
        _ = slot.bitwiseOr(Slot.kept, ordering: .acquiringAndReleasing)
    }

    var isKept: Bool { slot.load(ordering: .relaxed) & Slot.kept != 0 }

    /// The kernel forgot the node: its descriptor is closed now, or by the
    /// last borrower. Under the cache's lock.
    func retire() {
        _ = slot.bitwiseOr(Slot.retired, ordering: .acquiringAndReleasing)
        closeIfUnpinned()
    }

    private func closeIfUnpinned() {
        var word = slot.load(ordering: .acquiring)
        while word & Slot.fdMask != 0 && word & Slot.pinMask == 0 {
            let (done, now) = slot.compareExchange(expected: word, desired: Slot.retired, ordering: .acquiringAndReleasing)
            if done {
                Backing.close(Slot.fd(word))
                return
            }
            word = now
        }
    }
}

/// All nodes the kernel holds, keyed by the backing file's (st_dev, st_ino)
/// so that two names of one file (hard links) share one node.
final class NodeTable: Sendable {
    let root: Node
    let cache: DescriptorCache
    private let nodes = Locked<[InodeKey: Node]>([:])
    /// The most nodes held since the table last shrank. Changed only under
    /// the lock.
    private let peak = Atomic<Int>(0)

    init(rootFD: Int32, stat: stat, cache: DescriptorCache) {
        self.cache = cache
        root = Node(fd: rootFD, stat: stat, zone: .root, handle: nil, cache: cache)
    }

    /// The node behind a node id. The id must be one the kernel still holds.
    @inline(__always)
    func node(_ id: NodeID) -> Node {
        if id == .root { return root }
        return Unmanaged<Node>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(id.rawValue))!).takeUnretainedValue()
    }

    /// Records one more lookup of the file opened as `fd` (which the table
    /// takes). If the table already has a node for that file, that node is
    /// returned.
    func remember(fd: Int32, stat: stat, zone: Zone) -> Node {
        let key = InodeKey(stat)
        if key == root.key {
            Backing.close(fd)
            return root
        }
        if let existing = retainLive(key) {
            existing.zone = zone
            cache.offer(fd, to: existing)
            return existing
        }
        // The handle is made outside the lock: another thread may make a
        // node for the same file meanwhile, and then this one is dropped.
        // Symbolic links keep their descriptors: the escape check (E2) reads
        // a link's folder from its descriptor's /proc path, and a descriptor
        // opened from a handle may have no path when the backing dentry was
        // reclaimed.
        let isSymlink = stat.st_mode & S_IFMT == S_IFLNK
        let made = Node(fd: fd, stat: stat, zone: zone, handle: isSymlink ? nil : cache.handle(for: fd), cache: cache)
        let node = nodes.withLock { table -> Node in
            if let existing = table[key], !Self.isDeleted(existing) {
                existing.lookups.add(1, ordering: .relaxed)
                return existing
            }
            made.lookups.store(1, ordering: .relaxed)
            table[key] = made
            if table.count > peak.load(ordering: .relaxed) { peak.store(table.count, ordering: .relaxed) }
            return made
        }
        if node === made {
            if made.handle != nil { cache.admit(made) }
        } else {
            node.zone = zone
            cache.offer(fd, to: node)
        }
        return node
    }

    /// The live node for `key` with one more lookup, if there is one.
    private func retainLive(_ key: InodeKey) -> Node? {
        nodes.withLock { table -> Node? in
            // A node whose file was deleted while the kernel still held it
            // may see its inode number reused by a new file: that node is
            // stale, and the new file gets a node of its own.
            guard let existing = table[key], !Self.isDeleted(existing) else { return nil }
            existing.lookups.add(1, ordering: .relaxed)
            return existing
        }
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
        var shrank = false
        let dropped = nodes.withLock { table -> Node? in
            let left = node.lookups.subtract(min(count, node.lookups.load(ordering: .relaxed)), ordering: .relaxed).newValue
            guard left == 0 else { return nil }
            if table[node.key] === node { table[node.key] = nil }
            shrank = shrinkIfMostlyEmpty(&table)
            return node
        }
        if let dropped { cache.retire(dropped) }
        // The kernel forgot most of what it knew (memory pressure): give
        // the freed nodes' memory back, which free() alone keeps in the
        // worker threads' arenas.
        if shrank { asfs_malloc_trim() }
    }

    /// A dictionary never gives back its storage as it empties: rebuild it
    /// once it is down to a quarter of its peak (amortized: each rebuild
    /// follows three times as many removals).
    private func shrinkIfMostlyEmpty(_ table: inout [InodeKey: Node]) -> Bool {
        let high = peak.load(ordering: .relaxed)
        guard high >= 4096, table.count * 4 < high else { return false }
        table = Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) })
        peak.store(table.count, ordering: .relaxed)
        return true
    }

    private static func isDeleted(_ node: Node) -> Bool {
        // A handle of a deleted file opens nothing (ESTALE): also deleted.
        guard let stat = try? node.withFD({ (fd) throws(Errno) in try Backing.stat(fd) }) else { return true }
        return stat.st_nlink == 0
    }

    /// The node for a backing file, if the kernel holds one.
    func existing(_ key: InodeKey) -> Node? {
        nodes.withLock { $0[key] }
    }

    /// Before `name` in `folder` loses its name (unlink, rmdir, rename over
    /// it): if that is the file's last name and the kernel knows the file,
    /// its node keeps its descriptor, which still reaches the file (fstat
    /// of an open file, setattr through it) where a handle would not.
    func keepIfLastName(in folder: Int32, _ name: UnsafePointer<CChar>) {
        guard cache.usesHandles, let stat = try? Backing.stat(in: folder, name),
              stat.st_mode & S_IFMT == S_IFDIR || stat.st_nlink <= 1,
              let node = existing(InodeKey(stat)) else { return }
        cache.keep(node)
    }

    var count: Int { nodes.withLock { $0.count } }
}
