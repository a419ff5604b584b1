// Pages mapped before the lock (P6, P7; issue 30 and item 8 of issue 25):
// they keep working after the grace, whatever other processes do to the
// file meanwhile, what was written through them reaches the backing file,
// and the app never gets SIGBUS. The app is a child process (python3), so
// that a SIGBUS shows as its exit status (135), and another process (this
// one, getfattr, ls) stats, lists and reads attributes of its files the
// whole time: a stat that sees a new modification time makes the kernel
// drop the file's page cache, mapped pages included.

import Foundation
import Glibc
import Spawning
import Testing

@Suite("Data protection: pages mapped before the lock (P6, P7)", .serialized)
struct MappedPagesTests {
    /// Maps an 8 KiB class A file shared, writes "before-lock" into it (left
    /// dirty), then, once told the device is locked, writes and reads both
    /// pages and msyncs for 2 s, and tries pread and pwrite through its
    /// descriptor. After unlock, reads through the same descriptor.
    static let mapper = """
        import errno, json, mmap, os, sys, time
        path, marks = sys.argv[1], sys.argv[2]
        def mark(name): open(os.path.join(marks, name), "w").close()
        def wait(name):
            while not os.path.exists(os.path.join(marks, name)): time.sleep(0.005)
        def outcome(call):
            try:
                call(); return "ok"
            except OSError as e: return errno.errorcode.get(e.errno, str(e.errno))
        fd = os.open(path, os.O_RDWR)
        m = mmap.mmap(fd, 8192, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        m[0:11] = b"before-lock"
        mark("mapped"); wait("locked")
        result = {"msync": [], "rounds": 0, "mismatch": -1}
        end = time.time() + 2
        while time.time() < end:
            n = result["rounds"]
            text = b"while-locked-%06d" % n
            m[4096:4096 + len(text)] = text
            if m[0:11] != b"before-lock" or m[4096:4096 + len(text)] != text: result["mismatch"] = n
            o = outcome(m.flush)
            if o not in result["msync"]: result["msync"].append(o)
            result["rounds"] = n + 1
            time.sleep(0.002)
        result["last"] = (b"while-locked-%06d" % (result["rounds"] - 1)).decode()
        result["pread"] = outcome(lambda: os.pread(fd, 4, 0))
        result["pwrite"] = outcome(lambda: os.pwrite(fd, b"x", 8100))
        print(json.dumps(result), flush=True)
        mark("done"); wait("unlocked")
        after = {"pread": outcome(lambda: os.pread(fd, 11, 0))}
        after["data"] = os.pread(fd, 11, 0).decode(errors="replace") if after["pread"] == "ok" else ""
        after["mapped"] = m[0:11].decode(errors="replace")
        print(json.dumps(after), flush=True)
        m.close(); os.close(fd)
        """

    /// Holds a WAL database open (Python's sqlite3 module): commits 50 rows;
    /// once told the device is locked, counts and inserts for 3 s (each
    /// outcome noted: "ok" or SQLite's error name); once told it is
    /// unlocked, checkpoints and looks for every row whose commit succeeded.
    static let holder = """
        import json, os, sqlite3, sys, time
        db, marks = sys.argv[1], sys.argv[2]
        def mark(name): open(os.path.join(marks, name), "w").close()
        def wait(name):
            while not os.path.exists(os.path.join(marks, name)): time.sleep(0.005)
        def name(e): return getattr(e, "sqlite_errorname", type(e).__name__)
        con = sqlite3.connect(db, isolation_level=None, timeout=0)
        assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        con.execute("CREATE TABLE t(v TEXT)")
        committed = []
        for i in range(50):
            con.execute("INSERT INTO t VALUES (?)", ("before-%d" % i,)); committed.append("before-%d" % i)
        mark("ready"); wait("locked")
        seen = {"select": [], "insert": []}
        def note(kind, what):
            if what not in seen[kind]: seen[kind].append(what)
        end = time.time() + 3; k = 0
        while time.time() < end:
            try:
                con.execute("SELECT count(*) FROM t").fetchone(); note("select", "ok")
            except sqlite3.Error as e: note("select", name(e))
            value = "locked-%d" % k; k += 1
            try:
                con.execute("INSERT INTO t VALUES (?)", (value,)); committed.append(value); note("insert", "ok")
            except sqlite3.Error as e: note("insert", name(e))
            time.sleep(0.002)
        print(json.dumps(seen), flush=True)
        mark("done"); wait("unlocked")
        after = {"committed": len(committed)}
        try:
            after["checkpoint"] = list(con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
            rows = {r[0] for r in con.execute("SELECT v FROM t")}
            after["missing"] = [v for v in committed if v not in rows]
            con.execute("INSERT INTO t VALUES ('after')"); after["insert"] = "ok"
        except sqlite3.Error as e: after["error"] = name(e) + ": " + str(e)
        print(json.dumps(after), flush=True)
        con.close()
        """

    /// A new connection: "ok N" (rows counted) or SQLite's error name.
    static let newConnection = """
        import sqlite3, sys
        try:
            con = sqlite3.connect(sys.argv[1], timeout=5)
            print("ok", con.execute("SELECT count(*) FROM t").fetchone()[0]); con.close()
        except sqlite3.Error as e: print(getattr(e, "sqlite_errorname", type(e).__name__))
        """

    @Test("P6 P7 a class A file mapped shared before the lock: after the grace (or a reboot) reads and writes through the mapping work while others stat it, msync puts the bytes in the backing file, read(2) and write(2) are EPERM; after unlock nothing fails and nothing is lost",
          arguments: ["lock", "reboot"])
    func mappedClassAFile(_ transition: String) throws {
        try withMountedContainer { m in
            let folder = m.documents + "/vault"
            #expect(mkdir(folder, 0o755) == 0)
            #expect(Protect.setClass(folder, classA) == 0)
            let file = folder + "/mapped.bin"
            try writeFile(file, String(repeating: "o", count: 8192))
            let app = try MappedApp(Self.mapper, [file], in: m)
            defer { app.stop() }
            #expect(app.waitForMark("mapped"), "the mapping process did not start: \(app.output)")
            if transition == "lock" { m.lock(grace: 1) } else { m.reboot() }
            // Past the grace, with another process at the file all along.
            Self.poke([file], folder: folder, for: 2)
            app.mark("locked")
            Self.poke([file], folder: folder, until: { app.hasMark("done") || app.hasEnded })
            // Still locked: msync has put the bytes in the backing file.
            let backing = readFileText(m.backingPath("Documents/vault/mapped.bin"))
            m.unlock()
            app.mark("unlocked")
            let status = app.finish()
            #expect(status == .exited(0), "the mapping process ended with \(status.map(\.description) ?? "none") (135: SIGBUS): \(app.output)")
            let lines = app.jsonLines()
            #expect(lines.count == 2, "\(app.output)")
            guard lines.count == 2 else { return }
            let locked = lines[0], unlocked = lines[1]
            #expect((locked["rounds"] as? Int ?? 0) > 0 && locked["mismatch"] as? Int == -1, "\(locked)")
            // The mapping's bytes go out (writeback is served); the FSYNC the
            // kernel sends after it is the descriptor's, refused as fsync is.
            #expect(locked["msync"] as? [String] == ["EPERM"], "\(locked)")
            #expect(locked["pread"] as? String == "EPERM" && locked["pwrite"] as? String == "EPERM", "\(locked)")
            let last = locked["last"] as? String ?? "?"
            #expect(backing.hasPrefix("before-lock"), "backing file while locked: \(backing.prefix(24))")
            #expect(backing.dropFirst(4096).hasPrefix(last), "backing file while locked: \(backing.dropFirst(4096).prefix(24))")
            // After unlock: no read fails, and every byte is there.
            #expect(unlocked["pread"] as? String == "ok" && unlocked["data"] as? String == "before-lock", "\(unlocked)")
            #expect(unlocked["mapped"] as? String == "before-lock", "\(unlocked)")
            let through = Protect.cat(file)
            #expect(through.hasPrefix("before-lock") && through.dropFirst(4096).hasPrefix(last), "\(through.prefix(24))")
            let after = readFileText(m.backingPath("Documents/vault/mapped.bin"))
            #expect(after.hasPrefix("before-lock") && after.dropFirst(4096).hasPrefix(last))
            let refusals = m.protectionLines().filter { $0.contains(" \(file) ") }
            #expect(refusals.contains { $0.contains(" deny(1) file-read-data ") }, "\(refusals)")
        }
    }

    /// What the open connection sees while locked, and whether a new one opens (P6, P7).
    static let outcomes: [String: (insert: Set<String>, newConnection: Bool)] = [
        classA: ([], false), classB: (["ok"], false), classC: (["ok"], true), classD: (["ok"], true),
    ]

    @Test("P6 a WAL SQLite database held open across lock and unlock while others stat, list and getfattr its files: the documented outcome for each class, never SIGBUS, every committed row there after unlock (class A three times: it was a race)",
          arguments: [classA, classB, classC, classD])
    func sqliteAcrossTheLock(_ protection: String) throws {
        try withMountedContainer { m in
            let folder = m.documents + "/db"
            #expect(mkdir(folder, 0o755) == 0)
            let set = runProcess(["setfattr", "-n", "NSFileProtectionKey", "-v", protection, folder])
            #expect(set.status == 0, "\(set.stderr)")
            for iteration in 1...(protection == classA ? 3 : 1) {
                let database = folder + "/app-\(iteration).sqlite"
                let files = [database, database + "-wal", database + "-shm"]
                let app = try MappedApp(Self.holder, [database], in: m, name: "holder-\(iteration)")
                defer { app.stop() }
                #expect(app.waitForMark("ready"), "the holder did not start: \(app.output)")
                #expect(files.allSatisfy { Protect.classOf($0) == protection }, "\(files.map(Protect.classOf))")
                m.lock(grace: 1)
                Self.poke(files, folder: folder, for: 2)
                app.mark("locked")
                // A new connection while locked: none for A and B (their
                // files cannot be opened), a working one for C and D.
                let opened = runProcess(["python3", "-c", Self.newConnection, database], timeout: 60)
                Self.poke(files, folder: folder, until: { app.hasMark("done") || app.hasEnded })
                m.unlock()
                app.mark("unlocked")
                let status = app.finish()
                #expect(status == .exited(0), "iteration \(iteration): the holder ended with \(status.map(\.description) ?? "none") (135: SIGBUS): \(app.output)")
                let lines = app.jsonLines()
                #expect(lines.count == 2, "iteration \(iteration): \(app.output)")
                guard lines.count == 2, let expected = Self.outcomes[protection] else { continue }
                let locked = lines[0], unlocked = lines[1]
                let inserts = Set(locked["insert"] as? [String] ?? ["?"])
                let selects = Set(locked["select"] as? [String] ?? ["?"])
                if expected.insert.isEmpty {
                    // Class A: every commit fails with an I/O error; a count
                    // is answered from SQLite's own cache or fails the same way.
                    #expect(!inserts.isEmpty && inserts.allSatisfy { $0.hasPrefix("SQLITE_IOERR") }, "\(locked)")
                    #expect(selects.allSatisfy { $0 == "ok" || $0.hasPrefix("SQLITE_IOERR") }, "\(locked)")
                } else {
                    #expect(inserts == expected.insert && selects == ["ok"], "\(locked)")
                }
                #expect(opened.stdout.hasPrefix("ok") == expected.newConnection,
                        "a new connection while locked: \(opened.stdout) \(opened.stderr)")
                if !expected.newConnection { #expect(opened.stdout == "SQLITE_CANTOPEN\n", "\(opened.stdout)") }
                #expect(unlocked["missing"] as? [String] == [] && unlocked["insert"] as? String == "ok",
                        "iteration \(iteration) after unlock: \(unlocked)")
                #expect((unlocked["committed"] as? Int ?? 0) >= 50)
                #expect((unlocked["checkpoint"] as? [Int])?.first == 0, "\(unlocked)")
                // A fresh process sees every row, and the database is whole.
                let check = runProcess(["sqlite3", database, "PRAGMA integrity_check; SELECT count(*) FROM t;"])
                #expect(check.status == 0 && check.stdout == "ok\n\((unlocked["committed"] as? Int ?? 0) + 1)\n",
                        "\(check.stdout) \(check.stderr)")
            }
        }
    }

    /// Another process at `files`: stat, getxattr, listxattr and a listing of
    /// `folder` in this process, getfattr and `ls -l` as programs; for
    /// `seconds`, or until `done`.
    static func poke(_ files: [String], folder: String, for seconds: Double? = nil, until done: () -> Bool = { false }) {
        let end = seconds.map { monotonicNow() + $0 } ?? .infinity
        var round = 0
        while monotonicNow() < end && !done() {
            for file in files {
                _ = RulesSys.stat(file)
                _ = RulesSys.getxattr(file, "NSFileProtectionKey")
                _ = RulesSys.listxattr(file)
            }
            _ = RulesSys.list(folder)
            if round % 10 == 0 {
                _ = runProcess(["getfattr", "-d", "-m", "-"] + files, timeout: 30)
                _ = runProcess(["ls", "-l", folder], timeout: 30)
            }
            round += 1
            usleep(1_000)
        }
    }
}

/// The app: a python3 script run in the background, told what to do next
/// by marker files (a folder of its own beside the mount), its output kept.
final class MappedApp {
    let marks: String
    let outputPath: String
    let child: ChildProcess
    private(set) var status: ExitStatus?

    init(_ script: String, _ arguments: [String], in m: MountedContainer, name: String = "app") throws {
        marks = m.root + "/marks-" + name
        try makeDirectory(marks)
        outputPath = m.root + "/" + name + ".out"
        child = ChildProcess(pid: try spawn(["python3", "-c", script] + arguments + [marks],
                                            stdin: "/dev/null", stdout: outputPath, stderr: outputPath))
    }

    func mark(_ name: String) { try? writeFile(marks + "/" + name, "") }
    func hasMark(_ name: String) -> Bool { access(marks + "/" + name, F_OK) == 0 }

    var hasEnded: Bool {
        if status == nil { status = child.poll() }
        return status != nil
    }

    /// Waits up to a minute for the mark, or for the process to end.
    func waitForMark(_ name: String) -> Bool {
        Protect.waitUntil(timeout: 60) { hasMark(name) || hasEnded } && hasMark(name)
    }

    /// Waits up to a minute for the process to end: its status.
    func finish() -> ExitStatus? {
        if status == nil { status = child.wait(timeout: 60) }
        return status
    }

    /// Kills it if it still runs (a failed expectation left it waiting).
    func stop() {
        guard !hasEnded else { return }
        kill(child.pid, SIGKILL)
        status = child.wait(timeout: 30)
    }

    var output: String { readFileText(outputPath) }

    /// Its output's lines that are JSON objects.
    func jsonLines() -> [[String: Any]] {
        output.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }
}
