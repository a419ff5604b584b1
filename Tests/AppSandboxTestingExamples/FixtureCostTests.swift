// What a container's life no longer pays for (issue 29, docs/performance.md,
// "A container's life for a test fixture"): a watcher process per
// container, a mount table read split by Character. (Ten worker threads
// per mount stay: started as requests needed them, the metadata rows came
// out 4-11 % slower in paired runs.)
//
//   swift test --filter FixtureCost

@testable import AppSandboxTesting
import Foundation
import MountInfo
import POSIXHelpers
import Testing

@Suite("AppSandboxTesting: what a container's life costs", .canMountContainers, .serialized)
struct FixtureCostTests {
    /// This process's children whose command line names `word`.
    private func children(named word: String) -> [Int32] {
        let me = getpid()
        return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry in
            guard let pid = Int32(entry), let stat = readText("/proc/\(pid)/stat"),
                  let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, Int32(fields[1]) == me, fields[0] != "Z",
                  let command = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
                  String(decoding: command, as: UTF8.self).contains(word) else { return nil }
            return pid
        }
    }

    @Test("One watcher process for all of the test process's containers, in-process or not; still there after they go")
    func oneWatcher() throws {
        let first = try MountedContainer.mount(MountedContainer.Options(inProcess: true))
        let second = try MountedContainer.mount(MountedContainer.Options(inProcess: true))
        let third = try MountedContainer.mount()
        let watchers = children(named: "appsandboxfs-watcher")
        try third.unmount()
        try second.unmount()
        try first.unmount()
        // One per container before (three); one for the process now.
        #expect(watchers.count == 1, "watchers: \(watchers)")
        #expect(children(named: "appsandboxfs-watcher") == watchers)
    }

    @Test("The mount table's fields, escapes included, as the kernel writes them")
    func mountTableParse() throws {
        let table = """
            36 35 0:52 / /mnt/My\\040App rw,nosuid,nodev shared:1 - fuse.appsandboxfs /srv/a\\134b rw,user_id=0,group_id=0
            22 27 0:21 / /proc rw,relatime - proc proc rw
            bad line
            """
        let entries = MountTable.parse(table)
        #expect(entries.count == 2)
        let first = try #require(entries.first)
        #expect(first.mountID == 36 && first.device == "0:52" && first.mountpoint == "/mnt/My App")
        #expect(first.mountOptions == ["rw", "nosuid", "nodev"] && first.fsType == "fuse.appsandboxfs")
        #expect(first.source == "/srv/a\\b" && first.superOptions == ["rw", "user_id=0", "group_id=0"])
        #expect(first.isContainer && first.mountedBy == 0)
        #expect(entries.last?.mountpoint == "/proc" && entries.last?.superOptions == ["rw"])
    }
}
