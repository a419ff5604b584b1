#!/bin/sh
# Q2: rename reserves no space, but moving a name into a folder can make the
# folder grow by a block. Empty folders made while there is room, then the
# disk filled, then the same long-named empty files moved from folder to
# folder: every folder grows with no ENOSPC, and the backing tree ends far
# beyond --capacity. Exit 1 when the problem is present, 0 when absent.
set -u
BIN=${APPSANDBOXFS_BIN:-$(dirname "$0")/../../.build/debug/appsandboxfs}
work=$(mktemp -d /tmp/adv-caprename.XXXXXX)
cleanup() { "$BIN" unmount "$work/mnt" >/dev/null 2>&1 || fusermount3 -uz "$work/mnt" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/backing/App.app" "$work/mnt"
"$BIN" mount "$work/backing" "$work/mnt" --app-name App --create --capacity 4M >/dev/null || exit 2
python3 - "$work/mnt/Documents" <<'PY'
import os, sys
d = sys.argv[1]
folders = 40
for i in range(folders):
    os.mkdir(f"{d}/f{i}")
names = ["n%04d" % i + "x" * 240 for i in range(600)]
for n in names:
    open(f"{d}/f0/{n}", "w").close()
with open(d + "/fill", "wb") as f:
    try:
        while True:
            f.write(b"x" * 65536)
            f.flush()
    except OSError:
        pass
refused = 0
for i in range(1, folders):
    for n in names:
        try:
            os.rename(f"{d}/f{i-1}/{n}", f"{d}/f{i}/{n}")
        except OSError:
            refused += 1
print("renames refused:", refused)
PY
used=$(du -s -B1 "$work/backing" | cut -f1)
limit=$((4 * 1024 * 1024))
echo "backing tree occupies $used bytes; capacity $limit"
if [ "$used" -gt $((limit + limit / 10)) ]; then
    echo "PROBLEM: renames grew folders past --capacity without ENOSPC"
    exit 1
fi
exit 0
