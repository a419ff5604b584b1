#!/usr/bin/env bash
# What a confined run costs at start (issue 16, goal: `run --confine` starts a
# command less than 50 ms later than plain `run`): hyperfine times
# `appsandboxfs run MNT -- true` against `appsandboxfs run MNT --confine -- true`
# on a fresh container mounted with the release build (bench/setup.sh), and
# prints the difference of the means and of the fastest runs.
#
#   bash bench/confine.sh            # 100 runs each after 10 warm-ups
#   RUNS=20 bash bench/confine.sh
#
# As root (it mounts). The container and its mount are removed at the end,
# also when a step fails.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
command -v hyperfine >/dev/null || {
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q hyperfine
}

runs=${RUNS:-100}
# Outside /tmp and /var/tmp: inside the confined world those are the
# container's tmp, so `run --confine` refuses a mountpoint there.
mkdir -p /var/lib/appsandboxfs-bench
work=$(mktemp -d /var/lib/appsandboxfs-bench/confine-XXXXXX)
cleanup() {
    "$appsandboxfs" unmount "$work/mnt" >/dev/null 2>&1 || fusermount3 -u -z "$work/mnt" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/mnt"
"$appsandboxfs" init "$work/container" --app-name Bench >/dev/null
"$appsandboxfs" mount "$work/container" "$work/mnt" --app-name Bench
echo "bench: $("$appsandboxfs" --version); $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

hyperfine -N --warmup 10 --runs "$runs" --export-json "$work/confine.json" \
    "$appsandboxfs run $work/mnt -- true" \
    "$appsandboxfs run $work/mnt --confine -- true"

python3 - "$work/confine.json" <<'EOF'
import json, sys
plain, confined = json.load(open(sys.argv[1]))["results"]
def ms(x): return f"{x * 1000:.1f} ms"
print()
print("| | plain `run` | `run --confine` | more |")
print("|---|---|---|---|")
for label, key in (("wall clock, mean", "mean"), ("wall clock, median", "median"), ("wall clock, fastest run", "min")):
    print(f"| {label} | {ms(plain[key])} | {ms(confined[key])} | {ms(confined[key] - plain[key])} |")
cpu = lambda r: r["user"] + r["system"]
print(f"| CPU (user + system), mean | {ms(cpu(plain))} | {ms(cpu(confined))} | {ms(cpu(confined) - cpu(plain))} |")
EOF
