// Requests the kernel no longer sends, counted in the driver's debug log
// (libfuse's -d writes one "opcode: NAME (" line per request as it reads
// it), with the correctness each saving must keep.

import Glibc
import Testing

@Suite("Request counts")
struct RequestCountTests {
    static func requests(_ opcode: String, in log: String) -> Int {
        log.components(separatedBy: "opcode: \(opcode) (").count - 1
    }

    static func readlink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = Glibc.readlink(path, &buffer, buffer.count - 1)
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// No FUSE_CACHE_SYMLINKS (E2): every use of a link asks the driver,
    /// which judges its target on the tree as it is then
    /// (`LinkChainRulesTests.swappedFolderAfterARead`); a link replaced
    /// under the same name shows its new target.
    @Test("E2 every read of a symbolic link reaches the driver; a replaced one shows its new target")
    func symlinkTargetsAreNotCached() throws {
        try withMountedContainer(extraArguments: ["--debug"]) { mounted in
            let dir = try mounted.scratch()
            #expect(symlink("first-target", dir + "/link") == 0)
            let before = Self.requests("READLINK", in: mounted.stderrText())
            for _ in 0..<5 { #expect(Self.readlink(dir + "/link") == "first-target") }
            #expect(Self.requests("READLINK", in: mounted.stderrText()) - before == 5)

            // Replaced through the mount: by unlink and symlink, and by rename.
            #expect(unlink(dir + "/link") == 0)
            #expect(symlink("second-target", dir + "/link") == 0)
            #expect(Self.readlink(dir + "/link") == "second-target")
            #expect(symlink("third-target", dir + "/other") == 0)
            #expect(rename(dir + "/other", dir + "/link") == 0)
            #expect(Self.readlink(dir + "/link") == "third-target")
            // Followed in a path walk, the target leads to the right file.
            try writeFile(dir + "/third-target", "here")
            #expect(readFileText(dir + "/link") == "here")
        }
    }

    /// security.selinux answers ENOTSUP (get and set: the mount carries no
    /// labels), so `ls -l` asks once per device, not once per entry; other
    /// security. names (X3's tools, the capability check) work as before.
    @Test("ls -l asks for security.selinux once, not per entry; other security. names still work")
    func selinuxLabelIsUnsupported() throws {
        try withMountedContainer(extraArguments: ["--debug"]) { mounted in
            let dir = try mounted.scratch()
            for i in 0..<40 { try writeFile(dir + "/f\(i)", "x") }
            let before = Self.requests("GETXATTR", in: mounted.stderrText())
            let listing = runProcess(["ls", "-l", dir], timeout: 30)
            #expect(listing.status == 0)
            let asked = Self.requests("GETXATTR", in: mounted.stderrText()) - before
            #expect(asked <= 2, "ls -l of 40 files sent \(asked) GETXATTR requests")

            let out = runFSProbe(in: dir, script: #"""
                getxattr f0 security.selinux
                setxattr f0 security.selinux "system_u:object_r:x_t:s0"
                setxattr f0 security.other "kept"
                getxattr f0 security.other
                getxattr f0 user.unset
                """#)
            #expect(out.lines == ["err EOPNOTSUPP", "err EOPNOTSUPP", "ok", #"ok 4 "kept""#, "err ENODATA"], "\(out.lines)")
        }
    }
}
