// NodeName, the key of the name tree's children maps: equal exactly when
// the bytes are equal (names need not be UTF-8), and a children map keyed
// by it finds every name again through inserts and removals.

@testable import AppSandboxFS
import Testing

@Suite struct NodeNameTests {
    @Test func equalExactlyWhenTheBytesAre() {
        let a = NodeName(Array("report.pdf".utf8))
        #expect(a == NodeName(Array("report.pdf".utf8)))
        #expect(a.hashValue == NodeName(Array("report.pdf".utf8)).hashValue)
        #expect(a != NodeName(Array("report.pdF".utf8)))
        #expect(a != NodeName(Array("report.pdf.".utf8)))
        #expect(NodeName([]) != NodeName([0x61]))
        // Not UTF-8: two invalid sequences that a String would both turn
        // into U+FFFD stay two names.
        #expect(NodeName([0x66, 0xFF]) != NodeName([0x66, 0xFE]))
        #expect(NodeName([0x66, 0xFF]).bytes == [0x66, 0xFF])
    }

    /// Names up to 16 bytes live in the value, longer ones in an array:
    /// both sides of the boundary, and names that share their first 16
    /// bytes, keep their exact bytes and compare by all of them.
    @Test func shortAndLongNames() {
        let sixteen = Array("0123456789abcdef".utf8)
        let seventeen = sixteen + [0x67]
        let other17 = sixteen + [0x68]
        for bytes in [[], [0x61], sixteen, seventeen, Array(repeating: 0xFF, count: 255)] {
            let name = NodeName(bytes)
            #expect(name.bytes == bytes)
            #expect(name.withBytes { Array($0) } == bytes)
            #expect(name == NodeName(bytes))
            #expect(name.hashValue == NodeName(bytes).hashValue)
        }
        #expect(NodeName(sixteen) != NodeName(seventeen))
        #expect(NodeName(seventeen) != NodeName(other17))
        // A shorter name is not a longer one padded with zero bytes.
        #expect(NodeName([0x61]) != NodeName([0x61, 0x00]))
        var map: [NodeName: Int] = [NodeName(seventeen): 17, NodeName(other17): 18, NodeName(sixteen): 16]
        #expect(map[NodeName(other17)] == 18)
        map[NodeName(seventeen)] = nil
        #expect(map[NodeName(sixteen)] == 16 && map[NodeName(other17)] == 18 && map.count == 2)
        String(decoding: seventeen, as: UTF8.self).withCString { #expect(NodeName($0) == NodeName(seventeen)) }
    }

    @Test func madeFromTheKernelsCString() {
        let name = "caf\u{E9}"
        name.withCString { #expect(NodeName($0) == NodeName(Array(name.utf8))) }
    }

    /// What rename and unlink do to a folder's map: many removals, each
    /// shifting the entries after it in the probe chain, which must then
    /// still be found under their own names.
    @Test func aChildrenMapKeepsEveryNameThroughRemovals() {
        var map: [NodeName: Int] = [:]
        for i in 0..<20_000 { map[NodeName(Array("f\(i)".utf8))] = i }
        for i in stride(from: 0, to: 20_000, by: 3) { map[NodeName(Array("f\(i)".utf8))] = nil }
        for i in 0..<20_000 {
            let found = map[NodeName(Array("f\(i)".utf8))]
            #expect(found == (i % 3 == 0 ? nil : i))
            if found != (i % 3 == 0 ? nil : i) { break }
        }
        #expect(map.count == 20_000 - 6_667)
    }
}
