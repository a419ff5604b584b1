import BackingStore
import CLinux
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// Making, linking, renaming and removing names. Each goes through
// `checked` (its checks in order, then its call) and keeps the name tree as
// the kernel will keep its entries.
extension SandboxFileSystem {
    /// Looks up the entry a request just made in `folder`, the descriptor
    /// of `parent` (mkdirat, mknodat or symlinkat, each of which fails with
    /// EEXIST when the name is taken, so nothing that someone else put
    /// there is touched): opens it (O_PATH, not followed) and gives it to
    /// the caller through that descriptor, never by name: the name may hold
    /// another file by then. The name must hold an entry that looks just
    /// made (of `kind`, the driver's own, and not a folder: one link), else
    /// EEXIST and the entry is left alone. If the entry cannot be given to
    /// the caller it is removed again, if the name still holds it: a file
    /// owned by root with the caller's mode must not stay behind.
    private func madeEntry(_ request: Request, parent: Node, folder: FileDescriptor, name: UnsafePointer<CChar>,
                           kind: mode_t, mode: mode_t = 0) throws(Errno) -> Entry {
        let fd = try Backing.openPath(in: folder, name)
        var attributes: stat
        do throws(Errno) {
            attributes = try Backing.stat(fd)
            guard attributes.st_mode & S_IFMT == kind, attributes.st_uid == driverUID,
                  kind == S_IFDIR || attributes.st_nlink == 1 else { throw .fileExists }
            do throws(Errno) {
                if try giveToCaller(request, fd, folder: parent) {
                    attributes = try Backing.stat(fd)
                    if Self.lostSetIDBits(requested: mode, now: attributes) {
                        try Backing.chmod(fd, mode: mode & 0o7777)
                        attributes = try Backing.stat(fd)
                    }
                }
            } catch {
                removeAfterFailure(folder, name, made: attributes)
                throw error
            }
        } catch {
            Backing.close(fd)
            throw error
        }
        capacity?.added(fd)
        let node = nodes.remember(fd: fd, stat: attributes, parent: parent, name: NodeName(name))
        inheritClass(node, from: parent, kind: kind)
        return entry(for: node, stat: attributes)
    }

    /// Removes an entry the driver just made for a request that fails, if
    /// the name still holds it (`made`): never what someone else put there.
    private func removeAfterFailure(_ folder: FileDescriptor, _ name: UnsafePointer<CChar>, made: stat) {
        guard let now = try? Backing.stat(in: folder, name), InodeKey(now) == InodeKey(made) else { return }
        if now.st_mode & S_IFMT == S_IFDIR { try? Backing.rmdir(in: folder, name) } else { try? Backing.unlink(in: folder, name) }
    }

    /// Answers an entry; when the kernel did not take it, it holds no
    /// lookup of the node, so the table drops the one the reply carried.
    func send(_ result: Result<Entry, Errno>, _ reply: consuming ReplyEntry) {
        switch result {
        case .success(let entry):
            if !reply.entry(entry) { forget(entry.node, lookups: 1) }
        case .failure(let error):
            reply.error(error)
        }
    }

    /// chown clears the set-user-ID and set-group-ID bits of a file; a file
    /// the caller just created with them must keep them, as on ext4.
    static func lostSetIDBits(requested mode: mode_t, now: stat) -> Bool {
        let kind = now.st_mode & S_IFMT
        guard kind != S_IFDIR, kind != S_IFLNK, mode & (S_ISUID | S_ISGID) != 0 else { return false }
        return now.st_mode & 0o7777 != mode & 0o7777
    }

    public func mknod(_ request: Request, parent id: NodeID, name: FileName, mode: mode_t, device: dev_t, reply: consuming ReplyEntry) {
        let parent = nodes.node(id)
        // A regular file is a file with a class (P3): judged as a create.
        let checks: CheckedRequest = mode & S_IFMT == S_IFREG ? .create : .mknod
        let kind = mode & S_IFMT == 0 ? S_IFREG : mode & S_IFMT
        send(checked(checks, request, .name(name.cString, in: parent, .create(in: zone(of: parent)))) { (cleared) throws(Errno) in
            try Backing.mknod(in: cleared.folder, name.cString, mode: mode, device: device)
            return try madeEntry(request, parent: parent, folder: cleared.folder, name: name.cString, kind: kind, mode: mode)
        }, reply)
    }

    public func mkdir(_ request: Request, parent id: NodeID, name: FileName, mode: mode_t, reply: consuming ReplyEntry) {
        let parent = nodes.node(id)
        send(checked(.mkdir, request, .name(name.cString, in: parent, .makeDirectory(in: zone(of: parent)))) { (cleared) throws(Errno) in
            try Backing.mkdir(in: cleared.folder, name.cString, mode: mode)
            return try madeEntry(request, parent: parent, folder: cleared.folder, name: name.cString, kind: S_IFDIR)
        }, reply)
    }

    public func symlink(_ request: Request, target: FileName, parent id: NodeID, name: FileName, reply: consuming ReplyEntry) {
        let parent = nodes.node(id)
        var subject = Subject.name(name.cString, in: parent, .makeSymlink(in: zone(of: parent)))
        subject.linkTarget = target.cString
        send(checked(.symlink, request, subject) { (cleared) throws(Errno) in
            try Backing.symlink(target.cString, in: cleared.folder, name.cString)
            return try madeEntry(request, parent: parent, folder: cleared.folder, name: name.cString, kind: S_IFLNK)
        }, reply)
    }

    public func link(_ request: Request, node id: NodeID, newParent: NodeID, newName: FileName, reply: consuming ReplyEntry) {
        let node = nodes.node(id)
        let parent = nodes.node(newParent)
        // The file is the subject's entry, so the capacity tracks it too: an
        // O_TMPFILE file linked here is an ordinary file from now on (Q1, Q2).
        var subject = Subject.name(newName.cString, in: parent, .link(source: zone(of: node), into: zone(of: parent)))
        subject.entry = node
        send(checked(.link, request, subject) { (cleared) throws(Errno) in
            try Backing.link(cleared.file, in: cleared.folder, newName.cString)
            let (linked, attributes) = try lookupChild(parent, newName.cString)
            return entry(for: linked, stat: attributes)
        }, reply)
    }

    /// The file is made with O_EXCL in the backing folder and given to the
    /// caller through its descriptor. A name that exists there all the
    /// same (put there behind the driver's back after the kernel looked it
    /// up) is not this create's to take (`exclusiveCreate`).
    public func create(_ request: Request, parent id: NodeID, name: FileName, mode: mode_t, flags: OpenFlags,
                       reply: consuming ReplyCreate) {
        let parent = nodes.node(id)
        let made = checked(.create, request, .name(name.cString, in: parent, .create(in: zone(of: parent)))) { (cleared) throws(Errno) in
            let fd = try Self.exclusiveCreate(in: cleared.folder, name.cString, flags: flags, mode: mode)
            recordCreationClass(cleared.protection, on: fd)
            do throws(Errno) {
                let chowned: Bool
                do throws(Errno) { chowned = try giveToCaller(request, fd, folder: parent) } catch {
                    if let made = try? Backing.stat(fd) { removeAfterFailure(cleared.folder, name.cString, made: made) }
                    throw error
                }
                var (node, attributes) = try createdChild(parent, name.cString, open: fd)
                if chowned && Self.lostSetIDBits(requested: mode, now: attributes) {
                    _ = try check { fchmod(fd.rawValue, mode & 0o7777) }
                    attributes = try Backing.stat(fd)
                }
                return (entry(for: node, stat: attributes), fd, cleared.protection)
            } catch {
                Backing.close(fd)
                throw error
            }
        }
        answerCreated(made, request, flags: flags, reply)
    }

    /// Creates the file with O_EXCL. When the name exists in the backing
    /// folder, the caller who asked for O_EXCL gets EEXIST; one who did not
    /// asked to open whatever is there, which is for an open to judge:
    /// ESTALE makes the kernel (do_filp_open) walk the path again with
    /// fresh lookups (LOOKUP_REVAL), find the file and open it as any
    /// other open, so the file's own mode and owner are checked against
    /// the caller, its own zone's rules and its own class (P6, P7) apply,
    /// and nothing changes its owner.
    static func exclusiveCreate(in folder: FileDescriptor, _ name: UnsafePointer<CChar>, flags: OpenFlags,
                                mode: mode_t) throws(Errno) -> FileDescriptor {
        do {
            return try Backing.create(in: folder, name, flags: flags.rawValue, mode: mode)
        } catch {
            if error == .fileExists && flags.rawValue & O_EXCL == 0 { throw .staleNFSFileHandle }
            throw error
        }
    }

    /// Answers a create or a tmpfile: the new file's entry and its open handle.
    private func answerCreated(_ made: Result<(Entry, FileDescriptor, ProtectionClass), Errno>, _ request: Request,
                               flags: OpenFlags, _ reply: consuming ReplyCreate) {
        switch made {
        case .success(let (entry, fd, protection)):
            capacity?.added(fd)
            capacity?.opened(fd)
            let options = protectedOpen(fd, node: nodes.node(entry.node), protection: protection, request: request,
                                        options: openOptions(request, node: entry.node, flags: flags, descriptor: fd))
            let sent = reply.created(entry, handle: FileHandle(rawValue: UInt64(fd.rawValue)), options: options)
            if !sent {
                dataProtection.closed(fd)
                // No release will come for this handle, nor a forget for this lookup.
                capacity?.releasing(fd)
                Backing.close(fd)
                forget(entry.node, lookups: 1)
            }
        case .failure(let error):
            reply.error(error)
        }
    }

    /// open(2) with O_TMPFILE: judged as a create in the folder (an Inbox
    /// refuses it, the bundle is read-only), made in the backing folder with
    /// O_TMPFILE and given to the caller. linkat(2) names it later through
    /// `link`.
    public func tmpfile(_ request: Request, parent id: NodeID, mode: mode_t, flags: OpenFlags, reply: consuming ReplyCreate) {
        let parent = nodes.node(id)
        // Judged as a create in the folder: the new file gets its class (P3).
        let subject = Subject(operation: .create(in: zone(of: parent)), place: .node(parent), folder: parent)
        let made = checked(.create, request, subject) { (cleared) throws(Errno) in
            let fd = try Backing.openTemporary(in: cleared.folder, flags: flags.rawValue, mode: mode)
            do throws(Errno) {
                recordCreationClass(cleared.protection, on: fd)
                let chowned = try giveToCaller(request, fd, folder: parent)
                var attributes = try Backing.stat(fd)
                if chowned && Self.lostSetIDBits(requested: mode, now: attributes) {
                    try Backing.chmod(fd, mode: mode & 0o7777)
                    attributes = try Backing.stat(fd)
                }
                let node = nodes.rememberUnnamed(fd: try Backing.reopen(fd, flags: Int32(asfs_O_PATH)), stat: attributes,
                                                 parent: parent)
                return (entry(for: node, stat: attributes), fd, cleared.protection)
            } catch {
                Backing.close(fd)
                throw error
            }
        }
        answerCreated(made, request, flags: flags, reply)
    }

    public func unlink(_ request: Request, parent id: NodeID, name: FileName, reply: consuming ReplyStatus) {
        let parent = nodes.node(id)
        remove(.unlink, .unlink(entry: zone(ofChild: name.cString, in: parent)), request, parent: parent, name: name,
               call: Backing.unlink(in:_:), reply: reply)
    }

    public func rmdir(_ request: Request, parent id: NodeID, name: FileName, reply: consuming ReplyStatus) {
        let parent = nodes.node(id)
        remove(.rmdir, .removeDirectory(entry: zone(ofChild: name.cString, in: parent)), request, parent: parent, name: name,
               call: Backing.rmdir(in:_:), reply: reply)
    }

    /// unlink and rmdir: the same steps around their one system call.
    private func remove(_ checks: CheckedRequest, _ operation: FileOperation, _ request: Request, parent: Node, name: FileName,
                        call: (FileDescriptor, UnsafePointer<CChar>) throws(Errno) -> Void,
                        reply: consuming ReplyStatus) {
        send(checked(checks, request, .name(name.cString, in: parent, operation)) { (cleared) throws(Errno) in
            let entry = NodeName(name.cString)
            nodes.keepIfLastName(entry, in: parent, folder: cleared.folder, name.cString)
            try call(cleared.folder, name.cString)
            nodes.removed(entry, in: parent)
        }, reply)
    }

    public func rename(_ request: Request, parent id: NodeID, name: FileName, newParent newID: NodeID, newName: FileName,
                       flags: RenameFlags, reply: consuming ReplyStatus) {
        let parent = nodes.node(id)
        let newParent = nodes.node(newID)
        let source = NodeName(name.cString)
        let target = NodeName(newName.cString)
        let folder = zone(of: parent)
        let into = newParent === parent ? folder : zone(of: newParent)
        let moved = source.withBytes { nodes.layout.zone(ofChild: $0, in: folder) }
        let destination = target.withBytes { nodes.layout.zone(ofChild: $0, in: into) }
        let operation: FileOperation
        if flags.contains(.exchange) {
            operation = .exchange(first: moved, second: destination)
        } else {
            // Only a system folder (or a root entry) at the destination can
            // turn a rename into a denial by being replaced; for any other
            // name the "replaced" cell is the same whether it exists or not,
            // so the existence check is spared.
            let replacing: Zone?
            if destination.systemFolder == destination {
                replacing = (try? newParent.withFD { (folder) throws(Errno) in try Backing.stat(in: folder, newName.cString) }) != nil
                    ? destination : nil
            } else {
                replacing = destination
            }
            // RENAME_WHITEOUT leaves a new entry (a whiteout) at the old name.
            operation = flags.contains(.whiteout)
                ? .renameLeavingWhiteout(entry: moved, from: folder, into: into, replacing: replacing)
                : .rename(entry: moved, into: into, replacing: replacing)
        }
        // The capacity reserves a new entry at `newName` in `newParent`, and
        // frees the file it may replace (Q2).
        let subject = Subject(operation: operation, place: .child(parent, name.cString), folder: parent, destination: newParent,
                              name: newName.cString, renameFlags: flags)
        send(checked(.rename, request, subject) { (cleared) throws(Errno) in
            try backingRename(from: cleared.folder, name.cString, to: cleared.destination, newName.cString, target: target,
                              in: newParent, flags: flags)
            // Nodes below a moved folder derive their zone through it: the
            // tree needs only the one move.
            nodes.renamed(source, in: parent, to: target, in: newParent, exchange: flags.contains(.exchange))
        }, reply)
    }

    /// rename(2) in the backing store; the node of a file it replaces keeps
    /// its descriptor if that was the file's last name (`keepIfLastName`).
    /// When the kernel holds no node at the new name, most likely nothing is
    /// there: a rename that may not replace settles that in the same call,
    /// and only if something is there (EEXIST), or the backing file system
    /// has no RENAME_NOREPLACE (EINVAL), is the name looked at.
    private func backingRename(from: FileDescriptor, _ name: UnsafePointer<CChar>, to: FileDescriptor,
                               _ newName: UnsafePointer<CChar>, target: NodeName, in newParent: Node,
                               flags: RenameFlags) throws(Errno) {
        // An exchange and a rename that may not replace take no name away.
        if flags.isDisjoint(with: [.exchange, .noReplace]) {
            let mayTryNoReplace = flags.isEmpty
            if nodes.keepIfLastName(target, in: newParent, folder: to, newName, lookingIfNoNode: !mayTryNoReplace) == .noNode {
                do throws(Errno) {
                    return try Backing.rename(in: from, name, to: to, newName, flags: RenameFlags.noReplace.rawValue)
                } catch {
                    guard error == .fileExists || error == .invalidArgument else { throw error }
                }
                nodes.keepIfLastName(target, in: newParent, folder: to, newName)
            }
        }
        try Backing.rename(in: from, name, to: to, newName, flags: flags.rawValue)
    }
}
