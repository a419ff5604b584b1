// The descriptor cache's lock-free slots (Node.Slot): pinning, the clock's
// second chance, eviction that never closes a pinned descriptor, and a
// retired node's descriptor closed by its last borrower.

@testable import AppSandboxFS
import BackingStore
import FuseKit
import Glibc
import SystemPackage
import Testing

@Suite("The descriptor cache's slots")
struct DescriptorSlotTests {
    /// A node with a handle, holding an O_PATH descriptor of a new file.
    func makeNode(_ f: TreeFixture, _ name: String) throws -> Node {
        f.make(name)
        return try f.lookup(name, in: f.table.root)
    }

    func isOpen(_ fd: FileDescriptor) -> Bool { fcntl(fd.rawValue, F_GETFD) != -1 }

    @Test("A pinned descriptor is never evicted; an unpinned one gets a second chance, then goes")
    func clockSkipsPinned() throws {
        let f = try TreeFixture()
        let node = try makeNode(f, "a")
        try #require(node.handle != nil, "file handles do not work here")
        let pinned = try #require(node.pinIfOpen())
        #expect(node.evict() == nil, "evicted while pinned")
        node.giveBack(pinned)
        #expect(node.evict() == nil, "no second chance: the referenced bit was set by the pin")
        let fd = try #require(node.evict(), "not evicted after its second chance")
        #expect(node.pinIfOpen() == nil, "a slot without a descriptor pinned one")
        Backing.close(fd)
        // The slow path opens it again from the handle.
        let reopened = try node.borrow()
        #expect(!reopened.owned && isOpen(reopened.fd))
        node.giveBack(reopened)
    }

    @Test("A node retired while borrowed closes its descriptor when the last borrower gives it back")
    func retireWhileBorrowed() throws {
        let f = try TreeFixture()
        let node = try makeNode(f, "b")
        let first = try #require(node.pinIfOpen())
        let second = try #require(node.pinIfOpen())
        f.table.cache.retire(node)
        #expect(isOpen(first.fd), "closed while borrowed")
        node.giveBack(first)
        #expect(isOpen(second.fd), "closed while still borrowed once")
        node.giveBack(second)
        #expect(!isOpen(second.fd), "not closed by the last borrower")
        // A retired slot takes no new descriptor.
        let fd = try Backing.openRoot(f.path)
        #expect(!node.install(fd, pinned: false))
        Backing.close(fd)
    }

    @Test("The cache keeps at most its capacity of descriptors open")
    func capacity() throws {
        let f = try TreeFixture(cacheCapacity: 2)
        for name in ["c", "d", "e", "g", "h"] { _ = try makeNode(f, name) }
        #expect(f.table.cache.openCount <= 2)
    }
}
