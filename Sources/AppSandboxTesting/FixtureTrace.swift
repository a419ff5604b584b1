#if os(Linux)
import Spawning
#else
import Foundation
#endif
import Locking

/// Where a container's life goes, phase by phase: `MountedContainer` marks
/// the end of each phase of its mount and teardown here when
/// `Options.trace` is set (bench/FixtureBench prints them). Not for tests:
/// the phases' names follow the code and may change with it.
@_spi(Bench) public final class FixtureTrace: Sendable {
    private let marks = Locked<[Mark]>([])

    /// A phase that ended at `time` (monotonic seconds).
    public struct Mark: Sendable {
        public var phase: String
        public var time: Double
    }

    public init() {}

    /// The phase `phase` ends now.
    public func mark(_ phase: String) {
        let now = monotonicSeconds()
        marks.withLock { $0.append(Mark(phase: phase, time: now)) }
    }

    /// The marks so far, and forgets them.
    public func take() -> [Mark] {
        marks.withLock { marks in
            defer { marks = [] }
            return marks
        }
    }
}
