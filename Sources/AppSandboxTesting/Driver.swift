// What serves one mounted container: a driver process (the default), or the
// test process itself (`Options.inProcess`, InProcessDriver.swift), each
// with a watcher that unmounts if the test process dies.

#if os(Linux)
import Glibc
import Locking
import POSIXHelpers
import Spawning

/// One mount's place in the test process's watcher (`WatcherProcess`):
/// while registered, the mount is taken away if the test process dies
/// first (a crash, a fatalError, SIGKILL) and no teardown code runs. A
/// driver process then ends as on any unmount (it empties tmp and exits
/// 0); an in-process driver died with the test process, and the unmount
/// takes its dead mount away. So a dead test leaves no mount behind.
final class MountWatcher: Sendable {
    private let mountpoint: String
    private let released = Locked(false)

    private init(mountpoint: String) {
        self.mountpoint = mountpoint
    }

    /// nil when the mount could not be registered (no watcher could be
    /// started, or a path with a newline, which its one-line protocol
    /// cannot carry): the fixture still unmounts at every teardown.
    static func start(mountpoint: String) -> MountWatcher? {
        guard !mountpoint.contains("\n"), WatcherProcess.shared.watch(mountpoint) else { return nil }
        return MountWatcher(mountpoint: mountpoint)
    }

    /// The teardown is done: the watcher forgets the mount. Only the first
    /// call does anything.
    func release() {
        let first = released.withLock { done in
            defer { done = true }
            return !done
        }
        if first { WatcherProcess.shared.forget(mountpoint) }
    }
}

/// The test process's one watcher: a `sh` reading a socket whose other end
/// only this process holds, one line for each mount to watch ("+PATH") or to
/// forget ("-PATH"). When the test process dies, the kernel closes its end,
/// the watcher reads end-of-file and unmounts each mount still watched.
/// Started at the first mount and left running until the process ends, so
/// that a container's life starts no process of its own (a `sh` per
/// container cost a fork, an exec and a reap: a third of an in-process
/// fixture's life, docs/performance.md). Its stderr goes nowhere: no
/// fixture's log outlives it.
final class WatcherProcess: Sendable {
    static let shared = WatcherProcess()

    private struct State {
        /// The watcher and this process's end of its socket.
        var pid: pid_t = 0
        var socket: Int32 = -1
        /// What it watches, to tell a new watcher if the old one is gone.
        var watched: [String] = []
    }

    private let state = Locked(State())

    private static let script = #"""
        while IFS= read -r line; do
            case $line in
                +*) set -- "$@" "${line#+}" ;;
                -*) path=${line#-}; count=$#
                    while [ "$count" -gt 0 ]; do
                        first=$1; shift; count=$((count - 1))
                        [ "$first" = "$path" ] || set -- "$@" "$first"
                    done ;;
            esac
        done
        for mountpoint in "$@"; do
            fusermount3 -u "$mountpoint" 2>/dev/null || fusermount3 -u -z "$mountpoint" 2>/dev/null || umount -l "$mountpoint"
        done
        """#

    /// Watches `mountpoint`; false when no watcher runs and none could be started.
    func watch(_ mountpoint: String) -> Bool {
        state.withLock { state in
            state.watched.append(mountpoint)
            if state.socket >= 0 && Self.send("+" + mountpoint, to: state.socket) { return true }
            // None yet, or it died (someone killed it): a new one, told
            // everything this process still has mounted.
            Self.stop(&state)
            guard let (pid, socket) = Self.startWatcher() else {
                state.watched.removeLast()
                return false
            }
            state.pid = pid
            state.socket = socket
            let lines = state.watched.map { "+" + $0 }.joined(separator: "\n")
            if Self.send(lines, to: socket) { return true }
            state.watched.removeLast()
            return false
        }
    }

    func forget(_ mountpoint: String) {
        state.withLock { state in
            guard let index = state.watched.lastIndex(of: mountpoint) else { return }
            state.watched.remove(at: index)
            if state.socket >= 0 { _ = Self.send("-" + mountpoint, to: state.socket) }
        }
    }

    /// Closes the socket to a watcher that is gone, and reaps it.
    private static func stop(_ state: inout State) {
        guard state.socket >= 0 else { return }
        close(state.socket)
        state.socket = -1
        let child = ChildProcess(pid: state.pid)
        if child.wait(timeout: 5) == nil {
            kill(state.pid, SIGKILL)
            _ = child.wait()
        }
    }

    private static func startWatcher() -> (pid: pid_t, socket: Int32)? {
        // Both ends close on exec from the start, so that no program another
        // thread starts meanwhile holds this process's end (the watcher
        // would then never see the test process die).
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return nil
        }
        let pid = try? ChildProcess.start(["sh", "-c", script, "appsandboxfs-watcher"],
                                          SpawnOptions(standardInput: .descriptor(ends[1]), standardOutput: .nullDevice,
                                                       standardError: .nullDevice, closeOtherDescriptors: true)).pid
        close(ends[1])
        guard let pid else {
            close(ends[0])
            return nil
        }
        return (pid, ends[0])
    }

    /// One line; false when the watcher is gone (MSG_NOSIGNAL: no SIGPIPE).
    private static func send(_ line: String, to socket: Int32) -> Bool {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            sent += count
        }
        return true
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
        return Driver(pid: pid, watcher: MountWatcher.start(mountpoint: mountpoint))
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
