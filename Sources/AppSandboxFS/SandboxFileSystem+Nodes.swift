import BackingStore
import CLinux
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// Looking files up and reading or changing their attributes.
extension SandboxFileSystem {
    public func lookup(_ request: Request, parent: NodeID, name: FileName, reply: consuming ReplyEntry) {
        send(Result { () throws(Errno) in
            let (node, attributes) = try lookupChild(nodes.node(parent), name.cString)
            return entry(for: node, stat: attributes)
        }, reply)
    }

    public func forget(_ node: NodeID, lookups: UInt64) {
        nodes.forget(node, count: lookups)
    }

    public func getattr(_ request: Request, node: NodeID, handle: FileHandle?, reply: consuming ReplyAttributes) {
        do {
            reply.attributes(try nodes.node(node).withFD { (fd) throws(Errno) in try Backing.stat(fd) },
                             timeout: configuration.attributeTimeout)
        } catch {
            reply.error(error)
        }
    }

    public func setattr(_ request: Request, node id: NodeID, changes: AttributeChanges, handle: FileHandle?,
                        reply: consuming ReplyAttributes) {
        let node = nodes.node(id)
        var change = AttributeChange()
        if changes.mode != nil { change.insert(.mode) }
        if changes.uid != nil || changes.gid != nil { change.insert(.owner) }
        if changes.size != nil { change.insert(.size) }
        if changes.accessTime != nil || changes.modificationTime != nil { change.insert(.times) }
        // chown(f, -1, -1) reaches us as a setattr that changes nothing (the
        // kernel sends no ctime without the writeback cache). It is judged
        // as the chown it is: a read-only file system refuses it (EROFS, as
        // the bundle must: B2), and so do the Inbox (I4) and the system
        // folders (S3). Where an owner change is allowed, ext4 and the VFS
        // update the ctime for it (W1, pjdfstest chown/00.t): so do we.
        let judged = change.isEmpty ? AttributeChange.owner : change
        let kind: CheckedRequest = Self.isKernelTimeFlush(change, node: node) ? .flushTimes
            : changes.size == nil ? .setAttributes : handle == nil ? .truncate : .ftruncate
        let touchesCtime = change.isEmpty
        // An open handle is the better target: it works after chmod 0
        // and for files that were unlinked while open.
        let openFD = handle.map { descriptor($0) }
        var subject = Subject.entry(node, kind == .flushTimes ? nil : .setAttributes(zone(of: node), judged), writing: true)
        if let openFD { subject.handle = (openFD, id) }
        send(checked(kind, request, subject) { (cleared) throws(Errno) in
            let nodeFD = cleared.file
            if touchesCtime { try Backing.chown(nodeFD, uid: uid_t.max, gid: gid_t.max) }
            if let mode = changes.mode {
                if let openFD { _ = try check { fchmod(openFD.rawValue, mode) } } else { try Backing.chmod(nodeFD, mode: mode) }
            }
            if changes.uid != nil || changes.gid != nil {
                try Backing.chown(nodeFD, uid: changes.uid ?? uid_t.max, gid: changes.gid ?? gid_t.max)
            }
            if let size = changes.size {
                if let openFD { _ = try check { ftruncate(openFD.rawValue, size) } } else { try Backing.truncate(nodeFD, size: size) }
                // The truncation's own effect, after it as on ext4 (W1).
                if changes.mode == nil && mustClearSetIDBits(request) {
                    if let openFD { try Self.dropSetIDBits(openFD) } else { try Self.dropSetIDBits(node: nodeFD) }
                }
            }
            if changes.accessTime != nil || changes.modificationTime != nil {
                let times = (Self.timespec(changes.accessTime), Self.timespec(changes.modificationTime))
                if let openFD {
                    var pair = [times.0, times.1]
                    _ = try check { futimens(openFD.rawValue, &pair) }
                } else {
                    try Backing.setTimes(nodeFD, times, isSymlink: node.isSymlink)
                }
            }
            return try Backing.stat(nodeFD)
        }, reply)
    }

    /// With the writeback cache the kernel keeps a file's times itself and
    /// writes them back later, also after the file was unlinked (its ctime
    /// changed). Such a write of times to a file that no longer has a name
    /// is no change to the container, and no process asked for it.
    static func isKernelTimeFlush(_ change: AttributeChange, node: Node) -> Bool {
        guard change == .times, let current = try? node.withFD({ (fd) throws(Errno) in try Backing.stat(fd) }) else { return false }
        return current.st_nlink == 0
    }

    static func timespec(_ change: TimeChange?) -> Glibc.timespec {
        switch change {
        case nil: Glibc.timespec(tv_sec: 0, tv_nsec: asfs_UTIME_OMIT)
        case .now: Glibc.timespec(tv_sec: 0, tv_nsec: asfs_UTIME_NOW)
        case .to(let seconds, let nanoseconds): Glibc.timespec(tv_sec: seconds, tv_nsec: nanoseconds)
        }
    }

    public func readlink(_ request: Request, node id: NodeID, reply: consuming ReplyReadlink) {
        let node = nodes.node(id)
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        do {
            let count = try buffer.withUnsafeMutableBufferPointer { b in
                Result { () throws(Errno) in
                    try node.withFD { (fd) throws(Errno) in
                        try Backing.readlink(fd, into: UnsafeMutableBufferPointer(rebasing: b[0..<(b.count - 1)]))
                    }
                }
            }.get()
            buffer[count] = 0
            // E2: a link that points out of the container (made in the
            // backing directory directly, or led out by other links) is
            // listed but never followed.
            let target = buffer[0..<count].map { UInt8(bitPattern: $0) }
            let folder = nodes.parent(of: node) ?? nodes.root
            let verdict = escapeVerdict(target: target, inFolder: folder, denial: EscapeCheck.escapingReadlinkDenial)
            if let refused = refusal(verdict, request, at: .node(node)) {
                reply.error(refused)
                return
            }
            reply.target(buffer)
        } catch {
            reply.error(error)
        }
    }

    public func statfs(_ request: Request, node: NodeID, reply: consuming ReplyStatfs) {
        do {
            let backing = try nodes.node(node).withFD { (fd) throws(Errno) in try Backing.statfs(fd) }
            reply.statfs(capacity?.statfs(backing) ?? backing)
        } catch {
            reply.error(error)
        }
    }

    public func access(_ request: Request, node: NodeID, mask: Int32, reply: consuming ReplyStatus) {
        // With default_permissions the kernel checks modes itself; only an
        // existence check reaches here.
        reply.ok()
    }
}
