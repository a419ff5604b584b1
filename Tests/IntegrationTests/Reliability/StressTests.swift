// Load: sixteen processes at once in one mount, a fixed number of mixed
// metadata and data operations each, with files and folders renamed across
// zones (Documents, Library/Application Support, Library/Caches, tmp), hard
// and symbolic links, xattrs, many descriptors open at once, and a shared
// folder where the workers rename whole records in, read them and take them
// out under each other's feet.
//
// Each worker knows exactly what its own folders hold (names, bytes, link
// counts, modes, link targets, xattrs) and checks every answer at once; the
// only error tolerated is ENOENT in the shared folder. At the end every
// worker's folders must equal its model through the mount and in the
// backing directory.
//
// Then the driver's resources: once the kernel forgets the inodes it holds
// (drop_caches), the driver's open descriptors must be back to where they
// were before the run, and its resident memory close to it. The baseline is
// taken after a short warm-up run of the same workload (the first requests
// grow the allocator's arenas and start the worker threads once for all).
//
// The run is bounded by operation count; the deadline is only a hang
// detector. Longer by hand (operations per worker; workers):
//   STRESS_OPS=20000 STRESS_WORKERS=32 \
//     swift test --scratch-path .build-rel --skip-build --filter Stress

import Glibc
import Testing

extension ReliabilityHeavyTests {
    @Suite("Load: sixteen processes, mixed operations across zones, resources come back")
    struct Stress {
        static var workers: Int { Reliability.count("STRESS_WORKERS", default: 16) }
        /// Per worker: STRESS_OPS, else 1,500 (16 x 1,500 = 24,000 operations).
        static var operationsPerWorker: Int { Reliability.count("STRESS_OPS", default: 1_500) }
        /// A hang detector, not a speed goal.
        static var hangDeadline: Double {
            240 * max(1, Double(operationsPerWorker * workers) / 24_000)
        }
        /// How much the driver's resident memory may stay above the
        /// baseline once the kernel has forgotten everything: the allocator
        /// keeps some freed memory, the node table keeps its capacity.
        static let residentSlackKiB = 24 * 1024
        /// How much more a second round may leave (a leak of 350 bytes per
        /// operation would exceed it).
        static let roundGrowthSlackKiB = 8 * 1024

        /// RELIABILITY_SANITIZED=1 (mount-scripts/sanitizers.sh): the driver
        /// is built with a sanitizer, whose memory use says nothing about the
        /// driver's; the memory bounds are not checked, the descriptors are.
        static var sanitized: Bool { environment("RELIABILITY_SANITIZED") == "1" }

        static let zones = ["Documents/stress", "Library/Application Support/stress", "Library/Caches/stress", "tmp/stress"]

        @Test("16 workers, a fixed number of mixed operations: no hang, no unexpected error, models intact; descriptors and memory come back")
        func sixteenWorkers() throws {
            let outside = try makeTemporaryDirectory(prefix: "asfs-stress")
            defer { removeTree(outside) }
            let workerScript = outside + "/stress-worker.py", verifyScript = outside + "/stress-verify.py"
            try writeFile(workerScript, Self.workerSource)
            try writeFile(verifyScript, Self.verifySource)

            try withMountedContainer { m in
                defer { RealToolsTests.expectNoDenials(in: m) }
                let pid = m.driverPID
                for zone in Self.zones { #expect(mkdir(m.path(zone), 0o755) == 0, "mkdir \(zone): \(posixError(errno))") }
                #expect(mkdir(m.path("Documents/stress/shared"), 0o755) == 0)

                // Warm-up: the same workload, short; then everything it made goes.
                let warm = Self.runWorkers(script: workerScript, root: m.mountpoint, outside: outside, tag: "warm",
                                           workers: Self.workers, operations: 60, seed: 7)
                #expect(warm.failures.isEmpty, "warm-up: \(warm.failures.joined(separator: "\n"))")
                Self.removeWorkerFolders(m, workers: Self.workers)
                let baseFDs = try #require(Reliability.settleDescriptors(of: pid), "no /proc/\(pid)/fd")
                let baseRSS = try #require(Reliability.residentKiB(of: pid), "no VmRSS in /proc/\(pid)/status")
                print("stress: baseline after warm-up: \(baseFDs) descriptors, RSS \(baseRSS) KiB, \(Reliability.threads(of: pid) ?? -1) threads")

                // Two rounds of the full run (other seeds): the second must not
                // grow the driver's memory further (a leak per operation would).
                var residentAfter: [Int] = []
                for round in 1...2 {
                    let started = monotonicNow()
                    let tag = "main\(round)"
                    let run = Self.runWorkers(script: workerScript, root: m.mountpoint, outside: outside, tag: tag,
                                              workers: Self.workers, operations: Self.operationsPerWorker,
                                              seed: 20_241_122 + round, driver: pid)
                    let seconds = monotonicNow() - started
                    print("stress: round \(round): \(Self.workers) workers x \(Self.operationsPerWorker) operations in \(String(format: "%.1f", seconds)) s; driver peak \(run.peakFDs) descriptors, peak RSS \(run.peakRSS) KiB")
                    #expect(run.hung.isEmpty, "round \(round): workers \(run.hung) were still running after \(Int(Self.hangDeadline)) s (a hang?); killed")
                    #expect(run.failures.isEmpty, "round \(round): \(run.failures.count) workers failed:\n\(run.failures.prefix(4).joined(separator: "\n"))")
                    #expect(kill(pid, 0) == 0, "the driver is gone")
                    #expect(m.isMounted, "the mount is gone")
                    guard run.failures.isEmpty, m.isMounted else { return }

                    // Every worker's folders equal its model, through the mount and in the backing directory.
                    for worker in 0..<Self.workers {
                        for (label, base) in [("mount", m.mountpoint), ("backing", m.backing)] {
                            let check = runProcess(["python3", verifyScript, base, String(worker), outside + "/\(tag)-\(worker).json"],
                                                   timeout: 300)
                            #expect(check.status == 0,
                                    "round \(round): worker \(worker)'s folders in the \(label) differ from its model:\n\(tail(check.stdout + check.stderr, lines: 20))")
                        }
                    }

                    // The kernel forgets the inodes (the files are still there):
                    // the driver closes their descriptors.
                    let afterForget = Reliability.settleDescriptors(of: pid) ?? -1
                    #expect(afterForget <= baseFDs + 2,
                            "round \(round): after the kernel forgot the inodes the driver holds \(afterForget) descriptors, \(baseFDs) before")
                    Self.removeWorkerFolders(m, workers: Self.workers)
                    let afterRemove = Reliability.settleDescriptors(of: pid) ?? -1
                    let rss = Reliability.residentKiB(of: pid) ?? Int.max
                    residentAfter.append(rss)
                    print("stress: round \(round): after forget \(afterForget) descriptors; after removing everything \(afterRemove) descriptors, RSS \(rss) KiB (baseline \(baseFDs), \(baseRSS) KiB)")
                    #expect(afterRemove <= baseFDs + 2, "round \(round): the driver holds \(afterRemove) descriptors, \(baseFDs) before")
                    if !Self.sanitized {
                        #expect(rss <= baseRSS + Self.residentSlackKiB,
                                "round \(round): the driver's RSS is \(rss) KiB, \(baseRSS) KiB before the run (peak \(run.peakRSS) KiB)")
                    }
                }
                if residentAfter.count == 2 && !Self.sanitized {
                    #expect(residentAfter[1] <= residentAfter[0] + Self.roundGrowthSlackKiB,
                            "the driver's RSS grew from \(residentAfter[0]) to \(residentAfter[1]) KiB in a second identical round (a leak?)")
                }
            }
        }

        // MARK: Running the workers

        struct Outcome {
            var failures: [String] = []
            var failed: Set<Int> = []
            var hung: [Int] = []
            var peakFDs = 0
            var peakRSS = 0
        }

        /// Starts `workers` workers, waits for all under the hang deadline
        /// (sampling the driver's descriptors and memory meanwhile).
        static func runWorkers(script: String, root: String, outside: String, tag: String, workers: Int,
                               operations: Int, seed: Int, driver: pid_t? = nil) -> Outcome {
            var outcome = Outcome()
            var running: [Int: pid_t] = [:]
            for id in 0..<workers {
                let stdout = outside + "/\(tag)-\(id).json", stderr = outside + "/\(tag)-\(id).err"
                do {
                    try writeFile(stdout, "")
                    try writeFile(stderr, "")
                    running[id] = try spawn(["python3", script, root, String(id), String(operations), String(seed)],
                                            stdin: "/dev/null", stdout: stdout, stderr: stderr)
                } catch {
                    outcome.failures.append("worker \(id): \(error)")
                    outcome.failed.insert(id)
                }
            }
            let deadline = monotonicNow() + hangDeadline
            while !running.isEmpty && monotonicNow() < deadline {
                for (id, pid) in running {
                    guard let status = waitForExit(pid, timeout: 0) else { continue }
                    running[id] = nil
                    if status != .exited(0) {
                        outcome.failed.insert(id)
                        outcome.failures.append("worker \(id) (\(tag)): \(status): \(tail(readFileText(outside + "/\(tag)-\(id).err"), lines: 8))")
                    }
                }
                if let driver {
                    outcome.peakFDs = max(outcome.peakFDs, Reliability.openDescriptors(of: driver) ?? 0)
                    outcome.peakRSS = max(outcome.peakRSS, Reliability.residentKiB(of: driver) ?? 0)
                }
                usleep(100_000)
            }
            for (id, pid) in running {
                kill(pid, SIGKILL)
                _ = waitForExit(pid, timeout: 30)
                outcome.hung.append(id)
                outcome.failed.insert(id)
            }
            return outcome
        }

        static func removeWorkerFolders(_ m: MountedContainer, workers: Int) {
            for zone in zones {
                for id in 0..<workers {
                    _ = runProcess(["rm", "-rf", m.path("\(zone)/w\(id)")], timeout: 120)
                }
            }
            for name in RulesSys.list(m.path("Documents/stress/shared")).rulesValue ?? [] {
                _ = runProcess(["rm", "-rf", m.path("Documents/stress/shared/" + name)], timeout: 120)
            }
        }

        // MARK: - The worker

        /// python3 stress-worker.py ROOT ID OPS SEED: works in ROOT/<zone>/stress/wID
        /// for the four zones and in ROOT/Documents/stress/shared; prints its
        /// model as JSON at the end; exit 0, or 3 with the reason on standard
        /// error at the first wrong answer.
        static let workerSource = #"""
import errno, hashlib, json, os, random, stat, sys

root, wid, nops, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed * 1000 + wid)
ZONES = ['Documents/stress', 'Library/Application Support/stress', 'Library/Caches/stress', 'tmp/stress']
tops = ['%s/w%d' % (z, wid) for z in ZONES]
shared = 'Documents/stress/shared'
names = {}     # file name (relative to root) -> file id
data = {}      # file id -> bytes
fattr = {}     # file id -> {xattr name: value}
fmode = {}     # file id -> mode
dirs = set(tops)
links = {}     # symbolic link name -> target
serial = 0
index = 0
counts = {}

def fail(message):
    sys.stderr.write('stress worker %d, operation %s: %s\n' % (wid, index, message))
    sys.exit(3)

def P(rel):
    return os.path.join(root, rel)

def new_serial():
    global serial
    serial += 1
    return serial

\#(SelfCheckingRecord.python)

def read_all(path):
    with open(path, 'rb') as f:
        return f.read()

def write_new(path, payload, sync):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view):]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)

def nlinks(fid):
    return sum(1 for f in names.values() if f == fid)

def pick_name():
    return rng.choice(sorted(names)) if names else None

def pick_dir():
    return rng.choice(sorted(dirs))

def fresh(prefix):
    return '%s/%s%d-%d' % (pick_dir(), prefix, wid, new_serial())

def entries_in(folder):
    want = set()
    for rel in list(names) + list(dirs) + list(links):
        parent, _, leaf = rel.rpartition('/')
        if parent == folder:
            want.add(leaf)
    return want

def drop_name(rel):
    fid = names.pop(rel)
    if nlinks(fid) == 0:
        del data[fid]
        fattr.pop(fid, None)
        fmode.pop(fid, None)

def move_prefix(old, new):
    for table in (names, links):
        for rel in [r for r in table if r == old or r.startswith(old + '/')]:
            table[new + rel[len(old):]] = table.pop(rel)
    for rel in [r for r in dirs if r == old or r.startswith(old + '/')]:
        dirs.discard(rel)
        dirs.add(new + rel[len(old):])

# ---- own folders: exact answers ----

def op_create():
    rel = fresh('f')
    payload = random_bytes(rng.choice([0, rng.randint(1, 4096), rng.randint(1, 65536)]))
    write_new(P(rel), payload, rng.random() < 0.2)
    fid = new_serial()
    names[rel] = fid
    data[fid] = payload

def op_read():
    rel = pick_name()
    if rel is None: return op_create()
    got = read_all(P(rel))
    want = data[names[rel]]
    if got != want:
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        fail('read %s: %d bytes, expected %d, first difference at %d' % (rel, len(got), len(want), first))

def op_pwrite():
    rel = pick_name()
    if rel is None: return op_create()
    fid = names[rel]
    old = data[fid]
    offset = rng.randint(0, len(old) + 4096)
    chunk = random_bytes(rng.randint(1, 32768))
    fd = os.open(P(rel), os.O_WRONLY)
    try:
        if os.pwrite(fd, chunk, offset) != len(chunk): fail('short pwrite to %s' % rel)
        if rng.random() < 0.2: os.fsync(fd)
    finally:
        os.close(fd)
    if offset > len(old): old = old + bytes(offset - len(old))
    data[fid] = old[:offset] + chunk + old[offset + len(chunk):]

def op_append():
    rel = pick_name()
    if rel is None: return op_create()
    chunk = random_bytes(rng.randint(1, 8192))
    fd = os.open(P(rel), os.O_WRONLY | os.O_APPEND)
    try:
        view = memoryview(chunk)
        while view: view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    data[names[rel]] += chunk

def op_truncate():
    rel = pick_name()
    if rel is None: return op_create()
    fid = names[rel]
    size = rng.randint(0, len(data[fid]) + 8192)
    os.truncate(P(rel), size)
    data[fid] = data[fid][:size] + bytes(max(0, size - len(data[fid])))

def op_rename_file():
    rel = pick_name()
    if rel is None: return op_create()
    if names and rng.random() < 0.25:
        target = pick_name()          # over another of our files (maybe the same file)
    else:
        target = fresh('r')
    os.rename(P(rel), P(target))
    if target == rel or names.get(target) == names[rel]:
        return                          # the same file: rename does nothing
    if target in names: drop_name(target)
    names[target] = names.pop(rel)

def op_rename_dir():
    movable = sorted(d for d in dirs if d not in tops)
    if not movable: return op_mkdir()
    rel = rng.choice(movable)
    # Folders moved into folders nest ever deeper: keep paths at 14 levels at most.
    below = max(d.count('/') for d in dirs if d == rel or d.startswith(rel + '/')) - rel.count('/')
    parents = sorted(d for d in dirs if d != rel and not d.startswith(rel + '/') and d.count('/') + 1 + below <= 14)
    if not parents: return op_mkdir()
    target = '%s/m%d-%d' % (rng.choice(parents), wid, new_serial())
    os.rename(P(rel), P(target))
    move_prefix(rel, target)

def op_mkdir():
    rel = fresh('d')
    os.mkdir(P(rel))
    dirs.add(rel)

def op_rmdir():
    candidates = sorted(d for d in dirs if d not in tops)
    if not candidates: return op_mkdir()
    rel = rng.choice(candidates)
    if entries_in(rel):
        try:
            os.rmdir(P(rel))
            fail('rmdir of non-empty %s succeeded' % rel)
        except OSError as e:
            if e.errno != errno.ENOTEMPTY: fail('rmdir of non-empty %s: %s, expected ENOTEMPTY' % (rel, e))
    else:
        os.rmdir(P(rel))
        dirs.discard(rel)

def op_unlink():
    if links and rng.random() < 0.2:
        rel = rng.choice(sorted(links))
        os.unlink(P(rel))
        del links[rel]
        return
    rel = pick_name()
    if rel is None: return op_create()
    os.unlink(P(rel))
    drop_name(rel)

def op_link():
    rel = pick_name()
    if rel is None: return op_create()
    target = fresh('h')
    os.link(P(rel), P(target))
    names[target] = names[rel]
    st = os.lstat(P(target))
    if st.st_nlink != nlinks(names[rel]):
        fail('link %s -> %s: nlink %d, expected %d' % (rel, target, st.st_nlink, nlinks(names[rel])))

def op_symlink():
    rel = pick_name()
    if rel is None: return op_create()
    folder, _, leaf = rel.rpartition('/')
    link = '%s/l%d-%d' % (folder, wid, new_serial())
    os.symlink(leaf, P(link))
    links[link] = leaf
    if os.readlink(P(link)) != leaf: fail('readlink %s: %r, expected %r' % (link, os.readlink(P(link)), leaf))
    if read_all(P(link)) != data[names[rel]]: fail('reading through the link %s differs from %s' % (link, rel))

def op_stat():
    rel = pick_name()
    if rel is None: return op_create()
    st = os.lstat(P(rel))
    fid = names[rel]
    if not stat.S_ISREG(st.st_mode) or st.st_size != len(data[fid]) or st.st_nlink != nlinks(fid):
        fail('stat %s: mode %o size %d nlink %d, expected a file of %d bytes with %d links' % (
            rel, st.st_mode, st.st_size, st.st_nlink, len(data[fid]), nlinks(fid)))
    if fid in fmode and stat.S_IMODE(st.st_mode) != fmode[fid]:
        fail('stat %s: mode %o, expected %o' % (rel, stat.S_IMODE(st.st_mode), fmode[fid]))

def op_chmod():
    rel = pick_name()
    if rel is None: return op_create()
    mode = rng.choice([0o600, 0o640, 0o644, 0o664, 0o444])
    os.chmod(P(rel), mode)
    fmode[names[rel]] = mode
    if stat.S_IMODE(os.stat(P(rel)).st_mode) != mode: fail('chmod %s %o did not stick' % (rel, mode))

def op_utime():
    rel = pick_name()
    if rel is None: return op_create()
    when = rng.randint(10**9, 2 * 10**9) * 10**9 + rng.randint(0, 10**9 - 1)
    os.utime(P(rel), ns=(when, when))
    got = os.stat(P(rel)).st_mtime_ns
    if got != when: fail('utime %s: mtime %d, expected %d' % (rel, got, when))

def op_xattr():
    rel = pick_name()
    if rel is None: return op_create()
    attrs = fattr.setdefault(names[rel], {})
    choice = rng.random()
    if choice < 0.5 or not attrs:
        name = 'user.s%d.%d' % (wid, rng.randint(0, 3))
        value = random_bytes(rng.randint(0, 300))
        os.setxattr(P(rel), name, value)
        attrs[name] = value
    elif choice < 0.8:
        name = rng.choice(sorted(attrs))
        got = os.getxattr(P(rel), name)
        if got != attrs[name]: fail('getxattr %s %s differs' % (rel, name))
    else:
        name = rng.choice(sorted(attrs))
        os.removexattr(P(rel), name)
        del attrs[name]
    listed = sorted(n for n in os.listxattr(P(rel)) if n.startswith('user.s'))
    if listed != sorted(attrs): fail('listxattr %s: %s, expected %s' % (rel, listed, sorted(attrs)))

def op_listdir():
    folder = pick_dir()
    got = set(os.listdir(P(folder)))
    want = entries_in(folder)
    if got != want:
        fail('listdir %s: extra %s, missing %s' % (folder, sorted(got - want)[:5], sorted(want - got)[:5]))

def op_many_open():
    """Many descriptors at once, each read from, then all closed."""
    if not names: return op_create()
    chosen = [rng.choice(sorted(names)) for _ in range(rng.randint(8, 48))]
    fds = []
    try:
        for rel in chosen:
            fds.append((rel, os.open(P(rel), os.O_RDONLY)))
        for rel, fd in fds:
            want = data[names[rel]][:64]
            got = os.pread(fd, 64, 0)
            if got != want: fail('pread of %s through one of many descriptors differs' % rel)
    finally:
        for _, fd in fds: os.close(fd)

# ---- the shared folder (others interfere: ENOENT is the only error tolerated) ----

def shared_names():
    try:
        return sorted(os.listdir(P(shared)))
    except OSError as e:
        fail('listdir shared: %s' % e)

def op_publish():
    temp = fresh('p')
    write_new(P(temp), record(rng.randint(0, 16384)), rng.random() < 0.3)
    existing = shared_names()
    target = rng.choice(existing) if existing and rng.random() < 0.3 else 's%d-%d' % (wid, new_serial())
    os.rename(P(temp), P(shared + '/' + target))

def op_shared_read():
    listed = shared_names()
    if not listed: return op_publish()
    try:
        got = read_all(P(shared + '/' + rng.choice(listed)))
    except FileNotFoundError:
        return
    if not whole_record(got): fail('a shared file is not a whole record (%d bytes)' % len(got))

def op_shared_take():
    """Take a record: only one taker wins. The taken file is never written
    again (a reader may hold it open): keep a copy, unlink the taken one."""
    listed = shared_names()
    if not listed: return op_publish()
    taken = fresh('t')
    try:
        os.rename(P(shared + '/' + rng.choice(listed)), P(taken))
    except FileNotFoundError:
        return
    got = read_all(P(taken))
    if not whole_record(got): fail('taken file %s is not a whole record (%d bytes)' % (taken, len(got)))
    copy = fresh('c')
    write_new(P(copy), got, False)
    os.unlink(P(taken))
    fid = new_serial()
    names[copy] = fid
    data[fid] = got

def op_shared_unlink():
    listed = shared_names()
    if not listed: return op_publish()
    try:
        os.unlink(P(shared + '/' + rng.choice(listed)))
    except FileNotFoundError:
        pass

for top in tops:
    os.mkdir(P(top))
operations = [
    (op_create, 10), (op_read, 12), (op_pwrite, 8), (op_append, 4), (op_truncate, 4),
    (op_rename_file, 9), (op_rename_dir, 3), (op_mkdir, 4), (op_rmdir, 3), (op_unlink, 5),
    (op_link, 3), (op_symlink, 2), (op_stat, 5), (op_chmod, 2), (op_utime, 2), (op_xattr, 5),
    (op_listdir, 4), (op_many_open, 2),
    (op_publish, 5), (op_shared_read, 4), (op_shared_take, 3), (op_shared_unlink, 2),
]
functions = [f for f, _ in operations]
weights = [w for _, w in operations]
for index in range(1, nops + 1):
    op = rng.choices(functions, weights)[0]
    counts[op.__name__] = counts.get(op.__name__, 0) + 1
    try:
        op()
    except SystemExit:
        raise
    except OSError as e:
        fail('%s: unexpected %s (%s) on %s' % (op.__name__, errno.errorcode.get(e.errno, e.errno), e.strerror, e.filename))

index = 'final'
for rel in sorted(names):
    if read_all(P(rel)) != data[names[rel]]:
        fail('final read of %s differs' % rel)
json.dump({
    'tops': tops,
    'files': {rel: hashlib.sha256(data[fid]).hexdigest() for rel, fid in names.items()},
    'nlink': {rel: nlinks(fid) for rel, fid in names.items()},
    'modes': {rel: fmode[fid] for rel, fid in names.items() if fid in fmode},
    'xattrs': {rel: {n: v.hex() for n, v in fattr.get(fid, {}).items()} for rel, fid in names.items()},
    'dirs': sorted(dirs),
    'links': links,
    'counts': counts,
}, sys.stdout, sort_keys=True)
"""#

        /// python3 stress-verify.py BASE ID MODEL.json: the worker's four
        /// folders under BASE hold exactly its model.
        static let verifySource = #"""
import hashlib, json, os, stat, sys
base, wid, model_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(model_path) as f:
    model = json.load(f)
problems = []
found_files, found_dirs, found_links = {}, set(), {}
for top in model['tops']:
    found_dirs.add(top)
    for folder, subdirs, files in os.walk(os.path.join(base, top)):
        rel_folder = os.path.relpath(folder, base)
        for d in subdirs:
            path = os.path.join(folder, d)
            if os.path.islink(path):
                found_links[os.path.join(rel_folder, d)] = os.readlink(path)
            else:
                found_dirs.add(os.path.join(rel_folder, d))
        for name in files:
            path = os.path.join(folder, name)
            rel = os.path.join(rel_folder, name)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                found_links[rel] = os.readlink(path)
                continue
            with open(path, 'rb') as f:
                found_files[rel] = hashlib.sha256(f.read()).hexdigest()
            if st.st_nlink != model['nlink'].get(rel, -1):
                problems.append('%s: nlink %d, expected %s' % (rel, st.st_nlink, model['nlink'].get(rel)))
            want_mode = model['modes'].get(rel)
            if want_mode is not None and stat.S_IMODE(st.st_mode) != want_mode:
                problems.append('%s: mode %o, expected %o' % (rel, stat.S_IMODE(st.st_mode), want_mode))
            got_x = {n: os.getxattr(path, n).hex() for n in os.listxattr(path) if n.startswith('user.s')}
            if got_x != model['xattrs'].get(rel, {}):
                problems.append('%s: xattrs %s, expected %s' % (rel, sorted(got_x), sorted(model['xattrs'].get(rel, {}))))
for rel in sorted(set(model['files']) | set(found_files)):
    if model['files'].get(rel) != found_files.get(rel):
        problems.append('%s: expected %s, found %s' % (rel, (model['files'].get(rel) or 'nothing')[:16],
                                                      (found_files.get(rel) or 'nothing')[:16]))
if found_dirs != set(model['dirs']):
    problems.append('folders: extra %s, missing %s' % (sorted(found_dirs - set(model['dirs']))[:5],
                                                        sorted(set(model['dirs']) - found_dirs)[:5]))
if found_links != model['links']:
    problems.append('symbolic links differ: extra %s, missing %s' % (
        sorted(set(found_links) - set(model['links']))[:5], sorted(set(model['links']) - set(found_links))[:5]))
for name in ['op_create', 'op_read', 'op_rename_file', 'op_rename_dir', 'op_link', 'op_xattr', 'op_publish', 'op_shared_take']:
    if model['counts'].get(name, 0) == 0:
        problems.append('the worker never ran %s' % name)
for p in problems[:30]:
    print(p)
sys.exit(1 if problems else 0)
"""#
    }
}
