import FuseKit
import BackingStore
import Glibc
import Locking
import SystemPackage

/// The O_PATH descriptors nodes hold, at most `capacity` of them (besides
/// the kept ones, see `Node`): the kernel may know more files than the
/// driver may open (RLIMIT_NOFILE), and a descriptor per known file also
/// costs kernel memory (a struct file each). A node whose descriptor was
/// closed opens its file again from its handle.
///
/// Eviction is the clock (second chance): borrowing a descriptor sets the
/// node's referenced bit with the same compare-and-swap that pins it, so
/// the hit path takes no lock; the lock guards only the ring, which
/// changes when a descriptor is opened or closed. A pinned descriptor is
/// never closed: the clock skips it.
final class DescriptorCache: Sendable {
    let capacity: Int
    /// A descriptor on each mount whose handles nodes may use (the backing
    /// root's, the bundle's): open_by_handle_at wants one on the handle's
    /// mount. Empty when handles do not work here (no CAP_DAC_READ_SEARCH).
    private let mounts: [(id: Int32, fd: FileDescriptor)]
    private let ring = Locked<Ring>(Ring())

    private struct Ring {
        var nodes: [Node] = []
        var hand = 0
    }

    /// `roots` are O_PATH descriptors of the folders whose files nodes may
    /// name, with their paths.
    init(capacity: Int, roots: [(fd: FileDescriptor, path: String)]) {
        self.capacity = max(capacity, 1)
        var mounts: [(id: Int32, fd: FileDescriptor)] = []
        for root in roots {
            guard let handle = try? BackingHandle(of: root.fd), !mounts.contains(where: { $0.id == handle.mountID }),
                  let mount = try? Backing.openMount(root.path) else { continue }
            // Open the root by its handle once: that fails with EPERM when
            // the driver may not use handles at all.
            guard let probe = try? Backing.openHandle(handle, mount: mount) else {
                Backing.close(mount)
                continue
            }
            Backing.close(probe)
            mounts.append((handle.mountID, mount))
        }
        self.mounts = mounts
    }

    deinit {
        for mount in mounts { Backing.close(mount.fd) }
    }

    /// The default size: a quarter of the descriptor limit (the rest is for
    /// open files), at most 4,096.
    static func defaultCapacity() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 256 }
        let soft = Int(clamping: min(limit.rlim_cur, 1 << 20))
        return min(4096, max(16, soft / 4))
    }

    var usesHandles: Bool { !mounts.isEmpty }

    /// Descriptors open in the cache now (kept ones not counted).
    var openCount: Int { ring.withLock { $0.nodes.count } }

    /// The handle of the file `fd` holds, or nil if its node must keep `fd`.
    func handle(for fd: FileDescriptor) -> BackingHandle? {
        guard !mounts.isEmpty, let handle = try? BackingHandle(of: fd),
              mounts.contains(where: { $0.id == handle.mountID }) else { return nil }
        return handle
    }

    private func mount(_ id: Int32) -> FileDescriptor? {
        mounts.first(where: { $0.id == id })?.fd
    }

    /// Puts a new node's descriptor in the ring.
    func admit(_ node: Node) {
        var closing: [FileDescriptor] = []
        ring.withLock { ring in
            append(node, to: &ring)
            evict(&ring, closing: &closing)
        }
        for fd in closing { Backing.close(fd) }
    }

    /// A fresh descriptor on a node's file (from a lookup): the node takes
    /// it if it has none, else it is closed.
    func offer(_ fd: FileDescriptor, to node: Node) {
        guard node.handle != nil, node.slot.load(ordering: .relaxed) & Node.Slot.fdMask == 0 else {
            Backing.close(fd)
            return
        }
        var closing: [FileDescriptor] = []
        ring.withLock { ring in
            if node.install(fd, pinned: false) {
                append(node, to: &ring)
                evict(&ring, closing: &closing)
            } else {
                closing.append(fd)
            }
        }
        for fd in closing { Backing.close(fd) }
    }

    /// The slow path of `Node.borrow`: opens the node's file from its handle.
    func reopen(_ node: Node) throws(Errno) -> Node.Borrowed {
        // A node without a handle lost its descriptor only by being forgotten.
        guard let handle = node.handle, let mount = mount(handle.mountID) else { throw .noSuchFileOrDirectory }
        let fd: FileDescriptor
        do { fd = try Backing.openHandle(handle, mount: mount) } catch {
            // The file was deleted (outside the mount, or its last name
            // went before the node was kept): as for a lookup of it.
            throw error.rawValue == ESTALE ? .noSuchFileOrDirectory : error
        }
        var closing: [FileDescriptor] = []
        let borrowed = ring.withLock { ring -> Node.Borrowed in
            // Another thread opened it meanwhile.
            if let borrowed = node.pinIfOpen() {
                closing.append(fd)
                return borrowed
            }
            guard node.install(fd, pinned: true) else { return Node.Borrowed(fd: fd, owned: true) }
            append(node, to: &ring)
            evict(&ring, closing: &closing)
            return Node.Borrowed(fd: fd, owned: false)
        }
        for fd in closing { Backing.close(fd) }
        return borrowed
    }

    /// Makes a node keep its descriptor (its file is losing its last name).
    func keep(_ node: Node) {
        guard node.handle != nil, !node.isKept, let borrowed = try? node.borrow() else { return }
        defer { node.giveBack(borrowed) }
        guard !borrowed.owned else { return }
        ring.withLock { ring in
            remove(node, from: &ring)
            node.markKept()
        }
    }

    /// The kernel forgot a node.
    func retire(_ node: Node) {
        ring.withLock { ring in
            remove(node, from: &ring)
            node.retire()
        }
    }

    private func append(_ node: Node, to ring: inout Ring) {
        guard node.ringIndex.load(ordering: .relaxed) < 0 else { return }
        node.ringIndex.store(ring.nodes.count, ordering: .relaxed)
        ring.nodes.append(node)
    }

    private func remove(_ node: Node, from ring: inout Ring) {
        let index = node.ringIndex.load(ordering: .relaxed)
        guard index >= 0 else { return }
        let last = ring.nodes.removeLast()
        if last !== node {
            ring.nodes[index] = last
            last.ringIndex.store(index, ordering: .relaxed)
        }
        node.ringIndex.store(-1, ordering: .relaxed)
    }

    /// Closes descriptors until the ring is back to `capacity`. A node that
    /// is borrowed or was used since the hand last passed is skipped (and
    /// loses its referenced bit); if every one is pinned the ring stays
    /// over capacity until the next call.
    private func evict(_ ring: inout Ring, closing: inout [FileDescriptor]) {
        var steps = ring.nodes.count * 2 + 1
        while ring.nodes.count > capacity && steps > 0 {
            steps -= 1
            if ring.hand >= ring.nodes.count { ring.hand = 0 }
            let node = ring.nodes[ring.hand]
            if let fd = node.evict() {
                closing.append(fd)
                remove(node, from: &ring)
            } else {
                ring.hand += 1
            }
        }
    }
}
