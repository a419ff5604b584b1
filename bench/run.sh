#!/usr/bin/env bash
# The benchmark of issue 5, in one command (as root, with /dev/fuse):
#
#   bash bench/run.sh [--rounds N] [--quick] [--only SYSTEM,...] [--workloads NAME,...]
#                     [--out FILE] [--on DIR] [--max-busy PERCENT] [--appsandboxfs-args "--threads 4 ..."]
#
# Installs what is missing, builds appsandboxfs (release) and libfuse's
# passthrough_ll example into bench/out/, then runs bench/runner.py: native,
# passthrough_ll, bindfs and appsandboxfs, each mounted over a fresh backing
# folder per round on a fresh ext4 (an image under /var/tmp/asfs-bench, or
# the folder --on names), the same workloads in each, and a table of medians
# with the ratio to native. bench/runner.py --help tells every option.
set -euo pipefail

bench_root=/var/tmp/asfs-bench
# shellcheck source=bench/setup.sh
source "$(dirname "$0")/setup.sh"

# Whatever happens, leave no mount behind under the bench folder: the FUSE
# mounts first, then the ext4 image they sit on (innermost first), then its
# loop device.
cleanup() {
    local mnt type
    awk -v root="$bench_root/" 'index($2, root) == 1 { print $2, $3 }' /proc/mounts | tac | while read -r mnt type; do
        case $type in
            fuse*) fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null || true ;;
            *) umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true ;;
        esac
    done
    losetup -j "$bench_root/ext4.img" 2>/dev/null | cut -d: -f1 | while read -r device; do
        losetup --detach "$device" || true
    done
    rm -f "$bench_root/ext4.img"
}
trap cleanup EXIT

# The runner unmounts what it mounted when it is interrupted (Ctrl-C reaches
# it directly; a TERM to this script is passed on), and cleanup above is the
# safety net.
python3 "$repo/bench/runner.py" --appsandboxfs "$appsandboxfs" --passthrough-ll "$passthrough_ll" \
    --fixture-bench "$fixture_bench" --parallel "$parallel" "$@" &
runner=$!
trap 'kill -TERM "$runner" 2>/dev/null' INT TERM
status=0
wait "$runner" || status=$?
# A trapped signal interrupts the first wait; wait again for the runner to finish unwinding.
if kill -0 "$runner" 2>/dev/null; then wait "$runner" || status=$?; fi
exit "$status"
