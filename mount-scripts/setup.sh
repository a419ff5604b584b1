#!/usr/bin/env bash
# Installs what appsandboxfs needs (libfuse3, the FUSE tools, and the tools
# the tests and benchmarks use), builds it, and installs it for mount(8) and
# the shell. Safe to run again.
#
#   bash mount-scripts/setup.sh             release build, installed (copied)
#   bash mount-scripts/setup.sh --debug     debug build, installed (test.sh: the tests build debug anyway)
#   bash mount-scripts/setup.sh install [--binary FILE]
#                                           the install step alone: no packages, no build; installs the
#                                           release build already made (or FILE, e.g. .build/debug/appsandboxfs)
#   bash mount-scripts/setup.sh uninstall   remove what it installed (the packages stay)
#
# What it installs (APPSANDBOXFS_INSTALL=no skips this; needs root or sudo).
# Copies, not links: removing the checkout leaves the tool working.
#   /usr/local/bin/appsandboxfs          the program
#   /sbin/mount.fuse.appsandboxfs        the helper for `mount -t fuse.appsandboxfs` and fstab
#   /usr/local/share/man/man1/appsandboxfs.1
#   bash, zsh and fish completions under /usr/local/share
# DESTDIR=DIR puts each of these under DIR instead (DIR/usr/local/bin/...,
# DIR/sbin/...), as `make install DESTDIR=DIR` does, for install and
# uninstall alike: a staged install, for a package or a test; it needs no
# root when DIR is yours, and touches nothing outside DIR.
# /etc/fuse.conf is left alone: root needs nothing there, and other users
# mount without it, for themselves alone (no allow_other). For their mounts
# to have allow_other, as root's do, it needs `user_allow_other`;
# APPSANDBOXFS_USER_ALLOW_OTHER=yes adds that line, and says so.
set -euo pipefail
caller=$PWD
# A path as given on the command line (relative to where setup.sh was run).
absolute() { case $1 in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
destdir=${DESTDIR:-}
[ -z "$destdir" ] || destdir=$(absolute "${destdir%/}")
# For the copies: no sudo under a DESTDIR (make it yours).
install_sudo=$SUDO; [ -z "$destdir" ] || install_sudo=""

bin_target=$destdir/usr/local/bin/appsandboxfs
helper_target=$destdir/sbin/mount.fuse.appsandboxfs
man_target=$destdir/usr/local/share/man/man1/appsandboxfs.1
bash_target=$destdir/usr/local/share/bash-completion/completions/appsandboxfs
zsh_target=$destdir/usr/local/share/zsh/site-functions/_appsandboxfs
fish_target=$destdir/usr/local/share/fish/vendor_completions.d/appsandboxfs.fish
# The Foundation bridge (docs/foundation.md): `run` finds it in ../lib/appsandboxfs.
preload_target=$destdir/usr/local/lib/appsandboxfs/libappsandboxfs-preload.so
bridge_target=$destdir/usr/local/lib/appsandboxfs/libAppSandboxFoundationBridge.so
installed=("$bin_target" "$helper_target" "$man_target" "$bash_target" "$zsh_target" "$fish_target" "$preload_target" "$bridge_target")

# Copies the program at $1 (and the helper, man page and completions).
install_files() {
    local program=$1
    [ -f "$program" ] && [ -x "$program" ] || { echo "setup: $program is not a program to install" >&2; exit 1; }
    echo "setup: installing $("$program" --version) as $bin_target, $helper_target, the man page and completions"
    local file
    for file in "${installed[@]}"; do $install_sudo mkdir -p "$(dirname "$file")"; done
    # A link left by an older setup.sh would make install or tee write through it.
    for file in "${installed[@]}"; do [ ! -L "$file" ] || $install_sudo rm -f "$file"; done
    $install_sudo install -m 0755 "$program" "$bin_target"
    $install_sudo install -m 0755 mount-scripts/mount.fuse.appsandboxfs "$helper_target"
    $install_sudo install -m 0644 docs/appsandboxfs.1 "$man_target"
    "$program" --generate-completion-script bash | $install_sudo tee "$bash_target" >/dev/null
    "$program" --generate-completion-script zsh | $install_sudo tee "$zsh_target" >/dev/null
    "$program" --generate-completion-script fish | $install_sudo tee "$fish_target" >/dev/null
    # The Foundation bridge, from beside the program (a build folder) or
    # from its own build ($bridge_dir, set by the build below).
    local folder
    for folder in "${bridge_dir:-}" "$(dirname "$program")"; do
        [ -n "$folder" ] && [ -f "$folder/libappsandboxfs-preload.so" ] && [ -f "$folder/libAppSandboxFoundationBridge.so" ] || continue
        $install_sudo install -m 0755 "$folder/libappsandboxfs-preload.so" "$preload_target"
        $install_sudo install -m 0755 "$folder/libAppSandboxFoundationBridge.so" "$bridge_target"
        return
    done
    echo "setup: note: no Foundation bridge beside $program: run and env say so (docs/foundation.md)"
}

configuration=release
case "${1:-}" in
    uninstall)
        for file in "${installed[@]}"; do
            if [ -e "$file" ] || [ -L "$file" ]; then $install_sudo rm -f "$file"; echo "setup: removed $file"; fi
        done
        exit 0 ;;
    install)
        case "$#:${2:-}" in
            1:) program="$(swift build -c release --show-bin-path)/appsandboxfs"
                [ -x "$program" ] || { echo "setup: no release build at $program: run bash mount-scripts/setup.sh (it builds), or give --binary FILE" >&2; exit 1; } ;;
            3:--binary) program=$(absolute "$3") ;;
            *) echo "usage: $0 install [--binary FILE]" >&2; exit 64 ;;
        esac
        install_files "$program"
        exit 0 ;;
    --debug) configuration=debug ;;
    "") ;;
    *) echo "usage: $0 [--debug | install [--binary FILE] | uninstall]" >&2; exit 64 ;;
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
        echo "setup: note: users other than root mount containers for themselves alone (no allow_other); for allow_other, add user_allow_other to /etc/fuse.conf (or run with APPSANDBOXFS_USER_ALLOW_OTHER=yes)"
    fi
fi

# The build names its commit (appsandboxfs --version), for a release build;
# a debug build shares its flags with `swift build --build-tests`. What a
# release build links, and why: release-flags.sh.
flags=(-c "$configuration")
if [ "$configuration" = release ]; then
    source mount-scripts/release-flags.sh
    release_flags_for .build
    flags=("${release_flags[@]}")
    commit=$(git describe --always --dirty 2>/dev/null || true)
    [ -z "$commit" ] || flags+=(-Xcc "-DAPPSANDBOXFS_COMMIT=\"$commit\"")
fi
echo "setup: building ($configuration; a first release build takes several minutes)"
start=$SECONDS
swift build "${flags[@]}" ${APPSANDBOXFS_BUILD_FLAGS:-} --product appsandboxfs
# The Foundation bridge joins the Foundation of the program it is loaded
# into, so it is never linked with a static Swift runtime: a build folder
# of its own (only its few targets) for a release build.
bridge_flags=(-c "$configuration")
[ "$configuration" = debug ] || bridge_flags+=(--scratch-path .build/foundation-bridge)
for product in appsandboxfs-preload AppSandboxFoundationBridge; do
    swift build "${bridge_flags[@]}" --product "$product"
done
bridge_dir=$(swift build "${bridge_flags[@]}" --show-bin-path)
echo "setup: built in $((SECONDS - start)) s"

[ "${APPSANDBOXFS_INSTALL:-yes}" != no ] || exit 0
bin_dir=$(swift build "${flags[@]}" ${APPSANDBOXFS_BUILD_FLAGS:-} --show-bin-path)
[ -x "$bin_dir/appsandboxfs" ] || { echo "setup: no $bin_dir/appsandboxfs after the build" >&2; exit 1; }
install_files "$bin_dir/appsandboxfs"
