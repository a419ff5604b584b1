import Foundation
import Glibc

/// The CFBundleIdentifier of a bundle's Info.plist, XML or binary (rule U2:
/// `update` refuses a bundle of another app). Read through a descriptor;
/// Foundation's PropertyListSerialization reads both formats on Linux too.
enum BundleIdentifier {
    /// The identifier in the Info.plist directly inside the folder `bundle`
    /// (a descriptor), nil when there is no such file, it is not a property
    /// list, or it names no identifier.
    static func read(inBundle bundle: Int32) -> String? {
        propertyList(named: "Info.plist", inFolder: bundle)?["CFBundleIdentifier"] as? String
    }

    /// The dictionary of the property list `name` (XML or binary) directly
    /// inside the folder `folder` (a descriptor; a link is not followed),
    /// nil when there is none (also an Info.plist, an entitlements plist).
    static func propertyList(named name: String, inFolder folder: Int32) -> [String: Any]? {
        let fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        // An Info.plist is a few kilobytes; a huge or special file is not one.
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG, status.st_size < 16 << 20 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if count <= 0 { break }
            done += count
        }
        return (try? PropertyListSerialization.propertyList(from: Data(bytes[0..<done]), options: [], format: nil)) as? [String: Any]
    }
}
