#!/usr/bin/env bash
# The driver's memory with many nodes (issue 5's goal: under 100 MiB RSS
# after 100,000 files have been looked up, and back down after the kernel
# forgets them). As root, with /dev/fuse:
#
#   bash bench/memory.sh [--files N] [--system appsandboxfs|passthrough_ll|bindfs] [--nofile N]
#
# Mounts a fresh container, creates N files (folders of 1,000), makes the
# kernel forget them, looks them all up again (find + stat), and prints the
# driver's RSS at each step; then drops dentries and inodes
# (echo 2 > drop_caches), which makes the kernel send FORGET for every node,
# and prints the RSS again. "descriptors" is the driver's open descriptor
# count; "kernel FUSE inodes" the active fuse_inode objects in the slab (all
# FUSE mounts together): the nodes the kernel holds.
#
# appsandboxfs holds at most a bounded cache of descriptors (nodes keep file
# handles), so it needs no descriptor limit above N; passthrough_ll and
# bindfs keep one per node and do. --nofile N raises the limit the driver
# starts with to N (needs CAP_SYS_RESOURCE and a hard limit that allows it);
# the default, 0, keeps the inherited one.
set -euo pipefail

files=100000
system=appsandboxfs
nofile=0
while (($#)); do
    case $1 in
        --files) files=$2; shift 2 ;;
        --system) system=$2; shift 2 ;;
        --nofile) nofile=$2; shift 2 ;;
        *) echo "usage: bash bench/memory.sh [--files N] [--system appsandboxfs|passthrough_ll|bindfs] [--nofile N]" >&2; exit 2 ;;
    esac
done

# shellcheck source=bench/setup.sh
source "$(dirname "$0")/setup.sh"

root=/var/tmp/asfs-bench/memory-$system
backing=$root/backing
mnt=$root/mnt

cleanup() {
    if mountpoint -q "$mnt"; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" || true
    fi
    rm -rf "$root"
}
trap cleanup EXIT INT TERM
cleanup
mkdir -p "$mnt"

inherited=$(ulimit -Hn)
if ((nofile > 0)) && ! { ulimit -Hn "$nofile" && ulimit -Sn "$nofile"; } 2>/dev/null; then
    echo "warning: cannot raise the descriptor limit to $nofile (no CAP_SYS_RESOURCE?); the driver gets $inherited" >&2
fi

case $system in
    appsandboxfs)
        "$appsandboxfs" init "$backing" --app-name Bench >/dev/null
        "$appsandboxfs" mount "$backing" "$mnt"
        work=$mnt/Documents ;;
    passthrough_ll)
        mkdir -p "$backing"
        "$passthrough_ll" -o "source=$backing" "$mnt"
        work=$mnt ;;
    bindfs)
        mkdir -p "$backing"
        bindfs "$backing" "$mnt"
        work=$mnt ;;
    *) echo "unknown system: $system" >&2; exit 2 ;;
esac
pid=$(pgrep -f "^[^ ]*$system .*$mnt( |$)" | head -1)

fuse_inodes() { awk '$1 == "fuse_inode" { print $2 }' /proc/slabinfo; }
kib() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$pid/status"; }
report() {
    printf '%-44s RSS %7.1f MiB  peak %7.1f MiB  descriptors %7d  kernel FUSE inodes %7d\n' \
        "$1" "$(awk "BEGIN { print $(kib VmRSS) / 1024 }")" "$(awk "BEGIN { print $(kib VmHWM) / 1024 }")" \
        "$(ls "/proc/$pid/fd" | wc -l)" "$(fuse_inodes)"
}
# FORGETs arrive after drop_caches returns; wait until the kernel's count settles.
settle() {
    local before after
    after=$(fuse_inodes)
    for _ in $(seq 50); do
        sleep 0.2
        before=$after
        after=$(fuse_inodes)
        [[ $before == "$after" ]] && break
    done
    sleep 1
}

echo "$system (pid $pid), $files files in folders of 1,000, on $(uname -r); descriptor limit $(awk '$1 == "Max" && $2 == "open" { print $5 }' "/proc/$pid/limits") (inherited hard limit: $inherited)"
report "mounted"
rss_mounted=$(kib VmRSS)
python3 - "$work" "$files" <<'EOF'
import os, sys
work, count = sys.argv[1], int(sys.argv[2])
created = 0
try:
    for start in range(0, count, 1000):
        folder = os.path.join(work, f"d{start // 1000:04d}")
        os.mkdir(folder)
        for i in range(start, min(start + 1000, count)):
            os.close(os.open(os.path.join(folder, f"f{i:06d}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            created += 1
except OSError as error:
    print(f"creation stopped after {created:,} files: {error}")
EOF
report "created"
sync; echo 2 >/proc/sys/vm/drop_caches; settle
report "kernel forgot them (drop_caches 2)"
errors=$(mktemp)
looked_up=$(find "$work" -type f -printf '%s\n' 2>"$errors" | wc -l) || true
report "looked up again: find + stat ($looked_up files)"
if [[ -s $errors ]]; then
    echo "  find failed on $(wc -l <"$errors") names, for example: $(head -1 "$errors")"
fi
rm -f "$errors"
rss_looked_up=$(kib VmRSS)
sync; echo 2 >/proc/sys/vm/drop_caches; settle
report "kernel forgot them (drop_caches 2)"
rss_forgotten=$(kib VmRSS)

verdict() { (($1)) && echo pass || echo MISS; }
if ((looked_up < files)); then
    echo "goals not measured: only $looked_up of $files files could be looked up"
    exit 1
fi
echo "goal, under 100 MiB RSS after the lookups: $(verdict "rss_looked_up < 100 * 1024")"
# "Back down": at least half of the growth given back (or within 5 MiB of the start).
echo "goal, back down after the forget: $(verdict "(rss_forgotten - rss_mounted) * 2 <= rss_looked_up - rss_mounted || rss_forgotten - rss_mounted <= 5 * 1024")"
