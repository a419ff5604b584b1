/// How extended attribute names seen through the mount map to names stored
/// in the backing file system (rule X4).
///
/// The kernel passes a name without a namespace, such as
/// `com.apple.MobileBackup`, to the driver as it is; ext4 accepts only
/// `user.`, `trusted.`, `security.` and `system.` names. So such names are
/// stored under a reserved prefix, and the mapping must stay one-to-one: a
/// `user.` name that happens to start with the reserved prefix is itself
/// escaped under it. Hence
///
/// | through the mount                    | in the backing store                               |
/// |--------------------------------------|----------------------------------------------------|
/// | `com.apple.MobileBackup`             | `user.appsandboxfs.com.apple.MobileBackup`         |
/// | `user.color`                         | `user.color`                                       |
/// | `user.appsandboxfs.x` (rare)         | `user.appsandboxfs.user.appsandboxfs.x`            |
/// | `trusted.x`, `security.x`, `system.x`| unchanged                                          |
///
/// Decoding: a stored name under the prefix is the rest after the prefix
/// (which is either a namespace-less name or an escaped `user.` name; the two
/// cannot collide because a namespace-less name never starts with `user.`).
public enum XattrNames {
    public static let reservedPrefix = "user.appsandboxfs."

    static let namespaces = ["user.", "trusted.", "security.", "system."]

    /// The namespace-less Apple names this product gives meaning to.
    public static let excludeFromBackup = "com.apple.metadata:com_apple_backup_excludeItem"
    public static let legacyMobileBackup = "com.apple.MobileBackup"

    /// Whether a mount-side name has one of the kernel's namespaces.
    public static func hasNamespace(_ name: String) -> Bool {
        hasNamespace(Array(name.utf8))
    }

    /// The backing-store name for a name seen through the mount.
    public static func backingName(for name: String) -> String {
        String(decoding: backingName(for: Array(name.utf8)), as: UTF8.self)
    }

    /// The name seen through the mount for a backing-store name.
    public static func mountName(for backing: String) -> String {
        String(decoding: mountName(for: Array(backing.utf8)), as: UTF8.self)
    }

    // Names are bytes: the kernel passes any bytes but "\0", and two names
    // that differ in bytes are two attributes even when neither is UTF-8
    // (as Strings both would become U+FFFD and share storage).

    public static func hasNamespace(_ name: [UInt8]) -> Bool {
        namespaces.contains { name.starts(with: $0.utf8) }
    }

    public static func backingName(for name: [UInt8]) -> [UInt8] {
        if name.starts(with: reservedPrefix.utf8) || !hasNamespace(name) { return Array(reservedPrefix.utf8) + name }
        return name
    }

    public static func mountName(for backing: [UInt8]) -> [UInt8] {
        guard backing.starts(with: reservedPrefix.utf8) else { return backing }
        return Array(backing.dropFirst(reservedPrefix.utf8.count))
    }
}
