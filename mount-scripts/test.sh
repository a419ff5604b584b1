#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite (real mounts; needs root
# and /dev/fuse).
set -euo pipefail
cd "$(dirname "$0")/.."
bash mount-scripts/setup.sh
swift build --build-tests 2>&1 | tail -n 3
swift test --skip-build "$@"
