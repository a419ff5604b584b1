// Part three, rules A1-A6, G1 and M1: a device of many apps, through real
// mounts and the real command line. Launch, suspension and backups are later
// slices: `launched` and `suspended` are always false here.

import Foundation
import Glibc
import Testing

@Suite("Device: apps on a device (A1-A6, G1, M1)", .serialized)
struct DeviceAppsTests {
    static let metadata = ".com.apple.mobile_container_manager.metadata.plist"

    @Test("A1 device init makes an empty device; its mount shows Containers/Bundle/Application, Data/Application, Shared/AppGroup")
    func emptyDevice() throws {
        try withMountedDevice { d in
            for folder in ["Containers/Bundle/Application", "Containers/Data/Application", "Containers/Shared/AppGroup"] {
                #expect(try RulesSys.list(d.path(folder)).get() == [], "\(folder)")
            }
            #expect(try RulesSys.list(d.path("Containers")).get().sorted() == ["Bundle", "Data", "Shared"])
            // A folder that holds other things is not made a device.
            let other = d.root + "/other"
            try makeDirectory(other)
            try writeFile(other + "/file", "x")
            let refused = runProcess([Binaries.appsandboxfs, "device", "init", other])
            #expect(refused.status == 1 && refused.stderr.contains("not empty"), "\(refused)")
        }
    }

    @Test("A3 the device's folders, UUID folders and metadata plists refuse every change through the mount (EPERM); the .app is EROFS")
    func systemEntriesRefuse() throws {
        try withMountedDevice { d in
            let app = try d.makeApp("Sample.app", bundleID: "com.example.sample")
            let installed = d.run("install", [app, "--group", "group.com.example"])
            try #require(installed.status == 0, "\(installed)")
            let data = d.lines(installed.stdout)[1]
            let group = d.lines(installed.stdout)[2]
            let bundle = d.run("get_app_container", ["com.example.sample"]).stdout.trimmingCharacters(in: .newlines)
            let bundleContainer = (bundle as NSString).deletingLastPathComponent
            let folders = ["", "Containers", "Containers/Bundle", "Containers/Bundle/Application", "Containers/Data",
                           "Containers/Data/Application", "Containers/Shared", "Containers/Shared/AppGroup"].map(d.path)
            let uuidFolders = [bundleContainer, data, group]
            let plists = uuidFolders.map { $0 + "/" + Self.metadata }
            for entry in folders + uuidFolders + plists {
                #expect(RulesSys.chmod(entry, 0o700) == EPERM, "chmod \(entry)")
                #expect(RulesSys.chown(entry, 1, 1) == EPERM, "chown \(entry)")
                #expect(RulesSys.touch(entry) == EPERM, "touch \(entry)")
                #expect(RulesSys.setxattr(entry, "user.test", [1]) == EPERM, "setxattr \(entry)")
                // Also for a name the entry does not carry.
                #expect(RulesSys.removexattr(entry, "user.absent") == EPERM, "removexattr \(entry)")
            }
            for entry in (folders.dropFirst() + uuidFolders) {
                #expect(RulesSys.rmdir(entry) == EPERM, "rmdir \(entry)")
                #expect(RulesSys.rename(entry, entry + "-moved") == EPERM, "rename \(entry)")
            }
            for entry in plists {
                #expect(RulesSys.unlink(entry) == EPERM, "unlink \(entry)")
                #expect(RulesSys.rename(entry, entry + "-moved") == EPERM, "rename \(entry)")
                #expect(RulesSys.open(entry, O_WRONLY) == EPERM, "write \(entry)")
            }
            // Nothing can be added above the containers, nor to a bundle
            // container's or data container's UUID folder.
            for folder in folders + [bundleContainer, data] {
                #expect(RulesSys.mkdir(folder + "/new") == EPERM, "mkdir in \(folder)")
                #expect(RulesSys.open(folder + "/new-file", O_CREAT | O_WRONLY) == EPERM, "create in \(folder)")
            }
            #expect(RulesSys.mkdir(d.path("Containers/Data/Application/11111111-2222-3333-4444-555555555555")) == EPERM)
            // The .app follows the B rules.
            #expect(RulesSys.open(bundle + "/resource.txt", O_WRONLY) == EROFS)
            #expect(RulesSys.open(bundle + "/new", O_CREAT | O_WRONLY) == EROFS)
            #expect(RulesSys.rename(bundle, bundle + "2") == EROFS)
            #expect(!d.denialLines().filter { $0.contains("deny(1)") && $0.contains(d.path("Containers/Bundle/Application")) }.isEmpty,
                    "denial lines name the path through the mount: \(d.denialLines().prefix(3))")
        }
    }

    @Test("A2 install prints the bundle id, the data container and each group; the layout, UUIDs and metadata are iOS's")
    func installLayout() throws {
        try withMountedDevice { d in
            // The groups come from the entitlements plist, the id from a binary Info.plist.
            let app = try d.makeApp("Notes.app", bundleID: "com.example.notes", binary: true,
                                    entitlementGroups: ["group.com.example.shared", "group.com.example.other"])
            let installed = d.run("install", [app])
            try #require(installed.status == 0, "\(installed)")
            let lines = d.lines(installed.stdout)
            try #require(lines.count == 4, "\(installed.stdout)")
            #expect(lines[0] == "com.example.notes")
            #expect(lines[1].hasPrefix(d.path("Containers/Data/Application/")))
            #expect(lines[2].hasPrefix(d.path("Containers/Shared/AppGroup/")) && lines[3].hasPrefix(d.path("Containers/Shared/AppGroup/")))
            // The bundle container: its .app (a copy of APPDIR) and its metadata, nothing else.
            let bundleUUIDs = try RulesSys.list(d.path("Containers/Bundle/Application")).get()
            try #require(bundleUUIDs.count == 1)
            #expect(isUpperCaseUUID(bundleUUIDs[0]), "\(bundleUUIDs[0])")
            let bundleContainer = d.path("Containers/Bundle/Application/" + bundleUUIDs[0])
            #expect(try RulesSys.list(bundleContainer).get().sorted() == [Self.metadata, "Notes.app"])
            #expect(readFileText(bundleContainer + "/Notes.app/resource.txt") == "version 1\n")
            #expect(try RulesSys.stat(bundleContainer + "/Notes.app/Notes").get().st_mode & 0o111 != 0)
            #expect(readPlist(bundleContainer + "/" + Self.metadata)?["MCMMetadataIdentifier"] as? String == "com.example.notes")
            // The data container: part one's container without its bundle.
            let data = lines[1]
            #expect(isUpperCaseUUID((data as NSString).lastPathComponent))
            #expect(try RulesSys.list(data).get().sorted() == [Self.metadata, "Documents", "Library", "tmp"])
            for folder in ["Documents/Inbox", "Library/Caches", "Library/Preferences", "Library/Application Support"] {
                #expect((try? RulesSys.stat(data + "/" + folder).get()) != nil, "\(folder)")
            }
            #expect(readPlist(data + "/" + Self.metadata)?["MCMMetadataIdentifier"] as? String == "com.example.notes")
            // G1: each group holds Library, Caches, Preferences and its metadata, nothing else.
            for (line, id) in zip(lines[2...], ["group.com.example.shared", "group.com.example.other"]) {
                #expect(isUpperCaseUUID((line as NSString).lastPathComponent))
                #expect(try RulesSys.list(line).get().sorted() == [Self.metadata, "Library"])
                #expect(try RulesSys.list(line + "/Library").get().sorted() == ["Caches", "Preferences"])
                #expect(readPlist(line + "/" + Self.metadata)?["MCMMetadataIdentifier"] as? String == id)
            }
            // --bundle-id and --group win over the plists.
            let other = try d.makeApp("Widget", bundleID: "com.example.ignored", entitlementGroups: ["group.ignored.x"])
            let second = d.run("install", [other, "--bundle-id", "com.example.notes.widget", "--group", "group.com.example.shared"])
            #expect(second.status == 0, "\(second)")
            // The shared group is not made twice.
            #expect(d.lines(second.stdout) == ["com.example.notes.widget", d.lines(second.stdout).dropFirst().first ?? "", lines[2]])
            #expect(try RulesSys.list(d.path("Containers/Shared/AppGroup")).get().count == 2)
        }
    }

    @Test("A2 ids that are not reverse-DNS strings are refused in one line; an app without an id is refused; nothing is made")
    func installRefusals() throws {
        try withMountedDevice { d in
            let app = try d.makeApp("Bad", bundleID: nil)
            for arguments in [[app], [app, "--bundle-id", "com.exa mple"], [app, "--bundle-id", "nodots"],
                              [app, "--bundle-id", "com.example.ok", "--group", "group..x"],
                              [app, "--bundle-id", "com.example.ok", "--group", "group.é.x"]] {
                let refused = d.run("install", arguments)
                #expect(refused.status == 1 && d.lines(refused.stderr).count == 1, "\(arguments): \(refused)")
            }
            for folder in ["Containers/Bundle/Application", "Containers/Data/Application", "Containers/Shared/AppGroup"] {
                #expect(try RulesSys.list(d.path(folder)).get() == [], "\(folder)")
            }
        }
    }

    @Test("A2 reinstalling an id is an update: a new bundle container (new UUID, the new build), the data container kept with its files")
    func reinstallKeepsData() throws {
        try withMountedDevice { d in
            let first = try d.makeApp("Notes.app", bundleID: "com.example.notes", version: 1)
            let installed = d.run("install", [first])
            try #require(installed.status == 0, "\(installed)")
            let data = d.lines(installed.stdout)[1]
            let oldBundle = d.run("get_app_container", ["com.example.notes", "app"]).stdout
            try writeFile(data + "/Documents/kept.txt", "mine\n")
            let second = try d.makeApp("Notes.app", bundleID: "com.example.notes", version: 2)
            let updated = d.run("install", [second])
            #expect(updated.status == 0, "\(updated)")
            #expect(d.lines(updated.stdout)[1] == data, "the data container keeps its UUID")
            let newBundle = d.run("get_app_container", ["com.example.notes"]).stdout.trimmingCharacters(in: .newlines)
            #expect(newBundle != oldBundle.trimmingCharacters(in: .newlines))
            #expect(readFileText(data + "/Documents/kept.txt") == "mine\n")
            #expect(readFileText(newBundle + "/resource.txt") == "version 2\n")
            #expect(try RulesSys.list(d.path("Containers/Bundle/Application")).get().count == 1, "the old bundle container is gone")
            #expect(try RulesSys.list(d.path("Containers/Data/Application")).get().count == 1)
        }
    }

    @Test("A4 listapps --json and get_app_container app|data|groups|GID; unknown ids and unlisted groups exit 1")
    func listAndGet() throws {
        try withMountedDevice { d in
            let app = try d.makeApp("Notes.app", bundleID: "com.example.notes")
            let installed = d.run("install", [app, "--group", "group.com.example"])
            try #require(installed.status == 0, "\(installed)")
            let data = d.lines(installed.stdout)[1], group = d.lines(installed.stdout)[2]
            let listed = d.run("listapps", ["--json"])
            #expect(listed.status == 0)
            let array = try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]
            let entry = try #require(array?.first)
            #expect(array?.count == 1)
            #expect(entry["bundleID"] as? String == "com.example.notes")
            #expect(entry["name"] as? String == "Notes")
            let bundlePath = try #require(entry["bundlePath"] as? String)
            #expect(bundlePath.hasPrefix(d.path("Containers/Bundle/Application/")) && bundlePath.hasSuffix("/Notes.app"))
            #expect(entry["dataPath"] as? String == data)
            let groups = entry["groups"] as? [[String: Any]]
            #expect(groups?.count == 1 && groups?.first?["id"] as? String == "group.com.example" && groups?.first?["path"] as? String == group)
            #expect(entry["launched"] as? Bool == false && entry["suspended"] as? Bool == false)

            #expect(d.run("get_app_container", ["com.example.notes"]).stdout == bundlePath + "\n")
            #expect(d.run("get_app_container", ["com.example.notes", "app"]).stdout == bundlePath + "\n")
            #expect(d.run("get_app_container", ["com.example.notes", "data"]).stdout == data + "\n")
            #expect(d.run("get_app_container", ["com.example.notes", "groups"]).stdout == "group.com.example\t\(group)\n")
            #expect(d.run("get_app_container", ["com.example.notes", "group.com.example"]).stdout == group + "\n")
            for arguments in [["com.example.absent"], ["com.example.notes", "group.com.other"]] {
                let refused = d.run("get_app_container", arguments)
                #expect(refused.status == 1 && refused.stdout.isEmpty && d.lines(refused.stderr).count == 1, "\(arguments): \(refused)")
            }
        }
    }

    @Test("A5 uninstall removes the bundle and data containers and only the groups no other app lists; an unknown id exits 1")
    func uninstall() throws {
        try withMountedDevice { d in
            let notes = try d.makeApp("Notes.app", bundleID: "com.example.notes")
            let widget = try d.makeApp("Widget.app", bundleID: "com.example.notes.widget")
            let one = d.run("install", [notes, "--group", "group.com.example.shared", "--group", "group.com.example.own"])
            let two = d.run("install", [widget, "--group", "group.com.example.shared"])
            try #require(one.status == 0 && two.status == 0, "\(one) \(two)")
            let shared = d.lines(one.stdout)[2], own = d.lines(one.stdout)[3]
            try writeFile(shared + "/shared.db", "rows\n")
            let removed = d.run("uninstall", ["com.example.notes"])
            #expect(removed.status == 0, "\(removed)")
            #expect(try RulesSys.list(d.path("Containers/Bundle/Application")).get().count == 1)
            #expect(try RulesSys.list(d.path("Containers/Data/Application")).get().count == 1)
            #expect(readFileText(shared + "/shared.db") == "rows\n", "the widget still lists the shared group")
            #expect(!FileManager.default.fileExists(atPath: d.backing + "/Containers/Shared/AppGroup/" + (own as NSString).lastPathComponent))
            #expect(d.run("get_app_container", ["com.example.notes"]).status == 1)
            let again = d.run("uninstall", ["com.example.notes"])
            #expect(again.status == 1 && d.lines(again.stderr).count == 1, "\(again)")
            #expect(d.run("uninstall", ["com.example.notes.widget"]).status == 0)
            for folder in ["Containers/Bundle/Application", "Containers/Data/Application", "Containers/Shared/AppGroup"] {
                #expect(try RulesSys.list(d.backing + "/" + folder).get() == [], "\(folder)")
            }
        }
    }

    @Test("A6 part one inside each data container: Inbox refuses, Documents is read-write, tmp is emptied at unmount, the device's default class; links stay in their container")
    func dataContainerRules() throws {
        try withMountedDevice(initArguments: ["--protection", "NSFileProtectionComplete"]) { d in
            let a = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a")])
            let b = d.run("install", [try d.makeApp("B.app", bundleID: "com.example.b"), "--group", "group.com.example"])
            try #require(a.status == 0 && b.status == 0, "\(a) \(b)")
            let data = d.lines(a.stdout)[1], otherData = d.lines(b.stdout)[1]
            #expect(RulesSys.open(data + "/Documents/Inbox/x", O_CREAT | O_WRONLY) == EPERM, "I4")
            #expect(RulesSys.rmdir(data + "/Documents") == EPERM, "S2")
            #expect(RulesSys.mkdir(data + "/NewRootFolder") == EPERM, "S1")
            try writeFile(data + "/Documents/note.txt", "hello\n")
            #expect(readFileText(data + "/Documents/note.txt") == "hello\n")
            #expect(RulesSys.rename(data + "/Documents/note.txt", data + "/Library/note.txt") == 0)
            #expect(RulesSys.unlink(data + "/Library/note.txt") == 0)
            try writeFile(data + "/Documents/classed.txt", "x")
            #expect(RulesSys.getxattr(data + "/Documents/classed.txt", "NSFileProtectionKey").map { String(decoding: $0, as: UTF8.self) }
                    == .success("NSFileProtectionComplete"), "P4: the device's default class")
            // E1 on a device: within the container, fine; out of it, EPERM.
            #expect(RulesSys.symlink("../Documents/classed.txt", data + "/Library/in") == 0)
            #expect(RulesSys.symlink("../../" + (otherData as NSString).lastPathComponent + "/Documents", data + "/Documents/out") == EPERM)
            #expect(RulesSys.symlink(otherData + "/Documents", data + "/Documents/out-absolute") == EPERM)
            #expect(d.denialLines().contains { $0.contains(data + "/Documents/out") }, "the denial names the path through the mount")
            try writeFile(data + "/tmp/scratch", "x")
            try writeFile(otherData + "/tmp/scratch", "x")
            let backingTmp = d.backing + "/Containers/Data/Application/" + (data as NSString).lastPathComponent + "/tmp"
            let otherTmp = d.backing + "/Containers/Data/Application/" + (otherData as NSString).lastPathComponent + "/tmp"
            d.unmount()
            #expect(try RulesSys.list(backingTmp).get() == [], "T2 in each data container")
            #expect(try RulesSys.list(otherTmp).get() == [])
            #expect(readFileText(d.backing + "/Containers/Data/Application/" + (data as NSString).lastPathComponent + "/Documents/classed.txt") == "x")
        }
    }

    @Test("G1 a group container's root takes new entries; its Library, Caches and Preferences cannot be removed or renamed")
    func groupContainer() throws {
        try withMountedDevice { d in
            let installed = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a"), "--group", "group.com.example"])
            try #require(installed.status == 0, "\(installed)")
            let group = d.lines(installed.stdout)[2]
            #expect(RulesSys.mkdir(group + "/Database") == 0)
            try writeFile(group + "/Database/shared.sqlite", "rows")
            try writeFile(group + "/top.txt", "x")
            #expect(RulesSys.rename(group + "/top.txt", group + "/Database/top.txt") == 0)
            try writeFile(group + "/Library/Caches/c", "x")
            try writeFile(group + "/Library/Preferences/p.plist", "x")
            #expect(RulesSys.mkdir(group + "/Library/Application Support") == 0)
            for folder in ["Library", "Library/Caches", "Library/Preferences"] {
                #expect(RulesSys.rmdir(group + "/" + folder) == EPERM, "rmdir \(folder)")
                #expect(RulesSys.rename(group + "/" + folder, group + "/moved") == EPERM, "rename \(folder)")
            }
            #expect(RulesSys.unlink(group + "/Database/shared.sqlite") == 0)
            #expect(RulesSys.rmdir(group + "/Database") != EPERM)
        }
    }

    @Test("M1 --capacity is the device's: df on the mount shows it, and writes in any container count against it")
    func deviceCapacity() throws {
        try withMountedDevice(mountArguments: ["--capacity", "64M"]) { d in
            let a = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a"), "--group", "group.com.example"])
            try #require(a.status == 0, "\(a)")
            var before = statvfs()
            #expect(statvfs(d.mountpoint, &before) == 0)
            #expect(UInt64(before.f_blocks) * UInt64(before.f_frsize) == 64 << 20)
            try writeFile(d.lines(a.stdout)[2] + "/big", [UInt8](repeating: 1, count: 4 << 20))
            var after = statvfs()
            #expect(statvfs(d.mountpoint, &after) == 0)
            let used = (Int64(before.f_bavail) - Int64(after.f_bavail)) * Int64(after.f_frsize)
            #expect(used >= 4 << 20, "a write in a group container counts: \(used)")
        }
    }
}
