// The last guarantee: when the test process itself dies (a crash, a
// fatalError, SIGKILL) and no teardown code can run, its containers are
// still unmounted: the fixture's watcher sees the test process's end of a
// pipe close and unmounts, and the driver ends as on any unmount (tmp
// emptied, exit 0). The test runs this very test binary again, as a child,
// on an XCTest case that mounts and then kills itself.

@testable import AppSandboxTesting
import Foundation
import MountInfo
import POSIXHelpers
import Testing
import XCTest

@Suite("AppSandboxTesting guarantees: a test process that dies")
struct CrashSafetyTests {
    @Test("A test process killed with SIGKILL leaves no mount behind, and tmp emptied")
    func killedTestProcess() throws {
        let report = try TemporaryFile()
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let child = try Subprocess.run(["env", "APPSANDBOXFS_CRASH_REPORT=\(report.path)", testBinary,
                                        "AppSandboxTestingExamples.CrashingTestProcess/testMountThenDie"], timeout: 120)
        #expect(child.status == 128 + SIGKILL, "\(child.standardOutput)\(child.standardError)")
        let lines = report.text().split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "the child reported \(lines): \(child.standardError)")
        let (mountpoint, pid, root) = (lines[0], Int32(lines[1]) ?? 0, lines[2])
        defer {
            if MountTable.isContainerMount(mountpoint) { _ = try? Subprocess.run(["fusermount3", "-u", "-z", mountpoint]) }
            _ = try? Subprocess.run(["rm", "-rf", "--one-file-system", "--", root])
        }

        #expect(waitUntil(timeout: 15) { !MountTable.isContainerMount(mountpoint) },
                "the container of the dead test process is still mounted")
        #expect(waitUntil(timeout: 15) { Self.ended(pid) }, "its driver \(pid) still runs")
        #expect(Self.exitCode(pid) == nil || Self.exitCode(pid) == 0, "the driver did not end cleanly")
        #expect(access(root + "/container/tmp/scratch", F_OK) != 0,
                "tmp was not emptied (T2); /proc/\(pid)/stat: \(readText("/proc/\(pid)/stat") ?? "gone"); driver log: \(readText(root + "/driver.log") ?? "")")
        #expect(access(root + "/container/Documents/kept", F_OK) == 0)
    }

    @Test("An in-process container (Options.inProcess) of a test process killed with SIGKILL is unmounted too")
    func killedTestProcessInProcess() throws {
        let report = try TemporaryFile()
        let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let child = try Subprocess.run(["env", "APPSANDBOXFS_CRASH_REPORT=\(report.path)", testBinary,
                                        "AppSandboxTestingExamples.CrashingTestProcess/testMountInProcessThenDie"], timeout: 120)
        #expect(child.status == 128 + SIGKILL, "\(child.standardOutput)\(child.standardError)")
        let lines = report.text().split(separator: "\n").map(String.init)
        try #require(lines.count == 3, "the child reported \(lines): \(child.standardError)")
        let (mountpoint, root) = (lines[0], lines[2])
        defer {
            if MountTable.isContainerMount(mountpoint) { _ = try? Subprocess.run(["fusermount3", "-u", "-z", mountpoint]) }
            _ = try? Subprocess.run(["rm", "-rf", "--one-file-system", "--", root])
        }
        // The file system died with the process (the kernel ended the
        // connection when /dev/fuse closed); the watcher takes the dead
        // mount away. tmp is emptied by the container's next mount (T2).
        #expect(waitUntil(timeout: 15) { !MountTable.isContainerMount(mountpoint) },
                "the in-process container of the dead test process is still mounted")
        #expect(access(root + "/container/Documents/kept", F_OK) == 0)
    }

    /// The wait status of a zombie nobody reaped (the last field of
    /// /proc/PID/stat), nil when the process is gone.
    static func exitCode(_ pid: Int32) -> Int32? {
        guard let stat = readText("/proc/\(pid)/stat") else { return nil }
        return stat.split(separator: " ").last.flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Gone, or a zombie nobody reaped.
    static func ended(_ pid: Int32) -> Bool {
        guard let stat = readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return true }
        return stat[stat.index(after: close)...].hasPrefix(" Z")
    }
}

/// Run only by CrashSafetyTests, in a child process: mounts, says where,
/// and dies without any teardown.
final class CrashingTestProcess: XCTestCase {
    func testMountThenDie() throws {
        guard let report = ProcessInfo.processInfo.environment["APPSANDBOXFS_CRASH_REPORT"] else {
            throw XCTSkip("run by CrashSafetyTests in a child process")
        }
        let container = try MountedContainer.mount()
        try Data("scratch".utf8).write(to: URL(fileURLWithPath: container.tmp + "/scratch"))
        try Data("kept".utf8).write(to: URL(fileURLWithPath: container.documents + "/kept"))
        try "\(container.mountpoint)\n\(container.driverPID)\n\(container.root)\n".write(toFile: report, atomically: true, encoding: .utf8)
        kill(getpid(), SIGKILL)
    }

    func testMountInProcessThenDie() throws {
        guard let report = ProcessInfo.processInfo.environment["APPSANDBOXFS_CRASH_REPORT"] else {
            throw XCTSkip("run by CrashSafetyTests in a child process")
        }
        let container = try MountedContainer.mount(MountedContainer.Options(inProcess: true))
        try Data("kept".utf8).write(to: URL(fileURLWithPath: container.documents + "/kept"))
        try "\(container.mountpoint)\n\(container.driverPID)\n\(container.root)\n".write(toFile: report, atomically: true, encoding: .utf8)
        kill(getpid(), SIGKILL)
    }
}
