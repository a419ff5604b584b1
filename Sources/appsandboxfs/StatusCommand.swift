import AppSandboxFS
import ArgumentParser
import DriverRuntime
import Foundation
import Glibc
import MountInfo

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        _superCommandName: "appsandboxfs",
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
        let wanted = mountpoints.isEmpty ? nil : Set(mountpoints.map(absolutePath))
        var mounts = StatusEntry.all(only: wanted)
        var missing: [String] = []
        if let wanted {
            mounts = mounts.filter { wanted.contains($0.mountpoint) }
            missing = wanted.filter { path in !mounts.contains { $0.mountpoint == path && $0.state != .gone } }.sorted()
        }
        if json {
            try JSONOutput.print(Output(mounts: mounts))
        } else {
            print(StatusEntry.table(mounts), terminator: "")
        }
        for path in missing {
            FileHandleless.warn("\(path): not a mounted container")
        }
        if mounts.contains(where: { $0.state == .notAnswering }) {
            // A probe thread is still stuck in the kernel on that mount, and
            // nothing can free it: leave at once, skipping exit handlers
            // that would wait for every thread (LeakSanitizer's does).
            fflush(nil)
            _exit(missing.isEmpty ? 2 : 1)
        }
        if !missing.isEmpty { throw ExitCode(1) }
        if mounts.contains(where: { $0.state == .stale }) { throw ExitCode(2) }
    }

    struct Output: Encodable {
        var schema = "appsandboxfs.status/1"
        /// This appsandboxfs (`--version`); each driver's is in its options.
        var version = Version.description
        var mounts: [StatusEntry]
    }
}

/// One line of `status`.
struct StatusEntry: Encodable {
    enum State: String, Encodable {
        case mounted, stale, unlisted, gone
        /// Listed, no live record, and statfs got no answer in time: a
        /// driver lives but hangs (or is stopped).
        case notAnswering = "not-answering"
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
    /// The disk of a `--capacity` mount (Q4), nil for other mounts.
    var capacity: CapacityUse? = nil
    /// The device state (P5), nil when the driver left no record.
    var deviceState: String? = nil

    enum CodingKeys: String, CodingKey {
        case mountpoint, backing, appName, pid, state, started, mountOptions, options, capacity, deviceState
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
        try container.encode(capacity, forKey: .capacity)
        try container.encode(deviceState, forKey: .deviceState)
    }

    /// The mount table's container mounts matched with the drivers'
    /// records, then the records that match no mount.
    /// `only`: these mountpoints, the others not even probed (a mount
    /// whose driver hangs would hang a statfs of it).
    static func all(only: Set<String>? = nil) -> [StatusEntry] {
        var records = StatusFile.records().filter { only?.contains($0.record.mountpoint) ?? true }
        var entries: [StatusEntry] = []
        for mount in MountTable.entries() where mount.isContainer && (only?.contains(mount.mountpoint) ?? true) {
            // A record is this mount's when its mountpoint, backing directory
            // and device agree with the line (the line alone proves nothing).
            let index = records.firstIndex { $0.record.mountpoint == mount.mountpoint && mount.matches($0.record) && $0.alive }
                ?? records.firstIndex { $0.record.mountpoint == mount.mountpoint && mount.matches($0.record) }
            let found = index.map { records.remove(at: $0) }
            // Without a record the mount itself is asked, in bounded time
            // (a driver that hangs must not hang `status`).
            let state: StatusEntry.State = switch found.map({ $0.alive ? MountTable.Probe.answering : .stale })
                ?? MountTable.probe(mount.mountpoint) {
            case .answering: .mounted
            case .stale: .stale
            case .notAnswering: .notAnswering
            }
            // Measuring statfs's the mount too: only once it answered.
            let capacity = state == .mounted ? found?.record.options.capacity : nil
            entries.append(StatusEntry(
                mountpoint: mount.mountpoint, backing: mount.source, appName: found?.record.appName,
                pid: found?.record.pid, state: state, started: found?.record.started,
                mountOptions: mount.options.joined(separator: ","), options: found?.record.options,
                capacity: capacity.flatMap { size in
                    MountTable.probe(mount.mountpoint) == .answering ? CapacityUse.measure(mount.mountpoint, size: size) : nil
                },
                deviceState: found?.record.deviceState))
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
            // Mountpoints, backing folders and app names are chosen by
            // others (any user's own FUSE mount of this type is listed):
            // escaped as in a denial line, so that none sends a terminal
            // escape sequence to whoever runs status.
            rows.append([entry.mountpoint, entry.backing, entry.appName ?? "-", entry.pid.map(String.init) ?? "-",
                         entry.state.rawValue, entry.started ?? "-", options.isEmpty ? "-" : options]
                .map(\.escapedForTerminal))
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
