import CLinux
import Glibc
import SystemPackage

/// Runs a system call that returns -1 and sets errno on failure, retrying
/// when a signal interrupted it (EINTR), and turns any other failure into a
/// typed `Errno`. The project's one such helper: every module that makes
/// system calls of its own (AppSandboxFS, ContainerBackup) uses it too.
///
///     let fd = try check { openat(folder.rawValue, name, O_RDONLY | O_CLOEXEC) }
///
/// Inlined, with a non-escaping closure: it costs what the bare loop costs.
@inlinable @inline(__always)
public func check<Result: BinaryInteger>(_ call: () -> Result) throws(Errno) -> Result {
    while true {
        let result = call()
        if result != -1 { return result }
        let code = Glibc.errno
        if code != EINTR { throw Errno(rawValue: code) }
    }
}

/// A buffer big enough for "/proc/self/fd/<n>".
struct ProcPath {
    var bytes: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    /// Calls `body` with the /proc path of `fd`: the kernel resolves it to
    /// the very file the descriptor holds, which is how calls without an
    /// `*at()` form (xattrs, chmod, reopen) reach an O_PATH descriptor.
    @inline(__always)
    static func with<T>(_ fd: FileDescriptor, _ body: (UnsafePointer<CChar>) throws(Errno) -> T) throws(Errno) -> T {
        var path = ProcPath()
        return try withUnsafeMutableBytes(of: &path.bytes) { (raw) throws(Errno) -> T in
            let chars = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
            asfs_proc_fd_path(fd.rawValue, chars, raw.count)
            return try body(chars)
        }
    }
}

/// `String.withCString` for a body that throws `Errno` (the standard one
/// rethrows as `any Error`).
@inline(__always)
public func withCString<T>(_ string: String, _ body: (UnsafePointer<CChar>) throws(Errno) -> T) throws(Errno) -> T {
    try string.withCString { pointer in Result { () throws(Errno) in try body(pointer) } }.get()
}
