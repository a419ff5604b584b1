import FuseKit
import Glibc
import Locking
import Logging
import SandboxPolicy

/// Writes one line per sandbox denial, in the iOS form
/// `Sandbox: <process>(<pid>) deny(1) <operation> <path>`,
/// to standard error (or the denial stream `logger`) and, if asked,
/// appended to a file.
final class DenialLog: Sendable {
    private let fileDescriptor: Int32?
    /// Lines written so far, behind the lock that keeps two lines from
    /// interleaving. (Not `Locked(())`: ThreadSanitizer reports the
    /// exclusive access to a zero-size value as a race with the object's
    /// own header.)
    private let written = Locked<UInt64>(0)
    private let logger: Logger?

    init(file: String?, logger: Logger? = nil) throws {
        self.logger = logger
        if let file {
            // Never through a final symbolic link: the driver runs as root.
            let fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw MountError.denialLog(path: file, errno: errno) }
            fileDescriptor = fd
        } else {
            fileDescriptor = nil
        }
    }

    /// `pid` is what the FUSE request carries: the calling thread's id. The
    /// line names the process it belongs to, as iOS does. Every field that
    /// comes from outside (the process name, which any process sets for
    /// itself with prctl(PR_SET_NAME), and the path) is escaped, so that one
    /// denial is always one line with no control bytes in it.
    func record(pid thread: pid_t, operation: SandboxOperation, path: String) {
        record(pid: thread, operation: operation, path: Array(path.utf8))
    }

    /// The same with the path as bytes (names are bytes: one that is not
    /// UTF-8 is escaped byte for byte, not replaced).
    func record(pid thread: pid_t, operation: SandboxOperation, path: [UInt8]) {
        let pid = Self.processID(ofThread: thread)
        emit(Self.line(process: Self.processName(pid), pid: pid, operation: operation.rawValue, path: path))
    }

    /// A data protection refusal (P8), escaped as the sandbox's lines are:
    /// `DataProtection: <process>(<pid>) deny(1) <operation> <path> <class> <state>`.
    func recordDataProtection(pid thread: pid_t, operation: String, path: [UInt8], protection: ProtectionClass,
                              state: DeviceState) {
        let pid = Self.processID(ofThread: thread)
        emit(Self.line(process: Self.processName(pid), pid: pid, operation: operation, path: path,
                       kind: "DataProtection", trailer: " \(protection.rawValue) \(state.rawValue)"))
    }

    /// Writes one whole line to standard error and the log file.
    private func emit(_ line: String) {
        if let logger { logger.notice("\(line.hasSuffix("\n") ? String(line.dropLast()) : line)") }
        written.withLock { count in
            count += 1
            var bytes = Array(line.utf8)
            if logger == nil { _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) } }
            if let fileDescriptor {
                _ = bytes.withUnsafeMutableBytes { write(fileDescriptor, $0.baseAddress, $0.count) }
            }
        }
    }

    /// One denial line, newline included. `kind` names the refuser
    /// (Sandbox, or DataProtection with the class and state as `trailer`).
    static func line(process: [UInt8], pid: pid_t, operation: String, path: [UInt8], kind: String = "Sandbox",
                     trailer: String = "") -> String {
        "\(kind): \(escaped(process, space: true))(\(pid)) deny(1) \(escaped(Array(operation.utf8))) \(escaped(path))\(trailer)\n"
    }

    /// Bytes as log text (docs/rules.md, "The denial line"): a newline, a tab
    /// and a backslash become \n, \t and \\; any other control byte (C0,
    /// DEL, and the C1 controls U+0080-U+009F, which some terminals obey),
    /// and every byte that is not valid UTF-8, becomes \xNN. With `space`
    /// (the process name) a space becomes \x20 too, so that the name, which
    /// comes before ` deny(1) `, can never hold that marker.
    static func escaped(_ bytes: [UInt8], space: Bool = false) -> String {
        var result = ""
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        var offset = 0
        func hex(_ byte: UInt8) -> String {
            let digits = String(byte, radix: 16, uppercase: true)
            return "\\x" + (digits.count == 1 ? "0" + digits : digits)
        }
        loop: while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                let scalar = Unicode.UTF8.decode(encoded)
                offset += encoded.count
                switch scalar {
                case "\n": result += "\\n"
                case "\t": result += "\\t"
                case "\\": result += "\\\\"
                case " " where space: result += "\\x20"
                case _ where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value):
                    result += encoded.map(hex).joined()
                default: result.unicodeScalars.append(scalar)
                }
            case .error(let length):
                result += bytes[offset..<offset + length].map(hex).joined()
                offset += length
            case .emptyInput:
                break loop
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

    /// The short command name of a process, as in /proc/PID/comm, as the
    /// raw bytes the process gave itself.
    static func processName(_ pid: pid_t) -> [UInt8] {
        let fd = open("/proc/\(pid)/comm", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return Array("unknown".utf8) }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return Array("unknown".utf8) }
        // The kernel ends the name with one newline of its own.
        return Array(buffer[0..<(buffer[count - 1] == 0x0A ? count - 1 : count)])
    }

    deinit {
        if let fileDescriptor { close(fileDescriptor) }
    }
}

extension String {
    /// The text as a denial line writes a path (`DenialLog.escaped`): no
    /// control byte left, so that a name chosen by someone else can be
    /// printed to a terminal (`appsandboxfs status`'s table).
    public var escapedForTerminal: String { DenialLog.escaped(Array(utf8)) }
}

extension Substring {
    func trimmingPrefixSpaces() -> Substring { drop { $0 == " " || $0 == "\t" } }
}
