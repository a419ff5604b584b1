// Rules U1-U4: `appsandboxfs update CONTAINER --bundle DIR` installs a new
// build as an App Store update does: the bundle becomes a copy of DIR (what
// U1 lets a bundle hold), Documents, Library and tmp stay exactly as they were; it refuses a
// mounted container and another app's bundle; killed at any step it leaves
// the old bundle or the new one, whole, and a rerun finishes.

import Foundation
import Glibc
import Testing

@Suite("Device: App Store updates (U1-U4)")
struct UpdateTests {
    /// A container (backing directory) with data in every zone, and two
    /// builds of its app.
    struct Setup {
        let root: String
        var backing: String { root + "/container" }
        var oldBuild: String { root + "/build-1" }
        var newBuild: String { root + "/build-2" }
        var bundle: String { backing + "/Demo.app" }

        init() throws {
            root = try makeTemporaryDirectory(prefix: "update")
            let init_ = runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "Demo"])
            guard init_.status == 0 else { throw SupportError("init: \(init_.stderr)") }
            try Self.makeBuild(oldBuild, version: 1)
            try Self.makeBuild(newBuild, version: 2)
            removeTree(bundle)
            let installed = runProcess([Binaries.appsandboxfs, "update", backing, "--bundle", oldBuild, "--app-name", "Demo"])
            #expect(installed.status == 0, "\(installed)")
            // Data in every zone, with modes, times, links and attributes.
            try writeFile(backing + "/Documents/notes.txt", "notes\n", mode: 0o600)
            try writeFile(backing + "/Library/Application Support/db.sqlite", RulesSys.pattern(50_000))
            try writeFile(backing + "/Library/Caches/cache.bin", RulesSys.pattern(7000), mode: 0o640)
            try writeFile(backing + "/Library/Preferences/com.example.Demo.plist", "<plist/>\n")
            try writeFile(backing + "/tmp/scratch", "scratch\n")
            #expect(RulesSys.link(backing + "/Documents/notes.txt", backing + "/tmp/notes-link") == 0)
            #expect(RulesSys.symlink("../Documents/notes.txt", backing + "/Library/notes-symlink") == 0)
            #expect(RulesSys.setxattr(backing + "/Documents/notes.txt", "user.appsandboxfs.NSFileProtectionKey",
                                      Array("NSFileProtectionComplete".utf8)) == 0)
            #expect(RulesSys.setxattr(backing + "/Library/Caches/cache.bin", "user.appsandboxfs.com.apple.MobileBackup",
                                      [1]) == 0)
            #expect(RulesSys.utimens(backing + "/Documents/notes.txt", atime: 1_600_000_000, mtime: 1_500_000_000) == 0)
        }

        /// A build folder: Info.plist, an executable, nested folders, a
        /// symbolic link, hard links, attributes, odd modes, a FIFO, old times.
        static func makeBuild(_ path: String, version: Int, identifier: String = "com.example.Demo", files: Int = 12) throws {
            try makeDirectory(path)
            let plist = try PropertyListSerialization.data(
                fromPropertyList: ["CFBundleIdentifier": identifier, "CFBundleVersion": "\(version)"],
                format: version % 2 == 0 ? .binary : .xml, options: 0)
            try writeFile(path + "/Info.plist", Array(plist))
            try writeFile(path + "/Demo", "#!/bin/sh\necho version \(version)\n", mode: 0o755)
            try makeDirectory(path + "/Resources", mode: 0o750)
            try makeDirectory(path + "/Resources/Base.lproj")
            for i in 0..<files {
                try writeFile(path + "/Resources/asset-\(i).bin", RulesSys.pattern(1000 * (i + 1), seed: UInt8(version)))
            }
            try writeFile(path + "/Resources/Base.lproj/Main.strings", "\"hello\" = \"v\(version)\";\n", mode: 0o444)
            #expect(RulesSys.link(path + "/Resources/asset-0.bin", path + "/Resources/asset-alias.bin") == 0)
            #expect(RulesSys.symlink("Resources/asset-1.bin", path + "/current-asset") == 0)
            #expect(RulesSys.mkfifo(path + "/Resources/pipe") == 0)
            #expect(RulesSys.setxattr(path + "/Demo", "user.build", Array("v\(version)".utf8)) == 0)
            #expect(RulesSys.chmod(path + "/Demo", 0o4755) == 0)
            #expect(RulesSys.utimens(path + "/Resources/asset-2.bin", atime: 1_000_000_000, mtime: 1_100_000_000 + version) == 0)
            #expect(RulesSys.utimens(path + "/Resources", atime: 1_000_000_000, mtime: 1_200_000_000) == 0)
        }

        func data() -> RulesTreeSnapshot { RulesTreeSnapshot(of: backing, excluding: []) }

        /// Everything but the bundle and the root folder's own times.
        func dataSnapshot() -> [String: RulesTreeSnapshot.Entry] {
            RulesTreeSnapshot(of: backing).entries.filter { $0.key != "." && !$0.key.hasPrefix("Demo.app") && !$0.key.hasPrefix(".appsandboxfs") }
        }

        func update(_ build: String, _ extra: [String] = [], killAfter: Int? = nil) -> (status: Int32, stdout: String, stderr: String) {
            var argv = [Binaries.appsandboxfs, "update", backing, "--bundle", build] + extra
            if let killAfter { argv = ["env", "APPSANDBOXFS_TEST_UPDATE_KILL_AFTER=\(killAfter)"] + argv }
            return runProcess(argv)
        }
    }

    /// How `bundle` differs from the copy of `build` U1 asks for (the
    /// build's FIFO and the executable's set-user-ID bit left out; ctimes
    /// aside: a copy cannot keep them). BundleCopyTests has the hostile cases.
    static func copyDifferences(_ build: String, _ bundle: String) -> [String] {
        // U1: the copy belongs to the container's owner, the owner of its
        // backing directory (root's here, or the user's in the pass as
        // another user).
        var container = stat()
        lstat(parentDirectory(bundle), &container)
        let want = BundleCopyTests.expectedCopy(of: build, owner: (container.st_uid, container.st_gid))
        let have = RulesTreeSnapshot(of: bundle).entries.mapValues { entry in
            var entry = entry
            entry.ctime = ""
            return entry
        }
        return Set(want.keys).union(have.keys).sorted().compactMap { path in
            want[path] == have[path] ? nil : "\(path): \(want[path].map { "\($0)" } ?? "missing") vs \(have[path].map { "\($0)" } ?? "missing")"
        }
    }

    @Test("U1 the bundle becomes a copy of DIR (its FIFO and set-user-ID bit left out, and said so); Documents, Library and tmp stay exactly as they were")
    func updateReplacesTheBundleOnly() throws {
        let s = try Setup()
        defer { removeTree(s.root) }
        let before = s.dataSnapshot()
        let result = s.update(s.newBuild)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Demo.app"), "\(result.stdout)")
        #expect(result.stderr == "appsandboxfs: left out of the bundle (U1): 1 set-user-ID or set-group-ID bits: Demo\n"
                + "appsandboxfs: left out of the bundle (U1): 1 FIFOs: Resources/pipe\n", "\(result.stderr)")
        #expect(Self.copyDifferences(s.newBuild, s.bundle) == [])
        #expect(s.dataSnapshot() == before, "the data changed")
        let entries = RulesSys.list(s.backing).rulesValue ?? []
        #expect(entries.sorted() == ["Demo.app", "Documents", "Library", "tmp"], "\(entries)")
        // Hard links stay linked inside the copy.
        let a = RulesSys.lstat(s.bundle + "/Resources/asset-0.bin").rulesValue
        let b = RulesSys.lstat(s.bundle + "/Resources/asset-alias.bin").rulesValue
        #expect(a != nil && a?.st_ino == b?.st_ino)
    }

    @Test("U1 --app-name renames the bundle; the data stays")
    func updateRenames() throws {
        let s = try Setup()
        defer { removeTree(s.root) }
        let before = s.dataSnapshot()
        let result = s.update(s.newBuild, ["--app-name", "Demo2"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(RulesSys.lstat(s.bundle).rulesValue == nil)
        #expect(Self.copyDifferences(s.newBuild, s.backing + "/Demo2.app") == [])
        #expect(s.dataSnapshot().filter { !$0.key.hasPrefix("Demo2.app") } == before)
    }

    @Test("U2 a bundle of another app (XML or binary Info.plist) is refused with one line, nothing changed")
    func otherAppRefused() throws {
        let s = try Setup()
        defer { removeTree(s.root) }
        for (index, format) in [PropertyListSerialization.PropertyListFormat.xml, .binary].enumerated() {
            let other = s.root + "/other-\(index)"
            try Setup.makeBuild(other, version: 3, identifier: "com.example.Other")
            let plist = try PropertyListSerialization.data(fromPropertyList: ["CFBundleIdentifier": "com.example.Other"],
                                                           format: format, options: 0)
            try writeFile(other + "/Info.plist", Array(plist))
            let before = RulesTreeSnapshot(of: s.backing)
            let result = s.update(other)
            #expect(result.status != 0)
            #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("com.example.Other"), "\(result.stderr)")
            #expect(RulesTreeSnapshot(of: s.backing).changes(since: before) == [])
        }
    }

    @Test("U2 a mounted container is refused with one line, nothing changed")
    func mountedRefused() throws {
        let build = try makeTemporaryDirectory(prefix: "update-build")
        defer { removeTree(build) }
        try writeFile(build + "/Demo", "new\n")
        try withMountedContainer { m in
            let before = RulesTreeSnapshot(of: m.backing)
            for container in [m.backing, m.mountpoint] {
                let result = runProcess([Binaries.appsandboxfs, "update", container, "--bundle", build])
                #expect(result.status != 0)
                #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("mounted"), "\(result.stderr)")
            }
            #expect(RulesTreeSnapshot(of: m.backing).changes(since: before) == [])
        }
    }

    @Test("U2 a container a driver serves in another mount namespace (not in this mount table) is refused with one line, nothing changed")
    func mountedElsewhereRefused() throws {
        let setup = try Setup()
        defer { removeTree(setup.root) }
        let mountpoint = setup.root + "/mnt"
        try makeDirectory(mountpoint)
        // The driver mounts in a namespace of its own and lives on there
        // (in the background) after the shell that made it has gone.
        let mounted = runProcess(inOwnMountNamespace([Binaries.appsandboxfs, "mount", setup.backing, mountpoint, "--app-name", "Demo"]),
                                 timeout: 60)
        try #require(mounted.status == 0, "\(mounted)")
        let driver = findDriver(backing: setup.backing)
        defer {
            if let driver {
                kill(driver, SIGTERM)
                let deadline = monotonicNow() + 20
                while kill(driver, 0) == 0 && monotonicNow() < deadline { usleep(20_000) }
                if kill(driver, 0) == 0 { kill(driver, SIGKILL) }
            }
        }
        try #require(driver != nil, "no driver found for \(setup.backing)")
        #expect(!readFileText("/proc/self/mountinfo").contains(" \(mountpoint) "), "the mount is visible here")
        let before = setup.dataSnapshot()
        let oldBundle = RulesTreeSnapshot(of: setup.bundle)
        let result = setup.update(setup.newBuild)
        #expect(result.status != 0, "update ran under a live driver: \(result)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.contains("in use"), "\(result.stderr)")
        #expect(setup.dataSnapshot() == before)
        #expect(RulesTreeSnapshot(of: setup.bundle).changes(since: oldBundle) == [])
    }

    /// The pid of the driver whose command line names `backing`.
    private func findDriver(backing: String) -> pid_t? {
        guard let proc = opendir("/proc") else { return nil }
        defer { closedir(proc) }
        while let entry = readdir(proc) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            guard let pid = pid_t(name), pid != getpid() else { continue }
            let argv = (readFileBytes("/proc/\(pid)/cmdline") ?? []).split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if argv.count > 2, argv[0].hasSuffix("appsandboxfs"), argv[1] == "mount", argv.contains(backing) { return pid }
        }
        return nil
    }

    @Test("U3 update killed after each of its steps leaves the old bundle or the new one, whole, and a rerun finishes")
    func killedAtEveryStep() throws {
        let s = try Setup()
        defer { removeTree(s.root) }
        let data = s.dataSnapshot()
        var step = 1
        var sawOld = false, sawNew = false
        while step < 200 {
            let killed = s.update(s.newBuild, killAfter: step)
            if killed.status == 0 { break }  // fewer steps than `step`: done
            #expect(killed.status == 128 + SIGKILL, "step \(step): \(killed)")
            let isOld = Self.copyDifferences(s.oldBuild, s.bundle).isEmpty
            let isNew = Self.copyDifferences(s.newBuild, s.bundle).isEmpty
            #expect(isOld || isNew, "step \(step): the bundle is neither build: \(Self.copyDifferences(s.newBuild, s.bundle).prefix(5))")
            sawOld = sawOld || isOld
            sawNew = sawNew || isNew
            #expect(s.dataSnapshot() == data, "step \(step): the data changed")
            let rerun = s.update(s.newBuild)
            #expect(rerun.status == 0, "step \(step): rerun: \(rerun.stderr)")
            #expect(Self.copyDifferences(s.newBuild, s.bundle).isEmpty, "step \(step): the rerun did not finish")
            let entries = RulesSys.list(s.backing).rulesValue ?? []
            #expect(entries.sorted() == ["Demo.app", "Documents", "Library", "tmp"], "step \(step): \(entries)")
            // Back to the old build for the next step.
            #expect(s.update(s.oldBuild).status == 0)
            step += 1
        }
        #expect(step > 20, "only \(step - 1) kill points")
        #expect(sawOld && sawNew, "kills never fell before and after the swap")
        #expect(s.dataSnapshot() == data)
    }

    @Test("U3 a leftover staging name that is a link to a folder elsewhere is removed as a link; its target is untouched")
    func leftoverLinkNotFollowed() throws {
        let s = try Setup()
        defer { removeTree(s.root) }
        let victim = s.root + "/victim"
        try makeDirectory(victim)
        try writeFile(victim + "/precious", "keep me\n")
        #expect(RulesSys.symlink(victim, s.backing + "/.appsandboxfs-update-1") == 0)
        let before = RulesTreeSnapshot(of: victim)
        let result = s.update(s.newBuild)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(RulesTreeSnapshot(of: victim).changes(since: before) == [])
        #expect(RulesSys.lstat(s.backing + "/.appsandboxfs-update-1").rulesValue == nil)
        #expect(Self.copyDifferences(s.newBuild, s.bundle) == [])
    }

    @Test("U4 a container mounted with --bundle DIR shows the build live (with passthrough, and with the driver serving reads itself); update on it says so",
          arguments: [[], ["--no-passthrough"]])
    func liveBundleMount(extra: [String]) throws {
        let build = try makeTemporaryDirectory(prefix: "update-live")
        defer { removeTree(build) }
        try writeFile(build + "/Demo", "v1\n")
        try withMountedContainer(extraArguments: ["--bundle", build] + extra) { m in
            #expect(readFileText(m.bundle + "/Demo") == "v1\n")
            try writeFile(build + "/Demo", "v2\n")
            #expect(readFileText(m.bundle + "/Demo") == "v2\n", "the build is not shown live")
            let result = runProcess([Binaries.appsandboxfs, "update", m.backing, "--bundle", build])
            #expect(result.stderr.contains("live") && result.stderr.contains(build), "\(result)")
            #expect(result.status == 0, "\(result)")
            #expect(readFileText(m.bundle + "/Demo") == "v2\n")
        }
    }
}
