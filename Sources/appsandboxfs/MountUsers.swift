import AppSandboxFS
import BackingStore
import DriverRuntime
import Glibc

/// Which processes keep a mount busy: what `unmount` names when it refuses
/// a busy mount (as fuser -m would), read from /proc.
enum MountUsers {
    /// One line per process using something under `mountpoint`, e.g.
    /// `bash (pid 812): working folder /mnt/MyApp/Documents`.
    static func holding(_ mountpoint: String) -> [String] {
        guard let proc = opendir("/proc") else { return [] }
        defer { closedir(proc) }
        var found: [String] = []
        let me = getpid()
        while let entry = readdir(proc) {
            let name = String(decoding: directoryEntryName(entry), as: UTF8.self)
            guard let pid = pid_t(name), pid != me else { continue }
            if let use = use(of: mountpoint, by: pid) {
                // The process name and the path are chosen by whoever runs
                // it (the app, another user): escaped as in a denial line,
                // so that the message sends no escape sequence to root's
                // terminal.
                found.append("\(command(pid)) (pid \(pid)): \(use)".escapedForTerminal)
            }
        }
        return found
    }

    /// The first thing of `pid` under `mountpoint`: its working folder,
    /// root, program, an open descriptor or a mapped file.
    private static func use(of mountpoint: String, by pid: pid_t) -> String? {
        let base = "/proc/\(pid)"
        for (link, what) in [("cwd", "working folder"), ("root", "root folder"), ("exe", "program")] {
            if let target = readLink(base + "/" + link), isUnder(target, mountpoint) { return "\(what) \(target)" }
        }
        if let fds = opendir(base + "/fd") {
            defer { closedir(fds) }
            while let entry = readdir(fds) {
                let fd = String(decoding: directoryEntryName(entry), as: UTF8.self)
                guard Int32(fd) != nil, let target = readLink(base + "/fd/" + fd), isUnder(target, mountpoint) else { continue }
                return "open file \(target)"
            }
        }
        if let maps = try? String(contentsOfFileWithoutFoundation: base + "/maps") {
            for line in maps.split(separator: "\n") {
                // address perms offset dev inode path
                guard let slash = line.firstIndex(of: "/") else { continue }
                let path = String(line[slash...])
                if isUnder(path, mountpoint) { return "mapped file \(path)" }
            }
        }
        return nil
    }

    private static func isUnder(_ path: String, _ folder: String) -> Bool {
        path == folder || path.hasPrefix(folder == "/" ? "/" : folder + "/")
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
        let count = buffer.withUnsafeMutableBytes { readlink(path, $0.baseAddress!.assumingMemoryBound(to: CChar.self), $0.count) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    private static func command(_ pid: pid_t) -> String {
        ((try? String(contentsOfFileWithoutFoundation: "/proc/\(pid)/comm")) ?? "?")
            .split(separator: "\n").first.map(String.init) ?? "?"
    }
}
