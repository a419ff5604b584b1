/// A name in a folder of the node tree: the bytes the kernel gave (names
/// need not be UTF-8), with their hash computed once.
///
/// The children maps hash a name on every lookup, insert and removal, and a
/// dictionary's removal hashes again the entries that follow it in its
/// probe chain. `[UInt8]`'s own hash feeds the hasher one byte at a time;
/// this type hashes the bytes in one call when the name is made, and after
/// that gives the hasher a single word. The hash is Swift's seeded one, so
/// names chosen to collide in one driver collide in no other.
struct NodeName: Hashable, Sendable {
    let bytes: [UInt8]
    private let hash: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        var hasher = Hasher()
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        hash = hasher.finalize()
    }

    /// The name the kernel passed, a C string.
    init(_ name: UnsafePointer<CChar>) {
        self.init(nameBytes(name))
    }

    static func == (left: NodeName, right: NodeName) -> Bool {
        left.hash == right.hash && left.bytes == right.bytes
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }
}
