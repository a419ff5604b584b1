// Running the tools the fixture needs (appsandboxfs init, cp, fusermount3,
// rm) through the project's one spawner, and small file helpers.

import POSIXHelpers
// The values of the project's one spawner, on every platform: how a program
// ended (ExitStatus, re-exported for `waitForDriverExit`), and what it printed.
@_exported import enum Spawning.ExitStatus
import Spawning
#if os(Linux)
import Glibc
#else
import Foundation
#endif

/// How a program ended, and what it printed.
public typealias ProcessResult = ProcessOutput

#if os(Linux)
/// The fixture's use of the project's one spawner (Spawning).
enum Subprocess {
    /// Runs `arguments` (the program is looked up on PATH) to its end.
    /// Killed (status 137) after `timeout` seconds.
    static func run(_ arguments: [String], timeout: Double = 120) throws -> ProcessResult {
        ChildProcess.run(arguments, options: SpawnOptions(closeOtherDescriptors: true), timeout: timeout)
    }

    /// The first executable `name` on PATH.
    static func onPath(_ name: String) -> String? { ChildProcess.onPath(name) }
}
#endif

/// An empty file in /tmp, removed when this value goes away.
final class TemporaryFile {
    let path: String

    init() throws {
        var template = Array("/tmp/appsandboxfs-testing-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw FixtureError("mkstemp: \(errorText(errno))") }
        close(fd)
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func text() -> String { readText(path) ?? "" }

    deinit { unlink(path) }
}

/// An error of the fixture itself (not of the code under test).
public struct FixtureError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

func environmentValue(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
}

func isExecutableFile(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
}

/// The last lines of a log, for an error message.
func lastLines(_ text: String, _ count: Int = 30) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).suffix(count).joined(separator: "\n")
}
