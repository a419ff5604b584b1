import ContainerBackup
import Glibc

/// A one-line progress display on standard error, for long runs: shown only
/// when standard error is a terminal, only once a run has lasted half a
/// second, redrawn at most ten times a second, and erased at the end.
final class ProgressLine {
    private let label: String
    private let start = ProgressLine.now()
    private var lastDrawn = 0.0
    private var shown = false

    /// nil when there is nothing to show: disabled, or not a terminal.
    init?(_ label: String, enabled: Bool = true) {
        guard enabled, isatty(STDERR_FILENO) == 1 else { return nil }
        self.label = label
    }

    func update(_ progress: TarArchive.Progress) {
        let now = Self.now()
        guard now - start >= 0.5, now - lastDrawn >= 0.1 else { return }
        lastDrawn = now
        var text = "\(label): \(ByteCount.text(progress.bytes))"
        if let expected = progress.expected, expected > 0 {
            let percent = min(99, Int(progress.bytes * 100 / expected))
            text += " of \(ByteCount.text(expected)) (\(percent)%)"
        }
        draw("\r\u{1B}[K" + text)
        shown = true
    }

    /// Erases the line, if it was drawn.
    func finish() {
        if shown { draw("\r\u{1B}[K") }
        shown = false
    }

    private func draw(_ text: String) {
        var bytes = Array(text.utf8)
        _ = write(STDERR_FILENO, &bytes, bytes.count)
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
