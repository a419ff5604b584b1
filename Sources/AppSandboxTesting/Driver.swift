// The driver process behind one mounted container, and its watcher.
//
// The driver runs in the foreground as a child of the test process. Beside
// it runs a watcher, `sh` reading a pipe whose only writer is the test
// process: at a normal teardown the fixture writes "done" and the watcher
// just exits; if the test process dies first (a crash, a fatalError,
// SIGKILL) and no teardown code runs, the kernel closes the pipe, the
// watcher reads end-of-file and unmounts, and the driver then ends as on any
// unmount: it empties tmp and exits 0. So a dead test leaves no mount behind.

import Foundation

final class Driver: Sendable {
    let pid: pid_t
    private let watcher: pid_t?
    private let watcherPipe: Int32
    private let exit = Locked<Int32?>(nil)
    private let released = Locked(false)

    private init(pid: pid_t, watcher: pid_t?, watcherPipe: Int32) {
        self.pid = pid
        self.watcher = watcher
        self.watcherPipe = watcherPipe
    }

    /// Starts `arguments` (a driver in the foreground for `mountpoint`) with
    /// its output appended to `log`, and its watcher.
    static func start(_ arguments: [String], mountpoint: String, log: String) throws -> Driver {
        let pid = try Subprocess.spawn(arguments, standardOutput: log, standardError: log)
        var ends: [Int32] = [-1, -1]
        guard pipeWithCloseOnExec(&ends) == 0 else {
            // No watcher: the fixture still unmounts at every teardown.
            return Driver(pid: pid, watcher: nil, watcherPipe: -1)
        }
        let script = #"""
            read -r line
            [ "$line" = done ] && exit 0
            fusermount3 -u "$1" 2>/dev/null || fusermount3 -u -z "$1" 2>/dev/null || umount -l "$1"
            """#
        let watcher = try? Subprocess.spawn(["sh", "-c", script, "appsandboxfs-watcher", mountpoint],
                                            standardInput: ends[0], standardOutput: "/dev/null", standardError: log)
        close(ends[0])
        if watcher == nil { close(ends[1]) }
        return Driver(pid: pid, watcher: watcher, watcherPipe: watcher == nil ? -1 : ends[1])
    }

    /// How the driver ended (the shell's number: the exit code, or 128 + the
    /// signal); nil while it runs. Reaps it.
    var exitStatus: Int32? {
        exit.withLock { status in
            if status == nil {
                var raw: Int32 = 0
                let result = waitpid(pid, &raw, WNOHANG)
                if result == pid {
                    status = Subprocess.shellStatus(raw)
                } else if result < 0 && errno == ECHILD {
                    status = -1  // reaped by someone else
                }
            }
            return status
        }
    }

    /// Whether the driver has ended, reaped or not: a zombie (its main
    /// thread is gone; waitpid answers once all its threads are).
    var hasExited: Bool {
        if exitStatus != nil { return true }
        guard let stat = readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return true }
        let state = stat[stat.index(after: close)...].dropFirst().first
        return state == "Z" || state == "X"
    }

    /// Waits up to `timeout` seconds for the driver to end; its status, or
    /// nil when it still runs.
    func waitForExit(timeout: Double) -> Int32? {
        let deadline = monotonicSeconds() + timeout
        while true {
            if let status = exitStatus { return status }
            if monotonicSeconds() >= deadline { return nil }
            usleep(5_000)
        }
    }

    func signal(_ number: Int32) {
        if exitStatus == nil { kill(pid, number) }
    }

    /// The teardown is done: tells the watcher so (it exits without
    /// unmounting) and reaps it.
    func releaseWatcher() {
        let first = released.withLock { done in
            defer { done = true }
            return !done
        }
        guard first, let watcher else { return }
        var message = Array("done\n".utf8)
        _ = write(watcherPipe, &message, message.count)
        close(watcherPipe)
        _ = Subprocess.wait(for: watcher, timeout: 15) ?? {
            kill(watcher, SIGKILL)
            return Subprocess.wait(for: watcher, timeout: nil)
        }()
    }
}

/// pipe2(fds, O_CLOEXEC): both ends close on exec, from the start, so no
/// program another thread starts meanwhile holds the write end (the
/// watcher would then never see the test process die). Swift's Glibc
/// module does not show pipe2.
private func pipeWithCloseOnExec(_ ends: inout [Int32]) -> Int32 {
    #if os(Linux)
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") else { return -1 }
    let pipe2 = unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32).self)
    return ends.withUnsafeMutableBufferPointer { pipe2($0.baseAddress!, O_CLOEXEC) }
    #else
    return -1  // the fixture mounts on Linux only
    #endif
}
