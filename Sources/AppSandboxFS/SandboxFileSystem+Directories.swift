import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// Listing folders. The handle is a retained `DirectoryStream`.
extension SandboxFileSystem {
    public func opendir(_ request: Request, node id: NodeID, flags: OpenFlags, reply: consuming ReplyOpen) {
        do {
            let fd = try nodes.node(id).withFD { (fd) throws(Errno) in try Backing.openDirectory(fd) }
            guard let stream = DirectoryStream(fd: fd) else {
                let code = errno
                Backing.close(fd)
                reply.error(Errno(rawValue: code))
                return
            }
            let retained = Unmanaged.passRetained(stream)
            let handle = UInt64(UInt(bitPattern: retained.toOpaque()))
            // No releasedir comes for a handle the kernel did not take (the
            // caller was interrupted): the stream and its descriptor go now.
            if !reply.opened(FileHandle(rawValue: handle)) { retained.release() }
        } catch {
            reply.error(error)
        }
    }

    private func stream(_ handle: FileHandle) -> Unmanaged<DirectoryStream> {
        Unmanaged<DirectoryStream>.fromOpaque(UnsafeRawPointer(bitPattern: UInt(handle.rawValue))!)
    }

    public func readdir(_ request: Request, node id: NodeID, handle: FileHandle, offset: off_t, reply: consuming ReplyDirectory) {
        let folder = nodes.node(id)
        let directory = stream(handle).takeUnretainedValue()
        var reply = reply
        let failure = directory.forEach(from: offset) { name, inode, type, next in
            var attributes = stat()
            attributes.st_ino = ino_t(inode)
            attributes.st_mode = mode_t(type) << 12
            guard reply.plus, !Self.isDotOrDotDot(name) else {
                if reply.plus {
                    return reply.addPlus(name: name, entry: Entry(node: NodeID(rawValue: 0), stat: attributes,
                                                                  attributeTimeout: 0, entryTimeout: 0), nextOffset: next)
                }
                return reply.add(name: name, stat: attributes, nextOffset: next)
            }
            guard reply.fitsPlus(name: name) else { return false }
            // readdirplus: each entry is a lookup the kernel will forget later.
            guard let (node, childStat) = try? lookupChild(folder, name) else {
                // Gone since the listing was read: leave it out.
                return true
            }
            return reply.addPlus(name: name, entry: entry(for: node, stat: childStat), nextOffset: next)
        }
        if let failure, reply.isEmpty {
            reply.error(Errno(rawValue: failure))
        } else {
            reply.send()
        }
    }

    static func isDotOrDotDot(_ name: UnsafePointer<CChar>) -> Bool {
        name[0] == 0x2E && (name[1] == 0 || (name[1] == 0x2E && name[2] == 0))
    }

    public func releasedir(_ request: Request, node: NodeID, handle: FileHandle, reply: consuming ReplyStatus) {
        stream(handle).release()
        reply.ok()
    }

    public func fsyncdir(_ request: Request, node id: NodeID, handle: FileHandle, dataOnly: Bool, reply: consuming ReplyStatus) {
        do {
            let fd = try nodes.node(id).withFD { (fd) throws(Errno) in try Backing.openDirectory(fd) }
            defer { Backing.close(fd) }
            try Backing.fsync(fd, dataOnly: dataOnly)
            reply.ok()
        } catch {
            reply.error(error)
        }
    }
}
