#!/bin/bash
# Boot one kernel N times in a row with the npu device, load the modules,
# power off, and check each boot's kernel log as run.sh does (any Oops,
# BUG, WARNING, ... fails that boot). A soak for boot reliability, not part
# of `make test` (it takes about 10 s a boot).
#
#   boot-soak.sh KERNEL [N]        KERNEL: 6.1 | 6.12 | debug, N: 50
#
# Environment: as run.sh (NPU_TCG_THREAD=multi soaks the multi-threaded
# TCG that the runner no longer uses by default). Prints one TAP line per
# boot and a summary; the first lines of a failing boot's report go to
# stdout as TAP comments; its whole kernel log, guest log and runner
# output are kept in $BUILD/boot-soak/<kernel>-<boot>/. Exit status is
# non-zero if any boot failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
kernel=${1:?usage: boot-soak.sh KERNEL [N]}
n=${2:-50}
case "$n" in '' | *[!0-9]*) echo "boot-soak: N must be a number" >&2; exit 2 ;; esac

QEMU=${QEMU:-$("$top/scripts/build-qemu.sh")} || { echo "boot-soak: QEMU build failed" >&2; exit 1; }
export QEMU
BUILD=${BUILD:-$top/build}
logs=$BUILD/boot-soak
mkdir -p "$logs"
res=$(mktemp -d)
trap 'rm -rf "$res"' EXIT
log=$res/runner.log

echo "TAP version 13"
echo "1..$n"
fail=0 start=$(date +%s)
for i in $(seq 1 "$n"); do
	rm -f "$res"/*
	if bash "$top/tests/guest/run.sh" --kernel "$kernel" --timeout 300 --results "$res" \
		--cmd true >"$log" 2>&1; then
		echo "ok $i - boot $i of $kernel"
	else
		fail=$((fail + 1))
		echo "not ok $i - boot $i of $kernel"
		grep -a -m 8 'FAIL\|  |' "$log" | sed 's/^/# /'
		rm -rf "${logs:?}/$kernel-$i"
		cp -a "$res" "$logs/$kernel-$i"
		echo "# logs: $logs/$kernel-$i/"
	fi
done
secs=$(( $(date +%s) - start ))
echo "# $kernel: $((n - fail)) of $n boots clean, $fail failed, ${secs}s (TCG thread=${NPU_TCG_THREAD:-single})"
[ $fail = 0 ]
