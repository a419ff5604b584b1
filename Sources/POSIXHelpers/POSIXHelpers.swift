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
    var buffer = [UInt8](repeating: 0, count: chunk)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        if count < 0 { return (bytes, errno) }
        if count == 0 { return (bytes, 0) }
        bytes += buffer[0..<count]
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
