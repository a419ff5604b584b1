// FUSE over io_uring (`mount --io-uring`, `-o io_uring`): the mount answers
// as with /dev/fuse (the differential cases, W1; fsx, W1), requests really
// come through the ring (the driver's count at exit), and it falls back to
// /dev/fuse with one line when the kernel does not offer it or io_uring is
// refused.
//
// The kernel offers the ring at INIT only while the fuse module parameter
// enable_uring is Y; these tests set it (and kernel.io_uring_disabled for the
// refusal) and always put back what was there. The suite is serialized: the
// parameter is global.

import Glibc
import Testing

/// A kernel setting under /proc/sys or /sys, set for the length of `body`
/// and always restored.
func withKernelSetting<T>(_ path: String, _ value: String, _ body: () throws -> T) throws -> T {
    let saved = readFileText(path).trimmingCharacters(in: " \n")
    guard !saved.isEmpty else { throw SupportError("cannot read \(path)") }
    try writeKernelSetting(path, value)
    defer { try? writeKernelSetting(path, saved) }
    return try body()
}

func withKernelSetting<T>(_ path: String, _ value: String, _ body: () async throws -> T) async throws -> T {
    let saved = readFileText(path).trimmingCharacters(in: " \n")
    guard !saved.isEmpty else { throw SupportError("cannot read \(path)") }
    try writeKernelSetting(path, value)
    defer { try? writeKernelSetting(path, saved) }
    return try await body()
}

private func writeKernelSetting(_ path: String, _ value: String) throws {
    let fd = open(path, O_WRONLY)
    guard fd >= 0 else { throw SupportError("cannot open \(path): \(posixError(errno))") }
    defer { close(fd) }
    let bytes = Array(value.utf8)
    guard write(fd, bytes, bytes.count) == bytes.count else {
        throw SupportError("cannot write \(value) to \(path): \(posixError(errno))")
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}

enum IoUring {
    static let enableParameter = "/sys/module/fuse/parameters/enable_uring"
    static let disabledSysctl = "/proc/sys/kernel/io_uring_disabled"

    /// The driver's "io_uring:" lines.
    static func lines(_ log: String) -> [String] {
        log.split(separator: "\n").map(String.init).filter { $0.contains("io_uring: ") }
    }

    /// What the driver said at exit: requests that came through the ring.
    static func requestsServed(_ log: String) -> Int? {
        for line in lines(log) {
            guard let range = line.range(of: " requests came through the ring") else { continue }
            let number = line[..<range.lowerBound].split(separator: " ").last.map(String.init) ?? ""
            return Int(number)
        }
        return nil
    }

    /// Unmounts the container and waits for its driver, whose last words
    /// (the ring's count) are then in its log.
    static func unmountAndCollectLog(_ mounted: MountedContainer) -> String {
        let result = fusermountUnmount(mounted.mountpoint)
        #expect(result.status == 0, "fusermount3 -u: \(result.stderr)")
        #expect(mounted.waitForDriverExit(timeout: 30) == .exited(0), "the driver's stderr:\n\(tail(mounted.stderrText()))")
        return mounted.stderrText()
    }
}

/// Mounts one container with --io-uring (enable_uring Y) around all the
/// differential cases, then checks that they came through the ring.
struct RingDifferentialMount: TestTrait, TestScoping {
    func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? self : nil
    }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        let plainRoot = try makeTemporaryDirectory(prefix: "asfs-diff-plain")
        defer { removeTree(plainRoot) }
        try await withKernelSetting(IoUring.enableParameter, "Y") {
            try await withMountedContainer(extraArguments: ["--io-uring"]) { mounted in
                let env = DifferentialEnvironment(plainRoot: plainRoot, mounted: mounted, otherPlainRoot: nil)
                try await DifferentialEnvironment.$current.withValue(env) { try await function() }
                let denials = mounted.denialLines()
                #expect(denials.isEmpty, "denials during the differential cases:\n\(denials.joined(separator: "\n"))")
                let log = IoUring.unmountAndCollectLog(mounted)
                let served = IoUring.requestsServed(log) ?? 0
                // Each case makes dozens of requests; most must have come
                // through the ring, not /dev/fuse.
                #expect(served >= 10 * POSIXCases.all.count,
                        "only \(served) requests came through the ring; the driver said:\n\(IoUring.lines(log).joined(separator: "\n"))")
            }
        }
    }
}

@Suite("FUSE over io_uring", .serialized)
struct IoUringTests {
    @Test("W1: the differential POSIX cases answer the same through the ring",
          RingDifferentialMount(), arguments: POSIXCases.all)
    func differentialCases(_ c: POSIXCase) throws {
        try DifferentialPOSIXTests().matchesPlainFolder(c)
    }

    @Test("W1: fsx through the ring (-o io_uring), the backing file holds the model's bytes")
    func fsxThroughTheRing() throws {
        try withKernelSetting(IoUring.enableParameter, "Y") {
            try withMountedContainer(extraArguments: ["-o", "io_uring"]) { mounted in
                let directory = try mounted.scratch("fsx-ring")
                let report = DataIntegrityFSXTests.runFSX(in: directory, salt: 0x1_0121_6, operations: 2_000)
                if let report {
                    let relative = String(report.subjectPath.dropFirst(mounted.mountpoint.count + 1))
                    #expect(readFileBytes(mounted.backingPath(relative)) == report.finalContents)
                }
                let log = IoUring.unmountAndCollectLog(mounted)
                #expect(IoUring.lines(log).contains { $0.contains("serving requests through") })
                let served = IoUring.requestsServed(log) ?? 0
                #expect(served > 1_000, "only \(served) requests came through the ring:\n\(IoUring.lines(log).joined(separator: "\n"))")
            }
        }
    }

    /// With enable_uring N the kernel does not offer the ring: the mount
    /// works through /dev/fuse and one line says why.
    @Test("--io-uring with enable_uring N: served through /dev/fuse, one line says why")
    func fallbackWhenNotOffered() throws {
        try withKernelSetting(IoUring.enableParameter, "N") {
            try withMountedContainer(extraArguments: ["--io-uring"]) { mounted in
                let file = try mounted.scratch() + "/f"
                try writeFile(file, "through /dev/fuse")
                #expect(readFileText(file) == "through /dev/fuse")
                let log = IoUring.unmountAndCollectLog(mounted)
                let lines = IoUring.lines(log)
                #expect(lines.count == 1, "expected one io_uring line, got:\n\(lines.joined(separator: "\n"))")
                #expect(lines.first?.contains("did not offer FUSE over io_uring") == true)
                #expect(lines.first?.contains("enable_uring") == true)
            }
        }
    }

    /// io_uring_setup refused (kernel.io_uring_disabled=2 here; a seccomp
    /// policy gives the same EPERM): one line, and /dev/fuse.
    @Test("--io-uring where io_uring_setup is refused: served through /dev/fuse, one line says why")
    func fallbackWhenRefused() throws {
        try withKernelSetting(IoUring.enableParameter, "Y") {
            let saved = readFileText(IoUring.disabledSysctl).trimmingCharacters(in: " \n")
            try withKernelSetting(IoUring.disabledSysctl, "2") {
                try withMountedContainer(extraArguments: ["--io-uring"]) { mounted in
                    // The driver makes its rings before it mounts: refused
                    // only for as long as that takes.
                    try writeKernelSetting(IoUring.disabledSysctl, saved)
                    let file = try mounted.scratch() + "/f"
                    try writeFile(file, "refused")
                    #expect(readFileText(file) == "refused")
                    let log = IoUring.unmountAndCollectLog(mounted)
                    let lines = IoUring.lines(log)
                    #expect(lines.count == 1, "expected one io_uring line, got:\n\(lines.joined(separator: "\n"))")
                    #expect(lines.first?.contains("io_uring_setup refused") == true)
                }
            }
        }
    }

    /// Eight processes at once (both CPUs' queues busy, replies committed
    /// while other requests wait), then SIGTERM: every file right, and the
    /// driver stops its rings, unmounts and exits 0.
    @Test("W1: eight writers at once through the ring, then SIGTERM ends the driver cleanly")
    func parallelWritersThenSigterm() throws {
        try withKernelSetting(IoUring.enableParameter, "Y") {
            try withMountedContainer(extraArguments: ["--io-uring"]) { mounted in
                let dir = try mounted.scratch()
                var writers: [pid_t] = []
                for w in 0..<8 {
                    let script = """
                        set -e; d=\(dir)/w\(w); mkdir "$d"
                        i=0; while [ $i -lt 150 ]; do echo "\(w)-$i" > "$d/f$i"; i=$((i+1)); done
                        i=0; while [ $i -lt 150 ]; do [ "$(cat "$d/f$i")" = "\(w)-$i" ]; i=$((i+1)); done
                        ls -l "$d" > /dev/null; mv "$d/f0" "$d/moved"; rm "$d/f1"
                        """
                    try writeFile(mounted.root + "/writer\(w).err", "")
                    writers.append(try spawn(["/bin/sh", "-c", script], stdin: "/dev/null", stdout: "/dev/null",
                                             stderr: mounted.root + "/writer\(w).err"))
                }
                for (w, pid) in writers.enumerated() {
                    #expect(waitForExit(pid, timeout: 120) == .exited(0), "writer \(w): \(readFileText(mounted.root + "/writer\(w).err"))")
                }
                for w in 0..<8 {
                    #expect(readFileText(mounted.backingPath("Documents/" + String(dir.split(separator: "/").last!) + "/w\(w)/f149")) == "\(w)-149\n")
                }
                mounted.signalDriver(SIGTERM)
                #expect(mounted.waitForDriverExit(timeout: 30) == .exited(0), "the driver's stderr:\n\(tail(mounted.stderrText()))")
                #expect(!mounted.isMounted)
                let served = IoUring.requestsServed(mounted.stderrText()) ?? 0
                #expect(served > 8 * 300, "only \(served) requests came through the ring")
            }
        }
    }
}
