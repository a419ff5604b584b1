#!/usr/bin/env bash
# The benchmark of issue 5, in one command (as root, with /dev/fuse):
#
#   bash bench/run.sh [--rounds N] [--quick] [--only SYSTEM,...] [--workloads NAME,...]
#                     [--out FILE] [--appsandboxfs-args '--threads 4 ...']
#
# Installs what is missing, builds appsandboxfs (release) and libfuse's
# passthrough_ll example into bench/out/, then runs bench/runner.py: native,
# passthrough_ll, bindfs and appsandboxfs, each mounted over a fresh backing
# folder under /var/tmp/asfs-bench per round, the same workloads in each,
# and a table of medians with the ratio to native.
set -euo pipefail

bench_root=/var/tmp/asfs-bench
# shellcheck source=bench/setup.sh
source "$(dirname "$0")/setup.sh"

# Whatever happens, leave no mount behind under the bench folder.
cleanup() {
    local mnt
    [[ -r /proc/mounts ]] || return 0
    awk -v root="$bench_root/" 'index($2, root) == 1 { print $2 }' /proc/mounts | while read -r mnt; do
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null || true
    done
}
trap cleanup EXIT INT TERM

python3 "$repo/bench/runner.py" --appsandboxfs "$appsandboxfs" --passthrough-ll "$passthrough_ll" "$@"
