// Issue 25, items 3 and 9, and the late-container check's long lines:
// - a driver started with APPSANDBOXFS_STATE_DIR served its control socket
//   from a folder `run --confine` did not hide: the confined command (as
//   root) connected, sent `unlock` and read its class-A file (R2, R3, P5);
// - the plan believed every `fuse.appsandboxfs` line: any user's own FUSE
//   mount naming "/" made every confined run refuse, one naming the
//   container's Documents hid them from the app (R1, R2);
// - the confined world's second reading of the mount table skipped lines
//   over 16 KiB: a container listed on such a line stayed inside (R2).

import Glibc
import MountInfo
import Testing

@Suite("Confinement: the container's own driver, and mount-table lines of others (issue 25, items 3 and 9)")
struct ConfinementTrustTests {
    /// Connects to each socket given and sends REQUEST; prints one line per
    /// socket: "answer PATH TEXT" or "failed PATH ERROR".
    static let connectEverywhere = """
        import socket, sys
        for path in sys.argv[2:]:
            try:
                s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(path)
                try:
                    s.sendall(sys.argv[1].encode() + b"\\n")
                except OSError:
                    pass  # a refusal is sent before the request is read
                print("answer", path, s.recv(300).decode().strip())
            except Exception as error:
                print("failed", path, error)
        """

    @Test("R2 R3 R5 P5 (issue 25, item 3): a driver started with APPSANDBOXFS_STATE_DIR: run --confine without that folder refuses in one line and runs nothing; with it, a command sending unlock to every socket it finds (the driver's own path included) gets no answer, the class-A file stays unreadable, the device locked")
    func driverWithItsOwnStateFolder() throws {
        try withEcoMount(isolatedState: true, parent: outsideTemporaryFolders) { eco in
            let driver = try eco.mountInBackground()
            let state = try #require(eco.stateDirectory)
            let socket = state + "/\(driver).control"
            let diary = eco.mountpoint + "/Documents/diary"
            try writeFile(diary, "dear diary\n")
            #expect(Protect.setClass(diary, classA) == 0)
            let locked = eco.appsandboxfs(["lock", eco.mountpoint, "--grace", "0"])
            try #require(locked.status == 0 && locked.stdout == "locked\n", "\(locked)")
            let script = """
                python3 -c '\(Self.connectEverywhere)' unlock \(socket) $(find /run /var /tmp /dev/shm \(eco.root) -type s 2>/dev/null)
                cat Documents/diary 2>&1
                """

            // The driver's folder unknown (not this caller's): refused.
            let refused = runProcess(["env", "-u", "APPSANDBOXFS_STATE_DIR", Binaries.appsandboxfs, "run", eco.mountpoint,
                                      "--confine", "--", "sh", "-c", script],
                                     cwd: eco.mountpoint, timeout: 120)
            let said = refused.stderr.split(separator: "\n")
            #expect(refused.status != 0, "ran: \(refused)")
            #expect(said.count == 1 && said[0].contains("nothing was run") && said[0].contains("APPSANDBOXFS_STATE_DIR"),
                    "not one line:\n\(refused.stderr)")
            #expect(refused.stdout.isEmpty, "the command ran: \(refused.stdout)")

            // Known (the caller uses the same folder): hidden.
            let confined = eco.command([Binaries.appsandboxfs, "run", eco.mountpoint, "--confine", "--", "sh", "-c", script],
                                       cwd: eco.mountpoint)
            #expect(confined.status == 0 || confined.status == 1, "\(confined)")
            #expect(confined.stdout.contains("failed \(socket)"), "the driver's socket path was not tried: \(confined.stdout)")
            #expect(!confined.stdout.contains(" ok "), "a control socket answered: \(confined.stdout)")
            #expect(!confined.stdout.contains("dear diary"), "the class-A file was read while locked: \(confined.stdout)")

            let status = eco.appsandboxfs(["status", "--json"])
            #expect(status.stdout.contains("\"deviceState\" : \"locked\""), "\(status.stdout)")
            #expect(!RulesSys.lstat(eco.backing + "/Documents/diary").isFailure)
        }
    }

    @Test("R2 R3 P5 (issue 25, item 3, defence in depth): the driver refuses a request from another mount namespace without CAP_SYS_ADMIN (a confined run's situation) even when its socket is reachable; from its own namespace, and with the capability, it answers")
    func controlSocketRefusesOtherMountNamespaces() throws {
        try withConfinableContainer { m in
            m.lock(grace: 0)
            defer { m.unlock() }
            let socket = ControlSocket.path(driverPID: m.driverPID)
            let python = ["python3", "-c", Self.connectEverywhere]
            let dropped = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--"]
            let elsewhere = runProcess(["unshare", "-m", "--"] + dropped + python + ["unlock", socket], timeout: 60)
            #expect(elsewhere.stdout.contains("error") && elsewhere.stdout.contains("mount namespace"),
                    "another mount namespace without CAP_SYS_ADMIN was answered: \(elsewhere)")
            let here = runProcess(dropped + python + ["state", socket], timeout: 60)
            #expect(here.stdout.contains("ok locked"), "its own namespace, no capability: \(here)")
            let privileged = runProcess(["unshare", "-m", "--"] + python + ["state", socket], timeout: 60)
            #expect(privileged.stdout.contains("ok locked"), "another namespace with CAP_SYS_ADMIN: \(privileged)")
            let state = m.device("status", ["--json"])
            #expect(state.stdout.contains("\"deviceState\" : \"locked\""), "\(state.stdout)")
        }
    }

    @Test("R1 R2 (issue 25, item 9): uid 65534's own FUSE mount as fuse.appsandboxfs naming \"/\", or the container's Documents, neither blocks run --confine nor hides the app's Documents",
          arguments: ["/", "Documents"])
    func forgedLineOfAnotherUser(named: String) throws {
        let folder = try makeTemporaryDirectory(prefix: "asfs-forged")
        defer { removeTree(folder) }
        try withConfinableContainer { m in
            try writeFile(m.documents + "/note.txt", "mine\n")
            let forgedMountpoint = folder + "/mnt"
            try makeDirectory(forgedMountpoint)
            let source = named == "/" ? "/" : m.mountpoint + "/Documents"
            let forged = try ForgedMountTests.mountForged(source: source, at: forgedMountpoint, uid: 65534, building: folder)
            defer { forged.stop() }
            let result = m.runConfinedScript("cat Documents/note.txt && ls \(m.mountpoint)/Documents")
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "mine\nInbox\nnote.txt\n", "\(result)")
        }
    }

    @Test("R2 (issue 25, suspected): a container listed on a mount-table line over 16 KiB (a long mountpoint and source) is unmounted inside too; here the lower of two stacked at one path, which only the world's own reading of the table can find")
    func longMountTableLine() throws {
        let folder = try makeTemporaryDirectory(prefix: "asfs-long")
        defer { removeTree(folder) }
        // 15 folders of 240 bytes, mostly spaces (each written \040 in
        // mountinfo): the mountpoint alone is about 14 KiB there, the
        // source another 12 KiB.
        var mountpoint = folder + "/asfslongmarker"
        for level in 0..<15 { mountpoint += "/" + String(level) + String(repeating: " ", count: 238) }
        try #require(mountpoint.utf8.count < Int(PATH_MAX))
        let made = runProcess(["mkdir", "-p", mountpoint])
        try #require(made.status == 0, "\(made)")
        let source = "long" + String(repeating: " ", count: 3000)
        try withConfinableContainer { m in
            let lower = try ForgedMountTests.mountForged(source: source, at: mountpoint, uid: 0, building: folder)
            defer { lower.stop() }
            let upper = try ForgedMountTests.mountForged(source: source, at: mountpoint, uid: 0, building: folder)
            defer { upper.stop() }
            let lines = readFileText("/proc/self/mountinfo").split(separator: "\n").filter { $0.contains("asfslongmarker") }
            try #require(lines.count == 2 && lines.allSatisfy { $0.utf8.count > 16384 }, "\(lines.map(\.utf8.count))")
            let result = m.runConfinedScript("grep -c asfslongmarker /proc/self/mountinfo")
            #expect(result.stdout == "0\n", "a container on a long line stayed in the world: \(result)")
        }
        // Both forgers gone, whichever unmounted which.
        while MountTable.entries().contains(where: { $0.mountpoint == mountpoint }) {
            guard umount2(mountpoint, Int32(MNT_DETACH)) == 0 else { break }
        }
    }
}
