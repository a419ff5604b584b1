// Every Swift block of docs/ci.md and docs/quickstart.md compiles.
//
// A block that starts with `// swift-tools-version` is a Package.swift:
// SwiftPM loads it (`swift package dump-package`, which neither resolves
// nor fetches), and every product of this package it names must exist.
// Any other block is type-checked by swiftc against the modules this build
// made (AppSandboxTesting, ContainerFiles), with the names the pages call
// "your code" (NoteStore) declared beside it: no linking, a few seconds
// each. A block with tests (Testing, XCTest) is a library file; any other
// is a program's main.swift.

@testable import AppSandboxTesting
import Foundation
import Testing

@Suite("Docs: every Swift block compiles")
struct DocumentedSwiftTests {
    /// The ```swift blocks of a Markdown text.
    static func swiftBlocks(of markdown: String) -> [String] {
        var blocks: [String] = [], current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!.joined(separator: "\n") + "\n")
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    /// What the pages call "your code", as Tests/AppSandboxTestingExamples has it.
    static let yourCode = """
        struct NoteStore {
            var home: String
            func save(_ text: String, as name: String) throws {}
            func saveDraftInInbox(_ text: String) throws {}
        }

        """

    @Test("Every Swift block of the page compiles", arguments: ["docs/ci.md", "docs/quickstart.md"])
    func blocksCompile(document: String) throws {
        let root = repositoryRoot()
        let blocks = Self.swiftBlocks(of: try String(contentsOfFile: root + "/" + document, encoding: .utf8))
        try #require(!blocks.isEmpty, "\(document) has no ```swift block")
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("asfs-docs-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }

        for (index, block) in blocks.enumerated() {
            let folder = scratch + "/block-\(index)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            if block.hasPrefix("// swift-tools-version") {
                try checkManifest(block, in: folder, root: root, label: "\(document), Swift block \(index + 1)")
                continue
            }
            let isLibrary = block.contains("import Testing") || block.contains("import XCTest")
            let file = folder + (isLibrary ? "/Block.swift" : "/main.swift")
            try block.write(toFile: file, atomically: true, encoding: .utf8)
            try Self.yourCode.write(toFile: folder + "/YourCode.swift", atomically: true, encoding: .utf8)
            let result = try Subprocess.run(["swiftc", "-typecheck", "-module-name", "DocBlock", "-I", modulesFolder()]
                                            + (try cModuleMaps())
                                            + (isLibrary ? ["-parse-as-library"] : []) + [folder + "/YourCode.swift", file],
                                            timeout: 300)
            #expect(result.succeeded, "\(document), Swift block \(index + 1) does not compile:\n\(result.standardError)\n\(block)")
        }
    }

    /// Loads a manifest from the page; every product of this package it names is one.
    private func checkManifest(_ manifest: String, in folder: String, root: String, label: String) throws {
        try manifest.write(toFile: folder + "/Package.swift", atomically: true, encoding: .utf8)
        let page = try dumpPackage(folder, label: label)
        // This package's own manifest, from a copy (swift test holds the
        // repository's .build).
        let own = folder + "/own"
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: root + "/Package.swift", toPath: own + "/Package.swift")
        let products = Set(((try dumpPackage(own, label: "Package.swift"))["products"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String })

        let dependencies = (page["targets"] as? [[String: Any]] ?? []).flatMap { $0["dependencies"] as? [[String: Any]] ?? [] }
        let named = dependencies.compactMap { $0["product"] as? [Any] }.filter { $0.count > 1 && $0[1] as? String == "appsandboxfs" }
        #expect(!named.isEmpty, "\(label) names no product of appsandboxfs")
        for product in named {
            let name = product[0] as? String ?? ""
            #expect(products.contains(name), "\(label): appsandboxfs has no product \(name) (it has \(products.sorted()))")
            // The driver builds on Linux only: a dependency on it must say so.
            if name == "appsandboxfs" {
                let condition = product.count > 3 ? product[3] as? [String: Any] : nil
                #expect(condition?["platformNames"] as? [String] == ["linux"], "\(label): the appsandboxfs product needs .when(platforms: [.linux])")
            }
        }
    }

    private func dumpPackage(_ folder: String, label: String) throws -> [String: Any] {
        let result = try Subprocess.run(["swift", "package", "dump-package", "--package-path", folder], timeout: 300)
        try #require(result.succeeded, "\(label) does not load:\n\(result.standardError)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
    }

    /// Where this build put the modules: beside the test binary.
    /// The module maps of the C modules AppSandboxTesting's Linux parts
    /// reach (CLinux and CFoundationBridge, which SwiftPM writes one for; CFuse and swift-system's
    /// CSystem, through the in-process driver): swiftc needs them to load
    /// the Swift modules that were built against them.
    private func cModuleMaps() throws -> [String] {
        let build = (try modulesFolder() as NSString).deletingLastPathComponent
        // .build/<triple>/debug -> .build, where SwiftPM keeps the checkouts.
        let scratch = ((build as NSString).deletingLastPathComponent as NSString).deletingLastPathComponent
        return [build + "/CLinux.build/module.modulemap", build + "/CFoundationBridge.build/module.modulemap",
                repositoryRoot() + "/CFuse/module.modulemap",
                scratch + "/checkouts/swift-system/Sources/CSystem/include/module.modulemap"]
            .filter { FileManager.default.fileExists(atPath: $0) }
            .flatMap { ["-Xcc", "-fmodule-map-file=" + $0] }
            // CFuse's header includes <fuse_lowlevel.h> from libfuse3's own folder.
            + (try Subprocess.run(["pkg-config", "--cflags", "fuse3"])).standardOutput
                .split(whereSeparator: { $0 == " " || $0 == "\n" }).flatMap { ["-Xcc", String($0)] }
    }

    private func modulesFolder() throws -> String {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        return (executable as NSString).deletingLastPathComponent + "/Modules"
    }
}

/// The repository: two folders above this file's folder.
func repositoryRoot() -> String {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.path
}
