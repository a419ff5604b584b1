/// E1 and E2: whether a symbolic link's target stays inside the container,
/// decided lexically, as the contract says: no file system is looked at.
///
/// A relative target is joined to the folder that holds the link; an absolute
/// one is taken as it is. Then `.` and `..` are folded and empty components
/// (from `//` or a trailing `/`) dropped. A relative target is inside when it
/// never climbs above the container root; an absolute one when it lies at or
/// under the mountpoint (iOS apps store absolute paths into their own
/// container, so those must work).
///
/// The driver asks after `SandboxPolicy.decide`, so that a symlink in the
/// bundle or the Inbox fails as those zones say (EROFS, EPERM) whatever its target.
public enum EscapeCheck {
    /// E1: how creating a symbolic link that points outside fails.
    public static let escapingSymlinkDenial = Verdict.deny(.notPermitted, .fileWriteCreate)
    /// E2: how readlink of a link that already points outside fails, so that
    /// the kernel never follows it out.
    public static let escapingReadlinkDenial = Verdict.deny(.notPermitted, .fileReadData)

    /// The target's components relative to the container root when it stays
    /// inside, or nil when it escapes.
    ///
    /// - Parameters:
    ///   - target: the link's target, as given to symlink(2) or read from the backing link.
    ///   - linkFolder: the folder holding the link, as components relative to the container root.
    ///   - mountpoint: the absolute mountpoint path ("/" and a trailing "/" are fine).
    ///
    /// `..` at the container root leaves the container, even if a later
    /// component would come back in: what lies above the root is not known
    /// here. An empty target names no place and is not inside (the kernel
    /// refuses such links with ENOENT anyway).
    public static func resolveInside(target: String, linkFolder: [String], mountpoint: String) -> [String]? {
        guard let first = target.utf8.first else { return nil }
        if first == UInt8(ascii: "/") {
            // Above "/" there is nothing: "/.." is "/", as the kernel has it.
            let path = fold(components(of: target), climbingAboveTopIsAllowed: true)!
            let mount = fold(components(of: mountpoint), climbingAboveTopIsAllowed: true)!
            guard path.count >= mount.count,
                  zip(path, mount).allSatisfy({ $0.hasSameBytes(as: $1) }) else { return nil }
            return Array(path.dropFirst(mount.count))
        }
        return fold(linkFolder + components(of: target), climbingAboveTopIsAllowed: false)
    }

    private static func components(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
    }

    /// Folds "." and ".." (and drops empty names). Returns nil when a ".."
    /// climbs above the top and that is not allowed.
    private static func fold(_ names: [String], climbingAboveTopIsAllowed: Bool) -> [String]? {
        var folded: [String] = []
        folded.reserveCapacity(names.count)
        for name in names {
            switch name {
            case "", ".":
                continue
            case "..":
                if folded.isEmpty {
                    if climbingAboveTopIsAllowed { continue }
                    return nil
                }
                folded.removeLast()
            default:
                folded.append(name)
            }
        }
        return folded
    }
}
