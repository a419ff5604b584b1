// The fixture on a platform other than Linux (an iOS team's Mac, say): the
// package builds there, so that the team's tests compile, but a container
// cannot be mounted: `MountedContainer.mount` throws (see `isSupported`)
// before anything below is reached. These stand in for the Linux-only
// Spawning and MountInfo targets, with the same names and shapes.

#if !os(Linux)
import Foundation

/// How a program ended, and what it printed (Spawning's ProcessOutput on Linux).
public struct ProcessResult: Sendable, Equatable {
    /// The exit code, or 128 + the signal that killed it; 127 when it could not start.
    public var status: Int32
    public var standardOutput: String
    public var standardError: String

    public var succeeded: Bool { status == 0 }

    public init(status: Int32, standardOutput: String, standardError: String) {
        self.status = status
        self.standardOutput = standardOutput
        self.standardError = standardError
    }
}

/// How a process ended (Spawning's ExitStatus on Linux).
public enum ExitStatus: Sendable, Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    /// The shell's number for it: the exit code, or 128 + the signal.
    public var code: Int32 {
        switch self {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    }

    public var description: String {
        switch self {
        case .exited(let code): "exit \(code)"
        case .signaled(let signal): "killed by signal \(signal)"
        }
    }
}

private let notLinux = FixtureError("AppSandboxTesting mounts containers on Linux only")

/// No programs are run here: nothing is mounted to run them in.
enum Subprocess {
    static func run(_ arguments: [String], timeout: Double = 120) throws -> ProcessResult { throw notLinux }
    static func onPath(_ name: String) -> String? { nil }
}

/// Nothing is ever mounted here.
enum MountTable {
    static func isContainerMount(_ path: String) -> Bool { false }
    static func isStale(_ path: String) -> Bool { false }
}

/// A driver is never started here (`start` throws).
final class Driver: ContainerServer {
    let pid: Int32 = 0
    static func start(_ arguments: [String], mountpoint: String, log: String) throws -> Driver { throw notLinux }
    var exitStatus: Int32? { nil }
    var hasExited: Bool { true }
    func waitForExit(timeout: Double) -> Int32? { nil }
    func signal(_ number: Int32) {}
    func releaseWatcher() {}
}

func monotonicSeconds() -> Double { ProcessInfo.processInfo.systemUptime }

/// Nothing is laid out, mounted or removed here (`mount` throws first).
enum FixtureSystem {
    static func layOutContainer(_ backing: String, appName: String) throws { throw notLinux }
    static func serveInProcess(backing: String, mountpoint: String, appName: String, root: String,
                               options: MountedContainer.Options) throws -> any ContainerServer { throw notLinux }
    static func unmountAsRoot(_ mountpoint: String) -> ProcessResult? { nil }
    static func removeTree(_ path: String) {}
    static func changeDeviceStateInProcess(_ server: any ContainerServer, verb: String, extra: [String]) throws -> Bool {
        false
    }
}

/// Never waited on here.
struct MountTableChanges {
    func wait(milliseconds: Int32) { usleep(UInt32(milliseconds) * 1000) }
}
#endif
