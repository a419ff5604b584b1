/// How iOS backup and purging treat each zone (rules K1 and K2).
///
/// | zones                                              | class       | in a backup | purged under low storage |
/// |----------------------------------------------------|-------------|-------------|--------------------------|
/// | Documents (Inbox included), Library (Preferences…) | `backedUp`  | yes         | no                       |
/// | Library/Caches                                     | `caches`    | no          | yes                      |
/// | tmp                                                | `temporary` | no          | yes                      |
/// | `<App>.app`                                        | `bundle`    | no          | no (reinstalled)         |
/// | the root, and other entries at the root            | `outside`   | no          | no                       |
///
/// A zone says only where an entry lies; whether a backed-up entry is really
/// in a backup also depends on the "do not back up" flags on it and on the
/// folders above it (X1, X2, X5), which are I/O and are read elsewhere.
public enum BackupClass: String, Sendable, CaseIterable, Hashable {
    /// Documents (the Inbox included) and Library except Library/Caches.
    case backedUp
    /// Library/Caches: re-creatable data, never backed up, purgeable.
    case caches
    /// tmp: scratch, never backed up, purgeable.
    case temporary
    /// The bundle: signed and reinstalled from the store, never backed up.
    case bundle
    /// The root itself and any other entry at the root (`SystemData`, ...):
    /// not app data, never backed up.
    case outside

    /// The class of every entry in `zone`: the folder and what lies below it
    /// share their class.
    public static func of(_ zone: Zone) -> BackupClass {
        switch zone {
        case .documentsFolder, .documents, .inboxFolder, .inbox,
             .libraryFolder, .library, .preferencesFolder, .preferences:
            .backedUp
        case .cachesFolder, .caches: .caches
        case .tmpFolder, .tmp: .temporary
        case .bundleFolder, .bundle: .bundle
        case .root, .rootOther: .outside
        // A device (M2, a later slice): a group container's own entries are
        // backed up (G1); the folders above the containers and the metadata
        // plists belong to no backup domain.
        case .groupContent: .backedUp
        case .deviceRoot, .containersFolder, .bundleParentFolder, .bundleApplicationsFolder, .dataParentFolder,
             .dataApplicationsFolder, .sharedParentFolder, .appGroupsFolder, .deviceOther, .containerMetadata,
             .dataContainer, .groupContainer: .outside
        case .bundleContainer: .bundle
        }
    }

    /// Whether entries of this class go into a backup, flags aside (K1).
    public var isBackedUp: Bool { self == .backedUp }

    /// Whether iOS may empty this class's folder when storage runs low (K2).
    public var isPurgeable: Bool { self == .caches || self == .temporary }
}

extension Zone {
    /// The system folder a backup report groups an entry of this zone under:
    /// the zone of the folder whose contents this zone is. `documents` and
    /// `documentsFolder` both give `documentsFolder`; an entry below the Inbox
    /// gives `inboxFolder`, one below Library/Caches `cachesFolder`. Other
    /// root entries give `rootOther`, the root itself `root`.
    public var systemFolder: Zone {
        switch self {
        case .root: .root
        case .bundleFolder, .bundle: .bundleFolder
        case .documentsFolder, .documents: .documentsFolder
        case .inboxFolder, .inbox: .inboxFolder
        case .libraryFolder, .library: .libraryFolder
        case .cachesFolder, .caches: .cachesFolder
        case .preferencesFolder, .preferences: .preferencesFolder
        case .tmpFolder, .tmp: .tmpFolder
        case .rootOther: .rootOther
        // A device: a container's own entries group under its root (the
        // UUID folder's zone); the rest under the device's.
        case .groupContent: .groupContainer
        case .deviceRoot, .containersFolder, .bundleParentFolder, .bundleApplicationsFolder, .dataParentFolder,
             .dataApplicationsFolder, .sharedParentFolder, .appGroupsFolder, .deviceOther: .deviceRoot
        case .bundleContainer, .dataContainer, .groupContainer, .containerMetadata: self
        }
    }

    /// How many names below the container root this zone's system folder
    /// lies: 1 for Documents, 2 for Documents/Inbox, 0 for the root. An
    /// entry's "top entry" in a report is its ancestor one level below its
    /// system folder; `rootOther` counts as 0, so each other entry at the root
    /// is a top entry of its own.
    public var systemFolderDepth: Int {
        switch systemFolder {
        case .root, .rootOther: 0
        case .inboxFolder, .cachesFolder, .preferencesFolder: 2
        default: 1
        }
    }
}
