// The sandbox rules of the contract (docs/rules.md, part one), as one table:
// a row per zone, a column per kind of change. Nothing else in this module
// decides what is allowed; `SandboxPolicy.decide` only looks cells up here.

/// One cell: what happens when a change of one kind meets one zone.
///
/// Ordered by precedence: when an operation touches several cells (rename,
/// link, exchange, a setattr of several attributes), the most severe cell
/// wins, `erofs` over `eperm` over `allow`. EROFS wins because B2 says every
/// change inside the bundle fails with EROFS, whatever else it touches: a
/// rename from the bundle into the Inbox is EROFS, not EPERM. (A real
/// read-only mount, too, refuses before any permission is looked at.)
enum Outcome: UInt8, Comparable, Sendable {
    case allow
    /// A sandbox denial.
    case eperm
    /// A change to the read-only bundle.
    case erofs

    static func < (lhs: Outcome, rhs: Outcome) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// A row of the table: what may happen to the entries of one zone, and inside
/// folders of that zone. The columns:
///
/// - `add`: a folder of this zone gains a name: create, mknod, mkdir, symlink,
///   link into it, rename into it, or the far side of an exchange.
/// - `remove`: an entry of this zone loses its name: unlink, rmdir, rename
///   away, being replaced by a rename, either side of an exchange. (The
///   contract always treats "removed" and "renamed" alike: S2, I5, B4, and
///   I2 with I3.)
/// - `link`: an entry of this zone is the source of a hard link, which would
///   give it a second name elsewhere (E4: a writable alias of a protected file).
/// - `data`: its contents change: open for writing or with O_TRUNC, write,
///   fallocate, truncate (setattr of the size).
/// - `mode`, `owner`, `times`: setattr of those (chmod, chown, utimens).
/// - `xattr`: setxattr, removexattr.
struct ZoneRules: Sendable {
    let add: Outcome
    let remove: Outcome
    let link: Outcome
    let data: Outcome
    let mode: Outcome
    let owner: Outcome
    let times: Outcome
    let xattr: Outcome

    /// Positional, so that each row below reads as a line of the table.
    init(_ add: Outcome, _ remove: Outcome, _ link: Outcome, _ data: Outcome,
         _ mode: Outcome, _ owner: Outcome, _ times: Outcome, _ xattr: Outcome) {
        (self.add, self.remove, self.link, self.data) = (add, remove, link, data)
        (self.mode, self.owner, self.times, self.xattr) = (mode, owner, times, xattr)
    }
}

extension ZoneRules {
    /// THE TABLE. Every rule of the contract that can be decided from zones is
    /// one cell here; the comment at the end of a row names the rules behind it.
    ///
    /// A switch rather than an array or dictionary so that the compiler
    /// refuses a zone without a row, and a lookup costs nothing.
    ///
    /// Decisions where the contract is silent:
    /// - System folders (root, Documents, Inbox, Library, Caches, Preferences,
    ///   tmp) get no second name by a hard link and their `data` cell is EPERM.
    ///   The kernel refuses both for any folder before asking the driver
    ///   (EPERM for link, EISDIR for writes), so these cells only say "this
    ///   never changes".
    /// - Extended attributes of the root and of the writable system folders
    ///   may change: X5 lets an app flag a folder to keep it out of backups.
    ///   Those of the Inbox folder may not: I4 forbids setxattr in the Inbox,
    ///   and the folder is the Inbox as much as its contents are.
    /// - I3 names "a file" moved out of the Inbox; a folder may go too (its
    ///   `remove` cell is the same), since I2 lets the app delete it anyway.
    /// - rootOther (entries at the root that were there before the mount, and
    ///   everything below them) is writable like Library, and its entries may
    ///   be removed: S1 forbids only *new* root entries. Renaming one within
    ///   the root is still "rename into the root", which S1 forbids (root's `add`).
    /// - The root cannot lose its name (it has none): `remove` is EPERM.
    static func of(_ zone: Zone) -> ZoneRules {
        switch zone {
        //                             add     remove  link    data    mode    owner   times   xattr      rules
        case .root:              .init(.eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .allow) // S1, S3, X5
        case .bundleFolder:      .init(.erofs, .erofs, .erofs, .erofs, .erofs, .erofs, .erofs, .erofs) // B2, B4
        case .bundle:            .init(.erofs, .erofs, .erofs, .erofs, .erofs, .erofs, .erofs, .erofs) // B2, E4
        case .documentsFolder:   .init(.allow, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .allow) // W1, S2, S3, X5
        case .documents:         .init(.allow, .allow, .allow, .allow, .allow, .allow, .allow, .allow) // W1, W3
        case .inboxFolder:       .init(.eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm) // I4, I5, S2, S3
        case .inbox:             .init(.eperm, .allow, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm) // I2, I3, I4, E4
        case .libraryFolder:     .init(.allow, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .allow) // W1, S2, S3, X5
        case .library:           .init(.allow, .allow, .allow, .allow, .allow, .allow, .allow, .allow) // W1, W3
        case .cachesFolder:      .init(.allow, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .allow) // W1, S2, S3, X5
        case .caches:            .init(.allow, .allow, .allow, .allow, .allow, .allow, .allow, .allow) // W1, W3
        case .preferencesFolder: .init(.allow, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .allow) // W1, S2, S3, X5
        case .preferences:       .init(.allow, .allow, .allow, .allow, .allow, .allow, .allow, .allow) // W1, W3
        case .tmpFolder:         .init(.allow, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .allow) // T1, S2, S3, X5
        case .tmp:               .init(.allow, .allow, .allow, .allow, .allow, .allow, .allow, .allow) // T1, W3
        case .rootOther:         .init(.allow, .allow, .allow, .allow, .allow, .allow, .allow, .allow) // S1 (see above)
        // A device (part three). Everything above the containers, the UUID
        // folders and the metadata plists change only through the verbs:
        // EPERM for every kind of change, the xattrs included (A3). A group
        // container's root takes new entries (G1); its Library, Caches and
        // Preferences are part one's rows (S2, S3); what the apps make there
        // is theirs. A data container's root is part one's root below it.
        case .deviceRoot:        .init(.eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm) // A1, A3
        case .containersFolder, .bundleParentFolder, .bundleApplicationsFolder, .dataParentFolder,
             .dataApplicationsFolder, .sharedParentFolder, .appGroupsFolder, .deviceOther:
                                 .init(.eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm) // A1, A3
        case .bundleContainer:   .init(.eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm) // A2, A3
        case .dataContainer:     .init(.eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm) // A3, S1, S3
        case .groupContainer:    .init(.allow, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm) // A3, G1
        case .containerMetadata: .init(.eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm, .eperm) // A3
        case .groupContent:      .init(.allow, .allow, .allow, .allow, .allow, .allow, .allow, .allow) // G1, W1, W3
        }
    }
}
