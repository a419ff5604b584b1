#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a pthread mutex, with the same `withLock` as
/// `Synchronization.Mutex`. A module of its own: FuseKit's state and the
/// file system above both use it, and neither owns it.
///
/// Why not `Mutex`: on Linux it locks with atomics and futex calls inside
/// the prebuilt Synchronization library, which ThreadSanitizer does not
/// instrument, so under `--sanitize thread` every access it guards is
/// reported as a race. ThreadSanitizer intercepts pthread_mutex_lock and
/// unlock, so with this lock its reports are real ones. Uncontended, a
/// pthread mutex is the same futex fast path.
public final class Locked<Value>: @unchecked Sendable {
    // The mutex must not move once initialized: it lives in its own allocation.
    // Both visible to inlined code only: `withLock` is inlined into its
    // callers (a call per lock showed in the driver's profile otherwise).
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    @inlinable
    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
