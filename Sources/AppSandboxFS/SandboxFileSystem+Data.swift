import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// Open files: the handle given to the kernel is the backing descriptor.
extension SandboxFileSystem {
    /// `descriptor`: the open file's, offered for passthrough. The sandbox
    /// rules were applied to this open already, and the kernel opens the
    /// backing file with the opener's own flags, so passthrough cannot do
    /// more than this open allows.
    func openOptions(descriptor: FileDescriptor) -> OpenOptions {
        // FLUSH carries nothing this driver needs (the kernel keeps the
        // locks, and without the writeback cache there is no dirty data to
        // push at close): spare the kernel the round trip.
        OpenOptions(keepCache: configuration.keepCache, noFlush: !configuration.writebackCache,
                    backingDescriptor: configuration.usesPassthrough ? descriptor : nil)
    }

    @inline(__always)
    func descriptor(_ handle: FileHandle) -> FileDescriptor { FileDescriptor(rawValue: Int32(truncatingIfNeeded: handle.rawValue)) }

    public func open(_ request: Request, node id: NodeID, flags: OpenFlags, reply: consuming ReplyOpen) {
        let node = nodes.node(id)
        let writing = flags.writes || flags.truncates
        let kind: CheckedRequest = flags.truncates ? .openTruncating : flags.writes ? .openForWriting : .openForReading
        let operation = writing ? FileOperation.open(zone(of: node), write: flags.writes, truncate: flags.truncates) : nil
        var openFlags = flags.rawValue
        // With the writeback cache the kernel may read to fill pages of a
        // file opened write-only, and it handles O_APPEND itself.
        if configuration.writebackCache {
            if flags.accessMode == O_WRONLY { openFlags = (openFlags & ~O_ACCMODE) | O_RDWR }
            openFlags &= ~O_APPEND
        }
        let opened = checked(kind, request, .entry(node, operation, writing: writing)) { (cleared) throws(Errno) in
            let fd = try Backing.reopen(cleared.file, flags: openFlags)
            // The kernel leaves an O_TRUNC open's clearing of set-ID bits to
            // the driver (atomic O_TRUNC), and the driver's own open, as
            // root, clears nothing.
            if flags.truncates && request.caller.uid != 0 {
                do throws(Errno) { try Self.dropSetIDBits(fd) } catch {
                    Backing.close(fd)
                    throw error
                }
            }
            return (fd, cleared.protection)
        }
        switch opened {
        case .success(let (fd, protection)):
            capacity?.opened(fd)
            // No release comes for a handle the kernel did not take.
            var plain = openOptions(request, node: id, flags: flags, descriptor: fd)
            // A bundle given with --bundle is a build folder that changes
            // behind the driver's back (U4): its files keep no page cache
            // from one open to the next, so that one the driver serves
            // itself (passthrough off or refused) is read afresh.
            if bundleRoot != nil, zone(of: node) == .bundle { plain.keepCache = false }
            let options = protectedOpen(fd, node: node, protection: protection, request: request, options: plain)
            if !reply.opened(FileHandle(rawValue: UInt64(fd.rawValue)), options: options) {
                capacity?.releasing(fd)
                dataProtection.closed(fd)
                Backing.close(fd)
            }
        case .failure(let error):
            reply.error(error)
        }
    }

    public func read(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, size: Int, path: DataPath,
                     reply: consuming ReplyData) {
        let subject = Subject.handle(descriptor(handle), of: nodes.node(node), nil, writing: false, path: path)
        if let refused = passChecks(.read, request, subject) {
            reply.error(refused)
            return
        }
        reply.fromDescriptor(descriptor(handle), offset: offset, size: size)
    }

    public func write(_ request: Request, node id: NodeID, handle: FileHandle, offset: off_t, data: UnsafeRawBufferPointer,
                      path: DataPath, reply: consuming ReplyWrite) {
        let node = nodes.node(id)
        var subject = Subject.handle(descriptor(handle), of: node, .write(zone(of: node)), writing: true, path: path)
        (subject.offset, subject.length) = (offset, off_t(data.count))
        send(checked(.write, request, subject) { (cleared) throws(Errno) in
            try Backing.pwrite(descriptor(handle), UnsafeRawBufferPointer(rebasing: data[..<cleared.length]), at: offset)
        }, reply)
    }

    public func flush(_ request: Request, node: NodeID, handle: FileHandle, reply: consuming ReplyStatus) {
        reply.ok()
    }

    public func release(_ request: Request, node: NodeID, handle: FileHandle, flags: OpenFlags, reply: consuming ReplyStatus) {
        capacity?.releasing(descriptor(handle))
        dataProtection.closed(descriptor(handle))
        Backing.close(descriptor(handle))
        reply.ok()
    }

    public func fsync(_ request: Request, node: NodeID, handle: FileHandle, dataOnly: Bool, reply: consuming ReplyStatus) {
        let subject = Subject.handle(descriptor(handle), of: nodes.node(node), nil, writing: true)
        if let refused = passChecks(.fsync, request, subject) {
            reply.error(refused)
            return
        }
        do {
            try Backing.fsync(descriptor(handle), dataOnly: dataOnly)
            reply.ok()
        } catch {
            reply.error(error)
        }
    }

    public func fallocate(_ request: Request, node id: NodeID, handle: FileHandle, mode: Int32, offset: off_t, length: off_t,
                          reply: consuming ReplyStatus) {
        let node = nodes.node(id)
        var subject = Subject.handle(descriptor(handle), of: node, .allocate(zone(of: node)), writing: true)
        (subject.mode, subject.offset, subject.length) = (mode, offset, length)
        send(checked(.fallocate, request, subject) { (_) throws(Errno) in
            try Backing.fallocate(descriptor(handle), mode: mode, offset: offset, length: length)
        }, reply)
    }

    public func copyFileRange(_ request: Request, from source: NodeID, handle sourceHandle: FileHandle, offset sourceOffset: off_t,
                              to destination: NodeID, handle destinationHandle: FileHandle, offset destinationOffset: off_t,
                              length: Int, flags: UInt32, reply: consuming ReplyWrite) {
        let target = nodes.node(destination)
        var subject = Subject.handle(descriptor(destinationHandle), of: target, .write(zone(of: target)), writing: true)
        subject.source = (descriptor(sourceHandle), source)
        (subject.offset, subject.length) = (destinationOffset, off_t(length))
        send(checked(.copyFileRange, request, subject) { (cleared) throws(Errno) in
            try Backing.copyFileRange(from: descriptor(sourceHandle), at: sourceOffset,
                                      to: descriptor(destinationHandle), at: destinationOffset,
                                      length: cleared.length, flags: flags)
        }, reply)
    }

    public func lseek(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, whence: Int32, reply: consuming ReplyOffset) {
        do {
            reply.offset(try Backing.lseek(descriptor(handle), offset: offset, whence: whence))
        } catch {
            reply.error(error)
        }
    }
}
