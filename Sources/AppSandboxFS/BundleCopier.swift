import BackingStore
import CLinux
import Glibc
import POSIXHelpers
import SystemPackage

/// Copies a build folder into a bundle (rule U1), for every way a bundle
/// comes in: `update`, `init --bundle-from`, `restore --bundle-from`.
///
/// A build folder is untrusted input, and the copy runs as root: whoever
/// controls the folder (its owner, or a user serving it from a FUSE file
/// system of their own, which can answer anything and change it at any
/// moment) must not get anything from root through it. So the copy holds
/// regular files, folders and symbolic links only, with their contents,
/// permission bits (never set-user-ID or set-group-ID), access and
/// modification times and `user.` attributes (and attributes without a
/// namespace), all owned by the container's owner; device nodes, FIFOs,
/// sockets, set-ID bits, `security.` (file capabilities), `trusted.`,
/// `system.` and other attributes and other owners are left out, and
/// `leftOut` says where, by kind, for the verb to print. Files with
/// several links inside the tree stay linked.
///
/// How it holds against a source that changes under it: each name is
/// opened O_PATH|O_NOFOLLOW relative to its folder's descriptor, and from
/// then on only that descriptor is used: its own fstat decides what it is
/// (a name swapped for a link or a device after readdir is taken for what
/// it is then, and a link is never followed), a folder is read through
/// `openat(held, ".")`, a file reopened through /proc/self/fd (the same
/// inode; a device or FIFO is never opened at all, so no driver's open is
/// ever run). What is written depends only on the copier's rules, never on
/// what the source says of owners or set-ID bits. The destination is made
/// by the copier itself (mkdirat, O_EXCL, symlinkat) in a folder only root
/// can enter until the copy is done (`update`'s staging folder, `restore`'s,
/// a new bundle folder); each folder gets its owner and mode after its
/// contents. Folders deeper than `deepest` are refused (a file system can
/// make an endless tree).
struct BundleCopier {
    /// The container's owner, who owns everything copied.
    let owner: uid_t
    let group: gid_t
    /// Called after each entry copied: `update`'s kill points for its test.
    let afterEntry: () -> Void
    /// What the source held that was not copied, with paths relative to it.
    private(set) var leftOut = DroppedPrivileges()
    /// The first copy of each multiply linked source file, held open as
    /// O_PATH so the next names of it become links to it.
    private var firstCopies: [InodeKey: FileDescriptor] = [:]

    static let deepest = 256

    init(owner: uid_t, group: gid_t, afterEntry: @escaping () -> Void = {}) {
        self.owner = owner
        self.group = group
        self.afterEntry = afterEntry
    }

    /// Copies what the folder `source` holds into the empty folder
    /// `destination`, then gives `destination` the source folder's own
    /// mode, times and attributes, and the owner. `path` (the source's) is
    /// for messages.
    mutating func copyContents(of source: Int32, into destination: Int32, path: String) throws(UpdateFailure) {
        defer {
            for fd in firstCopies.values { Backing.close(fd) }
            firstCopies = [:]
        }
        let from = FileDescriptor(rawValue: source), to = FileDescriptor(rawValue: destination)
        let status: stat
        do { status = try Backing.stat(from) } catch { throw UpdateFailure(path, errno: error.rawValue) }
        try copyFolder(from, into: to, path: path, relative: "", depth: 0)
        try finish(status, from: from, to: to, path: path, relative: ".")
    }

    private mutating func copyFolder(_ source: FileDescriptor, into destination: FileDescriptor, path: String,
                                     relative: String, depth: Int) throws(UpdateFailure) {
        guard depth < Self.deepest else { throw UpdateFailure("\(path): more than \(Self.deepest) folders deep") }
        for name in try Self.names(in: source.rawValue, path: path) {
            let shown = Self.string(name)
            let childPath = path + "/" + shown
            let childRelative = relative.isEmpty ? shown : relative + "/" + shown
            // What the name is now, held: everything below asks this descriptor.
            let held: FileDescriptor
            do { held = try Backing.openPath(in: source, name) } catch {
                throw UpdateFailure(childPath, errno: error.rawValue)
            }
            defer { Backing.close(held) }
            let status: stat
            do { status = try Backing.stat(held) } catch { throw UpdateFailure(childPath, errno: error.rawValue) }
            switch status.st_mode & S_IFMT {
            case S_IFDIR:
                let from: FileDescriptor, to: FileDescriptor
                do {
                    try Backing.mkdir(in: destination, name, mode: 0o700)
                    from = try Backing.openDirectory(held)
                } catch { throw UpdateFailure(childPath, errno: error.rawValue) }
                defer { Backing.close(from) }
                let opened = openat(destination.rawValue, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard opened >= 0 else { throw UpdateFailure(childPath, errno: errno) }
                to = FileDescriptor(rawValue: opened)
                defer { Backing.close(to) }
                try copyFolder(from, into: to, path: childPath, relative: childRelative, depth: depth + 1)
                try finish(status, from: from, to: to, path: childPath, relative: childRelative)
            case S_IFREG:
                try copyFile(status, name, held: held, to: destination, path: childPath, relative: childRelative)
            case S_IFLNK:
                try copyLink(status, name, held: held, to: destination, path: childPath, relative: childRelative)
            default:
                // Never made, never opened (U1).
                leftOut.add(Self.kind(status.st_mode), childRelative)
            }
            afterEntry()
        }
    }

    private static func kind(_ mode: mode_t) -> DroppedPrivileges.Kind {
        switch mode & S_IFMT {
        case S_IFIFO: .fifos
        case S_IFSOCK: .sockets
        default: .deviceNodes
        }
    }

    private mutating func copyFile(_ status: stat, _ name: [CChar], held: FileDescriptor, to destination: FileDescriptor,
                                   path: String, relative: String) throws(UpdateFailure) {
        let key = InodeKey(status)
        if status.st_nlink > 1, let first = firstCopies[key] {
            do { try Backing.link(first, in: destination, name) } catch { throw UpdateFailure(path, errno: error.rawValue) }
            return
        }
        // The very file held (a regular file: fstat said so, and a file's
        // type never changes); O_NONBLOCK all the same.
        let from: FileDescriptor
        do { from = try Backing.reopen(held, flags: O_RDONLY | O_NONBLOCK) } catch {
            throw UpdateFailure(path, errno: error.rawValue)
        }
        defer { Backing.close(from) }
        var opened = stat()
        guard fstat(from.rawValue, &opened) == 0, InodeKey(opened) == key, opened.st_mode & S_IFMT == S_IFREG else {
            throw UpdateFailure(path + ": changed while it was being copied")
        }
        let to: FileDescriptor
        do { to = try Backing.create(in: destination, name, flags: O_WRONLY | O_EXCL, mode: 0o600) } catch {
            throw UpdateFailure(path, errno: error.rawValue)
        }
        defer { Backing.close(to) }
        try Self.copyData(from: from.rawValue, to: to.rawValue, size: opened.st_size, path: path)
        try finish(status, from: held, to: to, path: path, relative: relative)
        if status.st_nlink > 1 {
            do { firstCopies[key] = try Backing.openPath(in: destination, name) } catch {
                throw UpdateFailure(path, errno: error.rawValue)
            }
        }
    }

    /// A link as it is (its target is text: never followed, never checked;
    /// the sandbox judges it where it is used). Linux keeps no `user.`
    /// attributes on links: none are copied.
    private mutating func copyLink(_ status: stat, _ name: [CChar], held: FileDescriptor, to destination: FileDescriptor,
                                   path: String, relative: String) throws(UpdateFailure) {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(held.rawValue, "", &buffer, buffer.count - 1)
        guard count >= 0 else { throw UpdateFailure(path, errno: errno) }
        buffer[count] = 0
        let link: FileDescriptor
        do {
            try Backing.symlink(buffer, in: destination, name)
            link = try Backing.openPath(in: destination, name)
        } catch { throw UpdateFailure(path, errno: error.rawValue) }
        defer { Backing.close(link) }
        try setOwnerModeTimes(status, fd: link, path: path, relative: relative)
    }

    /// The data-free rest of an entry, in this order (a chown clears set-ID
    /// bits, and each change moves only the ctime): the attributes U1
    /// keeps, then owner, mode and times.
    private mutating func finish(_ status: stat, from: FileDescriptor, to: FileDescriptor, path: String,
                                 relative: String) throws(UpdateFailure) {
        // Through /proc/self/fd: the very files the descriptors hold (an
        // O_PATH one too).
        let fromPath = "/proc/self/fd/\(from.rawValue)", toPath = "/proc/self/fd/\(to.rawValue)"
        var names = [CChar](repeating: 0, count: 65536)
        var length = asfs_listxattr(fromPath, &names, names.count)
        if length < 0 {
            guard errno == ENOTSUP || errno == EOPNOTSUPP else { throw UpdateFailure(path + " (its attributes)", errno: errno) }
            length = 0
        }
        var value = [UInt8](repeating: 0, count: 65536)
        for raw in names[0..<length].split(separator: 0) {
            let name = Array(raw) + [0]
            if let kind = DroppedPrivileges.Kind(attribute: raw.map { UInt8(bitPattern: $0) }) {
                leftOut.add(kind, relative)
                continue
            }
            let size = asfs_getxattr(fromPath, name, &value, value.count)
            guard size >= 0, asfs_setxattr(toPath, name, value, size, 0) == 0 else {
                throw UpdateFailure(path + " (attribute \(Self.string(name)))", errno: errno)
            }
        }
        try setOwnerModeTimes(status, fd: to, path: path, relative: relative)
    }

    /// The container's owner, the mode without set-ID bits, the source's
    /// times; what differed from the source is noted in `leftOut`.
    private mutating func setOwnerModeTimes(_ status: stat, fd: FileDescriptor, path: String,
                                            relative: String) throws(UpdateFailure) {
        let isLink = status.st_mode & S_IFMT == S_IFLNK
        if status.st_uid != owner || status.st_gid != group { leftOut.add(.foreignOwners, relative) }
        if !isLink && status.st_mode & (S_ISUID | S_ISGID) != 0 { leftOut.add(.setID, relative) }
        do {
            try Backing.chown(fd, uid: owner, gid: group)
            if !isLink { try Backing.chmod(fd, mode: status.st_mode & 0o7777 & ~(S_ISUID | S_ISGID)) }
            try Backing.setTimes(fd, (status.st_atim, status.st_mtim), isSymlink: isLink)
        } catch {
            throw UpdateFailure(path, errno: error.rawValue)
        }
    }

    /// The file's bytes up to `size`, holes kept where the kernel reports
    /// them (SEEK_DATA). Offsets the source's file system reports are
    /// checked: each step moves forward, and nothing past `size` is read.
    private static func copyData(from: Int32, to: Int32, size: off_t, path: String) throws(UpdateFailure) {
        var offset: off_t = 0
        while offset < size {
            var data = lseek(from, offset, Int32(asfs_SEEK_DATA))
            if data < 0 && errno == ENXIO { break }  // only a hole is left
            if data < offset || data >= size { data = offset }  // no answer, or a wrong one: copy from here
            var end = lseek(from, data, Int32(asfs_SEEK_HOLE))
            if end <= data || end > size { end = size }
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

    static func string(_ raw: [CChar]) -> String {
        String(decoding: raw.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Why an update stopped: the path (relative to the bundle or container)
/// and the system's reason.
public struct UpdateFailure: Error, CustomStringConvertible {
    public var description: String
    init(_ path: String, errno code: Int32) {
        description = "\(path): \(errorText(code))"
    }
    init(_ description: String) {
        self.description = description
    }
}
