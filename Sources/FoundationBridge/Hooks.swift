// The hooks: each has the exact calling convention of the Foundation
// method it stands in for (an extension method of the same type with the
// same parameters), and a fixed symbol name that CFoundationBridge takes
// the address of. Each acts only for a path in a container and only on its
// own key or option; it hands everything else to Foundation's own method
// (`Original`), so every other key and option works as before, and a call
// outside a container is Foundation's own, unchanged.
#if os(Linux)
internal import CFoundationBridge
import ContainerFiles
import Foundation

/// Whether `path` lies in a mounted container (docs/foundation.md).
func inContainer(_ path: String) -> Bool {
    asfs_bridge_in_container(path) == 1
}

func inContainer(_ url: URL) -> Bool {
    url.isFileURL && inContainer(url.path)
}

/// The Bool a resource value stands for (Bool, NSNumber); nil for none.
private func flag(_ value: Any?) -> Bool? {
    switch value {
    case let value as Bool: value
    case let value as NSNumber: value.boolValue
    default: nil
    }
}

extension NSURL {
    /// The file URL when it names an entry in a container.
    private var fileURL: URL? {
        guard isFileURL, let path, inContainer(path) else { return nil }
        return URL(fileURLWithPath: path)
    }

    @usableFromInline @_silgen_name("asfs_hook_nsurl_setResourceValue")
    func asfsSetResourceValue(_ value: Any?, forKey key: URLResourceKey) throws {
        guard key == .isExcludedFromBackupKey, let url = fileURL else {
            return try Original.nsurlSetResourceValue(self)(value, key)
        }
        try ContainerFile.setExcludedFromBackup(flag(value) ?? false, for: url)
    }

    @usableFromInline @_silgen_name("asfs_hook_nsurl_setResourceValues")
    func asfsSetResourceValues(_ keyedValues: [URLResourceKey: Any]) throws {
        guard let excluded = keyedValues[.isExcludedFromBackupKey], let url = fileURL else {
            return try Original.nsurlSetResourceValues(self)(keyedValues)
        }
        try ContainerFile.setExcludedFromBackup(flag(excluded) ?? false, for: url)
        var rest = keyedValues
        rest[.isExcludedFromBackupKey] = nil
        try Original.nsurlSetResourceValues(self)(rest)
    }

    @usableFromInline @_silgen_name("asfs_hook_nsurl_resourceValues")
    func asfsResourceValues(forKeys keys: [URLResourceKey]) throws -> [URLResourceKey: Any] {
        let answered: Set<URLResourceKey> = [
            .isExcludedFromBackupKey, .volumeAvailableCapacityForImportantUsageKey,
            .volumeAvailableCapacityForOpportunisticUsageKey,
        ]
        guard keys.contains(where: answered.contains), let url = fileURL else {
            return try Original.nsurlResourceValues(self)(keys)
        }
        var values = try Original.nsurlResourceValues(self)(keys.filter { !answered.contains($0) })
        if keys.contains(.isExcludedFromBackupKey) {
            values[.isExcludedFromBackupKey] = try ContainerFile.isExcludedFromBackup(url)
        }
        // Keys Foundation on Linux does not have (ContainerFiles names them).
        for key in keys where key == .volumeAvailableCapacityForImportantUsageKey
            || key == .volumeAvailableCapacityForOpportunisticUsageKey {
            values[key] = try ContainerFile.availableCapacity(of: url)
        }
        return values
    }

    @usableFromInline @_silgen_name("asfs_hook_nsurl_getResourceValue")
    func asfsGetResourceValue(_ value: inout AnyObject?, forKey key: URLResourceKey) throws {
        guard key == .isExcludedFromBackupKey, let url = fileURL else {
            return try Original.nsurlGetResourceValue(self)(&value, key)
        }
        value = NSNumber(value: try ContainerFile.isExcludedFromBackup(url))
    }
}

/// The class a `.protectionKey` value names (FileProtectionType or its raw
/// string); nil for anything else, which Foundation then gets as before.
private func protectionClass(_ value: Any?) -> FileProtectionType? {
    let raw: String? = switch value {
    case let value as FileProtectionType: value.rawValue
    case let value as String: value
    default: nil
    }
    guard let raw else { return nil }
    let known: [FileProtectionType] = [.complete, .completeUnlessOpen, .completeUntilFirstUserAuthentication, .none]
    return known.first { $0.rawValue == raw }
}

/// The option of `Data.write(to:options:)` that gives `protection`.
private func writingOption(_ protection: FileProtectionType) -> Data.WritingOptions {
    // FileProtectionType is not Equatable in swift-foundation on Linux.
    switch protection.rawValue {
    case FileProtectionType.complete.rawValue: .completeFileProtection
    case FileProtectionType.completeUnlessOpen.rawValue: .completeFileProtectionUnlessOpen
    case FileProtectionType.completeUntilFirstUserAuthentication.rawValue: .completeFileProtectionUntilFirstUserAuthentication
    default: .noFileProtection
    }
}

extension FileManager {
    @usableFromInline @_silgen_name("asfs_hook_filemanager_setAttributes")
    func asfsSetAttributes(_ attributes: [FileAttributeKey: Any], ofItemAtPath path: String) throws {
        guard let protection = protectionClass(attributes[.protectionKey]), inContainer(path) else {
            return try Original.fileManagerSetAttributes(self)(attributes, path)
        }
        var rest = attributes
        rest[.protectionKey] = nil
        try Original.fileManagerSetAttributes(self)(rest, path)
        try ContainerFile.setProtection(protection, for: URL(fileURLWithPath: path))
    }

    @usableFromInline @_silgen_name("asfs_hook_filemanager_createFile")
    func asfsCreateFile(atPath path: String, contents data: Data?, attributes: [FileAttributeKey: Any]?) -> Bool {
        guard let protection = protectionClass(attributes?[.protectionKey]), inContainer(path) else {
            return Original.fileManagerCreateFile(self)(path, data, attributes)
        }
        // Foundation's createFile writes atomically, then sets the
        // attributes; here the class comes with the file itself (P3, P6).
        do {
            try ContainerFile.write(data ?? Data(), to: URL(fileURLWithPath: path),
                                    options: [.atomic, writingOption(protection)])
            var rest = attributes ?? [:]
            rest[.protectionKey] = nil
            if !rest.isEmpty { try Original.fileManagerSetAttributes(self)(rest, path) }
            return true
        } catch {
            return false
        }
    }

    @usableFromInline @_silgen_name("asfs_hook_filemanager_createDirectoryAtPath")
    func asfsCreateDirectory(atPath path: String, withIntermediateDirectories: Bool,
                             attributes: [FileAttributeKey: Any]?) throws {
        guard let protection = protectionClass(attributes?[.protectionKey]) else {
            return try Original.fileManagerCreateDirectoryAtPath(self)(path, withIntermediateDirectories, attributes)
        }
        let made = newFolders(URL(fileURLWithPath: path))
        var rest = attributes ?? [:]
        rest[.protectionKey] = nil
        try Original.fileManagerCreateDirectoryAtPath(self)(path, withIntermediateDirectories, rest)
        try classify(made, protection)
    }

    @usableFromInline @_silgen_name("asfs_hook_filemanager_createDirectoryAtURL")
    func asfsCreateDirectory(at url: URL, withIntermediateDirectories: Bool,
                             attributes: [FileAttributeKey: Any]?) throws {
        guard let protection = protectionClass(attributes?[.protectionKey]), url.isFileURL else {
            return try Original.fileManagerCreateDirectoryAtURL(self)(url, withIntermediateDirectories, attributes)
        }
        let made = newFolders(url)
        var rest = attributes ?? [:]
        rest[.protectionKey] = nil
        try Original.fileManagerCreateDirectoryAtURL(self)(url, withIntermediateDirectories, rest)
        try classify(made, protection)
    }

    @usableFromInline @_silgen_name("asfs_hook_filemanager_attributesOfItem")
    func asfsAttributesOfItem(atPath path: String) throws -> [FileAttributeKey: Any] {
        var attributes = try Original.fileManagerAttributesOfItem(self)(path)
        // The item itself (attributesOfItem does not follow a last symbolic
        // link; the class is the entry's own).
        guard attributes[.type] as? FileAttributeType != .typeSymbolicLink, inContainer(path),
              let protection = try? ContainerFile.protection(of: URL(fileURLWithPath: path)) else { return attributes }
        attributes[.protectionKey] = protection
        return attributes
    }

    /// The folders a createDirectory of `url` makes (the last and the
    /// missing ones above it, nearest the root first).
    private func newFolders(_ url: URL) -> [URL] {
        var missing: [URL] = []
        var next = url.standardizedFileURL
        while next.path != "/" && !fileExists(atPath: next.path) {
            missing.insert(next, at: 0)
            next = next.deletingLastPathComponent()
        }
        return missing
    }

    /// Gives each folder made `protection` (as Foundation applies the
    /// attributes to the new intermediate folders too), in a container only.
    private func classify(_ folders: [URL], _ protection: FileProtectionType) throws {
        for folder in folders where inContainer(folder.path) {
            try ContainerFile.setProtection(protection, for: folder)
        }
    }
}

extension Data {
    @usableFromInline @_silgen_name("asfs_hook_data_write")
    func asfsWrite(to url: URL, options: Data.WritingOptions) throws {
        guard !options.intersection(.fileProtectionMask).isEmpty, inContainer(url) else {
            return try Original.dataWrite()(url, options, self)
        }
        // ContainerFile.write hands the write without the protection option
        // back to Data.write (so to this hook, which passes it on).
        try ContainerFile.write(self, to: url, options: options)
    }
}
#endif
