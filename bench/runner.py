#!/usr/bin/env python3
"""The benchmark of issue 5: the same workloads on native ext4 and three FUSE
file systems, in rounds, and a table of medians with the ratio to native.

How it works, in one place:

- All of it happens on one ext4 file system, by default a fresh one made
  for the run (an image on a loop device, journalled as ext4 is by
  default): the results do not depend on what the machine's own file
  system went through before. (This machine's root ext4 has no journal;
  there ext4 skips inodes freed in the last minutes when it allocates, and
  creating 10,000 files takes 0.25 s or 5 s depending on what was deleted
  just before.) `--on DIR` runs in a folder of an existing file system.
- A *system* is a way to get a working folder: native (a plain folder),
  passthrough_ll (libfuse's example), bindfs, appsandboxfs (the container's
  Documents). Each round mounts every system over a FRESH backing folder on
  that file system, runs every workload in it, reads the
  driver's peak RSS and CPU seconds, and unmounts. The systems take turns in
  a rotating order (round r starts with system r), so that no system is
  always the one that runs first or last.
- A *workload* is a small function that does its setup untimed and returns
  measurements: a throughput (higher is better) or a time in seconds (lower
  is better). Either way the ratio to native is "how fast compared to
  native": 1.0 is as fast, 0.5 is half as fast.
- The table holds the median of the rounds for each cell; the goal column is
  the issue's goal for appsandboxfs, and "result" says whether it is met and
  whether appsandboxfs is at least as fast as both peers.

Run it through bench/run.sh, which installs the tools and builds the drivers.
"""

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH_ROOT = Path("/var/tmp/asfs-bench")
IMAGE_GIB = 16   # sparse; a run writes a few GiB at most
MiB = 1 << 20


# --------------------------------------------------------------------------
# Sizes

@dataclass
class Sizes:
    file_mib: int          # the fio data file
    rand_warm_mib: int     # bytes moved by the warm random read
    rand_cold_mib: int     # ... by the cold random read
    rand_write_mib: int    # ... by the random write
    files: int             # files in one folder for the metadata case
    tree: str              # the folder that is tarred for the tree case
    sqlite_rows: int
    roundtrips: int        # no-op requests for the round-trip floor
    fixtures: int          # lives of each kind of fixture per round
    parallel_files: int    # files per thread in the parallel workload

FULL = Sizes(file_mib=1024, rand_warm_mib=256, rand_cold_mib=64, rand_write_mib=256,
             files=10_000, tree="/usr/include", sqlite_rows=10_000, roundtrips=100_000, fixtures=20,
             parallel_files=2_000)
QUICK = Sizes(file_mib=64, rand_warm_mib=16, rand_cold_mib=8, rand_write_mib=16,
              files=1_000, tree="/usr/include/linux", sqlite_rows=1_000, roundtrips=5_000, fixtures=3,
              parallel_files=200)


# --------------------------------------------------------------------------
# Helpers

def run(*cmd, **kw):
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def sync():
    os.sync()


def drop_caches(level=3):
    """Write back, then drop the page cache (1), dentries and inodes (2), or both (3)."""
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text(f"{level}\n")


def timed(action):
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


# --------------------------------------------------------------------------
# Measurements and workloads

@dataclass
class Metric:
    key: str
    label: str
    unit: str            # "MiB/s", "IOPS" (higher is better) or "s", "us" (lower is better)
    goal: float | None   # the goal for appsandboxfs, as a ratio to the baseline
    baseline: str = "native"   # what the ratio compares with
    baseline_key: str | None = None   # the baseline's own metric, when it has no row of this one

    @property
    def higher_is_better(self):
        return self.unit not in ("s", "us")


METRICS = [
    Metric("seq_write", "seq write 1M blocks + fsync", "MiB/s", 0.85),
    Metric("seq_read_cold", "seq read 1M blocks, cold", "MiB/s", 0.90),
    Metric("rand_read_warm", "rand read 4k, warm", "IOPS", 0.60),
    Metric("rand_read_cold", "rand read 4k, cold", "IOPS", 0.85),
    Metric("rand_write", "rand write 4k", "IOPS", 0.50),
    Metric("create", "create N files", "s", 0.70),
    Metric("stat_cold", "stat N files, cold", "s", 0.30),
    Metric("rename", "rename N files", "s", 0.40),
    Metric("unlink", "unlink N files", "s", 0.30),
    Metric("untar", "untar tree", "s", 0.50),
    Metric("cp_out", "cp -r tree out", "s", 0.60),
    Metric("ls_lR", "ls -lR tree", "s", 0.60),
    Metric("rm_r", "rm -r tree", "s", 0.50),
    Metric("sqlite_insert", "sqlite inserts (WAL)", "s", None),
    Metric("sqlite_read", "sqlite point reads", "s", None),
    # The round-trip floor: one request the driver answers at once (a
    # getxattr of a name nobody set; the kernel caches no xattrs).
    Metric("roundtrip", "no-op request (getxattr ENODATA), per call", "us", None),
]
METRIC_BY_KEY = {m.key: m for m in METRICS}


def fio(workdir, rw, bs, sizes, io_mib=None, *extra):
    """One fio job on fio.dat in workdir; returns (MiB/s, IOPS) from its JSON."""
    cmd = ["fio", "--name", rw, "--directory", workdir, "--filename", "fio.dat",
           "--rw", rw, "--bs", bs, "--size", f"{sizes.file_mib}M",
           "--ioengine", "psync", "--direct", "0", "--fallocate", "none",
           "--randrepeat", "1", "--output-format", "json", *extra]
    if io_mib is not None:
        cmd += ["--io_size", f"{io_mib}M"]
    out = run(*cmd, capture_output=True, text=True).stdout
    job = json.loads(out[out.index("{"):])["jobs"][0]
    side = job["write"] if "write" in rw else job["read"]
    return side["bw_bytes"] / MiB, side["iops"]


def workload_data(workdir, sizes, ctx):
    """fio: sequential write (fsync at the end, included in the time), then
    cold sequential read, warm and cold 4 KiB random reads, 4 KiB random
    writes (no fsync; the dirty pages are synced afterwards, untimed)."""
    res = {}
    res["seq_write"], _ = fio(workdir, "write", "1M", sizes, None, "--end_fsync", "1")
    drop_caches()
    res["seq_read_cold"], _ = fio(workdir, "read", "1M", sizes)
    # Warm: read the whole file once through the mount; fio must not
    # invalidate it before its run.
    fio(workdir, "read", "1M", sizes, None, "--invalidate", "0")
    _, res["rand_read_warm"] = fio(workdir, "randread", "4k", sizes, sizes.rand_warm_mib, "--invalidate", "0")
    drop_caches()
    _, res["rand_read_cold"] = fio(workdir, "randread", "4k", sizes, sizes.rand_cold_mib)
    _, res["rand_write"] = fio(workdir, "randwrite", "4k", sizes, sizes.rand_write_mib, "--invalidate", "0")
    sync()
    os.unlink(Path(workdir) / "fio.dat")
    sync()
    return res


def workload_files(workdir, sizes, ctx):
    """N empty files in one folder: create (open O_CREAT|O_EXCL + close),
    stat each after dropping all caches, rename each, unlink each."""
    folder = Path(workdir) / "many"
    folder.mkdir()
    names = [str(folder / f"file{i:06d}") for i in range(sizes.files)]
    renamed = [str(folder / f"renamed{i:06d}") for i in range(sizes.files)]
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC

    def create():
        for name in names:
            os.close(os.open(name, flags, 0o644))

    def stat():
        for name in names:
            os.lstat(name)

    def rename():
        for old, new in zip(names, renamed):
            os.rename(old, new)

    def unlink():
        for name in renamed:
            os.unlink(name)

    res = {"create": timed(create)}
    drop_caches()
    res["stat_cold"] = timed(stat)
    res["rename"] = timed(rename)
    res["unlink"] = timed(unlink)
    folder.rmdir()
    sync()
    return res


def workload_tree(workdir, sizes, ctx):
    """A real tree (the tarball of sizes.tree): untar into the mount, cp -r it
    out to a native folder, ls -lR it, rm -r it. Caches are warm: each step
    runs right after the one before, as a person would run them."""
    tree = Path(workdir) / "tree"
    tree.mkdir()
    out = ctx["scratch"] / "cp-out"
    res = {"untar": timed(lambda: run("tar", "-xf", ctx["tarball"], "-C", tree))}
    res["cp_out"] = timed(lambda: run("cp", "-r", tree, out))
    res["ls_lR"] = timed(lambda: run("ls", "-lR", tree, stdout=subprocess.DEVNULL))
    res["rm_r"] = timed(lambda: run("rm", "-r", tree))
    shutil.rmtree(out)
    sync()
    return res


def workload_sqlite(workdir, sizes, ctx):
    """Python's sqlite3: WAL mode, synchronous=NORMAL, N inserts each in its
    own transaction (autocommit), then, on a new connection, N point reads by
    primary key in random order."""
    path = Path(workdir) / "bench.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    payload = "x" * 200

    def insert():
        for i in range(sizes.sqlite_rows):
            db.execute("INSERT INTO t (id, value) VALUES (?, ?)", (i, payload))

    res = {"sqlite_insert": timed(insert)}
    db.close()
    ids = list(range(sizes.sqlite_rows))
    random.Random(5).shuffle(ids)
    db = sqlite3.connect(path, isolation_level=None)

    def read():
        for i in ids:
            if db.execute("SELECT value FROM t WHERE id = ?", (i,)).fetchone() is None:
                raise RuntimeError(f"row {i} is missing")

    res["sqlite_read"] = timed(read)
    db.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    sync()
    return res


def workload_roundtrip(workdir, sizes, ctx):
    """sizes.roundtrips getxattr calls of a name no file has, on one file:
    each is a GETXATTR request answered ENODATA (the kernel caches no
    xattrs), so the mean is the round trip plus one getxattr of the backing
    file. In microseconds per call."""
    path = str(Path(workdir) / "roundtrip")
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))

    def loop():
        for _ in range(sizes.roundtrips):
            try:
                os.getxattr(path, "user.asfs-bench-unset")
            except OSError:
                pass

    seconds = timed(loop)
    os.unlink(path)
    return {"roundtrip": seconds / sizes.roundtrips * 1e6}


PARALLEL_THREADS = (1, 2, 4, 8)


def workload_parallel(workdir, sizes, ctx):
    """Parallel callers (bench/parallel.c): for 1, 2, 4 and 8 threads, each
    thread in a folder of its own creates sizes.parallel_files empty files,
    then lstats each (dentries and inodes dropped first), then unlinks
    each; the threads start each step together. Seconds per step."""
    res = {}
    for threads in PARALLEL_THREADS:
        out = run(ctx["tools"]["parallel"], workdir, threads, sizes.parallel_files,
                  capture_output=True, text=True).stdout
        for step, seconds in json.loads(out).items():
            res[f"parallel_{step}_{threads}"] = seconds
    sync()
    return res


WORKLOADS = {
    "data": workload_data,
    "files": workload_files,
    "tree": workload_tree,
    "sqlite": workload_sqlite,
    "roundtrip": workload_roundtrip,
    "parallel": workload_parallel,
    # Not a workload of each system: one comparison of fixture lives per
    # round, interleaved (see `fixture_round`).
    "fixture": None,
}


# --------------------------------------------------------------------------
# Systems

def find_driver(mountpoint, program):
    """The pid of the process whose program is `program` and whose arguments
    name `mountpoint`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and os.path.basename(args[0].decode()) == program and str(mountpoint).encode() in args:
            return int(entry.name)
    raise RuntimeError(f"no {program} process for {mountpoint}")


def driver_usage(pid):
    """(peak RSS in MiB, CPU seconds user+system) of a live process."""
    status = Path(f"/proc/{pid}/status").read_text()
    hwm_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2:].split()
    ticks = int(fields[11]) + int(fields[12])   # utime, stime (fields 14 and 15)
    return hwm_kib / 1024, ticks / os.sysconf("SC_CLK_TCK")


def process_alive(pid):
    """Whether pid runs (a zombie, exited but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def busy_percent(seconds=2.0):
    """How busy all CPUs are (0-100) over the next `seconds`, from /proc/stat."""
    def sample():
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = values[3] + values[4]   # idle, iowait
        return sum(values) - idle, sum(values)
    busy0, total0 = sample()
    time.sleep(seconds)
    busy1, total1 = sample()
    return 100 * (busy1 - busy0) / max(1, total1 - total0)


def wait_for_quiet(max_busy, log, limit=900):
    """On a shared machine: wait (up to `limit` seconds) until other work
    leaves the CPUs at most `max_busy` percent busy."""
    deadline = time.monotonic() + limit
    while (busy := busy_percent()) > max_busy:
        if time.monotonic() > deadline:
            log(f"CPUs still {busy:.0f}% busy after {limit} s; going on")
            return
        log(f"CPUs {busy:.0f}% busy (others); waiting for <= {max_busy:.0f}%")
        time.sleep(10)


def load_average():
    return float(Path("/proc/loadavg").read_text().split()[0])


def wait_until(predicate, what, timeout=20):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


class System:
    name = "?"
    program = None   # the driver's program name, None for native

    def __init__(self, root: Path, tools):
        self.root = root
        self.tools = tools
        self.backing = root / "backing"
        self.mnt = root / "mnt"
        self.pid = None

    def mount(self) -> Path:
        """Mounts over a fresh backing folder; returns the working folder."""
        raise NotImplementedError

    def unmount(self):
        if self.program is None or not os.path.ismount(self.mnt):
            return
        self._unmount()
        wait_until(lambda: not os.path.ismount(self.mnt), f"{self.name} to unmount")
        if self.pid:
            wait_until(lambda: not process_alive(self.pid), f"{self.name} to exit")

    def _unmount(self):
        run("fusermount3", "-u", self.mnt)

    def _ready(self):
        wait_until(lambda: os.path.ismount(self.mnt), f"{self.name} to mount")
        self.pid = find_driver(self.mnt, self.program)

    def usage(self):
        return driver_usage(self.pid) if self.pid else None


class Native(System):
    name = "native"

    def mount(self):
        self.backing.mkdir(parents=True)
        return self.backing


class PassthroughLL(System):
    """libfuse's example, default options (cache=auto: 1 s timeouts, no
    writeback cache, multithreaded); it daemonizes once mounted."""
    name = "passthrough_ll"
    program = "passthrough_ll"

    def mount(self):
        self.backing.mkdir(parents=True)
        self.mnt.mkdir()
        run(self.tools["passthrough_ll"], "-o", f"source={self.backing}", self.mnt)
        self._ready()
        return self.mnt


class Bindfs(System):
    """bindfs with its defaults (single-threaded, high-level API)."""
    name = "bindfs"
    program = "bindfs"

    def mount(self):
        self.backing.mkdir(parents=True)
        self.mnt.mkdir()
        run("bindfs", self.backing, self.mnt)
        self._ready()
        return self.mnt


class AppSandboxFS(System):
    """appsandboxfs over a fresh container; the work happens in Documents."""
    name = "appsandboxfs"
    program = "appsandboxfs"

    def mount(self):
        self.root.mkdir(parents=True)
        self.mnt.mkdir()
        exe = self.executable()
        run(exe, "init", self.backing, "--app-name", "Bench", *self.init_args(), stdout=subprocess.DEVNULL)
        run(exe, "mount", self.backing, self.mnt, *self.mount_args())
        self._ready()
        return self.mnt / "Documents"

    def _unmount(self):
        run(self.executable(), "unmount", self.mnt)

    def executable(self):
        return self.tools["appsandboxfs"]

    def init_args(self):
        return []

    def mount_args(self):
        return self.tools["appsandboxfs_args"]


class AppSandboxFSBefore(AppSandboxFS):
    """Another build of appsandboxfs (--appsandboxfs-before, say main before
    a change), mounted the same way: a change's before and after in one run."""
    name = "appsandboxfs_before"

    def executable(self):
        if not self.tools.get("appsandboxfs_before"):
            raise SystemExit("bench: appsandboxfs_before needs --appsandboxfs-before BINARY")
        return self.tools["appsandboxfs_before"]


class AppSandboxFSComplete(AppSandboxFS):
    """A container whose default class is NSFileProtectionComplete (class A,
    rule P6): its files get no passthrough and direct I/O, so the device can
    take an open descriptor back at lock. The row shows what that costs."""
    name = "appsandboxfs_complete"

    def init_args(self):
        return ["--protection", "NSFileProtectionComplete"]


class AppSandboxFSUring(AppSandboxFS):
    """appsandboxfs with --io-uring; the fuse module's enable_uring is Y
    while it is mounted (and put back after)."""
    name = "appsandboxfs_uring"
    parameter = Path("/sys/module/fuse/parameters/enable_uring")

    def mount(self):
        self.saved = self.parameter.read_text().strip()
        self.parameter.write_text("Y")
        try:
            return super().mount()
        except BaseException:
            self.parameter.write_text(self.saved)
            raise

    def unmount(self):
        try:
            super().unmount()
        finally:
            if hasattr(self, "saved"):
                self.parameter.write_text(self.saved)

    def mount_args(self):
        return [*self.tools["appsandboxfs_args"], "--io-uring"]


class AppSandboxFSCapacity(AppSandboxFS):
    """appsandboxfs with `--capacity` (rules Q1-Q3): no passthrough, every
    write counted by the driver. The capacity is far above what the
    workloads write, so the row shows the cost of counting, never ENOSPC."""
    name = "appsandboxfs_capacity"

    def mount_args(self):
        return [*self.tools["appsandboxfs_args"], "--capacity", "1T"]


class AppSandboxFSNoPassthrough(AppSandboxFS):
    """appsandboxfs with `--no-passthrough`: every read and write a FUSE
    request. Beside appsandboxfs_capacity (which has no passthrough either)
    it separates the cost of counting from the cost of losing passthrough."""
    name = "appsandboxfs_nopassthrough"

    def mount_args(self):
        return [*self.tools["appsandboxfs_args"], "--no-passthrough"]


SYSTEMS = {cls.name: cls for cls in (Native, PassthroughLL, Bindfs, AppSandboxFS, AppSandboxFSUring,
                                    AppSandboxFSCapacity, AppSandboxFSComplete, AppSandboxFSNoPassthrough,
                                    AppSandboxFSBefore)}
# What runs without --only: appsandboxfs_uring needs Linux 6.14 and is an option.
DEFAULT_SYSTEMS = ["native", "passthrough_ll", "bindfs", "appsandboxfs", "appsandboxfs_capacity"]


# --------------------------------------------------------------------------
# Fixture lives: bindfs's and appsandboxfs's three kinds, interleaved

# The kinds of life, in the order of the table's columns; "start" is no
# life but one start of the program alone (`appsandboxfs --version`), of
# which the command line's life has three (init, mount, unmount; mount
# forks the driver).
FIXTURE_KINDS = ("bindfs", "in-process", "driver program", "command line", "start")
# With --appsandboxfs-before, the command line's life of that build too,
# taking its turn with the others (a before/after in one run).
BEFORE_KIND = "command line (before)"


def fixture_kinds(tools):
    """The kinds of life this run lives, in turn."""
    return FIXTURE_KINDS + ((BEFORE_KIND,) if tools.get("appsandboxfs_before") else ())
# Goals (issue 29), as a multiple of bindfs's life.
FIXTURE_GOALS = {"in-process": 2.0, "command line": 6.0}


def write_scratch(path):
    """The one write of a life: open, write 7 bytes, close (as fixture-bench does)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, b"fixture")
    finally:
        os.close(fd)


class Clock:
    """Marks the end of each phase of one life."""

    def __init__(self):
        self.start = self.last = time.perf_counter()
        self.phases = {}

    def mark(self, phase):
        now = time.perf_counter()
        self.phases[f"phase: {len(self.phases) + 1:02d} {phase}"] = now - self.last
        self.last = now
        return now


def bindfs_life(folder, tools):
    """mkdir of a source and a mountpoint, bindfs, one write, fusermount3 -u,
    rm -r of the folder: the same steps as a fixture's life."""
    clock = Clock()
    source, mnt = folder / "source", folder / "mnt"
    source.mkdir(parents=True)
    mnt.mkdir()
    clock.mark("mkdir")
    run("bindfs", source, mnt)
    mounted = clock.mark("bindfs")
    try:
        write_scratch(mnt / "scratch")
        wrote = clock.mark("write")
    finally:
        run("fusermount3", "-u", mnt)
    clock.mark("fusermount3 -u")
    shutil.rmtree(folder)
    end = clock.mark("rm -r")
    return {"life": end - clock.start, "mount": mounted - clock.start, "write": wrote - mounted,
            "unmount": end - wrote, **clock.phases}


def program_start(folder, tools):
    """`appsandboxfs --version` and `/bin/true`: what one start of the
    program costs, next to the least any program's start costs."""
    clock = Clock()
    run(tools["appsandboxfs"], "--version", stdout=subprocess.DEVNULL)
    end = clock.mark("appsandboxfs --version")
    run("/bin/true")
    clock.mark("/bin/true")
    return {"life": end - clock.start, **clock.phases}


def command_line_life(folder, tools):
    """What a harness in another language does: mkdir, `appsandboxfs init`,
    `appsandboxfs mount` (returns once the mount is ready), one write into
    tmp, `appsandboxfs unmount` (returns once tmp is emptied and the driver
    gone), rm -r of the folder."""
    exe = tools["appsandboxfs"]
    clock = Clock()
    backing, mnt = folder / "backing", folder / "mnt"
    folder.mkdir(parents=True)
    mnt.mkdir()
    clock.mark("mkdir")
    run(exe, "init", backing, "--app-name", "Fixture", stdout=subprocess.DEVNULL)
    clock.mark("appsandboxfs init")
    run(exe, "mount", backing, mnt, *tools["appsandboxfs_args"])
    mounted = clock.mark("appsandboxfs mount")
    try:
        write_scratch(mnt / "tmp" / "scratch")
        wrote = clock.mark("write")
    finally:
        run(exe, "unmount", mnt)
    clock.mark("appsandboxfs unmount")
    shutil.rmtree(folder)
    end = clock.mark("rm -r")
    return {"life": end - clock.start, "mount": mounted - clock.start, "write": wrote - mounted,
            "unmount": end - wrote, **clock.phases}


class FixtureBench:
    """bench/FixtureBench in --serve mode: one AppSandboxTesting life per
    request, timed inside the test-like process, phases included."""

    def __init__(self, binary, folder, tools):
        env = {**os.environ, "APPSANDBOXFS_BIN": str(tools["appsandboxfs"])}
        self.process = subprocess.Popen([binary, "--serve", "--temporary-directory", str(folder)], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def life(self, kind):
        self.process.stdin.write(("in-process" if kind == "in-process" else "driver") + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"fixture-bench ended (status {self.process.wait()})")
        return json.loads(line)

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def fixture_round(base, sizes, tools, results, log):
    """sizes.fixtures lives of each kind (after one warm-up life each), the
    kinds taking turns life by life in an order that rotates each cycle, so
    that all four see the same machine. Appends each life's numbers to
    results[kind]."""
    folder = Path(tempfile.mkdtemp(dir=base, prefix="fixtures-"))
    bench = FixtureBench(tools["fixture_bench"], folder, tools)
    try:
        for cycle in range(1 + sizes.fixtures):
            kinds = fixture_kinds(tools)
            shift = cycle % len(kinds)
            for kind in kinds[shift:] + kinds[:shift]:
                life_folder = folder / f"{kind.replace(' ', '-')}-{cycle}"
                if kind == "bindfs":
                    numbers = bindfs_life(life_folder, tools)
                elif kind == "command line":
                    numbers = command_line_life(life_folder, tools)
                elif kind == BEFORE_KIND:
                    numbers = command_line_life(life_folder, {**tools, "appsandboxfs": tools["appsandboxfs_before"]})
                elif kind == "start":
                    numbers = program_start(life_folder, tools)
                else:
                    numbers = bench.life(kind)
                if cycle > 0:
                    results[kind].append(numbers)
    finally:
        bench.close()
        shutil.rmtree(folder, ignore_errors=True)


def machine_state():
    """Cores, CPU, kernel and load, in one line."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return f"{os.cpu_count()} CPUs ({model}), Linux {os.uname().release}, load average {load} (1, 5, 15 minutes)"


def fixture_table(results, rounds_of, cycles):
    """Medians of every life of each kind; in brackets, the multiple of
    bindfs's life (lower is better); the spread of the rounds' medians."""
    def ms(value):
        return f"{value * 1000:.2f} ms"

    def median(kind, key):
        values = [life[key] for life in results[kind] if key in life]
        return statistics.median(values) if values else None

    kinds = [k for k in FIXTURE_KINDS + (BEFORE_KIND,) if results.get(k) and k != "start"]
    lines = ["| fixture life (medians of %d lives each) | " % cycles + " | ".join(kinds) + " |",
             "|---|" + "---|" * len(kinds)]
    base = median("bindfs", "life")
    for key, label in (("life", "life: mount + write + unmount"), ("mount", "mount (folders, laying out, mount)"),
                       ("write", "one write into the mount"), ("unmount", "unmount (unmount, folder removed)")):
        row = [label]
        for kind in kinds:
            value = median(kind, key)
            text = ms(value)
            if key == "life" and kind != "bindfs" and base:
                text += f" ({value / base:.1f}x bindfs)"
            row.append(text)
        lines.append("| " + " | ".join(row) + " |")
    row = ["life, each round's median"]
    for kind in kinds:
        row.append(", ".join(ms(statistics.median(l["life"] for l in lives)) for lives in rounds_of(kind)))
    lines.append("| " + " | ".join(row) + " |")
    if "cpu" in results.get("in-process", [{}])[0]:
        lines.append("| CPU time of the test process per life | — | " + ms(median("in-process", "cpu"))
                     + (" | " + ms(median("driver program", "cpu")) if "driver program" in kinds else "")
                     + (" | —" if "command line" in kinds else "") + (" | —" if BEFORE_KIND in kinds else "") + " |")
    lines.append("")
    for kind, goal in FIXTURE_GOALS.items():
        if kind in kinds and base:
            value = median(kind, "life") / base
            lines.append(f"- {kind}: {value:.1f}x bindfs's life; goal at most {goal:.0f}x: "
                         + ("met" if value <= goal else "missed"))
    lines.append("")
    lines.append("Where each life goes (medians, in the order the phases happen):")
    lines.append("")
    for kind in kinds + (["start"] if results.get("start") else []):
        phases = sorted(key for key in results[kind][0] if key.startswith("phase: "))
        lines.append(f"- {kind}: " + "; ".join(f"{key[10:]} {ms(median(kind, key))}" for key in phases))
    return "\n".join(lines) + "\n"


def parallel_table(systems, results):
    """Seconds per step of the parallel workload, by threads; in brackets
    the ratio to native; the last column is how much faster the ring is."""
    shown = [s for s in systems if results[s].get("parallel_create_1")]
    if not shown:
        return ""
    ring = "appsandboxfs" in shown and "appsandboxfs_uring" in shown
    header = ["step", "threads"] + shown + (["ring / no ring (speed)"] if ring else [])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for step in ("create", "stat", "unlink"):
        for threads in PARALLEL_THREADS:
            key = f"parallel_{step}_{threads}"
            med = {s: statistics.median(results[s][key]) for s in shown if results[s].get(key)}
            row = [step + (" (cold)" if step == "stat" else ""), str(threads)]
            for s in shown:
                text = format_value(med[s], "s")
                if s != "native" and "native" in med:
                    text += f" ({med['native'] / med[s]:.2f})"
                row.append(text)
            if ring:
                row.append(f"{med['appsandboxfs'] / med['appsandboxfs_uring']:.2f}")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# The file system everything runs on

@contextlib.contextmanager
def bench_filesystem(on, log):
    """Yields the folder to work in: `on` if given, else the root of a fresh
    ext4 made in an image file, on a loop device with direct I/O (so that
    its pages are not cached twice), unmounted and deleted at the end."""
    if on:
        folder = Path(on)
        folder.mkdir(parents=True, exist_ok=True)
        yield folder
        return
    BENCH_ROOT.mkdir(parents=True, exist_ok=True)
    image, folder = BENCH_ROOT / "ext4.img", BENCH_ROOT / "ext4"
    # A run killed before its clean-up leaves its ext4 mounted here; ours
    # would sit on top of it and the end of the run could not remove the folder.
    while folder.is_mount():
        log(f"unmounting a file system left at {folder} by an earlier run")
        run("umount", "-l", folder)
    image.unlink(missing_ok=True)
    run("truncate", "-s", f"{IMAGE_GIB}G", image)
    run("mkfs.ext4", "-q", "-F", image)
    device = run("losetup", "--find", "--show", "--direct-io=on", image,
                 capture_output=True, text=True).stdout.strip()
    try:
        folder.mkdir(exist_ok=True)
        run("mount", device, folder)
        log(f"working on a fresh ext4 ({IMAGE_GIB} GiB image on {device}) at {folder}")
        try:
            yield folder
        finally:
            # The results are in by now: a clean-up that fails says so and
            # leaves the rest to bench/run.sh rather than losing them.
            if subprocess.run(["umount", str(folder)]).returncode != 0:
                log(f"could not unmount {folder}; bench/run.sh's clean-up will")
            else:
                with contextlib.suppress(OSError):
                    folder.rmdir()
    finally:
        run("losetup", "--detach", device)
        image.unlink(missing_ok=True)


# --------------------------------------------------------------------------
# Rounds

def run_round(base, number, order, sizes, workloads, tools, ctx, results, usage, log, max_busy):
    for name in order:
        if max_busy is not None:
            wait_for_quiet(max_busy, log)
        root = base / f"r{number}-{name}"
        shutil.rmtree(root, ignore_errors=True)
        system = SYSTEMS[name](root, tools)
        try:
            workdir = system.mount()
            for wname in workloads:
                log(f"round {number} {name}: {wname}")
                for key, value in WORKLOADS[wname](workdir, sizes, {**ctx, "system": system}).items():
                    results[name].setdefault(key, []).append(value)
            if system.pid:
                usage[name].append(system.usage())
        finally:
            system.unmount()
            shutil.rmtree(root, ignore_errors=True)


def format_value(value, unit):
    if unit == "us":
        return f"{value:.1f} µs"
    if unit == "s":
        if value < 0.1:
            return f"{value * 1000:.1f} ms"
        return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"
    return f"{value:,.0f} {unit}"


def ratio(metric, value, native):
    if metric.higher_is_better:
        return value / native
    return native / value


def make_table(systems, results, usage, sizes):
    peers = [s for s in systems if s != "native" and not s.startswith("appsandboxfs")]
    header = ["workload"] + systems + (["goal", "result"] if "appsandboxfs" in systems else [])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    verdicts = []
    for metric in METRICS:
        cells = {s: results[s].get(metric.key) for s in systems}
        # A row for every metric appsandboxfs measured; "—" where a system
        # has no such measurement (native has no fixture).
        if not cells.get("appsandboxfs") and not cells.get("appsandboxfs_uring"):
            continue
        med = {s: statistics.median(v) for s, v in cells.items() if v}
        base = metric.baseline
        if metric.baseline_key and results.get(base, {}).get(metric.baseline_key):
            med[base] = statistics.median(results[base][metric.baseline_key])
        label = metric.label.replace("N files", f"{sizes.files:,} files")
        row = [label]
        for s in systems:
            if s not in med:
                row.append("—")
                continue
            text = format_value(med[s], metric.unit)
            if s != base and base in med:
                text += f" ({ratio(metric, med[s], med[base]):.2f})"
            row.append(text)
        if "appsandboxfs" in systems:
            notes = []
            if "appsandboxfs" not in med:
                row += ["—", "—"]
                lines.append("| " + " | ".join(row) + " |")
                continue
            if base in med and metric.goal is not None:
                r = ratio(metric, med["appsandboxfs"], med[base])
                row.append(f">= {metric.goal:.2f}" + ("" if base == "native" else f" of {base}"))
                if r < metric.goal:
                    notes.append(f"miss ({r:.2f} < {metric.goal:.2f})")
            else:
                row.append("—")
            for peer in peers:
                if peer in med and ratio(metric, med["appsandboxfs"], med[peer]) < 1:
                    notes.append(f"slower than {peer}")
            row.append("; ".join(notes) if notes else "pass")
            verdicts.append((metric.key, notes))
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("| driver | peak RSS (median) | CPU seconds (median) |")
    lines.append("|---|---|---|")
    for s in systems:
        if usage.get(s):
            rss = statistics.median(u[0] for u in usage[s])
            cpu = statistics.median(u[1] for u in usage[s])
            lines.append(f"| {s} | {rss:.1f} MiB | {cpu:.2f} s |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    parser.add_argument("--only", help="systems to run, comma-separated (native always runs: it is the baseline)")
    parser.add_argument("--workloads", help=f"workloads to run, comma-separated, of: {','.join(WORKLOADS)}")
    parser.add_argument("--out", help="also write the markdown table (and the raw numbers as .json next to it)")
    parser.add_argument("--on", metavar="DIR",
                        help="work in DIR (all systems on its file system) instead of a fresh ext4 image")
    parser.add_argument("--max-busy", type=float, metavar="PERCENT",
                        help="on a shared machine, before each system wait until other work leaves the CPUs at most this busy")
    parser.add_argument("--appsandboxfs", required=True, help="the driver binary")
    parser.add_argument("--passthrough-ll", required=True, help="the compiled libfuse example")
    parser.add_argument("--fixture-bench", metavar="BINARY",
                        help="bench/FixtureBench built (run.sh builds it): AppSandboxTesting's fixture rows")
    parser.add_argument("--parallel", metavar="BINARY",
                        help="bench/parallel.c built (run.sh builds it): the parallel workload")
    parser.add_argument("--appsandboxfs-before", metavar="BINARY",
                        help="another appsandboxfs build, run as the system appsandboxfs_before")
    parser.add_argument("--appsandboxfs-args", default="",
                        help="extra arguments for appsandboxfs mount, e.g. '--threads 4 -o ...'")
    args = parser.parse_args()
    # A TERM unwinds like Ctrl-C, so that every mount is unmounted on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    systems = list(DEFAULT_SYSTEMS)
    if args.only:
        wanted = set(args.only.split(",")) | {"native"}
        unknown = wanted - set(SYSTEMS)
        if unknown:
            parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
        systems = [s for s in SYSTEMS if s in wanted]
    workloads = list(WORKLOADS)
    if args.workloads:
        workloads = args.workloads.split(",")
        unknown = set(workloads) - set(WORKLOADS)
        if unknown:
            parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    sizes = QUICK if args.quick else FULL
    tools = {"appsandboxfs": args.appsandboxfs, "appsandboxfs_before": args.appsandboxfs_before,
             "passthrough_ll": args.passthrough_ll, "fixture_bench": args.fixture_bench,
             "parallel": args.parallel, "appsandboxfs_args": args.appsandboxfs_args.split()}
    fixtures = "fixture" in workloads
    if fixtures and not args.fixture_bench:
        parser.error("the fixture workload needs --fixture-bench")
    if "parallel" in workloads and not args.parallel:
        parser.error("the parallel workload needs --parallel")
    # The fixture lives are compared once a round, not in each system.
    workloads = [w for w in workloads if w != "fixture"]

    def log(text):
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)

    # Which source the driver was built from (run.sh builds it just before).
    source = subprocess.run(["git", "-C", Path(__file__).parent, "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip() or "unknown source"
    built = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(args.appsandboxfs)))
    state = machine_state()
    busy = busy_percent()
    log(f"{state}; CPUs {busy:.0f}% busy")
    with bench_filesystem(args.on, log) as base:
        scratch = Path(tempfile.mkdtemp(dir=base, prefix="scratch-"))
        try:
            ctx = {"scratch": scratch, "tools": tools}
            if "tree" in workloads:
                ctx["tarball"] = scratch / "tree.tar"
                tree = Path(sizes.tree)
                run("tar", "-cf", ctx["tarball"], "-C", tree.parent, tree.name)
            results = {s: {m.key: [] for m in METRICS} for s in systems}
            usage = {s: [] for s in systems}
            lives = {kind: [] for kind in fixture_kinds(tools)}
            lives_per_round = []
            started = time.time()
            loads = [load_average()]
            for number in range(args.rounds):
                shift = number % len(systems)
                order = systems[shift:] + systems[:shift]
                if workloads:
                    log(f"round {number + 1}/{args.rounds}: {', '.join(order)}")
                    run_round(base, number + 1, order, sizes, workloads, tools, ctx, results, usage, log, args.max_busy)
                if fixtures:
                    if args.max_busy is not None:
                        wait_for_quiet(args.max_busy, log)
                    log(f"round {number + 1}/{args.rounds}: fixture lives, {', '.join(fixture_kinds(tools))} in turn")
                    this_round = {kind: [] for kind in fixture_kinds(tools)}
                    fixture_round(base, sizes, tools, this_round, log)
                    for kind, numbers in this_round.items():
                        lives[kind] += numbers
                    lives_per_round.append(this_round)
                loads.append(load_average())
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        filesystem = f"a folder of {base}" if args.on else "a fresh ext4 image (loop device, direct I/O)"

    minutes = (time.time() - started) / 60
    table = make_table(systems, results, usage, sizes) if set(workloads) - {"parallel"} else ""
    if "parallel" in workloads:
        table += ("\nParallel callers (bench/parallel.c, " + f"{sizes.parallel_files:,} files per thread; "
                  "seconds for all threads' files; in brackets the ratio to native):\n\n"
                  + parallel_table(systems, results))
    if fixtures:
        table += ("\nFixture lives, the kinds in turn life by life:\n\n"
                  + fixture_table(lives, lambda kind: [r[kind] for r in lives_per_round], sizes.fixtures * args.rounds))
    extra = f", mounted with {args.appsandboxfs_args!r}" if args.appsandboxfs_args else ""
    note = (f"Machine: {state}; CPUs {busy:.0f}% busy just before. "
            f"appsandboxfs built {built} from {source}{extra}. "
            f"Medians of {args.rounds} rounds ({'quick' if args.quick else 'full'} sizes: "
            f"{sizes.file_mib} MiB file, {sizes.files:,} files, tree {sizes.tree}, "
            f"{sizes.sqlite_rows:,} rows, {sizes.roundtrips:,} no-op requests, {sizes.fixtures} fixtures) on {filesystem}; {minutes:.1f} minutes; 1-minute load average "
            f"at the start and after each round: {', '.join(f'{l:.1f}' for l in loads)}. "
            "In brackets: the ratio to native (1.00 = as fast).\n\n")
    print(note + table)
    if args.out:
        Path(args.out).write_text(note + table)
        raw = {"machine": state, "sizes": sizes.__dict__, "rounds": args.rounds, "load_averages": loads,
               "results": results, "fixture_lives": lives_per_round,
               "usage": {s: [list(u) for u in v] for s, v in usage.items()}}
        Path(args.out).with_suffix(".json").write_text(json.dumps(raw, indent=1) + "\n")


if __name__ == "__main__":
    main()
