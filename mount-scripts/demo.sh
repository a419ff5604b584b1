#!/usr/bin/env bash
# Sets up the machine, lays out a demo container and mounts it.
#   bash mount-scripts/demo.sh            mount at /tmp/appsandboxfs-demo/mnt
#   bash mount-scripts/demo.sh unmount    unmount it again
set -euo pipefail
cd "$(dirname "$0")/.."
demo=${APPSANDBOXFS_DEMO:-/tmp/appsandboxfs-demo}
# The release build setup.sh makes (and installs as /usr/local/bin/appsandboxfs).
bin=$(swift build -c release --show-bin-path)/appsandboxfs
if [ "${1:-}" = unmount ]; then
    "$bin" unmount "$demo/mnt"
    exit
fi
bash mount-scripts/setup.sh
mkdir -p "$demo/mnt"
if mountpoint -q "$demo/mnt"; then "$bin" unmount "$demo/mnt"; fi
backing="$demo/container"
if [ ! -d "$backing" ]; then
    # A small bundle, laid out by `init`, and a file delivered to the Inbox.
    mkdir -p "$demo/bundle"
    printf '#!/bin/sh\necho "Demo app"\n' > "$demo/bundle/Demo"; chmod 755 "$demo/bundle/Demo"
    echo '"Hello" = "Hello";' > "$demo/bundle/Localizable.strings"
    "$bin" init "$backing" --app-name Demo --bundle-from "$demo/bundle"
    echo "Thanks for the invitation." > "$demo/invitation.txt"
    "$bin" deliver "$demo/invitation.txt" --to "$backing"
    echo "My first note." > "$backing/Documents/notes.txt"
fi
"$bin" mount "$backing" "$demo/mnt" --app-name Demo --denial-log "$demo/denials.log"
cat <<TXT
Mounted the demo container at $demo/mnt (backing directory: $backing).
Look at it:
  ls -la $demo/mnt $demo/mnt/Documents/Inbox
  cp /etc/hosts $demo/mnt/Demo.app/          # Read-only file system
  touch $demo/mnt/Documents/Inbox/new.txt     # Operation not permitted
  setfattr -n com.apple.MobileBackup -v 0x01 $demo/mnt/Documents/notes.txt
  getfattr -d -m - $demo/mnt/Documents/notes.txt
  cat $demo/denials.log
Unmount:
  bash mount-scripts/demo.sh unmount
TXT
