import Glibc

/// What `status --json` says about a `--capacity` mount's disk (Q4): its
/// size and, from statfs through the mount (the driver's own count), the
/// space used and free.
struct CapacityUse: Encodable {
    var size: Int64
    var used: Int64
    var free: Int64

    static func measure(_ mountpoint: String, size: Int64) -> CapacityUse? {
        var result = statvfs()
        guard statvfs(mountpoint, &result) == 0 else { return nil }
        let unit = Int64(result.f_frsize)
        let free = Int64(result.f_bavail) * unit
        return CapacityUse(size: size, used: size - Int64(result.f_bfree) * unit, free: free)
    }
}
