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

    /// What a dictionary asks of a key at every find, insert and removal
    /// (and for each entry a removal moves): by default a whole run of the
    /// seeded hasher over `hash(into:)`, which `perf` put at 2 % of the
    /// driver's user time in a rename and unlink run. The bytes were hashed
    /// with the seeded hasher when the name was made; here the stored hash
    /// is only mixed with the table's own seed (a multiply and shifts,
    /// splitmix64's finalizer), so that two tables still order the same
    /// names differently, as the standard library's keys do.
    func _rawHashValue(seed: Int) -> Int {
        var mixed = UInt64(bitPattern: Int64(hash ^ seed))
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(bitPattern: UInt(mixed ^ (mixed >> 31)))
    }
}
