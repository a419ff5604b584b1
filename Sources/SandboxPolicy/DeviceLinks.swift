/// A6 with E1 and E2 on a device: which containers a symbolic link may
/// lead into, once `EscapeCheck.resolve` has found where it leads in the
/// device (its first four names give the container).
///
/// | link in          | may lead into                                           |
/// |------------------|---------------------------------------------------------|
/// | a data container | itself, its app's bundle container, its app's groups    |
/// | a group container| itself                                                  |
/// | anything else    | its own container (a bundle's links: within the bundle) |
///
/// Above the containers (the device's own folders) nothing may be the
/// source or the target of a link. What an app owns is not known from
/// names: the driver learns it from the containers' metadata and gives it
/// here as data (`AppContainers`), asked for only when a data container's
/// link leads into another container.
public enum DeviceContainer: Hashable, Sendable {
    case bundle(uuid: [UInt8])
    case data(uuid: [UInt8])
    case group(uuid: [UInt8])

    /// The container of a device path (names from the device's root), or
    /// nil above the containers.
    public init?(_ components: [[UInt8]]) {
        guard let names = ContainerLayout.container(of: components) else { return nil }
        let kind = Array(names.prefix(3))
        let uuid = names[names.startIndex + 3]
        func path(_ text: String) -> [[UInt8]] { text.split(separator: "/").map { Array($0.utf8) } }
        if kind == path(ContainerLayout.bundleContainersPath) {
            self = .bundle(uuid: uuid)
        } else if kind == path(ContainerLayout.dataContainersPath) {
            self = .data(uuid: uuid)
        } else if kind == path(ContainerLayout.groupContainersPath) {
            self = .group(uuid: uuid)
        } else {
            return nil
        }
    }
}

/// What the app of a data container owns besides it (A6): its bundle
/// container and the group containers of the groups it lists, by UUID.
public struct AppContainers: Sendable, Equatable {
    public var bundleUUID: [UInt8]?
    public var groupUUIDs: Set<[UInt8]>

    public init(bundleUUID: [UInt8]?, groupUUIDs: Set<[UInt8]>) {
        self.bundleUUID = bundleUUID
        self.groupUUIDs = groupUUIDs
    }
}

extension EscapeCheck {
    /// A6: whether a link held in `from` may lead into `to`. `owned` gives
    /// what the app of the data container `from` owns (nil when the driver
    /// knows no app for it); it is asked only for a data container's link
    /// into a bundle or group container.
    public static func deviceLinkAllowed(from: DeviceContainer?, to: DeviceContainer?,
                                         owned: (_ dataUUID: [UInt8]) -> AppContainers?) -> Bool {
        guard let from, let to else { return false }
        if from == to { return true }
        guard case .data(let dataUUID) = from else { return false }
        switch to {
        case .data: return false
        case .bundle(let uuid): return owned(dataUUID)?.bundleUUID == uuid
        case .group(let uuid): return owned(dataUUID)?.groupUUIDs.contains(uuid) ?? false
        }
    }
}
