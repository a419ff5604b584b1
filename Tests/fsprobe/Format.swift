// How values are printed: only what two directories on the same kind of
// file system must agree on (no inode numbers, devices or absolute times).

import Glibc

/// Bytes as a quoted string: printable ASCII as is, the rest escaped
/// (\n \t \\ \" \xHH). Data longer than 80 bytes prints as its FNV-1a hash.
func quoted(_ bytes: some Collection<UInt8>) -> String {
    if bytes.count > 80 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
        return "fnv1a=" + hex(h, width: 16)
    }
    var s = "\""
    for b in bytes {
        switch b {
        case 0x0a: s += "\\n"
        case 0x09: s += "\\t"
        case UInt8(ascii: "\""): s += "\\\""
        case UInt8(ascii: "\\"): s += "\\\\"
        case 0x20...0x7e: s.append(Character(UnicodeScalar(b)))
        default: s += "\\x" + hex(UInt64(b), width: 2)
        }
    }
    return s + "\""
}

/// A name (file, xattr) bare when it is plain, else quoted.
func name(_ bytes: [UInt8]) -> String {
    let plain = !bytes.isEmpty && bytes.count <= 80 && bytes.allSatisfy {
        (0x21...0x7e).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\")
    }
    return plain ? String(decoding: bytes, as: UTF8.self) : quoted(bytes)
}

func hex(_ v: UInt64, width: Int) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: max(0, width - s.count)) + s
}

func octal(_ m: mode_t) -> String {
    let s = String(m, radix: 8)
    return String(repeating: "0", count: max(0, 4 - s.count)) + s
}

func typeName(_ mode: mode_t) -> String {
    switch mode & S_IFMT {
    case S_IFREG: "reg"
    case S_IFDIR: "dir"
    case S_IFLNK: "lnk"
    case S_IFIFO: "fifo"
    case S_IFSOCK: "sock"
    case S_IFCHR: "chr"
    case S_IFBLK: "blk"
    default: "type?\(mode & S_IFMT)"
    }
}

func timeText(_ t: timespec) -> String {
    let ns = String(t.tv_nsec)
    return "\(t.tv_sec)." + String(repeating: "0", count: 9 - ns.count) + ns
}

/// The fields `stat` prints when the script names none. Size is left out for
/// folders, whose size is a detail of the file system's directory format.
let defaultStatFields = ["type", "mode", "nlink", "size", "uid", "gid"]

/// "type=reg mode=0644 nlink=1 size=5 uid=0 gid=0", or the fields asked for.
/// Times print only when asked (as seconds.nanoseconds), since they differ
/// between two runs unless a script set them.
func statText(_ st: stat, fields: [String]) throws -> String {
    let isDefault = fields.isEmpty
    var parts: [String] = []
    for field in isDefault ? defaultStatFields : fields {
        switch field {
        case "type": parts.append("type=" + typeName(st.st_mode))
        case "mode": parts.append("mode=" + octal(st.st_mode & 0o7777))
        case "nlink": parts.append("nlink=\(st.st_nlink)")
        case "size":
            if isDefault, st.st_mode & S_IFMT == S_IFDIR { continue }
            parts.append("size=\(st.st_size)")
        case "uid": parts.append("uid=\(st.st_uid)")
        case "gid": parts.append("gid=\(st.st_gid)")
        case "blocks": parts.append("blocks=\(st.st_blocks)")
        case "rdev": parts.append("rdev=\(st.st_rdev)")
        case "atime": parts.append("atime=" + timeText(st.st_atim))
        case "mtime": parts.append("mtime=" + timeText(st.st_mtim))
        case "ctime": parts.append("ctime=" + timeText(st.st_ctim))
        default: throw ScriptError("unknown stat field \(field)")
        }
    }
    return parts.joined(separator: " ")
}

/// How a time moved since a stamp: same, later or earlier.
func compare(_ now: timespec, _ then: timespec) -> String {
    if now.tv_sec == then.tv_sec && now.tv_nsec == then.tv_nsec { return "same" }
    return (now.tv_sec, now.tv_nsec) > (then.tv_sec, then.tv_nsec) ? "later" : "earlier"
}
