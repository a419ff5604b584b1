// Reading a script: lines into tokens, tokens into typed arguments.
// The grammar is in main.swift.

import Glibc

/// A mistake in the script itself (not a failing system call).
struct ScriptError: Error, CustomStringConvertible {
    var description: String
    init(_ text: String) { description = text }
}

/// Splits one line into tokens (as bytes: paths and data need not be UTF-8).
/// A token is a run of bare characters and "quoted" pieces, up to a space or
/// tab; a quoted piece may be followed by *N to repeat it N times. `#` at the
/// start of a token comments out the rest of the line.
func tokenize(_ line: [UInt8]) throws -> [[UInt8]] {
    var tokens: [[UInt8]] = []
    var i = 0
    let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0d }
    while i < line.count {
        if isSpace(line[i]) { i += 1; continue }
        if line[i] == UInt8(ascii: "#") { break }
        var token: [UInt8] = []
        while i < line.count, !isSpace(line[i]) {
            guard line[i] == quote else { token.append(line[i]); i += 1; continue }
            // A quoted piece.
            i += 1
            var piece: [UInt8] = []
            var closed = false
            while i < line.count {
                let c = line[i]
                i += 1
                if c == quote { closed = true; break }
                guard c == backslash else { piece.append(c); continue }
                guard i < line.count else { throw ScriptError("backslash at end of line") }
                let e = line[i]
                i += 1
                switch e {
                case UInt8(ascii: "n"): piece.append(0x0a)
                case UInt8(ascii: "t"): piece.append(0x09)
                case UInt8(ascii: "r"): piece.append(0x0d)
                case UInt8(ascii: "0"): piece.append(0x00)
                case UInt8(ascii: "x"):
                    guard i + 2 <= line.count,
                          let v = UInt8(String(decoding: line[i..<i + 2], as: UTF8.self), radix: 16)
                    else { throw ScriptError("bad \\x escape") }
                    piece.append(v)
                    i += 2
                default: piece.append(e)
                }
            }
            guard closed else { throw ScriptError("unterminated quote") }
            // An optional repeat count: "ab"*3 is ababab.
            if i < line.count, line[i] == UInt8(ascii: "*") {
                i += 1
                var digits = ""
                while i < line.count, (0x30...0x39).contains(line[i]) {
                    digits.append(Character(UnicodeScalar(line[i])))
                    i += 1
                }
                guard let n = Int(digits) else { throw ScriptError("bad repeat count") }
                token += Array(repeating: piece, count: n).joined()
            } else {
                token += piece
            }
        }
        tokens.append(token)
    }
    return tokens
}

/// The arguments of one operation, taken from the front one by one.
struct Arguments {
    private var rest: ArraySlice<[UInt8]>
    let slots: [Int: Int32]

    init(_ tokens: ArraySlice<[UInt8]>, slots: [Int: Int32]) {
        rest = tokens
        self.slots = slots
    }

    var isEmpty: Bool { rest.isEmpty }

    mutating func raw(_ what: String) throws -> [UInt8] {
        guard let t = rest.popFirst() else { throw ScriptError("missing \(what)") }
        return t
    }

    mutating func word(_ what: String) throws -> String {
        String(decoding: try raw(what), as: UTF8.self)
    }

    mutating func optionalWord() -> String? {
        rest.popFirst().map { String(decoding: $0, as: UTF8.self) }
    }

    /// A path, ready to pass to C (NUL-terminated).
    mutating func path(_ what: String = "path") throws -> [CChar] {
        try raw(what).map { CChar(bitPattern: $0) } + [0]
    }

    /// Data to write.
    mutating func data() throws -> [UInt8] { try raw("data") }

    /// A decimal number, with an optional k/m/g/t suffix (powers of 1024).
    mutating func number(_ what: String) throws -> Int {
        try parseNumber(try word(what), what)
    }

    mutating func int(_ what: String) throws -> Int { try number(what) }

    /// An octal mode such as 644, 0644 or 4755.
    mutating func mode(_ what: String = "mode") throws -> mode_t {
        let w = try word(what)
        guard let m = mode_t(w, radix: 8) else { throw ScriptError("bad \(what) \(w)") }
        return m
    }

    mutating func optionalMode(default value: mode_t) throws -> mode_t {
        rest.isEmpty ? value : try mode()
    }

    /// The descriptor held in a numbered slot, or -1 (so that the call fails
    /// with EBADF) when the slot is empty.
    mutating func fd() throws -> Int32 {
        let n = try int("slot")
        return slots[n] ?? -1
    }

    /// FLAG|FLAG|...: each name looked up in `table`, with or without the
    /// given prefix, case-insensitively; "0" means none.
    mutating func flags<T: BinaryInteger>(_ what: String, _ table: [String: T], prefix: String = "") throws -> T {
        try parseFlags(try word(what), what, table, prefix: prefix)
    }

    func done() throws {
        if let extra = rest.first {
            throw ScriptError("unexpected argument \(String(decoding: extra, as: UTF8.self))")
        }
    }
}

func parseNumber(_ w: String, _ what: String) throws -> Int {
    var text = Substring(w)
    var scale = 1
    switch text.last {
    case "k", "K": scale = 1 << 10
    case "m", "M": scale = 1 << 20
    case "g", "G": scale = 1 << 30
    case "t", "T": scale = 1 << 40
    default: break
    }
    if scale != 1 { text = text.dropLast() }
    guard let v = Int(text) else { throw ScriptError("bad \(what) \(w)") }
    return v * scale
}

func parseFlags<T: BinaryInteger>(_ w: String, _ what: String, _ table: [String: T], prefix: String) throws -> T {
    if w == "0" { return 0 }
    var value: T = 0
    for part in w.split(separator: "|") {
        var name = part.uppercased()
        if !prefix.isEmpty, name.hasPrefix(prefix) { name.removeFirst(prefix.count) }
        guard let v = table[name] else { throw ScriptError("unknown \(what) \(part)") }
        value |= v
    }
    return value
}
