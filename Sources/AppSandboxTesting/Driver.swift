// What serves one mounted container: a driver process (the default), or the
// test process itself (`Options.inProcess`, InProcessDriver.swift), each
// with a watcher that unmounts if the test process dies.

#if os(Linux)
import Glibc
import Locking
import POSIXHelpers
import Spawning

/// A `sh` reading a pipe whose only writer is the test process: at a normal
/// teardown the fixture writes "done" and the watcher just exits; if the
/// test process dies first (a crash, a fatalError, SIGKILL) and no teardown
/// code runs, the kernel closes the pipe, the watcher reads end-of-file and
/// unmounts. A driver process then ends as on any unmount (it empties tmp
/// and exits 0); an in-process driver died with the test process, and the
/// unmount takes its dead mount away. So a dead test leaves no mount behind.
final class MountWatcher: Sendable {
    private let pid: pid_t
    private let pipe: Int32
    private let released = Locked(false)

    private init(pid: pid_t, pipe: Int32) {
        self.pid = pid
        self.pipe = pipe
    }

    /// nil when no watcher could be started: the fixture still unmounts at
    /// every teardown.
    static func start(mountpoint: String, log: String) -> MountWatcher? {
        // Both ends close on exec from the start, so that no program another
        // thread starts meanwhile holds the write end (the watcher would
        // then never see the test process die).
        guard let ends = try? makePipe() else { return nil }
        let script = #"""
            read -r line
            [ "$line" = done ] && exit 0
            fusermount3 -u "$1" 2>/dev/null || fusermount3 -u -z "$1" 2>/dev/null || umount -l "$1"
            """#
        let watcher = try? ChildProcess.start(["sh", "-c", script, "appsandboxfs-watcher", mountpoint],
                                              SpawnOptions(standardInput: .descriptor(ends.read), standardOutput: .nullDevice,
                                                           standardError: .path(log), closeOtherDescriptors: true)).pid
        close(ends.read)
        guard let watcher else {
            close(ends.write)
            return nil
        }
        return MountWatcher(pid: watcher, pipe: ends.write)
    }

    /// Tells the watcher the teardown is done (it exits without
    /// unmounting) and reaps it. Only the first call does anything.
    func release() {
        let first = released.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        var message = Array("done\n".utf8)
        _ = write(pipe, &message, message.count)
        close(pipe)
        let child = ChildProcess(pid: pid)
        if child.wait(timeout: 15) == nil {
            kill(pid, SIGKILL)
            _ = child.wait()
        }
    }
}

/// The driver process behind one mounted container: `appsandboxfs mount
/// --foreground`, a child of the test process.
final class Driver: ContainerServer {
    let pid: pid_t
    private let watcher: MountWatcher?
    private let exit = Locked<Int32?>(nil)

    private init(pid: pid_t, watcher: MountWatcher?) {
        self.pid = pid
        self.watcher = watcher
    }

    /// Starts `arguments` (a driver in the foreground for `mountpoint`) with
    /// its output appended to `log`, and its watcher.
    static func start(_ arguments: [String], mountpoint: String, log: String) throws -> Driver {
        let pid: pid_t
        do {
            pid = try ChildProcess.start(arguments, SpawnOptions(standardInput: .nullDevice, standardOutput: .path(log),
                                                                 standardError: .path(log), closeOtherDescriptors: true)).pid
        } catch {
            throw FixtureError(error.description)
        }
        return Driver(pid: pid, watcher: MountWatcher.start(mountpoint: mountpoint, log: log))
    }

    /// How the driver ended; nil while it runs. Reaps it.
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

    func releaseWatcher() { watcher?.release() }
}
#endif
