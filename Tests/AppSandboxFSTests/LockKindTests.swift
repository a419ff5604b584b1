// Every lock in the driver must be one ThreadSanitizer can see. The CI runs
// the integration tests against a `--sanitize thread` driver; a state
// guarded by `Synchronization.Mutex` (atomics and futex calls inside a
// library TSan does not instrument) is reported there as a data race on
// every contended access, which fails the run. `Locking.Locked` is a
// pthread mutex, which TSan intercepts.

import Foundation
import Testing

@Suite("Sources: locks that ThreadSanitizer can see")
struct LockKindTests {
    @Test("No source file guards state with Synchronization.Mutex (Locking.Locked instead)")
    func noSynchronizationMutex() throws {
        let sources = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let walker = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var swiftFiles = 0
        var offenders: [String] = []
        for case let file as URL in walker where file.pathExtension == "swift" {
            swiftFiles += 1
            let text = try String(contentsOf: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                if code.contains("Mutex<") || code.contains("Mutex(") {
                    offenders.append("\(file.path.dropFirst(sources.path.count + 1)):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(swiftFiles > 50, "found only \(swiftFiles) Swift files under \(sources.path)")
        #expect(offenders.isEmpty, "use Locking.Locked, which ThreadSanitizer sees:\n\(offenders.joined(separator: "\n"))")
    }
}
