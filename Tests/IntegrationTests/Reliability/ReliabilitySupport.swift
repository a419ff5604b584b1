// What the reliability tests share: the suite that runs the heavy tests one
// at a time, the driver's resources as /proc shows them, making the kernel
// forget the inodes it holds, and the check that a backing directory is
// still a valid container.
//
// Heavy tests (long fsx runs, the stress run, the differential run after
// every operation, SIGKILL under writers) are nested in
// `ReliabilityHeavyTests`, which is `.serialized`: on a 2-core CI machine
// two of them at once would only fight for the cores and stretch each
// other's hang deadlines.

import Glibc
import Testing

@Suite("Reliability: the long and heavy runs, one at a time", .serialized)
struct ReliabilityHeavyTests {}

enum Reliability {
    /// An integer from the environment (a longer run by hand), else `fallback`.
    static func count(_ name: String, default fallback: Int) -> Int {
        guard let text = environment(name), let value = Int(text.replacingUnderscores()), value > 0 else {
            return fallback
        }
        return value
    }

    /// `appsandboxfs ARGS`, to its end.
    static func run(_ arguments: [String], cwd: String? = nil, asUser uid: uid_t? = nil,
                    stdin: String? = nil, timeout: Double = 60) -> (status: Int32, stdout: String, stderr: String) {
        runProcess([Binaries.appsandboxfs] + arguments, asUser: uid, cwd: cwd, stdin: stdin, timeout: timeout)
    }

    /// The non-blank lines of a command's output.
    static func lines(_ text: String) -> [Substring] {
        text.split(separator: "\n").filter { !$0.allSatisfy(\.isWhitespace) }
    }

    // MARK: The driver's resources

    /// How many descriptors the process has open (entries of /proc/PID/fd).
    static func openDescriptors(of pid: pid_t) -> Int? {
        guard let folder = opendir("/proc/\(pid)/fd") else { return nil }
        defer { closedir(folder) }
        var count = 0
        while let entry = readdir(folder) {
            let isDot = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 3) { $0[0] == 0x2E }
            }
            if !isDot { count += 1 }
        }
        // Listing our own folder counts opendir's descriptor too.
        return pid == getpid() ? count - 1 : count
    }

    /// Resident memory in KiB (VmRSS of /proc/PID/status).
    static func residentKiB(of pid: pid_t) -> Int? {
        statusField("VmRSS:", of: pid)
    }

    /// Threads of the process (Threads: of /proc/PID/status).
    static func threads(of pid: pid_t) -> Int? {
        statusField("Threads:", of: pid)
    }

    private static func statusField(_ field: String, of pid: pid_t) -> Int? {
        let line = readFileText("/proc/\(pid)/status").split(separator: "\n").first { $0.hasPrefix(field) }
        return line.flatMap { Int($0.dropFirst(field.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "") }
    }

    /// Makes the kernel drop the dentries and inodes nobody uses, machine
    /// wide (`echo 2 > /proc/sys/vm/drop_caches`): for a FUSE mount it then
    /// sends FORGET for every node it lets go, so the driver can close their
    /// descriptors. Harmless to other tests (they only lose cached entries).
    static func dropKernelCaches() {
        let fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = write(fd, "2\n", 2)
        close(fd)
    }

    /// Drops the kernel's caches until the driver's descriptor count stops
    /// falling (FORGET is sent asynchronously), at most `timeout` seconds.
    /// Returns the last count.
    @discardableResult
    static func settleDescriptors(of pid: pid_t, timeout: Double = 20) -> Int? {
        let deadline = monotonicNow() + timeout
        var last = openDescriptors(of: pid)
        var steady = 0
        while monotonicNow() < deadline {
            dropKernelCaches()
            usleep(250_000)
            let now = openDescriptors(of: pid)
            if now == last { steady += 1 } else { steady = 0 }
            last = now
            if steady >= 3 { break }
        }
        return last
    }

    // MARK: The container

    /// The folders every container has, and the fixture's bundle.
    static let requiredFolders = ["Documents", "Documents/Inbox", "Library", "Library/Application Support",
                                  "Library/Caches", "Library/Preferences", "tmp"]

    /// What keeps `backing` from being a valid container of `appName`: each
    /// system folder and the bundle must be a real folder (not a link), and
    /// the bundle's files as the fixture laid them out. Empty when valid.
    static func containerProblems(_ backing: String, appName: String = "TestApp") -> [String] {
        var problems: [String] = []
        for folder in requiredFolders + ["\(appName).app"] {
            var st = stat()
            if lstat(backing + "/" + folder, &st) != 0 {
                problems.append("\(folder): \(posixError(errno))")
            } else if st.st_mode & S_IFMT != S_IFDIR {
                problems.append("\(folder): not a folder (mode \(String(st.st_mode, radix: 8)))")
            }
        }
        if !readFileText(backing + "/\(appName).app/Info.plist").contains("<string>\(appName)</string>") {
            problems.append("\(appName).app/Info.plist lost its contents")
        }
        return problems
    }
}

extension String {
    /// "200_000" -> "200000", so counts can be written as in Swift.
    func replacingUnderscores() -> String { String(filter { $0 != "_" }) }
}
