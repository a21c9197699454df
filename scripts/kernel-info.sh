#!/bin/bash
# kernel-info.sh NAME FIELD: facts about a test kernel.
#   NAME:  6.1 | 6.12 | debug (the cached debug build of linux-source-6.1)
#   FIELD: release | kdir (tree to build modules against) | vmlinuz | moddir
set -euo pipefail
name=${1:?usage: kernel-info.sh 6.1|6.12|debug release|kdir|vmlinuz|moddir}
field=${2:?field}
top=$(cd "$(dirname "$0")/.." && pwd)
if [ "$name" = debug ]; then
	dir=$("$top/scripts/build-debug-kernel.sh")
	rel=$(cat "$dir/release")
	case "$field" in
	release) echo "$rel" ;;
	kdir) echo "$dir/build" ;;
	vmlinuz) echo "$dir/bzImage" ;;
	moddir) echo "$dir/root/lib/modules/$rel" ;;
	esac
	exit 0
fi
rel=$("$top/scripts/kernel-release.sh" "$name")
case "$field" in
release) echo "$rel" ;;
kdir) echo "/lib/modules/$rel/build" ;;
vmlinuz) echo "/boot/vmlinuz-$rel" ;;
moddir) echo "/lib/modules/$rel" ;;
*) echo "kernel-info: unknown field $field" >&2; exit 1 ;;
esac
