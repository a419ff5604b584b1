import BackingStore
import ContainerFiles
import SystemPackage

/// The two "do not back up" extended attributes (rules X1, X2).
public enum BackupFlag: String, Sendable, Hashable, CaseIterable, Codable {
    /// NSURLIsExcludedFromBackupKey (iOS 5.1 and later): present means excluded.
    case excludeItem = "com.apple.metadata:com_apple_backup_excludeItem"
    /// The iOS 5.0.1 attribute: one byte, 1 means excluded.
    case mobileBackup = "com.apple.MobileBackup"

    /// The name a process uses through the mount.
    public var name: String { rawValue }

    /// The name it is stored under in the backing directory.
    public var backingName: String { XattrNames.backingName(for: rawValue) }

    /// The value iOS writes for `excludeItem`: the binary plist of the string
    /// `com.apple.backupd`, 61 bytes. One definition, shared with the
    /// library apps use to write it (ContainerFiles).
    public static let excludeItemValue: [UInt8] = ContainerFile.excludedFromBackupValue
}

/// What the flags on one entry say.
///
/// - `excludeItem` excludes whenever it is present, whatever its value
///   (empty included): presence is what iOS checks.
/// - `mobileBackup` excludes when its value is one byte other than 0, as the
///   `u_int8_t` of QA1719 is read in C (so the byte 0x01 that iOS writes, and
///   also the ASCII "1" that `setfattr -v 1` writes). The byte 0 means "back
///   it up" and is no finding. Any other value (empty, or longer than a
///   byte) is not what iOS 5.0.1 reads: it does not exclude, the report lists
///   it as a finding, and purge keeps the entry, erring on the side of data.
public struct FlagReading: Sendable, Hashable {
    /// The flags that exclude the entry, in `BackupFlag.allCases` order.
    public var excluding: [BackupFlag]
    /// A `mobileBackup` value that means nothing to iOS (see above).
    public var unrecognizedMobileBackup: [UInt8]?

    public static let none = FlagReading(excluding: [], unrecognizedMobileBackup: nil)

    /// Interprets the raw values of the two attributes (nil: absent).
    public init(excludeItem: [UInt8]?, mobileBackup: [UInt8]?) {
        var excluding: [BackupFlag] = []
        var unrecognized: [UInt8]?
        if excludeItem != nil { excluding.append(.excludeItem) }
        if let mobileBackup {
            if mobileBackup.count == 1 {
                if mobileBackup[0] != 0 { excluding.append(.mobileBackup) }
            } else {
                unrecognized = mobileBackup
            }
        }
        self.init(excluding: excluding, unrecognizedMobileBackup: unrecognized)
    }

    public init(excluding: [BackupFlag], unrecognizedMobileBackup: [UInt8]?) {
        self.excluding = excluding
        self.unrecognizedMobileBackup = unrecognizedMobileBackup
    }

    /// Whether a backup leaves the entry (and, for a folder, all below it) out.
    public var excludes: Bool { !excluding.isEmpty }

    /// Whether purge must keep the entry: it carries a flag that excludes,
    /// or a `mobileBackup` value nobody can be sure about.
    public var protectsFromPurge: Bool { excludes || unrecognizedMobileBackup != nil }
}

extension FlagReading {
    /// Reads the flags of the file a descriptor holds (an O_PATH one
    /// included). A file system without extended attributes has no flags.
    static func read(_ fd: FileDescriptor) throws(Errno) -> FlagReading {
        FlagReading(excludeItem: try value(fd, BackupFlag.excludeItem.backingName),
                    mobileBackup: try value(fd, BackupFlag.mobileBackup.backingName))
    }

    /// The value of one attribute, nil when it is absent. Values are small:
    /// a first read with a small buffer usually does; a longer value is
    /// measured and read again (it may change in between: then again).
    private static func value(_ fd: FileDescriptor, _ name: String) throws(Errno) -> [UInt8]? {
        var capacity = 64
        while true {
            var buffer = [UInt8](repeating: 0, count: capacity)
            do {
                let count = try withCString(name) { (cName) throws(Errno) in
                    try buffer.withUnsafeMutableBytes { raw in
                        Result { () throws(Errno) in try Backing.getxattr(fd, cName, into: raw) }
                    }.get()
                }
                return Array(buffer[0..<count])
            } catch .noData, .notSupported {
                return nil
            } catch .outOfRange {
                let size = try withCString(name) { (cName) throws(Errno) in
                    try Backing.getxattr(fd, cName, into: UnsafeMutableRawBufferPointer(start: nil, count: 0))
                }
                capacity = max(size, capacity * 2)
            }
        }
    }
}
