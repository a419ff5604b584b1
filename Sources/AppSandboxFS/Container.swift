import BackingStore
import CLinux
import Foundation
import Glibc
import POSIXHelpers
import SandboxPolicy
import SystemPackage

/// A container's backing directory: what it must hold, laying it out, and
/// emptying its tmp.
public struct Container: Sendable {
    public let backing: String
    public let layout: ContainerLayout

    public init(backing: String, layout: ContainerLayout) {
        self.backing = backing
        self.layout = layout
    }

    /// What is missing for `backing` to be a container, as relative paths
    /// (empty when it is one). The bundle is not needed when it comes from
    /// elsewhere (`mount --bundle`).
    public func missingParts(bundleElsewhere: Bool = false) -> [String] {
        var required = ContainerLayout.requiredFolders
        if !bundleElsewhere { required.insert(layout.bundleName, at: 0) }
        return required.filter { !isFolder(backing + "/" + $0) }
    }

    /// Creates the backing directory and whatever folders it lacks. With
    /// `bundleFrom`, the bundle's contents are copied in as U1 says
    /// (`BundleCopier`: what a bundle may hold, owned by the container's
    /// owner); what was left out is returned. A bundle without Info.plist
    /// gets a minimal one.
    ///
    /// The path to the backing directory's parent may go through links (the
    /// user named it); from there on everything is relative to descriptors
    /// and never follows a link, so whoever can write that parent cannot
    /// redirect the folders made here elsewhere (docs/security.md).
    @discardableResult
    public func create(bundleFrom: String? = nil, withBundle: Bool = true) throws -> DroppedPrivileges {
        // Check everything first, so that a refusal changes nothing.
        if let bundleFrom, !isFolder(bundleFrom) {
            throw ContainerError("bundle \(bundleFrom): " + (Self.exists(bundleFrom) ? "not a folder" : "no such folder"))
        }
        if Self.exists(backing) && !isFolder(backing) {
            throw ContainerError("\(backing): not a folder")
        }
        let parent = (backing as NSString).deletingLastPathComponent
        if !Self.exists(backing), !isFolder(parent) {
            throw ContainerError("\(backing): cannot be created: \(parent) " + (Self.exists(parent) ? "is not a folder" : "does not exist"))
        }
        let parentFD = open(parent.isEmpty ? "/" : parent, Int32(asfs_O_PATH) | O_DIRECTORY | O_CLOEXEC)
        guard parentFD >= 0 else { throw ContainerError("\(parent): \(errorText(errno))") }
        defer { close(parentFD) }
        let root = try Self.makeFolder((backing as NSString).lastPathComponent, in: parentFD, path: backing)
        defer { close(root) }
        return try Self.layOut(in: FileDescriptor(rawValue: root), path: backing, layout: layout, bundleFrom: bundleFrom,
                               withBundle: withBundle)
    }

    /// Makes the container's folders (and, with `withBundle`, its bundle)
    /// inside the folder open as `root`, whose path `path` is only for
    /// messages: every step is relative to a descriptor and follows no link.
    /// With `bundleFrom`, the bundle is copied in as U1 says, owned by
    /// `bundleOwner` (default: the owner of `root`); returns what the copy
    /// left out.
    @discardableResult
    public static func layOut(in root: FileDescriptor, path: String, layout: ContainerLayout,
                              bundleFrom: String? = nil, bundleOwner: (uid: uid_t, gid: gid_t)? = nil,
                              withBundle: Bool = true) throws -> DroppedPrivileges {
        let root = root.rawValue
        for folder in ContainerLayout.requiredFolders {
            close(try openFolder(folder, in: root, path: path, create: true))
        }
        guard withBundle else { return DroppedPrivileges() }
        let bundlePath = path + "/" + layout.bundleName
        let bundle = try makeFolder(layout.bundleName, in: root, path: bundlePath)
        defer { close(bundle) }
        var leftOut = DroppedPrivileges()
        if let bundleFrom {
            // The one copier of bundles (U1), never `cp -a` as root.
            let source = open(bundleFrom, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard source >= 0 else { throw ContainerError("bundle \(bundleFrom): \(errorText(errno))") }
            defer { close(source) }
            var rootStatus = stat()
            guard fstat(root, &rootStatus) == 0 else { throw ContainerError("\(path): \(errorText(errno))") }
            let owner = bundleOwner ?? (rootStatus.st_uid, rootStatus.st_gid)
            var copier = BundleCopier(owner: owner.uid, group: owner.gid)
            do { try copier.copyContents(of: source, into: bundle, path: bundleFrom) } catch {
                throw ContainerError("bundle \(bundleFrom): copying it failed: \(error)")
            }
            leftOut = copier.leftOut
        }
        var status = stat()
        guard fstatat(bundle, "Info.plist", &status, AT_SYMLINK_NOFOLLOW) != 0 else { return leftOut }
        let plist = openat(bundle, "Info.plist", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard plist >= 0 else {
            throw ContainerError("\(bundlePath)/Info.plist: cannot be written: \(errorText(errno))")
        }
        defer { close(plist) }
        let bytes = Array(infoPlist(appName: layout.appName).utf8)
        guard bytes.withUnsafeBytes({ write(plist, $0.baseAddress, $0.count) }) == bytes.count else {
            throw ContainerError("\(bundlePath)/Info.plist: cannot be written: \(errorText(errno))")
        }
        return leftOut
    }

    /// mkdirat that accepts an existing folder, then opens it without
    /// following a link: a descriptor of a folder, or an error naming `path`.
    static func makeFolder(_ name: String, in folder: Int32, path: String) throws -> Int32 {
        if mkdirat(folder, name, 0o755) != 0 && errno != EEXIST {
            throw ContainerError("\(path): \(errorText(errno))")
        }
        let fd = openat(folder, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno == ELOOP ? ENOTDIR : errno
            throw ContainerError("\(path): \(errorText(code))")
        }
        return fd
    }

    /// Opens the folder at a relative path below `folder`, one name at a
    /// time without following a link, making the missing ones with `create`.
    static func openFolder(_ path: String, in folder: Int32, path shown: String, create: Bool = false) throws -> Int32 {
        var current = dup(folder)
        guard current >= 0 else { throw ContainerError("\(shown): \(errorText(errno))") }
        var built = shown
        for part in path.split(separator: "/") {
            built += "/" + part
            let next: Int32
            if create {
                do { next = try makeFolder(String(part), in: current, path: built) } catch {
                    close(current)
                    throw error
                }
            } else {
                next = openat(current, String(part), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                if next < 0 {
                    let code = errno == ELOOP ? ENOTDIR : errno
                    close(current)
                    throw ContainerError("\(built): \(errorText(code))")
                }
            }
            close(current)
            current = next
        }
        return current
    }

    static func exists(_ path: String) -> Bool {
        var s = stat()
        return lstat(path, &s) == 0
    }

    /// Whether the backing file system stores `user.` extended attributes
    /// (X6: without them every xattr call through the mount answers ENOTSUP).
    public func supportsUserXattrs() -> Bool {
        // Reading an attribute that is not there changes nothing: ENODATA
        // means the namespace works, ENOTSUP that it does not.
        let probe = XattrNames.reservedPrefix + "probe"
        var byte: UInt8 = 0
        guard asfs_lgetxattr(backing + "/Documents", probe, &byte, 1) < 0 else { return true }
        return errno != ENOTSUP && errno != EOPNOTSUPP
    }

    static func infoPlist(appName: String) -> String {
        let escaped = appName.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        let identifier = "com.example." + appName.filter { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>CFBundleExecutable</key>
            \t<string>\(escaped)</string>
            \t<key>CFBundleIdentifier</key>
            \t<string>\(identifier)</string>
            \t<key>CFBundleName</key>
            \t<string>\(escaped)</string>
            \t<key>CFBundlePackageType</key>
            \t<string>APPL</string>
            </dict>
            </plist>

            """
    }
}

public struct ContainerError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
