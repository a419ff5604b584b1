#if !canImport(Darwin)
import Foundation

/// Extended attributes on Linux, by path (symbolic links followed, as
/// Foundation's calls do). Swift's Glibc module does not show
/// <sys/xattr.h>, so the C library's getxattr, setxattr and removexattr
/// are looked up by name once. Attribute names pass to the kernel unchanged: an appsandboxfs
/// container takes Apple's names (`com.apple.…`, `NSFileProtectionKey`); an
/// ordinary Linux file system refuses them (ENOTSUP).
enum ExtendedAttributes {
    private typealias Get = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeMutableRawPointer?, Int) -> Int
    private typealias Set = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32
    private typealias Remove = @convention(c) (UnsafePointer<CChar>, UnsafePointer<CChar>) -> Int32
    private typealias SetByDescriptor = @convention(c) (Int32, UnsafePointer<CChar>, UnsafeRawPointer?, Int, Int32) -> Int32

    private static let getxattr = function("getxattr", as: Get.self)
    private static let setxattr = function("setxattr", as: Set.self)
    private static let removexattr = function("removexattr", as: Remove.self)
    private static let fsetxattr = function("fsetxattr", as: SetByDescriptor.self)

    private static func function<T>(_ name: String, as type: T.Type) -> T {
        // RTLD_DEFAULT: every glibc and musl has these since Linux 2.4.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("ContainerFiles: the C library has no \(name)")
        }
        return unsafeBitCast(symbol, to: type)
    }

    /// The attribute's value; nil when the file has none (or the file
    /// system keeps no attributes).
    static func value(_ name: String, of url: URL) throws -> [UInt8]? {
        let path = url.path
        while true {
            let size = getxattr(path, name, nil, 0)
            if size < 0 { return try absentOrThrow(errno, path, reading: true) }
            var buffer = [UInt8](repeating: 0, count: size)
            let count = buffer.withUnsafeMutableBytes { getxattr(path, name, $0.baseAddress, size) }
            if count >= 0 { return Array(buffer[0..<count]) }
            if errno != ERANGE { return try absentOrThrow(errno, path, reading: true) }
            // It grew in between: measure again.
        }
    }

    static func set(_ name: String, to value: [UInt8], of url: URL) throws {
        let result = value.withUnsafeBytes { setxattr(url.path, name, $0.baseAddress, $0.count, 0) }
        if result != 0 { throw cocoaError(errno, url.path, reading: false) }
    }

    /// Sets the attribute of the open file `descriptor`; errno on failure.
    static func set(_ name: String, to value: [UInt8], descriptor: Int32) -> Int32? {
        let result = value.withUnsafeBytes { fsetxattr(descriptor, name, $0.baseAddress, $0.count, 0) }
        return result == 0 ? nil : errno
    }

    /// Removes the attribute; nothing to do when it is absent (or the
    /// file system keeps no attributes).
    static func remove(_ name: String, of url: URL) throws {
        if removexattr(url.path, name) != 0 && errno != ENODATA && errno != ENOTSUP {
            throw cocoaError(errno, url.path, reading: false)
        }
    }

    private static func absentOrThrow(_ code: Int32, _ path: String, reading: Bool) throws -> [UInt8]? {
        if code == ENODATA || code == ENOTSUP { return nil }
        throw cocoaError(code, path, reading: reading)
    }

    /// The error Foundation throws for `code`: on a device a sandbox
    /// denial (EPERM) is 513 when writing and 257 when reading.
    static func cocoaError(_ code: Int32, _ path: String, reading: Bool) -> CocoaError {
        let kind: CocoaError.Code = switch (code, reading) {
        case (ENOENT, true): .fileReadNoSuchFile
        case (ENOENT, false): .fileNoSuchFile
        case (EPERM, true), (EACCES, true): .fileReadNoPermission
        case (EPERM, false), (EACCES, false): .fileWriteNoPermission
        case (EROFS, false): .fileWriteVolumeReadOnly
        case (EEXIST, false): .fileWriteFileExists
        case (ENOSPC, false), (EDQUOT, false): .fileWriteOutOfSpace
        case (_, true): .fileReadUnknown
        case (_, false): .fileWriteUnknown
        }
        var userInfo: [String: Any] = [NSFilePathErrorKey: path]
        if let posix = POSIXErrorCode(rawValue: code) { userInfo[NSUnderlyingErrorKey] = POSIXError(posix) }
        return CocoaError(kind, userInfo: userInfo)
    }
}
#endif
