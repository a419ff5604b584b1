import ArgumentParser
import Foundation
import Glibc

/// Running the driver in the background: the command starts itself again
/// with --foreground in a new session and waits until that child says the
/// mount is ready (or why it failed), so that `mount` returns only once the
/// container can be used.
enum Daemon {
    static func startInBackground(logFile: String?) throws {
        var pipeFDs: [Int32] = [0, 0]
        guard pipe(&pipeFDs) == 0 else { throw Failure("cannot create a pipe: \(String(cString: strerror(errno)))") }
        let (readEnd, writeEnd) = (pipeFDs[0], pipeFDs[1])
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)

        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        let arguments = [executable] + CommandLine.arguments.dropFirst() + ["--ready-fd", String(writeEnd)]

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, logFile ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, 0x80) // POSIX_SPAWN_SETSID (a GNU extension Swift cannot see)

        var pid: pid_t = 0
        let cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let status = posix_spawn(&pid, executable, &actions, &attributes, cArguments, environ)
        close(writeEnd)
        guard status == 0 else { throw Failure("cannot start the driver: \(String(cString: strerror(status)))") }

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
        var exitStatus: Int32 = 0
        waitpid(pid, &exitStatus, 0)
        let reason = text.hasPrefix("error: ") ? String(text.dropFirst(7)) : "the driver exited before the mount was ready"
        FileHandle.standardError.write(Data("Error: \(reason)\n".utf8))
        throw ExitCode(1)
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
