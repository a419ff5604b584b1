// mount-scripts/setup.sh installs by copying (issue 18: "a release install
// that survives removing the checkout") and `uninstall` removes what it
// installed. Run for real, but staged under DESTDIR in a temporary folder
// (nothing under /usr/local or /sbin is touched), with `install --binary`
// and the debug build under test: no apt-get, no release build.

import Foundation
import Glibc
import Testing

@Suite("Ecosystem: setup.sh installs copies, and uninstall removes them (issue 18)")
struct SetupInstallTests {
    /// What setup.sh installs, under DESTDIR.
    static let installed = [
        "usr/local/bin/appsandboxfs", "sbin/mount.fuse.appsandboxfs", "usr/local/share/man/man1/appsandboxfs.1",
        "usr/local/share/bash-completion/completions/appsandboxfs", "usr/local/share/zsh/site-functions/_appsandboxfs",
        "usr/local/share/fish/vendor_completions.d/appsandboxfs.fish",
        // The Foundation bridge (F1), from beside the program.
        "usr/local/lib/appsandboxfs/libappsandboxfs-preload.so",
        "usr/local/lib/appsandboxfs/libAppSandboxFoundationBridge.so",
    ]

    @Test("DESTDIR=DIR setup.sh install --binary FILE copies regular files (no links into the checkout); uninstall removes each")
    func installCopiesAndUninstallRemoves() throws {
        let destdir = try makeTemporaryDirectory(prefix: "asfs-setup")
        defer { removeTree(destdir) }
        let setup = repositoryRoot + "/mount-scripts/setup.sh"
        let program = Binaries.appsandboxfs
        // What the system has now, to show the staged install leaves it alone.
        let systemFiles = Self.installed.map { "/" + $0 }
        let before = systemFiles.map(Self.identity)

        // A link left by an older setup.sh (it linked into the checkout):
        // replaced, never written through.
        let victim = destdir + "/victim"
        try writeFile(victim, "not a completion script\n")
        try FileManager.default.createDirectory(atPath: destdir + "/usr/local/share/bash-completion/completions",
                                                withIntermediateDirectories: true)
        #expect(symlink(victim, destdir + "/usr/local/share/bash-completion/completions/appsandboxfs") == 0)
        // Something setup.sh did not install: uninstall keeps it.
        try FileManager.default.createDirectory(atPath: destdir + "/usr/local/bin", withIntermediateDirectories: true)
        try writeFile(destdir + "/usr/local/bin/other-tool", "#!/bin/sh\n", mode: 0o755)

        let install = runProcess(["env", "DESTDIR=\(destdir)", "bash", setup, "install", "--binary", program],
                                 cwd: "/", timeout: 120)
        try #require(install.status == 0, "setup.sh install: \(install.stdout)\(install.stderr)")
        #expect(!install.stdout.contains("building"), "install --binary built: \(install.stdout)")
        #expect(readFileText(victim) == "not a completion script\n", "the install wrote through a link")

        let sources: [String: [UInt8]?] = [
            "usr/local/bin/appsandboxfs": readFileBytes(program),
            "sbin/mount.fuse.appsandboxfs": readFileBytes(repositoryRoot + "/mount-scripts/mount.fuse.appsandboxfs"),
            "usr/local/share/man/man1/appsandboxfs.1": readFileBytes(repositoryRoot + "/docs/appsandboxfs.1"),
            "usr/local/share/bash-completion/completions/appsandboxfs":
                Array(runProcess([program, "--generate-completion-script", "bash"]).stdout.utf8),
            "usr/local/share/zsh/site-functions/_appsandboxfs":
                Array(runProcess([program, "--generate-completion-script", "zsh"]).stdout.utf8),
            "usr/local/share/fish/vendor_completions.d/appsandboxfs.fish":
                Array(runProcess([program, "--generate-completion-script", "fish"]).stdout.utf8),
            "usr/local/lib/appsandboxfs/libappsandboxfs-preload.so":
                readFileBytes(Binaries.foundationBridge),
            "usr/local/lib/appsandboxfs/libAppSandboxFoundationBridge.so":
                readFileBytes(parentDirectory(Binaries.foundationBridge) + "/libAppSandboxFoundationBridge.so"),
        ]
        var programStat = stat()
        try #require(stat(program, &programStat) == 0)
        for relative in Self.installed {
            let path = destdir + "/" + relative
            var status = stat()
            try #require(lstat(path, &status) == 0, "setup.sh did not install \(relative)")
            // A regular file of its own: not a symbolic link, nor a hard link
            // to the build's file (removing the checkout would not touch it).
            #expect(status.st_mode & S_IFMT == S_IFREG, "\(relative) is not a regular file (mode \(String(status.st_mode, radix: 8)))")
            #expect(status.st_nlink == 1, "\(relative) has \(status.st_nlink) links")
            #expect(!(status.st_dev == programStat.st_dev && status.st_ino == programStat.st_ino), "\(relative) is the build's file")
            #expect(readFileBytes(path) == sources[relative] ?? nil, "\(relative) is not a copy of what it installs")
            let executable = relative.contains("bin/") || relative.hasSuffix(".so")
            #expect(status.st_mode & 0o777 == (executable ? 0o755 : 0o644), "\(relative): mode \(String(status.st_mode & 0o777, radix: 8))")
        }
        // The copy runs on its own.
        let version = runProcess([destdir + "/usr/local/bin/appsandboxfs", "--version"])
        #expect(version.status == 0 && version.stdout == runProcess([program, "--version"]).stdout, "\(version)")

        let uninstall = runProcess(["env", "DESTDIR=\(destdir)", "bash", setup, "uninstall"], cwd: "/", timeout: 60)
        #expect(uninstall.status == 0, "setup.sh uninstall: \(uninstall.stdout)\(uninstall.stderr)")
        for relative in Self.installed {
            var status = stat()
            #expect(lstat(destdir + "/" + relative, &status) != 0 && errno == ENOENT, "uninstall left \(relative)")
            #expect(uninstall.stdout.contains("setup: removed \(destdir)/\(relative)\n"), "\(uninstall.stdout)")
        }
        #expect(access(destdir + "/usr/local/bin/other-tool", F_OK) == 0, "uninstall removed a file it did not install")
        #expect(readFileText(victim) == "not a completion script\n")

        // The system's copies (if any) were not touched.
        #expect(systemFiles.map(Self.identity) == before, "a staged install changed files outside DESTDIR")
    }

    /// A file's device, inode, size and modification time ("" when missing).
    static func identity(_ path: String) -> String {
        var status = stat()
        guard lstat(path, &status) == 0 else { return "" }
        return "\(status.st_dev):\(status.st_ino):\(status.st_size):\(status.st_mtim.tv_sec).\(status.st_mtim.tv_nsec)"
    }
}
