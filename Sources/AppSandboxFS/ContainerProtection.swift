import BackingStore
import CLinux
import Glibc
import POSIXHelpers
import SandboxPolicy

/// The container's default protection class (P4), kept on the backing
/// root as a `user.` attribute (ProtectionXattrs.containerDefaultName), so
/// every mount and every tool sees it and `backup`/`restore` carry it.
extension Container {
    /// The stored default, or `NSFileProtectionCompleteUntilFirstUserAuthentication`
    /// when `init` was not given one (or the container predates classes).
    public func defaultProtectionClass() -> ProtectionClass {
        guard let value = ProtectionXattrs.stored(path: backing, ProtectionXattrs.containerDefaultName),
              let stored = ProtectionClass(attributeValue: value) else { return .containerDefault }
        return stored
    }

    /// Records the default (`init --protection`).
    public func setDefaultProtectionClass(_ protection: ProtectionClass) throws {
        let value = Array(protection.rawValue.utf8)
        guard asfs_lsetxattr(backing, ProtectionXattrs.containerDefaultName, value, value.count, 0) == 0 else {
            throw ContainerError("\(backing): cannot record the default protection class: \(errorText(errno))")
        }
    }
}
