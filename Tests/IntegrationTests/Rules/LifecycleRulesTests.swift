// Rules L1-L4: mount checks its input first (one clear line, non-zero exit,
// nothing mounted or changed); a stale mount is detected, cleaned up by
// unmount and recovered on request; signals unmount cleanly and SIGKILL loses
// no flushed data; the FUSE conventions hold (foreground or background, -o).
// Every test here makes its own mounts (RulesMount) and always cleans up.

import Glibc
import Testing

@Suite("Rules: lifecycle (L1-L4)")
struct LifecycleRulesTests {
    // MARK: L1

    enum BadInput: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case backingMissing = "the backing directory does not exist"
        case backingEmpty = "the backing directory is an empty folder"
        case backingPartial = "the backing directory lacks Library/Caches"
        case systemFolderIsLink = "the backing's Library/Caches is a link to a folder outside"
        case backingIsFile = "the backing directory is a file"
        case mountpointMissing = "the mountpoint does not exist"
        case mountpointIsFile = "the mountpoint is a file"
        case mountpointNotEmpty = "the mountpoint is not empty"
        case mountpointMounted = "the mountpoint is already mounted"
        case appNameWithSlash = "the app name holds a slash"
        case appNameDotDot = "the app name is .."
        case appNameEmpty = "the app name is empty"
        case appNameUnknown = "no app name given and two bundles"
        case unknownOption = "an unknown -o option"

        var testDescription: String { rawValue }
    }

    @Test("L1 bad input to mount gives one line naming the problem, a non-zero exit, and changes nothing",
          arguments: BadInput.allCases, [false, true])
    func badInput(_ input: BadInput, foreground: Bool) throws {
        try withRulesSentinel { sentinel in
            try withRulesMount { r in
                var backing = r.backing
                var mountpoint = r.mountpoint
                var appName: String? = r.appName
                var extra: [String] = []
                let named: String    // what the one line must name
                var otherMount: RulesMount?
                defer { otherMount?.cleanUp() }
                try writeFile(r.backingPath("tmp/keep.txt"), "tmp must survive a failed mount\n")
                try writeFile(r.backingPath("Documents/doc.txt"), "data\n")

                switch input {
                case .backingMissing:
                    backing = r.root + "/absent"
                    named = backing
                case .backingEmpty:
                    backing = r.root + "/empty"
                    try makeDirectory(backing)
                    named = backing
                case .backingPartial:
                    _ = runProcess(["rm", "-rf", r.backingPath("Library/Caches")])
                    named = "Library/Caches"
                case .systemFolderIsLink:
                    _ = runProcess(["rm", "-rf", r.backingPath("Library/Caches")])
                    #expect(RulesSys.symlink(sentinel, r.backingPath("Library/Caches")) == 0)
                    named = "Library/Caches"
                case .backingIsFile:
                    backing = r.root + "/file"
                    try writeFile(backing, "not a folder\n")
                    named = backing
                case .mountpointMissing:
                    mountpoint = r.root + "/no-mountpoint"
                    named = mountpoint
                case .mountpointIsFile:
                    mountpoint = r.root + "/mountpoint-file"
                    try writeFile(mountpoint, "not a folder\n")
                    named = mountpoint
                case .mountpointNotEmpty:
                    try writeFile(r.mountpoint + "/something", "here first\n")
                    named = mountpoint
                case .mountpointMounted:
                    // Another container is mounted there already.
                    let other = try RulesMount()
                    otherMount = other
                    try other.mountForeground()
                    mountpoint = other.mountpoint
                    named = mountpoint
                case .appNameWithSlash:
                    appName = "Test/App"
                    named = "Test/App"
                case .appNameDotDot:
                    appName = ".."
                    named = "\"..\""
                case .appNameEmpty:
                    appName = ""
                    named = "app name"
                case .appNameUnknown:
                    appName = nil
                    try makeDirectory(r.backingPath("Other.app"))
                    named = backing
                case .unknownOption:
                    extra = ["-o", "no_such_option_xyz"]
                    named = "no_such_option_xyz"
                }

                let watched = [r.root, sentinel]
                let before = watched.map { RulesTreeSnapshot(of: $0, excluding: ["mnt"]) }
                let otherBefore = otherMount.map { RulesTreeSnapshot(of: $0.backing) }
                var argv = ["mount", backing, mountpoint] + (appName.map { ["--app-name", $0] } ?? []) + extra
                if foreground { argv.append("--foreground") }
                let result = runProcess([Binaries.appsandboxfs] + argv, timeout: 30)

                #expect(result.status != 0 && result.status != 137, "exit \(result.status): \(result.stderr)")
                let lines = result.stderr.split(separator: "\n").filter { !$0.allSatisfy(\.isWhitespace) }
                #expect(lines.count == 1, "not one line:\n\(result.stderr)")
                #expect(result.stderr.contains(named), "the message does not name \(named):\n\(result.stderr)")
                if input == .mountpointMounted {
                    #expect(otherMount?.isMounted == true, "the mount that was there is gone")
                    #expect(RulesSys.list(mountpoint).rulesValue == ["Documents", "Library", "TestApp.app", "tmp"])
                } else {
                    #expect(!isFuseMount(mountpoint), "mounted anyway")
                }
                for (root, snapshot) in zip(watched, before) {
                    let changes = RulesTreeSnapshot(of: root, excluding: ["mnt"]).changes(since: snapshot)
                    #expect(changes.isEmpty, "a failed mount changed \(root):\n\(changes.joined(separator: "\n"))")
                }
                if let otherMount, let otherBefore {
                    #expect(RulesTreeSnapshot(of: otherMount.backing).changes(since: otherBefore).isEmpty)
                }
                #expect(readFileText(r.backingPath("tmp/keep.txt")) == "tmp must survive a failed mount\n")
                #expect(r.driverPIDs().isEmpty || input == .mountpointMounted, "a driver was left running")
            }
        }
    }

    @Test("L1 --log and --denial-log are never opened through a symbolic link: refused with one line naming the path, the link's target untouched")
    func logFilesNotThroughLinks() throws {
        for flag in ["--log", "--denial-log"] {
            try withRulesMount { r in
                let target = r.root + "/elsewhere.txt"
                let link = r.root + "/link.log"
                #expect(symlink(target, link) == 0)
                let mount = r.run(["mount", r.backing, r.mountpoint, "--app-name", "TestApp", flag, link])
                #expect(mount.status != 0, "\(flag) through a link was accepted")
                #expect(!r.isMounted)
                let lines = mount.stderr.split(separator: "\n")
                #expect(lines.count == 1 && lines.first?.contains(link) == true && lines.first?.contains("symbolic link") == true,
                        "\(flag): \(mount.stderr)")
                #expect(access(target, F_OK) != 0, "\(flag): the link's target was created")
            }
        }
    }

    @Test("L1 relative paths work: they are made absolute (mount, log files, deliver, unmount)")
    func relativePaths() throws {
        try withRulesMount { r in
            try writeFile(r.root + "/letter.txt", "hello\n")
            let mount = r.run(["mount", "backing", "mnt", "--app-name", "TestApp", "--log", "driver.log",
                               "--denial-log", "denials.log"], cwd: r.root)
            #expect(mount.status == 0, "\(mount.stderr)")
            #expect(r.isMounted)
            guard r.isMounted else { return }
            let entry = readFileText("/proc/self/mountinfo").split(separator: "\n").first { $0.contains(" \(r.mountpoint) ") }
            #expect(entry?.contains(" - fuse.appsandboxfs \(r.backing) ") == true, "mountinfo: \(entry ?? "none")")
            #expect(readFileText(r.path("TestApp.app/Info.plist")).contains("TestApp"))

            let deliver = r.run(["deliver", "letter.txt", "--to", "mnt"], cwd: r.root)
            #expect(deliver.status == 0, "\(deliver.stderr)")
            #expect(readFileText(r.path("Documents/Inbox/letter.txt")) == "hello\n")

            #expect(RulesSys.chmod(r.path("Documents/Inbox/letter.txt"), 0o777) == EPERM)
            let denials = readFileText(r.root + "/denials.log").split(separator: "\n").compactMap { RulesDenialLine(String($0)) }
            #expect(denials.map(\.path) == [r.mountpoint + "/Documents/Inbox/letter.txt"], "\(denials)")
            #expect(readFileText(r.root + "/driver.log").contains("deny(1) file-write-mode " + r.mountpoint + "/Documents/Inbox/letter.txt"))

            let unmount = r.run(["unmount", "mnt"], cwd: r.root)
            #expect(unmount.status == 0, "\(unmount.stderr)")
            #expect(!r.isMounted)
            #expect(r.waitUntilNoDriver(), "the driver did not exit after unmount")
        }
    }

    // MARK: L2

    @Test("L2 after SIGKILL of the driver, unmount cleans the stale mountpoint up")
    func unmountCleansStaleMount() throws {
        try withRulesMount { r in
            try r.mountForeground()
            try writeFile(r.path("Documents/data.txt"), "flushed\n")
            r.signalDriver(SIGKILL)
            #expect(r.waitForDriverExit() == .signaled(SIGKILL))
            #expect(rulesIsStale(r.mountpoint), "not stale: statfs \(RulesSys.outcome(rulesStatfs(r.mountpoint)))")
            #expect(r.isMounted)

            let unmount = r.run(["unmount", r.mountpoint])
            #expect(unmount.status == 0, "\(unmount.stderr)")
            #expect(!r.isMounted)
            #expect(RulesSys.list(r.mountpoint).rulesValue == [], "the mountpoint is not an empty folder again")
            try r.mountForeground()
            #expect(readFileText(r.path("Documents/data.txt")) == "flushed\n")
        }
    }

    /// With `delay` 0, mount runs at once after the driver died, while the
    /// kernel still answers stat(2) on the mountpoint from its attribute
    /// cache (1 s): only a call that reaches the driver (statfs) sees ENOTCONN.
    @Test("L2 mount over a stale mountpoint fails saying it is stale and changes nothing; mount --recover mounts",
          arguments: [0.0, 2.0])
    func mountOverStaleMount(delay: Double) throws {
        try withRulesMount { r in
            try r.mountForeground()
            try writeFile(r.path("Documents/data.txt"), "flushed\n")
            try writeFile(r.path("tmp/left.txt"), "left by the killed driver\n")
            r.signalDriver(SIGKILL)
            #expect(r.waitForDriverExit() == .signaled(SIGKILL))
            #expect(rulesIsStale(r.mountpoint), "not stale: statfs \(RulesSys.outcome(rulesStatfs(r.mountpoint)))")
            if delay > 0 { usleep(UInt32(delay * 1_000_000)) }
            let before = RulesTreeSnapshot(of: r.backing)

            for foreground in [false, true] {
                var argv = ["mount", r.backing, r.mountpoint, "--app-name", "TestApp"]
                if foreground { argv.append("--foreground") }
                let plain = r.run(argv)
                #expect(plain.status != 0, "mounted over a stale mount: \(plain)")
                #expect(plain.stderr.lowercased().contains("stale"), "\(plain.stderr)")
                #expect(plain.stderr.contains(r.mountpoint), "\(plain.stderr)")
                #expect(plain.stderr.split(separator: "\n").count == 1, "not one line:\n\(plain.stderr)")
                #expect(rulesIsStale(r.mountpoint), "the stale mount was touched: statfs \(RulesSys.outcome(rulesStatfs(r.mountpoint)))")
                #expect(RulesTreeSnapshot(of: r.backing).changes(since: before).isEmpty)
            }

            let recover = r.mountBackground(["--recover"])
            #expect(recover.status == 0, "\(recover.stderr)")
            #expect(RulesSys.outcome(rulesStatfs(r.mountpoint)) == "ok")
            let entries = readFileText("/proc/self/mountinfo").split(separator: "\n").filter { $0.contains(" \(r.mountpoint) ") }
            #expect(entries.count == 1, "stacked mounts:\n\(entries.joined(separator: "\n"))")
            #expect(readFileText(r.path("Documents/data.txt")) == "flushed\n")
            #expect(RulesSys.list(r.path("tmp")).rulesValue == [], "T2: the recovering mount did not empty tmp")
            let unmount = r.run(["unmount", r.mountpoint])
            #expect(unmount.status == 0, "\(unmount.stderr)")
            #expect(r.waitUntilNoDriver())
        }
    }

    // MARK: L3

    @Test("L3 SIGTERM and SIGINT unmount cleanly: exit 0, not mounted, tmp emptied, data kept",
          arguments: [SIGTERM, SIGINT])
    func signalsUnmountCleanly(_ signal: Int32) throws {
        try withRulesContainer { m in
            try writeFile(m.documents + "/kept.txt", "kept\n")
            try writeFile(m.tmp + "/scratch.txt", "scratch\n")
            let fd = open(m.library + "/open-while-stopping.txt", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
            #expect(fd >= 0)
            #expect(RulesSys.writeAll(fd, Array("written, flushed on close\n".utf8)) == 0)
            close(fd)
            m.signalDriver(signal)
            #expect(m.waitForDriverExit() == .exited(0), "\(m.stderrText())")
            #expect(!m.isMounted)
            #expect(RulesSys.list(m.backingPath("tmp")).rulesValue == [])
            #expect(readFileText(m.backingPath("Documents/kept.txt")) == "kept\n")
            #expect(readFileText(m.backingPath("Library/open-while-stopping.txt")) == "written, flushed on close\n")
        }
    }

    @Test("L3 SIGTERM to a background driver unmounts it cleanly too")
    func sigtermInBackground() throws {
        try withRulesMount { r in
            let mount = r.mountBackground()
            #expect(mount.status == 0, "\(mount.stderr)")
            try writeFile(r.path("tmp/scratch.txt"), "scratch\n")
            let drivers = r.driverPIDs()
            #expect(drivers.count == 1, "drivers: \(drivers)")
            for pid in drivers { kill(pid, SIGTERM) }
            #expect(r.waitUntilNoDriver(), "the driver did not stop on SIGTERM")
            #expect(!r.isMounted)
            #expect(RulesSys.list(r.backingPath("tmp")).rulesValue == [])
        }
    }

    @Test("L3 SIGKILL loses no data that was written and flushed: the backing directory is a valid container")
    func sigkillLosesNothingFlushed() throws {
        try withRulesMount { r in
            try r.mountForeground()
            var expected: [String: [UInt8]] = [:]
            for i in 0..<20 {
                let relative = (i % 2 == 0 ? "Documents" : "Library/Application Support") + "/file-\(i).bin"
                let bytes = RulesSys.pattern(10_000 + i * 4099, seed: UInt8(i))
                let fd = open(r.path(relative), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
                #expect(fd >= 0)
                #expect(RulesSys.writeAll(fd, bytes) == 0)
                if i % 3 == 0 { #expect(fsync(fd) == 0) }
                close(fd)
                expected[relative] = bytes
            }
            #expect(RulesSys.mkdir(r.path("Documents/made")) == 0)
            #expect(RulesSys.rename(r.path("Documents/file-0.bin"), r.path("Documents/made/renamed.bin")) == 0)
            expected["Documents/made/renamed.bin"] = expected.removeValue(forKey: "Documents/file-0.bin")
            // One still open, written and fsync'ed, when the driver dies.
            let held = open(r.path("Library/Caches/open.bin"), O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
            #expect(RulesSys.writeAll(held, Array("synced while open".utf8)) == 0)
            #expect(fsync(held) == 0)

            r.signalDriver(SIGKILL)
            #expect(r.waitForDriverExit() == .signaled(SIGKILL))
            close(held)
            for (relative, bytes) in expected {
                #expect(readFileBytes(r.backingPath(relative)) == bytes, "\(relative) lost data")
            }
            #expect(readFileText(r.backingPath("Library/Caches/open.bin")) == "synced while open")

            let cleaned = r.run(["unmount", r.mountpoint])
            #expect(cleaned.status == 0, "\(cleaned.stderr)")
            try r.mountForeground()   // mount checks it is a container
            for (relative, bytes) in expected {
                #expect(readFileBytes(r.path(relative)) == bytes, "\(relative) through the new mount")
            }
        }
    }

    // MARK: L4

    @Test("L4 foreground: mount stays until unmounted, then exits 0")
    func foreground() throws {
        try withRulesMount { r in
            try r.mountForeground()
            // A driver that returned while mounted would end within this.
            #expect(r.waitForDriverExit(timeout: 0.3) == nil, "the foreground driver returned while mounted")
            #expect(readFileText(r.path("TestApp.app/Info.plist")).contains("TestApp"))
            let result = fusermountUnmount(r.mountpoint)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(r.waitForDriverExit() == .exited(0), "\(r.stderrText())")
        }
    }

    @Test("L4 background: mount returns once the mount is ready, the driver runs on detached, unmount stops it")
    func background() throws {
        try withRulesMount { r in
            let result = r.mountBackground()
            #expect(result.status == 0, "\(result.stderr)")
            // Ready when mount returns: no waiting.
            #expect(r.isMounted)
            #expect(readFileText(r.path("TestApp.app/Info.plist")).contains("TestApp"))
            let drivers = r.driverPIDs()
            #expect(drivers.count == 1, "drivers: \(drivers)")
            if let pid = drivers.first {
                // Its own session: the terminal that started it can go.
                let stat = readFileText("/proc/\(pid)/stat")
                let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
                #expect(fields.count > 4 && fields[3] == Substring("\(pid)"), "not a session leader: \(stat)")
            }
            try writeFile(r.path("Documents/a.txt"), "a\n")
            let unmount = r.run(["unmount", r.mountpoint])
            #expect(unmount.status == 0, "\(unmount.stderr)")
            #expect(!r.isMounted)
            #expect(r.waitUntilNoDriver(), "the background driver did not exit")
            #expect(readFileText(r.backingPath("Documents/a.txt")) == "a\n")
        }
    }

    @Test("L4 -o options: ro mounts read-only, usual options are accepted", arguments: [false, true])
    func mountOptions(_ foreground: Bool) throws {
        try withRulesMount { r in
            try writeFile(r.backingPath("Documents/doc.txt"), "read me\n")
            let before = RulesTreeSnapshot(of: r.backing, detail: .ignoringLinkCounts)
            if foreground {
                try r.mountForeground(["-o", "ro"])
            } else {
                let result = r.mountBackground(["-o", "ro"])
                #expect(result.status == 0, "\(result.stderr)")
            }
            let entry = readFileText("/proc/self/mountinfo").split(separator: "\n").first { $0.contains(" \(r.mountpoint) ") }
            #expect(entry?.split(separator: " ")[5].split(separator: ",").first == "ro", "\(entry ?? "not mounted")")
            #expect(readFileText(r.path("Documents/doc.txt")) == "read me\n")
            #expect(RulesSys.outcome(RulesSys.open(r.path("Documents/new.txt"), O_WRONLY | O_CREAT)) == "EROFS")
            #expect(RulesSys.outcome(RulesSys.open(r.path("Documents/doc.txt"), O_WRONLY)) == "EROFS")
            #expect(RulesSys.outcome(RulesSys.mkdir(r.path("tmp/d"))) == "EROFS")
            #expect(RulesSys.outcome(RulesSys.unlink(r.path("Documents/doc.txt"))) == "EROFS")
            // (Change times are left out: mount probes the backing file
            // system's xattr support on Documents as it starts.)
            let changes = RulesTreeSnapshot(of: r.backing, detail: .ignoringLinkCounts).changes(since: before)
            #expect(changes.isEmpty, "a read-only mount changed the backing directory:\n\(changes.joined(separator: "\n"))")
            let unmount = r.run(["unmount", r.mountpoint])
            #expect(unmount.status == 0, "\(unmount.stderr)")
            if foreground { #expect(r.waitForDriverExit() == .exited(0)) }
            #expect(r.waitUntilNoDriver())

            // Several usual options at once, comma-separated and repeated -o.
            let several = r.mountBackground(["-o", "allow_other,nosuid", "-o", "nodev,noatime"])
            #expect(several.status == 0, "\(several.stderr)")
            let options = readFileText("/proc/self/mountinfo").split(separator: "\n").first { $0.contains(" \(r.mountpoint) ") }
            #expect(options?.contains("nosuid") == true && options?.contains("nodev") == true, "\(options ?? "not mounted")")
            // allow_other: another user sees the container.
            let probe = runFSProbe(in: r.mountpoint, script: "readdir Documents\nopen 0 Documents/doc.txt rdonly\n", asUser: 65534)
            #expect(probe.lines.first == "ok . .. Inbox doc.txt" && probe.lines.last == "ok", "\(probe)")
            _ = r.run(["unmount", r.mountpoint])
            #expect(r.waitUntilNoDriver())
        }
    }

    @Test("L4 an unknown -o option fails: non-zero exit, nothing mounted, tmp and the rest unchanged", arguments: [false, true])
    func unknownOption(_ foreground: Bool) throws {
        try withRulesMount { r in
            try writeFile(r.backingPath("tmp/keep.txt"), "keep\n")
            let before = RulesTreeSnapshot(of: r.backing)
            var argv = ["mount", r.backing, r.mountpoint, "--app-name", "TestApp", "-o", "bogus_option"]
            if foreground { argv.append("--foreground") }
            let result = r.run(argv)
            #expect(result.status != 0, "\(result)")
            #expect(result.stderr.contains("bogus_option"), "\(result.stderr)")
            #expect(!r.isMounted)
            let changes = RulesTreeSnapshot(of: r.backing).changes(since: before)
            #expect(changes.isEmpty, "a failed mount changed the backing directory:\n\(changes.joined(separator: "\n"))")
            #expect(r.driverPIDs().isEmpty)
        }
    }
}
