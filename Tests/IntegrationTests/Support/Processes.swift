// Running other programs from a test, through the project's one spawner
// (Spawning: posix_spawn, waitpid on one pid), output through temporary
// files (no pipes, so no deadlock on a full pipe).

import Foundation
import Glibc
import Spawning

/// How a child ended (the project's one spawner's type).
typealias ExitStatus = Spawning.ExitStatus

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
/// Tests run in parallel: no other descriptor of ours (one another test
/// opened without O_CLOEXEC) reaches the child, where it could keep a
/// mount busy.
func spawn(_ argv: [String], cwd: String? = nil, stdin: String, stdout: String, stderr: String) throws -> pid_t {
    do {
        return try ChildProcess.start(argv, SpawnOptions(
            standardInput: .path(stdin), standardOutput: .path(stdout), standardError: .path(stderr),
            closeOtherDescriptors: true, workingDirectory: cwd)).pid
    } catch {
        throw SupportError(error.description)
    }
}

/// Waits for a child to end, up to `timeout` seconds (nil: forever);
/// nil when it is still running then. Reaps it when it has ended.
func waitForExit(_ pid: pid_t, timeout: Double?) -> ExitStatus? {
    let child = ChildProcess(pid: pid)
    return timeout.map { child.wait(timeout: $0) } ?? child.wait()
}

/// Seconds on the monotonic clock.
func monotonicNow() -> Double { monotonicSeconds() }

/// `command` run in a mount namespace of its own (mounts private), from
/// which the copies of every container mount of ours are detached first.
/// A copy would keep another test's container alive, its driver serving,
/// after that test unmounted it here, for as long as this namespace lives
/// (its teardown then waits for a driver that does not end).
func inOwnMountNamespace(_ command: [String]) -> [String] {
    let detach = #"awk '/ - fuse\.appsandboxfs /{print $5}' /proc/self/mountinfo | "#
        + #"while read -r m; do umount -l -- "$(printf '%b' "$m")" 2>/dev/null; done; exec "$@""#
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", detach, "sh"] + command
}

/// `fusermount3 -u MOUNTPOINT`, tried again for up to two seconds while it
/// fails and the mount is still there: another test's look at every mount
/// (`status`'s statfs) holds a mount for a moment, as `unmount` allows for.
func fusermountUnmount(_ mountpoint: String) -> (status: Int32, stdout: String, stderr: String) {
    var result = runProcess(["fusermount3", "-u", mountpoint], timeout: 30)
    let deadline = monotonicNow() + 2
    while result.status != 0 && monotonicNow() < deadline
        && readFileText("/proc/self/mountinfo").contains(" \(mountpoint) ") {
        usleep(50_000)
        result = runProcess(["fusermount3", "-u", mountpoint], timeout: 30)
    }
    return result
}

/// Waits until every thread of `pid` has stopped (state T or t in
/// /proc/PID/task/TID/stat), up to `timeout` seconds. kill(SIGSTOP) returns
/// before they have: a driver thread still running can take a request from
/// /dev/fuse and only then stop, and the kernel waits for the answer to a
/// request a driver has taken without letting the asker go, not even to exit.
func waitUntilStopped(_ pid: pid_t, timeout: Double = 10) -> Bool {
    let deadline = monotonicNow() + timeout
    while true {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        let states = tasks.map { task -> Character? in
            let stat = readFileText("/proc/\(pid)/task/\(task)/stat")
            guard let close = stat.lastIndex(of: ")") else { return nil }
            return stat[stat.index(after: close)...].first { $0 != " " }
        }
        if !states.isEmpty && states.allSatisfy({ $0 == "T" || $0 == "t" }) { return true }
        if monotonicNow() > deadline { return false }
        usleep(2_000)
    }
}
