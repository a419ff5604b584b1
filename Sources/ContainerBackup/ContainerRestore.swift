import BackingStore
import CLinux
import Glibc
import SandboxPolicy
import SystemPackage

/// Building a container from a backup archive (K3), as a device restore
/// does: Documents and Library come from the archive, the bundle is laid
/// out anew (or kept), Library/Caches and tmp are empty.
///
/// The container is built in a staging folder beside the target and moved
/// into place in one rename at the end, so a restore that fails leaves the
/// target as it was:
///
/// 1. `layOut` makes the staging folder a container (the system folders and,
///    unless the target's bundle is kept, the bundle);
/// 2. tar extracts the archive over it, except what an archive may not put
///    in a container: anything in the bundle, Library/Caches or tmp;
/// 3. anything else the archive put at the root is removed, and Caches and
///    tmp are emptied again, whatever the archive held;
/// 4. the staging folder takes the target's place: renamed onto it when the
///    target is absent or an empty folder, or, when replacing a container,
///    exchanged with it (RENAME_EXCHANGE) after its bundle has been moved
///    over; the old container is then removed.
///
/// Whether the target is mounted is for the caller to check first.
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

    /// What went wrong after the restore itself succeeded (removing the old
    /// container): the target is restored, but these remain.
    public typealias Leftovers = [String]

    public static func restore(_ input: Int32, opening: TarArchive.Opening, expected: Int64?,
                               into target: String, layout: ContainerLayout, mode: Mode,
                               layOut: (String) throws -> Void,
                               progress: (TarArchive.Progress) -> Void = { _ in }) throws(Failure) -> Leftovers {
        let staging = try makeStaging(beside: target)
        do throws(Failure) {
            do {
                try layOut(staging)
            } catch {
                throw Failure("cannot lay out the container: \(error)")
            }
            do {
                try TarArchive.extract(input, opening: opening, expected: expected, into: staging,
                                       excluded: [layout.bundleName, "Library/Caches", "tmp"], progress: progress)
            } catch {
                throw Failure(error.description)
            }
            try tidy(staging, layout: layout)
            try restoreDefaultProtection(opening.defaultProtection, on: staging)
            switch mode {
            case .create:
                try moveIntoPlace(staging, target)
                return []
            case .replace(let keepBundle):
                try exchange(staging, target, bundle: keepBundle ? layout.bundleName : nil)
                return remove(staging)
            }
        } catch {
            _ = remove(staging)
            throw error
        }
    }

    /// P4, P9: the container's default class, from the archive's global header.
    static func restoreDefaultProtection(_ value: String?, on staging: String) throws(Failure) {
        guard let value, ProtectionClass(rawValue: value) != nil else { return }
        let bytes = Array(value.utf8)
        guard asfs_lsetxattr(staging, ProtectionXattrs.containerDefaultName, bytes, bytes.count, 0) == 0 else {
            throw Failure("\(staging): cannot record the default protection class: \(Errno(rawValue: errno))")
        }
    }

    /// A new empty folder beside `target`, on the same file system, so that
    /// the final rename is possible.
    static func makeStaging(beside target: String) throws(Failure) -> String {
        let (parent, name) = split(target)
        var template = Array("\(parent)/.\(name).restore-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw Failure("\(parent): cannot create a staging folder: \(Errno(rawValue: errno))")
        }
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Step 3: only Documents, Library, tmp and the bundle stay at the root;
    /// Caches and tmp are emptied.
    static func tidy(_ staging: String, layout: ContainerLayout) throws(Failure) {
        let keep: Set<RawName> = [Array("Documents".utf8), Array("Library".utf8), Array("tmp".utf8), Array(layout.bundleName.utf8)]
        do {
            let root = try OpenFolder.root(staging)
            for name in try root.names() where !keep.contains(name) {
                let path = staging + "/" + name.displayText
                if EntryKind(mode: try root.status(of: name).st_mode) == .folder {
                    let failures = TreeRemover.removeContents(ofFolderAt: path)
                    if let first = failures.first { throw Failure("\(path): cannot remove it: \(first)") }
                    try root.removeFolder(name)
                } else {
                    try root.unlink(name)
                }
            }
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure("\(staging): cannot tidy the restored container: \(error)")
        }
        for folder in ["Library/Caches", "tmp"] {
            if let first = TreeRemover.removeContents(ofFolderAt: staging + "/" + folder).first {
                throw Failure("\(staging)/\(folder): cannot empty it: \(first)")
            }
        }
    }

    /// Step 4 for a new container.
    static func moveIntoPlace(_ staging: String, _ target: String) throws(Failure) {
        // mkdtemp made it 0700; a container folder is as `mkdir` makes it.
        let mask = umask(0)
        umask(mask)
        chmod(staging, 0o777 & ~mask)
        guard rename(staging, target) == 0 else {
            throw Failure("\(target): cannot move the restored container into place: \(Errno(rawValue: errno))")
        }
    }

    /// Step 4 when replacing a container: the bundle moves over, the root
    /// keeps its mode and owner, and the two folders change places.
    static func exchange(_ staging: String, _ target: String, bundle: String?) throws(Failure) {
        var old = stat()
        guard stat(target, &old) == 0 else { throw Failure("\(target): \(Errno(rawValue: errno))") }
        chmod(staging, old.st_mode & 0o7777)
        _ = chown(staging, old.st_uid, old.st_gid)
        if let bundle {
            guard rename(target + "/" + bundle, staging + "/" + bundle) == 0 else {
                throw Failure("\(target)/\(bundle): cannot move the bundle over: \(Errno(rawValue: errno))")
            }
        }
        guard asfs_renameat2(AT_FDCWD, staging, AT_FDCWD, target, UInt32(asfs_RENAME_EXCHANGE)) == 0 else {
            let code = Errno(rawValue: errno)
            if let bundle { _ = rename(staging + "/" + bundle, target + "/" + bundle) }
            throw Failure("\(target): cannot put the restored container in place: \(code)")
        }
    }

    /// Removes a staging folder and all it holds; returns what could not go.
    static func remove(_ staging: String) -> Leftovers {
        var leftovers = TreeRemover.removeContents(ofFolderAt: staging).map { "\(staging)/\($0)" }
        if rmdir(staging) != 0 && errno != ENOENT { leftovers.append("\(staging): \(Errno(rawValue: errno))") }
        return leftovers
    }

    static func split(_ path: String) -> (parent: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let parent = slash == path.startIndex ? "/" : String(path[..<slash])
        return (parent, String(path[path.index(after: slash)...]))
    }
}
