// Part three, A6: the verbs that take a container take `--app ID` on a
// device and act on that app's data container; purge on a device asks that
// the app not be launched (not that nothing is mounted); lock, unlock and
// reboot act on the whole device. Through a real mount and the real
// command line.

import Foundation
import Glibc
import Testing

@Suite("Device: --app on the container verbs (A6)", .serialized)
struct DeviceAppOptionTests {
    /// A device with two apps, A (group.com.example.a) and B (group.com.example.b).
    static func twoApps(_ d: MountedDevice) throws -> (a: [String], b: [String]) {
        let a = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a"), "--group", "group.com.example.a"])
        let b = d.run("install", [try d.makeApp("B.app", bundleID: "com.example.b"), "--group", "group.com.example.b"])
        try #require(a.status == 0 && b.status == 0, "\(a) \(b)")
        return (d.lines(a.stdout), d.lines(b.stdout))
    }

    @Test("A6 deliver --app puts the file in that app's Documents/Inbox on the mounted device; an unknown id exits 1")
    func deliver() throws {
        try withMountedDevice { d in
            let (a, b) = try Self.twoApps(d)
            let file = d.root + "/invoice.pdf"
            try writeFile(file, "pdf\n")
            // `deliver FILES --to DEVICE --app ID`.
            let result = runProcess([Binaries.appsandboxfs, "deliver", file, "--to", d.mountpoint, "--app", "com.example.a"])
            #expect(result.status == 0, "\(result)")
            #expect(result.stdout == "\(file) -> \(a[1])/Documents/Inbox/invoice.pdf\n")
            #expect(readFileText(a[1] + "/Documents/Inbox/invoice.pdf") == "pdf\n")
            #expect(try RulesSys.list(b[1] + "/Documents/Inbox").get() == [])
            let unknown = runProcess([Binaries.appsandboxfs, "deliver", file, "--to", d.mountpoint, "--app", "com.example.none"])
            #expect(unknown.status == 1 && unknown.stderr.contains("no app com.example.none is installed"), "\(unknown)")
        }
    }

    @Test("A6 env --app and run --app: HOME and TMPDIR are the app's data container through the mount; run --app --confine is refused")
    func envAndRun() throws {
        try withMountedDevice { d in
            let (a, _) = try Self.twoApps(d)
            let env = d.run("env", ["--app", "com.example.a"])
            #expect(env.status == 0, "\(env)")
            #expect(env.stdout.contains("export HOME='\(a[1])'\n"), "\(env.stdout)")
            #expect(env.stdout.contains("export TMPDIR='\(a[1])/tmp/'\n"), "\(env.stdout)")
            let ran = d.run("run", ["--app", "com.example.a", "--", "sh", "-c", "echo \"$HOME\" > \"$TMPDIR/probe\""])
            #expect(ran.status == 0, "\(ran)")
            #expect(readFileText(a[1] + "/tmp/probe") == a[1] + "\n")
            let confined = d.run("run", ["--app", "com.example.a", "--confine", "--", "true"])
            #expect(confined.status != 0 && confined.stderr.contains("launch"), "\(confined)")
            // An id that is not installed exits 1.
            let noApp = d.run("env", ["--app", "com.example.none"])
            #expect(noApp.status == 1, "\(noApp)")
        }
    }

    @Test("A6 backup-report --app reports on the app's data container; purge --app empties its Caches and tmp while the device stays mounted (the app is not launched)")
    func backupReportAndPurge() throws {
        try withMountedDevice { d in
            let (a, b) = try Self.twoApps(d)
            try writeFile(a[1] + "/Documents/note.txt", "12345")
            try writeFile(a[1] + "/Library/Caches/cache.bin", "cache")
            try writeFile(b[1] + "/Library/Caches/cache.bin", "other")
            try writeFile(a[1] + "/tmp/scratch", "x")
            let report = d.run("backup-report", ["--app", "com.example.a", "--json"])
            try #require(report.status == 0, "\(report)")
            let json = try JSONSerialization.jsonObject(with: Data(report.stdout.utf8)) as? [String: Any]
            #expect(json?["container"] as? String == d.backing + "/Containers/Data/Application/" + (a[1] as NSString).lastPathComponent)
            #expect((json?["backup"] as? [String: Any])?["bytes"] as? Int == 5, "\(report.stdout)")
            let purged = d.run("purge", ["--app", "com.example.a"])
            #expect(purged.status == 0, "\(purged)")
            #expect(try RulesSys.list(a[1] + "/Library/Caches").get() == [])
            #expect(try RulesSys.list(a[1] + "/tmp").get() == [])
            #expect(readFileText(a[1] + "/Documents/note.txt") == "12345")
            #expect(readFileText(b[1] + "/Library/Caches/cache.bin") == "other", "another app's Caches are left alone")
            #expect(d.run("purge", ["--app", "com.example.none"]).status == 1)
        }
    }

    @Test("A6 P6 lock, unlock and reboot act on the whole device: class A files in every data and group container")
    func lockWholeDevice() throws {
        try withMountedDevice { d in
            let (a, b) = try Self.twoApps(d)
            let files = [a[1] + "/Documents/a.txt", b[1] + "/Documents/b.txt", a[2] + "/Library/ga.txt", b[2] + "/gb.txt"]
            for file in files {
                try writeFile(file, "secret")
                #expect(RulesSys.setxattr(file, "NSFileProtectionKey", Array("NSFileProtectionComplete".utf8)) == 0, "\(file)")
            }
            let locked = d.run("lock", ["--grace", "0"])
            #expect(locked.status == 0 && locked.stdout == "locked\n", "\(locked)")
            for file in files { #expect(RulesSys.open(file, O_RDONLY) == EPERM, "\(file) locked") }
            #expect(d.run("unlock").stdout == "unlocked\n")
            for file in files { #expect(RulesSys.open(file, O_RDONLY) == 0, "\(file) unlocked") }
            #expect(d.run("reboot").stdout == "before-first-unlock\n")
            for file in files { #expect(RulesSys.open(file, O_RDONLY) == EPERM, "\(file) before the first unlock") }
            #expect(d.run("unlock").stdout == "unlocked\n")
            for file in files { #expect(readFileText(file) == "secret") }
        }
    }
}
