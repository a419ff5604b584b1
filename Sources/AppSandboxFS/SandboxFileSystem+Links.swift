import BackingStore
import FuseKit
import Glibc
import MountInfo
import SystemPackage
import SandboxPolicy

// E1 and E2: where a symbolic link leads, resolved as the kernel will
// resolve it, following the container's own links through the backing store.
extension SandboxFileSystem {
    /// `.allow` when `target`, held by a link in `folder`, stays inside the
    /// container; else `denial`.
    func escapeVerdict(target: [UInt8], inFolder folder: Node, denial: Verdict) -> Verdict {
        let linkFolder = nodes.components(of: folder)
        guard let inside = EscapeCheck.resolve(target: target, linkFolder: linkFolder,
                                               mountpoint: configuration.mountpoint,
                                               readLink: { linkTarget(at: $0) }) else { return denial }
        // On a device a link leads within its own container, or from a data
        // container into its app's bundle and groups (A6): what the app
        // owns is read from the device's metadata only when needed.
        if nodes.layout.isDevice {
            let allowed = EscapeCheck.deviceLinkAllowed(from: DeviceContainer(linkFolder), to: DeviceContainer(inside.components)) { dataUUID in
                try? nodes.root.withFD { (root) throws(Errno) in
                    deviceOwners.owned(dataUUID: dataUUID, root: root.rawValue, path: configuration.backing)
                }
            }
            guard allowed else { return denial }
        }
        return inside.throughMountpointPath && !mountpointPathLeadsHere() ? denial : .allow
    }

    /// Whether the mountpoint's path, as text, still leads to this mount:
    /// the mount table lists this mount (the device it had when it was
    /// made) at exactly that path, and no mount listed after it covers the
    /// path or a folder above it. An absolute target is judged by that
    /// text (E1), and whoever can rename a folder above the mountpoint, or
    /// re-point a link in its path, could otherwise lead such targets
    /// anywhere. The table gives the kernel's own path of the mount, which
    /// holds no link: a mountpoint named through a link (which `mount`
    /// resolves) fails here. Read from the table, not by walking the path:
    /// a walk through someone else's FUSE mount above could hang this
    /// thread. A rename between this answer and the kernel's walk of the
    /// target is not covered (docs/security.md).
    func mountpointPathLeadsHere() -> Bool {
        guard let device = mountedDevice.withLock({ $0 }) else { return false }
        let mountpoint = configuration.mountpoint
        let entries = MountTable.entries()
        guard let index = entries.firstIndex(where: { $0.device == device && $0.mountpoint == mountpoint }) else { return false }
        return !entries[(index + 1)...].contains { entry in
            mountpoint == entry.mountpoint || mountpoint.hasPrefix(entry.mountpoint == "/" ? "/" : entry.mountpoint + "/")
        }
    }

    /// The target of the symbolic link at a container path, or nil when
    /// there is none. Walks from the root descriptor one name at a time,
    /// never following a link (E3); the bundle shown from elsewhere
    /// (`--bundle`) is entered through its own descriptor.
    func linkTarget(at path: [[UInt8]]) -> [UInt8]? {
        guard let last = path.last else { return nil }
        if path.count == 1 && bundleRoot != nil && last == bundleName { return nil }
        return try? nodes.root.withFD { (rootFD) throws(Errno) -> [UInt8]? in
            var opened: [FileDescriptor] = []
            defer { for fd in opened { Backing.close(fd) } }
            var folder = rootFD
            for (depth, name) in path.dropLast().enumerated() {
                let fd: FileDescriptor
                if depth == 0, let bundleRoot, name == bundleName {
                    fd = try Backing.openPath(in: bundleRoot, ".")
                } else {
                    fd = try withCName(name) { (cName) throws(Errno) in try Backing.openPath(in: folder, cName) }
                }
                opened.append(fd)
                folder = fd
            }
            let at = folder
            return try withCName(last) { (cName) throws(Errno) in Backing.linkTarget(in: at, cName) }
        }
    }
}

/// Runs `body` with a name's bytes as a C string.
func withCName<T>(_ name: [UInt8], _ body: (UnsafePointer<CChar>) throws(Errno) -> T) throws(Errno) -> T {
    let terminated = name + [0]
    let result = terminated.withUnsafeBytes { bytes in
        Result { () throws(Errno) in try body(bytes.baseAddress!.assumingMemoryBound(to: CChar.self)) }
    }
    return try result.get()
}
