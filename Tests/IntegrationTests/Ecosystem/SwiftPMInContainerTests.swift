// docs/ci.md runs a package's tests "inside" a container:
// `appsandboxfs run MNT -- swift test`. SwiftPM then puts its caches where
// Foundation finds cachesDirectory (XDG_CACHE_HOME: Library/Caches) and its
// configuration under XDG_CONFIG_HOME (Library/Preferences/swiftpm), not
// at the container's root, where S1 would refuse them. One small package
// with one test, built once: bounded.

import Foundation
import Glibc
import Testing

@Suite("Ecosystem: swift test inside a container")
struct SwiftPMInContainerTests {
    @Test("S1, K1: run -- swift test passes with no denial; SwiftPM's caches land in Library/Caches, nothing at the root")
    func swiftTestInside() throws {
        try withEcoMount { m in
            try m.mountInBackground(["--denial-log", m.denialLog])
            let package = m.root + "/Tiny"
            try makeDirectory(package)
            try makeDirectory(package + "/Sources")
            try makeDirectory(package + "/Sources/Tiny")
            try makeDirectory(package + "/Tests")
            try makeDirectory(package + "/Tests/TinyTests")
            try writeFile(package + "/Package.swift", """
                // swift-tools-version: 6.0
                import PackageDescription
                let package = Package(name: "Tiny", targets: [
                    .target(name: "Tiny"),
                    .testTarget(name: "TinyTests", dependencies: ["Tiny"]),
                ])

                """)
            try writeFile(package + "/Sources/Tiny/Tiny.swift", """
                import Foundation
                public func saveNote(_ text: String) throws -> URL {
                    let url = try FileManager.default.url(for: .cachesDirectory, in: .userDomainMask, appropriateFor: nil, create: true)
                        .appendingPathComponent("note.txt")
                    try Data(text.utf8).write(to: url)
                    return url
                }

                """)
            try writeFile(package + "/Tests/TinyTests/TinyTests.swift", """
                import Testing
                import Tiny
                @Test func savesInCaches() throws {
                    #expect(try saveNote("hi").path.hasSuffix("/Library/Caches/note.txt"))
                }

                """)

            let result = runProcess(m.environmentPrefix + [Binaries.appsandboxfs, "run", m.mountpoint, "--", "swift", "test"],
                                    cwd: package, timeout: 1200)
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout.contains("1 test") && result.stdout.contains("passed"), "\(result.stdout)")
            #expect(readFileText(m.denialLog).isEmpty, "\(readFileText(m.denialLog))")

            let root = try FileManager.default.contentsOfDirectory(atPath: m.backing).sorted()
            #expect(root == ["Documents", "Library", "TestApp.app", "tmp"])
            #expect(isDirectory(m.backing + "/Library/Caches/org.swift.swiftpm"))
            #expect(isDirectory(m.backing + "/Library/Preferences/swiftpm"))
            #expect(readFileText(m.backing + "/Library/Caches/note.txt") == "hi")
        }
    }
}
