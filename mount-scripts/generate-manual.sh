#!/usr/bin/env bash
# Regenerates docs/appsandboxfs.1, the man page, from the command line's own
# definitions (the verbs, their options, help texts and examples), with
# swift-argument-parser's generate-manual plugin. Run it after changing a
# verb or an option, and commit the result; setup.sh installs the page, and
# the Ecosystem tests check that it lists every verb and option.
#   bash mount-scripts/generate-manual.sh
# APPSANDBOXFS_SCRATCH_PATH picks the build folder (default .build).
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${APPSANDBOXFS_SCRATCH_PATH:-.build}
swift package --scratch-path "$scratch" plugin generate-manual --configuration debug \
    --date "$(date -u +%Y-%m-%d)" --section 1 2>&1 | tail -n 2
cp "$scratch/plugins/GenerateManual/outputs/appsandboxfs/appsandboxfs.1" docs/appsandboxfs.1
echo "generate-manual: wrote docs/appsandboxfs.1 (man -l docs/appsandboxfs.1 shows it)"
