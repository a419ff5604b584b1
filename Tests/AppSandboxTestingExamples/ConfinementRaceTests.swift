// R2 while other containers come and go: a confined world is planned from
// the mount table as it was just before its namespace is made, so a
// container mounted in between used to come along into it, reachable by
// its path. The world now reads its own mount table again once its mounts
// are private and detaches every container but its own. Here in-process
// containers are mounted and unmounted without pause beside the confined
// runs, outside /tmp (which the world replaces), so that any that came
// along would be reachable.
//
//   swift test --filter ConfinementRace

import AppSandboxTesting
import Foundation
import Locking
import Testing

@Suite("R2 while containers come and go")
struct ConfinementRaceTests {
    @Test("R2: containers mounted while confined worlds are made never show in them",
          .enabled(if: MountedContainer.canConfine, "needs root and /dev/fuse"))
    func containersMountedMeanwhileStayOutside() throws {
        let folder = MountedContainer.confinableTemporaryDirectory
        try withMountedContainer(.init(temporaryDirectory: folder)) { container in
            let stop = Locked(false)
            let mounted = Locked(0)
            let churnEnded = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                while !stop.withLock({ $0 }) {
                    if let other = try? MountedContainer.mount(.init(temporaryDirectory: folder, inProcess: true)) {
                        mounted.withLock { $0 += 1 }
                        try? other.unmount()
                    }
                }
                churnEnded.signal()
            }
            defer {
                stop.withLock { $0 = true }
                churnEnded.wait()
            }
            // Every appsandboxfs mount the world shows whose source is not
            // this container's backing directory (its own mount and the
            // clones of its tmp on /tmp and /var/tmp have that source).
            let script = "grep ' - fuse.appsandboxfs ' /proc/self/mountinfo | grep -v ' \(container.backing) ' || true"
            var seen: [String] = []
            for _ in 0..<40 {
                let result = try container.runConfined(["sh", "-c", script])
                #expect(result.succeeded, "\(result.standardError)")
                if !result.standardOutput.isEmpty { seen.append(result.standardOutput) }
            }
            #expect(mounted.withLock { $0 } > 10, "the other containers did not come and go: \(mounted.withLock { $0 })")
            #expect(seen.isEmpty, "other containers in the confined world: \(seen)")
        }
    }
}
