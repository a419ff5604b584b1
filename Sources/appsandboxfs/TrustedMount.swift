import DriverRuntime
import Glibc
import MountInfo

extension MountEntry {
    /// The backing directory of this container mount, when its mount-table
    /// line can be believed. The line's type and source (the fsname) are
    /// whatever the mounter passed: a user who mounts any FUSE file system
    /// as "fuse.appsandboxfs" names any folder as its backing directory, and
    /// a verb run as root would then read or write that folder. So the
    /// mount must be root's or this user's (the kernel's user_id), and where
    /// the driver's status record is readable, its device and backing
    /// directory must be the line's.
    func trustedBacking() throws -> String {
        // Unreadable records check nothing (the owner check still holds);
        // the verb that needs them says so itself.
        try trustedBacking(records: (try? StatusFile.recordsOrFailure()) ?? [])
    }

    /// The same, against records already read (`run --confine` checks
    /// every container line with one reading).
    func trustedBacking(records: [(record: MountRecord, alive: Bool)]) throws -> String {
        guard isContainer else { throw Failure("\(mountpoint): a mount point of \(fsType), not of a container") }
        if let owner = mountedBy, owner != 0, owner != geteuid() {
            throw Failure("\(mountpoint): mounted by uid \(owner), not by this user or root: its backing directory (\(source)) is not trusted")
        }
        let records = records.filter { $0.alive && $0.record.mountpoint == mountpoint }
        if !records.isEmpty, !records.contains(where: { matches($0.record) }) {
            throw Failure("\(mountpoint): the mount table's line (\(source), device \(device)) does not match its driver's status record: not trusted")
        }
        return source
    }

    /// Whether `record` describes this mount (same backing directory, and
    /// the same device when the record has one).
    func matches(_ record: MountRecord) -> Bool {
        guard record.backing == source else { return false }
        guard let recorded = record.device, let ours = deviceNumber else { return true }
        return recorded == ours
    }
}
