#if os(Linux)
import Foundation
import Glibc

/// A new file that has its protection class from its first moment, as
/// `Data.write(to:options:)` with a protection option makes one on a
/// device: so the lock-screen rules (P6, P7) judge the creation itself, and
/// a create the class forbids leaves no entry behind.
///
/// The file is made unnamed in its folder (O_TMPFILE, mode 0666 less the
/// umask), given its class (fsetxattr of NSFileProtectionKey), written, and
/// only then named (linkat; for a replacing write, a temporary name beside
/// it and rename, as an atomic write does).
enum ProtectedCreate {
    /// O_TMPFILE (Swift's Glibc module hides it): __O_TMPFILE | O_DIRECTORY,
    /// the same on x86_64 and aarch64.
    private static let temporaryFile: Int32 = 0o20000000 | O_DIRECTORY

    /// Writes `data` to a new file at `url` with class `protection`; with
    /// `replacing`, an existing file is replaced at once, else an existing
    /// name is `fileWriteFileExists`. False (and nothing made) where the
    /// file system makes no unnamed files: the caller writes the old way.
    static func write(_ data: Data, to url: URL, protection: FileProtectionType, replacing: Bool) throws -> Bool {
        let path = url.path
        let folder = url.deletingLastPathComponent().path
        let descriptor = open(folder, temporaryFile | O_RDWR | O_CLOEXEC, 0o666)
        if descriptor < 0 {
            let code = errno
            if code == EOPNOTSUPP || code == EISDIR || code == EINVAL { return false }
            throw ExtendedAttributes.cocoaError(code, path, reading: false)
        }
        defer { close(descriptor) }
        if let code = ExtendedAttributes.set(ContainerFile.protectionAttribute, to: Array(protection.rawValue.utf8),
                                             descriptor: descriptor) {
            throw ExtendedAttributes.cocoaError(code, path, reading: false)
        }
        try data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw ExtendedAttributes.cocoaError(errno, path, reading: false)
                }
                offset += written
            }
        }
        let unnamed = "/proc/self/fd/\(descriptor)"
        guard replacing else {
            if linkat(AT_FDCWD, unnamed, AT_FDCWD, path, AT_SYMLINK_FOLLOW) != 0 {
                throw ExtendedAttributes.cocoaError(errno, path, reading: false)
            }
            return true
        }
        for attempt in 0..<100 {
            let temporary = "\(folder)/.\(url.lastPathComponent).\(getpid())-\(attempt)"
            if linkat(AT_FDCWD, unnamed, AT_FDCWD, temporary, AT_SYMLINK_FOLLOW) != 0 {
                if errno == EEXIST { continue }
                throw ExtendedAttributes.cocoaError(errno, path, reading: false)
            }
            if rename(temporary, path) != 0 {
                let code = errno
                unlink(temporary)
                throw ExtendedAttributes.cocoaError(code, path, reading: false)
            }
            return true
        }
        throw ExtendedAttributes.cocoaError(EEXIST, path, reading: false)
    }
}
#endif
