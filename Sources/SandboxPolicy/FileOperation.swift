/// What a setattr changes. The driver maps FUSE's `to_set` bits onto these;
/// each one is judged by its own column of the rule table.
public struct AttributeChange: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// chmod
    public static let mode = AttributeChange(rawValue: 1 << 0)
    /// chown, chgrp
    public static let owner = AttributeChange(rawValue: 1 << 1)
    /// truncate, ftruncate
    public static let size = AttributeChange(rawValue: 1 << 2)
    /// utimens, touch (atime and/or mtime)
    public static let times = AttributeChange(rawValue: 1 << 3)
}

/// An operation the driver is about to perform, described by the zones involved.
///
/// `entry` is the zone of the thing acted on; `in`/`into` is the zone of the
/// folder that holds it or receives it. Reads are not here: they are always
/// allowed, so the driver does not ask.
public enum FileOperation: Sendable, Hashable {
    /// Create or mknod a file, fifo, socket or device in a folder of this zone.
    case create(in: Zone)
    case makeDirectory(in: Zone)
    /// The target's escape check (E1) is separate: `EscapeCheck`.
    case makeSymlink(in: Zone)
    /// Hard link: `source` is the zone of the existing file, `into` the zone
    /// of the destination folder.
    case link(source: Zone, into: Zone)
    case unlink(entry: Zone)
    case removeDirectory(entry: Zone)
    /// `entry` is the zone of the moved thing at its source position, `into`
    /// the zone of the destination folder, `replacing` the zone of the
    /// destination entry when one exists (plain rename overwrites it).
    case rename(entry: Zone, into: Zone, replacing: Zone?)
    /// RENAME_WHITEOUT: a rename that also leaves a new entry (a whiteout
    /// device) at the old name, in the folder of zone `from`.
    case renameLeavingWhiteout(entry: Zone, from: Zone, into: Zone, replacing: Zone?)
    /// RENAME_EXCHANGE: the zones of both entries; each moves into the other's folder.
    case exchange(first: Zone, second: Zone)
    /// O_WRONLY or O_RDWR give `write`; O_TRUNC gives `truncate` (Linux
    /// truncates even with O_RDONLY).
    case open(Zone, write: Bool, truncate: Bool)
    case setAttributes(Zone, AttributeChange)
    case write(Zone)
    /// fallocate
    case allocate(Zone)
    case setExtendedAttribute(Zone)
    case removeExtendedAttribute(Zone)
}
