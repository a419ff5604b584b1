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

    @Test("Q2 offsets and lengths up to 2^63 - 1 never overflow (issue 25, item 6): a block near the top fits, 2^62 bytes do not")
    func hugeRanges() {
        let top = DiskSpace.writable(size: 0, allocated: 0, offset: Int64.max - 1, length: 1, free: 1 << 20, blockSize: block)
        #expect(top.allowed == 1 && top.reserve == block)
        let toTheEnd = DiskSpace.writable(size: 0, allocated: 0, offset: Int64.max - 4096, length: 4096, free: 1 << 20, blockSize: block)
        #expect(toTheEnd.allowed == 4096 && toTheEnd.reserve <= 2 * block)
        let past = DiskSpace.writable(size: 0, allocated: 0, offset: Int64.max - 10, length: Int64.max, free: 1 << 20, blockSize: block)
        #expect(past.allowed > 0 && past.reserve <= 1 << 20, "the range ends at Int64.max")
        let huge = DiskSpace.writable(size: 0, allocated: 0, offset: 0, length: 1 << 62, free: 8 << 20, blockSize: block)
        #expect(huge.allowed == 8 << 20 && huge.reserve == 8 << 20, "a prefix of what is free")
        let all = DiskSpace.writable(size: 0, allocated: 0, offset: 0, length: Int64.max, free: Int64.max, blockSize: block)
        #expect(all.allowed > 0)
        let largeFile = DiskSpace.writable(size: Int64.max, allocated: 0, offset: Int64.max - 1, length: 1, free: 1 << 20, blockSize: block)
        #expect(largeFile.allowed == 1, "a sparse file of 2^63 - 1 bytes")
    }

    @Test("Q2 fallocate: plain, KEEP_SIZE, ZERO_RANGE, UNSHARE_RANGE and unknown modes reserve their range; PUNCH_HOLE, COLLAPSE_RANGE and INSERT_RANGE do not (issue 25, item 4)")
    func fallocateModes() {
        let keepSize: Int32 = 0x01, punchHole: Int32 = 0x02, collapse: Int32 = 0x08, zeroRange: Int32 = 0x10
        let insert: Int32 = 0x20, unshare: Int32 = 0x40, writeZeroes: Int32 = 0x80
        for mode in [0, keepSize, zeroRange, zeroRange | keepSize, unshare, unshare | keepSize, writeZeroes, 0x400] {
            #expect(DiskSpace.fallocateMayAllocate(mode: mode), "mode \(mode)")
        }
        for mode in [punchHole | keepSize, collapse, insert] {
            #expect(!DiskSpace.fallocateMayAllocate(mode: mode), "mode \(mode)")
        }
    }

    @Test("Q2 P6 the writeback of a shared mapping's pages passes the capacity (nothing written before is lost); write(2) does not, nor anything with the writeback cache")
    func mappedPagesPass() {
        #expect(DiskSpace.writebackPassesCapacity(fromPageCache: true, writebackCache: false))
        #expect(!DiskSpace.writebackPassesCapacity(fromPageCache: false, writebackCache: false))
        #expect(!DiskSpace.writebackPassesCapacity(fromPageCache: true, writebackCache: true))
        #expect(!DiskSpace.writebackPassesCapacity(fromPageCache: false, writebackCache: true))
    }

    @Test("Q2 a rename into another folder may add an entry there; within one folder or an exchange it adds none")
    func renameEntries() {
        #expect(DiskSpace.renameMayAddEntry(intoOtherFolder: true, exchange: false))
        #expect(!DiskSpace.renameMayAddEntry(intoOtherFolder: false, exchange: false))
        #expect(!DiskSpace.renameMayAddEntry(intoOtherFolder: true, exchange: true))
        #expect(!DiskSpace.renameMayAddEntry(intoOtherFolder: false, exchange: true))
    }
}
