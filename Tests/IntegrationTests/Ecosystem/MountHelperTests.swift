// L4: `mount -t fuse.appsandboxfs`, an fstab line and `umount`, with the
// real mount(8), umount(8) and the helper mount-scripts/setup.sh installs as
// /sbin/mount.fuse.appsandboxfs. mount(8) passes its environment on to the
// helper, so APPSANDBOXFS_BIN makes the helper run the appsandboxfs under
// test.

import Foundation
import Glibc
import Testing

/// The helper as installed, and as in the repository.
private let installedHelper = "/sbin/mount.fuse.appsandboxfs"
private let helperInstalled = access(installedHelper, X_OK) == 0

@Suite("Ecosystem: mount(8), fstab and umount through the mount helper (L4)")
struct EcosystemMountHelperTests {
    @Test("setup.sh installed the helper, unchanged, and appsandboxfs on PATH")
    func helperIsInstalled() throws {
        try #require(helperInstalled, "\(installedHelper) is missing: run bash mount-scripts/setup.sh (it installs the helper that mount -t fuse.appsandboxfs runs)")
        #expect(readFileBytes(installedHelper) == readFileBytes(repositoryRoot + "/mount-scripts/mount.fuse.appsandboxfs"),
                "\(installedHelper) differs from mount-scripts/mount.fuse.appsandboxfs: run bash mount-scripts/setup.sh again")
        #expect(access("/usr/local/bin/appsandboxfs", X_OK) == 0, "/usr/local/bin/appsandboxfs is missing (setup.sh installs it)")
    }

    @Test("mount -t fuse.appsandboxfs BACKING MNT -o ... mounts with the options mapped; umount unmounts",
          .enabled(if: helperInstalled, "run mount-scripts/setup.sh to install /sbin/mount.fuse.appsandboxfs"))
    func mountTypeAndUmount() throws {
        try withEcoMount { m in
            let options = ["app_name=TestApp", "denial_log=\(m.denialLog)", "keep_tmp", "cache_timeout=0",
                           "defaults", "noauto", "nofail", "_netdev", "x-systemd.device-timeout=5", "comment=ci",
                           "user", "exec", "suid", "dev", "noatime"].joined(separator: ",")
            let mounted = m.command(["mount", "-t", "fuse.appsandboxfs", m.backing, m.mountpoint, "-o", options])
            #expect(mounted.status == 0, "mount: \(mounted.stderr)")
            try #require(m.isMounted)

            // The mount table: type fuse.appsandboxfs, the backing directory as source.
            let line = readFileText("/proc/self/mountinfo").split(separator: "\n").first { $0.contains(" \(m.mountpoint) ") }
            let entry = try #require(line.map(String.init))
            #expect(entry.contains(" - fuse.appsandboxfs \(m.backing) "), "\(entry)")
            #expect(entry.contains("noatime"), "noatime passes through to the kernel: \(entry)")
            #expect(entry.contains("nosuid") && entry.contains("nodev"), "suid and dev are never honoured: \(entry)")

            // The options reached the driver.
            let pid = try #require(m.driverPID())
            let status = try #require(m.statusEntry())
            let driverOptions = try #require(status["options"] as? [String: Any])
            #expect(driverOptions["keepTmp"] as? Bool == true)
            #expect(driverOptions["cacheTimeout"] as? Double == 0)
            #expect(driverOptions["denialLog"] as? String == m.denialLog)
            #expect(driverOptions["mountOptions"] as? [String] == ["noatime"])
            #expect(status["appName"] as? String == "TestApp")

            // The rules hold, and denials reach the log named in the options.
            #expect(open(m.mountpoint + "/Documents/Inbox/new", O_CREAT | O_WRONLY, 0o644) == -1 && errno == EPERM)
            #expect(readFileText(m.denialLog).contains("deny(1) file-write-create \(m.mountpoint)/Documents/Inbox/new"))
            try writeFile(m.mountpoint + "/tmp/kept", "keep_tmp")

            let unmounted = runProcess(["umount", m.mountpoint], timeout: 30)
            #expect(unmounted.status == 0, "umount: \(unmounted.stderr)")
            #expect(!m.isMounted)
            #expect(processGone(pid, within: 15), "the driver ended after umount")
            #expect(readFileText(m.backing + "/tmp/kept") == "keep_tmp", "keep_tmp reached the driver (T4)")
        }
    }

    @Test("An fstab line (a path with a space, ro) mounts with mount --fstab FILE MNT, and umount unmounts",
          .enabled(if: helperInstalled, "run mount-scripts/setup.sh to install /sbin/mount.fuse.appsandboxfs"))
    func fstabLine() throws {
        try withEcoMount(backingName: "My Container", mountName: "my mnt") { m in
            try writeFile(m.backing + "/Documents/note.txt", "from the backing directory")
            let fstab = m.root + "/fstab"
            // fstab writes a space as \040.
            let escape = { (path: String) in path.replacingOccurrences(of: " ", with: "\\040") }
            try writeFile(fstab, """
                # a test fstab: /etc/fstab is never touched
                \(escape(m.backing)) \(escape(m.mountpoint)) fuse.appsandboxfs ro,app_name=TestApp,denial_log=\(m.denialLog),noauto,nofail,x-systemd.automount 0 0

                """)
            // --fake runs the helper with -f: it checks its options and mounts nothing.
            let fake = m.command(["mount", "--fake", "--fstab", fstab, m.mountpoint])
            #expect(fake.status == 0, "\(fake.stderr)")
            #expect(!m.isMounted)

            let mounted = m.command(["mount", "--fstab", fstab, m.mountpoint])
            #expect(mounted.status == 0, "mount --fstab: \(mounted.stderr)")
            try #require(m.isMounted)
            let pid = try #require(m.driverPID())
            #expect(readFileText(m.mountpoint + "/Documents/note.txt") == "from the backing directory")
            // ro from the fstab line: the whole container is read-only.
            #expect(open(m.mountpoint + "/Documents/new", O_CREAT | O_WRONLY, 0o644) == -1 && errno == EROFS)
            let findmnt = runProcess(["findmnt", "-n", "-o", "FSTYPE,SOURCE,OPTIONS", m.mountpoint])
            #expect(findmnt.stdout.hasPrefix("fuse.appsandboxfs \(m.backing) ro,"), "\(findmnt.stdout)")

            let unmounted = runProcess(["umount", m.mountpoint], timeout: 30)
            #expect(unmounted.status == 0, "umount: \(unmounted.stderr)")
            #expect(!m.isMounted)
            #expect(processGone(pid, within: 15))

            // The same line mounts again by its source too.
            let again = m.command(["mount", "-T", fstab, m.backing])
            #expect(again.status == 0, "mount -T FSTAB BACKING: \(again.stderr)")
            #expect(m.isMounted)
            _ = m.driverPID()
            #expect(runProcess(["umount", m.mountpoint], timeout: 30).status == 0)
        }
    }

    @Test("Failures: mount(8) exits 32 when the mount fails, 1 for a bad option, and nothing is mounted",
          .enabled(if: helperInstalled, "run mount-scripts/setup.sh to install /sbin/mount.fuse.appsandboxfs"))
    func failures() throws {
        try withEcoMount { m in
            let missing = m.command(["mount", "-t", "fuse.appsandboxfs", m.root + "/nonexistent", m.mountpoint, "-o", "app_name=TestApp"])
            #expect(missing.status == 32)
            #expect(missing.stderr.contains("Error: backing directory \(m.root)/nonexistent: No such file or directory"), "\(missing.stderr)")

            let badValue = m.command(["mount", "-t", "fuse.appsandboxfs", m.backing, m.mountpoint, "-o", "app_name=TestApp,threads=many"])
            #expect(badValue.status == 1, "\(badValue.stderr)")

            let noValue = m.command(["mount", "-t", "fuse.appsandboxfs", m.backing, m.mountpoint, "-o", "app_name"])
            #expect(noValue.status == 1)
            #expect(noValue.stderr.contains("app_name needs a value"), "\(noValue.stderr)")

            let unknown = m.command(["mount", "-t", "fuse.appsandboxfs", m.backing, m.mountpoint, "-o", "app_name=TestApp,no_such_option"])
            #expect(unknown.status == 32)
            #expect(unknown.stderr.contains("no_such_option"), "\(unknown.stderr)")

            #expect(!m.isMounted)
        }
    }

    @Test("The helper hands -o to appsandboxfs unchanged, which maps each name to its flag (run as mount(8) runs it, with -v -f)")
    func optionMapping() throws {
        let helper = repositoryRoot + "/mount-scripts/mount.fuse.appsandboxfs"
        let options = "rw,app_name=A,bundle=/x/A.app,denial_log=/d.log,log=/l.log,cache_timeout=2.5,threads=4,"
            + "keep_tmp,create,recover,debug,writeback,nokeep_cache,ro,allow_other,max_read=65536,"
            + "defaults,noauto,user,_netdev,nofail,x-gvfs-show,comment=x,suid,dev,exec"
        let result = runProcess(["env", "APPSANDBOXFS_BIN=\(Binaries.appsandboxfs)", helper, "/b", "/m", "-f", "-v", "-o",
                                 options, "-t", "fuse.appsandboxfs"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr == "mount.fuse.appsandboxfs: \(Binaries.appsandboxfs) mount /b /m -o \(options) --fake\n")
        let mapped = "mount /b /m --app-name A --bundle /x/A.app --denial-log /d.log --log /l.log --cache-timeout 2.5 "
            + "--threads 4 --keep-tmp --create --recover --debug --writeback --no-keep-cache -o ro,allow_other,max_read=65536\n"
        #expect(result.stdout == mapped)
        // The same names on appsandboxfs's own command line, parsed by the same code.
        let direct = runProcess([Binaries.appsandboxfs, "mount", "/b", "/m", "-o", options, "--fake"])
        #expect(direct.status == 0, "\(direct.stderr)")
        #expect(direct.stdout == mapped)
        // A bad value: a command-line error (64; the helper's 1), also with -f.
        let bad = runProcess(["env", "APPSANDBOXFS_BIN=\(Binaries.appsandboxfs)", helper, "/b", "/m", "-f", "-o", "threads=many"])
        #expect(bad.status == 1, "\(bad.stderr)")
        #expect(bad.stderr.contains("threads=many"), "\(bad.stderr)")
        #expect(runProcess([Binaries.appsandboxfs, "mount", "/b", "/m", "-o", "cache_timeout=soon", "--fake"]).status == 64)
        #expect(runProcess([helper, "/b"]).status == 1)
        #expect(runProcess(["env", "APPSANDBOXFS_BIN=/nonexistent", helper, "/b", "/m"]).stderr.contains("not an executable"))
    }

    @Test("appsandboxfs mount -o app_name=NAME mounts (the helper's names on the command line too)")
    func appNameOnCommandLine() throws {
        try withEcoMount { m in
            let mounted = runProcess([Binaries.appsandboxfs, "mount", m.backing, m.mountpoint, "-o", "app_name=TestApp,keep_tmp,ro"])
            #expect(mounted.status == 0, "\(mounted.stderr)")
            #expect(m.isMounted)
            #expect(access(m.mountpoint + "/TestApp.app", F_OK) == 0)
            #expect(mkdir(m.mountpoint + "/Documents/x", 0o755) != 0 && errno == EROFS, "-o ro did not reach the kernel")
            #expect(runProcess([Binaries.appsandboxfs, "unmount", m.mountpoint]).status == 0)
        }
    }
}
