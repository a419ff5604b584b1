import BackingStore
import CLinux
import Glibc
import SystemPackage

/// Copies a folder's contents into another folder exactly (rule U1): every
/// file, folder, symbolic link, FIFO and device node with its mode, owner,
/// extended attributes and access and modification times; files with
/// several links inside the tree stay linked. Both sides are reached only
/// through descriptors, each name opened with O_NOFOLLOW relative to its
/// folder's descriptor: a link swapped in by someone else is copied as a
/// link (source) or makes the copy fail (destination), never followed.
struct BundleCopier {
    /// Called after each entry copied: `update`'s kill points for its test.
    let afterEntry: () -> Void
    /// The first copy of each multiply linked source file, held open as
    /// O_PATH so the next names of it become links to it.
    private var firstCopies: [InodeKey: Int32] = [:]

    init(afterEntry: @escaping () -> Void) {
        self.afterEntry = afterEntry
    }

    /// Copies what `source` holds into the empty folder `destination`, then
    /// gives `destination` the source folder's own attributes.
    mutating func copyContents(of source: Int32, into destination: Int32, path: String) throws(UpdateFailure) {
        defer {
            for fd in firstCopies.values { close(fd) }
            firstCopies = [:]
        }
        try copyFolder(source, into: destination, path: path)
    }

    private mutating func copyFolder(_ source: Int32, into destination: Int32, path: String) throws(UpdateFailure) {
        for name in try Self.names(in: source, path: path) {
            let childPath = path + "/" + String(decoding: name.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
            var status = stat()
            guard fstatat(source, name, &status, AT_SYMLINK_NOFOLLOW) == 0 else {
                throw UpdateFailure(childPath, errno: errno)
            }
            switch status.st_mode & S_IFMT {
            case S_IFDIR:
                guard mkdirat(destination, name, 0o700) == 0 else { throw UpdateFailure(childPath, errno: errno) }
                let from = try Self.open(source, name, O_RDONLY | O_DIRECTORY, path: childPath)
                defer { close(from) }
                let to = try Self.open(destination, name, O_RDONLY | O_DIRECTORY, path: childPath)
                defer { close(to) }
                try copyFolder(from, into: to, path: childPath)
                try Self.copyAttributes(status, from: from, to: to, path: childPath)
            case S_IFREG:
                try copyFile(status, name, from: source, to: destination, path: childPath)
            case S_IFLNK:
                try Self.copyLink(status, name, from: source, to: destination, path: childPath)
            default:
                // FIFOs, sockets, devices: the node itself, as cp -a makes it.
                guard mknodat(destination, name, status.st_mode, status.st_rdev) == 0 else {
                    throw UpdateFailure(childPath, errno: errno)
                }
                let to = try Self.open(destination, name, Int32(asfs_O_PATH), path: childPath)
                defer { close(to) }
                try Self.setOwnerModeTimes(status, fd: to, path: childPath)
            }
            afterEntry()
        }
    }

    private mutating func copyFile(_ status: stat, _ name: [CChar], from source: Int32, to destination: Int32,
                                   path: String) throws(UpdateFailure) {
        let key = InodeKey(status)
        if status.st_nlink > 1, let first = firstCopies[key] {
            guard linkat(first, "", destination, name, Int32(asfs_AT_EMPTY_PATH)) == 0 else {
                throw UpdateFailure(path, errno: errno)
            }
            return
        }
        // O_NONBLOCK: a FIFO swapped in since the fstatat must not block us.
        let from = try Self.open(source, name, O_RDONLY | O_NONBLOCK, path: path)
        defer { close(from) }
        var opened = stat()
        guard fstat(from, &opened) == 0, InodeKey(opened) == key, opened.st_mode & S_IFMT == S_IFREG else {
            throw UpdateFailure(path + ": changed while it was being copied")
        }
        let to = openat(destination, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard to >= 0 else { throw UpdateFailure(path, errno: errno) }
        defer { close(to) }
        try Self.copyData(from: from, to: to, size: status.st_size, path: path)
        try Self.copyAttributes(status, from: from, to: to, path: path)
        if status.st_nlink > 1 {
            firstCopies[key] = try Self.open(destination, name, Int32(asfs_O_PATH), path: path)
        }
    }

    private static func copyLink(_ status: stat, _ name: [CChar], from source: Int32, to destination: Int32,
                                 path: String) throws(UpdateFailure) {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(source, name, &buffer, buffer.count - 1)
        guard count >= 0 else { throw UpdateFailure(path, errno: errno) }
        buffer[count] = 0
        guard symlinkat(buffer, destination, name) == 0 else { throw UpdateFailure(path, errno: errno) }
        guard fchownat(destination, name, status.st_uid, status.st_gid, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw UpdateFailure(path, errno: errno)
        }
        var times = [status.st_atim, status.st_mtim]
        guard utimensat(destination, name, &times, AT_SYMLINK_NOFOLLOW) == 0 else { throw UpdateFailure(path, errno: errno) }
    }

    /// The file's bytes, holes kept where the kernel reports them (SEEK_DATA).
    private static func copyData(from: Int32, to: Int32, size: off_t, path: String) throws(UpdateFailure) {
        var offset: off_t = 0
        while offset < size {
            let data = lseek(from, offset, Int32(asfs_SEEK_DATA))
            if data < 0 { break }  // ENXIO: only a hole is left
            var end = lseek(from, data, Int32(asfs_SEEK_HOLE))
            if end < 0 { end = size }
            var position = data
            while position < end {
                var inOffset = position
                var outOffset = position
                let copied = asfs_copy_file_range(from, &inOffset, to, &outOffset, Int(end - position), 0)
                if copied < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
                    try copyByReading(from: from, to: to, range: position..<end, path: path)
                    break
                }
                guard copied >= 0 else { throw UpdateFailure(path, errno: errno) }
                if copied == 0 { break }
                position += off_t(copied)
            }
            offset = end
        }
        guard ftruncate(to, size) == 0 else { throw UpdateFailure(path, errno: errno) }
    }

    private static func copyByReading(from: Int32, to: Int32, range: Range<off_t>, path: String) throws(UpdateFailure) {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var position = range.lowerBound
        while position < range.upperBound {
            let count = pread(from, &buffer, min(buffer.count, Int(range.upperBound - position)), position)
            guard count >= 0 else { throw UpdateFailure(path, errno: errno) }
            if count == 0 { return }
            var done = 0
            while done < count {
                let written = buffer.withUnsafeBytes { pwrite(to, $0.baseAddress! + done, count - done, position + off_t(done)) }
                guard written > 0 else { throw UpdateFailure(path, errno: errno) }
                done += written
            }
            position += off_t(count)
        }
    }

    /// Extended attributes, then owner, mode and times (in that order: a
    /// chown clears set-ID bits, and each change moves the ctime only).
    private static func copyAttributes(_ status: stat, from: Int32, to: Int32, path: String) throws(UpdateFailure) {
        // Through /proc/self/fd: the very files the descriptors hold.
        let fromPath = "/proc/self/fd/\(from)", toPath = "/proc/self/fd/\(to)"
        var names = [CChar](repeating: 0, count: 65536)
        let length = max(0, asfs_listxattr(fromPath, &names, names.count))
        var start = 0
        var value = [UInt8](repeating: 0, count: 65536)
        while start < length {
            let end = names[start..<length].firstIndex(of: 0) ?? length
            let name = Array(names[start..<end]) + [0]
            start = end + 1
            let size = asfs_getxattr(fromPath, name, &value, value.count)
            guard size >= 0, asfs_setxattr(toPath, name, value, size, 0) == 0 else {
                let attribute = String(decoding: name.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw UpdateFailure(path + " (attribute \(attribute))", errno: errno)
            }
        }
        try setOwnerModeTimes(status, fd: to, path: path)
    }

    private static func setOwnerModeTimes(_ status: stat, fd raw: Int32, path: String) throws(UpdateFailure) {
        let fd = FileDescriptor(rawValue: raw)
        do {
            try Backing.chown(fd, uid: status.st_uid, gid: status.st_gid)
            if status.st_mode & S_IFMT != S_IFLNK { try Backing.chmod(fd, mode: status.st_mode & 0o7777) }
            try Backing.setTimes(fd, (status.st_atim, status.st_mtim), isSymlink: status.st_mode & S_IFMT == S_IFLNK)
        } catch {
            throw UpdateFailure(path, errno: error.rawValue)
        }
    }

    /// Gives `to` the attributes of `from` (the bundle folder itself).
    static func copyFolderAttributes(from: Int32, to: Int32, path: String) throws(UpdateFailure) {
        var status = stat()
        guard fstat(from, &status) == 0 else { throw UpdateFailure(path, errno: errno) }
        try copyAttributes(status, from: from, to: to, path: path)
    }

    static func open(_ folder: Int32, _ name: [CChar], _ flags: Int32, path: String) throws(UpdateFailure) -> Int32 {
        let fd = openat(folder, name, flags | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw UpdateFailure(path, errno: errno) }
        return fd
    }

    /// The names in a folder (without "." and ".."), read through a
    /// duplicate of its descriptor, as raw NUL-terminated bytes (names
    /// need not be UTF-8), sorted so that copies are reproducible.
    static func names(in folder: Int32, path: String) throws(UpdateFailure) -> [[CChar]] {
        let fd = openat(folder, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw UpdateFailure(path, errno: errno) }
        guard let stream = fdopendir(fd) else {
            close(fd)
            throw UpdateFailure(path, errno: errno)
        }
        defer { closedir(stream) }
        var names: [[CChar]] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { Array(UnsafeBufferPointer(start: $0, count: strlen($0) + 1)) }
            }
            if name != [46, 0] && name != [46, 46, 0] { names.append(name) }
        }
        return names.sorted { $0.lexicographicallyPrecedes($1) }
    }
}

/// Why an update stopped: the path (relative to the bundle or container)
/// and the system's reason.
public struct UpdateFailure: Error, CustomStringConvertible {
    public var description: String
    init(_ path: String, errno code: Int32) {
        description = "\(path): \(String(cString: strerror(code)))"
    }
    init(_ description: String) {
        self.description = description
    }
}
