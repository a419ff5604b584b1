import AppSandboxFS
import ContainerBackup
import DriverRuntime
import SandboxPolicy

/// `purge DEVICE` without `--app` (Z2): what iOS does to a device when
/// storage runs low. Each app that is neither launched nor suspended (no
/// live launch record) has its data container purged as `purge --app`
/// purges it (K2: Library/Caches and tmp, marked files kept); each group
/// none of whose apps is launched has its Library/Caches purged. A launched
/// or suspended app, and a group one of whose apps is, is left as it is,
/// and said so. Works on the backing directory, the device mounted or not.
struct DevicePurge {
    let device: DeviceArgument
    let targets: [Purge.Target]
    let dryRun: Bool

    /// One container purged or left.
    struct Entry {
        /// The bundle id or group id.
        var id: String
        var kind: Kind
        /// Its backing directory.
        var backing: String
        /// Why it was left, or nil when it was purged.
        var left: String?
        var outcomes: [Purge.Outcome] = []

        enum Kind: String { case app, group }
    }

    func run(json: Bool) throws {
        let entries = try purge()
        let problems = entries.reduce(0) { $0 + $1.outcomes.reduce(0) { $0 + $1.problems.count } }
        if json {
            try JSONOutput.print(DevicePurgeOutput(device: device.backing, dryRun: dryRun, entries: entries))
            for entry in entries {
                for outcome in entry.outcomes {
                    for problem in outcome.problems { FileHandleless.warn("\(entry.backing)/\(problem.path): \(problem.error)") }
                }
            }
        } else {
            for entry in entries {
                if let left = entry.left {
                    print("left \(entry.id): \(left)")
                    continue
                }
                print("\(entry.id) (\(entry.kind == .app ? "data container" : "group container")):")
                _ = PurgeCommand.printOutcomes(entry.outcomes, dryRun: dryRun, prefix: "  ")
            }
        }
        if problems > 0 { throw Failure("\(device.path): \(problems) entries could not be purged") }
    }

    /// Purges what may be purged; the apps by bundle id, then the groups by
    /// group id.
    func purge() throws -> [Entry] {
        let catalog = try device.catalog()
        var launched: [String: [LaunchRecord]] = [:]
        for record in Launches.live(backing: device.backing) { launched[record.bundleID, default: []].append(record) }
        var entries: [Entry] = []
        for app in catalog.sortedApps {
            guard let dataPath = app.dataPath else { continue }
            var entry = Entry(id: app.bundleID, kind: .app, backing: device.backing + "/" + dataPath)
            if let records = launched[app.bundleID] {
                let state = records.contains(where: \.suspended) ? "suspended" : "launched"
                let pids = records.map { String($0.pid) }.joined(separator: ", ")
                entry.left = "\(state) (pid \(pids)): its Library/Caches and tmp are kept"
            } else {
                entry.outcomes = try purge(entry.backing, targets)
            }
            entries.append(entry)
        }
        guard targets.contains(.caches) else { return entries }
        for (group, uuid) in catalog.groupContainers.sorted(by: { $0.key < $1.key }) {
            var entry = Entry(id: group, kind: .group, backing: device.backing + "/" + ContainerLayout.groupContainersPath + "/" + uuid)
            let running = catalog.sortedApps.filter { $0.groups.contains(group) && launched[$0.bundleID] != nil }
            if !running.isEmpty {
                entry.left = "its app \(running.map(\.bundleID).joined(separator: ", ")) is launched: its Library/Caches is kept"
            } else {
                entry.outcomes = try purge(entry.backing, [.caches])
            }
            entries.append(entry)
        }
        return entries
    }

    private func purge(_ root: String, _ targets: [Purge.Target]) throws -> [Purge.Outcome] {
        do {
            return try Purge.run(root: root, targets: targets, dryRun: dryRun)
        } catch {
            throw Failure("\(root): \(error)")
        }
    }
}

/// `purge DEVICE --json` (Z2): each container, purged or left.
struct DevicePurgeOutput: Encodable {
    var schema = "appsandboxfs.purge-device/1"
    /// The device's backing directory.
    var device: String
    var dryRun: Bool
    var containers: [Container]

    struct Container: Encodable {
        /// The bundle id or the group id.
        var id: String
        /// "app" (its data container) or "group".
        var kind: String
        /// The backing directory.
        var container: String
        /// Why it was left as it is; absent when it was purged.
        var left: String?
        var targets: [PurgeOutput.Target]
    }

    init(device: String, dryRun: Bool, entries: [DevicePurge.Entry]) {
        self.device = device
        self.dryRun = dryRun
        containers = entries.map { entry in
            Container(id: entry.id, kind: entry.kind.rawValue, container: entry.backing, left: entry.left,
                      targets: PurgeOutput(container: entry.backing, dryRun: dryRun, outcomes: entry.outcomes).targets)
        }
    }
}
