import SandboxPolicy
import Testing

@Suite("Q2 how much of a write fits (DiskSpace)")
struct DiskSpaceTests {
    let block: Int64 = 4096

    @Test("Q2 a write that fits is allowed whole, reserving the blocks it adds past the file's end")
    func fits() {
        let r = DiskSpace.writable(size: 0, allocated: 0, offset: 0, length: 10_000, free: 1 << 20, blockSize: block)
        #expect(r.allowed == 10_000 && r.reserve == 3 * block)
        let append = DiskSpace.writable(size: 5000, allocated: 2 * block, offset: 5000, length: 4000, free: 1 << 20, blockSize: block)
        #expect(append.allowed == 4000 && append.reserve == block, "the half-used last block needs nothing")
    }

    @Test("Q2 overwriting blocks a dense file has needs no space, even on a full disk")
    func overwrite() {
        let r = DiskSpace.writable(size: 8 * block, allocated: 8 * block, offset: 100, length: 5000, free: 0, blockSize: block)
        #expect(r.allowed == 5000 && r.reserve == 0)
        let overFull = DiskSpace.writable(size: 8 * block, allocated: 8 * block, offset: 0, length: 100, free: -block, blockSize: block)
        #expect(overFull.allowed == 100)
    }

    @Test("Q2 a write that partly fits gets the longest prefix whose blocks fit; none fits: 0 (ENOSPC)")
    func prefix() {
        let r = DiskSpace.writable(size: 0, allocated: 0, offset: 0, length: 10 * block, free: 3 * block + 100, blockSize: block)
        #expect(r.allowed == 3 * block && r.reserve == 3 * block)
        let unaligned = DiskSpace.writable(size: 1000, allocated: block, offset: 1000, length: 3 * block, free: block, blockSize: block)
        #expect(unaligned.allowed == 2 * block - 1000, "the rest of the file's block and one more")
        let none = DiskSpace.writable(size: 0, allocated: 0, offset: 0, length: 10, free: block - 1, blockSize: block)
        #expect(none.allowed == 0)
    }

    @Test("Q2 a sparse file may need a block for every block a write covers")
    func sparse() {
        let r = DiskSpace.writable(size: 100 * block, allocated: block, offset: 10 * block, length: 2 * block, free: 1 << 20, blockSize: block)
        #expect(r.allowed == 2 * block && r.reserve == 2 * block)
    }
}
