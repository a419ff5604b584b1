// A record of everything in a folder tree, taken straight from the backing
// file system (never through a mount), so that a test can prove a denied
// operation changed nothing: names, types, modes, owners, sizes, link counts,
// modification and change times, contents (hashed), link targets, device
// numbers and extended attributes. Access times are left out: reading is
// allowed to change them.
//
//   let before = RulesTreeSnapshot(of: mounted.backing)
//   ... a denied operation ...
//   let changes = RulesTreeSnapshot(of: mounted.backing).changes(since: before)
//   #expect(changes.isEmpty, "\(changes)")
//
// The walk never follows a symbolic link (every step is an *at() call with
// O_NOFOLLOW or AT_SYMLINK_NOFOLLOW), so a tree holding links to `/` is safe.

import Glibc

struct RulesTreeSnapshot: Equatable {
    /// What is compared: `full` for a denial, `ignoringLinkCounts` when a hard
    /// link from elsewhere may have gone (T3: a tmp link to a Documents file).
    enum Detail { case full, ignoringLinkCounts }

    struct Entry: Equatable {
        var type: String
        var mode: UInt32
        var uid: UInt32
        var gid: UInt32
        var size: Int64
        var nlink: UInt64
        var mtime: String
        var ctime: String
        /// Contents hash (files), target (links), device (devices), "" otherwise.
        var content: String
        /// name=hex(value), sorted.
        var xattrs: [String]
    }

    /// Relative path (newlines and other control bytes escaped) -> entry.
    /// "." is the root folder itself.
    private(set) var entries: [String: Entry] = [:]
    let root: String

    /// Snapshots `root`; `excluding` names relative paths whose subtrees are
    /// left out (the folder itself is still recorded).
    init(of root: String, detail: Detail = .full, excluding: Set<String> = []) {
        self.root = root
        let fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            entries["."] = Entry(type: "missing (\(posixError(errno)))", mode: 0, uid: 0, gid: 0, size: 0, nlink: 0,
                                 mtime: "", ctime: "", content: "", xattrs: [])
            return
        }
        defer { close(fd) }
        var st = stat()
        fstat(fd, &st)
        entries["."] = Self.entry(st, parent: fd, name: nil, ownFD: fd, detail: detail)
        walk(fd, prefix: "", detail: detail, excluding: excluding)
    }

    private mutating func walk(_ folder: Int32, prefix: String, detail: Detail, excluding: Set<String>) {
        for rawName in Self.names(in: folder) {
            let display = Self.display(rawName)
            let path = prefix.isEmpty ? display : prefix + "/" + display
            var st = stat()
            guard fstatat(folder, rawName, &st, AT_SYMLINK_NOFOLLOW) == 0 else {
                entries[path] = Entry(type: "vanished", mode: 0, uid: 0, gid: 0, size: 0, nlink: 0, mtime: "",
                                      ctime: "", content: "", xattrs: [])
                continue
            }
            let type = st.st_mode & S_IFMT
            var ownFD: Int32 = -1
            if type == S_IFDIR {
                ownFD = openat(folder, rawName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            } else if type == S_IFREG {
                ownFD = openat(folder, rawName, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
            }
            defer { if ownFD >= 0 { close(ownFD) } }
            entries[path] = Self.entry(st, parent: folder, name: rawName, ownFD: ownFD, detail: detail)
            if type == S_IFDIR, ownFD >= 0, !excluding.contains(path) {
                walk(ownFD, prefix: path, detail: detail, excluding: excluding)
            }
        }
    }

    private static func entry(_ st: stat, parent: Int32, name: [CChar]?, ownFD: Int32, detail: Detail) -> Entry {
        let type: String
        var content = ""
        switch st.st_mode & S_IFMT {
        case S_IFDIR: type = "dir"
        case S_IFREG:
            type = "file"
            content = ownFD >= 0 ? hashContents(ownFD, size: Int64(st.st_size)) : "unreadable(\(posixError(errno)))"
        case S_IFLNK:
            type = "symlink"
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = name.map { readlinkat(parent, $0, &buffer, buffer.count - 1) } ?? -1
            content = n >= 0 ? "-> " + display(Array(buffer[0..<n])) : "unreadable link"
        case S_IFIFO: type = "fifo"
        case S_IFSOCK: type = "socket"
        case S_IFCHR: type = "char"; content = "rdev \(st.st_rdev)"
        case S_IFBLK: type = "block"; content = "rdev \(st.st_rdev)"
        default: type = "unknown"
        }
        let ignoreLinks = detail == .ignoringLinkCounts
        return Entry(
            type: type, mode: UInt32(st.st_mode & 0o7777), uid: st.st_uid, gid: st.st_gid,
            size: type == "dir" ? 0 : Int64(st.st_size),
            nlink: ignoreLinks ? 0 : UInt64(st.st_nlink),
            mtime: "\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)",
            ctime: ignoreLinks ? "" : "\(st.st_ctim.tv_sec).\(st.st_ctim.tv_nsec)",
            content: content,
            xattrs: xattrs(ownFD: ownFD, parent: parent, name: name, isLink: st.st_mode & S_IFMT == S_IFLNK))
    }

    /// FNV-1a of the contents; for files over 16 MiB, of the first and last
    /// MiB (the rule tests never put such files where a denial could touch them).
    private static func hashContents(_ fd: Int32, size: Int64) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var buffer = [UInt8](repeating: 0, count: 65536)
        func absorb(from start: Int64, count: Int64) {
            var offset = start
            let end = start + count
            while offset < end {
                let n = pread(fd, &buffer, Int(min(Int64(buffer.count), end - offset)), off_t(offset))
                if n <= 0 { return }
                for byte in buffer[0..<n] {
                    hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
                }
                offset += Int64(n)
            }
        }
        if size > 16 << 20 {
            absorb(from: 0, count: 1 << 20)
            absorb(from: size - (1 << 20), count: 1 << 20)
        } else {
            absorb(from: 0, count: size)
        }
        return "fnv1a " + String(hash, radix: 16)
    }

    /// The extended attributes, through the entry's own descriptor or, for a
    /// link or a special file, through /proc/self/fd/<parent>/<name> with the
    /// l* calls (which do not follow the last component).
    private static func xattrs(ownFD: Int32, parent: Int32, name: [CChar]?, isLink: Bool) -> [String] {
        let path: String
        if ownFD >= 0 {
            path = "/proc/self/fd/\(ownFD)"
        } else if let name {
            path = "/proc/self/fd/\(parent)/" + String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        } else {
            return []
        }
        // /proc/self/fd/N is itself a magic link: getxattr follows it to the
        // open file; for a named entry, llistxattr keeps to the entry.
        let follow = ownFD >= 0
        let size = follow ? RulesLinux.listxattr(path, nil, 0) : RulesLinux.llistxattr(path, nil, 0)
        guard size > 0 else { return size < 0 ? ["listxattr: \(posixError(errno))"] : [] }
        var list = [CChar](repeating: 0, count: size)
        let count = follow ? RulesLinux.listxattr(path, &list, size) : RulesLinux.llistxattr(path, &list, size)
        guard count > 0 else { return [] }
        var out: [String] = []
        for nameBytes in list[0..<count].split(separator: 0) {
            let attribute = String(decoding: nameBytes.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var value = [UInt8](repeating: 0, count: 65536)
            let n = value.withUnsafeMutableBytes {
                follow ? RulesLinux.getxattr(path, attribute, $0.baseAddress, $0.count)
                       : RulesLinux.lgetxattr(path, attribute, $0.baseAddress, $0.count)
            }
            let hex = n >= 0 ? value[0..<n].map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() : posixError(errno)
            out.append(attribute + "=" + hex)
        }
        return out.sorted()
    }

    /// Raw NUL-terminated names in a folder, without . and ..
    private static func names(in folder: Int32) -> [[CChar]] {
        let fd = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0, let stream = fdopendir(fd) else { return [] }
        defer { closedir(stream) }
        var names: [[CChar]] = []
        while let entry = readdir(stream) {
            let name: [CChar] = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) {
                    Array(UnsafeBufferPointer(start: $0, count: strlen($0) + 1))
                }
            }
            if name != [0x2E, 0] && name != [0x2E, 0x2E, 0] { names.append(name) }
        }
        return names
    }

    /// A name for messages: control bytes and backslashes escaped.
    private static func display(_ raw: [CChar]) -> String {
        var out = ""
        for c in raw where c != 0 {
            let byte = UInt8(bitPattern: c)
            switch byte {
            case 0x0A: out += "\\n"
            case 0x5C: out += "\\\\"
            case 0..<0x20, 0x7F: out += "\\x" + String(byte, radix: 16)
            default: out.unicodeScalars.append(Unicode.Scalar(byte))
            }
        }
        // Non-ASCII bytes were appended one by one as Latin-1; fine for a key.
        return out
    }

    /// The relative paths of every entry (sorted), "." for the root.
    var paths: [String] { entries.keys.sorted() }

    func entry(_ path: String) -> Entry? { entries[path] }

    /// What differs, one line per path: "+ path" (new), "- path" (gone),
    /// "~ path: field a -> b" (changed). Empty when nothing changed.
    func changes(since before: RulesTreeSnapshot) -> [String] {
        var lines: [String] = []
        for path in Set(before.entries.keys).union(entries.keys).sorted() {
            switch (before.entries[path], entries[path]) {
            case (nil, let now?): lines.append("+ \(path) (\(now.type))")
            case (let was?, nil): lines.append("- \(path) (\(was.type))")
            case (let was?, let now?) where was != now:
                var fields: [String] = []
                if was.type != now.type { fields.append("type \(was.type) -> \(now.type)") }
                if was.mode != now.mode { fields.append("mode \(String(was.mode, radix: 8)) -> \(String(now.mode, radix: 8))") }
                if was.uid != now.uid || was.gid != now.gid { fields.append("owner \(was.uid):\(was.gid) -> \(now.uid):\(now.gid)") }
                if was.size != now.size { fields.append("size \(was.size) -> \(now.size)") }
                if was.nlink != now.nlink { fields.append("nlink \(was.nlink) -> \(now.nlink)") }
                if was.mtime != now.mtime { fields.append("mtime \(was.mtime) -> \(now.mtime)") }
                if was.ctime != now.ctime { fields.append("ctime \(was.ctime) -> \(now.ctime)") }
                if was.content != now.content { fields.append("content \(was.content) -> \(now.content)") }
                if was.xattrs != now.xattrs { fields.append("xattrs \(was.xattrs) -> \(now.xattrs)") }
                lines.append("~ \(path): " + fields.joined(separator: ", "))
            default: break
            }
        }
        return lines
    }
}
