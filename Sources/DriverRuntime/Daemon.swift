import Foundation
import Glibc
import POSIXHelpers
import Spawning

/// Running the driver in the background: the command forks (or, in a
/// process with more than one thread, starts itself again with --foreground)
/// in a new session and waits until that child says the mount is ready (or
/// why it failed), so that `mount` returns only once the container can be
/// used.
enum Daemon {
    /// In the parent: returns nil once the child said "ready" (throws when
    /// it did not). In a forked child: returns the descriptor to say
    /// "ready" or "error: ..." on; the caller goes on as the driver.
    static func startInBackground(logFile: String?) throws -> Int32? {
        let pipe: (read: Int32, write: Int32)
        do { pipe = try makePipe() } catch { throw Failure("cannot create a pipe: \(error)") }
        let (readEnd, writeEnd) = pipe

        // The log is opened here, as MountChecks checked it (never through
        // a final symbolic link), and handed over as the child's stderr.
        var logFD: Int32 = -1
        if let logFile {
            logFD = MountChecks.openLogFile(logFile)
            guard logFD >= 0 else {
                let code = errno
                close(writeEnd)
                close(readEnd)
                throw Failure("log file \(logFile): \(code == ELOOP ? "a symbolic link; refused" : errorText(code))")
            }
        }
        defer { if logFD >= 0 { close(logFD) } }
        // A fork is the cheaper start (`mount` is one start of this program
        // instead of two: docs/performance.md), and a safe one while this
        // process has a single thread: no lock can then be held by a thread
        // the child would lack. Otherwise, a new start of the program.
        if singleThreaded() {
            fflush(nil)
            let pid = fork()
            if pid == 0 { return becomeBackgroundChild(readyFD: writeEnd, readEnd: readEnd, logFD: logFD) }
            if pid > 0 {
                close(writeEnd)
                try waitForReady(readEnd, child: ChildProcess(pid: pid))
                return nil
            }
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        // The child gets the pipe's write end as its descriptor 3, and
        // nothing else of ours; it goes to / itself once it has made its
        // paths absolute (MountCommand), so it keeps no folder busy.
        let arguments = [executable] + CommandLine.arguments.dropFirst() + ["--ready-fd", "3"]
        let child: ChildProcess
        do {
            child = try ChildProcess.start(arguments, SpawnOptions(
                standardInput: .nullDevice, standardOutput: .nullDevice,
                standardError: logFD >= 0 ? .descriptor(logFD) : .nullDevice,
                descriptors: [3: writeEnd], closeOtherDescriptors: true, newSession: true))
        } catch {
            close(writeEnd)
            close(readEnd)
            throw Failure("cannot start the driver: \(error)")
        }
        close(writeEnd)
        try waitForReady(readEnd, child: child)
        return nil
    }

    /// Whether this process runs one thread (/proc/self/stat's num_threads).
    /// A stale-mount probe before (--recover) runs a thread that ends on
    /// its own a moment after it answered: waited for, 2 ms at most.
    private static func singleThreaded() -> Bool {
        for _ in 0..<20 {
            if threadCount() == 1 { return true }
            usleep(100)
        }
        return false
    }

    private static func threadCount() -> Int? {
        guard let stat = readWhole("/proc/self/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the name: state is field 3 of the line, num_threads field 20.
        return fields.count > 17 ? Int(fields[17]) : nil
    }

    private static func readWhole(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(fd, &buffer, buffer.count)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }

    /// The forked child, before it goes on as the driver: what the new start
    /// gets from its spawn options (a session of its own, /dev/null for
    /// standard input and output, the log or /dev/null as standard error,
    /// no other descriptor of the parent's but the ready pipe, as 3).
    private static func becomeBackgroundChild(readyFD: Int32, readEnd: Int32, logFD: Int32) -> Int32 {
        close(readEnd)
        _ = setsid()
        // Every signal's default action and none blocked, as the spawn's
        // attributes gave the new start.
        var none = sigset_t()
        sigemptyset(&none)
        for number in 1..<Int32(NSIG) where number != SIGKILL && number != SIGSTOP {
            _ = Glibc.signal(number, SIG_DFL)
        }
        sigprocmask(SIG_SETMASK, &none, nil)
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        _ = dup2(null, STDIN_FILENO)
        _ = dup2(null, STDOUT_FILENO)
        _ = dup2(logFD >= 0 ? logFD : null, STDERR_FILENO)
        _ = dup2(readyFD, 3)
        closefrom(4)
        return 3
    }

    /// Reads the child's lines until it says "ready" (returns) or fails or
    /// ends (throws, once the reason is said).
    private static func waitForReady(_ readEnd: Int32, child: ChildProcess) throws {
        var message = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(readEnd, &buffer, buffer.count)
            if count > 0 { message += buffer[0..<count]; continue }
            if count < 0 && errno == EINTR { continue }
            break
        }
        close(readEnd)
        // The child writes "warning: ..." lines, then "ready" or "error: ...".
        var lines = String(decoding: message, as: UTF8.self).split(separator: "\n").map(String.init)
        for warning in lines.filter({ $0.hasPrefix("warning: ") }) {
            FileHandleless.warn(String(warning.dropFirst(9)))
        }
        lines.removeAll { $0.hasPrefix("warning: ") }
        let text = lines.last ?? ""
        if text == "ready" { return }
        _ = child.wait()
        let reason = text.hasPrefix("error: ") ? String(text.dropFirst(7)) : "the driver exited before the mount was ready"
        FileHandle.standardError.write(Data("Error: \(reason)\n".utf8))
        throw DriverExit(1)
    }

    /// A warning at start: on standard error, and for a background start
    /// also through the pipe, so that the waiting parent shows it.
    static func warn(_ message: String, readyFD: Int32?) {
        FileHandleless.warn(message)
        guard let readyFD else { return }
        var bytes = Array("warning: \(onOneLine(message))\n".utf8)
        _ = write(readyFD, &bytes, bytes.count)
    }

    static func reportReady(readyFD: Int32?) {
        guard let readyFD else { return }
        send("ready", to: readyFD)
    }

    static func reportFailure(_ message: String, readyFD: Int32?) {
        FileHandle.standardError.write(Data("Error: \(message)\n".utf8))
        guard let readyFD else { return }
        send("error: \(message)", to: readyFD)
    }

    private static func send(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)
        _ = write(fd, &bytes, bytes.count)
        close(fd)
    }
}
