// The tests' own mount namespaces (inOwnMountNamespace) take no copy of
// the container mounts of tests running beside them: a copy keeps a
// container's driver serving after its test unmounted it, until the
// namespace ends, and that test's teardown then waits for it in vain.

import Foundation
import Glibc
import Testing

@Suite("Test support: a mount namespace of a test's own holds no other container")
struct TestNamespaceTests {
    @Test("A process in inOwnMountNamespace sees no copy of a container mounted here",
          .enabled(if: geteuid() == 0, "unshare --mount needs root"))
    func noCopiedContainers() throws {
        try withMountedContainer { m in
            let folder = try makeTemporaryDirectory()
            defer { removeTree(folder) }
            let ready = folder + "/ready"
            let pid = try spawn(inOwnMountNamespace(["sh", "-c", "echo ready > \"$0\"; exec sleep 60", ready]),
                                stdin: "/dev/null", stdout: "/dev/null", stderr: folder + "/err")
            defer {
                kill(pid, SIGKILL)
                _ = waitForExit(pid, timeout: 15)
            }
            #expect(waitUntil { readFileText(ready) == "ready\n" }, "\(readFileText(folder + "/err"))")
            let theirs = readFileText("/proc/\(pid)/mountinfo")
            #expect(!theirs.isEmpty)
            #expect(!theirs.contains(" \(m.mountpoint) "), "the namespace holds a copy of \(m.mountpoint)")
            #expect(readFileText("/proc/self/mountinfo").contains(" \(m.mountpoint) "), "the container is still mounted here")
        }
    }
}
