// How a storage library proves its App Group database works on a device:
// an app and its extension (a widget) share a WAL SQLite database in their
// group container, launched as real confined processes (`appsandboxfs
// launch`), suspended as iOS suspends an app sent to the background.
// Python's sqlite3 plays the library here; a library's own test launches
// its own code the same way (see `bundleMainIsTheApp` for a Swift program).
//
//   swift test --filter GroupDatabaseExample     (root: launch is confined)

import AppSandboxTesting
import ContainerFiles
import Foundation
import Testing

/// The apps' code: `python3 -c database MODE DB ...`.
private let database = #"""
    import os, sqlite3, sys, time
    mode, path = sys.argv[1], sys.argv[2]
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    db.execute("pragma journal_mode=wal")
    db.execute("create table if not exists notes(author text, n integer)")
    if mode == "write":                      # write COUNT AUTHOR: one transaction per row
        for n in range(int(sys.argv[3])):
            db.execute("begin immediate")
            db.execute("insert into notes values (?, ?)", (sys.argv[4], n))
            db.execute("commit")
        print("mode=" + db.execute("pragma journal_mode").fetchone()[0])
    elif mode == "insert":                   # insert AUTHOR: one row, then the time of its commit
        db.execute("insert into notes values (?, 0)", (sys.argv[3],))
        print("committed=%.6f" % time.time())
    elif mode == "watch":                    # watch AUTHOR: the time the row is first seen
        open(os.environ["HOME"] + "/tmp/watching", "w").close()
        while db.execute("select count(*) from notes where author = ?", (sys.argv[3],)).fetchone()[0] == 0:
            time.sleep(0.005)
        print("seen=%.6f" % time.time())
    elif mode == "hold":                     # hold: a write transaction left open (a save cut short)
        db.execute("begin exclusive")
        db.execute("insert into notes values ('draft', 0)")
        open(os.environ["HOME"] + "/tmp/locked", "w").close()
        time.sleep(120)
    elif mode == "tick":                     # tick FILE: counts in FILE, no lock held between writes
        db.close()
        n = 0
        while True:
            n += 1
            with open(sys.argv[3], "w") as f: f.write(str(n))
            time.sleep(0.01)
    elif mode == "read":                     # read FILE
        print("text=" + open(sys.argv[3]).read())
    elif mode == "count":
        print("rows=%d" % db.execute("select count(*) from notes").fetchone()[0])
        print("check=" + db.execute("pragma integrity_check").fetchone()[0])
    """#

private let group = "group.com.example.notes"
private let notes = MountedDevice.AppDescription(bundleID: "com.example.notes", name: "Notes", groups: [group],
                                                 executable: .command(["python3", "-c", database]))
private let widget = MountedDevice.AppDescription(bundleID: "com.example.notes.widget", name: "NotesWidget",
                                                  groups: [group], executable: .command(["python3", "-c", database]))

private func value(_ key: String, in output: String) -> String? {
    output.split(separator: "\n").first { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
}

@Suite("AppSandboxTesting example: an app and its widget share a group database",
       .enabled(if: MountedDevice.canLaunch, "launch needs root and /dev/fuse"),
       .mountedDevice(.init(apps: [notes, widget])))
struct GroupDatabaseExampleTests {
    var device: MountedDevice { get throws { try #require(MountedDevice.current) } }

    /// G4: both write one WAL database in their group container at the
    /// same time, each row in its own transaction: every committed row is
    /// there, and the database is sound.
    @Test func g4TwoProcessesWritingKeepEveryRow() throws {
        let device = try device
        let app = try device.app(notes.bundleID), extensionApp = try device.app(widget.bundleID)
        let path = try app.group(group) + "/Library/notes.sqlite"
        // The database is made (and put in WAL mode) once, as an app does
        // at its first start: two connections switching the journal mode
        // at the same instant may get SQLITE_BUSY without waiting.
        #expect(try device.launch(app, arguments: ["count", path]).status == 0)
        let writers = try [device.start(app, arguments: ["write", path, "300", "app"]),
                           device.start(extensionApp, arguments: ["write", path, "300", "widget"])]
        for writer in writers {
            #expect(writer.wait(timeout: 120) == 0, "\(writer.app.bundleID): \(writer.errorOutput)")
            #expect(value("mode", in: writer.output) == "wal", "\(writer.output)")
        }
        let counted = try device.launch(extensionApp, arguments: ["count", path])
        #expect(value("rows", in: counted.standardOutput) == "600", "\(counted)")
        #expect(value("check", in: counted.standardOutput) == "ok", "\(counted)")
    }

    /// G4: a row the app commits is seen by the widget within a second.
    @Test func g4ChangeIsSeenByTheOtherWithinASecond() throws {
        let device = try device
        let app = try device.app(notes.bundleID), extensionApp = try device.app(widget.bundleID)
        let path = try app.group(group) + "/Library/notes.sqlite"
        _ = try device.launch(app, arguments: ["count", path])  // the database exists
        let watcher = try device.start(extensionApp, arguments: ["watch", path, "ping"])
        #expect(waitUntil(timeout: 30) { FileManager.default.fileExists(atPath: extensionApp.path("tmp/watching")) })
        let inserted = try device.launch(app, arguments: ["insert", path, "ping"])
        #expect(inserted.succeeded, "\(inserted)")
        #expect(watcher.wait(timeout: 30) == 0, "\(watcher.errorOutput)")
        let committed = try #require(value("committed", in: inserted.standardOutput).flatMap(Double.init))
        let seen = try #require(value("seen", in: watcher.output).flatMap(Double.init))
        #expect(seen - committed < 1, "seen \(seen - committed) s after the commit")
    }

    /// Z1: suspended while it holds a write transaction on the group
    /// database, the app is killed (0xdead10cc) with the termination line;
    /// the rows committed before survive, the open transaction does not.
    @Test func z1SuspendWhileHoldingTheLockKillsTheApp() throws {
        let device = try device
        let app = try device.app(notes.bundleID), extensionApp = try device.app(widget.bundleID)
        let path = try app.group(group) + "/Library/notes.sqlite"
        #expect(try device.launch(app, arguments: ["write", path, "5", "app"]).succeeded)
        let holder = try device.start(app, arguments: ["hold", path])
        #expect(waitUntil(timeout: 30) { FileManager.default.fileExists(atPath: app.path("tmp/locked")) }, "\(holder.errorOutput)")

        let suspension = try device.suspend(app)

        // One line per locked file: in WAL mode the database and its -shm.
        #expect(suspension.killed)
        #expect(suspension.terminations.contains { $0.hasSuffix(" 0xdead10cc \(path)") }, "\(suspension.terminations)")
        for line in suspension.terminations {
            #expect(line.hasPrefix("Termination: com.example.notes python3("), "\(line)")
            #expect(line.contains(" 0xdead10cc \(path)"), "\(line)")
        }
        #expect(device.terminations() == suspension.terminations)
        #expect(holder.wait(timeout: 30) == 128 + SIGKILL)
        let counted = try device.launch(extensionApp, arguments: ["count", path])
        #expect(value("rows", in: counted.standardOutput) == "5", "\(counted)")
        #expect(value("check", in: counted.standardOutput) == "ok", "\(counted)")
    }

    /// Z2: suspended while it holds no lock, the app is stopped, not
    /// killed; resumed, it goes on.
    @Test func z2SuspendWithoutALockStopsAndResumeContinues() throws {
        let device = try device
        let app = try device.app(notes.bundleID)
        let ticks = try app.group(group) + "/ticks"
        let ticker = try device.start(app, arguments: ["tick", try app.group(group) + "/Library/notes.sqlite", ticks])
        func count() -> Int { (try? String(contentsOfFile: ticks, encoding: .utf8)).flatMap { Int($0) } ?? 0 }
        #expect(waitUntil(timeout: 30) { count() > 2 }, "\(ticker.errorOutput)")

        let suspension = try device.suspend(app)

        #expect(!suspension.killed && suspension.terminations.isEmpty, "\(suspension.terminations)")
        let stopped = count()
        usleep(300_000)  // ticks every 10 ms when running
        #expect(count() == stopped)
        #expect(ticker.wait(timeout: 0.01) == nil)
        try device.resume(app)
        #expect(waitUntil(timeout: 10) { count() > stopped + 2 })
        #expect(device.terminations().isEmpty)
    }

    /// G3: code run in the test process as one of the apps finds its group
    /// container through `containerURL(forSecurityApplicationGroupIdentifier:)`
    /// (nil for another group, and outside `actAs`), and what it writes
    /// there the launched widget reads.
    @Test func g3ContainerURLAnswersForTheAppTheTestActsAs() throws {
        let device = try device
        let app = try device.app(notes.bundleID), extensionApp = try device.app(widget.bundleID)
        #expect(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group) == nil)
        let url = try device.actAs(app) { () throws -> URL in
            #expect(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.other") == nil)
            let url = try #require(FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: group))
            try Data("shared".utf8).write(to: url.appendingPathComponent("hello.txt"))
            return url
        }
        #expect(url.path == (try app.group(group)))
        #expect(device.environment(for: app)["APPSANDBOXFS_GROUP_CONTAINERS"] == "{\"\(group)\":\"\(url.path)\"}")
        let read = try device.launch(extensionApp, arguments: ["read", url.path + "/Library/notes.sqlite", url.path + "/hello.txt"])
        #expect(value("text", in: read.standardOutput) == "shared", "\(read)")
    }
}
