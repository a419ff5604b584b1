import Foundation
import Glibc

/// The JSON every verb prints with --json: one object, keys in camelCase
/// and sorted, pretty-printed, slashes unescaped, a `schema` key naming the
/// format and its version (as `backup-report --json`).
public enum JSONOutput {
    public static func data<T: Encodable>(_ value: T) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }

    public static func print<T: Encodable>(_ value: T) throws {
        FileHandle.standardOutput.write(try data(value) + Data("\n".utf8))
    }
}

/// ISO 8601 in UTC to the second ("2026-11-26T03:45:01Z", as
/// ISO8601DateFormatter writes it), from the C library: the formatter loads
/// ICU's calendar and time zone data on first use, which cost a starting
/// driver about 3 ms before it could say "ready".
public func iso8601(_ date: Date) -> String {
    var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
    var parts = tm()
    gmtime_r(&seconds, &parts)
    var text = [CChar](repeating: 0, count: 32)
    let count = strftime(&text, text.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
    return String(decoding: text[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
