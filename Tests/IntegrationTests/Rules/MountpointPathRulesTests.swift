// Issue 25, suspected from reading and reproduced: E1 judged an absolute
// link target against the mountpoint's text. Whoever could rename a folder
// above the mountpoint, or re-point a link in the path it was mounted
// through, led such a target anywhere: `Documents/l -> MNT/Documents/f`,
// made while MNT was the mount, read a file outside once MNT's folder was
// renamed away and replaced.

import Glibc
import MountInfo
import Testing

@Suite("E1 E2: an absolute link target is judged by where the mountpoint's path leads, not by its text (issue 25)")
struct MountpointPathRulesTests {
    /// A container mounted in the background at `mountpoint` (through
    /// whatever links it holds); unmounted at the end wherever it went.
    func withBackgroundMount(_ folder: String, at mountpoint: String, _ body: () throws -> Void) throws {
        let backing = folder + "/backing"
        let made = runProcess([Binaries.appsandboxfs, "init", backing, "--app-name", "PathApp"])
        try #require(made.status == 0, "\(made)")
        let mounted = runProcess([Binaries.appsandboxfs, "mount", backing, mountpoint, "--app-name", "PathApp",
                                  "--log", folder + "/driver.log"], timeout: 60)
        try #require(mounted.status == 0, "\(mounted)\n\(readFileText(folder + "/driver.log"))")
        defer {
            for path in MountTable.mountpoints(ofBacking: backing) {
                if runProcess(["fusermount3", "-u", path], timeout: 30).status != 0 {
                    _ = runProcess(["fusermount3", "-u", "-z", path], timeout: 30)
                }
            }
            _ = waitUntil(timeout: 15) { MountTable.mountpoints(ofBacking: backing).isEmpty }
        }
        try body()
    }

    @Test("E1 E2: a folder above the mountpoint renamed and replaced by a link elsewhere: the link made before reads EPERM, no new one through the old path is made, and the file outside is never read")
    func folderAboveRenamed() throws {
        let folder = try makeTemporaryDirectory(prefix: "asfs-mntpath")
        defer { removeTree(folder) }
        try makeDirectory(folder + "/a")
        try makeDirectory(folder + "/a/mnt")
        for path in ["/evil", "/evil/mnt", "/evil/mnt/Documents"] { try makeDirectory(folder + path) }
        try writeFile(folder + "/evil/mnt/Documents/f", "outside\n")
        try withBackgroundMount(folder, at: folder + "/a/mnt") {
            try writeFile(folder + "/a/mnt/Documents/f", "inside\n")
            #expect(symlink(folder + "/a/mnt/Documents/f", folder + "/a/mnt/Documents/l") == 0, "E1: an absolute target inside works")
            #expect(readFileText(folder + "/a/mnt/Documents/l") == "inside\n")

            #expect(rename(folder + "/a", folder + "/b") == 0)
            #expect(symlink(folder + "/evil", folder + "/a") == 0)
            let moved = folder + "/b/mnt/Documents"
            #expect(readFileText(moved + "/l") != "outside\n", "the link led outside")
            #expect(RulesSys.readlink(moved + "/l").rulesOutcome == "EPERM", "E2")
            #expect(RulesSys.symlink(folder + "/a/mnt/Documents/f", moved + "/new") == EPERM, "E1")
        }
    }

    @Test("E1: a container mounted through a link in its path: absolute targets through the link are refused (re-pointing it would lead them anywhere), through the real path they work")
    func mountedThroughALink() throws {
        let folder = try makeTemporaryDirectory(prefix: "asfs-mntpath")
        defer { removeTree(folder) }
        try makeDirectory(folder + "/real")
        try makeDirectory(folder + "/real/mnt")
        #expect(symlink(folder + "/real", folder + "/link") == 0)
        try withBackgroundMount(folder, at: folder + "/link/mnt") {
            let documents = folder + "/real/mnt/Documents"
            try writeFile(documents + "/f", "inside\n")
            #expect(RulesSys.symlink(folder + "/link/mnt/Documents/f", documents + "/through-link") == EPERM)
            #expect(RulesSys.symlink(folder + "/real/mnt/Documents/f", documents + "/through-real") == 0)
            #expect(readFileText(documents + "/through-real") == "inside\n")
        }
    }
}
