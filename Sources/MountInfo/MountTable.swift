// The one reader of /proc/self/mountinfo and the one stale-mount check,
// shared by the command line, the test fixture and the backup code.

import Glibc
import POSIXHelpers

/// One line of /proc/self/mountinfo:
/// `36 35 0:52 / /mnt/MyApp rw,nosuid,nodev shared:1 - fuse.appsandboxfs /srv/MyApp rw,user_id=0,group_id=0`
public struct MountEntry: Sendable, Equatable {
    public var mountID: Int
    /// The file system's device, "major:minor" (what stat's st_dev says).
    public var device: String
    public var mountpoint: String
    /// Per-mount options (rw, nosuid, nodev, ...).
    public var mountOptions: [String]
    public var fsType: String
    /// The mount's source; for a FUSE mount, its fsname, which whoever
    /// mounted it chose: never trust it alone (see `mountedBy`).
    public var source: String
    /// The file system's options (for FUSE: rw, user_id=N, group_id=N, ...).
    public var superOptions: [String]

    /// The per-mount options, then the file system's, each once.
    public var options: [String] {
        var merged: [String] = []
        for option in mountOptions + superOptions where !merged.contains(option) { merged.append(option) }
        return merged
    }

    /// A FUSE mount's `user_id`: the user who mounted it (nil for others).
    public var mountedBy: uid_t? {
        superOptions.first { $0.hasPrefix("user_id=") }.flatMap { uid_t($0.dropFirst(8)) }
    }

    /// Whether this is an appsandboxfs container.
    public var isContainer: Bool { fsType == MountTable.containerType }

    /// st_dev of the mount's root as stat reports it.
    public var deviceNumber: UInt64? { Self.deviceNumber(of: device) }

    /// st_dev for a "major:minor" of the mount table.
    public static func deviceNumber(of device: String) -> UInt64? {
        let parts = device.split(separator: ":")
        guard parts.count == 2, let major = UInt64(parts[0]), let minor = UInt64(parts[1]) else { return nil }
        // glibc's makedev.
        return (major & 0xfff) << 8 | (major & ~0xfff) << 32 | (minor & 0xff) | (minor & ~0xff) << 12
    }
}

public enum MountTable {
    /// The type of a container mount.
    public static let containerType = "fuse.appsandboxfs"

    /// Every mount of this mount namespace, in the kernel's order (a later
    /// one at the same mountpoint hides the earlier).
    public static func entries() -> [MountEntry] {
        parse(readText("/proc/self/mountinfo") ?? "")
    }

    public static func parse(_ text: String) -> [MountEntry] {
        // Split on the UTF-8 bytes, not on Characters: the table is ASCII
        // separators around escaped fields, and splitting by Character
        // (grapheme clusters) made each read of it cost more than a
        // container's umount2 (docs/performance.md).
        text.utf8.split(separator: UInt8(ascii: "\n")).compactMap { line in
            let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false).map(Substring.init)
            guard fields.count > 6, let dash = fields.firstIndex(of: "-"), dash >= 6, fields.count > dash + 2,
                  let id = Int(fields[0]) else { return nil }
            return MountEntry(
                mountID: id, device: String(fields[2]), mountpoint: unescape(fields[4]),
                mountOptions: options(fields[5]), fsType: String(fields[dash + 1]),
                source: unescape(fields[dash + 2]),
                superOptions: fields.count > dash + 3 ? options(fields[dash + 3]) : [])
        }
    }

    private static func options(_ field: Substring) -> [String] {
        field.utf8.split(separator: UInt8(ascii: ",")).map { String(Substring($0)) }
    }

    /// The mount at exactly `path` (the top one), if any.
    public static func entry(at path: String) -> MountEntry? { entries().last { $0.mountpoint == path } }

    public static func isMounted(_ path: String) -> Bool { entry(at: path) != nil }

    /// Whether a container is mounted at exactly `path`.
    public static func isContainerMount(_ path: String) -> Bool { entry(at: path)?.isContainer == true }

    /// The mountpoints at which the backing directory `backing` is mounted
    /// as a container. A source is this one when it is the same path or the
    /// same folder (device and inode), so another spelling of the path
    /// (through a symbolic link, say) is found too. A stale mount (its
    /// driver died) still counts: it must be unmounted first.
    public static func mountpoints(ofBacking backing: String) -> [String] {
        var own = stat()
        let known = stat(backing, &own) == 0
        return entries().filter { entry in
            guard entry.isContainer else { return false }
            if entry.source == backing { return true }
            var other = stat()
            return known && entry.source.hasPrefix("/") && stat(entry.source, &other) == 0
                && other.st_dev == own.st_dev && other.st_ino == own.st_ino
        }.map(\.mountpoint)
    }

    /// Whether `path` is a mount whose driver is gone (see `probe`). A
    /// mount that does not answer in time is not stale: its driver lives.
    public static func isStale(_ path: String, within milliseconds: Int32 = probeTimeout) -> Bool {
        probe(path, within: milliseconds) == .stale
    }

    /// What a statfs of a mount says.
    public enum Probe: Sendable, Equatable {
        /// statfs answered (or failed for another reason than a dead driver).
        case answering
        /// The driver died: ENOTCONN (ECONNABORTED once the connection was
        /// aborted through /sys/fs/fuse/connections/N/abort).
        case stale
        /// No answer in time: the driver lives but hangs (or is stopped).
        case notAnswering
    }

    /// How long `probe` waits for a statfs: a dead driver's mount answers
    /// at once, a live one in microseconds.
    public static let probeTimeout: Int32 = 2000

    /// The one stale-mount check. statfs reaches the driver where stat may
    /// be answered from the kernel's cache, and fails with ENOTCONN at once
    /// when the driver died; but a driver that lives and does not answer
    /// would block the caller in the kernel for ever. So the statfs runs on
    /// a thread of its own, which tells the result through a socket pair,
    /// and the caller waits at most `milliseconds`. A thread left blocked
    /// is detached: it ends when the driver answers or the process exits.
    public static func probe(_ path: String, within milliseconds: Int32 = probeTimeout) -> Probe {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return direct(path)
        }
        let answer = ends[1]
        let started = startThread(detached: true) {
            var byte = UInt8(MountTable.direct(path) == .stale ? 1 : 0)
            // MSG_NOSIGNAL: the waiter may have given up and closed its end.
            _ = send(answer, &byte, 1, Int32(MSG_NOSIGNAL))
            close(answer)
        }
        guard started != nil else {
            close(ends[0])
            close(ends[1])
            return direct(path)
        }
        defer { close(ends[0]) }
        var waiting = pollfd(fd: ends[0], events: Int16(POLLIN), revents: 0)
        var ready: Int32
        repeat { ready = poll(&waiting, 1, milliseconds) } while ready < 0 && errno == EINTR
        guard ready > 0 else { return .notAnswering }
        var byte: UInt8 = 0
        return recv(ends[0], &byte, 1, 0) == 1 && byte == 1 ? .stale : .answering
    }

    /// The statfs itself, on the calling thread.
    private static func direct(_ path: String) -> Probe {
        var status = statvfs()
        return statvfs(path, &status) != 0 && (errno == ENOTCONN || errno == ECONNABORTED) ? .stale : .answering
    }

    /// mountinfo writes space, tab, newline and backslash as \ooo.
    public static func unescape(_ field: Substring) -> String {
        guard field.utf8.contains(UInt8(ascii: "\\")) else { return String(field) }
        var bytes: [UInt8] = []
        var input = Array(field.utf8)[...]
        while let byte = input.popFirst() {
            if byte == UInt8(ascii: "\\"), input.count >= 3,
               let value = UInt8(String(decoding: input.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                input = input.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
