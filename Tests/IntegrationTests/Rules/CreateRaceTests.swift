// Issue 25, item 2: a create must never take over a file that appears at
// its name in the backing folder after the kernel looked the name up, and
// what the driver makes is given to the caller through its descriptor,
// never by name. The race is made certain by a small library preloaded
// into the driver: it puts root's own file (0600) at the name just before
// the driver's create (openat with O_CREAT of a name "raced-..."), or just
// before the driver gives a new folder, FIFO or link to the caller
// (fchownat of "swapped-..."; what was made is renamed away first).

import Foundation
import Glibc
import Testing

@Suite("W1 P6 a create never takes a file that appeared at its name; new entries are chowned by descriptor (issue 25, item 2)")
struct CreateRaceTests {
    static let source = """
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <fcntl.h>
        #include <stdarg.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/stat.h>
        #include <unistd.h>

        typedef int (*openat_fn)(int, const char *, int, ...);
        static const char secret[] = "root's own\\n";

        /* Root's file, 0600, at `name`, as another process of root's would
           make it, unless something is there already. */
        static void plant(int dirfd, const char *name) {
            openat_fn real = (openat_fn)dlsym(RTLD_NEXT, "openat");
            int fd = real(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
            if (fd < 0) return;
            if (write(fd, secret, sizeof secret - 1) < 0) { /* the test sees it */ }
            fchmod(fd, 0600);
            close(fd);
        }

        static int hooked(const char *symbol, int dirfd, const char *name, int flags, int mode) {
            openat_fn real = (openat_fn)dlsym(RTLD_NEXT, symbol);
            if ((flags & O_CREAT) && name && strncmp(name, "raced-", 6) == 0 && getenv("ASFS_TEST_RACE")) plant(dirfd, name);
            return real(dirfd, name, flags, mode);
        }

        static int mode_of(int flags, va_list ap) {
            return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? va_arg(ap, int) : 0;
        }

        int openat(int dirfd, const char *name, int flags, ...) {
            va_list ap; va_start(ap, flags); int mode = mode_of(flags, ap); va_end(ap);
            return hooked("openat", dirfd, name, flags, mode);
        }

        int openat64(int dirfd, const char *name, int flags, ...) {
            va_list ap; va_start(ap, flags); int mode = mode_of(flags, ap); va_end(ap);
            return hooked("openat64", dirfd, name, flags, mode);
        }

        /* A chown of "swapped-...", by name or through a descriptor: what the
           driver made goes to NAME.moved and root's file takes its name. */
        int fchownat(int dirfd, const char *name, uid_t uid, gid_t gid, int flags) {
            int (*real)(int, const char *, uid_t, gid_t, int) =
                (int (*)(int, const char *, uid_t, gid_t, int))dlsym(RTLD_NEXT, "fchownat");
            char link[64], path[4096], moved[4200];
            snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
            ssize_t n = readlink(link, path, sizeof path - 1);
            if (getenv("ASFS_TEST_RACE") && n > 0) {
                path[n] = 0;
                if (name && name[0]) { strncat(path, "/", sizeof path - strlen(path) - 1); strncat(path, name, sizeof path - strlen(path) - 1); }
                const char *base = strrchr(path, '/');
                snprintf(moved, sizeof moved, "%s.moved", path);
                if (base && strncmp(base + 1, "swapped-", 8) == 0 && rename(path, moved) == 0) plant(AT_FDCWD, path);
            }
            return real(dirfd, name, uid, gid, flags);
        }
        """

    static let secret = "root's own\n"

    /// What `open(name, flags)` gives uid 65534 in `folder`: "opened" or
    /// the errno's name.
    static func openAsNobody(_ name: String, exclusive: Bool, in folder: String) -> String {
        let flags = "os.O_WRONLY | os.O_CREAT" + (exclusive ? " | os.O_EXCL" : "")
        let script = """
            import errno, os
            try:
                os.close(os.open("\(name)", \(flags), 0o644)); print("opened")
            except OSError as e:
                print(errno.errorcode.get(e.errno, str(e.errno)))
            """
        let result = runProcess(["/usr/bin/python3", "-c", script], asUser: 65534, cwd: folder)
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + result.stderr
    }

    /// Root's planted file at `path` in the backing folder, as planted: its
    /// owner, mode and bytes.
    static func expectPlantedFile(_ path: String, _ label: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard case .success(let s) = RulesSys.lstat(path) else {
            Issue.record("\(label): root's file is not there", sourceLocation: sourceLocation)
            return
        }
        #expect(s.st_mode & S_IFMT == S_IFREG && s.st_uid == 0 && s.st_gid == 0 && s.st_mode & 0o7777 == 0o600,
                "\(label): root's file is now owner \(s.st_uid):\(s.st_gid), mode \(String(s.st_mode, radix: 8))",
                sourceLocation: sourceLocation)
        #expect(readFileText(path) == secret, "\(label): root's file changed", sourceLocation: sourceLocation)
    }

    /// Mounts with the library preloaded into the driver and Documents
    /// writable by everyone, runs `body` with Documents through the mount.
    static func withRacingDriver(_ body: (RulesMount, String) throws -> Void) throws {
        try withRulesMount { r in
            let library = try ChownFailureTests.buildLibrary(in: r.root, source: Self.source, name: "race")
            // A sanitized driver's runtime must come first among the
            // libraries; it lets a preloaded one through when told to.
            let asan = (getenv("ASAN_OPTIONS").map { String(cString: $0) + ":" } ?? "") + "verify_asan_link_order=0"
            let mounted = runProcess(["env", "LD_PRELOAD=" + library, "ASFS_TEST_RACE=1", "ASAN_OPTIONS=" + asan,
                                      Binaries.appsandboxfs, "mount", r.backing, r.mountpoint, "--app-name", r.appName,
                                      "--log", r.root + "/background.log"], timeout: 60)
            try #require(mounted.status == 0, "\(mounted)")
            #expect(Glibc.chmod(r.backingPath("Documents"), 0o777) == 0)
            try body(r, r.path("Documents"))
            #expect(r.run(["unmount", r.mountpoint]).status == 0)
        }
    }

    @Test("W1 P6 a file of root's (0600) that appears at the name between the kernel's lookup and the create: uid 65534's O_CREAT open gets EACCES, O_CREAT|O_EXCL gets EEXIST; the file stays root's, unchanged")
    func createDoesNotTakeAnExistingFile() throws {
        try Self.withRacingDriver { r, documents in
            let opened = Self.openAsNobody("raced-file", exclusive: false, in: documents)
            #expect(opened == "EACCES", "O_CREAT: \(opened)")
            Self.expectPlantedFile(r.backingPath("Documents/raced-file"), "O_CREAT")
            // Through the mount too: root's file, as in the backing folder.
            if case .success(let s) = RulesSys.lstat(documents + "/raced-file") {
                #expect(s.st_uid == 0 && s.st_mode & 0o777 == 0o600, "the mount shows owner \(s.st_uid)")
            } else {
                Issue.record("the mount does not show raced-file")
            }

            let exclusive = Self.openAsNobody("raced-excl", exclusive: true, in: documents)
            #expect(exclusive == "EEXIST", "O_CREAT|O_EXCL: \(exclusive)")
            Self.expectPlantedFile(r.backingPath("Documents/raced-excl"), "O_CREAT|O_EXCL")

            // A name nobody races is made and given to its maker.
            let open = Self.openAsNobody("plain", exclusive: false, in: documents)
            #expect(open == "opened", "a name nobody raced: \(open)")
            if case .success(let s) = RulesSys.lstat(r.backingPath("Documents/plain")) {
                #expect(s.st_uid == 65534, "a new file is its maker's: owner \(s.st_uid)")
            }
        }
    }

    @Test("W1 a folder, a FIFO and a link made by uid 65534 are chowned through their descriptor: root's file put at the name before the chown stays root's")
    func madeEntriesAreChownedByDescriptor() throws {
        try Self.withRacingDriver { r, documents in
            for (what, command) in [("a folder", "mkdir swapped-dir"), ("a FIFO", "mkfifo swapped-fifo"),
                                    ("a link", "ln -s target swapped-link")] {
                let name = String(command.split(separator: " ").last!)
                _ = runProcess(["sh", "-c", command], asUser: 65534, cwd: documents)
                Self.expectPlantedFile(r.backingPath("Documents/" + name), what)
                // What the driver made went to NAME.moved, and is the caller's.
                if case .success(let s) = RulesSys.lstat(r.backingPath("Documents/" + name + ".moved")) {
                    #expect(s.st_uid == 65534, "\(what): what was made is owned by \(s.st_uid)")
                } else {
                    Issue.record("\(what): the preloaded library did not swap the name")
                }
            }
        }
    }
}
