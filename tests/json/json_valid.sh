#!/bin/sh
# json_valid.sh (guest suite json-valid): the JSON libnpu and the tools
# write, read back by npu-json-check (strict json-c, UTF-8 validated, no
# NaN): an unmodified program's NPU_TRACE= trace with its cross-stream
# dependencies as flow events, npu-bench --tiny's results and overlap trace (from the
# bench-tiny suite when it ran in this boot), npu-smi -j.
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; }
check() {	# check FILE WHAT
	if out=$(npu-json-check "$1" 2>&1); then
		ok "$2 is strict JSON"
	else
		echo "$out" | sed 's/^/# /'
		notok "$2 is strict JSON"
	fi
}
dir=/tmp/json-valid
rm -rf "$dir"
mkdir -p "$dir"

# a program that forks streams with an event, traced from its first
# command: simpleMultiCopy's second pass records an event on stream 0 after
# the first pass's commands and makes its 3 other streams wait for it
if NPU_TRACE=$dir/simpleMultiCopy.json simpleMultiCopy >"$dir/smc.out" 2>&1; then
	ok "NPU_TRACE=file simpleMultiCopy runs"
else
	sed 's/^/# /' "$dir/smc.out"
	notok "NPU_TRACE=file simpleMultiCopy runs"
fi
check "$dir/simpleMultiCopy.json" "simpleMultiCopy's trace"
starts=$(grep -o '"ph":"s"' "$dir/simpleMultiCopy.json" 2>/dev/null | wc -l)
ends=$(grep -o '"ph":"f"' "$dir/simpleMultiCopy.json" 2>/dev/null | wc -l)
if [ "$starts" = 3 ] && [ "$ends" = 3 ]; then
	ok "simpleMultiCopy's trace has one flow per stream that waits on the fork event"
else
	echo "# flow starts $starts, ends $ends, expected 3 and 3"
	notok "simpleMultiCopy's trace has one flow per stream that waits on the fork event"
fi

# npu-bench: the bench-tiny suite leaves its files in /tmp; else run it
if [ ! -f /tmp/bench-tiny.json ] || [ ! -f /tmp/bench-tiny-trace.json ]; then
	npu-bench --tiny --json /tmp/bench-tiny.json --trace /tmp/bench-tiny-trace.json \
		>"$dir/bench.out" 2>&1 || sed 's/^/# /' "$dir/bench.out"
fi
check /tmp/bench-tiny.json "npu-bench --json"
check /tmp/bench-tiny-trace.json "npu-bench --trace"

if npu-smi -j >"$dir/smi.json" 2>"$dir/smi.err"; then
	check "$dir/smi.json" "npu-smi -j"
else
	sed 's/^/# /' "$dir/smi.err"
	notok "npu-smi -j runs"
fi
echo "1..$n"
