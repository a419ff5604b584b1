import Foundation
import SandboxPolicy

/// The calls of an iOS app's storage that Foundation on Linux accepts and
/// ignores, with the meaning they have on a device: a file's "do not back
/// up" flag and its data protection class.
///
/// On iOS and macOS each call is Foundation's own (`URLResourceValues.
/// isExcludedFromBackup`, `FileAttributeKey.protectionKey`,
/// `Data.write(to:options:)`). On Linux each reads or writes the extended
/// attribute iOS keeps it in, which an appsandboxfs container stores, checks
/// and reports on (`backup-report`, `backup`, `purge`; the protection rules).
/// Errors are Foundation's: a `CocoaError` with the path and the POSIX error
/// under it, 513 (`fileWriteNoPermission`) for a sandbox denial (EPERM), as
/// on a device.
public enum ContainerFile {
    /// The extended attribute behind `URLResourceValues.isExcludedFromBackup`
    /// (iOS 5.1 and later): present means excluded.
    public static let excludedFromBackupAttribute = "com.apple.metadata:com_apple_backup_excludeItem"

    /// The value iOS writes in it: the binary property list of the string
    /// `com.apple.backupd`, 61 bytes.
    public static let excludedFromBackupValue: [UInt8] = [
        0x62, 0x70, 0x6c, 0x69, 0x73, 0x74, 0x30, 0x30, 0x5f, 0x10, 0x11, 0x63, 0x6f, 0x6d, 0x2e, 0x61,
        0x70, 0x70, 0x6c, 0x65, 0x2e, 0x62, 0x61, 0x63, 0x6b, 0x75, 0x70, 0x64, 0x08, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1c,
    ]

    /// The extended attribute that holds a file's protection class in a
    /// container: the class's raw value (`NSFileProtectionComplete` ...),
    /// without a terminating NUL.
    public static let protectionAttribute = ProtectionClass.attributeName

    // MARK: Exclude from backup

    /// Whether the file or folder itself is marked "do not back up"
    /// (`URLResourceValues.isExcludedFromBackup`). A folder's mark covers
    /// what lies below it, but this answers for `url` alone, as iOS does.
    public static func isExcludedFromBackup(_ url: URL) throws -> Bool {
        #if canImport(Darwin)
        return try url.resourceValues(forKeys: [.isExcludedFromBackupKey]).isExcludedFromBackup ?? false
        #else
        return try ExtendedAttributes.value(excludedFromBackupAttribute, of: url) != nil
        #endif
    }

    /// Marks the file or folder "do not back up", or removes the mark
    /// (`URL.setResourceValues` with `isExcludedFromBackup`). Apple advises
    /// marking a folder of the app's own (Library/Application Support/
    /// Downloads, say) rather than each file, and never a system folder.
    /// A "safe save" that replaces the file loses the mark: mark it again.
    public static func setExcludedFromBackup(_ excluded: Bool, for url: URL) throws {
        #if canImport(Darwin)
        var values = URLResourceValues()
        values.isExcludedFromBackup = excluded
        var target = url
        try target.setResourceValues(values)
        #else
        if excluded {
            try ExtendedAttributes.set(excludedFromBackupAttribute, to: excludedFromBackupValue, of: url)
        } else {
            try ExtendedAttributes.remove(excludedFromBackupAttribute, of: url)
        }
        #endif
    }

    // MARK: Data protection

    /// The file's or folder's protection class
    /// (`FileManager.attributesOfItem(atPath:)[.protectionKey]`); nil where
    /// the file system keeps none (outside a container on Linux, on most
    /// Macs).
    @available(macOS 11.0, *)
    public static func protection(of url: URL) throws -> FileProtectionType? {
        #if canImport(Darwin)
        return try FileManager.default.attributesOfItem(atPath: url.path)[.protectionKey] as? FileProtectionType
        #else
        guard let value = try ExtendedAttributes.value(protectionAttribute, of: url) else { return nil }
        return FileProtectionType(rawValue: String(decoding: value, as: UTF8.self))
        #endif
    }

    /// Sets the file's or folder's protection class
    /// (`FileManager.setAttributes([.protectionKey: protection], ofItemAtPath:)`).
    /// A folder's class is the one files created in it later get.
    @available(macOS 11.0, *)
    public static func setProtection(_ protection: FileProtectionType, for url: URL) throws {
        #if canImport(Darwin)
        try FileManager.default.setAttributes([.protectionKey: protection], ofItemAtPath: url.path)
        #else
        try ExtendedAttributes.set(protectionAttribute, to: Array(protection.rawValue.utf8), of: url)
        #endif
    }

    /// `data.write(to: url, options: options)`, where a protection option in
    /// `options` (`.completeFileProtection`, `.completeFileProtectionUnlessOpen`,
    /// `.completeFileProtectionUntilFirstUserAuthentication`,
    /// `.noFileProtection`) gives the file that class, as on a device.
    /// On Linux a new file has the class from its first moment (made
    /// unnamed, given the class, written, then named), so a create the
    /// class forbids while the device is locked fails with no entry left
    /// (P6, P7); an existing file written in place (no `.atomic`) gets the
    /// class once the data is written.
    public static func write(_ data: Data, to url: URL, options: Data.WritingOptions = []) throws {
        #if canImport(Darwin)
        try data.write(to: url, options: options)
        #else
        let protection = options.intersection(.fileProtectionMask)
        let classes: [(Data.WritingOptions, FileProtectionType)] = [
            (.completeFileProtection, .complete),
            (.completeFileProtectionUnlessOpen, .completeUnlessOpen),
            (.completeFileProtectionUntilFirstUserAuthentication, .completeUntilFirstUserAuthentication),
            (.noFileProtection, .none),
        ]
        let match = classes.first { $0.0 == protection }
        guard protection.isEmpty || match != nil else {
            throw CocoaError(.fileWriteUnknown, userInfo: [
                NSFilePathErrorKey: url.path,
                NSLocalizedDescriptionKey: "\(url.path): protection option 0x\(String(protection.rawValue, radix: 16)) has no class a container knows",
            ])
        }
        let rest = options.subtracting(.fileProtectionMask)
        guard let match else { return try data.write(to: url, options: rest) }
        #if os(Linux)
        let exists = FileManager.default.fileExists(atPath: url.path)
        if options.contains(.withoutOverwriting) || options.contains(.atomic) || !exists {
            let replacing = !options.contains(.withoutOverwriting) && (options.contains(.atomic) || exists)
            if try ProtectedCreate.write(data, to: url, protection: match.1, replacing: replacing) { return }
        }
        #endif
        try data.write(to: url, options: rest)
        try setProtection(match.1, for: url)
        #endif
    }
}
