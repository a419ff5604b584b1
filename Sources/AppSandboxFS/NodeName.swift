import Glibc

/// A name in a folder of the node tree: the bytes the kernel gave (names
/// need not be UTF-8), with their hash computed once.
///
/// The children maps hash a name on every lookup, insert and removal, and a
/// dictionary's removal hashes again the entries that follow it in its
/// probe chain. `[UInt8]`'s own hash feeds the hasher one byte at a time;
/// this type hashes the bytes in one call when the name is made, and after
/// that gives the hasher a single word. The hash is Swift's seeded one, so
/// names chosen to collide in one driver collide in no other.
///
/// Names of up to 16 bytes (most of them) are stored in the value itself:
/// making one from the kernel's name allocates nothing, and a map compares
/// two of them without leaving its own storage (a folder's map of 10,000
/// names does not fit the caches, and a comparison that followed each
/// key's array pointer cost a miss more per probe: `perf` put the maps'
/// finds first among the driver's own symbols during 10,000 renames).
struct NodeName: Hashable, Sendable {
    static let inlineCapacity = 16

    private let hash: Int
    private let count: Int
    /// The first 16 bytes, the rest zero: all of a short name.
    private let head: (UInt64, UInt64)
    /// All the bytes of a name longer than `inlineCapacity`; nil otherwise.
    private let long: [UInt8]?

    init(_ bytes: UnsafeRawBufferPointer) {
        count = bytes.count
        var head: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &head) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes.prefix(Self.inlineCapacity))) }
        self.head = head
        long = bytes.count > Self.inlineCapacity ? Array(bytes) : nil
        var hasher = Hasher()
        hasher.combine(bytes: bytes)
        hash = hasher.finalize()
    }

    init(_ bytes: [UInt8]) {
        self = bytes.withUnsafeBytes { NodeName($0) }
    }

    /// The name the kernel passed, a C string.
    init(_ name: UnsafePointer<CChar>) {
        self.init(UnsafeRawBufferPointer(start: name, count: strlen(name)))
    }

    /// Runs `body` with the name's bytes.
    @inline(__always)
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let long { return try long.withUnsafeBytes(body) }
        return try withUnsafeBytes(of: head) { try body(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
    }

    /// The bytes as an array (denial lines, tests: not for the hot paths).
    var bytes: [UInt8] { withBytes { Array($0) } }

    static func == (left: NodeName, right: NodeName) -> Bool {
        guard left.hash == right.hash, left.count == right.count, left.head == right.head else { return false }
        return left.count <= inlineCapacity || left.long == right.long
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
