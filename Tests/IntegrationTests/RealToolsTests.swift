// Real tools through the mount (W1, W2): cp -a, tar, rsync, ls/du/find and
// sqlite3 on scratch folders in Documents (and Library), each result compared
// with the source or with the backing directory.
//
// A tree is built outside the mount (in /tmp) with what tools trip over:
// symbolic links (to a file, to a folder, dangling, one climbing out and back),
// a hard link, user.* xattrs (set with setfattr, one binary, one empty),
// names with spaces, a newline, a tab, a leading dash, non-ASCII letters,
// bytes that are not UTF-8, 255 bytes long, a folder 30 levels deep, a FIFO,
// odd modes (0444, 0600, 0755, setgid and sticky folders), a file owned by
// another user, a sparse file, and mtimes with nanoseconds. A manifest (one
// line per entry: type, mode, owner, size, SHA-256 or link target, mtime in
// ns, xattrs, hard-link group) is the yardstick.

import Glibc
import Testing

@Suite("Real tools through the mount")
struct RealToolsTests {

    // MARK: - cp -a

    /// W1: `cp -a` into the mount and back out keeps content, modes, owners,
    /// symlink targets, the hard link, xattrs and mtimes (ns).
    @Test("W1: cp -a of an awkward tree into the mount and back out")
    func copyArchiveRoundTrip() throws {
        let outside = try makeTemporaryDirectory(prefix: "realtools-cp")
        defer { removeTree(outside) }
        let source = try Self.buildAwkwardTree(in: outside)
        let expected = try Self.manifest(source)

        try withMountedContainer { container in
            defer { Self.expectNoDenials(in: container) }
            let scratch = try container.scratch()
            try Self.expectSuccess(Self.shell(#"cp -a -- "$1" "$2/""#, source, scratch), "cp -a into the mount")
            let inMount = scratch + "/tree"
            Self.expectSameManifest(expected, try Self.manifest(inMount), "source tree", "copy in the mount")
            Self.expectSameManifest(expected, try Self.manifest(Self.backingOf(inMount, in: container)),
                                    "source tree", "backing directory of the copy")

            let out = outside + "/out"
            try makeDirectory(out)
            try Self.expectSuccess(Self.shell(#"cp -a -- "$1" "$2/""#, inMount, out), "cp -a out of the mount")
            Self.expectSameManifest(expected, try Self.manifest(out + "/tree"), "source tree", "copy back out")

            // The same xattrs, as getfattr -d prints them.
            let dump = #"cd "$1" && getfattr -d -m '^user\.' -- a.txt hard-link-to-a 'sub dir' 'sub dir/file with spaces.txt' empty"#
            let original = try Self.shell(dump, source)
            try Self.expectSuccess(original, "getfattr -d on the source")
            #expect(original.stdout.contains("user.color=\"blue\""), "the source tree has no xattrs: \(original.stdout)")
            let throughMount = try Self.shell(dump, inMount)
            try Self.expectSuccess(throughMount, "getfattr -d in the mount")
            #expect(throughMount.stdout == original.stdout, "getfattr -d differs in the mount")
            let backOut = try Self.shell(dump, out + "/tree")
            #expect(backOut.stdout == original.stdout, "getfattr -d differs after the copy back out")
        }
    }

    // MARK: - tar

    /// W1: a tar extracted into the mount equals its source (also by
    /// `tar --compare`), and a tar made from the mount extracts to the same tree.
    @Test("W1: tar extracted into the mount and created from it")
    func tarBothWays() throws {
        let outside = try makeTemporaryDirectory(prefix: "realtools-tar")
        defer { removeTree(outside) }
        let source = try Self.buildAwkwardTree(in: outside)
        let expected = try Self.manifest(source)
        let tarOptions = "--format=posix --xattrs --xattrs-include='user.*' --numeric-owner"
        try Self.expectSuccess(Self.shell("tar \(tarOptions) -C \"$1\" -cf \"$2\" tree", outside, outside + "/in.tar"),
                               "tar of the source")

        try withMountedContainer { container in
            defer { Self.expectNoDenials(in: container) }
            let scratch = try container.scratch()
            try Self.expectSuccess(Self.shell("tar \(tarOptions) --same-owner -xpf \"$2\" -C \"$1\"", scratch, outside + "/in.tar"),
                                   "tar -x into the mount")
            Self.expectSameManifest(expected, try Self.manifest(scratch + "/tree"), "source tree", "tar extracted in the mount")
            let compare = try Self.shell("tar \(tarOptions) --compare -f \"$2\" -C \"$1\"", scratch, outside + "/in.tar")
            #expect(compare.status == 0 && compare.stdout.isEmpty,
                    "tar --compare against the mount: status \(compare.status)\n\(compare.stdout)\(compare.stderr)")

            try Self.expectSuccess(Self.shell("tar \(tarOptions) -C \"$1\" -cf \"$2\" tree", scratch, outside + "/out.tar"),
                                   "tar -c from the mount")
            let out = outside + "/out"
            try makeDirectory(out)
            try Self.expectSuccess(Self.shell("tar \(tarOptions) --same-owner -xpf \"$2\" -C \"$1\"", out, outside + "/out.tar"),
                                   "tar -x of the archive made from the mount")
            Self.expectSameManifest(expected, try Self.manifest(out + "/tree"), "source tree", "tree from the mount's tar")
        }
    }

    // MARK: - ls, du, find

    /// W1: listings through the mount agree with the backing directory.
    @Test("W1: ls -lR, du and find through the mount agree with the backing directory")
    func listingsMatchBacking() throws {
        let outside = try makeTemporaryDirectory(prefix: "realtools-ls")
        defer { removeTree(outside) }
        let source = try Self.buildAwkwardTree(in: outside)

        try withMountedContainer { container in
            defer { Self.expectNoDenials(in: container) }
            let scratch = try container.scratch()
            try Self.expectSuccess(Self.shell(#"cp -a -- "$1" "$2/""#, source, scratch), "cp -a into the mount")
            let inMount = scratch + "/tree"
            let inBacking = Self.backingOf(inMount, in: container)

            let commands = [
                "ls -lRn": #"cd "$1" && ls -lRn --time-style=+%s.%N --quoting-style=c ."#,
                "ls -laRn (with . and ..) of the tree": #"cd "$1" && ls -laRn --time-style=+%s.%N --quoting-style=c . | grep -v ' \.\.$'"#,
                "du -sb": #"cd "$1" && du -sb ."#,
                "du -ab": #"cd "$1" && du -ab . | LC_ALL=C sort -k2"#,
                "du -s (allocated blocks)": #"cd "$1" && du -s --block-size=1 ."#,
                "find -printf": #"cd "$1" && find . -printf '%y %M %n %U %G %s %T@ [%l] %P\0' | LC_ALL=C sort -z | tr '\0' '\n'"#,
                "find -type/-links/-size": #"cd "$1" && find . -type f -links 2 -printf '%P\n' | LC_ALL=C sort; find . -type l -printf '%P\n' | LC_ALL=C sort; find . -size +100k -printf '%P\n' | LC_ALL=C sort"#,
            ]
            for (name, command) in commands.sorted(by: { $0.key < $1.key }) {
                let mounted = try Self.shell("export LC_ALL=C; " + command, inMount)
                let backing = try Self.shell("export LC_ALL=C; " + command, inBacking)
                try Self.expectSuccess(mounted, "\(name) in the mount")
                try Self.expectSuccess(backing, "\(name) in the backing directory")
                #expect(!mounted.stdout.isEmpty, "\(name) printed nothing")
                if mounted.stdout != backing.stdout {
                    let difference = Self.lineDifference(backing.stdout, mounted.stdout, "backing", "mount")
                    Issue.record("\(name) differs between the mount and the backing directory:\n\(difference)")
                }
            }
        }
    }

    // MARK: - rsync

    /// W1: `rsync -aHX` into the mount and out again copies everything, and a
    /// second run (by mtime in ns and size, then by checksum) finds nothing to do.
    /// (--modify-window=-1: rsync otherwise compares mtimes in whole seconds.)
    @Test("W1: rsync -aHX in and out; a second rsync transfers nothing")
    func rsyncInAndOut() throws {
        let outside = try makeTemporaryDirectory(prefix: "realtools-rsync")
        defer { removeTree(outside) }
        let source = try Self.buildAwkwardTree(in: outside)
        let expected = try Self.manifest(source)

        try withMountedContainer { container in
            defer { Self.expectNoDenials(in: container) }
            let scratch = try container.scratch()
            let inMount = scratch + "/rs"
            let out = outside + "/rs-out"
            for (from, to, label) in [(source, inMount, "into the mount"), (inMount, out, "out of the mount")] {
                try Self.expectSuccess(Self.shell(#"rsync -aHX --modify-window=-1 -- "$1/" "$2/""#, from, to), "rsync \(label)")
                Self.expectSameManifest(expected, try Self.manifest(to), "source tree", "rsync \(label)")
                for extra in ["", "--checksum"] {
                    let again = try Self.shell("rsync -aHX --modify-window=-1 \(extra) --itemize-changes -- \"$1/\" \"$2/\"", from, to)
                    try Self.expectSuccess(again, "second rsync \(extra) \(label)")
                    #expect(again.stdout.isEmpty, "a second rsync \(extra) \(label) transferred something:\n\(again.stdout)")
                }
            }
            Self.expectSameManifest(expected, try Self.manifest(Self.backingOf(inMount, in: container)),
                                    "source tree", "backing directory after rsync")
        }
    }

    // MARK: - sqlite3

    /// W2: a WAL database with two writer processes at once: both finish,
    /// integrity_check is ok, and every row of both is there.
    @Test("W2: sqlite3 WAL database with two concurrent writers", arguments: ["Documents", "Library"])
    func sqliteConcurrentWriters(zone: String) throws {
        let rowsPerWriter = 200, rowsPerTransaction = 4
        let outside = try makeTemporaryDirectory(prefix: "realtools-sqlite")
        defer { removeTree(outside) }

        try withMountedContainer { container in
            defer { Self.expectNoDenials(in: container) }
            let folder: String
            if zone == "Documents" {
                folder = try container.scratch()
            } else {
                folder = container.applicationSupport + "/sqlite-test"
                try makeDirectory(folder)
            }
            let database = folder + "/app.sqlite"
            let setup = try Self.shell(#"sqlite3 -bail "$1" "PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, writer TEXT NOT NULL, n INTEGER NOT NULL, payload BLOB, UNIQUE(writer, n));""#, database)
            try Self.expectSuccess(setup, "create the database")
            #expect(Self.trimmed(setup.stdout) == "wal", "journal_mode=WAL answered \(setup.stdout)")

            // Each writer: N rows in transactions of a few rows, BEGIN IMMEDIATE
            // so the busy timeout (not an error) settles who writes.
            var pids: [(String, pid_t, String, String)] = []
            for writer in ["A", "B"] {
                // Lockstep, so the two really interleave: transaction k of one
                // writer starts only once the other has committed its k-1
                // (marker files outside the mount, bounded waits). Both keep
                // the database open the whole time.
                let other = writer == "A" ? "B" : "A"
                func waitFor(_ marker: String) -> String {
                    ".shell i=0; while [ ! -e '\(outside)/\(marker)' ] && [ $i -lt 6000 ]; do sleep 0.005; i=$((i+1)); done\n"
                }
                var script = ".bail on\n.timeout 60000\nPRAGMA busy_timeout=60000;\nPRAGMA journal_mode;\n" + waitFor("go")
                for (k, first) in stride(from: 0, to: rowsPerWriter, by: rowsPerTransaction).enumerated() {
                    if k > 0 { script += waitFor("\(other)-\(k - 1)") }
                    script += "BEGIN IMMEDIATE;\n"
                    for n in first..<min(first + rowsPerTransaction, rowsPerWriter) {
                        script += "INSERT INTO t(writer, n, payload) VALUES('\(writer)', \(n), zeroblob(\(100 + n * 7)));\n"
                    }
                    script += "COMMIT;\n.shell touch '\(outside)/\(writer)-\(k)'\n"
                }
                script += "SELECT count(*) FROM t WHERE writer = '\(writer)';\n"
                let input = outside + "/writer-\(writer).sql"
                let stdout = outside + "/writer-\(writer).out", stderr = outside + "/writer-\(writer).err"
                try writeFile(input, script)
                try writeFile(stdout, "")
                try writeFile(stderr, "")
                let pid = try spawn(["sqlite3", "-bail", database], stdin: input, stdout: stdout, stderr: stderr)
                pids.append((writer, pid, stdout, stderr))
            }
            try writeFile(outside + "/go", "")
            for (writer, pid, stdout, stderr) in pids {
                let status = waitForExit(pid, timeout: 240)
                if status == nil { kill(pid, SIGKILL); _ = waitForExit(pid, timeout: 30) }
                #expect(status == .exited(0),
                        "sqlite3 writer \(writer) ended with \(status.map { "\($0)" } ?? "a hang (killed after 240 s)"): \(readFileText(stderr))")
                #expect(readFileText(stdout) == "60000\nwal\n\(rowsPerWriter)\n",
                        "writer \(writer) printed \(readFileText(stdout).prefix(200)), expected busy_timeout 60000, wal, \(rowsPerWriter) rows")
            }

            let check = try Self.shell(#"sqlite3 -bail "$1" "PRAGMA integrity_check; SELECT count(*) FROM t; SELECT count(*) >= 25 FROM t a JOIN t b ON b.id = a.id + 1 WHERE a.writer <> b.writer; SELECT writer || ' ' || count(*) || ' ' || count(DISTINCT n) || ' ' || min(n) || ' ' || max(n) || ' ' || sum(length(payload)) FROM t GROUP BY writer ORDER BY writer;""#, database)
            try Self.expectSuccess(check, "integrity check")
            let payload = (0..<rowsPerWriter).reduce(0) { $0 + 100 + $1 * 7 }
            // "1": the rows of A and B alternate at least 25 times (lockstep).
            let want = "ok\n\(2 * rowsPerWriter)\n1\n"
                + "A \(rowsPerWriter) \(rowsPerWriter) 0 \(rowsPerWriter - 1) \(payload)\n"
                + "B \(rowsPerWriter) \(rowsPerWriter) 0 \(rowsPerWriter - 1) \(payload)\n"
            #expect(check.stdout == want, "expected:\n\(want)actual:\n\(check.stdout)\(check.stderr)")

            // Every connection is closed: the backing file alone is a good database.
            let relative = String(database.dropFirst(container.mountpoint.count + 1))
            let backing = try Self.shell(#"sqlite3 -bail "file:$1?mode=ro" "PRAGMA integrity_check; SELECT count(*) FROM t;""#,
                                         container.backingPath(relative))
            #expect(backing.stdout == "ok\n\(2 * rowsPerWriter)\n", "backing database: \(backing.stdout)\(backing.stderr)")
        }
    }

    // MARK: - Sparse files past 4 GiB

    /// W1: a 5 GiB sparse file: data written at 4.5 GiB and across the 4 GiB
    /// boundary reads back, holes read as zeros, the size is exact, little is
    /// allocated; truncating to 4 GiB keeps the bytes below it.
    @Test("W1: sparse file larger than 4 GiB")
    func sparseFilePast4GiB() throws {
        let outside = try makeTemporaryDirectory(prefix: "realtools-sparse")
        defer { removeTree(outside) }
        let pattern = outside + "/pattern"
        try Self.expectSuccess(Self.shell(#"head -c 1048576 /dev/urandom > "$1""#, pattern), "make a pattern")
        let gib = 1 << 30

        try withMountedContainer { container in
            defer { Self.expectNoDenials(in: container) }
            let file = try container.scratch() + "/sparse.img"
            let write = try Self.shell("""
                set -e
                truncate -s 5G "$1"
                dd if="$2" of="$1" bs=1M seek=\(4 * gib + gib / 2) oflag=seek_bytes conv=notrunc status=none
                dd if="$2" of="$1" bs=1M seek=\(4 * gib - 1000) oflag=seek_bytes conv=notrunc status=none
                """, file, pattern)
            try Self.expectSuccess(write, "truncate -s 5G and dd at 4.5 GiB")

            var info = stat()
            #expect(stat(file, &info) == 0)
            #expect(Int(info.st_size) == 5 * gib, "size \(info.st_size), expected 5 GiB")
            #expect(Int(info.st_blocks) * 512 < 64 << 20, "a 5 GiB sparse file with 2 MiB of data has \(Int(info.st_blocks) * 512) bytes allocated")

            let reads = [
                ("data at 4.5 GiB", "cmp -n 1048576 -i \(4 * gib + gib / 2):0 \"$1\" \"$2\""),
                ("data across 4 GiB", "cmp -n 1048576 -i \(4 * gib - 1000):0 \"$1\" \"$2\""),
                ("hole at 2 GiB reads zeros", "cmp -n 1048576 -i \(2 * gib):0 \"$1\" /dev/zero"),
                ("hole just after the data at 4.5 GiB", "cmp -n 65536 -i \(4 * gib + gib / 2 + (1 << 20)):0 \"$1\" /dev/zero"),
                ("the last MiB reads zeros", "cmp -n 1048576 -i \(5 * gib - (1 << 20)):0 \"$1\" /dev/zero"),
                ("du reports the apparent size", "test \"$(du -b \"$1\" | cut -f1)\" = \(5 * gib)"),
                ("du reports little allocated", "test \"$(du -k \"$1\" | cut -f1)\" -lt 65536"),
            ]
            for (what, command) in reads {
                try Self.expectSuccess(Self.shell(command, file, pattern), what)
            }
            // The backing file holds the same.
            let backing = Self.backingOf(file, in: container)
            try Self.expectSuccess(Self.shell("cmp -n 1048576 -i \(4 * gib + gib / 2):0 \"$1\" \"$2\" && test \"$(stat -c %s \"$1\")\" = \(5 * gib)",
                                    backing, pattern), "backing file has the data at 4.5 GiB")

            try Self.expectSuccess(Self.shell(#"truncate -s 4G "$1""#, file), "truncate -s 4G")
            #expect(stat(file, &info) == 0 && Int(info.st_size) == 4 * gib, "size after truncate: \(info.st_size)")
            try Self.expectSuccess(Self.shell("cmp -n 1000 -i \(4 * gib - 1000):0 \"$1\" \"$2\"", file, pattern),
                                   "the bytes below 4 GiB survive the truncate")
            let pastEnd = try Self.shell(#"dd if="$1" bs=1 skip=$((4*1024*1024*1024)) count=10 status=none | wc -c"#, file)
            #expect(Self.trimmed(pastEnd.stdout) == "0", "read past the new EOF returned \(pastEnd.stdout) bytes")
        }
    }
}

// MARK: - The awkward tree, manifests, and helpers (also used by ConcurrencyTests.swift)

extension RealToolsTests {
    /// Builds `<folder>/tree` (see the file comment) and returns its path.
    static func buildAwkwardTree(in folder: String) throws -> String {
        let script = #"""
            set -e
            cd "$1"
            mkdir tree
            cd tree
            printf 'hello world\n' > a.txt
            ln a.txt hard-link-to-a
            mkdir 'sub dir' 'sub dir/deeper' empty sticky setgid
            printf 'spaced out\n' > 'sub dir/file with spaces.txt'
            printf 'newline\n' > "$(printf 'new\nline')"
            printf 'tab\n' > "$(printf 'tab\there')"
            printf 'dash\n' > ./-leading-dash
            printf 'accents\n' > 'café ☕ ünïcödé.txt'
            printf 'quote\n' > "it's \"quoted\" \\ back"
            printf 'not utf-8\n' > "$(printf 'latin1-\351t\351-\377-\001')"
            printf 'long\n' > "$(head -c 251 /dev/zero | tr '\0' 'n').txt"
            mkdir -p deep/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21/22/23/24/25/26/27/28/29/30
            printf 'deep\n' > deep/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17/18/19/20/21/22/23/24/25/26/27/28/29/30/bottom.txt
            mkfifo fifo
            head -c 200000 /dev/urandom > 'sub dir/deeper/random.bin'
            : > empty-file
            ln -s a.txt link-to-a
            ln -s 'sub dir/deeper' link-to-dir
            ln -s ../tree/a.txt link-up-and-back
            ln -s no-such-target dangling-link
            printf '#!/bin/sh\necho hi\n' > exec.sh
            chmod 755 exec.sh
            printf 'read only\n' > readonly.txt
            chmod 444 readonly.txt
            printf 'private\n' > private.txt
            chmod 600 private.txt
            printf 'owned\n' > owned.txt
            chown 1234:1234 owned.txt
            chmod 1777 sticky
            chmod 2775 setgid
            truncate -s 1M sparse.bin
            printf 'x' | dd of=sparse.bin bs=1 seek=500000 conv=notrunc status=none
            find . -depth -exec touch -h -d '2000-01-01 00:00:00.111111111' {} +
            setfattr -n user.color -v blue a.txt
            setfattr -n user.empty a.txt
            setfattr -n user.binary -v 0x00ff10fe 'sub dir/file with spaces.txt'
            setfattr -n user.folder -v marked 'sub dir'
            setfattr -n user.long -v "$(head -c 3000 /dev/zero | tr '\0' 'L')" empty
            touch -d '2001-02-03 04:05:06.123456789' a.txt
            touch -d '2002-03-04 05:06:07.5' 'sub dir/file with spaces.txt' readonly.txt owned.txt
            touch -d '2003-04-05 06:07:08.000000001' 'sub dir/deeper/random.bin' exec.sh private.txt sparse.bin
            touch -h -d '2004-05-06 07:08:09.987654321' link-to-a link-to-dir dangling-link link-up-and-back
            touch -d '2005-06-07 08:09:10.25' 'sub dir/deeper' empty sticky setgid
            touch -d '2006-07-08 09:10:11.75' 'sub dir'
            touch -d '2007-08-09 10:11:12.5' .
            """#
        try Self.expectSuccess(Self.shell(script, folder), "build the test tree")
        return folder + "/tree"
    }

    /// Python: one line per entry under a root, sorted by path (bytes):
    /// repr(path) type mode uid:gid size sha256|target mtime_ns xattrs [hardlink group].
    /// Folder sizes and link counts are left out (a detail of the file system's
    /// directory format); security.* and system.* xattrs too.
    static let manifestScript = #"""
    import hashlib, os, stat, sys
    root = os.fsencode(sys.argv[1])
    paths = [b'.']
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            paths.append(os.path.relpath(os.path.join(top, name), root))
    first_of_inode = {}
    for rel in sorted(paths):
        full = os.path.join(root, rel)
        st = os.lstat(full)
        fields = [repr(rel)[1:]]
        if stat.S_ISLNK(st.st_mode):
            fields += ['link', '-> ' + repr(os.readlink(full))[1:]]
        elif stat.S_ISDIR(st.st_mode):
            fields += ['dir', oct(stat.S_IMODE(st.st_mode))]
        elif stat.S_ISREG(st.st_mode):
            with open(full, 'rb') as f:
                digest = hashlib.sha256(f.read()).hexdigest()[:24]
            fields += ['file', oct(stat.S_IMODE(st.st_mode)), 'size=%d' % st.st_size, digest]
            if st.st_nlink > 1:
                key = (st.st_dev, st.st_ino)
                first_of_inode.setdefault(key, rel)
                fields.append('nlink=%d same-inode-as=%r' % (st.st_nlink, first_of_inode[key]))
        else:
            fields += ['other', oct(st.st_mode)]
        fields.append('owner=%d:%d' % (st.st_uid, st.st_gid))
        fields.append('mtime=%d' % st.st_mtime_ns)
        try:
            # The driver keeps the class each entry got at its creation (P3)
            # in the backing store; it is no attribute of the copied tree.
            names = sorted(n for n in os.listxattr(full, follow_symlinks=False)
                           if not n.startswith(('security.', 'system.', 'user.appsandboxfs.NSFileProtectionKey.')))
            fields += ['%s=%s' % (n, os.getxattr(full, n, follow_symlinks=False).hex()[:64]) for n in names]
        except OSError as e:
            fields.append('xattr-error=%s' % os.strerror(e.errno))
        print(' '.join(fields))
    """#

    /// The manifest of a tree (fails when python3 does).
    static func manifest(_ root: String) throws -> String {
        let result = runProcess(["python3", "-c", Self.manifestScript, root], timeout: 120)
        try Self.expectSuccess(result, "manifest of \(root)")
        return result.stdout
    }

    static func expectSameManifest(_ expected: String, _ actual: String, _ expectedLabel: String, _ actualLabel: String,
                                    sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(!expected.isEmpty && expected.split(separator: "\n").count > 10, "the manifest is too small to prove anything", sourceLocation: sourceLocation)
        if expected != actual {
            let difference = lineDifference(expected, actual, expectedLabel, actualLabel)
            Issue.record("\(actualLabel) differs from \(expectedLabel):\n\(difference)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - Helpers (also used by ConcurrencyTests.swift)

    /// Runs `/bin/sh -c script sh args...`: the arguments are "$1", "$2"...
    static func shell(_ script: String, _ arguments: String..., cwd: String? = nil, timeout: Double = 300) throws
        -> (status: Int32, stdout: String, stderr: String) {
        runProcess(["/bin/sh", "-c", script, "sh"] + arguments, cwd: cwd, timeout: timeout)
    }

    /// Records an issue (with the output) unless the command exited 0.
    static func expectSuccess(_ result: (status: Int32, stdout: String, stderr: String), _ what: String,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        if result.status != 0 {
            Issue.record("\(what): exit \(result.status)\n\(tail(result.stderr))\n\(tail(result.stdout, lines: 10))",
                         sourceLocation: sourceLocation)
        }
    }

    /// Nothing a test does in Documents, Library or tmp is a sandbox denial:
    /// the driver's denial log stays empty.
    static func expectNoDenials(in container: MountedContainer, sourceLocation: SourceLocation = #_sourceLocation) {
        let denials = container.denialLines()
        #expect(denials.isEmpty, "the driver logged \(denials.count) denials:\n\(denials.prefix(10).joined(separator: "\n"))",
                sourceLocation: sourceLocation)
    }

    /// The same path in the backing directory (for a path through the mount).
    static func backingOf(_ path: String, in container: MountedContainer) -> String {
        precondition(path.hasPrefix(container.mountpoint + "/"))
        return container.backingPath(String(path.dropFirst(container.mountpoint.count + 1)))
    }

    /// Lines only in one text or only in the other, in order (at most 30 of each).
    static func lineDifference(_ a: String, _ b: String, _ aLabel: String, _ bLabel: String) -> String {
        let aLines = a.split(separator: "\n", omittingEmptySubsequences: false)
        let bLines = b.split(separator: "\n", omittingEmptySubsequences: false)
        let aSet = Set(aLines), bSet = Set(bLines)
        let onlyA = aLines.filter { !bSet.contains($0) }
        let onlyB = bLines.filter { !aSet.contains($0) }
        var text = ""
        if onlyA.isEmpty && onlyB.isEmpty { text += "  (same lines, different order or repetition)\n" }
        for line in onlyA.prefix(30) { text += "  only in \(aLabel): \(line)\n" }
        for line in onlyB.prefix(30) { text += "  only in \(bLabel): \(line)\n" }
        return text
    }

    /// Text without leading and trailing white space.
    static func trimmed(_ text: String) -> String {
        String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
