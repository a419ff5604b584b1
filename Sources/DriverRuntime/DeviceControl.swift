import MountInfo
import AppSandboxFS
import Glibc
import POSIXHelpers
import SandboxPolicy
import Locking

/// How `appsandboxfs lock|unlock|reboot MOUNTPOINT` reach the driver of a
/// mount: a Unix socket beside its status record, `<state dir>/<pid>.control`,
/// mode 0600 (in /run/appsandboxfs for root: root's only), and the caller's
/// uid checked again through SO_PEERCRED (root or the driver's own user).
///
/// One request per connection, one line each way:
///   `lock SECONDS` | `unlock` | `reboot`  ->  `ok STATE` | `error MESSAGE`
/// The driver answers once the new state is in force: every operation that
/// starts after the answer sees it. And `unmount`'s request:
///   `watch`  ->  `ok`, then the connection stays open until the driver has
///   finished with the container (tmp emptied, its record removed) and ends
///   then, or when the driver dies.
public enum DeviceControl {
    public static func socketPath(pid: Int32) -> String { StatusFile.directory + "/\(pid).control" }

    // MARK: The driver's side

    /// Starts serving on a thread of its own. Returns the socket, or nil
    /// (with a warning) when it cannot be made.
    public static func serve(_ protection: DataProtection, record: StatusFile.Published?) -> ControlSocket? {
        // The verbs find the socket through the status record, and the
        // record is only written in a state folder that was verified safe:
        // without one (a folder refused, a warning already given) there is
        // nothing to serve, and nothing is made in an unsafe folder.
        guard let record else { return nil }
        let path = record.folder.path + "/\(getpid()).control"
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0, var address = socketAddress(path) else {
            FileHandleless.warn("\(path): cannot make the control socket (appsandboxfs lock/unlock/reboot will not reach this mount)")
            if fd >= 0 { close(fd) }
            return nil
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o600) == 0, listen(fd, 16) == 0 else {
            FileHandleless.warn("\(path): cannot make the control socket: \(errorText(errno)) (appsandboxfs lock/unlock/reboot will not reach this mount)")
            close(fd)
            return nil
        }
        let owner = geteuid()
        let control = ControlSocket(path: path)
        let started = startThread(detached: true) {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR || errno == ECONNABORTED { continue }
                    return
                }
                if !answer(client, protection: protection, record: record, owner: owner, control: control) {
                    close(client)
                }
            }
        }
        guard started != nil else {
            FileHandleless.warn("\(path): cannot start the control socket's thread: \(errorText(errno)) (appsandboxfs lock/unlock/reboot will not reach this mount)")
            close(fd)
            unlink(path)
            return nil
        }
        return control
    }

    /// Answers one request; true when the connection was kept (`watch`).
    private static func answer(_ client: Int32, protection: DataProtection, record: StatusFile.Published?, owner: uid_t,
                               control: ControlSocket) -> Bool {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(client, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0,
              credentials.uid == 0 || credentials.uid == owner else {
            reply(client, "error only root or the driver's own user may change the device state")
            return false
        }
        if let refusal = confinedPeerRefusal(pid: credentials.pid, client: client) {
            reply(client, "error \(refusal)")
            return false
        }
        setTimeout(client, seconds: 5)
        guard let line = readLine(client) else { return false }
        let words = line.split(separator: " ")
        do {
            switch (words.first, words.count) {
            case ("lock", 2):
                // Checked as `lock --grace` checks it: whoever may connect
                // can write any line here.
                let grace: Double
                do { grace = try graceSeconds(words[1], name: "grace") } catch {
                    reply(client, "error \(error)")
                    return false
                }
                try protection.lock(grace: grace)
            case ("unlock", 1): protection.unlock()
            case ("reboot", 1): protection.reboot()
            case ("state", 1): break
            case ("watch", 1):
                // Bounded: each kept connection is a descriptor the driver
                // needs for the files it serves.
                guard control.hasRoom() else {
                    reply(client, "error \(ControlSocket.mostWatchers) unmounts already wait on this driver")
                    return false
                }
                reply(client, "ok")
                // Never touched again here: `finish` may close it any time.
                return control.keep(client)
            default:
                reply(client, "error unknown request \(line)")
                return false
            }
        } catch {
            reply(client, "error \(error)")
            return false
        }
        let state = protection.deviceState.rawValue
        record?.update(deviceState: state)
        reply(client, "ok \(state)")
        return false
    }

    /// Defence in depth for R2 and R3 (issue 25, item 3): `run --confine`
    /// hides this driver's state folder, but a command confined there
    /// lives in a mount namespace of its own with no capability, and
    /// neither a confined process nor anything it starts can change the
    /// device state. So a request from another mount namespace than the
    /// driver's is taken only from a process that holds CAP_SYS_ADMIN in the
    /// driver's user namespace (root in a service's private namespace, say).
    /// The peer is pinned by a pidfd (SO_PEERPIDFD), so its pid cannot name
    /// another process by the time /proc is read. nil: allowed.
    private static func confinedPeerRefusal(pid: pid_t, client: Int32) -> String? {
        let refusal = "requests from another mount namespace without CAP_SYS_ADMIN (a confined run) are refused"
        var pidfd: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        let pinned = getsockopt(client, SOL_SOCKET, peerPIDFDOption, &pidfd, &length) == 0 && pidfd >= 0
        defer { if pinned { close(pidfd) } }
        guard pid > 0, let theirs = namespace("/proc/\(pid)/ns/mnt"), let ours = namespace("/proc/self/ns/mnt") else {
            return "cannot tell the requester's mount namespace; refused"
        }
        var allowed = theirs == ours
        if !allowed, namespace("/proc/\(pid)/ns/user") == namespace("/proc/self/ns/user"),
           let status = try? String(contentsOfFileWithoutFoundation: "/proc/\(pid)/status"),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
           let field = line.split(whereSeparator: \.isWhitespace).last, let effective = UInt64(field, radix: 16) {
            allowed = effective & (1 << 21) != 0  // CAP_SYS_ADMIN
        }
        // Still the same process: a pidfd's fdinfo says "Pid: -1" once it ended.
        if pinned, let info = try? String(contentsOfFileWithoutFoundation: "/proc/self/fdinfo/\(pidfd)"),
           !info.split(separator: "\n").contains(where: { $0.split(whereSeparator: \.isWhitespace) == ["Pid:", Substring(String(pid))] }) {
            return "the requester ended before it could be checked; refused"
        }
        return allowed ? nil : refusal
    }

    /// SO_PEERPIDFD (Linux 6.5), which Glibc's module does not export.
    private static let peerPIDFDOption: Int32 = 77

    /// A namespace's identity: the device and inode of its /proc link.
    private static func namespace(_ path: String) -> [UInt64]? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return [UInt64(status.st_dev), UInt64(status.st_ino)]
    }

    // MARK: The verbs' side

    /// A grace as the command line and the control socket take it: a
    /// number of seconds from 0 to `DataProtection.longestGrace` (NaN and
    /// infinities refused); the error says which of these `text` is not.
    public static func graceSeconds(_ text: some StringProtocol, name: String) throws(Failure) -> Double {
        let longest = DataProtection.longestGrace
        guard let seconds = Double(text), !seconds.isNaN else {
            throw Failure("\(name) \(text): not a number of seconds (0 to \(Int(longest)))")
        }
        guard seconds >= 0 else { throw Failure("\(name) \(text): less than 0 seconds (0 to \(Int(longest)))") }
        guard seconds <= longest else {  // infinity too
            throw Failure("\(name) \(text): more than the longest grace, \(Int(longest)) seconds (one day)")
        }
        return seconds
    }


    /// Sends one request to the driver of the mount at `mountpoint` and
    /// returns the state it answered. Throws a one-line Failure.
    public static func send(_ request: String, to mountpoint: String) throws -> String {
        guard MountTable.entry(at: mountpoint)?.fsType == MountTable.containerType,
              let record = StatusFile.records().first(where: { $0.record.mountpoint == mountpoint && $0.alive })?.record else {
            throw Failure("\(mountpoint): not a mounted container")
        }
        let path = socketPath(pid: record.pid)
        guard let fd = connected(to: path) else {
            throw Failure("\(mountpoint): cannot reach its driver (pid \(record.pid)) at \(path): \(errorText(errno))")
        }
        defer { close(fd) }
        setTimeout(fd, seconds: 10)
        reply(fd, request)
        guard let answer = readLine(fd) else { throw Failure("\(mountpoint): the driver (pid \(record.pid)) did not answer") }
        if answer.hasPrefix("ok ") { return String(answer.dropFirst(3)) }
        throw Failure("\(mountpoint): " + (answer.hasPrefix("error ") ? String(answer.dropFirst(6)) : answer))
    }

    /// `unmount`'s side of `watch`, asked before the mount is taken away:
    /// a connection to the driver of `record`, or nil when it cannot be
    /// reached (the caller then waits for the process to end).
    public static func watch(_ record: MountRecord) -> Int32? {
        guard let fd = connected(to: socketPath(pid: record.pid)) else { return nil }
        reply(fd, "watch")
        return fd
    }

    /// What became of a `watch`.
    public enum WatchEnd: Sendable, Equatable {
        /// The driver has finished with the container, or died.
        case finished
        /// The driver did not take the request (one older than `watch`).
        case refused
        /// Still open after the time allowed.
        case timedOut
    }

    /// Waits until the driver closes the `watch` connection `fd` (which is
    /// closed here). The driver ends it once it has emptied tmp and removed
    /// its record, a moment before its process ends; waiting for the
    /// process instead waited also for the kernel to tear down its memory
    /// (about 0.7 ms of every `unmount`).
    public static func waitForEnd(_ fd: Int32, milliseconds: Int) -> WatchEnd {
        defer { close(fd) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let deadline = monotonicMilliseconds() + milliseconds
        while true {
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { return .timedOut }
            let ready = poll(&entry, 1, Int32(left))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return .timedOut }
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
            if count > 0 { answer += buffer[0..<count]; continue }
            // The end: after "ok" it means finished; a driver that died
            // before answering has finished too (ECONNRESET: it never
            // accepted the connection).
            let text = String(decoding: answer, as: UTF8.self)
            return text == "ok\n" || text.isEmpty ? .finished : .refused
        }
    }

    // MARK: Plumbing

    /// A connected socket to the driver's control socket at `path`; nil
    /// with errno set.
    private static func connected(to path: String) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        guard var address = socketAddress(path) else {
            close(fd)
            errno = ENAMETOOLONG
            return nil
        }
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard status == 0 else {
            let code = errno
            close(fd)
            errno = code
            return nil
        }
        return fd
    }

    /// struct ucred (SO_PEERCRED), which Glibc's module does not export.
    private struct PeerCredentials {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
    }

    private static func socketAddress(_ path: String) -> sockaddr_un? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }

    private static func setTimeout(_ fd: Int32, seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    private static func reply(_ fd: Int32, _ line: String) {
        let bytes = Array((line + "\n").utf8)
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { if errno == EINTR { continue }; return }
            sent += count
        }
    }

    /// One line, up to 4 KiB, without its newline.
    private static func readLine(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while bytes.count < 4096 {
            let count = recv(fd, &byte, 1, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// The driver's control socket: its name, and the `watch` connections of
/// the `unmount`s waiting for the driver to finish with the container.
public final class ControlSocket: Sendable {
    public let path: String
    private let watchers = Locked<(open: [Int32], finished: Bool)>(([], false))

    init(path: String) { self.path = path }

    /// The most `watch` connections kept at once.
    static let mostWatchers = 64

    /// Whether another `watch` may be kept (those whose `unmount` gave up,
    /// a busy mount, are let go first).
    fileprivate func hasRoom() -> Bool {
        watchers.withLock { state in
            state.open.removeAll { fd in
                // A Unix socket whose peer closed polls POLLHUP.
                var entry = pollfd(fd: fd, events: 0, revents: 0)
                guard poll(&entry, 1, 0) > 0, entry.revents & Int16(POLLHUP) != 0 else { return false }
                close(fd)
                return true
            }
            return state.open.count < Self.mostWatchers
        }
    }

    /// Keeps a `watch` connection until `finish`; false (the caller closes
    /// it) once finished.
    fileprivate func keep(_ client: Int32) -> Bool {
        watchers.withLock { state in
            guard !state.finished else { return false }
            state.open.append(client)
            return true
        }
    }

    /// The container is let go (tmp emptied, the record removed): the
    /// socket's name goes, and every waiting `unmount` sees its connection
    /// end.
    public func finish() {
        unlink(path)
        let open = watchers.withLock { state in
            state.finished = true
            defer { state.open = [] }
            return state.open
        }
        for fd in open { close(fd) }
    }
}
