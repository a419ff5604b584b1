// Installs the hooks of Hooks.swift into the running process: Foundation's
// class methods through their slot in the class's method table, its struct
// methods through every loaded object's GOT. Everything is found and
// checked first; then all is installed or nothing (F2). See
// docs/foundation.md.
#if os(Linux)
internal import CFoundationBridge
import Foundation
import Glibc
import POSIXHelpers

/// The Foundation bridge: a program's own Foundation calls for the "do not
/// back up" mark and the protection class act on a container (F1).
public enum FoundationBridge {
    /// What `install()` did.
    public enum Outcome: Sendable, Equatable {
        case installed
        /// Nothing was installed, for this reason; the calls stay no-ops
        /// (Foundation on Linux's own behaviour).
        case unavailable(String)
    }

    /// Installs the bridge in this process once (later calls answer the
    /// first one's outcome). When it cannot, it installs nothing and writes
    /// the one line of F2 on standard error.
    @discardableResult
    public static func install() -> Outcome { installation }

    /// The calls that act on a container once installed, as the F2 line
    /// names them.
    public static let calls = Hook.allCases.map(\.call).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }

    /// The F2 line for a process where the bridge is not installed.
    public static func warning(program: String, reason: String) -> String {
        "appsandboxfs: \(program): these Foundation calls stay no-ops in a container (\(reason)): \(calls.joined(separator: "; "))"
    }

    private static let installation: Outcome = {
        let outcome = Installation.installedElsewhere ? .installed
            : Installation.resolved.map { $0.apply() } ?? .unavailable(Installation.failure ?? "unknown")
        if case .unavailable(let reason) = outcome {
            let program = String(cString: asfs_bridge_program_name())
            asfs_bridge_warn(warning(program: program, reason: reason))
        }
        return outcome
    }()
}

/// For the preload library (FoundationBridgePreload): 0 when installed.
@_cdecl("appsandboxfs_foundation_bridge_install")
func appsandboxfsFoundationBridgeInstall() -> Int32 {
    FoundationBridge.install() == .installed ? 0 : 1
}

/// The calls stood in for, in the order of CFoundationBridge's ASFS_HOOK_*.
enum Hook: Int, CaseIterable {
    case nsurlSetResourceValue, nsurlSetResourceValues, nsurlResourceValues, nsurlGetResourceValue
    case fileManagerSetAttributes, fileManagerCreateFile, fileManagerCreateDirectoryAtPath
    case fileManagerCreateDirectoryAtURL, fileManagerAttributesOfItem
    case dataWrite

    /// Foundation's own implementation (the symbols of Swift 6.x's
    /// swift-corelibs-foundation and swift-foundation).
    var symbol: String {
        switch self {
        case .nsurlSetResourceValue: "$s10Foundation5NSURLC16setResourceValue_6forKeyyypSg_AA011URLResourceG0VtKF"
        case .nsurlSetResourceValues: "$s10Foundation5NSURLC17setResourceValuesyySDyAA14URLResourceKeyVypGKF"
        case .nsurlResourceValues: "$s10Foundation5NSURLC14resourceValues7forKeysSDyAA14URLResourceKeyVypGSayAGG_tKF"
        case .nsurlGetResourceValue: "$s10Foundation5NSURLC16getResourceValue_6forKeyyyXlSgz_AA011URLResourceG0VtKF"
        case .fileManagerSetAttributes:
            "$s20FoundationEssentials11FileManagerC13setAttributes_12ofItemAtPathySDyAA0C12AttributeKeyVypG_SStKF"
        case .fileManagerCreateFile:
            "$s20FoundationEssentials11FileManagerC06createC06atPath8contents10attributesSbSS_AA4DataVSgSDyAA0C12AttributeKeyVypGSgtF"
        case .fileManagerCreateDirectoryAtPath:
            "$s20FoundationEssentials11FileManagerC15createDirectory6atPath27withIntermediateDirectories10attributesySS_SbSDyAA0C12AttributeKeyVypGSgtKF"
        case .fileManagerCreateDirectoryAtURL:
            "$s20FoundationEssentials11FileManagerC15createDirectory2at27withIntermediateDirectories10attributesyAA3URLV_SbSDyAA0C12AttributeKeyVypGSgtKF"
        case .fileManagerAttributesOfItem:
            "$s20FoundationEssentials11FileManagerC16attributesOfItem6atPathSDyAA0C12AttributeKeyVypGSS_tKF"
        case .dataWrite: "$s20FoundationEssentials4DataV5write2to7optionsyAA3URLV_AC14WritingOptionsVtKF"
        }
    }

    /// The library that must define `symbol`.
    var library: String {
        switch self {
        case .nsurlSetResourceValue, .nsurlSetResourceValues, .nsurlResourceValues, .nsurlGetResourceValue:
            "libFoundation.so"
        default: "libFoundationEssentials.so"
        }
    }

    /// The class whose method table holds it; nil for a struct's method,
    /// called through its symbol.
    var owner: (type: AnyClass, descriptor: String)? {
        switch self {
        case .nsurlSetResourceValue, .nsurlSetResourceValues, .nsurlResourceValues, .nsurlGetResourceValue:
            (NSURL.self, "$s10Foundation5NSURLCMn")
        case .dataWrite: nil
        default: (FileManager.self, "$s20FoundationEssentials11FileManagerCMn")
        }
    }

    /// The call as the F2 line names it.
    var call: String {
        switch self {
        case .nsurlSetResourceValue, .nsurlSetResourceValues:
            "URL.setResourceValues and NSURL.setResourceValue(_:forKey:) with isExcludedFromBackup"
        case .nsurlResourceValues, .nsurlGetResourceValue: "URL.resourceValues(forKeys:) for isExcludedFromBackupKey"
        case .fileManagerSetAttributes, .fileManagerCreateFile, .fileManagerCreateDirectoryAtPath,
             .fileManagerCreateDirectoryAtURL:
            "FileManager.setAttributes, createFile and createDirectory with .protectionKey"
        case .fileManagerAttributesOfItem: "FileManager.attributesOfItem(atPath:)[.protectionKey]"
        case .dataWrite: "Data.write(to:options:) with a protection option"
        }
    }
}

/// Everything found and checked before anything is changed.
struct Installation: @unchecked Sendable {
    /// Foundation's implementations, by `Hook.rawValue`.
    let originals: [UnsafeRawPointer]
    /// The method-table slot of each class method.
    let slots: [(hook: Hook, slot: UnsafeMutablePointer<UnsafeRawPointer?>)]

    private static let outcome: Result<Installation, Failure> = {
        do { return .success(try Installation()) } catch { return .failure(error as? Failure ?? Failure(reason: "\(error)")) }
    }()
    static var resolved: Installation? { try? outcome.get() }
    static var failure: String? {
        if case .failure(let failure) = outcome { return failure.reason }
        return nil
    }

    struct Failure: Error { let reason: String }

    /// Another copy of the bridge is installed in this process already (a
    /// test process started by `run`: the preloaded library, and the one
    /// linked into AppSandboxTesting): FileManager's method table holds its
    /// hook. That copy acts; this one changes nothing.
    static let installedElsewhere: Bool = {
        let hook = Hook.fileManagerSetAttributes
        guard dlsym(UnsafeMutableRawPointer(bitPattern: 0), hook.symbol) != nil else { return false }
        let metadata = unsafeBitCast(FileManager.self as AnyClass, to: UnsafeMutablePointer<UnsafeRawPointer?>.self)
        let sizes = UInt(bitPattern: metadata[4])
        let words = (Int(sizes & 0xffff_ffff) - Int(sizes >> 32)) / MemoryLayout<UInt>.size
        guard words > 7, words < 4096 else { return false }
        let own = asfs_bridge_hook(Int32(hook.rawValue))
        return (7..<words).contains { index in
            guard let slot = metadata[index], slot != UnsafeRawPointer(own),
                  let name = asfs_bridge_symbol_at(slot) else { return false }
            return String(cString: name) == "asfs_hook_filemanager_setAttributes"
        }
    }()

    private init() throws {
        guard let foundation = dlopen("libFoundationEssentials.so", RTLD_LAZY | RTLD_NOLOAD) else {
            throw Failure(reason: "Foundation is not a shared library here (linked into the program statically?)")
        }
        dlclose(foundation)
        var originals: [UnsafeRawPointer] = []
        var slots: [(Hook, UnsafeMutablePointer<UnsafeRawPointer?>)] = []
        for hook in Hook.allCases {
            guard let found = dlsym(UnsafeMutableRawPointer(bitPattern: 0), hook.symbol) else {
                throw Failure(reason: "a Foundation this bridge does not know: no \(hook.symbol)")
            }
            let original = UnsafeRawPointer(found)
            guard let file = asfs_bridge_object_file(original), String(cString: file).hasSuffix("/" + hook.library) else {
                throw Failure(reason: "\(hook.symbol) is not \(hook.library)'s")
            }
            originals.append(original)
            if let owner = hook.owner {
                slots.append((hook, try Self.slot(of: owner.type, descriptor: owner.descriptor, holding: original)))
            }
        }
        self.originals = originals
        self.slots = slots
    }

    /// The one slot of `type`'s method table that holds `original`. Class
    /// metadata without Objective-C (Linux): the superclass at word 1, the
    /// class's size and address point at word 4, its nominal type
    /// descriptor at word 5, the method table after word 6.
    private static func slot(of type: AnyClass, descriptor: String,
                             holding original: UnsafeRawPointer) throws -> UnsafeMutablePointer<UnsafeRawPointer?> {
        let metadata = unsafeBitCast(type, to: UnsafeMutablePointer<UnsafeRawPointer?>.self)
        guard let expected = dlsym(UnsafeMutableRawPointer(bitPattern: 0), descriptor),
              metadata[5] == UnsafeRawPointer(expected) else {
            throw Failure(reason: "\(type)'s class metadata has a layout this bridge does not know")
        }
        let sizes = UInt(bitPattern: metadata[4])
        let classSize = Int(sizes & 0xffff_ffff), addressPoint = Int(sizes >> 32)
        let words = (classSize - addressPoint) / MemoryLayout<UInt>.size
        guard addressPoint >= 0, words > 7, words < 4096 else {
            throw Failure(reason: "\(type)'s class metadata has a size this bridge does not know")
        }
        let matches = (7..<words).filter { metadata[$0] == original }
        guard matches.count == 1 else {
            throw Failure(reason: "\(type)'s method table holds \(matches.count) slots for one method")
        }
        return metadata + matches[0]
    }

    /// Installs every hook, or (a page that cannot be made writable) none.
    func apply() -> FoundationBridge.Outcome {
        let data = Hook.dataWrite
        let dataHook = asfs_bridge_hook(Int32(data.rawValue))
        if asfs_bridge_rebind(data.symbol, dataHook) < 0 {
            let reason = errorText(errno)
            _ = asfs_bridge_rebind(data.symbol, UnsafeMutableRawPointer(mutating: originals[data.rawValue]))
            return .unavailable("the GOT cannot be written: \(reason)")
        }
        var written: [(Hook, UnsafeMutablePointer<UnsafeRawPointer?>)] = []
        for (hook, slot) in slots {
            let replacement = asfs_bridge_hook(Int32(hook.rawValue))
            if asfs_bridge_write_slot(slot.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) { $0 },
                                      replacement) != 0 {
                let reason = errorText(errno)
                for (done, doneSlot) in written {
                    _ = asfs_bridge_write_slot(doneSlot.withMemoryRebound(to: UnsafeMutableRawPointer?.self, capacity: 1) { $0 },
                                               UnsafeMutableRawPointer(mutating: originals[done.rawValue]))
                }
                _ = asfs_bridge_rebind(data.symbol, UnsafeMutableRawPointer(mutating: originals[data.rawValue]))
                return .unavailable("a method table cannot be written: \(reason)")
            }
            written.append((hook, slot))
        }
        return .installed
    }

    func original(_ hook: Hook) -> UnsafeRawPointer { originals[hook.rawValue] }
}

/// Foundation's own implementations, called as the hooked call was: a
/// function value whose context is the call's `self` (a class method) or
/// nothing (a struct's method, whose `self` is its last argument). Each
/// function type sits in a struct of its own, so that it has its natural
/// calling convention and not a generic one.
enum Original {
    private static func function<Box>(_ hook: Hook, context: AnyObject?, as _: Box.Type) -> Box {
        // Only reached from a hook, so after a successful install.
        let pointer = Installation.resolved!.original(hook)
        let contextPointer = context.map { Unmanaged.passUnretained($0).toOpaque() }
        return unsafeBitCast((pointer, contextPointer), to: Box.self)
    }

    private struct SetResourceValue { var call: (Any?, URLResourceKey) throws -> Void }
    private struct SetResourceValues { var call: ([URLResourceKey: Any]) throws -> Void }
    private struct ResourceValues { var call: ([URLResourceKey]) throws -> [URLResourceKey: Any] }
    private struct GetResourceValue { var call: (inout AnyObject?, URLResourceKey) throws -> Void }
    private struct SetAttributes { var call: ([FileAttributeKey: Any], String) throws -> Void }
    private struct CreateFile { var call: (String, Data?, [FileAttributeKey: Any]?) -> Bool }
    private struct CreateDirectoryAtPath { var call: (String, Bool, [FileAttributeKey: Any]?) throws -> Void }
    private struct CreateDirectoryAtURL { var call: (URL, Bool, [FileAttributeKey: Any]?) throws -> Void }
    private struct AttributesOfItem { var call: (String) throws -> [FileAttributeKey: Any] }
    private struct DataWrite { var call: (URL, Data.WritingOptions, Data) throws -> Void }

    static func nsurlSetResourceValue(_ url: NSURL) -> (Any?, URLResourceKey) throws -> Void {
        function(.nsurlSetResourceValue, context: url, as: SetResourceValue.self).call
    }
    static func nsurlSetResourceValues(_ url: NSURL) -> ([URLResourceKey: Any]) throws -> Void {
        function(.nsurlSetResourceValues, context: url, as: SetResourceValues.self).call
    }
    static func nsurlResourceValues(_ url: NSURL) -> ([URLResourceKey]) throws -> [URLResourceKey: Any] {
        function(.nsurlResourceValues, context: url, as: ResourceValues.self).call
    }
    static func nsurlGetResourceValue(_ url: NSURL) -> (inout AnyObject?, URLResourceKey) throws -> Void {
        function(.nsurlGetResourceValue, context: url, as: GetResourceValue.self).call
    }
    static func fileManagerSetAttributes(_ manager: FileManager) -> ([FileAttributeKey: Any], String) throws -> Void {
        function(.fileManagerSetAttributes, context: manager, as: SetAttributes.self).call
    }
    static func fileManagerCreateFile(_ manager: FileManager) -> (String, Data?, [FileAttributeKey: Any]?) -> Bool {
        function(.fileManagerCreateFile, context: manager, as: CreateFile.self).call
    }
    static func fileManagerCreateDirectoryAtPath(_ manager: FileManager) -> (String, Bool, [FileAttributeKey: Any]?) throws -> Void {
        function(.fileManagerCreateDirectoryAtPath, context: manager, as: CreateDirectoryAtPath.self).call
    }
    static func fileManagerCreateDirectoryAtURL(_ manager: FileManager) -> (URL, Bool, [FileAttributeKey: Any]?) throws -> Void {
        function(.fileManagerCreateDirectoryAtURL, context: manager, as: CreateDirectoryAtURL.self).call
    }
    static func fileManagerAttributesOfItem(_ manager: FileManager) -> (String) throws -> [FileAttributeKey: Any] {
        function(.fileManagerAttributesOfItem, context: manager, as: AttributesOfItem.self).call
    }
    static func dataWrite() -> (URL, Data.WritingOptions, Data) throws -> Void {
        function(.dataWrite, context: nil, as: DataWrite.self).call
    }
}
#endif
