import Glibc
import SystemPackage

/// A program run with one of its standard descriptors on a pipe to us, the
/// others inherited unless given (its messages go to our standard error, or
/// to `standardError` when the caller wants to read them).
struct Subprocess {
    enum PipeEnd { case stdin, stdout }

    let pid: pid_t
    /// Our end of the pipe: we write to its stdin or read its stdout.
    let pipe: Int32

    /// Starts `arguments[0]` (looked up in PATH) with `environment` added
    /// to ours, and `descriptor3`, if given, as its descriptor 3. The child
    /// starts with SIGPIPE at its default, whatever we do with it.
    static func start(_ arguments: [String], pipe end: PipeEnd, environment: [String: String] = [:],
                      descriptor3: Int32? = nil, standardError: Int32? = nil) throws(Errno) -> Subprocess {
        var fds: [Int32] = [0, 0]
        _ = try retrying { Glibc.pipe(&fds) }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        let (childEnd, ourEnd) = end == .stdin ? (readEnd, writeEnd) : (writeEnd, readEnd)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, childEnd, end == .stdin ? 0 : 1)
        if let descriptor3 { posix_spawn_file_actions_adddup2(&actions, descriptor3, 3) }
        if let standardError { posix_spawn_file_actions_adddup2(&actions, standardError, 2) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF))

        var variables: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            let name = text.prefix { $0 != "=" }
            if environment[String(name)] == nil { variables.append(text) }
            index += 1
        }
        variables += environment.map { "\($0.key)=\($0.value)" }

        let cArguments = arguments.map { strdup($0) } + [nil]
        let cEnvironment = variables.map { strdup($0) } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, arguments[0], &actions, &attributes, cArguments, cEnvironment)
        Glibc.close(childEnd)
        guard status == 0 else {
            Glibc.close(ourEnd)
            throw Errno(rawValue: status)
        }
        return Subprocess(pid: pid, pipe: ourEnd)
    }

    /// Waits for the program (close `pipe` first, or it may wait for us);
    /// returns its exit status, or 128 + the signal that ended it.
    func wait() -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return -1 }
        }
        // The W* macros are not imported into Swift.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }
}

/// Writes all of `bytes` to `fd`.
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
    var done = 0
    while done < bytes.count {
        let count = try retrying { write(fd, bytes.baseAddress! + done, bytes.count - done) }
        done += count
    }
}

func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(Errno) {
    try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try writeAll(fd, raw) } }.get()
}
