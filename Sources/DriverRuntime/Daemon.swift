import Foundation
import Glibc
import POSIXHelpers
import Spawning

/// Running the driver in the background: the command starts itself again
/// with --foreground in a new session and waits until that child says the
/// mount is ready (or why it failed), so that `mount` returns only once the
/// container can be used.
enum Daemon {
    static func startInBackground(logFile: String?) throws {
        let pipe: (read: Int32, write: Int32)
        do { pipe = try makePipe() } catch { throw Failure("cannot create a pipe: \(error)") }
        let (readEnd, writeEnd) = pipe

        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        // The child gets the pipe's write end as its descriptor 3, and
        // nothing else of ours; it goes to / itself once it has made its
        // paths absolute (MountCommand), so it keeps no folder busy.
        let arguments = [executable] + CommandLine.arguments.dropFirst() + ["--ready-fd", "3"]
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
        var bytes = Array("warning: \(message.replacingOccurrences(of: "\n", with: " "))\n".utf8)
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
