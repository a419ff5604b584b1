import SandboxPolicy

// The contract restated rule by rule, in its own words and independently of
// RuleTable.swift. The matrix tests compare the table against this, cell by
// cell; the rule tests beside them check the same rules by hand, case by case.

/// Zones grouped as the contract speaks of them.
enum Zones {
    /// B rules: the bundle folder and everything in it.
    static let bundle: Set<Zone> = [.bundleFolder, .bundle]
    /// I rules: the Inbox folder and everything in it.
    static let inbox: Set<Zone> = [.inboxFolder, .inbox]
    /// S2: the folders that cannot be removed or renamed.
    static let systemFolders: Set<Zone> = [
        .documentsFolder, .inboxFolder, .libraryFolder, .cachesFolder, .preferencesFolder, .tmpFolder,
    ]
    /// W1, T1: the writable system folders, which receive new entries.
    static let writableFolders: Set<Zone> = [
        .documentsFolder, .libraryFolder, .cachesFolder, .preferencesFolder, .tmpFolder,
    ]
    /// W1, T1 and rootOther: below the writable folders, and what was at the root before.
    static let writableContent: Set<Zone> = [.documents, .library, .caches, .preferences, .tmp, .rootOther]
    /// Places a file may be moved to or created in (W3, I3).
    static let writableDestinations = writableFolders.union(writableContent)
}

/// The kinds of change the contract names, for changes that touch one zone.
enum ChangeKind: CaseIterable, Sendable {
    case add, remove, data, mode, owner, times, xattr
}

enum Contract {
    /// What the contract says of a change of `kind` at an entry (or, for
    /// `add`, inside a folder) of `zone`; nil means allowed.
    static func expected(_ kind: ChangeKind, in zone: Zone) -> Denial? {
        if Zones.bundle.contains(zone) { return .readOnly }                            // B2, B4
        let isSystemFolder = zone == .root || Zones.systemFolders.contains(zone)
        switch kind {
        case .add:
            if zone == .root { return .notPermitted }                                  // S1
            if Zones.inbox.contains(zone) { return .notPermitted }                     // I4
            return nil                                                                 // W1, T1
        case .remove:
            if isSystemFolder { return .notPermitted }                                 // S2, I5
            return nil                                                                 // W1, I2, rootOther
        case .data:
            if Zones.inbox.contains(zone) { return .notPermitted }                     // I4
            if isSystemFolder { return .notPermitted }                                 // a folder's data never changes
            return nil                                                                 // W1
        case .mode, .owner, .times:
            if isSystemFolder { return .notPermitted }                                 // S3
            if Zones.inbox.contains(zone) { return .notPermitted }                     // I4
            return nil                                                                 // W1
        case .xattr:
            if Zones.inbox.contains(zone) { return .notPermitted }                     // I4 (the Inbox folder too)
            return nil                                                                 // X3, X5
        }
    }

    /// rename(2) of an entry of zone `entry` into a folder of zone `folder`,
    /// over an entry of zone `replaced` if any.
    static func expectedRename(_ entry: Zone, into folder: Zone, replacing replaced: Zone?) -> Denial? {
        let touched = [entry, folder] + (replaced.map { [$0] } ?? [])
        if touched.contains(where: Zones.bundle.contains) { return .readOnly }        // B2, B4: EROFS first
        if entry == .root || Zones.systemFolders.contains(entry) { return .notPermitted }          // S2, I5
        if let replaced, replaced == .root || Zones.systemFolders.contains(replaced) { return .notPermitted } // S2
        if folder == .root { return .notPermitted }                                    // S1
        if Zones.inbox.contains(folder) { return .notPermitted }                       // I4: into or within the Inbox
        return nil                                                                     // W3, I3
    }

    /// link(2) of an existing entry of zone `source` into a folder of zone `folder`.
    static func expectedLink(_ source: Zone, into folder: Zone) -> Denial? {
        if Zones.bundle.contains(source) || Zones.bundle.contains(folder) { return .readOnly } // B2, E4
        if Zones.inbox.contains(source) { return .notPermitted }                       // I4, E4
        if source == .root || Zones.systemFolders.contains(source) { return .notPermitted } // no second name for a system folder
        if folder == .root { return .notPermitted }                                    // S1
        if Zones.inbox.contains(folder) { return .notPermitted }                       // I4
        return nil                                                                     // W1
    }

    /// RENAME_EXCHANGE of two entries; each enters the other's folder.
    static func expectedExchange(_ first: Zone, _ second: Zone) -> Denial? {
        let both = [first, second]
        if both.contains(where: Zones.bundle.contains) { return .readOnly }           // B2, B4
        if both.contains(where: { $0 == .root || Zones.systemFolders.contains($0) }) { return .notPermitted } // S2, I5
        if both.contains(where: Zones.inbox.contains) { return .notPermitted }        // I4: the other one would enter the Inbox
        return nil                                                                     // W1 (RENAME_EXCHANGE)
    }
}

/// The verdict for a denial or nil, logged as `operation`.
func verdict(_ denial: Denial?, _ operation: SandboxOperation) -> Verdict {
    denial.map { .deny($0, operation) } ?? .allow
}

/// Every operation that changes one zone, with its kind and the operation
/// name a denial of it logs.
func oneZoneOperations(_ zone: Zone) -> [(FileOperation, ChangeKind, SandboxOperation)] {
    [
        (.create(in: zone), .add, .fileWriteCreate),
        (.makeDirectory(in: zone), .add, .fileWriteCreate),
        (.makeSymlink(in: zone), .add, .fileWriteCreate),
        (.unlink(entry: zone), .remove, .fileWriteUnlink),
        (.removeDirectory(entry: zone), .remove, .fileWriteUnlink),
        (.open(zone, write: true, truncate: false), .data, .fileWriteData),
        (.open(zone, write: true, truncate: true), .data, .fileWriteData),
        (.open(zone, write: false, truncate: true), .data, .fileWriteData),
        (.write(zone), .data, .fileWriteData),
        (.allocate(zone), .data, .fileWriteData),
        (.setAttributes(zone, .size), .data, .fileWriteData),
        (.setAttributes(zone, .mode), .mode, .fileWriteMode),
        (.setAttributes(zone, .owner), .owner, .fileWriteOwner),
        (.setAttributes(zone, .times), .times, .fileWriteTimes),
        (.setExtendedAttribute(zone), .xattr, .fileWriteXattr),
        (.removeExtendedAttribute(zone), .xattr, .fileWriteXattr),
    ]
}
