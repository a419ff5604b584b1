// The driver process behind one mounted container, watched by a thread of
// its own.
//
// The driver runs in the foreground as a child of that thread, started
// through `setpriv --pdeathsig TERM` where setpriv exists: if the test
// process dies (a crash, a fatalError, SIGKILL) and no teardown code runs,
// the kernel sends the driver SIGTERM, and the driver unmounts and empties
// tmp as on a normal unmount. The parent-death signal follows the thread
// that started the child, so that thread lives as long as the driver: it
// waits for it and records how it ended.

import Foundation
import Glibc
import Synchronization

final class Driver: Sendable {
    let pid: pid_t
    private let state: DriverState

    private init(pid: pid_t, state: DriverState) {
        self.pid = pid
        self.state = state
    }

    /// How the driver ended (the shell's number: the exit code, or 128 + the
    /// signal); nil while it runs.
    var exitStatus: Int32? { state.exit.withLock { $0 } }

    /// Starts `arguments` with its output appended to `log`.
    static func start(_ arguments: [String], log: String) throws -> Driver {
        let command = Subprocess.onPath("setpriv").map { [$0, "--pdeathsig", "TERM", "--"] + arguments } ?? arguments
        let state = DriverState()
        let started = DispatchSemaphore(value: 0)
        let thread = Thread {
            let outcome = Result { try Subprocess.spawn(command, standardOutput: log, standardError: log) }
            state.started.withLock { $0 = outcome.mapError { FixtureError("\($0)") } }
            started.signal()
            guard case .success(let pid) = outcome else { return }
            let status = Subprocess.wait(for: pid, timeout: nil)
            state.exit.withLock { $0 = status ?? -1 }
        }
        thread.name = "appsandboxfs driver"
        thread.start()
        started.wait()
        let outcome = state.started.withLock { $0 }
        switch outcome {
        case .success(let pid): return Driver(pid: pid, state: state)
        case .failure(let error): throw error
        case nil: throw FixtureError("the driver thread did not start")
        }
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
}

private final class DriverState: Sendable {
    let started = Mutex<Result<pid_t, FixtureError>?>(nil)
    let exit = Mutex<Int32?>(nil)
}
