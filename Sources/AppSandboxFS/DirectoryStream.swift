import FuseKit
import Glibc
import Locking
import SystemPackage

/// An open folder being listed: a `DIR` stream and where it stands. The
/// kernel does not list one open folder from two threads at once, but the
/// position lives behind a lock so that nothing depends on that.
final class DirectoryStream: Sendable {
    private struct State: @unchecked Sendable {
        // DIR* is a thin C pointer owned by this stream.
        let stream: OpaquePointer
        var position: off_t = 0
    }

    private let state: Locked<State>

    /// Takes ownership of `fd`, an open folder descriptor.
    init?(fd: FileDescriptor) {
        guard let stream = fdopendir(fd.rawValue) else { return nil }
        state = Locked(State(stream: stream))
    }

    /// Calls `body` for each entry from `offset` on with the entry's name,
    /// inode number, type (DT_*) and the offset of the entry after it, until
    /// `body` returns false (that entry is not consumed). Returns an errno
    /// on failure.
    func forEach(from offset: off_t,
                 _ body: (UnsafePointer<CChar>, UInt64, UInt8, off_t) -> Bool) -> Int32? {
        state.withLock { state in
            if offset != state.position {
                seekdir(state.stream, Int(offset))
                state.position = offset
            }
            while true {
                errno = 0
                guard let entry = readdir(state.stream) else {
                    return errno == 0 ? nil : errno
                }
                let next = off_t(entry.pointee.d_off)
                let accepted = withUnsafePointer(to: &entry.pointee.d_name) { tuple in
                    tuple.withMemoryRebound(to: CChar.self, capacity: 256) { name in
                        body(name, UInt64(entry.pointee.d_ino), entry.pointee.d_type, next)
                    }
                }
                if !accepted {
                    // Go back to the start of the refused entry next time.
                    seekdir(state.stream, Int(state.position))
                    return nil
                }
                state.position = next
            }
        }
    }

    deinit {
        state.withLock { _ = closedir($0.stream) }
    }
}
