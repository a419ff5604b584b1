#!/usr/bin/env bash
# Shared by bench/run.sh and bench/memory.sh (sourced, as root): installs the
# tools that are missing, builds appsandboxfs (release, in .build-bench) and
# libfuse's passthrough_ll example and bench/parallel.c into bench/out/. Sets
# $appsandboxfs, $fixture_bench, $passthrough_ll and $parallel to the binaries.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo/bench/out"

if [[ $(id -u) != 0 ]]; then
    echo "bench: run as root (it mounts and drops the kernel's caches)" >&2
    exit 1
fi

# Tools.
missing=()
for pair in fio:fio bindfs:bindfs sqlite3:sqlite3 gcc:gcc pkg-config:pkg-config fusermount3:fuse3 python3:python3; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
[[ -e /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c || -e /usr/share/doc/libfuse3-dev/examples/passthrough_ll.c.gz ]] \
    || missing+=(libfuse3-dev)
if ((${#missing[@]})); then
    echo "Installing: ${missing[*]}" >&2
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

# Drivers.
mkdir -p "$out"
echo "Building appsandboxfs (release)..." >&2
# As setup.sh installs it (mount-scripts/release-flags.sh).
source "$repo/mount-scripts/release-flags.sh"
release_flags_for "$repo/.build-bench"
(cd "$repo" && swift build "${release_flags[@]}" --product appsandboxfs --scratch-path .build-bench >&2)
appsandboxfs="$repo/.build-bench/release/appsandboxfs"
# AppSandboxTesting's fixture rows (bench/FixtureBench), built the same way.
(cd "$repo" && swift build "${release_flags[@]}" --product fixture-bench --scratch-path .build-bench >&2)
fixture_bench="$repo/.build-bench/release/fixture-bench"

examples=/usr/share/doc/libfuse3-dev/examples
if [[ -e $examples/passthrough_ll.c ]]; then
    cp "$examples/passthrough_ll.c" "$out/passthrough_ll.c"
else
    gunzip -c "$examples/passthrough_ll.c.gz" >"$out/passthrough_ll.c"
fi
# The example includes passthrough_helpers.h from its own folder.
for header in "$examples"/*.h "$examples"/*.h.gz; do
    [[ -e $header ]] || continue
    case $header in
        *.gz) gunzip -c "$header" >"$out/$(basename "${header%.gz}")" ;;
        *) cp "$header" "$out/" ;;
    esac
done
# shellcheck disable=SC2046
gcc -O2 -Wall -o "$out/passthrough_ll" "$out/passthrough_ll.c" $(pkg-config --cflags --libs fuse3)
passthrough_ll="$out/passthrough_ll"
# Parallel callers (the parallel workload).
gcc -O2 -Wall -pthread -o "$out/parallel" "$repo/bench/parallel.c"
parallel="$out/parallel"
