// The fixture on a platform other than Linux (an iOS team's Mac, say): the
// package builds there, so that the team's tests compile, but a container
// cannot be mounted: `MountedContainer.mount` throws (see `isSupported`)
// before anything below is reached. These stand in for the Linux-only
// MountInfo target and Spawning's spawner, with the same names and shapes
// (Spawning's values, ExitStatus and ProcessOutput, build everywhere).

#if !os(Linux)
import Foundation

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
