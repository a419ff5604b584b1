// The one process spawner (Spawning.ChildProcess) hands a child its three
// standard descriptors and those asked for, nothing else: a tool a library
// starts in someone's process (tar for a backup, fusermount3) must not hold
// that process's files open, or a file in a container stays open past its
// close and a mount stays busy.

import Foundation
import Glibc
import Spawning
import Testing

@Suite("The spawner: a child gets no descriptor it was not given")
struct SpawnDescriptorTests {
    @Test("A descriptor opened without O_CLOEXEC stays out of a child started with the default options; one handed down as 3 is there")
    func noLeakedDescriptors() throws {
        let leaky = open("/dev/null", O_RDONLY)
        try #require(leaky > 2)
        defer { close(leaky) }
        let plain = ChildProcess.run(["sh", "-c", "test -e /proc/self/fd/\(leaky) && echo open || echo closed"])
        #expect(plain.standardOutput == "closed\n", "\(plain.standardError)")

        var options = SpawnOptions()
        options.descriptors[3] = leaky
        let handed = ChildProcess.run(["sh", "-c", "test -e /proc/self/fd/3 && echo open || echo closed"], options: options)
        #expect(handed.standardOutput == "open\n", "\(handed.standardError)")
    }
}
