import CFuse
import Glibc
import SystemPackage

/// Holds the file system for the C callbacks, which reach it through
/// `fuse_req_userdata`: the callbacks themselves capture nothing.
final class FileSystemBox: Sendable {
    let fileSystem: any FileSystemOperations
    let passthrough: PassthroughChannel
    /// FUSE over io_uring, when asked for and the system lets a ring be made.
    let ring: UringTransport?
    init(_ fileSystem: any FileSystemOperations, passthrough: Bool, killPrivV2: Bool, ring: UringTransport? = nil,
         log: @escaping @Sendable (String) -> Void = { _ in }, info: @escaping @Sendable (String) -> Void = { _ in }) {
        self.fileSystem = fileSystem
        self.passthrough = PassthroughChannel(wanted: passthrough, killPrivV2: killPrivV2, log: log, info: info)
        self.ring = ring
    }
}

/// Runs `body` with the file system a request is for. The box outlives
/// every request and `fileSystem` is a constant, so the file system is lent
/// to `body` without a reference of its own: a reference taken per request
/// would have every worker thread write to the one object's count.
@inline(__always)
private func withTarget<R>(_ request: fuse_req_t?, _ body: (any FileSystemOperations) -> R) -> R {
    Unmanaged<FileSystemBox>.fromOpaque(fuse_req_userdata(request)!)._withUnsafeGuaranteedRef { body($0.fileSystem) }
}

@inline(__always)
private func handle(_ info: UnsafeMutablePointer<fuse_file_info>?) -> FileHandle {
    FileHandle(rawValue: info?.pointee.fh ?? 0)
}

private func decode(_ attr: UnsafeMutablePointer<stat>, _ toSet: Int32) -> AttributeChanges {
    var changes = AttributeChanges()
    let s = attr.pointee
    if toSet & cfuse_SET_ATTR_MODE != 0 { changes.mode = s.st_mode }
    if toSet & cfuse_SET_ATTR_UID != 0 { changes.uid = s.st_uid }
    if toSet & cfuse_SET_ATTR_GID != 0 { changes.gid = s.st_gid }
    if toSet & cfuse_SET_ATTR_SIZE != 0 { changes.size = s.st_size }
    if toSet & cfuse_SET_ATTR_ATIME_NOW != 0 {
        changes.accessTime = .now
    } else if toSet & cfuse_SET_ATTR_ATIME != 0 {
        changes.accessTime = .to(seconds: s.st_atim.tv_sec, nanoseconds: s.st_atim.tv_nsec)
    }
    if toSet & cfuse_SET_ATTR_MTIME_NOW != 0 {
        changes.modificationTime = .now
    } else if toSet & cfuse_SET_ATTR_MTIME != 0 {
        changes.modificationTime = .to(seconds: s.st_mtim.tv_sec, nanoseconds: s.st_mtim.tv_nsec)
    }
    let known = cfuse_SET_ATTR_MODE | cfuse_SET_ATTR_UID | cfuse_SET_ATTR_GID | cfuse_SET_ATTR_SIZE
        | cfuse_SET_ATTR_ATIME | cfuse_SET_ATTR_MTIME | cfuse_SET_ATTR_ATIME_NOW | cfuse_SET_ATTR_MTIME_NOW
    changes.changesCtimeOnly = toSet & known == 0 && toSet & cfuse_SET_ATTR_CTIME != 0
    return changes
}

/// The table of C callbacks handed to `fuse_session_new`. Each one decodes
/// its arguments, wraps the request in a typed reply and calls the Swift
/// method of the same name.
func makeOperationTable() -> fuse_lowlevel_ops {
    var ops = fuse_lowlevel_ops()
    ops.`init` = { userdata, connection in
        guard let userdata, let connection else { return }
        let fs = Unmanaged<FileSystemBox>.fromOpaque(userdata).takeUnretainedValue().fileSystem
        var settings = ConnectionSettings(
            capable: connection.pointee.capable, want: connection.pointee.want,
            maxWrite: connection.pointee.max_write, maxReadahead: connection.pointee.max_readahead,
            maxBackground: connection.pointee.max_background,
            congestionThreshold: connection.pointee.congestion_threshold,
            timeGranularity: connection.pointee.time_gran)
        fs.initialize(&settings)
        connection.pointee.want = settings.want & settings.capable
        connection.pointee.max_write = settings.maxWrite
        connection.pointee.max_readahead = settings.maxReadahead
        connection.pointee.max_background = settings.maxBackground
        connection.pointee.congestion_threshold = settings.congestionThreshold
        connection.pointee.time_gran = settings.timeGranularity
    }
    ops.destroy = { userdata in
        guard let userdata else { return }
        Unmanaged<FileSystemBox>.fromOpaque(userdata).takeUnretainedValue().fileSystem.destroy()
    }
    ops.lookup = { req, parent, name in
        withTarget(req) { $0.lookup(Request(req!), parent: NodeID(rawValue: parent), name: FileName(name!), reply: ReplyEntry(req!)) }
    }
    ops.forget = { req, node, lookups in
        withTarget(req) { $0.forget(NodeID(rawValue: node), lookups: lookups) }
        fuse_reply_none(req)
    }
    ops.forget_multi = { req, count, forgets in
        withTarget(req) { fs in
            for index in 0..<count {
                let item = forgets![index]
                fs.forget(NodeID(rawValue: item.ino), lookups: item.nlookup)
            }
        }
        fuse_reply_none(req)
    }
    ops.getattr = { req, node, info in
        withTarget(req) { $0.getattr(Request(req!), node: NodeID(rawValue: node), handle: info.map { FileHandle(rawValue: $0.pointee.fh) },
                            reply: ReplyAttributes(req!)) }
    }
    ops.setattr = { req, node, attr, toSet, info in
        withTarget(req) { $0.setattr(Request(req!), node: NodeID(rawValue: node), changes: decode(attr!, toSet),
                            handle: info.map { FileHandle(rawValue: $0.pointee.fh) }, reply: ReplyAttributes(req!)) }
    }
    ops.readlink = { req, node in
        withTarget(req) { $0.readlink(Request(req!), node: NodeID(rawValue: node), reply: ReplyReadlink(req!)) }
    }
    ops.mknod = { req, parent, name, mode, device in
        withTarget(req) { $0.mknod(Request(req!), parent: NodeID(rawValue: parent), name: FileName(name!), mode: mode, device: device,
                          reply: ReplyEntry(req!)) }
    }
    ops.mkdir = { req, parent, name, mode in
        withTarget(req) { $0.mkdir(Request(req!), parent: NodeID(rawValue: parent), name: FileName(name!), mode: mode, reply: ReplyEntry(req!)) }
    }
    ops.unlink = { req, parent, name in
        withTarget(req) { $0.unlink(Request(req!), parent: NodeID(rawValue: parent), name: FileName(name!), reply: ReplyStatus(req!)) }
    }
    ops.rmdir = { req, parent, name in
        withTarget(req) { $0.rmdir(Request(req!), parent: NodeID(rawValue: parent), name: FileName(name!), reply: ReplyStatus(req!)) }
    }
    ops.symlink = { req, linkTarget, parent, name in
        withTarget(req) { $0.symlink(Request(req!), target: FileName(linkTarget!), parent: NodeID(rawValue: parent), name: FileName(name!),
                            reply: ReplyEntry(req!)) }
    }
    ops.rename = { req, parent, name, newParent, newName, flags in
        withTarget(req) { $0.rename(Request(req!), parent: NodeID(rawValue: parent), name: FileName(name!),
                           newParent: NodeID(rawValue: newParent), newName: FileName(newName!),
                           flags: RenameFlags(rawValue: flags), reply: ReplyStatus(req!)) }
    }
    ops.link = { req, node, newParent, newName in
        withTarget(req) { $0.link(Request(req!), node: NodeID(rawValue: node), newParent: NodeID(rawValue: newParent),
                         newName: FileName(newName!), reply: ReplyEntry(req!)) }
    }
    ops.open = { req, node, info in
        withTarget(req) { $0.open(Request(req!), node: NodeID(rawValue: node), flags: OpenFlags(rawValue: info!.pointee.flags),
                         reply: ReplyOpen(req!, info!, node: NodeID(rawValue: node))) }
    }
    ops.create = { req, parent, name, mode, info in
        // A FUSE_TMPFILE handed over as a CREATE (TmpfileRequest).
        if TmpfileRequest.isTmpfile(name!) {
            withTarget(req) { $0.tmpfile(Request(req!), parent: NodeID(rawValue: parent), mode: mode,
                                flags: OpenFlags(rawValue: info!.pointee.flags), reply: ReplyCreate(req!, info!)) }
            return
        }
        withTarget(req) { $0.create(Request(req!), parent: NodeID(rawValue: parent), name: FileName(name!), mode: mode,
                           flags: OpenFlags(rawValue: info!.pointee.flags), reply: ReplyCreate(req!, info!)) }
    }
    ops.read = { req, node, size, offset, info in
        // The kernel names the caller's lock owner (FUSE_READ_LOCKOWNER,
        // which libfuse passes on as it is, else 0) on direct reads only;
        // a page cache fill names none.
        let path: DataPath = (info?.pointee.lock_owner ?? 0) != 0 ? .caller : .pageCache
        withTarget(req) { $0.read(Request(req!), node: NodeID(rawValue: node), handle: handle(info), offset: offset, size: size,
                         path: path, reply: ReplyData(req!)) }
    }
    ops.write = { req, node, buffer, size, offset, info in
        let path: DataPath = info.map { cfuse_fi_writepage($0) != 0 } == true ? .pageCache : .caller
        withTarget(req) { $0.write(Request(req!), node: NodeID(rawValue: node), handle: handle(info), offset: offset,
                          data: UnsafeRawBufferPointer(start: buffer, count: size), path: path, reply: ReplyWrite(req!)) }
    }
    ops.flush = { req, node, info in
        withTarget(req) { $0.flush(Request(req!), node: NodeID(rawValue: node), handle: handle(info), reply: ReplyStatus(req!)) }
    }
    ops.release = { req, node, info in
        Unmanaged<FileSystemBox>.fromOpaque(fuse_req_userdata(req)!).takeUnretainedValue().passthrough
            .release(node: node, handle: info?.pointee.fh ?? 0)
        withTarget(req) { $0.release(Request(req!), node: NodeID(rawValue: node), handle: handle(info),
                            flags: OpenFlags(rawValue: info?.pointee.flags ?? 0), reply: ReplyStatus(req!)) }
    }
    ops.fsync = { req, node, dataOnly, info in
        withTarget(req) { $0.fsync(Request(req!), node: NodeID(rawValue: node), handle: handle(info), dataOnly: dataOnly != 0,
                          reply: ReplyStatus(req!)) }
    }
    ops.opendir = { req, node, info in
        withTarget(req) { $0.opendir(Request(req!), node: NodeID(rawValue: node), flags: OpenFlags(rawValue: info!.pointee.flags),
                            reply: ReplyOpen(req!, info!, node: NodeID(rawValue: node))) }
    }
    ops.readdir = { req, node, size, offset, info in
        withTarget(req) { $0.readdir(Request(req!), node: NodeID(rawValue: node), handle: handle(info), offset: offset,
                            reply: ReplyDirectory(req!, capacity: size, plus: false)) }
    }
    ops.readdirplus = { req, node, size, offset, info in
        withTarget(req) { $0.readdir(Request(req!), node: NodeID(rawValue: node), handle: handle(info), offset: offset,
                            reply: ReplyDirectory(req!, capacity: size, plus: true)) }
    }
    ops.releasedir = { req, node, info in
        withTarget(req) { $0.releasedir(Request(req!), node: NodeID(rawValue: node), handle: handle(info), reply: ReplyStatus(req!)) }
    }
    ops.fsyncdir = { req, node, dataOnly, info in
        withTarget(req) { $0.fsyncdir(Request(req!), node: NodeID(rawValue: node), handle: handle(info), dataOnly: dataOnly != 0,
                             reply: ReplyStatus(req!)) }
    }
    ops.statfs = { req, node in
        withTarget(req) { $0.statfs(Request(req!), node: NodeID(rawValue: node), reply: ReplyStatfs(req!)) }
    }
    ops.access = { req, node, mask in
        withTarget(req) { $0.access(Request(req!), node: NodeID(rawValue: node), mask: mask, reply: ReplyStatus(req!)) }
    }
    ops.setxattr = { req, node, name, value, size, flags in
        withTarget(req) { $0.setxattr(Request(req!), node: NodeID(rawValue: node), name: FileName(name!),
                             value: UnsafeRawBufferPointer(start: value, count: size), flags: XattrFlags(rawValue: flags),
                             reply: ReplyStatus(req!)) }
    }
    ops.getxattr = { req, node, name, size in
        withTarget(req) { $0.getxattr(Request(req!), node: NodeID(rawValue: node), name: FileName(name!),
                             reply: ReplyXattr(req!, capacity: size)) }
    }
    ops.listxattr = { req, node, size in
        withTarget(req) { $0.listxattr(Request(req!), node: NodeID(rawValue: node), reply: ReplyXattr(req!, capacity: size)) }
    }
    ops.removexattr = { req, node, name in
        withTarget(req) { $0.removexattr(Request(req!), node: NodeID(rawValue: node), name: FileName(name!), reply: ReplyStatus(req!)) }
    }
    ops.fallocate = { req, node, mode, offset, length, info in
        withTarget(req) { $0.fallocate(Request(req!), node: NodeID(rawValue: node), handle: handle(info), mode: mode, offset: offset,
                              length: length, reply: ReplyStatus(req!)) }
    }
    ops.copy_file_range = { req, nodeIn, offsetIn, infoIn, nodeOut, offsetOut, infoOut, length, flags in
        withTarget(req) { $0.copyFileRange(Request(req!), from: NodeID(rawValue: nodeIn), handle: handle(infoIn), offset: offsetIn,
                                  to: NodeID(rawValue: nodeOut), handle: handle(infoOut), offset: offsetOut,
                                  length: length, flags: UInt32(truncatingIfNeeded: flags), reply: ReplyWrite(req!)) }
    }
    ops.lseek = { req, node, offset, whence, info in
        withTarget(req) { $0.lseek(Request(req!), node: NodeID(rawValue: node), handle: handle(info), offset: offset, whence: whence,
                          reply: ReplyOffset(req!)) }
    }
    return ops
}
