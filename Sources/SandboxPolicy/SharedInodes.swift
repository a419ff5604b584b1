/// A file with several names (hard links) is one inode, and FUSE names it
/// to the driver by one node id whichever name the caller used. When the
/// names lie in zones whose rules differ for a file (a link between the
/// Inbox and Documents, or out of the bundle, made in the backing directory
/// or brought back by `restore`), one node cannot be judged right for both:
/// the driver gives each such name a node of its own. This is where "differ"
/// is decided, from the rule table itself.
extension SandboxPolicy {
    /// Every operation on an existing file whose decision depends on the
    /// zone the file lies in.
    static let entryProbes: [@Sendable (Zone) -> FileOperation] = [
        { .open($0, write: true, truncate: false) },
        { .open($0, write: false, truncate: true) },
        { .setAttributes($0, .mode) },
        { .setAttributes($0, .owner) },
        { .setAttributes($0, .size) },
        { .setAttributes($0, .times) },
        { .write($0) },
        { .allocate($0) },
        { .setExtendedAttribute($0) },
        { .removeExtendedAttribute($0) },
        { .unlink(entry: $0) },
        { .link(source: $0, into: .documents) },
        { .rename(entry: $0, into: .documents, replacing: nil) },
        { .exchange(first: $0, second: .documents) },
    ]

    /// Whether a file (not a folder) is judged the same for every operation
    /// whether it lies in `a` or in `b`.
    public static func sameRulesForFiles(_ a: Zone, _ b: Zone) -> Bool {
        sameRulesTable[Int(a.rawValue) * Zone.allCases.count + Int(b.rawValue)]
    }

    /// `sameRulesForFiles` for every pair, worked out once.
    private static let sameRulesTable: [Bool] = Zone.allCases.flatMap { a in
        Zone.allCases.map { b in a == b || entryProbes.allSatisfy { probe in decide(probe(a)) == decide(probe(b)) } }
    }
}
