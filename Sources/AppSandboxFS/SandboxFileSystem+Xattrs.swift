import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// Extended attributes. Names are translated by `XattrNames` (X4), so that
// `com.apple.MobileBackup` and friends can live on ext4 as `user.` names.
// No answer here is ever ENOSYS: that would turn xattrs off for the mount.
extension SandboxFileSystem {
    /// Namespaces only root may touch; the driver runs as root, so it must
    /// check for the caller.
    private func privilegedNamespace(_ name: [UInt8]) -> Bool {
        name.starts(with: "trusted.".utf8) || name.starts(with: "security.".utf8)
    }

    private func isSystemNamespace(_ name: [UInt8]) -> Bool { name.starts(with: "system.".utf8) }

    /// X6 and Linux's own rules for an attribute's name (`Check.attributeName`):
    /// `system.` names (and SELinux's, for a setxattr) are ENOTSUP, never
    /// ENOSYS; `trusted.` and `security.` names are root's (EPERM); a
    /// symbolic link holds none, as on ext4 (EPERM to set, ENODATA to remove).
    func attributeNameRefusal(_ name: UnsafePointer<CChar>, onSymlink: Bool, _ request: Request, removing: Bool) -> Errno? {
        let visible = nameBytes(name)
        if isSystemNamespace(visible) || (!removing && strcmp(name, Self.selinuxName) == 0) { return .notSupported }
        if privilegedNamespace(visible) && request.caller.uid != 0 { return .notPermitted }
        if onSymlink { return removing ? .noData : .notPermitted }
        return nil
    }

    public func setxattr(_ request: Request, node id: NodeID, name: FileName, value: UnsafeRawBufferPointer, flags: XattrFlags,
                         reply: consuming ReplyStatus) {
        let node = nodes.node(id)
        let visible = nameBytes(name.cString)
        // The class is no backing attribute: its change holds no descriptor
        // and reserves nothing, and judges itself further (P1, P2, F1).
        let isClass = ProtectionXattrs.isProtectionName(visible)
        let subject = Subject.attribute(name.cString, of: node, .setExtendedAttribute(zone(of: node)), holdingEntry: !isClass)
        if isClass {
            send(checked(.setProtectionClass, request, subject) { (_) throws(Errno) in
                try setProtectionClass(request, node, name: visible, value: value, flags: flags)
            }, reply)
            return
        }
        send(checked(.setxattr, request, subject) { (cleared) throws(Errno) in
            if strcmp(name.cString, Self.capabilityName) == 0 { node.hasNoCapability = false }
            try withCName(XattrNames.backingName(for: visible)) { (backing) throws(Errno) in
                try Backing.setxattr(cleared.file, backing, value, flags: flags.rawValue)
            }
        }, reply)
    }

    public func getxattr(_ request: Request, node id: NodeID, name: FileName, reply: consuming ReplyXattr) {
        let node = nodes.node(id)
        // The kernel asks for security.capability before every write (to
        // know whether the write must drop it): answer from memory once the
        // file is known to have none.
        let asksCapability = strcmp(name.cString, Self.capabilityName) == 0
        if asksCapability && node.hasNoCapability {
            reply.error(.noData)
            return
        }
        let visible = nameBytes(name.cString)
        if isSystemNamespace(visible) || strcmp(name.cString, Self.selinuxName) == 0 { reply.error(.notSupported); return }
        // Every entry has a class (P1), a symbolic link too: the container's
        // default, since no user attribute can be stored on a link.
        if ProtectionXattrs.isProtectionName(visible) { getProtectionAttribute(node, name: visible, reply: reply); return }
        if node.isSymlink { reply.error(.noData); return }
        do {
            let capacity = reply.capacity
            let result: (Int, [UInt8]) = try withCName(XattrNames.backingName(for: visible)) { (backing) throws(Errno) in
                if capacity == 0 {
                    return (try node.withFD { (fd) throws(Errno) in
                        try Backing.getxattr(fd, backing, into: UnsafeMutableRawBufferPointer(start: nil, count: 0))
                    }, [])
                }
                var value = [UInt8](repeating: 0, count: capacity)
                let count = try value.withUnsafeMutableBytes { buffer in
                    Result { () throws(Errno) in try node.withFD { (fd) throws(Errno) in try Backing.getxattr(fd, backing, into: buffer) } }
                }.get()
                return (count, value)
            }
            if capacity == 0 {
                reply.size(result.0)
            } else {
                reply.value(result.1[0..<result.0])
            }
        } catch {
            if asksCapability && error == .noData { node.hasNoCapability = true }
            reply.error(error)
        }
    }

    static let capabilityName = "security.capability"
    /// The mount carries no SELinux labels (where SELinux runs, the kernel
    /// answers this name itself and never asks): ENOTSUP, not ENODATA, so
    /// that `ls -l` remembers it per device instead of asking per entry.
    static let selinuxName = "security.selinux"

    public func listxattr(_ request: Request, node id: NodeID, reply: consuming ReplyXattr) {
        let node = nodes.node(id)
        if node.isSymlink {
            if reply.capacity == 0 { reply.size(0) } else { reply.value(UnsafeRawBufferPointer(start: nil, count: 0)) }
            return
        }
        do {
            // Read the backing list (it may grow between the two calls).
            var raw: [CChar] = []
            while true {
                let size = try node.withFD { (fd) throws(Errno) in try Backing.listxattr(fd, into: UnsafeMutableBufferPointer(start: nil, count: 0)) }
                raw = [CChar](repeating: 0, count: max(size, 1))
                do {
                    let count = try raw.withUnsafeMutableBufferPointer { b in
                        Result { () throws(Errno) in try node.withFD { (fd) throws(Errno) in try Backing.listxattr(fd, into: b) } }
                    }.get()
                    raw.removeLast(raw.count - count)
                    break
                } catch where error == .outOfRange {
                    continue
                }
            }
            var list: [UInt8] = []
            for backing in raw.split(separator: 0, omittingEmptySubsequences: true) {
                let name = XattrNames.mountName(for: backing.map { UInt8(bitPattern: $0) })
                if ProtectionXattrs.isHidden(mountName: name) { continue }
                list += name
                list.append(0)
            }
            if reply.capacity == 0 {
                reply.size(list.count)
            } else if list.count > reply.capacity {
                reply.error(.outOfRange)
            } else {
                reply.value(list[...])
            }
        } catch {
            reply.error(error)
        }
    }

    public func removexattr(_ request: Request, node id: NodeID, name: FileName, reply: consuming ReplyStatus) {
        let node = nodes.node(id)
        let visible = nameBytes(name.cString)
        let isClass = ProtectionXattrs.isProtectionName(visible)
        let subject = Subject.attribute(name.cString, of: node, .removeExtendedAttribute(zone(of: node)), holdingEntry: !isClass)
        if isClass {
            send(checked(.removeProtectionClass, request, subject) { (_) throws(Errno) in
                try removeProtectionClass(request, node, name: visible)
            }, reply)
            return
        }
        send(checked(.removexattr, request, subject) { (cleared) throws(Errno) in
            try withCName(XattrNames.backingName(for: visible)) { (backing) throws(Errno) in
                try Backing.removexattr(cleared.file, backing)
            }
        }, reply)
    }
}
