// `appsandboxfs status`: the mounted containers with their backing
// folders, driver pids and options, as a table or JSON; stale mounts and
// records of killed drivers told apart.

import Foundation
import Glibc
import Testing

@Suite("Ecosystem: status")
struct EcosystemStatusTests {
    @Test("A background mount shows with its real driver pid, backing folder and options (JSON and table)")
    func liveMount() throws {
        try withEcoMount { m in
            let pid = try m.mountInBackground(["--keep-tmp", "--cache-timeout", "0.5", "-o", "noatime",
                                               "--denial-log", m.denialLog])
            // The pid is the driver's: its command line is this mount.
            let commandLine = readFileText("/proc/\(pid)/cmdline").split(separator: "\0").map(String.init)
            #expect(commandLine.contains("mount") && commandLine.contains(m.mountpoint), "\(commandLine)")
            // The command forked it (one start of the program, not two):
            // a second start would carry --ready-fd (issue 29). A sanitized
            // driver's runtime has a thread of its own before main, and
            // `mount` forks only a process of one thread: it starts the
            // program again there.
            if ProcessInfo.processInfo.environment["RELIABILITY_SANITIZED"] == nil {
                #expect(!commandLine.contains("--ready-fd"), "\(commandLine)")
            }

            // (Without MOUNTPOINT, status lists other tests' mounts too, stale
            // ones included: exit 2 is theirs.)
            let json = m.appsandboxfs(["status", "--json"])
            #expect(json.status == 0 || json.status == 2)
            let object = try #require(jsonObject(json.stdout))
            #expect(object["schema"] as? String == "appsandboxfs.status/1")
            let entry = try #require(m.statusEntry())
            #expect(entry["backing"] as? String == m.backing)
            #expect(entry["appName"] as? String == "TestApp")
            #expect(entry["state"] as? String == "mounted")
            #expect((entry["mountOptions"] as? String)?.contains("noatime") == true)
            // ISO 8601 in UTC to the second, as ISO8601DateFormatter reads it,
            // and when the driver started (the record's date is written from
            // the C library's clock, not the formatter).
            let started = try #require(entry["started"] as? String)
            #expect(started.count == 20 && started.hasSuffix("Z"), "\(started)")
            let date = try #require(ISO8601DateFormatter().date(from: started), "\(started)")
            #expect(abs(date.timeIntervalSinceNow) < 120, "\(started)")
            let options = try #require(entry["options"] as? [String: Any])
            #expect(options["keepTmp"] as? Bool == true)
            #expect(options["cacheTimeout"] as? Double == 0.5)
            #expect(options["mountOptions"] as? [String] == ["noatime"])
            #expect(options["denialLog"] as? String == m.denialLog)
            #expect(options.keys.sorted() == ["bundle", "cacheTimeout", "capacity", "debug", "denialLog", "keepCache", "keepTmp",
                                              "log", "mountOptions", "passthrough", "threads", "writeback"])
            #expect(options["passthrough"] as? Bool == true, "passthrough is recorded (the default included)")
            #expect(entry.keys.contains("capacity") && entry["capacity"] is NSNull, "Q4: null without --capacity")

            let table = m.appsandboxfs(["status", m.mountpoint])
            #expect(table.status == 0)
            let lines = table.stdout.split(separator: "\n").map(String.init)
            #expect(lines.count == 2)
            #expect(lines.first?.hasPrefix("MOUNTPOINT") == true)
            let row = lines.last?.split(separator: " ", omittingEmptySubsequences: true).map(String.init) ?? []
            #expect(Array(row.prefix(5)) == [m.mountpoint, m.backing, "TestApp", "\(pid)", "mounted"])
            #expect(row.last?.contains("cache_timeout=0.5") == true && row.last?.contains("keep_tmp") == true
                    && row.last?.hasSuffix("noatime") == true, "\(row)")

            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
            #expect(processGone(pid, within: 15))
            let after = m.appsandboxfs(["status", m.mountpoint])
            #expect(after.status == 1)
            #expect(after.stderr == "appsandboxfs: \(m.mountpoint): not a mounted container\n")
            #expect(m.statusEntry() == nil, "the driver removed its record at exit")
        }
    }

    @Test("Names chosen by others reach the table escaped: a backing folder named with a terminal escape sequence prints none (issue 25, adversarial pass)")
    func hostileNamesEscaped() throws {
        // Any local user can name a folder root mounts, or make a FUSE mount
        // of their own of this type (status lists it): its source and
        // mountpoint must not send escape sequences to root's terminal.
        try withEcoMount(backingName: "c\u{1B}]0;OWNED\u{07}\u{1B}[2J", isolatedState: true) { m in
            _ = try m.mountInBackground()
            let table = m.appsandboxfs(["status", m.mountpoint])
            #expect(table.status == 0, "\(table.stderr)")
            #expect(!table.stdout.utf8.contains(0x1B) && !table.stdout.utf8.contains(0x07), "\(table.stdout.debugDescription)")
            #expect(table.stdout.contains("c\\x1B]0;OWNED\\x07\\x1B[2J"), "\(table.stdout.debugDescription)")
            // JSON keeps the name whole (its encoder escapes control characters).
            #expect(m.statusEntry()?["backing"] as? String == m.backing)
            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
        }
    }

    @Test("The driver's record names the mount's device as stat(2) gives it (what ties a record to its mount)")
    func recordNamesTheDevice() throws {
        try withEcoMount(isolatedState: true) { m in
            let state = try #require(m.stateDirectory)
            let pid = try m.mountInBackground()
            defer { _ = m.appsandboxfs(["unmount", m.mountpoint]) }
            let text = try String(contentsOfFile: state + "/\(pid).json", encoding: .utf8)
            let record = try #require(jsonObject(text))
            var status = stat()
            try #require(stat(m.mountpoint, &status) == 0)
            let device = try #require(record["device"] as? NSNumber, "\(text)")
            #expect(device.uint64Value == UInt64(status.st_dev), "record \(device), stat \(status.st_dev)")
            // The root of the backing folder is another device: the record is the mount's.
            var backing = stat()
            try #require(stat(m.backing, &backing) == 0)
            #expect(backing.st_dev != status.st_dev)
        }
    }

    @Test("A killed driver: its mount is stale (exit 2), then after unmount its record is gone, and the next mount removes it")
    func staleAndGone() throws {
        try withEcoMount(isolatedState: true) { m in
            let state = try #require(m.stateDirectory)
            let pid = try m.mountInBackground()
            #expect(access(state + "/\(pid).json", F_OK) == 0, "the record is in APPSANDBOXFS_STATE_DIR")
            kill(pid, SIGKILL)
            #expect(processGone(pid, within: 15))

            let stale = m.appsandboxfs(["status", m.mountpoint, "--json"])
            #expect(stale.status == 2)
            #expect(m.statusEntry()?["state"] as? String == "stale")
            #expect(m.statusEntry()?["pid"] as? Int == Int(pid))

            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
            #expect(!m.isMounted)
            #expect(m.statusEntry()?["state"] as? String == "gone")
            #expect(m.appsandboxfs(["status", m.mountpoint]).status == 1)
            let table = m.appsandboxfs(["status"])
            #expect(table.stdout.contains(" gone "))

            let next = try m.mountInBackground()
            #expect(access(state + "/\(pid).json", F_OK) != 0, "the next driver removed the dead record")
            #expect(access(state + "/\(next).json", F_OK) == 0)
            #expect(m.appsandboxfs(["unmount", m.mountpoint]).status == 0)
            #expect(processGone(next, within: 15))
            let empty = m.appsandboxfs(["status"])
            #expect(empty.stdout == "No containers are mounted.\n" || !empty.stdout.contains(m.mountpoint))
        }
    }

    @Test("A mount with no record (a driver that could not write one) still shows, without a pid")
    func mountWithoutRecord() throws {
        try withEcoMount(isolatedState: true) { m in
            let state = try #require(m.stateDirectory)
            let pid = try m.mountInBackground()
            m.track(pid)
            #expect(unlink(state + "/\(pid).json") == 0)
            let entry = try #require(m.statusEntry())
            #expect(entry["state"] as? String == "mounted")
            #expect(entry["pid"] is NSNull)
            #expect(entry["options"] is NSNull)
            #expect(entry["backing"] as? String == m.backing)
            // Without a record, unmount has no driver to wait for; the
            // mount still goes. (A process of another test that looks at
            // every mount, status's probe among them, may hold it for a
            // moment: asked again, as the fixture does.)
            var unmounted = m.appsandboxfs(["unmount", m.mountpoint])
            for _ in 0..<20 where unmounted.status != 0 && unmounted.stderr.contains("busy") {
                usleep(100_000)
                unmounted = m.appsandboxfs(["unmount", m.mountpoint])
            }
            #expect(unmounted.status == 0, "\(unmounted.stderr)")
        }
    }

    @Test("status without arguments never hangs on a mount whose driver lives but does not answer: it shows not-answering (exit 2)")
    func driverNotAnswering() throws {
        try withEcoMount(isolatedState: true) { m in
            let state = try #require(m.stateDirectory)
            let pid = try m.mountInBackground()
            m.track(pid)
            // No record: status must ask the mount itself.
            #expect(unlink(state + "/\(pid).json") == 0)
            #expect(kill(pid, SIGSTOP) == 0)
            // Every thread stopped before status asks: a worker still running
            // could take status's statfs and then stop, and status could not
            // exit until the driver answered.
            #expect(waitUntilStopped(pid), "the driver \(pid) did not stop")
            // Resumed before the clean-up unmounts, whatever happens here,
            // and answering again: a request still on its way would keep
            // the mount busy for the clean-up's unmount.
            defer {
                kill(pid, SIGCONT)
                var buffer = statvfs()
                for _ in 0..<500 where statvfs(m.mountpoint, &buffer) != 0 { usleep(20_000) }
                usleep(200_000)
            }
            // Without a bound, this statfs blocks until runProcess's timeout kills it.
            let status = m.appsandboxfs(["status", "--json"])
            let mounts = jsonObject(status.stdout)?["mounts"] as? [[String: Any]]
            let entry = mounts?.first { $0["mountpoint"] as? String == m.mountpoint }
            #expect(entry?["state"] as? String == "not-answering", "status: \(status.stdout) \(status.stderr)")
            #expect(status.status == 2)
        }
    }
}
