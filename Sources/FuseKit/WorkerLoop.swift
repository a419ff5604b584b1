import CFuse
import CLinux
import Glibc
import POSIXHelpers
import Synchronization

/// The session's multi-threaded loop: a fixed set of worker threads, each
/// reading requests from /dev/fuse into a buffer of its own and serving them.
///
/// libfuse's `fuse_session_loop_mt` ends its workers with `pthread_cancel`
/// while they sit in read(2); a thread cancelled there never leaves
/// ThreadSanitizer's interceptor, which then aborts the process, and
/// cancellation skips whatever clean-up Swift frames on that stack would do.
/// Here every worker returns on its own: once the session is asked to exit,
/// the coordinator interrupts each worker's read with a signal whose handler
/// does nothing and is installed without SA_RESTART, so the read fails with
/// EINTR and the worker sees the exit flag.
struct WorkerLoop {
    let session: OpaquePointer
    let threadCount: Int
    /// Each worker unshares its file-system context (CLONE_FS) and sets
    /// umask 0 in it (see `FuseSession.run`).
    var privateUmask = false

    /// Returns 0, or the negative errno that made reading /dev/fuse fail.
    func run() -> Int32 {
        let wake = wakeSignal()
        var noOp = sigaction()
        noOp.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&noOp.sa_mask)
        noOp.sa_flags = 0
        // Left in place at the end: another session's loop in the same
        // process may be using it, and a real-time signal whose action went
        // back to the default would end the process.
        sigaction(wake, &noOp, nil)

        let finished = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(finished, 0, 0)
        defer { sem_destroy(finished); finished.deallocate() }

        // Workers start with every signal blocked (SIGTERM and the others
        // go to the coordinator, whose waits they interrupt), then let the
        // wake signal in.
        var all = sigset_t(), saved = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &saved)
        var workers: [(thread: pthread_t, context: WorkerContext)] = []
        for _ in 0..<max(1, threadCount) {
            let context = WorkerContext(session: session, wakeSignal: wake, finished: finished, privateUmask: privateUmask)
            guard let thread = startThread({ context.serve() }) else { break }
            workers.append((thread, context))
        }
        pthread_sigmask(SIG_SETMASK, &saved, nil)
        if workers.isEmpty {
            return -EAGAIN
        }

        var done = 0
        // A signal sent to the process normally lands here (the workers
        // block it) and cuts the wait short; the timeout covers a signal
        // taken by some other thread of the process.
        while done == 0 && fuse_session_exited(session) == 0 {
            if wait(finished, milliseconds: 250) { done += 1 }
        }
        fuse_session_exit(session)
        // A worker may be between its check of the flag and its read when
        // the signal comes: signal again until every worker has returned.
        while done < workers.count {
            for worker in workers { pthread_kill(worker.thread, wake) }
            while done < workers.count, wait(finished, milliseconds: 20) { done += 1 }
        }

        var status: Int32 = 0
        for worker in workers {
            pthread_join(worker.thread, nil)
            if status == 0 { status = worker.context.failure.load(ordering: .relaxed) }
        }
        return status
    }

    /// True when `semaphore` was taken before `milliseconds` went by.
    private func wait(_ semaphore: UnsafeMutablePointer<sem_t>, milliseconds: Int) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = deadline.tv_nsec + milliseconds * 1_000_000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        return sem_timedwait(semaphore, &deadline) == 0
    }

    /// A real-time signal: nothing else in the process is likely to use it,
    /// and none of them has a meaning for the C library.
    private func wakeSignal() -> Int32 {
        __libc_current_sigrtmin() + 3
    }
}

/// What one worker thread needs. A thin wrapper of the session's and the
/// semaphore's C pointers (libfuse's session calls and sem_post are safe
/// from any thread), shared by the worker and the coordinator.
private final class WorkerContext: @unchecked Sendable {
    let session: OpaquePointer
    let wakeSignal: Int32
    let finished: UnsafeMutablePointer<sem_t>
    let privateUmask: Bool
    /// Written by the worker, read by the coordinator after the join.
    let failure = Atomic<Int32>(0)

    init(session: OpaquePointer, wakeSignal: Int32, finished: UnsafeMutablePointer<sem_t>, privateUmask: Bool) {
        self.session = session
        self.wakeSignal = wakeSignal
        self.finished = finished
        self.privateUmask = privateUmask
    }

    func serve() {
        // umask lives in the file-system context (fs_struct), which threads
        // share unless one unshares it; this thread's umask 0 then leaves
        // the process's alone.
        if privateUmask {
            guard asfs_unshare_fs() == 0 else {
                // Serving with the process's umask would store wrong modes.
                failure.store(-errno, ordering: .relaxed)
                fuse_session_exit(session)
                sem_post(finished)
                return
            }
            umask(0)
        }
        var wake = sigset_t()
        sigemptyset(&wake)
        sigaddset(&wake, wakeSignal)
        pthread_sigmask(SIG_UNBLOCK, &wake, nil)

        // libfuse allocates `mem` on the first read, at the session's size.
        var buffer = fuse_buf()
        while fuse_session_exited(session) == 0 {
            let received = fuse_session_receive_buf(session, &buffer)
            if received == -EINTR || received == -EAGAIN { continue }
            if received < 0 {
                failure.store(received, ordering: .relaxed)
                fuse_session_exit(session)
            }
            // 0: the mount is gone (ENODEV; libfuse has set the exit flag)
            // or the session was asked to exit while reading.
            if received <= 0 { break }
            if buffer.flags.rawValue & FUSE_BUF_IS_FD.rawValue == 0 { TmpfileRequest.mapToCreate(buffer.mem, length: Int(received)) }
            fuse_session_process_buf(session, &buffer)
        }
        free(buffer.mem)
        sem_post(finished)
    }
}
