// Checks of the test support itself: the mount fixture, runProcess and
// fsprobe, so that a failure elsewhere can be trusted to be the driver's.

import Glibc
import Testing

@Suite("Test support: mount fixture, processes, fsprobe")
struct MountFixtureTests {
    @Test("The container's layout shows through the mount")
    func layoutIsVisible() throws {
        try withMountedContainer { mounted in
            for folder in [mounted.documents, mounted.inbox, mounted.library, mounted.applicationSupport,
                           mounted.caches, mounted.preferences, mounted.tmp, mounted.bundle] {
                #expect(isDirectory(folder), "\(folder) is not a folder through the mount")
            }
            let plist = readFileBytes(mounted.bundle + "/Info.plist")
            #expect(plist != nil && plist == readFileBytes(mounted.backingPath("TestApp.app/Info.plist")))
            #expect(access(mounted.bundle + "/app-binary", X_OK) == 0)
            #expect(mounted.path("Documents") == mounted.documents)
            #expect(mounted.backingPath("") == mounted.backing)
            #expect(mounted.isMounted)
            #expect(kill(mounted.driverPID, 0) == 0)
        }
    }

    @Test("scratch() gives fresh, distinct, empty 0755 folders in Documents")
    func scratchFolders() throws {
        try withMountedContainer { mounted in
            let a = try mounted.scratch(), b = try mounted.scratch("other name(with) parens")
            #expect(a != b)
            #expect(a.hasPrefix(mounted.documents + "/scratchFolders-"))
            for dir in [a, b] {
                var st = stat()
                #expect(stat(dir, &st) == 0)
                #expect(st.st_mode & 0o7777 == 0o755)
                #expect(runFSProbe(in: dir, script: "readdir .").lines == ["ok . .."])
            }
        }
    }

    @Test("The fixture unmounts, stops the driver and removes its folders, also when the body throws")
    func cleansUpAfterThrow() throws {
        struct Planned: Error {}
        var seen: (root: String, mountpoint: String, pid: pid_t)?
        #expect(throws: Planned.self) {
            try withMountedContainer { mounted in
                seen = (mounted.root, mounted.mountpoint, mounted.driverPID)
                try writeFile(try mounted.scratch() + "/f", "data")
                throw Planned()
            }
        }
        let (root, mountpoint, pid) = try #require(seen)
        #expect(!isFuseMount(mountpoint))
        #expect(access(root, F_OK) != 0, "\(root) is still there")
        #expect(kill(pid, 0) != 0, "the driver \(pid) still runs")
    }

    @Test("The body's value comes back; async bodies work too")
    func returnsValues() async throws {
        let n = try withMountedContainer { _ in 42 }
        #expect(n == 42)
        let text = try await withMountedContainer { mounted in
            try await Task.sleep(nanoseconds: 1_000_000)
            return mounted.appName
        }
        #expect(text == "TestApp")
    }

    @Test("prepare() changes the backing directory before the mount")
    func prepareRunsBeforeMount() throws {
        try withMountedContainer(prepare: { backing in
            try writeFile(backing + "/Documents/prepared.txt", "from prepare")
        }) { mounted in
            #expect(readFileText(mounted.documents + "/prepared.txt") == "from prepare")
        }
    }

    @Test("A driver the test stops itself (SIGTERM, rule L3) exits 0 and is not counted as a failure")
    func stoppedOnPurpose() throws {
        try withMountedContainer { mounted in
            mounted.signalDriver(SIGTERM)
            let status = mounted.waitForDriverExit(timeout: 15)
            #expect(status == .exited(0))
            #expect(!mounted.isMounted)
        }
    }

    @Test("runProcess: output, status, stdin, cwd, another user, timeout")
    func runProcessBasics() {
        let echo = runProcess(["sh", "-c", "echo out; echo err >&2; exit 3"])
        #expect(echo.status == 3 && echo.stdout == "out\n" && echo.stderr == "err\n")
        #expect(runProcess(["cat"], stdin: "fed in").stdout == "fed in")
        #expect(runProcess(["pwd"], cwd: "/usr").stdout == "/usr\n")
        #expect(runProcess(["id", "-u"], asUser: nobody).stdout == "65534\n")
        #expect(runProcess(["id", "-G"], asUser: nobody, supplementaryGroups: [4321]).stdout == "65534 4321\n")
        let slow = runProcess(["sleep", "30"], timeout: 0.2)
        #expect(slow.status == 128 + SIGKILL)
        #expect(runProcess(["/nonexistent/program"]).status == 127)
    }

    @Test("posixError names errno values")
    func errnoNames() {
        #expect(posixError(ENOENT) == "ENOENT")
        #expect(posixError(EWOULDBLOCK) == "EAGAIN")
        #expect(posixError(ENOTSUP) == "EOPNOTSUPP")
        #expect(posixError(9999) == "E9999")
    }

    @Test("fsprobe: one line per operation, errno names, bad lines reported")
    func fsprobeBasics() throws {
        let dir = try makeTemporaryDirectory()
        defer { removeTree(dir) }
        let out = runFSProbe(in: dir, script: """
            # a comment, then a blank line

            open 1 f creat|rdwr 640
            write 1 "a\\tb"*2
            pread 1 10 0
            stat f
            stat missing
            repeat 3 mkdir d{i}
            readdir .
            frobnicate
            """)
        #expect(out.lines == [
            "ok", "ok 6", #"ok 6 "a\tba\tb""#, "ok type=reg mode=0640 nlink=1 size=6 uid=0 gid=0",
            "err ENOENT", "ok 3", "ok . .. d0 d1 d2 f", "bad unknown operation frobnicate",
        ])
        #expect(out.status == 2)
    }
}
