import Glibc
import Logging

/// The driver's messages as lines on a descriptor (standard error, or the
/// test fixture's driver.log), one write(2) per message so that lines from
/// several threads never interleave: `appsandboxfs: warning: message`, or
/// just the message when `bare` (the denial lines).
public struct LineLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let descriptor: Int32
    private let bare: Bool

    public init(descriptor: Int32, bare: Bool) {
        self.descriptor = descriptor
        self.bare = bare
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let text = String("\(event.message)".map { $0 == "\n" ? " " : $0 })
        var line = bare ? text : "appsandboxfs: \(event.level): \(text)"
        line += "\n"
        var bytes = Array(line.utf8)
        _ = write(descriptor, &bytes, bytes.count)
    }
}
