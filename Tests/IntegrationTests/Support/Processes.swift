// Running other programs from a test: posix_spawn and waitpid on one pid at a
// time (never waitpid(-1), which would steal other tests' children), output
// through temporary files (no pipes, so no deadlock on a full pipe).

import Glibc

/// How a child ended.
enum ExitStatus: Equatable, CustomStringConvertible {
    case exited(Int32)
    case signaled(Int32)

    init(waitStatus s: Int32) {
        // The W* macros are not imported into Swift.
        self = s & 0x7f == 0 ? .exited((s >> 8) & 0xff) : .signaled(s & 0x7f)
    }

    /// The shell's number for it: the exit code, or 128 + the signal.
    var code: Int32 {
        switch self {
        case .exited(let c): c
        case .signaled(let s): 128 + s
        }
    }

    var description: String {
        switch self {
        case .exited(let c): "exit \(c)"
        case .signaled(let s): "killed by signal \(s)"
        }
    }
}

/// The user (and group) tests run programs as to check permissions.
let nobody: uid_t = 65534

struct SupportError: Error, CustomStringConvertible {
    var description: String
    init(_ text: String) { description = text }
}

/// Runs a program to its end and returns its status (the exit code, or 128 +
/// the signal, as a shell does), standard output and standard error.
/// `asUser` runs it through `setpriv --reuid=U --regid=G --clear-groups`
/// (the group is `group`, else the same number as the user; with
/// `supplementaryGroups`, `--groups=A,B` instead of --clear-groups). `stdin` is fed
/// to it (else /dev/null). After `timeout` seconds it is killed (status 137)
/// and the standard error says so. A program that cannot start gives 127.
func runProcess(
    _ argv: [String],
    asUser uid: uid_t? = nil,
    group gid: gid_t? = nil,
    supplementaryGroups groups: [gid_t]? = nil,
    cwd: String? = nil,
    stdin: String? = nil,
    timeout: Double = 300
) -> (status: Int32, stdout: String, stderr: String) {
    var command = argv
    if let uid {
        let groupOption = groups.map { "--groups=" + $0.map(String.init).joined(separator: ",") } ?? "--clear-groups"
        command = ["setpriv", "--reuid=\(uid)", "--regid=\(gid ?? gid_t(uid))", groupOption, "--"] + argv
    }
    do {
        let out = try TemporaryFile(), err = try TemporaryFile()
        let input = try stdin.map { text in
            let file = try TemporaryFile()
            try file.write(text)
            return file
        }
        let pid = try spawn(command, cwd: cwd, stdin: input?.path ?? "/dev/null",
                            stdout: out.path, stderr: err.path)
        var status = waitForExit(pid, timeout: timeout)
        var timedOut = ""
        if status == nil {
            kill(pid, SIGKILL)
            status = waitForExit(pid, timeout: 30)
            timedOut = "\n[runProcess: killed after \(timeout) s: \(argv.joined(separator: " "))]"
        }
        return (status?.code ?? 137, out.read(), err.read() + timedOut)
    } catch {
        return (127, "", "runProcess: \(argv.first ?? "?"): \(error)")
    }
}

/// Starts a program in the background: its three standard descriptors go to
/// the named files; the environment is this process's. Returns its pid.
func spawn(_ argv: [String], cwd: String? = nil, stdin: String, stdout: String, stderr: String) throws -> pid_t {
    guard let program = argv.first else { throw SupportError("spawn: empty command") }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_APPEND, 0)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_APPEND, 0)
    // Tests run in parallel: a descriptor another test opened without
    // O_CLOEXEC must not leak into this child and keep a mount busy.
    _ = addCloseFrom(&actions, 3)
    if let cwd {
        let r = cwd.withCString { addChdir(&actions, $0) }
        guard r == 0 else { throw SupportError("spawn: cannot chdir to \(cwd): \(posixError(r))") }
    }
    // The child starts with every signal at its default and none blocked,
    // whatever the test runner did to its own threads.
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t(), all = sigset_t()
    sigemptyset(&none)
    sigfillset(&all)
    posix_spawnattr_setsigmask(&attributes, &none)
    posix_spawnattr_setsigdefault(&attributes, &all)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    defer { for p in cArgs { free(p) } }
    var pid: pid_t = 0
    let r = posix_spawnp(&pid, program, &actions, &attributes, &cArgs, environ)
    guard r == 0 else { throw SupportError("cannot start \(program): \(posixError(r))") }
    return pid
}

/// Waits for a child to end, up to `timeout` seconds (nil: forever);
/// nil when it is still running then. Reaps it when it has ended.
func waitForExit(_ pid: pid_t, timeout: Double?) -> ExitStatus? {
    let deadline = timeout.map { monotonicNow() + $0 }
    var pause: UInt32 = 1_000
    while true {
        var status: Int32 = 0
        let r = waitpid(pid, &status, deadline == nil ? 0 : WNOHANG)
        if r == pid { return ExitStatus(waitStatus: status) }
        if r < 0, errno != EINTR { return .exited(-1) }  // not our child (ECHILD)
        if let deadline, monotonicNow() >= deadline { return nil }
        usleep(pause)
        pause = min(pause * 2, 20_000)
    }
}

/// Seconds on the monotonic clock.
func monotonicNow() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_MONOTONIC, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

/// glibc's posix_spawn_file_actions_addchdir_np (2.29), which the Glibc
/// module does not show.
private let addChdir: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32 = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else {
        fatalError("this C library has no posix_spawn_file_actions_addchdir_np")
    }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32).self)
}()

/// glibc's posix_spawn_file_actions_addclosefrom_np, which Swift's Glibc
/// module does not show.
private let addCloseFrom: @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32 = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
        fatalError("this C library has no posix_spawn_file_actions_addclosefrom_np")
    }
    return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
}()
