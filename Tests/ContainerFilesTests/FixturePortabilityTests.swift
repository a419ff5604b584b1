// AppSandboxTesting builds on every platform an iOS team's tests build on
// (macOS too), though it mounts on Linux only: its Linux-only dependencies
// carry a platform condition, and every Linux-only import in its sources
// (and in Locking's, SandboxPolicy's, POSIXHelpers' and Spawning's, which it
// uses) sits under an #if. We cannot build for
// macOS here, so these are checked as text and as the loaded manifest.

@testable import AppSandboxTesting
import Foundation
import Testing

@Suite("Docs: AppSandboxTesting builds beyond Linux")
struct FixturePortabilityTests {
    static let linuxOnlyModules: Set<String> = ["Glibc", "CLinux", "CFuse", "MountInfo", "Synchronization"]

    @Test("Package.swift: AppSandboxTesting depends on MountInfo only on Linux, on nothing else that needs Linux; Spawning on CLinux only on Linux")
    func manifestConditions() throws {
        // From a copy of the manifest (swift test holds the repository's .build).
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("asfs-fixture-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: repositoryRoot() + "/Package.swift", toPath: folder + "/Package.swift")
        let result = try Subprocess.run(["swift", "package", "dump-package", "--package-path", folder], timeout: 300)
        try #require(result.succeeded, "\(result.standardError)")
        let package = try #require(try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        let targets = package["targets"] as? [[String: Any]] ?? []
        let fixture = try #require(targets.first { $0["name"] as? String == "AppSandboxTesting" })
        var unconditional: [String] = []
        for dependency in fixture["dependencies"] as? [[String: Any]] ?? [] {
            let entry = (dependency["byName"] ?? dependency["target"] ?? dependency["product"]) as? [Any] ?? []
            let name = entry.first as? String ?? "?"
            let condition = entry.last as? [String: Any]
            if condition?["platformNames"] as? [String] != ["linux"] { unconditional.append(name) }
        }
        #expect(!unconditional.contains("MountInfo"), "AppSandboxTesting needs .when(platforms: [.linux]) on: \(unconditional)")
        // SandboxPolicy is pure Swift (its one C import is under
        // canImport, checked below): the one definition of the container's
        // terms, which the fixture re-exports. POSIXHelpers imports Glibc or
        // Darwin, whichever there is (checked below). Spawning's values
        // (ExitStatus, ProcessOutput) build everywhere; its spawner is
        // Linux code under #if (checked below), and so is its dependency
        // on CLinux.
        #expect(Set(unconditional).isSubset(of: ["ContainerFiles", "Locking", "SandboxPolicy", "POSIXHelpers", "Spawning"]), "\(unconditional)")
        let spawning = try #require(targets.first { $0["name"] as? String == "Spawning" })
        for dependency in spawning["dependencies"] as? [[String: Any]] ?? [] {
            let entry = (dependency["byName"] ?? dependency["target"] ?? dependency["product"]) as? [Any] ?? []
            let condition = entry.last as? [String: Any]
            if entry.first as? String == "CLinux" {
                #expect(condition?["platformNames"] as? [String] == ["linux"], "Spawning needs .when(platforms: [.linux]) on CLinux")
            }
        }
    }

    @Test("Every Linux-only import and C symbol looked up by Linux's signature in Sources/AppSandboxTesting, Sources/ContainerFiles, Sources/Locking, Sources/SandboxPolicy, Sources/POSIXHelpers and Sources/Spawning is under #if")
    func guardedImports() throws {
        var unguarded: [String] = []
        for folder in ["Sources/AppSandboxTesting", "Sources/ContainerFiles", "Sources/Locking", "Sources/SandboxPolicy",
                       "Sources/POSIXHelpers", "Sources/Spawning"] {
            let path = repositoryRoot() + "/" + folder
            for file in try FileManager.default.contentsOfDirectory(atPath: path).sorted() where file.hasSuffix(".swift") {
                // The open #if blocks: whether each is a platform guard.
                var blocks: [Bool] = []
                for (number, line) in try String(contentsOfFile: path + "/" + file, encoding: .utf8)
                    .split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let text = line.trimmingCharacters(in: .whitespaces)
                    if text.hasPrefix("#if ") {
                        blocks.append(text.contains("os(Linux)") || (text.contains("canImport(") && !text.contains("canImport(Testing)")))
                    }
                    if text.hasPrefix("#endif") { _ = blocks.popLast() }
                    if text.hasPrefix("import "), Self.linuxOnlyModules.contains(String(text.dropFirst(7))), !blocks.contains(true) {
                        unguarded.append("\(folder)/\(file):\(number + 1): \(text)")
                    }
                    // dlsym with a null handle is RTLD_DEFAULT on Linux only
                    // (Darwin's is -2), and the casts give Linux's signatures
                    // (Darwin's getxattr takes a position and options).
                    if text.contains("dlsym("), !blocks.contains(true) {
                        unguarded.append("\(folder)/\(file):\(number + 1): \(text)")
                    }
                }
            }
        }
        #expect(unguarded.isEmpty, "Linux-only imports or dlsym outside #if os(Linux)/canImport:\n\(unguarded.joined(separator: "\n"))")
    }
}
