// The checks of every request that changes the container or reaches a
// file's content, declared once, in the order they run: the one place that
// order lives. The driver walks a request's list in one combinator
// (`SandboxFileSystem.checked`, AppSandboxFS/SandboxFileSystem+Checks.swift)
// and then makes the backing call; no handler checks anything by hand.
//
// The order is part of the contract: when several rules refuse a request,
// the first in its list answers, and only that one logs a denial line.
//
// - The zone first (B2, I4, S1-S3, A rules: `SandboxPolicy.decide`): a
//   change in the bundle is EROFS and one in the Inbox EPERM with a
//   `Sandbox:` line, whatever its target (E1), its class (P6, P7) or the
//   free space (Q2).
// - The escape check (E1) next: a link made where links may be made, whose
//   target leads out, is EPERM with a `Sandbox:` line.
// - The Linux rules of attribute names (X6) after the zone: the bundle
//   refuses `setfattr -n system.x` with EROFS, like any other change.
// - Data protection (P6, P7, P2) after the sandbox's rules: an open for
//   writing of a class A file in the Inbox while locked is I4's EPERM with
//   a `Sandbox:` line, not a `DataProtection:` one; and it comes before any
//   change, so a refused write leaves the set-user-ID bits and the disk's
//   count alone.
// - The set-ID bits go before the data (W1: the kernel's file_remove_privs
//   runs before the write), and after every refusal.
// - The capacity last (Q2): it reserves space around the backing call
//   itself and measures what the call did, so it needs nothing else to
//   follow, and a request refused by a rule never gets ENOSPC.

/// A request of the kernel's that passes checks before its backing call.
/// Reads of names and attributes (lookup, getattr, readdir, getxattr,
/// listxattr) are not here: they are always allowed. readlink is judged
/// after its call (E2: the target must be read first), in its handler.
public enum CheckedRequest: Sendable, CaseIterable, Hashable {
    /// create, O_TMPFILE, and mknod of a regular file: a new file with the class of its folder (P3).
    case create
    /// mknod of a FIFO, socket or device: no content, no class.
    case mknod
    case mkdir
    case symlink
    case link
    case unlink
    case rmdir
    case rename
    /// open(2) with O_RDONLY and no O_TRUNC: reads are not judged by zone.
    case openForReading
    /// open(2) for writing, without O_TRUNC.
    case openForWriting
    /// open(2) with O_TRUNC, in any mode (Linux truncates with O_RDONLY too).
    case openTruncating
    case read
    case write
    case fsync
    case fallocate
    case copyFileRange
    /// setattr of mode, owner or times (no size).
    case setAttributes
    /// setattr of the size by path: truncate(2).
    case truncate
    /// setattr of the size through an open handle: ftruncate(2).
    case ftruncate
    /// The kernel writing back times it kept itself (writeback cache) to a
    /// file with no name left: no process asked, and it changes nothing.
    case flushTimes
    /// setxattr of an attribute other than the class.
    case setxattr
    case removexattr
    /// setxattr of `NSFileProtectionKey`. The class change judges itself
    /// beyond this list (`setProtectionClass`): P1 (a fixed class), P2
    /// (the current class), F1 (a nameless file is created in the new class).
    case setProtectionClass
    /// removexattr of `NSFileProtectionKey` (P1, P2 as above).
    case removeProtectionClass
}

/// One check of a request.
public enum Check: Sendable, Hashable {
    /// The zone's rule: `SandboxPolicy.decide` of the request's
    /// `FileOperation` (RuleTable.swift). EROFS or EPERM, a `Sandbox:` line.
    case zone
    /// E1: the target of a new symbolic link stays inside (`EscapeCheck`).
    /// EPERM, a `Sandbox:` line.
    case escape
    /// X6 and Linux's own rules for an attribute's name: `system.` names
    /// are ENOTSUP (never ENOSYS), `trusted.` and `security.` names root's
    /// only (EPERM), and a symbolic link holds none.
    case attributeName
    /// P6, P7 (P2 for a class change): `ProtectionPolicy.allows` for this
    /// operation on the class of `whose`, in the key state now. EPERM, a
    /// `DataProtection:` line (P8).
    case protection(ProtectionOperation, of: ProtectedEntry)
    /// W1: a write by a caller other than root clears the set-user-ID and
    /// set-group-ID bits when the kernel leaves that to the driver.
    case clearSetIDBits
    /// Q2: the space the call may need, reserved around it. ENOSPC.
    case capacity(Reservation)
}

/// Whose class data protection judges.
public enum ProtectedEntry: Sendable, Hashable {
    /// The folder a new file is made in: the file gets its class (P3).
    case folder
    /// The entry the request names.
    case entry
    /// The open handle the request comes through (its class at open).
    case handle
    /// copy_file_range's source handle, read from.
    case sourceHandle
}

/// What a change reserves of the capacity (`mount --capacity`, Q2).
public enum Reservation: Sendable, Hashable {
    /// A new name: one block of its folder, or of the file for an attribute.
    case newEntry
    /// A name goes: its file's space is freed, or kept until its last close.
    case removal
    /// A new entry in another folder, a name that may be replaced
    /// (`DiskSpace.renameMayAddEntry`).
    case rename
    /// The blocks the written range may allocate, or a prefix that fits
    /// (`DiskSpace.writable`).
    case write
    /// The whole range of a fallocate that may allocate, all or nothing
    /// (`DiskSpace.fallocateMayAllocate`).
    case allocate
    /// Nothing reserved; the allocation of the file is measured after the call.
    case measure
}

extension CheckedRequest {
    /// THE LIST: the checks of this request, in order. Constant arrays, made
    /// once: a request walks its list and allocates nothing.
    @inline(__always)
    public var checks: [Check] {
        switch self {
        case .create: RequestChecks.create
        case .mknod: RequestChecks.mknod
        case .mkdir: RequestChecks.mkdir
        case .symlink: RequestChecks.symlink
        case .link: RequestChecks.link
        case .unlink: RequestChecks.unlink
        case .rmdir: RequestChecks.rmdir
        case .rename: RequestChecks.rename
        case .openForReading: RequestChecks.openForReading
        case .openForWriting: RequestChecks.openForWriting
        case .openTruncating: RequestChecks.openTruncating
        case .read: RequestChecks.read
        case .write: RequestChecks.write
        case .fsync: RequestChecks.fsync
        case .fallocate: RequestChecks.fallocate
        case .copyFileRange: RequestChecks.copyFileRange
        case .setAttributes: RequestChecks.setAttributes
        case .truncate: RequestChecks.truncate
        case .ftruncate: RequestChecks.ftruncate
        case .flushTimes: RequestChecks.flushTimes
        case .setxattr: RequestChecks.setxattr
        case .removexattr: RequestChecks.removexattr
        case .setProtectionClass: RequestChecks.setProtectionClass
        case .removeProtectionClass: RequestChecks.removeProtectionClass
        }
    }
}

extension CheckedRequest {
    /// What the request reserves of the capacity around its call: its last
    /// check's, if that is the capacity.
    @inline(__always)
    public var reservation: Reservation? {
        if case .capacity(let reservation) = checks.last { return reservation }
        return nil
    }
}

/// The lists, a constant each.
enum RequestChecks {
    // The comment of each: the rules its checks apply, in their order.
    static let create: [Check] = [.zone, .protection(.create, of: .folder), .capacity(.newEntry)]           // B2 I4 S1 P6 P7 Q2
    static let mknod: [Check] = [.zone, .capacity(.newEntry)]                                               // B2 I4 S1 Q2
    static let mkdir: [Check] = [.zone, .capacity(.newEntry)]                                               // B2 I4 S1 Q2
    static let symlink: [Check] = [.zone, .escape, .capacity(.newEntry)]                                    // B2 I4 S1 E1 Q2
    static let link: [Check] = [.zone, .capacity(.newEntry)]                                                // B2 I4 S1 Q2
    static let unlink: [Check] = [.zone, .capacity(.removal)]                                               // B2 I2 S2 Q2
    static let rmdir: [Check] = [.zone, .capacity(.removal)]                                                // B2 I2 S2 Q2
    static let rename: [Check] = [.zone, .capacity(.rename)]                                                // B2 I3 I4 S1 S2 Q2
    static let openForReading: [Check] = [.protection(.open, of: .entry)]                                   // P6 P7
    static let openForWriting: [Check] = [.zone, .protection(.open, of: .entry)]                            // B2 I4 P6 P7
    static let openTruncating: [Check] = [.zone, .protection(.open, of: .entry), .capacity(.measure)]       // B2 I4 P6 P7 Q2
    static let read: [Check] = [.protection(.descriptorIO, of: .handle)]                                    // P6
    static let write: [Check] = [.zone, .protection(.descriptorIO, of: .handle), .clearSetIDBits,
                                 .capacity(.write)]                                                         // B2 I4 P6 W1 Q2
    static let fsync: [Check] = [.protection(.descriptorIO, of: .handle)]                                   // P6
    static let fallocate: [Check] = [.zone, .protection(.descriptorIO, of: .handle), .clearSetIDBits,
                                     .capacity(.allocate)]                                                  // B2 I4 P6 W1 Q2
    static let copyFileRange: [Check] = [.zone, .protection(.descriptorIO, of: .sourceHandle),
                                         .protection(.descriptorIO, of: .handle), .clearSetIDBits,
                                         .capacity(.write)]                                                 // B2 I4 P6 W1 Q2
    static let setAttributes: [Check] = [.zone]                                                             // B2 I4 S3
    static let truncate: [Check] = [.zone, .protection(.truncate, of: .entry), .capacity(.measure)]         // B2 I4 P6 Q2
    static let ftruncate: [Check] = [.zone, .protection(.descriptorIO, of: .handle), .capacity(.measure)]   // B2 I4 P6 Q2
    static let flushTimes: [Check] = []
    static let setxattr: [Check] = [.zone, .attributeName, .capacity(.newEntry)]                            // B2 I4 X6 Q2
    static let removexattr: [Check] = [.zone, .attributeName, .capacity(.measure)]                          // B2 I4 X6 Q2
    static let setProtectionClass: [Check] = [.zone, .attributeName]                                        // B2 I4 X6, then P1 P2 F1
    static let removeProtectionClass: [Check] = [.zone, .attributeName]                                     // B2 I4 X6, then P1 P2
}
