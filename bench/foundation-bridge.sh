#!/usr/bin/env bash
# What the Foundation bridge (docs/foundation.md, F1) costs a program's
# start under `appsandboxfs run`: each program is started N times with
# `run` as built (LD_PRELOAD with the bridge), and N times with a copy of
# the same appsandboxfs alone in a folder (no bridge beside it: run then
# sets no LD_PRELOAD and prints the F2 line, sent to /dev/null). Rows:
#   a Swift program that uses Foundation (loads and installs the bridge),
#   /bin/true (not Swift: pays for the preload library only),
#   the same Swift program linked with -static-stdlib (the F2 check).
# Prints mean, median and fastest wall clock per row, and the difference.
#
#   bash bench/foundation-bridge.sh                 # the debug build, 200 runs each
#   BIN=.build/release RUNS=50 bash bench/foundation-bridge.sh
#
# BIN: a build folder holding appsandboxfs and the two bridge libraries
# (default: `swift build --show-bin-path`; build them first with
# `swift build --product appsandboxfs --product appsandboxfs-preload
# --product AppSandboxFoundationBridge`, or plain `swift build`). As root
# (it mounts). The container, its mount and the programs are removed at the end.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=$(cd "$repo" && cd "${BIN:-$(swift build --show-bin-path)}" && pwd)
runs=${RUNS:-200}
swiftc=${SWIFTC:-/opt/swift/usr/bin/swiftc}
for file in appsandboxfs libappsandboxfs-preload.so libAppSandboxFoundationBridge.so; do
    [[ -e $bin/$file ]] || { echo "bench: no $bin/$file (build it first)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/appsandboxfs-bridge-bench-XXXXXX)
cleanup() {
    "$bin/appsandboxfs" unmount "$work/mnt" >/dev/null 2>&1 || fusermount3 -u -z "$work/mnt" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The program: Foundation loaded, one call that the bridge answers.
cat > "$work/probe.swift" <<'SWIFT'
import Foundation
let url = URL(fileURLWithPath: "Documents")
_ = try? url.resourceValues(forKeys: [.isExcludedFromBackupKey])
SWIFT
"$swiftc" -O "$work/probe.swift" -o "$work/probe" 2>/dev/null
"$swiftc" -O -static-stdlib "$work/probe.swift" -o "$work/probe-static" 2>/dev/null
mkdir -p "$work/alone" "$work/mnt"
cp "$bin/appsandboxfs" "$work/alone/appsandboxfs"
"$bin/appsandboxfs" init "$work/container" --app-name Bench >/dev/null
"$bin/appsandboxfs" mount "$work/container" "$work/mnt" --app-name Bench
echo "bench: $("$bin/appsandboxfs" --version) from $bin; $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); $runs runs each" >&2

python3 - "$bin/appsandboxfs" "$work/alone/appsandboxfs" "$work/mnt" "$runs" "$work/probe" /bin/true "$work/probe-static" <<'PY'
import statistics, subprocess, sys, time
bridged, alone, mnt, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
programs = sys.argv[5:]
names = {programs[0]: "Swift program, Foundation shared", programs[1]: "/bin/true (not Swift)",
         programs[2]: "Swift program, -static-stdlib (F2 line)"}

def times(appsandboxfs, program, count):
    for _ in range(5):  # warm-up
        subprocess.run([appsandboxfs, "run", mnt, "--", program], cwd=mnt, stderr=subprocess.DEVNULL, check=True)
    result = []
    for _ in range(count):
        start = time.perf_counter()
        subprocess.run([appsandboxfs, "run", mnt, "--", program], cwd=mnt, stderr=subprocess.DEVNULL, check=True)
        result.append((time.perf_counter() - start) * 1000)
    return result

def ms(x): return f"{x:.2f} ms"
print("| program started by `run` | | without the bridge | with the bridge | more |")
print("|---|---|---|---|---|")
for program in programs:
    # Alternate the two, so that a change in the machine's load hits both.
    without, with_ = [], []
    for half in range(2):
        without += times(alone, program, runs // 2)
        with_ += times(bridged, program, runs // 2)
    for label, f in (("mean", statistics.mean), ("median", statistics.median), ("fastest", min)):
        a, b = f(without), f(with_)
        print(f"| {names[program]} | {label} | {ms(a)} | {ms(b)} | {ms(b - a)} |")
PY
