// What AppSandboxTesting promises, checked with real mounts: the container
// is always unmounted and its driver gone (after a throw, after a failed
// expectation, after a busy mount, after the driver died), the temporary
// folder removed, templates copied and left alone, denials parsed.

@testable import AppSandboxTesting
import Foundation
import MountInfo
import Testing

@Suite("AppSandboxTesting guarantees")
struct FixtureGuaranteeTests {
    /// What is left of a container after its teardown.
    private func expectGone(_ mountpoint: String, root: String, pid: Int32, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!MountTable.isContainerMount(mountpoint), "still mounted", sourceLocation: sourceLocation)
        #expect(kill(pid, 0) != 0, "the driver \(pid) still runs", sourceLocation: sourceLocation)
        #expect(access(root, F_OK) != 0, "\(root) is still there", sourceLocation: sourceLocation)
    }

    @Test("Every zone is a folder through the mount, and the mount is the driver's")
    func zones() throws {
        try withMountedContainer { container in
            for zone in MountedContainer.Zone.allCases {
                var status = stat()
                #expect(stat(container.path(zone), &status) == 0 && status.st_mode & S_IFMT == S_IFDIR, "\(zone)")
                #expect(container.path(zone) == container.mountpoint + "/" + zone.relativePath(appName: "TestApp"))
            }
            #expect(container.bundle == container.mountpoint + "/TestApp.app")
            #expect(container.isMounted)
            #expect(kill(container.driverPID, 0) == 0)
            #expect(container.mountpoint.hasPrefix(container.root + "/") && container.backing.hasPrefix(container.root + "/"))
        }
    }

    @Test("A body that throws: its error comes out, the container is unmounted and removed")
    func unmountsAfterThrow() throws {
        struct Planned: Error {}
        var seen: (String, String, Int32)?
        #expect(throws: Planned.self) {
            try withMountedContainer { container in
                seen = (container.mountpoint, container.root, container.driverPID)
                try Data("x".utf8).write(to: URL(fileURLWithPath: container.documents + "/x"))
                throw Planned()
            }
        }
        let (mountpoint, root, pid) = try #require(seen)
        expectGone(mountpoint, root: root, pid: pid)
    }

    @Test("A failed expectation in the body: the container is unmounted and removed")
    func unmountsAfterFailedExpectation() throws {
        var seen: (String, String, Int32)?
        withKnownIssue("an expectation that fails on purpose") {
            try withMountedContainer { container in
                seen = (container.mountpoint, container.root, container.driverPID)
                #expect(FileManager.default.createFile(atPath: container.inbox + "/new", contents: nil))
            }
        }
        let (mountpoint, root, pid) = try #require(seen)
        expectGone(mountpoint, root: root, pid: pid)
    }

    @Test("An async body that is cancelled: the container is unmounted")
    func unmountsAfterCancellation() async throws {
        let seen = Mutexless<(String, String, Int32)?>(nil)
        let task = Task {
            try await withMountedContainer { container in
                seen.value = (container.mountpoint, container.root, container.driverPID)
                try await Task.sleep(nanoseconds: 60_000_000_000)
            }
        }
        while seen.value == nil { try await Task.sleep(nanoseconds: 10_000_000) }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        let (mountpoint, root, pid) = try #require(seen.value)
        expectGone(mountpoint, root: root, pid: pid)
    }

    @Test("A busy mount (a file left open): unmount() says so, and still cleans up")
    func busyMount() throws {
        let container = try MountedContainer.mount()
        let fd = open(container.documents + "/held", O_CREAT | O_RDWR, 0o644)
        #expect(fd >= 0)
        let error = #expect(throws: FixtureError.self) { try container.unmount() }
        #expect(error?.description.contains("still open") == true)
        close(fd)
        expectGone(container.mountpoint, root: container.root, pid: container.driverPID)
        try container.unmount()  // a second call does nothing
    }

    @Test("A driver that died during the test: unmount() says so, and cleans up the dead mount")
    func driverDied() throws {
        let container = try MountedContainer.mount()
        kill(container.driverPID, SIGKILL)
        // Dead (a zombie the fixture has not reaped yet) before the teardown looks.
        waitUntil(timeout: 15) { CrashSafetyTests.ended(container.driverPID) }
        let error = #expect(throws: FixtureError.self) { try container.unmount() }
        #expect(error?.description.contains("ended during the test") == true, "\(String(describing: error))")
        expectGone(container.mountpoint, root: container.root, pid: container.driverPID)
    }

    @Test("A template: copied with its attributes, folders it lacks created, never changed")
    func template() throws {
        let template = try makeTemplate()
        defer { _ = try? Subprocess.run(["rm", "-rf", template]) }
        try withMountedContainer(.template(template)) { container in
            #expect(container.appName == "Shop")
            #expect(FileManager.default.fileExists(atPath: container.preferences))  // created by --create
            #expect(try String(contentsOfFile: container.documents + "/cart.json", encoding: .utf8) == "[]")
            let flag = try Subprocess.run(["getfattr", "--only-values", "-n", "com.apple.MobileBackup", container.documents + "/cart.json"])
            #expect(flag.standardOutput == "1")
            try FileManager.default.removeItem(atPath: container.documents + "/cart.json")
        }
        #expect(FileManager.default.fileExists(atPath: template + "/Documents/cart.json"))
        #expect(!FileManager.default.fileExists(atPath: template + "/Library/Preferences"))
    }

    @Test("Options reach the driver: -o ro makes every zone read-only")
    func readOnly() throws {
        try withMountedContainer(.init(mountOptions: ["ro"])) { container in
            #expect(open(container.documents + "/x", O_CREAT | O_WRONLY, 0o644) == -1 && errno == EROFS)
        }
    }

    @Test("prepare() fills the Inbox before the mount; deliver() adds to it")
    func prepareAndDeliver() throws {
        try withMountedContainer(.init(prepare: { backing in
            try Data("in".utf8).write(to: URL(fileURLWithPath: backing + "/Documents/Inbox/a.txt"))
        })) { container in
            #expect(try String(contentsOfFile: container.inbox + "/a.txt", encoding: .utf8) == "in")
            let file = container.root + "/a.txt"
            try Data("second".utf8).write(to: URL(fileURLWithPath: file))
            #expect(try container.deliver(file) == container.inbox + "/a-1.txt")
        }
    }

    @Test("denials() and clearDenials()")
    func denials() throws {
        try withMountedContainer { container in
            #expect(container.denials().isEmpty)
            #expect(mkdir(container.mountpoint + "/NewRootFolder", 0o755) == -1)
            let first = try #require(container.denials().first)
            #expect(first.process == "swiftpm-testing-helper" || first.pid == getpid())
            #expect(first.operation == "file-write-create")
            #expect(first.path == container.mountpoint + "/NewRootFolder")
            container.clearDenials()
            #expect(container.denials().isEmpty)
        }
    }

    @Test("Denial lines parse, odd process names and escaped paths included")
    func denialParsing() {
        let denial = Denial(line: #"Sandbox: my (odd) tool(42) deny(1) file-write-unlink /m/Documents/a\nb\\c\x01"#)
        #expect(denial?.process == "my (odd) tool")
        #expect(denial?.pid == 42)
        #expect(denial?.operation == "file-write-unlink")
        #expect(denial?.path == "/m/Documents/a\nb\\c\u{01}")
        #expect(Denial(line: "appsandboxfs: warning") == nil)
    }

    @Test("The program is found: APPSANDBOXFS_BIN, else beside the test binary, else PATH")
    func locatesProgram() throws {
        let found = try MountedContainer.locateAppSandboxFS()
        #expect(access(found, X_OK) == 0)
        #expect(throws: FixtureError.self) { try MountedContainer.locateAppSandboxFS("/nonexistent/appsandboxfs") }
    }

    private func makeTemplate() throws -> String {
        var path = Array("/tmp/appsandboxfs-template-XXXXXX".utf8CString)
        let template = String(cString: try #require(mkdtemp(&path)))
        for folder in ["Shop.app", "Documents/Inbox", "Library/Caches", "tmp"] {
            try FileManager.default.createDirectory(atPath: template + "/" + folder, withIntermediateDirectories: true)
        }
        try Data("[]".utf8).write(to: URL(fileURLWithPath: template + "/Documents/cart.json"))
        let flag = try Subprocess.run(["setfattr", "-n", "user.appsandboxfs.com.apple.MobileBackup", "-v", "1", template + "/Documents/cart.json"])
        #expect(flag.succeeded, "\(flag.standardError)")
        return template
    }
}

/// A value shared with a task, for a test that only polls it.
final class Mutexless<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
