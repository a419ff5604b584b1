import BackingStore
import CLinux
import Glibc
import SandboxPolicy
import SystemPackage

/// An App Store update of a container that is not mounted (rules U1-U3):
/// the bundle becomes an exact copy of a build folder; Documents, Library
/// and tmp are not touched at all.
///
/// Atomic: the new bundle is copied into a staging folder inside the
/// backing directory (same file system), synced, then swapped with the
/// installed one in one renameat2(RENAME_EXCHANGE); the staging folder,
/// which then holds the old bundle, is removed. Killed at any point, the
/// container's `<App>.app` is the old bundle or the new one, whole, and a
/// staging folder may be left behind: it starts with `stagingPrefix`, is
/// never shown as a bundle (its name does not end in `.app`), and the next
/// `update` removes it first, then does the whole job again.
///
/// Everything is reached through descriptors from the container root opened
/// once: each name is opened with O_NOFOLLOW relative to its folder, so a
/// link swapped in by someone else is never followed.
public struct AppUpdate {
    public static let stagingPrefix = ".appsandboxfs-update-"

    public let backing: String
    public let source: String
    /// `--app-name`: the bundle's new name, nil to keep the installed one's.
    public let appName: String?
    /// Called after each step (each entry copied, the swap, the removal):
    /// where the kill test stops the process.
    public var afterStep: () -> Void = {}
    /// The drivers' lock folder (`ContainerTmp`), where a driver of this
    /// user holds its container's root lock while it serves; nil when
    /// there is none.
    public let lockFolder: FileDescriptor?

    public init(backing: String, source: String, appName: String?, lockFolder: FileDescriptor? = nil) {
        self.backing = backing
        self.source = source
        self.appName = appName
        self.lockFolder = lockFolder
    }

    public struct Outcome: Sendable {
        /// The bundle replaced (nil when the container had none).
        public var previousBundle: String?
        public var bundle: String
        /// Entries copied into the bundle.
        public var entries: Int
        /// Leftovers of an update that was killed, removed first.
        public var leftovers: [String]
        /// What the build folder held that a bundle does not (U1).
        public var leftOut: DroppedPrivileges
        /// Locks on the backing folder held by users who cannot serve it,
        /// which were not waited for (one line each).
        public var ignoredLocks: [String]
    }

    public func run() throws(UpdateFailure) -> Outcome {
        let root = try openContainerRoot()
        defer { close(root) }
        var identity = stat()
        guard fstat(root, &identity) == 0 else { throw UpdateFailure(backing, errno: errno) }
        // One update at a time (a second one would take the first one's
        // staging folder for a leftover), and none under a driver (U2).
        let (lock, ignoredLocks) = try takeLocks(root, identity)
        defer { lock?.release() }
        let sourceFD = open(source, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard sourceFD >= 0 else { throw UpdateFailure("bundle \(source)", errno: errno) }
        defer { close(sourceFD) }
        try refuseSourceHoldingContainer(sourceFD, root: root)

        // Checks first (U2): a refusal changes nothing.
        let entries = try BundleCopier.names(in: root, path: backing).map(Self.string)
        let installed = entries.filter { $0.hasSuffix(".app") && $0.count > 4 && Self.isFolder(root, $0) }
        guard installed.count <= 1 else {
            throw UpdateFailure("\(backing): cannot tell which bundle to update (found \(installed.joined(separator: ", ")))")
        }
        let previous = installed.first
        guard let name = appName ?? previous.map({ String($0.dropLast(4)) }) else {
            throw UpdateFailure("\(backing): no bundle is installed; give --app-name")
        }
        if let problem = ContainerLayout.problemWithAppName(name) {
            throw UpdateFailure("app name \"\(name)\": \(problem)")
        }
        let bundle = name + ".app"
        if bundle != previous, entries.contains(bundle) {
            throw UpdateFailure("\(backing)/\(bundle): already exists")
        }
        if let previous {
            let installedFD = try BundleCopier.open(root, Array(previous.utf8CString), O_RDONLY | O_DIRECTORY, path: previous)
            defer { close(installedFD) }
            if let old = BundleIdentifier.read(inBundle: installedFD), let new = BundleIdentifier.read(inBundle: sourceFD),
               old != new {
                throw UpdateFailure("bundle \(source): a bundle of another app (CFBundleIdentifier \(new); the installed \(previous) is \(old))")
            }
        }

        // U3: what a killed update left goes first.
        let leftovers = entries.filter { $0.hasPrefix(Self.stagingPrefix) }
        for leftover in leftovers { try remove(leftover, in: root) }
        if !leftovers.isEmpty { afterStep() }

        let staging = Self.stagingPrefix + String(getpid())
        guard mkdirat(root, staging, 0o700) == 0 else { throw UpdateFailure("\(backing)/\(staging)", errno: errno) }
        let stagingFD = try BundleCopier.open(root, Array(staging.utf8CString), O_RDONLY | O_DIRECTORY, path: staging)
        var entriesCopied = 0
        var leftOut = DroppedPrivileges()
        do {
            defer { close(stagingFD) }
            // U1: everything the container's owner's, as the root is.
            var copier = BundleCopier(owner: identity.st_uid, group: identity.st_gid, afterEntry: {
                entriesCopied += 1
                afterStep()
            })
            try copier.copyContents(of: sourceFD, into: stagingFD, path: source)
            leftOut = copier.leftOut
        }
        // The copy must be on disk before it becomes the bundle: a crash
        // after the swap must not show a bundle of empty files.
        guard asfs_syncfs(root) == 0 else { throw UpdateFailure(backing, errno: errno) }
        afterStep()

        if let previous {
            try rename(staging, previous, in: root, flags: UInt32(asfs_RENAME_EXCHANGE))
            afterStep()
            if bundle != previous {
                try rename(previous, bundle, in: root, flags: UInt32(asfs_RENAME_NOREPLACE))
                afterStep()
            }
            // The staging folder now holds the old bundle.
            try remove(staging, in: root)
        } else {
            try rename(staging, bundle, in: root, flags: UInt32(asfs_RENAME_NOREPLACE))
        }
        _ = fsync(root)
        afterStep()
        return Outcome(previousBundle: previous, bundle: bundle, entries: entriesCopied, leftovers: leftovers,
                       leftOut: leftOut, ignoredLocks: ignoredLocks)
    }

    /// The locks that keep an update from running beside another one or
    /// under a driver (U2), taken without waiting; a refusal names why.
    ///
    /// 1. The container's root lock in the drivers' lock folder, which
    ///    only this user can open (T2's lock files): a driver of this user
    ///    holds it shared while it serves, in any mount namespace. Held
    ///    exclusively for the whole update, it also keeps a driver that
    ///    starts meanwhile from serving before the update is done.
    /// 2. The backing folder itself, which a driver also locks shared
    ///    while it serves (drivers of other users, other state folders).
    ///    Anyone who may open the folder can lock it too (issue 25: uid
    ///    65534's `flock BACKING sleep 1d` kept every update out), so a
    ///    lock there counts only when its holder could be a driver of the
    ///    container: a process of root or of the folder's owner
    ///    (`FlockHolders`); others are not waited for, and are named.
    private func takeLocks(_ root: Int32, _ identity: stat) throws(UpdateFailure) -> (TakenLock?, [String]) {
        let inUse = "\(backing): in use: a driver serves this container (mounted, perhaps in another mount namespace) or another update is running"
        var taken: TakenLock?
        if let lockFolder, let file = LockFile(in: lockFolder.rawValue, ContainerTmp.lockFileName(identity, "root")) {
            guard file.take(LOCK_EX | LOCK_NB) else { throw UpdateFailure(inUse) }
            taken = TakenLock(file: file)
        }
        if flock(root, LOCK_EX | LOCK_NB) == 0 { return (taken, []) }
        let holders = FlockHolders.read(inode: identity.st_ino)
        if let driver = holders.first(where: { $0.uid == 0 || $0.uid == identity.st_uid }) {
            taken?.release()
            throw UpdateFailure(inUse + " (pid \(driver.pid) holds a lock on it)")
        }
        return (taken, holders.map { holder in
            let who = holder.uid.map { "uid \($0)" } ?? "gone, its lock passed on"
            return "\(backing): locked by pid \(holder.pid) (\(who)), which cannot be its driver: not waited for"
        })
    }

    /// The root lock file taken exclusively; `release` removes the file
    /// (while it is held, as the last driver does: `ContainerTmp`) and
    /// lets go.
    final class TakenLock {
        let file: LockFile
        private var held = true
        init(file: LockFile) { self.file = file }
        func release() {
            guard held else { return }
            held = false
            file.remove()
            _ = file.take(LOCK_UN)
        }
    }

    /// The backing directory, checked to be a container.
    private func openContainerRoot() throws(UpdateFailure) -> Int32 {
        let root = open(backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { throw UpdateFailure("container \(backing)", errno: errno) }
        let missing = ContainerLayout.requiredFolders.filter { !Self.isFolder(root, $0) }
        guard missing.isEmpty else {
            close(root)
            throw UpdateFailure("\(backing): not a container: missing \(missing.joined(separator: ", "))")
        }
        return root
    }

    /// A build folder that holds the container would be copied into itself.
    private func refuseSourceHoldingContainer(_ sourceFD: Int32, root: Int32) throws(UpdateFailure) {
        var sourceStat = stat()
        guard fstat(sourceFD, &sourceStat) == 0 else { throw UpdateFailure(source, errno: errno) }
        var folder = dup(root)
        defer { close(folder) }
        for _ in 0..<4096 {
            var status = stat()
            guard fstat(folder, &status) == 0 else { return }
            if status.st_dev == sourceStat.st_dev && status.st_ino == sourceStat.st_ino {
                throw UpdateFailure("bundle \(source): holds the container \(backing)")
            }
            let parent = openat(folder, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard parent >= 0 else { return }
            var parentStat = stat()
            _ = fstat(parent, &parentStat)
            close(folder)
            folder = parent
            if parentStat.st_ino == status.st_ino && parentStat.st_dev == status.st_dev { return }  // "/"
        }
    }

    private func rename(_ from: String, _ to: String, in root: Int32, flags: UInt32) throws(UpdateFailure) {
        guard asfs_renameat2(root, from, root, to, flags) == 0 else {
            throw UpdateFailure("\(backing): renaming \(from) to \(to)", errno: errno)
        }
    }

    /// Removes a staging folder (or whatever took its name) without
    /// following links or leaving it.
    private func remove(_ name: String, in root: Int32) throws(UpdateFailure) {
        let fd = openat(root, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd >= 0 {
            let failures = TreeRemover.removeContents(ofFolder: FileDescriptor(rawValue: fd))
            close(fd)
            if let failure = failures.first { throw UpdateFailure("\(backing)/\(name)/\(failure)") }
            guard unlinkat(root, name, AT_REMOVEDIR) == 0 || errno == ENOENT else {
                throw UpdateFailure("\(backing)/\(name)", errno: errno)
            }
        } else if unlinkat(root, name, 0) != 0 && errno != ENOENT {
            throw UpdateFailure("\(backing)/\(name)", errno: errno)
        }
    }

    static func isFolder(_ folder: Int32, _ name: String) -> Bool {
        var status = stat()
        return fstatat(folder, name, &status, AT_SYMLINK_NOFOLLOW) == 0 && status.st_mode & S_IFMT == S_IFDIR
    }

    static func string(_ raw: [CChar]) -> String { BundleCopier.string(raw) }
}
