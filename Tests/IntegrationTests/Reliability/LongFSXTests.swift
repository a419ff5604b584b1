// Data integrity at length: the fsx-style tester (DataIntegrity/FSXEngine.swift)
// runs 200,000 operations in CI, split over four seeds and four mount
// configurations, each in a fresh mount, one after the other:
//
//   seed salt   mount options                   zone
//   A           (defaults: keep_cache)          Documents
//   B           --no-keep-cache                 Library/Application Support
//   C           --writeback --keep-cache        Documents
//   D           --writeback --no-keep-cache     tmp
//
// Every read through the mount is checked against the model as the run
// goes, and at the end the backing file must hold exactly the model.
//
// Longer by hand (per seed; FSX_SEED as in FSXTests.swift, "random" too):
//   FSX_LONG_OPS=1000000 FSX_SEED=random \
//     swift test --scratch-path .build-rel --skip-build --filter LongFSX

import Glibc
import Testing

extension ReliabilityHeavyTests {
    @Suite("Data integrity at length: fsx, 4 seeds x 50,000 operations")
    struct LongFSX {
        /// Operations per seed: FSX_LONG_OPS, else 50,000 (4 x 50,000 = 200,000).
        static var operationsPerSeed: Int { Reliability.count("FSX_LONG_OPS", default: 50_000) }

        struct Run: Sendable, CustomTestStringConvertible {
            let label: String
            let salt: UInt64
            let options: [String]
            let zone: String
            var testDescription: String { "seed \(label) in \(zone), options [\(options.joined(separator: " "))]" }
        }

        static let runs = [
            Run(label: "A", salt: 0xA11C_E000_0000_0001, options: [], zone: "Documents"),
            Run(label: "B", salt: 0xB0B0_0000_0000_0002, options: ["--no-keep-cache"], zone: "Library/Application Support"),
            Run(label: "C", salt: 0xCAC4_E000_0000_0003, options: ["--writeback", "--keep-cache"], zone: "Documents"),
            Run(label: "D", salt: 0xD00D_0000_0000_0004, options: ["--writeback", "--no-keep-cache"], zone: "tmp"),
        ]

        @Test("W1: fsx through the mount, at length", arguments: runs)
        func fsxAtLength(_ run: Run) throws {
            let operations = Self.operationsPerSeed
            let started = monotonicNow()
            try withMountedContainer(extraArguments: run.options) { container in
                defer { RealToolsTests.expectNoDenials(in: container) }
                let directory = container.path(run.zone) + "/fsx-long-\(run.label)"
                #expect(mkdir(directory, 0o755) == 0, "mkdir \(directory): \(posixError(errno))")
                let seed = DataIntegrityFSXTests.seed ^ run.salt
                let runner = FSXRunner(directory: directory, options: FSXOptions(seed: seed, operations: operations),
                                       name: "fsx-\(run.label)")
                let report: FSXReport
                do {
                    report = try runner.run()
                } catch {
                    Issue.record("""
                        \(error)
                        replay: FSX_SEED=0x\(String(DataIntegrityFSXTests.seed, radix: 16)) FSX_LONG_OPS=\(operations) \
                        swift test --scratch-path .build-rel --skip-build --filter LongFSX
                        """)
                    return
                }
                #expect(report.operations == operations)
                DataIntegrityFSXTests.expectAllOperationsRan(report)
                let relative = String(report.subjectPath.dropFirst(container.mountpoint.count + 1))
                let backing = readFileBytes(container.backingPath(relative))
                #expect(backing?.count == report.finalContents.count, "the backing file's size differs from the model")
                #expect(backing == report.finalContents, "the backing file's bytes differ from the model")
            }
            print("fsx-long: seed \(run.label), \(operations) operations in \(Int(monotonicNow() - started)) s")
        }
    }
}
