/// How much of a write fits on a disk that is almost full (rule Q2): the
/// decision behind `mount --capacity`, with no I/O. The driver measures the
/// file and the free space; this says how many bytes may be written and
/// how much space to reserve for them.
public enum DiskSpace {
    /// A write of `length` bytes at `offset` into a file of `size` bytes
    /// that has `allocated` bytes of blocks, with `free` bytes left.
    ///
    /// A file allocated up to its end (no holes) needs blocks only for what
    /// lies past its last block, so overwriting it needs nothing; a sparse
    /// file may need a block for every block the write covers. When not all
    /// of it fits, the longest prefix whose blocks fit is allowed (ext4
    /// writes a prefix and returns its length); 0 means ENOSPC.
    ///
    /// Any offset and length a caller can pass are taken (a write at
    /// 2^63 - 2, a fallocate of 2^62 bytes): no sum or product here can
    /// overflow. A range that ends past Int64.max ends at Int64.max, and a
    /// reservation too large to count is one that does not fit.
    public static func writable(size: Int64, allocated: Int64, offset: Int64, length: Int64, free: Int64,
                                blockSize: Int64) -> (allowed: Int64, reserve: Int64) {
        let offset = max(0, offset), length = max(0, length)
        let allocatedEnd = blocks(upTo: max(0, size), blockSize)
        let (allocatedEndBytes, pastInt64) = allocatedEnd.multipliedReportingOverflow(by: blockSize)
        let dense = !pastInt64 && allocated >= allocatedEndBytes
        let firstBlock = offset / blockSize
        let firstNew = dense ? max(firstBlock, allocatedEnd) : firstBlock
        let end = length > Int64.max - offset ? Int64.max : offset + length
        let needed = max(0, blocks(upTo: end, blockSize) - firstNew)
        let (neededBytes, tooMany) = needed.multipliedReportingOverflow(by: blockSize)
        if !tooMany && neededBytes <= free { return (length, neededBytes) }
        let fitting = max(0, free / blockSize)
        let (prefixBlocks, _) = firstNew.addingReportingOverflow(fitting)
        let (prefixEnd, prefixPast) = prefixBlocks.multipliedReportingOverflow(by: blockSize)
        let allowed = prefixPast ? length : min(length, max(0, prefixEnd - offset))
        return (allowed, fitting * blockSize)
    }

    /// Whether a write is served even when it does not fit (Q2: nothing
    /// written before is lost): the writeback of pages an app already
    /// dirtied through a shared mapping. The kernel took those bytes at the
    /// page fault without asking the driver (FUSE has no call at
    /// page_mkwrite), and the app has no error to get, so refusing them
    /// would only lose them: they are written and counted, the disk shows
    /// full, and the next write(2), fallocate or create gets ENOSPC. With
    /// the kernel's writeback cache every write(2) is page cache traffic
    /// too and cannot be told apart, so then nothing passes (`mount`
    /// refuses --capacity with --writeback).
    public static func writebackPassesCapacity(fromPageCache: Bool, writebackCache: Bool) -> Bool {
        fromPageCache && !writebackCache
    }

    /// Whether a rename may add an entry to its destination folder, so that
    /// the space of one (a block of the folder) is reserved first and the
    /// rename refused with ENOSPC when it is not free (Q2; ext4 answers a
    /// rename that needs a new folder block on a full disk so). A move into
    /// another folder may; a rename within one folder reuses the room its
    /// old name frees, and an exchange only swaps two names. A rename over
    /// an existing name needs no new entry either: the driver lets it go
    /// ahead when the reservation does not fit and the name is there.
    public static func renameMayAddEntry(intoOtherFolder: Bool, exchange: Bool) -> Bool {
        intoOtherFolder && !exchange
    }

    /// The blocks that hold `bytes` bytes from the start of a file.
    static func blocks(upTo bytes: Int64, _ blockSize: Int64) -> Int64 {
        bytes / blockSize + (bytes % blockSize == 0 ? 0 : 1)
    }

    /// Whether a fallocate(2) of `mode` may allocate blocks in its range,
    /// so that the range's blocks are reserved first, all or nothing, as
    /// ext4 refuses the whole call with ENOSPC (Q2).
    ///
    /// The modes by the Linux flags' values: plain and KEEP_SIZE allocate;
    /// ZERO_RANGE allocates (unwritten extents, on ext4 as for a plain
    /// call); UNSHARE_RANGE allocates (a copy of shared blocks); so does
    /// WRITE_ZEROES. PUNCH_HOLE and COLLAPSE_RANGE only free, and
    /// INSERT_RANGE adds a hole: those three are measured after the call
    /// like any other change. A flag this list does not know counts as
    /// allocating.
    public static func fallocateMayAllocate(mode: Int32) -> Bool {
        let punchHole: Int32 = 0x02, collapseRange: Int32 = 0x08, insertRange: Int32 = 0x20
        return mode & (punchHole | collapseRange | insertRange) == 0
    }
}
