// Eight processes at once in one mount (W1 under contention): each does a
// fixed number of mixed operations (create, write, read, truncate, rename,
// unlink, mkdir, rmdir, stat, readdir, xattrs) in its own folder, where it
// knows exactly what must be there, and in a shared folder, where the others
// rename files in, take them out and delete them under its feet.
//
// Own folder: every read, stat, listing and xattr is checked against the
// worker's model at once; rmdir of a non-empty folder must give ENOTEMPTY.
// (Its xattrs are named user.w<id>.<n>; others may add user.shared-touch to
// a file while it is in the shared folder, which the checks ignore.)
// Shared folder: files arrive only by rename of a complete file, and each
// holds a self-checking record (magic, length, body, SHA-256), so any file a
// process opens there must be whole; ENOENT is the only error tolerated
// there (another process got there first). A file taken out of the shared
// folder is never written again (the taker works on a copy): a reader that
// opened it before the take still holds it, and would see the change. At the end every worker's folder
// must hold exactly its model (through the mount and in the backing
// directory), the driver must still run, and `ls -lR` of the mount must work.
//
// The run is bounded by operation count; the deadline is only a hang detector.
// Longer by hand: CONCURRENCY_OPS=20000 swift test --scratch-path .build-tools --filter Concurrency
// (the deadline grows with the count).

import Glibc
import Testing

@Suite("Concurrency: eight processes in one mount")
struct ConcurrencyTests {
    static let workers = 8
    /// 1500 each; CONCURRENCY_OPS=N runs N each (longer runs by hand).
    static var operationsPerWorker: Int { environment("CONCURRENCY_OPS").flatMap { Int($0) } ?? 1500 }
    /// A hang detector, not a speed goal: workers still running then are killed.
    static var hangDeadline: Double { 120 * max(1, Double(operationsPerWorker) / 1500) }

    @Test("W1: eight processes doing mixed operations, own and shared folders")
    func eightProcessesMixedOperations() throws {
        let outside = try makeTemporaryDirectory(prefix: "concurrency")
        defer { removeTree(outside) }
        let workerScript = outside + "/worker.py"
        let verifyScript = outside + "/verify.py"
        try writeFile(workerScript, Self.workerSource)
        try writeFile(verifyScript, Self.verifySource)

        try withMountedContainer { container in
            defer { RealToolsTests.expectNoDenials(in: container) }
            let root = try container.scratch()
            #expect(mkdir(root + "/shared", 0o755) == 0)

            // Start all eight, then wait for each under one deadline.
            var running: [(id: Int, pid: pid_t, stdout: String, stderr: String)] = []
            for id in 0..<Self.workers {
                let stdout = outside + "/worker-\(id).json", stderr = outside + "/worker-\(id).err"
                try writeFile(stdout, "")
                try writeFile(stderr, "")
                let pid = try spawn(["python3", workerScript, root, String(id), String(Self.operationsPerWorker), "20241122"],
                                    stdin: "/dev/null", stdout: stdout, stderr: stderr)
                running.append((id, pid, stdout, stderr))
            }
            let deadline = monotonicNow() + Self.hangDeadline
            var statuses: [Int: ExitStatus] = [:]
            for worker in running {
                if let status = waitForExit(worker.pid, timeout: max(deadline - monotonicNow(), 0)) {
                    statuses[worker.id] = status
                }
            }
            let hung = running.filter { statuses[$0.id] == nil }
            for worker in hung {
                kill(worker.pid, SIGKILL)
                _ = waitForExit(worker.pid, timeout: 30)
            }
            #expect(hung.isEmpty, "workers \(hung.map(\.id)) were still running after \(Int(Self.hangDeadline)) s (a hang?); killed")

            for worker in running {
                let status = statuses[worker.id]
                #expect(status == .exited(0),
                        "worker \(worker.id): \(status.map { "\($0)" } ?? "hung"): \(tail(readFileText(worker.stderr), lines: 15))")
            }

            // The driver survived and the mount still answers.
            #expect(kill(container.driverPID, 0) == 0, "the driver process is gone")
            #expect(container.isMounted, "the mount is gone")
            let listing = runProcess(["ls", "-lR", container.mountpoint], timeout: 60)
            #expect(listing.status == 0, "ls -lR of the mount: exit \(listing.status): \(tail(listing.stderr))")
            #expect(listing.stdout.contains("shared"), "ls -lR does not show the shared folder")

            // Each worker's own folder is exactly its model, through the mount
            // and in the backing directory; the shared folder holds only whole records.
            for worker in running where statuses[worker.id] == .exited(0) {
                for (label, base) in [("mount", root), ("backing", RealToolsTests.backingOf(root, in: container))] {
                    let check = runProcess(["python3", verifyScript, base, String(worker.id), worker.stdout], timeout: 120)
                    #expect(check.status == 0,
                            "worker \(worker.id)'s folder in the \(label) differs from its model:\n\(tail(check.stdout + check.stderr, lines: 30))")
                }
            }
        }
    }

    // MARK: - The worker

    /// python3 worker.py ROOT ID OPS SEED: works in ROOT/wID and ROOT/shared,
    /// prints its model as JSON at the end; exit 0, or non-zero with the reason
    /// on standard error at the first wrong answer.
    static let workerSource = #"""
import errno, hashlib, json, os, random, stat, sys

root, wid, nops, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed * 100 + wid)
own = os.path.join(root, 'w%d' % wid)
shared = os.path.join(root, 'shared')
os.mkdir(own)
files = {}        # path relative to own -> bytes
dirs = set()      # subfolders of own (one level)
xattrs = {}       # path relative to own -> {name: value}
counts = {}
serial = 0
index = 0

def fail(message):
    sys.stderr.write('worker %d, operation %s: %s\n' % (wid, index, message))
    sys.exit(3)

\#(SelfCheckingRecord.python)

def new_name(prefix):
    global serial
    serial += 1
    return '%s%d-%d' % (prefix, wid, serial)

def own_path(rel):
    return os.path.join(own, rel)

def read_all(path):
    with open(path, 'rb') as f:
        return f.read()

def write_all(path, data, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    fd = os.open(path, flags, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if rng.random() < 0.2:
            os.fsync(fd)
    finally:
        os.close(fd)

def shared_entries(prefix):
    try:
        return sorted(n for n in os.listdir(shared) if n.startswith(prefix))
    except OSError as e:
        fail('listdir shared: %s' % e)

def tolerate_enoent(action, *args):
    try:
        action(*args)
        return True
    except FileNotFoundError:
        return False

def pick_file():
    return rng.choice(sorted(files)) if files else None

def listing_of(folder_rel):
    want = set()
    for rel in list(files) + list(dirs):
        parent, _, name = rel.rpartition('/')
        if parent == folder_rel:
            want.add(name)
    return want

# ---- operations in the worker's own folder (exact answers) ----

def op_create():
    rel = new_name('f')
    if dirs and rng.random() < 0.4:
        rel = rng.choice(sorted(dirs)) + '/' + rel
    data = random_bytes(rng.randint(0, 32768))
    write_all(own_path(rel), data, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    files[rel] = data

def op_read():
    rel = pick_file()
    if rel is None: return op_create()
    got = read_all(own_path(rel))
    if got != files[rel]:
        fail('read %s: %d bytes, expected %d (first difference at %s)' % (rel, len(got), len(files[rel]),
             next((i for i, (a, b) in enumerate(zip(got, files[rel])) if a != b), min(len(got), len(files[rel])))))

def op_pwrite():
    rel = pick_file()
    if rel is None: return op_create()
    data = files[rel]
    offset = rng.randint(0, len(data) + 4096)
    chunk = random_bytes(rng.randint(1, 16384))
    fd = os.open(own_path(rel), os.O_WRONLY)
    try:
        if os.pwrite(fd, chunk, offset) != len(chunk): fail('short pwrite')
    finally:
        os.close(fd)
    if offset > len(data):
        data = data + bytes(offset - len(data))
    files[rel] = data[:offset] + chunk + data[offset + len(chunk):]

def op_append():
    rel = pick_file()
    if rel is None: return op_create()
    chunk = random_bytes(rng.randint(1, 8192))
    write_all(own_path(rel), chunk, os.O_WRONLY | os.O_APPEND)
    files[rel] += chunk

def op_truncate():
    rel = pick_file()
    if rel is None: return op_create()
    size = rng.randint(0, len(files[rel]) + 8192)
    os.truncate(own_path(rel), size)
    data = files[rel]
    files[rel] = data[:size] + bytes(max(0, size - len(data)))

def op_rename_own():
    rel = pick_file()
    if rel is None: return op_create()
    target = new_name('r')
    if dirs and rng.random() < 0.5:
        target = rng.choice(sorted(dirs)) + '/' + target
    os.rename(own_path(rel), own_path(target))
    files[target] = files.pop(rel)
    if rel in xattrs: xattrs[target] = xattrs.pop(rel)

def op_unlink_own():
    rel = pick_file()
    if rel is None: return op_create()
    os.unlink(own_path(rel))
    del files[rel]
    xattrs.pop(rel, None)

def op_mkdir():
    rel = new_name('d')
    os.mkdir(own_path(rel))
    dirs.add(rel)

def op_rmdir():
    if not dirs: return op_mkdir()
    rel = rng.choice(sorted(dirs))
    if listing_of(rel):
        try:
            os.rmdir(own_path(rel))
            fail('rmdir of non-empty %s succeeded' % rel)
        except OSError as e:
            if e.errno != errno.ENOTEMPTY: fail('rmdir of non-empty %s: %s, expected ENOTEMPTY' % (rel, e))
    else:
        os.rmdir(own_path(rel))
        dirs.discard(rel)

def op_stat():
    rel = pick_file()
    if rel is None: return op_create()
    st = os.stat(own_path(rel))
    if not stat.S_ISREG(st.st_mode) or st.st_size != len(files[rel]):
        fail('stat %s: mode %o size %d, expected a file of %d bytes' % (rel, st.st_mode, st.st_size, len(files[rel])))

def op_listdir():
    folder = rng.choice([''] + sorted(dirs))
    got = set(os.listdir(own_path(folder) if folder else own))
    want = listing_of(folder)
    if got != want:
        fail('listdir %r: extra %s, missing %s' % (folder, sorted(got - want)[:5], sorted(want - got)[:5]))

def op_xattr():
    rel = pick_file()
    if rel is None: return op_create()
    path = own_path(rel)
    attrs = xattrs.setdefault(rel, {})
    choice = rng.random()
    if choice < 0.5 or not attrs:
        name = 'user.w%d.%d' % (wid, rng.randint(0, 3))
        value = random_bytes(rng.randint(0, 200))
        os.setxattr(path, name, value)
        attrs[name] = value
    elif choice < 0.8:
        name = rng.choice(sorted(attrs))
        got = os.getxattr(path, name)
        if got != attrs[name]: fail('getxattr %s %s: %r, expected %r' % (rel, name, got[:20], attrs[name][:20]))
    else:
        name = rng.choice(sorted(attrs))
        os.removexattr(path, name)
        del attrs[name]
    listed = sorted(n for n in os.listxattr(path) if n.startswith('user.w'))
    if listed != sorted(attrs):
        fail('listxattr %s: %s, expected %s' % (rel, listed, sorted(attrs)))

# ---- operations in the shared folder (others interfere: ENOENT tolerated) ----

def op_publish():
    """A whole record, written in the own folder, renamed into shared (maybe over another)."""
    temp = new_name('tmp')
    write_all(own_path(temp), record(rng.randint(0, 16384)))
    existing = shared_entries('s')
    target = rng.choice(existing) if existing and rng.random() < 0.3 else new_name('s')
    os.rename(own_path(temp), os.path.join(shared, target))

def op_shared_read():
    names = shared_entries('s')
    if not names: return op_publish()
    name = rng.choice(names)
    try:
        data = read_all(os.path.join(shared, name))
    except FileNotFoundError:
        return
    if not whole_record(data):
        fail('shared/%s is not a whole record (%d bytes)' % (name, len(data)))

def op_shared_take():
    """Rename a shared record into the own folder: only one taker can win.
    Another worker may still be reading the taken file through a descriptor
    it opened in shared, and expects a whole record there: so the taken file
    is never changed in place. The worker keeps a copy under a new name and
    unlinks the taken one."""
    names = shared_entries('s')
    if not names: return op_publish()
    rel = new_name('t')
    if not tolerate_enoent(os.rename, os.path.join(shared, rng.choice(names)), own_path(rel)):
        return
    data = read_all(own_path(rel))
    if not whole_record(data):
        fail('taken file %s is not a whole record (%d bytes)' % (rel, len(data)))
    copy = new_name('c')
    write_all(own_path(copy), data, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    os.unlink(own_path(rel))
    files[copy] = data

def op_shared_rename():
    names = shared_entries('s')
    if not names: return op_publish()
    tolerate_enoent(os.rename, os.path.join(shared, rng.choice(names)), os.path.join(shared, new_name('s')))

def op_shared_unlink():
    names = shared_entries('s')
    if not names: return op_publish()
    tolerate_enoent(os.unlink, os.path.join(shared, rng.choice(names)))

def op_shared_stat():
    names = shared_entries('')
    if not names: return op_publish()
    name = rng.choice(names)
    try:
        st = os.lstat(os.path.join(shared, name))
    except FileNotFoundError:
        return
    kind = stat.S_ISDIR(st.st_mode) if name.startswith('d') else stat.S_ISREG(st.st_mode)
    if not kind: fail('shared/%s has mode %o' % (name, st.st_mode))

def op_shared_mkdir():
    os.mkdir(os.path.join(shared, new_name('d')))

def op_shared_rmdir():
    names = shared_entries('d')
    if not names: return op_shared_mkdir()
    tolerate_enoent(os.rmdir, os.path.join(shared, rng.choice(names)))

def op_shared_xattr():
    names = shared_entries('s')
    if not names: return op_publish()
    tolerate_enoent(os.setxattr, os.path.join(shared, rng.choice(names)), 'user.shared-touch', str(wid).encode())

def op_shared_listdir():
    for name in os.listdir(shared):
        if not (name.startswith('s') or name.startswith('d')):
            fail('unexpected name in shared: %r' % name)

operations = [
    (op_create, 10), (op_read, 12), (op_pwrite, 8), (op_append, 4), (op_truncate, 4),
    (op_rename_own, 6), (op_unlink_own, 5), (op_mkdir, 3), (op_rmdir, 3), (op_stat, 6),
    (op_listdir, 4), (op_xattr, 6),
    (op_publish, 8), (op_shared_read, 6), (op_shared_take, 4), (op_shared_rename, 4),
    (op_shared_unlink, 3), (op_shared_stat, 3), (op_shared_mkdir, 2), (op_shared_rmdir, 2),
    (op_shared_xattr, 2), (op_shared_listdir, 2),
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

# Final check of the whole own folder before reporting.
index = 'final'
for rel in sorted(files):
    if read_all(own_path(rel)) != files[rel]:
        fail('final read of %s differs' % rel)
json.dump({
    'files': {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()},
    'sizes': {rel: len(data) for rel, data in files.items()},
    'dirs': sorted(dirs),
    'xattrs': {rel: {n: v.hex() for n, v in a.items()} for rel, a in xattrs.items() if a},
    'counts': counts,
}, sys.stdout, sort_keys=True)
"""#

    /// python3 verify.py ROOT ID MODEL.json: ROOT/wID holds exactly the model;
    /// every file in ROOT/shared is a whole record; the worker ran every operation.
    static let verifySource = #"""
import hashlib, json, os, sys
root, wid, model_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(model_path) as f:
    model = json.load(f)
own = os.path.join(root, 'w%d' % wid)
problems = []
found_files, found_dirs = {}, set()
for top, dirs, files in os.walk(own):
    for d in dirs:
        found_dirs.add(os.path.relpath(os.path.join(top, d), own))
    for name in files:
        path = os.path.join(top, name)
        with open(path, 'rb') as f:
            found_files[os.path.relpath(path, own)] = hashlib.sha256(f.read()).hexdigest()
for rel in sorted(set(model['files']) | set(found_files)):
    want, got = model['files'].get(rel), found_files.get(rel)
    if want != got:
        problems.append('%s: expected %s, found %s' % (rel, 'sha256 %s (%d bytes)' % (want[:16], model['sizes'][rel]) if want else 'nothing',
                                                      'sha256 ' + got[:16] if got else 'nothing'))
if found_dirs != set(model['dirs']):
    problems.append('folders: extra %s, missing %s' % (sorted(found_dirs - set(model['dirs'])), sorted(set(model['dirs']) - found_dirs)))
for rel in sorted(found_files):
    path = os.path.join(own, rel)
    got = {n: os.getxattr(path, n).hex() for n in os.listxattr(path) if n.startswith('user.w')}
    want = model['xattrs'].get(rel, {})
    if got != want:
        problems.append('%s xattrs: expected %s, found %s' % (rel, sorted(want), sorted(got)))
shared = os.path.join(root, 'shared')
for name in sorted(os.listdir(shared)):
    path = os.path.join(shared, name)
    if os.path.isdir(path):
        continue
    with open(path, 'rb') as f:
        data = f.read()
    n = int.from_bytes(data[4:12], 'little') if len(data) >= 12 else -1
    if not (data[:4] == b'ASFS' and len(data) == 44 + n and hashlib.sha256(data[12:12 + n]).digest() == data[12 + n:]):
        problems.append('shared/%s is not a whole record' % name)
counts = model['counts']
names = ['op_create', 'op_read', 'op_pwrite', 'op_rename_own', 'op_unlink_own', 'op_rmdir', 'op_listdir', 'op_xattr',
         'op_publish', 'op_shared_read', 'op_shared_take', 'op_shared_unlink', 'op_shared_rmdir']
for name in names:
    if counts.get(name, 0) == 0:
        problems.append('the worker never ran %s' % name)
if len(model['files']) == 0:
    problems.append('the worker ended with no files: nothing was checked')
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
"""#
}
