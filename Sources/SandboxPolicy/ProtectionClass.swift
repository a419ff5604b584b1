// Data protection (contract part two, P1-P9): the four classes of iOS's
// FileProtectionType, the device states of a mount, and what an operation
// needs of a class's key. The decisions themselves are one table,
// ProtectionTable.swift; nothing here does I/O.

/// One of Foundation's four FileProtectionType raw values (P1). The raw
/// value is what the `NSFileProtectionKey` extended attribute holds (P2).
public enum ProtectionClass: String, Sendable, CaseIterable, Hashable {
    /// Class A: unavailable shortly after lock (the grace) and before first unlock.
    case complete = "NSFileProtectionComplete"
    /// Class B: existing files cannot be opened while locked; open ones stay usable.
    case completeUnlessOpen = "NSFileProtectionCompleteUnlessOpen"
    /// Class C: unavailable only before the first unlock after boot (P4's default).
    case completeUntilFirstUserAuthentication = "NSFileProtectionCompleteUntilFirstUserAuthentication"
    /// Class D: always available.
    case none = "NSFileProtectionNone"

    /// The name of the extended attribute that reads and sets the class (P2).
    public static let attributeName = "NSFileProtectionKey"

    /// A container's default class when `init` was given none (P4): the one
    /// every App Store app has had since iOS 7.
    public static let containerDefault = ProtectionClass.completeUntilFirstUserAuthentication

    /// The class an attribute value names: the exact raw value, no
    /// terminating NUL (P2); nil for anything else (EINVAL).
    public init?(attributeValue bytes: some Collection<UInt8>) {
        self.init(rawValue: String(decoding: bytes, as: UTF8.self))
        guard Array(rawValue.utf8).elementsEqual(bytes) else { return nil }
    }

    /// "one of NSFileProtectionComplete, ...", for error messages.
    public static var validNames: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// A mount's device state (P5).
public enum DeviceState: String, Sendable, CaseIterable, Hashable {
    case unlocked
    case locked
    case beforeFirstUnlock = "before-first-unlock"
}

/// The device state as an operation sees it: `locked` split in two,
/// because class A keys survive a lock for the grace period (P6).
public enum KeyState: Sendable, CaseIterable, Hashable {
    case unlocked
    /// Locked, and the grace after `lock` has not run out yet.
    case lockedInGrace
    case locked
    case beforeFirstUnlock

    public var deviceState: DeviceState {
        switch self {
        case .unlocked: .unlocked
        case .lockedInGrace, .locked: .locked
        case .beforeFirstUnlock: .beforeFirstUnlock
        }
    }
}

/// What an operation asks of a file's class key. Everything else (lookup,
/// stat, readdir, rename, unlink, mkdir, rmdir, symlink, link, chmod,
/// chown, utimens, getxattr, listxattr, lseek) is metadata and never asks
/// (P6, P7).
public enum ProtectionOperation: Sendable, CaseIterable, Hashable {
    /// Opening an existing file, in any mode (and O_TRUNC with it).
    case open
    /// Creating a regular file whose class would be this one (create,
    /// mknod of a regular file). The creating descriptor is the one
    /// exception to `open` for class B (P6).
    case create
    /// Read, write, fsync, fallocate, copy_file_range or ftruncate through
    /// a descriptor opened earlier.
    case descriptorIO
    /// truncate(2) by path: no descriptor, so it is an open in disguise.
    case truncate
    /// setxattr or removexattr of `NSFileProtectionKey` (P2: refused while
    /// the entry's current class is unavailable).
    case setClass

    /// The operation name of the `DataProtection:` denial line (P8), as
    /// part one names the same call: an open for writing or truncating, and
    /// a write, fsync, fallocate or ftruncate through a descriptor, are
    /// `file-write-data`; an open for reading and a read, `file-read-data`.
    public func logName(writing: Bool) -> String {
        switch self {
        case .open, .descriptorIO: writing ? "file-write-data" : "file-read-data"
        case .create: "file-write-create"
        case .truncate: "file-write-data"
        case .setClass: "file-write-xattr"
        }
    }
}
