#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite (real mounts; needs root
# and /dev/fuse), then the integration tests again against the driver built
# with AddressSanitizer and with ThreadSanitizer (sanitizers.sh), which fail
# on any sanitizer report.
#
#   bash mount-scripts/test.sh                    # all of it (CI)
#   bash mount-scripts/test.sh --filter Rules     # some tests, no sanitizers
#   SANITIZERS=0 bash mount-scripts/test.sh       # the suite alone
#
# Arguments go to `swift test`; a run of part of the suite skips the
# sanitizers, which always run the whole of the integration tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash mount-scripts/setup.sh
start=$SECONDS
swift build --build-tests 2>&1 | tail -n 3
echo "test.sh: building took $((SECONDS - start)) s"
start=$SECONDS
swift test --skip-build "$@"
echo "test.sh: the suite took $((SECONDS - start)) s"
if [ "${SANITIZERS:-1}" != 0 ] && [ $# -eq 0 ]; then
    bash mount-scripts/sanitizers.sh address thread
fi
