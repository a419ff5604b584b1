/// The shape of a device of many apps (part three, A1-A3, G1): the iOS tree
/// of bundle, data and group containers, and the zones its names give.
///
/// ```
/// <root>/                                   deviceRoot
///   Containers/                             containersFolder
///     Bundle/Application/                   bundleParentFolder, bundleApplicationsFolder
///       <UUID>/                             bundleContainer
///         <Name>.app/                       bundleFolder, below it: bundle (B rules)
///         .com.apple.mobile_container_manager.metadata.plist    containerMetadata
///     Data/Application/                     dataParentFolder, dataApplicationsFolder
///       <UUID>/                             dataContainer; below it part one's root:
///         Documents/ Library/ tmp/ ...      documentsFolder, ... (S, W, I, T rules)
///         .com.apple...metadata.plist       containerMetadata
///     Shared/AppGroup/                      sharedParentFolder, appGroupsFolder
///       <UUID>/                             groupContainer (G1: takes new entries)
///         Library/ Library/Caches/ ...      libraryFolder, cachesFolder, preferencesFolder
///         .com.apple...metadata.plist       containerMetadata
///         anything else                     groupContent
///   anything else above the containers      deviceOther
/// ```
///
/// As for one container, a zone is derived from its folder's zone and its
/// name alone: nothing is known of the apps installed, so the driver does no
/// work per app, and a container that `install` makes in the backing
/// directory has its zones as soon as the kernel looks it up.
extension ContainerLayout {
    /// The folder above every container.
    public static let containersName = "Containers"
    /// Where the bundle, data and group containers are, relative to the device's root.
    public static let bundleContainersPath = "Containers/Bundle/Application"
    public static let dataContainersPath = "Containers/Data/Application"
    public static let groupContainersPath = "Containers/Shared/AppGroup"
    /// The folders of an empty device, each after its parent (A1).
    public static let deviceFolders = [
        "Containers", "Containers/Bundle", bundleContainersPath, "Containers/Data", dataContainersPath,
        "Containers/Shared", groupContainersPath,
    ]
    /// The container manager's metadata plist in every container (A3).
    public static let metadataName = ".com.apple.mobile_container_manager.metadata.plist"
    /// The folders a group container holds when it is made (G1), each after its parent.
    public static let groupFolders = ["Library", "Library/Caches", "Library/Preferences"]

    /// How many names from a device's root decide a zone:
    /// `Containers/Data/Application/<UUID>/Documents/Inbox/x`.
    public static let deviceZoneDepth = 7

    /// The zones of a device above and at its containers' roots.
    @inlinable
    static func deviceZone(ofChild name: some Collection<UInt8>, in parent: Zone) -> Zone {
        switch parent {
        case .deviceRoot:
            return isName(name, containersName) ? .containersFolder : .deviceOther
        case .containersFolder:
            if isName(name, "Bundle") { return .bundleParentFolder }
            if isName(name, "Data") { return .dataParentFolder }
            if isName(name, "Shared") { return .sharedParentFolder }
            return .deviceOther
        case .bundleParentFolder:
            return isName(name, "Application") ? .bundleApplicationsFolder : .deviceOther
        case .dataParentFolder:
            return isName(name, "Application") ? .dataApplicationsFolder : .deviceOther
        case .sharedParentFolder:
            return isName(name, "AppGroup") ? .appGroupsFolder : .deviceOther
        case .bundleApplicationsFolder: return .bundleContainer
        case .dataApplicationsFolder: return .dataContainer
        case .appGroupsFolder: return .groupContainer
        case .bundleContainer:
            // A bundle container holds its `.app` and its metadata: any other
            // name there is taken as part of the read-only bundle (B rules).
            return isName(name, metadataName) ? .containerMetadata : .bundleFolder
        case .groupContainer:
            if isName(name, metadataName) { return .containerMetadata }
            if isName(name, "Library") { return .libraryFolder }
            return .groupContent
        case .groupContent: return .groupContent
        case .containerMetadata: return .containerMetadata
        default: return .deviceOther
        }
    }

    /// The container a device path lies in: its first four names
    /// (`Containers/<Kind>/<Application|AppGroup>/<UUID>`), or nil above the
    /// containers. For links (E1, E2 on a device, A6).
    public static func container<Name: Equatable>(of components: [Name]) -> ArraySlice<Name>? {
        components.count >= 4 ? components[0..<4] : nil
    }

    /// Whether a bundle id or App Group id may be used (A2): a reverse-DNS
    /// string of ASCII letters, digits, `-` and `.`, with at least two
    /// non-empty labels. nil when it may, else why not.
    public static func problemWithIdentifier(_ id: String) -> String? {
        if id.isEmpty { return "empty" }
        if id.utf8.count > 255 { return "longer than 255 bytes" }
        let allowed = id.utf8.allSatisfy { byte in
            (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
                || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
        guard allowed else { return "not a reverse-DNS string (only ASCII letters, digits, '-' and '.')" }
        let labels = id.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else {
            return "not a reverse-DNS string (labels separated by single dots, at least two)"
        }
        return nil
    }
}
