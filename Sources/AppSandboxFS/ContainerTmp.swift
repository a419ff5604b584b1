import BackingStore
import Glibc
import SystemPackage

/// tmp across a driver's life (T2, T3, T4): emptied as the driver mounts (a
/// driver that was killed left it as it was) and again once its session has
/// ended, unless the mount keeps it.
///
/// Everything is relative to the root descriptor the driver opened at mount,
/// never to the backing path: after `mv C C.real; ln -s VICTIM C` in the
/// backing folder's parent, the driver still empties C.real/tmp, and never
/// VICTIM/tmp (docs/security.md).
///
/// Two drivers of the same container (one ending, one starting) never clear
/// at the same time, a new driver mounts only once an ending one has emptied
/// tmp, and a driver never empties tmp under another driver that still
/// serves the container. Both are flock(2) locks on folders of the backing
/// directory, which the kernel drops when the driver exits, even when it is
/// killed:
/// - a driver holds a shared lock on the backing root while it serves, and
///   an exclusive one while it clears;
/// - clearing holds an exclusive lock on tmp, and clears only with the
///   root's lock held exclusively (no other driver serves the container);
/// - a starting driver first waits (a few seconds at most) for the root's
///   exclusive lock, that is for an ending driver to be gone; after that
///   time it takes the other holder for a second mount of the container,
///   which is still serving, and leaves tmp as it is.
///
/// Anyone who may open the backing folder or its tmp could hold such a lock
/// on them and so keep tmp from being emptied (T2). Where the driver has a
/// folder of its own (the status records', writable by its user alone), the
/// two locks are files there instead, named by the backing root's device
/// and inode: "root" and "tmp" below mean those files.
public final class ContainerTmp: Sendable {
    /// The backing root, opened for reading.
    private let folder: Int32
    /// What the "root" lock is taken on: the lock file, or the backing root.
    private let root: Int32
    /// What tmp's lock is taken on: the lock file, or nil for tmp itself.
    private let tmpLock: Int32?
    /// T4: `--keep-tmp`.
    public let keep: Bool

    /// What happened to tmp at one end of the mount.
    public enum Outcome: Sendable, Equatable {
        case cleared
        /// `--keep-tmp`.
        case kept
        /// Another driver serves the same container: its app may be using tmp.
        case inUseByAnotherDriver
    }

    public struct Failure: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// `rootFD`: the driver's descriptor of the backing root (O_PATH is
    /// enough). `lockFolder`: where the lock files go (see the type).
    public init(root rootFD: FileDescriptor, keep: Bool, lockFolder: FileDescriptor? = nil) throws(Errno) {
        folder = try check { openat(rootFD.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        self.keep = keep
        var locks: (root: Int32, tmp: Int32)?
        var identity = stat()
        if let lockFolder, fstat(folder, &identity) == 0 {
            let name = "tmp-lock-\(identity.st_dev)-\(identity.st_ino)"
            let rootLock = openat(lockFolder.rawValue, name + ".root", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            let tmpLock = openat(lockFolder.rawValue, name + ".tmp", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if rootLock >= 0 && tmpLock >= 0 {
                locks = (rootLock, tmpLock)
            } else {
                if rootLock >= 0 { close(rootLock) }
                if tmpLock >= 0 { close(tmpLock) }
            }
        }
        root = locks?.root ?? folder
        tmpLock = locks?.tmp
    }

    /// Whether the locks are files in the driver's own folder.
    public var locksArePrivate: Bool { tmpLock != nil }

    deinit {
        if root != folder { close(root) }
        if let tmpLock { close(tmpLock) }
        close(folder)
    }

    /// Before mounting: waits for a previous driver of this container to
    /// finish clearing and exit, empties tmp (unless kept), then holds the
    /// root's shared lock for as long as this driver lives.
    public func prepareForMount() throws(Failure) -> (Outcome, [TreeRemover.Failure]) {
        // Not holding tmp's lock: the ending driver needs it to clear.
        var alone = false
        for _ in 0..<Self.startWaitMilliseconds {
            if flock(root, LOCK_EX | LOCK_NB) == 0 { alone = true; break }
            usleep(1_000)
        }
        return try clear(thenRoot: LOCK_SH, alone: alone)
    }

    /// How long a starting driver waits for an ending one.
    static let startWaitMilliseconds = 5_000

    /// How long a driver waits for tmp's lock: far longer than another
    /// driver takes to empty any usual tmp.
    static let tmpWaitMilliseconds = 10_000

    /// flock(`kind`, LOCK_EX unless said) on `fd`, for at most `limit` milliseconds.
    private static func lock(_ fd: Int32, _ kind: Int32 = LOCK_EX, waitingAtMost limit: Int) -> Bool {
        var waited = 0, pause = 1
        while flock(fd, kind | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, waited < limit else { return false }
            usleep(UInt32(pause * 1_000))
            waited += pause
            pause = min(pause * 2, 50)
        }
        return true
    }

    /// After the session has ended (the mount is gone): empties tmp, unless
    /// kept or another driver serves the container. When this returns, tmp
    /// is empty and the next driver of the container may start.
    public func finishAfterUnmount() throws(Failure) -> (Outcome, [TreeRemover.Failure]) {
        try clear(thenRoot: LOCK_UN, alone: nil)
    }

    /// With the locks in the driver's folder, a serving driver still holds a
    /// shared lock on the backing folder itself: `update` takes it
    /// exclusively to refuse a container a driver serves in any mount
    /// namespace (AppUpdate). Waited for a few seconds at most (an update
    /// holds it for its run; anyone else who holds it exclusively must not
    /// keep the driver from starting).
    private func markServing(_ serving: Bool) {
        guard serving else { _ = flock(folder, LOCK_UN); return }
        _ = Self.lock(folder, LOCK_SH, waitingAtMost: Self.startWaitMilliseconds)
    }

    /// `alone`: whether the root's exclusive lock is held already (nil: try
    /// to take it, without waiting).
    private func clear(thenRoot rootLock: Int32, alone: Bool?) throws(Failure) -> (Outcome, [TreeRemover.Failure]) {
        let tmp = openat(folder, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard tmp >= 0 else {
            let code = Errno(rawValue: errno)
            _ = flock(root, rootLock)
            if root != folder { markServing(rootLock == LOCK_SH) }
            throw Failure(description: "tmp: \(code == .tooManySymbolicLinkLevels ? "a link, not a folder: left alone (T3)" : "\(code)")")
        }
        // The root's lock changes while tmp's is held, so that no other
        // driver sees it half-way.
        defer {
            _ = flock(root, rootLock)
            // tmp's own lock went with its descriptor; the lock file stays open.
            if let tmpLock { _ = flock(tmpLock, LOCK_UN) }
            close(tmp)
            if root != folder { markServing(rootLock == LOCK_SH) }
        }
        // Waits while another driver of this container clears it, but not
        // for ever: anyone who may open tmp can hold its lock (a local user
        // running `flock BACKING/tmp sleep 1d` kept `unmount` waiting, and
        // the next mount, for as long as they liked).
        guard Self.lock(tmpLock ?? tmp, waitingAtMost: Self.tmpWaitMilliseconds) else {
            throw Failure(description: "tmp: locked by another process for \(Self.tmpWaitMilliseconds / 1_000) s: left as it is (T2)")
        }
        guard !keep else { return (.kept, []) }
        guard alone ?? (flock(root, LOCK_EX | LOCK_NB) == 0) else { return (.inUseByAnotherDriver, []) }
        return (.cleared, TreeRemover.removeContents(ofFolder: FileDescriptor(rawValue: tmp)))
    }
}
