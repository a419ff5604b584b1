// Part three, A6 with E1 and E2 on a device: a data container's links may
// lead into its own container, its app's bundle container and its app's
// groups; a group container's only into itself. Through a real mount.

import Foundation
import Glibc
import Testing

@Suite("Device: links between containers (A6, E1, E2)", .serialized)
struct DeviceLinkTests {
    /// "Containers/<Kind>/<Application|AppGroup>/<UUID>" of a path through the mount.
    static func relative(_ path: String, in d: MountedDevice) -> String {
        String(path.dropFirst(d.mountpoint.count + 1))
    }

    @Test("A6 E1 a data container's links lead into its bundle and its groups; not into another app's containers or groups (EPERM, a denial line through the mount)")
    func dataContainerLinks() throws {
        try withMountedDevice { d in
            let a = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a"), "--group", "group.com.example.a"])
            let b = d.run("install", [try d.makeApp("B.app", bundleID: "com.example.b"), "--group", "group.com.example.b"])
            try #require(a.status == 0 && b.status == 0, "\(a) \(b)")
            let data = d.lines(a.stdout)[1], group = d.lines(a.stdout)[2]
            let otherData = d.lines(b.stdout)[1], otherGroup = d.lines(b.stdout)[2]
            let bundle = d.run("get_app_container", ["com.example.a"]).stdout.trimmingCharacters(in: .newlines)
            let otherBundle = d.run("get_app_container", ["com.example.b"]).stdout.trimmingCharacters(in: .newlines)
            // From Documents, four levels up is Containers.
            let up = "../../../../"
            // Its own bundle: absolute and relative; reading through the link works.
            #expect(RulesSys.symlink(bundle + "/resource.txt", data + "/Documents/bundle-abs") == 0)
            #expect(readFileText(data + "/Documents/bundle-abs") == "version 1\n")
            #expect(RulesSys.symlink(up + Self.relative(bundle, in: d).dropFirst("Containers/".count) + "/resource.txt",
                                     data + "/Documents/bundle-rel") == 0)
            #expect(readFileText(data + "/Documents/bundle-rel") == "version 1\n")
            // Its own group.
            try writeFile(group + "/Library/shared.txt", "shared\n")
            #expect(RulesSys.symlink(group + "/Library/shared.txt", data + "/Documents/group-abs") == 0)
            #expect(readFileText(data + "/Documents/group-abs") == "shared\n")
            #expect(RulesSys.symlink(up + Self.relative(group, in: d).dropFirst("Containers/".count), data + "/Library/group-rel") == 0)
            #expect((try? RulesSys.list(data + "/Library/group-rel/Library").get())?.contains("shared.txt") == true)
            // Another app's data container, bundle and group: EPERM.
            #expect(RulesSys.symlink(otherData + "/Documents", data + "/Documents/other-data") == EPERM)
            #expect(RulesSys.symlink(up + Self.relative(otherData, in: d).dropFirst("Containers/".count), data + "/Documents/other-data-rel") == EPERM)
            #expect(RulesSys.symlink(otherBundle + "/resource.txt", data + "/Documents/other-bundle") == EPERM)
            #expect(RulesSys.symlink(otherGroup + "/Library", data + "/Documents/other-group") == EPERM)
            // The device's own folders are no container.
            #expect(RulesSys.symlink(d.mountpoint + "/Containers", data + "/Documents/device-folder") == EPERM)
            #expect(d.denialLines().contains { $0.contains(data + "/Documents/other-group") }, "the denial names the path through the mount")
            #expect(d.denialLines().contains { $0.contains(data + "/Documents/other-data") })
        }
    }

    @Test("A6 E1 a group container's links stay in it: another group, an app's data or bundle container is EPERM")
    func groupContainerLinks() throws {
        try withMountedDevice { d in
            let a = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a"),
                                      "--group", "group.com.example.a", "--group", "group.com.example.both"])
            try #require(a.status == 0, "\(a)")
            let data = d.lines(a.stdout)[1], group = d.lines(a.stdout)[2], secondGroup = d.lines(a.stdout)[3]
            let bundle = d.run("get_app_container", ["com.example.a"]).stdout.trimmingCharacters(in: .newlines)
            #expect(RulesSys.mkdir(group + "/Database") == 0)
            #expect(RulesSys.symlink("../Library/Preferences", group + "/Database/prefs") == 0)
            #expect(RulesSys.symlink(group + "/Library", group + "/Database/library-abs") == 0)
            // Even a group of the same app, or the app's own containers, is out of reach.
            #expect(RulesSys.symlink(secondGroup + "/Library", group + "/Database/other-group") == EPERM)
            #expect(RulesSys.symlink("../" + (secondGroup as NSString).lastPathComponent, group + "/other-group-rel") == EPERM)
            #expect(RulesSys.symlink(data + "/Documents", group + "/Database/data") == EPERM)
            #expect(RulesSys.symlink(bundle, group + "/Database/bundle") == EPERM)
            #expect(d.denialLines().contains { $0.contains(group + "/Database/other-group") })
        }
    }

    @Test("A6 E2 links made in the backing directory: readlink through the mount answers within reach and EPERM out of it")
    func backingLinks() throws {
        try withMountedDevice { d in
            let a = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a"), "--group", "group.com.example.a"])
            let b = d.run("install", [try d.makeApp("B.app", bundleID: "com.example.b"), "--group", "group.com.example.b"])
            try #require(a.status == 0 && b.status == 0, "\(a) \(b)")
            let data = d.lines(a.stdout)[1], group = d.lines(a.stdout)[2], otherGroup = d.lines(b.stdout)[2]
            let backingData = d.backing + "/" + Self.relative(data, in: d)
            let backingGroup = d.backing + "/" + Self.relative(group, in: d)
            let toGroup = "../../../../Shared/AppGroup/" + (group as NSString).lastPathComponent + "/Library"
            let toOther = "../../../../Shared/AppGroup/" + (otherGroup as NSString).lastPathComponent + "/Library"
            #expect(Glibc.symlink(toGroup, backingData + "/Documents/in-reach") == 0)
            #expect(Glibc.symlink(toOther, backingData + "/Documents/out-of-reach") == 0)
            #expect(Glibc.symlink("../../" + (otherGroup as NSString).lastPathComponent, backingGroup + "/Library/other-group") == 0)
            #expect(try RulesSys.readlink(data + "/Documents/in-reach").get() == toGroup)
            #expect(RulesSys.readlink(data + "/Documents/out-of-reach") == .failure(RulesErrno(EPERM)))
            #expect(RulesSys.readlink(group + "/Library/other-group") == .failure(RulesErrno(EPERM)))
            #expect(d.denialLines().contains { $0.contains(data + "/Documents/out-of-reach") })
        }
    }

    @Test("A6 an app installed or updated while mounted: its links into its new bundle and groups work at once; an update that drops a group drops the reach")
    func installWhileMounted() throws {
        try withMountedDevice { d in
            let a = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a"), "--group", "group.com.example.a"])
            try #require(a.status == 0, "\(a)")
            let data = d.lines(a.stdout)[1], group = d.lines(a.stdout)[2]
            // The driver learns the device now.
            #expect(RulesSys.symlink(group + "/Library", data + "/Documents/g1") == 0)
            let c = d.run("install", [try d.makeApp("C.app", bundleID: "com.example.c"), "--group", "group.com.example.c"])
            try #require(c.status == 0, "\(c)")
            let cData = d.lines(c.stdout)[1], cGroup = d.lines(c.stdout)[2]
            #expect(RulesSys.symlink(cGroup + "/Library", cData + "/Documents/g") == 0)
            #expect(RulesSys.symlink(cGroup + "/Library", data + "/Documents/c-group") == EPERM)
            // An update of A that lists C's group and no longer its own.
            let updated = d.run("install", [try d.makeApp("A.app", bundleID: "com.example.a", version: 2), "--group", "group.com.example.c"])
            try #require(updated.status == 0, "\(updated)")
            #expect(RulesSys.symlink(cGroup + "/Library", data + "/Documents/c-group") == 0)
            #expect(RulesSys.readlink(data + "/Documents/g1") == .failure(RulesErrno(EPERM)), "its old group is out of reach")
            let newBundle = d.run("get_app_container", ["com.example.a"]).stdout.trimmingCharacters(in: .newlines)
            #expect(RulesSys.symlink(newBundle + "/resource.txt", data + "/Documents/b2") == 0)
            #expect(readFileText(data + "/Documents/b2") == "version 2\n")
        }
    }
}
