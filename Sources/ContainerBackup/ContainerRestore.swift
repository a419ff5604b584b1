import BackingStore
import CLinux
import Glibc
import SandboxPolicy
import POSIXHelpers
import SystemPackage

/// Building a container from a backup archive (K3), as a device restore
/// does: Documents and Library come from the archive, the bundle is laid
/// out anew (or kept), Library/Caches and tmp are empty.
///
/// The archive is untrusted input and the restore runs as root, so it is
/// built where no one else can reach and worked on only through
/// descriptors (docs/security.md, "Archives" and "The backing folder's
/// parent"):
///
/// 1. the target's parent is opened once (the path to it may go through
///    links: the user named it); beside the target, in that folder, a
///    staging folder `.<name>.restore-XXXXXX` is made with mode 0700 and
///    opened without following links, and the new container is built in
///    `container` inside it, so that what the archive holds cannot be
///    reached by anyone else before it is cleaned, whatever modes it sets;
/// 2. `layOut` makes the new container's system folders (and, unless the
///    target's bundle is kept, the bundle) from its descriptor;
/// 3. tar extracts the archive into it (through /proc/self/fd), except what
///    an archive may not put in a container: anything in the bundle,
///    Library/Caches or tmp;
/// 4. unless privileges are preserved, `UntrustedArchive` takes out set-ID
///    bits, capabilities, `security.*`/`trusted.*`/`system.*` attributes,
///    device nodes, FIFOs and sockets, and gives every entry the container's
///    owner;
/// 5. anything else the archive put at the root is removed, and Caches and
///    tmp are emptied again, whatever the archive held;
/// 6. the new container takes the target's place, each step relative to the
///    parent's descriptor: renamed onto it when the target is absent or an
///    empty folder, or, when replacing a container, exchanged with it
///    (RENAME_EXCHANGE) after its bundle has been moved over, and only if the
///    target is still the folder first opened; the old container is then
///    removed through its own descriptor.
///
/// Nothing is ever changed by path below the parent, so whoever can write
/// the parent (and swap the staging folder or the target for a link) cannot
/// redirect root's changes. Whether the target is mounted is for the caller
/// to check first.
public enum ContainerRestore {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public enum Mode: Sendable {
        /// The target is absent or an empty folder.
        case create
        /// The target is a container: its data are replaced; its bundle is
        /// kept unless `keepBundle` is false (then `layOut` makes one).
        case replace(keepBundle: Bool)
    }

    /// What is restored (M2): a container (Documents, Library, tmp and the
    /// bundle at its root), or a device's group container (anything at its
    /// root, no tmp: G1).
    public enum Shape: Sendable {
        case container
        case groupContainer
    }

    /// A domain of a device's archive (M2): its top folder in the archive
    /// (`AppDomain-<id>`), the shape of its container, and the names at the
    /// old container's root that move over to the new one (the container
    /// manager's metadata plist, which is in no backup).
    public struct Domain: Sendable {
        public var folder: String
        public var shape: Shape
        public var carried: [String]

        public init(folder: String, shape: Shape, carried: [String]) {
            self.folder = folder
            self.shape = shape
            self.carried = carried
        }
    }

    /// What went wrong after the restore itself succeeded (removing the old
    /// container or the staging folder): the target is restored, but these
    /// remain.
    public typealias Leftovers = [String]

    public struct Outcome: Sendable {
        public var leftovers: Leftovers
        /// What the archive held that `ArchivePrivileges.drop` left out.
        public var dropped: DroppedPrivileges
    }

    /// Restores the archive read from `input` into `target`.
    ///
    /// - `privileges`: `.drop(owner:group:)` for the container's owner, or
    ///   `.preserve`; nil takes the owner of the container being replaced,
    ///   else (a new container) the restoring user.
    /// - `layOut`: lays out a container in the folder whose descriptor it
    ///   gets; a bundle it copies in belongs to the owner it is given (the
    ///   container's, as `privileges` has it: U1).
    /// - `beforePlacing`: for tests, called after the container is built and
    ///   before it is moved into place, with the staging folder's path: the
    ///   moment a swap of the staging folder or the target would redirect a
    ///   restore that worked by path.
    public static func restore(_ input: FileDescriptor, opening: TarArchive.Opening, expected: Int64?,
                               into target: String, layout: ContainerLayout, mode: Mode,
                               privileges: ArchivePrivileges? = nil, domain: Domain? = nil,
                               layOut: (_ root: FileDescriptor, _ path: String, _ owner: (uid: uid_t, gid: gid_t)) throws -> Void,
                               progress: (TarArchive.Progress) -> Void = { _ in },
                               beforePlacing: (String) -> Void = { _ in }) throws(Failure) -> Outcome {
        let (parentPath, name) = split(target)
        guard !name.isEmpty, name != ".", name != ".." else { throw Failure("\(target): not a name for a container") }
        let parent: OpenFolder
        do { parent = try OpenFolder.root(parentPath) } catch {
            throw Failure("\(parentPath): \(error)")
        }
        let old: OpenFolder?
        switch mode {
        case .create: old = nil
        case .replace:
            do { old = try parent.folder(Array(name.utf8)) } catch {
                throw Failure("\(target): not a folder (\(error))")
            }
        }
        let staging = try Staging(in: parent, parentPath: parentPath, beside: name)
        do throws(Failure) {
            let root = staging.container
            let rule = privileges ?? .drop(owner: old?.status.st_uid ?? geteuid(), group: old?.status.st_gid ?? getegid())
            var owner = (uid: old?.status.st_uid ?? geteuid(), gid: old?.status.st_gid ?? getegid())
            if case .drop(let uid, let gid) = rule { owner = (uid, gid) }
            do { try layOut(root.fd, staging.path, owner) } catch {
                throw Failure("cannot lay out the container: \(error)")
            }
            do {
                try TarArchive.extract(input, opening: opening, expected: expected, into: "/proc/self/fd/3",
                                       descriptor: root.fd,
                                       excluded: domain?.shape == .groupContainer ? ["Library/Caches"] : [layout.bundleName, "Library/Caches", "tmp"],
                                       only: domain?.folder, progress: progress)
            } catch {
                throw Failure(error.description)
            }
            var dropped = DroppedPrivileges()
            if case .drop(let owner, let group) = rule {
                do { dropped = try UntrustedArchive.drop(in: root, owner: owner, group: group) } catch {
                    throw Failure("\(staging.path): cannot take the archive's privileges out: \(error)")
                }
            }
            try tidy(root, path: staging.path, layout: layout, shape: domain?.shape ?? .container)
            try restoreDefaultProtection(opening.defaultProtection, on: root, path: staging.path)
            beforePlacing(staging.path)
            var leftovers: Leftovers = []
            if let old {
                let keepBundle: Bool
                if case .replace(let keep) = mode { keepBundle = keep } else { keepBundle = false }
                try exchange(staging, old, in: parent, name: name, target: target,
                             moved: (keepBundle ? [layout.bundleName] : []) + (domain?.carried ?? []))
                leftovers += staging.removeReplaced(old)
            } else {
                try moveIntoPlace(staging, in: parent, name: name, target: target)
            }
            leftovers += staging.remove()
            return Outcome(leftovers: leftovers, dropped: dropped)
        } catch {
            _ = staging.removeContainer()
            _ = staging.remove()
            throw error
        }
    }

    /// P4, P9: the container's default class, from the archive's global
    /// header, onto the new container's root (by its descriptor).
    static func restoreDefaultProtection(_ value: String?, on root: OpenFolder, path: String) throws(Failure) {
        guard let value, ProtectionClass(rawValue: value) != nil else { return }
        do { try ProtectionXattrs.store(root.fd, ProtectionXattrs.containerDefaultName, value) } catch {
            throw Failure("\(path): cannot record the default protection class: \(error)")
        }
    }

    /// The staging folder beside the target (on the same file system, so
    /// that the final rename is possible), 0700 and root's, and the new
    /// container inside it.
    final class Staging {
        let parent: OpenFolder
        let name: RawName
        /// For messages.
        let path: String
        let folder: OpenFolder
        let container: OpenFolder
        static let containerName: RawName = Array("container".utf8)

        init(in parent: OpenFolder, parentPath: String, beside target: String) throws(Failure) {
            self.parent = parent
            var made: (RawName, OpenFolder)?
            for _ in 0..<100 {
                let suffix = String((0..<6).map { _ in "abcdefghijklmnopqrstuvwxyz0123456789".randomElement()! })
                let candidate = Array(".\(target).restore-\(suffix)".utf8)
                do {
                    try candidate.withCName { (cName) throws(Errno) in _ = try check { mkdirat(parent.fd.rawValue, cName, 0o700) } }
                } catch .fileExists {
                    continue
                } catch {
                    throw Failure("\(parentPath): cannot create a staging folder: \(error)")
                }
                let opened: OpenFolder
                do { opened = try parent.folder(candidate) } catch {
                    throw Failure("\(parentPath): cannot open the staging folder: \(error)")
                }
                // Someone who can write the parent may have put their own
                // folder there between the two calls: only ours will do.
                guard opened.status.st_uid == geteuid(), opened.status.st_mode & 0o7777 == 0o700 else {
                    throw Failure("\(parentPath)/\(candidate.displayText): the staging folder was replaced while being made")
                }
                made = (candidate, opened)
                break
            }
            guard let (name, folder) = made else { throw Failure("\(parentPath): cannot find a name for a staging folder") }
            self.name = name
            self.folder = folder
            path = parentPath + "/" + name.displayText + "/container"
            do {
                try Self.containerName.withCName { (cName) throws(Errno) in _ = try check { mkdirat(folder.fd.rawValue, cName, 0o700) } }
                container = try folder.folder(Self.containerName)
            } catch {
                _ = Self.removeIfOurs(name, folder, in: parent)
                throw Failure("\(path): cannot create it: \(error)")
            }
        }

        /// Removes the new container (a failed restore).
        func removeContainer() -> Leftovers {
            var leftovers = TreeRemover.removeContents(ofFolder: container.fd).map { "\(path)/\($0)" }
            do { try folder.removeFolder(Self.containerName) } catch {
                if error != .noSuchFileOrDirectory { leftovers.append("\(path): \(error)") }
            }
            return leftovers
        }

        /// After an exchange, the old container sits where the new one was
        /// built: removed through its own descriptor, and only if it is the
        /// folder that was replaced.
        func removeReplaced(_ old: OpenFolder) -> Leftovers {
            guard let now = try? folder.status(of: Self.containerName),
                  now.st_dev == old.status.st_dev, now.st_ino == old.status.st_ino else {
                return ["\(path): not the replaced container any more; left alone"]
            }
            var leftovers = TreeRemover.removeContents(ofFolder: old.fd).map { "\(path)/\($0)" }
            do { try folder.removeFolder(Self.containerName) } catch {
                leftovers.append("\(path): \(error)")
            }
            return leftovers
        }

        /// Removes the (empty) staging folder, if its name still holds it.
        func remove() -> Leftovers {
            Self.removeIfOurs(name, folder, in: parent) ? [] : [String(path.dropLast("/container".count)) + ": left behind"]
        }

        static func removeIfOurs(_ name: RawName, _ folder: OpenFolder, in parent: OpenFolder) -> Bool {
            guard let now = try? parent.status(of: name),
                  now.st_dev == folder.status.st_dev, now.st_ino == folder.status.st_ino else { return false }
            return (try? parent.removeFolder(name)) != nil
        }
    }

    /// Step 5: only Documents, Library, tmp and the bundle stay at the root;
    /// Caches and tmp are emptied. A group container keeps what its root
    /// holds but the container manager's metadata plist (moved over from
    /// the old one), and only its Caches are emptied.
    static func tidy(_ root: OpenFolder, path: String, layout: ContainerLayout, shape: Shape = .container) throws(Failure) {
        let keep: Set<RawName> = [Array("Documents".utf8), Array("Library".utf8), Array("tmp".utf8), Array(layout.bundleName.utf8)]
        let metadata = Array(ContainerLayout.metadataName.utf8)
        do {
            for name in try root.names() where shape == .container ? !keep.contains(name) : name == metadata {
                if EntryKind(mode: try root.status(of: name).st_mode) == .folder {
                    let failures = TreeRemover.removeContents(ofFolder: try root.folder(name).fd)
                    if let first = failures.first { throw Failure("\(path)/\(name.displayText): cannot remove it: \(first)") }
                    try root.removeFolder(name)
                } else {
                    try root.unlink(name)
                }
            }
            for folder in shape == .container ? [["Library", "Caches"], ["tmp"]] : [["Library", "Caches"]] {
                var current = root
                for part in folder { current = try current.folder(Array(part.utf8)) }
                if let first = TreeRemover.removeContents(ofFolder: current.fd).first {
                    throw Failure("\(path)/\(folder.joined(separator: "/")): cannot empty it: \(first)")
                }
            }
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure("\(path): cannot tidy the restored container: \(error)")
        }
    }

    /// Step 6 for a new container.
    static func moveIntoPlace(_ staging: Staging, in parent: OpenFolder, name: String, target: String) throws(Failure) {
        // A container folder is as `mkdir` makes it.
        let mask = processUmask() ?? 0o022
        fchmod(staging.container.fd.rawValue, 0o777 & ~mask)
        do {
            try Staging.containerName.withCName { (from) throws(Errno) in
                try Array(name.utf8).withCName { (to) throws(Errno) in
                    _ = try check { renameat(staging.folder.fd.rawValue, from, parent.fd.rawValue, to) }
                }
            }
        } catch {
            throw Failure("\(target): cannot move the restored container into place: \(error)")
        }
    }

    /// Step 6 when replacing a container: the bundle (and what else is
    /// `moved`) moves over, the root keeps its mode and owner, and the two
    /// folders change places, if the target is still the folder `old`.
    static func exchange(_ staging: Staging, _ old: OpenFolder, in parent: OpenFolder, name: String, target: String,
                         moved: [String]) throws(Failure) {
        let new = staging.container
        fchmod(new.fd.rawValue, old.status.st_mode & 0o7777)
        _ = fchown(new.fd.rawValue, old.status.st_uid, old.status.st_gid)
        let rawName = Array(name.utf8)
        func rename(_ from: OpenFolder, _ fromName: RawName, _ to: OpenFolder, _ toName: RawName, flags: UInt32 = 0) throws(Errno) {
            try fromName.withCName { (a) throws(Errno) in
                try toName.withCName { (b) throws(Errno) in _ = try check { asfs_renameat2(from.fd.rawValue, a, to.fd.rawValue, b, flags) } }
            }
        }
        var done: [String] = []
        for entry in moved {
            do { try rename(old, Array(entry.utf8), new, Array(entry.utf8)) } catch {
                for back in done { try? rename(new, Array(back.utf8), old, Array(back.utf8)) }
                throw Failure("\(target)/\(entry): cannot move it over: \(error)")
            }
            done.append(entry)
        }
        let stillThere = (try? parent.status(of: rawName)).map { $0.st_dev == old.status.st_dev && $0.st_ino == old.status.st_ino } ?? false
        var failure: String?
        if !stillThere {
            failure = "it was replaced while the archive was restored"
        } else {
            do { try rename(staging.folder, Staging.containerName, parent, rawName, flags: UInt32(asfs_RENAME_EXCHANGE)) } catch {
                failure = "\(error)"
            }
        }
        if let failure {
            for back in done { try? rename(new, Array(back.utf8), old, Array(back.utf8)) }
            throw Failure("\(target): cannot put the restored container in place: \(failure)")
        }
    }

    static func split(_ path: String) -> (parent: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let parent = slash == path.startIndex ? "/" : String(path[..<slash])
        return (parent, String(path[path.index(after: slash)...]))
    }
}
