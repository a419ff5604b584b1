import Glibc

/// What a mount gets from the privileges of the process that makes it: the
/// one decision for `appsandboxfs mount` and both modes of the test fixture
/// (all three go through `ContainerMount`, which asks it).
///
/// - allow_other (users other than the mounting one reach the container):
///   root always has it; any other user only where /etc/fuse.conf has the
///   line `user_allow_other`, since fusermount3 refuses the option
///   otherwise. Without it, the mount is the mounting user's alone (the
///   kernel refuses every other process, root's included), which is what a
///   test process needs; one line says so. Asked for explicitly (`-o
///   allow_other`) where fusermount3 would refuse, the mount is refused
///   before anything changes, with how to enable it.
/// - passthrough: the kernel opens backing files only for a server with
///   CAP_SYS_ADMIN; without it every open is served by the driver, and one
///   line says so.
public struct MountPrivileges: Sendable, Equatable {
    public var uid: uid_t
    /// CAP_SYS_ADMIN in the effective set (root's, as a rule).
    public var hasSysAdmin: Bool
    /// Whether /etc/fuse.conf has `user_allow_other`; nil when it cannot
    /// be read (fusermount3, set-user-ID, reads it anyway: it then decides).
    public var userAllowOther: Bool?

    public init(uid: uid_t, hasSysAdmin: Bool, userAllowOther: Bool?) {
        self.uid = uid
        self.hasSysAdmin = hasSysAdmin
        self.userAllowOther = userAllowOther
    }

    /// The calling process's.
    public static func current(fuseConf: String = "/etc/fuse.conf") -> MountPrivileges {
        MountPrivileges(uid: geteuid(), hasSysAdmin: effectiveCapabilities().map { $0 & (1 << 21) != 0 } ?? (geteuid() == 0),
                        userAllowOther: readLines(fuseConf).map(userAllowOther(inFuseConf:)))
    }

    /// What a mount gets.
    public struct Decision: Sendable, Equatable {
        /// Options to add before the caller's (`allow_other`, or none).
        public var addedOptions: [String]
        /// Whether opens ask for passthrough.
        public var passthrough: Bool
        /// One line for the user when others cannot reach the mount
        /// (`ContainerMount.mount` tells its `warn`).
        public var otherUsersNote: String?
        /// One line for the log when passthrough was asked for and is off.
        public var passthroughNote: String?
    }

    /// `options`: the `-o` options asked for; `passthrough`: whether the
    /// configuration would use it (`MountConfiguration.usesPassthrough`). Throws when allow_other (or allow_root)
    /// is asked for and fusermount3 would refuse it.
    public func decide(options: [String], passthrough: Bool, mountpoint: String) throws -> Decision {
        var decision = Decision(addedOptions: [], passthrough: passthrough)
        let asked = options.first { $0 == "allow_other" || $0 == "allow_root" }
        if uid == 0 {
            if asked == nil { decision.addedOptions = ["allow_other"] }
        } else if let asked {
            if userAllowOther == false { throw MountError.otherUsersRefused(option: asked, uid: uid) }
        } else if userAllowOther == true {
            decision.addedOptions = ["allow_other"]
        } else {
            decision.otherUsersNote = "\(mountpoint): mounted without allow_other: only uid \(uid) reaches the container (a user other than root gets allow_other only where /etc/fuse.conf has the line user_allow_other)"
        }
        if passthrough && !hasSysAdmin {
            decision.passthrough = false
            decision.passthroughNote = "\(mountpoint): passthrough off: the kernel gives it only to a driver with CAP_SYS_ADMIN (root); every read and write goes through the driver"
        }
        return decision
    }

    /// As fusermount3 reads the file: on each whole line (ended by a
    /// newline), what comes before a '#', without surrounding white space,
    /// is the line `user_allow_other`.
    static func userAllowOther(inFuseConf lines: [String]) -> Bool {
        lines.contains { line in
            let content = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return content.split(whereSeparator: Self.isSpace) == ["user_allow_other"]
        }
    }

    /// The file's whole lines (a last line without its newline left out),
    /// nil when it cannot be read (a missing file has none).
    private static func readLines(_ path: String) -> [String]? {
        guard let file = fopen(path, "re") else { return errno == ENOENT ? [] : nil }
        defer { fclose(file) }
        var lines: [String] = []
        var buffer: UnsafeMutablePointer<CChar>?
        var size = 0
        defer { free(buffer) }
        while case let count = getline(&buffer, &size, file), count > 0, let buffer {
            let bytes = UnsafeRawBufferPointer(start: buffer, count: count)
            if bytes.last == UInt8(ascii: "\n") { lines.append(String(decoding: bytes.dropLast(), as: UTF8.self)) }
        }
        return lines
    }

    /// CapEff of /proc/self/status; nil when it cannot be read.
    private static func effectiveCapabilities() -> UInt64? {
        readLines("/proc/self/status")?.first { $0.hasPrefix("CapEff:") }
            .flatMap { $0.dropFirst("CapEff:".count).split(whereSeparator: isSpace).first }
            .flatMap { UInt64($0, radix: 16) }
    }

    /// C's isspace.
    private static func isSpace(_ character: Character) -> Bool {
        character == " " || character == "\t" || character == "\n" || character == "\r" || character == "\u{0B}" || character == "\u{0C}"
    }
}
