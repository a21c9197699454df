#!/bin/bash
# SPDX-License-Identifier: MIT
# usage: first-kernel.sh
#
# Perform Documentation/first-kernel.rst from an empty folder and print TAP:
# write the files the page shows (a paragraph "``name``::" and the literal
# block after it), run the page's commands (the lines "$ ..." of its
# literal blocks, in order, in one bash, with NPU set to this checkout and
# nothing else: no NPU_MODPARAMS, the device's defaults), then check what
# they printed and wrote: both results correct, each stream's events, the
# profile's device time of each user kernel equal to its cycles at the
# unit clock within 1 % or carrying the host-bound notice, the trace and
# the timeline pictures, the Choreo program's line. Needs the built tree
# (make qemu modules lib tests).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
guide=$top/Documentation/first-kernel.rst
case "${1:-}" in -h | --help) sed -n '3,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/npu-first-kernel.XXXXXX")
trap 'rm -rf "$work"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else nok "$what"; fi; }

# The files and commands of the page.
python3 - "$guide" "$work" <<'EOF' || { echo "1..1"; echo "not ok 1 - $guide parses"; exit 1; }
import re, sys
lines = open(sys.argv[1]).read().split("\n")
work = sys.argv[2]
cmds, files, i = [], [], 0
while i < len(lines):
    l = lines[i]
    m = re.fullmatch(r"``([\w.-]+)``::", l)
    if l.endswith("::"):
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("   ")):
            body.append(lines[i][3:])
            i += 1
        while body and not body[-1].strip():
            body.pop()
        if m:
            open(f"{work}/{m.group(1)}", "w").write("\n".join(body) + "\n")
            files.append(m.group(1))
        else:
            cmds += [b[2:] for b in body if b.startswith("$ ")]
        continue
    i += 1
open(f"{work}/.commands", "w").write("\n".join(cmds) + "\n")
open(f"{work}/.files", "w").write(" ".join(files) + "\n")
EOF

echo "# files: $(cat "$work/.files")"
cd "$work" || exit 1
mkdir guide && mv $(cat .files) guide/ && cd guide || exit 1
[ -z "$(ls -A | grep -v -e '\.c$' -e '\.co$')" ] || { echo "1..1"; echo "not ok 1 - the folder holds only the page's files"; exit 1; }

# Run the commands: each one's output to its own log, its wall time and
# status recorded.
unset NPU_MODPARAMS NPU_EXTRA_BIN
export NPU=$top
i=0
{
	echo 'set -o pipefail'
	while IFS= read -r c; do
		i=$((i + 1))
		printf 't0=$SECONDS\n'
		printf '{ %s\n} >%s 2>&1\n' "$c" "../cmd$i.log"
		printf 'echo "$? $((SECONDS - t0))" >../cmd%s.rc\n' "$i"
	done <../.commands
} >../run.sh
ncmd=$i
total0=$(date +%s)
bash ../run.sh
total=$(( $(date +%s) - total0 ))
i=0
while IFS= read -r c; do
	i=$((i + 1))
	read -r rc secs <"../cmd$i.rc"
	if [ "$rc" = 0 ]; then
		ok "\$ $c ($secs s)"
	else
		nok "\$ $c (exit $rc after $secs s)"
		sed 's/^/# /' "../cmd$i.log" | tail -30
	fi
done <../.commands
echo "# the page's $ncmd commands took $total s"

# The program's output: the guest run is the command with --cmd 'app ...'.
log=
for f in ../cmd*.log; do grep -q '^saxpy: ' "$f" && log=$f; done
[ -n "$log" ] || log=/dev/null
sed 's/^/# /' "$log" | grep -v '^# compute ring [0-9].* 0\.000 ' | head -60
check "SAXPY over 16M floats is right" grep -q '^saxpy: ok ' "$log"
check "SGEMM 256^3 is right" grep -q '^sgemm: ok ' "$log"
check "each stream's events timed its share" \
	test "$(grep -Ec '^stream [01]: saxpy over [0-9]+ floats in [0-9.]+ ms of device time' "$log")" = 2
# Each user kernel of the profile: "device time: A ms measured, B ms
# modelled", then A within 1 % of B or a host-bound line.
for k in saxpy sgemm; do
	awk -v k="$k" '
		$0 ~ "^  " k " \\(" { in_k = 1; next }
		/^  [^ ]/ { in_k = 0 }
		in_k && /^    device time: / { meas = $3; model = $6; seen = 1 }
		in_k && /^    host-bound: the launches took [0-9.]+x .*timing=virtual/ { hb = 1 }
		END {
			if (!seen) { print "# no device-time line for " k; exit 1 }
			d = meas - model; if (d < 0) d = -d
			printf "# %s: %s ms measured, %s ms modelled%s\n", k, meas, model,
				hb ? " (host-bound notice)" : ""
			exit !(model > 0 && (d <= 0.01 * model || (hb && meas > model)))
		}' "$log" >"../$k.check"
	rc=$?
	cat "../$k.check"
	check "$k's profile: device time is its cycles at the clock within 1 % or carries the host-bound notice" test $rc = 0
done
check "npu-run --help prints its usage" sh -c "'$top/tools/npu-run' --help | grep -q '^usage: npu-run'"
check "npu-run names a missing program and exits 125" sh -c \
	"'$top/tools/npu-run' ./no-such-app 2>&1 | grep -q 'no-such-app: not an executable'; [ \$? = 0 ] && { '$top/tools/npu-run' ./no-such-app 2>/dev/null; [ \$? = 125 ]; }"
check "the trace was copied out of the guest" test -s out/trace.json
check "npu-timeline drew out/timeline.png and out/timeline.svg" \
	test -s out/timeline.png -a -s out/timeline.svg
clog=
for f in ../cmd*.log; do grep -q '^y ' "$f" && clog=$f; done
check "the Choreo program printed its result" \
	grep -qx 'y 1.000000 3.000000 127.000000' "${clog:-/dev/null}"
echo "1..$n"
[ $failed = 0 ]
