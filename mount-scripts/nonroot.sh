#!/usr/bin/env bash
# A pass of the suite as a user other than root (issue 31), with
# /etc/fuse.conf as installed: the fixture in both modes (its examples,
# Swift Testing and XCTest), the command line's main verbs and the rules of
# part one (NonRootUserTests), the protection classes and lock states, the
# capacity, and the mount decision's unit tests. test.sh runs it after the
# suite; it needs root (to become another user) and the tests built.
#
#   bash mount-scripts/nonroot.sh
#   NONROOT_FILTER=NonRootUser bash mount-scripts/nonroot.sh
#
# The tests run as uid 65534 from the build folder (read only to them),
# with a HOME of their own outside /tmp (where `run --confine` refuses for
# want of privilege rather than for the folder). /dev/fuse is made 0666, as
# distributions ship it, for this step only: its mode is put back whatever
# happens (a failure, Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
    echo "nonroot: run as root (it runs the tests as uid 65534)" >&2
    exit 64
fi
user=65534
scratch=${SCRATCH:-.build}
bin="$(realpath "$(swift build --scratch-path "$scratch" --show-bin-path)")"
tests="$bin/appsandboxfsPackageTests.xctest"
[ -x "$tests" ] || { echo "nonroot: $tests is missing: build the tests first (swift build --build-tests)" >&2; exit 1; }
filter=${NONROOT_FILTER:-'AppSandboxTestingExamples|NonRootUser|MountPrivileges|IntegrationTests\.(ProtectionClass|LockScreen|Capacity|InboxRules|TmpRules|TmpfileRules|EscapeRules|HardLinkZone|ByteNameRules|ChownNoChange|Update)'}
# Left out, since they need what only root has: a chown to another user
# (I4, I5: the kernel refuses it with EPERM before the driver sees it, as on
# any file system), a process run as another user (T2's foreign locks), a
# mount namespace (U2).
skip=${NONROOT_SKIP:-'InboxRulesTests/(everyChangeFails|inboxFolderStays)|TmpRulesTests/foreignLockOnTmp|UpdateTests/mountedElsewhereRefused'}

device_mode=$(stat -c %a /dev/fuse)
home=""
cleanup() {
    chmod "$device_mode" /dev/fuse
    [ -z "$home" ] || rm -rf --one-file-system "$home"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if grep -qs '^[[:space:]]*user_allow_other[[:space:]]*\(#.*\)\?$' /etc/fuse.conf; then
    echo "nonroot: note: /etc/fuse.conf has user_allow_other: these mounts get allow_other (not the machine as installed)"
fi
chmod 0666 /dev/fuse
home=$(mktemp -d /var/lib/appsandboxfs-nonroot-XXXXXX)
chown "$user:$user" "$home"
chmod 0700 "$home"

as_user() {
    setpriv --reuid="$user" --regid="$user" --clear-groups -- \
        env -i PATH="$PATH" HOME="$home" TMPDIR=/tmp LANG=C.UTF-8 APPSANDBOXFS_BIN="$bin" "$@"
}

start=$SECONDS
status=0
echo "nonroot: the tests as uid $user (filter $filter)"
as_user "$tests" --testing-library swift-testing --filter "$filter" --skip "$skip" > "$home/swift-testing.log" 2>&1 || status=$?
tail -n 1 "$home/swift-testing.log"
if [ $status -ne 0 ]; then
    grep -E '✘|↳' "$home/swift-testing.log" | head -n 40 >&2 || true
fi
xctest=0
as_user "$tests" AppSandboxTestingExamples.PreferencesXCTestExample > "$home/xctest.log" 2>&1 || xctest=$?
tail -n 1 "$home/xctest.log"
[ $xctest -eq 0 ] || { cat "$home/xctest.log" >&2; status=1; }
echo "nonroot: the tests as uid $user took $((SECONDS - start)) s"
exit $status
