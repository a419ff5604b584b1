import SandboxPolicy
import Testing

@Suite("E1 E2 symbolic link targets, judged lexically")
struct EscapeCheckTests {
    @Test("E1 a relative target is joined to the link's folder and must stay in the container", arguments: [
        ("a", ["Documents"], ["Documents", "a"] as [String]?),
        ("sub/a", ["Documents"], ["Documents", "sub", "a"]),
        ("../Library/a", ["Documents"], ["Library", "a"]),
        ("../x", ["Documents", "Inbox"], ["Documents", "x"]),
        ("../../tmp", ["Documents", "Inbox"], ["tmp"]),
        ("./a/./b", ["tmp"], ["tmp", "a", "b"]),
        ("a/../b", ["tmp"], ["tmp", "b"]),
        ("a//b/", ["tmp"], ["tmp", "a", "b"]),
        (".", ["tmp"], ["tmp"]),
        ("..", ["tmp"], []),
        ("Documents", [], ["Documents"]),
        ("..", [], nil),
        ("../..", ["Documents"], nil),
        ("../../Documents", ["Documents"], nil),
        ("../../../etc/passwd", ["Documents", "Inbox"], nil),
        ("a/../../..", ["Documents"], nil),
        ("", ["Documents"], nil),
    ])
    func relativeTargets(target: String, linkFolder: [String], expected: [String]?) {
        #expect(EscapeCheck.resolveInside(target: target, linkFolder: linkFolder, mountpoint: "/mnt/c") == expected)
    }

    @Test("E1 an absolute target is inside when it lies at or under the mountpoint",
          arguments: ["/mnt/c", "/mnt/c/", "/mnt//c", "/mnt/./c/"], [
        ("/mnt/c/Documents/a", ["Documents", "a"] as [String]?),
        ("/mnt/c", []),
        ("/mnt/c/", []),
        ("//mnt//c//Library//x", ["Library", "x"]),
        ("/mnt/c/./tmp/.", ["tmp"]),
        ("/mnt/c/../c/tmp", ["tmp"]),
        ("/../mnt/c/x", ["x"]),
        ("/mnt/c/Documents/../../c/Library", ["Library"]),
        ("/mnt/c/Documents/../../d", nil),
        ("/mnt/c/..", nil),
        ("/mnt/cc/x", nil),
        ("/mnt/x/c", nil),
        ("/mnt", nil),
        ("/", nil),
        ("/etc/passwd", nil),
    ])
    func absoluteTargets(mountpoint: String, example: (target: String, expected: [String]?)) {
        #expect(EscapeCheck.resolveInside(target: example.target, linkFolder: ["Documents"], mountpoint: mountpoint)
                == example.expected)
    }

    @Test("E1 with the mountpoint at / every absolute target is inside", arguments: [
        ("/etc/passwd", ["etc", "passwd"]),
        ("/", []),
        ("//", []),
        ("/..", []),
        ("/a/../b/", ["b"]),
    ])
    func mountedAtRoot(target: String, expected: [String]) {
        #expect(EscapeCheck.resolveInside(target: target, linkFolder: [], mountpoint: "/") == expected)
    }

    @Test("E1 mountpoint components are compared byte for byte")
    func mountpointBytes() {
        #expect(EscapeCheck.resolveInside(target: "/mnt/Caf\u{E9}/x", linkFolder: [], mountpoint: "/mnt/Caf\u{E9}") == ["x"])
        #expect(EscapeCheck.resolveInside(target: "/mnt/Cafe\u{301}/x", linkFolder: [], mountpoint: "/mnt/Caf\u{E9}") == nil)
    }

    @Test("E1 a resolved target's zone is that of the place it names")
    func resolvedTargetZone() throws {
        let layout = ContainerLayout(appName: "MyApp")
        let inside = try #require(EscapeCheck.resolveInside(target: "../Inbox/a.pdf", linkFolder: ["Documents", "x"],
                                                            mountpoint: "/mnt/c"))
        #expect(layout.zone(ofPath: inside) == .inbox)
    }

    @Test("E1 E2 an escape is EPERM, logged as a create (symlink) or a read (readlink)")
    func escapeDenials() {
        #expect(EscapeCheck.escapingSymlinkDenial == .deny(.notPermitted, .fileWriteCreate))
        #expect(EscapeCheck.escapingReadlinkDenial == .deny(.notPermitted, .fileReadData))
    }
}
