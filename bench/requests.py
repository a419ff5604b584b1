#!/usr/bin/env python3
"""Where the time of a FUSE file system goes: the requests the kernel sends
the driver for each workload, counted from the driver's debug log.

A FUSE operation costs little in the driver and a lot in round trips (the
caller waits for the kernel to hand the request to a driver thread and the
answer back), so the number of requests each workload costs explains most
of the benchmark's metadata rows. This runs small versions of those
workloads on passthrough_ll (`-d`) and appsandboxfs (`--debug
--foreground`), marks the log between workloads, and prints a table of
requests per operation.

Run it through bench/requests.sh (as root), which builds the drivers.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

N = 200  # files per metadata workload
OPCODE = re.compile(rb"opcode: ([A-Z_]+)")


def settle(log: Path) -> int:
    # The driver writes its log line for a request after answering it; wait
    # until the log stops growing so each mark falls between workloads.
    size = -1
    while True:
        time.sleep(0.2)
        now = log.stat().st_size
        if now == size:
            return now
        size = now


def workloads(folder: Path, tree: Path):
    """(name, operations it counts as, function) for each workload, in order."""
    work = folder / "t"

    def create():
        work.mkdir()
        for i in range(N):
            os.close(os.open(work / f"g{i}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))

    # As bench/runner.py's "stat N files, cold": the kernel's caches dropped
    # after the creates, then an lstat of each.
    def stat_cold():
        subprocess.run(["sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], check=True)
        for i in range(N):
            os.lstat(work / f"g{i}")

    def rename():
        for i in range(N):
            os.rename(work / f"g{i}", work / f"h{i}")

    def unlink():
        for i in range(N):
            os.unlink(work / f"h{i}")

    def write_4k():
        fd = os.open(work / "w", os.O_CREAT | os.O_WRONLY, 0o644)
        for i in range(N):
            os.pwrite(fd, b"x" * 4096, i * 4096)
        os.close(fd)

    # In a folder of their own, which the later rows do not list.
    links = folder / "links"

    def symlinks():
        links.mkdir()
        for i in range(N):
            os.symlink(f"target{i}", links / f"l{i}")

    def readlinks():
        for _ in range(5):
            for i in range(N):
                os.readlink(links / f"l{i}")

    def untar():
        subprocess.run(["tar", "-xf", str(tree), "-C", str(work)], check=True)

    def ls_lr():
        subprocess.run(["sh", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], check=True)
        subprocess.run(["ls", "-lR", str(work)], stdout=subprocess.DEVNULL, check=True)

    def rm_r():
        subprocess.run(["rm", "-r", str(work / "tree")], check=True)

    files = tree_files(tree)
    return [
        ("create (open O_CREAT + close)", N, create),
        ("stat (cold)", N, stat_cold),
        ("rename", N, rename),
        ("unlink", N, unlink),
        ("pwrite 4 KiB", N, write_4k),
        ("symlink", N, symlinks),
        ("readlink, 5 times each", N, readlinks),
        ("untar, per file", files, untar),
        ("ls -lR (cold), per entry", files, ls_lr),
        ("rm -r, per entry", files, rm_r),
    ]


def tree_files(tree: Path) -> int:
    out = subprocess.run(["tar", "-tf", str(tree)], capture_output=True, check=True).stdout
    return len(out.splitlines())


def count(system: str, command: list[str], folder: Path, log: Path, tree: Path):
    with open(log, "wb") as sink:
        driver = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 20
        while not os.path.ismount(mountpoint_of(command)):
            if time.time() > deadline or driver.poll() is not None:
                sys.exit(f"requests: {system} did not mount (see {log})")
            time.sleep(0.1)
        rows = {}
        mark = settle(log)
        for name, operations, run in workloads(folder, tree):
            run()
            end = settle(log)
            with open(log, "rb") as f:
                f.seek(mark)
                counts = collections.Counter(m.decode() for m in OPCODE.findall(f.read(end - mark)))
            mark = end
            rows[name] = (operations, counts)
        return rows
    finally:
        subprocess.run(["fusermount3", "-u", mountpoint_of(command)], stderr=subprocess.DEVNULL)
        driver.wait(timeout=30)


def mountpoint_of(command: list[str]) -> str:
    return command[-1] if not command[-1].startswith("-") else command[-3]


def per_operation(operations: int, counts: collections.Counter) -> str:
    # FORGET is sent in batches when the kernel drops inodes, never waited for.
    shown = [(op, n) for op, n in counts.most_common() if op not in ("FORGET", "BATCH_FORGET") and n / operations >= 0.05]
    total = sum(n for _, n in shown) / operations
    if not shown:
        return "0: none"
    return f"{total:.1f}: " + ", ".join(f"{op} {n / operations:.1f}".replace(".0", "") for op, n in shown)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appsandboxfs", required=True)
    parser.add_argument("--passthrough-ll", required=True)
    parser.add_argument("--appsandboxfs-args", default="")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="asfs-requests-", dir="/var/tmp") as scratch:
        root = Path(scratch)
        tree = root / "tree.tar"
        # A real tree: /usr/include/linux, renamed to "tree" in the archive.
        subprocess.run(["tar", "-cf", str(tree), "-C", "/usr/include", "--transform", "s,^linux,tree,", "linux"], check=True)

        (root / "pl-src").mkdir()
        (root / "pl-mnt").mkdir()
        pl = count("passthrough_ll", [args.passthrough_ll, "-f", "-d", "-o", f"source={root / 'pl-src'}", str(root / "pl-mnt")],
                   root / "pl-mnt", root / "pl.log", tree)

        (root / "as-mnt").mkdir()
        subprocess.run([args.appsandboxfs, "init", str(root / "as-c"), "--app-name", "Bench"], check=True, stdout=subprocess.DEVNULL)
        asfs = count("appsandboxfs", [args.appsandboxfs, "mount", "--foreground", "--debug", *args.appsandboxfs_args.split(),
                                      str(root / "as-c"), str(root / "as-mnt")],
                     root / "as-mnt" / "Documents", root / "as.log", tree)

    print("| workload | passthrough_ll: requests per operation | appsandboxfs: requests per operation |")
    print("|---|---|---|")
    for name in pl:
        print(f"| {name} | {per_operation(*pl[name])} | {per_operation(*asfs[name])} |")


if __name__ == "__main__":
    main()
