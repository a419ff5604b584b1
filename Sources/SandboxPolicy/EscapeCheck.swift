/// E1 and E2: whether a symbolic link's target stays inside the container,
/// resolved the way the kernel will resolve it.
///
/// A relative target starts at the folder that holds the link; an absolute
/// one at "/". Components are taken one at a time: `.` and empty ones (from
/// `//` or a trailing `/`) stay, `..` goes to the parent, a name goes down.
/// A name that is itself a symbolic link inside the container, followed by a
/// `..` later on, is followed first (its target read through `readLink`),
/// as the kernel does: `d/..` is not the link's folder when `d` points
/// elsewhere (`ln -s . d; ln -s d/d/../../../etc esc` climbs three levels,
/// not one). At most `maximumFollows` links are followed (the kernel's
/// limit, 40); more is an escape (the kernel would answer ELOOP).
///
/// A name with no `..` after it is not followed: where a link leads is
/// judged when the kernel follows that link (its own readlink is checked,
/// E2), and going down cannot climb.
///
/// A relative target is inside when it never climbs above the container
/// root; an absolute one when it ends at or under the mountpoint (iOS apps
/// store absolute paths into their own container, so those must work); the
/// part of an absolute target outside the mountpoint is folded as text, as
/// nothing is known there.
///
/// This module does no I/O: the driver gives `readLink`, which answers the
/// target of the link at a container path, or nil when there is none.
///
/// The driver asks after `SandboxPolicy.decide`, so that a symlink in the
/// bundle or the Inbox fails as those zones say (EROFS, EPERM) whatever its target.
public enum EscapeCheck {
    /// E1: how creating a symbolic link that points outside fails.
    public static let escapingSymlinkDenial = Verdict.deny(.notPermitted, .fileWriteCreate)
    /// E2: how readlink of a link that already points outside fails, so that
    /// the kernel never follows it out.
    public static let escapingReadlinkDenial = Verdict.deny(.notPermitted, .fileReadData)
    /// The kernel's limit on links followed in one path walk (MAXSYMLINKS).
    public static let maximumFollows = 40

    /// A file name as the kernel has it: bytes.
    public typealias Name = [UInt8]

    /// The target's components relative to the container root when it stays
    /// inside, or nil when it escapes. No link is followed (each name is
    /// taken as a folder).
    ///
    /// - Parameters:
    ///   - target: the link's target, as given to symlink(2) or read from the backing link.
    ///   - linkFolder: the folder holding the link, as components relative to the container root.
    ///   - mountpoint: the absolute mountpoint path ("/" and a trailing "/" are fine).
    public static func resolveInside(target: String, linkFolder: [String], mountpoint: String) -> [String]? {
        resolveInside(target: Array(target.utf8), linkFolder: linkFolder.map { Array($0.utf8) },
                      mountpoint: mountpoint, readLink: { _ in nil })?
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// The same, following links inside the container through `readLink`
    /// (given a container path, the target of the link there or nil).
    public static func resolveInside(target: Name, linkFolder: [Name], mountpoint: String,
                                     readLink: ([Name]) -> Name?) -> [Name]? {
        resolve(target: target, linkFolder: linkFolder, mountpoint: mountpoint, readLink: readLink)?.components
    }

    /// Where a target that stays inside leads.
    public struct Resolution: Equatable, Sendable {
        /// Relative to the container root.
        public var components: [Name]
        /// Whether an absolute target (the link's own, or one followed on
        /// the way) came back in through the mountpoint's path as text. The
        /// kernel walks that text from "/": it leads into the container only
        /// while the path still leads to this mount (no folder above it
        /// renamed, no link in it re-pointed), which the driver must check
        /// (E1, E2).
        public var throughMountpointPath: Bool
    }

    /// The same, with whether the mountpoint's path was relied on.
    public static func resolve(target: Name, linkFolder: [Name], mountpoint: String,
                               readLink: ([Name]) -> Name?) -> Resolution? {
        var resolver = Resolver(mount: fold(components(of: Array(mountpoint.utf8))))
        guard let components = resolver.resolve(target, from: linkFolder, readLink: readLink) else { return nil }
        return Resolution(components: components, throughMountpointPath: resolver.wentAbsolute)
    }

    private struct Resolver {
        /// The mountpoint's components.
        let mount: [Name]
        /// Where the walk is, as an absolute path.
        var path: [Name] = []
        /// Components still to take, the next one last.
        var pending: [Name] = []
        /// Whether `..` may leave the container: only in the part of an
        /// absolute target that the walk takes as text.
        var mayLeave = false
        /// Whether any target taken was absolute.
        var wentAbsolute = false
        var follows = 0

        init(mount: [Name]) {
            self.mount = mount
        }

        var isInside: Bool {
            path.count >= mount.count && zip(path, mount).allSatisfy { $0 == $1 }
        }

        mutating func resolve(_ target: Name, from linkFolder: [Name], readLink: ([Name]) -> Name?) -> [Name]? {
            path = mount + linkFolder
            guard start(target) else { return nil }
            while let name = pending.popLast() {
                if name.isEmpty || name == dot { continue }
                if name == dotDot {
                    if !mayLeave && path.count <= mount.count { return nil }
                    if path.isEmpty { continue }  // "/.." is "/"
                    path.removeLast()
                    continue
                }
                path.append(name)
                guard isInside, path.count > mount.count, pending.contains(dotDot),
                      let target = readLink(Array(path.dropFirst(mount.count))) else { continue }
                follows += 1
                guard follows <= maximumFollows else { return nil }
                path.removeLast()
                guard start(target) else { return nil }
            }
            return isInside ? Array(path.dropFirst(mount.count)) : nil
        }

        /// Puts a target's components in front of those pending; an
        /// absolute one restarts at "/". An empty target names no place
        /// (the kernel refuses such links with ENOENT).
        mutating func start(_ target: Name) -> Bool {
            guard let first = target.first else { return false }
            if first == UInt8(ascii: "/") {
                path = []
                mayLeave = true
                wentAbsolute = true
            } else {
                mayLeave = false
            }
            pending.append(contentsOf: components(of: target).reversed())
            return true
        }
    }

    private static let dot: Name = [UInt8(ascii: ".")]
    private static let dotDot: Name = [UInt8(ascii: "."), UInt8(ascii: ".")]

    private static func components(of path: Name) -> [Name] {
        path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true).map(Array.init)
    }

    /// Folds "." and ".." as text ("/.." is "/").
    private static func fold(_ names: [Name]) -> [Name] {
        var folded: [Name] = []
        for name in names where !name.isEmpty && name != dot {
            if name == dotDot {
                if !folded.isEmpty { folded.removeLast() }
            } else {
                folded.append(name)
            }
        }
        return folded
    }
}
