import SandboxPolicy
import SystemPackage

/// Counts and bytes of a set of entries.
public struct Tally: Sendable, Hashable, Codable {
    /// All entries: files + folders + symlinks + others.
    public var entries = 0
    public var files = 0
    public var folders = 0
    public var symlinks = 0
    /// FIFOs, device nodes and sockets.
    public var others = 0
    /// The sizes of the regular files (st_size: a sparse file counts in full,
    /// a file with several names once per name).
    public var bytes: Int64 = 0

    public init() {}

    public mutating func add(_ entry: ContainerEntry) {
        add(kind: entry.kind, size: entry.size)
    }
}

/// What a backup of a container would hold (K1), and what it would not, and
/// why. Encoded as JSON it is the `backup-report --json` output; the schema
/// is documented in docs/backup.md and versioned by `schema`.
public struct BackupReport: Sendable, Codable {
    public static let schemaName = "appsandboxfs.backup-report/1"

    /// Always `schemaName`.
    public var schema = BackupReport.schemaName
    /// The backing directory that was read.
    public var container: String
    public var appName: String
    /// The size from which a backed-up file is a `large-file` finding.
    public var largeFileThreshold: Int64
    /// Everything a backup holds: what `backup` archives.
    public var backup = Tally()
    /// Everything left out, by reason.
    public var excluded = ExcludedTally()
    /// One row per system folder, always all eight, in a fixed order.
    public var zones: [ZoneSummary]
    /// The entries one level below each system folder (and each other
    /// entry at the root), with their subtrees, in walk order (names sorted
    /// byte by byte, a folder before its contents).
    public var topEntries: [TopEntry] = []
    /// Each entry that starts an excluded subtree, with the whole subtree,
    /// in walk order.
    public var exclusions: [Exclusion] = []
    /// What the Data Storage Guidelines advise against.
    public var findings: [Finding] = []
    /// What could not be read: an entry whose flags could not be read counts
    /// as unflagged, a folder that could not be listed counts without its
    /// contents, an entry that could not be stat'ed not at all.
    public var problems: [WalkProblem] = []
    /// Data protection (P1-P4): the container's default class and every
    /// entry's class, in walk order.
    public var protection = ProtectionSummary()

    public struct ProtectionSummary: Sendable, Hashable, Codable {
        /// The raw value of the container's default class.
        public var defaultClass = ProtectionClass.containerDefault.rawValue
        public var entries: [ProtectionEntry] = []
    }

    public struct ProtectionEntry: Sendable, Hashable, Codable {
        public var path: String
        /// NSFileProtectionComplete, ... (the raw value).
        public var protection: String
        /// Set explicitly (NSFileProtectionKey), rather than from its folder.
        public var explicit: Bool
    }

    public struct ExcludedTally: Sendable, Hashable, Codable {
        public var zone = Tally()
        public var folder = Tally()
        public var flag = Tally()
        public var socket = Tally()
        public var all = Tally()

        mutating func add(_ entry: ContainerEntry, _ reason: ExclusionReason) {
            all.add(entry)
            switch reason {
            case .zone: zone.add(entry)
            case .folder: folder.add(entry)
            case .flag: flag.add(entry)
            case .socket: socket.add(entry)
            }
        }
    }

    public struct ZoneSummary: Sendable, Hashable, Codable {
        /// The system folder below the root ("Documents/Inbox", "MyApp.app"),
        /// or "." for the other entries at the root.
        public var path: String
        /// documents, inbox, library, preferences, caches, tmp, bundle, rootOther.
        public var zone: String
        /// backedUp, caches, temporary, bundle, outside (see BackupClass).
        public var backupClass: String
        /// The folder itself and everything below it.
        public var total = Tally()
        /// The part of `total` a backup holds.
        public var backup = Tally()
    }

    public struct TopEntry: Sendable, Hashable, Codable {
        public var path: String
        /// The zone name of its system folder, as in `ZoneSummary.zone`.
        public var zone: String
        public var kind: EntryKind
        /// The entry and everything below it.
        public var total = Tally()
        /// The part of `total` a backup holds.
        public var backup = Tally()
    }

    public struct Exclusion: Sendable, Hashable, Codable {
        /// The entry that starts the excluded subtree ("." for the root).
        public var path: String
        /// zone or flag (its subtree is excluded by that), or socket.
        public var reason: ExclusionReason
        /// The flags it carries that exclude it (for `flag`).
        public var flags: [BackupFlag]
        public var kind: EntryKind
        /// The entry and everything below it.
        public var tally = Tally()
    }

    public struct Finding: Sendable, Hashable, Codable {
        public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
            /// A backed-up file at least `largeFileThreshold` bytes long.
            case largeFile = "large-file"
            /// An entry left in tmp (one per entry directly in tmp).
            case leftInTmp = "left-in-tmp"
            /// A flag on the root or a system folder.
            case flagOnSystemFolder = "flag-on-system-folder"
            /// An unexpected entry at the container root.
            case entryAtRoot = "entry-at-root"
            /// A com.apple.MobileBackup value that is not one byte.
            case unrecognizedFlagValue = "unrecognized-flag-value"
        }
        public var kind: Kind
        public var path: String
        /// The bytes concerned (the file, or the subtree), when it matters.
        public var bytes: Int64?
        /// What is wrong and what Apple advises, in one sentence.
        public var message: String
    }
}

/// One walk of a container, read two ways: the report, and the exact list of
/// the entries it counts as backed up (what `TarArchive.create` archives).
public struct BackupScan: Sendable {
    public var report: BackupReport
    /// The backed-up entries, in walk order (a folder before its contents).
    public var members: [RawName]
    /// Their sizes, in the same order (for progress).
    public var memberSizes: [Int64]
    /// Their kinds, in the same order (a device's domains count files, M2).
    public var memberKinds: [EntryKind] = []

    /// Entries found at the root that iOS itself puts there; they are no
    /// `entry-at-root` finding.
    public static let systemRootEntries: Set<String> = ["SystemData", ".com.apple.mobile_container_manager.metadata.plist"]

    public static let defaultLargeFileThreshold: Int64 = 1 << 20

    /// Walks the container at `root` (its backing directory).
    public static func run(root: String, layout: ContainerLayout,
                           largeFileThreshold: Int64 = defaultLargeFileThreshold,
                           listMembers: Bool = false) throws(Errno) -> BackupScan {
        var builder = Builder(root: root, layout: layout, threshold: largeFileThreshold, listMembers: listMembers)
        var walk = ContainerWalk(root: root, layout: layout)
        try walk.run { builder.add($0) }
        builder.report.protection.defaultClass = walk.defaultProtection.rawValue
        return builder.finish(rootFlags: walk.rootFlags, problems: walk.problems)
    }

    /// The zones of the report's rows, in order.
    static let zoneRows: [Zone] = [.documentsFolder, .inboxFolder, .libraryFolder, .preferencesFolder,
                                   .cachesFolder, .tmpFolder, .bundleFolder, .rootOther]

    static func zoneName(_ systemFolder: Zone) -> String {
        switch systemFolder {
        case .documentsFolder: "documents"
        case .inboxFolder: "inbox"
        case .libraryFolder: "library"
        case .preferencesFolder: "preferences"
        case .cachesFolder: "caches"
        case .tmpFolder: "tmp"
        case .bundleFolder: "bundle"
        default: "rootOther"
        }
    }

    static func zonePath(_ systemFolder: Zone, _ layout: ContainerLayout) -> String {
        switch systemFolder {
        case .documentsFolder: "Documents"
        case .inboxFolder: "Documents/Inbox"
        case .libraryFolder: "Library"
        case .preferencesFolder: "Library/Preferences"
        case .cachesFolder: "Library/Caches"
        case .tmpFolder: "tmp"
        case .bundleFolder: layout.bundleName
        default: "."
        }
    }

    private struct Builder {
        var report: BackupReport
        let layout: ContainerLayout
        let listMembers: Bool
        var members: [RawName] = []
        var memberSizes: [Int64] = []
        var memberKinds: [EntryKind] = []
        var zoneIndex: [Zone: Int] = [:]
        var topIndex: [[RawName]: Int] = [:]
        /// The exclusion whose subtree the walk is in, with its depth.
        var openExclusion: (depth: Int, index: Int)?

        init(root: String, layout: ContainerLayout, threshold: Int64, listMembers: Bool) {
            self.layout = layout
            self.listMembers = listMembers
            let zones = BackupScan.zoneRows.map { zone in
                BackupReport.ZoneSummary(path: BackupScan.zonePath(zone, layout), zone: BackupScan.zoneName(zone),
                                         backupClass: BackupClass.of(zone).rawValue)
            }
            report = BackupReport(container: root, appName: layout.appName, largeFileThreshold: threshold, zones: zones)
            for (index, zone) in BackupScan.zoneRows.enumerated() { zoneIndex[zone] = index }
        }

        mutating func add(_ entry: ContainerEntry) {
            let systemFolder = entry.zone.systemFolder
            // A device's own folders and containers have no row of their
            // own: they count as other entries (M2 groups them by domain).
            let row = zoneIndex[systemFolder] ?? zoneIndex[.rootOther]!
            report.protection.entries.append(.init(path: entry.displayPath, protection: entry.protection.protection.rawValue,
                                                   explicit: entry.protection.explicit))
            report.zones[row].total.add(entry)

            // The top entry: the ancestor one level below the system folder.
            let topDepth = entry.zone.systemFolderDepth + 1
            var top: Int?
            if entry.depth >= topDepth {
                let key = Array(entry.components.prefix(topDepth))
                if let index = topIndex[key] {
                    top = index
                } else if entry.depth == topDepth {
                    top = report.topEntries.count
                    topIndex[key] = top
                    report.topEntries.append(BackupReport.TopEntry(path: entry.displayPath, zone: BackupScan.zoneName(systemFolder),
                                                                   kind: entry.kind))
                }
            }
            if let top { report.topEntries[top].total.add(entry) }

            if let open = openExclusion, entry.depth <= open.depth { openExclusion = nil }
            if let reason = entry.exclusion {
                report.excluded.add(entry, reason)
                if openExclusion == nil {
                    openExclusion = (entry.depth, report.exclusions.count)
                    report.exclusions.append(BackupReport.Exclusion(path: entry.displayPath, reason: reason,
                                                                    flags: reason == .flag ? entry.flags.excluding : [],
                                                                    kind: entry.kind))
                }
                report.exclusions[openExclusion!.index].tally.add(entry)
            } else {
                report.backup.add(entry)
                report.zones[row].backup.add(entry)
                if let top { report.topEntries[top].backup.add(entry) }
                if listMembers {
                    members.append(entry.path)
                    memberSizes.append(entry.size)
                    memberKinds.append(entry.kind)
                }
            }
            findings(for: entry)
        }

        mutating func findings(for entry: ContainerEntry) {
            let path = entry.displayPath
            if entry.kind == .file && entry.isBackedUp && entry.size >= report.largeFileThreshold {
                report.findings.append(.init(
                    kind: .largeFile, path: path, bytes: entry.size,
                    message: "\(ByteCount.text(entry.size)) in every backup: if the app can download or re-create it, keep it in Library/Caches or mark it excluded from backup"))
            }
            if entry.kind == .folder && !entry.flags.excluding.isEmpty && isSystemFolder(entry) {
                report.findings.append(systemFolderFinding(path: path, flags: entry.flags.excluding, zone: entry.zone))
            }
            if entry.zone == .rootOther && entry.depth == 1 && !BackupScan.systemRootEntries.contains(path) {
                report.findings.append(.init(
                    kind: .entryAtRoot, path: path, bytes: nil,
                    message: "at the container root, where an app cannot put anything (S1): never backed up; app data belongs in Documents or Library"))
            }
            if let value = entry.flags.unrecognizedMobileBackup {
                report.findings.append(.init(
                    kind: .unrecognizedFlagValue, path: path, bytes: nil,
                    message: "\(BackupFlag.mobileBackup.name) is \(hex(value)) (\(value.count) bytes), not the one byte iOS reads: it does not exclude the entry (purge keeps it); write the byte 0x01, or use \(BackupFlag.excludeItem.name)"))
            }
        }

        func isSystemFolder(_ entry: ContainerEntry) -> Bool {
            entry.zone == .bundleFolder || (entry.depth <= 2 && ContainerLayout.requiredFolders.contains(entry.displayPath))
        }

        func systemFolderFinding(path: String, flags: [BackupFlag], zone: Zone) -> BackupReport.Finding {
            let names = flags.map(\.name).joined(separator: " and ")
            var message = "\(path == "." ? "the container root" : path) carries \(names): Apple advises a folder of the app's own (such as Library/Application Support/Downloads) for files not to back up, not a system folder"
            if zone == .cachesFolder || zone == .tmpFolder || zone == .root {
                message += "; it also keeps purge from emptying it"
            }
            return .init(kind: .flagOnSystemFolder, path: path, bytes: nil, message: message)
        }

        func hex(_ bytes: [UInt8]) -> String {
            if bytes.isEmpty { return "empty" }
            let shown = bytes.prefix(16).map { byte in
                let digits = String(byte, radix: 16)
                return digits.count == 1 ? "0" + digits : digits
            }.joined()
            return "0x" + shown + (bytes.count > 16 ? "…" : "")
        }

        mutating func finish(rootFlags: FlagReading, problems: [WalkProblem]) -> BackupScan {
            report.problems = problems
            if rootFlags.excludes {
                // X5 on the root: every entry was excluded by it.
                report.exclusions = [BackupReport.Exclusion(path: ".", reason: .flag, flags: rootFlags.excluding,
                                                            kind: .folder, tally: report.excluded.all)]
                report.findings.insert(systemFolderFinding(path: ".", flags: rootFlags.excluding, zone: .root), at: 0)
            }
            if let value = rootFlags.unrecognizedMobileBackup {
                report.findings.append(.init(
                    kind: .unrecognizedFlagValue, path: ".", bytes: nil,
                    message: "\(BackupFlag.mobileBackup.name) is \(hex(value)) (\(value.count) bytes), not the one byte iOS reads: it does not exclude the container"))
            }
            for top in report.topEntries where top.zone == "tmp" {
                report.findings.append(.init(
                    kind: .leftInTmp, path: top.path, bytes: top.total.bytes,
                    message: "left in tmp (\(describe(top.total))): delete temporary files when done with them; iOS empties tmp while the app is not running"))
            }
            return BackupScan(report: report, members: members, memberSizes: memberSizes, memberKinds: memberKinds)
        }

        func describe(_ tally: Tally) -> String {
            var parts: [String] = []
            if tally.files > 0 { parts.append(tally.files == 1 ? "1 file" : "\(tally.files) files") }
            if tally.folders > 0 { parts.append(tally.folders == 1 ? "1 folder" : "\(tally.folders) folders") }
            if tally.symlinks > 0 { parts.append(tally.symlinks == 1 ? "1 symlink" : "\(tally.symlinks) symlinks") }
            if tally.others > 0 { parts.append(tally.others == 1 ? "1 other" : "\(tally.others) others") }
            parts.append(ByteCount.text(tally.bytes))
            return parts.joined(separator: ", ")
        }
    }
}

/// Byte counts for people: "512 B", "1.5 KiB", "9.0 MiB".
public enum ByteCount {
    public static func text(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}
