import BackingStore
import Foundation
import Glibc
import POSIXHelpers
import SandboxPolicy
import SystemPackage

/// `install` and `uninstall` on a device's backing directory (A2, A5, G1).
///
/// A container is built in the device's staging folder and renamed into
/// its place whole, and leaves it by a rename into the staging folder
/// before it is taken apart: through the mount a container is there with
/// all its folders and its metadata, or not at all. The driver needs no
/// word of it: zones come from names (a new UUID folder has its zones when
/// the kernel first looks it up), and the kernel keeps a UUID folder's name
/// for at most a second (`SandboxFileSystem.entryTimeout(of:)`).
///
/// Order: group containers, then the data container, then the bundle
/// container, whose arrival makes the app installed (the catalog lists apps
/// by their bundle containers); an update removes the old bundle container
/// last. Killed between two steps, the device holds a container too many,
/// which the next `install` of the app takes up, never one too few.
public struct DeviceInstaller {
    public let backing: String

    public init(backing: String) {
        self.backing = backing
    }

    /// What `install` did.
    public struct Installed: Sendable {
        public var app: InstalledApp
        /// Whether the id was installed already (an update: the data container was kept).
        public var updated: Bool
        /// What the copy of the bundle left out (U1).
        public var leftOut: DroppedPrivileges
        public var catalog: DeviceCatalog
    }

    /// Installs (or updates) the app in the folder `appFolder`. `bundleID`:
    /// else the Info.plist's CFBundleIdentifier; `groups`: else the
    /// entitlements plist's application groups.
    ///
    /// `check` is given the bundle id before anything changes, and may
    /// refuse by throwing (the command line: an update while the app runs).
    public func install(appFolder: String, bundleID givenID: String?, groups givenGroups: [String]?,
                        check: (String) throws -> Void = { _ in }) throws -> Installed {
        let source = open(appFolder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard source >= 0 else { throw ContainerError("\(appFolder): \(errorText(errno))") }
        defer { close(source) }
        guard let bundleID = givenID ?? BundleIdentifier.read(inBundle: source) else {
            throw ContainerError("\(appFolder): no bundle id: Info.plist names no CFBundleIdentifier (give --bundle-id)")
        }
        if let problem = ContainerLayout.problemWithIdentifier(bundleID) {
            throw ContainerError("bundle id \"\(bundleID)\": \(problem)")
        }
        try check(bundleID)
        var groups: [String] = []
        for group in givenGroups ?? Self.entitlementGroups(in: source) where !groups.contains(group) {
            if let problem = ContainerLayout.problemWithIdentifier(group) {
                throw ContainerError("group id \"\(group)\": \(problem)")
            }
            groups.append(group)
        }
        var name = (appFolder as NSString).lastPathComponent
        if name.hasSuffix(".app") && name.count > 4 { name.removeLast(4) }
        if let problem = ContainerLayout.problemWithAppName(name) {
            throw ContainerError("\(appFolder): app name \"\(name)\": \(problem)")
        }

        let root = try openRoot()
        defer { close(root) }
        var owner = stat()
        guard fstat(root, &owner) == 0 else { throw ContainerError("\(backing): \(errorText(errno))") }
        let who = (uid: owner.st_uid, gid: owner.st_gid)
        let staging = try Container.makeFolder(Device.stagingName, in: root, path: backing)
        defer { close(staging) }
        let before = try DeviceCatalog(root: root, path: backing)

        // G1: each group made at the first install of an app listing it.
        for group in groups where before.groupContainers[group] == nil {
            try build(in: staging, root: root, into: ContainerLayout.groupContainersPath, owner: who,
                      metadata: ContainerMetadata(identifier: group, contentClass: 7)) { folder, path in
                try Device.layOutGroup(in: folder, path: path, owner: who)
            }
        }
        // The data container: kept when the app is installed already.
        let dataUUID: String
        if let kept = before.dataContainers[bundleID] {
            dataUUID = kept
        } else {
            dataUUID = try build(in: staging, root: root, into: ContainerLayout.dataContainersPath, owner: who,
                                 metadata: ContainerMetadata(identifier: bundleID, contentClass: 2)) { folder, path in
                try Container.layOut(in: FileDescriptor(rawValue: folder), path: path, layout: ContainerLayout(appName: name), withBundle: false)
                for relative in ContainerLayout.requiredFolders {
                    try Self.chown(relative, in: folder, path: path, owner: who)
                }
            }
        }
        // The bundle container: always new (A2, as on iOS).
        var leftOut = DroppedPrivileges()
        let metadata = ContainerMetadata(identifier: bundleID, contentClass: 1, groups: groups)
        let bundleUUID = try build(in: staging, root: root, into: ContainerLayout.bundleContainersPath, owner: who,
                                   metadata: metadata) { folder, path in
            let app = try Container.makeFolder(name + ".app", in: folder, path: path + "/" + name + ".app")
            defer { close(app) }
            // The one copier of bundles (U1), never `cp -a` as root.
            var copier = BundleCopier(owner: who.uid, group: who.gid)
            do { try copier.copyContents(of: source, into: app, path: appFolder) } catch {
                throw ContainerError("\(appFolder): copying it failed: \(error)")
            }
            leftOut = copier.leftOut
            guard fchown(app, who.uid, who.gid) == 0 else { throw ContainerError("\(path): \(errorText(errno))") }
        }
        if let old = before.apps[bundleID] {
            try remove(ContainerLayout.bundleContainersPath + "/" + old.bundleUUID, root: root, staging: staging)
        }
        unlinkat(root, Device.stagingName, AT_REMOVEDIR)  // when empty
        let after = try DeviceCatalog(root: root, path: backing)
        let app = after.apps[bundleID]
            ?? InstalledApp(bundleID: bundleID, name: name, bundleUUID: bundleUUID, dataUUID: dataUUID, groups: groups)
        return Installed(app: app, updated: before.apps[bundleID] != nil, leftOut: leftOut, catalog: after)
    }

    /// What `uninstall` removed: the app, and the groups no other app lists.
    public struct Uninstalled: Sendable {
        public var app: InstalledApp
        public var removedGroups: [String]
    }

    /// Removes the app's bundle and data containers and each of its group
    /// containers that no other installed app lists (A5). nil when the id
    /// is not installed.
    public func uninstall(bundleID: String) throws -> Uninstalled? {
        let root = try openRoot()
        defer { close(root) }
        let catalog = try DeviceCatalog(root: root, path: backing)
        guard let app = catalog.apps[bundleID] else { return nil }
        let staging = try Container.makeFolder(Device.stagingName, in: root, path: backing)
        defer { close(staging) }
        try remove(app.bundleContainerPath, root: root, staging: staging)
        if let data = app.dataPath { try remove(data, root: root, staging: staging) }
        var removedGroups: [String] = []
        for group in app.groups {
            let others = catalog.apps(listing: group).filter { $0.bundleID != bundleID }
            guard others.isEmpty, let path = catalog.groupPath(group) else { continue }
            try remove(path, root: root, staging: staging)
            removedGroups.append(group)
        }
        unlinkat(root, Device.stagingName, AT_REMOVEDIR)  // when empty
        return Uninstalled(app: app, removedGroups: removedGroups)
    }

    /// The device's root, opened as the user named it (the path up to it
    /// is the user's; from there on nothing follows a link).
    private func openRoot() throws -> Int32 {
        let fd = open(backing, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw ContainerError("\(backing): \(errorText(errno))") }
        return fd
    }

    /// Builds a container named by a new upper-case UUID in `staging`
    /// (`fill` makes its contents), writes its metadata plist and renames
    /// it into the folder at `relative` below the device's root. Returns the UUID.
    @discardableResult
    private func build(in staging: Int32, root: Int32, into relative: String, owner: (uid: uid_t, gid: gid_t),
                       metadata: ContainerMetadata, fill: (Int32, String) throws -> Void) throws -> String {
        let uuid = UUID().uuidString.uppercased()
        let path = backing + "/" + Device.stagingName + "/" + uuid
        let folder = try Container.makeFolder(uuid, in: staging, path: path)
        defer { close(folder) }
        do {
            try fill(folder, path)
            var plist = metadata
            plist.uuid = uuid
            try Device.writePlist(plist, named: ContainerLayout.metadataName, in: folder, path: path, owner: owner)
            guard fchown(folder, owner.uid, owner.gid) == 0 else { throw ContainerError("\(path): \(errorText(errno))") }
            let destination = try Container.openFolder(relative, in: root, path: backing)
            defer { close(destination) }
            guard renameat(staging, uuid, destination, uuid) == 0 else {
                throw ContainerError("\(backing)/\(relative)/\(uuid): \(errorText(errno))")
            }
        } catch {
            Self.removeTree(uuid, in: staging)
            throw error
        }
        return uuid
    }

    /// Takes the container at `relative` out of its place (one rename into
    /// the staging folder), then removes it (TreeRemover: no link followed).
    private func remove(_ relative: String, root: Int32, staging: Int32) throws {
        let parentPath = (relative as NSString).deletingLastPathComponent
        let name = (relative as NSString).lastPathComponent
        let parent = try Container.openFolder(parentPath, in: root, path: backing)
        defer { close(parent) }
        let parked = "removed-" + UUID().uuidString
        guard renameat(parent, name, staging, parked) == 0 else {
            throw ContainerError("\(backing)/\(relative): cannot be removed: \(errorText(errno))")
        }
        Self.removeTree(parked, in: staging)
    }

    private static func removeTree(_ name: String, in folder: Int32) {
        let fd = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        if fd >= 0 {
            _ = TreeRemover.removeContents(ofFolder: FileDescriptor(rawValue: fd))
            close(fd)
        }
        unlinkat(folder, name, AT_REMOVEDIR)
    }

    private static func chown(_ relative: String, in folder: Int32, path: String, owner: (uid: uid_t, gid: gid_t)) throws {
        guard fchownat(folder, relative, owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw ContainerError("\(path)/\(relative): \(errorText(errno))")
        }
    }

    /// The groups of the first entitlements plist directly in the app
    /// folder: `archived-expanded-entitlements.xcent`, else the first
    /// `*.entitlements` by name; none when there is none.
    static func entitlementGroups(in folder: Int32) -> [String] {
        let names = ((try? BundleCopier.names(in: folder, path: "")) ?? []).map(BundleCopier.string)
        let candidates = names.filter { $0 == "archived-expanded-entitlements.xcent" }
            + names.filter { $0.hasSuffix(".entitlements") }
        for name in candidates {
            if let groups = BundleIdentifier.propertyList(named: name, inFolder: folder)?[DeviceCatalog.groupsKey] as? [String] {
                return groups
            }
        }
        return []
    }
}
