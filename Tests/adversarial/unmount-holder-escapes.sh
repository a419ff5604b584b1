#!/bin/sh
# Any user who can reach a mount (the app, or another user through
# allow_other) can send escape sequences to root's terminal through
# `appsandboxfs unmount`: a busy mount's holders are named by their process
# name and the path they use, both chosen by that user, printed as they were.
# Exit 1 when the problem is present, 0 when absent.
set -u
BIN=${APPSANDBOXFS_BIN:-$(dirname "$0")/../../.build/debug/appsandboxfs}
BIN=$(realpath "$BIN")
work=$(mktemp -d /tmp/adv-unmount.XXXXXX)
chmod 755 "$work"
holder=
cleanup() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null
    sleep 0.3
    "$BIN" unmount "$work/mnt" >/dev/null 2>&1 || fusermount3 -uz "$work/mnt" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/backing/App.app" "$work/mnt"
"$BIN" mount "$work/backing" "$work/mnt" --app-name App --create >/dev/null || exit 2
chmod 777 "$work/backing/Documents"
# uid 65534 names its process and its folder.
setpriv --reuid 65534 --regid 65534 --clear-groups /usr/bin/python3 -c '
import ctypes, os, sys, time
folder = sys.argv[1] + "/Documents/d\033[2J"
os.mkdir(folder)
os.chdir(folder)
ctypes.CDLL(None).prctl(15, b"s\033]0;OWNED\007", 0, 0, 0)
time.sleep(60)
' "$work/mnt" &
holder=$!
sleep 1
"$BIN" unmount "$work/mnt" > "$work/out" 2>&1
if grep -q "$(printf '\033')" "$work/out"; then
    echo "PROBLEM: appsandboxfs unmount (root) printed another user's escape sequences:"
    cat -v "$work/out"
    exit 1
fi
cat -v "$work/out"
exit 0
