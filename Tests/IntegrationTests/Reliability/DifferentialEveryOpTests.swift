// A differential run that compares after every operation (W1, W3): the same
// seeded random operations go to three folders on a plain directory and to
// three folders in the mount (in Documents, Library/Application Support and
// tmp, so renames cross zones). Each operation must answer the same on both
// (ok, or the same errno), and after each one the whole tree through the
// mount, and the backing directory under it, must equal the plain tree:
// names, types, modes, link counts, sizes, every byte of every file,
// link targets and user. extended attributes. The first difference stops the
// run with the operation, both trees' views and the last operations.
//
// Times are not compared (writes stamp "now" on both sides at different
// moments); an explicit utimensat reports the mtime it left, and that is
// compared as the operation's answer.
//
// Longer by hand: DIFF_EVERY_OPS=50000 DIFF_EVERY_SEED=random \
//   swift test --scratch-path .build-rel --skip-build --filter DifferentialEveryOp

import Glibc
import Testing

extension ReliabilityHeavyTests {
    @Suite("Differential after every operation: the mount against a plain folder")
    struct DifferentialEveryOp {
        /// DIFF_EVERY_OPS, else 3,000.
        static var operations: Int { Reliability.count("DIFF_EVERY_OPS", default: 3_000) }

        static let seed: UInt64 = {
            guard let text = environment("DIFF_EVERY_SEED") else { return 0xD1FF_E7E5_0000_0001 }
            if text == "random" {
                let value = UInt64.random(in: 1...UInt64.max)
                print("DIFF_EVERY_SEED=random picked 0x\(String(value, radix: 16))")
                return value
            }
            let parsed = text.lowercased().hasPrefix("0x") ? UInt64(text.dropFirst(2), radix: 16) : UInt64(text)
            guard let parsed else { fatalError("DIFF_EVERY_SEED must be decimal, 0x-hex or random, not \(text)") }
            return parsed
        }()

        /// Where the three trees live, relative to the container root.
        static let zones = ["Documents/every", "Library/Application Support/every", "tmp/every"]

        @Test("W1 W3: random operations across three zones; after each, the mount and its backing equal a plain folder",
              arguments: [[String](), ["--writeback"]])
        func comparedAfterEveryOperation(_ options: [String]) throws {
            let plainRoot = try makeTemporaryDirectory(prefix: "asfs-every-plain")
            defer { removeTree(plainRoot) }
            // The writeback run does a third of the operations, and checks the
            // backing directory only after an fsync of everything (see below).
            let writeback = options.contains("--writeback")
            let count = writeback ? max(Self.operations / 3, 1) : Self.operations
            let seed = writeback ? Self.seed ^ 0x3B ^ 0xC0FFEE : Self.seed
            try withMountedContainer(extraArguments: options) { mounted in
                defer { RealToolsTests.expectNoDenials(in: mounted) }
                let plain = Self.zones.indices.map { plainRoot + "/zone\($0)" }
                let mount = Self.zones.map { mounted.path($0) }
                let backing = Self.zones.map { mounted.backingPath($0) }
                for folder in plain + mount {
                    #expect(mkdir(folder, 0o755) == 0, "mkdir \(folder): \(posixError(errno))")
                }
                var engine = EveryOpEngine(seed: seed)
                var plainTree = EveryOpTree(roots: plain)
                let started = monotonicNow()
                for index in 1...count {
                    let operation = engine.next(in: plainTree)
                    let expected = operation.apply(roots: plain)
                    let actual = operation.apply(roots: mount)
                    engine.log("#\(index) \(operation)  => \(expected)")
                    if expected != actual {
                        Issue.record("""
                            operation #\(index) of \(count) (seed 0x\(String(seed, radix: 16))) answered differently:
                              \(operation)
                              plain: \(expected)
                              mount: \(actual)
                            last operations:
                            \(engine.tail)
                            """)
                        return
                    }
                    plainTree = EveryOpTree(roots: plain)
                    var views = [("mount", EveryOpTree(roots: mount))]
                    // Without the writeback cache every change has reached the
                    // backing directory when the call returns; with it, only
                    // after an fsync, so there the backing is checked every
                    // 50 operations after syncing every file.
                    if !writeback {
                        views.append(("backing", EveryOpTree(roots: backing)))
                    } else if index % 50 == 0 || index == count {
                        EveryOpTree.syncAll(roots: mount)
                        views.append(("backing (after fsync)", EveryOpTree(roots: backing)))
                    }
                    for (label, view) in views where view != plainTree {
                        Issue.record("""
                            after operation #\(index) of \(count) (seed 0x\(String(seed, radix: 16))): \(operation)
                            the \(label) differs from the plain folder:
                            \(view.difference(from: plainTree, label: label))
                            last operations:
                            \(engine.tail)
                            """)
                        return
                    }
                }
                print("every-op differential\(writeback ? " (writeback)" : ""): \(count) operations, seed 0x\(String(seed, radix: 16)), \(Int(monotonicNow() - started)) s; \(engine.countsText)")
                #expect(engine.allKindsRan, "not every kind of operation ran: \(engine.countsText)")
            }
        }
    }
}

// MARK: - The operations

/// A path in one of the three trees: zone index and a relative path ("" is
/// the zone's folder itself).
struct EveryOpPath: Hashable, CustomStringConvertible {
    var zone: Int
    var relative: String

    func on(_ roots: [String]) -> String { relative.isEmpty ? roots[zone] : roots[zone] + "/" + relative }
    var description: String { "z\(zone)/\(relative)" }
}

enum EveryOpOperation: CustomStringConvertible {
    case create(EveryOpPath, size: Int, seed: UInt64)
    case pwrite(EveryOpPath, offset: Int, size: Int, seed: UInt64)
    case append(EveryOpPath, size: Int, seed: UInt64)
    case truncate(EveryOpPath, size: Int)
    case fallocate(EveryOpPath, punch: Bool, offset: Int, length: Int)
    case unlink(EveryOpPath)
    case mkdir(EveryOpPath, mode: mode_t)
    case rmdir(EveryOpPath)
    case rename(EveryOpPath, EveryOpPath, flags: UInt32)
    case link(EveryOpPath, EveryOpPath)
    case symlink(target: String, EveryOpPath)
    case chmod(EveryOpPath, mode: mode_t)
    case utimens(EveryOpPath, seconds: Int)
    case setxattr(EveryOpPath, name: String, size: Int, seed: UInt64)
    case removexattr(EveryOpPath, name: String)
    /// Open read-write, rename or unlink the name, write through the
    /// descriptor, fstat, close: a descriptor outlives its name.
    case heldWrite(EveryOpPath, to: EveryOpPath?, offset: Int, size: Int, seed: UInt64)

    var kind: String {
        switch self {
        case .create: "create"
        case .pwrite: "pwrite"
        case .append: "append"
        case .truncate: "truncate"
        case .fallocate: "fallocate"
        case .unlink: "unlink"
        case .mkdir: "mkdir"
        case .rmdir: "rmdir"
        case .rename(_, _, let flags): flags == 0 ? "rename" : flags == RulesLinux.renameExchange ? "exchange" : "rename-noreplace"
        case .link: "link"
        case .symlink: "symlink"
        case .chmod: "chmod"
        case .utimens: "utimens"
        case .setxattr: "setxattr"
        case .removexattr: "removexattr"
        case .heldWrite: "held-write"
        }
    }

    static let allKinds = ["create", "pwrite", "append", "truncate", "fallocate", "unlink", "mkdir", "rmdir",
                           "rename", "exchange", "rename-noreplace", "link", "symlink", "chmod", "utimens",
                           "setxattr", "removexattr", "held-write"]

    var description: String {
        switch self {
        case .create(let p, let size, _): "create \(p) size=\(size)"
        case .pwrite(let p, let offset, let size, _): "pwrite \(p) off=\(offset) len=\(size)"
        case .append(let p, let size, _): "append \(p) len=\(size)"
        case .truncate(let p, let size): "truncate \(p) \(size)"
        case .fallocate(let p, let punch, let offset, let length): "fallocate\(punch ? "(punch)" : "") \(p) off=\(offset) len=\(length)"
        case .unlink(let p): "unlink \(p)"
        case .mkdir(let p, let mode): "mkdir \(p) \(String(mode, radix: 8))"
        case .rmdir(let p): "rmdir \(p)"
        case .rename(let a, let b, _): "\(kind) \(a) \(b)"
        case .link(let a, let b): "link \(a) \(b)"
        case .symlink(let target, let p): "symlink \(target) \(p)"
        case .chmod(let p, let mode): "chmod \(p) \(String(mode, radix: 8))"
        case .utimens(let p, let seconds): "utimens \(p) mtime=\(seconds)"
        case .setxattr(let p, let name, let size, _): "setxattr \(p) \(name) len=\(size)"
        case .removexattr(let p, let name): "removexattr \(p) \(name)"
        case .heldWrite(let p, let to, let offset, let size, _):
            "held-write \(p) then \(to.map { "rename to \($0)" } ?? "unlink"), pwrite off=\(offset) len=\(size)"
        }
    }

    /// Does the operation under `roots`; "ok ..." or "err ENAME".
    func apply(roots: [String]) -> String {
        func result(_ code: Int32, _ extra: String = "") -> String {
            code == 0 ? (extra.isEmpty ? "ok" : "ok " + extra) : "err " + posixError(code)
        }
        switch self {
        case .create(let p, let size, let seed):
            let fd = open(p.on(roots), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else { return result(errno) }
            defer { close(fd) }
            return result(RulesSys.writeAll(fd, EveryOpBytes.make(size, seed: seed)))
        case .pwrite(let p, let offset, let size, let seed):
            let fd = open(p.on(roots), O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { return result(errno) }
            defer { close(fd) }
            let bytes = EveryOpBytes.make(size, seed: seed)
            let n = bytes.withUnsafeBytes { Glibc.pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
            return n < 0 ? result(errno) : result(0, "\(n)")
        case .append(let p, let size, let seed):
            let fd = open(p.on(roots), O_WRONLY | O_APPEND | O_CLOEXEC)
            guard fd >= 0 else { return result(errno) }
            defer { close(fd) }
            return result(RulesSys.writeAll(fd, EveryOpBytes.make(size, seed: seed)))
        case .truncate(let p, let size):
            return result(RulesSys.truncate(p.on(roots), off_t(size)))
        case .fallocate(let p, let punch, let offset, let length):
            let fd = open(p.on(roots), O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { return result(errno) }
            defer { close(fd) }
            let mode: Int32 = punch ? 0x03 : 0   // PUNCH_HOLE | KEEP_SIZE
            return result(RulesSys.code { RulesLinux.fallocate(fd, mode, Int64(offset), Int64(length)) })
        case .unlink(let p):
            return result(RulesSys.unlink(p.on(roots)))
        case .mkdir(let p, let mode):
            return result(RulesSys.mkdir(p.on(roots), mode))
        case .rmdir(let p):
            return result(RulesSys.rmdir(p.on(roots)))
        case .rename(let a, let b, let flags):
            return result(flags == 0 ? RulesSys.rename(a.on(roots), b.on(roots)) : RulesSys.renameat2(a.on(roots), b.on(roots), flags))
        case .link(let a, let b):
            return result(RulesSys.link(a.on(roots), b.on(roots)))
        case .symlink(let target, let p):
            return result(RulesSys.symlink(target, p.on(roots)))
        case .chmod(let p, let mode):
            return result(RulesSys.chmod(p.on(roots), mode))
        case .utimens(let p, let seconds):
            let code = RulesSys.utimens(p.on(roots), atime: seconds, mtime: seconds)
            guard code == 0 else { return result(code) }
            switch RulesSys.stat(p.on(roots)) {
            case .success(let st): return result(0, "mtime=\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)")
            case .failure(let error): return "stat after utimens: \(error)"
            }
        case .setxattr(let p, let name, let size, let seed):
            return result(RulesSys.setxattr(p.on(roots), name, EveryOpBytes.make(size, seed: seed)))
        case .removexattr(let p, let name):
            return result(RulesSys.removexattr(p.on(roots), name))
        case .heldWrite(let p, let to, let offset, let size, let seed):
            let fd = open(p.on(roots), O_RDWR | O_CLOEXEC)
            guard fd >= 0 else { return result(errno) }
            defer { close(fd) }
            let moved = to.map { RulesSys.rename(p.on(roots), $0.on(roots)) } ?? RulesSys.unlink(p.on(roots))
            let bytes = EveryOpBytes.make(size, seed: seed)
            let n = bytes.withUnsafeBytes { Glibc.pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
            let writeCode = n < 0 ? errno : 0
            var st = stat()
            let statCode = fstat(fd, &st) == 0 ? 0 : errno
            return "\(result(moved)); write \(result(writeCode, "\(n)")); fstat \(result(statCode, "size=\(st.st_size) nlink=\(st.st_nlink)"))"
        }
    }
}

/// Bytes that depend only on (size, seed).
enum EveryOpBytes {
    static func make(_ size: Int, seed: UInt64) -> [UInt8] {
        var random = FSXRandom(seed: seed)
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { random.fill($0) }
        return bytes
    }
}

/// Chooses operations from the plain tree as it stands, so that most of
/// them succeed and some hit every usual error (EEXIST, ENOENT, ENOTEMPTY,
/// EISDIR, ENOTDIR, EINVAL for a folder moved into itself ...).
struct EveryOpEngine {
    private var random: FSXRandom
    private var recent: [String] = []
    private(set) var counts: [String: Int] = [:]

    init(seed: UInt64) { random = FSXRandom(seed: seed) }

    mutating func log(_ line: String) {
        recent.append(line)
        if recent.count > 25 { recent.removeFirst(recent.count - 25) }
    }

    var tail: String { recent.joined(separator: "\n") }
    var countsText: String { counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") }
    var allKindsRan: Bool { EveryOpOperation.allKinds.allSatisfy { counts[$0, default: 0] > 0 } }

    private static let names = ["a", "b", "c", "d", "e", "f", "g", "h"]
    private static let xattrNames = ["user.k0", "user.k1", "user.k2"]
    private static let modes: [mode_t] = [0o644, 0o600, 0o755, 0o700, 0o444, 0o640, 0o2755]

    mutating func next(in tree: EveryOpTree) -> EveryOpOperation {
        let operation = choose(tree)
        counts[operation.kind, default: 0] += 1
        return operation
    }

    private mutating func choose(_ tree: EveryOpTree) -> EveryOpOperation {
        let files = tree.paths(ofType: "file")
        let folders = tree.paths(ofType: "dir")   // the zone folders included
        let all = tree.allPaths.filter { !$0.relative.isEmpty }
        let crowded = all.count > 60
        let seed = random.next()

        // A path that exists (of the wanted kind when there is one), or not.
        func existing(_ pool: [EveryOpPath]) -> EveryOpPath? { pool.isEmpty ? nil : pool[random.below(pool.count)] }
        func fresh() -> EveryOpPath {
            let folder = folders[random.below(folders.count)]
            let name = Self.names[random.below(Self.names.count)]
            return EveryOpPath(zone: folder.zone, relative: folder.relative.isEmpty ? name : folder.relative + "/" + name)
        }
        func anyTarget() -> EveryOpPath { random.oneIn(3) ? (existing(all) ?? fresh()) : fresh() }
        func file() -> EveryOpPath { random.oneIn(10) ? anyTarget() : (existing(files) ?? fresh()) }

        // A crowded tree gets only removals, renames and shrinking writes.
        let pick = random.below(crowded ? 40 : 100)
        switch pick {
        case 0..<6:
            return .unlink(random.oneIn(8) ? anyTarget() : (existing(all.filter { tree.type(of: $0) != "dir" }) ?? fresh()))
        case 6..<10:
            return .rmdir(random.oneIn(6) ? anyTarget() : (existing(folders.filter { !$0.relative.isEmpty }) ?? fresh()))
        case 10..<24:
            let source = random.oneIn(10) ? fresh() : (existing(all) ?? fresh())
            return .rename(source, anyTarget(), flags: 0)
        case 24..<27:
            return .rename(existing(all) ?? fresh(), anyTarget(), flags: RulesLinux.renameNoReplace)
        case 27..<30:
            return .rename(existing(all) ?? fresh(), existing(all) ?? fresh(), flags: RulesLinux.renameExchange)
        case 30..<34:
            return .truncate(file(), size: random.oneIn(4) ? 0 : random.below(40_000))
        case 34..<40:
            return .heldWrite(existing(files) ?? fresh(), to: random.oneIn(2) ? anyTarget() : nil,
                              offset: random.below(20_000), size: random.inRange(1...8_000), seed: seed)
        case 40..<52:
            return .create(fresh(), size: random.oneIn(5) ? 0 : random.below(20_000), seed: seed)
        case 52..<64:
            return .pwrite(file(), offset: random.below(30_000), size: random.inRange(1...16_000), seed: seed)
        case 64..<68:
            return .append(file(), size: random.inRange(1...8_000), seed: seed)
        case 68..<71:
            return .fallocate(file(), punch: random.oneIn(2), offset: random.below(30_000), length: random.inRange(1...20_000))
        case 71..<77:
            return .mkdir(fresh(), mode: random.oneIn(4) ? 0o700 : 0o755)
        case 77..<81:
            return .link(random.oneIn(8) ? anyTarget() : (existing(all.filter { tree.type(of: $0) != "dir" }) ?? fresh()),
                         fresh())
        case 81..<84:
            // Relative targets that stay inside the container (E1).
            let targets = ["a", "b", "../c", "d/e", "nowhere"]
            return .symlink(target: targets[random.below(targets.count)], fresh())
        case 84..<89:
            return .chmod(existing(all) ?? fresh(), mode: Self.modes[random.below(Self.modes.count)])
        case 89..<92:
            return .utimens(existing(all) ?? fresh(), seconds: 1_500_000_000 + random.below(100_000_000))
        case 92..<97:
            return .setxattr(existing(all.filter { tree.type(of: $0) != "link" }) ?? fresh(),
                             name: Self.xattrNames[random.below(Self.xattrNames.count)],
                             size: random.below(300), seed: seed)
        default:
            return .removexattr(existing(all.filter { tree.type(of: $0) != "link" }) ?? fresh(),
                                name: Self.xattrNames[random.below(Self.xattrNames.count)])
        }
    }
}

// MARK: - The trees

/// Everything under the three zone folders, read without following links:
/// relative path -> "type mode nlink size xattrs" (and the target of a link)
/// and, for a file, its bytes (compared with memcmp: a debug build is slow
/// at hashing them byte by byte).
struct EveryOpTree: Equatable {
    struct Entry: Equatable {
        var text: String
        var bytes: [UInt8]?

        static func == (a: Entry, b: Entry) -> Bool {
            guard a.text == b.text else { return false }
            switch (a.bytes, b.bytes) {
            case (nil, nil): return true
            case (let x?, let y?):
                return x.count == y.count && x.withUnsafeBytes { xp in
                    y.withUnsafeBytes { yp in x.isEmpty || memcmp(xp.baseAddress!, yp.baseAddress!, x.count) == 0 }
                }
            default: return false
            }
        }

        /// The text, and where the bytes first differ from `other`'s.
        func described(against other: Entry?) -> String {
            guard let bytes else { return text }
            guard let theirs = other?.bytes else { return text + " bytes=\(bytes.count)" }
            let common = min(bytes.count, theirs.count)
            let first = (0..<common).first { bytes[$0] != theirs[$0] } ?? common
            return text + " bytes=\(bytes.count) (first difference at offset \(first))"
        }
    }

    private(set) var entries: [EveryOpPath: Entry] = [:]

    init(roots: [String]) {
        for (zone, root) in roots.enumerated() {
            walk(root, zone: zone, relative: "")
        }
    }

    var allPaths: [EveryOpPath] { entries.keys.sorted { $0.description < $1.description } }

    func paths(ofType type: String) -> [EveryOpPath] { allPaths.filter { self.type(of: $0) == type } }

    func type(of path: EveryOpPath) -> String? {
        entries[path].map { String($0.text.prefix { $0 != " " }) }
    }

    private mutating func walk(_ path: String, zone: Int, relative: String) {
        let key = EveryOpPath(zone: zone, relative: relative)
        var st = stat()
        guard lstat(path, &st) == 0 else {
            entries[key] = Entry(text: "lstat-failed \(posixError(errno))")
            return
        }
        let kind = st.st_mode & S_IFMT
        var text = "\(kind == S_IFDIR ? "dir" : kind == S_IFREG ? "file" : kind == S_IFLNK ? "link" : "other") "
            + "mode=\(String(st.st_mode & 0o7777, radix: 8)) nlink=\(st.st_nlink)"
        var bytes: [UInt8]?
        switch kind {
        case S_IFREG:
            bytes = readFileBytes(path)
            text += " size=\(st.st_size)" + (bytes == nil ? " read-failed \(posixError(errno))" : "")
        case S_IFLNK:
            text += " target=\(RulesSys.readlink(path).rulesValue ?? "?")"
        default:
            break
        }
        if kind != S_IFLNK {
            switch RulesSys.listxattr(path) {
            case .success(let names):
                let user = names.filter { $0.hasPrefix("user.") }.sorted()
                text += " xattrs=[" + user.map { name in
                    "\(name)=\(RulesSys.getxattr(path, name).rulesValue.map { "\($0.count):\(Self.hex($0))" } ?? "?")"
                }.joined(separator: ",") + "]"
            case .failure(let error):
                text += " xattrs=\(error)"
            }
        }
        entries[key] = Entry(text: text, bytes: bytes)
        if kind == S_IFDIR {
            for name in RulesSys.list(path).rulesValue ?? [] {
                walk(path + "/" + name, zone: zone, relative: relative.isEmpty ? name : relative + "/" + name)
            }
        }
    }

    /// fsync of every file in the trees (for the writeback run).
    static func syncAll(roots: [String]) {
        for root in roots {
            let find = runProcess(["find", root, "-type", "f"], timeout: 60)
            for path in find.stdout.split(separator: "\n") {
                let fd = open(String(path), O_RDONLY | O_CLOEXEC)
                if fd >= 0 { fsync(fd); close(fd) }
            }
        }
    }

    /// The entries that differ, at most 15, as lines.
    func difference(from plain: EveryOpTree, label: String) -> String {
        let keys = Set(entries.keys).union(plain.entries.keys).sorted { $0.description < $1.description }
        let lines = keys.compactMap { key -> String? in
            let mine = entries[key], theirs = plain.entries[key]
            guard mine != theirs else { return nil }
            return "  \(key):\n    plain: \(theirs?.described(against: mine) ?? "(absent)")\n"
                + "    \(label): \(mine?.described(against: theirs) ?? "(absent)")"
        }
        return lines.prefix(15).joined(separator: "\n")
    }

    /// A short value in hex (xattr values are at most 300 bytes).
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef")
        var text = ""
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return text
    }
}
