// Rules W1-W3: Documents, Library and what lies below them are plain
// read-write POSIX folders, with the backing file system's own errors;
// SQLite works there; renames between Documents, Library and tmp work.
// (The differential suite goes deep into POSIX in one Documents folder; these
// tests run one broad script in every writable zone and check the rules.)

import Glibc
import Testing

/// One script of every kind of change W1 names, for fsprobe. Its output must
/// be the same in a plain folder and in any writable zone of a mount.
let rulesWritableScript = """
    # create, write, read, O_APPEND, fsync
    open 0 f.txt wronly|creat|excl 644
    write 0 "hello world"
    fsync 0
    close 0
    open 0 f.txt wronly|creat|excl 644
    open 1 f.txt rdonly
    read 1 100
    close 1
    open 2 f.txt wronly|append
    write 2 "!"
    fdatasync 2
    close 2
    stat f.txt
    # truncate, fallocate, mmap (shared: written back), ftruncate
    truncate f.txt 5
    stat f.txt size
    open 3 f.txt rdwr
    fallocate 3 0 0 8192
    fallocate 3 KEEP_SIZE 8192 4096
    fstat 3 size
    mmap_write 3 100 "MAPPED"
    mmap_read 3 100 6
    pread 3 6 100
    ftruncate 3 200
    fstat 3 size
    # locks
    flock 3 EX|NB
    flock 3 UN
    setlk 3 WR 0 10
    getlk 3 WR 0 10
    setlk 3 UN 0 10
    close 3
    # modes, owners, times
    chmod f.txt 600
    stat f.txt mode
    chown f.txt 1000 1001
    stat f.txt uid gid
    chown f.txt 0 0
    utimens f.txt 1000000000.5 1000000001.25
    stat f.txt atime mtime
    # folders, the backing's own errors
    mkdir d 750
    stat d mode
    mkdir d
    rmdir missing
    unlink missing
    open 4 missing/x rdonly
    open 4 d wronly
    # sparse and large (> 4 GiB)
    open 4 d/big rdwr|creat 600
    pwrite 4 "far" 5g
    fstat 4 size
    pread 4 3 5g
    pread 4 4 1g
    close 4
    # hard links, symbolic links
    link f.txt d/f-link
    stat f.txt nlink
    symlink f.txt s
    symlink ../f.txt d/s-up
    readlink s
    readlink d/s-up
    stat d/s-up size
    lstat s type
    # renames: plain, NOREPLACE, EXCHANGE
    rename f.txt f2.txt
    renameat2 f2.txt d/f-link NOREPLACE
    renameat2 f2.txt s EXCHANGE
    lstat f2.txt type
    lstat s type
    rename d/f-link d/moved
    rmdir d
    # extended attributes
    setxattr d/big user.test "value"
    getxattr d/big user.test
    listxattr d/big
    setxattr d/big user.test "v2" CREATE
    setxattr d/big user.none "v2" REPLACE
    setxattr d/big user.test "v2" REPLACE
    getxattr d/big user.test
    removexattr d/big user.test
    getxattr d/big user.test
    # mknod, clean-up
    mkfifo d/fifo
    lstat d/fifo type
    unlink d/fifo
    unlink d/big
    unlink d/s-up
    unlink d/moved
    rmdir d
    readdir . types
    """

@Suite("Rules: Documents and Library (W1-W3)")
struct WritableRulesTests {
    /// The writable places W1 speaks of: Documents, Library, and the folders
    /// below Library, plus a fresh subfolder of each.
    static let writableZones = [
        "Documents", "Documents/sub", "Library", "Library/Application Support", "Library/Caches",
        "Library/Caches/sub", "Library/Preferences", "Library/sub",
    ]

    @Test("W1 everything a POSIX file system does works in Documents, Library and below, with the backing's own errors")
    func posixWorksEverywhere() throws {
        let plain = try makeTemporaryDirectory(prefix: "asfs-rules-plain")
        defer { removeTree(plain) }
        try withRulesContainer { m in
            for (index, zone) in Self.writableZones.enumerated() {
                let reference = plain + "/\(index)"
                try makeDirectory(reference)
                let expected = runFSProbe(in: reference, script: rulesWritableScript)
                #expect(expected.status == 0 && !expected.lines.contains { $0.hasPrefix("bad") }, "\(expected)")

                let folder = m.path(zone) + "/w1-\(index)"
                #expect([0, EEXIST].contains(RulesSys.mkdir(m.path(zone))))
                #expect(RulesSys.mkdir(folder) == 0, "mkdir \(folder): \(posixError(errno))")
                let actual = runFSProbe(in: folder, script: rulesWritableScript)
                let difference = outputDifference(script: rulesWritableScript, expected: expected.lines,
                                                  actual: actual.lines, expectedLabel: "plain", actualLabel: zone)
                #expect(difference == nil, "W1 in \(zone):\n\(difference ?? "")")
                // The backing folder holds what the script left, as the plain one does.
                #expect(RulesSys.list(m.backingPath(zone) + "/w1-\(index)").rulesValue
                        == RulesSys.list(reference).rulesValue)
            }
            #expect(m.denialLines().isEmpty, "W1 wrote denial lines:\n\(m.denialLines().joined(separator: "\n"))")
        }
    }

    @Test("W1 the writable zones also take changes to their entries' modes, owners, times and attributes as root and as another user")
    func attributesAndOtherUsers() throws {
        try withRulesContainer { m in
            for zone in ["Documents", "Library", "Library/Caches", "Library/Preferences", "Library/Application Support"] {
                let file = m.path(zone) + "/owned.txt"
                m.expectAllowed("create in \(zone)") { RulesSys.open(file, O_WRONLY | O_CREAT, 0o644) }
                m.expectAllowed("chown in \(zone)") { RulesSys.chown(file, 65534, 65534) }
                m.expectAllowed("chmod in \(zone)") { RulesSys.chmod(file, 0o666) }
                m.expectAllowed("utimens in \(zone)") { RulesSys.utimens(file, atime: 1, mtime: 2) }
                m.expectAllowed("setxattr in \(zone)") { RulesSys.setxattr(file, "user.k", Array("v".utf8)) }
                let st = RulesSys.lstat(m.backingPath(zone) + "/owned.txt").rulesValue
                #expect(st.map { [$0.st_uid, $0.st_gid, UInt32($0.st_mode & 0o7777)] } == [65534, 65534, 0o666])
                #expect(st.map { $0.st_mtim.tv_sec } == 2)
                // nobody owns it now and may write it.
                let probe = runFSProbe(in: m.path(zone), script: """
                    open 0 owned.txt wronly|trunc
                    write 0 "by nobody"
                    close 0
                    chmod owned.txt 600
                    """, asUser: 65534)
                #expect(probe.lines == ["ok", "ok 9", "ok", "ok"], "\(zone): \(probe)")
                #expect(readFileText(m.backingPath(zone) + "/owned.txt") == "by nobody")
            }
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
        }
    }

    @Test("W2 SQLite works on a database in Documents and in Library, WAL mode included")
    func sqliteWorks() throws {
        try withRulesContainer { m in
            for folder in [m.documents, m.library, m.applicationSupport] {
                for mode in ["DELETE", "WAL"] {
                    let db = folder + "/store-\(mode).sqlite"
                    let create = runProcess(["sqlite3", db], stdin: """
                        PRAGMA journal_mode=\(mode);
                        CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT, blob BLOB);
                        BEGIN;
                        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
                          INSERT INTO notes(body, blob) SELECT 'note ' || i, randomblob(300) FROM n;
                        COMMIT;
                        UPDATE notes SET body = body || ' edited' WHERE id % 3 = 0;
                        DELETE FROM notes WHERE id % 7 = 0;
                        CREATE INDEX notes_body ON notes(body);
                        """)
                    #expect(create.status == 0, "\(db): \(create.stderr)")
                    #expect(create.stdout.lowercased().contains(mode.lowercased()), "journal mode: \(create.stdout)")

                    // A second process reads while a third writes (WAL's point), then checks.
                    let reader = runProcess(["sqlite3", db, "SELECT count(*) FROM notes; PRAGMA journal_mode;"])
                    #expect(reader.stdout == "1715\n\(mode.lowercased())\n", "\(db): \(reader)")
                    let writer = runProcess(["sqlite3", db, "INSERT INTO notes(body) VALUES('late'); SELECT count(*) FROM notes;"])
                    #expect(writer.stdout == "1716\n", "\(db): \(writer)")
                    let check = runProcess(["sqlite3", db, "PRAGMA integrity_check; SELECT count(*) FROM notes WHERE body LIKE '%edited';"])
                    #expect(check.stdout == "ok\n571\n", "\(db): \(check)")
                }
            }
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
        }
    }

    @Test("W2 a WAL database written through the mount is whole in the backing directory after unmount")
    func sqliteSurvivesUnmount() throws {
        try withRulesMount { r in
            try r.mountForeground()
            let db = r.path("Library/Application Support/app.sqlite")
            let create = runProcess(["sqlite3", db], stdin: """
                PRAGMA journal_mode=WAL;
                CREATE TABLE t(x);
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) INSERT INTO t SELECT i FROM n;
                """)
            #expect(create.status == 0, "\(create.stderr)")
            let unmount = r.run(["unmount", r.mountpoint])
            #expect(unmount.status == 0, "\(unmount.stderr)")
            #expect(r.waitForDriverExit() == .exited(0))
            let check = runProcess(["sqlite3", r.backingPath("Library/Application Support/app.sqlite"),
                                    "PRAGMA integrity_check; SELECT sum(x) FROM t;"])
            #expect(check.stdout == "ok\n125250\n", "\(check)")
        }
    }

    @Test("W3 renames between Documents, Library and tmp work (no EXDEV), files and folders alike")
    func renamesBetweenZones() throws {
        try withRulesContainer { m in
            try writeFile(m.backingPath("Documents/moving.txt"), "travels\n")
            try makeDirectory(m.backingPath("Documents/folder"))
            try writeFile(m.backingPath("Documents/folder/inside.txt"), "inside\n")
            let fileInode = RulesSys.lstat(m.backingPath("Documents/moving.txt")).rulesValue?.st_ino
            let folderInode = RulesSys.lstat(m.backingPath("Documents/folder")).rulesValue?.st_ino

            let hops = ["Documents", "Library", "tmp", "Library/Caches", "Library/Preferences",
                        "Library/Application Support", "tmp", "Documents/sub", "Library", "Documents"]
            try makeDirectory(m.backingPath("Documents/sub"))
            for (from, to) in zip(hops, hops.dropFirst()) {
                m.expectAllowed("rename a file \(from) -> \(to)") {
                    RulesSys.rename(m.path(from) + "/moving.txt", m.path(to) + "/moving.txt")
                }
                m.expectAllowed("rename a folder \(from) -> \(to)") {
                    RulesSys.rename(m.path(from) + "/folder", m.path(to) + "/folder")
                }
                #expect(RulesSys.lstat(m.backingPath(to) + "/moving.txt").rulesValue?.st_ino == fileInode,
                        "\(from) -> \(to) copied instead of renaming")
                #expect(RulesSys.lstat(m.backingPath(to) + "/folder").rulesValue?.st_ino == folderInode)
            }
            #expect(readFileText(m.documents + "/folder/inside.txt") == "inside\n")

            // The other kinds of rename cross zones too.
            try writeFile(m.backingPath("tmp/scratch.txt"), "from tmp\n")
            try writeFile(m.backingPath("Library/kept.txt"), "in Library\n")
            m.expectAllowed("RENAME_EXCHANGE Documents <-> tmp") {
                RulesSys.renameat2(m.documents + "/moving.txt", m.tmp + "/scratch.txt", RulesLinux.renameExchange)
            }
            #expect(readFileText(m.backingPath("Documents/moving.txt")) == "from tmp\n")
            #expect(readFileText(m.backingPath("tmp/scratch.txt")) == "travels\n")
            m.expectPassedThrough("RENAME_NOREPLACE onto an existing name", EEXIST) {
                RulesSys.renameat2(m.tmp + "/scratch.txt", m.library + "/kept.txt", RulesLinux.renameNoReplace)
            }
            m.expectAllowed("RENAME_NOREPLACE tmp -> Library") {
                RulesSys.renameat2(m.tmp + "/scratch.txt", m.library + "/scratch.txt", RulesLinux.renameNoReplace)
            }
            m.expectAllowed("rename Library -> Documents, replacing") {
                RulesSys.rename(m.library + "/kept.txt", m.documents + "/moving.txt")
            }
            #expect(readFileText(m.backingPath("Documents/moving.txt")) == "in Library\n")
            // mv (rename(2), falling back to copy only on EXDEV, which must not come).
            let mv = runProcess(["mv", "-v", m.documents + "/folder", m.tmp + "/"])
            #expect(mv.status == 0, "\(mv.stderr)")
            #expect(RulesSys.lstat(m.backingPath("tmp/folder")).rulesValue?.st_ino == folderInode)
            #expect(m.denialLines().isEmpty, "\(m.denialLines())")
        }
    }
}
