#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The operation names of the iOS denial log line
/// (`Sandbox: <process>(<pid>) deny(1) <operation> <path>`).
public enum SandboxOperation: String, Sendable {
    case fileReadData = "file-read-data"
    case fileWriteCreate = "file-write-create"
    case fileWriteData = "file-write-data"
    case fileWriteUnlink = "file-write-unlink"
    case fileWriteMode = "file-write-mode"
    case fileWriteOwner = "file-write-owner"
    case fileWriteTimes = "file-write-times"
    case fileWriteXattr = "file-write-xattr"
    case fileLink = "file-link"
    case fileWriteRename = "file-write-rename"
}

/// How a denied operation fails.
public enum Denial: Sendable, Hashable {
    /// EROFS: a change inside the bundle (B rules). Tools say "Read-only file system".
    case readOnly
    /// EPERM: a sandbox denial (Inbox writes, escapes, system folders), as iOS answers.
    case notPermitted

    /// The errno the process sees.
    public var errno: Int32 {
        switch self {
        case .readOnly: EROFS
        case .notPermitted: EPERM
        }
    }
}

/// The policy's answer about one operation.
public enum Verdict: Sendable, Hashable {
    /// Go ahead; the backing file system's own errors, if any, pass through.
    case allow
    /// Fail with the denial's errno, change nothing, and log the operation.
    case deny(Denial, SandboxOperation)

    public var isAllowed: Bool { self == .allow }
}
