// R3: no way back out of the world of `run --confine`. Each escape attempt
// fails, and nothing outside changes; where a control shows the same attempt
// succeeding without --confine, the confinement is what stops it.

import Glibc
import MountInfo
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
                ls -A "\(m.backing)" | wc -l
                touch "\(m.backing)/asfs-probe" /tmp/../../etc/asfs-probe "$TMPDIR/../../asfs-probe"
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

    @Test("R1, R3: a link put on the mountpoint's path (a folder above it swapped) is refused; the command never gets a read-write copy of the link's target")
    func mountpointPathSwappedForALink() throws {
        try withConfinableContainer { m in
            // The victim: a folder outside (not in /tmp, which is the
            // container's tmp inside) holding the mountpoint's last name.
            let victim = try makeTemporaryDirectory(in: "/var/lib")
            defer { _ = runProcess(["rm", "-rf", "--one-file-system", "--", victim]) }
            try makeDirectory(victim + "/mnt")
            try makeDirectory(victim + "/mnt/tmp")
            // Whoever can write a folder above the mountpoint can rename it
            // and put a link in its place (or mount a FUSE file system of
            // their own over it) while the mount table still lists the
            // container at its path. Done here in a mount namespace of the
            // test's own, with a tmpfs over the parent of the test's folder.
            let parent = String(m.root[..<m.root.lastIndex(of: "/")!])
            let script = #"""
                mount -t tmpfs asfs-cover "$1" && ln -s "$2" "$3" || exit 9
                exec "$4" run "$5" --confine -- sh -c 'touch "$HOME/escaped"; echo ran'
                """#
            let result = runProcess(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
                                     parent, victim, m.root, Binaries.appsandboxfs, m.mountpoint], cwd: "/")
            #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
            #expect(lines(of: result.stderr, containing: "nothing was run").count == 1, "\(result.stderr)")
            #expect(!result.stdout.contains("ran"))
            #expect(!exists(victim + "/mnt/escaped"))
        }
    }

    @Test("R3: a command run as root cannot leave a set-user-ID or set-group-ID file in the container (chmod, install -m, the mode of open and mknod); without --confine it can")
    func noSetIDFilesLeftBehind() throws {
        try withConfinableContainer { m in
            // Control: root without --confine (what the driver stores).
            let control = runProcess([Binaries.appsandboxfs, "run", m.mountpoint, "--", "sh", "-c",
                                      "cp /bin/true Documents/control && chmod 4755 Documents/control"], cwd: m.mountpoint)
            #expect(control.status == 0, "control: \(control.stderr)")
            #expect(mode(of: m.backingPath("Documents/control")) & 0o6000 == 0o4000)

            let python = #"""
                import os, sys
                def attempt(name, call):
                    try: call(); print(name, "allowed")
                    except OSError as error: print(name, "refused", error.errno)
                attempt("open", lambda: os.close(os.open("Documents/by-open", os.O_CREAT | os.O_WRONLY, 0o4755)))
                os.close(os.open("Documents/plain", os.O_CREAT | os.O_WRONLY, 0o755))
                attempt("chmod", lambda: os.chmod("Documents/plain", 0o4755))
                attempt("chmod-gid", lambda: os.chmod("Documents/plain", 0o2755))
                attempt("mknod", lambda: os.mknod("Documents/by-mknod", 0o100000 | 0o6755))
                attempt("chmod-plain", lambda: os.chmod("Documents/plain", 0o700))
                """#
            let result = m.runConfinedScript("""
                exec 2>&1
                cp /bin/true Documents/copy; install -m 4755 /bin/true Documents/installed; echo "install $?"
                chmod u+s Documents/copy; echo "chmod $?"
                python3 -c '\(python)'
                """)
            let printed = result.stdout.split(separator: "\n").map(String.init)
            for line in ["open refused 1", "chmod refused 1", "chmod-gid refused 1", "mknod refused 1", "chmod-plain allowed"] {
                #expect(printed.contains(line), "\(line) missing: \(result.stdout)")
            }
            #expect(!printed.contains("install 0") && !printed.contains("chmod 0"), "\(result.stdout)")
            for name in ["copy", "installed", "by-open", "plain", "by-mknod"] where exists(m.backingPath("Documents/" + name)) {
                #expect(mode(of: m.backingPath("Documents/" + name)) & 0o6000 == 0, "\(name) has a set-ID bit")
            }
        }
    }

    @Test("R3: the kernel keyring is out of reach: the session keyring run inherits (its caller's) cannot be read, even as --user 65534 (without --confine it can)")
    func noKeyring() throws {
        #if arch(x86_64)
        try withConfinableContainer { m in
            // keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0), and
            // KEYCTL_READ of it: system call 250 on x86_64.
            let python = #"""
                import ctypes
                libc = ctypes.CDLL(None, use_errno=True)
                ring = libc.syscall(250, 0, -3, 0)
                print("keyring", "refused" if ring < 0 else "reached", ctypes.get_errno() if ring < 0 else "")
                """#
            let control = runProcess([Binaries.appsandboxfs, "run", m.mountpoint, "--", "/usr/bin/python3", "-c", python], cwd: m.mountpoint)
            #expect(control.stdout.hasPrefix("keyring reached"), "control: \(control.stdout) \(control.stderr)")
            for options in [[], ["--user", "65534"]] {
                let result = m.runConfined(["/usr/bin/python3", "-c", python], options: options)
                #expect(result.stdout.hasPrefix("keyring refused \(ENOSYS)"), "\(options): \(result.stdout) \(result.stderr)")
            }
        }
        #endif
    }

    @Test("R3: -o dev,suid is dropped by the one -o parser: the container is nodev and nosuid with or without --confine, so a device file in it cannot be opened")
    func containerMountedWithDevices() throws {
        try withConfinableContainer(extraArguments: ["-o", "dev,suid"], prepare: { backing in
            #expect(runProcess(["mknod", "-m", "666", backing + "/Documents/null-copy", "c", "1", "3"]).status == 0)
        }) { m in
            let options = MountTable.entry(at: m.mountpoint)?.options ?? []
            #expect(options.contains("nodev") && options.contains("nosuid"), "mount options: \(options)")
            let plain = runProcess([Binaries.appsandboxfs, "run", m.mountpoint, "--", "sh", "-c", "echo x > Documents/null-copy"],
                                   cwd: m.mountpoint)
            #expect(plain.status != 0 && plain.stderr.contains("Permission denied"), "without --confine: \(plain.stderr)")
            let result = m.runConfinedScript("exec 2>&1; echo x > Documents/null-copy; echo \"status $?\"")
            #expect(lines(of: result.stdout, containing: "Permission denied").count == 1, "\(result.stdout)")
            #expect(!result.stdout.contains("status 0"), "\(result.stdout)")
        }
    }

    @Test("R3: TIOCSTI on the terminal run shares with its caller is refused (it would type into the caller's shell)")
    func noTerminalInjection() throws {
        try withConfinableContainer { m in
            let python = #"""
                import fcntl, termios
                try:
                    fcntl.ioctl(0, termios.TIOCSTI, b"#"); print("injected")
                except OSError as error: print("refused", error.errno)
                """#
            // script(1) gives run a terminal as its controlling terminal, as
            // an interactive shell would.
            let command = m.confinedCommand(["/usr/bin/python3", "-c", python], options: ["--user", "65534"])
            let result = runProcess(["script", "-qec", command.map(shellQuote).joined(separator: " "), "/dev/null"],
                                    cwd: m.mountpoint)
            #expect(result.stdout.contains("refused 1"), "\(result.stdout) \(result.stderr)")
            #expect(!result.stdout.contains("injected"))
        }
    }
}

private func shellQuote(_ text: String) -> String {
    "'" + text.split(separator: "'", omittingEmptySubsequences: false).joined(separator: #"'\''"#) + "'"
}

private func mode(of path: String) -> mode_t {
    var status = stat()
    return lstat(path, &status) == 0 ? status.st_mode : 0
}
