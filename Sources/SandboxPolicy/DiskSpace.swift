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
    public static func writable(size: Int64, allocated: Int64, offset: Int64, length: Int64, free: Int64,
                                blockSize: Int64) -> (allowed: Int64, reserve: Int64) {
        let allocatedEnd = (size + blockSize - 1) / blockSize
        let dense = allocated >= allocatedEnd * blockSize
        let firstBlock = offset / blockSize
        let firstNew = dense ? max(firstBlock, allocatedEnd) : firstBlock
        let endBlock = (offset + length + blockSize - 1) / blockSize
        let needed = max(0, endBlock - firstNew)
        if needed * blockSize <= free { return (length, needed * blockSize) }
        let fitting = max(0, free / blockSize)
        let prefixEnd = (firstNew + fitting) * blockSize
        return (min(length, max(0, prefixEnd - offset)), fitting * blockSize)
    }
}
