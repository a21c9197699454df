#!/bin/bash
# Tests of the guest runner itself (TAP): a passing suite passes; a failing
# suite, a kernel WARN, an Oops, a kernel panic, a hung guest and a QEMU crash
# each make the run fail. Uses kernel $1 (default 6.1).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
kernel=${1:-6.1}
rel=$("$top/scripts/kernel-info.sh" "$kernel" release) || exit 1
QEMU=${QEMU:-$("$top/scripts/build-qemu.sh")} || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The deliberately faulty module, built for this kernel.
mod=$work/mod
cp -r "$top/tests/guest/selftest-module" "$mod"
make -s -C "$("$top/scripts/kernel-info.sh" "$kernel" kdir)" M="$mod" modules >"$work/kbuild.log" 2>&1 ||
	{ cat "$work/kbuild.log"; echo "Bail out! cannot build the self-test module"; exit 1; }
mkdir -p "$work/bin"
cp "$mod/npu_selftest_fault.ko" "$work/bin/"

n=0 failed=0
check() { # name expected(pass|fail) reason-regex suites-line [env...]
	local name=$1 want=$2 why=$3 line=$4 out rc got
	shift 4
	n=$((n + 1))
	echo "$line" >"$work/suites"
	out=$(env "$@" NPU_RESULTS="$work/results" NPU_SUITES="$work/suites" NPU_VTIME_SUITES= NPU_SKIP_DEVICE=1 \
		NPU_RUNNER_ARGS="--no-npu" NPU_EXTRA_BIN="$work/bin" QEMU="${QEMU_OVERRIDE:-$QEMU}" \
		bash "$top/tests/run-all.sh" "$kernel" 2>&1)
	rc=$?
	got=pass
	[ $rc = 0 ] || got=fail
	if [ $got = "$want" ] && echo "$out" | grep -Eq -- "$why" && echo "$out" | tail -n1 | grep -Eq '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'; then
		echo "ok $n - $name"
	else
		failed=$((failed + 1))
		echo "not ok $n - $name (expected $want, got $got)"
		echo "$out" | tail -n 15 | sed 's/^/# /'
	fi
	unset QEMU_OVERRIDE
}

check "passing suite passes" pass '^2 passed, 0 failed' \
	"good sh -c 'echo 1..1; echo ok 1 - fine'"
check "failing test fails the run" fail 'run.sh: FAIL: suite broken failed' \
	"broken sh -c 'echo 1..2; echo ok 1 - fine; echo not ok 2 - deliberately broken'"
check "suite exiting non-zero fails the run" fail 'exit status 3' \
	"crashy sh -c 'echo 1..1; echo ok 1 - fine; exit 3'"
check "kernel WARN fails the run" fail 'kernel log has a report.*|.*WARNING' \
	"warn sh -c 'insmod /npu/bin/npu_selftest_fault.ko mode=warn; echo 1..1; echo ok 1 - fine'"
check "kernel Oops fails the run" fail 'Oops' \
	"oops sh -c 'insmod /npu/bin/npu_selftest_fault.ko mode=oops; echo 1..1; echo ok 1 - fine'"
check "kernel panic fails the run" fail 'did not reach the end' \
	"panic sh -c 'echo c > /proc/sysrq-trigger; echo 1..1; echo ok 1 - fine'"
check "hung guest times out and fails" fail 'did not finish within' \
	"hang sh -c 'echo 1..1; sleep 600; echo ok 1 - fine'" NPU_GUEST_TIMEOUT=25

# A QEMU that dies of SIGSEGV in the middle of the run.
cat >"$work/crashing-qemu" <<EOS
#!/bin/bash
"$QEMU" "\$@" &
pid=\$!
sleep 3
kill -SEGV \$pid
wait \$pid
EOS
chmod +x "$work/crashing-qemu"
QEMU_OVERRIDE=$work/crashing-qemu
check "QEMU crash fails the run" fail 'QEMU exited with status' \
	"slow sh -c 'sleep 20; echo 1..1; echo ok 1 - fine'"

# One command (--cmd, as npu-run and make guest-run use it): its output
# arrives while the guest still runs, and its exit status comes back.
n=$((n + 1))
t0=$(date +%s)
bash "$top/tests/guest/run.sh" --kernel "$kernel" --no-npu \
	--cmd 'echo first; sleep 8; echo second; exit 7' 2>"$work/cmd.err" |
	while read -r l; do echo "$(( $(date +%s) - t0 )) $l"; done >"$work/cmd.out"
rc=${PIPESTATUS[0]}
end=$(( $(date +%s) - t0 ))
first=$(awk '$2 == "first" { print $1 }' "$work/cmd.out")
if [ "$rc" = 7 ] && [ -n "$first" ] && [ $((end - first)) -ge 5 ] &&
   grep -q ' second$' "$work/cmd.out"; then
	echo "ok $n - --cmd: output streamed ($first s of $end), exit status 7 passed back"
else
	failed=$((failed + 1))
	echo "not ok $n - --cmd: output streamed and exit status 7 passed back (status $rc, first line at ${first:-never} s of $end)"
	cat "$work/cmd.out" "$work/cmd.err" | tail -n 15 | sed 's/^/# /'
fi

# The interactive shell (make shell) through a pseudo-terminal.
n=$((n + 1))
if [ -f "$BUILD/kmod/$rel/npu.ko" ]; then
	if QEMU=$QEMU python3 "$top/tests/guest/shell_check.py" "$kernel" >"$work/shell.log" 2>&1; then
		echo "ok $n - shell: npu loaded and device node present"
	else
		failed=$((failed + 1))
		echo "not ok $n - shell: npu loaded and device node present"
		tail -n 20 "$work/shell.log" | sed 's/^/# /'
	fi
else
	failed=$((failed + 1))
	echo "not ok $n - shell: no npu.ko for $rel (make modules)"
fi

echo "1..$n"
[ $failed = 0 ]
