#!/bin/sh
# Q2 / data loss: with --capacity, bytes written through a shared mapping
# when the disk is full are accepted by the kernel (page cache) and refused
# at writeback with ENOSPC; the app is never told unless it calls msync, and
# the bytes it read back a moment ago are gone from the backing file.
# Exit 1 when the problem is present, 0 when absent.
set -u
BIN=${APPSANDBOXFS_BIN:-$(dirname "$0")/../../.build/debug/appsandboxfs}
work=$(mktemp -d /tmp/adv-capmmap.XXXXXX)
cleanup() { "$BIN" unmount "$work/mnt" >/dev/null 2>&1 || fusermount3 -uz "$work/mnt" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/backing" "$work/mnt"
"$BIN" init "$work/backing" --app-name App >/dev/null 2>&1 || { mkdir -p "$work/backing/App.app" ; }
"$BIN" mount "$work/backing" "$work/mnt" --app-name App --create --capacity 8M >/dev/null || exit 2
python3 - "$work/mnt/Documents" <<'PY'
import mmap, os, sys
d = sys.argv[1]
# Fill the disk to within a few blocks.
with open(d + "/fill", "wb") as f:
    try:
        while True:
            f.write(b"x" * 65536)
    except OSError:
        pass
    f.flush()
    # Leave 64 KiB free: room for the new file, not for a megabyte.
    f.truncate(f.tell() - 65536)
# A sparse file, then 1 MiB written through a shared mapping.
fd = os.open(d + "/mapped", os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 1 << 20)
m = mmap.mmap(fd, 1 << 20, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
m[:] = b"A" * (1 << 20)
m.close()          # no msync: as most apps do
os.close(fd)
PY
[ -f "$work/backing/Documents/mapped" ] || { echo "setup failed"; exit 2; }
sync
# What the app stored: read it back from the backing file.
count=$(tr -cd 'A' < "$work/backing/Documents/mapped" | wc -c)
echo "backing file holds $count of 1048576 bytes written through the mapping"
if [ "$count" -ne 1048576 ]; then
    echo "PROBLEM: bytes written through a shared mapping were dropped at writeback without an error to the app"
    exit 1
fi
exit 0
