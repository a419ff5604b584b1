import BackingStore
import CLinux
import Foundation
import Glibc
import SandboxPolicy
import Spawning

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
        return required.filter { !Self.isFolder(backing + "/" + $0) }
    }

    /// Creates the backing directory and whatever folders it lacks. With
    /// `bundleFrom`, the bundle's contents are copied in (modes, times and
    /// attributes kept); a bundle without Info.plist gets a minimal one.
    public func create(bundleFrom: String? = nil, withBundle: Bool = true) throws {
        // Check everything first, so that a refusal changes nothing.
        if let bundleFrom, !Self.isFolder(bundleFrom) {
            throw ContainerError("bundle \(bundleFrom): " + (Self.exists(bundleFrom) ? "not a folder" : "no such folder"))
        }
        if Self.exists(backing) && !Self.isFolder(backing) {
            throw ContainerError("\(backing): not a folder")
        }
        let parent = (backing as NSString).deletingLastPathComponent
        if !Self.exists(backing), !Self.isFolder(parent) {
            throw ContainerError("\(backing): cannot be created: \(parent) " + (Self.exists(parent) ? "is not a folder" : "does not exist"))
        }
        try Self.makeFolder(backing)
        for folder in ContainerLayout.requiredFolders {
            try Self.makeFolder(backing + "/" + folder)
        }
        guard withBundle else { return }
        let bundle = backing + "/" + layout.bundleName
        try Self.makeFolder(bundle)
        if let bundleFrom {
            let status = runCommand("/bin/cp", ["-a", "--", bundleFrom + "/.", bundle + "/"])
            guard status == 0 else { throw ContainerError("bundle \(bundleFrom): copying it failed (cp exited with \(status))") }
        }
        let plist = bundle + "/Info.plist"
        if !Self.exists(plist) {
            do {
                try Self.infoPlist(appName: layout.appName).write(toFile: plist, atomically: true, encoding: .utf8)
            } catch {
                throw ContainerError("\(plist): cannot be written")
            }
        }
    }

    /// mkdir that accepts an existing folder and names the path in its error.
    static func makeFolder(_ path: String) throws {
        if mkdir(path, 0o755) == 0 || (errno == EEXIST && isFolder(path)) { return }
        let code = errno == EEXIST ? ENOTDIR : errno
        throw ContainerError("\(path): \(String(cString: strerror(code)))")
    }

    static func exists(_ path: String) -> Bool {
        var s = stat()
        return lstat(path, &s) == 0
    }

    /// Empties tmp (T2) safely (T3). Returns what could not be removed.
    public func clearTmp() -> [TreeRemover.Failure] {
        TreeRemover.removeContents(ofFolderAt: backing + "/tmp")
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

    static func isFolder(_ path: String) -> Bool {
        var s = stat()
        return lstat(path, &s) == 0 && s.st_mode & S_IFMT == S_IFDIR
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

/// Runs a program and returns its exit status.
func runCommand(_ path: String, _ arguments: [String]) -> Int32 {
    (try? ChildProcess.start([path] + arguments).wait().code) ?? 127
}
