// R3: no way back out of the world of `run --confine`. Each escape attempt
// fails, and nothing outside changes; where a control shows the same attempt
// succeeding without --confine, the confinement is what stops it.

import Glibc
import Testing

@Suite("Confinement: no way back out (R3)")
struct ConfinementEscapeTests {
    @Test("R3: no capabilities (bounding set included), no_new_privs; mount, umount, unshare and chroot fail and change nothing")
    func noPrivilegeToChangeMounts() throws {
        try withConfinableContainer { m in
            let before = RulesTreeSnapshot(of: m.backing)
            let result = m.runConfinedScript("""
                exec 2>&1
                grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status | tr -s '\\t' ' '
                mount -t tmpfs none /etc; echo "mount $?"
                mount -o remount,rw /; echo "remount $?"
                umount -l "$BACKING"; echo "umount $?"
                umount -l /tmp; echo "umount-tmp $?"
                unshare -m true; echo "unshare $?"
                unshare -Urm true; echo "unshare-root-map $?"
                unshare -Um sh -c 'umount -l "$BACKING" || umount -l /tmp || mount -o remount,rw / || touch /etc/asfs-probe'; echo "unshare-user $?"
                chroot / true; echo "chroot $?"
                ls -A "$BACKING" | wc -l
                exit 0
                """)
            #expect(result.status == 0, "\(result.stderr)")
            let printed = result.stdout.split(separator: "\n").map(String.init)
            for line in ["CapInh: 0000000000000000", "CapPrm: 0000000000000000", "CapEff: 0000000000000000",
                         "CapBnd: 0000000000000000", "CapAmb: 0000000000000000", "NoNewPrivs: 1"] {
                #expect(printed.contains(line), "\(line) missing: \(result.stdout)")
            }
            for attempt in ["mount", "remount", "umount", "umount-tmp", "unshare", "unshare-root-map", "unshare-user", "chroot"] {
                let status = printed.first { $0.hasPrefix(attempt + " ") }
                #expect(status != nil && status != attempt + " 0", "\(attempt) succeeded: \(result.stdout)")
            }
            #expect(printed.last == "0", "the backing directory is still hidden: \(result.stdout)")
            #expect(!exists("/etc/asfs-probe"))
            let changes = RulesTreeSnapshot(of: m.backing).changes(since: before)
            #expect(changes.isEmpty, "\(changes)")
        }
    }

    @Test("R3: --user 501 runs as 501:501 with no other group; a set-user-ID copy of touch gains nothing (it does without --confine)")
    func userAndSetUserIDProgram() throws {
        try withConfinableContainer(prepare: { backing in
            for folder in ["", "/Documents", "/Library", "/tmp"] { chown(backing + folder, 501, 501) }
            try makeDirectory(backing + "/Documents/root-only")  // root's, 0755
        }) { m in
            try makeDirectory(m.root + "/bin")
            let touch = m.root + "/bin/suid-touch"
            #expect(runProcess(["cp", "/usr/bin/touch", touch]).status == 0)
            #expect(chown(touch, 0, 0) == 0 && chmod(touch, 0o4755) == 0)

            // Control: the same program, as 501 without --confine, does write
            // as root.
            let control = runProcess([touch, m.path("Documents/root-only/control")], asUser: 501)
            #expect(control.status == 0, "control: \(control.stderr)")

            let result = m.runConfinedScript("""
                exec 2>&1
                id
                echo mine > Documents/mine.txt && echo written
                "$ROOT/bin/suid-touch" Documents/root-only/confined
                "$ROOT/bin/suid-touch" /etc/asfs-probe
                exit 0
                """, options: ["--user", "501"])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.hasPrefix("uid=501 gid=501 groups=501\nwritten\n"), "\(result.stdout)")
            #expect(lines(of: result.stdout, containing: "Documents/root-only/confined': Permission denied").count == 1, "\(result.stdout)")
            #expect(lines(of: result.stdout, containing: "/etc/asfs-probe': Read-only file system").count == 1, "\(result.stdout)")
            #expect(!exists(m.backingPath("Documents/root-only/confined")) && !exists("/etc/asfs-probe"))
            var status = stat()
            #expect(stat(m.backingPath("Documents/mine.txt"), &status) == 0 && status.st_uid == 501 && status.st_gid == 501)
        }
    }

    @Test("R3: /proc shows no process outside: /proc/PID/cwd and /proc/PID/root of one are gone, /proc/self/root is the confined world")
    func noOutsideProcesses() throws {
        try withConfinableContainer { m in
            let log = try TemporaryFile()
            let outside = try spawn(["sleep", "300"], cwd: m.root, stdin: "/dev/null", stdout: log.path, stderr: log.path)
            defer {
                kill(outside, SIGKILL)
                _ = waitForExit(outside, timeout: 15)
            }
            let result = m.runConfinedScript("""
                exec 2>&1
                ls /proc/\(outside)/cwd/
                touch /proc/\(outside)/cwd/asfs-probe /proc/\(outside)/root/etc/asfs-probe
                kill -0 \(outside) || echo "kill failed"
                ls -d /proc/[0-9]* | wc -l
                touch /proc/self/root/etc/asfs-probe /proc/1/root/etc/asfs-probe
                readlink /proc/self/root /proc/1/root
                exit 0
                """)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(lines(of: result.stdout, containing: "/proc/\(outside)/").count == 3, "\(result.stdout)")
            #expect(lines(of: result.stdout, containing: "kill failed").count == 1, "\(result.stdout)")
            // init, sh, and ls with its pipe partner: a handful, not the machine's.
            let printed = result.stdout.split(separator: "\n").map(String.init)
            let count = printed.compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.first ?? 999
            #expect(count <= 6, "\(result.stdout)")
            #expect(lines(of: result.stdout, containing: "Read-only file system").count == 2, "\(result.stdout)")
            #expect(!exists(m.root + "/asfs-probe") && !exists("/etc/asfs-probe"))
        }
    }

    @Test("R3: `..` walks from the container and its tmp end in the read-only world")
    func dotDotWalks() throws {
        try withConfinableContainer { m in
            let result = m.runConfinedScript("""
                exec 2>&1
                cd "$HOME/Documents/../../../../../../../../.." && pwd
                touch asfs-probe
                echo x > "$HOME/Documents/../../asfs-probe"
                ls -A "$HOME/../backing" | wc -l
                touch "$HOME/../backing/asfs-probe" /tmp/../../etc/asfs-probe "$TMPDIR/../../asfs-probe"
                exit 0
                """)
            #expect(result.status == 0, "\(result.stderr)")
            let printed = result.stdout.split(separator: "\n").map(String.init)
            #expect(printed.first == "/", "\(result.stdout)")
            #expect(lines(of: result.stdout, containing: "Read-only file system").count == 5, "\(result.stdout)")
            #expect(printed.contains("0"), "\(result.stdout)")
            #expect(!exists("/asfs-probe") && !exists(m.root + "/asfs-probe") && !exists("/etc/asfs-probe"))
        }
    }

    @Test("R3: a descriptor inherited from outside is closed: openat through it fails (without --confine it writes outside)")
    func inheritedDescriptorClosed() throws {
        try withConfinableContainer { m in
            let python = #"import os, sys; os.close(os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=5)); print("escaped")"#
            func attempt(_ confine: Bool, _ name: String) -> (status: Int32, stdout: String, stderr: String) {
                let run = [Binaries.appsandboxfs, "run", m.mountpoint] + (confine ? ["--confine"] : []) + ["--", "/usr/bin/python3", "-c", python, name]
                // The shell opens the folder outside as descriptor 5 and
                // hands it to appsandboxfs, as a careless caller would.
                return runProcess(["sh", "-c", #"exec 5<"$0"; exec "$@""#, m.root] + run, cwd: m.mountpoint)
            }
            let control = attempt(false, "control")
            #expect(control.status == 0 && exists(m.root + "/control"), "control: \(control.stderr)")
            let confined = attempt(true, "confined")
            #expect(confined.status == 1)
            #expect(confined.stderr.contains("OSError: [Errno 9] Bad file descriptor"), "\(confined.stderr)")
            #expect(!exists(m.root + "/confined"))
        }
    }
}
