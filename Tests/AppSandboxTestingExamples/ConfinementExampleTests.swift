// How to run a program as an app in the iOS sandbox: confined to its
// container (`appsandboxfs run --confine`, rules R1-R5). The program here is
// outside-writer (Tests/OutsideWriter), a Swift program that writes a file
// in $HOME/Documents and then tries to write outside its container; a real
// test would run the app's own command-line build the same way. Needs root:
// elsewhere the test is skipped (`MountedContainer.canConfine`).
//
//   swift test --filter ConfinementExample

import AppSandboxTesting
import Foundation
import Testing

@Suite("ConfinementExample")
struct ConfinementExampleTests {
    /// A program built by this package: SwiftPM puts it beside the test binary.
    static func program(_ name: String) -> String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent(name).path
    }

    @Test("R1 R2: a confined program writes in its container; writing /etc or the backing directory fails (EROFS) and changes nothing",
          .enabled(if: MountedContainer.canConfine, "needs root and /dev/fuse"))
    func confinedProgramCannotWriteOutside() throws {
        // runConfined needs a mountpoint outside /tmp.
        let options = MountedContainer.Options(temporaryDirectory: MountedContainer.confinableTemporaryDirectory)
        try withMountedContainer(options) { container in
            let behindTheMount = container.backingPath("behind-the-mount.txt")
            // The program goes into the app's bundle, where an app's own
            // executable is on a device; run from the build folder it would
            // vanish in the confined world when the checkout lies in /tmp,
            // which there is the container's tmp.
            let installed = container.backingPath(container.appName + ".app/outside-writer")
            try FileManager.default.copyItem(atPath: Self.program("outside-writer"), toPath: installed)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: installed)
            let result = try container.runConfined([container.bundle + "/outside-writer", "/etc/outside-writer.txt", behindTheMount])
            #expect(result.succeeded, "\(result.standardError)")
            #expect(result.standardOutput == """
                \(container.documents)/inside.txt: written
                /etc/outside-writer.txt: Read-only file system
                \(behindTheMount): Read-only file system

                """)
            // The file inside is really there; nothing was written outside.
            #expect(FileManager.default.fileExists(atPath: container.backingPath("Documents/inside.txt")))
            #expect(!FileManager.default.fileExists(atPath: "/etc/outside-writer.txt"))
            #expect(!FileManager.default.fileExists(atPath: behindTheMount))
        }
    }
}
