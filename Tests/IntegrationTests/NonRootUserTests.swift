// Issue 31: what a user other than root gets, with /dev/fuse usable and
// fusermount3 set-user-ID (as Debian and Ubuntu ship them) and
// /etc/fuse.conf as installed (no user_allow_other). The mount is the
// user's alone (no allow_other; one line says so) and every rule that needs
// no privilege holds; passthrough is off; `run --confine` refuses in one
// line. CI runs this suite (and the fixture's, the protection and capacity
// suites) as uid 65534: mount-scripts/nonroot.sh. As root, the command
// line's test runs it as uid 65534 in a mount namespace of its own whose
// /dev/fuse is 0666 (the host's stays as it is).
//
//   swift test --filter NonRootUser

import AppSandboxTesting
import Glibc
import MountInfo
import Testing

@Suite("Issue 31: a user other than root")
struct NonRootUserTests {
    static let isRoot = geteuid() == 0

    /// Part one through the fixture, as whoever runs the suite; not as
    /// root, also what such a mount is: no allow_other, its one line, no
    /// passthrough.
    @Test("D1 W1 I1 I2 I3 I4 B1 B2 S1 S2 X1 X6 P5 for this user's mount, in-process and with a driver program; not root: no allow_other and one line saying so, passthrough off",
          .canMountContainers, arguments: [false, true])
    func partOne(inProcess: Bool) throws {
        let options = AppSandboxTesting.MountedContainer.Options(inProcess: inProcess, prepare: { backing in
            try writeFile(backing + "/Documents/Inbox/in.txt", "in\n")
            try writeFile(backing + "/Documents/Inbox/keep.txt", "keep\n")
        })
        try AppSandboxTesting.withMountedContainer(options) { c in
            // W1 (D1): the writable zones take what a POSIX file system does.
            for folder in [c.documents, c.library, c.applicationSupport, c.caches, c.preferences, c.tmp] {
                try writeFile(folder + "/note.txt", "note")
                #expect(readFileText(folder + "/note.txt") == "note", "\(folder)")
                #expect(rename(folder + "/note.txt", folder + "/renamed.txt") == 0, "\(folder)")
                #expect(mkdir(folder + "/sub", 0o755) == 0, "\(folder)")
                #expect(chmod(folder + "/renamed.txt", 0o600) == 0, "\(folder)")
            }
            #expect(readFileText(c.backingPath("Documents/renamed.txt")) == "note")
            // I1, I2, I3; I4: EPERM for a create in the Inbox.
            #expect(readFileText(c.inbox + "/keep.txt") == "keep\n")
            #expect(rename(c.inbox + "/in.txt", c.documents + "/in.txt") == 0)
            #expect(unlink(c.inbox + "/keep.txt") == 0)
            #expect(openErrno(c.inbox + "/new", O_WRONLY | O_CREAT) == EPERM)
            // B1, B2: the bundle reads and refuses every change (EROFS).
            var status = stat()
            #expect(stat(c.bundle, &status) == 0)
            #expect(openErrno(c.bundle + "/new", O_WRONLY | O_CREAT) == EROFS)
            #expect(errnoOf { mkdir(c.bundle + "/folder", 0o755) } == EROFS)
            // S1, S2: no new entry at the root; a system folder stays.
            #expect(errnoOf { mkdir(c.mountpoint + "/Extra", 0o755) } == EPERM)
            #expect(errnoOf { rmdir(c.caches) } == EPERM)
            // X1, X6: the backup flag and other user. attributes.
            let file = c.documents + "/in.txt"
            #expect(RulesSys.setxattr(file, "com.apple.metadata:com_apple_backup_excludeItem", [1]) == 0)
            #expect(RulesSys.setxattr(file, "user.mine", Array("v".utf8)) == 0)
            #expect((try? RulesSys.getxattr(file, "user.mine").get()) == Array("v".utf8))
            // P5: a class A file cannot be read while the device is locked.
            try c.setProtection(.complete, of: file)
            try c.lock(grace: 0)
            #expect(openErrno(file, O_RDONLY) == EPERM)
            try c.unlock()
            #expect(readFileText(file) == "in\n")
            #expect(c.denials().contains { $0.path == c.inbox + "/new" })

            let line = MountTable.entry(at: c.mountpoint)
            if Self.isRoot {
                #expect(line?.superOptions.contains("allow_other") == true)
            } else {
                #expect(line?.superOptions.contains("allow_other") == false, "\(String(describing: line))")
                #expect(line?.mountedBy == geteuid())
                let log = c.driverLog.split(separator: "\n")
                #expect(log.filter { $0.contains("mounted without allow_other: only uid \(geteuid()) reaches the container") }.count == 1,
                        "\(c.driverLog)")
                #expect(log.filter { $0.contains("passthrough off: the kernel gives it only to a driver with CAP_SYS_ADMIN") }.count == 1,
                        "\(c.driverLog)")
            }
        }
    }

    /// The command line's main verbs as a user other than root: as root,
    /// run as uid 65534 in a mount namespace of its own with a /dev/fuse of
    /// mode 0666 (the mounts go with the namespace); otherwise as this user.
    @Test("The command line as a user other than root: init, mount (one line: no allow_other), status, deliver (I6), lock and unlock (P5), unmount (T2); -o allow_other and run --confine (R5) refused in one line saying why")
    func commandLine() throws {
        if !Self.isRoot, let reason = AppSandboxTesting.MountedContainer.mountingUnavailableReason {
            try Test.cancel("cannot mount here: \(reason)")
        }
        // Outside /tmp, where --confine would refuse for another reason: the
        // tests' own folder as root, else $HOME when it is outside /tmp.
        let home = environment("HOME").flatMap { access($0, W_OK) == 0 && !$0.hasPrefix("/tmp") ? $0 : nil }
        let folder = try makeTemporaryDirectory(prefix: "asfs-nonroot", in: Self.isRoot ? outsideTemporaryFolders : home ?? "/tmp")
        let outsideTmp = !folder.hasPrefix("/tmp/")
        defer { removeTree(folder) }
        if Self.isRoot { #expect(chown(folder, 65534, 65534) == 0) }
        let script = """
            B=$1 D=$2
            cd "$D" || exit 9
            "$B" init "$D/back" --app-name Z >/dev/null || exit 10
            mkdir "$D/mnt" && echo file > "$D/in.pdf"
            "$B" mount "$D/back" "$D/mnt" 2>"$D/note" || { cat "$D/note"; exit 11; }
            echo "note: $(cat "$D/note")"
            grep -q " $D/mnt .*allow_other" /proc/self/mounts && echo "allow_other"
            echo tmp > "$D/mnt/tmp/t" && echo hi > "$D/mnt/Documents/a.txt" && echo "W1 ok"
            "$B" status | grep -q "$D/mnt " && echo "status ok"
            "$B" deliver "$D/in.pdf" --to "$D/mnt" >/dev/null && cat "$D/mnt/Documents/Inbox/in.pdf"
            setfattr -n NSFileProtectionKey -v NSFileProtectionComplete "$D/mnt/Documents/a.txt"
            "$B" lock "$D/mnt" --grace 0 >/dev/null && { cat "$D/mnt/Documents/a.txt" 2>/dev/null || echo "P5 refused"; }
            "$B" unlock "$D/mnt" >/dev/null && cat "$D/mnt/Documents/a.txt"
            "$B" run "$D/mnt" --confine -- touch "$D/ran" 2>"$D/confine"
            echo "confine $? $(wc -l < "$D/confine") $(cat "$D/confine")"
            [ -e "$D/ran" ] && echo "confined command ran"
            "$B" unmount "$D/mnt" && echo "unmounted, tmp: $(ls "$D/back/tmp")"
            "$B" mount "$D/back" "$D/mnt" -o allow_other 2>"$D/other"
            echo "allow_other $? $(wc -l < "$D/other") $(cat "$D/other")"
            grep -c " $D/mnt " /proc/self/mounts || true
            """
        var argv = ["sh", "-c", script, "sh", Binaries.appsandboxfs, folder]
        if Self.isRoot {
            let device = "d=$(mktemp -d) && mount -t tmpfs -o size=64k,mode=755 tmpfs \"$d\" && mknod -m 666 \"$d/fuse\" c 10 229 "
                + "&& mount --bind \"$d/fuse\" /dev/fuse && exec setpriv --reuid=65534 --regid=65534 --clear-groups -- \"$@\""
            argv = inOwnMountNamespace(["sh", "-c", device, "sh"] + argv)
        }
        let result = runProcess(argv, timeout: 120)
        let uid = Self.isRoot ? 65534 : geteuid()
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(result.status == 0, "\(result)")
        #expect(lines.first == "note: appsandboxfs: \(folder)/mnt: mounted without allow_other: only uid \(uid) reaches the container (a user other than root gets allow_other only where /etc/fuse.conf has the line user_allow_other)", "\(result)")
        #expect(Array(lines.dropFirst().prefix(6)) == ["W1 ok", "status ok", "file", "P5 refused", "hi", lines[6]], "\(result)")
        // R5: no world can be made without privilege: one line, nothing run.
        #expect(lines.count > 6 && lines[6].hasPrefix("confine ") && !lines[6].hasPrefix("confine 0 ")
                    && lines[6].contains(" 1 Error: ") && lines[6].contains("nothing was run"), "\(result)")
        #expect(!outsideTmp || lines.count > 6 && lines[6].contains("--confine needs root"), "\(result)")
        #expect(lines.dropFirst(7).first == "unmounted, tmp: ", "\(result)")
        #expect(lines.dropFirst(8).first?.hasPrefix("allow_other 1 1 Error: -o allow_other: fusermount3 lets a user other than root (uid \(uid)) ask for it only where /etc/fuse.conf has a line user_allow_other; to enable it, add that line as root") == true,
                "\(result)")
        #expect(lines.dropFirst(9).first == "0", "nothing mounted after the refusal: \(result)")
    }
}

extension NonRootUserTests {
    /// Where /etc/fuse.conf has user_allow_other (here a copy bound over it
    /// in a mount namespace of the test's own, so the machine's file is
    /// never changed): the user's mount gets allow_other, and a file another
    /// user creates through it is made and stays the mounting user's (a
    /// driver that is not root cannot give it away; it used to try, and the
    /// create failed with EPERM).
    @Test("With user_allow_other: uid 65534's mount has allow_other; uid 65533 creates a file in Documents (W1), which stays uid 65534's",
          .enabled(if: NonRootUserTests.isRoot, "needs root to make the namespace and become two users"))
    func userAllowOther() throws {
        let folder = try makeTemporaryDirectory(prefix: "asfs-nonroot-other")
        defer { removeTree(folder) }
        #expect(chown(folder, 65534, 65534) == 0)
        let script = """
            B=$1 D=$2
            as() { u=$1; shift; setpriv --reuid=$u --regid=$u --clear-groups -- "$@"; }
            d=$(mktemp -d) && mount -t tmpfs -o size=64k,mode=755 tmpfs "$d" && mknod -m 666 "$d/fuse" c 10 229 \
                && mount --bind "$d/fuse" /dev/fuse && printf 'user_allow_other\n' > "$d/fuse.conf" \
                && mount --bind "$d/fuse.conf" /etc/fuse.conf || exit 9
            as 65534 "$B" init "$D/back" --app-name Z >/dev/null && as 65534 mkdir "$D/mnt" && chmod 777 "$D/back/Documents" || exit 10
            as 65534 "$B" mount "$D/back" "$D/mnt" 2>&1 || exit 11
            grep -q " $D/mnt .*allow_other" /proc/self/mounts && echo "allow_other"
            as 65533 sh -c "echo other > $D/mnt/Documents/other.txt" 2>&1 && stat -c "%u %s" "$D/back/Documents/other.txt"
            as 65534 "$B" unmount "$D/mnt" && echo "unmounted"
            """
        let result = runProcess(inOwnMountNamespace(["sh", "-c", script, "sh", Binaries.appsandboxfs, folder]), timeout: 120)
        #expect(result.status == 0 && result.stdout == "allow_other\n65534 6\nunmounted\n", "\(result)")
    }
}

/// The errno a failing call leaves (0 when it succeeds).
private func errnoOf(_ call: () -> Int32) -> Int32 {
    call() == 0 ? 0 : errno
}

/// The errno a failing open leaves (0 when it opens; the descriptor is closed).
private func openErrno(_ path: String, _ flags: Int32) -> Int32 {
    let fd = open(path, flags | O_CLOEXEC, 0o644)
    if fd < 0 { return errno }
    close(fd)
    return 0
}
