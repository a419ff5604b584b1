/// The standard folders of an iOS app's container, below its root: the one
/// list every module uses (ContainerLayout's required folders, ContainerFiles'
/// URLs, the fixture's zones). Pure Swift: it builds on every platform.
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
/// In creation order: each after its parent.
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
}
