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
        let verdict = flags.writes || flags.truncates
            ? SandboxPolicy.decide(.open(zone(of: node), write: flags.writes, truncate: flags.truncates)) : .allow
        var openFlags = flags.rawValue
        // With the writeback cache the kernel may read to fill pages of a
        // file opened write-only, and it handles O_APPEND itself.
        if configuration.writebackCache {
            if flags.accessMode == O_WRONLY { openFlags = (openFlags & ~O_ACCMODE) | O_RDWR }
            openFlags &= ~O_APPEND
        }
        var protection = ProtectionClass.none
        let opened = guarded(verdict, request, at: .node(node)) { () throws(Errno) in
            protection = try openProtection(request, node: node, writing: flags.writes || flags.truncates)
            let fd = try node.withFD { (fd) throws(Errno) in
                try charged(flags.truncates ? [fd] : []) { () throws(Errno) in try Backing.reopen(fd, flags: openFlags) }
            }
            // The kernel leaves an O_TRUNC open's clearing of set-ID bits to
            // the driver (atomic O_TRUNC), and the driver's own open, as
            // root, clears nothing.
            if flags.truncates && request.caller.uid != 0 {
                do throws(Errno) { try Self.dropSetIDBits(fd) } catch {
                    Backing.close(fd)
                    throw error
                }
            }
            return fd
        }
        switch opened {
        case .success(let fd):
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
        if let locked = handleDenial(request, handle: descriptor(handle), node: node, writing: false, path: path) {
            reply.error(locked)
            return
        }
        reply.fromDescriptor(descriptor(handle), offset: offset, size: size)
    }

    public func write(_ request: Request, node id: NodeID, handle: FileHandle, offset: off_t, data: UnsafeRawBufferPointer,
                      path: DataPath, reply: consuming ReplyWrite) {
        let node = nodes.node(id)
        send(guarded(.write(zone(of: node)), request, at: .node(node)) { () throws(Errno) in
            if let locked = handleDenial(request, handle: descriptor(handle), node: id, writing: true, path: path) { throw locked }
            // The bits go before the data, as the kernel removes them
            // (file_remove_privs) before it writes.
            if mustClearSetIDBits(request) { try Self.dropSetIDBits(descriptor(handle)) }
            return try chargedWrite(descriptor(handle), at: offset, length: data.count, path: path) { (allowed) throws(Errno) in
                try Backing.pwrite(descriptor(handle), UnsafeRawBufferPointer(rebasing: data[..<allowed]), at: offset)
            }
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
        if let locked = handleDenial(request, handle: descriptor(handle), node: node, writing: true) { reply.error(locked); return }
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
        send(guarded(.allocate(zone(of: node)), request, at: .node(node)) { () throws(Errno) in
            if let locked = handleDenial(request, handle: descriptor(handle), node: id, writing: true) { throw locked }
            if mustClearSetIDBits(request) { try Self.dropSetIDBits(descriptor(handle)) }
            try chargedAllocate(descriptor(handle), mode: mode, offset: offset, length: length) { () throws(Errno) in
                try Backing.fallocate(descriptor(handle), mode: mode, offset: offset, length: length)
            }
        }, reply)
    }

    public func copyFileRange(_ request: Request, from source: NodeID, handle sourceHandle: FileHandle, offset sourceOffset: off_t,
                              to destination: NodeID, handle destinationHandle: FileHandle, offset destinationOffset: off_t,
                              length: Int, flags: UInt32, reply: consuming ReplyWrite) {
        let target = nodes.node(destination)
        send(guarded(.write(zone(of: target)), request, at: .node(target)) { () throws(Errno) in
            if let locked = handleDenial(request, handle: descriptor(sourceHandle), node: source, writing: false)
                ?? handleDenial(request, handle: descriptor(destinationHandle), node: destination, writing: true) { throw locked }
            if mustClearSetIDBits(request) { try Self.dropSetIDBits(descriptor(destinationHandle)) }
            return try chargedWrite(descriptor(destinationHandle), at: destinationOffset, length: length) { (allowed) throws(Errno) in
                try Backing.copyFileRange(from: descriptor(sourceHandle), at: sourceOffset,
                                          to: descriptor(destinationHandle), at: destinationOffset,
                                          length: allowed, flags: flags)
            }
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
