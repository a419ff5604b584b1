import Foundation

/// The standard folders of an iOS app's container, as the app finds them.
///
///     <container>/
///       Documents/                     user data, backed up
///       Documents/Inbox/               files handed in (Mail, AirDrop): read and delete only
///       Library/                       app data the user does not see, backed up
///       Library/Application Support/   created by the app itself
///       Library/Caches/                re-creatable data: not backed up, purgeable
///       Library/Preferences/           UserDefaults' plists
///       tmp/                           scratch: not backed up, emptied when the app is not running
///
/// On iOS and macOS `url` is what Foundation answers (`FileManager.urls(for:in:)`,
/// `NSTemporaryDirectory()`). Foundation on Linux has no `libraryDirectory`
/// and finds the others through XDG variables, so there `url` is the
/// folder's place below `NSHomeDirectory()` (tmp: `NSTemporaryDirectory()`),
/// which is the container's root when the program runs under
/// `appsandboxfs run` (see `ContainerEnvironment`).
public enum ContainerFolder: String, CaseIterable, Sendable {
    case documents
    case inbox
    case library
    case applicationSupport
    case caches
    case preferences
    case tmp

    /// The folder's path below the container's root ("Library/Caches").
    public var relativePath: String {
        switch self {
        case .documents: "Documents"
        case .inbox: "Documents/Inbox"
        case .library: "Library"
        case .applicationSupport: "Library/Application Support"
        case .caches: "Library/Caches"
        case .preferences: "Library/Preferences"
        case .tmp: "tmp"
        }
    }

    /// The folder in the container whose root is `root` (a test's mountpoint, say).
    public func url(inContainer root: URL) -> URL {
        root.appendingPathComponent(relativePath, isDirectory: true)
    }

    /// The folder of the running app's own container. It may not exist yet:
    /// an app creates Application Support itself.
    public var url: URL {
        if self == .tmp { return URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true) }
        #if canImport(Darwin)
        let manager = FileManager.default
        func first(_ directory: FileManager.SearchPathDirectory) -> URL {
            manager.urls(for: directory, in: .userDomainMask)[0]
        }
        switch self {
        case .documents: return first(.documentDirectory)
        case .inbox: return first(.documentDirectory).appendingPathComponent("Inbox", isDirectory: true)
        case .library: return first(.libraryDirectory)
        case .applicationSupport: return first(.applicationSupportDirectory)
        case .caches: return first(.cachesDirectory)
        case .preferences: return first(.libraryDirectory).appendingPathComponent("Preferences", isDirectory: true)
        case .tmp: return URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        }
        #else
        return url(inContainer: URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true))
        #endif
    }
}
