// The system calls the node table spares a create, an unlink and a rename
// (issue 12, performance): a created file's node is made from the open
// descriptor the create returned, and whether a name about to go leaves a
// node behind that must keep its descriptor is first asked of the tree.
// Without FUSE: a node table over a temporary folder (TreeFixture).

@testable import AppSandboxFS
import BackingStore
import Glibc
import SystemPackage
import Testing

@Suite("The node table spares system calls: created nodes, names that go")
struct NodeSavingsTests {
    @Test("A created file's node comes from its open descriptor: attributes, handle and place, and no descriptor of its own until one is needed")
    func createdNodeWithoutDescriptor() throws {
        let f = try TreeFixture()
        f.make("Documents/")
        let documents = try f.lookupPath("Documents")
        let openBefore = f.table.cache.openCount
        let fd = try documents.withFD { (folder) throws(Errno) in
            try Backing.create(in: folder, "new", flags: O_WRONLY, mode: 0o644)
        }
        defer { close(fd.rawValue) }
        let attributes = try Backing.stat(fd)
        let node = try #require(f.table.rememberCreated(open: fd, stat: attributes, parent: documents,
                                                         name: NodeName(Array("new".utf8))))
        #expect(node.slot.load(ordering: .relaxed) & Node.Slot.fdMask == 0, "the created node opened a descriptor")
        #expect(f.table.cache.openCount == openBefore)
        #expect(node.handle != nil)
        #expect(f.path(of: node) == "Documents/new")
        #expect(f.table.zone(of: node) == .documents)

        // The first request that needs a descriptor opens the file from its handle.
        let reached = try node.withFD { (fd) throws(Errno) in try Backing.stat(fd) }
        #expect(reached.st_ino == attributes.st_ino)
        #expect(f.table.cache.openCount == openBefore + 1)
        // A lookup of the name finds the same node.
        #expect(try f.lookup("new", in: documents) === node)
    }

    @Test("A created file whose inode a known node has (the kernel knew the file): that node is returned")
    func createdOverAKnownFile() throws {
        let f = try TreeFixture()
        f.make("Documents/")
        f.make("Documents/there")
        let documents = try f.lookupPath("Documents")
        let known = try f.lookup("there", in: documents)
        // A descriptor of a file the table knows. (A create no longer opens
        // an existing file: Backing.create adds O_EXCL, issue 25; the table
        // must still answer the known node for such a descriptor.)
        let fd = try documents.withFD { (folder) throws(Errno) in
            let path = try Backing.openPath(in: folder, "there")
            defer { Backing.close(path) }
            return try Backing.reopen(path, flags: O_WRONLY)
        }
        defer { close(fd.rawValue) }
        let node = f.table.rememberCreated(open: fd, stat: try Backing.stat(fd), parent: documents,
                                           name: NodeName(Array("there".utf8)))
        #expect(node === known)
        #expect(known.lookups.load(ordering: .relaxed) == 2)
    }

    @Test("A name about to go whose node holds a descriptor: the tree answers, and the node keeps its descriptor without a look at the backing folder")
    func keepDecidedByTheTree() throws {
        // Two descriptors in the cache (the folder's and the file's): a node
        // not kept loses its descriptor to the lookups that follow.
        let f = try TreeFixture(cacheCapacity: 2)
        f.make("Documents/")
        f.make("Documents/going")
        for index in 0..<4 { f.make("Documents/other\(index)") }
        let documents = try f.lookupPath("Documents")
        let going = try f.lookup("going", in: documents)
        // The name is removed behind the driver's back first: a look at the
        // backing folder would find nothing there and keep nothing, and the
        // file's handle then opens nothing.
        #expect(unlink(f.path + "/Documents/going") == 0)
        let answer = try documents.withFD { (folder) throws(Errno) in
            f.table.keepIfLastName(NodeName(Array("going".utf8)), in: documents, folder: folder, "going")
        }
        #expect(answer == .done)
        #expect(going.isKept)
        for index in 0..<4 { try f.lookup("other\(index)", in: documents) }
        let nameless = try going.withFD { (fd) throws(Errno) in try Backing.stat(fd) }
        #expect(nameless.st_nlink == 0, "the kept descriptor still reaches the file that lost its name")
    }

    @Test("No node at the name: a rename is told so (it then tries RENAME_NOREPLACE), an unlink looks at the backing folder")
    func noNodeAtTheName() throws {
        let f = try TreeFixture()
        f.make("Documents/")
        f.make("Documents/a")
        let documents = try f.lookupPath("Documents")
        let a = try f.lookup("a", in: documents)
        #expect(link(f.path + "/Documents/a", f.path + "/Documents/b") == 0)
        // The file's node is at "a"; "b" has none.
        let name = NodeName(Array("b".utf8))
        let forRename = try documents.withFD { (folder) throws(Errno) in
            f.table.keepIfLastName(name, in: documents, folder: folder, "b", lookingIfNoNode: false)
        }
        #expect(forRename == .noNode)
        #expect(!a.isKept)
        // "b" is not the file's last name: looked at, nothing is kept.
        #expect(unlink(f.path + "/Documents/a") == 0)
        #expect(link(f.path + "/Documents/b", f.path + "/Documents/c") == 0)
        let forUnlink = try documents.withFD { (folder) throws(Errno) in
            f.table.keepIfLastName(name, in: documents, folder: folder, "b")
        }
        #expect(forUnlink == .done)
        #expect(!a.isKept)
        // Now it is: "c" is gone, and "b" is the last name of the file `a` is the node of.
        #expect(unlink(f.path + "/Documents/c") == 0)
        try documents.withFD { (folder) throws(Errno) in
            f.table.keepIfLastName(name, in: documents, folder: folder, "b")
        }
        #expect(a.isKept)
    }
}
