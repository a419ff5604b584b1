// System calls for the rule tests (Tests/IntegrationTests/Rules), each
// answering the errno it failed with, or 0: the tests check exact codes.
// The Linux calls Swift's Glibc module does not show (renameat2, fallocate,
// the xattr family) are looked up with dlsym, as Processes.swift does.

import Glibc

/// The Linux calls that Swift's Glibc module hides, found at run time.
enum RulesLinux {
    typealias CPath = UnsafePointer<CChar>

    static let renameNoReplace: UInt32 = 1
    static let renameExchange: UInt32 = 2
    /// O_PATH (asm-generic/fcntl.h; Glibc's module leaves it out).
    static let openPath: Int32 = 0o10000000
    static let xattrCreate: Int32 = 1
    static let xattrReplace: Int32 = 2

    static let renameat2 = libc("renameat2", as: (@convention(c) (Int32, CPath, Int32, CPath, UInt32) -> Int32).self)
    static let fallocate = libc("fallocate", as: (@convention(c) (Int32, Int32, Int64, Int64) -> Int32).self)
    static let setxattr = libc("setxattr", as: (@convention(c) (CPath, CPath, UnsafeRawPointer?, Int, Int32) -> Int32).self)
    static let lsetxattr = libc("lsetxattr", as: (@convention(c) (CPath, CPath, UnsafeRawPointer?, Int, Int32) -> Int32).self)
    static let getxattr = libc("getxattr", as: (@convention(c) (CPath, CPath, UnsafeMutableRawPointer?, Int) -> Int).self)
    static let lgetxattr = libc("lgetxattr", as: (@convention(c) (CPath, CPath, UnsafeMutableRawPointer?, Int) -> Int).self)
    static let listxattr = libc("listxattr", as: (@convention(c) (CPath, UnsafeMutablePointer<CChar>?, Int) -> Int).self)
    static let llistxattr = libc("llistxattr", as: (@convention(c) (CPath, UnsafeMutablePointer<CChar>?, Int) -> Int).self)
    static let removexattr = libc("removexattr", as: (@convention(c) (CPath, CPath) -> Int32).self)

    private static func libc<T>(_ name: String, as type: T.Type) -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("the C library has no \(name)")
        }
        return unsafeBitCast(symbol, to: type)
    }
}

/// System calls that answer 0 on success and the errno on failure.
enum RulesSys {
    /// The errno of a call that returns -1 on failure (0 when it did not fail).
    static func code<R: BinaryInteger>(_ call: () -> R) -> Int32 {
        errno = 0
        let result = call()
        return result == -1 ? errno : 0
    }

    /// open(2), closing the descriptor again when it succeeds.
    static func open(_ path: String, _ flags: Int32, _ mode: mode_t = 0o644) -> Int32 {
        let fd = Glibc.open(path, flags | O_CLOEXEC, mode)
        if fd < 0 { return errno }
        Glibc.close(fd)
        return 0
    }

    static func mkdir(_ path: String, _ mode: mode_t = 0o755) -> Int32 { code { Glibc.mkdir(path, mode) } }
    static func rmdir(_ path: String) -> Int32 { code { Glibc.rmdir(path) } }
    static func unlink(_ path: String) -> Int32 { code { Glibc.unlink(path) } }
    static func mknod(_ path: String, _ mode: mode_t, _ device: dev_t = 0) -> Int32 {
        code { Glibc.mknod(path, mode, device) }
    }
    static func mkfifo(_ path: String, _ mode: mode_t = 0o644) -> Int32 { code { Glibc.mkfifo(path, mode) } }
    static func symlink(_ target: String, _ path: String) -> Int32 { code { Glibc.symlink(target, path) } }
    static func link(_ old: String, _ new: String) -> Int32 { code { Glibc.link(old, new) } }
    static func rename(_ old: String, _ new: String) -> Int32 { code { Glibc.rename(old, new) } }
    static func renameat2(_ old: String, _ new: String, _ flags: UInt32) -> Int32 {
        code { RulesLinux.renameat2(AT_FDCWD, old, AT_FDCWD, new, flags) }
    }
    static func truncate(_ path: String, _ length: off_t) -> Int32 { code { Glibc.truncate(path, length) } }
    static func chmod(_ path: String, _ mode: mode_t) -> Int32 { code { Glibc.chmod(path, mode) } }
    static func chown(_ path: String, _ uid: uid_t, _ gid: gid_t) -> Int32 { code { Glibc.chown(path, uid, gid) } }
    static func lchown(_ path: String, _ uid: uid_t, _ gid: gid_t) -> Int32 { code { Glibc.lchown(path, uid, gid) } }
    /// utimensat with NULL times (now), as `touch` does.
    static func touch(_ path: String) -> Int32 { code { utimensat(AT_FDCWD, path, nil, 0) } }
    /// utimensat with explicit times.
    static func utimens(_ path: String, atime: Int, mtime: Int) -> Int32 {
        var times = [timespec(tv_sec: atime, tv_nsec: 0), timespec(tv_sec: mtime, tv_nsec: 0)]
        return code { utimensat(AT_FDCWD, path, &times, 0) }
    }
    static func setxattr(_ path: String, _ name: String, _ value: [UInt8], flags: Int32 = 0) -> Int32 {
        code { value.withUnsafeBytes { RulesLinux.setxattr(path, name, $0.baseAddress, $0.count, flags) } }
    }
    static func removexattr(_ path: String, _ name: String) -> Int32 { code { RulesLinux.removexattr(path, name) } }
    static func access(_ path: String, _ mode: Int32) -> Int32 { code { Glibc.access(path, mode) } }

    /// getxattr's value, or the errno.
    static func getxattr(_ path: String, _ name: String) -> Result<[UInt8], RulesErrno> {
        let size = RulesLinux.getxattr(path, name, nil, 0)
        guard size >= 0 else { return .failure(RulesErrno(errno)) }
        var value = [UInt8](repeating: 0, count: max(size, 1))
        let count = value.withUnsafeMutableBytes { RulesLinux.getxattr(path, name, $0.baseAddress, $0.count) }
        guard count >= 0 else { return .failure(RulesErrno(errno)) }
        return .success(Array(value[0..<count]))
    }

    /// listxattr's names, or the errno.
    static func listxattr(_ path: String) -> Result<[String], RulesErrno> {
        let size = RulesLinux.listxattr(path, nil, 0)
        guard size >= 0 else { return .failure(RulesErrno(errno)) }
        var buffer = [CChar](repeating: 0, count: max(size, 1))
        let count = RulesLinux.listxattr(path, &buffer, buffer.count)
        guard count >= 0 else { return .failure(RulesErrno(errno)) }
        return .success(buffer[0..<count].split(separator: 0).map {
            String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        })
    }

    /// readlink's target, or the errno.
    static func readlink(_ path: String) -> Result<String, RulesErrno> {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = Glibc.readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return .failure(RulesErrno(errno)) }
        return .success(String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// lstat, or the errno.
    static func lstat(_ path: String) -> Result<Glibc.stat, RulesErrno> {
        var st = Glibc.stat()
        return Glibc.lstat(path, &st) == 0 ? .success(st) : .failure(RulesErrno(errno))
    }

    /// stat (following links), or the errno.
    static func stat(_ path: String) -> Result<Glibc.stat, RulesErrno> {
        var st = Glibc.stat()
        return rulesStatFollowing(path, &st) == 0 ? .success(st) : .failure(RulesErrno(errno))
    }

    /// The names in a folder (without . and ..), sorted, or the errno.
    static func list(_ path: String) -> Result<[String], RulesErrno> {
        guard let dir = opendir(path) else { return .failure(RulesErrno(errno)) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return .success(names.sorted())
    }
}

/// statvfs(3) (statfs(2) below): 0 or the errno. Unlike stat, it always asks the file system
/// (the kernel caches no answer), so it tells at once whether a FUSE
/// mount's driver is gone (ENOTCONN).
func rulesStatfs(_ path: String) -> Int32 {
    var buffer = statvfs()
    return statvfs(path, &buffer) == 0 ? 0 : errno
}

/// Whether statfs says the mount's driver is gone (rule L2): ENOTCONN once
/// the kernel has aborted the connection, ECONNABORTED for a request that
/// was in flight when it did (seen in CI with a slow, sanitized driver long
/// after the kill). `MountTable.probe` counts both as stale too.
func rulesIsStale(_ path: String) -> Bool {
    let error = rulesStatfs(path)
    return error == ENOTCONN || error == ECONNABORTED
}

/// stat(2), out of reach of `RulesSys.stat`'s name.
private func rulesStatFollowing(_ path: String, _ st: inout Glibc.stat) -> Int32 { stat(path, &st) }

/// An errno as an Error, printed by name.
struct RulesErrno: Error, Equatable, CustomStringConvertible {
    var code: Int32
    init(_ code: Int32) { self.code = code }
    var description: String { posixError(code) }
}

extension Result where Failure == RulesErrno {
    /// The value, or nil on failure (for use inside #expect, where `try` is awkward).
    var rulesValue: Success? { try? get() }

    /// The failure's errno name, or "ok".
    var rulesOutcome: String {
        switch self {
        case .success: "ok"
        case .failure(let error): error.description
        }
    }
}

extension RulesSys {
    /// The name of an errno, or "ok" for 0, for readable expectations:
    /// `#expect(RulesSys.outcome(RulesSys.mkdir(p)) == "EROFS")`.
    static func outcome(_ code: Int32) -> String { code == 0 ? "ok" : posixError(code) }

    /// Writes `bytes` to a file that is already open for writing, in full.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32 {
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            if n < 0 { return errno }
            done += n
        }
        return 0
    }

    /// mmap of a whole descriptor from offset 0, or nil (errno set).
    static func mmap(_ fd: Int32, _ count: Int, _ protection: Int32, _ flags: Int32) -> UnsafeMutableRawPointer? {
        let map = Glibc.mmap(nil, count, protection, flags, fd, 0)
        return map == UnsafeMutableRawPointer(bitPattern: -1) ? nil : map
    }

    /// Bytes in a pattern that differs at every offset within a page.
    static func pattern(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ ($0 >> 8)) }
    }
}
