// The one way this project starts another program: posix_spawn, then
// waitpid on that one pid (never waitpid(-1), which would reap another
// thread's children). The command line, the backup archive (tar), the test
// fixture and the tests all use it.
//
// Why not swift-subprocess (1.0.2 is in the mirror): its API is async, and
// the callers here are synchronous (a verb, the fixture's mount and
// teardown, a test) on a task pool of two threads that must not block; and
// the driver's self-start needs a descriptor of our choice at a known number
// in a new session, which its platform options do not give on Linux.

#if os(Linux)
import CLinux
import Glibc
import POSIXHelpers

/// A program that could not be started.
public struct SpawnError: Error, Sendable, CustomStringConvertible {
    public var program: String
    public var code: Int32

    public var description: String { "cannot start \(program): \(errorText(code))" }
}

/// Where one of the child's standard descriptors comes from.
public enum Redirection: Sendable, Equatable {
    /// Ours, as it is.
    case inherit
    /// /dev/null.
    case nullDevice
    /// A file: read for standard input; for output, appended to (created
    /// with mode 0644 when missing).
    case path(String)
    /// One of our descriptors.
    case descriptor(Int32)
}

/// How to start a child. The child always starts with every signal at its
/// default and none blocked, whatever the caller's threads did to theirs.
public struct SpawnOptions: Sendable {
    public var standardInput: Redirection
    public var standardOutput: Redirection
    public var standardError: Redirection
    /// More descriptors for the child: its number -> our descriptor.
    public var descriptors: [Int32: Int32]
    /// Close every other descriptor in the child, also those opened without
    /// O_CLOEXEC: a tool started by a library in someone's process (tar for
    /// a backup, fusermount3) must not hold that process's files open (a
    /// file in a container then stays open past its close, a mount stays
    /// busy). On unless a caller means to hand its descriptors down.
    public var closeOtherDescriptors: Bool
    public var workingDirectory: String?
    /// Variables set (or replaced) in the child, over ours.
    public var environment: [String: String]
    /// Start the child in a session of its own (setsid), away from our
    /// terminal and its signals.
    public var newSession: Bool

    public init(standardInput: Redirection = .inherit, standardOutput: Redirection = .inherit,
                standardError: Redirection = .inherit, descriptors: [Int32: Int32] = [:],
                closeOtherDescriptors: Bool = true, workingDirectory: String? = nil,
                environment: [String: String] = [:], newSession: Bool = false) {
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.standardError = standardError
        self.descriptors = descriptors
        self.closeOtherDescriptors = closeOtherDescriptors
        self.workingDirectory = workingDirectory
        self.environment = environment
        self.newSession = newSession
    }
}

/// A child we started and must reap.
public struct ChildProcess: Sendable, Equatable {
    public let pid: pid_t

    public init(pid: pid_t) { self.pid = pid }

    /// Starts `arguments[0]` (looked up on PATH when it has no slash).
    public static func start(_ arguments: [String], _ options: SpawnOptions = SpawnOptions()) throws(SpawnError)
        -> ChildProcess
    {
        guard let program = arguments.first else { throw SpawnError(program: "(nothing)", code: EINVAL) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (number, redirection) in [(Int32(0), options.standardInput), (1, options.standardOutput),
                                      (2, options.standardError)] {
            switch redirection {
            case .inherit: break
            case .nullDevice: posix_spawn_file_actions_addopen(&actions, number, "/dev/null", number == 0 ? O_RDONLY : O_WRONLY, 0)
            case .path(let path):
                posix_spawn_file_actions_addopen(&actions, number, path,
                                                 number == 0 ? O_RDONLY : O_WRONLY | O_APPEND | O_CREAT, 0o644)
            case .descriptor(let fd): posix_spawn_file_actions_adddup2(&actions, fd, number)
            }
        }
        for (number, fd) in options.descriptors.sorted(by: { $0.key < $1.key }) {
            posix_spawn_file_actions_adddup2(&actions, fd, number)
        }
        if options.closeOtherDescriptors {
            _ = asfs_spawn_addclosefrom(&actions, (options.descriptors.keys.max() ?? 2) + 1)
        }
        if let folder = options.workingDirectory {
            let result = asfs_spawn_addchdir(&actions, folder)
            guard result == 0 else { throw SpawnError(program: program, code: result) }
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        var flags = Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        if options.newSession { flags |= asfs_POSIX_SPAWN_SETSID }
        posix_spawnattr_setflags(&attributes, flags)

        let cArguments = arguments.map { strdup($0) } + [nil]
        let cEnvironment = environmentLines(adding: options.environment).map { strdup($0) } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, &attributes, cArguments, cEnvironment)
        guard result == 0 else { throw SpawnError(program: program, code: result) }
        return ChildProcess(pid: pid)
    }

    /// Waits until the child ends, and reaps it. `.exited(-1)` when it is
    /// not (or no longer) our child to reap.
    public func wait() -> ExitStatus {
        var status: Int32 = 0
        while true {
            if waitpid(pid, &status, 0) == pid { return ExitStatus(waitStatus: status) }
            if errno != EINTR { return .exited(-1) }
        }
    }

    /// The child's status if it has ended (then reaped), else nil.
    public func poll() -> ExitStatus? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return ExitStatus(waitStatus: status) }
            if result == 0 { return nil }
            if errno != EINTR { return .exited(-1) }
        }
    }

    /// Waits up to `timeout` seconds for the child to end (on a pidfd: no
    /// polling loop); its status, or nil when it still runs.
    public func wait(timeout: Double) -> ExitStatus? {
        if let status = poll() { return status }
        let pidfd = asfs_pidfd_open(pid)
        guard pidfd >= 0 else { return poll() }
        defer { close(pidfd) }
        let deadline = monotonicSeconds() + max(0, timeout)
        while true {
            let left = deadline - monotonicSeconds()
            if left <= 0 { return poll() }
            var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
            let ready = Glibc.poll(&entry, 1, Int32(min(left * 1000, Double(Int32.max)).rounded(.up)))
            if ready > 0 { return poll() ?? wait() }
            if ready < 0 && errno != EINTR { return poll() }
        }
    }

    /// Ours, with `added` set over it: NAME=value lines.
    static func environmentLines(adding added: [String: String]) -> [String] {
        var lines: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            if added[String(text.prefix { $0 != "=" })] == nil { lines.append(text) }
            index += 1
        }
        return lines + added.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
    }
}

/// A pipe whose two ends close on exec from the start, so that no program
/// another thread starts meanwhile inherits one.
public func makePipe() throws(SpawnError) -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    guard asfs_pipe_cloexec(&ends) == 0 else { throw SpawnError(program: "pipe2", code: errno) }
    return (ends[0], ends[1])
}

/// Seconds on the monotonic clock.
public func monotonicSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
#endif
