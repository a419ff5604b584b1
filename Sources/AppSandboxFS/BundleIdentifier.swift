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
        let fd = openat(bundle, "Info.plist", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
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
        return identifier(inPropertyList: Data(bytes[0..<done]))
    }

    static func identifier(inPropertyList data: Data) -> String? {
        let plist = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        return (plist as? [String: Any])?["CFBundleIdentifier"] as? String
    }
}
