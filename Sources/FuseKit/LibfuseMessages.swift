import CFuse
import Glibc

/// libfuse explains a refusal (an unknown option, a mount the kernel
/// refused) through fuse_log(3), which writes to standard error unless a
/// log function is set. The session catches those lines here, for the one
/// call that may print them and on the calling thread only, so that it can
/// say them in one line of its own without swapping the process's standard
/// error (which a test process serving containers on its threads shares
/// with everything else). Lines outside such a call go to standard error,
/// as libfuse's own function writes them.
enum LibfuseMessages {
    /// The thread's catcher while a call runs (set once per process, with
    /// the log function).
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        fuse_set_log_func { _, format, arguments in
            guard let format, let arguments else { return }
            var line = [CChar](repeating: 0, count: 1024)
            let count = Int(vsnprintf(&line, line.count, format, arguments))
            let bytes = line.prefix(max(0, min(count, line.count - 1))).map { UInt8(bitPattern: $0) }
            if let catcher = pthread_getspecific(LibfuseMessages.key) {
                Unmanaged<Catcher>.fromOpaque(catcher).takeUnretainedValue().bytes += bytes
            } else {
                _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            }
        }
        return key
    }()

    /// What one call printed; used by its own thread only.
    private final class Catcher {
        var bytes: [UInt8] = []
    }

    /// Runs `body` with libfuse's lines on this thread caught, and returns
    /// them.
    static func catching<T>(_ body: () -> T) -> (T, String) {
        let catcher = Catcher()
        let pointer = Unmanaged.passRetained(catcher)
        pthread_setspecific(key, pointer.toOpaque())
        let result = body()
        pthread_setspecific(key, nil)
        pointer.release()
        return (result, String(decoding: catcher.bytes, as: UTF8.self))
    }
}
