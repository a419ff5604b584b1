import CFuse
import Glibc
import SystemPackage

/// One method per FUSE low-level operation, with decoded arguments and a
/// typed reply that must be answered exactly once.
///
/// How the kernel and a FUSE file system talk, in brief:
/// - The kernel names files by node id, not by path. `lookup(parent, name)`
///   (and mknod, mkdir, symlink, link, create, readdirplus) hands the kernel
///   a node id and increments that node's *lookup count*; `forget` later
///   subtracts from it. Until the count reaches zero the node id must stay
///   valid; after, it may be reused for another file.
/// - The kernel caches entries (name -> node) and attributes for the timeouts
///   given in the reply, and file data in its page cache. A file system that
///   changes things behind the kernel's back must invalidate those caches
///   (see `FuseSession.invalidateEntry` and `invalidateNode`).
/// - Requests arrive on several worker threads at once: every method may run
///   concurrently with any other, including for the same node.
///
/// Every method has a default: `ENOSYS` ("not implemented", which the kernel
/// remembers for the whole mount) for most, but `ENOTSUP` for the xattr
/// calls, since an ENOSYS there turns extended attributes off for good.
public protocol FileSystemOperations: AnyObject, Sendable {
    /// The kernel opened the connection: choose capabilities and sizes.
    func initialize(_ settings: inout ConnectionSettings)
    /// The session ends.
    func destroy()

    func lookup(_ request: Request, parent: NodeID, name: FileName, reply: consuming ReplyEntry)
    /// No reply: forget has none.
    func forget(_ node: NodeID, lookups: UInt64)
    func getattr(_ request: Request, node: NodeID, handle: FileHandle?, reply: consuming ReplyAttributes)
    func setattr(_ request: Request, node: NodeID, changes: AttributeChanges, handle: FileHandle?, reply: consuming ReplyAttributes)
    func readlink(_ request: Request, node: NodeID, reply: consuming ReplyReadlink)
    func mknod(_ request: Request, parent: NodeID, name: FileName, mode: mode_t, device: dev_t, reply: consuming ReplyEntry)
    func mkdir(_ request: Request, parent: NodeID, name: FileName, mode: mode_t, reply: consuming ReplyEntry)
    func unlink(_ request: Request, parent: NodeID, name: FileName, reply: consuming ReplyStatus)
    func rmdir(_ request: Request, parent: NodeID, name: FileName, reply: consuming ReplyStatus)
    func symlink(_ request: Request, target: FileName, parent: NodeID, name: FileName, reply: consuming ReplyEntry)
    func rename(_ request: Request, parent: NodeID, name: FileName, newParent: NodeID, newName: FileName,
                flags: RenameFlags, reply: consuming ReplyStatus)
    func link(_ request: Request, node: NodeID, newParent: NodeID, newName: FileName, reply: consuming ReplyEntry)
    func open(_ request: Request, node: NodeID, flags: OpenFlags, reply: consuming ReplyOpen)
    func create(_ request: Request, parent: NodeID, name: FileName, mode: mode_t, flags: OpenFlags, reply: consuming ReplyCreate)
    /// open(2) with O_TMPFILE in `parent`: an open file with no name (no
    /// link), which linkat(2) may name later (LINK of its node). ENOSYS
    /// (the default) makes the kernel answer EOPNOTSUPP from then on.
    func tmpfile(_ request: Request, parent: NodeID, mode: mode_t, flags: OpenFlags, reply: consuming ReplyCreate)
    /// `path`: the caller's own read(2) or a fill of the page cache (`DataPath`).
    func read(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, size: Int, path: DataPath, reply: consuming ReplyData)
    /// `path`: the caller's own write(2) or writeback of the page cache (`DataPath`).
    func write(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, data: UnsafeRawBufferPointer,
               path: DataPath, reply: consuming ReplyWrite)
    func flush(_ request: Request, node: NodeID, handle: FileHandle, reply: consuming ReplyStatus)
    func release(_ request: Request, node: NodeID, handle: FileHandle, flags: OpenFlags, reply: consuming ReplyStatus)
    func fsync(_ request: Request, node: NodeID, handle: FileHandle, dataOnly: Bool, reply: consuming ReplyStatus)
    func opendir(_ request: Request, node: NodeID, flags: OpenFlags, reply: consuming ReplyOpen)
    /// readdir and readdirplus (`reply.plus`): `offset` is 0 or a `nextOffset` given earlier.
    func readdir(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, reply: consuming ReplyDirectory)
    func releasedir(_ request: Request, node: NodeID, handle: FileHandle, reply: consuming ReplyStatus)
    func fsyncdir(_ request: Request, node: NodeID, handle: FileHandle, dataOnly: Bool, reply: consuming ReplyStatus)
    func statfs(_ request: Request, node: NodeID, reply: consuming ReplyStatfs)
    func access(_ request: Request, node: NodeID, mask: Int32, reply: consuming ReplyStatus)
    func setxattr(_ request: Request, node: NodeID, name: FileName, value: UnsafeRawBufferPointer, flags: XattrFlags,
                  reply: consuming ReplyStatus)
    func getxattr(_ request: Request, node: NodeID, name: FileName, reply: consuming ReplyXattr)
    func listxattr(_ request: Request, node: NodeID, reply: consuming ReplyXattr)
    func removexattr(_ request: Request, node: NodeID, name: FileName, reply: consuming ReplyStatus)
    func fallocate(_ request: Request, node: NodeID, handle: FileHandle, mode: Int32, offset: off_t, length: off_t,
                   reply: consuming ReplyStatus)
    func copyFileRange(_ request: Request, from source: NodeID, handle sourceHandle: FileHandle, offset sourceOffset: off_t,
                       to destination: NodeID, handle destinationHandle: FileHandle, offset destinationOffset: off_t,
                       length: Int, flags: UInt32, reply: consuming ReplyWrite)
    func lseek(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, whence: Int32, reply: consuming ReplyOffset)
}

extension FileSystemOperations {
    public func initialize(_ settings: inout ConnectionSettings) {}
    public func destroy() {}
    public func lookup(_ request: Request, parent: NodeID, name: FileName, reply: consuming ReplyEntry) { reply.error(.noFunction) }
    public func forget(_ node: NodeID, lookups: UInt64) {}
    public func getattr(_ request: Request, node: NodeID, handle: FileHandle?, reply: consuming ReplyAttributes) { reply.error(.noFunction) }
    public func setattr(_ request: Request, node: NodeID, changes: AttributeChanges, handle: FileHandle?, reply: consuming ReplyAttributes) { reply.error(.noFunction) }
    public func readlink(_ request: Request, node: NodeID, reply: consuming ReplyReadlink) { reply.error(.noFunction) }
    public func mknod(_ request: Request, parent: NodeID, name: FileName, mode: mode_t, device: dev_t, reply: consuming ReplyEntry) { reply.error(.noFunction) }
    public func mkdir(_ request: Request, parent: NodeID, name: FileName, mode: mode_t, reply: consuming ReplyEntry) { reply.error(.noFunction) }
    public func unlink(_ request: Request, parent: NodeID, name: FileName, reply: consuming ReplyStatus) { reply.error(.noFunction) }
    public func rmdir(_ request: Request, parent: NodeID, name: FileName, reply: consuming ReplyStatus) { reply.error(.noFunction) }
    public func symlink(_ request: Request, target: FileName, parent: NodeID, name: FileName, reply: consuming ReplyEntry) { reply.error(.noFunction) }
    public func rename(_ request: Request, parent: NodeID, name: FileName, newParent: NodeID, newName: FileName,
                       flags: RenameFlags, reply: consuming ReplyStatus) { reply.error(.noFunction) }
    public func link(_ request: Request, node: NodeID, newParent: NodeID, newName: FileName, reply: consuming ReplyEntry) { reply.error(.noFunction) }
    public func open(_ request: Request, node: NodeID, flags: OpenFlags, reply: consuming ReplyOpen) { reply.error(.noFunction) }
    public func create(_ request: Request, parent: NodeID, name: FileName, mode: mode_t, flags: OpenFlags, reply: consuming ReplyCreate) { reply.error(.noFunction) }
    public func tmpfile(_ request: Request, parent: NodeID, mode: mode_t, flags: OpenFlags, reply: consuming ReplyCreate) { reply.error(.noFunction) }
    public func read(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, size: Int, path: DataPath,
                     reply: consuming ReplyData) { reply.error(.noFunction) }
    public func write(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, data: UnsafeRawBufferPointer,
                      path: DataPath, reply: consuming ReplyWrite) { reply.error(.noFunction) }
    public func flush(_ request: Request, node: NodeID, handle: FileHandle, reply: consuming ReplyStatus) { reply.error(.noFunction) }
    public func release(_ request: Request, node: NodeID, handle: FileHandle, flags: OpenFlags, reply: consuming ReplyStatus) { reply.ok() }
    public func fsync(_ request: Request, node: NodeID, handle: FileHandle, dataOnly: Bool, reply: consuming ReplyStatus) { reply.error(.noFunction) }
    public func opendir(_ request: Request, node: NodeID, flags: OpenFlags, reply: consuming ReplyOpen) { reply.error(.noFunction) }
    public func readdir(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, reply: consuming ReplyDirectory) { reply.error(.noFunction) }
    public func releasedir(_ request: Request, node: NodeID, handle: FileHandle, reply: consuming ReplyStatus) { reply.ok() }
    public func fsyncdir(_ request: Request, node: NodeID, handle: FileHandle, dataOnly: Bool, reply: consuming ReplyStatus) { reply.error(.noFunction) }
    public func statfs(_ request: Request, node: NodeID, reply: consuming ReplyStatfs) { reply.error(.noFunction) }
    public func access(_ request: Request, node: NodeID, mask: Int32, reply: consuming ReplyStatus) { reply.error(.noFunction) }
    public func setxattr(_ request: Request, node: NodeID, name: FileName, value: UnsafeRawBufferPointer, flags: XattrFlags,
                         reply: consuming ReplyStatus) { reply.error(.notSupported) }
    public func getxattr(_ request: Request, node: NodeID, name: FileName, reply: consuming ReplyXattr) { reply.error(.notSupported) }
    public func listxattr(_ request: Request, node: NodeID, reply: consuming ReplyXattr) { reply.error(.notSupported) }
    public func removexattr(_ request: Request, node: NodeID, name: FileName, reply: consuming ReplyStatus) { reply.error(.notSupported) }
    public func fallocate(_ request: Request, node: NodeID, handle: FileHandle, mode: Int32, offset: off_t, length: off_t,
                          reply: consuming ReplyStatus) { reply.error(.notSupported) }
    public func copyFileRange(_ request: Request, from source: NodeID, handle sourceHandle: FileHandle, offset sourceOffset: off_t,
                              to destination: NodeID, handle destinationHandle: FileHandle, offset destinationOffset: off_t,
                              length: Int, flags: UInt32, reply: consuming ReplyWrite) { reply.error(.noFunction) }
    public func lseek(_ request: Request, node: NodeID, handle: FileHandle, offset: off_t, whence: Int32, reply: consuming ReplyOffset) { reply.error(.noFunction) }
}
