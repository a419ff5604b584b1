// Temporary files and folders for tests, all under /tmp/asfs-tests-XXXXXX
// (or outsideTemporaryFolders/asfs-tests-XXXXXX).

import Glibc
import POSIXHelpers

/// Where tests put containers that `run --confine` must accept: a
/// mountpoint in /tmp or /var/tmp is refused there (R1).
let outsideTemporaryFolders = "/var/lib/appsandboxfs-tests"

/// A fresh folder <parent>/<prefix>-XXXXXX, mode 0755 (so that a test running a
/// program as another user can reach what it makes inside). `parent` is made
/// when missing.
func makeTemporaryDirectory(prefix: String = "asfs-tests", in parent: String = "/tmp") throws -> String {
    if mkdir(parent, 0o755) != 0 && errno != EEXIST {
        throw SupportError("mkdir \(parent): \(posixError(errno))")
    }
    var template = Array("\(parent)/\(prefix)-XXXXXX".utf8CString)
    guard let p = mkdtemp(&template) else {
        throw SupportError("mkdtemp: \(posixError(errno))")
    }
    let path = String(cString: p)
    chmod(path, 0o755)
    return path
}

/// Removes a tree with `rm -rf --one-file-system`: it never descends into a
/// mount that is still there (a mountpoint left mounted keeps its folder).
func removeTree(_ path: String) {
    guard path.hasPrefix("/tmp/") || path.hasPrefix(outsideTemporaryFolders + "/") else { return }
    _ = runProcess(["rm", "-rf", "--one-file-system", "--", path], timeout: 120)
}

/// Makes a folder with exactly this mode (umask aside); an existing one is fine.
func makeDirectory(_ path: String, mode: mode_t = 0o755) throws {
    if mkdir(path, mode) != 0, errno != EEXIST {
        throw SupportError("mkdir \(path): \(posixError(errno))")
    }
    chmod(path, mode)
}

/// Writes a whole file (created or truncated) and sets its mode.
func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o644) throws {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
    guard fd >= 0 else { throw SupportError("open \(path): \(posixError(errno))") }
    defer { close(fd) }
    var done = 0
    while done < bytes.count {
        let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if n < 0, errno == EINTR { continue }
        guard n > 0 else { throw SupportError("write \(path): \(posixError(errno))") }
        done += n
    }
    fchmod(fd, mode)
}

func writeFile(_ path: String, _ text: String, mode: mode_t = 0o644) throws {
    try writeFile(path, Array(text.utf8), mode: mode)
}

/// A whole file's bytes, or nil (errno set) when it cannot be read.
func readFileBytes(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    let (bytes, error) = readToEnd(fd)
    guard error == 0 else {
        errno = error
        return nil
    }
    return bytes
}

/// A whole file as text ("" when it cannot be read).
func readFileText(_ path: String) -> String {
    readFileBytes(path).map { String(decoding: $0, as: UTF8.self) } ?? ""
}

/// An empty file in /tmp that is removed when this value goes away.
final class TemporaryFile {
    let path: String

    init() throws {
        var template = Array("/tmp/asfs-tests-file-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw SupportError("mkstemp: \(posixError(errno))") }
        close(fd)
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        chmod(path, 0o644)
    }

    func write(_ text: String) throws { try writeFile(path, text) }
    func read() -> String { readFileText(path) }

    deinit { unlink(path) }
}
