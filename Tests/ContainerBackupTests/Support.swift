// Building small containers in temporary folders, straight in the backing
// form (flags under their backing names), for the unit tests of this module.

import ContainerBackup
import Glibc
import POSIXHelpers
import Spawning
import SandboxPolicy
import Testing

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A fresh container laid out in /tmp, removed when the value goes away.
final class ScratchContainer {
    let root: String
    let layout = ContainerLayout(appName: "Demo")

    init() throws {
        var template = Array("/tmp/asfs-backup-unit-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw TestFailure("mkdtemp: \(errno)") }
        root = String(cString: made)
        for folder in ["Demo.app"] + ContainerLayout.requiredFolders { try mkdirs(folder) }
        try write("Demo.app/Info.plist", "<plist/>")
    }

    deinit {
        _ = run(["rm", "-rf", "--one-file-system", "--", root])
    }

    func path(_ relative: String) -> String { relative.isEmpty ? root : root + "/" + relative }

    func mkdirs(_ relative: String, mode: mode_t = 0o755) throws {
        var built = root
        for part in relative.split(separator: "/") {
            built += "/" + part
            if mkdir(built, mode) != 0 && errno != EEXIST { throw TestFailure("mkdir \(built): \(errno)") }
        }
    }

    func write(_ relative: String, _ text: String) throws { try write(relative, Array(text.utf8)) }

    func write(_ relative: String, _ bytes: [UInt8]) throws {
        let fd = open(path(relative), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TestFailure("open \(relative): \(errno)") }
        defer { close(fd) }
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw TestFailure("write \(relative): \(errno)")
        }
    }

    /// A file of `size` bytes that takes no room (a hole).
    func sparse(_ relative: String, size: Int64) throws {
        let fd = open(path(relative), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0, ftruncate(fd, off_t(size)) == 0 else { throw TestFailure("sparse \(relative): \(errno)") }
        close(fd)
    }

    func symlink(_ relative: String, to target: String) throws {
        guard Glibc.symlink(target, path(relative)) == 0 else { throw TestFailure("symlink \(relative): \(errno)") }
    }

    func fifo(_ relative: String) throws {
        guard mkfifo(path(relative), 0o644) == 0 else { throw TestFailure("mkfifo \(relative): \(errno)") }
    }

    /// A UNIX socket bound at `relative` (closed again: the entry stays).
    func socket(_ relative: String) throws {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path(relative).utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw TestFailure("socket path too long") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else { throw TestFailure("bind \(relative): \(errno)") }
    }

    /// Sets an attribute by its backing name, as the driver stores it.
    func setBackingAttribute(_ relative: String, _ name: String, _ value: [UInt8]) throws {
        let result = value.withUnsafeBytes { raw in
            TestXattr.lsetxattr(path(relative), name, raw.baseAddress, raw.count, 0)
        }
        guard result == 0 else { throw TestFailure("setxattr \(relative) \(name): \(errno)") }
    }

    /// Sets a flag as a process does through the mount (stored under its backing name).
    func flag(_ relative: String, _ flag: BackupFlag, _ value: [UInt8]? = nil) throws {
        try setBackingAttribute(relative, flag.backingName,
                                value ?? (flag == .excludeItem ? BackupFlag.excludeItemValue : [1]))
    }

    func exists(_ relative: String) -> Bool {
        var status = stat()
        return lstat(path(relative), &status) == 0
    }

    /// Every path below the root (relative, sorted), as `find` lists them.
    func listing() -> [String] {
        let output = run(["find", root, "-mindepth", "1", "-printf", "%P\\n"]).stdout
        return output.split(separator: "\n").map(String.init).sorted()
    }

    func scan(threshold: Int64 = BackupScan.defaultLargeFileThreshold) throws -> BackupScan {
        try BackupScan.run(root: root, layout: layout, largeFileThreshold: threshold, listMembers: true)
    }
}

/// The xattr calls, which Swift's Glibc module does not show.
enum TestXattr {
    private static func libc<T>(_ name: String, as type: T.Type) -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { fatalError("no \(name)") }
        return unsafeBitCast(symbol, to: type)
    }

    static let lsetxattr = libc("lsetxattr", as: (@convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32).self)
    static let lgetxattr = libc("lgetxattr", as: (@convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int).self)

    static func get(_ path: String, _ name: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { lgetxattr(path, name, $0.baseAddress, $0.count) }
        return count < 0 ? nil : Array(buffer[0..<count])
    }
}

/// Runs a program to its end (the project's one spawner; no stray
/// descriptor of another test reaches it); its standard output.
func run(_ arguments: [String], stdin: String = "/dev/null") -> (status: Int32, stdout: String) {
    let result = ChildProcess.run(arguments, options: SpawnOptions(closeOtherDescriptors: true), input: stdin)
    return (result.status, result.standardOutput)
}

extension String {
    init(contentsOfFileWithoutFoundation path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw TestFailure("open \(path): \(errno)") }
        defer { close(fd) }
        self = String(decoding: readToEnd(fd).bytes, as: UTF8.self)
    }
}

extension BackupScan {
    /// The backed-up members as text, in walk order.
    var memberPaths: [String] { members.map { String(decoding: $0, as: UTF8.self) } }
}
