#!/bin/sh
# json_valid.sh (guest suite json-valid): the JSON libnpu and the tools
# write, read back by npu-json-check (strict json-c, UTF-8 validated, no
# NaN): a program's NPU_TRACE= trace with its cross-stream dependencies as
# flow events, npu-bench --tiny's results and overlap trace (from the
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

# a program that joins streams with events, traced from its first command
if NPU_TRACE=$dir/concurrentKernels.json concurrentKernels >"$dir/ck.out" 2>&1; then
	ok "NPU_TRACE=file concurrentKernels runs"
else
	sed 's/^/# /' "$dir/ck.out"
	notok "NPU_TRACE=file concurrentKernels runs"
fi
check "$dir/concurrentKernels.json" "concurrentKernels' trace"
if grep -q '"ph":"s"' "$dir/concurrentKernels.json" 2>/dev/null &&
   grep -q '"ph":"f"' "$dir/concurrentKernels.json"; then
	ok "concurrentKernels' trace has flow events for its event waits"
else
	notok "concurrentKernels' trace has flow events for its event waits"
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
