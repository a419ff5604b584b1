// `launch`, `suspend` and `resume` (G2, G3, F3, Z1, Z2, and the launched
// parts of A2, A4, A5): real devices mounted outside /tmp (launch is
// confined, R1), real processes, real SQLite locks.

import Foundation
import Glibc
import Testing

/// The executable of the test apps: a shell script whose first argument
/// says what to do.
private let appScript = """
    #!/bin/sh
    case "$1" in
    probe)
        echo "cwd=$(pwd)"
        echo "zero=$0"
        echo "home=$HOME"
        echo "tmpdir=$TMPDIR"
        echo "groups=$APPSANDBOXFS_GROUP_CONTAINERS"
        echo "bundles=$(ls "$2/Containers/Bundle/Application" | tr '\\n' ' ')"
        echo "data=$(ls "$2/Containers/Data/Application" | tr '\\n' ' ')"
        echo "shared=$(ls "$2/Containers/Shared/AppGroup" | tr '\\n' ' ')"
        echo "backing=$(ls -A "$3" 2>&1 | tr '\\n' ' ')"
        if [ -e "$2/Containers/Data/Application/$4" ]; then echo "other=visible"; else echo "other=absent"; fi
        if touch "$(pwd)/new" 2>/tmp/touch.err; then echo "bundle=writable"; else echo "bundle=$(cat /tmp/touch.err)"; fi
        echo hello > "$HOME/Documents/note.txt" && echo "documents=writable"
        ;;
    exit) exit "$2" ;;
    signal) kill -TERM $$ ;;
    sleep) touch "$HOME/tmp/started"; exec sleep 120 ;;
    sqlite) exec python3 -c "$2" "$3" ;;
    esac
    """

/// Holds `BEGIN EXCLUSIVE` on the database named by argv[1] (a write lock,
/// fcntl), says so in $HOME/tmp/locked, and waits.
private let sqliteHolder = """
    import os, sqlite3, sys, time
    db = sqlite3.connect(sys.argv[1], isolation_level=None)
    db.execute("create table if not exists notes(text)")
    db.execute("BEGIN EXCLUSIVE")
    db.execute("insert into notes values ('draft')")
    open(os.environ["HOME"] + "/tmp/locked", "w").write("locked")
    time.sleep(120)
    """

@Suite(.serialized) struct LaunchTests {
    /// A device outside /tmp with two apps: Notes (group.com.example.shared)
    /// and Other (group.com.example.other), both running `appScript`.
    private func withTwoApps(_ body: (MountedDevice) throws -> Void) throws {
        let device = try MountedDevice(in: outsideTemporaryFolders)
        defer { device.finish() }
        for (name, id, group) in [("Notes", "com.example.notes", "group.com.example.shared"),
                                  ("Other", "com.example.other", "group.com.example.other")] {
            let folder = try device.makeApp(name + ".app", bundleID: id)
            try writeFile(folder + "/" + name, appScript, mode: 0o755)
            let installed = device.run("install", [folder, "--group", group])
            try #require(installed.status == 0, "\(installed)")
        }
        try body(device)
    }

    private func container(_ device: MountedDevice, _ id: String, _ which: String) -> String {
        device.run("get_app_container", [id, which]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// G2, F3, G3: the app runs from inside its bundle and sees its own
    /// containers only; the .app is read-only; the device's backing
    /// directory is empty; the environment points into its data container.
    @Test func g2LaunchedAppSeesOnlyItsOwnContainers() throws {
        try withTwoApps { device in
            let bundle = container(device, "com.example.notes", "app")
            let data = container(device, "com.example.notes", "data")
            let group = container(device, "com.example.notes", "group.com.example.shared")
            let otherData = container(device, "com.example.other", "data")
            let result = device.run("launch", ["com.example.notes", "--", "probe", device.mountpoint, device.backing,
                                               (otherData as NSString).lastPathComponent])
            #expect(result.status == 0, "\(result)")
            let out = result.stdout
            #expect(out.contains("cwd=\(bundle)\n"), "\(out)")
            #expect(out.contains("zero=\(bundle)/Notes\n"), "\(out)")
            #expect(out.contains("home=\(data)\n"), "\(out)")
            #expect(out.contains("tmpdir=\(data)/tmp/\n"), "\(out)")
            #expect(out.contains("groups={\"group.com.example.shared\":\"\(group)\"}\n"), "\(out)")
            #expect(out.contains("bundles=\((bundle as NSString).deletingLastPathComponent.split(separator: "/").last!) \n"), "\(out)")
            #expect(out.contains("data=\((data as NSString).lastPathComponent) \n"), "\(out)")
            #expect(out.contains("shared=\((group as NSString).lastPathComponent) \n"), "\(out)")
            #expect(out.contains("backing=\n"), "\(out)")
            #expect(out.contains("other=absent\n"), "\(out)")
            #expect(out.contains("bundle=") && out.contains("Read-only file system"), "\(out)")
            #expect(out.contains("documents=writable\n"), "\(out)")
            #expect(readFileText(data + "/Documents/note.txt") == "hello\n")
            // Outside, the other app is untouched and still there.
            #expect(exists(otherData + "/Documents"))
        }
    }

    /// G2: the exit status passes through, 128 + the signal when killed.
    @Test func g2ExitStatusPassesThrough() throws {
        try withTwoApps { device in
            #expect(device.run("launch", ["com.example.notes", "--", "exit", "7"]).status == 7)
            #expect(device.run("launch", ["com.example.notes", "--", "signal"]).status == 128 + SIGTERM)
            #expect(device.run("launch", ["com.example.missing"]).status == 1)
        }
    }

    /// A4, A5, G2: a launched app is listed as launched; uninstall and an
    /// update refuse while it runs; a second launch starts another process;
    /// --kill ends it.
    @Test func a5UninstallRefusesWhileLaunched() throws {
        try withTwoApps { device in
            let data = container(device, "com.example.notes", "data")
            let launch = try spawn([Binaries.appsandboxfs, "launch", device.mountpoint, "com.example.notes", "--", "sleep"],
                                   stdin: "/dev/null", stdout: "/dev/null", stderr: "/dev/null")
            defer { kill(launch, SIGKILL); _ = waitForExit(launch, timeout: 30) }
            #expect(waitUntil { exists(data + "/tmp/started") })
            let listed = device.run("listapps", ["--json"])
            #expect(listed.stdout.contains("\"launched\" : true"), "\(listed)")
            let refused = device.run("uninstall", ["com.example.notes"])
            #expect(refused.status == 1 && refused.stderr.contains("launched"), "\(refused)")
            #expect(exists(data + "/Documents"))
            let update = device.run("install", [device.root + "/builds-1/Notes.app", "--group", "group.com.example.shared"])
            #expect(update.status == 1 && update.stderr.contains("launched"), "\(update)")
            // A second launch of the running app runs.
            #expect(device.run("launch", ["com.example.notes", "--", "exit", "0"]).status == 0)
            let removed = device.run("uninstall", ["com.example.notes", "--kill"])
            #expect(removed.status == 0, "\(removed)")
            #expect(waitForExit(launch, timeout: 30) == .exited(128 + SIGKILL))
            #expect(device.run("get_app_container", ["com.example.notes", "data"]).status == 1)
        }
    }

    /// Z1: an app suspended while it holds a SQLite write lock on a
    /// database in a group container is killed (0xdead10cc): the line on
    /// standard output and in the denial log, exit 3.
    @Test func z1SuspendKillsAppHoldingGroupLock() throws {
        try withTwoApps { device in
            let data = container(device, "com.example.notes", "data")
            let group = container(device, "com.example.notes", "group.com.example.shared")
            let launch = try spawn([Binaries.appsandboxfs, "launch", device.mountpoint, "com.example.notes", "--",
                                    "sqlite", sqliteHolder, group + "/Library/notes.sqlite"],
                                   stdin: "/dev/null", stdout: "/dev/null", stderr: "/dev/null")
            defer { kill(launch, SIGKILL); _ = waitForExit(launch, timeout: 30) }
            #expect(waitUntil { exists(data + "/tmp/locked") })
            let suspended = device.run("suspend", ["com.example.notes"])
            #expect(suspended.status == 3, "\(suspended)")
            let line = suspended.stdout.trimmingCharacters(in: .newlines)
            #expect(line.hasPrefix("Termination: com.example.notes python3("), "\(line)")
            #expect(line.hasSuffix(") 0xdead10cc \(group)/Library/notes.sqlite"), "\(line)")
            #expect(device.denialLines().contains(line), "\(device.denialLines())")
            #expect(waitForExit(launch, timeout: 30) == .exited(128 + SIGKILL))
            #expect(device.run("resume", ["com.example.notes"]).status == 1)
        }
    }

    /// Z2: the same lock in the app's own data container: suspend stops the
    /// app (state T), listapps says suspended, resume continues it.
    @Test func z2SuspendStopsAppHoldingOwnLock() throws {
        try withTwoApps { device in
            let data = container(device, "com.example.notes", "data")
            let launch = try spawn([Binaries.appsandboxfs, "launch", device.mountpoint, "com.example.notes", "--",
                                    "sqlite", sqliteHolder, data + "/Library/notes.sqlite"],
                                   stdin: "/dev/null", stdout: "/dev/null", stderr: "/dev/null")
            defer { kill(launch, SIGKILL); _ = waitForExit(launch, timeout: 30) }
            #expect(waitUntil { exists(data + "/tmp/locked") })
            let python = try #require(descendants(of: launch).last)
            let suspended = device.run("suspend", ["com.example.notes"])
            #expect(suspended.status == 0 && suspended.stdout.isEmpty, "\(suspended)")
            #expect(processStateLetter(python) == "T")
            #expect(device.run("listapps", ["--json"]).stdout.contains("\"suspended\" : true"))
            #expect(device.denialLines().isEmpty)
            #expect(device.run("resume", ["com.example.notes"]).status == 0)
            #expect(processStateLetter(python) != "T")
            #expect(device.run("resume", ["com.example.notes"]).status == 1)
        }
    }

    /// Z2, K2: `purge MOUNTPOINT` without --app on a mounted device. Notes
    /// and Widget share group.com.example.shared, Other has its own group;
    /// Notes is launched. The purge empties Widget's and Other's Caches and
    /// tmp (keeping Widget's X1-marked file) and Other's group Caches, and
    /// leaves Notes's Caches and tmp and the shared group's Caches (one of
    /// its apps runs), naming them; suspended, Notes is still left (its tmp
    /// kept). Once the launch is over a second purge empties them.
    @Test func z2DevicePurgeLeavesLaunchedAppsAndTheirGroups() throws {
        let device = try MountedDevice(in: outsideTemporaryFolders)
        defer { device.finish() }
        for (name, id, group) in [("Notes", "com.example.notes", "group.com.example.shared"),
                                  ("Widget", "com.example.widget", "group.com.example.shared"),
                                  ("Other", "com.example.other", "group.com.example.other")] {
            let folder = try device.makeApp(name + ".app", bundleID: id)
            try writeFile(folder + "/" + name, appScript, mode: 0o755)
            let installed = device.run("install", [folder, "--group", group])
            try #require(installed.status == 0, "\(installed)")
        }
        let notes = container(device, "com.example.notes", "data")
        let widget = container(device, "com.example.widget", "data")
        let other = container(device, "com.example.other", "data")
        let shared = container(device, "com.example.notes", "group.com.example.shared")
        let otherGroup = container(device, "com.example.other", "group.com.example.other")
        for data in [notes, widget, other] {
            try makeDirectory(data + "/Library/Caches/images")
            try writeFile(data + "/Library/Caches/images/a.png", "png")
            try writeFile(data + "/tmp/scratch", "scratch")
        }
        try writeFile(widget + "/Library/Caches/keep.db", "marked")
        #expect(RulesSys.setxattr(widget + "/Library/Caches/keep.db", "com.apple.metadata:com_apple_backup_excludeItem",
                                  Array("com.apple.backupd".utf8)) == 0)
        try writeFile(shared + "/Library/Caches/shared.bin", "shared")
        try writeFile(otherGroup + "/Library/Caches/other.bin", "other")

        let launch = try spawn([Binaries.appsandboxfs, "launch", device.mountpoint, "com.example.notes", "--", "sleep"],
                               stdin: "/dev/null", stdout: "/dev/null", stderr: "/dev/null")
        defer { kill(launch, SIGKILL); _ = waitForExit(launch, timeout: 30) }
        #expect(waitUntil { exists(notes + "/tmp/started") })

        let first = device.run("purge")
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.contains("left com.example.notes: launched (pid "), "\(first.stdout)")
        #expect(first.stdout.contains("left group.com.example.shared: its app com.example.notes is launched"), "\(first.stdout)")
        #expect(first.stdout.contains("com.example.widget (data container):\n"), "\(first.stdout)")
        #expect(first.stdout.contains("  kept Library/Caches/keep.db (file, com.apple.metadata:com_apple_backup_excludeItem)"),
                "\(first.stdout)")
        #expect(try RulesSys.list(widget + "/Library/Caches").get() == ["keep.db"])
        #expect(readFileText(widget + "/Library/Caches/keep.db") == "marked")
        #expect(try RulesSys.list(widget + "/tmp").get() == [])
        #expect(try RulesSys.list(other + "/Library/Caches").get() == [])
        #expect(try RulesSys.list(other + "/tmp").get() == [])
        #expect(try RulesSys.list(otherGroup + "/Library/Caches").get() == [])
        #expect(readFileText(notes + "/Library/Caches/images/a.png") == "png")
        #expect(readFileText(notes + "/tmp/scratch") == "scratch")
        #expect(readFileText(shared + "/Library/Caches/shared.bin") == "shared")

        // Suspended, the app is still left: its tmp is kept.
        #expect(device.run("suspend", ["com.example.notes"]).status == 0)
        let suspended = device.run("purge", ["--tmp"])
        #expect(suspended.status == 0 && suspended.stdout.contains("left com.example.notes: suspended (pid "), "\(suspended)")
        #expect(readFileText(notes + "/tmp/scratch") == "scratch")
        #expect(device.run("resume", ["com.example.notes"]).status == 0)

        // The launch is over: the second purge empties them.
        for pid in descendants(of: launch).reversed() { kill(pid, SIGKILL) }
        kill(launch, SIGKILL)
        _ = waitForExit(launch, timeout: 30)
        #expect(waitUntil { !device.run("listapps", ["--json"]).stdout.contains("\"launched\" : true") })
        let second = device.run("purge", ["--json"])
        #expect(second.status == 0, "\(second)")
        #expect(!second.stdout.contains("\"left\""), "\(second.stdout)")
        #expect(second.stdout.contains("appsandboxfs.purge-device/1"), "\(second.stdout)")
        #expect(try RulesSys.list(notes + "/Library/Caches").get() == [])
        #expect(try RulesSys.list(notes + "/tmp").get() == [])
        #expect(try RulesSys.list(shared + "/Library/Caches").get() == [])
        #expect(try RulesSys.list(widget + "/Library/Caches").get() == ["keep.db"])
    }
}

/// Every descendant of `pid`, parents first.
func descendants(of pid: pid_t) -> [pid_t] {
    var children: [pid_t: [pid_t]] = [:]
    for name in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let child = pid_t(name), let text = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { continue }
        let fields = text[text.index(after: close)...].split(separator: " ")
        if fields.count > 1, let parent = pid_t(fields[1]) { children[parent, default: []].append(child) }
    }
    var found: [pid_t] = []
    var queue = [pid]
    while let next = queue.first {
        queue.removeFirst()
        let more = children[next] ?? []
        found += more
        queue += more
    }
    return found
}

/// Field 3 of /proc/<pid>/stat (R, S, T, Z ...).
func processStateLetter(_ pid: pid_t) -> String? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return nil }
    return text[text.index(after: close)...].split(separator: " ").first.map(String.init)
}
