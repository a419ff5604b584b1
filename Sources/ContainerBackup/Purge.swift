import Glibc
import SystemPackage

/// What iOS does when storage runs low (K2): it empties Library/Caches (and
/// tmp) of an app that is not running, but never removes what carries a
/// "do not back up" flag, nor anything below a flagged folder.
///
/// The walk is that of `ContainerWalk`: descriptor-relative, never following
/// a symbolic link (a link is removed as a link, its target left alone),
/// never crossing into another file system. A folder is removed once it is
/// empty; one that still holds a flagged entry stays. Whether the container
/// is mounted is for the caller to check first (the app must not run).
public enum Purge {
    /// A folder purge empties.
    public enum Target: String, Sendable, CaseIterable {
        case caches = "Library/Caches"
        case tmp = "tmp"

        var components: [RawName] { rawValue.split(separator: "/").map { Array($0.utf8) } }
    }

    /// An entry purge kept because of a flag.
    public struct Kept: Sendable, Hashable {
        /// Below the container root.
        public var path: String
        public var kind: EntryKind
        /// The flags that protect it (for the folder where it lies, when
        /// `inherited`).
        public var flags: [BackupFlag]
        /// A com.apple.MobileBackup value that is not one byte (kept to be safe).
        public var unrecognizedValue: Bool
        /// True when a folder above the target (the root, Library) or the
        /// target itself carries the flag, so nothing was purged there.
        public var wholeFolder: Bool
    }

    /// What happened to one target.
    public struct Outcome: Sendable {
        public var target: Target
        /// What was removed (or, in a dry run, would be).
        public var removed = Tally()
        public var kept: [Kept] = []
        public var problems: [WalkProblem] = []
    }

    /// Empties the targets of the container whose backing directory is `root`.
    /// With `dryRun`, changes nothing and says what it would remove.
    public static func run(root: String, targets: [Target], dryRun: Bool = false) throws(Errno) -> [Outcome] {
        let rootFolder = try OpenFolder.root(root)
        var outcomes: [Outcome] = []
        for target in targets {
            var purger = Purger(dryRun: dryRun, device: rootFolder.status.st_dev, outcome: Outcome(target: target))
            purger.purge(target, in: rootFolder)
            outcomes.append(purger.outcome)
        }
        return outcomes
    }

    private struct Purger {
        let dryRun: Bool
        let device: dev_t
        var outcome: Outcome
        let asRoot = geteuid() == 0

        /// Opens the target one folder at a time, checking the flags of each
        /// folder on the way (X5: a flag on Library protects Library/Caches).
        mutating func purge(_ target: Target, in root: OpenFolder) {
            var folder = root
            var path: [RawName] = []
            if protects(folder, path: path) { return }
            for name in target.components {
                path.append(name)
                do {
                    folder = try folder.folder(name)
                } catch {
                    problem(path, "cannot open it: \(error)")
                    return
                }
                if protects(folder, path: path) { return }
            }
            _ = purgeContents(of: folder, path: path)
        }

        /// Whether a folder on the way to the target carries a flag; then
        /// it is recorded as kept whole.
        mutating func protects(_ folder: OpenFolder, path: [RawName]) -> Bool {
            let flags: FlagReading
            do {
                flags = try folder.ownFlags()
            } catch {
                problem(path, "cannot read its flags (so it is left alone): \(error)")
                return true
            }
            guard flags.protectsFromPurge else { return false }
            outcome.kept.append(Kept(path: display(path), kind: .folder, flags: flags.excluding,
                                     unrecognizedValue: flags.unrecognizedMobileBackup != nil, wholeFolder: true))
            return true
        }

        /// Removes what it may below `folder`; returns whether the folder is
        /// empty afterwards (in a dry run: would be).
        mutating func purgeContents(of folder: OpenFolder, path: [RawName]) -> Bool {
            let names: [RawName]
            do {
                names = try folder.names()
            } catch {
                problem(path, "cannot list it: \(error)")
                return false
            }
            var emptied = true
            for name in names {
                let childPath = path + [name]
                let status: stat
                do {
                    status = try folder.status(of: name)
                } catch .noSuchFileOrDirectory {
                    continue
                } catch {
                    problem(childPath, "cannot stat it: \(error)")
                    emptied = false
                    continue
                }
                let kind = EntryKind(mode: status.st_mode)
                let flags: FlagReading
                do {
                    flags = try folder.flags(of: name, kind: kind)
                } catch .noSuchFileOrDirectory {
                    continue
                } catch {
                    problem(childPath, "cannot read its flags (so it is kept): \(error)")
                    emptied = false
                    continue
                }
                if flags.protectsFromPurge {
                    outcome.kept.append(Kept(path: display(childPath), kind: kind, flags: flags.excluding,
                                             unrecognizedValue: flags.unrecognizedMobileBackup != nil, wholeFolder: false))
                    emptied = false
                    continue
                }
                if kind == .folder {
                    if !purgeFolder(name, in: folder, status: status, path: childPath) { emptied = false }
                } else if dryRun {
                    outcome.removed.add(kind: kind, size: kind == .file ? Int64(status.st_size) : 0)
                } else {
                    do {
                        try folder.unlink(name)
                        outcome.removed.add(kind: kind, size: kind == .file ? Int64(status.st_size) : 0)
                    } catch .noSuchFileOrDirectory {
                    } catch {
                        problem(childPath, "cannot remove it: \(error)")
                        emptied = false
                    }
                }
            }
            return emptied
        }

        /// Purges a folder's contents, then the folder if it is empty.
        /// Returns whether it is gone (would be).
        mutating func purgeFolder(_ name: RawName, in parent: OpenFolder, status: stat, path: [RawName]) -> Bool {
            guard status.st_dev == device else {
                problem(path, "on another file system (a mount point): left alone")
                return false
            }
            // Without root's override, a folder needs rwx for its contents to go.
            let opened = !asRoot && !dryRun && status.st_mode & 0o700 != 0o700
            if opened {
                do { try parent.setMode(of: name, 0o700) } catch {
                    problem(path, "cannot make it writable: \(error)")
                    return false
                }
            }
            var emptied = false
            do {
                let child = try parent.folder(name)
                emptied = purgeContents(of: child, path: path)
            } catch .noSuchFileOrDirectory {
                return true
            } catch {
                problem(path, "cannot open it: \(error)")
            }
            if emptied {
                if dryRun {
                    outcome.removed.add(kind: .folder, size: 0)
                    return true
                }
                do {
                    try parent.removeFolder(name)
                    outcome.removed.add(kind: .folder, size: 0)
                    return true
                } catch .noSuchFileOrDirectory {
                    return true
                } catch {
                    problem(path, "cannot remove it: \(error)")
                }
            }
            // It stays: give it back its mode.
            if opened { try? parent.setMode(of: name, status.st_mode & 0o7777) }
            return false
        }

        mutating func problem(_ path: [RawName], _ text: String) {
            outcome.problems.append(WalkProblem(path: display(path), error: text))
        }

        func display(_ path: [RawName]) -> String { displayPath(path) }
    }
}

extension Tally {
    public mutating func add(kind: EntryKind, size: Int64) {
        entries += 1
        switch kind {
        case .file: files += 1
        case .folder: folders += 1
        case .symlink: symlinks += 1
        case .other, .socket: others += 1
        }
        bytes += size
    }
}
