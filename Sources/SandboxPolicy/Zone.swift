/// Where a path lies in the container.
///
/// The zone of an entry is all the policy needs to know about it: the rules of
/// `RuleTable.swift` are written per zone. A zone is derived from names alone
/// (see `ContainerLayout.zone(ofChild:in:)`), one path component at a time, so
/// the driver reads it off its tree of names and never looks at a full path.
///
/// Each system folder has two zones, "the folder itself" (`documentsFolder`)
/// and "what lies below it" (`documents`), because the folder itself has rules
/// of its own: it cannot be removed or renamed (S2, I5, B4) and its mode,
/// owner and times are fixed (S3), while its contents follow the zone's rules.
public enum Zone: UInt8, Sendable, CaseIterable, Hashable {
    /// The container root itself.
    case root
    /// `<App>.app` itself.
    case bundleFolder
    /// Anything below `<App>.app`.
    case bundle
    /// `Documents` itself.
    case documentsFolder
    /// Below `Documents`, except the Inbox subtree.
    case documents
    /// `Documents/Inbox` itself.
    case inboxFolder
    /// Below `Documents/Inbox`.
    case inbox
    /// `Library` itself.
    case libraryFolder
    /// Below `Library`, except the Caches and Preferences subtrees.
    /// `Library/Application Support` is ordinary library content: on iOS the
    /// app creates it itself, so it may also remove it.
    case library
    /// `Library/Caches` itself.
    case cachesFolder
    /// Below `Library/Caches`.
    case caches
    /// `Library/Preferences` itself.
    case preferencesFolder
    /// Below `Library/Preferences`.
    case preferences
    /// `tmp` itself.
    case tmpFolder
    /// Below `tmp`.
    case tmp
    /// Any other entry at the root that is already there in the backing
    /// directory (`SystemData`, `.com.apple.mobile_container_manager.metadata.plist`,
    /// ...) and everything below it. S1 forbids only *new* root entries, so
    /// such an entry may be removed, and what lies below it is read-write like
    /// Library. One zone serves both the entry and its contents; see
    /// `SandboxPolicy.decide` for the one place where that matters (exchange).
    case rootOther

    // A device of many apps (part three, A3, G1): the folders above the
    // containers, the containers' own folders and their metadata. Only the
    // verbs (`install`, `uninstall`) change them; see `ContainerLayout.device`.

    /// The device's root.
    case deviceRoot
    /// `Containers`.
    case containersFolder
    /// `Containers/Bundle`.
    case bundleParentFolder
    /// `Containers/Bundle/Application`.
    case bundleApplicationsFolder
    /// `Containers/Data`.
    case dataParentFolder
    /// `Containers/Data/Application`.
    case dataApplicationsFolder
    /// `Containers/Shared`.
    case sharedParentFolder
    /// `Containers/Shared/AppGroup`.
    case appGroupsFolder
    /// Any other entry above the containers (the device record, a staging
    /// folder of `install`) and everything below it.
    case deviceOther
    /// A bundle container's UUID folder: its `.app` (bundleFolder) and its
    /// metadata plist, nothing else.
    case bundleContainer
    /// A data container's UUID folder: below it, part one's root.
    case dataContainer
    /// A group container's UUID folder (G1): it takes new entries.
    case groupContainer
    /// `.com.apple.mobile_container_manager.metadata.plist` in a container.
    case containerMetadata
    /// An entry of a group container's root other than Library and the
    /// metadata plist, and everything below it: the apps' own (G1).
    case groupContent

}

extension Zone {
    /// The zones of one app's container (part one); the others are a
    /// device's (part three). Tests of part one's table go over these.
    public static let containerZones: [Zone] = allCases.filter { $0.rawValue <= Zone.rootOther.rawValue }
}
