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

    public func setxattr(_ request: Request, node id: NodeID, name: FileName, value: UnsafeRawBufferPointer, flags: XattrFlags,
                         reply: consuming ReplyStatus) {
        let node = nodes.node(id)
        send(guarded(.setExtendedAttribute(zone(of: node)), request, at: .node(node)) { () throws(Errno) in
            let visible = nameBytes(name.cString)
            if isSystemNamespace(visible) || strcmp(name.cString, Self.selinuxName) == 0 { throw .notSupported }
            if privilegedNamespace(visible) && request.caller.uid != 0 { throw .notPermitted }
            if strcmp(name.cString, Self.capabilityName) == 0 { node.hasNoCapability = false }
            // ext4 refuses user attributes on symbolic links.
            if node.isSymlink { throw .notPermitted }
            if ProtectionXattrs.isProtectionName(visible) { return try setProtectionClass(request, node, name: visible, value: value, flags: flags) }
            try withCName(XattrNames.backingName(for: visible)) { (backing) throws(Errno) in
                try node.withFD { (fd) throws(Errno) in
                    try charged(reserving: newEntrySpace, [fd]) { () throws(Errno) in try Backing.setxattr(fd, backing, value, flags: flags.rawValue) }
                }
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
        send(guarded(.removeExtendedAttribute(zone(of: node)), request, at: .node(node)) { () throws(Errno) in
            let visible = nameBytes(name.cString)
            if isSystemNamespace(visible) { throw .notSupported }
            if privilegedNamespace(visible) && request.caller.uid != 0 { throw .notPermitted }
            if node.isSymlink { throw .noData }
            if ProtectionXattrs.isProtectionName(visible) { return try removeProtectionClass(request, node, name: visible) }
            try withCName(XattrNames.backingName(for: visible)) { (backing) throws(Errno) in
                try node.withFD { (fd) throws(Errno) in
                    try charged([fd]) { () throws(Errno) in try Backing.removexattr(fd, backing) }
                }
            }
        }, reply)
    }
}
