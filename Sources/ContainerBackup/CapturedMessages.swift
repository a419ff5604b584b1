import Glibc

/// A child's standard error caught in an unlinked temporary file (not a
/// pipe: a chatty child could fill a pipe nobody reads while we stream the
/// archive), so that a failure can be told in one line of our own.
struct CapturedMessages {
    let fd: Int32

    init() {
        let folder = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(folder)/appsandboxfs-messages-XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        if fd >= 0 { unlink(template) }
        // Without a file the child's messages simply go to our standard error.
        self.fd = fd >= 0 ? fd : STDERR_FILENO
    }

    /// For the child: nil when nothing could be created (inherit ours).
    var childDescriptor: Int32? { fd == STDERR_FILENO ? nil : fd }

    /// The child's lines without its program prefix ("tar: ") and without
    /// GNU tar's closing "Exiting with failure status" line.
    func lines(program: String) -> [String] {
        guard fd != STDERR_FILENO else { return [] }
        var bytes = [UInt8](repeating: 0, count: 8192)
        let count = pread(fd, &bytes, bytes.count, 0)
        guard count > 0 else { return [] }
        return String(decoding: bytes[0..<count], as: UTF8.self)
            .split(separator: "\n")
            .map { $0.hasPrefix(program + ": ") ? String($0.dropFirst(program.count + 2)) : String($0) }
            .filter { !$0.isEmpty && !$0.hasPrefix("Exiting with failure status") }
    }

    /// Passes what the child said on to our standard error (warnings of a
    /// run that succeeded are still worth reading).
    func forward(program: String) {
        for line in lines(program: program) {
            let text = Array("\(program): \(line)\n".utf8)
            _ = text.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        }
    }

    func close() {
        if fd != STDERR_FILENO { Glibc.close(fd) }
    }
}
