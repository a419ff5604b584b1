// Issue 11, item 8: the driver makes an entry as root, then gives it to the
// caller with fchownat. If that fails, a root-owned file with the caller's
// mode must not stay behind: the request fails and the entry goes again.
// No backing file system refuses that chown on demand, so the driver runs
// with a small preloaded library that fails fchownat for one name.

import Glibc
import Testing

@Suite("Rules: a create whose chown fails leaves nothing behind (issue 11, item 8)")
struct ChownFailureTests {
    /// fchownat fails with EPERM for the name in ASFS_TEST_FAIL_CHOWN, given
    /// as a name in a folder or (AT_EMPTY_PATH, as the driver chowns what
    /// it made) as a descriptor whose file has that name; every other call
    /// goes to the C library's own.
    static let source = """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <errno.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        static int is_victim(int dirfd, const char *name, const char *victim) {
            if (name && name[0]) return strcmp(name, victim) == 0;
            char link[64], target[4096];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = readlink(link, target, sizeof target - 1);
            if (n < 0) return 0;
            target[n] = 0;
            const char *base = strrchr(target, '/');
            return base && strcmp(base + 1, victim) == 0;
        }
        int fchownat(int dirfd, const char *name, uid_t uid, gid_t gid, int flags) {
            const char *victim = getenv("ASFS_TEST_FAIL_CHOWN");
            if (victim && is_victim(dirfd, name, victim)) { errno = EPERM; return -1; }
            int (*real)(int, const char *, uid_t, gid_t, int) =
                (int (*)(int, const char *, uid_t, gid_t, int))dlsym(RTLD_NEXT, "fchownat");
            return real(dirfd, name, uid, gid, flags);
        }
        """

    /// Builds a preload library from C `text` (by default this suite's)
    /// with the C compiler that comes with Swift (clang) or the system's cc.
    static func buildLibrary(in folder: String, source text: String = ChownFailureTests.source, name: String = "failchown") throws -> String {
        let source = folder + "/\(name).c", library = folder + "/\(name).so"
        try writeFile(source, text)
        let compiler = ["clang", "cc"].first { program in
            runProcess(["sh", "-c", "command -v \(program)"]).status == 0
        }
        let compilerName = try #require(compiler, "no C compiler (clang or cc) on PATH")
        let built = runProcess([compilerName, "-shared", "-fPIC", "-O1", "-o", library, source, "-ldl"])
        try #require(built.status == 0, "building the preload library: \(built)")
        return library
    }

    @Test("A file, a folder and a link made by another user whose chown fails: the call fails and nothing is left in the backing folder")
    func failedChownRemovesTheEntry() throws {
        try withRulesMount { r in
            let library = try Self.buildLibrary(in: r.root)
            // A sanitized driver's runtime must come first among the
            // libraries; it lets a preloaded one through when told to.
            let asan = (getenv("ASAN_OPTIONS").map { String(cString: $0) + ":" } ?? "") + "verify_asan_link_order=0"
            let mounted = runProcess(["env", "LD_PRELOAD=" + library, "ASFS_TEST_FAIL_CHOWN=victim", "ASAN_OPTIONS=" + asan,
                                      Binaries.appsandboxfs, "mount", r.backing, r.mountpoint, "--app-name", r.appName,
                                      "--log", r.root + "/background.log"], timeout: 60)
            try #require(mounted.status == 0, "\(mounted)")
            let documents = r.path("Documents")
            #expect(Glibc.chmod(r.backingPath("Documents"), 0o777) == 0)

            for (what, command) in [("a file", "touch victim"), ("a folder", "mkdir victim"),
                                    ("a link", "ln -s target victim"), ("a file by mknod", "mkfifo victim")] {
                let made = runProcess(["sh", "-c", command], asUser: 65534, cwd: documents)
                #expect(made.status != 0, "\(what): \(command) succeeded although its chown failed: \(made)")
                #expect(RulesSys.lstat(r.backingPath("Documents/victim")).isFailure,
                        "\(what): a root-owned entry was left in the backing folder")
                #expect(RulesSys.lstat(documents + "/victim").isFailure, "\(what): the mount still shows victim")
            }
            // Every other name is given to its maker as usual.
            let other = runProcess(["sh", "-c", "touch other && mkdir folder"], asUser: 65534, cwd: documents)
            #expect(other.status == 0, "\(other)")
            if case .success(let s) = RulesSys.lstat(r.backingPath("Documents/other")) {
                #expect(s.st_uid == 65534, "other is owned by \(s.st_uid)")
            } else {
                Issue.record("other was not made")
            }
            #expect(r.run(["unmount", r.mountpoint]).status == 0)
        }
    }
}
