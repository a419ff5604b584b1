// L1: a mount the kernel refuses says why in its one line, in the
// background too, where the driver has no standard error of its own for
// libfuse's message (found by a black-box pass: "cannot mount at ... (see
// the message above)", with nothing above it).

import Glibc
import Testing

@Suite("Reliability: a refused mount says why (L1)")
struct MountFailureReasonTests {
    @Test("L1 /dev/fuse that is not the FUSE device: background and foreground mounts fail in one line with libfuse's reason, nothing mounted", arguments: [false, true])
    func refusedMountSaysWhy(foreground: Bool) throws {
        let root = try makeTemporaryDirectory(prefix: "asfs-refused")
        defer { removeTree(root) }
        let made = runProcess([Binaries.appsandboxfs, "init", root + "/c", "--app-name", "Z"])
        try #require(made.status == 0, "\(made)")
        try makeDirectory(root + "/m")
        // Only this command's own mount namespace sees /dev/null there.
        let mount = "mount --bind /dev/null /dev/fuse && exec \"$0\" mount \"$1\" \"$2\" --app-name Z" + (foreground ? " --foreground" : "")
        let result = runProcess(["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", mount,
                                 Binaries.appsandboxfs, root + "/c", root + "/m"], timeout: 60)
        #expect(result.status == 1, "\(result)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains(root + "/m") && lines[0].contains("mount failed"),
                "not one line with libfuse's reason:\n\(result.stderr)")
        #expect(!result.stderr.contains("see the message above"), "\(result.stderr)")
        #expect(!readFileText("/proc/self/mountinfo").contains(" \(root)/m "), "something is mounted")
    }
}
