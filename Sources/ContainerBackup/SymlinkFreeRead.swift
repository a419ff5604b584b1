import Glibc
import MountInfo
import Spawning

/// GNU tar opens each member by its path below the backing folder, and the
/// kernel follows a symbolic link in the middle of such a path. The scan
/// never lists a path through a link, but whoever can write the backing
/// folder can swap a folder for a link between the scan and tar's read, and
/// a backup run as root would then read a file outside the container (and
/// put it in the archive).
///
/// So, as root, tar runs in a mount namespace of its own in which the
/// backing folder is bind-mounted onto itself with `nosymfollow`: there the
/// kernel refuses to follow any link on the way to a member (ELOOP, and tar
/// fails for it), while tar still archives the links themselves (lstat and
/// readlink work). Where that world cannot be made (no mount namespaces),
/// tar runs as before and the caller is told once why.
///
/// The new namespace starts with a copy of every mount, containers'
/// included, and a copy keeps a container's driver serving after it is
/// unmounted outside, until the namespace ends: an `unmount` of another
/// container during a backup would wait for the tar. So the container
/// mounts of the moment (read here, by MountInfo) are detached there first.
enum SymlinkFreeRead {
    /// `sh -c` script: $0 is the backing folder, $1 the number of mount
    /// points to detach, then those, then the command. `umount -n`: the
    /// host's /run/mount/utab is not this namespace's to change.
    static let script = #"n=$1; shift; while [ "$n" -gt 0 ]; do umount -l -n -- "$1" 2>/dev/null; shift; n=$((n - 1)); done; "#
        + #"mount --bind -- "$0" "$0" && mount -o remount,bind,nosymfollow -- "$0" && exec "$@""#

    /// The container mounts a namespace made now would copy, but not one
    /// that holds `root` (tar reads below it).
    static func containerMounts(besides root: String) -> [String] {
        MountTable.entries().filter { $0.isContainer && $0.mountpoint != root && !root.hasPrefix($0.mountpoint + "/") }
            .map(\.mountpoint)
    }

    /// The command line that runs `arguments` with links below `root` never
    /// followed; or `arguments` unchanged, with the reason, when it cannot be.
    static func command(_ arguments: [String], root: String) -> (arguments: [String], unconfined: String?) {
        guard geteuid() == 0 else {
            // The caller's own permissions bound what tar can read.
            return (arguments, nil)
        }
        func wrapper(detaching mounts: [String]) -> [String] {
            ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, root, String(mounts.count)] + mounts
        }
        // Tried first without tar (and without detaching anything): a
        // wrapper that fails later could not be told from tar's own failures.
        let probe = ChildProcess.run(wrapper(detaching: []) + ["true"], timeout: 30)
        guard probe.status == 0 else {
            let reason = probe.standardError.split(separator: "\n").last.map(String.init) ?? "exit \(probe.status)"
            return (arguments, "cannot keep tar from following links below \(root) (\(reason)): members are read by their paths")
        }
        return (wrapper(detaching: containerMounts(besides: root)) + arguments, nil)
    }
}
