import Foundation
import Glibc
import SystemPackage

/// What a driver says about itself, for `appsandboxfs status`: the kernel's
/// mount table knows the mountpoint and the backing directory (the mount's
/// source) but not the driver's pid nor the options it was started with.
///
/// The driver writes one record, `<state dir>/<pid>.json`, once its mount is
/// ready, and removes it when it exits. A driver that was killed (SIGKILL)
/// leaves its record behind: `status` tells it from a live one by the pid
/// and the process's start time, and the next driver to start removes it.
///
/// The state dir is $APPSANDBOXFS_STATE_DIR, else /run/appsandboxfs for root,
/// else $XDG_RUNTIME_DIR/appsandboxfs, else /tmp/appsandboxfs-<uid>. It must
/// be a folder (not a link) owned by this user that no one else may write
/// (it is refused otherwise: someone else made it, in /tmp say), and records
/// are written and read through its descriptor without following links.
public struct MountRecord: Codable, Equatable, Sendable {
    public var pid: Int32
    /// Field 22 of /proc/<pid>/stat (clock ticks after boot): a pid that was
    /// reused by another process has another start time.
    public var processStart: UInt64
    public var mountpoint: String
    public var backing: String
    public var appName: String
    /// When the mount became ready (ISO 8601, UTC).
    public var started: String
    public var options: Options
    /// st_dev of the mount (the kernel's "major:minor" in the mount table):
    /// ties the record to the mount, whatever fsname the table shows.
    public var device: UInt64?
    /// The driver's `appsandboxfs --version`.
    public var version: String?
    /// The device state (P5: unlocked, locked, before-first-unlock), kept
    /// up to date by the driver; nil in records of older drivers.
    public var deviceState: String?

    /// The options the driver was started with (defaults included).
    public struct Options: Codable, Equatable, Sendable {
        public var bundle: String?
        public var keepTmp: Bool
        public var denialLog: String?
        public var log: String?
        public var cacheTimeout: Double
        public var writeback: Bool
        public var keepCache: Bool
        public var threads: Int
        public var debug: Bool
        /// Whether passthrough was asked for (the kernel may still refuse it).
        public var passthrough: Bool?
        /// The `-o` options for libfuse, one per element.
        public var mountOptions: [String]
        /// `--capacity` in bytes (Q1), nil without one. Optional when
        /// decoding: records of older drivers lack it.
        public var capacity: Int64? = nil

        public init(bundle: String?, keepTmp: Bool, denialLog: String?, log: String?, cacheTimeout: Double,
                    writeback: Bool, keepCache: Bool, threads: Int, debug: Bool, passthrough: Bool?,
                    mountOptions: [String], capacity: Int64? = nil) {
            self.bundle = bundle
            self.keepTmp = keepTmp
            self.denialLog = denialLog
            self.log = log
            self.cacheTimeout = cacheTimeout
            self.writeback = writeback
            self.keepCache = keepCache
            self.threads = threads
            self.debug = debug
            self.passthrough = passthrough
            self.mountOptions = mountOptions
            self.capacity = capacity
        }

        enum CodingKeys: String, CodingKey {
            case bundle, keepTmp, denialLog, log, cacheTimeout, writeback, keepCache, threads, debug, passthrough, mountOptions, capacity
        }

        /// Every key always, null when not given (decoding is synthesized).
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(bundle, forKey: .bundle)
            try container.encode(keepTmp, forKey: .keepTmp)
            try container.encode(denialLog, forKey: .denialLog)
            try container.encode(log, forKey: .log)
            try container.encode(cacheTimeout, forKey: .cacheTimeout)
            try container.encode(writeback, forKey: .writeback)
            try container.encode(keepCache, forKey: .keepCache)
            try container.encode(threads, forKey: .threads)
            try container.encode(debug, forKey: .debug)
            try container.encode(passthrough, forKey: .passthrough)
            try container.encode(mountOptions, forKey: .mountOptions)
            try container.encode(capacity, forKey: .capacity)
        }

        /// The options as `mount -o` / fstab would spell them (the mount
        /// helper's names), e.g. `cache_timeout=1,threads=10,keep_tmp,ro`.
        public var asMountOptions: String {
            var parts = ["cache_timeout=\(formatSeconds(cacheTimeout))", "threads=\(threads)"]
            if writeback { parts.append("writeback") }
            if keepCache { parts.append("keep_cache") }
            if keepTmp { parts.append("keep_tmp") }
            if debug { parts.append("debug") }
            if passthrough == false { parts.append("nopassthrough") }
            if let bundle { parts.append("bundle=\(bundle)") }
            if let capacity { parts.append("capacity=\(capacity)") }
            if let denialLog { parts.append("denial_log=\(denialLog)") }
            if let log { parts.append("log=\(log)") }
            return (parts + mountOptions).joined(separator: ",")
        }
    }
}

/// A record with a number JSON cannot hold (a cache timeout that is not finite).
struct RecordNotWritable: Error, CustomStringConvertible {
    var description: String { "a value of the record has no JSON form" }
}

public enum StatusFile {
    /// Where records live.
    public static var directory: String {
        if let override = nonEmptyEnvironment("APPSANDBOXFS_STATE_DIR") { return override }
        if geteuid() == 0 { return "/run/appsandboxfs" }
        if let runtime = nonEmptyEnvironment("XDG_RUNTIME_DIR") { return runtime + "/appsandboxfs" }
        return "/tmp/appsandboxfs-\(geteuid())"
    }

    /// Where drivers keep the flock(2) files that order two drivers of one
    /// container around its tmp (ContainerTmp): inside `directory`, and
    /// never listed with the records.
    public static var lockDirectory: String { directory + "/tmp-locks" }

    /// The folder of the drivers' tmp and root locks (ContainerTmp), made
    /// if need be and checked as a state folder; nil when it cannot be
    /// (then the locks are taken on the backing folder itself). The
    /// driver keeps it for its life; `update` takes the root lock there.
    public static func openLockFolder() -> FileDescriptor? {
        (try? StateFolder(directory, create: true))
            .flatMap { _ in try? StateFolder(lockDirectory, create: true) }?.duplicate()
            .map { FileDescriptor(rawValue: $0) }
    }

    /// The driver's own record, removed by `remove()` at exit.
    public struct Published: Sendable {
        public let folder: StateFolder
        public let name: String
        public func remove() { folder.remove(name) }

        /// Rewrites the record with a new device state (`appsandboxfs lock`).
        public func update(deviceState: String) {
            guard let data = folder.read(name),
                  var record = try? JSONDecoder().decode(MountRecord.self, from: Data(data)) else { return }
            record.deviceState = deviceState
            guard let text = record.jsonText() else { return }
            try? folder.write(name, Array(text.utf8))
        }
    }

    /// Called by the driver once its mount is ready. Never fails the mount:
    /// when the record cannot be written, `status` shows the mount without
    /// a pid, and a warning says why.
    /// `device` is the mount's st_dev as the file system read it from the
    /// mount table (not stat(2): the mount is not served yet, and a stat
    /// would wait for this very driver).
    static func publish(_ options: MountRecord.Options, backing: String, mountpoint: String, appName: String,
                        device: UInt64?, deviceState: String) -> Published? {
        let pid = getpid()
        let record = MountRecord(
            pid: pid, processStart: processStartTime(pid) ?? 0, mountpoint: mountpoint, backing: backing,
            appName: appName, started: iso8601(Date()), options: options, device: device, version: Version.description,
            deviceState: deviceState)
        let path = directory
        do {
            let folder = try StateFolder(path, create: true)
            pruneDeadRecords(in: folder)
            let name = "\(pid).json"
            guard let text = record.jsonText() else { throw RecordNotWritable() }
            try folder.write(name, Array(text.utf8))
            return Published(folder: folder, name: name)
        } catch {
            FileHandleless.warn("cannot write the status record in \(path) (`appsandboxfs status` will not show this driver's pid and options): \(error)")
            return nil
        }
    }

    /// Every record in the state dir, with whether its driver still runs;
    /// none when the folder is missing. Throws when it cannot be read or is
    /// not safe: for a caller that must not go on without them
    /// (`run --confine`, which hides what they name).
    public static func recordsOrFailure() throws -> [(record: MountRecord, alive: Bool)] {
        let folder: StateFolder
        do {
            folder = try StateFolder(directory, create: false)
        } catch is StateFolder.Missing {
            return []
        }
        return records(in: folder)
    }

    /// Every readable record in the state dir, with whether its driver still
    /// runs. None when the folder is missing or not safe (a warning says why).
    public static func records() -> [(record: MountRecord, alive: Bool)] {
        let folder: StateFolder
        do {
            folder = try StateFolder(directory, create: false)
        } catch is StateFolder.Missing {
            return []
        } catch {
            FileHandleless.warn("ignoring the status records: \(error)")
            return []
        }
        return records(in: folder)
    }

    private static func records(in folder: StateFolder) -> [(record: MountRecord, alive: Bool)] {
        folder.names().filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted().compactMap { name in
            guard let data = folder.read(name),
                  let record = try? JSONDecoder().decode(MountRecord.self, from: Data(data)) else { return nil }
            return (record, isAlive(record))
        }
    }

    /// The process is still the one that wrote the record, and has not
    /// ended (a zombie that nobody reaped has ended).
    public static func isAlive(_ record: MountRecord) -> Bool {
        guard let (state, start) = processState(record.pid), state != "Z", state != "X" else { return false }
        return record.processStart == 0 || start == record.processStart
    }

    /// Records of drivers that were killed: removed when the next driver
    /// starts (status itself changes nothing).
    private static func pruneDeadRecords(in folder: StateFolder) {
        for (record, alive) in records(in: folder) where !alive {
            folder.remove("\(record.pid).json")
            folder.remove("\(record.pid).control")
        }
    }

    /// Field 22 of /proc/<pid>/stat. The command name (field 2) is in
    /// parentheses and may hold spaces: count from the last ")".
    public static func processStartTime(_ pid: Int32) -> UInt64? { processState(pid)?.start }

    /// Fields 3 (the state: R, S, D, Z ...) and 22 of /proc/<pid>/stat.
    public static func processState(_ pid: Int32) -> (state: Substring, start: UInt64)? {
        guard let text = try? String(contentsOfFileWithoutFoundation: "/proc/\(pid)/stat"),
              let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); field 22 is fields[19].
        guard fields.count > 19, let start = UInt64(fields[19]) else { return nil }
        return (fields[0], start)
    }
}

public func nonEmptyEnvironment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
}

/// 1 for 1.0, 0.5 for 0.5.
public func formatSeconds(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}
