// InodeKey, the key of the node table's index: its own mixing of device
// and inode (instead of the seeded hasher's full run) must still find every
// file again, and two files that differ in either number stay two keys.
import BackingStore
import Glibc
import Testing

@Suite struct InodeKeyTests {
    private func key(device: UInt64, inode: UInt64) -> InodeKey {
        var status = stat()
        status.st_dev = __dev_t(device)
        status.st_ino = __ino_t(inode)
        return InodeKey(status)
    }

    @Test func anIndexKeepsEveryInodeThroughRemovals() {
        var index: [InodeKey: Int] = [:]
        // Consecutive inodes on two devices, as ext4 hands them out.
        for i in 0..<20_000 { index[key(device: UInt64(i % 2) + 2049, inode: UInt64(i / 2) + 12)] = i }
        #expect(index.count == 20_000)
        for i in stride(from: 0, to: 20_000, by: 3) { index[key(device: UInt64(i % 2) + 2049, inode: UInt64(i / 2) + 12)] = nil }
        for i in 0..<20_000 {
            let found = index[key(device: UInt64(i % 2) + 2049, inode: UInt64(i / 2) + 12)]
            #expect(found == (i % 3 == 0 ? nil : i))
            if found != (i % 3 == 0 ? nil : i) { break }
        }
    }

    @Test func theSameNumbersOnAnotherDeviceAreAnotherKey() {
        #expect(key(device: 1, inode: 5) == key(device: 1, inode: 5))
        #expect(key(device: 1, inode: 5) != key(device: 2, inode: 5))
        #expect(key(device: 1, inode: 5).hashValue == key(device: 1, inode: 5).hashValue)
        var set: Set<InodeKey> = [key(device: 1, inode: 5), key(device: 5, inode: 1), key(device: 1, inode: 5)]
        set.insert(key(device: 0, inode: 0))
        #expect(set.count == 3)
    }
}
