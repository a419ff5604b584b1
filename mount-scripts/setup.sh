#!/usr/bin/env bash
# Installs what appsandboxfs needs (libfuse3, the FUSE tools, and the tools
# the tests and benchmarks use), builds it, and installs it for mount(8) and
# the shell. Safe to run again.
#
#   bash mount-scripts/setup.sh             release build, installed (copied)
#   bash mount-scripts/setup.sh --debug     debug build, installed (test.sh: the tests build debug anyway)
#   bash mount-scripts/setup.sh uninstall   remove what it installed (the packages stay)
#
# What it installs (APPSANDBOXFS_INSTALL=no skips this; needs root or sudo).
# Copies, not links: removing the checkout leaves the tool working.
#   /usr/local/bin/appsandboxfs          the program
#   /sbin/mount.fuse.appsandboxfs        the helper for `mount -t fuse.appsandboxfs` and fstab
#   /usr/local/share/man/man1/appsandboxfs.1
#   bash, zsh and fish completions under /usr/local/share
# /etc/fuse.conf is left alone: root needs nothing there. Other users who
# mount need `user_allow_other` in it (the driver mounts with allow_other);
# APPSANDBOXFS_USER_ALLOW_OTHER=yes adds that line, and says so.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

installed=(/usr/local/bin/appsandboxfs /sbin/mount.fuse.appsandboxfs /usr/local/share/man/man1/appsandboxfs.1
    /usr/local/share/bash-completion/completions/appsandboxfs /usr/local/share/zsh/site-functions/_appsandboxfs
    /usr/local/share/fish/vendor_completions.d/appsandboxfs.fish)

configuration=release
case "${1:-}" in
    uninstall)
        for file in "${installed[@]}"; do
            if [ -e "$file" ] || [ -L "$file" ]; then $SUDO rm -f "$file"; echo "setup: removed $file"; fi
        done
        exit 0 ;;
    --debug) configuration=debug ;;
    "") ;;
    *) echo "usage: $0 [--debug | uninstall]" >&2; exit 64 ;;
esac

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
[ -e /dev/fuse ] || { echo "setup: /dev/fuse is missing: this machine cannot mount FUSE file systems" >&2; exit 1; }
if ! grep -qs '^user_allow_other' /etc/fuse.conf; then
    if [ "${APPSANDBOXFS_USER_ALLOW_OTHER:-no}" = yes ]; then
        echo user_allow_other | $SUDO tee -a /etc/fuse.conf >/dev/null
        echo "setup: added user_allow_other to /etc/fuse.conf (APPSANDBOXFS_USER_ALLOW_OTHER=yes): users other than root may mount with allow_other"
    else
        echo "setup: note: only root can mount containers here; for other users, add user_allow_other to /etc/fuse.conf (or run with APPSANDBOXFS_USER_ALLOW_OTHER=yes)"
    fi
fi

# The build names its commit (appsandboxfs --version), for a release build;
# a debug build shares its flags with `swift build --build-tests`.
# A release build links the Swift runtime and Foundation statically: every
# verb starts in about half the time (5.6 ms against 10.1 ms for
# `appsandboxfs --version`, and `mount` starts two processes), for a larger
# file (about 80 MB) that needs no Swift installation to run.
flags=(-c "$configuration")
if [ "$configuration" = release ]; then
    flags+=(--static-swift-stdlib)
    commit=$(git describe --always --dirty 2>/dev/null || true)
    [ -z "$commit" ] || flags+=(-Xcc "-DAPPSANDBOXFS_COMMIT=\"$commit\"")
fi
echo "setup: building ($configuration; a first release build takes several minutes)"
start=$SECONDS
swift build "${flags[@]}" ${APPSANDBOXFS_BUILD_FLAGS:-} --product appsandboxfs
echo "setup: built in $((SECONDS - start)) s"

[ "${APPSANDBOXFS_INSTALL:-yes}" != no ] || exit 0
bin_dir=$(swift build "${flags[@]}" ${APPSANDBOXFS_BUILD_FLAGS:-} --show-bin-path)
[ -x "$bin_dir/appsandboxfs" ] || { echo "setup: no $bin_dir/appsandboxfs after the build" >&2; exit 1; }
echo "setup: installing $("$bin_dir/appsandboxfs" --version) as /usr/local/bin/appsandboxfs, /sbin/mount.fuse.appsandboxfs, the man page and completions"
$SUDO mkdir -p /usr/local/bin /usr/local/share/man/man1 /usr/local/share/bash-completion/completions \
    /usr/local/share/zsh/site-functions /usr/local/share/fish/vendor_completions.d
# A link left by an older setup.sh would make install write through it.
[ ! -L /usr/local/bin/appsandboxfs ] || $SUDO rm -f /usr/local/bin/appsandboxfs
$SUDO install -m 0755 "$bin_dir/appsandboxfs" /usr/local/bin/appsandboxfs
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
