// The name tree of NodeTable, without FUSE: zones and container paths
// derived from the tree, kept by lookup, rename, exchange and unlink; hard
// links; a folder never put below itself; a reused inode number.
// Nodes hold real O_PATH descriptors of files in a temporary folder.

@testable import AppSandboxFS
import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import SystemPackage
import Testing

/// A temporary folder and a node table rooted at it.
final class TreeFixture {
    let path: String
    let table: NodeTable
    let layout = ContainerLayout(appName: "App")

    init(cacheCapacity: Int = 64) throws {
        var template = Array("/tmp/asfs-tree-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else { throw Errno(rawValue: errno) }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let rootFD = try Backing.openRoot(path)
        let cache = DescriptorCache(capacity: cacheCapacity, roots: [(rootFD, path)])
        table = NodeTable(rootFD: rootFD, stat: try Backing.stat(rootFD), layout: layout, cache: cache)
    }

    deinit {
        _ = TreeRemover.removeContents(ofFolderAt: path)
        rmdir(path)
    }

    /// Makes `relative` (a folder when it ends in "/") in the backing folder.
    func make(_ relative: String) {
        let full = path + "/" + relative
        if relative.hasSuffix("/") { mkdir(full, 0o755) } else { close(creat(full, 0o644)) }
    }

    /// Looks `name` up in `parent` as the driver does: O_PATH, lstat, remember.
    @discardableResult
    func lookup(_ name: String, in parent: Node) throws -> Node {
        let fd = try parent.withFD { (folder) throws(Errno) in try Backing.openPath(in: folder, name) }
        return table.remember(fd: fd, stat: try Backing.stat(fd), parent: parent, name: NodeName(Array(name.utf8)))
    }

    /// Looks up each component of `relative` from the root.
    @discardableResult
    func lookupPath(_ relative: String) throws -> Node {
        var node = table.root
        for name in relative.split(separator: "/") { node = try lookup(String(name), in: node) }
        return node
    }

    func path(of node: Node) -> String {
        table.components(of: node).map { String(decoding: $0, as: UTF8.self) }.joined(separator: "/")
    }
}

@Suite("The node tree: zones and paths from names, no system call")
struct NodeTreeTests {
    @Test("Zones and container paths come from the tree, one name at a time")
    func zonesFromTheTree() throws {
        let f = try TreeFixture()
        for p in ["Documents/", "Documents/Inbox/", "Documents/Inbox/a.pdf", "Library/", "Library/Caches/",
                  "Library/Caches/c/", "Library/Caches/c/d", "App.app/", "tmp/", "SystemData/"] { f.make(p) }
        let expected: [(String, Zone)] = [
            ("Documents", .documentsFolder), ("Documents/Inbox", .inboxFolder), ("Documents/Inbox/a.pdf", .inbox),
            ("Library", .libraryFolder), ("Library/Caches", .cachesFolder), ("Library/Caches/c/d", .caches),
            ("App.app", .bundleFolder), ("tmp", .tmpFolder), ("SystemData", .rootOther),
        ]
        for (path, zone) in expected {
            let node = try f.lookupPath(path)
            #expect(f.table.zone(of: node) == zone, "\(path)")
            #expect(f.path(of: node) == path)
        }
        #expect(f.table.zone(of: f.table.root) == .root)
        let documents = try f.lookupPath("Documents")
        #expect(f.table.zone(ofChild: Array("Inbox".utf8), in: documents) == .inboxFolder)
        // Bytes: a decomposed spelling of the app name is another name.
        #expect(f.table.zone(ofChild: Array("App.app".utf8), in: f.table.root) == .bundleFolder)
        #expect(f.layout.zone(ofChild: [0x41, 0x70, 0x70, 0xFF], in: .root) == .rootOther)
    }

    @Test("A folder renamed into another zone takes the nodes below it along at once")
    func renameMovesTheSubtree() throws {
        let f = try TreeFixture()
        for p in ["Documents/", "Documents/Inbox/", "Library/", "Documents/x/", "Documents/x/y/", "Documents/x/y/z"] { f.make(p) }
        let z = try f.lookupPath("Documents/x/y/z")
        let documents = try f.lookupPath("Documents")
        let library = try f.lookupPath("Library")
        #expect(f.table.zone(of: z) == .documents)
        #expect(rename(f.path + "/Documents/x", f.path + "/Library/x") == 0)
        f.table.renamed(NodeName(Array("x".utf8)), in: documents, to: NodeName(Array("x".utf8)), in: library, exchange: false)
        #expect(f.table.zone(of: z) == .library)
        #expect(f.path(of: z) == "Library/x/y/z")
        // Into the Inbox under another name.
        let inbox = try f.lookupPath("Documents/Inbox")
        f.table.renamed(NodeName(Array("x".utf8)), in: library, to: NodeName(Array("w".utf8)), in: inbox, exchange: false)
        #expect(f.table.zone(of: z) == .inbox)
        #expect(f.path(of: z) == "Documents/Inbox/w/y/z")
    }

    @Test("An exchange swaps two places; an unlinked name leaves its node where it was")
    func exchangeAndUnlink() throws {
        let f = try TreeFixture()
        for p in ["Documents/", "tmp/", "Documents/a", "tmp/b"] { f.make(p) }
        let a = try f.lookupPath("Documents/a"), b = try f.lookupPath("tmp/b")
        let documents = try f.lookupPath("Documents"), tmp = try f.lookupPath("tmp")
        f.table.renamed(NodeName(Array("a".utf8)), in: documents, to: NodeName(Array("b".utf8)), in: tmp, exchange: true)
        #expect(f.path(of: a) == "tmp/b" && f.table.zone(of: a) == .tmp)
        #expect(f.path(of: b) == "Documents/a" && f.table.zone(of: b) == .documents)
        f.table.removed(NodeName(Array("a".utf8)), in: documents)
        #expect(f.path(of: b) == "Documents/a", "an unlinked node keeps its last place")
        #expect(documents.children[NodeName(Array("a".utf8))] == nil)
    }

    @Test("A file with two names is at the name the kernel used last")
    func hardLinks() throws {
        let f = try TreeFixture()
        for p in ["Documents/", "Library/", "Documents/f"] { f.make(p) }
        #expect(link(f.path + "/Documents/f", f.path + "/Library/g") == 0)
        let first = try f.lookupPath("Documents/f")
        let second = try f.lookupPath("Library/g")
        #expect(first === second)
        #expect(f.path(of: first) == "Library/g" && f.table.zone(of: first) == .library)
        #expect(first.lookups.load(ordering: .relaxed) == 2)
        try f.lookupPath("Documents/f")
        #expect(f.path(of: first) == "Documents/f")
    }

    @Test("A lookup that would put a folder below itself (a stale tree) leaves the tree a tree")
    func noCycles() throws {
        let f = try TreeFixture()
        for p in ["Documents/", "Documents/p/", "Documents/p/q/"] { f.make(p) }
        let p = try f.lookupPath("Documents/p"), q = try f.lookupPath("Documents/p/q")
        // Behind the tree's back: q moves up, p moves below it.
        #expect(rename(f.path + "/Documents/p/q", f.path + "/Documents/q") == 0)
        #expect(rename(f.path + "/Documents/p", f.path + "/Documents/q/p") == 0)
        // The kernel still has q below p and looks up "p" in q.
        let again = try f.lookup("p", in: q)
        #expect(again === p)
        #expect(f.path(of: q) == "Documents/p/q", "q stays where the tree had it")
        #expect(f.table.zone(of: q) == .documents)
    }

    @Test("A node whose inode number a new file took stays alive and reaches only its old file")
    func reusedInodeNumber() throws {
        let f = try TreeFixture(cacheCapacity: 1)
        for p in ["Documents/", "Documents/old", "Documents/new", "Documents/other1", "Documents/other2"] { f.make(p) }
        let documents = try f.lookupPath("Documents")
        let old = try f.lookup("old", in: documents)
        let oldKey = old.key
        // The cache holds one descriptor: these take it from `old`.
        try f.lookup("other1", in: documents)
        try f.lookup("other2", in: documents)
        // A new file presented with the old file's (st_dev, st_ino): another handle.
        let fd = try documents.withFD { (folder) throws(Errno) in try Backing.openPath(in: folder, "new") }
        var stat = try Backing.stat(fd)
        stat.st_ino = ino_t(oldKey.inode)
        stat.st_dev = dev_t(oldKey.device)
        let new = f.table.remember(fd: fd, stat: stat, parent: documents, name: NodeName(Array("new".utf8)))
        #expect(new !== old, "the new file got the old node")
        #expect(f.table.existing(oldKey) === new)
        // The old node is still a valid object the kernel can name, and still
        // reaches the old file.
        let again = f.table.node(old.id)
        let oldStat = try again.withFD { (fd) throws(Errno) in try Backing.stat(fd) }
        var real = Glibc.stat()
        #expect(Glibc.lstat(f.path + "/Documents/old", &real) == 0)
        #expect(oldStat.st_ino == real.st_ino)
        f.table.forget(old.id, count: 1)
        #expect(f.table.existing(oldKey) === new, "forgetting the old node leaves the new one in the index")
    }
}
