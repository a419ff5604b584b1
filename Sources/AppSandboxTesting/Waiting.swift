#if os(Linux)
import Glibc
import Spawning
#else
import Foundation
#endif

/// Waits until `condition` holds, up to `timeout` seconds: a wait on a
/// condition, never a fixed sleep (the test goes on as soon as it holds).
/// Returns whether it held. Checks often at first, then every 20 ms.
@discardableResult
public func waitUntil(timeout: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicSeconds() + timeout
    var pause: UInt32 = 500
    while true {
        if try condition() { return true }
        if monotonicSeconds() >= deadline { return false }
        usleep(pause)
        pause = min(pause * 2, 20_000)
    }
}
