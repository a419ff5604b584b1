import BackingStore
import CLinux
import FuseKit
import Glibc
import Locking
import SandboxPolicy
import Synchronization
import SystemPackage

/// A file the kernel knows: how to reach the backing file, the number of
/// lookups the kernel has not yet forgotten, and its place in the name tree
/// (its folder's node and its name there), from which its zone and its path
/// in the container are derived (`NodeTable`).
///
/// A node reaches its file through a Linux file handle and holds an O_PATH
/// descriptor only while it is in the `DescriptorCache`: the kernel may
/// know far more files than the driver may hold descriptors. A node keeps
/// its descriptor for good ("kept") when handles cannot be used for it (no
/// CAP_DAC_READ_SEARCH, a file system without handles) or when its file
/// lost its last name while the kernel still knows it (a handle of a
/// deleted file opens nothing, but the descriptor still reaches it).
///
/// The node id handed to the kernel is this object's address; the kernel's
/// lookups hold one reference to the object (taken at the first lookup,
/// given back when the kernel forgets the last), so the object outlives
/// every request for its id, whatever becomes of the table's entry for its
/// inode (a new file may take the inode number of a deleted one).
final class Node: Sendable {
    let key: InodeKey
    let isDirectory: Bool
    let isSymlink: Bool
    /// Changed only under the table's lock; read anywhere.
    let lookups = Atomic<UInt64>(0)
    /// The node's place in the name tree. Read and changed only under the
    /// table's lock (`NodeTable`): the folder holding the name the kernel
    /// last used for the file (nil for the root, which has none) and that
    /// name, as bytes.
    nonisolated(unsafe) var parent: Node?
    nonisolated(unsafe) var name: NodeName
    /// The names in this folder the kernel holds, each with its node. Under
    /// the table's lock.
    nonisolated(unsafe) var children: [NodeName: Node] = [:]
    private let noCapability = Atomic<Bool>(false)
    /// The node's data protection class once read (0: not read yet; else
    /// `ProtectionClass.cacheValue`). See `protectionClass(of:)`.
    let protectionCache = Atomic<UInt8>(0)
    /// Another node stands for another name of the same file (a name judged
    /// by other rules: `NodeTable.needsOwnNode`). A class written through
    /// one name must be seen through the other at once, so such nodes read
    /// the class from the file every time instead of remembering it.
    let sharesItsFile = Atomic<Bool>(false)
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
    /// the descriptor still has to be given to the cache (`admit`); with a
    /// handle and no descriptor, the node opens its file when a request
    /// first needs it.
    init(fd: FileDescriptor?, stat: stat, parent: Node?, name: NodeName, handle: BackingHandle?, cache: DescriptorCache) {
        precondition(fd != nil || handle != nil, "a node needs a descriptor or a handle to reach its file")
        key = InodeKey(stat)
        isDirectory = stat.st_mode & S_IFMT == S_IFDIR
        isSymlink = stat.st_mode & S_IFMT == S_IFLNK
        self.parent = parent
        self.name = name
        self.handle = handle
        self.cache = cache
        slot = Atomic(fd.map { Slot.encode($0) | (handle == nil ? Slot.kept : Slot.referenced) } ?? 0)
    }

    /// Takes `child` out of this folder's map if its name there is still
    /// `child`'s (one search of the map). Under the table's lock.
    func removeChild(_ child: Node) {
        if let entry = children.index(forKey: child.name), children.values[entry] === child {
            children.remove(at: entry)
        }
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
    func withFD<T>(_ body: (FileDescriptor) throws(Errno) -> T) throws(Errno) -> T {
        let borrowed = try borrow()
        defer { giveBack(borrowed) }
        return try body(borrowed.fd)
    }

    // MARK: The descriptor slot

    /// A descriptor lent out; `owned` ones are the borrower's to close (a
    /// node the kernel already forgot gets no cached descriptor).
    struct Borrowed {
        let fd: FileDescriptor
        let owned: Bool
    }

    /// The slot word: descriptor + 1 (0: none) in the low 32 bits, the
    /// number of borrowers above, and three flags: referenced (the clock's
    /// second chance), kept (never evicted) and retired (forgotten: closed
    /// by whoever gives it back last). The one place a node's descriptor is
    /// a raw number: everywhere else it is a `FileDescriptor`.
    enum Slot {
        static let fdMask: UInt64 = 0xFFFF_FFFF
        static let pin: UInt64 = 1 << 32
        static let pinMask: UInt64 = 0xFF_FFFF << 32
        static let referenced: UInt64 = 1 << 60
        static let kept: UInt64 = 1 << 61
        static let retired: UInt64 = 1 << 62

        @inline(__always) static func encode(_ fd: FileDescriptor) -> UInt64 { UInt64(UInt32(bitPattern: fd.rawValue)) &+ 1 }
        @inline(__always) static func fd(_ word: UInt64) -> FileDescriptor {
            FileDescriptor(rawValue: Int32(bitPattern: UInt32(truncatingIfNeeded: word & fdMask) &- 1))
        }
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
    func evict() -> FileDescriptor? {
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
    func install(_ fd: FileDescriptor, pinned: Bool) -> Bool {
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
