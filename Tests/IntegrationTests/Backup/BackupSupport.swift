// Support for the backup tests (X1-X6, K1-K3): the xattr system calls,
// which Swift's Glibc module does not show, running the real appsandboxfs
// verbs, and snapshots of trees (names, metadata, contents, attributes) to
// prove that something changed nothing, or that a restore gave back the same.

import Foundation
import Glibc
import Testing

// MARK: - xattr system calls

/// setxattr(2) and friends, found in the C library with dlsym.
enum BackupXattr {
    static let create: Int32 = 1   // XATTR_CREATE
    static let replace: Int32 = 2  // XATTR_REPLACE

    private static func libc<T>(_ name: String, as type: T.Type) -> T {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("the C library has no \(name)")
        }
        return unsafeBitCast(symbol, to: type)
    }

    private typealias SetX = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
    private typealias GetX = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
    private typealias ListX = @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<CChar>?, Int) -> Int
    private typealias RemoveX = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32

    private static let setxattrCall = libc("setxattr", as: SetX.self)
    private static let lsetxattrCall = libc("lsetxattr", as: SetX.self)
    private static let getxattrCall = libc("getxattr", as: GetX.self)
    private static let lgetxattrCall = libc("lgetxattr", as: GetX.self)
    private static let listxattrCall = libc("listxattr", as: ListX.self)
    private static let removexattrCall = libc("removexattr", as: RemoveX.self)

    /// setxattr(2): 0, or the errno.
    static func set(_ path: String, _ name: String, _ value: [UInt8], flags: Int32 = 0) -> Int32 {
        let result = value.withUnsafeBytes { setxattrCall(path, name, $0.baseAddress, $0.count, flags) }
        return result == 0 ? 0 : errno
    }

    /// lsetxattr(2) (for the backing directory): 0, or the errno.
    static func setNoFollow(_ path: String, _ name: String, _ value: [UInt8]) -> Int32 {
        let result = value.withUnsafeBytes { lsetxattrCall(path, name, $0.baseAddress, $0.count, 0) }
        return result == 0 ? 0 : errno
    }

    /// getxattr(2) with a buffer of `capacity` bytes: the value, or the errno.
    static func get(_ path: String, _ name: String, capacity: Int = 65536) -> Result<[UInt8], BackupErrno> {
        var buffer = [UInt8](repeating: 0, count: max(capacity, 1))
        let count = buffer.withUnsafeMutableBytes { getxattrCall(path, name, $0.baseAddress, capacity) }
        return count < 0 ? .failure(BackupErrno(errno)) : .success(Array(buffer[0..<count]))
    }

    /// lgetxattr(2) (for the backing directory): the value, or nil.
    static func getNoFollow(_ path: String, _ name: String) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { lgetxattrCall(path, name, $0.baseAddress, $0.count) }
        return count < 0 ? nil : Array(buffer[0..<count])
    }

    /// getxattr(2) with size 0: the value's size, or the errno.
    static func size(_ path: String, _ name: String) -> Result<Int, BackupErrno> {
        let count = getxattrCall(path, name, nil, 0)
        return count < 0 ? .failure(BackupErrno(errno)) : .success(count)
    }

    /// listxattr(2): the names, or the errno.
    static func list(_ path: String) -> Result<[String], BackupErrno> {
        let size = listxattrCall(path, nil, 0)
        guard size >= 0 else { return .failure(BackupErrno(errno)) }
        var buffer = [CChar](repeating: 0, count: size + 1)
        let count = listxattrCall(path, &buffer, buffer.count)
        guard count >= 0 else { return .failure(BackupErrno(errno)) }
        let names = buffer[0..<count].split(separator: 0).map {
            String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return .success(names)
    }

    /// removexattr(2): 0, or the errno.
    static func remove(_ path: String, _ name: String) -> Int32 {
        removexattrCall(path, name) == 0 ? 0 : errno
    }
}

/// An errno that prints by name (`ENODATA`).
struct BackupErrno: Error, Equatable, CustomStringConvertible {
    var code: Int32
    init(_ code: Int32) { self.code = code }
    var description: String { posixError(code) }
}

// MARK: - Names and values

enum BackupNames {
    static let excludeItem = "com.apple.metadata:com_apple_backup_excludeItem"
    static let mobileBackup = "com.apple.MobileBackup"
    /// How the driver stores them in the backing directory (X4).
    static let backingExcludeItem = "user.appsandboxfs.com.apple.metadata:com_apple_backup_excludeItem"
    static let backingMobileBackup = "user.appsandboxfs.com.apple.MobileBackup"

    /// docs/rules.md (X1): the 61-byte binary plist of "com.apple.backupd".
    static let appleHex = "62706c69737430305f1011636f6d2e6170706c652e6261636b75706408000000000000010100000000000000010000000000000000000000000000001c"
    static let appleValue: [UInt8] = backupBytes(hex: appleHex)
}

func backupBytes(hex: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var characters = hex[...]
    while characters.count >= 2 {
        bytes.append(UInt8(characters.prefix(2), radix: 16)!)
        characters = characters.dropFirst(2)
    }
    return bytes
}

func backupHex(_ bytes: [UInt8]) -> String {
    bytes.map { byte in
        let digits = String(byte, radix: 16)
        return digits.count == 1 ? "0" + digits : digits
    }.joined()
}

// MARK: - The appsandboxfs verbs

/// Runs `appsandboxfs ARGUMENTS` (the real binary) to its end.
func backupRun(_ arguments: [String], stdin: String? = nil, timeout: Double = 300)
    -> (status: Int32, stdout: String, stderr: String)
{
    runProcess([Binaries.appsandboxfs] + arguments, stdin: stdin, timeout: timeout)
}

/// `backup-report CONTAINER --json`, parsed.
func backupReportJSON(_ container: String, _ extra: [String] = [],
                      sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
    let result = backupRun(["backup-report", container, "--json"] + extra)
    guard result.status == 0 || result.status == 2 else {
        throw SupportError("backup-report \(container) exited \(result.status): \(result.stderr)")
    }
    guard let object = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any] else {
        throw SupportError("backup-report --json printed no object: \(result.stdout)")
    }
    return object
}

extension Dictionary where Key == String, Value == Any {
    /// A number at a key path, such as "backup.files".
    func backupInt(_ path: String) -> Int? {
        var value: Any? = self
        for key in path.split(separator: ".") { value = (value as? [String: Any])?[String(key)] }
        return (value as? NSNumber)?.intValue
    }

    /// The "path" of each object in an array at `key`.
    func backupPaths(_ key: String, where predicate: ([String: Any]) -> Bool = { _ in true }) -> [String] {
        ((self[key] as? [[String: Any]]) ?? []).filter(predicate).compactMap { $0["path"] as? String }
    }
}

/// The member names of a tar archive, as GNU tar lists them (escaped), without
/// the trailing "/" of folders.
func backupArchiveMembers(_ archive: String) throws -> [String] {
    let result = runProcess(["tar", "--quoting-style=escape", "-tf", archive])
    guard result.status == 0 else { throw SupportError("tar -tf \(archive): \(result.stderr)") }
    return result.stdout.split(separator: "\n").map { line in
        line.hasSuffix("/") ? String(line.dropLast()) : String(line)
    }
}

// MARK: - Snapshots

/// Everything about a set of entries that a backup keeps, or that "changes
/// nothing" means: type, mode, owner, size, modification time to the
/// nanosecond, content (a digest), symbolic link target, and every extended
/// attribute (backing names, values in hex). One line per entry.
func backupSnapshot(root: String, paths: [String]? = nil) throws -> [String] {
    var entries = paths
    if entries == nil {
        let listing = runProcess(["find", root, "-mindepth", "1", "-printf", "%P\\0"])
        guard listing.status == 0 else { throw SupportError("find \(root): \(listing.stderr)") }
        entries = listing.stdout.split(separator: "\0").map(String.init).sorted()
    }
    var lines: [String] = []
    for path in entries! {
        let full = root + "/" + path
        var st = stat()
        guard lstat(full, &st) == 0 else { lines.append("\(path) missing"); continue }
        var line = "\(path) type=\(st.st_mode & S_IFMT) mode=\(String(st.st_mode & 0o7777, radix: 8)) uid=\(st.st_uid) gid=\(st.st_gid)"
        line += " mtime=\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
        switch st.st_mode & S_IFMT {
        case S_IFREG:
            line += " size=\(st.st_size) content=\(backupDigest(full))"
        case S_IFLNK:
            var buffer = [CChar](repeating: 0, count: 4096)
            let n = readlink(full, &buffer, buffer.count)
            line += " target=\(String(decoding: buffer[0..<max(n, 0)].map { UInt8(bitPattern: $0) }, as: UTF8.self))"
        default: break
        }
        let attributes = runProcess(["getfattr", "--absolute-names", "-h", "-d", "-m", "-", "-e", "hex", full])
        let attributeLines = attributes.stdout.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.sorted()
        line += " xattrs=[" + attributeLines.joined(separator: " ") + "]"
        lines.append(line)
    }
    return lines
}

/// A digest of a file's bytes (not cryptographic: a test compares copies).
func backupDigest(_ path: String) -> String {
    guard let bytes = readFileBytes(path) else { return "unreadable" }
    var hash: UInt64 = 0xcbf29ce484222325
    for byte in bytes {
        hash ^= UInt64(byte)
        hash = hash &* 0x100000001b3
    }
    return "\(bytes.count):\(String(hash, radix: 16))"
}

// MARK: - libfuse's debug log

/// The replies to the xattr requests in a libfuse debug log (`mount
/// --debug`), as (opcode, reply line): requests read
/// "unique: 8, opcode: GETXATTR (22), ...", replies "   unique: 8, error: -61 (...)".
func backupXattrReplies(_ log: String) -> [(opcode: String, reply: String)] {
    let opcodes = ["SETXATTR", "GETXATTR", "LISTXATTR", "REMOVEXATTR"]
    var pending: [String: String] = [:]
    var replies: [(String, String)] = []
    for line in log.split(separator: "\n") {
        let text = line.drop { $0 == " " }
        guard text.hasPrefix("unique: ") else { continue }
        let fields = text.split(separator: ",", maxSplits: 2)
        guard fields.count >= 2 else { continue }
        let unique = String(fields[0])
        let rest = fields[1].drop { $0 == " " }
        if rest.hasPrefix("opcode: ") {
            let opcode = rest.dropFirst("opcode: ".count).prefix { $0 != " " }
            if opcodes.contains(String(opcode)) { pending[unique] = String(opcode) }
        } else if let opcode = pending.removeValue(forKey: unique) {
            replies.append((opcode, String(rest)))
        }
    }
    return replies
}

// MARK: - Mounts

/// Unmounts the fixture's mount, mounts the same backing directory again
/// with a driver of its own for `body`, and unmounts that one after (the
/// fixture then finds nothing left to do).
func backupRemount<T>(_ mounted: MountedContainer, _ body: () throws -> T) throws -> T {
    let unmount = runProcess(["fusermount3", "-u", mounted.mountpoint], timeout: 30)
    guard unmount.status == 0 else { throw SupportError("fusermount3 -u: \(unmount.stderr)") }
    _ = mounted.waitForDriverExit()
    let stderrPath = mounted.root + "/driver-again.stderr"
    try writeFile(stderrPath, "")
    let pid = try spawn([Binaries.appsandboxfs, "mount", mounted.backing, mounted.mountpoint, "--app-name", mounted.appName, "--foreground"],
                        stdin: "/dev/null", stdout: "/dev/null", stderr: stderrPath)
    defer {
        if isFuseMount(mounted.mountpoint) {
            if runProcess(["fusermount3", "-u", mounted.mountpoint], timeout: 30).status != 0 {
                _ = runProcess(["fusermount3", "-u", "-z", mounted.mountpoint], timeout: 30)
            }
        }
        if waitForExit(pid, timeout: 15) == nil {
            kill(pid, SIGKILL)
            _ = waitForExit(pid, timeout: 15)
        }
    }
    let deadline = monotonicNow() + 30
    while !isFuseMount(mounted.mountpoint) {
        if let status = waitForExit(pid, timeout: 0) {
            throw SupportError("the second driver exited (\(status)): \(readFileText(stderrPath))")
        }
        if monotonicNow() > deadline { throw SupportError("the second driver did not mount within 30 s") }
        usleep(10_000)
    }
    return try body()
}
