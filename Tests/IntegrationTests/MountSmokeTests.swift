import Foundation
import Glibc
import Testing

/// The first thing to prove: the driver mounts, passes data through and
/// unmounts cleanly.
@Suite("Mount smoke")
struct MountSmokeTests {
    @Test("A file written through the mount is in the backing directory, byte for byte")
    func writeThrough() throws {
        try withMountedContainer { mounted in
            let dir = try mounted.scratch()
            let text = "hello through FUSE\n"
            try text.write(toFile: dir + "/a.txt", atomically: false, encoding: .utf8)
            let relative = String(dir.dropFirst(mounted.mountpoint.count + 1)) + "/a.txt"
            let backingText = try String(contentsOfFile: mounted.backingPath(relative), encoding: .utf8)
            #expect(backingText == text)
            #expect(try String(contentsOfFile: dir + "/a.txt", encoding: .utf8) == text)
        }
    }
}
