// `MountedContainer.Options(inProcess: true)`: the container served by
// threads of the test process. The same rules as with a driver program
// (B1, I1, T2, P5 below), and the three things the test process must keep
// for itself: its umask, its signal handlers, and its life when several
// in-process containers come and go.
//
//   swift test --filter InProcessFixture

@testable import AppSandboxTesting
import Foundation
import Locking
import MountInfo
import POSIXHelpers
import Spawning
import Testing

@Suite("AppSandboxTesting: containers served in the test process", .canMountContainers, .serialized)
struct InProcessFixtureTests {
    static let inProcess = MountedContainer.Options(inProcess: true)

    /// Runs a shell command (as this process's user) and requires it to succeed.
    private func shell(_ script: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> ProcessOutput {
        let result = ChildProcess.run(["/bin/sh", "-c", script], timeout: 60)
        try #require(result.succeeded, "\(script): \(result.standardError)", sourceLocation: sourceLocation)
        return result
    }

    private func mode(_ path: String) -> mode_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & 0o7777 : nil
    }

    @Test("The rules hold in-process: Documents writes (D1), the Inbox refuses a create (I1), the bundle is read-only (B1), each refusal logged")
    func rulesHold() throws {
        try withMountedContainer(Self.inProcess) { container in
            #expect(container.driverPID == getpid())
            #expect(MountTable.isContainerMount(container.mountpoint))
            try Data("notes".utf8).write(to: URL(fileURLWithPath: container.documents + "/notes.txt"))
            #expect(try String(contentsOfFile: container.backingPath("Documents/notes.txt"), encoding: .utf8) == "notes")

            #expect(open(container.inbox + "/new", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644) == -1 && errno == EPERM)
            #expect(open(container.bundle + "/new", O_WRONLY | O_CREAT | O_CLOEXEC, 0o644) == -1 && errno == EROFS)
            let denials = container.denials()
            #expect(denials.contains { $0.path.hasSuffix("/Documents/Inbox/new") }, "\(denials)")
            #expect(denials.contains { $0.path.hasSuffix(".app/new") }, "\(denials)")
        }
    }

    @Test("T2: tmp is empty when the unmount returns, and the temporary folder is gone")
    func tmpClearedAtUnmount() throws {
        let container = try MountedContainer.mount(MountedContainer.Options(keepFiles: true, inProcess: true))
        defer { FixtureSystem.removeTree(container.root) }
        for index in 0..<200 {
            try Data("scratch".utf8).write(to: URL(fileURLWithPath: container.tmp + "/file-\(index)"))
        }
        try FileManager.default.createDirectory(atPath: container.tmp + "/a/b/c", withIntermediateDirectories: true)
        try container.unmount()
        #expect(!MountTable.isContainerMount(container.mountpoint))
        #expect(try FileManager.default.contentsOfDirectory(atPath: container.backingPath("tmp")).isEmpty)
        #expect(container.driverLog.contains("serving ended"), "\(container.driverLog)")

        let gone = try MountedContainer.mount(Self.inProcess)
        let root = gone.root
        try gone.unmount()
        #expect(access(root, F_OK) != 0, "\(root) is still there")
    }

    private func processUmask() throws -> mode_t {
        let mask = POSIXHelpers.processUmask()
        return try #require(mask, "/proc/self/status shows no Umask line")
    }

    @Test("A file made by a caller with umask 000 keeps mode 0666 in the backing folder, and this process keeps its own umask")
    func workersHaveTheirOwnUmask() throws {
        // The test needs a process umask that masks something; it is set
        // only when it masks nothing, since a umask is the whole process's.
        var own = try processUmask()
        if own == 0 {
            umask(0o022)
            own = 0o022
        }
        try withMountedContainer(Self.inProcess) { container in
            _ = try shell("umask 000; : > '\(container.documents)/shared'; mkdir '\(container.documents)/folder'")
            // The kernel sends the mode already masked by the caller's umask;
            // a serving thread with this process's umask would store
            // 0666 & ~umask and 0777 & ~umask.
            #expect(mode(container.backingPath("Documents/shared")) == 0o666)
            #expect(mode(container.backingPath("Documents/folder")) == 0o777)
            _ = try shell("umask 077; : > '\(container.documents)/private'")
            #expect(mode(container.backingPath("Documents/private")) == 0o600)
        }
        // Serving left this process's umask alone.
        #expect(try processUmask() == own)
    }

    @Test("Two in-process containers: the first one's unmount leaves the second serving, and its own unmount ends cleanly")
    func twoContainersComeAndGo() throws {
        let first = try MountedContainer.mount(Self.inProcess)
        let second = try MountedContainer.mount(Self.inProcess)
        try first.unmount()
        // The serving threads of the second are stopped with a real-time
        // signal; had the first put that signal's default action back (end
        // the process), this process would not survive the next unmount.
        try Data("still here".utf8).write(to: URL(fileURLWithPath: second.documents + "/a"))
        #expect(try String(contentsOfFile: second.documents + "/a", encoding: .utf8) == "still here")
        try second.unmount()
        #expect(!MountTable.isContainerMount(second.mountpoint))
    }

    @Test("signalDriver(SIGTERM) stops serving as a driver's handler would: exit 0, the mount gone, the test process alive")
    func signalStopsServing() throws {
        try withMountedContainer(Self.inProcess) { container in
            container.signalDriver(SIGTERM)
            #expect(container.waitForDriverExit(timeout: 15) == .exited(0))
            #expect(waitUntil(timeout: 5) { !MountTable.isContainerMount(container.mountpoint) })
        }
    }

    @Test("P5: lock() and unlock() reach the in-process device: a class A file cannot be read while locked")
    func lockAndUnlock() throws {
        try withMountedContainer(Self.inProcess) { container in
            let secret = container.documents + "/secret"
            try Data("pin".utf8).write(to: URL(fileURLWithPath: secret))
            try container.setProtection(.complete, of: secret)
            try container.lock(grace: 0)
            #expect(open(secret, O_RDONLY | O_CLOEXEC) == -1 && errno == EPERM)
            #expect(container.protectionDenials().contains { $0.path.hasSuffix("/Documents/secret") && $0.state == .locked })
            try container.unlock()
            #expect(try String(contentsOfFile: secret, encoding: .utf8) == "pin")
        }
    }

    @Test("U1 in-process: updateApp installs version 2 and serves it again in this process; the user's note survives")
    func appUpdateInProcess() throws {
        let version1 = try DeviceExampleTests.makeBuild(version: 1), version2 = try DeviceExampleTests.makeBuild(version: 2)
        defer {
            try? FileManager.default.removeItem(atPath: version1)
            try? FileManager.default.removeItem(atPath: version2)
        }
        var options = Self.inProcess
        options.prepare = { backing in
            try FileManager.default.removeItem(atPath: backing + "/TestApp.app")
            try FileManager.default.copyItem(atPath: version1, toPath: backing + "/TestApp.app")
        }
        try withMountedContainer(options) { container in
            try Data("Buy milk".utf8).write(to: URL(fileURLWithPath: container.documents + "/note.txt"))
            try container.updateApp(bundle: version2)
            #expect(container.driverPID == getpid())
            #expect(try String(contentsOfFile: container.bundle + "/schema.txt", encoding: .utf8) == "schema 2\n")
            #expect(try String(contentsOfFile: container.documents + "/note.txt", encoding: .utf8) == "Buy milk")
        }
    }

    @Test("A file left open at the teardown: the unmount is reported busy, serving stops, and the open file then fails at once (ENOTCONN) instead of waiting for an answer")
    func fileLeftOpenAtTeardown() throws {
        let container = try MountedContainer.mount(Self.inProcess)
        let path = container.documents + "/open.txt"
        try Data("kept open".utf8).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(throws: (any Error).self) { try container.unmount() }
        // On a thread of its own: a read that waited for an answer nobody
        // gives would otherwise hold the test forever.
        let result = Locked<(Int, Int32)?>(nil)
        let done = DispatchSemaphore(value: 0)
        // fstat, not a read: with passthrough the kernel reads the backing
        // file itself, while attributes (cached for a second, and the
        // teardown tried to unmount for two) must come from the driver.
        Thread.detachNewThread {
            var status = stat()
            let answer = fstat(fd, &status)
            result.withLock { $0 = (Int(answer), errno) }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 15) == .success, "fstat of the open file still waits")
        let (answer, error) = try #require(result.withLock { $0 })
        #expect(answer == -1 && error == ENOTCONN, "fstat gave \(answer), errno \(error)")
    }

    /// What this process's descriptors lead to.
    private func descriptorTargets() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
        }.sorted()
    }

    @Test("Once unmounted, an in-process container holds no backing descriptor, though its MountedContainer lives on")
    func descriptorsGoWithTheMount() throws {
        // Not in parallel with the other tests' containers: it counts this
        // process's descriptors.
        // Other suites run beside this one in the same process and open
        // descriptors of their own: only those that lead into this
        // container's backing folder are counted.
        let container = try MountedContainer.mount(Self.inProcess)
        func backingDescriptors() -> [String] { descriptorTargets().filter { $0.hasPrefix(container.backing + "/") || $0 == container.backing } }
        for index in 0..<50 {
            try Data("x".utf8).write(to: URL(fileURLWithPath: container.documents + "/file-\(index)"))
            // A look at each file's mode needs its node's descriptor.
            #expect(chmod(container.documents + "/file-\(index)", 0o640) == 0)
        }
        #expect(backingDescriptors().count >= 50, "the file system keeps a descriptor per file the kernel knows")
        try container.unmount()
        #expect(backingDescriptors().isEmpty, "descriptors left in the backing folder: \(backingDescriptors())")
        withExtendedLifetime(container) {}
    }

    @Test("Options of the driver program are refused in-process, by name")
    func programOptionsRefused() {
        #expect {
            _ = try MountedContainer.mount(MountedContainer.Options(capacity: "64M", inProcess: true))
        } throws: { error in
            "\(error)".contains("capacity")
        }
    }
}
