// Issue 11, item 8: the verbs that take a mountpoint (deliver, env,
// backup-report, purge ...) find its backing directory in the mount table.
// A line's type and source are whatever its mounter passed: any user can
// mount a FUSE file system of their own as "fuse.appsandboxfs" naming any
// folder as its source. Run as root on such a mountpoint, a verb must not
// read or write the named folder.

import Glibc
import MountInfo
import Testing

@Suite("Security: a mount-table line forged by another user is not believed (issue 11, item 8)")
struct ForgedMountTests {
    /// A FUSE file system that serves nothing (libfuse answers its own
    /// defaults: statfs works, everything else ENOSYS), mounted as
    /// "fuse.appsandboxfs" with the source it is given and the owner it is
    /// given, as fusermount3 mounts for a user (this machine's /dev/fuse is
    /// root's only, so root mounts on the user's behalf here):
    /// `forger SOURCE MOUNTPOINT UID`.
    static let forger = """
        #define FUSE_USE_VERSION 31
        #include <fuse_lowlevel.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <sys/mount.h>
        int main(int argc, char *argv[]) {
            if (argc != 4) return 2;
            int fd = open("/dev/fuse", O_RDWR);
            if (fd < 0) { perror("/dev/fuse"); return 3; }
            char options[128], passed[32];
            snprintf(options, sizeof options, "fd=%d,rootmode=40000,user_id=%s,group_id=%s", fd, argv[3], argv[3]);
            if (mount(argv[1], argv[2], "fuse.appsandboxfs", MS_NOSUID | MS_NODEV, options) != 0) { perror("mount"); return 4; }
            char *fake[] = { argv[0], NULL };
            struct fuse_args args = FUSE_ARGS_INIT(1, fake);
            struct fuse_lowlevel_ops ops = {0};
            struct fuse_session *se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
            if (se == NULL || fuse_set_signal_handlers(se) != 0) return 5;
            snprintf(passed, sizeof passed, "/dev/fd/%d", fd);
            if (fuse_session_mount(se, passed) != 0) return 6;
            int status = fuse_session_loop(se);
            umount2(argv[2], MNT_DETACH);
            fuse_remove_signal_handlers(se);
            fuse_session_destroy(se);
            return status == 0 ? 0 : 7;
        }
        """

    @Test("deliver and backup-report run by root on a mount that uid 65534 made as fuse.appsandboxfs naming a real container: refused in one line, the container untouched")
    func forgedLineByAnotherUser() throws {
        let folder = try makeTemporaryDirectory(prefix: "asfs-forged")
        defer { removeTree(folder) }
        #expect(chmod(folder, 0o755) == 0)

        // The victim: a real container root owns, which a verb trusting the
        // line would write into.
        let victim = folder + "/victim"
        let made = runProcess([Binaries.appsandboxfs, "init", victim, "--app-name", "Victim"])
        try #require(made.status == 0, "\(made)")
        let before = RulesTreeSnapshot(of: victim)

        let mountpoint = folder + "/mnt"
        try makeDirectory(mountpoint)
        let forged = try Self.mountForged(source: victim, at: mountpoint, uid: 65534, building: folder)
        defer { forged.stop() }
        let line = readFileText("/proc/self/mountinfo").split(separator: "\n").first { $0.contains(" \(mountpoint) ") } ?? ""
        try #require(line.contains("fuse.appsandboxfs") && line.contains(victim), "not a forged line: \(line)")

        let letter = folder + "/letter.txt"
        try writeFile(letter, "not for you\n")
        for arguments in [["deliver", letter, "--to", mountpoint], ["backup-report", mountpoint, "--json"]] {
            let result = runProcess([Binaries.appsandboxfs] + arguments, timeout: 60)
            let said = result.stderr.split(separator: "\n")
            #expect(result.status != 0, "\(arguments[0]) believed the forged line: \(result)")
            #expect(said.count == 1 && said[0].contains(mountpoint) && said[0].contains("not trusted"),
                    "\(arguments[0]): not one line naming the mountpoint and the distrust:\n\(result.stderr)")
            #expect(!result.stdout.contains(victim), "\(arguments[0]) reported on the victim: \(result.stdout)")
        }
        #expect(RulesSys.lstat(victim + "/Documents/Inbox/letter.txt").isFailure, "the letter reached the victim's Inbox")
        #expect(RulesTreeSnapshot(of: victim).changes(since: before).isEmpty, "the victim container changed")
    }

    /// A forger serving a mount of its own (stopped by `stop()`, which
    /// unmounts it).
    struct ForgedMount {
        let pid: pid_t
        let mountpoint: String

        func stop() {
            kill(pid, SIGTERM)
            if waitForExit(pid, timeout: 10) == nil {
                kill(pid, SIGKILL)
                _ = waitForExit(pid, timeout: 10)
            }
            if isFuseMount(mountpoint) { _ = umount2(mountpoint, Int32(MNT_DETACH)) }
        }
    }

    /// Builds the forger in `folder` (once) and mounts `source` at
    /// `mountpoint` as fuse.appsandboxfs owned by `uid`; waits for the mount.
    static func mountForged(source: String, at mountpoint: String, uid: uid_t, building folder: String) throws -> ForgedMount {
        let forger = folder + "/forger"
        if access(forger, X_OK) != 0 {
            try writeFile(folder + "/forger.c", Self.forger)
            let built = runProcess(["sh", "-c", "cc -O1 -o \(forger) \(folder)/forger.c $(pkg-config --cflags --libs fuse3)"])
            try #require(built.status == 0, "building the forger: \(built)")
        }
        let log = try TemporaryFile()
        let stacked = { MountTable.entries().filter { $0.mountpoint == mountpoint }.count }
        let mountsBefore = stacked()
        let pid = try spawn([forger, source, mountpoint, String(uid)], stdin: "/dev/null", stdout: log.path, stderr: log.path)
        let forged = ForgedMount(pid: pid, mountpoint: mountpoint)
        let deadline = monotonicNow() + 20
        // Counted, not looked up: a forger may be stacked on another.
        while stacked() == mountsBefore
            && monotonicNow() < deadline && waitForExit(pid, timeout: 0) == nil { usleep(20_000) }
        guard stacked() > mountsBefore else {
            forged.stop()
            throw SupportError("the forger did not mount: \(log.read())")
        }
        return forged
    }
}
