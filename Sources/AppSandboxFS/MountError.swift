import Glibc

/// Why a mount could not start: each case names the path and the problem.
public enum MountError: Error, CustomStringConvertible {
    case backingMissing(path: String, errno: Int32)
    case denialLog(path: String, errno: Int32)
    case bundleMissing(path: String, errno: Int32)

    public var description: String {
        switch self {
        case .backingMissing(let path, let code):
            "cannot open backing directory \(path): \(String(cString: strerror(code)))"
        case .denialLog(let path, let code):
            code == ELOOP ? "cannot open denial log \(path): a symbolic link; refused"
                : "cannot open denial log \(path): \(String(cString: strerror(code)))"
        case .bundleMissing(let path, let code):
            "cannot open bundle \(path): \(String(cString: strerror(code)))"
        }
    }
}
