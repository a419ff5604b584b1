/// R1 and R2: what the confined world of `run --confine` is made of, decided
/// from the mount table without looking at the file system. The command line
/// gathers the facts (the container mounts the kernel lists, the bundle
/// source from the driver's status record); CLinux's confine.c carries the
/// plan out in a new mount namespace.
///
/// - The container stays mounted read-write at its own path, and its tmp is
///   mounted again on /tmp and /var/tmp. So the mountpoint cannot lie under
///   either: it would vanish under its own tmp.
/// - Every other container mount is unmounted inside (not just covered: a
///   copy of it would keep its driver running after it is unmounted outside).
/// - Every container's backing directory, and this container's bundle
///   source, gets an empty read-only folder mounted on it, where the mount
///   table's line can be believed: a line's source is whatever its mounter
///   chose, and any user may mount a FUSE file system of their own as
///   `fuse.appsandboxfs` naming "/" (every confined run would refuse) or
///   the container's own Documents (hidden from the app). Such a mount is
///   unmounted inside, and nothing it names is hidden. A path under /tmp
///   or /var/tmp needs none (the container's tmp covers it), nor does a path
///   under another hidden or unmounted one.
/// - The drivers' state folders (their status records and control sockets)
///   get one too: a command running as root could otherwise lock, unlock
///   or reboot its own device, or another container's (R2, R3).
/// - A hidden or unmounted path that holds the mountpoint would take the
///   container with it: refused.
public struct ConfinementPlan: Equatable, Sendable {
    public var mountpoint: String
    /// The container's tmp folder through the mount.
    public var containerTmp: String
    /// Other containers' mountpoints, to unmount inside.
    public var detach: [String]
    /// Folders to show as empty and read-only.
    public var hide: [String]

    /// A container mount as the mount table lists it.
    public struct ContainerMount: Equatable, Sendable {
        public var mountpoint: String
        /// Its backing directory, nil when the line cannot be believed (a
        /// mount of another user's, or one its driver's record contradicts).
        public var backing: String?
        public init(mountpoint: String, backing: String?) {
            self.mountpoint = mountpoint
            self.backing = backing
        }
    }

    /// Why no confined world can be made for this container.
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        /// The mountpoint lies in /tmp or /var/tmp (named).
        case mountpointInTemporaryFolder(String)
        /// A folder that must be hidden or unmounted holds the mountpoint.
        case mountpointInside(String, role: String)

        public var description: String {
            switch self {
            case .mountpointInTemporaryFolder(let folder):
                "--confine needs a mountpoint outside /tmp and /var/tmp (inside the confined world, \(folder) is the container's tmp): mount the container elsewhere"
            case .mountpointInside(let folder, let role):
                "the mountpoint lies inside \(role) \(folder), which the confined world must hide"
            }
        }
    }

    /// - Parameters:
    ///   - container: this container's mount (the one at its mountpoint).
    ///   - bundleSource: its `--bundle` folder, if any.
    ///   - mounts: every container mount the kernel lists, this one included.
    ///   - temporaryFolders: /tmp and /var/tmp, and their real paths when
    ///     they differ (the container's tmp is mounted on them).
    ///   - stateFolders: the folders of the drivers' status records and
    ///     control sockets.
    public static func make(container: ContainerMount, bundleSource: String?, mounts: [ContainerMount],
                            temporaryFolders: [String] = ["/tmp", "/var/tmp"],
                            stateFolders: [String] = []) -> Result<ConfinementPlan, Refusal> {
        let mountpoint = container.mountpoint
        if let folder = temporaryFolders.first(where: { isInside(mountpoint, $0) }) {
            return .failure(.mountpointInTemporaryFolder(folder))
        }
        let others = mounts.filter { $0.mountpoint != mountpoint }
        var detach: [String] = []
        for other in others.map(\.mountpoint).sorted() {
            if isInside(mountpoint, other) { return .failure(.mountpointInside(other, role: "another container's mountpoint")) }
            if detach.contains(where: { isInside(other, $0) }) { continue }
            detach.append(other)
        }
        var candidates: [(path: String, role: String)] = []
        if let backing = container.backing { candidates.append((backing, "its backing directory")) }
        if let bundleSource { candidates.append((bundleSource, "its bundle source")) }
        candidates += others.compactMap { other in other.backing.map { ($0, "another container's backing directory") } }
        candidates += stateFolders.map { ($0, "the drivers' state folder") }
        var hide: [String] = []
        for (path, role) in candidates.sorted(by: { $0.path < $1.path }) where path.hasPrefix("/") && !hide.contains(path) {
            if isInside(mountpoint, path) { return .failure(.mountpointInside(path, role: role)) }
            if temporaryFolders.contains(where: { isInside(path, $0) }) { continue }
            if (hide + detach).contains(where: { isInside(path, $0) }) { continue }
            hide.append(path)
        }
        return .success(ConfinementPlan(mountpoint: mountpoint, containerTmp: mountpoint + "/tmp",
                                        detach: detach, hide: hide))
    }

    /// Whether `path` is `folder` or lies below it (both absolute; "/" holds
    /// everything).
    static func isInside(_ path: String, _ folder: String) -> Bool {
        let trimmed = folder.count > 1 && folder.hasSuffix("/") ? String(folder.dropLast()) : folder
        return path == trimmed || path.hasPrefix(trimmed == "/" ? "/" : trimmed + "/")
    }
}
