// Issue 11, item 6: names are bytes. The bundle is matched by its bytes, so
// another Unicode spelling of the app name is another name (B2); xattr
// names that are not UTF-8 are kept apart (X4).

import Glibc
import Testing

@Suite("Rules: names are bytes (B2, X4)")
struct ByteNameRulesTests {
    @Test("B2 with --bundle and app name Café, a decomposed Cafe\u{301}.app is not the bundle: nothing is written into it")
    func bundleMatchedByBytes() throws {
        try withRulesMount(layOut: false) { m in
            let appName = "Caf\u{E9}"
            try layOutContainer(at: m.backing, appName: appName)
            let external = m.root + "/external"
            try makeDirectory(external)
            try writeFile(external + "/Info.plist", "<plist/>\n")
            let mounted = m.run(["mount", m.backing, m.mountpoint, "--app-name", appName, "--bundle", external,
                                 "--log", m.root + "/background.log"])
            try #require(mounted.status == 0, "\(mounted)")
            let before = RulesTreeSnapshot(of: external)
            let decomposed = m.mountpoint + "/Cafe\u{301}.app"
            #expect(RulesSys.mkdir(decomposed + "/pwned") != 0, "mkdir Cafe\\u0301.app/pwned worked")
            #expect(RulesSys.mkdir(m.mountpoint + "/Caf\u{E9}.app/pwned") == EROFS)
            #expect(RulesTreeSnapshot(of: external).changes(since: before).isEmpty, "the external bundle changed")
        }
    }

    @Test("X4 two xattr names that are not UTF-8 are two attributes")
    func xattrNamesAreBytes() throws {
        try withRulesContainer { m in
            let file = m.documents + "/x.txt"
            try writeFile(file, "x\n")
            let names: [[UInt8]] = [Array("user.".utf8) + [0xFF], Array("user.".utf8) + [0xFE],
                                    [0xFF, 0x2E, 0x61], [0xFE, 0x2E, 0x61]]
            for (index, name) in names.enumerated() {
                let value = [UInt8(index + 1)]
                #expect(withCName(name) { RulesLinux.setxattr(file, $0, value, 1, 0) } == 0, "setxattr \(name)")
            }
            for (index, name) in names.enumerated() {
                var value = [UInt8](repeating: 0, count: 8)
                let count = withCName(name) { RulesLinux.getxattr(file, $0, &value, value.count) }
                #expect(count == 1 && value[0] == UInt8(index + 1), "getxattr \(name): \(count) \(value[0])")
            }
            var list = [CChar](repeating: 0, count: 4096)
            let size = RulesLinux.listxattr(file, &list, list.count)
            let listed = list[0..<max(size, 0)].split(separator: 0).map { $0.map { UInt8(bitPattern: $0) } }
            for name in names { #expect(listed.contains(name), "listxattr lacks \(name): \(listed)") }
        }
    }
}

private func withCName<T>(_ name: [UInt8], _ body: (UnsafePointer<CChar>) -> T) -> T {
    (name + [0]).withUnsafeBytes { body($0.baseAddress!.assumingMemoryBound(to: CChar.self)) }
}
