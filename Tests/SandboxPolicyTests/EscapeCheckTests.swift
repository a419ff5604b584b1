import SandboxPolicy
import Testing

@Suite("E1 E2 symbolic link targets, resolved as the kernel resolves them")
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

    /// Links at container paths, for `readLink`.
    static func links(_ table: [String: String]) -> ([[UInt8]]) -> [UInt8]? {
        { path in
            let key = path.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
            return table[key].map { Array($0.utf8) }
        }
    }

    static func resolve(_ target: String, in folder: [String], links: [String: String], mountpoint: String = "/mnt/c") -> [String]? {
        EscapeCheck.resolveInside(target: Array(target.utf8), linkFolder: folder.map { Array($0.utf8) },
                                  mountpoint: mountpoint, readLink: Self.links(links))?
            .map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("E1 E2 a '..' after a link is taken from where the link leads (issue 11: ln -s . d; d/d/d/../../../etc)")
    func linksBeforeDotDot() {
        let dot = ["Documents/s/d": "."]
        #expect(Self.resolve("d/d/d/d/d/d/../../../../../../etc/passwd", in: ["Documents", "s"], links: dot) == nil)
        #expect(Self.resolve("d/d/../x", in: ["Documents", "s"], links: dot) == ["Documents", "x"])
        // Without the link, the same text stays inside.
        #expect(Self.resolve("d/d/d/d/d/d/../../../../../../etc/passwd", in: ["Documents", "s"], links: [:])
                == ["Documents", "s", "etc", "passwd"])
        // A link leading down: its '..' climbs from where it leads.
        let down = ["Documents/a/down": "b/c"]
        #expect(Self.resolve("down/../../doc", in: ["Documents", "a"], links: down) == ["Documents", "a", "doc"])
        // A link with an absolute target into the mountpoint, then '..'.
        let absolute = ["Documents/abs": "/mnt/c/Library/Caches"]
        #expect(Self.resolve("abs/../x", in: ["Documents"], links: absolute) == ["Library", "x"])
        #expect(Self.resolve("abs/../../../..", in: ["Documents"], links: absolute) == nil)
        // A link that climbs out itself, used before '..'.
        let out = ["Documents/up": "../../.."]
        #expect(Self.resolve("up/../x", in: ["Documents"], links: out) == nil)
    }

    @Test("E1 E2 a chain of more than 40 links is refused, as the kernel refuses it (ELOOP)")
    func tooManyLinks() {
        #expect(Self.resolve("loop/..", in: ["Documents"], links: ["Documents/loop": "loop/.."]) == nil)
        var chain: [String: String] = [:]
        for i in 0..<41 { chain["Documents/l\(i)"] = "l\(i + 1)" }
        chain["Documents/l41"] = "."
        #expect(Self.resolve("l0/../x", in: ["Documents"], links: chain) == nil)
        var short: [String: String] = [:]
        for i in 0..<39 { short["Documents/l\(i)"] = "l\(i + 1)" }
        short["Documents/l39"] = "."
        #expect(Self.resolve("l0/../x", in: ["Documents"], links: short) == ["x"])
    }

    @Test("E1 a name with no '..' after it is not read: going down cannot climb")
    func noLookupsWithoutDotDot() {
        var asked: [[UInt8]] = []
        let inside = EscapeCheck.resolveInside(target: Array("a/b/c".utf8), linkFolder: [Array("Documents".utf8)],
                                               mountpoint: "/mnt/c", readLink: { asked.append(contentsOf: $0); return nil })
        #expect(inside != nil && asked.isEmpty)
    }
}
