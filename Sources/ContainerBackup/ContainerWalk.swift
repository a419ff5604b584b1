import Glibc
import SandboxPolicy
import SystemPackage

/// Why an entry is not in a backup. When several causes hold, the first in
/// this order is given: an entry in Library/Caches is excluded by its zone,
/// flags or not; one below a flagged folder by that folder, its own flag or
/// not.
public enum ExclusionReason: String, Sendable, Hashable, Codable, CaseIterable {
    /// Its zone is never backed up: Library/Caches, tmp, the bundle, other
    /// entries at the root (K1).
    case zone
    /// A folder above it carries a flag (X5).
    case folder
    /// It carries a flag itself (X1, X2).
    case flag
    /// A socket: no archive can hold one.
    case socket
}

/// One entry of a container, as a backup sees it.
public struct ContainerEntry: Sendable {
    /// The names from the container root down to the entry.
    public var components: [RawName]
    public var kind: EntryKind
    /// The size of a regular file (st_size); 0 for anything else.
    public var size: Int64
    public var zone: Zone
    public var flags: FlagReading
    /// Why it is not in a backup; nil when it is.
    public var exclusion: ExclusionReason?
    /// Its data protection class (P1).
    public var protection = ProtectionReading(protection: .containerDefault, explicit: false)

    public var isBackedUp: Bool { exclusion == nil }
    /// How many names below the root: 1 for `Documents`.
    public var depth: Int { components.count }

    /// The path below the root, names joined with "/", as raw bytes.
    public var path: RawName {
        var bytes: RawName = []
        for (index, name) in components.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: "/")) }
            bytes += name
        }
        return bytes
    }

    /// The path as text (invalid UTF-8 shown as U+FFFD).
    public var displayPath: String { path.displayText }
}

/// Something the walk could not read; the walk goes on without it.
public struct WalkProblem: Sendable, Hashable, Codable {
    /// The path below the container root ("." for the root).
    public var path: String
    /// What went wrong, in words.
    public var error: String
}

/// Visits every entry of a container's backing directory (see the module
/// overview in ContainerBackup.swift).
public struct ContainerWalk {
    /// The backing directory.
    public let root: String
    public let layout: ContainerLayout

    /// The flags on the container root itself (X5: they exclude everything).
    public private(set) var rootFlags = FlagReading.none
    /// What could not be read.
    public private(set) var problems: [WalkProblem] = []
    /// The container's default protection class (P4).
    public private(set) var defaultProtection = ProtectionClass.containerDefault

    public init(root: String, layout: ContainerLayout) {
        self.root = root
        self.layout = layout
    }

    /// Walks the whole container, calling `visit` for each entry, a folder
    /// before its contents, names in byte order. Throws only when the root
    /// itself cannot be opened.
    public mutating func run(_ visit: (ContainerEntry) -> Void) throws(Errno) {
        let folder = try OpenFolder.root(root)
        problems = []
        do {
            rootFlags = try folder.ownFlags()
        } catch {
            rootFlags = .none
            problems.append(WalkProblem(path: ".", error: "cannot read its flags: \(error)"))
        }
        defaultProtection = ProtectionReading.containerDefault(folder.fd)
        walk(folder, components: [], zone: layout.rootZone, belowFlag: rootFlags.excludes,
             device: folder.status.st_dev, visit)
    }

    private mutating func walk(_ folder: OpenFolder, components: [RawName], zone: Zone, belowFlag: Bool,
                               device: dev_t, _ visit: (ContainerEntry) -> Void) {
        let names: [RawName]
        do {
            names = try folder.names()
        } catch {
            problem(components, "cannot list it: \(error)")
            return
        }
        for name in names {
            let path = components + [name]
            let status: stat
            do {
                status = try folder.status(of: name)
            } catch .noSuchFileOrDirectory {
                continue  // removed since the listing
            } catch {
                problem(path, "cannot stat it: \(error)")
                continue
            }
            let kind = EntryKind(mode: status.st_mode)
            let childZone = layout.zone(ofChild: name.displayText, in: zone)
            var flags = FlagReading.none
            do {
                flags = try folder.flags(of: name, kind: kind)
            } catch .noSuchFileOrDirectory {
                continue
            } catch {
                problem(path, "cannot read its flags: \(error)")
            }
            let exclusion: ExclusionReason? =
                if !BackupClass.of(childZone).isBackedUp { .zone }
                else if belowFlag { .folder }
                else if flags.excludes { .flag }
                else if kind == .socket { .socket }
                else { nil }
            let protection = ProtectionReading.of(name, kind: kind, zone: childZone, in: folder.fd, default: defaultProtection)
            visit(ContainerEntry(components: path, kind: kind, size: kind == .file ? Int64(status.st_size) : 0,
                                 zone: childZone, flags: flags, exclusion: exclusion, protection: protection))
            guard kind == .folder else { continue }
            guard status.st_dev == device else {
                problem(path, "on another file system (a mount point): its contents are left out")
                continue
            }
            let child: OpenFolder
            do {
                child = try folder.folder(name)
            } catch .noSuchFileOrDirectory {
                continue
            } catch {
                problem(path, "cannot open it: \(error)")
                continue
            }
            walk(child, components: path, zone: childZone, belowFlag: belowFlag || flags.excludes,
                 device: device, visit)
        }
    }

    private mutating func problem(_ components: [RawName], _ text: String) {
        problems.append(WalkProblem(path: displayPath(components), error: text))
    }
}
