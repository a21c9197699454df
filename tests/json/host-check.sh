#!/bin/bash
# host-check.sh (host suite json): libnpu's trace string escaper, the strict
# validator itself, npu-timeline on good and hostile input, and the host
# bench's JSON. TAP on stdout. Needs make -C tests/json and -C tools.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
check=$BUILD/tests/json/npu-json-check
timeline=$BUILD/tools/npu-timeline
sample=$top/tests/json/timeline-sample.json
tmp=$(mktemp -d "${TMPDIR:-/tmp}/npu-json.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
n=0
t() {	# t DESCRIPTION COMMAND...: ok if the command succeeds
	local what=$1
	shift
	n=$((n + 1))
	if "$@" >"$tmp/out" 2>&1; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what"
		sed 's/^/# /' "$tmp/out" | head -20
	fi
}
# rc_is WANT COMMAND...: the command exits WANT (and not by a signal)
rc_is() {
	local want=$1 rc
	shift
	"$@"
	rc=$?
	[ "$rc" = "$want" ] || { echo "exit status $rc, expected $want"; return 1; }
}

t "escaper: exact output, strict round trip of every byte and of random bytes" \
	"$BUILD/tests/json/json_escape_test"

# the validator accepts strict JSON and nothing else
t "npu-json-check accepts the sample trace" "$check" "$sample"
bad=('{"a":1,}' '[NaN]' '[1e999]' "{'a':1}" $'["tab\there"]' '[1] x' '[1' '' '{"a":"\x"}')
for b in "${bad[@]}"; do
	printf '%s' "$b" >"$tmp/bad.json"
	t "npu-json-check rejects $(printf '%q' "$b")" rc_is 1 "$check" -q "$tmp/bad.json"
done
printf '["\xc3"]' >"$tmp/bad.json"
t "npu-json-check rejects invalid UTF-8" rc_is 1 "$check" -q "$tmp/bad.json"

# npu-timeline: one drawing path, three formats
t "npu-timeline writes PNG, SVG and PDF (extensions and a base name)" \
	"$timeline" -q -t 'sample "q" \ é' "$sample" "$tmp/a.png" "$tmp/a.svg" "$tmp/a.pdf" "$tmp/b"
t "the PNG, SVG and PDF are what they claim" /usr/bin/python3 - "$tmp" <<'PY'
import struct, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
for png in ("a.png", "b.png"):
    b = open(d + "/" + png, "rb").read()
    assert b[:8] == b"\x89PNG\r\n\x1a\n", png
    w, h = struct.unpack(">II", b[16:24])
    assert w == 1400 and 150 < h < 600, (png, w, h)
for svg in ("a.svg", "b.svg"):
    assert ET.parse(d + "/" + svg).getroot().tag.endswith("svg"), svg
p = open(d + "/a.pdf", "rb").read()
assert p.startswith(b"%PDF-") and b"%%EOF" in p[-64:]
PY
t "--format pdf on a base name writes only the PDF" bash -c \
	"'$timeline' -q --format pdf '$sample' '$tmp/c' && [ -s '$tmp/c.pdf' ] && [ ! -e '$tmp/c.png' ]"
# the figures: busy time per lane and the one dependency, whole and zoomed
"$timeline" "$sample" "$tmp/d.png" >"$tmp/table" 2>&1
t "whole trace: stream 1 busy 200 us of 300 (66.7%), stream 2 50 us (16.7%), one dependency" \
	bash -c "grep -Eq '^stream 1 +2 +200.0 +66.7%' '$tmp/table' &&
		 grep -Eq '^stream 2 .* 1 +50.0 +16.7%' '$tmp/table' &&
		 grep -q '^1 event dependencies in the window' '$tmp/table' || { cat '$tmp/table'; false; }"
"$timeline" --from 100us --to 0.25ms "$sample" "$tmp/e.svg" >"$tmp/table" 2>&1
t "window 100-250 us: stream 1 one command, 50 us (33.3%); stream 2 50 us (33.3%)" \
	bash -c "grep -Eq '^stream 1 +1 +50.0 +33.3%' '$tmp/table' &&
		 grep -Eq '^stream 2 .* 1 +50.0 +33.3%' '$tmp/table' || { cat '$tmp/table'; false; }"
t "--help documents the window options" bash -c "'$timeline' --help | grep -q -- '--from TIME'"

# bad input: a clear message and a non-zero status, never a crash
printf '{"traceEvents": [' >"$tmp/trunc.json"
t "truncated JSON: exit 1, 'not JSON'" bash -c "! '$timeline' '$tmp/trunc.json' '$tmp/x.png' 2>'$tmp/err'; \
	[ \$? = 0 ] && grep -q 'not JSON' '$tmp/err'"
t "truncated JSON exits 1" rc_is 1 "$timeline" -q "$tmp/trunc.json" "$tmp/x.png"
echo '{}' >"$tmp/empty.json"
t "no traceEvents: exit 1" rc_is 1 "$timeline" -q "$tmp/empty.json" "$tmp/x.png"
echo '{"traceEvents": []}' >"$tmp/none.json"
t "no events: exit 1" rc_is 1 "$timeline" -q "$tmp/none.json" "$tmp/x.png"
cat >"$tmp/odd.json" <<'JSON'
{"traceEvents": [{"ph": "X", "ts": "soon"}, {"ph": 5}, 7, null, {"ph": "E", "ts": 3},
 {"ph": "X", "name": 12, "pid": [1], "tid": {"a": 1}, "ts": 1e300, "dur": -5},
 {"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
 {"ph": "f", "id": 9, "pid": 1, "tid": 1, "ts": 0}, {"ph": "s", "pid": 1, "tid": 2, "ts": 0}]}
JSON
t "wrongly typed fields, a dangling E and flow: drawn without a crash" \
	"$timeline" -q "$tmp/odd.json" "$tmp/odd.png"
python3 -c 'print("[" * 100000)' >"$tmp/deep.json"
t "100000 nested arrays: exit 1" rc_is 1 "$timeline" -q "$tmp/deep.json" "$tmp/x.png"
t "a window after the trace's end: exit 2" rc_is 2 "$timeline" -q --from 1s "$sample" "$tmp/x.png"
t "--to 5parsecs: exit 2" rc_is 2 "$timeline" -q --to 5parsecs "$sample" "$tmp/x.png"
t "--width 10: exit 2" rc_is 2 "$timeline" -q --width 10 "$sample" "$tmp/x.png"
t "--format gif: exit 2" rc_is 2 "$timeline" -q --format gif "$sample" "$tmp/x"
t "an unwritable output: exit 1" rc_is 1 "$timeline" -q "$sample" /nonexistent/dir/x.png

# the host bench's JSON
if [ -x "$BUILD/bench/npu-bench-host" ]; then
	"$BUILD/bench/npu-bench-host" --tiny --trials 1 >"$tmp/host.json" 2>"$tmp/host.err"
	t "npu-bench-host's JSON is strict JSON" "$check" "$tmp/host.json"
fi
echo "1..$n"
