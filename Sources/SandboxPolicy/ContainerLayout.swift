/// The shape of one app container: which names at which places are the
/// system folders, and so which zone every path lies in.
///
/// ```
/// <root>/
///   <AppName>.app/              bundleFolder, below it: bundle
///   Documents/                  documentsFolder, below it: documents
///   Documents/Inbox/            inboxFolder, below it: inbox
///   Library/                    libraryFolder, below it: library
///   Library/Caches/             cachesFolder, below it: caches
///   Library/Preferences/        preferencesFolder, below it: preferences
///   tmp/                        tmpFolder, below it: tmp
///   anything else at the root   rootOther, and below it too
/// ```
///
/// Names are compared byte for byte, as the backing file system compares them:
/// `documents` is not `Documents`, and an app name is not matched by another
/// Unicode spelling of it (Swift's `==` would call those equal).
public struct ContainerLayout: Sendable, Hashable {
    /// The app's name, without `.app`.
    public let appName: String
    /// The bundle folder's name at the container root: `appName + ".app"`.
    public let bundleName: String

    /// Whether this is a device of many apps (`ContainerLayout.device`)
    /// rather than one app's container.
    public let isDevice: Bool

    /// `appName` must be a plain name: check it with `problemWithAppName(_:)` first.
    public init(appName: String) {
        precondition(Self.problemWithAppName(appName) == nil,
                     "not a plain app name: \(Self.problemWithAppName(appName) ?? "")")
        self.appName = appName
        self.bundleName = appName + ".app"
        self.isDevice = false
    }

    private init(device: Void) {
        appName = ""
        // No name is empty: no child of a data container's root is a bundle.
        bundleName = ""
        isDevice = true
    }

    /// A device of many apps (part three): see `DeviceLayout.swift`.
    public static let device = ContainerLayout(device: ())

    /// The zone of the mount's root.
    @inlinable
    public var rootZone: Zone { isDevice ? .deviceRoot : .root }

    /// The folders a container must have, relative to its root, in creation
    /// order (each after its parent). The bundle is not among them: it may
    /// come from elsewhere.
    public static let requiredFolders: [String] = ContainerFolder.allCases.map(\.relativePath)

    /// The zone of the entry `name` inside a folder of zone `parent`.
    ///
    /// Only the root, Documents and Library hold names that start a zone of
    /// their own; below any other folder a child shares its parent's content
    /// zone. No allocation: at most a few byte comparisons of `name`.
    public func zone(ofChild name: String, in parent: Zone) -> Zone {
        zone(ofChild: name.utf8, in: parent)
    }

    /// The same for a name given as its bytes (names are bytes: one that is
    /// not UTF-8 is still a name, and never a system folder's).
    @inlinable
    public func zone(ofChild name: some Collection<UInt8>, in parent: Zone) -> Zone {
        switch parent {
        case .dataContainer:
            if Self.isName(name, Self.metadataName) { return .containerMetadata }
            fallthrough
        case .root:
            if Self.isName(name, bundleName) { return .bundleFolder }
            if Self.isName(name, "Documents") { return .documentsFolder }
            if Self.isName(name, "Library") { return .libraryFolder }
            if Self.isName(name, "tmp") { return .tmpFolder }
            return .rootOther
        case .documentsFolder:
            return Self.isName(name, "Inbox") ? .inboxFolder : .documents
        case .libraryFolder:
            if Self.isName(name, "Caches") { return .cachesFolder }
            if Self.isName(name, "Preferences") { return .preferencesFolder }
            return .library
        case .bundleFolder, .bundle: return .bundle
        case .documents: return .documents
        case .inboxFolder, .inbox: return .inbox
        case .library: return .library
        case .cachesFolder, .caches: return .caches
        case .preferencesFolder, .preferences: return .preferences
        case .tmpFolder, .tmp: return .tmp
        case .rootOther: return .rootOther
        default: return Self.deviceZone(ofChild: name, in: parent)
        }
    }

    /// `name` is `other`'s bytes. The lengths first: most names differ in
    /// length from the system folders', and a byte walk of a String's UTF-8
    /// view costs more than the count (measured: a create derives zones a
    /// few times, and the walk alone was 1 % of the driver's user time).
    @inlinable @inline(__always)
    static func isName(_ name: some Collection<UInt8>, _ other: String) -> Bool {
        let bytes = other.utf8
        guard name.count == bytes.count else { return false }
        // Both contiguous (a name's bytes, a native string): compared as two
        // buffers, not through the generic walk of the String's UTF-8 view
        // (2.7 ms of user time in 30,000 renames and unlinks of 5-byte names).
        if let equal = name.withContiguousStorageIfAvailable({ mine in
            bytes.withContiguousStorageIfAvailable { theirs in mine.elementsEqual(theirs) }
        }), let equal {
            return equal
        }
        return name.elementsEqual(bytes)
    }

    /// How many names from the root decide a zone: below the third one every
    /// child shares its folder's content zone, so a node's zone needs only
    /// its first `zoneDepth` ancestors' names (`NodeTree` relies on this).
    public static let zoneDepth = 3

    /// The same for this layout: a device's containers lie four names
    /// deeper (`Containers/Data/Application/<UUID>/Documents/Inbox/x`).
    @inlinable
    public var zoneDepth: Int { isDevice ? Self.deviceZoneDepth : Self.zoneDepth }

    /// The zone of a path given as components relative to the container root,
    /// e.g. `["Documents", "Inbox", "a.pdf"]`; `[]` is the root.
    /// The components must be folded already (no `.`, `..` or empty ones), as
    /// `EscapeCheck.resolveInside` returns them.
    public func zone(ofPath components: [String]) -> Zone {
        var zone = rootZone
        for name in components {
            zone = self.zone(ofChild: name, in: zone)
        }
        return zone
    }

    /// The same for components given as bytes.
    public func zone(ofPath components: [[UInt8]]) -> Zone {
        var zone = rootZone
        for name in components {
            zone = self.zone(ofChild: name, in: zone)
        }
        return zone
    }
}
