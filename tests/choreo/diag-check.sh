#!/bin/bash
# npu-choreo's compile-time behaviour on the host (TAP), with the staged
# compiler ($BUILD/sdk/bin/npu-choreo):
#  - each tests/choreo/diag/NAME.co with a NAME.err: `npu-choreo build`
#    exits 1 and its stderr is exactly NAME.err (the diagnostic line, the
#    source line, the caret line); each diag/NAME.co with a NAME.out:
#    `npu-choreo build` exits 0 and prints exactly NAME.out (print! and
#    println!, which print when the program compiles). In .err files
#    "..." stands for any text:
#    the contract fixes the start of bison's messages ("syntax error,
#    unexpected ...") and of "type mismatch: ...", not the rest;
#  - inputs that are not programs (an empty file, only a comment, binary
#    bytes, a megabyte-long line; diag/*.co without .err and generated
#    ones): exit 0 or 1, never a crash; a diagnostic names the file; if
#    they compile, `npu-choreo exe` refuses them (no parameterless
#    __co__ function) with exit 1 and a message;
#  - `npu-choreo exe` with two parameterless functions names both;
#  - every other program of the corpus (cases/, runtime/, seed.co,
#    callers/*.co) compiles.
# A missing compiler is a failure, not a skip.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
choreo=$BUILD/sdk/bin/npu-choreo
src=$top/tests/choreo
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; }

if [ ! -x "$choreo" ]; then
	not_ok "npu-choreo is built ($choreo is missing)"
	echo "1..$n"
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# line_matches ACTUAL EXPECTED: equal, "..." in EXPECTED matching any text
line_matches() {
	local pat
	[[ $2 == *...* ]] || { [[ $1 == "$2" ]]; return; }
	# escape glob characters, then turn each "..." into *
	pat=$(printf '%s' "$2" | sed 's/[][*?\\]/\\&/g; s/\.\.\./*/g')
	# shellcheck disable=SC2053
	[[ $1 == $pat ]]
}

# stderr_matches ACTUAL-FILE EXPECTED-FILE: same number of lines, each
# matching
stderr_matches() {
	local -a got want
	local i
	mapfile -t got <"$1"
	mapfile -t want <"$2"
	[ ${#got[@]} = ${#want[@]} ] || return 1
	for ((i = 0; i < ${#want[@]}; i++)); do
		line_matches "${got[i]}" "${want[i]}" || return 1
	done
}

# build DIR FILE: compile DIR/FILE from DIR (so diagnostics name FILE as
# given); status in rc, stderr in $tmp/err
build() {
	(cd "$1" && "$choreo" build "$2" -o "$tmp/out.o") >"$tmp/stdout" 2>"$tmp/err"
	rc=$?
}

for want in "$src"/diag/*.err; do
	name=$(basename "$want" .err)
	build "$src/diag" "$name.co"
	if [ $rc = 1 ] && stderr_matches "$tmp/err" "$want"; then
		ok "diag/$name.co: $(head -n 1 "$want" | sed 's/^[^ ]* error: //')"
	else
		not_ok "diag/$name.co: exit $rc (want 1), stderr must match $name.err"
		sed 's/^/# want: /' "$want"
		sed 's/^/# got:  /' "$tmp/err" | head -20
	fi
done

for want in "$src"/diag/*.out; do
	name=$(basename "$want" .out)
	build "$src/diag" "$name.co"
	if [ $rc = 0 ] && cmp -s "$tmp/stdout" "$want"; then
		ok "diag/$name.co: prints $name.out when it compiles"
	else
		not_ok "diag/$name.co: exit $rc (want 0), stdout must be $name.out"
		diff "$want" "$tmp/stdout" | head -20 | sed 's/^/# /'
		head -n 5 "$tmp/err" | sed 's/^/# /'
	fi
done

# Inputs that are not programs.
mkdir -p "$tmp/odd"
for f in "$src"/diag/*.co; do
	[ -f "${f%.co}.err" ] || cp "$f" "$tmp/odd/"
done
printf '\000\377\000\377__co__\377\n\000' >"$tmp/odd/binary.co"
{
	printf '__co__ void huge_sum(int y) {\n  int x = y'
	head -c 262144 /dev/zero | tr '\0' '+' | sed 's/+/ + 1/g'
	printf ';\n  println(x);\n}\n'
} >"$tmp/odd/huge_line.co"
{
	printf '__co__ void huge_name(int y) {\n  int '
	head -c 1048576 /dev/zero | tr '\0' 'x'
	printf ' = y;\n}\n'
} >"$tmp/odd/huge_name.co"
for f in "$tmp"/odd/*.co; do
	name=$(basename "$f")
	build "$tmp/odd" "$name"
	if [ $rc = 1 ]; then
		if grep -q "$name" "$tmp/err"; then
			ok "$name: a diagnostic (exit 1): $(head -c 200 "$tmp/err" | head -n 1)"
		else
			not_ok "$name: exit 1 without a diagnostic naming the file"
			head -c 2000 "$tmp/err" | sed 's/^/# /'
		fi
	elif [ $rc = 0 ]; then
		(cd "$tmp/odd" && "$choreo" exe "$name" -o "$tmp/prog") >/dev/null 2>"$tmp/err"
		erc=$?
		if [ $erc = 1 ] && [ -s "$tmp/err" ]; then
			ok "$name: compiles; npu-choreo exe refuses it (no entry): $(head -c 200 "$tmp/err" | head -n 1)"
		else
			not_ok "$name: compiles, and npu-choreo exe exits $erc (want 1 with a message)"
			head -c 2000 "$tmp/err" | sed 's/^/# /'
		fi
	else
		not_ok "$name: npu-choreo build exits $rc (crash or signal: want 0 or 1)"
		head -c 2000 "$tmp/err" | sed 's/^/# /'
	fi
done

# Two parameterless functions: exe needs --entry and says which exist.
cat >"$tmp/two_entries.co" <<'EOF'
__co__ void first_entry() {
  println("first");
}

__co__ void second_entry() {
  println("second");
}
EOF
(cd "$tmp" && "$choreo" exe two_entries.co -o "$tmp/prog") >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 1 ] && grep -q first_entry "$tmp/err" && grep -q second_entry "$tmp/err"; then
	ok "exe with two parameterless functions names both candidates"
else
	not_ok "exe with two parameterless functions: exit $rc (want 1), must name first_entry and second_entry"
	sed 's/^/# /' "$tmp/err" | head -10
fi
(cd "$tmp" && "$choreo" exe two_entries.co -o "$tmp/prog" --entry second_entry) >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && [ -x "$tmp/prog" ]; then
	ok "exe --entry second_entry picks one of them"
else
	not_ok "exe --entry second_entry: exit $rc"
	sed 's/^/# /' "$tmp/err" | head -10
fi

# Headers of two .co files included by one C file: each header's guard
# names its file, so both declare their functions.
mkdir -p "$tmp/hdr"
for f in dims spans; do
	(cd "$src/callers" && "$choreo" build "$f.co" -o "$tmp/hdr/$f.o" \
		--header "$tmp/hdr/$f.h") >/dev/null 2>"$tmp/err"
done
cat >"$tmp/hdr/both.c" <<'EOF'
#include "dims.h"
#include "spans.h"
void *use_both[] = { (void *)add_into, (void *)scaled };
EOF
if cc -std=gnu11 -Werror=implicit-function-declaration -fsyntax-only \
	-I"$BUILD/sdk/include" -I"$top/lib" "$tmp/hdr/both.c" 2>"$tmp/err"; then
	ok "a C file includes the headers of dims.co and spans.co and sees both"
else
	not_ok "a C file including the headers of dims.co and spans.co does not compile"
	sed 's/^/# /' "$tmp/err" | head -10
fi

# The tensor constructs reach the hardware: mma_pipeline's kernel uses the
# tensor engine and the tile DMA engine (a fallback to element loops would
# still give the right output in the guest).
(cd "$src/cases" && TMPDIR=$tmp "$choreo" build mma_pipeline.co -o "$tmp/out.o" \
	--keep-temps) >/dev/null 2>"$tmp/err"
kc=$(sed -n 's/^npu-choreo: generated files in //p' "$tmp/err")/kernels.c
for want in npu_mma_f16 npu_tile_load npu_tile_store npu_tdma_2d npu_tdma_wait; do
	if [ -f "$kc" ] && grep -q "$want(" "$kc"; then
		ok "mma_pipeline.co's kernel calls $want"
	else
		not_ok "mma_pipeline.co's kernel ($kc) does not call $want"
	fi
done
rm -f "$tmp/out.o"

# A C++ main compiles against choreo.h precompiled into the user's cache
# (made by the first build, used by the next: g++ -H marks it with '!'),
# and without a cache that can be written (g++ parses the header).
cache=$tmp/cache
printf '#!/bin/sh\nexec g++ -H "$@"\n' >"$tmp/g++-H" && chmod +x "$tmp/g++-H"
for run in make use; do
	(cd "$src/cases" && XDG_CACHE_HOME=$cache CXX=$tmp/g++-H "$choreo" exe host_main.co \
		-o "$tmp/prog") >/dev/null 2>"$tmp/err"
	rc=$?
	pch=$(ls "$cache"/npu-choreo/choreo-*.h.gch 2>/dev/null)
	if [ $rc = 0 ] && [ -x "$tmp/prog" ] && [ -n "$pch" ] &&
	   { [ $run = make ] || grep -q "^! $pch" "$tmp/err"; }; then
		ok "host_main.co with its C++ main: precompiled choreo.h ($run)"
	else
		not_ok "host_main.co, precompiled choreo.h ($run): exit $rc, '$pch'"
		sed 's/^/# /' "$tmp/err" | grep -v '^# \.' | head -10
	fi
	rm -f "$tmp/prog"
done
(cd "$src/cases" && XDG_CACHE_HOME=/proc/npu-no-cache "$choreo" exe host_main.co \
	-o "$tmp/prog") >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 0 ] && [ -x "$tmp/prog" ] && [ ! -s "$tmp/err" ]; then
	ok "host_main.co with its C++ main: no cache to write, compiles, says nothing"
else
	not_ok "host_main.co without a cache: exit $rc"
	sed 's/^/# /' "$tmp/err" | head -10
fi
rm -rf "$tmp/prog" "$cache" "$tmp/g++-H"

# The rest of the corpus compiles.
for f in "$src"/cases/*.co "$src"/runtime/*.co "$src"/seed.co "$src"/callers/*.co; do
	build "$(dirname "$f")" "$(basename "$f")"
	rel=${f#"$src"/}
	if [ $rc = 0 ] && [ -s "$tmp/out.o" ]; then
		ok "$rel compiles"
	else
		not_ok "$rel: npu-choreo build exits $rc"
		sed 's/^/# /' "$tmp/err" | head -20
	fi
	rm -f "$tmp/out.o"
done
echo "1..$n"
