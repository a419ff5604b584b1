import Glibc

/// The name of an entry readdir(3) returned, as bytes. Read through a
/// pointer up to its NUL: a dirent is only as long as its name, so copying
/// the whole 256-byte `d_name` field (`withUnsafeBytes(of:)` of the tuple)
/// reads past the end of the last entry in the C library's buffer
/// (AddressSanitizer: heap-buffer-overflow).
public func directoryEntryName(_ entry: UnsafeMutablePointer<dirent>) -> [UInt8] {
    withUnsafePointer(to: &entry.pointee.d_name) { field in
        field.withMemoryRebound(to: CChar.self, capacity: 256) { name in
            UnsafeRawBufferPointer(start: name, count: strlen(name)).map { $0 }
        }
    }
}

/// The names in an open directory stream as text, "." and ".." left out,
/// in readdir(3)'s order; closes the stream.
public func directoryNames(closing stream: OpaquePointer) -> [String] {
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
        let name = String(decoding: directoryEntryName(entry), as: UTF8.self)
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}
