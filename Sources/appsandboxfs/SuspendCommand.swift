import AppSandboxFS
import ArgumentParser
import DriverRuntime
import Foundation
import Glibc
import POSIXHelpers

/// `appsandboxfs suspend MOUNTPOINT ID` (Z1, Z2): the app's processes
/// stopped, or killed when one holds a lock on a file in a group container
/// (0xdead10cc).
struct SuspendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suspend",
        _superCommandName: "appsandboxfs",
        abstract: "Suspend a launched app (SIGSTOP); kill it instead if it holds a lock on a file in a group container (0xdead10cc).",
        discussion: """
            Every process of the app (each launch's processes and their descendants) is
            stopped. Then, if one of them holds an fcntl, OFD or flock lock on a file in one of
            the device's group containers, all of them are killed (SIGKILL), and one line per
            locked file, `Termination: <bundle id> <process>(<pid>) 0xdead10cc <path>`, is
            appended to the mount's denial log (--denial-log) and printed on standard output,
            as iOS kills an app that is suspended holding a lock its extension would wait on.
            Locks in the app's own data container do not kill it (Z2).
            Exit status: 0 suspended; 3 killed for a lock; 1 when the app is not launched.
            Examples:
              appsandboxfs suspend /mnt/phone com.example.notes
              appsandboxfs suspend /mnt/phone com.example.notes; echo $?
            """)

    @OptionGroup var app: LaunchedAppArguments

    func run() throws {
        let device = try DeviceArgument(self.app.device)
        let bundleID = self.app.bundleID
        let launches = Launches.live(backing: device.backing, bundleID: bundleID)
        guard !launches.isEmpty else { throw Failure("\(device.path): \(bundleID) is not launched; nothing was suspended") }
        // Stopped first, then looked at: a lock taken while the check ran
        // would otherwise be missed. A process forked meanwhile is found by
        // the second walk.
        for _ in 0..<2 { Launches.signal(launches, SIGSTOP) }
        let processes = launches.flatMap(Launches.processes)
        AppLocks.waitUntilStopped(processes)
        let locks = AppLocks.held(by: processes, under: device.shown("Containers/Shared/AppGroup") + "/")
        guard !locks.isEmpty else {
            try Launches.setSuspended(true, launches)
            return
        }
        Launches.kill(launches)
        let lines = locks.map { "Termination: \(bundleID) \($0.process)(\($0.pid)) 0xdead10cc \($0.path)" }
        AppLocks.appendToDenialLog(lines, mountpoint: device.path)
        for line in lines { print(line) }
        throw ExitCode(3)
    }
}

/// `appsandboxfs resume MOUNTPOINT ID` (Z1).
struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        _superCommandName: "appsandboxfs",
        abstract: "Continue a suspended app (SIGCONT).",
        discussion: """
            Exit status: 0 resumed; 1 when the app is not suspended.
            Examples:
              appsandboxfs resume /mnt/phone com.example.notes
            """)

    @OptionGroup var app: LaunchedAppArguments

    func run() throws {
        let device = try DeviceArgument(self.app.device)
        let bundleID = self.app.bundleID
        let suspended = Launches.live(backing: device.backing, bundleID: bundleID).filter(\.suspended)
        guard !suspended.isEmpty else { throw Failure("\(device.path): \(bundleID) is not suspended") }
        try Launches.setSuspended(false, suspended)
        Launches.signal(suspended, SIGCONT)
    }
}

/// The locks an app's processes hold (Z1), found through each process's
/// open descriptors: /proc/<pid>/fdinfo/<fd> lists, as `lock:` lines, the
/// fcntl, OFD and flock locks held through that open file (by the process
/// for fcntl, by the open file for OFD and flock), and /proc/<pid>/fd/<fd>
/// names the file. (/proc/locks gives only device and inode, and no pid for
/// OFD locks.)
enum AppLocks {
    struct Held: Equatable {
        var process: String
        var pid: pid_t
        var path: String
    }

    /// Locks on files whose path starts with `prefix`, one per file (the
    /// first process found holding it).
    static func held(by processes: [pid_t], under prefix: String) -> [Held] {
        var found: [Held] = []
        for pid in processes {
            for fd in Launches.directoryNames("/proc/\(pid)/fd") {
                guard let path = link("/proc/\(pid)/fd/\(fd)"), path.hasPrefix(prefix),
                      !found.contains(where: { $0.path == path }),
                      let info = try? String(contentsOfFileWithoutFoundation: "/proc/\(pid)/fdinfo/\(fd)"),
                      info.split(separator: "\n").contains(where: { $0.hasPrefix("lock:") }) else { continue }
                found.append(Held(process: processName(pid), pid: pid, path: path))
            }
        }
        return found
    }

    /// Waits (up to two seconds) until each process is stopped (state T)
    /// or gone: SIGSTOP takes effect when the process next runs.
    static func waitUntilStopped(_ processes: [pid_t]) {
        for _ in 0..<200 {
            if processes.allSatisfy({ pid in StatusFile.processState(pid).map { $0.state == "T" || $0.state == "Z" } ?? true }) { return }
            usleep(10_000)
        }
    }

    /// Appends `lines` to the denial log file the mount's driver was started
    /// with (its status record names it), each in one write(2) with
    /// O_APPEND, as the driver's own lines: never interleaved with them.
    static func appendToDenialLog(_ lines: [String], mountpoint: String) {
        guard let records = try? StatusFile.recordsOrFailure(),
              let record = records.last(where: { $0.alive && $0.record.mountpoint == mountpoint })?.record,
              let file = record.options.denialLog else { return }
        let fd = open(file, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            FileHandleless.warn("\(file): cannot append the termination lines: \(errorText(errno))")
            return
        }
        defer { close(fd) }
        for line in lines {
            let bytes = Array((line + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        }
    }

    /// The process's name (/proc/<pid>/comm), with anything but printable
    /// ASCII other than space and parentheses as "?".
    static func processName(_ pid: pid_t) -> String {
        let text = (try? String(contentsOfFileWithoutFoundation: "/proc/\(pid)/comm")) ?? "?"
        let name = text.hasSuffix("\n") ? String(text.dropLast()) : text
        return String(name.unicodeScalars.map { $0.value > 0x20 && $0.value < 0x7F && $0 != "(" && $0 != ")" ? Character($0) : "?" })
    }

    private static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
