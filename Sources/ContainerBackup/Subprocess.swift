import BackingStore
import Glibc
import Spawning
import SystemPackage

/// GNU tar run with one of its standard descriptors on a pipe to us, the
/// others inherited unless given (its messages go to our standard error, or
/// to `standardError` when the caller wants to read them). Started by the
/// project's one spawner (Spawning).
struct Subprocess {
    enum PipeEnd { case stdin, stdout }

    let pid: pid_t
    /// Our end of the pipe: we write to its stdin or read its stdout.
    let pipe: Int32

    /// Starts `arguments[0]` (looked up in PATH) with `environment` added
    /// to ours, and `descriptor3`, if given, as its descriptor 3.
    static func start(_ arguments: [String], pipe end: PipeEnd, environment: [String: String] = [:],
                      descriptor3: Int32? = nil, standardError: Int32? = nil) throws(Errno) -> Subprocess {
        let ends: (read: Int32, write: Int32)
        do { ends = try makePipe() } catch { throw Errno(rawValue: error.code) }
        let (childEnd, ourEnd) = end == .stdin ? (ends.read, ends.write) : (ends.write, ends.read)
        var options = SpawnOptions(environment: environment)
        if end == .stdin { options.standardInput = .descriptor(childEnd) } else { options.standardOutput = .descriptor(childEnd) }
        if let standardError { options.standardError = .descriptor(standardError) }
        if let descriptor3 { options.descriptors[3] = descriptor3 }
        defer { Glibc.close(childEnd) }
        do {
            return Subprocess(pid: try ChildProcess.start(arguments, options).pid, pipe: ourEnd)
        } catch {
            Glibc.close(ourEnd)
            throw Errno(rawValue: error.code)
        }
    }

    /// Waits for the program (close `pipe` first, or it may wait for us);
    /// returns its exit status, or 128 + the signal that ended it.
    func wait() -> Int32 { ChildProcess(pid: pid).wait().code }
}

/// Writes all of `bytes` to `fd`.
func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
    var done = 0
    while done < bytes.count {
        let count = try check { write(fd, bytes.baseAddress! + done, bytes.count - done) }
        done += count
    }
}

func writeAll(_ fd: Int32, _ bytes: [UInt8]) throws(Errno) {
    try bytes.withUnsafeBytes { raw in Result { () throws(Errno) in try writeAll(fd, raw) } }.get()
}
