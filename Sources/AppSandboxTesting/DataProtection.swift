import Foundation
import POSIXHelpers
@_exported import enum SandboxPolicy.DeviceState
@_exported import enum SandboxPolicy.ProtectionClass
#if canImport(Glibc)
import Glibc
#endif

// Data protection for tests (contract P1-P9): set a file's class, lock and
// unlock the device around the container, as a test of code that must
// cope with a locked phone needs.
//
//     try container.setProtection(.complete, of: container.documents + "/secrets.db")
//     try container.lock(grace: 0)
//     #expect(throws: (any Error).self) { try Data(contentsOf: secretsURL) }   // EPERM
//     try container.unlock()
//
// `ProtectionClass` (`.complete`, `.completeUnlessOpen`,
// `.completeUntilFirstUserAuthentication`, `.none`) and `DeviceState`
// (`.unlocked`, `.locked`, `.beforeFirstUnlock`) are SandboxPolicy's, the
// one definition of each, re-exported here: a client that imports both
// modules sees one type.

/// One `DataProtection:` line of the denial log:
/// `DataProtection: cat(4242) deny(1) file-read-data /…/Documents/a.txt NSFileProtectionComplete locked`.
public struct ProtectionDenial: Sendable, Hashable, CustomStringConvertible {
    public var process: String
    public var pid: Int32
    public var operation: String
    public var path: String
    public var protection: ProtectionClass
    public var state: DeviceState
    public var line: String
    public var description: String { line }

    public init?(line: String) {
        guard let header = Denial.header(of: line, prefix: "DataProtection: ") else { return nil }
        // "<operation> <path> <class> <state>": the path may hold spaces, the rest not.
        let rest = header.rest
        guard let first = rest.firstIndex(of: " "), let last = rest.lastIndex(of: " ") else { return nil }
        let beforeState = rest[..<last]
        guard let classSpace = beforeState.lastIndex(of: " "), classSpace > first,
              let protection = ProtectionClass(rawValue: String(beforeState[beforeState.index(after: classSpace)...])),
              let state = DeviceState(rawValue: String(rest[rest.index(after: last)...])) else { return nil }
        self.process = header.process
        self.pid = header.pid
        self.operation = String(rest[..<first])
        self.path = Denial.unescape(String(rest[rest.index(after: first)..<classSpace]))
        self.protection = protection
        self.state = state
        self.line = line
    }
}

extension MountedContainer {
    /// Sets the class of an entry of the container (a path through the
    /// mount), as `FileManager.setAttributes([.protectionKey: ...])` does on iOS.
    public func setProtection(_ protection: ProtectionClass, of path: String) throws {
        let value = Array(protection.rawValue.utf8)
        guard XattrCalls.setxattr(path, "NSFileProtectionKey", value, value.count, 0) == 0 else {
            throw FixtureError("setting the class of \(path) to \(protection.rawValue): \(errorText(errno))")
        }
    }

    /// The class of an entry of the container.
    public func protection(of path: String) throws -> ProtectionClass {
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = XattrCalls.getxattr(path, "NSFileProtectionKey", &buffer, buffer.count)
        guard count >= 0, let protection = ProtectionClass(rawValue: String(decoding: buffer[0..<count], as: UTF8.self)) else {
            throw FixtureError("reading the class of \(path): \(count < 0 ? errorText(errno) : "unknown value")")
        }
        return protection
    }

    /// Locks the device: class B files cannot be opened from now on, class A
    /// files after `grace` seconds (their open descriptors then fail too).
    public func lock(grace: Double = 10) throws { try changeDeviceState("lock", ["--grace", String(grace)]) }

    /// Unlocks the device: every class is usable again.
    public func unlock() throws { try changeDeviceState("unlock") }

    /// Restarts the device: before first unlock, only class D opens.
    public func reboot() throws { try changeDeviceState("reboot") }

    /// The data protection refusals logged since the mount (or `clearDenials()`).
    public func protectionDenials() -> [ProtectionDenial] {
        (readText(denialLogPath) ?? "").split(separator: "\n").compactMap { ProtectionDenial(line: String($0)) }
    }

    /// The driver publishes its control socket just after the mount
    /// appears, which is what `mount` waits for: until it is there, the verb
    /// answers "not a mounted container" or "cannot reach its driver".
    private func changeDeviceState(_ verb: String, _ extra: [String] = []) throws {
        if try FixtureSystem.changeDeviceStateInProcess(driver, verb: verb, extra: extra) { return }
        let deadline = Date().addingTimeInterval(30)
        var result = try Subprocess.run([appsandboxfs, verb, mountpoint] + extra)
        while !result.succeeded, Date() < deadline,
              result.standardError.contains("not a mounted container") || result.standardError.contains("cannot reach its driver") {
            usleep(20_000)
            result = try Subprocess.run([appsandboxfs, verb, mountpoint] + extra)
        }
        guard result.succeeded else {
            throw FixtureError("appsandboxfs \(verb) \(mountpoint) failed (\(result.status)): \(result.standardError)")
        }
    }
}

#if os(Linux)
/// The xattr calls, which Swift's Glibc module does not show.
private enum XattrCalls {
    typealias CPath = UnsafePointer<CChar>
    static let setxattr = libc("setxattr", as: (@convention(c) (CPath, CPath, UnsafeRawPointer?, Int, Int32) -> Int32).self)
    static let getxattr = libc("getxattr", as: (@convention(c) (CPath, CPath, UnsafeMutableRawPointer?, Int) -> Int).self)

    private static func libc<T>(_ name: String, as type: T.Type) -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("the C library has no \(name)")
        }
        return unsafeBitCast(symbol, to: type)
    }
}
#else
/// Elsewhere nothing is ever mounted (`MountedContainer.mount` throws), so
/// these are never reached; they fail as Linux's would on a path that is not
/// in a container, and do not reach for Linux's C signatures (Darwin's
/// getxattr and setxattr take a position and options).
private enum XattrCalls {
    static func setxattr(_ path: String, _ name: String, _ value: [UInt8], _ size: Int, _ flags: Int32) -> Int32 {
        errno = ENOTSUP
        return -1
    }
    static func getxattr(_ path: String, _ name: String, _ value: UnsafeMutableRawPointer?, _ size: Int) -> Int {
        errno = ENOTSUP
        return -1
    }
}
#endif
