// Issue 25, item 10: `-o` names are judged as libfuse reads them. libfuse's
// option parser (fuse_opt.c) takes a backslash as "the next character as it
// is" and `\NNN` as an octal byte, so `su\id` is `suid` and `fs\name=X` is
// `fsname=X`: a filter comparing the text as typed let them through, and
// the mount lost nosuid,nodev and showed a forged source (docs/cli.md
// promises neither happens). The options the driver sets itself are
// escaped in turn, so a backing folder whose path holds a comma or a
// backslash cannot add an option either. docs/security.md, "Option strings".

import Glibc
import Testing

@Suite("Security: -o options are judged after libfuse's unescaping (issue 25, item 10)")
struct MountOptionEscapeTests {
    /// `appsandboxfs mount /b /m -o OPTIONS --fake`: what the options amount to.
    static func fake(_ options: String) -> (status: Int32, stdout: String, stderr: String) {
        runProcess([Binaries.appsandboxfs, "mount", "/b", "/m", "-o", options, "--fake"])
    }

    @Test("Escaped suid and dev (su\\id, d\\ev, \\163uid, \\144ev) are dropped exactly like the plain ones; what passes on is written back escaped")
    func escapedSuidDevDropped() {
        let plain = Self.fake("suid,dev,noatime")
        #expect(plain.status == 0 && plain.stdout == "mount /b /m -o noatime\n", "\(plain)")
        for options in ["su\\id,d\\ev,noatime", "\\163uid,\\144ev,no\\atime", "s\\u\\i\\d,\\d\\e\\v,noatime"] {
            let escaped = Self.fake(options)
            #expect(escaped.status == 0 && escaped.stdout == plain.stdout, "\(options): \(escaped)")
        }
        // An escaped comma stays inside its option, as libfuse reads it.
        let comma = Self.fake("max_read=4096\\,suid,ro")
        #expect(comma.status == 0 && comma.stdout == "mount /b /m -o max_read=4096\\,suid,ro\n", "\(comma)")
        // appsandboxfs's own names, escaped, are taken too.
        let own = Self.fake("app\\_name=A,keep\\_tmp")
        #expect(own.status == 0 && own.stdout == "mount /b /m --app-name A --keep-tmp\n", "\(own)")
    }

    @Test("Escaped fsname= and subtype= are refused, like the plain ones; a NUL byte (\\000) is refused")
    func escapedDriverOwnRefused() {
        for (options, name) in [("su\\id,d\\ev,fs\\name=/etc/forged", "fsname"), ("fsname\\=/etc/forged", "fsname"),
                                ("\\146sname=/etc/forged", "fsname"), ("sub\\type=ext4", "subtype"),
                                ("fsname=/etc/forged", "fsname")] {
            let refused = Self.fake(options)
            #expect(refused.status == 64, "\(options): \(refused)")
            #expect(refused.stderr.contains("-o \(name): set by appsandboxfs itself"), "\(options): \(refused.stderr)")
        }
        let nul = Self.fake("suid\\000x,ro")
        #expect(nul.status == 64 && nul.stderr.contains("NUL"), "\(nul)")
    }

    @Test("A real mount with -o su\\id,d\\ev,\\163uid is nosuid,nodev with the backing folder as source; with fs\\name=/etc/forged nothing is mounted")
    func realMount() throws {
        try withEcoMount { m in
            let forged = m.appsandboxfs(["mount", m.backing, m.mountpoint, "--app-name", m.appName, "-o", "su\\id,d\\ev,fs\\name=/etc/forged"])
            #expect(forged.status != 0, "\(forged)")
            #expect(!m.isMounted, "mounted with a forged source")
            try m.mountInBackground(["-o", "su\\id,d\\ev,\\163uid,no\\atime"])
            let entry = try #require(Self.mountinfoLine(m.mountpoint))
            #expect(entry.contains(" - fuse.appsandboxfs \(m.backing) "), "\(entry)")
            #expect(Self.mountOptions(entry).contains("nosuid") && Self.mountOptions(entry).contains("nodev"), "\(entry)")
            #expect(Self.mountOptions(entry).contains("noatime"), "\(entry)")
        }
    }

    @Test("A backing folder whose path holds commas (box,suid,dev) is the mount's whole source and adds no option: nosuid,nodev")
    func commaInBackingPath() throws {
        try withEcoMount(backingName: "box,suid,dev") { m in
            try m.mountInBackground()
            let entry = try #require(Self.mountinfoLine(m.mountpoint))
            #expect(entry.contains(" - fuse.appsandboxfs \(m.backing) "), "\(entry)")
            #expect(Self.mountOptions(entry).contains("nosuid") && Self.mountOptions(entry).contains("nodev"), "\(entry)")
            #expect(access(m.mountpoint + "/Documents", F_OK) == 0)
        }
    }

    static func mountinfoLine(_ mountpoint: String) -> String? {
        readFileText("/proc/self/mountinfo").split(separator: "\n").first { $0.split(separator: " ")[4] == mountpoint }.map(String.init)
    }

    /// The per-mount options (field 6: rw,nosuid,nodev,...).
    static func mountOptions(_ line: String) -> [String] {
        line.split(separator: " ")[5].split(separator: ",").map(String.init)
    }
}
