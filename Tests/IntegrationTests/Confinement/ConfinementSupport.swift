// Support for the tests of `appsandboxfs run --confine` (rules R1-R5): a
// container mounted outside /tmp (a mountpoint in /tmp is refused, R1), and
// a way to run a command confined to it.

import Glibc
import Testing

/// A container mounted in outsideTemporaryFolders for the length of `body`.
func withConfinableContainer<T>(
    extraArguments: [String] = [],
    prepare: (String) throws -> Void = { _ in },
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: (MountedContainer) throws -> T
) throws -> T {
    try withMountedContainer(extraArguments: extraArguments, in: outsideTemporaryFolders, prepare: prepare,
                             sourceLocation: sourceLocation, body)
}

extension MountedContainer {
    /// `appsandboxfs run MOUNTPOINT --confine OPTIONS -- ARGUMENTS`, started
    /// in the mountpoint (or `cwd`).
    func runConfined(_ arguments: [String], options: [String] = [], cwd: String? = nil,
                     timeout: Double = 120) -> (status: Int32, stdout: String, stderr: String) {
        runProcess(confinedCommand(arguments, options: options), cwd: cwd ?? mountpoint, timeout: timeout)
    }

    /// A shell script run confined: `sh -c SCRIPT`, with $ROOT (the test's
    /// folder, outside the container) and $BACKING set.
    func runConfinedScript(_ script: String, options: [String] = [], cwd: String? = nil) -> (status: Int32, stdout: String, stderr: String) {
        runConfined(["env", "ROOT=\(root)", "BACKING=\(backing)", "sh", "-c", script], options: options, cwd: cwd)
    }

    func confinedCommand(_ arguments: [String], options: [String] = []) -> [String] {
        [Binaries.appsandboxfs, "run", mountpoint, "--confine"] + options + ["--"] + arguments
    }
}

/// Whether `path` exists (without following a last symbolic link).
func exists(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0
}

/// The lines of `text` that contain `fragment`.
func lines(of text: String, containing fragment: String) -> [String] {
    text.split(separator: "\n").map(String.init).filter { $0.contains(fragment) }
}

/// Waits until `condition` holds, up to `timeout` seconds; whether it did.
func waitUntil(timeout: Double = 30, _ condition: () -> Bool) -> Bool {
    let deadline = monotonicNow() + timeout
    var pause: UInt32 = 1_000
    while !condition() {
        if monotonicNow() > deadline { return false }
        usleep(pause)
        pause = min(pause * 2, 50_000)
    }
    return true
}

/// The pids of processes whose command line is exactly `arguments`.
func processes(withArguments arguments: [String]) -> [Int32] {
    let wanted = arguments.joined(separator: "\0") + "\0"
    guard let folder = opendir("/proc") else { return [] }
    defer { closedir(folder) }
    var found: [Int32] = []
    while let entry = readdir(folder) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard let pid = Int32(name) else { continue }
        if readFileText("/proc/\(pid)/cmdline") == wanted { found.append(pid) }
    }
    return found
}
