// R1 and R2: what a command run with `appsandboxfs run --confine` can reach.
// Real tools inside (sh, cp, sqlite3, python3); every write outside the
// container fails with EROFS and changes nothing.

import Glibc
import Testing

@Suite("Confinement: the world of run --confine (R1, R2)")
struct ConfinementWorldTests {
    @Test("R1: sh, cp and sqlite3 write the container through the mount, under its rules; everywhere else is read-only (EROFS)")
    func containerWritableRestReadOnly() throws {
        try withConfinableContainer { m in
            let result = m.runConfinedScript("""
                exec 2>&1
                echo hello > Documents/note.txt && cp Documents/note.txt "Library/Application Support/copy.txt" \
                  && sqlite3 Documents/app.db 'create table t(x); insert into t values (42);' \
                  && sqlite3 Documents/app.db 'select x from t;'
                for target in /etc/asfs-confine-probe /usr/asfs-confine-probe /var/lib/asfs-confine-probe \
                              /root/asfs-confine-probe "$ROOT/asfs-confine-probe" /asfs-confine-probe; do
                  touch "$target" 2>&1
                done
                echo bundle > TestApp.app/added 2>&1
                echo inbox > Documents/Inbox/added 2>&1
                exit 0
                """)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.hasPrefix("42\n"), "\(result.stdout)")
            #expect(readFileText(m.backingPath("Documents/note.txt")) == "hello\n")
            #expect(readFileText(m.backingPath("Library/Application Support/copy.txt")) == "hello\n")
            #expect(exists(m.backingPath("Documents/app.db")))
            // Six writes outside, each EROFS.
            #expect(lines(of: result.stdout, containing: "Read-only file system").count == 7, "\(result.stdout)")
            for outside in ["/etc/asfs-confine-probe", "/usr/asfs-confine-probe", "/var/lib/asfs-confine-probe",
                            "/root/asfs-confine-probe", m.root + "/asfs-confine-probe", "/asfs-confine-probe"] {
                #expect(!exists(outside), "\(outside) was created")
            }
            // The container's own rules still answer: the bundle is
            // read-only (the 7th EROFS above), the Inbox refuses new files.
            #expect(lines(of: result.stdout, containing: "Documents/Inbox/added: Operation not permitted").count == 1, "\(result.stdout)")
            #expect(!exists(m.backingPath("TestApp.app/added")) && !exists(m.backingPath("Documents/Inbox/added")))
        }
    }

    @Test("R1: HOME, CFFIXED_USER_HOME and TMPDIR point into the container; python3 writes HOME and TMPDIR; /tmp and /var/tmp are the container's tmp")
    func environmentAndTemporaryFolders() throws {
        try withConfinableContainer { m in
            let token = "asfs-confine-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            let result = m.runConfined(["/usr/bin/python3", "-c", """
                import os, sys, tempfile
                print(os.environ["HOME"], os.environ["CFFIXED_USER_HOME"], os.environ["TMPDIR"], tempfile.gettempdir())
                with open(os.path.join(os.environ["HOME"], "Documents", "py.txt"), "w") as f: f.write("py")
                with tempfile.NamedTemporaryFile(delete=False, prefix="py-") as f: f.write(b"t")
                print(f.name)
                token = sys.argv[1]
                with open("/tmp/" + token, "w") as f: f.write("tmp")
                with open("/var/tmp/" + token + "-var", "w") as f: f.write("var")
                print(sorted(os.listdir("/tmp")))
                """, token], cwd: "/")
            #expect(result.status == 0, "\(result.stderr)")
            let printed = result.stdout.split(separator: "\n").map(String.init)
            #expect(printed.first == "\(m.mountpoint) \(m.mountpoint) \(m.mountpoint)/tmp/ \(m.mountpoint)/tmp")
            #expect(printed.count > 1 && printed[1].hasPrefix(m.mountpoint + "/tmp/py-"), "\(printed)")
            #expect(readFileText(m.backingPath("Documents/py.txt")) == "py")
            #expect(readFileText(m.backingPath("tmp/" + token)) == "tmp")
            #expect(readFileText(m.backingPath("tmp/" + token + "-var")) == "var")
            #expect(!exists("/tmp/" + token) && !exists("/var/tmp/" + token + "-var"))
        }
    }

    @Test("R1: /dev, /proc and /sys work as usual; /dev holds no disks, /sys and /proc/sys are read-only")
    func deviceProcAndSys() throws {
        try withConfinableContainer { m in
            let result = m.runConfinedScript("""
                exec 2>&1
                echo x > /dev/null && head -c 16 /dev/urandom | wc -c && grep -c '^Name:' /proc/self/status \
                  && ls /sys/class > /dev/null && echo sys-readable
                ls /dev | tr '\\n' ' '; echo
                echo 1 > /proc/sys/vm/drop_caches 2>&1
                touch /sys/kernel/asfs-probe 2>&1
                touch /dev/asfs-probe 2>&1
                exit 0
                """)
            #expect(result.status == 0, "\(result.stderr)")
            let printed = result.stdout.split(separator: "\n").map(String.init)
            #expect(Array(printed.prefix(3)) == ["16", "1", "sys-readable"], "\(result.stdout)")
            #expect(printed.count > 3 && printed[3] == "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero ",
                    "\(result.stdout)")
            #expect(lines(of: result.stdout, containing: "Read-only file system").count == 3, "\(result.stdout)")
        }
    }

    @Test("R1: a mountpoint under /tmp is refused with one line, and the command never runs")
    func mountpointUnderTmpRefused() throws {
        try withMountedContainer { m in
            let marker = m.root + "/ran"
            let result = runProcess([Binaries.appsandboxfs, "run", m.mountpoint, "--confine", "--", "touch", marker])
            #expect(result.status == 1)
            #expect(result.stderr == "Error: \(m.mountpoint): --confine needs a mountpoint outside /tmp and /var/tmp (inside the confined world, /tmp is the container's tmp): mount the container elsewhere\n")
            #expect(!exists(marker))
        }
    }

    @Test("R2: the backing directory shows as an empty read-only folder; writing it by its path fails and changes nothing")
    func backingDirectoryHidden() throws {
        try withConfinableContainer { m in
            try writeFile(m.backingPath("Documents/secret.txt"), "secret")
            let before = RulesTreeSnapshot(of: m.backing)
            let result = m.runConfinedScript("""
                ls -A "$BACKING" | wc -l
                cat "$BACKING/Documents/secret.txt" 2>&1
                touch "$BACKING/x" 2>&1
                mkdir "$BACKING/Documents" 2>&1
                cat Documents/secret.txt
                """)
            #expect(result.status == 0, "\(result.stderr)")
            let printed = result.stdout.split(separator: "\n").map(String.init)
            #expect(printed.first == "0", "\(result.stdout)")
            #expect(lines(of: result.stdout, containing: "No such file or directory").count == 1, "\(result.stdout)")
            #expect(lines(of: result.stdout, containing: "Read-only file system").count == 2, "\(result.stdout)")
            #expect(printed.last == "secret", "through the mount the file is there: \(result.stdout)")
            let changes = RulesTreeSnapshot(of: m.backing).changes(since: before)
            #expect(changes.isEmpty, "\(changes)")
        }
    }

    @Test("R2: a --bundle source shows as an empty read-only folder; the bundle is there through the mount")
    func bundleSourceHidden() throws {
        let source = try makeTemporaryDirectory(prefix: "asfs-bundle", in: outsideTemporaryFolders)
        defer { removeTree(source) }
        try writeFile(source + "/Info.plist", "<plist/>")
        try writeFile(source + "/from-build.txt", "built")
        try withConfinableContainer(extraArguments: ["--bundle", source]) { m in
            let result = m.runConfinedScript("""
                ls -A "\(source)" | wc -l
                touch "\(source)/x" 2>&1
                cat TestApp.app/from-build.txt
                """)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "0\ntouch: cannot touch '\(source)/x': Read-only file system\nbuilt", "\(result.stdout)")
            #expect(!exists(source + "/x"))
        }
    }

    @Test("R2: another container is out of reach (mountpoint and backing directory), and can be unmounted while a confined command runs")
    func otherContainersUnreachable() throws {
        try withConfinableContainer { m in
            var running: pid_t = 0
            try withConfinableContainer { other in
                try writeFile(other.backingPath("Documents/other.txt"), "other's")
                let result = m.runConfinedScript("""
                    grep ' - fuse.appsandboxfs ' /proc/self/mountinfo | grep -vc " $BACKING "
                    ls -A "\(other.mountpoint)" | wc -l
                    ls -A "\(other.backing)" | wc -l
                    cat "\(other.mountpoint)/Documents/other.txt" "\(other.backing)/Documents/other.txt" 2>&1
                    touch "\(other.mountpoint)/x" 2>&1
                    exit 0
                    """)
                #expect(result.status == 0, "\(result.stderr)")
                #expect(Array(result.stdout.split(separator: "\n").prefix(3)) == ["0", "0", "0"], "\(result.stdout)")
                #expect(lines(of: result.stdout, containing: "No such file or directory").count == 2, "\(result.stdout)")
                #expect(lines(of: result.stdout, containing: "Read-only file system").count == 1, "\(result.stdout)")

                // A confined command that is still running when the other
                // container is unmounted: its world holds no copy of that
                // mount, so the other driver ends at once (the fixture's
                // teardown checks that it does, within 15 s).
                let log = try TemporaryFile()
                running = try spawn(m.confinedCommand(["sh", "-c", "touch Documents/started; while [ ! -e Documents/stop ]; do sleep 0.1; done"]),
                                    cwd: m.mountpoint, stdin: "/dev/null", stdout: log.path, stderr: log.path)
                #expect(waitUntil { exists(m.backingPath("Documents/started")) }, "\(log.read())")
            }
            try writeFile(m.backingPath("Documents/stop"), "")
            #expect(waitForExit(running, timeout: 60) == .exited(0))
        }
    }
}
