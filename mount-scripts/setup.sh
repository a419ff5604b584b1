#!/usr/bin/env bash
# Installs what appsandboxfs needs (libfuse3, the FUSE tools, and the tools
# the tests and benchmarks use), builds it, and installs it for mount(8) and
# the shell. Safe to run again.
#
# What it installs (APPSANDBOXFS_INSTALL=no skips this; needs root or sudo):
#   /usr/local/bin/appsandboxfs          a symbolic link to this build
#                                        (swift build --show-bin-path, so
#                                        rebuilding updates it)
#   /sbin/mount.fuse.appsandboxfs        the helper for `mount -t fuse.appsandboxfs` and fstab
#   /usr/local/share/man/man1/appsandboxfs.1
#   bash, zsh and fish completions under /usr/local/share
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

packages=(libfuse3-dev fuse3 pkg-config attr rsync sqlite3 fio bindfs tar util-linux man-db)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
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

[ "${APPSANDBOXFS_INSTALL:-yes}" != no ] || exit 0
bin_dir=$(swift build ${APPSANDBOXFS_BUILD_FLAGS:-} --show-bin-path)
[ -x "$bin_dir/appsandboxfs" ] || { echo "setup: no $bin_dir/appsandboxfs after the build" >&2; exit 1; }
echo "setup: installing /usr/local/bin/appsandboxfs -> $bin_dir/appsandboxfs, /sbin/mount.fuse.appsandboxfs, the man page and completions"
$SUDO mkdir -p /usr/local/bin /usr/local/share/man/man1 /usr/local/share/bash-completion/completions \
    /usr/local/share/zsh/site-functions /usr/local/share/fish/vendor_completions.d
$SUDO ln -sfn "$bin_dir/appsandboxfs" /usr/local/bin/appsandboxfs
$SUDO install -m 0755 mount-scripts/mount.fuse.appsandboxfs /sbin/mount.fuse.appsandboxfs
$SUDO install -m 0644 docs/appsandboxfs.1 /usr/local/share/man/man1/appsandboxfs.1
for shell in bash zsh fish; do
    case $shell in
        bash) target=/usr/local/share/bash-completion/completions/appsandboxfs ;;
        zsh) target=/usr/local/share/zsh/site-functions/_appsandboxfs ;;
        fish) target=/usr/local/share/fish/vendor_completions.d/appsandboxfs.fish ;;
    esac
    "$bin_dir/appsandboxfs" --generate-completion-script "$shell" | $SUDO tee "$target" >/dev/null
done
