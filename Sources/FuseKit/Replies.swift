import CFuse
import Glibc
import SystemPackage

// Every request gets exactly one reply. Each reply type below is
// non-copyable and its answering methods are `consuming`, so the compiler
// refuses a second answer; a reply dropped without an answer answers EIO in
// its deinit, so the kernel never waits forever on a forgotten request.

/// The request a reply answers, and who sent it.
public struct Request: @unchecked Sendable {
    let raw: fuse_req_t

    init(_ raw: fuse_req_t) { self.raw = raw }

    /// The calling process's uid, gid, pid and umask.
    public var caller: Caller {
        let context = fuse_req_ctx(raw)!.pointee
        return Caller(uid: context.uid, gid: context.gid, pid: context.pid, umask: context.umask)
    }

    /// The caller's supplementary groups, up to `limit` of them.
    public func supplementaryGroups(limit: Int = 64) -> [gid_t] {
        var groups = [gid_t](repeating: 0, count: limit)
        let count = fuse_req_getgroups(raw, Int32(limit), &groups)
        guard count > 0 else { return [] }
        return Array(groups.prefix(Int(min(count, Int32(limit)))))
    }

    /// Whether the kernel leaves clearing set-user-ID and set-group-ID bits
    /// to the file system (FUSE_HANDLE_KILLPRIV_V2): on WRITE, on SETATTR
    /// with a size and on open with O_TRUNC by a caller without CAP_FSETID,
    /// and it cannot see writes through passthrough at all. chown is not
    /// concerned: the backing chown clears them itself.
    public var serverClearsSetIDBits: Bool {
        Unmanaged<FileSystemBox>.fromOpaque(fuse_req_userdata(raw)!).takeUnretainedValue().passthrough.killPrivV2
    }

    /// Whether `node` has handles open in passthrough. While it has, the
    /// kernel fails (EIO) an open of it answered without passthrough; while
    /// it has not, an open answered with `OpenOptions.directIO` and no
    /// backing descriptor stands beside later passthrough opens.
    public func hasPassthroughHandles(_ node: NodeID) -> Bool {
        Unmanaged<FileSystemBox>.fromOpaque(fuse_req_userdata(raw)!).takeUnretainedValue().passthrough
            .hasBacking(node: node.rawValue)
    }

    /// Whether the kernel has withdrawn the request (the caller was interrupted).
    public var isInterrupted: Bool { fuse_req_interrupted(raw) != 0 }
}

/// Answers with success or an errno only (unlink, rename, setxattr, fsync ...).
public struct ReplyStatus: ~Copyable {
    let request: fuse_req_t
    init(_ request: fuse_req_t) { self.request = request }
    public consuming func ok() { fuse_reply_err(request, 0); discard self }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// The session's passthrough state, when the file system asked for it.
private func passthroughChannel(_ request: fuse_req_t) -> PassthroughChannel? {
    let channel = Unmanaged<FileSystemBox>.fromOpaque(fuse_req_userdata(request)!).takeUnretainedValue().passthrough
    return channel.wanted ? channel : nil
}

/// Answers lookup, mknod, mkdir, symlink and link with a node.
public struct ReplyEntry: ~Copyable {
    let request: fuse_req_t
    init(_ request: fuse_req_t) { self.request = request }
    /// False when the kernel did not take the answer (the caller went
    /// away): then it holds no lookup of the node.
    @discardableResult
    public consuming func entry(_ entry: Entry) -> Bool {
        var e = entry.cValue
        let sent = fuse_reply_entry(request, &e) == 0
        discard self
        return sent
    }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers create with a node and an open file.
public struct ReplyCreate: ~Copyable {
    let request: fuse_req_t
    let info: UnsafeMutablePointer<fuse_file_info>
    init(_ request: fuse_req_t, _ info: UnsafeMutablePointer<fuse_file_info>) {
        self.request = request
        self.info = info
    }
    /// False when the kernel did not take the answer (the caller went
    /// away): then it holds neither the handle (no release will come for
    /// it) nor a lookup of the node.
    @discardableResult
    public consuming func created(_ entry: Entry, handle: FileHandle, options: OpenOptions = OpenOptions()) -> Bool {
        var e = entry.cValue
        if let descriptor = options.backingDescriptor,
           let channel = passthroughChannel(request),
           let backing = channel.acquire(node: entry.node.rawValue, handle: handle.rawValue, descriptor: descriptor) {
            let sent = cfuse_reply_create_passthrough(request, &e, handle.rawValue, options.kernelFlags, backing) == 0
            if !sent { channel.release(node: entry.node.rawValue, handle: handle.rawValue) }
            discard self
            return sent
        }
        info.pointee.fh = handle.rawValue
        options.apply(to: info)
        let sent = fuse_reply_create(request, &e, info) == 0
        discard self
        return sent
    }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers getattr and setattr.
public struct ReplyAttributes: ~Copyable {
    let request: fuse_req_t
    init(_ request: fuse_req_t) { self.request = request }
    public consuming func attributes(_ stat: stat, timeout: Double) {
        var s = stat
        fuse_reply_attr(request, &s, timeout)
        discard self
    }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers open and opendir with a handle.
public struct ReplyOpen: ~Copyable {
    let request: fuse_req_t
    let info: UnsafeMutablePointer<fuse_file_info>
    let node: NodeID
    init(_ request: fuse_req_t, _ info: UnsafeMutablePointer<fuse_file_info>, node: NodeID) {
        self.request = request
        self.info = info
        self.node = node
    }
    /// False when the kernel did not take the answer (the opener went
    /// away): no release will come for the handle.
    @discardableResult
    public consuming func opened(_ handle: FileHandle, options: OpenOptions = OpenOptions()) -> Bool {
        if let descriptor = options.backingDescriptor,
           let channel = passthroughChannel(request),
           let backing = channel.acquire(node: node.rawValue, handle: handle.rawValue, descriptor: descriptor) {
            let sent = cfuse_reply_open_passthrough(request, handle.rawValue, options.kernelFlags, backing) == 0
            if !sent { channel.release(node: node.rawValue, handle: handle.rawValue) }
            discard self
            return sent
        }
        info.pointee.fh = handle.rawValue
        options.apply(to: info)
        let sent = fuse_reply_open(request, info) == 0
        discard self
        return sent
    }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers read with bytes, either from memory or straight from a descriptor
/// (libfuse then reads or splices it without a copy through Swift).
public struct ReplyData: ~Copyable {
    let request: fuse_req_t
    init(_ request: fuse_req_t) { self.request = request }
    public consuming func bytes(_ buffer: UnsafeRawBufferPointer) {
        fuse_reply_buf(request, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), buffer.count)
        discard self
    }
    /// Up to `size` bytes of `descriptor` from `offset`; fewer at end of file.
    public consuming func fromDescriptor(_ descriptor: FileDescriptor, offset: off_t, size: Int, splice: Bool = false) {
        var vector = cfuse_bufvec_fd(descriptor.rawValue, size, offset)
        let flags = splice ? FUSE_BUF_SPLICE_MOVE : FUSE_BUF_NO_SPLICE
        fuse_reply_data(request, &vector, flags)
        discard self
    }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers write and copy_file_range with a byte count.
public struct ReplyWrite: ~Copyable {
    let request: fuse_req_t
    init(_ request: fuse_req_t) { self.request = request }
    public consuming func written(_ count: Int) { fuse_reply_write(request, count); discard self }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers readlink.
public struct ReplyReadlink: ~Copyable {
    let request: fuse_req_t
    init(_ request: fuse_req_t) { self.request = request }
    public consuming func target(_ cString: UnsafePointer<CChar>) { fuse_reply_readlink(request, cString); discard self }
    /// `cString` must hold a NUL.
    public consuming func target(_ cString: [CChar]) {
        cString.withUnsafeBufferPointer { _ = fuse_reply_readlink(request, $0.baseAddress) }
        discard self
    }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers getxattr and listxattr: the size asked for (when the caller
/// passed size 0) or the value itself.
public struct ReplyXattr: ~Copyable {
    let request: fuse_req_t
    /// The caller's buffer size; 0 means "tell me the size".
    public let capacity: Int
    init(_ request: fuse_req_t, capacity: Int) {
        self.request = request
        self.capacity = capacity
    }
    public consuming func size(_ size: Int) { fuse_reply_xattr(request, size); discard self }
    public consuming func value(_ buffer: UnsafeRawBufferPointer) {
        fuse_reply_buf(request, buffer.baseAddress?.assumingMemoryBound(to: CChar.self), buffer.count)
        discard self
    }
    public consuming func value(_ bytes: ArraySlice<UInt8>) {
        bytes.withUnsafeBytes { _ = fuse_reply_buf(request, $0.baseAddress?.assumingMemoryBound(to: CChar.self), $0.count) }
        discard self
    }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers statfs.
public struct ReplyStatfs: ~Copyable {
    let request: fuse_req_t
    init(_ request: fuse_req_t) { self.request = request }
    public consuming func statfs(_ value: statvfs) {
        var v = value
        fuse_reply_statfs(request, &v)
        discard self
    }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers lseek.
public struct ReplyOffset: ~Copyable {
    let request: fuse_req_t
    init(_ request: fuse_req_t) { self.request = request }
    public consuming func offset(_ offset: off_t) { fuse_reply_lseek(request, offset); discard self }
    public consuming func error(_ errno: Errno) { fuse_reply_err(request, errno.rawValue); discard self }
    deinit { fuse_reply_err(request, EIO) }
}

/// Answers readdir and readdirplus: add entries until `add` says the buffer
/// is full, then `send()`. The buffer is the size the kernel asked for.
public struct ReplyDirectory: ~Copyable {
    let request: fuse_req_t
    let buffer: UnsafeMutableRawPointer
    let capacity: Int
    var used = 0
    /// Whether this is a readdirplus reply (entries carry attributes and
    /// count as lookups).
    public let plus: Bool

    init(_ request: fuse_req_t, capacity: Int, plus: Bool) {
        self.request = request
        self.capacity = capacity
        self.plus = plus
        buffer = UnsafeMutableRawPointer.allocate(byteCount: max(capacity, 1), alignment: 8)
    }

    /// Adds a readdir entry. Only the inode number and the type bits of
    /// `stat.st_mode` are used. Returns false, adding nothing, when the
    /// buffer is full: stop there and send.
    public mutating func add(name: UnsafePointer<CChar>, stat: stat, nextOffset: off_t) -> Bool {
        var s = stat
        let needed = fuse_add_direntry(request, nil, 0, name, nil, 0)
        guard used + needed <= capacity else { return false }
        fuse_add_direntry(request, (buffer + used).assumingMemoryBound(to: CChar.self), capacity - used, name, &s, nextOffset)
        used += needed
        return true
    }

    /// Adds a readdirplus entry. Returns false, adding nothing, when full; in
    /// that case the kernel does not count a lookup for it.
    public mutating func addPlus(name: UnsafePointer<CChar>, entry: Entry, nextOffset: off_t) -> Bool {
        var e = entry.cValue
        let needed = fuse_add_direntry_plus(request, nil, 0, name, nil, 0)
        guard used + needed <= capacity else { return false }
        fuse_add_direntry_plus(request, (buffer + used).assumingMemoryBound(to: CChar.self), capacity - used, name, &e, nextOffset)
        used += needed
        return true
    }

    /// Whether a readdirplus entry of this name would still fit.
    public func fitsPlus(name: UnsafePointer<CChar>) -> Bool {
        used + fuse_add_direntry_plus(request, nil, 0, name, nil, 0) <= capacity
    }

    public var isEmpty: Bool { used == 0 }

    public consuming func send() {
        fuse_reply_buf(request, buffer.assumingMemoryBound(to: CChar.self), used)
        buffer.deallocate()
        discard self
    }
    public consuming func error(_ errno: Errno) {
        fuse_reply_err(request, errno.rawValue)
        buffer.deallocate()
        discard self
    }
    deinit {
        fuse_reply_err(request, EIO)
        buffer.deallocate()
    }
}

extension OpenOptions {
    func apply(to info: UnsafeMutablePointer<fuse_file_info>) {
        cfuse_fi_set_direct_io(info, directIO ? 1 : 0)
        cfuse_fi_set_keep_cache(info, keepCache ? 1 : 0)
        cfuse_fi_set_cache_readdir(info, cacheDirectory ? 1 : 0)
        cfuse_fi_set_noflush(info, noFlush ? 1 : 0)
    }
}
