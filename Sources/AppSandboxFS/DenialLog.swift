import Glibc
import SandboxPolicy
import Synchronization

/// Writes one line per sandbox denial, in the iOS form
/// `Sandbox: <process>(<pid>) deny(1) <operation> <path>`,
/// to standard error and, if asked, appended to a file.
final class DenialLog: Sendable {
    private let fileDescriptor: Int32?
    private let writeLock = Mutex(())

    init(file: String?) throws {
        if let file {
            let fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw MountError.denialLog(path: file, errno: errno) }
            fileDescriptor = fd
        } else {
            fileDescriptor = nil
        }
    }

    func record(pid: pid_t, operation: SandboxOperation, path: String) {
        let line = "Sandbox: \(Self.processName(pid))(\(pid)) deny(1) \(operation.rawValue) \(path)\n"
        writeLock.withLock { _ in
            var bytes = Array(line.utf8)
            _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if let fileDescriptor {
                _ = bytes.withUnsafeMutableBytes { write(fileDescriptor, $0.baseAddress, $0.count) }
            }
        }
    }

    /// The short command name of a process, as in /proc/PID/comm.
    static func processName(_ pid: pid_t) -> String {
        let fd = open("/proc/\(pid)/comm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "unknown" }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return "unknown" }
        return String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: "\n")
    }

    deinit {
        if let fileDescriptor { close(fileDescriptor) }
    }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var result = self
        while result.last == set { result.removeLast() }
        return result
    }
}
