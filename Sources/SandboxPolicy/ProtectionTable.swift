// Data protection rules P6 and P7 as one table: for each class, a row per
// operation, a column per key state. `ProtectionPolicy.allows` only looks a
// cell up; the file system never decides on its own.

/// The decisions of data protection.
public enum ProtectionPolicy {
    /// Whether `operation` on an entry of class `protection` may go ahead in
    /// `state`. A refusal is EPERM and a `DataProtection:` denial line (P8).
    @inline(__always)
    public static func allows(_ operation: ProtectionOperation, _ protection: ProtectionClass, in state: KeyState) -> Bool {
        ClassRules.of(protection).row(operation).allows(state)
    }

    /// P1: the container root, Documents, Library and tmp themselves have
    /// the container's default class, always: it is what their entries
    /// start from (P3). Setting or removing a class on them is EPERM, and
    /// their class reads as the default whatever the backing folder holds.
    public static func classIsFixed(in zone: Zone) -> Bool {
        switch zone {
        case .root, .documentsFolder, .libraryFolder, .tmpFolder: true
        // On a device, a data or group container's root (A6, G1).
        case .dataContainer, .groupContainer: true
        default: false
        }
    }
}

/// A row: allowed (true) or EPERM (false) in each key state.
struct KeyStateCells: Sendable {
    let unlocked: Bool
    let lockedInGrace: Bool
    let locked: Bool
    let beforeFirstUnlock: Bool

    init(_ unlocked: Bool, _ lockedInGrace: Bool, _ locked: Bool, _ beforeFirstUnlock: Bool) {
        (self.unlocked, self.lockedInGrace, self.locked, self.beforeFirstUnlock) =
            (unlocked, lockedInGrace, locked, beforeFirstUnlock)
    }

    func allows(_ state: KeyState) -> Bool {
        switch state {
        case .unlocked: unlocked
        case .lockedInGrace: lockedInGrace
        case .locked: locked
        case .beforeFirstUnlock: beforeFirstUnlock
        }
    }
}

/// The rows of one class.
struct ClassRules: Sendable {
    let open: KeyStateCells
    let create: KeyStateCells
    let descriptorIO: KeyStateCells
    let truncate: KeyStateCells
    let setClass: KeyStateCells

    func row(_ operation: ProtectionOperation) -> KeyStateCells {
        switch operation {
        case .open: open
        case .create: create
        case .descriptorIO: descriptorIO
        case .truncate: truncate
        case .setClass: setClass
        }
    }
}

private let Y = true
private let N = false

extension ClassRules {
    /// THE TABLE. Columns: unlocked, locked within the grace, locked,
    /// before first unlock.
    ///
    /// Decisions where the contract is silent:
    /// - Class B's grace: P6 gives the grace to class A only, so a class B
    ///   file cannot be opened from the moment of `lock`.
    /// - Descriptors before first unlock: on a device `reboot` ends every
    ///   process, so no descriptor survives it. Here processes do; class A
    ///   descriptors stop working (its key is gone, as after the grace), those
    ///   of B and C keep working (P7 speaks of opening and creating only, and
    ///   they keep FUSE passthrough, which cannot be revoked).
    /// - truncate by path is an open: refused where `open` is (P6 names it for A).
    /// - Setting a class is refused where the entry's current class cannot be
    ///   opened (P2), folders included.
    static func of(_ protection: ProtectionClass) -> ClassRules {
        switch protection {
        //                                     unlocked grace locked BFU        rules
        case .complete:
            ClassRules(open:         .init(Y, Y, N, N),                          // P6 A, P7
                       create:       .init(Y, Y, N, N),                          // P6 A, P7
                       descriptorIO: .init(Y, Y, N, N),                          // P6 A (after the grace)
                       truncate:     .init(Y, Y, N, N),                          // P6 A
                       setClass:     .init(Y, Y, N, N))                          // P2
        case .completeUnlessOpen:
            ClassRules(open:         .init(Y, N, N, N),                          // P6 B, P7
                       create:       .init(Y, Y, Y, N),                          // P6 B, P7
                       descriptorIO: .init(Y, Y, Y, Y),                          // P6 B
                       truncate:     .init(Y, N, N, N),                          // P6 B
                       setClass:     .init(Y, N, N, N))                          // P2
        case .completeUntilFirstUserAuthentication:
            ClassRules(open:         .init(Y, Y, Y, N),                          // P6 C, P7
                       create:       .init(Y, Y, Y, N),                          // P7
                       descriptorIO: .init(Y, Y, Y, Y),                          // P6 C
                       truncate:     .init(Y, Y, Y, N),                          // P7
                       setClass:     .init(Y, Y, Y, N))                          // P2
        case .none:
            ClassRules(open:         .init(Y, Y, Y, Y),                          // P6 D, P7
                       create:       .init(Y, Y, Y, Y),
                       descriptorIO: .init(Y, Y, Y, Y),
                       truncate:     .init(Y, Y, Y, Y),
                       setClass:     .init(Y, Y, Y, Y))
        }
    }
}
