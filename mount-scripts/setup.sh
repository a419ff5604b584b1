#!/usr/bin/env bash
# Installs what appsandboxfs needs (libfuse3, the FUSE tools, and the tools
# the tests and benchmarks use), then builds it. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(libfuse3-dev fuse3 pkg-config attr rsync sqlite3 fio bindfs tar)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Let allow_other work for users other than root too.
if [ -w /etc/fuse.conf ] && ! grep -q '^user_allow_other' /etc/fuse.conf; then
    echo user_allow_other >> /etc/fuse.conf
fi
[ -e /dev/fuse ] || { echo "setup: /dev/fuse is missing: this machine cannot mount FUSE file systems" >&2; exit 1; }

echo "setup: building"
swift build ${APPSANDBOXFS_BUILD_FLAGS:-} 2>&1 | tail -n 3
