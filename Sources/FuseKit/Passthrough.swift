import CFuse
import Glibc
import Locking
import Synchronization
import SystemPackage

/// FUSE passthrough: the kernel reads and writes an open file's backing file
/// itself, without a READ or WRITE request per call.
///
/// libfuse 3.14 knows nothing of it, so the session's /dev/fuse traffic goes
/// through `PassthroughChannel.io` (libfuse's custom I/O): the read side
/// notes whether the kernel's INIT offers passthrough, the write side adds
/// the grant to libfuse's INIT reply. Opens then register their descriptor
/// with the kernel and answer with its backing id (see `ReplyOpen`).
///
/// The kernel attaches one backing file to an inode while any passthrough
/// file of it is open, and fails (EIO) an open that names another backing
/// id, or none, meanwhile; so a node keeps one backing id for all its open
/// handles, closed when the last of them is released.
final class PassthroughChannel: Sendable {
    private struct Backing {
        var id: Int32
        var handles: Int
    }

    private struct HandleKey: Hashable {
        var node: UInt64
        var handle: UInt64
    }

    private struct State {
        var device: Int32 = -1
        var initUnique: UInt64 = 0
        /// What INIT offered: bit 0 passthrough, bit 1 FUSE over io_uring.
        var offers: Int32 = 0
        /// The kernel refused a registration for a reason that lasts (not
        /// root, stacking, no passthrough on this connection): later opens
        /// of nodes without a backing id stay plain. A passing refusal
        /// (memory) leaves only that open plain.
        var refused = false
        var nodes: [UInt64: Backing] = [:]
        var handles: Set<HandleKey> = []
    }

    /// Whether the file system asked for passthrough (fixed before mount).
    let wanted: Bool
    /// Whether to take FUSE_HANDLE_KILLPRIV_V2 along with passthrough.
    let wantsKillPrivV2: Bool
    private let state = Locked(State())
    /// Until INIT is answered, replies are checked for it; after, not at all.
    private let awaitingInit = Atomic<Bool>(false)
    /// Fixed once, when INIT is answered (before any open or write arrives),
    /// and read on every open and every write: atomics, not the lock.
    private let grantedFlag = Atomic<Bool>(false)
    private let killPrivV2Flag = Atomic<Bool>(false)

    /// Gets one line when the kernel refuses a backing file, with its errno.
    private let log: @Sendable (String) -> Void
    /// Gets one line when INIT is answered: what passthrough came to.
    private let info: @Sendable (String) -> Void

    init(wanted: Bool, killPrivV2: Bool, log: @escaping @Sendable (String) -> Void = { _ in },
         info: @escaping @Sendable (String) -> Void = { _ in }) {
        self.wanted = wanted
        self.wantsKillPrivV2 = killPrivV2
        self.log = log
        self.info = info
    }

    /// Refusals of FUSE_DEV_IOC_BACKING_OPEN that will not change for this
    /// connection: no privilege, a backing file system stacked too deep, a
    /// file the kernel cannot pass through, passthrough not taken at INIT.
    static func refusalLasts(_ code: Int32) -> Bool {
        [EPERM, EACCES, ELOOP, EOPNOTSUPP, ENOTTY, EINVAL, ENOSYS].contains(code)
    }

    /// Whether the kernel accepted passthrough for this connection.
    var granted: Bool { grantedFlag.load(ordering: .acquiring) }

    /// Whether the kernel left clearing set-ID bits on write, truncate and
    /// open(O_TRUNC) to the server (FUSE_HANDLE_KILLPRIV_V2 granted).
    var killPrivV2: Bool { killPrivV2Flag.load(ordering: .acquiring) }

    func attach(device: Int32) {
        state.withLock { $0.device = device }
        awaitingInit.store(true, ordering: .releasing)
    }

    /// Whether `node` has passthrough handles open: the kernel then fails
    /// (EIO) any open of it that does not name its backing id.
    func hasBacking(node: UInt64) -> Bool {
        state.withLock { $0.nodes[node] != nil }
    }

    /// A backing id for a new handle of `node` reading and writing
    /// `descriptor`'s file, or nil for a plain open. The registration ioctl
    /// runs outside the lock (other opens and releases go on meanwhile);
    /// when two opens of one node register at once, the first to come back
    /// keeps its id and the other closes its own and shares it.
    func acquire(node: UInt64, handle: UInt64, descriptor: FileDescriptor) -> Int32? {
        guard granted else { return nil }
        let key = HandleKey(node: node, handle: handle)
        let known: Int32?? = state.withLock { state in
            if let backing = state.nodes[node] {
                state.nodes[node]!.handles += 1
                state.handles.insert(key)
                return .some(backing.id)
            }
            return state.refused ? .some(nil) : .none
        }
        if let known { return known }
        let device = state.withLock { $0.device }
        let registered = cfuse_backing_open(device, descriptor.rawValue)
        let code = registered > 0 ? 0 : errno
        let lasts = Self.refusalLasts(code)
        let (id, unused, firstRefusal): (Int32?, Int32?, Bool) = state.withLock { state in
            guard registered > 0 else {
                let first = lasts && !state.refused
                if lasts { state.refused = true }
                return (state.nodes[node].map { backing in
                    state.nodes[node]!.handles += 1
                    state.handles.insert(key)
                    return backing.id
                }, nil, first)
            }
            if let backing = state.nodes[node] {
                state.nodes[node]!.handles += 1
                state.handles.insert(key)
                return (backing.id, registered, false)
            }
            state.nodes[node] = Backing(id: registered, handles: 1)
            state.handles.insert(key)
            return (registered, nil, false)
        }
        if let unused { _ = cfuse_backing_close(device, unused) }
        if firstRefusal {
            log("passthrough: the kernel refused a backing file (\(Errno(rawValue: code))): every later open is served by the driver")
        } else if registered <= 0 && !lasts {
            log("passthrough: the kernel refused a backing file for now (\(Errno(rawValue: code))): this open is served by the driver")
        }
        return id
    }

    /// The handle is gone (released, or its open reply never reached the kernel).
    func release(node: UInt64, handle: UInt64) {
        guard wanted else { return }
        let (device, closing): (Int32, Int32?) = state.withLock { state in
            guard state.handles.remove(HandleKey(node: node, handle: handle)) != nil,
                  var backing = state.nodes[node] else { return (state.device, nil) }
            backing.handles -= 1
            if backing.handles > 0 {
                state.nodes[node] = backing
                return (state.device, nil)
            }
            state.nodes[node] = nil
            return (state.device, backing.id)
        }
        // Outside the lock. The kernel holds the backing file while any
        // passthrough handle of the inode is open: closing our id now only
        // drops our reference.
        if let closing { _ = cfuse_backing_close(device, closing) }
    }

    func received(_ buffer: UnsafeMutableRawPointer, length: Int) {
        guard awaitingInit.load(ordering: .acquiring) else { return }
        var unique: UInt64 = 0
        var offers: Int32 = 0
        guard cfuse_parse_init(buffer, length, &unique, &offers) != 0 else { return }
        state.withLock {
            $0.initUnique = unique
            $0.offers = offers
        }
    }

    /// `ring`: the session's FUSE over io_uring transport, if it has one,
    /// which INIT's reply asks for when the kernel offers it.
    func send(_ fd: Int32, _ iov: UnsafeMutablePointer<iovec>, _ count: Int32, ring: UringTransport?) -> Int {
        guard awaitingInit.load(ordering: .acquiring) else { return writev(fd, iov, count) }
        let unique = cfuse_reply_unique(iov, count)
        let (isInitReply, offers) = state.withLock { ($0.initUnique != 0 && $0.initUnique == unique, $0.offers) }
        guard isInitReply else { return writev(fd, iov, count) }
        awaitingInit.store(false, ordering: .releasing)
        let askPassthrough = wanted && offers & 1 != 0
        let askRing = ring != nil && offers & 2 != 0
        // Direct I/O handles (files whose every read and write must reach
        // the driver) can then be mapped shared, as SQLite's WAL index is:
        // without it the kernel refuses such a mapping with ENODEV.
        let askDirectMmap = offers & 4 != 0
        // The grants are published before the reply reaches the kernel: it
        // sends the first opens the moment it has the reply, and an open
        // answered without passthrough while another is answered with it
        // fails in the kernel's io-mode check (EIO).
        var amended = [UInt8](repeating: 0, count: Int(CFUSE_INIT_REPLY_SIZE))
        let asked = askPassthrough || askRing || askDirectMmap
            ? cfuse_amend_init_reply(iov, count, askPassthrough ? 1 : 0, wantsKillPrivV2 ? 1 : 0, askRing ? 1 : 0,
                                     askDirectMmap ? 1 : 0, &amended)
            : -1
        var granted = max(asked, 0)
        grantedFlag.store(granted & 1 != 0, ordering: .releasing)
        killPrivV2Flag.store(granted & 2 != 0, ordering: .releasing)
        let written = asked >= 0 ? Glibc.write(fd, amended, amended.count) : writev(fd, iov, count)
        let saved = errno
        if asked >= 0 && written != amended.count {
            // Not delivered: the connection is gone, nothing was granted.
            granted = 0
            grantedFlag.store(false, ordering: .releasing)
            killPrivV2Flag.store(false, ordering: .releasing)
        }
        ring?.initAnswered(offered: offers & 2 != 0, granted: granted & 4 != 0)
        if wanted {
            let outcome = !askPassthrough ? "the kernel did not offer it"
                : granted & 1 != 0 ? "on" + (wantsKillPrivV2 ? (granted & 2 != 0 ? ", killpriv_v2 on" : ", killpriv_v2 off") : "")
                : written < 0 ? "the INIT reply failed (\(Errno(rawValue: saved)))"
                : "off (the reply could not carry it)"
            info("passthrough at INIT: \(outcome)")
        }
        errno = saved
        return written
    }

    /// libfuse's custom I/O: plain system calls, watched. libfuse hands the
    /// session's userdata, the `FileSystemBox`, to both.
    static var io: fuse_custom_io {
        var io = fuse_custom_io()
        io.read = { fd, buffer, length, userdata in
            let count = Glibc.read(fd, buffer, length)
            if count > 0, let buffer, let userdata {
                let saved = errno
                // The box outlives the session: no retain and release per request.
                Unmanaged<FileSystemBox>.fromOpaque(userdata)._withUnsafeGuaranteedRef {
                    $0.passthrough.received(buffer, length: count)
                }
                errno = saved
            }
            return count
        }
        io.writev = { fd, iov, count, userdata in
            guard let iov, let userdata else { return writev(fd, iov, count) }
            return Unmanaged<FileSystemBox>.fromOpaque(userdata)._withUnsafeGuaranteedRef { box in
                // A reply to a request that came through the ring goes back through it.
                if let ring = box.ring, let written = ring.commit(iov, count) { return written }
                return box.passthrough.send(fd, iov, count, ring: box.ring)
            }
        }
        return io
    }
}

extension OpenOptions {
    /// FOPEN_* bits as libfuse's fill_open sets them.
    var kernelFlags: UInt32 {
        var flags: UInt32 = 0
        if directIO { flags |= 1 << 0 }
        if keepCache { flags |= 1 << 1 }
        if cacheDirectory { flags |= 1 << 3 }
        if noFlush { flags |= 1 << 5 }
        return flags
    }
}
