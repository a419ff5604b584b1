// F1 and F2 through real mounts: an unchanged Swift program (FoundationProbe)
// run with `appsandboxfs run` sets and reads the "do not back up" mark (X1)
// and protection classes (P2) with Foundation's own calls, and the
// container's tools see them (getfattr, backup-report, the lock screen).

import Foundation
import Glibc
import Testing

@Suite("The Foundation bridge: Foundation's own calls under run (F1, F2)")
struct FoundationCallsTests {
    /// The attribute through the mount, as getfattr shows it (nil: absent).
    static func attribute(_ path: String, _ name: String) -> String? {
        let result = runProcess(["getfattr", "--only-values", "-n", name, path])
        return result.status == 0 ? result.stdout : nil
    }

    static let markName = "com.apple.metadata:com_apple_backup_excludeItem"

    @Test("F1 X1: URL.setResourceValues and NSURL.setResourceValue set and remove the mark; resourceValues and getResourceValue answer true or false; backup-report leaves the marked files out")
    func backupMark() throws {
        try withMountedContainer { m in
            try writeFile(m.documents + "/kept.db", "kept")
            try writeFile(m.documents + "/url.db", "url")
            try writeFile(m.documents + "/nsurl.db", "nsurl")
            try writeFile(m.applicationSupport + "/flip.db", "flip")
            let lines = try FoundationProbe.lines(in: m, [
                "marked", "Documents/kept.db",
                "mark", "Documents/url.db", "true", "marked", "Documents/url.db",
                "nsmark", "Documents/nsurl.db", "true", "marked", "Documents/nsurl.db",
                "mark", "Library/Application Support/flip.db", "true",
                "mark", "Library/Application Support/flip.db", "false",
                "marked", "Library/Application Support/flip.db",
                "nsmark", "Documents/kept.db", "false", "marked", "Documents/kept.db",
                "nsmarked", "Documents/url.db", "nsmarked", "Documents/kept.db",
            ])
            #expect(lines == ["false", "ok", "true", "ok", "true", "ok", "ok", "false", "ok", "false", "true", "false"])
            // The mark iOS writes (X1), through the mount.
            #expect(Self.attribute(m.documents + "/url.db", Self.markName) == "bplist00_\u{10}\u{11}com.apple.backupd\u{08}\0\0\0\0\0\0\u{01}\u{01}\0\0\0\0\0\0\0\u{01}\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\u{1c}")
            #expect(Self.attribute(m.documents + "/nsurl.db", Self.markName) != nil)
            #expect(Self.attribute(m.applicationSupport + "/flip.db", Self.markName) == nil)
            #expect(Self.attribute(m.documents + "/kept.db", Self.markName) == nil)
            let report = try backupReportJSON(m.mountpoint)
            let excluded = ((report["exclusions"] as? [[String: Any]]) ?? []).compactMap { $0["path"] as? String }
            #expect(excluded.contains("Documents/url.db") && excluded.contains("Documents/nsurl.db"), "\(excluded)")
            #expect(!excluded.contains("Documents/kept.db") && !excluded.contains("Library/Application Support/flip.db"))
        }
    }

    @Test("F1 P2: setAttributes, createFile, createDirectory (path and URL) and Data.write with each protection option set the class; attributesOfItem reads it")
    func protectionClasses() throws {
        try withMountedContainer { m in
            try writeFile(m.documents + "/set", "set")
            let lines = try FoundationProbe.lines(in: m, [
                "setclass", "Documents/set", classA, "class", "Documents/set",
                "create", "Documents/created", classB, "class", "Documents/created",
                "mkdir", "Documents/d/e", classD, "class", "Documents/d", "class", "Documents/d/e",
                "mkdirurl", "Library/u", classA, "class", "Library/u",
                "write", "Documents/w-a", "complete", "class", "Documents/w-a",
                "writeatomic", "Documents/w-b", "unlessOpen", "class", "Documents/w-b",
                "write", "Documents/w-c", "untilFirst", "class", "Documents/w-c",
                "writeatomic", "Documents/w-a", "none", "class", "Documents/w-a",
                "write", "Documents/w-c", "complete", "class", "Documents/w-c",
                "class", "Documents",
                "mkdirmode", "Documents/private", classB, "class", "Documents/private",
            ])
            #expect(lines == [
                "ok", classA, "true", classB, "ok", classD, classD, "ok", classA,
                "ok", classA, "ok", classB, "ok", classC, "ok", classD, "ok", classA,
                classC,   // Documents: the container's default (P4)
                "700", classB,   // the other attribute still Foundation's
            ])
            // Explicit classes through the mount, as getfattr sees them (P2).
            for (path, protection) in [("/set", classA), ("/created", classB), ("/d/e", classD), ("/w-a", classD), ("/w-c", classA)] {
                #expect(Self.attribute(m.documents + path, "NSFileProtectionKey") == protection, "\(path)")
            }
            #expect(Self.attribute(m.library + "/u", "NSFileProtectionKey") == classA)
            #expect(try String(contentsOfFile: m.documents + "/created", encoding: .utf8) == "created")
            #expect(try String(contentsOfFile: m.documents + "/w-b", encoding: .utf8) == "written")
            // No temporary names left by the atomic writes.
            let names = try FileManager.default.contentsOfDirectory(atPath: m.documents).sorted()
            #expect(names == ["Inbox", "created", "d", "private", "set", "w-a", "w-b", "w-c"])
        }
    }

    @Test("F1 P6: a file written with .completeFileProtection is unreadable after lock and its grace; a class A create while locked fails with 513 and leaves no entry")
    func lockScreen() throws {
        try withMountedContainer { m in
            #expect(try FoundationProbe.lines(in: m, ["write", "Documents/secret", "complete"]) == ["ok"])
            m.lock(grace: 3)
            // Within the grace the file still opens (P6 A): 3 s, so that a
            // loaded machine still opens it within.
            #expect(open(m.documents + "/secret", O_RDONLY).closingIfOpen() == 0)
            // After it, refused: waited for, not slept for.
            var code: Int32 = 0
            let deadline = monotonicNow() + 30
            repeat {
                usleep(100_000)
                let refused = open(m.documents + "/secret", O_RDONLY)
                code = refused.closingIfOpen() == -1 ? errno : 0
            } while code == 0 && monotonicNow() < deadline
            #expect(code == EPERM)
            let lines = try FoundationProbe.lines(in: m, [
                "write", "Documents/new-a", "complete",
                "writeatomic", "Documents/new-a2", "complete",
                "create", "Documents/new-a3", classA,
                "write", "Documents/new-b", "unlessOpen",
            ])
            #expect(lines == ["error 513", "error 513", "false", "ok"])
            for name in ["new-a", "new-a2", "new-a3"] {
                #expect(access(m.documents + "/" + name, F_OK) != 0, "\(name) exists")
            }
            #expect(Self.attribute(m.documents + "/new-b", "NSFileProtectionKey") == classB)
            let names = try FileManager.default.contentsOfDirectory(atPath: m.documents).sorted()
            #expect(names == ["Inbox", "new-b", "secret"])
            m.unlock()
            #expect(try String(contentsOfFile: m.documents + "/secret", encoding: .utf8) == "written")
        }
    }

    @Test("F1: other keys and options work as before in a container; outside one every call is Foundation on Linux's own")
    func everythingElseUnchanged() throws {
        try withMountedContainer { m in
            let outside = try makeTemporaryDirectory()
            defer { removeTree(outside) }
            let program = try FoundationProbe.dynamic.get()
            let inside = FoundationProbe.run(program, in: m, ["others", "Documents/o"])
            #expect(inside.stdout == "640 5 5 false\n", "\(inside.stderr)")
            let there = FoundationProbe.run(program, in: m, [
                "others", outside + "/o",
                "mark", outside + "/o", "true", "marked", outside + "/o",
                "setclass", outside + "/o", classA, "class", outside + "/o",
                "write", outside + "/w", "complete",
            ])
            // Foundation on Linux outside a container: the mark and class
            // are accepted and ignored; reading them back answers nil.
            #expect(there.stdout == "640 5 5 false\nok\nnil\nok\nnil\nok\n", "\(there.stderr)")
            #expect(there.stderr.isEmpty)
        }
    }

    @Test("F2: a program with Foundation linked statically (-static-stdlib, -static-executable) gets one appsandboxfs: line naming the calls, and runs")
    func staticallyLinked() throws {
        try withMountedContainer { m in
            let program = try FoundationProbe.staticallyLinked.get()
            try writeFile(m.documents + "/f", "f")
            let result = FoundationProbe.run(program, in: m, ["mark", "Documents/f", "true", "marked", "Documents/f"])
            #expect(result.status == 0)
            #expect(result.stdout == "ok\nnil\n")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("appsandboxfs: calls-static: these Foundation calls stay no-ops"), "\(result.stderr)")
            for call in ["URL.setResourceValues", "FileManager.setAttributes", "Data.write(to:options:)"] {
                #expect(result.stderr.contains(call))
            }
            // Linked with -static-executable: no loader, so no preload;
            // run itself says so, and the program runs.
            let whole = FoundationProbe.run(try FoundationProbe.staticExecutable.get(), in: m, ["marked", "Documents/f"])
            #expect(whole.status == 0 && whole.stdout == "nil\n")
            let wholeLines = whole.stderr.split(separator: "\n")
            #expect(wholeLines.count == 1 && wholeLines[0].hasPrefix("appsandboxfs: calls-static-executable: these Foundation calls stay no-ops"), "\(whole.stderr)")
            // A program that is not Swift hears nothing.
            let shell = runProcess([Binaries.appsandboxfs, "run", m.mountpoint, "--", "sh", "-c", "echo quiet"])
            #expect(shell.stdout == "quiet\n" && shell.stderr.isEmpty, "\(shell.stderr)")
        }
    }

    @Test("F1: a program that is not Swift, started by run, loads the preload library and the C library only: no libstdc++, no Swift runtime")
    func preloadLoadsNothingElse() throws {
        try withMountedContainer { m in
            let maps = runProcess([Binaries.appsandboxfs, "run", m.mountpoint, "--", "cat", "/proc/self/maps"])
            #expect(maps.status == 0, "\(maps.stderr)")
            let libraries = Set(maps.stdout.split(separator: "\n").compactMap { line -> String? in
                guard let path = line.split(separator: " ", omittingEmptySubsequences: true).last, path.hasPrefix("/"),
                      path.contains(".so") else { return nil }
                return String(path.split(separator: "/").last!)
            })
            #expect(libraries.contains("libappsandboxfs-preload.so"), "\(libraries.sorted())")
            let others = libraries.filter { !$0.hasPrefix("libappsandboxfs-preload") && !$0.hasPrefix("libc.so") && !$0.hasPrefix("ld-linux") }
            #expect(others.isEmpty, "cat loaded \(others.sorted()) through the preload")
        }
    }

    @Test("F1: the preload library asks the loader for C library symbols only (none of libstdc++, libm or Swift's), so it loads anywhere a C program does")
    func preloadNeedsOnlyLibc() throws {
        let library = Binaries.foundationBridge
        let dynamic = runProcess(["readelf", "-d", "-W", library])
        try #require(dynamic.status == 0, "\(dynamic.stderr)")
        let needed = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(needed.count == 1 && needed[0].contains("[libc.so.6]"), "\(needed)")
        // Undefined symbols must come from glibc (versioned) or be weak; a
        // libm or C++ one would link (the stand-in archives are empty) and
        // then fail when the library is preloaded.
        let symbols = runProcess(["nm", "-D", "--undefined-only", library])
        try #require(symbols.status == 0, "\(symbols.stderr)")
        let strays = symbols.stdout.split(separator: "\n").filter { line in
            let fields = line.split(separator: " ")
            guard fields.count >= 2 else { return false }
            return fields[fields.count - 2] != "w" && !fields.last!.contains("@GLIBC_")
        }
        #expect(strays.isEmpty, "\(strays)")
    }

    @Test("F2: run without the bridge beside appsandboxfs says so in one line, and runs the program; env prints LD_PRELOAD with it")
    func bridgeMissing() throws {
        try withMountedContainer { m in
            let env = runProcess([Binaries.appsandboxfs, "env", m.mountpoint])
            #expect(env.stdout.contains("export LD_PRELOAD='\(Binaries.foundationBridge)"), "\(env.stdout)")
            let alone = try makeTemporaryDirectory()
            defer { removeTree(alone) }
            let copy = alone + "/appsandboxfs"
            #expect(runProcess(["cp", Binaries.appsandboxfs, copy]).status == 0)
            let result = runProcess([copy, "run", m.mountpoint, "--", "sh", "-c", "echo ran; echo \"${LD_PRELOAD:-none}\""])
            #expect(result.stdout == "ran\nnone\n")
            #expect(result.stderr.hasPrefix("appsandboxfs: the Foundation bridge (libappsandboxfs-preload.so) is not installed"), "\(result.stderr)")
            #expect(result.stderr.split(separator: "\n").count == 1)
        }
    }
}

private extension Int32 {
    /// 0 for a descriptor (closed here), -1 for a failed open.
    func closingIfOpen() -> Int32 {
        guard self >= 0 else { return -1 }
        close(self)
        return 0
    }
}
