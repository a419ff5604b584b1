// The operations: one case per system call, each printing one result.

import Glibc
import POSIXHelpers

/// What one operation printed: `ok`, `ok VALUE` or `err ERRNONAME`.
enum Outcome {
    case ok(String?)
    case err(Int32)
    /// A failure inside `repeat`, at the given round.
    case errAt(Int32, Int)

    var line: String {
        switch self {
        case .ok(nil): "ok"
        case .ok(let value?): value.isEmpty ? "ok" : "ok " + value
        case .err(let code): "err " + errnoName(code)
        case .errAt(let code, let index): "err \(errnoName(code)) at \(index)"
        }
    }
}

/// -1 means failure, as most calls say.
private func status(_ result: some BinaryInteger, value: String? = nil) -> Outcome {
    result < 0 ? .err(errno) : .ok(value)
}

private let openFlags: [String: Int32] = [
    "RDONLY": O_RDONLY, "WRONLY": O_WRONLY, "RDWR": O_RDWR, "CREAT": O_CREAT,
    "EXCL": O_EXCL, "TRUNC": O_TRUNC, "APPEND": O_APPEND, "DIRECTORY": O_DIRECTORY,
    "NOFOLLOW": O_NOFOLLOW, "NONBLOCK": O_NONBLOCK, "SYNC": O_SYNC,
    "DSYNC": O_DSYNC, "CLOEXEC": O_CLOEXEC, "NOCTTY": O_NOCTTY, "PATH": O_PATH_,
    "TMPFILE": O_TMPFILE_, "DIRECT": O_DIRECT_, "NOATIME": O_NOATIME_,
]
private let accessModes: [String: Int32] = ["F": F_OK, "R": R_OK, "W": W_OK, "X": X_OK]
private let renameFlags: [String: UInt32] = [
    "NOREPLACE": RENAME_NOREPLACE_, "EXCHANGE": RENAME_EXCHANGE_, "WHITEOUT": RENAME_WHITEOUT_,
]
private let fallocateFlags: [String: Int32] = [
    "KEEP_SIZE": FALLOC_FL_KEEP_SIZE_, "PUNCH_HOLE": FALLOC_FL_PUNCH_HOLE_,
    "COLLAPSE_RANGE": FALLOC_FL_COLLAPSE_RANGE_, "ZERO_RANGE": FALLOC_FL_ZERO_RANGE_,
    "INSERT_RANGE": FALLOC_FL_INSERT_RANGE_,
]
private let xattrFlags: [String: Int32] = ["CREATE": XATTR_CREATE_, "REPLACE": XATTR_REPLACE_]
private let whences: [String: Int32] = [
    "SET": SEEK_SET, "CUR": SEEK_CUR, "END": SEEK_END, "DATA": SEEK_DATA_, "HOLE": SEEK_HOLE_,
]
private let flockOps: [String: Int32] = ["SH": LOCK_SH, "EX": LOCK_EX, "UN": LOCK_UN, "NB": LOCK_NB]
private let lockTypes: [String: Int32] = ["RD": Int32(F_RDLCK), "WR": Int32(F_WRLCK), "UN": Int32(F_UNLCK)]

struct Interpreter {
    /// Open descriptors by the slot number the script gave them.
    var slots: [Int: Int32] = [:]
    /// Times recorded by `stamp`, by name: (atime, mtime, ctime).
    var stamps: [String: (timespec, timespec, timespec)] = [:]
    /// Open folder streams (opendir) by slot; a namespace apart from `slots`.
    var streams: [Int: OpaquePointer] = [:]

    /// stat of a path, or fstat of `@SLOT`.
    private func statTarget(_ target: [UInt8], _ st: inout stat) -> Int32 {
        if target.first == UInt8(ascii: "@") {
            let slot = Int(String(decoding: target.dropFirst(), as: UTF8.self)) ?? -1
            return Glibc.fstat(slots[slot] ?? -1, &st)
        }
        return stat(target.map { CChar(bitPattern: $0) } + [0], &st)
    }

    mutating func run(_ tokens: [[UInt8]]) throws -> Outcome {
        let op = String(decoding: tokens[0], as: UTF8.self)
        if op == "repeat" { return try repeatOperation(tokens) }
        var a = Arguments(tokens.dropFirst(), slots: slots)
        let outcome = try perform(op, &a)
        try a.done()
        return outcome
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private mutating func perform(_ op: String, _ a: inout Arguments) throws -> Outcome {
        switch op {
        // Descriptors.
        case "open":
            let slot = try a.int("slot")
            let path = try a.path()
            let flags = try a.flags("open flag", openFlags, prefix: "O_")
            let mode = try a.optionalMode(default: 0o644)
            let fd = Glibc.open(path, flags, mode)
            guard fd >= 0 else { return .err(errno) }
            if let old = slots[slot] { Glibc.close(old) }
            slots[slot] = fd
            return .ok(nil)
        case "close":
            let slot = try a.int("slot")
            let fd = slots.removeValue(forKey: slot) ?? -1
            return status(Glibc.close(fd))
        case "read":
            let fd = try a.fd(), count = try a.int("count")
            var buffer = [UInt8](repeating: 0, count: count)
            let n = Glibc.read(fd, &buffer, count)
            return n < 0 ? .err(errno) : .ok("\(n) " + quoted(buffer[0..<n]))
        case "pread":
            let fd = try a.fd(), count = try a.int("count"), offset = try a.number("offset")
            var buffer = [UInt8](repeating: 0, count: count)
            let n = Glibc.pread(fd, &buffer, count, offset)
            return n < 0 ? .err(errno) : .ok("\(n) " + quoted(buffer[0..<n]))
        case "write":
            let fd = try a.fd(), data = try a.data()
            let n = Glibc.write(fd, data, data.count)
            return status(n, value: "\(n)")
        case "pwrite":
            let fd = try a.fd(), data = try a.data(), offset = try a.number("offset")
            let n = Glibc.pwrite(fd, data, data.count, offset)
            return status(n, value: "\(n)")
        case "lseek":
            let fd = try a.fd(), offset = try a.number("offset")
            let whence = try a.flags("whence", whences, prefix: "SEEK_")
            let pos = Glibc.lseek(fd, offset, whence)
            return status(pos, value: "\(pos)")
        case "ftruncate":
            let fd = try a.fd()
            return status(Glibc.ftruncate(fd, try a.number("length")))
        case "truncate":
            let path = try a.path()
            return status(Glibc.truncate(path, try a.number("length")))
        case "fsync": return status(Glibc.fsync(try a.fd()))
        case "fdatasync": return status(Glibc.fdatasync(try a.fd()))

        // Attributes.
        case "stat", "lstat":
            let path = try a.path()
            let fields = restWords(&a)
            var st = stat()
            let r = op == "stat" ? stat(path, &st) : lstat(path, &st)
            guard r == 0 else { return .err(errno) }
            return .ok(try statText(st, fields: fields))
        case "fstat":
            let fd = try a.fd()
            let fields = restWords(&a)
            var st = stat()
            guard Glibc.fstat(fd, &st) == 0 else { return .err(errno) }
            return .ok(try statText(st, fields: fields))
        case "chmod":
            let path = try a.path()
            return status(Glibc.chmod(path, try a.mode()))
        case "fchmod":
            let fd = try a.fd()
            return status(Glibc.fchmod(fd, try a.mode()))
        case "chown", "lchown":
            let path = try a.path(), uid = try a.number("uid"), gid = try a.number("gid")
            let u = uid_t(truncatingIfNeeded: uid), g = gid_t(truncatingIfNeeded: gid)
            return status(op == "chown" ? Glibc.chown(path, u, g) : Glibc.lchown(path, u, g))
        case "fchown":
            let fd = try a.fd(), uid = try a.number("uid"), gid = try a.number("gid")
            return status(Glibc.fchown(fd, uid_t(truncatingIfNeeded: uid), gid_t(truncatingIfNeeded: gid)))
        case "utimens":
            let path = try a.path()
            let times = try timePair(&a)
            let flags: Int32 = a.optionalWord()?.uppercased() == "NOFOLLOW" ? AT_SYMLINK_NOFOLLOW : 0
            guard let times else { return status(utimensat(AT_FDCWD, path, nil, flags)) }
            return status(utimensat(AT_FDCWD, path, [times.0, times.1], flags))
        case "futimens":
            let fd = try a.fd()
            guard let times = try timePair(&a) else { return status(Glibc.futimens(fd, nil)) }
            return status(Glibc.futimens(fd, [times.0, times.1]))
        case "access", "eaccess":
            let path = try a.path()
            let mode = try parseAccess(try a.word("access mode"))
            return status(faccessat(AT_FDCWD, path, mode, op == "eaccess" ? AT_EACCESS : 0))
        case "stamp", "since":
            let key = try a.word("stamp name")
            let target = try a.raw("path or @slot")
            var st = stat()
            guard statTarget(target, &st) == 0 else { return .err(errno) }
            if op == "stamp" {
                stamps[key] = (st.st_atim, st.st_mtim, st.st_ctim)
                return .ok(nil)
            }
            guard let then = stamps[key] else { throw ScriptError("no stamp \(key)") }
            return .ok("atime=\(compare(st.st_atim, then.0)) mtime=\(compare(st.st_mtim, then.1)) "
                + "ctime=\(compare(st.st_ctim, then.2))")

        case "sameinode":
            let first = try a.raw("path or @slot"), second = try a.raw("path or @slot")
            var st1 = stat(), st2 = stat()
            guard statTarget(first, &st1) == 0, statTarget(second, &st2) == 0 else { return .err(errno) }
            return .ok(st1.st_ino == st2.st_ino && st1.st_dev == st2.st_dev ? "same" : "different")

        // Folder streams.
        case "opendir":
            let slot = try a.int("slot"), path = try a.path()
            guard let dir = opendir(path) else { return .err(errno) }
            if let old = streams[slot] { closedir(old) }
            streams[slot] = dir
            return .ok(nil)
        case "closedir":
            guard let dir = streams.removeValue(forKey: try a.int("slot")) else { return .err(EBADF) }
            return status(closedir(dir))
        case "rewinddir":
            guard let dir = streams[try a.int("slot")] else { return .err(EBADF) }
            rewinddir(dir)
            return .ok(nil)
        case "dirread":
            // dirread SLOT all -> the remaining names, sorted; dirread SLOT N
            // -> how many of the next N entries there were.
            let slot = try a.int("slot"), count = try a.word("count or all")
            guard let dir = streams[slot] else { return .err(EBADF) }
            let limit = count == "all" ? Int.max : try parseNumber(count, "count")
            var names: [[UInt8]] = []
            while names.count < limit {
                errno = 0
                guard let entry = Glibc.readdir(dir) else {
                    if errno != 0 { return .err(errno) }
                    break
                }
                names.append(withUnsafePointer(to: &entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 256) {
                        Array(String(cString: $0).utf8)
                    }
                })
            }
            if count != "all" { return .ok("\(names.count)") }
            return .ok(names.sorted { $0.lexicographicallyPrecedes($1) }.map(name).joined(separator: " "))

        // Names.
        case "mkdir":
            let path = try a.path()
            return status(Glibc.mkdir(path, try a.optionalMode(default: 0o755)))
        case "rmdir": return status(Glibc.rmdir(try a.path()))
        case "unlink": return status(Glibc.unlink(try a.path()))
        case "symlink":
            let target = try a.path("target"), path = try a.path()
            return status(Glibc.symlink(target, path))
        case "readlink":
            let path = try a.path()
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = Glibc.readlink(path, &buffer, buffer.count)
            guard n >= 0 else { return .err(errno) }
            return .ok(quoted(buffer[0..<n].map { UInt8(bitPattern: $0) }))
        case "link":
            let old = try a.path("old path"), new = try a.path("new path")
            return status(Glibc.link(old, new))
        case "rename":
            let old = try a.path("old path"), new = try a.path("new path")
            return status(Glibc.rename(old, new))
        case "renameat2":
            let old = try a.path("old path"), new = try a.path("new path")
            let flags = try a.flags("rename flag", renameFlags, prefix: "RENAME_")
            return status(Linux.renameat2(AT_FDCWD, old, AT_FDCWD, new, flags))
        case "mknod", "mkfifo":
            let path = try a.path()
            let type = op == "mkfifo" ? S_IFIFO : try fileType(try a.word("file type"))
            let mode = try a.optionalMode(default: 0o644)
            return status(Glibc.mknod(path, type | mode, 0))
        case "drain":
            return drain(try a.path())
        case "readdir":
            let path = try a.path()
            let withTypes = a.optionalWord() == "types"
            return readdir(path, withTypes: withTypes)

        // Space.
        case "fallocate":
            let fd = try a.fd()
            let mode = try a.flags("fallocate flag", fallocateFlags, prefix: "FALLOC_FL_")
            let offset = try a.number("offset"), length = try a.number("length")
            return status(Linux.fallocate(fd, mode, Int64(offset), Int64(length)))
        case "copy_file_range":
            let fdIn = try a.fd(), fdOut = try a.fd(), length = try a.int("length")
            var offIn = try a.optionalWord().map { Int64(try parseNumber($0, "offset")) }
            var offOut = try a.optionalWord().map { Int64(try parseNumber($0, "offset")) }
            let n = withOptionalPointer(&offIn) { pIn in
                withOptionalPointer(&offOut) { pOut in
                    Linux.copyFileRange(fdIn, pIn, fdOut, pOut, length, 0)
                }
            }
            return status(n, value: "\(n)")
        case "statfs":
            let path = try a.path()
            var sv = statvfs()
            guard statvfs(path, &sv) == 0 else { return .err(errno) }
            return .ok("namemax=\(sv.f_namemax) bsize=\(sv.f_bsize)")

        // Extended attributes.
        case "setxattr", "lsetxattr", "fsetxattr":
            let target = try xattrTarget(op, &a)
            let key = try a.path("attribute name"), value = try a.data()
            let flags = try a.isEmpty ? 0 : a.flags("xattr flag", xattrFlags, prefix: "XATTR_")
            let r: Int32 = switch target {
            case .fd(let fd): Linux.fsetxattr(fd, key, value, value.count, flags)
            case .path(let p, let follow):
                (follow ? Linux.setxattr : Linux.lsetxattr)(p, key, value, value.count, flags)
            }
            return status(r)
        case "getxattr", "lgetxattr", "fgetxattr":
            let target = try xattrTarget(op, &a)
            let key = try a.path("attribute name")
            let size = try a.isEmpty ? nil : a.int("buffer size")
            return getxattr(target, key, size: size)
        case "listxattr", "llistxattr", "flistxattr":
            let target = try xattrTarget(op, &a)
            return listxattr(target)
        case "removexattr", "lremovexattr", "fremovexattr":
            let target = try xattrTarget(op, &a)
            let key = try a.path("attribute name")
            let r: Int32 = switch target {
            case .fd(let fd): Linux.fremovexattr(fd, key)
            case .path(let p, let follow): (follow ? Linux.removexattr : Linux.lremovexattr)(p, key)
            }
            return status(r)

        // Locks.
        case "flock":
            let fd = try a.fd()
            return status(flock(fd, try a.flags("flock op", flockOps, prefix: "LOCK_")))
        case "setlk", "setlkw", "getlk", "ofd_setlk", "ofd_setlkw", "ofd_getlk":
            let fd = try a.fd()
            let type = try a.flags("lock type", lockTypes, prefix: "F_")
            let start = try a.number("start"), length = try a.number("length")
            return lock(op, fd, type: type, start: start, length: length)

        // Memory maps.
        case "mmap_read", "mmap_write":
            let fd = try a.fd(), offset = try a.int("offset")
            let data = op == "mmap_write" ? try a.data() : []
            let length = op == "mmap_read" ? try a.int("length") : data.count
            return mmap(fd, offset: offset, length: length, write: op == "mmap_write" ? data : nil)

        // The process.
        case "umask":
            return .ok(octal(Glibc.umask(try a.mode())))
        case "sleep":
            usleep(UInt32(try a.int("milliseconds") * 1000))
            return .ok(nil)
        case "echo":
            return .ok(restWords(&a).joined(separator: " "))

        default:
            throw ScriptError("unknown operation \(op)")
        }
    }

    /// `repeat N OP ARGS...`: runs OP N times with {i} in its arguments
    /// replaced by 0, 1, ... N-1; prints `ok N`, or the first failure as
    /// `err ENAME at I`.
    private mutating func repeatOperation(_ tokens: [[UInt8]]) throws -> Outcome {
        guard tokens.count >= 3 else { throw ScriptError("repeat needs a count and an operation") }
        let count = try parseNumber(String(decoding: tokens[1], as: UTF8.self), "count")
        let template = Array(tokens[2...])
        let marker = Array("{i}".utf8)
        for i in 0..<count {
            let index = Array(String(i).utf8)
            let expanded = template.map { token -> [UInt8] in
                var out: [UInt8] = []
                var rest = token[...]
                while !rest.isEmpty {
                    if rest.starts(with: marker) {
                        out += index
                        rest = rest.dropFirst(marker.count)
                    } else {
                        out.append(rest.removeFirst())
                    }
                }
                return out
            }
            if case .err(let code) = try run(expanded) { return .errAt(code, i) }
        }
        return .ok("\(count)")
    }

    /// Reads a folder and removes each entry as soon as it is read (as rm -r
    /// does): prints how many it removed, or the first failure.
    private func drain(_ path: [CChar]) -> Outcome {
        guard let dir = opendir(path) else { return .err(errno) }
        defer { closedir(dir) }
        var removed = 0
        while true {
            errno = 0
            guard let entry = Glibc.readdir(dir) else {
                if errno != 0 { return .err(errno) }
                break
            }
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name == "." || name == ".." { continue }
            var r = unlinkat(dirfd(dir), name, 0)
            if r != 0, errno == EISDIR { r = unlinkat(dirfd(dir), name, AT_REMOVEDIR) }
            if r != 0 { return .err(errno) }
            removed += 1
        }
        return .ok("\(removed)")
    }

    private func restWords(_ a: inout Arguments) -> [String] {
        var words: [String] = []
        while let w = a.optionalWord() { words.append(w) }
        return words
    }

    /// ATIME MTIME, each `now`, `omit` or SECONDS[.NANOSECONDS]; or `null`
    /// alone (a NULL times pointer: both set to now).
    private func timePair(_ a: inout Arguments) throws -> (timespec, timespec)? {
        let first = try a.word("atime")
        if first == "null" { return nil }
        func parse(_ w: String) throws -> timespec {
            switch w {
            case "now": return timespec(tv_sec: 0, tv_nsec: UTIME_NOW_)
            case "omit": return timespec(tv_sec: 0, tv_nsec: UTIME_OMIT_)
            default:
                let parts = w.split(separator: ".", omittingEmptySubsequences: false)
                guard parts.count <= 2, let s = Int(parts[0]),
                      let ns = parts.count == 2 ? Int(parts[1] + String(repeating: "0", count: max(0, 9 - parts[1].count))) : 0
                else { throw ScriptError("bad time \(w)") }
                return timespec(tv_sec: s, tv_nsec: ns)
            }
        }
        return (try parse(first), try parse(try a.word("mtime")))
    }

    private func parseAccess(_ w: String) throws -> Int32 {
        var mode: Int32 = 0
        for c in w.uppercased() {
            guard let m = accessModes[String(c)] else { throw ScriptError("bad access mode \(w)") }
            mode |= m
        }
        return mode
    }

    private func fileType(_ w: String) throws -> mode_t {
        switch w {
        case "fifo": S_IFIFO
        case "reg": S_IFREG
        case "sock": S_IFSOCK
        default: throw ScriptError("unknown file type \(w)")
        }
    }

    private func readdir(_ path: [CChar], withTypes: Bool) -> Outcome {
        guard let dir = opendir(path) else { return .err(errno) }
        defer { closedir(dir) }
        var entries: [([UInt8], UInt8)] = []
        while true {
            errno = 0
            guard let entry = Glibc.readdir(dir) else {
                if errno != 0 { return .err(errno) }
                break
            }
            let bytes = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: UInt8.self, capacity: 256) { Array(UnsafeBufferPointer(start: $0, count: strlen(UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)))) }
            }
            entries.append((bytes, entry.pointee.d_type))
        }
        entries.sort { $0.0.lexicographicallyPrecedes($1.0) }
        let words = entries.map { entry -> String in
            guard withTypes else { return name(entry.0) }
            let t = switch Int32(entry.1) {
            case Int32(DT_REG): "reg"
            case Int32(DT_DIR): "dir"
            case Int32(DT_LNK): "lnk"
            case Int32(DT_FIFO): "fifo"
            case Int32(DT_SOCK): "sock"
            case Int32(DT_UNKNOWN): "unknown"
            default: "type\(entry.1)"
            }
            return name(entry.0) + ":" + t
        }
        // Long listings print as a count and a hash of the names.
        if words.count > 64 {
            return .ok("\(words.count) entries " + quoted(Array(words.joined(separator: "/").utf8)))
        }
        return .ok(words.joined(separator: " "))
    }

    private enum XattrTarget {
        case path([CChar], follow: Bool)
        case fd(Int32)
    }

    private func xattrTarget(_ op: String, _ a: inout Arguments) throws -> XattrTarget {
        if op.hasPrefix("f") { return .fd(try a.fd()) }
        return .path(try a.path(), follow: !op.hasPrefix("l"))
    }

    /// With a size, one call with a buffer of that size (0 asks for the
    /// length only); without, the length first and then the value.
    private func getxattr(_ target: XattrTarget, _ key: [CChar], size: Int?) -> Outcome {
        func call(_ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
            switch target {
            case .fd(let fd): Linux.fgetxattr(fd, key, buffer, count)
            case .path(let p, let follow): (follow ? Linux.getxattr : Linux.lgetxattr)(p, key, buffer, count)
            }
        }
        if size == 0 {
            let n = call(nil, 0)
            return status(n, value: "\(n)")
        }
        var count = size ?? call(nil, 0)
        if count < 0 { return .err(errno) }
        count = max(count, 0)
        var buffer = [UInt8](repeating: 0, count: max(count, 1))
        let n = buffer.withUnsafeMutableBytes { call($0.baseAddress, count) }
        return n < 0 ? .err(errno) : .ok("\(n) " + quoted(buffer[0..<n]))
    }

    private func listxattr(_ target: XattrTarget) -> Outcome {
        func call(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
            switch target {
            case .fd(let fd): Linux.flistxattr(fd, buffer, count)
            case .path(let p, let follow): (follow ? Linux.listxattr : Linux.llistxattr)(p, buffer, count)
            }
        }
        let size = call(nil, 0)
        if size < 0 { return .err(errno) }
        var buffer = [CChar](repeating: 0, count: max(size, 1))
        let n = call(&buffer, size)
        if n < 0 { return .err(errno) }
        let names = buffer[0..<n].split(separator: 0).map { $0.map { UInt8(bitPattern: $0) } }
        let sorted = names.sorted { $0.lexicographicallyPrecedes($1) }
        return .ok(sorted.map(name).joined(separator: " "))
    }

    /// F_SETLK and friends. getlk prints `unlck`, or the conflicting lock as
    /// `wrlck 0 10 pid=other` (pid: self, other, or -1 for an OFD lock).
    private func lock(_ op: String, _ fd: Int32, type: Int32, start: Int, length: Int) -> Outcome {
        var fl = flock()
        fl.l_type = Int16(type)
        fl.l_whence = Int16(SEEK_SET)
        fl.l_start = start
        fl.l_len = length
        fl.l_pid = 0
        let cmd: Int32 = switch op {
        case "setlk": F_SETLK
        case "setlkw": F_SETLKW
        case "getlk": F_GETLK
        case "ofd_setlk": F_OFD_SETLK_
        case "ofd_setlkw": F_OFD_SETLKW_
        default: F_OFD_GETLK_
        }
        guard fcntl(fd, cmd, &fl) == 0 else { return .err(errno) }
        guard op.hasSuffix("getlk") else { return .ok(nil) }
        let kind = switch Int32(fl.l_type) {
        case Int32(F_UNLCK): "unlck"
        case Int32(F_RDLCK): "rdlck"
        case Int32(F_WRLCK): "wrlck"
        default: "type\(fl.l_type)"
        }
        if Int32(fl.l_type) == Int32(F_UNLCK) { return .ok(kind) }
        let pid = fl.l_pid == getpid() ? "self" : fl.l_pid == -1 ? "-1" : "other"
        return .ok("\(kind) \(fl.l_start) \(fl.l_len) pid=\(pid)")
    }

    /// Maps the file from 0 to offset+length (shared), reads or writes the
    /// range, and for a write syncs the map (msync MS_SYNC) before unmapping.
    private func mmap(_ fd: Int32, offset: Int, length: Int, write data: [UInt8]?) -> Outcome {
        let total = offset + length
        guard total > 0 else { return .ok(nil) }
        let prot = data == nil ? PROT_READ : PROT_READ | PROT_WRITE
        guard let map = Glibc.mmap(nil, total, prot, MAP_SHARED, fd, 0), map != MAP_FAILED else {
            return .err(errno)
        }
        defer { munmap(map, total) }
        if let data {
            data.withUnsafeBytes { (map + offset).copyMemory(from: $0.baseAddress!, byteCount: data.count) }
            return status(msync(map, total, MS_SYNC))
        }
        let bytes = Array(UnsafeRawBufferPointer(start: map + offset, count: length))
        return .ok(quoted(bytes))
    }
}

private func withOptionalPointer<R>(_ value: inout Int64?, _ body: (UnsafeMutablePointer<Int64>?) -> R) -> R {
    guard var v = value else { return body(nil) }
    defer { value = v }
    return body(&v)
}
