import Glibc
import Locking
import Logging

/// Sends each message to the system log as syslog(3) does: one datagram
/// `<PRI>Mmm dd hh:mm:ss IDENT[PID]: MESSAGE` on the /dev/log socket, which
/// journald or a syslog daemon reads (facility daemon). Written here rather
/// than through openlog/syslog because those have one identifier per
/// process (the denial stream needs its own) and a fixed socket path (a
/// test gives its own: $APPSANDBOXFS_SYSLOG_SOCKET). Nothing listening: the
/// message is dropped, as syslog(3) drops it.
struct SyslogLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    let identifier: String
    private let socket: SyslogSocket

    /// $APPSANDBOXFS_SYSLOG_SOCKET, else /dev/log.
    static var socketPath: String { nonEmptyEnvironment("APPSANDBOXFS_SYSLOG_SOCKET") ?? "/dev/log" }

    init(identifier: String, socketPath: String) {
        self.identifier = identifier
        socket = SyslogSocket(path: socketPath)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let daemonFacility = 3
        let priority = daemonFacility * 8 + Self.severity(event.level)
        let text = onOneLine("\(event.message)")
        socket.send("<\(priority)>\(Self.timestamp()) \(identifier)[\(getpid())]: \(text)")
    }

    /// syslog's severities: 2 critical ... 7 debug.
    static func severity(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// "Nov 25 16:33:37", local time, as syslog(3) writes it.
    static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        localtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let count = strftime(&buffer, buffer.count, "%b %e %H:%M:%S", &parts)
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// `text` with each newline made a space: one message, one line (of syslog,
/// of the start's pipe). By bytes, with the standard library alone: the
/// driver's first message is logged before it says "ready", and Foundation's
/// replacingOccurrences cost 0.24 ms at its first use there.
func onOneLine(_ text: String) -> String {
    guard text.utf8.contains(UInt8(ascii: "\n")) else { return text }
    return String(decoding: text.utf8.map { $0 == UInt8(ascii: "\n") ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
}

/// The datagram socket to the system log of one handler (one per Logger
/// made: the driver makes a few), connected on first use and again after
/// the log daemon restarted.
final class SyslogSocket: Sendable {
    private let path: String
    private let descriptor = Locked<Int32>(-1)

    init(path: String) { self.path = path }

    deinit {
        descriptor.withLock { fd in if fd >= 0 { close(fd) } }
    }

    func send(_ message: String) {
        let bytes = Array(message.utf8)
        descriptor.withLock { fd in
            for _ in 0..<2 {
                if fd < 0 { fd = connect() }
                guard fd >= 0 else { return }
                if Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL)) >= 0 { return }
                close(fd)
                fd = -1
            }
        }
    }

    private func connect() -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return -1 }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let pathBytes = Array(path.utf8)
        guard pathBytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            return -1
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            return -1
        }
        return fd
    }
}
