import BackingStore
import Glibc
import SandboxPolicy
import Synchronization
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
///
/// The last driver of a container removes its two lock files after it has
/// emptied tmp, while it holds both exclusively. Another driver may have
/// opened them just before and be waiting for a lock: whoever takes a lock
/// on a lock file checks afterwards that the name still leads to that file,
/// and if not lets go and opens the name again (`LockFile.take`). Without
/// that check the waiter would serve holding a lock on a removed file, and
/// the next driver, on a new file of the same name, would think itself
/// alone and empty tmp under it.
public final class ContainerTmp: Sendable {
    /// The backing root, opened for reading.
    private let folder: Int32
    /// What the "root" lock is taken on: the lock file, or the backing root.
    private let root: LockFile
    /// What tmp's lock is taken on: the lock file, or nil for tmp itself.
    private let tmpLock: LockFile?
    /// T4: `--keep-tmp`.
    public let keep: Bool
    private let startWait: Int
    /// A device (A6): the tmp of every data container, and tmp's lock is
    /// taken on `Containers/Data/Application` (or its lock file).
    private let device: Bool

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
    /// `startWait`: how long a starting driver waits for an ending one, in
    /// milliseconds.
    public init(root rootFD: FileDescriptor, keep: Bool, lockFolder: FileDescriptor? = nil,
                startWait: Int = ContainerTmp.startWaitMilliseconds, device: Bool = false) throws(Errno) {
        folder = try check { openat(rootFD.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        self.keep = keep
        self.device = device
        self.startWait = startWait
        var locks: (root: LockFile, tmp: LockFile)?
        var identity = stat()
        if let lockFolder, fstat(folder, &identity) == 0 {
            if let rootLock = LockFile(in: lockFolder.rawValue, Self.lockFileName(identity, "root")) {
                if let tmpLock = LockFile(in: lockFolder.rawValue, Self.lockFileName(identity, "tmp")) { locks = (rootLock, tmpLock) }
            }
        }
        root = locks?.root ?? LockFile(folder)
        tmpLock = locks?.tmp
    }

    /// The name of a lock file in the driver's folder: `kind` ("root" or
    /// "tmp") of the container whose backing root is `identity`.
    static func lockFileName(_ identity: stat, _ kind: String) -> String {
        "tmp-lock-\(identity.st_dev)-\(identity.st_ino).\(kind)"
    }

    /// Whether the locks are files in the driver's own folder.
    public var locksArePrivate: Bool { tmpLock != nil }

    deinit {
        close(folder)
    }

    /// Before mounting: waits for a previous driver of this container to
    /// finish clearing and exit, empties tmp (unless kept), then holds the
    /// root's shared lock for as long as this driver lives.
    public func prepareForMount() throws(Failure) -> (Outcome, [TreeRemover.Failure]) {
        // Not holding tmp's lock: the ending driver needs it to clear.
        var alone = false
        for _ in 0..<startWait {
            if root.take(LOCK_EX | LOCK_NB) { alone = true; break }
            usleep(1_000)
        }
        return try clear(thenRoot: LOCK_SH, alone: alone)
    }

    /// How long a starting driver waits for an ending one.
    public static let startWaitMilliseconds = 5_000

    /// How long a driver waits for tmp's lock: far longer than another
    /// driver takes to empty any usual tmp.
    static let tmpWaitMilliseconds = 10_000

    /// flock(`kind`, LOCK_EX unless said) on `lock`, for at most `limit` milliseconds.
    private static func lock(_ lock: LockFile, _ kind: Int32 = LOCK_EX, waitingAtMost limit: Int) -> Bool {
        var waited = 0, pause = 1
        while !lock.take(kind | LOCK_NB) {
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
        _ = Self.lock(LockFile(folder), LOCK_SH, waitingAtMost: startWait)
    }

    /// `alone`: whether the root's exclusive lock is held already (nil: try
    /// to take it, without waiting).
    private func clear(thenRoot rootLock: Int32, alone: Bool?) throws(Failure) -> (Outcome, [TreeRemover.Failure]) {
        let tmp = device ? Self.openFolder(ContainerLayout.dataContainersPath, in: folder)
            : openat(folder, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard tmp >= 0 else {
            let code = Errno(rawValue: errno)
            _ = root.take(rootLock)
            if locksArePrivate { markServing(rootLock == LOCK_SH) }
            throw Failure(description: "tmp: \(code == .tooManySymbolicLinkLevels ? "a link, not a folder: left alone (T3)" : "\(code)")")
        }
        // The root's lock changes while tmp's is held, so that no other
        // driver sees it half-way.
        var lastDriver = false
        defer {
            // The last driver of the container, tmp emptied and both locks
            // held exclusively: the lock files go (see the type).
            if lastDriver, let tmpLock {
                root.remove()
                tmpLock.remove()
            }
            _ = root.take(rootLock)
            // tmp's own lock went with its descriptor; the lock file stays open.
            if let tmpLock { _ = tmpLock.take(LOCK_UN) }
            close(tmp)
            if locksArePrivate { markServing(rootLock == LOCK_SH) }
        }
        // Waits while another driver of this container clears it, but not
        // for ever: anyone who may open tmp can hold its lock (a local user
        // running `flock BACKING/tmp sleep 1d` kept `unmount` waiting, and
        // the next mount, for as long as they liked).
        guard Self.lock(tmpLock ?? LockFile(tmp), waitingAtMost: Self.tmpWaitMilliseconds) else {
            throw Failure(description: "tmp: locked by another process for \(Self.tmpWaitMilliseconds / 1_000) s: left as it is (T2)")
        }
        guard !keep else {
            // Kept (T4), but the lock files still go with the last driver.
            lastDriver = rootLock == LOCK_UN && (alone ?? root.take(LOCK_EX | LOCK_NB))
            return (.kept, [])
        }
        guard alone ?? root.take(LOCK_EX | LOCK_NB) else { return (.inUseByAnotherDriver, []) }
        let failures = device ? Self.emptyEachTmp(inDataContainers: tmp)
            : TreeRemover.removeContents(ofFolder: FileDescriptor(rawValue: tmp))
        lastDriver = rootLock == LOCK_UN
        return (.cleared, failures)
    }

    /// Opens a relative path one name at a time, following no link (-1 and
    /// errno when it cannot).
    private static func openFolder(_ path: String, in folder: Int32) -> Int32 {
        var current = dup(folder)
        for name in path.split(separator: "/") {
            guard current >= 0 else { return -1 }
            let next = openat(current, String(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let saved = errno
            close(current)
            errno = saved
            current = next
        }
        return current
    }

    /// Empties `<UUID>/tmp` of each data container in the folder
    /// `applications` (T2, T3 in each container, A6); a tmp that is a link
    /// is left alone.
    private static func emptyEachTmp(inDataContainers applications: Int32) -> [TreeRemover.Failure] {
        guard let names = try? BundleCopier.names(in: applications, path: ContainerLayout.dataContainersPath) else { return [] }
        var failures: [TreeRemover.Failure] = []
        for name in names {
            let container = openat(applications, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard container >= 0 else { continue }
            defer { close(container) }
            let tmp = openat(container, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard tmp >= 0 else { continue }
            defer { close(tmp) }
            failures += TreeRemover.removeContents(ofFolder: FileDescriptor(rawValue: tmp))
        }
        return failures
    }
}

/// A descriptor flock(2) locks are taken on: a lock file in the driver's
/// folder, which the last driver of a container removes (see
/// `ContainerTmp`), or a folder of the backing directory, never removed.
final class LockFile: Sendable {
    private let descriptor: Atomic<Int32>
    /// The lock file's folder and name; nil for a folder locked in place.
    private let place: (folder: Int32, name: String)?

    /// Opens (creating it) the lock file `name` in `folder`; nil if it cannot.
    init?(in folder: Int32, _ name: String) {
        let fd = Self.open(in: folder, name)
        guard fd >= 0 else { return nil }
        descriptor = Atomic(fd)
        place = (folder, name)
    }

    /// A descriptor the owner keeps open and closes itself.
    init(_ fd: Int32) {
        descriptor = Atomic(fd)
        place = nil
    }

    deinit {
        if place != nil { close(descriptor.load(ordering: .relaxed)) }
    }

    private static func open(in folder: Int32, _ name: String) -> Int32 {
        openat(folder, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
    }

    /// flock(`operation`). A lock taken on a file that has lost its name
    /// meanwhile (the last driver removed it) is let go, the name opened
    /// again and the lock asked for again: a lock counts only on the file
    /// the name leads to now.
    func take(_ operation: Int32) -> Bool {
        while true {
            let fd = descriptor.load(ordering: .relaxed)
            guard flock(fd, operation) == 0 else { return false }
            guard let place, operation & LOCK_UN == 0, !stillNamed(fd, place) else { return true }
            let fresh = Self.open(in: place.folder, place.name)
            guard fresh >= 0 else { return true }
            descriptor.store(fresh, ordering: .relaxed)
            close(fd)
        }
    }

    private func stillNamed(_ fd: Int32, _ place: (folder: Int32, name: String)) -> Bool {
        var held = stat(), named = stat()
        guard fstat(fd, &held) == 0 else { return true }
        guard fstatat(place.folder, place.name, &named, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        return held.st_nlink > 0 && held.st_dev == named.st_dev && held.st_ino == named.st_ino
    }

    /// Removes the name. Only while holding the lock exclusively.
    func remove() {
        if let place { unlinkat(place.folder, place.name, 0) }
    }
}
