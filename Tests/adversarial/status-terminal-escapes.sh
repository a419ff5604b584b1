#!/bin/sh
# Any local user can send escape sequences to root's terminal through
# `appsandboxfs status`: the table prints the mount table's source and
# mountpoint as they are, and a user's own FUSE mount of type
# fuse.appsandboxfs (here bindfs, as uid 65534) may carry any fsname. The
# denial log escapes such bytes (issue 11 item 7); the status table did not.
# Needs /dev/fuse usable by uid 65534 for the length of the script (its mode
# is restored). Exit 1 when the problem is present, 0 when absent.
set -u
BIN=${APPSANDBOXFS_BIN:-$(dirname "$0")/../../.build/debug/appsandboxfs}
BIN=$(realpath "$BIN")
work=$(mktemp -d /tmp/adv-status.XXXXXX)
chmod 755 "$work"
mode=$(stat -c %a /dev/fuse)
cleanup() {
    setpriv --reuid 65534 --regid 65534 --clear-groups fusermount3 -u "$work/mnt" 2>/dev/null || umount -l "$work/mnt" 2>/dev/null
    chmod "$mode" /dev/fuse
    rm -rf "$work"
}
trap cleanup EXIT
# The user names the folders: the source (bindfs makes it the fsname) and
# the mountpoint.
name=$(printf 'x\033]0;OWNED\007\033[2J')
mkdir -p "$work/$name" "$work/mnt"
chown 65534:65534 "$work/$name" "$work/mnt"
chmod 666 /dev/fuse
setpriv --reuid 65534 --regid 65534 --clear-groups bindfs --no-allow-other -o subtype=appsandboxfs "$work/$name" "$work/mnt" || exit 2
chmod "$mode" /dev/fuse
"$BIN" status > "$work/out" 2>&1
if grep -q "$(printf '\033')" "$work/out"; then
    echo "PROBLEM: appsandboxfs status (run as root) printed another user's escape sequence:"
    cat -v "$work/out" | grep -i owned
    exit 1
fi
cat -v "$work/out"
exit 0
