// The paths the command line takes: made absolute and tidied by
// swift-system, exactly as Foundation's URL standardization did before.
// No test here changes the process's current folder: the tests run in
// parallel, and every child process started meanwhile would inherit a folder
// that is about to be removed (a shell then fails in its start-up).

import DriverRuntime
import Foundation
import Glibc
import Testing

@Suite("Command line: paths made absolute")
struct CommandPathTests {
    /// What `absolutePath` used to be: Foundation's standardized file URL.
    private func foundationPath(_ path: String, from folder: String) -> String {
        if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
        return URL(fileURLWithPath: folder).appendingPathComponent(path).standardizedFileURL.path
    }

    @Test("absolutePath tidies `.`, `..`, repeated and trailing slashes as Foundation does, against a given folder")
    func sameAsFoundation() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("paths-\(getpid())").path
        let base = folder + "/a/b"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let inputs = ["/", "/mnt/MyApp", "/mnt/MyApp/", "/mnt//MyApp", "/mnt/./MyApp", "/mnt/x/../MyApp",
                      "/..", "/../mnt", "/mnt/..", "/mnt/a b/c", "/mnt/é/ü", ".", "./", "..", "../..", "../../..",
                      "x", "x/", "x/y/..", "./x//y/./z", "../c", "..x", ".x", "x/...", "a\\b"]
        for input in inputs {
            #expect(absolutePath(input, from: base) == foundationPath(input, from: base), "\(input)")
        }
        #expect(absolutePath("x", from: base) == base + "/x")
        #expect(absolutePath("../../..", from: base) == (folder as NSString).deletingLastPathComponent)
        #expect(absolutePath("x", from: nil) == "x", "no folder known: the path stays as given")
    }

    @Test("absolutePath without a folder takes the process's current one, unchanged")
    func currentFolder() throws {
        let current = FileManager.default.currentDirectoryPath
        #expect(absolutePath("x/../y") == foundationPath("y", from: current))
        #expect(absolutePath(".") == foundationPath(".", from: current))
        #expect(FileManager.default.currentDirectoryPath == current)
    }
}
