import CFuse
import Glibc
import SystemPackage

/// Why a session could not start.
public struct FuseSessionError: Error, CustomStringConvertible {
    public var description: String
}

/// One FUSE connection: created with a file system and mount options,
/// mounted, served by a multi-threaded loop until the mount goes away
/// (`fusermount3 -u`, `umount`) or SIGTERM, SIGINT or SIGHUP arrives.
public final class FuseSession: @unchecked Sendable {
    // A thin wrapper of libfuse's session pointer; libfuse makes the calls
    // used here safe from any thread once the session is mounted.
    private let session: OpaquePointer
    private let box: Unmanaged<FileSystemBox>
    private var mounted = false
    private var handlingSignals = false

    /// `options` are mount options as for `-o` (allow_other, fsname=...).
    /// `passthrough`: offer the kernel's FUSE passthrough to opens that give
    /// `OpenOptions.backingDescriptor` (see `PassthroughChannel`).
    /// `killPrivV2`: with passthrough, also take over clearing set-ID bits
    /// (see `Request.serverClearsSetIDBits`), which spares the kernel a
    /// GETXATTR round trip before every passthrough write.
    /// `ioUring`: serve requests through FUSE over io_uring when the kernel
    /// offers it at INIT (see `UringTransport`); `log` gets one line saying
    /// whether it is used, and why not, and one for each refusal of a
    /// backing file by the kernel; `info` gets what passthrough came to at
    /// INIT.
    public init(fileSystem: any FileSystemOperations, options: [String], debug: Bool = false,
                passthrough: Bool = false, killPrivV2: Bool = true, ioUring: Bool = false,
                log: @escaping @Sendable (String) -> Void = { _ in },
                info: @escaping @Sendable (String) -> Void = { _ in }) throws {
        var arguments = ["appsandboxfs"]
        // Each option escaped as fuse_opt_add_opt_escaped does, so that
        // libfuse reads it back as one option, as it is: a comma or a
        // backslash in one (a backing folder's path in fsname=) cannot
        // make another option (suid, dev) or change a name.
        if !options.isEmpty { arguments += ["-o", options.map(Self.escapedOption).joined(separator: ",")] }
        if debug { arguments.append("-d") }
        var cStrings: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        let ring = ioUring ? UringTransport.make(log: log) : nil
        let box = Unmanaged.passRetained(FileSystemBox(fileSystem, passthrough: passthrough, killPrivV2: killPrivV2,
                                                       ring: ring, log: log, info: info))
        var ops = makeOperationTable()
        // libfuse explains a refusal through its log: caught, so the caller
        // can say it in one line of its own.
        let (created, complaint) = LibfuseMessages.catching {
            cStrings.withUnsafeMutableBufferPointer { buffer in
                var args = cfuse_args(Int32(arguments.count), buffer.baseAddress)
                defer { fuse_opt_free_args(&args) }
                return fuse_session_new(&args, &ops, MemoryLayout<fuse_lowlevel_ops>.size, box.toOpaque())
            }
        }
        guard let created else {
            box.release()
            let reason = complaint.split(separator: "\n").map { $0.trimmingCharacters() }.filter { !$0.isEmpty }.joined(separator: "; ")
            throw FuseSessionError(description: "mount options \(options.joined(separator: ",")) refused: \(reason.isEmpty ? "libfuse said no more" : reason)")
        }
        session = created
        self.box = box
    }

    /// Runs `body` with standard error sent to a temporary file, and returns
    /// what was written there.
    /// `option` written so that libfuse's option parser (fuse_opt.c) reads
    /// it back as it is, one option: a backslash before each `\` and `,`
    /// (as fuse_opt_add_opt_escaped writes it).
    public static func escapedOption(_ option: String) -> String {
        var out = ""
        for character in option {
            if character == "\\" || character == "," { out.append("\\") }
            out.append(character)
        }
        return out
    }

    private static func capturingStandardError<T>(_ body: () -> T) -> (T, String) {
        var template = Array("/tmp/appsandboxfs-stderr-XXXXXX".utf8CString)
        let file = mkstemp(&template)
        guard file >= 0 else { return (body(), "") }
        unlink(&template)
        defer { close(file) }
        let saved = dup(STDERR_FILENO)
        dup2(file, STDERR_FILENO)
        let result = body()
        dup2(saved, STDERR_FILENO)
        close(saved)
        var text = [UInt8](repeating: 0, count: 4096)
        let count = pread(file, &text, text.count, 0)
        return (result, count > 0 ? String(decoding: text[0..<count], as: UTF8.self) : "")
    }

    /// Mounts at `mountpoint`. The kernel queues requests until `run` serves them.
    /// `handlingSignals`: SIGTERM, SIGINT and SIGHUP end the loop (a driver
    /// process); false when the session is one of several in a process that
    /// keeps its signals (libfuse keeps one session for its handlers).
    /// Such a process also keeps its standard error: only a process that
    /// owns it (`handlingSignals`) has it swapped during the mount, to catch
    /// what fusermount3 (a program libfuse starts when the caller may not
    /// mount itself) says there; libfuse's own lines are caught either way.
    public func mount(at mountpoint: String, handlingSignals: Bool = true) throws {
        // Signal handlers first: a SIGTERM that arrives once the mount is
        // visible must end the loop cleanly, not kill the process.
        if handlingSignals {
            fuse_set_signal_handlers(session)
            self.handlingSignals = true
        }
        // libfuse says why on standard error, which a background driver
        // does not have: caught, and said in the error's one line.
        let ((status, programComplaint), libfuseComplaint) = LibfuseMessages.catching {
            handlingSignals ? Self.capturingStandardError { fuse_session_mount(session, mountpoint) }
                            : (fuse_session_mount(session, mountpoint), "")
        }
        let complaint = libfuseComplaint + programComplaint
        guard status == 0 else {
            if self.handlingSignals { fuse_remove_signal_handlers(session) }
            self.handlingSignals = false
            let reason = complaint.split(separator: "\n").map { $0.trimmingCharacters() }.filter { !$0.isEmpty }.joined(separator: "; ")
            throw FuseSessionError(description: "cannot mount at \(mountpoint): \(reason.isEmpty ? "libfuse gave no reason" : reason)")
        }
        mounted = true
        let channel = box.takeUnretainedValue().passthrough
        let ring = box.takeUnretainedValue().ring
        // Before the loop reads INIT, whose reply must carry the grants:
        // always, since besides passthrough and the ring it asks for
        // DIRECT_IO_ALLOW_MMAP, without which a direct I/O handle (a class
        // A file's) cannot be mapped shared (ENODEV).
        var io = PassthroughChannel.io
        let device = fuse_session_fd(session)
        if fuse_session_custom_io(session, &io, device) == 0 {
            channel.attach(device: device)
            ring?.attach(session: session, device: device)
        }
    }

    /// Serves requests on `maxThreads` worker threads until the mount is
    /// gone or a signal asks to stop, then unmounts. Returns 0, or the
    /// negative errno that made reading the device fail.
    /// `privateUmask`: each worker gets a file-system context of its own
    /// with umask 0, so that it creates files with exactly the mode the
    /// kernel sends (already masked by the caller's umask) while the rest
    /// of the process keeps its umask; a driver process that sets umask 0
    /// for itself does not need it.
    @discardableResult
    public func run(maxThreads: Int, privateUmask: Bool = false) -> Int32 {
        let status = WorkerLoop(session: session, threadCount: maxThreads, privateUmask: privateUmask).run()
        box.takeUnretainedValue().ring?.stop()
        // The handlers stay until the session goes: a second SIGTERM during
        // the owner's clean-up after the loop must not kill the process.
        unmount()
        return status
    }

    /// Whether the kernel took up passthrough at INIT (false before INIT).
    public var passthroughGranted: Bool { box.takeUnretainedValue().passthrough.granted }

    /// Requests that came through FUSE over io_uring (nil: not asked for, or
    /// no ring could be made).
    public var ringRequestsServed: Int? { box.takeUnretainedValue().ring?.requestsServed }

    /// Whether the kernel took up FUSE_HANDLE_KILLPRIV_V2 at INIT.
    public var killPrivV2Granted: Bool { box.takeUnretainedValue().passthrough.killPrivV2 }

    /// Asks `run` to end, as a handled SIGTERM does, from any thread: the
    /// loop sees it within a quarter of a second (it does not wait on the
    /// device alone), unmounts and returns.
    public func requestExit() {
        fuse_session_exit(session)
    }

    /// Detaches the mount (idempotent).
    public func unmount() {
        if mounted {
            fuse_session_unmount(session)
            mounted = false
        }
    }

    /// Tells the kernel to drop its cached entry `name` in `parent`.
    @discardableResult
    public func invalidateEntry(parent: NodeID, name: String) -> Errno? {
        let result = name.withCString { fuse_lowlevel_notify_inval_entry(session, fuse_ino_t(parent.rawValue), $0, strlen($0)) }
        return result == 0 ? nil : Errno(rawValue: -result)
    }

    /// Tells the kernel to drop cached attributes and data of `node`
    /// (`length` 0: attributes only; -1 as offset: attributes only too).
    @discardableResult
    public func invalidateNode(_ node: NodeID, offset: off_t = 0, length: off_t = 0) -> Errno? {
        let result = fuse_lowlevel_notify_inval_inode(session, fuse_ino_t(node.rawValue), offset, length)
        return result == 0 ? nil : Errno(rawValue: -result)
    }

    deinit {
        if handlingSignals { fuse_remove_signal_handlers(session) }
        unmount()
        fuse_session_destroy(session)
        box.release()
    }
}

extension Substring {
    func trimmingCharacters() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
