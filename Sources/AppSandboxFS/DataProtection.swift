import Locking
import BackingStore
import FuseKit
import Glibc
import SandboxPolicy
import Synchronization
import SystemPackage

/// A mount's device: its state (unlocked, locked, before first unlock), the
/// grace after `lock` during which class A keys survive (P5, P6), and the
/// registry of open handles with the class each was opened with.
///
/// Race-freedom: the state and the grace deadline are one atomic word. An
/// operation reads it once (`keyState()`) and is judged by that reading to
/// its end, as an I/O already under way on a device completes; a change of
/// state is one store, so every operation that starts after `lock`,
/// `unlock` or `reboot` returned sees the new state. Nothing waits on
/// anything: no operation can hang on a state change.
public final class DataProtection: Sendable {
    /// The container's default class (P4), read at mount.
    public let defaultClass: ProtectionClass
    /// Bits 0-1: the state (`Code`); above: for `locked`, the monotonic
    /// time in nanoseconds at which the grace ends (0: no grace).
    private let word: Atomic<UInt64>
    private let handles = Locked<[FileDescriptor: OpenFile]>([:])

    /// What the driver keeps of an open handle: the file, the class that
    /// decides its I/O (updated when the file's class changes), and whether
    /// the kernel does its reads and writes directly (so that page cache
    /// reads through it come from a mapping, never from a read(2)).
    struct OpenFile {
        let key: InodeKey
        var protection: ProtectionClass
        let directIO: Bool
    }

    private enum Code: UInt64 {
        case unlocked = 0, locked = 1, beforeFirstUnlock = 2
    }

    /// A mount started in `state` (`mount --device-state`); a mount started
    /// locked has no grace (P6).
    public init(defaultClass: ProtectionClass, state: DeviceState) {
        self.defaultClass = defaultClass
        word = Atomic(Self.code(state).rawValue)
    }

    // MARK: The state

    /// The state as operations see it now. Read it once per operation.
    @inline(__always)
    public func keyState() -> KeyState {
        let value = word.load(ordering: .acquiring)
        switch Code(rawValue: value & 3) {
        case .unlocked, nil: return .unlocked
        case .beforeFirstUnlock: return .beforeFirstUnlock
        case .locked:
            let graceEnd = value >> 2
            return graceEnd != 0 && Self.monotonicNanoseconds() < graceEnd ? .lockedInGrace : .locked
        }
    }

    public var deviceState: DeviceState { keyState().deviceState }

    /// Why a state change was refused.
    public struct TransitionError: Error, CustomStringConvertible {
        public let description: String
    }

    /// The longest grace `lock` gives (one day): the longest iOS offers
    /// ("Require Passcode" after 4 hours) and then some. `lock --grace`
    /// and the control socket refuse more; `lock(grace:)` cuts more down.
    public static let longestGrace: Double = 86_400

    /// Locks the device. Class A stays usable for `grace` seconds (P6); a
    /// device already locked keeps its grace. Before the first unlock
    /// there is nothing to lock (P7: `unlock` first). Any `grace` is
    /// taken without trapping: NaN, negative or zero is no grace, more
    /// than `longestGrace` (infinity included) is `longestGrace`.
    public func lock(grace: Double) throws(TransitionError) {
        let graceEnd = Self.graceEnd(after: Self.monotonicNanoseconds(), grace: grace)
        let desired = (graceEnd << 2) | Code.locked.rawValue
        var current = word.load(ordering: .acquiring)
        while true {
            switch Code(rawValue: current & 3) {
            case .beforeFirstUnlock:
                throw TransitionError(description: "the device has not been unlocked since it started (before-first-unlock); unlock it first")
            case .locked:
                return
            case .unlocked, nil:
                let (done, now) = word.compareExchange(expected: current, desired: desired, ordering: .acquiringAndReleasing)
                if done { return }
                current = now
            }
        }
    }

    public func unlock() {
        word.store(Code.unlocked.rawValue, ordering: .releasing)
    }

    /// Restarts the device: before first unlock (P7).
    public func reboot() {
        word.store(Code.beforeFirstUnlock.rawValue, ordering: .releasing)
    }

    private static func code(_ state: DeviceState) -> Code {
        switch state {
        case .unlocked: .unlocked
        case .locked: .locked
        case .beforeFirstUnlock: .beforeFirstUnlock
        }
    }

    /// The monotonic time `grace` seconds after `now` (0: no grace), in
    /// the 62 bits the state word has for it. Never traps, whatever
    /// `grace` is (issue 25: `lock --grace 1e12` crashed the driver).
    static func graceEnd(after now: UInt64, grace: Double) -> UInt64 {
        guard grace > 0 else { return 0 }  // NaN too
        let nanoseconds = UInt64(min(grace, longestGrace) * 1e9)
        let (end, overflow) = now.addingReportingOverflow(nanoseconds)
        return overflow || end >= 1 << 62 ? (1 << 62) - 1 : end
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    // MARK: Open handles

    func opened(_ fd: FileDescriptor, key: InodeKey, protection: ProtectionClass, directIO: Bool) {
        handles.withLock { $0[fd] = OpenFile(key: key, protection: protection, directIO: directIO) }
    }

    /// Called before the descriptor is closed, so that its number, once
    /// reused, cannot find this record.
    func closed(_ fd: FileDescriptor) {
        handles.withLock { _ = $0.removeValue(forKey: fd) }
    }

    /// The class deciding I/O through the handle `fd`, and whether it is a direct I/O handle.
    func protection(ofHandle fd: FileDescriptor) -> (protection: ProtectionClass, directIO: Bool)? {
        handles.withLock { table in table[fd].map { ($0.protection, $0.directIO) } }
    }

    /// A file's class changed (setxattr, removexattr): its open handles
    /// follow, so that a file made class A can no longer be used through
    /// plain handles opened before, once the device locks.
    func classChanged(_ key: InodeKey, to protection: ProtectionClass) {
        handles.withLock { table in
            for (fd, file) in table where file.key == key { table[fd]?.protection = protection }
        }
    }
}
