/// A pax global extended header (POSIX.1-2001, typeflag `g`): the block an
/// archive may start with, holding `keyword=value` records that concern the
/// whole archive. A backup starts with one that names the app
/// (`APPSANDBOXFS.appname`), so that `restore` can lay out the bundle without
/// being told. Readers that do not know a vendor keyword ignore it (GNU tar
/// lists and extracts such an archive as any other).
///
/// GNU tar's `--pax-option` cannot carry a comma in a value, so the header
/// is written here, in front of tar's own output.
public enum PaxGlobalHeader {
    public static let blockSize = 512
    public static let appNameKeyword = "APPSANDBOXFS.appname"
    /// The container's default protection class (P4, P9): it lives on the
    /// backing root, which is no member of the archive.
    public static let defaultProtectionKeyword = "APPSANDBOXFS.protection.default"

    /// The header blocks for `records` (keyword, value), in order.
    public static func encode(_ records: [(String, String)]) -> [UInt8] {
        var data: [UInt8] = []
        for (keyword, value) in records { data += record(keyword, value) }
        var header = [UInt8](repeating: 0, count: blockSize)
        func put(_ text: String, at offset: Int) {
            for (index, byte) in text.utf8.enumerated() { header[offset + index] = byte }
        }
        func octal(_ value: Int, width: Int) -> String {
            let digits = String(value, radix: 8)
            return String(repeating: "0", count: max(0, width - 1 - digits.count)) + digits
        }
        put("pax_global_header", at: 0)
        put(octal(0o644, width: 8), at: 100)   // mode
        put(octal(0, width: 8), at: 108)       // uid
        put(octal(0, width: 8), at: 116)       // gid
        put(octal(data.count, width: 12), at: 124)
        put(octal(0, width: 12), at: 136)      // mtime
        header[156] = UInt8(ascii: "g")
        put("ustar", at: 257)                  // magic, NUL-terminated
        put("00", at: 263)                     // version
        // The checksum: the sum of all bytes with its own field as spaces.
        for index in 148..<156 { header[index] = UInt8(ascii: " ") }
        let sum = header.reduce(0) { $0 + Int($1) }
        put(octal(sum, width: 7), at: 148)
        header[154] = 0
        header[155] = UInt8(ascii: " ")
        let padding = (blockSize - data.count % blockSize) % blockSize
        return header + data + [UInt8](repeating: 0, count: padding)
    }

    /// One record: "<length> <keyword>=<value>\n", where the length counts
    /// the whole record, its own digits included.
    static func record(_ keyword: String, _ value: String) -> [UInt8] {
        let body = Array(" \(keyword)=\(value)\n".utf8)
        var length = body.count + 1
        while String(length).utf8.count + body.count != length { length = String(length).utf8.count + body.count }
        return Array(String(length).utf8) + body
    }

    /// How many bytes of an archive's start to read to see its global header:
    /// the first block says (nil when the archive does not start with one).
    public static func headerLength(firstBlock block: [UInt8]) -> Int? {
        guard block.count >= blockSize, block[156] == UInt8(ascii: "g"),
              Array(block[257..<262]) == Array("ustar".utf8),
              let size = parseOctal(block[124..<136]), size <= maximumSize else { return nil }
        return blockSize + (size + blockSize - 1) / blockSize * blockSize
    }

    /// The records of a global header, given at least `headerLength` bytes
    /// of the archive's start; empty when there is none.
    public static func decode(_ bytes: [UInt8]) -> [String: String] {
        guard headerLength(firstBlock: Array(bytes.prefix(blockSize))) != nil,
              let size = parseOctal(bytes[124..<136]), size <= maximumSize, bytes.count >= blockSize + size else { return [:] }
        var records: [String: String] = [:]
        var rest = bytes[blockSize..<(blockSize + size)]
        while !rest.isEmpty {
            guard let space = rest.firstIndex(of: UInt8(ascii: " ")),
                  let length = Int(String(decoding: rest[rest.startIndex..<space], as: UTF8.self)),
                  // The record must hold its length, the space and the newline.
                  length > space - rest.startIndex + 1, rest.count >= length else { break }
            let record = rest[(space + 1)..<(rest.startIndex + length - 1)]  // without the newline
            if let equals = record.firstIndex(of: UInt8(ascii: "=")) {
                records[String(decoding: record[record.startIndex..<equals], as: UTF8.self)] =
                    String(decoding: record[(equals + 1)...], as: UTF8.self)
            }
            rest = rest.dropFirst(length)
        }
        return records
    }

    /// An archive is untrusted input: a global header larger than this is
    /// not read (its records name the app, a few hundred bytes).
    static let maximumSize = 1 << 20

    /// An octal number field: digits 0-7 only (no sign), padded with spaces
    /// or NULs.
    static func parseOctal(_ field: ArraySlice<UInt8>) -> Int? {
        let digits = field.drop { $0 == UInt8(ascii: " ") }.prefix { $0 != 0 && $0 != UInt8(ascii: " ") }
        guard !digits.isEmpty, digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "7")).contains($0) }) else { return nil }
        return Int(String(decoding: digits, as: UTF8.self), radix: 8)
    }
}
