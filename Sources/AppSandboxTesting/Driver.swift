// The driver process behind one mounted container, and its watcher.
//
// The driver runs in the foreground as a child of the test process. Beside
// it runs a watcher, `sh` reading a pipe whose only writer is the test
// process: at a normal teardown the fixture writes "done" and the watcher
// just exits; if the test process dies first (a crash, a fatalError,
// SIGKILL) and no teardown code runs, the kernel closes the pipe, the
// watcher reads end-of-file and unmounts, and the driver then ends as on any
// unmount: it empties tmp and exits 0. So a dead test leaves no mount behind.

#if os(Linux)
import Glibc
import Locking
import Spawning

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
        let pid = try spawn(arguments, SpawnOptions(standardInput: .nullDevice, standardOutput: .path(log),
                                                     standardError: .path(log), closeOtherDescriptors: true))
        // Both ends close on exec from the start, so that no program another
        // thread starts meanwhile holds the write end (the watcher would
        // then never see the test process die).
        guard let ends = try? makePipe() else {
            // No watcher: the fixture still unmounts at every teardown.
            return Driver(pid: pid, watcher: nil, watcherPipe: -1)
        }
        let script = #"""
            read -r line
            [ "$line" = done ] && exit 0
            fusermount3 -u "$1" 2>/dev/null || fusermount3 -u -z "$1" 2>/dev/null || umount -l "$1"
            """#
        let watcher = try? spawn(["sh", "-c", script, "appsandboxfs-watcher", mountpoint],
                                 SpawnOptions(standardInput: .descriptor(ends.read), standardOutput: .nullDevice,
                                              standardError: .path(log), closeOtherDescriptors: true))
        close(ends.read)
        if watcher == nil { close(ends.write) }
        return Driver(pid: pid, watcher: watcher, watcherPipe: watcher == nil ? -1 : ends.write)
    }

    private static func spawn(_ arguments: [String], _ options: SpawnOptions) throws -> pid_t {
        do { return try ChildProcess.start(arguments, options).pid } catch { throw FixtureError(error.description) }
    }

    /// How the driver ended (the shell's number: the exit code, or 128 + the
    /// signal); nil while it runs. Reaps it.
    var exitStatus: Int32? {
        exit.withLock { status in
            if status == nil {
                // -1: reaped by someone else.
                status = ChildProcess(pid: pid).poll()?.code
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
        if let status = exitStatus { return status }
        // Not under the lock: a wait must not block `exitStatus` elsewhere.
        guard let ended = ChildProcess(pid: pid).wait(timeout: timeout) else { return nil }
        return exit.withLock { status in
            if status == nil { status = ended.code }
            return status
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
        let child = ChildProcess(pid: watcher)
        if child.wait(timeout: 15) == nil {
            kill(watcher, SIGKILL)
            _ = child.wait()
        }
    }
}
#endif
