#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite (real mounts; needs root
# and /dev/fuse), then a pass as a user other than root (nonroot.sh), then
# the integration tests again against the driver built
# with AddressSanitizer and with ThreadSanitizer, and the in-process
# fixture's tests built with ThreadSanitizer (sanitizers.sh), which fail on
# any sanitizer report, and against the release build as setup.sh makes it.
#
#   bash mount-scripts/test.sh                    # all of it (CI)
#   bash mount-scripts/test.sh --filter Rules     # some tests, no sanitizers
#   SANITIZERS=0 bash mount-scripts/test.sh       # no sanitizers
#   NONROOT=0 SANITIZERS=0 bash mount-scripts/test.sh   # the suite alone
#
# Arguments go to `swift test`; a run of part of the suite skips the
# pass as another user and the sanitizers, which always run the whole of
# the integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# A debug install: the tests build debug anyway, and a release build on top
# would cost CI several minutes more (the tests run the build under test,
# not the installed copy; the helper tests only need one installed).
bash mount-scripts/setup.sh --debug
start=$SECONDS
swift build --build-tests
echo "test.sh: building took $((SECONDS - start)) s"
start=$SECONDS
swift test --skip-build "$@"
echo "test.sh: the suite took $((SECONDS - start)) s"
# A pass as a user other than root (uid 65534), /etc/fuse.conf as installed
# (nonroot.sh; under a minute).
if [ "${NONROOT:-1}" != 0 ] && [ $# -eq 0 ]; then
    bash mount-scripts/nonroot.sh
fi
if [ "${SANITIZERS:-1}" != 0 ] && [ $# -eq 0 ]; then
    bash mount-scripts/sanitizers.sh address thread inprocess release
fi
