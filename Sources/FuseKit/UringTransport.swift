import CFuse
import CLinux
import Glibc
import Locking
import POSIXHelpers
import Synchronization

/// FUSE over io_uring: requests come in and replies go out through one
/// io_uring per possible CPU instead of read(2) and writev(2) on /dev/fuse.
///
/// The kernel offers it at INIT only while the fuse module's `enable_uring`
/// parameter is Y; the INIT reply takes it (see `PassthroughChannel.send`).
/// Each queue's thread then registers its entries (a header area and a
/// payload buffer each) with FUSE_IO_URING_CMD_REGISTER; once every possible
/// CPU's queue has one, the kernel sends a request to the queue of the CPU
/// its caller runs on. The thread lays the request out as /dev/fuse would
/// have given it and hands it to libfuse's `fuse_session_process_buf`;
/// libfuse's reply reaches the custom I/O writev hook, which puts it into the
/// entry and submits COMMIT_AND_FETCH: one system call answers the request
/// and waits for the next. FORGET, interrupts, notifications and everything
/// before the ring is complete stay on /dev/fuse, served by `WorkerLoop`.
///
/// libfuse 3.14 knows nothing of this, as it knew nothing of passthrough.
final class UringTransport: Sendable {
    /// Entries per queue. One thread serves a queue, one request at a time;
    /// a second entry lets the kernel hand over the next request while the
    /// thread is busy.
    static let queueDepth = 2
    /// libfuse 3.14's buffer size less its header room: no INIT reply from
    /// it allows a larger max_write or max_pages, and the kernel wants each
    /// payload buffer at least that large.
    static let payloadSize = 256 * 4096
    /// A request laid out for libfuse: in header, opcode header, payload.
    static let requestCapacity = payloadSize + 4096
    /// Each entry's header area has a page of its own.
    fileprivate static let headerSize = 4096
    private static let stopTag: UInt64 = 0

    private struct Slot {
        var queue: Int
        var entry: Int
    }

    private struct Attachment: @unchecked Sendable {
        // libfuse's session: its calls used here are safe from any thread.
        var session: OpaquePointer
        var device: Int32
    }

    private let queues: [RingQueue]
    private let attachment = Locked<Attachment?>(nil)
    /// Requests handed to libfuse whose replies have not come yet, by unique.
    private let pending = Locked<[UInt64: Slot]>([:])
    private let threads = Locked<[pthread_t]>([])
    private let served = Atomic<Int>(0)
    private let refusalReported = Atomic<Bool>(false)
    private let log: @Sendable (String) -> Void

    /// Makes a ring per possible CPU, or says in one line why it cannot (a
    /// seccomp policy or kernel.io_uring_disabled refusing io_uring_setup).
    static func make(log: @escaping @Sendable (String) -> Void) -> UringTransport? {
        let count = Int(asfs_possible_cpus())
        guard count > 0 else {
            log("io_uring: cannot read /sys/devices/system/cpu/possible; serving requests through /dev/fuse")
            return nil
        }
        var queues: [RingQueue] = []
        for index in 0..<count {
            switch RingQueue.make(index: index) {
            case .success(let queue): queues.append(queue)
            case .failure(let reason):
                // The queues made so far close their rings as they go.
                log("io_uring: \(reason); serving requests through /dev/fuse")
                return nil
            }
        }
        return UringTransport(queues: queues, log: log)
    }

    private init(queues: [RingQueue], log: @escaping @Sendable (String) -> Void) {
        self.queues = queues
        self.log = log
    }

    /// Requests that came through the ring so far.
    var requestsServed: Int { served.load(ordering: .relaxed) }

    func attach(session: OpaquePointer, device: Int32) {
        attachment.withLock { $0 = Attachment(session: session, device: device) }
    }

    /// INIT has been answered: start the queues if the kernel took the ring.
    func initAnswered(offered: Bool, granted: Bool) {
        guard granted else {
            log(offered
                ? "io_uring: the INIT reply could not be sent with FUSE_OVER_IO_URING; serving requests through /dev/fuse"
                : "io_uring: the kernel did not offer FUSE over io_uring at INIT (/sys/module/fuse/parameters/enable_uring is not Y); serving requests through /dev/fuse")
            return
        }
        // The threads take no process signals (SIGTERM is the coordinator's).
        var all = sigset_t(), saved = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &saved)
        defer { pthread_sigmask(SIG_SETMASK, &saved, nil) }
        var started: [pthread_t] = []
        for queue in queues {
            if let thread = startThread({ self.serve(queue) }) {
                started.append(thread)
            } else {
                log("io_uring: cannot start the thread of queue \(queue.index); the kernel keeps using /dev/fuse")
            }
        }
        threads.withLock { $0 = started }
        log("io_uring: serving requests through \(queues.count) queues of \(Self.queueDepth) entries")
    }

    /// Sends a reply libfuse gathered in `iov` back through the ring entry
    /// its request came from; nil if it is not an answer to a ring request
    /// (it then goes to /dev/fuse).
    func commit(_ iov: UnsafeMutablePointer<iovec>, _ count: Int32) -> Int? {
        let unique = cfuse_reply_unique(iov, count)
        guard unique != 0, let slot = pending.withLock({ $0.removeValue(forKey: unique) }),
              let device = attachment.withLock({ $0?.device }) else { return nil }
        let queue = queues[slot.queue]
        let written = cfuse_ring_reply(queue.header(slot.entry), queue.payload(slot.entry), Self.payloadSize, iov, count)
        let submitted = queue.submitCommit(entry: slot.entry, commitID: unique, device: device)
        if submitted < 0 {
            errno = -submitted
            return -1
        }
        if written < 0 {
            errno = EINVAL
            return -1
        }
        return written
    }

    /// Asks every queue's thread to stop and waits for them. The entries'
    /// buffers stay mapped (see `RingQueue.deinit`).
    func stop() {
        for queue in queues { _ = asfs_eventfd_signal(queue.stopEvent) }
        let started = threads.withLock { threads in
            defer { threads = [] }
            return threads
        }
        for thread in started { pthread_join(thread, nil) }
        if !started.isEmpty {
            log("io_uring: \(requestsServed) requests came through the ring")
        }
    }

    /// One queue's thread: registers the entries, then serves requests until
    /// asked to stop or the connection ends.
    fileprivate func serve(_ queue: RingQueue) {
        guard let attached = attachment.withLock({ $0 }) else { return }
        _ = asfs_pin_thread(Int32(queue.index))
        var live = 0
        for entry in 0..<Self.queueDepth {
            let result = queue.submitRegister(entry: entry, device: attached.device)
            if result < 0 {
                reportRefusal("registering queue \(queue.index) failed (\(errorText(-result)))")
            } else {
                live += 1
            }
        }
        guard live > 0, queue.submitStopPoll() == 0 else { return }
        var buffer = fuse_buf()
        buffer.mem = queue.request
        while live > 0 {
            var tag: UInt64 = 0
            var result: Int32 = 0
            let waited = asfs_ring_wait(queue.ring, &tag, &result)
            if waited == -EINTR { continue }
            if waited < 0 || tag == Self.stopTag { break }
            let entry = RingQueue.entry(of: tag)
            if result < 0 {
                // A commit the kernel could not match (its request was ended
                // meanwhile, say by a caller's SIGKILL, as a late write to
                // /dev/fuse gets ENOENT) leaves the entry with the kernel's
                // user-space list: register the buffers again as a new one.
                if !RingQueue.isRegister(tag), result != -ENOTCONN, result != -ECONNABORTED,
                   queue.submitRegister(entry: entry, device: attached.device) == 0 {
                    continue
                }
                // ENOTCONN: the connection is gone (unmounted, aborted).
                if result != -ENOTCONN && result != -ECONNABORTED {
                    reportRefusal("the kernel ended an entry of queue \(queue.index) (\(errorText(-result)))")
                }
                live -= 1
                continue
            }
            var commitID: UInt64 = 0
            let length = cfuse_ring_request(queue.header(entry), queue.payload(entry), queue.request,
                                            Self.requestCapacity, &commitID)
            guard length > 0 else {
                answerMalformed(queue, entry: entry, commitID: commitID, device: attached.device)
                continue
            }
            pending.withLock { $0[commitID] = Slot(queue: queue.index, entry: entry) }
            served.add(1, ordering: .relaxed)
            buffer.size = length
            TmpfileRequest.mapToCreate(buffer.mem, length: length)
            fuse_session_process_buf(attached.session, &buffer)
        }
    }

    /// A request that does not parse gets EIO, so the entry comes back.
    private func answerMalformed(_ queue: RingQueue, entry: Int, commitID: UInt64, device: Int32) {
        var header = cfuse_out_header(len: UInt32(MemoryLayout<cfuse_out_header>.size), error: -EIO, unique: commitID)
        withUnsafeMutableBytes(of: &header) { bytes in
            var iov = iovec(iov_base: bytes.baseAddress, iov_len: bytes.count)
            _ = cfuse_ring_reply(queue.header(entry), queue.payload(entry), Self.payloadSize, &iov, 1)
        }
        _ = queue.submitCommit(entry: entry, commitID: commitID, device: device)
    }

    private func reportRefusal(_ what: String) {
        guard !refusalReported.exchange(true, ordering: .relaxed) else { return }
        log("io_uring: \(what); the kernel keeps using /dev/fuse")
    }
}

/// One queue: its ring and its entries' buffers. A thin wrapper of C
/// pointers; the ring's submission side locks itself, the completion side
/// and the request buffer belong to the queue's thread.
private final class RingQueue: @unchecked Sendable {
    let index: Int
    let ring: OpaquePointer
    let stopEvent: Int32
    private let headers: UnsafeMutableRawPointer
    private let payloads: UnsafeMutableRawPointer
    private let vectors: UnsafeMutablePointer<iovec>
    let request: UnsafeMutableRawPointer

    enum Failure: Error { case refused(String) }

    static func make(index: Int) -> Result<RingQueue, Failure> {
        var error: Int32 = 0
        // The entries, the stop poll, and room for a resubmission.
        guard let ring = asfs_ring_create(UInt32(UringTransport.queueDepth + 2), &error) else {
            return .failure(.refused("io_uring_setup refused (\(errorText(error)))"))
        }
        let stopEvent = asfs_eventfd()
        guard stopEvent >= 0 else {
            asfs_ring_destroy(ring)
            return .failure(.refused("eventfd failed (\(errorText(errno)))"))
        }
        let depth = UringTransport.queueDepth
        // Page-aligned, as the kernel may pin them; untouched pages cost nothing.
        func map(_ size: Int) -> UnsafeMutableRawPointer? {
            let memory = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            return memory == MAP_FAILED ? nil : memory
        }
        guard let headers = map(depth * UringTransport.headerSize),
              let payloads = map(depth * UringTransport.payloadSize),
              let request = map(UringTransport.requestCapacity) else {
            asfs_ring_destroy(ring)
            close(stopEvent)
            return .failure(.refused("cannot map the ring's buffers"))
        }
        return .success(RingQueue(index: index, ring: ring, stopEvent: stopEvent, headers: headers,
                                  payloads: payloads, request: request))
    }

    private init(index: Int, ring: OpaquePointer, stopEvent: Int32, headers: UnsafeMutableRawPointer,
                 payloads: UnsafeMutableRawPointer, request: UnsafeMutableRawPointer) {
        self.index = index
        self.ring = ring
        self.stopEvent = stopEvent
        self.headers = headers
        self.payloads = payloads
        self.request = request
        let depth = UringTransport.queueDepth
        vectors = .allocate(capacity: 2 * depth)
        for entry in 0..<depth {
            vectors[2 * entry] = iovec(iov_base: headers + entry * UringTransport.headerSize,
                                       iov_len: MemoryLayout<cfuse_uring_req_header>.size)
            vectors[2 * entry + 1] = iovec(iov_base: payloads + entry * UringTransport.payloadSize,
                                           iov_len: UringTransport.payloadSize)
        }
    }

    func header(_ entry: Int) -> UnsafeMutablePointer<cfuse_uring_req_header> {
        (headers + entry * UringTransport.headerSize).assumingMemoryBound(to: cfuse_uring_req_header.self)
    }

    func payload(_ entry: Int) -> UnsafeMutableRawPointer {
        payloads + entry * UringTransport.payloadSize
    }

    /// A completion's tag: the entry + 1 (0 is the stop poll), and whether
    /// the command was a registration.
    static func tag(entry: Int, register: Bool) -> UInt64 { UInt64(entry + 1) | (register ? 1 << 32 : 0) }
    static func entry(of tag: UInt64) -> Int { Int(tag & 0xFFFF_FFFF) - 1 }
    static func isRegister(_ tag: UInt64) -> Bool { tag & (1 << 32) != 0 }

    func submitRegister(entry: Int, device: Int32) -> Int32 {
        var command = cfuse_uring_cmd_req()
        command.qid = UInt16(index)
        return asfs_ring_submit_cmd(ring, device, CFUSE_IO_URING_CMD_REGISTER, Self.tag(entry: entry, register: true), &command,
                                    MemoryLayout<cfuse_uring_cmd_req>.size,
                                    UInt64(UInt(bitPattern: vectors + 2 * entry)), 2)
    }

    func submitCommit(entry: Int, commitID: UInt64, device: Int32) -> Int32 {
        var command = cfuse_uring_cmd_req()
        command.qid = UInt16(index)
        command.commit_id = commitID
        return asfs_ring_submit_cmd(ring, device, CFUSE_IO_URING_CMD_COMMIT_AND_FETCH, Self.tag(entry: entry, register: false), &command,
                                    MemoryLayout<cfuse_uring_cmd_req>.size, 0, 0)
    }

    func submitStopPoll() -> Int32 {
        asfs_ring_submit_poll(ring, stopEvent, 0)
    }

    /// Closing the ring cancels whatever commands it still holds, so the
    /// kernel writes into no entry after this. The entries' buffers are left
    /// mapped all the same: a connection that outlives its transport (the
    /// session torn down before the unmount) must never find their addresses
    /// reused by something else. Their pages cost nothing once untouched.
    deinit {
        asfs_ring_destroy(ring)
        close(stopEvent)
        vectors.deallocate()
    }
}
