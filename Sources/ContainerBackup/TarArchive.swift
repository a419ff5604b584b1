import BackingStore
import Glibc
import SystemPackage

/// Backup archives (K3): pax tar archives written and read by GNU tar.
///
/// `create` gives tar the exact list of entries a `BackupScan` counts as
/// backed up (`--no-recursion`, NUL-separated, so the archive holds those
/// entries and nothing else), with modes, owners, modification times to the
/// nanosecond and all extended attributes (`--xattrs --xattrs-include=*`,
/// stored as `SCHILY.xattr.<backing name>` records). The archive starts with
/// a pax global header naming the app (`PaxGlobalHeader`). Access and change
/// times are left out (tar cannot restore them, and the archive of an
/// unchanged container stays the same).
///
/// Both directions stream the archive through this process, which counts
/// the bytes for a progress display, and either end may be a pipe.
public enum TarArchive {
    /// How far a run is.
    public struct Progress: Sendable {
        /// Archive bytes written (create) or read (extract) so far.
        public var bytes: Int64
        /// The expected total: exact for extract from a file, an estimate for
        /// create; nil when unknown (a pipe).
        public var expected: Int64?
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    static let chunk = 1 << 20

    /// Options of every run: GNU tar reads and writes names as raw bytes in
    /// the C locale, and its messages are then in English.
    static let environment = ["LC_ALL": "C"]

    /// Writes an archive of `members` (paths below `root`) to `output`, a
    /// file or a pipe. Returns tar's warnings status: true when tar said some
    /// file changed while it was read (exit status 1: the archive is complete
    /// but that file may be inconsistent).
    public static func create(root: String, members: [RawName], memberSizes: [Int64], appName: String,
                              defaultProtection: String? = nil, records: [(String, String)] = [], transforms: [String] = [],
                              to output: FileDescriptor, progress: (Progress) -> Void = { _ in }) throws(Failure) -> Bool {
        // A reader of a piped archive may go away: writing must then fail
        // with EPIPE rather than end this process.
        signal(SIGPIPE, SIG_IGN)
        let list = try memberList(members)
        defer { Glibc.close(list) }
        // `transforms`: GNU tar's --transform expressions, renaming members
        // as they are archived (a device's containers to their domains, M2).
        let arguments = [
            "tar", "--create", "--file=-", "--format=pax", "--directory=\(root)",
            "--no-recursion", "--null", "--verbatim-files-from", "--files-from=/dev/fd/3",
            "--xattrs", "--xattrs-include=*", "--numeric-owner", "--sparse",
            "--pax-option=delete=atime,delete=ctime",
        ] + transforms.map { "--transform=\($0)" }
        // Each member takes a header, often an extended one, and padding.
        let expected = memberSizes.reduce(0, +) + Int64(members.count) * 1792 + 1024
        var written: Int64 = 0
        do {
            let header = PaxGlobalHeader.encode([(PaxGlobalHeader.appNameKeyword, appName)]
                + (defaultProtection.map { [(PaxGlobalHeader.defaultProtectionKeyword, $0)] } ?? []) + records)
            try writeAll(output.rawValue, header)
            written += Int64(header.count)
        } catch {
            throw Failure("cannot write the archive: \(error)")
        }

        let messages = CapturedMessages()
        defer { messages.close() }
        let (command, unconfined) = SymlinkFreeRead.command(arguments, root: root)
        if let unconfined {
            let text = Array("backup: \(unconfined)\n".utf8)
            _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
        let tar: Subprocess
        do {
            tar = try Subprocess.start(command, pipe: .stdout, environment: environment, descriptor3: list,
                                       standardError: messages.childDescriptor)
        } catch {
            throw Failure("cannot run GNU tar: \(error)")
        }
        var buffer = [UInt8](repeating: 0, count: chunk)
        var writeError: Errno?
        while true {
            let count = buffer.withUnsafeMutableBytes { raw in read(tar.pipe, raw.baseAddress, raw.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            do {
                try buffer.withUnsafeBytes { raw in
                    Result { () throws(Errno) in try writeAll(output.rawValue, UnsafeRawBufferPointer(rebasing: raw[0..<count])) }
                }.get()
            } catch {
                writeError = error
                kill(tar.pid, SIGTERM)
                break
            }
            written += Int64(count)
            progress(Progress(bytes: written, expected: max(expected, written)))
        }
        Glibc.close(tar.pipe)
        let status = tar.wait()
        if let writeError { throw Failure("cannot write the archive: \(writeError)") }
        switch status {
        case 0, 1:
            messages.forward(program: "tar")
            return status == 1
        default: throw Failure(tarFailed(status, messages))
        }
    }

    /// The member list in an unlinked temporary file, rewound: NUL-separated
    /// raw names, given to tar as its descriptor 3.
    static func memberList(_ members: [RawName]) throws(Failure) -> Int32 {
        let folder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(folder)/appsandboxfs-members-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw Failure("cannot create a temporary file in \(folder): \(Errno(rawValue: errno))") }
        unlink(template)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(members.reduce(0) { $0 + $1.count + 1 })
        for member in members {
            bytes += member
            bytes.append(0)
        }
        do {
            try writeAll(fd, bytes)
            _ = try check { lseek(fd, 0, SEEK_SET) }
        } catch {
            Glibc.close(fd)
            throw Failure("cannot write the member list: \(error)")
        }
        return fd
    }

    /// The start of an archive read ahead, and what its global header says.
    public struct Opening: Sendable {
        /// The bytes read so far (they go to tar first).
        public var bytes: [UInt8]
        /// The records of its global header (empty without one).
        public var records: [String: String]

        /// The app the backup came from, if the archive says.
        public var appName: String? { records[PaxGlobalHeader.appNameKeyword] }
        public var defaultProtection: String? { records[PaxGlobalHeader.defaultProtectionKeyword] }
    }

    /// Reads the start of an archive for its global header.
    public static func open(_ input: FileDescriptor) throws(Failure) -> Opening {
        var bytes = try readUpTo(input, PaxGlobalHeader.blockSize)
        if let length = PaxGlobalHeader.headerLength(firstBlock: bytes), length > bytes.count {
            bytes += try readUpTo(input, length - bytes.count)
        }
        return Opening(bytes: bytes, records: PaxGlobalHeader.decode(bytes))
    }

    static func readUpTo(_ fd: FileDescriptor, _ count: Int) throws(Failure) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { raw in read(fd.rawValue, raw.baseAddress! + done, count - done) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw Failure("cannot read the archive: \(Errno(rawValue: errno))") }
            if n == 0 { break }
            done += n
        }
        return Array(bytes[0..<done])
    }

    /// Extracts the archive read from `input` (its start already read into
    /// `opening`) into `directory`, leaving out the members that `excluded`
    /// names (each a path below the archive root, with everything below it;
    /// compared exactly, no wildcards). Modes, owners (when run as root),
    /// modification times and extended attributes are restored.
    /// `descriptor`, if given, is tar's descriptor 3 (then `directory` may
    /// be /proc/self/fd/3: tar works in the very folder the caller opened).
    public static func extract(_ input: FileDescriptor, opening: Opening, expected: Int64?, into directory: String,
                               descriptor: FileDescriptor? = nil,
                               excluded: [String], only: String? = nil,
                               progress: (Progress) -> Void = { _ in }) throws(Failure) {
        var arguments = [
            "tar", "--extract", "--file=-", "--directory=\(directory)",
            "--xattrs", "--xattrs-include=*", "--numeric-owner", "--preserve-permissions",
            "--anchored", "--no-wildcards",
        ]
        // `only`: extract that top folder's members alone, one level up (a
        // domain of a device's archive into its container, M2). The
        // exclusions are given as the archive names them.
        let prefixes = only.map { ["", "\($0)/", "./\($0)/"] } ?? ["", "./"]
        for path in excluded {
            for prefix in prefixes { arguments.append("--exclude=\(prefix)\(path)") }
        }
        if let only { arguments += ["--strip-components=1", "--", only] }

        // tar may stop reading early (a damaged archive): a write to the
        // pipe must then fail with EPIPE rather than end this process.
        signal(SIGPIPE, SIG_IGN)
        let messages = CapturedMessages()
        defer { messages.close() }
        let tar: Subprocess
        do {
            tar = try Subprocess.start(arguments, pipe: .stdin, environment: environment, descriptor3: descriptor?.rawValue,
                                       standardError: messages.childDescriptor)
        } catch {
            throw Failure("cannot run GNU tar: \(error)")
        }
        var sent: Int64 = 0
        var failure: String?
        do {
            try writeAll(tar.pipe, opening.bytes)
            sent += Int64(opening.bytes.count)
            var buffer = [UInt8](repeating: 0, count: chunk)
            while true {
                let count = buffer.withUnsafeMutableBytes { raw in read(input.rawValue, raw.baseAddress, raw.count) }
                if count < 0 && errno == EINTR { continue }
                if count < 0 { failure = "cannot read the archive: \(Errno(rawValue: errno))"; break }
                if count == 0 { break }
                try buffer.withUnsafeBytes { raw in
                    Result { () throws(Errno) in try writeAll(tar.pipe, UnsafeRawBufferPointer(rebasing: raw[0..<count])) }
                }.get()
                sent += Int64(count)
                progress(Progress(bytes: sent, expected: expected.map { max($0, sent) }))
            }
        } catch .brokenPipe {
            // tar stopped reading: its status and messages say why.
        } catch {
            failure = "cannot pass the archive to tar: \(error)"
        }
        Glibc.close(tar.pipe)
        let status = tar.wait()
        if let failure { throw Failure(failure) }
        guard status == 0 else { throw Failure(tarFailed(status, messages)) }
        messages.forward(program: "tar")
    }

    /// One line for a failed tar run: what tar said, or its status when it
    /// said nothing.
    static func tarFailed(_ status: Int32, _ messages: CapturedMessages) -> String {
        let said = messages.lines(program: "tar")
        guard !said.isEmpty else { return "GNU tar failed (exit status \(status))" }
        return "GNU tar: " + said.prefix(3).joined(separator: "; ")
    }
}
