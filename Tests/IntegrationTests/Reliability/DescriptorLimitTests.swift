// The kernel forgets a file only under memory pressure (the mount's entries
// are cached for a day), so a driver that held a descriptor per known file
// answered EMFILE once the files in use passed its descriptor limit (found
// by the long stress run by hand: 16 workers x 20,000 operations reached
// the machine's hard limit of 20,000). Nodes now hold file handles and a
// bounded cache of descriptors; these tests start the driver with a limit
// of 256 descriptors (prlimit) and use far more files than that. Among the
// heavy runs, one at a time: the stress run drops the kernel's caches, which
// makes the driver let go of the descriptors counted here.

import Glibc
import Testing

extension ReliabilityHeavyTests {
    @Suite("Reliability: more files in use than the driver's descriptor limit")
    struct DescriptorLimitTests {
        @Test("600 files made and read through a driver started with RLIMIT_NOFILE 256: no EMFILE")
        func moreFilesThanDescriptors() throws {
            try withLimitedDriver { r, pid in
                let folder = r.path("Documents/many")
                #expect(mkdir(folder, 0o755) == 0)
                var failures: [String] = []
                for i in 0..<600 where failures.count < 5 {
                    let path = folder + "/file-\(i)"
                    let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                    if fd < 0 { failures.append("create \(path): \(posixError(errno))"); continue }
                    _ = write(fd, "x", 1)
                    close(fd)
                }
                for i in 0..<600 where failures.count < 5 {
                    let path = folder + "/file-\(i)"
                    if readFileText(path) != "x" { failures.append("read \(path): \(posixError(errno))") }
                }
                #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
                let fds = Reliability.openDescriptors(of: pid) ?? -1
                print("descriptor limit: the driver holds \(fds) descriptors with 600 files looked up")
            }
        }

        @Test("1,500 files in three zones looked up, stated, opened, renamed across zones and stated again under RLIMIT_NOFILE 256")
        func lookupsStatsOpensAndRenamesAcrossZones() throws {
            try withLimitedDriver { r, pid in
                let zones = ["Documents", "Library/Application Support", "tmp"]
                var failures: [String] = []
                func fail(_ what: String) { if failures.count < 8 { failures.append("\(what): \(posixError(errno))") } }
                for zone in zones {
                    let folder = r.path(zone + "/set")
                    if mkdir(folder, 0o755) != 0 { fail("mkdir \(folder)") }
                    for i in 0..<500 {
                        let fd = open(folder + "/f\(i)", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                        if fd < 0 { fail("create \(folder)/f\(i)"); continue }
                        _ = write(fd, "\(i)", "\(i)".utf8.count)
                        close(fd)
                    }
                }
                // Hold 100 files open while everything else is used: their
                // nodes' descriptors are borrowed and opened again meanwhile.
                var held: [Int32] = []
                for i in 0..<100 {
                    let fd = open(r.path("Documents/set/f\(i)"), O_RDONLY | O_CLOEXEC)
                    if fd < 0 { fail("open Documents/set/f\(i)") } else { held.append(fd) }
                }
                defer { held.forEach { close($0) } }
                for zone in zones {
                    for i in 0..<500 {
                        var st = stat()
                        if stat(r.path("\(zone)/set/f\(i)"), &st) != 0 { fail("stat \(zone)/set/f\(i)") }
                    }
                }
                // Every other file moves to the next zone; a whole folder moves too.
                for (index, zone) in zones.enumerated() {
                    let next = zones[(index + 1) % zones.count]
                    for i in stride(from: 0, to: 500, by: 2) {
                        if rename(r.path("\(zone)/set/f\(i)"), r.path("\(next)/set/from-\(index)-\(i)")) != 0 {
                            fail("rename \(zone)/set/f\(i)")
                        }
                    }
                }
                if rename(r.path("Documents/set"), r.path("Library/Application Support/documents-set")) != 0 { fail("rename Documents/set") }
                for (index, zone) in zones.enumerated() {
                    let next = zones[(index + 1) % zones.count]
                    let nextFolder = next == "Documents" ? "Library/Application Support/documents-set" : next + "/set"
                    let folder = zone == "Documents" ? "Library/Application Support/documents-set" : zone + "/set"
                    for i in 0..<500 {
                        let path = i % 2 == 0 ? r.path("\(nextFolder)/from-\(index)-\(i)") : r.path("\(folder)/f\(i)")
                        if readFileText(path) != "\(i)" { fail("read \(path)") }
                    }
                }
                for fd in held {
                    var st = stat()
                    if fstat(fd, &st) != 0 { fail("fstat of a held file") }
                }
                #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
                let fds = Reliability.openDescriptors(of: pid) ?? -1
                print("descriptor limit: the driver holds \(fds) descriptors with 1,500 files looked up and 100 open")
            }
        }

        @Test("A file unlinked while open: fstat, ftruncate, fchmod still work after its node's descriptor would have been evicted")
        func unlinkedFilesKeepTheirDescriptor() throws {
            try withLimitedDriver(cache: 16) { r, _ in
                let folder = r.path("Documents/u")
                #expect(mkdir(folder, 0o755) == 0)
                let fd = open(folder + "/gone", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
                try #require(fd >= 0)
                defer { close(fd) }
                #expect(write(fd, "data", 4) == 4)
                #expect(unlink(folder + "/gone") == 0)
                // Push every other node's descriptor out of the cache.
                for i in 0..<100 {
                    #expect(writeFileOK(folder + "/other-\(i)", "y"))
                }
                var st = stat()
                #expect(fstat(fd, &st) == 0 && st.st_nlink == 0 && st.st_size == 4)
                #expect(ftruncate(fd, 2) == 0)
                #expect(fchmod(fd, 0o600) == 0)
                #expect(fstat(fd, &st) == 0 && st.st_size == 2 && st.st_mode & 0o777 == 0o600)
            }
        }

        @Test("Without CAP_DAC_READ_SEARCH (file handles refused) the driver keeps a descriptor per node, as before, and serves every file")
        func fallbackWithoutHandles() throws {
            // Dropped from the bounding set, root loses the capability that
            // open_by_handle_at needs: the same refusal (EPERM) as a driver not
            // run as root.
            try withLimitedDriver(nofile: 4096, cache: 16,
                                  prefix: ["setpriv", "--bounding-set=-dac_read_search", "--inh-caps=-dac_read_search", "--"]) { r, pid in
                let folder = r.path("Documents/many")
                #expect(mkdir(folder, 0o755) == 0)
                var failures: [String] = []
                for i in 0..<300 where failures.count < 5 {
                    if !writeFileOK(folder + "/f\(i)", "z") { failures.append("create f\(i): \(posixError(errno))") }
                }
                #expect(rename(folder, r.path("tmp/many")) == 0)
                for i in 0..<300 where failures.count < 5 {
                    if readFileText(r.path("tmp/many/f\(i)")) != "z" { failures.append("read f\(i): \(posixError(errno))") }
                }
                #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
                // The fallback was taken: far more descriptors than the cache's
                // 16 (the kernel may have forgotten a few nodes by now).
                let fds = Reliability.openDescriptors(of: pid) ?? -1
                #expect(fds > 200, "the driver holds \(fds) descriptors")
            }
        }

        /// Runs `body` against a driver started (through `prefix`) with a
        /// descriptor limit of `nofile`, and a descriptor cache of `cache`
        /// (default: the driver's own choice for that limit).
        private func withLimitedDriver(nofile: Int = 256, cache: Int? = nil, prefix: [String] = [],
                                       _ body: (RulesMount, pid_t) throws -> Void) throws {
            try withRulesMount { r in
                let argv = prefix + ["prlimit", "--nofile=\(nofile):\(nofile)", "--", Binaries.appsandboxfs, "mount", r.backing,
                                     r.mountpoint, "--app-name", r.appName, "--foreground"]
                    + (cache.map { ["--descriptor-cache", "\($0)"] } ?? [])
                try writeFile(r.root + "/driver.stderr", "")
                let pid = try spawn(argv, stdin: "/dev/null", stdout: "/dev/null", stderr: r.root + "/driver.stderr")
                defer {
                    if r.isMounted { _ = runProcess(["fusermount3", "-u", r.mountpoint]) }
                    if waitForExit(pid, timeout: 15) == nil {
                        kill(pid, SIGKILL)
                        _ = waitForExit(pid, timeout: 15)
                    }
                }
                let deadline = monotonicNow() + 30
                while !(r.isMounted && rulesStatfs(r.mountpoint) == 0) {
                    try #require(monotonicNow() < deadline && waitForExit(pid, timeout: 0) == nil,
                                 "the driver did not mount: \(readFileText(r.root + "/driver.stderr"))")
                    usleep(20_000)
                }
                try body(r, pid)
            }
        }

        private func writeFileOK(_ path: String, _ text: String) -> Bool {
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { return false }
            defer { close(fd) }
            return write(fd, text, text.utf8.count) == text.utf8.count
        }
    }
}
