import BackingStore
import CLinux
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage

// Making, linking, renaming and removing names.
extension SandboxFileSystem {
    /// Creates with `make`, gives the new file to the caller, looks it up.
    private func makeEntry(_ request: Request, parent: Node, name: UnsafePointer<CChar>, mode: mode_t = 0,
                           _ make: () throws(Errno) -> Void) throws(Errno) -> Entry {
        try make()
        let chowned = try giveToCaller(request, in: parent, name)
        var (node, attributes) = try lookupChild(parent, name)
        inheritClass(node, from: parent, kind: attributes.st_mode & S_IFMT)
        if chowned && Self.lostSetIDBits(requested: mode, now: attributes) {
            attributes = try node.withFD { (fd) throws(Errno) in
                try Backing.chmod(fd, mode: mode & 0o7777)
                return try Backing.stat(fd)
            }
        }
        return entry(for: node, stat: attributes)
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
        if let denied = denial(.create(in: parent.zone), request, path: { mountPath(of: parent, child: name.cString) }) {
            reply.error(denied)
            return
        }
        if mode & S_IFMT == S_IFREG, let locked = createDenial(request, parent: parent, name: name.cString).1 { reply.error(locked); return }
        do {
            reply.entry(try makeEntry(request, parent: parent, name: name.cString, mode: mode) { () throws(Errno) in
                try parent.withFD { (folder) throws(Errno) in try Backing.mknod(in: folder, name.cString, mode: mode, device: device) }
            })
        } catch {
            reply.error(error)
        }
    }

    public func mkdir(_ request: Request, parent id: NodeID, name: FileName, mode: mode_t, reply: consuming ReplyEntry) {
        let parent = nodes.node(id)
        if let denied = denial(.makeDirectory(in: parent.zone), request, path: { mountPath(of: parent, child: name.cString) }) {
            reply.error(denied)
            return
        }
        do {
            reply.entry(try makeEntry(request, parent: parent, name: name.cString) { () throws(Errno) in
                try parent.withFD { (folder) throws(Errno) in try Backing.mkdir(in: folder, name.cString, mode: mode) }
            })
        } catch {
            reply.error(error)
        }
    }

    public func symlink(_ request: Request, target: FileName, parent id: NodeID, name: FileName, reply: consuming ReplyEntry) {
        let parent = nodes.node(id)
        if let denied = denial(.makeSymlink(in: parent.zone), request, path: { mountPath(of: parent, child: name.cString) }) {
            reply.error(denied)
            return
        }
        // E1: where the link lands is decided lexically, from its folder.
        if EscapeCheck.resolveInside(target: target.string, linkFolder: containerComponents(of: parent),
                                     mountpoint: configuration.mountpoint) == nil {
            denials.record(pid: request.caller.pid, operation: .fileWriteCreate, path: mountPath(of: parent, child: name.cString))
            reply.error(.notPermitted)
            return
        }
        do {
            reply.entry(try makeEntry(request, parent: parent, name: name.cString) { () throws(Errno) in
                try parent.withFD { (folder) throws(Errno) in try Backing.symlink(target.cString, in: folder, name.cString) }
            })
        } catch {
            reply.error(error)
        }
    }

    public func link(_ request: Request, node id: NodeID, newParent: NodeID, newName: FileName, reply: consuming ReplyEntry) {
        let node = nodes.node(id)
        let parent = nodes.node(newParent)
        if let denied = denial(.link(source: node.zone, into: parent.zone), request,
                               path: { mountPath(of: parent, child: newName.cString) }) {
            reply.error(denied)
            return
        }
        do {
            try node.withFD { (fd) throws(Errno) in
                try parent.withFD { (folder) throws(Errno) in try Backing.link(fd, in: folder, newName.cString) }
            }
            let (linked, attributes) = try lookupChild(parent, newName.cString)
            reply.entry(entry(for: linked, stat: attributes))
        } catch {
            reply.error(error)
        }
    }

    public func create(_ request: Request, parent id: NodeID, name: FileName, mode: mode_t, flags: OpenFlags,
                       reply: consuming ReplyCreate) {
        let parent = nodes.node(id)
        if let denied = denial(.create(in: parent.zone), request, path: { mountPath(of: parent, child: name.cString) }) {
            reply.error(denied)
            return
        }
        let (protection, locked) = createDenial(request, parent: parent, name: name.cString)
        if let locked { reply.error(locked); return }
        let fd: Int32
        do {
            fd = try parent.withFD { (folder) throws(Errno) in
                try Backing.create(in: folder, name.cString, flags: flags.rawValue, mode: mode)
            }
        } catch {
            reply.error(error)
            return
        }
        if parent.zone != .bundle && parent.zone != .bundleFolder { recordCreationClass(protection, on: fd) }
        do {
            let chowned = try giveToCaller(request, in: parent, name.cString)
            var (node, attributes) = try lookupChild(parent, name.cString)
            if chowned && Self.lostSetIDBits(requested: mode, now: attributes) {
                _ = try check(fchmod(fd, mode & 0o7777))
                attributes = try node.withFD { (fd) throws(Errno) in try Backing.stat(fd) }
            }
            reply.created(entry(for: node, stat: attributes), handle: FileHandle(rawValue: UInt64(fd)),
                          options: protectedOpen(fd, node: node, protection: protection, request: request,
                                                 options: openOptions(request, node: node.id, flags: flags, descriptor: fd)))
        } catch {
            Backing.close(fd)
            reply.error(error)
        }
    }

    public func unlink(_ request: Request, parent id: NodeID, name: FileName, reply: consuming ReplyStatus) {
        let parent = nodes.node(id)
        if let denied = denial(.unlink(entry: zone(ofChild: name.cString, in: parent)), request,
                               path: { mountPath(of: parent, child: name.cString) }) {
            reply.error(denied)
            return
        }
        do {
            try parent.withFD { (folder) throws(Errno) in
                nodes.keepIfLastName(in: folder, name.cString)
                try Backing.unlink(in: folder, name.cString)
            }
            reply.ok()
        } catch {
            reply.error(error)
        }
    }

    public func rmdir(_ request: Request, parent id: NodeID, name: FileName, reply: consuming ReplyStatus) {
        let parent = nodes.node(id)
        if let denied = denial(.removeDirectory(entry: zone(ofChild: name.cString, in: parent)), request,
                               path: { mountPath(of: parent, child: name.cString) }) {
            reply.error(denied)
            return
        }
        do {
            try parent.withFD { (folder) throws(Errno) in
                nodes.keepIfLastName(in: folder, name.cString)
                try Backing.rmdir(in: folder, name.cString)
            }
            reply.ok()
        } catch {
            reply.error(error)
        }
    }

    public func rename(_ request: Request, parent id: NodeID, name: FileName, newParent newID: NodeID, newName: FileName,
                       flags: RenameFlags, reply: consuming ReplyStatus) {
        let parent = nodes.node(id)
        let newParent = nodes.node(newID)
        let moved = zone(ofChild: name.cString, in: parent)
        let destination = zone(ofChild: newName.cString, in: newParent)
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
            operation = .rename(entry: moved, into: newParent.zone, replacing: replacing)
        }
        if let denied = denial(operation, request, path: { mountPath(of: parent, child: name.cString) }) {
            reply.error(denied)
            return
        }
        do {
            let (movedStat, otherStat) = try parent.withFD { (from) throws(Errno) in
                try newParent.withFD { (to) throws(Errno) in
                    if !flags.contains(.exchange) { nodes.keepIfLastName(in: to, newName.cString) }
                    try Backing.rename(in: from, name.cString, to: to, newName.cString, flags: flags.rawValue)
                    return (moved != destination ? try? Backing.stat(in: to, newName.cString) : nil,
                            flags.contains(.exchange) ? try? Backing.stat(in: from, name.cString) : nil)
                }
            }
            // The moved file now lives in another zone; record it on its node
            // (and on the other one of an exchange).
            if let movedStat, let node = nodes.existing(InodeKey(movedStat)) {
                node.zone = destination
                if node.isDirectory && moved != destination { forgetEntries(below: node) }
            }
            if let otherStat, let node = nodes.existing(InodeKey(otherStat)) {
                node.zone = moved
            }
            reply.ok()
        } catch {
            reply.error(error)
        }
    }
}
