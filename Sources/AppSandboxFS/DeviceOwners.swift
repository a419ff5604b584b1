import Foundation
import Glibc
import Locking
import SandboxPolicy

/// What each app of a mounted device owns besides its data container (its
/// bundle container and its groups' containers), for its links (A6). Not
/// read at mount: learned from the containers' metadata plists
/// (`DeviceCatalog`) the first time a data container's link leads into
/// another container, and learned again whenever the device's generation
/// has changed since.
///
/// The generation is the modification times of the three folders that
/// hold the containers: `install` and `uninstall` rename whole containers
/// into and out of them (an update too: a new bundle container, with the
/// groups in its metadata), which the kernel marks on the folder. A catalog
/// read within `settleSeconds` of the latest of those times is used once
/// and not kept: the kernel's file times are coarse (a clock tick), and a
/// second install in the same tick would leave the time as it was.
final class DeviceOwners: Sendable {
    private struct Learned {
        var generation: [Int]
        var byDataUUID: [[UInt8]: AppContainers]
    }

    private let learned = Locked<Learned?>(nil)
    static let settleSeconds = 0.05

    /// What the app of the data container `dataUUID` owns, nil when no
    /// installed app has that data container. `root` is the device's root.
    func owned(dataUUID: [UInt8], root: Int32, path: String) -> AppContainers? {
        learned.withLock { learned in
            let generation = Self.generation(root: root)
            if let known = learned, known.generation == generation { return known.byDataUUID[dataUUID] }
            let map = Self.read(root: root, path: path)
            let newest = Double(generation.max() ?? 0) / 1e9
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let settled = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 - newest > Self.settleSeconds
            learned = settled && !generation.isEmpty ? Learned(generation: generation, byDataUUID: map) : nil
            return map[dataUUID]
        }
    }

    private static func read(root: Int32, path: String) -> [[UInt8]: AppContainers] {
        guard let catalog = try? DeviceCatalog(root: root, path: path) else { return [:] }
        var map: [[UInt8]: AppContainers] = [:]
        for app in catalog.apps.values {
            guard let data = app.dataUUID else { continue }
            let groups = app.groups.compactMap { catalog.groupContainers[$0] }.map { Array($0.utf8) }
            map[Array(data.utf8)] = AppContainers(bundleUUID: Array(app.bundleUUID.utf8), groupUUIDs: Set(groups))
        }
        return map
    }

    /// The containers' folders' modification times in nanoseconds; empty
    /// when one cannot be read.
    private static func generation(root: Int32) -> [Int] {
        var times: [Int] = []
        for folder in [ContainerLayout.bundleContainersPath, ContainerLayout.dataContainersPath, ContainerLayout.groupContainersPath] {
            var status = stat()
            guard fstatat(root, folder, &status, AT_SYMLINK_NOFOLLOW) == 0 else { return [] }
            times.append(status.st_mtim.tv_sec * 1_000_000_000 + status.st_mtim.tv_nsec)
        }
        return times
    }
}
