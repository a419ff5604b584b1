import Foundation
import Glibc
import SandboxPolicy

/// One installed app, as the device's containers say (A4).
public struct InstalledApp: Sendable, Equatable {
    public var bundleID: String
    /// The `.app` folder's name without `.app`.
    public var name: String
    public var bundleUUID: String
    /// nil only when a data container is missing (an install killed half-way).
    public var dataUUID: String?
    /// The App Groups the app lists (G1), in the order given at install.
    public var groups: [String]

    /// Paths relative to the device's root.
    public var bundleContainerPath: String { ContainerLayout.bundleContainersPath + "/" + bundleUUID }
    public var bundlePath: String { bundleContainerPath + "/" + name + ".app" }
    public var dataPath: String? { dataUUID.map { ContainerLayout.dataContainersPath + "/" + $0 } }
}

/// What a device holds, read from its backing tree: bundle id -> bundle
/// container, data container and groups; group id -> group container. Read
/// from the containers' metadata plists each time a verb asks (nothing is
/// kept beside them, so the tree is the one truth, and a device copied or
/// restored elsewhere is the same device). The verbs (`install`,
/// `uninstall`, `listapps`, `get_app_container`) all go through it.
public struct DeviceCatalog: Sendable {
    /// By bundle id.
    public var apps: [String: InstalledApp] = [:]
    /// Group id -> the group container's UUID.
    public var groupContainers: [String: String] = [:]
    /// Bundle id -> the data container's UUID (also for a data container
    /// whose bundle container is gone: a reinstall takes it up again).
    public var dataContainers: [String: String] = [:]

    /// The apps, by bundle id.
    public var sortedApps: [InstalledApp] { apps.values.sorted { $0.bundleID < $1.bundleID } }

    /// Reads the device whose root is open as `root`.
    public init(root: Int32, path: String) throws {
        let bundles = try Self.containers(ContainerLayout.bundleContainersPath, in: root, path: path)
        for (uuid, folder, metadata) in bundles {
            defer { close(folder) }
            guard let id = metadata[Self.identifierKey] as? String else { continue }
            let names = (try? BundleCopier.names(in: folder, path: uuid).map(BundleCopier.string)) ?? []
            guard let app = names.first(where: { $0.hasSuffix(".app") && $0.count > 4 }) else { continue }
            let info = metadata[Self.infoKey] as? [String: Any]
            let groups = info?[Self.groupsKey] as? [String] ?? []
            // Two bundle containers of one id only when an update was killed
            // between its two steps: the newer one is the app.
            if let other = apps[id], Self.changeTime(other.bundleUUID, root: root) > Self.changeTime(uuid, root: root) { continue }
            apps[id] = InstalledApp(bundleID: id, name: String(app.dropLast(4)), bundleUUID: uuid, dataUUID: nil, groups: groups)
        }
        for (uuid, folder, metadata) in try Self.containers(ContainerLayout.dataContainersPath, in: root, path: path) {
            close(folder)
            guard let id = metadata[Self.identifierKey] as? String else { continue }
            dataContainers[id] = uuid
            apps[id]?.dataUUID = uuid
        }
        for (uuid, folder, metadata) in try Self.containers(ContainerLayout.groupContainersPath, in: root, path: path) {
            close(folder)
            guard let id = metadata[Self.identifierKey] as? String else { continue }
            groupContainers[id] = uuid
        }
    }

    /// The group container's path relative to the device's root.
    public func groupPath(_ group: String) -> String? {
        groupContainers[group].map { ContainerLayout.groupContainersPath + "/" + $0 }
    }

    /// The apps that list `group`.
    public func apps(listing group: String) -> [InstalledApp] {
        sortedApps.filter { $0.groups.contains(group) }
    }

    static let identifierKey = "MCMMetadataIdentifier"
    static let uuidKey = "MCMMetadataUUID"
    static let contentClassKey = "MCMMetadataContentClass"
    static let infoKey = "MCMMetadataInfo"
    /// In a bundle container's MCMMetadataInfo: the groups the app was
    /// installed with (the entitlement's key).
    static let groupsKey = "com.apple.security.application-groups"

    /// Each container folder in the folder at `relative`: its name, an open
    /// descriptor (the caller closes it) and its metadata plist.
    private static func containers(_ relative: String, in root: Int32,
                                   path: String) throws -> [(String, Int32, [String: Any])] {
        let folder = try Container.openFolder(relative, in: root, path: path)
        defer { close(folder) }
        let names = (try? BundleCopier.names(in: folder, path: path + "/" + relative)) ?? []
        var found: [(String, Int32, [String: Any])] = []
        for raw in names {
            let fd = openat(folder, raw, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard fd >= 0 else { continue }
            guard let metadata = BundleIdentifier.propertyList(named: ContainerLayout.metadataName, inFolder: fd) else {
                close(fd)
                continue
            }
            found.append((BundleCopier.string(raw), fd, metadata))
        }
        return found
    }

    private static func changeTime(_ uuid: String, root: Int32) -> Double {
        var status = stat()
        guard fstatat(root, ContainerLayout.bundleContainersPath + "/" + uuid, &status, AT_SYMLINK_NOFOLLOW) == 0 else { return 0 }
        return Double(status.st_ctim.tv_sec) + Double(status.st_ctim.tv_nsec) / 1e9
    }
}
