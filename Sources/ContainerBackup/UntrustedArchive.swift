import BackingStore
import CLinux
import Glibc
import SystemPackage

/// What a restore keeps of an archive's privileges. An archive is untrusted
/// input: it may come from another machine or another user, and it is
/// restored by root, so by default nothing in it may grant more than the
/// container's owner already has (docs/security.md, "Archives").
public enum ArchivePrivileges: Sendable {
    /// Set-ID bits, file capabilities and `security.*`, `trusted.*` and
    /// `system.*` attributes are removed, device nodes, FIFOs and sockets
    /// are not kept, and everything belongs to the container's owner.
    case drop(owner: uid_t, group: gid_t)
    /// Everything as the archive says (`restore --preserve-privileges`).
    case preserve
}

/// Takes out of a restored tree what `ArchivePrivileges.drop` leaves out.
///
/// The walk goes through descriptors from the staging folder down, one name
/// at a time and never following a link, in a folder only root can enter
/// (`ContainerRestore`), so nothing it changes can be outside the tree.
enum UntrustedArchive {
    /// Cleans the folder `root` (the staging container) and everything in it.
    static func drop(in root: OpenFolder, owner: uid_t, group: gid_t) throws(Errno) -> DroppedPrivileges {
        var dropped = DroppedPrivileges()
        // The root itself: the archive's "." member may have set its mode
        // and attributes; its owner and mode are set when it is put in place.
        try clean(root.fd.rawValue, ".", name: [0x2E], status: root.status, owner: nil, into: &dropped)
        try walk(root, prefix: [], owner: owner, group: group, into: &dropped)
        return dropped
    }

    private static func walk(_ folder: OpenFolder, prefix: [RawName], owner: uid_t, group: gid_t,
                             into dropped: inout DroppedPrivileges) throws(Errno) {
        for name in try folder.names() {
            let path = displayPath(prefix + [name])
            let status = try folder.status(of: name)
            switch status.st_mode & S_IFMT {
            case S_IFCHR, S_IFBLK, S_IFIFO, S_IFSOCK:
                let kind: DroppedPrivileges.Kind = switch status.st_mode & S_IFMT {
                case S_IFIFO: .fifos
                case S_IFSOCK: .sockets
                default: .deviceNodes
                }
                try folder.unlink(name)
                dropped.add(kind, path)
                continue
            default:
                break
            }
            try clean(folder.fd.rawValue, path, name: name, status: status, owner: (owner, group), into: &dropped)
            if status.st_mode & S_IFMT == S_IFDIR {
                try walk(try folder.folder(name), prefix: prefix + [name], owner: owner, group: group, into: &dropped)
            }
        }
    }

    /// Attributes, set-ID bits and owner of `name` in `folder` (a file, a
    /// folder or a symbolic link).
    private static func clean(_ folder: Int32, _ path: String, name: RawName, status: stat,
                              owner: (uid: uid_t, gid: gid_t)?, into dropped: inout DroppedPrivileges) throws(Errno) {
        // The l- calls on "/proc/self/fd/<folder>/<name>": the folder is the
        // one this walk holds, the name is looked up without following.
        let rawTarget = Array("/proc/self/fd/\(folder)/".utf8) + name
        for attribute in try attributes(rawTarget) {
            // Only user.* attributes (the backup flags and the app's own,
            // XattrNames) belong in a container; those of namespaces no
            // privilege comes from are kept as tar wrote them.
            guard let kind = DroppedPrivileges.Kind(attribute: attribute), kind != .otherAttributes else { continue }
            try rawTarget.withCName { (cPath) throws(Errno) in
                try attribute.withCName { (cAttribute) throws(Errno) in
                    if asfs_lremovexattr(cPath, cAttribute) != 0 && errno != ENODATA { throw Errno(rawValue: errno) }
                }
            }
            dropped.add(kind, path)
        }
        let isLink = status.st_mode & S_IFMT == S_IFLNK
        if !isLink && status.st_mode & (S_ISUID | S_ISGID) != 0 {
            try name.withCName { (cName) throws(Errno) in
                _ = try check { fchmodat(folder, cName, status.st_mode & 0o7777 & ~(S_ISUID | S_ISGID), 0) }
            }
            dropped.add(.setID, path)
        }
        if let owner, status.st_uid != owner.uid || status.st_gid != owner.gid {
            try name.withCName { (cName) throws(Errno) in
                _ = try check { fchownat(folder, cName, owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) }
            }
            dropped.add(.foreignOwners, path)
        }
    }

    /// The names of the extended attributes of the entry at `path` (not followed).
    private static func attributes(_ path: [UInt8]) throws(Errno) -> [RawName] {
        try path.withCName { (cPath) throws(Errno) -> [RawName] in
            while true {
                let size = asfs_llistxattr(cPath, nil, 0)
                if size < 0 {
                    if errno == ENOTSUP || errno == EOPNOTSUPP { return [] }
                    throw Errno(rawValue: errno)
                }
                if size == 0 { return [] }
                var buffer = [CChar](repeating: 0, count: size)
                let got = asfs_llistxattr(cPath, &buffer, buffer.count)
                if got < 0 && errno == ERANGE { continue }
                if got < 0 { throw Errno(rawValue: errno) }
                return buffer[0..<got].split(separator: 0).map { $0.map { UInt8(bitPattern: $0) } }
            }
        }
    }
}
