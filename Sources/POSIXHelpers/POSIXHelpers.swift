// Small POSIX helpers that every module can use (the driver's, the
// command line's, the fixture's on every platform): one copy of each.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library's text for an errno value (strerror(3)): "No such file
/// or directory". For messages that name the path and the reason.
public func errorText(_ code: Int32) -> String {
    String(cString: strerror(code))
}

/// Whether `path` itself is a folder: a symbolic link to one is not
/// (lstat(2)).
public func isFolder(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
}

/// Whether `path` is a folder or a symbolic link to one (stat(2)).
public func isFolderOrLinkToOne(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR
}

/// Reads `fd` to its end (or to the first error; EINTR is retried):
/// the bytes read, and the errno of the error that stopped it (0 at the
/// end of the file).
public func readToEnd(_ fd: Int32, chunk: Int = 65536) -> (bytes: [UInt8], error: Int32) {
    var bytes: [UInt8] = []
    while true {
        var failure: Int32 = 0
        // Read into uninitialized memory: zeroing the whole chunk first (a
        // 64 KiB memset, and a page fault per page of it) cost a fresh
        // driver more than the read of the mount table it was for.
        let piece = [UInt8](unsafeUninitializedCapacity: chunk) { buffer, initialized in
            var count = read(fd, buffer.baseAddress, chunk)
            while count < 0 && errno == EINTR { count = read(fd, buffer.baseAddress, chunk) }
            if count < 0 { failure = errno }
            initialized = max(count, 0)
        }
        if failure != 0 { return (bytes, failure) }
        if piece.isEmpty { return (bytes, 0) }
        if bytes.isEmpty { bytes = piece } else { bytes += piece }
    }
}

/// The symbolic name of an errno value ("ENOENT"), or "E<number>" for one
/// not in the table (every code but the number on other systems than
/// Linux). Aliases print under one name: EAGAIN (not EWOULDBLOCK),
/// EOPNOTSUPP (not ENOTSUP), EDEADLK (not EDEADLOCK). For outputs and
/// expectations that read "err ENOENT" (fsprobe, the tests).
public func errnoName(_ code: Int32) -> String {
    #if os(Linux)
    errnoNames[code] ?? "E\(code)"
    #else
    "E\(code)"
    #endif
}

#if os(Linux)
private let errnoNames: [Int32: String] = [
    EPERM: "EPERM", ENOENT: "ENOENT", ESRCH: "ESRCH", EINTR: "EINTR", EIO: "EIO",
    ENXIO: "ENXIO", E2BIG: "E2BIG", ENOEXEC: "ENOEXEC", EBADF: "EBADF",
    ECHILD: "ECHILD", EAGAIN: "EAGAIN", ENOMEM: "ENOMEM", EACCES: "EACCES",
    EFAULT: "EFAULT", ENOTBLK: "ENOTBLK", EBUSY: "EBUSY", EEXIST: "EEXIST",
    EXDEV: "EXDEV", ENODEV: "ENODEV", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR",
    EINVAL: "EINVAL", ENFILE: "ENFILE", EMFILE: "EMFILE", ENOTTY: "ENOTTY",
    ETXTBSY: "ETXTBSY", EFBIG: "EFBIG", ENOSPC: "ENOSPC", ESPIPE: "ESPIPE",
    EROFS: "EROFS", EMLINK: "EMLINK", EPIPE: "EPIPE", EDOM: "EDOM",
    ERANGE: "ERANGE", EDEADLK: "EDEADLK", ENAMETOOLONG: "ENAMETOOLONG",
    ENOLCK: "ENOLCK", ENOSYS: "ENOSYS", ENOTEMPTY: "ENOTEMPTY", ELOOP: "ELOOP",
    ENOMSG: "ENOMSG", EIDRM: "EIDRM", ENOSTR: "ENOSTR", ENODATA: "ENODATA",
    ETIME: "ETIME", ENOLINK: "ENOLINK", EPROTO: "EPROTO", EBADMSG: "EBADMSG",
    EOVERFLOW: "EOVERFLOW", EILSEQ: "EILSEQ", EUSERS: "EUSERS",
    ENOTSOCK: "ENOTSOCK", EMSGSIZE: "EMSGSIZE", EPROTOTYPE: "EPROTOTYPE",
    ENOPROTOOPT: "ENOPROTOOPT", EPROTONOSUPPORT: "EPROTONOSUPPORT",
    EOPNOTSUPP: "EOPNOTSUPP", EAFNOSUPPORT: "EAFNOSUPPORT",
    EADDRINUSE: "EADDRINUSE", ENETDOWN: "ENETDOWN", ECONNABORTED: "ECONNABORTED",
    ECONNRESET: "ECONNRESET", ENOBUFS: "ENOBUFS", EISCONN: "EISCONN",
    ENOTCONN: "ENOTCONN", ETIMEDOUT: "ETIMEDOUT", ECONNREFUSED: "ECONNREFUSED",
    EALREADY: "EALREADY", EINPROGRESS: "EINPROGRESS", ESTALE: "ESTALE",
    EDQUOT: "EDQUOT", ECANCELED: "ECANCELED", EOWNERDEAD: "EOWNERDEAD",
    ENOTRECOVERABLE: "ENOTRECOVERABLE",
    // Kernel-internal codes that must never reach a process; named so
    // that a leak is obvious in an output.
    512: "ERESTARTSYS", 524: "ENOTSUPP(kernel-internal)",
]
#endif

/// Reads the file at `path` to its end (EINTR is retried): the bytes read,
/// and the errno that stopped it (0 at the end of the file; open(2)'s, with
/// no bytes, when it cannot be opened).
public func readFile(_ path: String) -> (bytes: [UInt8], error: Int32) {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return ([], errno) }
    defer { close(fd) }
    return readToEnd(fd)
}

/// Milliseconds on the monotonic clock: for deadlines of bounded waits.
public func monotonicMilliseconds() -> Int {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int(now.tv_sec) * 1_000 + Int(now.tv_nsec) / 1_000_000
}

/// The whole file at `path` as text (UTF-8), nil when it cannot be opened
/// or read.
public func readText(_ path: String) -> String? {
    let (bytes, error) = readFile(path)
    return error == 0 ? String(decoding: bytes, as: UTF8.self) : nil
}

#if os(Linux)
/// The calling thread's umask (the process's, unless the thread unshared
/// its file-system context), read from /proc/thread-self/status without
/// changing it. umask(2) can only set the mask, and setting it to read it
/// leaves every other thread creating files with the wrong mask for that
/// moment. Nil when the kernel does not show it (before Linux 4.7).
public func processUmask() -> mode_t? {
    guard let status = readText("/proc/thread-self/status") else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("Umask:") {
        return mode_t(line.dropFirst("Umask:".count).filter { $0 != " " && $0 != "\t" }, radix: 8)
    }
    return nil
}
#endif

#if canImport(Glibc)
/// Starts a thread that runs `body` (pthread_create(3)); the thread starts
/// with the calling thread's signal mask. Returns the thread, or nil with
/// `errno` set to pthread_create's error (EAGAIN: no more threads). A
/// `detached` thread's resources go when it ends; any other must be joined
/// (pthread_join). The one way this project starts a thread: the serving
/// workers, the io_uring queues, the in-process fixture, the stale-mount
/// probe. (Linux only, as its users are.)
public func startThread(detached: Bool = false, _ body: @escaping @Sendable () -> Void) -> pthread_t? {
    let box = Unmanaged.passRetained(ThreadBody(body))
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { argument in
        Unmanaged<ThreadBody>.fromOpaque(argument!).takeRetainedValue().body()
        return nil
    }, box.toOpaque())
    guard result == 0 else {
        box.release()
        errno = result
        return nil
    }
    if detached { pthread_detach(thread) }
    return thread
}

/// What `startThread` hands its thread: the body, owned by the thread.
private final class ThreadBody: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
#endif
