// SandboxPolicy: what an iOS app may change in its own container.
//
// The model, in four steps:
//
// 1. Every path in the container lies in a `Zone` (the bundle, the Inbox,
//    Documents itself, something below Library/Caches, ...). `ContainerLayout`
//    derives it from names, one component at a time.
// 2. Before each change, the driver describes it as a `FileOperation` in terms
//    of zones: "rename an entry of zone inbox into a folder of zone
//    documentsFolder", never in terms of paths or file descriptors.
// 3. `SandboxPolicy.decide` answers with a `Verdict`: allow, or deny with the
//    errno to return (EROFS for the bundle, EPERM for a sandbox denial) and the
//    operation name for the iOS-style denial log line.
// 4. The answers come from one table, `ZoneRules.of(_:)` in RuleTable.swift:
//    a row per zone, a column per kind of change. `decide` only picks the
//    cells an operation touches and keeps the most severe.
//
// Symbolic link targets are judged apart by `EscapeCheck` (E1, E2), which
// walks them as the kernel will, reading links through the driver.
// Reads are never judged: they are always allowed.
//
// Which of these checks a request passes, with data protection (P6, P7) and
// the capacity (Q2), and in which order, is declared once per request:
// `CheckedRequest.checks` (RequestChecks.swift).
//
// No I/O and no FUSE here, so every cell of the table is unit-tested.

/// The sandbox's decisions.
public enum SandboxPolicy {
    /// Whether `operation` may go ahead. Called before every change the
    /// driver makes, so it allocates nothing: a few table cells and a `max`.
    public static func decide(_ operation: FileOperation) -> Verdict {
        switch operation {
        case .create(let folder), .makeDirectory(let folder), .makeSymlink(let folder):
            return verdict(ZoneRules.of(folder).add, .fileWriteCreate)

        case .link(let source, let folder):
            return verdict(max(ZoneRules.of(source).link, ZoneRules.of(folder).add), .fileLink)

        case .unlink(let entry), .removeDirectory(let entry):
            return verdict(ZoneRules.of(entry).remove, .fileWriteUnlink)

        case .rename(let entry, let folder, let replaced):
            return verdict(renaming(entry, into: folder, replacing: replaced), .fileWriteRename)

        case .renameLeavingWhiteout(let entry, let from, let folder, let replaced):
            // A rename, and a name (the whiteout) added to the folder it leaves.
            return verdict(max(renaming(entry, into: folder, replacing: replaced), ZoneRules.of(from).add),
                           .fileWriteRename)

        case .exchange(let first, let second):
            // Both entries leave their places and each enters the other's
            // folder. Only the entries' zones are known, but the table makes
            // that enough: for a content zone (documents, inbox, bundle, ...)
            // its folder zone and itself have the same `add` cell, and a system
            // folder's own `remove` cell already denies. The one guess is
            // rootOther: an entry at the root and one below it share that zone;
            // both are taken as below it, so exchanging a root entry such as
            // SystemData with a writable entry is allowed. No name is added to
            // the root that way, which is what S1 guards.
            let outcome = max(
                max(ZoneRules.of(first).remove, ZoneRules.of(second).remove),
                max(ZoneRules.of(first).add, ZoneRules.of(second).add))
            return verdict(outcome, .fileWriteRename)

        case .open(let zone, let write, let truncate):
            guard write || truncate else { return .allow }
            return verdict(ZoneRules.of(zone).data, .fileWriteData)

        case .write(let zone), .allocate(let zone):
            return verdict(ZoneRules.of(zone).data, .fileWriteData)

        case .setAttributes(let zone, let change):
            return decideAttributes(change, of: ZoneRules.of(zone))

        case .setExtendedAttribute(let zone), .removeExtendedAttribute(let zone):
            return verdict(ZoneRules.of(zone).xattr, .fileWriteXattr)
        }
    }

    /// A setattr may change several attributes at once; each is judged by
    /// its own column and the most severe wins. Among equally severe ones the
    /// first in the order mode, owner, size, times names the operation logged.
    private static func decideAttributes(_ change: AttributeChange, of rules: ZoneRules) -> Verdict {
        var worst = Outcome.allow
        var operation = SandboxOperation.fileWriteData
        func consider(_ attribute: AttributeChange, _ outcome: Outcome, _ named: SandboxOperation) {
            if change.contains(attribute) && outcome > worst {
                (worst, operation) = (outcome, named)
            }
        }
        consider(.mode, rules.mode, .fileWriteMode)
        consider(.owner, rules.owner, .fileWriteOwner)
        consider(.size, rules.data, .fileWriteData)
        consider(.times, rules.times, .fileWriteTimes)
        return verdict(worst, operation)
    }

    /// The entry leaves its place, the folder gains a name, and a replaced
    /// entry loses its name.
    private static func renaming(_ entry: Zone, into folder: Zone, replacing replaced: Zone?) -> Outcome {
        var outcome = max(ZoneRules.of(entry).remove, ZoneRules.of(folder).add)
        if let replaced {
            outcome = max(outcome, ZoneRules.of(replaced).remove)
        }
        return outcome
    }

    private static func verdict(_ outcome: Outcome, _ operation: SandboxOperation) -> Verdict {
        switch outcome {
        case .allow: .allow
        case .eperm: .deny(.notPermitted, operation)
        case .erofs: .deny(.readOnly, operation)
        }
    }
}
