// The fsx-style tester (FSXEngine.swift) through the mount, and on a plain
// directory as a check of the model itself.
//
// Longer runs by hand:
//   FSX_OPS=1000000 FSX_SEED=0xdecafbad \
//     swift test --scratch-path .build-tools --filter DataIntegrity
// FSX_OPS sets the operation count of the main runs (default 20000; the
// writeback run does half of it, the Library and tmp runs a fifth); FSX_SEED sets the seed (decimal,
// 0x-hex, or "random", which prints the seed it picked).

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Testing

@Suite("Data integrity: fsx-style randomized file operations")
struct DataIntegrityFSXTests {
    static let defaultSeed: UInt64 = 0x5EED_F5C0_2024_0001
    static let defaultOperations = 20_000

    /// FSX_SEED, or the fixed default so a plain `swift test` is repeatable
    /// (read once: "random" picks one seed for the whole run).
    static let seed: UInt64 = {
        guard let text = environment("FSX_SEED") else {
            return defaultSeed
        }
        if text == "random" {
            let value = UInt64.random(in: 1...UInt64.max)
            print("FSX_SEED=random picked 0x\(String(value, radix: 16))")
            return value
        }
        let parsed = text.lowercased().hasPrefix("0x")
            ? UInt64(text.dropFirst(2), radix: 16)
            : UInt64(text)
        guard let parsed else { fatalError("FSX_SEED must be decimal, 0x-hex or random, not \(text)") }
        return parsed
    }()

    static var operations: Int {
        guard let text = environment("FSX_OPS"), let count = Int(text), count > 0 else {
            return defaultOperations
        }
        return count
    }

    /// Runs the tester with seed FSX_SEED ^ salt and records any mismatch as
    /// an issue with its full report and the command that replays it.
    static func runFSX(in directory: String, salt: UInt64 = 0, operations: Int, name: String = "fsx",
                       test: String = #function) -> FSXReport? {
        let seed = Self.seed ^ salt
        let runner = FSXRunner(directory: directory, options: FSXOptions(seed: seed, operations: operations), name: name)
        do {
            let report = try runner.run()
            let counts = report.counts.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            print("fsx: \(report.operations) operations in \(directory), seed 0x\(String(seed, radix: 16)): \(counts)")
            return report
        } catch {
            let testName = test.prefix { $0 != "(" }
            Issue.record("""
                \(error)
                replay: FSX_SEED=0x\(String(Self.seed, radix: 16)) FSX_OPS=\(Self.operations) \
                swift test --scratch-path .build-tools --filter 'DataIntegrityFSXTests/\(testName)'
                """)
            return nil
        }
    }

    /// Every kind of operation ran at least once (so a run proves something).
    static func expectAllOperationsRan(_ report: FSXReport) {
        for operation in FSXOperation.allCases {
            #expect(report.counts[operation.rawValue, default: 0] > 0, "fsx never ran \(operation.rawValue)")
        }
    }

    // MARK: - The model on a plain directory

    /// The model is right: on the machine's own file system (ext4 here)
    /// the same seed and count pass. If this fails, fix the tester, not the driver.
    @Test("fsx self-check on a plain directory (proves the model)")
    func selfCheckOnPlainDirectory() throws {
        let directory = try makeTemporaryDirectory(prefix: "fsx-selfcheck")
        defer { removeTree(directory) }
        let report = Self.runFSX(in: directory, operations: Self.operations)
        if let report {
            Self.expectAllOperationsRan(report)
            #expect(readFileBytes(report.subjectPath) == report.finalContents)
        }
    }

    /// The checker can fail: a byte changed behind the model's back is found
    /// and reported with the seed, the operation index and the log tail.
    @Test("fsx negative control: a corrupted byte is reported")
    func negativeControlDetectsCorruption() throws {
        let directory = try makeTemporaryDirectory(prefix: "fsx-selfcheck")
        defer { removeTree(directory) }
        var options = FSXOptions(seed: 0xBAD_5EED, operations: 300)
        options.corruptAfterOperation = 300
        let runner = FSXRunner(directory: directory, options: options)
        do {
            _ = try runner.run()
            Issue.record("fsx did not notice a byte changed behind its model")
        } catch let failure as FSXFailure {
            #expect(failure.description.contains("seed 0xbad5eed"))
            #expect(failure.description.contains("operation #300 of 300"))
            #expect(failure.description.contains("negative control"))
            #expect(failure.description.contains("mismatch") || failure.description.contains("returned"))
        }
    }

    // MARK: - Through the mount (W1)

    /// W1: write, read, mmap (shared), truncate, fallocate, copy_file_range,
    /// fsync and sparse files in Documents keep exactly the bytes written,
    /// and the backing file holds them after the run.
    @Test("W1: fsx through the mount in Documents")
    func fsxInDocuments() throws {
        try withMountedContainer { container in
            defer { RealToolsTests.expectNoDenials(in: container) }
            let directory = try container.scratch("fsx")
            let report = Self.runFSX(in: directory, operations: Self.operations)
            guard let report else { return }
            Self.expectAllOperationsRan(report)
            let relative = String(report.subjectPath.dropFirst(container.mountpoint.count + 1))
            let backing = readFileBytes(container.backingPath(relative))
            #expect(backing?.count == report.finalContents.count, "backing file size differs from the model")
            #expect(backing == report.finalContents, "backing file bytes differ from the model")
        }
    }

    /// W1 with the kernel caching more: writeback cache (the kernel merges
    /// writes and sends them later) and kept page cache across opens.
    @Test("W1: fsx through the mount with --writeback --keep-cache")
    func fsxWithWritebackCache() throws {
        try withMountedContainer(extraArguments: ["--writeback", "--keep-cache"]) { container in
            defer { RealToolsTests.expectNoDenials(in: container) }
            let directory = try container.scratch("fsx-writeback")
            guard let report = Self.runFSX(in: directory, salt: 0xCAC4E, operations: max(Self.operations / 2, 1)) else { return }
            let relative = String(report.subjectPath.dropFirst(container.mountpoint.count + 1))
            #expect(readFileBytes(container.backingPath(relative)) == report.finalContents,
                    "backing file differs from the model")
        }
    }

    /// W1, T1: the same in Library and tmp (shorter runs, other seeds).
    @Test("W1/T1: fsx through the mount in Library and tmp")
    func fsxInLibraryAndTmp() throws {
        try withMountedContainer { container in
            defer { RealToolsTests.expectNoDenials(in: container) }
            let operations = max(Self.operations / 5, 1)
            for (index, zone) in [container.library, container.tmp].enumerated() {
                let salt = 0x1111_1111 &* UInt64(index + 1)
                guard let report = Self.runFSX(in: zone, salt: salt, operations: operations, name: "fsx-zone") else { continue }
                let relative = String(report.subjectPath.dropFirst(container.mountpoint.count + 1))
                #expect(readFileBytes(container.backingPath(relative)) == report.finalContents,
                        "backing file of \(report.subjectPath) differs from the model")
                #expect(unlink(report.subjectPath) == 0 && unlink(report.sourcePath) == 0)
            }
        }
    }
}
