// The current folder, the umask and the environment belong to the whole
// process. Tests run in parallel in one process, and the fixture and the
// libraries run inside test processes: a chdir, umask or setenv there
// changes them under every other test and every child process started
// meanwhile (a shell started with a folder that is then removed fails in
// its start-up). So the calls may appear only where the process is the
// project's own program, or the state is a thread's own.

import Foundation
import Testing

@Suite("Sources and tests: process-wide state left alone")
struct ProcessStateTests {
    /// Where the calls are allowed, and why.
    static let allowed: [String: String] = [
        "Sources/DriverRuntime/ContainerDriver.swift": "the driver program's own start, before any thread; RLIMIT_NOFILE raised also in the in-process fixture's process (docs/ci.md says so)",
        "Sources/DriverRuntime/Daemon.swift": "the daemonised driver's own descriptors",
        "Sources/FuseKit/Session.swift": "standard error swapped during the mount only in a process that owns its signals (a driver program)",
        "Sources/FuseKit/WorkerLoop.swift": "a serving thread after unshare(CLONE_FS): its umask is its own; the wake-up signal's no-op handler (docs/ci.md says so)",
        "Sources/ContainerBackup/TarArchive.swift": "SIGPIPE ignored while an archive is piped: the command line's own process",
        "Sources/appsandboxfs/RunCommand.swift": "`run` sets the environment its program inherits, in the command's own process",
        "Sources/CLinux/confine.c": "the confined child, after fork",
        "Tests/fsprobe/main.swift": "fsprobe is a program of its own",
        "Tests/fsprobe/Interpreter.swift": "fsprobe is a program of its own",
        "Tests/AppSandboxTestingExamples/InProcessFixtureTests.swift": "sets a umask only when the process has none (0), to test that serving ignores it",
    ]
    static let calls = ["chdir(", "fchdir(", "umask(", "setenv(", "unsetenv(", "putenv(", "changeCurrentDirectoryPath(",
                        "setrlimit(", "sigaction(", "signal(SIG", "dup2(", "sigprocmask("]

    @Test("No chdir, umask, setenv, setrlimit, signal handler or dup2 outside the places that own their process")
    func noProcessWideChanges() throws {
        let root = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var scanned = 0
        var offenders: [String] = []
        for top in ["Sources", "Tests"] {
            let walker = try #require(FileManager.default.enumerator(at: root.appendingPathComponent(top), includingPropertiesForKeys: nil))
            for case let file as URL in walker where ["swift", "c", "h"].contains(file.pathExtension) {
                let relative = String(file.path.dropFirst(root.path.count + 1))
                if relative == "Tests/AppSandboxFSTests/ProcessStateTests.swift" || Self.allowed[relative] != nil { continue }
                scanned += 1
                let text = try String(contentsOf: file, encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                    for call in Self.calls where code.contains(call) {
                        // `processUmask(` reads; a name ending in one of the calls is another function.
                        let before = code.range(of: call).map { code[..<$0.lowerBound].last } ?? nil
                        if let before, before.isLetter || before.isNumber || before == "_" || before == "." { continue }
                        offenders.append("\(relative):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                    }
                }
            }
        }
        #expect(scanned > 100, "scanned only \(scanned) files under \(root.path)")
        #expect(offenders.isEmpty, "a process-wide change outside the allowed places:\n\(offenders.joined(separator: "\n"))")
        for path in Self.allowed.keys {
            #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path), "\(path) is allowed but gone")
        }
    }
}
