import Foundation

/// A path the user gave, made absolute against the current folder and
/// tidied (`.`, `..`, repeated slashes): the driver works from /.
func absolutePath(_ path: String) -> String {
    if path.hasPrefix("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
    return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(path).standardizedFileURL.path
}
