// Part three, M3: the device survives what one container survives (L3).
// Writers in every data and group container write files and fsync them,
// journaling each outside the mount once fsync returned; the driver is
// killed (SIGKILL) in the middle. Every journaled file must be in the
// backing directory with its bytes, and a remount shows the same apps,
// UUIDs and groups, and every journaled file through the mount.

import Foundation
import Glibc
import Testing

@Suite("Device: kill -9 of the driver (M3)", .serialized)
struct DeviceCrashTests {
    /// python3 writer.py FOLDER JOURNAL: writes files of random bytes, each
    /// fsynced, then journals "<name>\t<sha256>"; stops at the first error.
    static let writerSource = #"""
import hashlib, os, sys
folder, journal_path = sys.argv[1], sys.argv[2]
journal = os.open(journal_path, os.O_WRONLY | os.O_APPEND)
n = 0
while True:
    n += 1
    name = 'f%05d.bin' % n
    data = os.urandom(1000 + (n * 37) % 9000)
    try:
        fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
    except OSError:
        break
    os.write(journal, ('%s\t%s\n' % (name, hashlib.sha256(data).hexdigest())).encode())
    os.fsync(journal)
"""#

    @Test("M3 kill -9 of a device's driver keeps every fsynced file in every data and group container; a remount shows the same apps, UUIDs and groups")
    func killDuringWrites() throws {
        let d = try MountedDevice(mountLater: true)
        var driver: pid_t?
        defer {
            if let pid = driver, waitForExit(pid, timeout: 0) == nil { kill(pid, SIGKILL); _ = waitForExit(pid, timeout: 30) }
            if isFuseMount(d.mountpoint) { _ = runProcess(["fusermount3", "-u", "-z", d.mountpoint], timeout: 15) }
            d.finish()
        }
        func mountForeground() throws -> pid_t {
            let pid = try spawn([Binaries.appsandboxfs, "mount", d.backing, d.mountpoint, "--foreground"],
                                stdin: "/dev/null", stdout: d.root + "/driver.out", stderr: d.root + "/driver.err")
            let deadline = monotonicNow() + 30
            while !isFuseMount(d.mountpoint) {
                if waitForExit(pid, timeout: 0) != nil || monotonicNow() > deadline {
                    throw SupportError("the device did not mount: \(readFileText(d.root + "/driver.err"))")
                }
                usleep(10_000)
            }
            return pid
        }
        driver = try mountForeground()
        // Three apps; two share a group.
        for (name, id, groups) in [("A.app", "com.example.a", ["group.com.example.shared"]),
                                   ("B.app", "com.example.b", ["group.com.example.shared", "group.com.example.b"]),
                                   ("C.app", "com.example.c", [String]())] {
            let installed = d.run("install", [try d.makeApp(name, bundleID: id)] + groups.flatMap { ["--group", $0] })
            try #require(installed.status == 0, "\(installed)")
        }
        let before = d.run("listapps", ["--json"])
        try #require(before.status == 0)
        let apps = try #require(try JSONSerialization.jsonObject(with: Data(before.stdout.utf8)) as? [[String: Any]])
        var folders: [String] = []
        for app in apps {
            folders.append(try #require(app["dataPath"] as? String) + "/Documents")
            for group in app["groups"] as? [[String: Any]] ?? [] {
                let path = try #require(group["path"] as? String) + "/Library/Application Support"
                if !folders.contains(path) { folders.append(path) }
            }
        }
        try #require(folders.count == 5, "\(folders)")
        for folder in folders where access(folder, F_OK) != 0 { #expect(mkdir(folder, 0o755) == 0, "\(folder)") }

        let script = d.root + "/writer.py"
        try writeFile(script, Self.writerSource)
        let journals = folders.indices.map { d.root + "/journal-\($0).txt" }
        var writers: [pid_t] = []
        defer { for pid in writers where waitForExit(pid, timeout: 0) == nil { kill(pid, SIGKILL); _ = waitForExit(pid, timeout: 30) } }
        for (folder, journal) in zip(folders, journals) {
            try writeFile(journal, "")
            writers.append(try spawn(["python3", script, folder, journal], stdin: "/dev/null",
                                     stdout: "/dev/null", stderr: journal + ".err"))
        }
        let deadline = monotonicNow() + 60
        while monotonicNow() < deadline, journals.contains(where: { d.lines(readFileText($0)).count < 20 }) { usleep(50_000) }
        kill(driver!, SIGKILL)
        #expect(waitForExit(driver!, timeout: 30) == .signaled(SIGKILL))
        driver = nil
        for pid in writers { _ = waitForExit(pid, timeout: 60) }

        // Every journaled file, in the backing directory and later through a new mount.
        func check(_ root: String) {
            for (folder, journal) in zip(folders, journals) {
                let entries = d.lines(readFileText(journal))
                #expect(entries.count >= 20, "\(folder): \(readFileText(journal + ".err"))")
                for entry in entries {
                    let fields = entry.split(separator: "\t").map(String.init)
                    let path = root + String(folder.dropFirst(d.mountpoint.count)) + "/" + fields[0]
                    let digest = runProcess(["sha256sum", path]).stdout.split(separator: " ").first.map(String.init)
                    #expect(digest == fields[1], "\(path) lost or changed after kill -9")
                }
            }
        }
        check(d.backing)
        let cleaned = runProcess([Binaries.appsandboxfs, "unmount", d.mountpoint], timeout: 30)
        #expect(cleaned.status == 0 && !isFuseMount(d.mountpoint), "unmount of the stale mount: \(cleaned)")
        driver = try mountForeground()
        let after = d.run("listapps", ["--json"])
        #expect(after.status == 0 && after.stdout == before.stdout, "the same apps, UUIDs and groups:\n\(before.stdout)\n\(after.stdout)")
        check(d.mountpoint)
        let unmounted = runProcess([Binaries.appsandboxfs, "unmount", d.mountpoint], timeout: 30)
        #expect(unmounted.status == 0, "\(unmounted)")
        #expect(waitForExit(driver!, timeout: 30) == .exited(0))
        driver = nil
    }
}
