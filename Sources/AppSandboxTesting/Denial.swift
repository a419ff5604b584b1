import Foundation

/// One line of the denial log, which the driver writes in the iOS form
///
///     Sandbox: touch(4242) deny(1) file-write-create /tmp/…/mnt/Documents/Inbox/new.txt
///
/// for each change the sandbox refused (EROFS or EPERM from a rule).
public struct Denial: Sendable, Hashable, CustomStringConvertible {
    /// The process that made the call, as in /proc/PID/comm ("touch"),
    /// unescaped.
    public var process: String
    public var pid: Int32
    /// The sandbox operation: file-write-create, file-write-data,
    /// file-write-unlink, file-write-mode, file-write-owner, file-write-times,
    /// file-write-xattr, file-link, file-write-rename or file-read-data.
    public var operation: String
    /// The absolute path through the mountpoint, as the process used it.
    public var path: String
    /// The line as the driver wrote it.
    public var line: String

    public var description: String { line }

    /// Parses one log line; nil for a line that is not a denial.
    public init?(line: String) {
        guard let header = Denial.header(of: line, prefix: "Sandbox: ") else { return nil }
        let rest = header.rest
        guard let space = rest.firstIndex(of: " ") else { return nil }
        self.process = header.process
        self.pid = header.pid
        self.operation = String(rest[..<space])
        self.path = Denial.unescape(String(rest[rest.index(after: space)...]))
        self.line = line
    }

    /// What every kind of denial line starts with,
    /// `<prefix><process>(<pid>) deny(1) `: the process (unescaped), its
    /// pid, and the rest of the line; nil for another line.
    static func header(of line: String, prefix: String) -> (process: String, pid: Int32, rest: Substring)? {
        guard line.hasPrefix(prefix), let deny = line.range(of: " deny(1) ") else { return nil }
        // "<process>(<pid>)": the process name may itself hold parentheses.
        let who = line[line.index(line.startIndex, offsetBy: prefix.count)..<deny.lowerBound]
        guard who.hasSuffix(")"), let open = who.lastIndex(of: "("),
              let pid = Int32(who[who.index(after: open)..<who.index(before: who.endIndex)]) else { return nil }
        return (unescape(String(who[..<open])), pid, line[deny.upperBound...])
    }

    /// The log writes a newline, a tab, a backslash, other control
    /// characters and bytes that are not UTF-8 in a process name or a path as
    /// \n, \t, \\ and \xNN (and a space in a process name as \x20), so a
    /// denial is one line (docs/rules.md, "The denial line").
    public static func unescape(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var bytes: [UInt8] = []
        var input = Array(text.utf8)[...]
        while let byte = input.popFirst() {
            guard byte == UInt8(ascii: "\\"), let next = input.first else {
                bytes.append(byte)
                continue
            }
            switch next {
            case UInt8(ascii: "n"): bytes.append(0x0A); input = input.dropFirst()
            case UInt8(ascii: "t"): bytes.append(0x09); input = input.dropFirst()
            case UInt8(ascii: "\\"): bytes.append(byte); input = input.dropFirst()
            case UInt8(ascii: "x") where input.count >= 3:
                if let value = UInt8(String(decoding: input.dropFirst().prefix(2), as: UTF8.self), radix: 16) {
                    bytes.append(value)
                    input = input.dropFirst(3)
                } else {
                    bytes.append(byte)
                }
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
