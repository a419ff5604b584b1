// Part three, M2: backup-report, backup and restore of a device by iOS
// backup domain (AppDomain-<bundle id>, AppDomainGroup-<group id>), through
// real mounts and the real command line. A restore treats the archive as
// untrusted input, as a container's restore does (K3, docs/security.md).

import Foundation
import Glibc
import Testing

@Suite("Device: backups by domain (M2)", .serialized)
struct DeviceBackupTests {
    static let metadata = ".com.apple.mobile_container_manager.metadata.plist"

    /// A (group.com.example.shared) and B (the shared group and group.com.example.b), with data.
    static func populate(_ d: MountedDevice) throws -> (a: [String], b: [String]) {
        let a = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a"), "--group", "group.com.example.shared"])
        let b = d.run("install", [try d.makeApp("B.app", bundleID: "com.example.b"),
                                  "--group", "group.com.example.shared", "--group", "group.com.example.b"])
        try #require(a.status == 0 && b.status == 0, "\(a) \(b)")
        let (aLines, bLines) = (d.lines(a.stdout), d.lines(b.stdout))
        try writeFile(aLines[1] + "/Documents/a.txt", "12345")
        try writeFile(aLines[1] + "/Library/Preferences/p.plist", "prefs")
        try writeFile(aLines[1] + "/Library/Caches/c.bin", "not in a backup")
        try writeFile(aLines[1] + "/tmp/t", "not in a backup")
        try writeFile(bLines[1] + "/Documents/b.txt", "b")
        #expect(RulesSys.mkdir(aLines[2] + "/Database") == 0)
        try writeFile(aLines[2] + "/Database/db.sqlite", "0123456789")
        try writeFile(aLines[2] + "/Library/Caches/gc", "not in a backup (G1)")
        try writeFile(bLines[3] + "/Library/Preferences/g.plist", "gb")
        return (aLines, bLines)
    }

    static func domains(_ json: String) -> [String: [String: Any]] {
        let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any]
        var byName: [String: [String: Any]] = [:]
        for domain in object?["domains"] as? [[String: Any]] ?? [] {
            if let name = domain["name"] as? String { byName[name] = domain }
        }
        return byName
    }

    @Test("M2 backup-report of a device groups by domain: AppDomain-<bundle id>, AppDomainGroup-<group id>; no metadata plist, no Caches, no tmp")
    func reportByDomain() throws {
        try withMountedDevice { d in
            _ = try Self.populate(d)
            let report = d.run("backup-report", ["--json"])
            try #require(report.status == 0, "\(report)")
            let domains = Self.domains(report.stdout)
            #expect(Set(domains.keys) == ["AppDomain-com.example.a", "AppDomain-com.example.b",
                                          "AppDomainGroup-group.com.example.shared", "AppDomainGroup-group.com.example.b"],
                    "\(report.stdout)")
            // A: Documents/a.txt (5) and Library/Preferences/p.plist (5); not Caches, tmp or the metadata.
            #expect(domains["AppDomain-com.example.a"]?["files"] as? Int == 2)
            #expect(domains["AppDomain-com.example.a"]?["bytes"] as? Int == 10)
            #expect(domains["AppDomain-com.example.b"]?["files"] as? Int == 1)
            // The shared group: Database/db.sqlite, not its Library/Caches (G1).
            #expect(domains["AppDomainGroup-group.com.example.shared"]?["files"] as? Int == 1)
            #expect(domains["AppDomainGroup-group.com.example.shared"]?["bytes"] as? Int == 10)
            #expect(domains["AppDomainGroup-group.com.example.b"]?["bytes"] as? Int == 2)
            let table = d.run("backup-report")
            #expect(table.status == 0 && table.stdout.contains("AppDomainGroup-group.com.example.shared"), "\(table)")
        }
    }

    @Test("M2 backup stores each container under its domain; restore onto the mounted device puts each domain back, replacing what was there, the metadata kept")
    func backupAndRestore() throws {
        try withMountedDevice { d in
            let (a, _) = try Self.populate(d)
            let archive = d.root + "/phone.tar"
            let backup = d.run("backup", [archive])
            try #require(backup.status == 0, "\(backup)")
            let names = runProcess(["tar", "-tf", archive]).stdout.split(separator: "\n").map(String.init)
            #expect(names.contains("AppDomain-com.example.a/Documents/a.txt"), "\(names)")
            #expect(names.contains("AppDomainGroup-group.com.example.shared/Database/db.sqlite"), "\(names)")
            #expect(!names.contains { $0.contains(Self.metadata) || $0.contains("Caches/") || $0.contains("/tmp/") || $0.hasPrefix("Containers") },
                    "\(names)")
            let listed = d.run("listapps", ["--json"]).stdout
            // Change the device, then restore.
            try writeFile(a[1] + "/Documents/a.txt", "changed")
            try writeFile(a[1] + "/Documents/new.txt", "new")
            #expect(RulesSys.unlink(a[2] + "/Database/db.sqlite") == 0)
            let restored = runProcess([Binaries.appsandboxfs, "restore", archive, d.mountpoint])
            #expect(restored.status == 0, "\(restored)")
            #expect(restored.stdout.contains("AppDomain-com.example.a -> \(a[1])"), "\(restored.stdout)")
            // The kernel may keep a container's old folder for up to a second.
            #expect(waitFor { readFileText(a[1] + "/Documents/a.txt") == "12345" }, "A's Documents restored")
            #expect(readFileText(a[1] + "/Library/Preferences/p.plist") == "prefs")
            #expect(access(a[1] + "/Documents/new.txt", F_OK) != 0, "what was there is replaced")
            #expect(waitFor { readFileText(a[2] + "/Database/db.sqlite") == "0123456789" })
            #expect(try RulesSys.list(a[1] + "/Library/Caches").get() == [])
            #expect(readPlist(a[1] + "/" + Self.metadata)?["MCMMetadataIdentifier"] as? String == "com.example.a")
            #expect(d.run("listapps", ["--json"]).stdout == listed, "the same apps, UUIDs and groups")
            // Documents/Inbox is back too (part of a data container), and the zones hold.
            #expect(RulesSys.open(a[1] + "/Documents/Inbox/x", O_CREAT | O_WRONLY) == EPERM)
        }
    }

    @Test("M2 restore onto another device with the same ids (other UUIDs); an id not installed refuses, changing nothing")
    func restoreElsewhere() throws {
        try withMountedDevice { d in
            _ = try Self.populate(d)
            let archive = d.root + "/phone.tar"
            try #require(d.run("backup", [archive]).status == 0)
            try withMountedDevice { other in
                let a = other.run("install", [try other.makeApp("A.app", bundleID: "com.example.a"), "--group", "group.com.example.shared"])
                try #require(a.status == 0)
                try writeFile(other.lines(a.stdout)[1] + "/Documents/keep.txt", "kept")
                let refused = runProcess([Binaries.appsandboxfs, "restore", archive, other.mountpoint])
                #expect(refused.status == 1 && refused.stderr.contains("com.example.b"), "\(refused)")
                #expect(readFileText(other.lines(a.stdout)[1] + "/Documents/keep.txt") == "kept", "nothing restored")
                let b = other.run("install", [try other.makeApp("B.app", bundleID: "com.example.b"),
                                              "--group", "group.com.example.shared", "--group", "group.com.example.b"])
                try #require(b.status == 0)
                let restored = runProcess([Binaries.appsandboxfs, "restore", archive, other.mountpoint])
                #expect(restored.status == 0, "\(restored)")
                let data = other.lines(a.stdout)[1], group = other.lines(a.stdout)[2]
                #expect(waitFor { readFileText(data + "/Documents/a.txt") == "12345" })
                #expect(waitFor { readFileText(group + "/Database/db.sqlite") == "0123456789" })
                #expect(waitFor { readFileText(other.lines(b.stdout)[1] + "/Documents/b.txt") == "b" })
            }
        }
    }

    @Test("M2 K3 a device archive is untrusted: set-ID bits dropped, a forged metadata plist and names outside the domain ignored; container archives and device archives do not mix")
    func untrustedDeviceArchive() throws {
        try withMountedDevice { d in
            let (a, _) = try Self.populate(d)
            let archive = d.root + "/forged.tar"
            let script = """
            import io, tarfile, sys
            t = tarfile.open(sys.argv[1], 'w', format=tarfile.PAX_FORMAT,
                             pax_headers={'APPSANDBOXFS.device.domains': 'AppDomain-com.example.a'})
            def add(name, data, mode=0o644):
                info = tarfile.TarInfo(name); info.size = len(data); info.mode = mode
                t.addfile(info, io.BytesIO(data))
            add('AppDomain-com.example.a/Documents/suid', b'#!/bin/sh\\n', 0o4755)
            add('AppDomain-com.example.a/\(Self.metadata)', b'<plist><dict><key>MCMMetadataIdentifier</key><string>com.evil</string></dict></plist>')
            add('AppDomain-com.example.a/Library/Caches/c', b'cache')
            add('AppDomain-com.example.b/Documents/b.txt', b'forged')
            add('Containers/Data/Application/x', b'outside')
            t.close()
            """
            try writeFile(d.root + "/forge.py", script)
            let forged = runProcess(["python3", d.root + "/forge.py", archive])
            try #require(forged.status == 0, "\(forged)")
            let restored = runProcess([Binaries.appsandboxfs, "restore", archive, d.mountpoint])
            #expect(restored.status == 0, "\(restored)")
            #expect(waitFor { access(a[1] + "/Documents/suid", F_OK) == 0 })
            #expect(((try? RulesSys.stat(a[1] + "/Documents/suid").get())?.st_mode ?? 0) & 0o6000 == 0, "set-ID dropped")
            #expect(readPlist(a[1] + "/" + Self.metadata)?["MCMMetadataIdentifier"] as? String == "com.example.a")
            #expect(try RulesSys.list(a[1] + "/Library/Caches").get() == [])
            #expect(access(d.backing + "/Containers/Data/Application/x", F_OK) != 0)
            let b = d.run("get_app_container", ["com.example.b", "data"]).stdout.trimmingCharacters(in: .newlines)
            #expect(readFileText(b + "/Documents/b.txt") == "b", "a domain the header does not list is not restored")
            // A device's archive is not restored into a container, nor a container's onto a device.
            let container = runProcess([Binaries.appsandboxfs, "restore", archive, d.root + "/new-container"])
            #expect(container.status == 1 && container.stderr.contains("device"), "\(container)")
        }
    }
}

/// Polls `condition` for up to `seconds`.
func waitFor(seconds: Double = 3, _ condition: () -> Bool) -> Bool {
    let deadline = monotonicNow() + seconds
    while monotonicNow() < deadline {
        if condition() { return true }
        usleep(20_000)
    }
    return condition()
}
