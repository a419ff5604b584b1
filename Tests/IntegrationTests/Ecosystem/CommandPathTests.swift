// The paths the command line takes: made absolute and tidied by
// swift-system, exactly as Foundation's URL standardization did before.

import DriverRuntime
import Foundation
import Glibc
import Testing

@Suite("Command line: paths made absolute")
struct CommandPathTests {
    /// What `absolutePath` used to be: Foundation's standardized file URL.
    private func foundationPath(_ path: String) -> String {
        if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path)
            .standardizedFileURL.path
    }

    @Test("absolutePath tidies `.`, `..`, repeated and trailing slashes as Foundation does, against the current folder")
    func sameAsFoundation() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("paths-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder + "/a/b", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let saved = FileManager.default.currentDirectoryPath
        #expect(chdir(folder + "/a/b") == 0)
        defer { _ = chdir(saved) }
        let inputs = ["/", "/mnt/MyApp", "/mnt/MyApp/", "/mnt//MyApp", "/mnt/./MyApp", "/mnt/x/../MyApp",
                      "/..", "/../mnt", "/mnt/..", "/mnt/a b/c", "/mnt/é/ü", ".", "./", "..", "../..", "../../..",
                      "x", "x/", "x/y/..", "./x//y/./z", "../c", "..x", ".x", "x/...", "a\\b"]
        for input in inputs {
            #expect(absolutePath(input) == foundationPath(input), "\(input)")
        }
        #expect(absolutePath("x") == folder + "/a/b/x")
        #expect(absolutePath("../../..") == (folder as NSString).deletingLastPathComponent)
    }
}
