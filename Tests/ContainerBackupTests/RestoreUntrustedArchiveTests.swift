// K3 restore treats an archive as untrusted input (issue 11, items 2 and 3):
// an archive made elsewhere and restored by root must not install a set-ID
// root shell, a file with capabilities, a device node or files owned by
// someone else, and whoever can write the target's parent must not be able
// to redirect the restore's changes by swapping a folder for a link.
// These run as root (they make device nodes and foreign owners).

import ContainerBackup
import Glibc
import SandboxPolicy
import SystemPackage
import Testing

@Suite("K3 restore: an archive is untrusted input")
struct RestoreUntrustedArchiveTests {
    /// A folder holding what a hostile archive carries, made into a pax
    /// archive by GNU tar with every attribute; returns the archive's path.
    static func hostileArchive(_ c: ScratchContainer) throws -> String {
        try c.mkdirs("Documents/setgid-folder")
        let copy = run(["cp", "/bin/sh", c.path("Documents/rootsh")])
        #expect(copy.status == 0)
        #expect(chown(c.path("Documents/rootsh"), 0, 0) == 0 && chmod(c.path("Documents/rootsh"), 0o4755) == 0)
        try c.write("Documents/capfile", "#!/bin/sh\n")
        #expect(chmod(c.path("Documents/capfile"), 0o755) == 0)
        let setcap = run(["setcap", "cap_setuid+ep", c.path("Documents/capfile")])
        #expect(setcap.status == 0, "setcap")
        #expect(run(["mknod", "-m", "666", c.path("Documents/null"), "c", "1", "3"]).status == 0)
        try c.fifo("Documents/pipe")
        try c.write("Documents/foreign.txt", "someone else's\n")
        #expect(chown(c.path("Documents/foreign.txt"), 12345, 12345) == 0)
        try c.write("Documents/trusted.txt", "t\n")
        try c.setBackingAttribute("Documents/trusted.txt", "trusted.overlay.opaque", Array("y".utf8))
        #expect(chmod(c.path("Documents/setgid-folder"), 0o2775) == 0)
        try c.write("Library/Preferences/app.plist", "<plist/>\n")
        try c.setBackingAttribute("Library/Preferences/app.plist", "user.color", Array("red".utf8))
        let archive = c.root + ".tar"
        let tar = run(["tar", "--create", "--format=pax", "--xattrs", "--xattrs-include=*", "--numeric-owner",
                       "--file=" + archive, "--directory=" + c.root, "Documents", "Library"])
        #expect(tar.status == 0, "tar")
        return archive
    }

    static func restore(_ archive: String, into target: String, mode: ContainerRestore.Mode = .create,
                        privileges: ArchivePrivileges? = nil,
                        beforePlacing: (String) -> Void = { _ in }) throws -> ContainerRestore.Outcome {
        let input = open(archive, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw TestFailure("open \(archive)") }
        defer { close(input) }
        let opening = try TarArchive.open(FileDescriptor(rawValue: input))
        return try ContainerRestore.restore(
            FileDescriptor(rawValue: input), opening: opening, expected: nil, into: target, layout: ContainerLayout(appName: "Demo"), mode: mode,
            privileges: privileges,
            layOut: { _, staging, _ in
                for folder in ["Demo.app"] + ContainerLayout.requiredFolders {
                    guard mkdir(staging + "/" + folder, 0o755) == 0 else { throw TestFailure("mkdir \(folder)") }
                }
            },
            beforePlacing: beforePlacing)
    }

    /// Every entry below `root` (find -printf: type, mode, owner, path) and
    /// every extended attribute, for comparing a folder before and after.
    static func snapshot(_ root: String) -> String {
        let find = run(["find", root, "-printf", "%y %m %U:%G %P\n"]).stdout
        let attributes = run(["getfattr", "-R", "-P", "-d", "-m", "-", "--absolute-names", root]).stdout
        return find + attributes
    }

    @Test("K3 a hostile archive restored by root leaves no set-ID bit, capability, device node, FIFO, trusted attribute or foreign owner, and says what it left out")
    func hostileArchiveIsDefused() throws {
        let c = try ScratchContainer()
        let archive = try Self.hostileArchive(c)
        defer { unlink(archive) }
        let target = c.root + "-restored"
        defer { _ = run(["rm", "-rf", "--", target]) }

        let outcome = try Self.restore(archive, into: target)
        #expect(outcome.leftovers.isEmpty, "\(outcome.leftovers)")

        // Nothing dangerous landed.
        let setID = run(["find", target, "-perm", "/6000"]).stdout
        #expect(setID == "", "set-ID entries:\n\(setID)")
        let special = run(["find", target, "-type", "b", "-o", "-type", "c", "-o", "-type", "p", "-o", "-type", "s"]).stdout
        #expect(special == "", "special files:\n\(special)")
        let capabilities = run(["getcap", "-r", target]).stdout
        #expect(capabilities == "", "capabilities:\n\(capabilities)")
        let privileged = run(["getfattr", "-R", "-P", "-d", "-m", "^(security|trusted|system)\\.", "--absolute-names", target]).stdout
        #expect(privileged == "", "privileged attributes:\n\(privileged)")
        let foreign = run(["find", target, "!", "-uid", "\(geteuid())", "-o", "!", "-gid", "\(getegid())"]).stdout
        #expect(foreign == "", "foreign owners:\n\(foreign)")
        // The data are there (the shell copy too, as a plain 0755 file).
        #expect(readText(target + "/Documents/foreign.txt") == "someone else's\n")
        var status = stat()
        #expect(lstat(target + "/Documents/rootsh", &status) == 0 && status.st_mode & 0o7777 == 0o755)
        #expect(TestXattr.get(target + "/Library/Preferences/app.plist", "user.color") == Array("red".utf8))

        // And it says so, by kind.
        let dropped = outcome.dropped.paths
        #expect(dropped[.setID]?.contains("Documents/rootsh") == true, "\(outcome.dropped.lines)")
        #expect(dropped[.setID]?.contains("Documents/setgid-folder") == true)
        #expect(dropped[.capabilities] == ["Documents/capfile"])
        #expect(dropped[.trustedAttributes] == ["Documents/trusted.txt"])
        #expect(dropped[.deviceNodes] == ["Documents/null"])
        #expect(dropped[.fifos] == ["Documents/pipe"])
        #expect(dropped[.foreignOwners] == ["Documents/foreign.txt"])
        #expect(outcome.dropped.lines.contains("1 device nodes: Documents/null"), "\(outcome.dropped.lines)")
    }

    @Test("K3 replacing a container: the restored files get the container's owner, not the archive's")
    func replaceGivesTheContainersOwner() throws {
        let c = try ScratchContainer()
        let archive = try Self.hostileArchive(c)
        defer { unlink(archive) }
        let target = try ScratchContainer()
        #expect(chown(target.root, 4242, 4343) == 0)
        let outcome = try Self.restore(archive, into: target.root, mode: .replace(keepBundle: true))
        #expect(outcome.leftovers.isEmpty, "\(outcome.leftovers)")
        let foreign = run(["find", target.root + "/Documents", target.root + "/Library/Preferences",
                           "!", "-uid", "4242", "-o", "!", "-gid", "4343"]).stdout
        #expect(foreign == "", "not the container's owner:\n\(foreign)")
        #expect(outcome.dropped.paths[.foreignOwners]?.contains("Documents/rootsh") == true)
    }

    @Test("K3 --preserve-privileges restores the archive as it is (only when asked)")
    func preserveWhenAsked() throws {
        let c = try ScratchContainer()
        let archive = try Self.hostileArchive(c)
        defer { unlink(archive) }
        let target = c.root + "-preserved"
        defer { _ = run(["rm", "-rf", "--", target]) }
        let outcome = try Self.restore(archive, into: target, privileges: .preserve)
        #expect(outcome.dropped.isEmpty)
        var status = stat()
        #expect(lstat(target + "/Documents/rootsh", &status) == 0 && status.st_mode & 0o7777 == 0o4755)
        #expect(lstat(target + "/Documents/null", &status) == 0 && status.st_mode & S_IFMT == S_IFCHR)
        #expect(lstat(target + "/Documents/foreign.txt", &status) == 0 && status.st_uid == 12345)
    }

    @Test("K3 swapping the staging folder for a link while restoring redirects nothing: the link's target is untouched")
    func stagingSwappedForALink() throws {
        let c = try ScratchContainer()
        try c.write("Documents/a.txt", "a\n")
        let archive = c.root + ".tar"
        defer { unlink(archive) }
        #expect(run(["tar", "--create", "--format=pax", "--file=" + archive, "--directory=" + c.root, "Documents"]).status == 0)

        let parent = try ScratchContainer()  // a folder someone else can write
        let victim = try ScratchContainer()
        try victim.write("Documents/secret", "victim's\n")
        #expect(chmod(victim.path("Documents/secret"), 0o600) == 0)
        #expect(chmod(victim.root, 0o700) == 0)
        let before = Self.snapshot(victim.root)
        let target = parent.root + "/restored"
        var swapped = false
        let outcome = try Self.restore(archive, into: target, beforePlacing: { staging in
            // What an attacker in the parent does: move the staging folder
            // away and put a link to the victim in its place.
            let folder = String(staging.dropLast("/container".count))
            swapped = rename(folder, parent.root + "/moved") == 0 && symlink(victim.root, folder) == 0
        })
        #expect(swapped)
        #expect(Self.snapshot(victim.root) == before, "the restore changed the victim")
        var status = stat()
        #expect(lstat(target, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR, "the container is not a folder")
        #expect(readText(target + "/Documents/a.txt") == "a\n")
        #expect(!outcome.leftovers.isEmpty, "the moved staging folder is reported")
    }

    @Test("K3 swapping the container being replaced for a link while restoring: the restore stops and the link's target is untouched")
    func targetSwappedForALink() throws {
        let c = try ScratchContainer()
        try c.write("Documents/a.txt", "a\n")
        let archive = c.root + ".tar"
        defer { unlink(archive) }
        #expect(run(["tar", "--create", "--format=pax", "--file=" + archive, "--directory=" + c.root, "Documents"]).status == 0)

        let parent = try ScratchContainer()
        let target = parent.root + "/C"
        let original = try ScratchContainer()
        #expect(run(["cp", "-a", original.root, target]).status == 0)
        try writeText(target + "/Documents/old.txt", "old\n")
        let victim = try ScratchContainer()
        try victim.write("Documents/secret", "victim's\n")
        let before = Self.snapshot(victim.root)
        let oldBefore = Self.snapshot(target)
        #expect(throws: ContainerRestore.Failure.self) {
            try Self.restore(archive, into: target, mode: .replace(keepBundle: true), beforePlacing: { _ in
                _ = rename(target, parent.root + "/C.real")
                _ = symlink(victim.root, target)
            })
        }
        #expect(Self.snapshot(victim.root) == before, "the restore changed the victim")
        #expect(Self.snapshot(parent.root + "/C.real").replacingOccurrences(of: "/C.real", with: "/C") == oldBefore,
                "the real container changed")
        let leftovers = run(["find", parent.root, "-maxdepth", "1", "-name", ".C.restore-*"]).stdout
        #expect(leftovers == "")
    }
}

private func readText(_ path: String) -> String? {
    let r = run(["cat", "--", path])
    return r.status == 0 ? r.stdout : nil
}

private func writeText(_ path: String, _ text: String) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { throw TestFailure("open \(path): \(errno)") }
    defer { close(fd) }
    _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
