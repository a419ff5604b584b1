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
