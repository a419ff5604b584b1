import BackingStore
import DriverRuntime
import Foundation
import Glibc

/// The apps `launch` started (A2, A4, A5, Z1): one record per launch in the
/// drivers' state folder, `<pid>.launch` (the pid of the confined world's
/// first process, whose descendants are the app's processes), written
/// while `launch` waits and removed when it returns. A record whose process
/// has ended, or is another process now (its start time differs), is a
/// launch that is over: removed when read.
struct LaunchRecord: Codable {
    var pid: Int32
    var start: UInt64
    /// The device's backing directory.
    var backing: String
    var bundleID: String
    var suspended: Bool
}

enum Launches {
    private static func name(_ pid: Int32) -> String { "\(pid).launch" }

    static func publish(_ record: LaunchRecord) throws {
        let folder = try StateFolder(StatusFile.directory, create: true)
        try folder.write(name(record.pid), Array(JSONOutput.data(record)))
    }

    static func remove(pid: Int32) {
        (try? StateFolder(StatusFile.directory, create: false))?.remove(name(pid))
    }

    /// The running launches on the device at `backing` (of `bundleID` only,
    /// when given).
    static func live(backing: String, bundleID: String? = nil) -> [LaunchRecord] {
        guard let folder = try? StateFolder(StatusFile.directory, create: false) else { return [] }
        return folder.names().filter { $0.hasSuffix(".launch") && !$0.hasPrefix(".") }.sorted().compactMap { file in
            guard let data = folder.read(file),
                  let record = try? JSONDecoder().decode(LaunchRecord.self, from: Data(data)) else { return nil }
            guard let (state, start) = StatusFile.processState(record.pid), state != "Z", state != "X",
                  start == record.start else {
                folder.remove(file)
                return nil
            }
            guard record.backing == backing, bundleID == nil || record.bundleID == bundleID else { return nil }
            return record
        }
    }

    static func setSuspended(_ suspended: Bool, _ records: [LaunchRecord]) throws {
        for var record in records {
            record.suspended = suspended
            try publish(record)
        }
    }

    /// A launch's processes: its world's first process and every
    /// descendant, parents before children (from /proc: each process's
    /// parent, field 4 of /proc/<pid>/stat).
    static func processes(of record: LaunchRecord) -> [pid_t] {
        var children: [pid_t: [pid_t]] = [:]
        for name in directoryNames("/proc") {
            guard let pid = pid_t(name), let text = try? String(contentsOfFileWithoutFoundation: "/proc/\(pid)/stat"),
                  let close = text.lastIndex(of: ")") else { continue }
            let fields = text[text.index(after: close)...].split(separator: " ")
            guard fields.count > 1, let parent = pid_t(fields[1]) else { continue }
            children[parent, default: []].append(pid)
        }
        var found = [record.pid]
        var index = 0
        while index < found.count {
            found += children[found[index]] ?? []
            index += 1
        }
        return found
    }

    /// Sends `signal` to every process of these launches.
    static func signal(_ records: [LaunchRecord], _ signal: Int32) {
        for record in records {
            for pid in processes(of: record) { Glibc.kill(pid, signal) }
        }
    }

    /// Ends every process of these launches (SIGKILL to each world's first
    /// process ends its PID namespace) and waits, up to five seconds, for
    /// them to be gone.
    static func kill(_ records: [LaunchRecord]) {
        signal(records, SIGKILL)
        for _ in 0..<500 {
            let gone = records.allSatisfy { record in
                guard let process = StatusFile.processState(record.pid) else { return true }
                return process.start != record.start || process.state == "Z"
            }
            if gone { break }
            usleep(10_000)
        }
        records.forEach { remove(pid: $0.pid) }
    }

    /// The refusal of a verb that would change an app while it runs (A2,
    /// A5), or nil when it does not run; with `kill`, its processes end
    /// first.
    static func refuseIfLaunched(backing: String, bundleID: String, kill: Bool, verb: String) -> Failure? {
        let running = live(backing: backing, bundleID: bundleID)
        guard !running.isEmpty else { return nil }
        if kill {
            self.kill(running)
            return nil
        }
        let pids = running.map { String($0.pid) }.joined(separator: ", ")
        return Failure("\(bundleID) is launched (pid \(pids)): \(verb) refused while it runs (give --kill to end it first); nothing changed")
    }

    static func directoryNames(_ path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        return BackingStore.directoryNames(closing: dir)
    }
}
