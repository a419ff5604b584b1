import Glibc
import SystemPackage

/// A path the user gave, made absolute against the current folder and
/// tidied lexically (`.`, `..`, repeated and trailing slashes), as
/// Foundation's `standardizedFileURL` does: the driver works from /. By
/// swift-system's FilePath rather than Foundation's URL, whose first use
/// cost each command about 0.1 ms of its start.
public func absolutePath(_ path: String) -> String {
    absolutePath(path, from: currentFolder()?.string)
}

/// `path` made absolute against `folder` (when it is relative and `folder`
/// is known) and tidied lexically. The current folder is the process's: a
/// test passes its own folder here instead of changing it under every other
/// test and child process running beside it.
public func absolutePath(_ path: String, from folder: String?) -> String {
    var full = FilePath(path)
    if !full.isAbsolute, let folder { full = FilePath(folder).pushing(full) }
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
