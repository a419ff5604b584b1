import FuseKit
import Glibc
import SandboxPolicy

/// Writes one line per sandbox denial, in the iOS form
/// `Sandbox: <process>(<pid>) deny(1) <operation> <path>`,
/// to standard error and, if asked, appended to a file.
final class DenialLog: Sendable {
    private let fileDescriptor: Int32?
    private let writeLock = Locked(())

    init(file: String?) throws {
        if let file {
            let fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw MountError.denialLog(path: file, errno: errno) }
            fileDescriptor = fd
        } else {
            fileDescriptor = nil
        }
    }

    /// `pid` is what the FUSE request carries: the calling thread's id. The
    /// line names the process it belongs to, as iOS does.
    func record(pid thread: pid_t, operation: SandboxOperation, path: String) {
        let pid = Self.processID(ofThread: thread)
        let line = "Sandbox: \(Self.processName(pid))(\(pid)) deny(1) \(operation.rawValue) \(Self.escaped(path))\n"
        emit(line)
    }

    /// A data protection refusal (P8):
    /// `DataProtection: <process>(<pid>) deny(1) <operation> <path> <class> <state>`.
    func recordDataProtection(pid thread: pid_t, operation: String, path: String, protection: ProtectionClass,
                              state: DeviceState) {
        let pid = Self.processID(ofThread: thread)
        emit("DataProtection: \(Self.processName(pid))(\(pid)) deny(1) \(operation) \(Self.escaped(path)) \(protection.rawValue) \(state.rawValue)\n")
    }

    /// Writes one whole line to standard error and the log file.
    private func emit(_ line: String) {
        writeLock.withLock { _ in
            var bytes = Array(line.utf8)
            _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if let fileDescriptor {
                _ = bytes.withUnsafeMutableBytes { write(fileDescriptor, $0.baseAddress, $0.count) }
            }
        }
    }

    /// A path with its control characters written as \n, \t or \xNN (and a
    /// backslash as \\), so that one denial is always one line.
    static func escaped(_ path: String) -> String {
        guard path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") }) else { return path }
        var result = ""
        for scalar in path.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// The process (thread group) a thread belongs to, from /proc/TID/status.
    static func processID(ofThread thread: pid_t) -> pid_t {
        guard let status = readSmallFile("/proc/\(thread)/status"),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Tgid:") }),
              let value = pid_t(line.dropFirst(5).trimmingPrefixSpaces()) else { return thread }
        return value
    }

    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
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

extension Substring {
    func trimmingPrefixSpaces() -> Substring { drop { $0 == " " || $0 == "\t" } }
}

extension String {
    func trimmingCharacters(in set: Character) -> String {
        var result = self
        while result.last == set { result.removeLast() }
        return result
    }
}
