import Foundation
import Glibc

/// A path the user gave, made absolute against the current folder and
/// tidied (`.`, `..`, repeated slashes): the driver works from /.
func absolutePath(_ path: String) -> String {
    if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path).standardizedFileURL.path
}

/// `path` with every link resolved (realpath(3)); `path` itself when it
/// cannot be (it does not exist, say).
func resolvedPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}
