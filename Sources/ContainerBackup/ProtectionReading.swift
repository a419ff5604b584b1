import BackingStore
import Glibc
import SandboxPolicy
import SystemPackage

/// An entry's data protection class as the walk sees it in the backing
/// store (P1, P3, P9): stored on the entry (explicitly, or from its
/// creation when that differed from the default), else the container's
/// default, as the driver reads it.
public struct ProtectionReading: Sendable, Hashable {
    public var protection: ProtectionClass
    /// Set explicitly through `NSFileProtectionKey` (what `cp -a` carries).
    public var explicit: Bool

    /// The class stored on the file `fd` holds, if any.
    static func stored(_ fd: FileDescriptor) -> ProtectionReading? {
        if let value = ProtectionXattrs.stored(fd, ProtectionXattrs.explicitName),
           let protection = ProtectionClass(attributeValue: value) {
            return ProtectionReading(protection: protection, explicit: true)
        }
        if let value = ProtectionXattrs.stored(fd, ProtectionXattrs.atCreationName),
           let protection = ProtectionClass(attributeValue: value) {
            return ProtectionReading(protection: protection, explicit: false)
        }
        return nil
    }

    /// The container's default class (P4), stored on the backing root.
    static func containerDefault(_ rootFD: FileDescriptor) -> ProtectionClass {
        guard let value = ProtectionXattrs.stored(rootFD, ProtectionXattrs.containerDefaultName),
              let protection = ProtectionClass(attributeValue: value) else { return .containerDefault }
        return protection
    }

    /// The class of `name` (of `kind`) in `folder`.
    static func of(_ name: RawName, kind: EntryKind, zone: Zone, in folder: FileDescriptor, default: ProtectionClass) -> ProtectionReading {
        if zone == .bundle || zone == .bundleFolder { return ProtectionReading(protection: .none, explicit: false) }
        let fallback = ProtectionReading(protection: `default`, explicit: false)
        guard kind == .file || kind == .folder,
              let fd = try? name.withCName({ (cName) throws(Errno) in try Backing.openPath(in: folder, cName) }) else { return fallback }
        defer { Backing.close(fd) }
        return stored(fd) ?? fallback
    }
}
