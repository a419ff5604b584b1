import Locking
import BackingStore
import FuseKit
import Glibc
import POSIXHelpers
import SandboxPolicy
import SystemPackage

/// The disk of a `mount --capacity SIZE` (rules Q1-Q3): how much of SIZE
/// the container's backing tree occupies, kept exact by measuring what each
/// changing call did.
///
/// Usage is in allocated bytes (st_blocks × 512), a file with several links
/// counted once, as df counts. It starts from a walk of the backing tree,
/// made under the lock at the first request that needs the count: after
/// the mount, so after the driver emptied tmp, and before any change is
/// counted (every change waits on the lock). After that every call that can
/// change allocation goes through `change(reserving:tracking:_:)`:
///
/// 1. under the lock, the space the call may need is reserved (refused with
///    ENOSPC when used + reserved + need > capacity) and each file it
///    touches is registered with its allocation before the call;
/// 2. the call runs, without the lock;
/// 3. under the lock, each file is measured again and the difference is
///    added to `used`; the reservation is returned.
///
/// A file's "before" lives in `inFlight` while any call on it runs, so two
/// calls on one file at once count its change once (whoever settles first
/// sees it). Concurrent writers can therefore never reserve more than the
/// capacity in total. The counting needs every write to pass through the
/// driver: capacity mounts do not use FUSE passthrough (docs/device.md).
///
/// A file whose last name goes (st_nlink 0 after the call) frees its space
/// at once, unless a handle of it is open: then, as on ext4, at its last
/// release. A file that gets a name again while open (linkat of an
/// O_TMPFILE file: `link` tracks the file too) is an ordinary file again.
///
/// The kernel sends a file's RELEASE after close(2) has returned, so the
/// caller's next call (the unlink, then a write) can be served before that
/// release: `rm big; write` would find the space still held by a file no
/// one has open. A refusal therefore waits, for at most `releaseWait`, when
/// the files whose last name went within the last `recentOrphan` while a
/// handle was open hold enough to let all of it through. A file a process really
/// keeps open after its unlink only delays such refusals in the second
/// after the unlink; an O_TMPFILE file (never named) none.
///
/// Offsets and lengths come from callers and may be anything up to
/// 2^63 - 1: the arithmetic on them (`DiskSpace.writable`) cannot overflow.
public final class CapacityLedger: Sendable {
    public let capacity: Int64
    public let blockSize: Int64

    struct Tracked {
        var bytes: Int64
        var users: Int
        /// Whether the file had a name when the first call on it began.
        var hadName: Bool
    }

    struct Orphan {
        /// When its last name went (monotonic ms); nil for a file that never
        /// had one here (O_TMPFILE): no release of it is on its way.
        var since: Int?
        /// The space it holds (as counted in `used`).
        var bytes: Int64
    }

    struct State {
        /// Whether the walk was made (`used` counts from then).
        var measured = false
        var used: Int64 = 0
        var reserved: Int64 = 0
        var inFlight: [InodeKey: Tracked] = [:]
        /// Open handles per file: an unlinked file keeps its space while open.
        var openHandles: [InodeKey: Int] = [:]
        /// Unlinked files still open: still counted, freed at last release.
        var orphans: [InodeKey: Orphan] = [:]
        /// Files whose space was given back because their last name went;
        /// a file the driver still holds (O_PATH) must not be freed twice.
        /// An entry goes when its inode number comes back with links.
        var freed: Set<InodeKey> = []
    }

    /// The longest a refusal waits for releases on their way (ms).
    let releaseWait: Int
    /// How recent an orphan must be to make a refusal wait (ms).
    let recentOrphan: Int

    private let state: Locked<State>
    /// Descriptors of the trees to count (the backing root, an outside
    /// bundle): the ledger's own copies, closed after the walk.
    private let roots: [Int32]

    /// `roots`: descriptors of the folders whose trees make the disk's
    /// contents. Root entries starting with `.appsandboxfs` are the tools'
    /// own and do not count.
    public init(capacity: Int64, roots: [FileDescriptor], blockSize: Int64 = 4096,
                releaseWait: Int = 250, recentOrphan: Int = 1_000) {
        self.capacity = capacity
        self.blockSize = blockSize
        self.releaseWait = releaseWait
        self.recentOrphan = recentOrphan
        self.roots = roots.map { dup($0.rawValue) }
        state = Locked(State())
    }

    /// Runs `body` under the lock, after the first walk.
    private func withState<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        try state.withLock { (state) throws(E) -> T in
            if !state.measured {
                var seen: Set<InodeKey> = []
                for root in roots where root >= 0 {
                    state.used += Self.occupied(by: root, seen: &seen, isRoot: true)
                    close(root)
                }
                state.measured = true
            }
            return try body(&state)
        }
    }

    /// statfs through the mount: a disk of `capacity` bytes (Q1).
    public func statfs(_ backing: statvfs) -> statvfs {
        var result = backing
        // Q1: a total of exactly the capacity. Counted in the backing file
        // system's fragment size when the capacity is a whole number of
        // them, else in the largest power of two below it that divides the
        // capacity (`--capacity 100000`: 32-byte units), so that df's
        // blocks x fragment size is the capacity to the byte.
        var unit = Int64(max(backing.f_frsize, 1))
        while unit > 1 && capacity % unit != 0 { unit /= 2 }
        result.f_frsize = UInt(unit)
        let used = withState { $0.used }
        result.f_blocks = fsblkcnt_t(capacity / unit)
        let free = fsblkcnt_t(max(0, capacity - used) / unit)
        result.f_bfree = free
        result.f_bavail = free
        return result
    }

    // MARK: Changes

    /// Runs `body`, a call that may change the allocation of the files held
    /// by `fds` (O_PATH descriptors are fine) and needs at most `bytes` of
    /// new space; ENOSPC without running it when that space is not free.
    public func change<T>(reserving bytes: Int64, tracking fds: [FileDescriptor], _ body: () throws(Errno) -> T) throws(Errno) -> T {
        let keys = try begin(reserving: bytes, tracking: fds)
        defer { end(reserved: bytes, tracking: fds, keys: keys) }
        return try body()
    }

    /// A write of `length` bytes at `offset` (write, copy_file_range):
    /// reserves the blocks it may allocate, or, when they do not all fit,
    /// those of the longest prefix that does (Q2: a write that partly fits
    /// writes a prefix). `body` gets the length it may write.
    public func write<T>(_ fd: FileDescriptor, offset: off_t, length: Int, _ body: (Int) throws(Errno) -> T) throws(Errno) -> T {
        guard length > 0 else { return try body(length) }
        let (allowed, reserved, key) = try reserve(fd, offset: Int64(offset), length: Int64(length), whole: false)
        defer { end(reserved: reserved, tracking: [fd], keys: [key]) }
        return try body(Int(allowed))
    }

    /// fallocate of a mode that allocates (`DiskSpace.fallocateMayAllocate`):
    /// the blocks of its whole range reserved, or ENOSPC without running
    /// `body`, as ext4 refuses the whole call.
    public func allocate<T>(_ fd: FileDescriptor, offset: off_t, length: off_t, _ body: () throws(Errno) -> T) throws(Errno) -> T {
        guard length > 0 else { return try body() }
        let (_, reserved, key) = try reserve(fd, offset: Int64(offset), length: Int64(length), whole: true)
        defer { end(reserved: reserved, tracking: [fd], keys: [key]) }
        return try body()
    }

    /// Reserves what a write or an allocation of the range needs (all of
    /// it when `whole`) and registers the file; returns the length allowed.
    /// Refused: EFBIG when the range lies past the largest file the backing
    /// file system allows (ext4 checks that before the free space), else
    /// ENOSPC.
    private func reserve(_ fd: FileDescriptor, offset: Int64, length: Int64,
                         whole: Bool) throws(Errno) -> (allowed: Int64, reserved: Int64, key: InodeKey) {
        typealias Grant = (allowed: Int64, reserved: Int64, key: InodeKey)
        let granted = try waitingForReleases { (mayWait) throws(Errno) -> Attempt<Grant?> in
            try withState { (state) throws(Errno) -> Attempt<Grant?> in
                let status = try Self.stat(fd)
                let decision = DiskSpace.writable(size: Int64(status.st_size), allocated: Self.bytes(status), offset: offset,
                                                  length: length, free: capacity - state.used - state.reserved, blockSize: blockSize)
                // Waited for only when the space on its way lets all of it through.
                if decision.allowed < length, mayWait {
                    let coming = bytesOnTheirWay(state)
                    if coming > 0, DiskSpace.writable(size: Int64(status.st_size), allocated: Self.bytes(status), offset: offset,
                                                      length: length, free: capacity - state.used - state.reserved + coming,
                                                      blockSize: blockSize).allowed == length {
                        return .retry
                    }
                }
                guard decision.allowed > 0, !whole || decision.allowed == length else { return .answer(nil) }
                let key = InodeKey(status)
                register(key, status: status, in: &state)
                state.reserved += decision.reserve
                return .answer((decision.allowed, decision.reserve, key))
            }
        }
        guard let granted else {
            // A write fails with EFBIG when it starts at or past the
            // largest file, a fallocate when its range ends past it.
            let (end, overflows) = offset.addingReportingOverflow(whole ? length : 1)
            throw overflows || Backing.isPastMaximumSize(fd, off_t(end)) ? Errno.fileTooLarge : Errno.noSpace
        }
        return granted
    }

    /// A file was created (create, mkdir, symlink, mknod): its own blocks.
    /// Called before the reply, so no other call on it can run yet.
    public func added(_ fd: FileDescriptor) {
        guard let status = try? Self.stat(fd) else { return }
        withState { state in
            state.freed.remove(InodeKey(status))
            state.used += Self.bytes(status)
        }
    }

    /// A handle of the file was opened.
    public func opened(_ fd: FileDescriptor) {
        guard let status = try? Self.stat(fd) else { return }
        withState { $0.openHandles[InodeKey(status), default: 0] += 1 }
    }

    /// A handle is about to be closed: an unlinked file's last one frees it.
    public func releasing(_ fd: FileDescriptor) {
        guard let status = try? Self.stat(fd) else { return }
        let key = InodeKey(status)
        withState { state in
            let remaining = (state.openHandles[key] ?? 1) - 1
            state.openHandles[key] = remaining > 0 ? remaining : nil
            if remaining <= 0, state.orphans.removeValue(forKey: key) != nil {
                let counted = state.inFlight[key]?.bytes ?? Self.bytes(status)
                state.used -= counted
                state.freed.insert(key)
            }
        }
    }

    // MARK: Inside

    private func begin(reserving bytes: Int64, tracking fds: [FileDescriptor]) throws(Errno) -> [InodeKey] {
        try waitingForReleases { (mayWait) throws(Errno) -> Attempt<[InodeKey]> in
            try withState { (state) throws(Errno) -> Attempt<[InodeKey]> in
                if bytes > 0 && state.used + state.reserved + bytes > capacity {
                    let coming = mayWait ? bytesOnTheirWay(state) : 0
                    if coming > 0 && state.used + state.reserved - coming + bytes <= capacity { return .retry }
                    throw Errno.noSpace
                }
                var keys: [InodeKey] = []
                for fd in fds {
                    let status = try Self.stat(fd)
                    let key = InodeKey(status)
                    if status.st_nlink > 0 { state.freed.remove(key) }
                    register(key, status: status, in: &state)
                    keys.append(key)
                }
                state.reserved += bytes
                return .answer(keys)
            }
        }
    }

    private func register(_ key: InodeKey, status: Glibc.stat, in state: inout State) {
        if state.inFlight[key] != nil {
            state.inFlight[key]!.users += 1
        } else {
            state.inFlight[key] = Tracked(bytes: Self.bytes(status), users: 1, hadName: status.st_nlink > 0)
        }
    }

    private func end(reserved: Int64, tracking fds: [FileDescriptor], keys: [InodeKey]) {
        withState { state in
            state.reserved -= reserved
            for (fd, key) in zip(fds, keys) {
                guard var tracked = state.inFlight[key] else { continue }
                if let status = try? Self.stat(fd), InodeKey(status) == key {
                    let now = Self.bytes(status)
                    if !state.freed.contains(key) { state.used += now - tracked.bytes }
                    tracked.bytes = now
                    state.orphans[key]?.bytes = now
                    // It has a name (again): an O_TMPFILE file, or one
                    // unlinked while open, that linkat(2) named. From now
                    // on an ordinary file: its space stays at its last
                    // close and its growth counts.
                    if status.st_nlink > 0 { state.orphans.removeValue(forKey: key) }
                    // Its last name went: the space is free, or will be at
                    // its last close.
                    if status.st_nlink == 0, !state.freed.contains(key), state.orphans[key] == nil {
                        if state.openHandles[key] != nil {
                            state.orphans[key] = Orphan(since: tracked.hadName ? monotonicMilliseconds() : nil, bytes: now)
                        } else {
                            state.used -= now
                            state.freed.insert(key)
                        }
                    }
                }
                tracked.users -= 1
                state.inFlight[key] = tracked.users > 0 ? tracked : nil
            }
        }
    }

    enum Attempt<T> {
        case answer(T)
        /// Refused now, but a release on its way may free the space.
        case retry
    }

    /// The space of the files whose last name went while open within the
    /// last `recentOrphan` ms: their releases may be on their way.
    private func bytesOnTheirWay(_ state: State) -> Int64 {
        guard !state.orphans.isEmpty else { return 0 }
        let now = monotonicMilliseconds()
        return state.orphans.values.reduce(0) { total, orphan in
            guard let since = orphan.since, now - since < recentOrphan else { return total }
            return total + orphan.bytes
        }
    }

    /// `attempt(mayWait)` until it answers, every 2 ms; `mayWait`
    /// is false once `releaseWait` ms have passed since the first retry,
    /// and the attempt must answer then.
    private func waitingForReleases<T, E: Error>(_ attempt: (_ mayWait: Bool) throws(E) -> Attempt<T>) throws(E) -> T {
        var deadline: Int?
        while true {
            let mayWait = deadline.map { monotonicMilliseconds() < $0 } ?? true
            if case .answer(let answer) = try attempt(mayWait) { return answer }
            if deadline == nil { deadline = monotonicMilliseconds() + releaseWait }
            usleep(2_000)
        }
    }

    static func stat(_ fd: FileDescriptor) throws(Errno) -> Glibc.stat { try Backing.stat(fd) }

    static func bytes(_ status: Glibc.stat) -> Int64 { Int64(status.st_blocks) * 512 }

    /// The allocated bytes of a tree, each inode once.
    static func occupied(by folder: Int32, seen: inout Set<InodeKey>, isRoot: Bool = false) -> Int64 {
        var status = Glibc.stat()
        guard fstat(folder, &status) == 0 else { return 0 }
        var total: Int64 = seen.insert(InodeKey(status)).inserted ? bytes(status) : 0
        let fd = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = fdopendir(fd) else {
            if fd >= 0 { close(fd) }
            return total
        }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let skip = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { name in
                    strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || (isRoot && strncmp(name, ".appsandboxfs", 13) == 0)
                }
            }
            if skip { continue }
            var child = Glibc.stat()
            let found = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { fstatat(dirfd(stream), $0, &child, AT_SYMLINK_NOFOLLOW) == 0 }
            }
            guard found else { continue }
            if child.st_mode & S_IFMT == S_IFDIR {
                let sub = withUnsafePointer(to: &entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) {
                        openat(dirfd(stream), $0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    }
                }
                if sub >= 0 {
                    total += occupied(by: sub, seen: &seen)
                    close(sub)
                }
            } else if child.st_nlink <= 1 || seen.insert(InodeKey(child)).inserted {
                total += bytes(child)
            }
        }
        return total
    }
}
