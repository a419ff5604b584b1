#!/usr/bin/env bash
# The FUSE requests each workload costs, on passthrough_ll and appsandboxfs
# (as root, with /dev/fuse; under a minute once built):
#
#   bash bench/requests.sh [--appsandboxfs-args "--writeback"]
#
# Builds the drivers like bench/run.sh, then runs bench/requests.py.
set -euo pipefail
# shellcheck source=bench/setup.sh
source "$(dirname "$0")/setup.sh"
python3 "$repo/bench/requests.py" --appsandboxfs "$appsandboxfs" --passthrough-ll "$passthrough_ll" "$@"
