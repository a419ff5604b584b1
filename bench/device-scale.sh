#!/usr/bin/env bash
# A device of many apps (issue 28, "Scale"): for a device of N apps (each a
# small bundle and a data container of 100 files; 20 App Groups spread over
# the apps, app i in group i mod 20), measures
#
#   - `mount` to ready: `appsandboxfs mount DEVICE MNT` returns once the
#     driver answers (median of 5 mounts of the filled device), and the same
#     with a cold page cache (echo 3 > drop_caches first; median of 3);
#   - the driver's RSS (VmRSS of /proc/<pid>/status) idle after the mount,
#     and after `ls -lR` of the whole device;
#   - `install` and `uninstall` per app (median over the N apps; each a
#     whole command run, process start included);
#   - `listapps` (median of 5): the reading of every container's metadata
#     that install, uninstall and launch also do;
#   - `install` of an app with a 10 MiB file, and `cp -a` of that .app on the
#     same file system (the copy alone): the install's share besides the copy
#     is the difference (median of 5 each);
#   - `launch` start-up of a no-op app (its executable a copy of /bin/true):
#     from `launch` to its exit, median of 20;
#
# and prints one table, the machine's state beside it (nproc, load average
# before and after, kernel, the busiest other processes).
#
#   bash bench/device-scale.sh                 # N = 20 and 200, release build
#   bash bench/device-scale.sh --apps "0 20"   # other sizes (0: an empty device, the fixed costs)
#   bash bench/device-scale.sh --debug         # the debug build (no release build)
#   APPSANDBOXFS=/path/to/appsandboxfs bash bench/device-scale.sh   # a binary already built
#
# As root (it mounts; `launch` is confined). Works in
# /var/lib/appsandboxfs-bench (launch refuses a mountpoint below /tmp);
# the device and its mount are removed at the end, also when a step fails.
set -euo pipefail
shopt -s nullglob

sizes="20 200"
config=release
while (($#)); do
    case $1 in
        --apps) sizes=$2; shift 2 ;;
        --debug) config=debug; shift ;;
        *) echo "usage: bash bench/device-scale.sh [--apps \"20 200\"] [--debug]" >&2; exit 2 ;;
    esac
done
if [[ $(id -u) != 0 ]]; then
    echo "bench: run as root (it mounts and launches confined apps)" >&2
    exit 1
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -n ${APPSANDBOXFS:-} ]]; then
    appsandboxfs=$APPSANDBOXFS
    config="given ($appsandboxfs)"
else
    echo "Building appsandboxfs ($config)..." >&2
    built=$EPOCHREALTIME
    # `launch` preloads the Foundation bridge: built too, beside the binary.
    for product in appsandboxfs appsandboxfs-preload AppSandboxFoundationBridge; do
        (cd "$repo" && swift build -c "$config" --product "$product" >&2)
    done
    echo "built in $(awk -v a="$built" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s" >&2
    appsandboxfs="$repo/.build/$config/appsandboxfs"
fi

mkdir -p /var/lib/appsandboxfs-bench
work=$(mktemp -d /var/lib/appsandboxfs-bench/device-scale-XXXXXX)
mnt=$work/mnt
cleanup() {
    if mountpoint -q "$mnt" 2>/dev/null; then
        "$appsandboxfs" unmount "$mnt" >/dev/null 2>&1 || fusermount3 -u -z "$mnt" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

# Milliseconds since the epoch, without a fork.
now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
# Microseconds between two `now`s, as milliseconds with one decimal.
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }
median() { sort -g | awk 'NF { v[++n] = $1 } END { if (n == 0) print "-"; else if (n % 2) print v[(n + 1) / 2]; else printf "%.1f\n", (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
driver_pid() { "$appsandboxfs" status --json | python3 -c '
import json, sys
for m in json.load(sys.stdin)["mounts"]:
    if m["mountpoint"] == sys.argv[1]: print(m["pid"])' "$1"; }
rss_mib() { awk '$1 == "VmRSS:" { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# A value and its unit, or "-" for none.
unit() { if [[ $1 == - ]]; then echo -; else echo "$1 $2"; fi; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# An app folder: Info.plist, the executable, a resource (and a 10 MiB file
# with `big`).
make_app() { # folder bundle-id executable-source [big]
    local folder=$1 name
    name=$(basename "$folder" .app)
    mkdir -p "$folder"
    cat >"$folder/Info.plist" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0"><dict>
<key>CFBundleIdentifier</key><string>$2</string>
<key>CFBundleExecutable</key><string>$name</string>
<key>CFBundleVersion</key><string>1</string>
</dict></plist>
EOF
    cp "$3" "$folder/$name"
    chmod 755 "$folder/$name"
    echo "resource of $name" >"$folder/resource.txt"
    if [[ ${4:-} == big ]]; then head -c $((10 * 1024 * 1024)) /dev/urandom >"$folder/big.bin"; fi
}

printf '#!/bin/sh\nexit 0\n' >"$work/app.sh"
started_load=$(load)
started_ps=$(ps -eo pcpu=,comm= --sort=-pcpu | head -5 | sed 's/^/  /')
rows=()
for n in $sizes; do
    echo "== $n apps ==" >&2
    device=$work/device-$n
    builds=$work/builds-$n
    "$appsandboxfs" device init "$device" >/dev/null
    mkdir -p "$mnt" "$builds"
    "$appsandboxfs" mount "$device" "$mnt"

    # install: N apps, each timed.
    installs=()
    for ((i = 0; i < n; i++)); do
        make_app "$builds/App$i.app" "com.example.bench.app$i" "$work/app.sh"
        t0=$(now)
        "$appsandboxfs" install "$mnt" "$builds/App$i.app" --group "group.com.example.bench.g$((i % 20))" >/dev/null
        t1=$(now)
        installs+=("$(ms "$t0" "$t1")")
    done
    install_ms=$(printf '%s\n' "${installs[@]}" | median)

    # 100 files in each data container (Documents, through the backing
    # directory: this is the device's content, not a measurement).
    for data in "$device"/Containers/Data/Application/*/; do
        mkdir -p "$data/Documents/files"
        for ((f = 0; f < 100; f++)); do echo "file $f" >"$data/Documents/files/f$f.txt"; done
    done

    # mount to ready: cold (the page cache dropped first, so the binary and
    # its libraries come from disk), median of 3; then warm, median of 5.
    colds=() mounts=()
    for ((r = 0; r < 8; r++)); do
        "$appsandboxfs" unmount "$mnt"
        ((r >= 3)) || { sync; echo 3 >/proc/sys/vm/drop_caches; }
        t0=$(now)
        "$appsandboxfs" mount "$device" "$mnt"
        t1=$(now)
        if ((r < 3)); then colds+=("$(ms "$t0" "$t1")"); else mounts+=("$(ms "$t0" "$t1")"); fi
    done
    cold_ms=$(printf '%s\n' "${colds[@]}" | median)
    mount_ms=$(printf '%s\n' "${mounts[@]}" | median)
    pid=$(driver_pid "$mnt")
    sleep 1
    rss_idle=$(rss_mib "$pid")
    t0=$(now)
    entries=$(ls -lR "$mnt" | wc -l)
    t1=$(now)
    lsr_ms=$(ms "$t0" "$t1")
    rss_lsr=$(rss_mib "$pid")

    # listapps: reads every container's metadata (DeviceCatalog), as
    # install, uninstall and launch do; median of 5.
    lists=()
    for ((r = 0; r < 5; r++)); do
        t0=$(now)
        "$appsandboxfs" listapps "$mnt" >/dev/null
        t1=$(now)
        lists+=("$(ms "$t0" "$t1")")
    done
    list_ms=$(printf '%s\n' "${lists[@]}" | median)

    # install of a 10 MiB app, and the copy alone, median of 5 each.
    make_app "$builds/Big.app" com.example.bench.big "$work/app.sh" big
    bigs=() copies=()
    for ((r = 0; r < 5; r++)); do
        sync
        t0=$(now)
        "$appsandboxfs" install "$mnt" "$builds/Big.app" >/dev/null
        t1=$(now)
        bigs+=("$(ms "$t0" "$t1")")
        "$appsandboxfs" uninstall "$mnt" com.example.bench.big
        rm -rf "$device/copy.app"
        sync
        t0=$(now)
        cp -a "$builds/Big.app" "$device/copy.app"
        t1=$(now)
        copies+=("$(ms "$t0" "$t1")")
        rm -rf "$device/copy.app"
    done
    big_ms=$(printf '%s\n' "${bigs[@]}" | median)
    copy_ms=$(printf '%s\n' "${copies[@]}" | median)

    # launch start-up of a no-op app, median of 20 (after 3 warm-ups).
    make_app "$builds/Noop.app" com.example.bench.noop /bin/true
    "$appsandboxfs" install "$mnt" "$builds/Noop.app" >/dev/null
    launches=()
    for ((r = 0; r < 23; r++)); do
        t0=$(now)
        "$appsandboxfs" launch "$mnt" com.example.bench.noop
        t1=$(now)
        ((r < 3)) || launches+=("$(ms "$t0" "$t1")")
    done
    launch_ms=$(printf '%s\n' "${launches[@]}" | median)
    trues=()
    for ((r = 0; r < 20; r++)); do
        t0=$(now); /bin/true; t1=$(now)
        trues+=("$(ms "$t0" "$t1")")
    done
    true_ms=$(printf '%s\n' "${trues[@]}" | median)
    "$appsandboxfs" uninstall "$mnt" com.example.bench.noop

    # uninstall: the N apps, each timed.
    uninstalls=()
    for ((i = 0; i < n; i++)); do
        t0=$(now)
        "$appsandboxfs" uninstall "$mnt" "com.example.bench.app$i"
        t1=$(now)
        uninstalls+=("$(ms "$t0" "$t1")")
    done
    uninstall_ms=$(printf '%s\n' "${uninstalls[@]}" | median)
    "$appsandboxfs" unmount "$mnt"
    rm -rf "$device" "$builds"

    rows+=("$n|$mount_ms|$cold_ms|$rss_idle|$rss_lsr|$entries|$lsr_ms|$install_ms|$uninstall_ms|$list_ms|$big_ms|$copy_ms|$launch_ms|$true_ms")
done
ended_load=$(load)

echo
echo "appsandboxfs $("$appsandboxfs" --version) ($config build); $(nproc) cores; kernel $(uname -r)"
echo "load average at the start: $started_load; at the end: $ended_load"
echo "busiest processes at the start (%CPU over each one's life, command):"
echo "$started_ps"
echo "and at the end:"
ps -eo pcpu=,comm= --sort=-pcpu | head -5 | sed 's/^/  /'
echo
echo "| apps | mount to ready | mount, cold page cache | RSS idle | RSS after ls -lR | ls -lR lines | ls -lR | install per app | uninstall per app | listapps | install 10 MiB app | cp -a of it | launch of a no-op app | /bin/true alone |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for row in "${rows[@]}"; do
    IFS='|' read -r n mount_ms cold_ms rss_idle rss_lsr entries lsr_ms install_ms uninstall_ms list_ms big_ms copy_ms launch_ms true_ms <<<"$row"
    echo "| $n | $(unit $mount_ms ms) | $(unit $cold_ms ms) | $(unit $rss_idle MiB) | $(unit $rss_lsr MiB) | $entries | $(unit $lsr_ms ms) | $(unit $install_ms ms) | $(unit $uninstall_ms ms) | $(unit $list_ms ms) | $(unit $big_ms ms) | $(unit $copy_ms ms) | $(unit $launch_ms ms) | $(unit $true_ms ms) |"
done
