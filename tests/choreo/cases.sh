#!/bin/sh
# choreo_cases.sh - the npu-choreo programs in the guest (TAP), as built by
# tests/choreo/Makefile into <bin>/choreo/:
#   cases/NAME      stdout must equal cases/NAME.out exactly, exit 0
#   runtime/NAME    must exit with a status in 1..127 (an error, not a
#                   signal) and print runtime/NAME.err's text on stderr
#   callers/NAME    C programs over `npu-choreo build` objects, TAP
#                   themselves: exit 0, a plan, no "not ok"
# Every expected file counts: a program that was not built (no compiler,
# or it failed to compile) is a failure, never a skip.
bin=$(cd "$(dirname "$0")" && pwd)
dir=${CHOREO_DIR:-$bin/choreo}
work=$(mktemp -d /tmp/choreo.XXXXXX)
trap 'rm -rf "$work"' EXIT
n=0

fail_not_built() { # what
	echo "not ok $n - $1 (not built: see the choreo-diag host suite)"
}

run() { # program: stdout in $work/out, stderr in $work/err, status in rc
	(cd "$work" && timeout -s KILL "${CHOREO_TIMEOUT:-120}" "$1" >"$work/out" 2>"$work/err")
	rc=$?
}

found=0
for want in "$dir"/cases/*.out; do
	[ -f "$want" ] || continue
	found=1
	name=$(basename "$want" .out)
	n=$((n + 1))
	if [ ! -x "$dir/cases/$name" ]; then
		fail_not_built "cases/$name"
		continue
	fi
	run "$dir/cases/$name"
	if [ $rc = 0 ] && cmp -s "$want" "$work/out"; then
		echo "ok $n - cases/$name"
	else
		echo "not ok $n - cases/$name (exit $rc)"
		diff -u "$want" "$work/out" | sed 's/^/# /'
		sed 's/^/# stderr: /' "$work/err" | head -20
	fi
done

for want in "$dir"/runtime/*.err; do
	[ -f "$want" ] || continue
	found=1
	name=$(basename "$want" .err)
	n=$((n + 1))
	if [ ! -x "$dir/runtime/$name" ]; then
		fail_not_built "runtime/$name"
		continue
	fi
	run "$dir/runtime/$name"
	text=$(cat "$want")
	if [ $rc -gt 0 ] && [ $rc -lt 128 ] && grep -qF "$text" "$work/err"; then
		echo "ok $n - runtime/$name fails with status $rc naming $text"
	else
		echo "not ok $n - runtime/$name: exit $rc, stderr must contain '$text'"
		sed 's/^/# stderr: /' "$work/err" | head -20
		sed 's/^/# stdout: /' "$work/out" | head -5
	fi
done

for name in seed_caller span_caller dims_mismatch; do
	found=1
	n=$((n + 1))
	if [ ! -x "$dir/callers/$name" ]; then
		fail_not_built "callers/$name"
		continue
	fi
	run "$dir/callers/$name"
	sed 's/^/# /' "$work/out"
	sed 's/^/# stderr: /' "$work/err" | head -20
	if [ $rc = 0 ] && grep -q '^1\.\.[1-9]' "$work/out" && ! grep -q '^not ok' "$work/out"; then
		echo "ok $n - callers/$name"
	else
		echo "not ok $n - callers/$name (exit $rc)"
	fi
done

if [ $found = 0 ]; then
	n=$((n + 1))
	echo "not ok $n - no choreo test programs installed in $dir"
fi
echo "1..$n"
