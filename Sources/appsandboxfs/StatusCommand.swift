import ArgumentParser
import Foundation
import Glibc

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "List the mounted containers: mountpoint, backing directory, app, driver pid, state and options.",
        discussion: """
            The mounts come from the kernel's mount table (type fuse.appsandboxfs, in this
            mount namespace), the pids and options from the record each driver keeps
            while it runs (in /run/appsandboxfs as root; see docs/cli.md). STATE is
            mounted (the driver serves the mount), stale (the driver died: unmount it),
            unlisted (the driver runs, but this mount table does not list its mount) or
            gone (the record of a killed driver; the next mount removes it). With
            MOUNTPOINT arguments, only those are shown.
            Exit status: 0; 2 when a mount shown is stale; 1 when a MOUNTPOINT given is
            not a mounted container.
            Examples:
              appsandboxfs status
              appsandboxfs status --json | jq -r '.mounts[] | "\\(.mountpoint) \\(.pid)"'
              appsandboxfs status /mnt/MyApp || appsandboxfs unmount /mnt/MyApp
            """)

    @Argument(help: "Show only these mountpoints.")
    var mountpoints: [String] = []

    @Flag(help: "Print JSON for tools instead of a table.")
    var json = false

    func run() throws {
        var mounts = StatusEntry.all()
        var missing: [String] = []
        if !mountpoints.isEmpty {
            let wanted = mountpoints.map(absolutePath)
            mounts = mounts.filter { wanted.contains($0.mountpoint) }
            missing = wanted.filter { path in !mounts.contains { $0.mountpoint == path && $0.state != .gone } }
        }
        if json {
            try JSONOutput.print(Output(mounts: mounts))
        } else {
            print(StatusEntry.table(mounts), terminator: "")
        }
        for path in missing {
            FileHandleless.warn("\(path): not a mounted container")
        }
        if !missing.isEmpty { throw ExitCode(1) }
        if mounts.contains(where: { $0.state == .stale }) { throw ExitCode(2) }
    }

    struct Output: Encodable {
        var schema = "appsandboxfs.status/1"
        var mounts: [StatusEntry]
    }
}

/// One line of `status`.
struct StatusEntry: Encodable {
    enum State: String, Encodable {
        case mounted, stale, unlisted, gone
    }

    var mountpoint: String
    var backing: String
    var appName: String?
    var pid: Int32?
    var state: State
    var started: String?
    /// The kernel's options of the mount (mountinfo's per-mount and
    /// super-block options), nil when it is not in the mount table.
    var mountOptions: String?
    /// What the driver was started with, nil when it left no record.
    var options: MountRecord.Options?
    /// The device state (P5), nil when the driver left no record.
    var deviceState: String? = nil

    enum CodingKeys: String, CodingKey {
        case mountpoint, backing, appName, pid, state, started, mountOptions, options, deviceState
    }

    /// Every key always, null when unknown: a stable shape for tools.
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(mountpoint, forKey: .mountpoint)
        try container.encode(backing, forKey: .backing)
        try container.encode(appName, forKey: .appName)
        try container.encode(pid, forKey: .pid)
        try container.encode(state, forKey: .state)
        try container.encode(started, forKey: .started)
        try container.encode(mountOptions, forKey: .mountOptions)
        try container.encode(options, forKey: .options)
        try container.encode(deviceState, forKey: .deviceState)
    }

    /// The mount table's container mounts matched with the drivers'
    /// records, then the records that match no mount.
    static func all() -> [StatusEntry] {
        var records = StatusFile.records()
        var entries: [StatusEntry] = []
        for mount in ContainerMountInfo.entries() {
            let index = records.firstIndex { $0.record.mountpoint == mount.mountpoint && $0.record.backing == mount.source && $0.alive }
                ?? records.firstIndex { $0.record.mountpoint == mount.mountpoint && $0.record.backing == mount.source }
            let found = index.map { records.remove(at: $0) }
            let alive = found?.alive ?? !MountChecks.isStale(mount.mountpoint)
            entries.append(StatusEntry(
                mountpoint: mount.mountpoint, backing: mount.source, appName: found?.record.appName,
                pid: found?.record.pid, state: alive ? .mounted : .stale, started: found?.record.started,
                mountOptions: mount.options, options: found?.record.options, deviceState: found?.record.deviceState))
        }
        for (record, alive) in records {
            entries.append(StatusEntry(
                mountpoint: record.mountpoint, backing: record.backing, appName: record.appName, pid: record.pid,
                state: alive ? .unlisted : .gone, started: record.started, mountOptions: nil, options: record.options,
                deviceState: record.deviceState))
        }
        return entries
    }

    static func table(_ entries: [StatusEntry]) -> String {
        if entries.isEmpty { return "No containers are mounted.\n" }
        var rows = [["MOUNTPOINT", "BACKING", "APP", "PID", "STATE", "STARTED", "OPTIONS"]]
        for entry in entries {
            var options = entry.options?.asMountOptions ?? ""
            if entry.mountOptions?.split(separator: ",").first == "ro" && !options.split(separator: ",").contains("ro") {
                options = options.isEmpty ? "ro" : "ro," + options
            }
            rows.append([entry.mountpoint, entry.backing, entry.appName ?? "-", entry.pid.map(String.init) ?? "-",
                         entry.state.rawValue, entry.started ?? "-", options.isEmpty ? "-" : options])
        }
        var widths = [Int](repeating: 0, count: rows[0].count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }
}

/// The container mounts in /proc/self/mountinfo, with their options.
enum ContainerMountInfo {
    struct Entry {
        var mountpoint: String
        var source: String
        /// Per-mount options, then the super-block options.
        var options: String
    }

    static func entries() -> [Entry] {
        guard let text = try? String(contentsOfFileWithoutFoundation: "/proc/self/mountinfo") else { return [] }
        return text.split(separator: "\n").compactMap { line in
            // 36 35 0:52 / /mnt/MyApp rw,nosuid,nodev,relatime shared:1 - fuse.appsandboxfs /srv/MyApp rw,user_id=0,...
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 5, let dash = fields.firstIndex(of: "-"), fields.count > dash + 3,
                  fields[dash + 1] == MountTable.containerType else { return nil }
            var options: [Substring] = []
            for option in fields[5].split(separator: ",") + fields[dash + 3].split(separator: ",")
            where !options.contains(option) {
                options.append(option)
            }
            return Entry(mountpoint: MountTable.unescape(fields[4]), source: MountTable.unescape(fields[dash + 2]),
                         options: options.joined(separator: ","))
        }
    }
}
