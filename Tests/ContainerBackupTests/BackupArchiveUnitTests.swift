import ContainerBackup
import Glibc
import SandboxPolicy
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

    @Test("K3 GNU tar accepts the global header: an archive of it alone lists as empty")
    func tarAcceptsHeader() throws {
        let c = try ScratchContainer()
        let bytes = PaxGlobalHeader.encode([(PaxGlobalHeader.appNameKeyword, "A, b")]) + [UInt8](repeating: 0, count: 1024)
        try c.write("Documents/empty.tar", bytes)
        let listing = run(["tar", "-tf", c.path("Documents/empty.tar")])
        #expect(listing.status == 0)
        #expect(listing.stdout == "")
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
                                            appName: "Demo", to: output)
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
        let opening = try TarArchive.open(input)
        #expect(opening.appName == "Demo")
        let outcome = try ContainerRestore.restore(
            input, opening: opening, expected: nil, into: restored, layout: c.layout, mode: .create,
            layOut: { _, staging in
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
