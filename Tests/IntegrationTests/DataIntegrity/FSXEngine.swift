// FSX: a seeded, randomized file tester in the style of fsx (xfstests'
// ltp/fsx.c), used to prove that data written through the mount is the data
// read back (W1: write, read, mmap, truncate, fallocate, fsync, sparse files).
//
// One file is the subject. Its bytes live in memory as a model; every
// operation is done on the real file and on the model, and every read of the
// real file (pread, shared and private mmap, a second descriptor, full reads
// after reopening and after dropping the page cache with fadvise, so they
// reach the driver) is compared with the model, as is the size after every
// operation. A second file is the source for copy_file_range and has its own
// model.
//
// The operations are chosen by a deterministic generator (SplitMix64) that
// depends only on the seed and on the model, so a seed replays the same run.
// A mismatch stops the run with the seed, the operation index, the first
// differing offset and the tail of the operation log.
//
// Running it longer by hand (both variables are read by FSXTests.swift):
//   FSX_OPS=1000000 FSX_SEED=0xdecafbad \
//     swift test --scratch-path .build-tools --filter DataIntegrity
//   FSX_OPS   number of operations of the main runs (default 20000)
//   FSX_SEED  the seed: decimal, 0x-hex, or "random" (the chosen seed is
//             printed, and it is in every failure message)

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import POSIXHelpers

/// FSXRandom is SplitMix64: tiny, fast, and the same everywhere.
struct FSXRandom {
    private(set) var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in 0..<bound (bound > 0).
    mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(next() % UInt64(bound))
    }

    /// A value in range (closed).
    mutating func inRange(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.upperBound - range.lowerBound + 1)
    }

    /// true with probability 1/n.
    mutating func oneIn(_ n: Int) -> Bool { below(n) == 0 }

    /// Fills the buffer with generator output, eight bytes at a time.
    mutating func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var index = 0
        while index + 8 <= buffer.count {
            buffer.storeBytes(of: next(), toByteOffset: index, as: UInt64.self)
            index += 8
        }
        if index < buffer.count {
            var word = next()
            while index < buffer.count {
                buffer[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
    }
}

struct FSXOptions: Sendable {
    var seed: UInt64
    var operations: Int
    /// The subject file never grows past this.
    var maxFileSize = 256 * 1024
    /// Longest write, read, copy, fallocate or mapping.
    var maxOperationLength = 64 * 1024
    /// Size of the copy_file_range source at the start (it may grow to twice this).
    var sourceSize = 96 * 1024
    /// How many operations the failure message shows.
    var logTailLength = 40
    /// Check that the bytes of the last mapped page past EOF read as zero.
    var checkMappedTail = true
    /// Negative control: after this operation, change one byte of the file
    /// behind the model's back, so a working checker must report a mismatch.
    var corruptAfterOperation: Int? = nil

    init(seed: UInt64, operations: Int) {
        self.seed = seed
        self.operations = operations
    }
}

struct FSXReport: Sendable {
    var operations: Int
    var counts: [String: Int]
    /// The model of the subject file at the end (what the backing file must hold).
    var finalContents: [UInt8]
    var subjectPath: String
    var sourcePath: String
}

struct FSXFailure: Error, CustomStringConvertible {
    var description: String
}

/// The operations, with their weights (out of the sum).
enum FSXOperation: String, CaseIterable, Sendable {
    case write, read, readOtherDescriptor, append
    case mapRead, mapWrite, mapPrivate
    case truncatePath, ftruncate, openTruncate
    case fallocate, fallocateKeepSize, punchHole
    case copyFileRange, rewriteSource
    case fsync, fdatasync, dropCache, closeReopen, statPath

    var weight: Int {
        switch self {
        case .write: 20
        case .read: 16
        case .readOtherDescriptor: 4
        case .append: 3
        case .mapRead: 8
        case .mapWrite: 8
        case .mapPrivate: 3
        case .truncatePath: 4
        case .ftruncate: 4
        case .openTruncate: 1
        case .fallocate: 3
        case .fallocateKeepSize: 3
        case .punchHole: 5
        case .copyFileRange: 8
        case .rewriteSource: 2
        case .fsync: 2
        case .fdatasync: 2
        case .dropCache: 4
        case .closeReopen: 3
        case .statPath: 2
        }
    }
}

/// Linux calls the Glibc module does not import (they need _GNU_SOURCE).
enum FSXLinux {
    static let fallocateKeepSize: Int32 = 0x01 // FALLOC_FL_KEEP_SIZE
    static let fallocatePunchHole: Int32 = 0x02 // FALLOC_FL_PUNCH_HOLE
    static let fadviseDontNeed: Int32 = 4 // POSIX_FADV_DONTNEED

    private typealias FallocateFunction = @convention(c) (Int32, Int32, Int, Int) -> Int32
    private typealias CopyFileRangeFunction = @convention(c) (
        Int32, UnsafeMutablePointer<Int>?, Int32, UnsafeMutablePointer<Int>?, Int, UInt32
    ) -> Int

    private static func symbol(_ name: String) -> UnsafeMutableRawPointer {
        guard let pointer = dlsym(nil, name) else { fatalError("libc has no \(name)") }
        return pointer
    }

    /// fallocate(2): 0 or -1 with errno.
    static func fallocate(_ fd: Int32, _ mode: Int32, _ offset: Int, _ length: Int) -> Int32 {
        let function = unsafeBitCast(symbol("fallocate"), to: FallocateFunction.self)
        return function(fd, mode, offset, length)
    }

    /// copy_file_range(2) with explicit offsets (updated by the call).
    static func copyFileRange(
        _ fdIn: Int32, _ offsetIn: inout Int, _ fdOut: Int32, _ offsetOut: inout Int, _ length: Int
    ) -> Int {
        let function = unsafeBitCast(symbol("copy_file_range"), to: CopyFileRangeFunction.self)
        return function(fdIn, &offsetIn, fdOut, &offsetOut, length, 0)
    }

    static var errnoText: String {
        let code = errno
        return "\(errnoName(code)) (\(errorText(code)))"
    }

    static func errnoName(_ code: Int32) -> String {
        switch code {
        case EPERM: "EPERM"
        case ENOENT: "ENOENT"
        case EIO: "EIO"
        case EBADF: "EBADF"
        case EACCES: "EACCES"
        case EEXIST: "EEXIST"
        case EXDEV: "EXDEV"
        case EINVAL: "EINVAL"
        case EFBIG: "EFBIG"
        case ENOSPC: "ENOSPC"
        case EROFS: "EROFS"
        case ENOSYS: "ENOSYS"
        case EOPNOTSUPP: "EOPNOTSUPP"
        case ENODEV: "ENODEV"
        case ENOTCONN: "ENOTCONN"
        default: "errno \(code)"
        }
    }
}

/// The bytes of a file as the tester believes they are: a fixed buffer and a
/// size. Raw memory and memcpy/memset, so a debug build stays fast.
final class FSXModel {
    let capacity: Int
    private let storage: UnsafeMutableRawBufferPointer
    private(set) var size = 0

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(byteCount: max(capacity, 1), alignment: 16)
    }

    deinit { storage.deallocate() }

    var base: UnsafeMutableRawPointer { storage.baseAddress! }

    subscript(index: Int) -> UInt8 { storage[index] }

    /// Shrinks, or grows with zeros (as truncate does).
    func resize(to newSize: Int) {
        precondition(newSize <= capacity, "model overflow: 0x\(String(newSize, radix: 16))")
        if newSize > size { memset(base + size, 0, newSize - size) }
        size = newSize
    }

    /// Writes `count` bytes at `offset`, growing with zeros first if past EOF.
    func place(_ source: UnsafeRawPointer, count: Int, at offset: Int) {
        if offset + count > size { resize(to: offset + count) }
        memcpy(base + offset, source, count)
    }

    func zero(_ range: Range<Int>) {
        memset(base + range.lowerBound, 0, range.count)
    }

    var array: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            if size > 0 { memcpy(buffer.baseAddress!, base, size) }
            count = size
        }
    }
}

/// One run: a subject file and a source file in `directory`.
final class FSXRunner {
    let directory: String
    let options: FSXOptions
    let subjectPath: String
    let sourcePath: String

    private var random: FSXRandom
    private let model: FSXModel
    private let sourceModel: FSXModel
    private var fd: Int32 = -1
    private var sourceFD: Int32 = -1
    /// Random bytes about to be written.
    private let scratch: UnsafeMutableRawBufferPointer
    /// Bytes just read.
    private let readBuffer: UnsafeMutableRawBufferPointer
    private var log: [String] = []
    private var logStart = 0
    private var operationIndex = 0
    private var counts: [String: Int] = [:]
    private let pageSize: Int
    private let weightTotal: Int

    init(directory: String, options: FSXOptions, name: String = "fsx") {
        self.directory = directory
        self.options = options
        self.subjectPath = directory + "/" + name + "-subject.bin"
        self.sourcePath = directory + "/" + name + "-source.bin"
        self.random = FSXRandom(seed: options.seed)
        self.model = FSXModel(capacity: options.maxFileSize)
        self.sourceModel = FSXModel(capacity: 2 * options.sourceSize)
        self.scratch = .allocate(byteCount: max(options.maxOperationLength, options.sourceSize), alignment: 16)
        let readCapacity = max(options.maxFileSize, 2 * options.sourceSize) + options.maxOperationLength + 8192
        self.readBuffer = .allocate(byteCount: readCapacity, alignment: 16)
        self.pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        self.weightTotal = FSXOperation.allCases.reduce(0) { $0 + $1.weight }
    }

    deinit {
        if fd >= 0 { close(fd) }
        if sourceFD >= 0 { close(sourceFD) }
        scratch.deallocate()
        readBuffer.deallocate()
    }

    func run() throws -> FSXReport {
        try setUp()
        while operationIndex < options.operations {
            operationIndex += 1
            let operation = pickOperation()
            try perform(operation)
            try checkSize(after: operation)
            if operationIndex == options.corruptAfterOperation { try corruptOneByte() }
        }
        try verifyWholeFile(fd, model, what: "final full read of the subject")
        try verifyWholeFile(sourceFD, sourceModel, what: "final full read of the source")
        if fsync(fd) != 0 { try fail("final fsync: \(FSXLinux.errnoText)") }
        if close(fd) != 0 { fd = -1; try fail("final close: \(FSXLinux.errnoText)") }
        fd = -1
        close(sourceFD)
        sourceFD = -1
        return FSXReport(operations: operationIndex, counts: counts, finalContents: model.array,
                         subjectPath: subjectPath, sourcePath: sourcePath)
    }

    // MARK: - Setup

    private func setUp() throws {
        unlink(subjectPath)
        unlink(sourcePath)
        fd = open(subjectPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 { try fail("create \(subjectPath): \(FSXLinux.errnoText)") }
        sourceFD = open(sourcePath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if sourceFD < 0 { try fail("create \(sourcePath): \(FSXLinux.errnoText)") }
        // The source starts full of random data, so copies carry something.
        try writeRandom(to: sourceFD, model: sourceModel, offset: 0, length: options.sourceSize,
                        what: "initial fill of the source")
        record("setup: source filled with 0x\(hex(options.sourceSize)) bytes")
    }

    private func pickOperation() -> FSXOperation {
        var pick = random.below(weightTotal)
        for operation in FSXOperation.allCases {
            if pick < operation.weight { return operation }
            pick -= operation.weight
        }
        return .read
    }

    /// A length for an operation starting at `offset` that ends at or below `limit`.
    private func length(from offset: Int, limit: Int) -> Int {
        min(random.inRange(1...options.maxOperationLength), limit - offset)
    }

    // MARK: - Operations

    private func perform(_ operation: FSXOperation) throws {
        counts[operation.rawValue, default: 0] += 1
        let size = model.size
        let maxSize = options.maxFileSize
        switch operation {
        case .write:
            // Anywhere below the limit: past EOF makes a hole.
            let offset = random.below(maxSize)
            let length = length(from: offset, limit: maxSize)
            record("write off=0x\(hex(offset)) len=0x\(hex(length)) size 0x\(hex(size))->0x\(hex(max(size, offset + length)))")
            try writeRandom(to: fd, model: model, offset: offset, length: length, what: "pwrite")

        case .read:
            let (offset, length) = readRange()
            record("read off=0x\(hex(offset)) len=0x\(hex(length)) size 0x\(hex(size))")
            try checkRead(fd, model, offset: offset, length: length, what: "pread")

        case .readOtherDescriptor:
            let (offset, length) = readRange()
            record("read(2nd fd) off=0x\(hex(offset)) len=0x\(hex(length)) size 0x\(hex(size))")
            let other = open(subjectPath, O_RDONLY | O_CLOEXEC)
            if other < 0 { try fail("open O_RDONLY for a second descriptor: \(FSXLinux.errnoText)") }
            defer { close(other) }
            try checkRead(other, model, offset: offset, length: length, what: "pread on a second descriptor")

        case .append:
            guard size < maxSize else { record("append skipped (file full)"); return }
            let length = length(from: size, limit: maxSize)
            record("append len=0x\(hex(length)) size 0x\(hex(size))->0x\(hex(size + length))")
            let appender = open(subjectPath, O_WRONLY | O_APPEND | O_CLOEXEC)
            if appender < 0 { try fail("open O_APPEND: \(FSXLinux.errnoText)") }
            defer { close(appender) }
            random.fill(UnsafeMutableRawBufferPointer(rebasing: scratch[0..<length]))
            let written = write(appender, scratch.baseAddress, length)
            if written != length { try fail("O_APPEND write of 0x\(hex(length)) returned \(written): \(FSXLinux.errnoText)") }
            model.place(scratch.baseAddress!, count: length, at: size)

        case .mapRead:
            guard size > 0 else { record("mapread skipped (empty file)"); return }
            let offset = random.below(size)
            let length = length(from: offset, limit: size)
            record("mapread off=0x\(hex(offset)) len=0x\(hex(length)) size 0x\(hex(size))")
            try mapRead(offset: offset, length: length)

        case .mapWrite:
            let offset = random.below(maxSize)
            let length = length(from: offset, limit: maxSize)
            record("mapwrite off=0x\(hex(offset)) len=0x\(hex(length)) size 0x\(hex(size))->0x\(hex(max(size, offset + length)))")
            try mapWrite(offset: offset, length: length)

        case .mapPrivate:
            guard size > 0 else { record("mapprivate skipped (empty file)"); return }
            let offset = random.below(size)
            let length = length(from: offset, limit: size)
            record("mapprivate (read, scribble, check the file kept its bytes) off=0x\(hex(offset)) len=0x\(hex(length)) size 0x\(hex(size))")
            try mapPrivate(offset: offset, length: length)

        case .openTruncate:
            record("open O_TRUNC 0x\(hex(size))->0")
            let truncating = open(subjectPath, O_WRONLY | O_TRUNC | O_CLOEXEC)
            if truncating < 0 { try fail("open O_WRONLY|O_TRUNC: \(FSXLinux.errnoText)") }
            close(truncating)
            model.resize(to: 0)

        case .truncatePath, .ftruncate:
            let newSize = truncateSize()
            let viaPath = operation == .truncatePath
            record("\(viaPath ? "truncate" : "ftruncate") 0x\(hex(size))->0x\(hex(newSize))")
            let result = viaPath ? truncate(subjectPath, off_t(newSize)) : Glibc.ftruncate(fd, off_t(newSize))
            if result != 0 { try fail("\(viaPath ? "truncate" : "ftruncate") to 0x\(hex(newSize)): \(FSXLinux.errnoText)") }
            model.resize(to: newSize)

        case .fallocate, .fallocateKeepSize, .punchHole:
            let offset = random.below(maxSize)
            let length = length(from: offset, limit: maxSize)
            let mode: Int32
            let name: String
            switch operation {
            case .fallocate: mode = 0; name = "fallocate(0)"
            case .fallocateKeepSize: mode = FSXLinux.fallocateKeepSize; name = "fallocate(KEEP_SIZE)"
            default: mode = FSXLinux.fallocatePunchHole | FSXLinux.fallocateKeepSize; name = "fallocate(PUNCH_HOLE|KEEP_SIZE)"
            }
            let newSize = mode == 0 ? max(size, offset + length) : size
            record("\(name) off=0x\(hex(offset)) len=0x\(hex(length)) size 0x\(hex(size))->0x\(hex(newSize))")
            if FSXLinux.fallocate(fd, mode, offset, length) != 0 {
                try fail("\(name) off=0x\(hex(offset)) len=0x\(hex(length)): \(FSXLinux.errnoText)")
            }
            if mode == 0 {
                model.resize(to: newSize)
            } else if operation == .punchHole, offset < size {
                model.zero(offset..<min(offset + length, size))
            }

        case .copyFileRange:
            let sourceSize = sourceModel.size
            let sourceOffset = random.below(sourceSize)
            let offset = random.below(maxSize)
            let length = length(from: offset, limit: maxSize)
            let available = min(length, sourceSize - sourceOffset)
            record("copy_file_range src=0x\(hex(sourceOffset)) dst=0x\(hex(offset)) len=0x\(hex(length)) (copies 0x\(hex(available))) size 0x\(hex(size))->0x\(hex(max(size, offset + available)))")
            var inOffset = sourceOffset
            var outOffset = offset
            var copied = 0
            while copied < length {
                let result = FSXLinux.copyFileRange(sourceFD, &inOffset, fd, &outOffset, length - copied)
                if result < 0 {
                    if errno == EINTR { continue }
                    try fail("copy_file_range src=0x\(hex(sourceOffset)) dst=0x\(hex(offset)) len=0x\(hex(length)) after 0x\(hex(copied)) bytes: \(FSXLinux.errnoText)")
                }
                if result == 0 { break }
                copied += result
            }
            if copied != available {
                try fail("copy_file_range copied 0x\(hex(copied)) bytes, the source has 0x\(hex(available)) there")
            }
            if inOffset != sourceOffset + copied || outOffset != offset + copied {
                try fail("copy_file_range left offsets at in=0x\(hex(inOffset)) out=0x\(hex(outOffset)), expected 0x\(hex(sourceOffset + copied)) and 0x\(hex(offset + copied))")
            }
            if copied > 0 {
                model.place(sourceModel.base + sourceOffset, count: copied, at: offset)
            }

        case .rewriteSource:
            let limit = sourceModel.capacity
            let offset = random.below(limit)
            let length = min(length(from: offset, limit: limit), scratch.count)
            record("source write off=0x\(hex(offset)) len=0x\(hex(length)) source size 0x\(hex(sourceModel.size))")
            try writeRandom(to: sourceFD, model: sourceModel, offset: offset, length: length, what: "pwrite to the source")
            try verifyWholeFile(sourceFD, sourceModel, what: "full read of the source after rewriting it")

        case .fsync:
            record("fsync")
            if Glibc.fsync(fd) != 0 { try fail("fsync: \(FSXLinux.errnoText)") }

        case .fdatasync:
            record("fdatasync")
            if Glibc.fdatasync(fd) != 0 { try fail("fdatasync: \(FSXLinux.errnoText)") }

        case .dropCache:
            // Written back, then dropped from the page cache: the next reads
            // come from the driver, not from the kernel's copy.
            record("fsync + fadvise(DONTNEED): drop the page cache, then full read")
            if Glibc.fsync(fd) != 0 { try fail("fsync before dropping the cache: \(FSXLinux.errnoText)") }
            let advised = posix_fadvise(fd, 0, 0, FSXLinux.fadviseDontNeed)
            if advised != 0 { try fail("posix_fadvise(DONTNEED): \(FSXLinux.errnoName(advised))") }
            try verifyWholeFile(fd, model, what: "full read after dropping the page cache")

        case .closeReopen:
            record("close and reopen, then full read")
            if close(fd) != 0 { fd = -1; try fail("close: \(FSXLinux.errnoText)") }
            fd = open(subjectPath, O_RDWR | O_CLOEXEC)
            if fd < 0 { try fail("reopen O_RDWR: \(FSXLinux.errnoText)") }
            try verifyWholeFile(fd, model, what: "full read after reopening")

        case .statPath:
            record("stat(path)")
            var info = stat()
            if stat(subjectPath, &info) != 0 { try fail("stat: \(FSXLinux.errnoText)") }
            if Int(info.st_size) != size {
                try fail("stat(path) size 0x\(hex(Int(info.st_size))), model size 0x\(hex(size))")
            }
            if info.st_mode & S_IFMT != S_IFREG { try fail("stat(path) mode \(String(info.st_mode, radix: 8)) is not a regular file") }
        }
    }

    /// Mostly inside the file, sometimes straddling or past EOF.
    private func readRange() -> (Int, Int) {
        let size = model.size
        let offset = (size > 0 && !random.oneIn(8)) ? random.below(size) : random.below(options.maxFileSize)
        let length = random.inRange(1...options.maxOperationLength)
        return (offset, length)
    }

    /// Mostly small changes, sometimes to zero or to the limit.
    private func truncateSize() -> Int {
        switch random.below(10) {
        case 0: return 0
        case 1: return options.maxFileSize
        case 2...5: return random.inRange(0...options.maxFileSize)
        default:
            let delta = random.inRange(-options.maxOperationLength...options.maxOperationLength)
            return min(max(model.size + delta, 0), options.maxFileSize)
        }
    }

    private func mapRead(offset: Int, length: Int) throws {
        let pageStart = offset & ~(pageSize - 1)
        let end = offset + length
        // Up to the end of the page holding `end`: never past the page holding EOF.
        let mapEnd = (end + pageSize - 1) & ~(pageSize - 1)
        let mapLength = mapEnd - pageStart
        guard let base = mmap(nil, mapLength, PROT_READ, MAP_SHARED, fd, off_t(pageStart)),
              base != UnsafeMutableRawPointer(bitPattern: -1)
        else { try fail("mmap PROT_READ MAP_SHARED off=0x\(hex(pageStart)) len=0x\(hex(mapLength)): \(FSXLinux.errnoText)") }
        defer { munmap(base, mapLength) }
        try compare(UnsafeRawPointer(base + (offset - pageStart)), count: length, offset: offset,
                    expected: model, what: "mmap read")
        if options.checkMappedTail, end == model.size, end < mapEnd {
            let tail = UnsafeRawBufferPointer(start: base + (end - pageStart), count: mapEnd - end)
            if let bad = tail.firstIndex(where: { $0 != 0 }) {
                try fail("mmap read: byte at 0x\(hex(end + bad)), past EOF 0x\(hex(end)) in the last page, is 0x\(hex(Int(tail[bad]))) instead of 0")
            }
        }
    }

    /// A private mapping reads the file's bytes; writes to it stay private.
    private func mapPrivate(offset: Int, length: Int) throws {
        let pageStart = offset & ~(pageSize - 1)
        let mapLength = offset + length - pageStart
        guard let base = mmap(nil, mapLength, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, off_t(pageStart)),
              base != UnsafeMutableRawPointer(bitPattern: -1)
        else { try fail("mmap MAP_PRIVATE off=0x\(hex(pageStart)) len=0x\(hex(mapLength)): \(FSXLinux.errnoText)") }
        defer { munmap(base, mapLength) }
        try compare(UnsafeRawPointer(base + (offset - pageStart)), count: length, offset: offset,
                    expected: model, what: "MAP_PRIVATE read")
        random.fill(UnsafeMutableRawBufferPointer(rebasing: scratch[0..<length]))
        memcpy(base + (offset - pageStart), scratch.baseAddress!, length)
        try checkRead(fd, model, offset: offset, length: length, what: "pread after writing to a MAP_PRIVATE mapping")
    }

    private func mapWrite(offset: Int, length: Int) throws {
        let end = offset + length
        if end > model.size {
            // A mapping cannot grow the file: extend it first, as fsx does.
            if Glibc.ftruncate(fd, off_t(end)) != 0 { try fail("ftruncate to 0x\(hex(end)) before mapwrite: \(FSXLinux.errnoText)") }
            model.resize(to: end)
        }
        let pageStart = offset & ~(pageSize - 1)
        let mapLength = end - pageStart
        guard let base = mmap(nil, mapLength, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off_t(pageStart)),
              base != UnsafeMutableRawPointer(bitPattern: -1)
        else { try fail("mmap PROT_WRITE MAP_SHARED off=0x\(hex(pageStart)) len=0x\(hex(mapLength)): \(FSXLinux.errnoText)") }
        random.fill(UnsafeMutableRawBufferPointer(rebasing: scratch[0..<length]))
        memcpy(base + (offset - pageStart), scratch.baseAddress!, length)
        let synced = msync(base, mapLength, MS_SYNC)
        let syncError = FSXLinux.errnoText
        munmap(base, mapLength)
        if synced != 0 { try fail("msync MS_SYNC after mapwrite: \(syncError)") }
        model.place(scratch.baseAddress!, count: length, at: offset)
    }

    // MARK: - Helpers

    private func writeRandom(to descriptor: Int32, model target: FSXModel, offset: Int, length: Int, what: String) throws {
        random.fill(UnsafeMutableRawBufferPointer(rebasing: scratch[0..<length]))
        var done = 0
        while done < length {
            let result = pwrite(descriptor, scratch.baseAddress! + done, length - done, off_t(offset + done))
            if result < 0 {
                if errno == EINTR { continue }
                try fail("\(what) off=0x\(hex(offset)) len=0x\(hex(length)) after 0x\(hex(done)) bytes: \(FSXLinux.errnoText)")
            }
            if result == 0 { try fail("\(what) off=0x\(hex(offset + done)) wrote nothing") }
            done += result
        }
        target.place(scratch.baseAddress!, count: length, at: offset)
    }

    /// Reads up to `length` bytes at `offset` into readBuffer, until EOF; returns the count.
    private func readFully(_ descriptor: Int32, offset: Int, length: Int, what: String) throws -> Int {
        precondition(length <= readBuffer.count)
        var done = 0
        while done < length {
            let result = pread(descriptor, readBuffer.baseAddress! + done, length - done, off_t(offset + done))
            if result < 0 {
                if errno == EINTR { continue }
                try fail("\(what) off=0x\(hex(offset)) len=0x\(hex(length)): \(FSXLinux.errnoText)")
            }
            if result == 0 { break }
            done += result
        }
        return done
    }

    private func checkRead(_ descriptor: Int32, _ expected: FSXModel, offset: Int, length: Int, what: String) throws {
        let count = try readFully(descriptor, offset: offset, length: length, what: what)
        try compare(UnsafeRawPointer(readBuffer.baseAddress!), count: count, offset: offset, expected: expected, what: what)
        // A read that stopped short of EOF would be caught by compare; one that
        // should have returned more is caught here.
        let wanted = max(0, min(length, expected.size - offset))
        if count != wanted {
            try fail("\(what) off=0x\(hex(offset)) len=0x\(hex(length)) returned 0x\(hex(count)) bytes, expected 0x\(hex(wanted)) (EOF at 0x\(hex(expected.size)))")
        }
    }

    private func verifyWholeFile(_ descriptor: Int32, _ expected: FSXModel, what: String) throws {
        try checkRead(descriptor, expected, offset: 0, length: expected.size + 4096, what: what)
    }

    /// `count` bytes read at `offset` must equal the model there; bytes read
    /// past the model's EOF are a mismatch too.
    private func compare(_ actual: UnsafeRawPointer, count: Int, offset: Int, expected: FSXModel, what: String) throws {
        let expectedCount = max(0, min(count, expected.size - offset))
        if count > expectedCount {
            try fail("\(what): read at 0x\(hex(offset)) returned 0x\(hex(count)) bytes, past EOF at 0x\(hex(expected.size))")
        }
        guard expectedCount > 0, memcmp(actual, expected.base + offset, expectedCount) != 0 else { return }
        let got = UnsafeRawBufferPointer(start: actual, count: expectedCount)
        var bad = 0
        while got[bad] == expected[offset + bad] { bad += 1 }
        var badCount = 0
        for index in bad..<expectedCount where got[index] != expected[offset + index] { badCount += 1 }
        let window = bad..<min(bad + 16, expectedCount)
        let wantText = window.map { hex2(expected[offset + $0]) }.joined(separator: " ")
        let gotText = window.map { hex2(got[$0]) }.joined(separator: " ")
        let zeros = window.allSatisfy { got[$0] == 0 } ? " (zeros: a lost write, or a hole that should hold data?)" : ""
        try fail("""
            \(what): data mismatch at file offset 0x\(hex(offset + bad)) \
            (read at 0x\(hex(offset)), 0x\(hex(count)) bytes, \(badCount) differ, file size 0x\(hex(expected.size)))
              expected: \(wantText)
              actual:   \(gotText)\(zeros)
            """)
    }

    private func checkSize(after operation: FSXOperation) throws {
        var info = stat()
        if fstat(fd, &info) != 0 { try fail("fstat after \(operation.rawValue): \(FSXLinux.errnoText)") }
        if Int(info.st_size) != model.size {
            try fail("fstat after \(operation.rawValue): size 0x\(hex(Int(info.st_size))), model size 0x\(hex(model.size))")
        }
        if operation == .rewriteSource || operation == .copyFileRange {
            if fstat(sourceFD, &info) != 0 { try fail("fstat of the source: \(FSXLinux.errnoText)") }
            if Int(info.st_size) != sourceModel.size {
                try fail("fstat of the source after \(operation.rawValue): size 0x\(hex(Int(info.st_size))), model size 0x\(hex(sourceModel.size))")
            }
        }
    }

    /// Negative control: one byte changes in the file, not in the model.
    private func corruptOneByte() throws {
        guard model.size > 0 else {
            // Nothing to corrupt: grow the file behind the model's back instead.
            if Glibc.ftruncate(fd, 1) != 0 { try fail("corruption: \(FSXLinux.errnoText)") }
            record("(negative control: file grown to 1 byte behind the model)")
            return
        }
        let offset = model.size / 2
        var byte = model[offset] ^ 0x5A
        let other = open(subjectPath, O_WRONLY | O_CLOEXEC)
        defer { close(other) }
        if other < 0 || pwrite(other, &byte, 1, off_t(offset)) != 1 { try fail("corruption: \(FSXLinux.errnoText)") }
        record("(negative control: byte at 0x\(hex(offset)) changed behind the model)")
    }

    private func record(_ line: String) {
        let entry = "#\(operationIndex) \(line)"
        if log.count < options.logTailLength {
            log.append(entry)
        } else {
            log[logStart] = entry
            logStart = (logStart + 1) % log.count
        }
    }

    private func fail(_ what: String) throws -> Never {
        let tail = Array(log[logStart...] + log[..<logStart])
        throw FSXFailure(description: """
            FSX failure at operation #\(operationIndex) of \(options.operations), seed 0x\(String(options.seed, radix: 16))
            file: \(subjectPath)
            \(what)
            last \(tail.count) operations:
            \(tail.joined(separator: "\n"))
            """)
    }
}

private func hex(_ value: Int) -> String { String(value, radix: 16) }
private func hex2(_ byte: UInt8) -> String { byte < 16 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }
