// The Linux calls and constants that Swift's Glibc module does not show
// (it is built without _GNU_SOURCE, and <sys/xattr.h> is not in it).
// The functions are looked up in the C library at run time with dlsym;
// the constants are the values from the Linux UAPI headers (x86_64 and
// arm64 agree on all of them).

import Glibc

// MARK: - Constants

let O_PATH_: Int32 = 0o10000000
let O_TMPFILE_: Int32 = 0o20000000 | O_DIRECTORY
let O_NOATIME_: Int32 = 0o1000000
#if arch(arm64)
let O_DIRECT_: Int32 = 0o200000
#else
let O_DIRECT_: Int32 = 0o40000
#endif

let SEEK_DATA_: Int32 = 3
let SEEK_HOLE_: Int32 = 4

let F_OFD_GETLK_: Int32 = 36
let F_OFD_SETLK_: Int32 = 37
let F_OFD_SETLKW_: Int32 = 38

let RENAME_NOREPLACE_: UInt32 = 1
let RENAME_EXCHANGE_: UInt32 = 2
let RENAME_WHITEOUT_: UInt32 = 4

let UTIME_NOW_: Int = (1 << 30) - 1
let UTIME_OMIT_: Int = (1 << 30) - 2

let FALLOC_FL_KEEP_SIZE_: Int32 = 0x01
let FALLOC_FL_PUNCH_HOLE_: Int32 = 0x02
let FALLOC_FL_COLLAPSE_RANGE_: Int32 = 0x08
let FALLOC_FL_ZERO_RANGE_: Int32 = 0x10
let FALLOC_FL_INSERT_RANGE_: Int32 = 0x20

let XATTR_CREATE_: Int32 = 1
let XATTR_REPLACE_: Int32 = 2

// MARK: - Functions found with dlsym

/// Looks a C library function up by name; the program cannot run without it.
private func libc<T>(_ name: String, as type: T.Type) -> T {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
        fatalError("fsprobe: the C library has no \(name)")
    }
    return unsafeBitCast(symbol, to: type)
}

typealias CPath = UnsafePointer<CChar>

enum Linux {
    static let renameat2 = libc("renameat2", as: (@convention(c) (Int32, CPath, Int32, CPath, UInt32) -> Int32).self)
    static let copyFileRange = libc("copy_file_range", as: (@convention(c) (
        Int32, UnsafeMutablePointer<Int64>?, Int32, UnsafeMutablePointer<Int64>?, Int, UInt32) -> Int).self)
    static let fallocate = libc("fallocate", as: (@convention(c) (Int32, Int32, Int64, Int64) -> Int32).self)

    typealias SetX = @convention(c) (CPath, CPath, UnsafeRawPointer?, Int, Int32) -> Int32
    typealias FSetX = @convention(c) (Int32, CPath, UnsafeRawPointer?, Int, Int32) -> Int32
    typealias GetX = @convention(c) (CPath, CPath, UnsafeMutableRawPointer?, Int) -> Int
    typealias FGetX = @convention(c) (Int32, CPath, UnsafeMutableRawPointer?, Int) -> Int
    typealias ListX = @convention(c) (CPath, UnsafeMutablePointer<CChar>?, Int) -> Int
    typealias FListX = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int
    typealias RemoveX = @convention(c) (CPath, CPath) -> Int32
    typealias FRemoveX = @convention(c) (Int32, CPath) -> Int32

    static let setxattr = libc("setxattr", as: SetX.self)
    static let lsetxattr = libc("lsetxattr", as: SetX.self)
    static let fsetxattr = libc("fsetxattr", as: FSetX.self)
    static let getxattr = libc("getxattr", as: GetX.self)
    static let lgetxattr = libc("lgetxattr", as: GetX.self)
    static let fgetxattr = libc("fgetxattr", as: FGetX.self)
    static let listxattr = libc("listxattr", as: ListX.self)
    static let llistxattr = libc("llistxattr", as: ListX.self)
    static let flistxattr = libc("flistxattr", as: FListX.self)
    static let removexattr = libc("removexattr", as: RemoveX.self)
    static let lremovexattr = libc("lremovexattr", as: RemoveX.self)
    static let fremovexattr = libc("fremovexattr", as: FRemoveX.self)
}
