import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// Data protection (P1-P9): what a request is asked before it touches
// content. The checks combinator (`checked`) calls these where a request's
// list names `.protection`; the decisions come from
// `ProtectionPolicy` (SandboxPolicy/ProtectionTable.swift), the device state
// and open handles from `DataProtection`.
extension SandboxFileSystem {
    var dataProtection: DataProtection { configuration.dataProtection }

    // MARK: Classes

    /// A node's class (P1): the one set explicitly, else the one it got at
    /// creation (P3), else the container's default (P4). The bundle is class D.
    ///
    /// The class at creation is stored only when it differs from the
    /// default, so a container whose classes nobody sets keeps a backing
    /// tree with no attribute of the driver's. Reading the class costs two
    /// getxattr calls the first time; the node then remembers it (every
    /// create asks for its folder's class, every open for the file's), and
    /// only the class calls through the mount change it (`setProtectionClass`,
    /// `removeProtectionClass`). A class written into the backing directory
    /// while the file is mounted and known to the kernel is seen once the
    /// kernel forgets the node.
    func protectionClass(of node: Node) -> ProtectionClass {
        let zone = zone(of: node)
        switch zone {
        case .bundle, .bundleFolder: return .none
        default: break
        }
        if ProtectionPolicy.classIsFixed(in: zone) { return dataProtection.defaultClass }
        if node.sharesItsFile.load(ordering: .relaxed) { return readProtectionClass(of: node) }
        if let cached = ProtectionClass(cacheValue: node.protectionCache.load(ordering: .acquiring)) { return cached }
        let read = readProtectionClass(of: node)
        // Only if nobody stored a newer class meanwhile (a setxattr that
        // raced with this read stores after its write).
        _ = node.protectionCache.compareExchange(expected: 0, desired: read.cacheValue, ordering: .acquiringAndReleasing)
        return read
    }

    private func readProtectionClass(of node: Node) -> ProtectionClass {
        if !node.isSymlink, let stored = try? node.withFD({ (fd) throws(Errno) in Self.storedClass(fd) }) {
            return stored
        }
        return dataProtection.defaultClass
    }

    /// The class stored on a file: explicit first, then the one from its creation.
    static func storedClass(_ fd: FileDescriptor) -> ProtectionClass? {
        let present = ProtectionXattrs.classNamesPresent(fd)
        for (name, isThere) in [(ProtectionXattrs.explicitName, present?.explicit ?? true),
                                (ProtectionXattrs.atCreationName, present?.atCreation ?? true)] where isThere {
            if let value = ProtectionXattrs.stored(fd, name), let stored = ProtectionClass(attributeValue: value) {
                return stored
            }
        }
        return nil
    }

    /// P3: a new regular file or folder keeps the class it got from its
    /// folder, so that a later change of the folder's class leaves it as it
    /// is. (ext4 keeps user attributes on files and folders only.)
    func recordCreationClass(_ protection: ProtectionClass, on fd: FileDescriptor) {
        guard protection != dataProtection.defaultClass else { return }
        try? ProtectionXattrs.store(fd, ProtectionXattrs.atCreationName, protection.rawValue)
    }

    /// The same for an entry made by mkdir or mknod, once looked up.
    func inheritClass(_ node: Node, from parent: Node, kind: mode_t) {
        let folderZone = zone(of: parent)
        guard kind == S_IFREG || kind == S_IFDIR, folderZone != .bundle, folderZone != .bundleFolder else { return }
        let protection = protectionClass(of: parent)
        try? node.withFD { (fd) throws(Errno) in recordCreationClass(protection, on: fd) }
    }

    // MARK: Checks

    /// Whether `operation` on an entry of class `protection` may go ahead
    /// now; on a refusal, logs the `DataProtection:` line (P8) and answers EPERM.
    func protectionDenial(_ operation: ProtectionOperation, _ protection: ProtectionClass, _ request: Request,
                          at place: Place, writing: Bool = false) -> Errno? {
        let state = dataProtection.keyState()
        if ProtectionPolicy.allows(operation, protection, in: state) { return nil }
        denials.recordDataProtection(pid: request.caller.pid, operation: operation.logName(writing: writing), path: mountPath(place),
                                     protection: protection, state: state.deviceState)
        return .notPermitted
    }

    /// Content I/O through an open handle (read, write, fsync, fallocate,
    /// copy_file_range, ftruncate). `path`: for a READ or WRITE, whether the
    /// caller's own call or the kernel's page cache asks.
    ///
    /// The page cache is served in every state (P6: pages mapped before the
    /// lock keep working, and what was written through them reaches the
    /// backing file): its writeback carries bytes the kernel took from the
    /// app already, which a refusal would drop (the app is never told, and
    /// the next read fails with EIO); its reads on a direct I/O handle fill
    /// pages of a mapping, which a refusal turns into SIGBUS, and the kernel
    /// drops mapped pages whenever another process's stat sees a new
    /// modification time. A class A handle's own read(2) and write(2) come
    /// direct and are judged as before. A cached handle's read(2) fills the
    /// page cache too: judged as before, since it is not a mapping's.
    func handleDenial(_ request: Request, handle fd: FileDescriptor, node id: NodeID, writing: Bool,
                      path: DataPath = .caller) -> Errno? {
        guard let handle = dataProtection.protection(ofHandle: fd) else { return nil }
        if path == .pageCache && (writing || handle.directIO) { return nil }
        return protectionDenial(.descriptorIO, handle.protection, request, at: .node(nodes.node(id)), writing: writing)
    }

    // MARK: Open handles

    /// Registers a new handle and chooses how the kernel does its I/O. Class
    /// A handles must be revocable at lock, so they get plain requests with
    /// direct I/O (no passthrough, no page cache serving reads the driver
    /// never sees). The one exception: while the file has passthrough
    /// handles open (it was another class when they were opened), the kernel
    /// refuses a plain open, so this one is passthrough too (docs/protection.md).
    func protectedOpen(_ fd: FileDescriptor, node: Node, protection: ProtectionClass, request: Request,
                       options: OpenOptions) -> OpenOptions {
        var options = options
        if protection == .complete && !(options.backingDescriptor != nil && request.hasPassthroughHandles(node.id)) {
            options.backingDescriptor = nil
            options.directIO = true
            options.keepCache = false
        }
        dataProtection.opened(fd, key: node.key, protection: protection, directIO: options.directIO)
        return options
    }

    // MARK: The NSFileProtectionKey attribute (P2)

    /// getxattr: always the entry's class; the driver's own names are absent.
    func getProtectionAttribute(_ node: Node, name: [UInt8], reply: consuming ReplyXattr) {
        guard name.elementsEqual(ProtectionXattrs.mountName.utf8) else { reply.error(.noData); return }
        let value = Array(protectionClass(of: node).rawValue.utf8)
        if reply.capacity == 0 {
            reply.size(value.count)
        } else if reply.capacity < value.count {
            reply.error(.outOfRange)
        } else {
            reply.value(value[...])
        }
    }

    /// setxattr: one of the four raw values (else EINVAL), refused while the
    /// entry's current class is unavailable. Zone rules were applied before.
    func setProtectionClass(_ request: Request, _ node: Node, name: [UInt8], value: UnsafeRawBufferPointer,
                            flags: XattrFlags) throws(Errno) {
        guard name.elementsEqual(ProtectionXattrs.mountName.utf8) else { throw .notPermitted }
        guard let protection = ProtectionClass(attributeValue: value) else { throw .invalidArgument }
        try refuseIfClassIsFixed(request, node)
        if let denied = protectionDenial(.setClass, protectionClass(of: node), request, at: .node(node)) { throw denied }
        // F1: a file with no name yet (O_TMPFILE, no link) given a class is
        // a file being created in that class (how the Foundation bridge
        // creates one, docs/foundation.md): the create is judged in the new
        // class (P6, P7), so a class A file made while locked fails before
        // it has a name, and leaves no entry.
        if !node.isDirectory, try node.withFD({ (fd) throws(Errno) in try Backing.stat(fd).st_nlink }) == 0,
           let denied = protectionDenial(.create, protection, request, at: .node(node)) { throw denied }
        // Writers one at a time, so that the remembered class is the one
        // written last.
        try classWriters.withLock { _ throws(Errno) in
            try node.withFD { (fd) throws(Errno) in
                try Backing.setxattr(fd, ProtectionXattrs.explicitName, value, flags: flags.rawValue)
            }
            node.protectionCache.store(protection.cacheValue, ordering: .releasing)
        }
        dataProtection.classChanged(node.key, to: protection)
    }

    /// P1: the root, Documents, Library and tmp keep the default class:
    /// EPERM, and a DataProtection line, for any attempt to change it.
    private func refuseIfClassIsFixed(_ request: Request, _ node: Node) throws(Errno) {
        guard ProtectionPolicy.classIsFixed(in: zone(of: node)) else { return }
        denials.recordDataProtection(pid: request.caller.pid, operation: ProtectionOperation.setClass.logName(writing: true),
                                     path: mountPath(.node(node)), protection: dataProtection.defaultClass,
                                     state: dataProtection.keyState().deviceState)
        throw .notPermitted
    }

    /// removexattr: drops the explicit class; the entry goes back to the one
    /// it got at creation (P2, P3).
    func removeProtectionClass(_ request: Request, _ node: Node, name: [UInt8]) throws(Errno) {
        guard name.elementsEqual(ProtectionXattrs.mountName.utf8) else { throw .notPermitted }
        try refuseIfClassIsFixed(request, node)
        if let denied = protectionDenial(.setClass, protectionClass(of: node), request, at: .node(node)) { throw denied }
        let now = try classWriters.withLock { _ throws(Errno) -> ProtectionClass in
            try node.withFD { (fd) throws(Errno) in try Backing.removexattr(fd, ProtectionXattrs.explicitName) }
            let now = readProtectionClass(of: node)
            node.protectionCache.store(now.cacheValue, ordering: .releasing)
            return now
        }
        dataProtection.classChanged(node.key, to: now)
    }
}


extension ProtectionClass {
    /// The class as a node remembers it (`Node.protectionCache`): never 0.
    var cacheValue: UInt8 {
        switch self {
        case .complete: 1
        case .completeUnlessOpen: 2
        case .completeUntilFirstUserAuthentication: 3
        case .none: 4
        }
    }

    init?(cacheValue: UInt8) {
        switch cacheValue {
        case 1: self = .complete
        case 2: self = .completeUnlessOpen
        case 3: self = .completeUntilFirstUserAuthentication
        case 4: self = .none
        default: return nil
        }
    }
}
