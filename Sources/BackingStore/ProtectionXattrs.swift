import CLinux
import Glibc
import SystemPackage

/// Where data protection classes (P2, P3, P4, P9) live in the backing
/// store: as `user.` attributes, so that they survive unmount, move with
/// rename, and `backup`/`restore` (tar --xattrs) carry them.
///
/// | what                                   | backing name                                            | through the mount          |
/// |----------------------------------------|---------------------------------------------------------|----------------------------|
/// | the class set explicitly (P2)          | `user.appsandboxfs.NSFileProtectionKey`                 | listed, `NSFileProtectionKey` |
/// | the class an entry got at creation (P3)| `user.appsandboxfs.NSFileProtectionKey.atCreation`      | hidden                     |
/// | the container's default class (P4)     | `user.appsandboxfs.NSFileProtectionKey.containerDefault` on the root | hidden        |
///
/// The explicit class is the attribute's ordinary mapping (XattrNames), so
/// `cp -a` and `rsync -X` through the mount carry it and nothing else.
public enum ProtectionXattrs {
    /// The attribute name seen through the mount.
    public static let mountName = "NSFileProtectionKey"
    public static let explicitName = XattrNames.backingName(for: mountName)
    public static let atCreationName = explicitName + ".atCreation"
    public static let containerDefaultName = explicitName + ".containerDefault"

    /// Mount-side names the driver keeps for itself: never listed, never
    /// read, set or removed through the mount.
    public static func isHidden(mountName name: String) -> Bool {
        name.hasPrefix(mountName + ".")
    }

    public static func isHidden(mountName name: [UInt8]) -> Bool {
        name.count > mountName.utf8.count && name.starts(with: (mountName + ".").utf8)
    }

    /// The names the protection code answers for: `NSFileProtectionKey` and
    /// the hidden ones.
    public static func isProtectionName(_ name: [UInt8]) -> Bool {
        name.elementsEqual(mountName.utf8) || isHidden(mountName: name)
    }

    /// The stored value of `name` on the file `fd` holds, nil when absent
    /// or unreadable (a class name is short).
    public static func stored(_ fd: FileDescriptor, _ name: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { bytes in
            (try? Backing.getxattr(fd, name, into: bytes)) ?? -1
        }
        return count >= 0 ? Array(buffer[0..<count]) : nil
    }

    /// Which of the two class attributes (explicit, at creation) the file
    /// `fd` holds has. One listxattr answers for both, and most files have
    /// neither: each attribute call on an O_PATH descriptor goes through
    /// /proc/self/fd (about 1.4 µs here), so a class read of such a file
    /// costs one call instead of two. nil: the list could not be read
    /// (more names than the buffer holds): ask for each.
    public static func classNamesPresent(_ fd: FileDescriptor) -> (explicit: Bool, atCreation: Bool)? {
        var list = [CChar](repeating: 0, count: 2048)
        let count = list.withUnsafeMutableBufferPointer { (try? Backing.listxattr(fd, into: $0)) ?? -1 }
        guard count >= 0 else { return nil }
        var present = (explicit: false, atCreation: false)
        let explicit = Array(explicitName.utf8), atCreation = Array(atCreationName.utf8)
        var start = 0
        while start < count {
            var end = start
            while end < count && list[end] != 0 { end += 1 }
            let name = list[start..<end].lazy.map { UInt8(bitPattern: $0) }
            if name.elementsEqual(explicit) { present.explicit = true }
            if name.elementsEqual(atCreation) { present.atCreation = true }
            start = end + 1
        }
        return present
    }

    /// The same by path, without following a last symbolic link (tools
    /// outside the driver: init, backup-report).
    public static func stored(path: String, _ name: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = asfs_lgetxattr(path, name, &buffer, buffer.count)
        return count >= 0 ? Array(buffer[0..<count]) : nil
    }

    /// Stores `value` under `name` on the file `fd` holds.
    public static func store(_ fd: FileDescriptor, _ name: String, _ value: String) throws(Errno) {
        let bytes = Array(value.utf8)
        try bytes.withUnsafeBytes { raw in
            Result { () throws(Errno) in try Backing.setxattr(fd, name, raw, flags: 0) }
        }.get()
    }
}
