import Foundation
import Glibc
import POSIXHelpers
import SandboxPolicy

/// A device's backing directory (part three, A1): the folders of an empty
/// device, the record that marks it as one, and the container manager's
/// metadata plists of its containers.
///
/// Every step from the device's root on is relative to a descriptor and
/// follows no link, as for a container (`Container.create`).
public struct Device: Sendable {
    public let backing: String

    public init(backing: String) {
        self.backing = backing
    }

    /// The file at the device's root that tells `mount` and the verbs that
    /// the folder is a device (an XML plist: `AppSandboxFSDevice` = 1).
    public static let recordName = ".appsandboxfs-device.plist"
    /// Where `install` and `uninstall` build and take apart containers, so
    /// that a container appears in its place whole and leaves it at once.
    static let stagingName = ".appsandboxfs-staging"

    /// Whether `path` holds a device record (a regular file, not a link).
    public static func isDevice(_ path: String) -> Bool {
        var status = stat()
        return lstat(path + "/" + recordName, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
    }

    /// Makes an empty device in `backing` (created if missing, its parent
    /// must exist), with `protection` as the default class of every data
    /// and group container (P4). A folder that already holds entries other
    /// than a device's is refused.
    public func create(protection: ProtectionClass?) throws {
        let parent = (backing as NSString).deletingLastPathComponent
        let parentFD = open(parent.isEmpty ? "/" : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parentFD >= 0 else { throw ContainerError("\(parent): \(errorText(errno))") }
        defer { close(parentFD) }
        let root = try Container.makeFolder((backing as NSString).lastPathComponent, in: parentFD, path: backing)
        defer { close(root) }
        let known = Set([Self.recordName, Self.stagingName] + ContainerLayout.deviceFolders.filter { !$0.contains("/") })
        let present = (try? BundleCopier.names(in: root, path: backing).map(BundleCopier.string)) ?? []
        if let stranger = present.first(where: { !known.contains($0) }) {
            throw ContainerError("\(backing): not empty (\(stranger)): a device is made in an empty folder")
        }
        for folder in ContainerLayout.deviceFolders {
            let fd = try Container.openFolder(folder, in: root, path: backing, create: true)
            close(fd)
        }
        try Self.writePlist(["AppSandboxFSDevice": 1], named: Self.recordName, in: root, path: backing, owner: nil)
        if let protection {
            try Container(backing: backing, layout: .device).setDefaultProtectionClass(protection)
        }
    }

    /// Makes a group container's folders (G1) in the folder `folder`, owned
    /// by `owner` (`install`, and a device restore of its domain, M2).
    public static func layOutGroup(in folder: Int32, path: String, owner: (uid: uid_t, gid: gid_t)) throws {
        for relative in ContainerLayout.groupFolders {
            let fd = try Container.openFolder(relative, in: folder, path: path, create: true)
            defer { close(fd) }
            guard fchown(fd, owner.uid, owner.gid) == 0 else {
                throw ContainerError("\(path)/\(relative): cannot give it to \(owner.uid): \(errorText(errno))")
            }
        }
    }

    /// Writes a new XML property list `name` in `folder`, owned by `owner`
    /// (nil: the driver's user), mode 0644.
    static func writePlist<Plist: Encodable>(_ plist: Plist, named name: String, in folder: Int32, path: String,
                                             owner: (uid: uid_t, gid: gid_t)?) throws {
        // PropertyListEncoder: see ContainerMetadata for why not PropertyListSerialization.
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .xml
        let data = try encoder.encode(plist)
        let fd = openat(folder, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ContainerError("\(path)/\(name): \(errorText(errno))") }
        defer { close(fd) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == data.count, owner.map({ fchown(fd, $0.uid, $0.gid) == 0 }) ?? true else {
            throw ContainerError("\(path)/\(name): cannot be written: \(errorText(errno))")
        }
    }
}
