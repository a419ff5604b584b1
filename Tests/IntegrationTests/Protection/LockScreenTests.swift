// The lock screen, through real mounts: P5 (device states and the verbs),
// P6 (locked), P7 (before first unlock), P8 (the denial lines).

import Foundation
import Glibc
import POSIXHelpers
import Testing

@Suite("Data protection: the lock screen (P5-P8)")
struct LockScreenTests {
    /// Documents/a.txt (class A), b.txt (B), c.txt (C), d.txt (D), each holding its letter.
    static func fourFiles(_ m: MountedContainer) throws {
        for (name, protection) in [("a", classA), ("b", classB), ("c", classC), ("d", classD)] {
            try writeFile(m.documents + "/\(name).txt", name)
            #expect(Protect.setClass(m.documents + "/\(name).txt", protection) == 0)
        }
    }

    @Test("P5 lock, unlock and reboot change the state shown by status --json; mount --device-state chooses the first")
    func statesAndVerbs() throws {
        try withMountedContainer(extraArguments: ["--device-state", "locked"]) { m in
            func state() -> String? {
                let status = runProcess([Binaries.appsandboxfs, "status", "--json", m.mountpoint])
                let json = try? JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
                return ((json?["mounts"] as? [[String: Any]])?.first)?["deviceState"] as? String
            }
            #expect(Protect.waitUntil(timeout: 30) { state() != nil }, "status shows no record of the driver")
            #expect(state() == "locked")
            m.unlock()
            #expect(state() == "unlocked")
            m.reboot()
            #expect(state() == "before-first-unlock")
            // Before the first unlock there is nothing to lock.
            let refused = m.device("lock")
            #expect(refused.status == 1 && refused.stderr.hasPrefix("Error: \(m.mountpoint): the device has not been unlocked"), "\(refused.stderr)")
            #expect(state() == "before-first-unlock")
            m.unlock()
            m.lock()
            #expect(state() == "locked")
        }
    }

    @Test("P5 bad input is one line and changes nothing: --grace -1, a path that is not a mounted container, an unknown state")
    func badInput() throws {
        try withMountedContainer { m in
            let negative = m.device("lock", ["--grace", "-1"])
            #expect(negative.status == 1)
            #expect(negative.stderr == "Error: --grace -1: less than 0 seconds (0 to 86400); nothing changed\n")
            let notMounted = runProcess([Binaries.appsandboxfs, "lock", m.root])
            #expect(notMounted.status == 1)
            #expect(notMounted.stderr == "Error: \(m.root): not a mounted container\n")
            try writeFile(m.documents + "/a.txt", "a")
            #expect(Protect.setClass(m.documents + "/a.txt", classA) == 0)
            #expect(Protect.cat(m.documents + "/a.txt") == "a")   // still unlocked
        }
        try withRulesMount { m in
            let bad = m.mountBackground(["--device-state", "asleep"])
            #expect(bad.status == 1)
            #expect(bad.stderr == "Error: device state \"asleep\": not one of unlocked, locked, before-first-unlock; nothing changed\n")
            #expect(!m.isMounted)
        }
    }

    @Test("P5 P6 a grace too large, infinite or NaN is refused by lock with one line, nothing changed; a forged control-socket request with such a grace is refused and the driver stays up (issue 25, item 7)")
    func hugeGrace() throws {
        try withMountedContainer { m in
            try writeFile(m.documents + "/a.txt", "a")
            #expect(Protect.setClass(m.documents + "/a.txt", classA) == 0)
            for (grace, message) in [("1e12", "more than the longest grace, 86400 seconds (one day)"),
                                     ("inf", "more than the longest grace, 86400 seconds (one day)"),
                                     ("86400.5", "more than the longest grace, 86400 seconds (one day)"),
                                     ("nan", "not a number of seconds (0 to 86400)"),
                                     ("-inf", "less than 0 seconds (0 to 86400)")] {
                let refused = m.device("lock", ["--grace", grace])
                #expect(refused.status == 1)
                #expect(refused.stderr == "Error: --grace \(grace): \(message); nothing changed\n", "\(refused.stderr)")
            }
            #expect(Protect.cat(m.documents + "/a.txt") == "a", "the device was locked")
            // Root (or the driver's user) may write any line to the socket.
            for grace in ["1e12", "1e300", "inf", "nan", "-1"] {
                let answer = ControlSocket.send("lock \(grace)", driverPID: m.driverPID)
                #expect(answer.hasPrefix("error grace \(grace): "), "\(answer)")
            }
            #expect(kill(m.driverPID, 0) == 0 && m.isMounted, "the driver is gone")
            #expect(Protect.cat(m.documents + "/a.txt") == "a", "the device was locked")
            // The longest grace is taken: class A stays usable.
            let longest = m.device("lock", ["--grace", "86400"])
            #expect(longest.status == 0 && longest.stdout == "locked\n", "\(longest)")
            #expect(Protect.cat(m.documents + "/a.txt") == "a")
            m.unlock()
        }
    }

    @Test("P6 P8 while locked a class A file cannot be opened, truncated or created; every refusal is EPERM and a DataProtection line")
    func classALocked() throws {
        try withMountedContainer { m in
            try Self.fourFiles(m)
            #expect(mkdir(m.documents + "/vault", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/vault", classA) == 0)
            m.lock()
            let catPID = runProcess(["sh", "-c", "echo $$; exec cat \"$1\"", "sh", m.documents + "/a.txt"])
            #expect(catPID.status == 1 && catPID.stderr.contains("Operation not permitted"))
            for flags in [O_RDONLY, O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC] {
                #expect(Protect.open(m.documents + "/a.txt", flags).outcome == "EPERM")
            }
            #expect(RulesSys.truncate(m.documents + "/a.txt", 0) == EPERM)
            #expect(Protect.open(m.documents + "/vault/new.txt", O_WRONLY | O_CREAT).outcome == "EPERM")
            #expect(access(m.documents + "/vault/new.txt", F_OK) != 0)   // no entry left
            // Classes B (existing file), C and D.
            #expect(Protect.cat(m.documents + "/b.txt") == "EPERM")
            #expect(Protect.cat(m.documents + "/c.txt") == "c")
            #expect(Protect.cat(m.documents + "/d.txt") == "d")
            let pid = catPID.stdout.split(separator: "\n").first.map(String.init) ?? "?"
            let lines = m.protectionLines()
            #expect(lines.first == "DataProtection: cat(\(pid)) deny(1) file-read-data \(m.documents)/a.txt NSFileProtectionComplete locked",
                    "\(lines)")
            #expect(lines.contains { $0.hasSuffix("deny(1) file-write-data \(m.documents)/a.txt NSFileProtectionComplete locked") })
            #expect(lines.contains { $0.hasSuffix("deny(1) file-write-create \(m.documents)/vault/new.txt NSFileProtectionComplete locked") })
            #expect(lines.contains { $0.hasSuffix("deny(1) file-read-data \(m.documents)/b.txt NSFileProtectionCompleteUnlessOpen locked") })
            #expect(lines.count == 8, "\(lines)")
            // Operations named as part one names them: the opens for reading
            // (cat, O_RDONLY) read, the others (O_WRONLY, O_RDWR, O_TRUNC,
            // truncate) write.
            let onA = lines.filter { $0.contains(" \(m.documents)/a.txt ") }
            #expect(onA.filter { $0.contains(" deny(1) file-read-data ") }.count == 2, "\(onA)")
            #expect(onA.filter { $0.contains(" deny(1) file-write-data ") }.count == 4, "\(onA)")
            m.unlock()
            #expect(Protect.cat(m.documents + "/a.txt") == "a")   // content intact after unlock
        }
    }

    /// The order of a request's checks (SandboxPolicy/RequestChecks.swift):
    /// the zone answers before data protection. A class A file and folder in
    /// the Inbox (classes stored in the backing directory: the Inbox refuses
    /// setting one, I4).
    @Test("I4 before P6: while locked, an Inbox class A file's open for writing and a create in a class A Inbox folder are I4's EPERM with a Sandbox line and no DataProtection line; its open for reading is P6's")
    func inboxAnswersBeforeProtection() throws {
        try withMountedContainer(prepare: { backing in
            try makeDirectory(backing + "/Documents/Inbox/vault")
            try writeFile(backing + "/Documents/Inbox/a.txt", "a")
            for path in [backing + "/Documents/Inbox/a.txt", backing + "/Documents/Inbox/vault"] {
                #expect(RulesSys.setxattr(path, "user.appsandboxfs.NSFileProtectionKey", Array(classA.utf8)) == 0)
            }
        }) { m in
            let inbox = m.documents + "/Inbox"
            #expect(Protect.classOf(inbox + "/a.txt") == classA)
            m.lock()
            #expect(Protect.open(inbox + "/a.txt", O_WRONLY).outcome == "EPERM")
            #expect(Protect.open(inbox + "/vault/new.txt", O_WRONLY | O_CREAT).outcome == "EPERM")
            #expect(access(inbox + "/vault/new.txt", F_OK) != 0)
            let sandbox = m.denialLines().filter { $0.hasPrefix("Sandbox: ") }
            #expect(sandbox.count == 2, "\(sandbox)")
            #expect(sandbox.contains { $0.hasSuffix("deny(1) file-write-data \(inbox)/a.txt") }, "\(sandbox)")
            #expect(sandbox.contains { $0.hasSuffix("deny(1) file-write-create \(inbox)/vault/new.txt") }, "\(sandbox)")
            #expect(m.protectionLines().isEmpty, "\(m.protectionLines())")
            // Reading is not the Inbox's to refuse (I1): P6 answers.
            #expect(Protect.open(inbox + "/a.txt", O_RDONLY).outcome == "EPERM")
            let lines = m.protectionLines()
            #expect(lines.count == 1 && lines[0].hasSuffix("deny(1) file-read-data \(inbox)/a.txt NSFileProtectionComplete locked"),
                    "\(lines)")
            m.unlock()
        }
    }

    @Test("P6 a class A descriptor opened before lock works during the grace, then fails (read, write, fsync, fallocate, ftruncate), and works again after unlock")
    func classADescriptorAfterGrace() throws {
        try withMountedContainer { m in
            try Self.fourFiles(m)
            let fd = try Protect.open(m.documents + "/a.txt", O_RDWR).get()
            defer { close(fd) }
            #expect(Protect.pwrite(fd, "A1", at: 0) == 0)
            m.lock(grace: 1)
            // Within the grace (1 s) the file still opens; its key is gone after.
            let failed = Protect.waitUntil(timeout: 20) { Protect.pread(fd, 2).outcome == "EPERM" }
            #expect(failed, "reads through the descriptor still work 20 s after lock --grace 1")
            #expect(Protect.pwrite(fd, "XX", at: 0) == EPERM)
            #expect(Protect.fsync(fd) == EPERM)
            #expect(Protect.fallocate(fd, length: 4096) == EPERM)
            #expect(Protect.ftruncate(fd, 0) == EPERM)
            // P8: the write, fsync, fallocate and ftruncate through the
            // descriptor are logged as writes, the reads as reads.
            let through = m.protectionLines()
            #expect(through.contains { $0.contains(" deny(1) file-write-data \(m.documents)/a.txt ") }, "\(through)")
            #expect(through.contains { $0.contains(" deny(1) file-read-data \(m.documents)/a.txt ") }, "\(through)")
            #expect(Protect.open(m.documents + "/a.txt", O_RDONLY).outcome == "EPERM")
            // Metadata keeps working.
            #expect(RulesSys.stat(m.documents + "/a.txt").rulesValue?.st_size == 2)
            m.unlock()
            #expect(Protect.pread(fd, 8).rulesValue == Array("A1".utf8))
            #expect(Protect.cat(m.documents + "/a.txt") == "A1")
        }
    }

    /// Class A files get direct I/O handles (their descriptors must be
    /// revocable at lock); the driver negotiates FUSE_DIRECT_IO_ALLOW_MMAP so
    /// that such a handle can still be mapped shared, as SQLite maps a WAL
    /// database's index (-shm). Without it the mapping is ENODEV and SQLite
    /// says "disk I/O error" at the first statement.
    @Test("P6 a class A file maps shared: bytes written through the mapping reach the backing file; a WAL SQLite database works, is refused while locked, and is intact after unlock")
    func classASharedMapping() throws {
        try withMountedContainer { m in
            #expect(mkdir(m.documents + "/vault", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/vault", classA) == 0)
            let path = m.documents + "/vault/mapped"
            let fd = try Protect.open(path, O_RDWR | O_CREAT).get()
            #expect(ftruncate(fd, 4096) == 0)
            let map = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            #expect(map != MAP_FAILED, "mmap MAP_SHARED of a class A file: \(errorText(errno))")
            if let map, map != MAP_FAILED {
                _ = "mapped".withCString { memcpy(map, $0, 6) }
                #expect(msync(map, 4096, MS_SYNC) == 0)
                munmap(map, 4096)
            }
            #expect(Protect.pread(fd, 6).rulesValue == Array("mapped".utf8))
            close(fd)
            let backed = try String(contentsOfFile: m.backingPath("Documents/vault/mapped"), encoding: .utf8)
            #expect(backed.hasPrefix("mapped"))

            let database = m.documents + "/vault/app.db"
            let created = runProcess(["sqlite3", database,
                                      "PRAGMA journal_mode=WAL; CREATE TABLE t(v); INSERT INTO t VALUES ('one'), ('two'); SELECT count(*) FROM t;"])
            #expect(created.status == 0 && created.stdout == "wal\n2\n", "sqlite3 in a class A folder: \(created.stderr)")
            #expect(Protect.classOf(database) == classA)
            m.lock()
            let locked = runProcess(["sqlite3", database, "SELECT count(*) FROM t;"])
            #expect(locked.status != 0, "a class A database read while locked: \(locked.stdout)")
            m.unlock()
            let again = runProcess(["sqlite3", database, "INSERT INTO t VALUES ('three'); PRAGMA integrity_check; SELECT group_concat(v) FROM t;"])
            #expect(again.status == 0 && again.stdout == "ok\none,two,three\n", "after unlock: \(again.stdout) \(again.stderr)")
        }
    }

    /// The same without passthrough (`--no-passthrough`, and what a driver
    /// without CAP_SYS_ADMIN gets, issue 31): INIT's reply still asks for
    /// DIRECT_IO_ALLOW_MMAP, which was asked for only beside passthrough.
    @Test("P6 without passthrough (a driver that is not root): a class A file still maps shared, and a WAL SQLite database in it works")
    func classASharedMappingWithoutPassthrough() throws {
        try withMountedContainer(extraArguments: ["--no-passthrough"]) { m in
            #expect(mkdir(m.documents + "/vault", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/vault", classA) == 0)
            let fd = try Protect.open(m.documents + "/vault/mapped", O_RDWR | O_CREAT).get()
            defer { close(fd) }
            #expect(ftruncate(fd, 4096) == 0)
            let map = mmap(nil, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
            #expect(map != MAP_FAILED, "mmap MAP_SHARED of a class A file: \(errorText(errno))")
            if let map, map != MAP_FAILED { munmap(map, 4096) }
            let created = runProcess(["sqlite3", m.documents + "/vault/app.db",
                                      "PRAGMA journal_mode=WAL; CREATE TABLE t(v); INSERT INTO t VALUES ('one'); SELECT count(*) FROM t;"])
            #expect(created.status == 0 && created.stdout == "wal\n1\n", "sqlite3 in a class A folder: \(created.stderr)")
        }
    }

    @Test("P6 within the grace class A files still open; class B files do not (the grace is class A's only)")
    func withinGrace() throws {
        try withMountedContainer { m in
            try Self.fourFiles(m)
            m.lock(grace: 600)
            #expect(Protect.cat(m.documents + "/a.txt") == "a")
            #expect(Protect.cat(m.documents + "/b.txt") == "EPERM")
        }
    }

    @Test("P6 class B: descriptors opened before lock keep working; a file created while locked is written and read through its descriptor and cannot be reopened until unlock")
    func completeUnlessOpenWhileLocked() throws {
        try withMountedContainer { m in
            try Self.fourFiles(m)
            #expect(mkdir(m.documents + "/downloads", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/downloads", classB) == 0)
            let before = try Protect.open(m.documents + "/b.txt", O_RDWR).get()
            defer { close(before) }
            m.lock()
            #expect(Protect.pwrite(before, "B2", at: 0) == 0)
            #expect(Protect.pread(before, 8).rulesValue == Array("B2".utf8))
            #expect(Protect.fsync(before) == 0)
            #expect(Protect.cat(m.documents + "/b.txt") == "EPERM")
            let created = try Protect.open(m.documents + "/downloads/new.bin", O_RDWR | O_CREAT | O_EXCL, 0o644).get()
            defer { close(created) }
            #expect(Protect.classOf(m.documents + "/downloads/new.bin") == classB)
            #expect(Protect.pwrite(created, "downloaded while locked", at: 0) == 0)
            #expect(Protect.pread(created, 64).rulesValue == Array("downloaded while locked".utf8))
            #expect(Protect.open(m.documents + "/downloads/new.bin", O_RDONLY).outcome == "EPERM")
            m.unlock()
            #expect(Protect.cat(m.documents + "/downloads/new.bin") == "downloaded while locked")
            #expect(Protect.cat(m.documents + "/b.txt") == "B2")
        }
    }

    @Test("P6 classes C and D: everything works while locked")
    func classesCAndD() throws {
        try withMountedContainer { m in
            try Self.fourFiles(m)
            #expect(mkdir(m.documents + "/d", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/d", classD) == 0)
            m.lock()
            for name in ["c", "d"] {
                let path = m.documents + "/\(name).txt"
                #expect(RulesSys.truncate(path, 0) == 0)
                try writeFile(path, name + name)
                #expect(Protect.cat(path) == name + name)
            }
            try writeFile(m.documents + "/new-c.txt", "c")   // created in Documents: class C
            try writeFile(m.documents + "/d/new-d.txt", "d")
            #expect(Protect.cat(m.documents + "/new-c.txt") == "c")
            #expect(m.protectionLines() == [])
        }
    }

    @Test("P6 metadata of a class A file keeps working while locked: stat, readdir, rename, link, unlink, mkdir, rmdir, chmod, utimens, getxattr, listxattr; setting its class is EPERM")
    func metadataWhileLocked() throws {
        try withMountedContainer { m in
            try Self.fourFiles(m)
            #expect(mkdir(m.documents + "/vault", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/vault", classA) == 0)
            m.lock()
            let file = m.documents + "/a.txt"
            #expect(RulesSys.stat(file).rulesValue != nil)
            #expect(RulesSys.list(m.documents).rulesValue?.contains("a.txt") == true)
            #expect(RulesSys.chmod(file, 0o600) == 0)
            #expect(RulesSys.touch(file) == 0)
            #expect(Protect.classOf(file) == classA)
            #expect(RulesSys.listxattr(file).rulesValue == ["NSFileProtectionKey"])
            #expect(RulesSys.rename(file, m.documents + "/vault/a.txt") == 0)
            // P2: the class of an unavailable entry cannot change.
            #expect(Protect.setClass(m.documents + "/vault/a.txt", classD) == EPERM)
            #expect(RulesSys.removexattr(m.documents + "/vault/a.txt", "NSFileProtectionKey") == EPERM)
            #expect(m.protectionLines().last?.contains("deny(1) file-write-xattr \(m.documents)/vault/a.txt NSFileProtectionComplete locked") == true)
            #expect(RulesSys.link(m.documents + "/vault/a.txt", m.documents + "/a-link.txt") == 0)
            #expect(RulesSys.mkdir(m.documents + "/vault/sub") == 0)
            #expect(Protect.classOf(m.documents + "/vault/sub") == classA)
            #expect(RulesSys.rmdir(m.documents + "/vault/sub") == 0)
            #expect(RulesSys.symlink("a.txt", m.documents + "/vault/ln") == 0)
            #expect(RulesSys.unlink(m.documents + "/a-link.txt") == 0)
            #expect(RulesSys.unlink(m.documents + "/vault/a.txt") == 0)
        }
    }

    @Test("P7 before first unlock only NSFileProtectionNone opens and is created; metadata works; unlock, then lock")
    func beforeFirstUnlock() throws {
        try withMountedContainer { m in
            try Self.fourFiles(m)
            #expect(mkdir(m.documents + "/d", 0o755) == 0)
            #expect(Protect.setClass(m.documents + "/d", classD) == 0)
            m.reboot()
            for name in ["a", "b", "c"] { #expect(Protect.cat(m.documents + "/\(name).txt") == "EPERM", "\(name)") }
            #expect(Protect.cat(m.documents + "/d.txt") == "d")
            #expect(Protect.open(m.documents + "/new.txt", O_WRONLY | O_CREAT).outcome == "EPERM")
            #expect(access(m.documents + "/new.txt", F_OK) != 0)
            try writeFile(m.documents + "/d/new.txt", "d")
            #expect(RulesSys.mkdir(m.documents + "/folder") == 0)
            #expect(RulesSys.symlink("c.txt", m.documents + "/link") == 0)
            #expect(RulesSys.rename(m.documents + "/c.txt", m.documents + "/folder/c.txt") == 0)
            #expect(m.protectionLines().contains { $0.hasSuffix("deny(1) file-write-create \(m.documents)/new.txt NSFileProtectionCompleteUntilFirstUserAuthentication before-first-unlock") })
            m.unlock()
            #expect(Protect.cat(m.documents + "/folder/c.txt") == "c")
            m.lock()
            #expect(Protect.cat(m.documents + "/folder/c.txt") == "c")
            #expect(Protect.cat(m.documents + "/a.txt") == "EPERM")
        }
    }

    @Test("P7 a mount started --device-state before-first-unlock; P6 one started locked has no grace")
    func startStates() throws {
        try withMountedContainer(extraArguments: ["--device-state", "before-first-unlock"]) { m in
            #expect(Protect.open(m.tmp + "/x", O_WRONLY | O_CREAT).outcome == "EPERM")
            #expect(Protect.cat(m.bundle + "/Info.plist").hasPrefix("<?xml"))
        }
        try withMountedContainer(extraArguments: ["--device-state", "locked"], prepare: { backing in
            try writeFile(backing + "/Documents/a.txt", "a")
            let value = Array(classA.utf8)
            #expect(RulesLinux.setxattr(backing + "/Documents/a.txt", "user.appsandboxfs.NSFileProtectionKey", value, value.count, 0) == 0)
        }) { m in
            #expect(Protect.cat(m.documents + "/a.txt") == "EPERM")
            m.unlock()
            #expect(Protect.cat(m.documents + "/a.txt") == "a")
        }
    }
}
