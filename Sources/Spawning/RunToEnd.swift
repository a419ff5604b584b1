#if os(Linux)
import Glibc
import POSIXHelpers

extension ChildProcess {
    /// Runs `arguments` to its end, its output caught in temporary files (a
    /// pipe could fill and block it), standard input `input` (a file to
    /// read) or /dev/null. Killed after `timeout` seconds (status 137, and
    /// standard error says so). Never throws: a program that cannot start
    /// gives 127 and the reason.
    public static func run(_ arguments: [String], options: SpawnOptions = SpawnOptions(), input: String? = nil,
                           timeout: Double? = nil) -> ProcessOutput {
        let output = CaptureFile(), errors = CaptureFile()
        guard let outputPath = output.path, let errorsPath = errors.path else {
            return ProcessOutput(status: 127, standardOutput: "", standardError: "cannot make a temporary file in /tmp")
        }
        var options = options
        options.standardInput = input.map(Redirection.path) ?? .nullDevice
        options.standardOutput = .path(outputPath)
        options.standardError = .path(errorsPath)
        let child: ChildProcess
        do {
            child = try start(arguments, options)
        } catch {
            return ProcessOutput(status: 127, standardOutput: "", standardError: error.description)
        }
        var status = timeout.map { child.wait(timeout: $0) } ?? child.wait()
        var note = ""
        if status == nil, let timeout {
            kill(child.pid, SIGKILL)
            status = child.wait()
            note = "\n[killed after \(timeout) s: \(arguments.joined(separator: " "))]"
        }
        return ProcessOutput(status: status?.code ?? 137, standardOutput: output.text(),
                             standardError: errors.text() + note)
    }

    /// The first executable `name` on PATH.
    public static func onPath(_ name: String) -> String? {
        let value = getenv("PATH").map { String(cString: $0) } ?? ""
        let path = value.isEmpty ? "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" : value
        for folder in path.split(separator: ":") where !folder.isEmpty {
            let candidate = folder + "/" + name
            var status = stat()
            if stat(candidate, &status) == 0 && status.st_mode & S_IFMT == S_IFREG && access(candidate, X_OK) == 0 {
                return candidate
            }
        }
        return nil
    }
}

/// An empty file in /tmp for a child's output, removed with this value.
private final class CaptureFile {
    let path: String?

    init() {
        var template = Array("/tmp/appsandboxfs-output-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        if fd >= 0 {
            close(fd)
            path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        } else {
            path = nil
        }
    }

    /// What the child wrote (up to a read error, as at the end).
    func text() -> String {
        guard let path else { return "" }
        return String(decoding: readFile(path).bytes, as: UTF8.self)
    }

    deinit { if let path { unlink(path) } }
}
#endif
