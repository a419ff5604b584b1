// Signals and crashes under load (rule L3): eight writer processes keep
// writing through the mount while the driver is stopped.
//
// Each writer writes files once (fsync, close), appends to a log (fsync
// after each append), renames files it has synced to other zones and
// unlinks some, and after each call that returned it appends a line to a
// journal outside the mount: what is now durable. When the driver dies, a
// writer's next call fails and it stops.
//
// - SIGKILL in the middle: every journaled file must be in the backing
//   directory with exactly its bytes (append logs: at least the synced
//   prefix, byte for byte), every journaled rename and unlink done, and the
//   backing directory still a valid container; `unmount` cleans the stale
//   mount, a new mount shows the same bytes and empties tmp (T2).
// - SIGTERM and SIGINT in the middle: the driver exits 0, the mount is gone,
//   tmp is empty (T2), and everything journaled is there.
//
// Both with and without the writeback cache (with it, only fsync makes data
// durable, which is exactly what the journal records).

import Glibc
import Testing

extension ReliabilityHeavyTests {
    @Suite("Signals and crashes under load (L3)")
    struct Crashes {
        static let writers = 8
        /// Each writer journals at least this many entries before the signal.
        static let entriesBeforeSignal = 25

        struct Variant: Sendable, CustomTestStringConvertible {
            let signal: Int32
            let options: [String]
            var testDescription: String {
                let name = signal == SIGKILL ? "SIGKILL" : signal == SIGTERM ? "SIGTERM" : "SIGINT"
                return options.isEmpty ? name : "\(name) with \(options.joined(separator: " "))"
            }
        }

        static let variants = [
            Variant(signal: SIGKILL, options: []),
            Variant(signal: SIGKILL, options: ["--writeback"]),
            Variant(signal: SIGTERM, options: []),
            Variant(signal: SIGINT, options: ["--writeback"]),
        ]

        @Test("L3 a signal to the driver in the middle of eight writers loses nothing written and fsynced",
              arguments: variants)
        func signalUnderWriters(_ variant: Variant) throws {
            try withRulesMount { r in
                let outside = try makeTemporaryDirectory(prefix: "asfs-crash")
                defer { removeTree(outside) }
                let writerScript = outside + "/writer.py", verifyScript = outside + "/verify.py"
                try writeFile(writerScript, Self.writerSource)
                try writeFile(verifyScript, Self.verifySource)
                try writeFile(r.backingPath("tmp/left-before.txt"), "in tmp before the mount\n")
                try r.mountForeground(variant.options)
                for zone in Self.zones { #expect(mkdir(r.path(zone), 0o755) == 0, "mkdir \(zone): \(posixError(errno))") }

                var writers: [pid_t] = []
                defer {
                    for pid in writers where waitForExit(pid, timeout: 0) == nil { kill(pid, SIGKILL) }
                    for pid in writers { _ = waitForExit(pid, timeout: 30) }
                }
                let journals = (0..<Self.writers).map { outside + "/journal-\($0).txt" }
                for id in 0..<Self.writers {
                    try writeFile(journals[id], "")
                    try writeFile(outside + "/writer-\(id).out", "")
                    try writeFile(outside + "/writer-\(id).err", "")
                    writers.append(try spawn(["python3", writerScript, r.mountpoint, String(id), journals[id], String(4242 + id)],
                                             stdin: "/dev/null", stdout: outside + "/writer-\(id).out",
                                             stderr: outside + "/writer-\(id).err"))
                }
                // Let every writer get going, then stop the driver in the middle.
                let deadline = monotonicNow() + 60
                while monotonicNow() < deadline,
                      journals.contains(where: { Reliability.lines(readFileText($0)).count < Self.entriesBeforeSignal }),
                      writers.allSatisfy({ kill($0, 0) == 0 }) {
                    usleep(50_000)
                }
                usleep(UInt32.random(in: 0...300_000))
                let signalledAt = monotonicNow()
                r.signalDriver(variant.signal)
                let status = r.waitForDriverExit(timeout: 30)
                for pid in writers { _ = waitForExit(pid, timeout: 60) }
                let entries = journals.map { Reliability.lines(readFileText($0)).count }
                print("crash (\(variant.testDescription)): \(entries.reduce(0, +)) journaled entries across \(Self.writers) writers when signalled")

                // No writer met an error before the signal.
                for (id, journal) in journals.enumerated() {
                    for line in Reliability.lines(readFileText(journal)) where line.hasPrefix("E\t") {
                        let fields = line.split(separator: "\t", maxSplits: 2)
                        if fields.count == 3, let when = Double(fields[1]), when < signalledAt {
                            Issue.record("writer \(id) failed before the driver was signalled: \(fields[2])")
                        }
                    }
                    #expect(Reliability.lines(readFileText(journal)).count >= Self.entriesBeforeSignal,
                            "writer \(id) journaled too little: \(tail(readFileText(outside + "/writer-\(id).err"), lines: 5))")
                }

                if variant.signal == SIGKILL {
                    #expect(status == .signaled(SIGKILL), "\(String(describing: status))")
                    #expect(r.isMounted, "a killed driver leaves a stale mount")
                } else {
                    #expect(status == .exited(0), "the driver did not exit cleanly: \(String(describing: status))\n\(tail(r.stderrText()))")
                    #expect(!r.isMounted, "the mount is still there after \(variant.testDescription)")
                    #expect(RulesSys.list(r.backingPath("tmp")).rulesValue == [], "T2: tmp was not emptied")
                }

                // The backing directory: a valid container holding every journaled byte (tmp included).
                #expect(Reliability.containerProblems(r.backing).isEmpty, "\(Reliability.containerProblems(r.backing))")
                let tmpToo = variant.signal == SIGKILL
                let direct = runProcess(["python3", verifyScript, r.backing, tmpToo ? "with-tmp" : "without-tmp"] + journals,
                                        timeout: 300)
                #expect(direct.status == 0, "the backing directory lost journaled data:\n\(tail(direct.stdout + direct.stderr, lines: 30))")
                if variant.signal == SIGKILL {
                    #expect(access(r.backingPath("tmp/left-before.txt"), F_OK) != 0, "T2: the first mount did not empty tmp")
                    let cleaned = r.run(["unmount", r.mountpoint])
                    #expect(cleaned.status == 0, "unmount of the stale mount: \(cleaned.stderr)")
                    #expect(!r.isMounted)
                }

                // A new mount: it accepts the container, shows every byte, empties tmp.
                try r.mountForeground()
                let through = runProcess(["python3", verifyScript, r.mountpoint, "without-tmp"] + journals, timeout: 300)
                #expect(through.status == 0, "through a new mount:\n\(tail(through.stdout + through.stderr, lines: 30))")
                #expect(RulesSys.list(r.path("tmp")).rulesValue == [], "T2: the new mount did not empty tmp")
                let report = r.run(["backup-report", r.mountpoint, "--json"])
                #expect(report.status == 0, "backup-report of the container after the crash: \(report.stderr)")
                let unmount = r.run(["unmount", r.mountpoint])
                #expect(unmount.status == 0, "\(unmount.stderr)")
                #expect(r.waitForDriverExit() == .exited(0))
            }
        }

        /// The writers' folders (tmp is emptied by the next mount).
        static let zones = ["Documents/crash", "Library/crash", "Library/Application Support/crash", "tmp/crash"]

        // MARK: - The writer

        /// python3 writer.py MOUNT ID JOURNAL SEED: writes until a call fails,
        /// journaling what is durable (fields separated by tabs: the names
        /// hold spaces):
        ///   F <name> <sha256> <size>   a file written in full and fsynced
        ///   A <name> <length> <sha256> an append log fsynced at this length
        ///   R <old> <new>              a rename that returned
        ///   U <name>                   an unlink that returned
        ///   E <monotonic time> <error> the call that failed (then it stops)
        static let writerSource = #"""
import hashlib, os, random, sys, time

mount, wid, journal_path, seed = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rng = random.Random(seed)
zones = ['Documents/crash', 'Library/crash', 'Library/Application Support/crash', 'tmp/crash']
folders = ['%s/w%d' % (z, wid) for z in zones]
journal = os.open(journal_path, os.O_WRONLY | os.O_APPEND)
synced = []          # names of files written in full and fsynced, still there
serial = 0
log_name = '%s/log.bin' % folders[0]
log_hash = hashlib.sha256()
log_length = 0

def note(line):
    os.write(journal, (line + '\n').encode())

def P(rel):
    return os.path.join(mount, rel)

def fresh(folder=None):
    global serial
    serial += 1
    return '%s/f%d-%d.bin' % (folder or rng.choice(folders), wid, serial)

def write_file():
    rel = fresh()
    size = rng.choice([0, rng.randint(1, 4096), rng.randint(4096, 300000)])
    payload = rng.getrandbits(8 * size).to_bytes(size, 'little') if size else b''
    fd = os.open(P(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view[:65536]):]
        os.fsync(fd)
    finally:
        os.close(fd)
    note('F\t%s\t%s\t%d' % (rel, hashlib.sha256(payload).hexdigest(), size))
    synced.append(rel)

def append_log():
    global log_length
    chunk = rng.getrandbits(8 * 2048).to_bytes(2048, 'little')[:rng.randint(1, 2048)]
    fd = os.open(P(log_name), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    log_hash.update(chunk)
    log_length += len(chunk)
    note('A\t%s\t%d\t%s' % (log_name, log_length, log_hash.hexdigest()))

def rename_file():
    if not synced: return write_file()
    old = synced.pop(rng.randrange(len(synced)))
    new = fresh()
    # Tentative first: a driver killed after the backing rename but before
    # its answer fails this call, yet the rename happened.
    note('r\t%s\t%s' % (old, new))
    os.rename(P(old), P(new))
    note('R\t%s\t%s' % (old, new))
    synced.append(new)

def unlink_file():
    if len(synced) < 5: return write_file()
    rel = synced.pop(rng.randrange(len(synced)))
    note('u\t%s' % rel)
    os.unlink(P(rel))
    note('U\t%s' % rel)

try:
    for folder in folders:
        os.mkdir(P(folder))
    while True:
        op = rng.choices([write_file, append_log, rename_file, unlink_file], [5, 4, 3, 1])[0]
        op()
except OSError as e:
    note('E\t%.6f\t%s on %s' % (time.monotonic(), e.strerror, e.filename))
    sys.exit(0)
"""#

        /// python3 verify.py BASE with-tmp|without-tmp JOURNAL...: every
        /// journaled file is under BASE with its bytes, every journaled
        /// rename and unlink done, every append log holds its synced prefix.
        static let verifySource = #"""
import hashlib, os, sys
base, tmp_mode, journals = sys.argv[1], sys.argv[2], sys.argv[3:]
problems = []
checked = 0
for journal in journals:
    files, gone, logs = {}, set(), {}
    pending = None   # a rename or unlink begun, not known to have returned
    with open(journal) as f:
        for line in f:
            fields = line.rstrip('\n').split('\t')
            if not fields[0]: continue
            kind = fields[0]
            if kind in ('r', 'u'):
                pending = fields
                continue
            if kind != 'E':
                pending = None
            if kind == 'F':
                files[fields[1]] = (fields[2], int(fields[3]))
            elif kind == 'R':
                files[fields[2]] = files.pop(fields[1])
                gone.add(fields[1])
            elif kind == 'U':
                files.pop(fields[1], None)
                gone.add(fields[1])
            elif kind == 'A':
                logs[fields[1]] = (int(fields[2]), fields[3])
    keep = lambda rel: tmp_mode == 'with-tmp' or not rel.startswith('tmp/')
    # The call the driver's death interrupted may or may not have been done:
    # either state is right, the other names must not matter.
    if pending and pending[0] == 'r' and pending[1] in files:
        digest, size = files.pop(pending[1])
        old, new = pending[1], pending[2]
        if keep(old) and keep(new):
            checked += 1
            found = [rel for rel in (old, new) if os.path.lexists(os.path.join(base, rel))]
            if len(found) != 1:
                problems.append('%s -> %s (interrupted rename): found under %s' % (old, new, found or 'neither name'))
            else:
                with open(os.path.join(base, found[0]), 'rb') as f:
                    got = f.read()
                if len(got) != size or hashlib.sha256(got).hexdigest() != digest:
                    problems.append('%s: %d bytes that differ from the %d fsynced' % (found[0], len(got), size))
    elif pending and pending[0] == 'u':
        files.pop(pending[1], None)
    for rel, (digest, size) in sorted(files.items()):
        if not keep(rel): continue
        checked += 1
        try:
            with open(os.path.join(base, rel), 'rb') as f:
                got = f.read()
        except OSError as e:
            problems.append('%s: %s (journaled: %d bytes, fsynced)' % (rel, e.strerror, size))
            continue
        if len(got) != size or hashlib.sha256(got).hexdigest() != digest:
            problems.append('%s: %d bytes that differ from the %d fsynced' % (rel, len(got), size))
    for rel in sorted(gone):
        if keep(rel) and rel not in files and os.path.lexists(os.path.join(base, rel)):
            problems.append('%s: still there after a rename or unlink that returned' % rel)
    for rel, (length, digest) in logs.items():
        checked += 1
        try:
            with open(os.path.join(base, rel), 'rb') as f:
                got = f.read()
        except OSError as e:
            problems.append('%s: %s' % (rel, e.strerror))
            continue
        if len(got) < length or hashlib.sha256(got[:length]).hexdigest() != digest:
            problems.append('%s: %d bytes; its first %d (fsynced) differ or are missing' % (rel, len(got), length))
print('%d journaled files and logs checked, %d problems' % (checked, len(problems)))
for p in problems[:30]:
    print(p)
sys.exit(1 if problems or checked == 0 else 0)
"""#
    }
}
