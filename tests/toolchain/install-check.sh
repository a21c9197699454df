#!/bin/bash
# npu-cc and npu_kernel.h after `make install` (TAP): install into a scratch
# root, then compile kernels with nothing but the installed files and
# Debian's clang, found through pkg-config; link a host program against
# the installed libnpu the same way.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
n=0
check() { # description, command...
	local what=$1
	shift
	n=$((n + 1))
	if "$@" >"$root/out" 2>&1; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what"
		sed 's/^/# /' "$root/out" | head -20
	fi
}

check "make install into a scratch root" \
	make -s -C "$top" BUILD="$BUILD" install DESTDIR="$root" PREFIX=/usr
usr=$root/usr
check "installed: npu-cc, npu.h, npu_kernel.h, npu_code.h, npu_hw.h, the runtime, the linker script, libnpu.pc" \
	test -x "$usr/bin/npu-cc" -a -f "$usr/include/npu.h" \
	-a -f "$usr/include/npu/npu_kernel.h" -a -f "$usr/include/npu/npu_code.h" \
	-a -f "$usr/include/npu/npu_hw.h" -a -f "$usr/lib/npu/libnpu-rt.a" \
	-a -f "$usr/lib/npu/npu-module.ld" -a -f "$usr/lib/pkgconfig/libnpu.pc"
export PKG_CONFIG_PATH=$usr/lib/pkgconfig
npucc=$(pkg-config --define-prefix --variable=npucc libnpu)
kinc=$(pkg-config --define-prefix --variable=kernelincludedir libnpu)
check "pkg-config names the installed npu-cc ($npucc) and kernel headers" \
	test "$npucc" = "$usr/bin/npu-cc" -a "$kinc" = "$usr/include/npu"

mkdir -p "$root/work"
cat >"$root/work/scale.c" <<'K'
#include <npu_kernel.h>

NPU_KERNEL(scale, (float *, x), (float, a), (unsigned, n))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();

	if (i < n)
		x[i] *= a;
	if (!i)
		printf("scaled %u values by %f\n", n, a);
}
K
cd "$root/work" || exit 1
# only the installed files: a clean environment, the build tree out of reach
check "the installed npu-cc compiles a kernel (-g)" \
	env -i PATH=/usr/bin:/bin "$npucc" -g -Wall -Werror scale.c -o scale.npu
check "the code object is a RISC-V position-independent ELF with the kernel's descriptor and entry" \
	bash -c 'llvm-readelf -h -S scale.npu | grep -q "Machine: *RISC-V" &&
		 llvm-readelf -h scale.npu | grep -q "DYN" &&
		 llvm-readelf -S scale.npu | grep -q "\.npu\.kernels" &&
		 llvm-nm scale.npu | grep -q " T __npu_entry_scale$"'
cat >"$root/work/quiet.c" <<'K'
#include <npu_kernel.h>

NPU_KERNEL(quiet, (int *, p))
{
	*p = 1;
}
K
check "the runtime's printf is linked only into code objects that call it" \
	bash -c 'env -i PATH=/usr/bin:/bin "'"$npucc"'" quiet.c -o quiet.npu &&
		 ! llvm-nm quiet.npu | grep -q " npu_printf$" &&
		 llvm-nm scale.npu | grep -q " T npu_printf$"'
check "-g keeps DWARF line tables" \
	bash -c 'llvm-readelf -S scale.npu | grep -q "\.debug_line"'
check "without -g there is none" \
	bash -c 'env -i PATH=/usr/bin:/bin "'"$npucc"'" scale.c -o plain.npu &&
		 ! llvm-readelf -S plain.npu | grep -q "\.debug_"'
check "-c then link: two steps give a code object too" \
	bash -c 'env -i PATH=/usr/bin:/bin "'"$npucc"'" -c scale.c -o s.o &&
		 env -i PATH=/usr/bin:/bin "'"$npucc"'" s.o -o two.npu &&
		 llvm-nm two.npu | grep -q __npu_entry_scale'
echo 'NPU_KERNEL(broken, (int, x)) { return x; }' >broken.c
check "a kernel that does not compile: npu-cc fails with clang's error" \
	bash -c '! env -i PATH=/usr/bin:/bin "'"$npucc"'" broken.c -o b.npu 2>err &&
		 grep -q "error:" err && test ! -e b.npu'
cat >"$root/work/softplus.c" <<'K'
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <npu_kernel.h>

NPU_KERNEL(softplus, (const float *, x), (float *, y), (char *, s), (unsigned, n))
{
	unsigned i = npu_block_index() * npu_block_threads() + npu_thread_index();

	if (i < n) {
		y[i] = logf(1.0f + expf(x[i])) + sqrtf(fmaf(x[i], x[i], 1.0f));
		memcpy(s, "ok", 3);
		snprintf(s + 4, 16, "%d %.2f", errno, y[i]);
	}
}
K
check "kernels have picolibc: <math.h>, <string.h>, <stdio.h>, <errno.h> compile and link" \
	bash -c 'env -i PATH=/usr/bin:/bin "'"$npucc"'" -g -Wall -Wextra -Werror softplus.c -o softplus.npu &&
		 llvm-nm softplus.npu | grep -q " T expf$" &&
		 llvm-nm softplus.npu | grep -q " T snprintf$"'
check "the C library has no compressed instructions (the units run RV64G) and only relative relocations" \
	bash -c '! llvm-objdump -d softplus.npu | grep -qE "^ +[0-9a-f]+:( [0-9a-f]{2}){2} {2,}[^ 0-9]" &&
		 ! llvm-readelf -r softplus.npu | grep -E "R_RISCV_" | grep -qv R_RISCV_RELATIVE'
check "errno is thread-local: a TLS segment, tp set up by the entry stub" \
	bash -c 'llvm-readelf -l softplus.npu | grep -q " TLS " &&
		 llvm-nm softplus.npu | grep -q " T __npu_tls_init$"'
cat >"$root/work/undef.c" <<'K'
#include <npu_kernel.h>

float my_helper(float);

NPU_KERNEL(undef, (float *, x))
{
	x[0] = my_helper(x[0]);
}
K
check "an undefined symbol: the linker's error names the user's file, not npu_kernel.h" \
	bash -c '! env -i PATH=/usr/bin:/bin "'"$npucc"'" -g undef.c -o u.npu 2>err; cat err;
		 grep -q "undefined symbol: my_helper" err &&
		 grep -q "referenced by .*/undef.o:(__npu_entry_undef)" err &&
		 ! grep -q "npu_kernel.h" err && test ! -e u.npu'
check "npu-cc --help" "$npucc" --help
cat >"$root/work/host.c" <<'H'
#include <npu.h>
int main(void)
{
	npu_module_t m;

	return npu_module_load(&m, "scale.npu") == NPU_SUCCESS ? 0 : 1;
}
H
check "a host program builds against the installed libnpu with pkg-config" \
	bash -c 'cc -Wall -Werror host.c -o host $(pkg-config --define-prefix --cflags libnpu) \
		 $(pkg-config --define-prefix --libs libnpu)'

# npu-choreo from the installed tree alone: it finds npu-cc, the headers
# and libnpu relative to itself
check "installed: npu-choreo and npu_choreo.h" \
	test -x "$usr/bin/npu-choreo" -a -f "$usr/include/npu/npu_choreo.h"
cat >"$root/work/small.co" <<'CO'
#include "choreo.h"

__co__ void scale(stream s, f32[M] a, f32 k) {
  parallel<s> p by M {
    a.at(p) = a.at(p) * k;
  }
}

__co__ void main_co() {
  stream s;
  f32[4] a {1.5};
  scale(s, a, 2.0);
  println(a.at(3));
}
CO
check "the installed npu-choreo builds an object and a header" \
	bash -c 'env -i PATH=/usr/bin:/bin "'"$usr"'/bin/npu-choreo" build small.co \
		 -o small.o --header small.h &&
		 llvm-nm small.o | grep -q " T scale$" &&
		 grep -q "npu_status_t scale(npu_stream_t s, struct npu_choreo_view a, float k)" small.h'
cat >"$root/work/caller.c" <<'H'
#include <npu.h>
#include "small.h"

int main(void)
{
	struct npu_choreo_view v = { NULL, NPU_CHOREO_F32, 1, { 4 } };

	if (npu_host_alloc(&v.data, 4 * sizeof(float), NPU_HOST_ALLOC_MAPPED))
		return 1;
	return scale(NULL, v, 2.0f) == NPU_SUCCESS && main_co() == NPU_SUCCESS ? 0 : 2;
}
H
check "its header compiles warning-free and the object links against the installed libnpu" \
	bash -c 'cc -std=c11 -Wall -Wextra -Werror caller.c small.o -o caller \
		 $(pkg-config --define-prefix --cflags libnpu) \
		 $(pkg-config --define-prefix --libs libnpu) &&
		 LD_LIBRARY_PATH="'"$usr"'/lib" ldd caller | grep -q "=> '"$usr"'/lib/libnpu.so"'
check "the installed npu-choreo exe links a program against the installed libnpu" \
	bash -c 'env -i PATH=/usr/bin:/bin "'"$usr"'/bin/npu-choreo" exe small.co -o small &&
		 ldd small | grep -q "=> '"$usr"'/lib/libnpu.so"'
check "npu-choreo exe refuses a file without a parameterless function" \
	bash -c 'printf "__co__ void f(f32[M] a) { }\n" >noentry.co &&
		 ! env -i PATH=/usr/bin:/bin "'"$usr"'/bin/npu-choreo" exe noentry.co -o ne 2>err &&
		 test -s err && test ! -e ne'
check "the installed npu-choreo run --guest fails at once, naming the source tree it needs" \
	bash -c 'env -i PATH=/usr/bin:/bin "'"$usr"'/bin/npu-choreo" run small.co --guest 6.12 \
		 >out 2>err; rc=$?; cat err; test $rc = 2 &&
		 grep -q "needs the npu source tree" err && test ! -s out'

# The build tree without installing: libnpu-uninstalled.pc
unset PKG_CONFIG_PATH
mkdir -p "$root/tree"
cp "$root/work/scale.c" "$root/work/host.c" "$root/tree/"
tree_pc=$BUILD/sdk/lib/pkgconfig
check "pkg-config against the build tree names its npu-cc and kernel headers" \
	bash -c 'export PKG_CONFIG_PATH="'"$tree_pc"'";
		 test "$(pkg-config --variable=npucc libnpu)" = "'"$BUILD"'/sdk/bin/npu-cc" &&
		 test -f "$(pkg-config --variable=kernelincludedir libnpu)/npu_kernel.h"'
check "a kernel and a host program build against the build tree with pkg-config alone" \
	bash -c 'cd "'"$root"'/tree" && export PKG_CONFIG_PATH="'"$tree_pc"'";
		 "$(pkg-config --variable=npucc libnpu)" scale.c -o scale.npu &&
		 cc -Wall -Werror host.c -o host $(pkg-config --cflags --libs libnpu) &&
		 ldd host | grep -q "libnpu.so.0 => '"$BUILD"'/lib/libnpu.so.0"'
echo "1..$n"
