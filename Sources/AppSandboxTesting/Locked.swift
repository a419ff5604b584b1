import Foundation

/// A value behind a lock. Not Synchronization's `Mutex`, which needs macOS
/// 15: the fixture builds for whatever Mac an iOS team's package supports.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
