import ContainerBackup
import Glibc
import SandboxPolicy
import SystemPackage
import Testing

@Suite("Backup archives, on backing directories: K3")
struct BackupArchiveUnitTests {
    @Test("K3 the pax global header round-trips any app name, commas and long values included",
          arguments: ["Demo", "My App, Pro", "Ünïcødé = ✓", String(repeating: "x", count: 700), "a\\b"])
    func globalHeader(name: String) throws {
        let header = PaxGlobalHeader.encode([(PaxGlobalHeader.appNameKeyword, name), ("comment", "ok")])
        #expect(header.count % 512 == 0)
        #expect(PaxGlobalHeader.headerLength(firstBlock: Array(header.prefix(512))) == header.count)
        let records = PaxGlobalHeader.decode(header)
        #expect(records[PaxGlobalHeader.appNameKeyword] == name)
        #expect(records["comment"] == "ok")
    }

    @Test("K3 record lengths count their own digits, across a digit boundary")
    func recordLengths() {
        for length in 1...300 {
            let value = String(repeating: "v", count: length)
            let header = PaxGlobalHeader.encode([("k", value)])
            #expect(PaxGlobalHeader.decode(header)["k"] == value)
        }
    }

    /// An archive is untrusted input: its global header is parsed by this
    /// process, before tar sees anything. A negative or huge size and
    /// records whose length does not cover themselves used to trap (a range
    /// with its end before its start) or ask for gigabytes.
    @Test("K3 a hostile global header (negative or huge size, short record lengths) is ignored, never a crash")
    func hostileGlobalHeader() {
        let good = PaxGlobalHeader.encode([(PaxGlobalHeader.appNameKeyword, "Demo")])
        func withSize(_ field: String) -> [UInt8] {
            var bytes = good
            let octal = Array(field.utf8) + [UInt8](repeating: 0, count: 12 - field.utf8.count)
            bytes.replaceSubrange(124..<136, with: octal)
            return bytes
        }
        for field in ["-1", "-777", "77777777777", "+1", "9"] {
            let bytes = withSize(field)
            #expect(PaxGlobalHeader.headerLength(firstBlock: Array(bytes.prefix(512))) == nil, "size \(field)")
            #expect(PaxGlobalHeader.decode(bytes) == [:], "size \(field)")
        }
        for body in ["1 x=y\n", "2 x=y\n", "3 a=b\n", "-5 a=b\n", "0 a\n", "99999999999999999999 a=b\n"] {
            var bytes = [UInt8](good.prefix(512))
            let size = String(body.utf8.count, radix: 8)
            let octal = Array(size.utf8) + [UInt8](repeating: 0, count: 12 - size.utf8.count)
            bytes.replaceSubrange(124..<136, with: octal)
            bytes += Array(body.utf8) + [UInt8](repeating: 0, count: 512 - body.utf8.count)
            #expect(PaxGlobalHeader.decode(bytes)[PaxGlobalHeader.appNameKeyword] == nil, "record \(body.debugDescription)")
        }
    }

    @Test("K3 GNU tar accepts the global header: an archive of it alone lists as empty")
    func tarAcceptsHeader() throws {
        let c = try ScratchContainer()
        let bytes = PaxGlobalHeader.encode([(PaxGlobalHeader.appNameKeyword, "A, b")]) + [UInt8](repeating: 0, count: 1024)
        try c.write("Documents/empty.tar", bytes)
        let listing = run(["tar", "-tf", c.path("Documents/empty.tar")])
        #expect(listing.status == 0)
        #expect(listing.stdout == "")
    }

    @Test("K3 a folder swapped for a link to outside between the scan and tar's read: a root backup does not read through it (issue 11, adversarial pass)",
          .enabled(if: geteuid() == 0, "tar is confined only when root runs it"))
    func swappedFolderIsNotFollowed() throws {
        let c = try ScratchContainer()
        try c.mkdirs("Documents/Notes")
        try c.write("Documents/Notes/a.txt", "mine")
        try c.write("Documents/kept.txt", "kept")
        let scan = try c.scan()
        // Whoever can write the backing folder swaps Notes for a link to a
        // folder of root's that holds a file of the same name.
        let outside = c.root + "-outside"
        defer { _ = run(["rm", "-rf", "--", outside]) }
        #expect(mkdir(outside, 0o700) == 0)
        #expect(run(["sh", "-c", "printf 'SECRET OF ROOT' > \"$0\"", outside + "/a.txt"]).status == 0)
        #expect(rename(c.path("Documents/Notes"), c.root + "-notes") == 0)
        defer { _ = run(["rm", "-rf", "--", c.root + "-notes"]) }
        #expect(symlink(outside, c.path("Documents/Notes")) == 0)

        let archivePath = c.root + ".tar"
        defer { unlink(archivePath) }
        let output = open(archivePath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        #expect(output >= 0)
        let result = Result { try TarArchive.create(root: c.root, members: scan.members, memberSizes: scan.memberSizes,
                                                    appName: "Demo", to: FileDescriptor(rawValue: output)) }
        close(output)
        // tar cannot reach Documents/Notes/a.txt through the link: the
        // backup fails for it, and the outside file is in no archive.
        if case .success = result { Issue.record("the backup succeeded although a member was behind a swapped link") }
        var size = stat()
        #expect(stat(archivePath, &size) == 0 && size.st_size > 0, "nothing was written")
        #expect(run(["grep", "-c", "SECRET OF ROOT", archivePath]).status == 1, "the archive holds the file outside")
    }

    @Test("K3 an archive holds exactly the scanned members, raw names included, and restores into a container with empty Caches and tmp")
    func roundTrip() throws {
        let c = try ScratchContainer()
        try c.mkdirs("Documents/Notes")
        try c.write("Documents/Notes/a.txt", "a")
        try c.write("Documents/new\nline", "n")
        try c.write("Library/Caches/c", "c")
        try c.write("tmp/t", "t")
        try c.mkdirs("Library/Application Support/Downloads")
        try c.write("Library/Application Support/Downloads/big", "big")
        try c.flag("Library/Application Support/Downloads", .excludeItem)
        try c.setBackingAttribute("Documents/Notes/a.txt", "user.color", Array("red".utf8))
        let scan = try c.scan()

        let archivePath = c.root + ".tar"
        defer { unlink(archivePath) }
        let output = open(archivePath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        #expect(output >= 0)
        let changed = try TarArchive.create(root: c.root, members: scan.members, memberSizes: scan.memberSizes,
                                            appName: "Demo", to: FileDescriptor(rawValue: output))
        close(output)
        #expect(!changed)
        let listing = run(["tar", "--quoting-style=escape", "-tf", archivePath])
        #expect(listing.status == 0)
        #expect(listing.stdout.split(separator: "\n").count == scan.members.count)
        #expect(listing.stdout.contains("Documents/new\\nline"))
        #expect(!listing.stdout.contains("Downloads/big"))

        let target = try ScratchContainer()
        let restored = target.root + "-restored"
        defer { _ = run(["rm", "-rf", "--", restored]) }
        let input = open(archivePath, O_RDONLY | O_CLOEXEC)
        defer { close(input) }
        let opening = try TarArchive.open(FileDescriptor(rawValue: input))
        #expect(opening.appName == "Demo")
        let outcome = try ContainerRestore.restore(
            FileDescriptor(rawValue: input), opening: opening, expected: nil, into: restored, layout: c.layout, mode: .create,
            layOut: { _, staging, _ in
                for folder in ["Demo.app"] + ContainerLayout.requiredFolders {
                    guard mkdir(staging + "/" + folder, 0o755) == 0 else { throw TestFailure("mkdir \(folder)") }
                }
            })
        #expect(outcome.leftovers.isEmpty)
        #expect(outcome.dropped.isEmpty, "\(outcome.dropped.lines)")
        let again = try BackupScan.run(root: restored, layout: c.layout, listMembers: true)
        #expect(again.members == scan.members)
        #expect(TestXattr.get(restored + "/Documents/Notes/a.txt", "user.color") == Array("red".utf8))
        let caches = run(["find", restored + "/Library/Caches", restored + "/tmp", "-mindepth", "1"])
        #expect(caches.stdout == "")
    }
}
