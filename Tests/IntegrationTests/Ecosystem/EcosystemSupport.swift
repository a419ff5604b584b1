// Support for the Ecosystem tests: containers mounted the ways users mount
// them (`appsandboxfs mount` in the background, mount(8), an fstab line),
// whose drivers are not children of the test. Each test gets its own
// /tmp/asfs-eco-XXXXXX and, through withEcoMount, always ends unmounted with
// its drivers gone and the folder removed.

import Foundation
import Glibc
import Testing

final class EcoMount {
    let root: String
    let backing: String
    let mountpoint: String
    let appName = "TestApp"
    /// When set, drivers and `status` keep their records here
    /// (APPSANDBOXFS_STATE_DIR), away from other tests' drivers.
    let stateDirectory: String?
    /// The drivers seen serving this mount, stopped at the end if still there.
    private var drivers: Set<Int32> = []

    init(backingName: String = "backing", mountName: String = "mnt", isolatedState: Bool = false,
         parent: String = "/tmp") throws {
        root = try makeTemporaryDirectory(prefix: "asfs-eco", in: parent)
        backing = root + "/" + backingName
        mountpoint = root + "/" + mountName
        stateDirectory = isolatedState ? root + "/state" : nil
        try layOutContainer(at: backing, appName: appName)
        try makeDirectory(mountpoint)
    }

    var isMounted: Bool { isFuseMount(mountpoint) }
    var denialLog: String { root + "/denials.log" }
    var driverLog: String { root + "/driver.log" }

    /// `env APPSANDBOXFS_BIN=... [APPSANDBOXFS_STATE_DIR=...]`: what a
    /// command needs to use the appsandboxfs under test (mount(8) passes the
    /// environment on to its helper).
    var environmentPrefix: [String] {
        ["env", "APPSANDBOXFS_BIN=\(Binaries.appsandboxfs)"] + (stateDirectory.map { ["APPSANDBOXFS_STATE_DIR=\($0)"] } ?? [])
    }

    /// Runs `appsandboxfs ARGS`.
    func appsandboxfs(_ arguments: [String], cwd: String? = nil) -> (status: Int32, stdout: String, stderr: String) {
        runProcess(environmentPrefix + [Binaries.appsandboxfs] + arguments, cwd: cwd, timeout: 60)
    }

    /// Runs any program with the environment prefix (mount, umount, bash ...).
    func command(_ arguments: [String], cwd: String? = nil) -> (status: Int32, stdout: String, stderr: String) {
        runProcess(environmentPrefix + arguments, cwd: cwd, timeout: 60)
    }

    /// `appsandboxfs mount BACKING MNT --app-name TestApp --log ROOT/driver.log EXTRA`
    /// in the background; notes the driver's pid.
    @discardableResult
    func mountInBackground(_ extra: [String] = []) throws -> Int32 {
        let result = appsandboxfs(["mount", backing, mountpoint, "--app-name", appName, "--log", driverLog] + extra)
        guard result.status == 0 else {
            throw SupportError("appsandboxfs mount failed (\(result.status)): \(result.stderr)\n\(tail(readFileText(driverLog)))")
        }
        return try #require(driverPID(), "status names no driver for \(mountpoint)")
    }

    /// The driver serving the mountpoint, from `appsandboxfs status --json`.
    func driverPID() -> Int32? {
        guard let entry = statusEntry(), let pid = entry["pid"] as? Int else { return nil }
        drivers.insert(Int32(pid))
        return Int32(pid)
    }

    /// This mountpoint's object in `appsandboxfs status --json` (the first).
    func statusEntry() -> [String: Any]? {
        let result = appsandboxfs(["status", "--json"])
        guard let object = jsonObject(result.stdout), let mounts = object["mounts"] as? [[String: Any]] else { return nil }
        return mounts.first { $0["mountpoint"] as? String == mountpoint }
    }

    /// Notes a driver to stop at the end (one a test found another way).
    func track(_ pid: Int32) { drivers.insert(pid) }

    /// Unmounts (lazily if need be), waits for the drivers to end (killing
    /// them after 15 s), removes the folder unless the mount would not go.
    func cleanUp(sourceLocation: SourceLocation) {
        if isMounted {
            if runProcess(["fusermount3", "-u", mountpoint], timeout: 30).status != 0 {
                Issue.record("fusermount3 -u \(mountpoint) failed at the end of the test; unmounting lazily",
                             sourceLocation: sourceLocation)
                _ = runProcess(["fusermount3", "-u", "-z", mountpoint], timeout: 30)
            }
        }
        for pid in drivers where !processGone(pid, within: 15) {
            Issue.record("driver \(pid) still ran 15 s after the unmount; killing it", sourceLocation: sourceLocation)
            kill(pid, SIGKILL)
            _ = processGone(pid, within: 15)
        }
        if isMounted { _ = runProcess(["umount", "-l", mountpoint], timeout: 30) }
        if isMounted {
            Issue.record("\(mountpoint) is still mounted; leaving \(root)", sourceLocation: sourceLocation)
        } else {
            removeTree(root)
        }
    }
}

/// Runs `body` with a fresh EcoMount and always cleans up after it.
func withEcoMount<T>(
    backingName: String = "backing", mountName: String = "mnt", isolatedState: Bool = false,
    parent: String = "/tmp", sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (EcoMount) throws -> T
) throws -> T {
    let mount = try EcoMount(backingName: backingName, mountName: mountName, isolatedState: isolatedState,
                             parent: parent)
    defer { mount.cleanUp(sourceLocation: sourceLocation) }
    return try body(mount)
}

/// Whether a process (not our child: a background driver) has ended, waiting
/// up to `seconds`. A zombie counts as ended.
func processGone(_ pid: Int32, within seconds: Double) -> Bool {
    let deadline = monotonicNow() + seconds
    while true {
        let stat = readFileText("/proc/\(pid)/stat")
        if stat.isEmpty { return true }
        if let close = stat.lastIndex(of: ")"), stat[stat.index(after: close)...].hasPrefix(" Z") { return true }
        if monotonicNow() > deadline { return false }
        usleep(20_000)
    }
}

/// A JSON object, or nil.
func jsonObject(_ text: String) -> [String: Any]? {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
}

/// The repository's root: three folders above this file.
let repositoryRoot: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<4 { url.deleteLastPathComponent() }
    return url.path
}()

/// A file of the repository as text ("" when missing).
func repositoryFile(_ relative: String) -> String {
    readFileText(repositoryRoot + "/" + relative)
}

/// The verbs and their options, from the parser itself
/// (`appsandboxfs --experimental-dump-help`). A verb with verbs of its own
/// (`device`) stands for them: `device init` is a verb of the model, run as
/// `appsandboxfs device init`.
struct CommandLineModel {
    struct Verb {
        /// "mount", or "device init" for a verb of a verb.
        var name: String
        /// Every option and flag name, with dashes ("--json", "-o").
        var options: [String]
        var abstract: String
        var discussion: String
        /// The words that run it: ["device", "init"].
        var words: [String] { name.split(separator: " ").map(String.init) }
    }

    var verbs: [Verb]

    static func load() throws -> CommandLineModel {
        let result = runProcess([Binaries.appsandboxfs, "--experimental-dump-help"], timeout: 60)
        let object = try #require(jsonObject(result.stdout), "--experimental-dump-help printed no JSON: \(result.stderr)")
        let command = try #require(object["command"] as? [String: Any])
        func verbs(of command: [String: Any], prefix: String) -> [Verb] {
            let subcommands = command["subcommands"] as? [[String: Any]] ?? []
            return subcommands.flatMap { sub -> [Verb] in
                guard let name = sub["commandName"] as? String, name != "help" else { return [] }
                if let inner = sub["subcommands"] as? [[String: Any]], !inner.isEmpty {
                    return verbs(of: sub, prefix: prefix + name + " ")
                }
                let arguments = sub["arguments"] as? [[String: Any]] ?? []
                var options: [String] = []
                for argument in arguments where (argument["shouldDisplay"] as? Bool) != false {
                    for name in argument["names"] as? [[String: Any]] ?? [] {
                        guard let kind = name["kind"] as? String, let text = name["name"] as? String else { continue }
                        options.append(kind == "short" ? "-" + text : "--" + text)
                    }
                }
                // --help and --version (the top command's, shown by each verb) are ArgumentParser's own.
                return [Verb(name: prefix + name, options: options.filter { $0 != "-h" && $0 != "--help" && $0 != "--version" },
                             abstract: sub["abstract"] as? String ?? "", discussion: sub["discussion"] as? String ?? "")]
            }
        }
        return CommandLineModel(verbs: verbs(of: command, prefix: ""))
    }
}
