import Foundation
import Glibc

/// Who holds flock(2) locks on a file, from /proc/locks: the pid that took
/// each lock and that process's effective uid. `update` asks it about the
/// backing folder's lock, which anyone who may open the folder can take
/// (AppUpdate.takeLocks).
///
/// A /proc/locks line: `1: FLOCK  ADVISORY  WRITE 1234 08:02:131090 0 EOF`
/// (a waiting request has `->` after the number). The pid is the process
/// that took the lock; a lock passed on to a child outlives it, and then
/// the pid is gone (uid nil). Matched by inode number alone: the device
/// /proc/locks shows is the super block's, which differs from st_dev on
/// some file systems (btrfs subvolumes); another file of the same number
/// can only make `update` refuse more, never less.
enum FlockHolders {
    struct Holder: Equatable {
        var pid: pid_t
        /// The effective uid, nil when the process is gone.
        var uid: uid_t?
    }

    static func read(inode: ino_t) -> [Holder] {
        parse(readText("/proc/locks") ?? "", inode: UInt64(inode)).map { pid in
            Holder(pid: pid, uid: effectiveUID(pid))
        }
    }

    /// The pids holding (not waiting for) flock locks on `inode`.
    static func parse(_ text: String, inode: UInt64) -> [pid_t] {
        var pids: [pid_t] = []
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = pid_t(fields[4]) else { continue }
            let place = fields[5].split(separator: ":")
            guard place.count == 3, UInt64(place[2]) == inode, !pids.contains(pid) else { continue }
            pids.append(pid)
        }
        return pids
    }

    /// The second number of the `Uid:` line of /proc/PID/status.
    static func effectiveUID(_ pid: pid_t) -> uid_t? {
        guard pid > 0, let status = readText("/proc/\(pid)/status") else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("Uid:") {
            let ids = line.dropFirst(4).split(whereSeparator: { $0 == "\t" || $0 == " " })
            return ids.count >= 2 ? uid_t(ids[1]) : nil
        }
        return nil
    }

    private static func readText(_ path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }
}
