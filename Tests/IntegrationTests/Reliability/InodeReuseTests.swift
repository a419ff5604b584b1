// Issue 11, item 5: a file deleted in the backing folder while the kernel
// still holds its node, its inode number taken by a new file at once (ext4
// does), the new file looked up, then the old name used. The node the
// kernel holds must stay a valid object that reaches only the old file:
// never freed under the kernel (a use-after-free that killed the driver),
// never mistaken for the new file. Run it against the ASan driver too
// (APPSANDBOXFS_BIN=.build-asan/debug/appsandboxfs).

import Glibc
import Testing

@Suite("Reliability: an inode number reused behind the mount")
struct InodeReuseTests {
    @Test("A deleted file's inode reused by a new file: the old name never crashes the driver nor reaches the new file")
    func reusedInodeNumber() throws {
        // One cached descriptor: the old node's is closed by the next
        // lookups, so its inode can be freed and its number reused.
        try withRulesContainer(extraArguments: ["--descriptor-cache", "1"]) { m in
            let dir = m.documents + "/reuse"
            #expect(RulesSys.mkdir(dir) == 0)
            var reused = 0
            for round in 0..<12 {
                let old = dir + "/old\(round)"
                try writeFile(old, "old \(round)\n")
                guard case .success(let oldStat) = RulesSys.stat(old) else { Issue.record("stat \(old)"); continue }
                for k in 0..<3 { try writeFile(dir + "/other\(round)-\(k)", "other\n") }
                #expect(unlink(m.backingPath("Documents/reuse/old\(round)")) == 0)
                // New files made in the backing folder until one takes the number.
                var taker: String?
                for k in 0..<6 {
                    let name = "new\(round)-\(k)"
                    try writeFile(m.backingPath("Documents/reuse/" + name), "new \(round) \(k)\n")
                    if case .success(let s) = RulesSys.lstat(m.backingPath("Documents/reuse/" + name)),
                       s.st_ino == oldStat.st_ino {
                        taker = name
                        break
                    }
                }
                guard let taker else { continue }
                reused += 1
                // The new file through the mount: a lookup of the reused number.
                #expect(readFileText(dir + "/" + taker).hasPrefix("new \(round)"))
                // More nodes, which could take a freed node's memory.
                for k in 0..<3 { _ = RulesSys.stat(dir + "/other\(round)-\(k)") }
                // The old name, still in the kernel's cache: reaches nothing.
                let fd = Glibc.open(old, O_RDONLY)
                if fd >= 0 {
                    var buffer = [UInt8](repeating: 0, count: 64)
                    let count = read(fd, &buffer, buffer.count)
                    close(fd)
                    let text = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
                    #expect(!text.hasPrefix("new"), "the old name reached the new file: \(text)")
                    #expect(!text.hasPrefix("other"), "the old name reached another file: \(text)")
                }
                #expect(RulesSys.chmod(old, 0o600) != 0 || readFileText(dir + "/" + taker).hasPrefix("new"))
                #expect(m.isMounted, "the driver died in round \(round)")
                if !m.isMounted { return }
            }
            #expect(reused > 0, "ext4 reused no inode number: the case was not reproduced")
        }
    }
}
