#!/bin/sh
# L1/the mount table's trust (issue 11 item 8, issue 25 item 10): the driver
# hands libfuse "fsname=<backing path>" without escaping, so a comma in the
# backing folder's name starts new mount options. A user who names their
# container folder "c,suid,dev,fsname=/etc" gets, when root mounts it, a
# mount without nosuid and nodev and with a forged source in the mount table.
# Exit 1 when the problem is present, 0 when absent.
set -u
BIN=${APPSANDBOXFS_BIN:-$(dirname "$0")/../../.build/debug/appsandboxfs}
work=$(mktemp -d /tmp/adv-fsname.XXXXXX)
chmod 755 "$work"
backing="$work/c,suid,dev,fsname=/etc"
cleanup() { "$BIN" unmount "$work/mnt" >/dev/null 2>&1 || fusermount3 -uz "$work/mnt" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$backing/App.app" "$work/mnt"
# The folder's owner is another user, who chose its name.
chown -R 65534:65534 "$backing"
if ! "$BIN" mount "$backing" "$work/mnt" --app-name App --create >/dev/null 2>"$work/err"; then
    echo "mount refused: $(cat "$work/err")"
    exit 0
fi
line=$(awk -v m="$work/mnt" '$5 == m' /proc/self/mountinfo)
echo "$line"
problem=0
case " $(echo "$line" | cut -d' ' -f6) " in
    *nosuid*) ;;
    *) echo "PROBLEM: mounted without nosuid"; problem=1 ;;
esac
case " $(echo "$line" | cut -d' ' -f6) " in
    *nodev*) ;;
    *) echo "PROBLEM: mounted without nodev"; problem=1 ;;
esac
source=$(echo "$line" | awk '{for (i = 1; i <= NF; i++) if ($i == "-") { print $(i + 2); exit }}')
[ "$source" = "/etc" ] && { echo "PROBLEM: the mount table names /etc as the source"; problem=1; }
exit $problem
