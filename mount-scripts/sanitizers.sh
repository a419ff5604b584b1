#!/usr/bin/env bash
# Memory safety: builds the driver with AddressSanitizer (and LeakSanitizer)
# and with ThreadSanitizer, runs the integration tests against each build
# (the tests find the driver through APPSANDBOXFS_BIN), and fails if a
# sanitizer reported anything. Needs root and /dev/fuse, like test.sh.
# The same way, the integration tests run against the release build as
# setup.sh installs it (mount-scripts/release-flags.sh: its linker, static
# libstdc++ and metadata accessors are not what a debug build uses).
#
#   bash mount-scripts/sanitizers.sh              # address, then thread
#   bash mount-scripts/sanitizers.sh thread       # one of them
#   bash mount-scripts/sanitizers.sh inprocess    # the in-process fixture's tests, the test binary built with ThreadSanitizer
#   bash mount-scripts/sanitizers.sh release      # the release build, no sanitizer (its tests pass or fail alone)
#   SANITIZER_FILTER=Reliability bash mount-scripts/sanitizers.sh address
#
# Every sanitized process (the driver and the other verbs the tests run)
# writes its reports to a folder of its own (log_path), so nothing reaches
# the standard error the tests read; the folder must be empty at the end.
# A leak found at exit is reported there but does not change the exit
# status (LSAN_OPTIONS exitcode=0), which the tests check; leaks that are
# not appsandboxfs's own are listed in mount-scripts/sanitizers-leaks.supp.
# The long runs of the suite are shortened here (a sanitized driver is 2 to
# 15 times slower): the *_OPS variables below; export your own to change them.
#
# The tests themselves are built normally (swift build --build-tests), in
# $SCRATCH (default .build, the same as test.sh, so a CI run reuses it); the
# sanitized drivers in .build-asan and .build-tsan. Each step says how long
# it took.
#
# Whatever happens (a failure, Ctrl-C), nothing is left running: drivers of
# the sanitized builds still alive at the end (a test killed half-way) are
# stopped and their mounts detached, and a report folder with no report in
# it is removed.
set -euo pipefail
cd "$(dirname "$0")/.."

step() {    # step SECONDS-AT-START WHAT
    echo "sanitizers: $2 took $((SECONDS - $1)) s"
}

logs=""
keep_logs=0
drivers=()
# Stops what a test left of a sanitized driver: SIGTERM (the driver
# unmounts and empties tmp), then SIGKILL and a lazy unmount of its own
# mount (found by backing folder and mountpoint, `mount BACKING MOUNTPOINT`).
stop_leftover_drivers() {
    local driver exe pid args i
    for driver in "${drivers[@]}"; do
        for exe in /proc/[0-9]*/exe; do
            [ "$(readlink "$exe" 2>/dev/null)" = "$driver" ] || continue
            pid=${exe#/proc/}; pid=${pid%/exe}
            mapfile -d '' -t args < "/proc/$pid/cmdline" 2>/dev/null || continue
            echo "sanitizers: stopping a driver left running: $pid ${args[*]}" >&2
            kill -TERM "$pid" 2>/dev/null || continue
            for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
            kill -0 "$pid" 2>/dev/null || continue
            kill -KILL "$pid" 2>/dev/null || true
            if [ "${args[1]:-}" = mount ] && [ ${#args[@]} -ge 4 ] \
                && awk -v src="${args[2]}" -v mnt="${args[3]}" '$1 == src && $2 == mnt { found = 1 } END { exit !found }' /proc/mounts; then
                fusermount3 -u -z "${args[3]}" 2>/dev/null || true
            fi
        done
    done
}

cleanup() {
    stop_leftover_drivers
    if [ -n "$logs" ] && [ -d "$logs" ] && [ "$keep_logs" = 0 ] \
        && [ -z "$(find "$logs" -name 'asan.*' -o -name 'tsan.*')" ]; then
        rm -rf "$logs"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(address thread)
scratch=${SCRATCH:-.build}
filter=${SANITIZER_FILTER:-IntegrationTests}

echo "sanitizers: building the tests ($scratch)"
start=$SECONDS
swift build --scratch-path "$scratch" --build-tests 2>&1 | tail -n 1
step $start "building the tests"

# Shorter long runs (see docs/reliability.md for what each one does).
export FSX_OPS=${FSX_OPS:-4000}
export FSX_LONG_OPS=${FSX_LONG_OPS:-5000}
export DIFF_EVERY_OPS=${DIFF_EVERY_OPS:-600}
export STRESS_OPS=${STRESS_OPS:-300}
export CONCURRENCY_OPS=${CONCURRENCY_OPS:-500}
# The stress test's memory bounds do not hold for a sanitized driver (ASan
# keeps freed memory in quarantine); its descriptor checks still run. Set
# for the sanitized kinds below, not for the release build.
sanitized=1

failed=0
for kind in "${kinds[@]}"; do
    test_scratch=$scratch
    test_filter=$filter
    case $kind in
        address) build=.build-asan ;;
        thread) build=.build-tsan ;;
        # AppSandboxTesting's Options(inProcess: true) serves the file system
        # from threads of the test process itself: there the tests are what
        # must be built with ThreadSanitizer (the driver beside them too).
        inprocess) build=.build-tsan-tests; test_scratch=$build; test_filter=${INPROCESS_FILTER:-InProcessFixture|CrashSafety} ;;
        release) build=.build-release ;;
        *) echo "sanitizers: unknown sanitizer $kind (address, thread, inprocess or release)" >&2; exit 64 ;;
    esac
    sanitized=1
    start=$SECONDS
    if [ "$kind" = inprocess ]; then
        echo "sanitizers: building the tests with --sanitize thread ($build)"
        swift build --scratch-path "$build" --sanitize thread --build-tests 2>&1 | tail -n 1
    elif [ "$kind" = release ]; then
        echo "sanitizers: building the driver as setup.sh does, release ($build)"
        # shellcheck source=mount-scripts/release-flags.sh
        source mount-scripts/release-flags.sh
        release_flags_for "$build"
        swift build --scratch-path "$build" "${release_flags[@]}" --product appsandboxfs 2>&1 | tail -n 1
        sanitized=0
    else
        echo "sanitizers: building the driver with --sanitize $kind ($build)"
        swift build --scratch-path "$build" --sanitize "$kind" --product appsandboxfs 2>&1 | tail -n 1
    fi
    step $start "building the $kind driver"
    configuration=debug; [ "$kind" != release ] || configuration=release
    driver="$(realpath "$(swift build --scratch-path "$build" -c "$configuration" --show-bin-path)")/appsandboxfs"
    # The Foundation bridge that `run`, `env` and `launch` preload lies
    # beside the driver (docs/foundation.md): the normal build's, not a
    # sanitized one (every program run would need the sanitizer's runtime).
    if [ "$kind" != inprocess ]; then
        for library in libappsandboxfs-preload.so libAppSandboxFoundationBridge.so; do
            cp "$(swift build --scratch-path "$scratch" --show-bin-path)/$library" "$(dirname "$driver")/"
        done
    fi
    drivers+=("$driver")

    logs=$(mktemp -d /tmp/asfs-sanitizer-XXXXXX)
    chmod 1777 "$logs"    # some tests run the driver as uid 65534
    echo "sanitizers: integration tests against $driver (reports: $logs)"
    status=0
    keep_logs=0
    start=$SECONDS
    marks=()
    [ "$sanitized" = 0 ] || marks+=(RELIABILITY_SANITIZED=1)
    env "${marks[@]}" \
    APPSANDBOXFS_BIN="$driver" \
    ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=1:abort_on_error=0:allocator_may_return_null=1" \
    LSAN_OPTIONS="exitcode=0:suppressions=$PWD/mount-scripts/sanitizers-leaks.supp:print_suppressions=0" \
    TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=0:second_deadlock_stack=1" \
        swift test --scratch-path "$test_scratch" --skip-build --filter "$test_filter" > "$logs/swift-test.log" 2>&1 || status=$?
    tail -n 3 "$logs/swift-test.log"
    step $start "the integration tests against the $kind driver"
    stop_leftover_drivers
    if [ $status -ne 0 ]; then
        echo "sanitizers ($kind): the integration tests failed (exit $status); their output: $logs/swift-test.log" >&2
        grep -E '✘' "$logs/swift-test.log" | head -n 20 >&2 || true
        failed=1
        keep_logs=1
    fi
    reports=$(find "$logs" -name 'asan.*' -o -name 'tsan.*' | sort)
    if [ -n "$reports" ]; then
        echo "sanitizers ($kind): $(echo "$reports" | wc -l) processes reported (kinds, most frequent first):" >&2
        # One line per report kind: the first line of each report, with pids and addresses taken out.
        for report in $reports; do
            grep -m 1 -E 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|finished with ignores enabled' "$report" \
                | sed -E 's/==[0-9]+==//; s/\(pid=[0-9]+\)//; s/thread T[0-9]+ /thread /; s/0x[0-9a-f]+/ADDR/g'
        done | sort | uniq -c | sort -rn >&2
        echo "sanitizers ($kind): the first report in full: $(echo "$reports" | head -n 1)" >&2
        head -n 40 "$(echo "$reports" | head -n 1)" >&2
        failed=1
    else
        echo "sanitizers ($kind): no reports"
        [ $status -ne 0 ] || rm -rf "$logs"
    fi
done
exit $failed
