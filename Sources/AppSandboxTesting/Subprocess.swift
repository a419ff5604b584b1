// Running the tools the fixture needs (appsandboxfs init, cp, fusermount3,
// rm): posix_spawn and waitpid on that one pid (never waitpid(-1), which
// would reap the test's other children), output through temporary files so
// a full pipe can never block.

import Foundation

/// How a program ended, and what it printed.
public struct ProcessResult: Sendable, Equatable {
    /// The exit code, or 128 + the signal that killed it (as a shell says).
    public var status: Int32
    public var standardOutput: String
    public var standardError: String

    public var succeeded: Bool { status == 0 }
}

enum Subprocess {
    /// Runs `arguments` (the program is looked up on PATH) to its end.
    /// Killed (status 137) after `timeout` seconds.
    static func run(_ arguments: [String], timeout: Double = 120) throws -> ProcessResult {
        let output = try TemporaryFile(), errors = try TemporaryFile()
        let pid = try spawn(arguments, standardOutput: output.path, standardError: errors.path)
        var status = wait(for: pid, timeout: timeout)
        var note = ""
        if status == nil {
            kill(pid, SIGKILL)
            status = wait(for: pid, timeout: nil)
            note = "\n[killed after \(timeout) s: \(arguments.joined(separator: " "))]"
        }
        return ProcessResult(status: status ?? 137, standardOutput: output.text(), standardError: errors.text() + note)
    }

    /// Starts a program with standard input from /dev/null (or the
    /// descriptor `standardInput`) and its output appended to the named
    /// files; every signal at its default, none blocked, whatever the test
    /// runner did to its own threads.
    static func spawn(_ arguments: [String], standardInput: Int32? = nil, standardOutput: String,
                      standardError: String) throws -> pid_t {
        guard let program = arguments.first else { throw FixtureError("no program to run") }
        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, standardOutput, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, standardError, O_WRONLY | O_APPEND | O_CREAT, 0o644)
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        // The environment as it is now, through Foundation: one spelling
        // on Linux and Darwin.
        let cEnvironment: [UnsafeMutablePointer<CChar>?] =
            ProcessInfo.processInfo.environment.map { strdup($0.key + "=" + $0.value) } + [nil]
        defer { (cArguments + cEnvironment).forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, &attributes, cArguments, cEnvironment)
        guard result == 0 else { throw FixtureError("cannot start \(program): \(String(cString: strerror(result)))") }
        return pid
    }

    /// Waits for a child to end, up to `timeout` seconds (nil: forever), and
    /// reaps it. nil when it still runs.
    static func wait(for pid: pid_t, timeout: Double?) -> Int32? {
        let deadline = timeout.map { monotonicSeconds() + $0 }
        var pause: UInt32 = 1_000
        while true {
            var status: Int32 = 0
            let result = waitpid(pid, &status, deadline == nil ? 0 : WNOHANG)
            if result == pid { return shellStatus(status) }
            if result < 0 && errno != EINTR { return -1 }
            if let deadline, monotonicSeconds() >= deadline { return nil }
            usleep(pause)
            pause = min(pause * 2, 20_000)
        }
    }

    /// The shell's number for a wait status: the exit code, or 128 + the
    /// signal (the W* macros are not imported into Swift).
    static func shellStatus(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// The first executable `name` on PATH.
    static func onPath(_ name: String) -> String? {
        let path = environmentValue("PATH") ?? "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = folder + "/" + name
            if isExecutableFile(candidate) { return candidate }
        }
        return nil
    }
}

/// An empty file in /tmp, removed when this value goes away.
final class TemporaryFile {
    let path: String

    init() throws {
        var template = Array("/tmp/appsandboxfs-testing-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw FixtureError("mkstemp: \(String(cString: strerror(errno)))") }
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

func monotonicSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
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

func isFolder(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
}

/// A whole file as text, nil when it cannot be read.
func readText(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        if count < 0 { return nil }
        if count == 0 { break }
        bytes += buffer[0..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// The last lines of a log, for an error message.
func lastLines(_ text: String, _ count: Int = 30) -> String {
    text.split(separator: "\n", omittingEmptySubsequences: false).suffix(count).joined(separator: "\n")
}
