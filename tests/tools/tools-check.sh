#!/bin/bash
# The host tools' command lines (TAP): for each, --help exits 0 and prints a
# usage on stdout, and an unknown option exits 2 with a message on stderr
# that names it. A tool that is not built is a failure. The guest's tools
# (npu-smi with a device, npu-bench, fmnist-demo) are checked by the guest
# suite tools-smi (npu_smi_test).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
tools=(
	"$BUILD/sdk/bin/npu-cc"
	"$BUILD/sdk/bin/npu-choreo"
	"$BUILD/tools/npu-smi"
	"$BUILD/tools/npu-timeline"
	"$BUILD/bench/npu-bench-host"
	"$top/tests/guest/run.sh"
)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}

for t in "${tools[@]}"; do
	name=$(basename "$t")
	if [ ! -x "$t" ]; then
		result 1 "$name is built (${t#$BUILD/} is missing)"
		continue
	fi
	"$t" --help >"$tmp/out" 2>"$tmp/err"
	rc=$?
	head -n1 "$tmp/out" | grep -q '^usage: '
	result $(( rc != 0 || $? != 0 )) "$name --help: exit 0 and a usage on stdout (exit $rc)"
	"$t" --no-such-option >"$tmp/out" 2>"$tmp/err"
	rc=$?
	grep -q -- 'no-such-option' "$tmp/err"
	result $(( rc != 2 || $? != 0 )) "$name --no-such-option: exit 2 and a message naming it (exit $rc)"
done
echo "1..$n"
