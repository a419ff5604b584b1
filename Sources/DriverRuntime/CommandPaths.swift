import Glibc
import SystemPackage

/// A path the user gave, made absolute against the current folder and
/// tidied lexically (`.`, `..`, repeated and trailing slashes), as
/// Foundation's `standardizedFileURL` does: the driver works from /. By
/// swift-system's FilePath rather than Foundation's URL, whose first use
/// cost each command about 0.1 ms of its start.
public func absolutePath(_ path: String) -> String {
    var full = FilePath(path)
    if !full.isAbsolute, let folder = currentFolder() { full = folder.pushing(full) }
    return full.lexicallyNormalized().string
}

/// `path` with every link resolved (realpath(3)); `path` itself when it
/// cannot be (it does not exist, say).
public func resolvedPath(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}

private func currentFolder() -> FilePath? {
    guard let folder = getcwd(nil, 0) else { return nil }
    defer { free(folder) }
    return FilePath(String(cString: folder))
}
