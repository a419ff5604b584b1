import Glibc
import POSIXHelpers

/// Why a mount could not start: each case names the path and the problem.
public enum MountError: Error, CustomStringConvertible {
    case backingMissing(path: String, errno: Int32)
    case denialLog(path: String, errno: Int32)
    case bundleMissing(path: String, errno: Int32)
    /// `-o allow_other` (or allow_root) asked for by a user other than root
    /// where /etc/fuse.conf has no `user_allow_other`: fusermount3 would
    /// refuse it (`MountPrivileges`).
    case otherUsersRefused(option: String, uid: uid_t)

    public var description: String {
        switch self {
        case .backingMissing(let path, let code):
            "cannot open backing directory \(path): \(errorText(code))"
        case .denialLog(let path, let code):
            code == ELOOP ? "cannot open denial log \(path): a symbolic link; refused"
                : "cannot open denial log \(path): \(errorText(code))"
        case .bundleMissing(let path, let code):
            "cannot open bundle \(path): \(errorText(code))"
        case .otherUsersRefused(let option, let uid):
            "-o \(option): fusermount3 lets a user other than root (uid \(uid)) ask for it only where /etc/fuse.conf has a line user_allow_other; to enable it, add that line as root (mount-scripts/setup.sh does with APPSANDBOXFS_USER_ALLOW_OTHER=yes), or mount without \(option) (then only uid \(uid) reaches the container)"
        }
    }
}
