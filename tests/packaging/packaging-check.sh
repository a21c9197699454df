#!/bin/bash
# The Debian packages and DKMS (TAP), in scratch directories only: nothing is
# installed on the host, no cache and no build/ file is touched.
#
#  1. dpkg-buildpackage -b in a copy of the tree: libnpu0, libnpu-dev,
#     npu-tools, npu-dkms; lintian finds no error in them.
#  2. Each package unpacked (dpkg -x) into a scratch root; its files.
#  3. DKMS, from the npu-dkms package's /usr/src/npu-<version>: dkms add,
#     build and install for each kernel with a private --dkmstree,
#     --installtree and signing key.
#  4. vectorAdd (examples/) built against that root alone: pkg-config for
#     the flags, the packaged npu-cc for its kernel; it links against the
#     package's libnpu.so.0.
#  5. For each kernel, a guest boots with the npu.ko that DKMS built instead
#     of make modules' one: the driver binds, a kselftest passes, and
#     vectorAdd runs on the package's libnpu.
#
# Usage: packaging-check.sh [KERNEL...]   (default: 6.1 6.12)
# Environment: BUILD (for the guest: QEMU, the kselftest programs, the
# libraries they need), QEMU, NPU_PKG_KEEP=1 keeps the scratch directory.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
kernels=("$@")
[ ${#kernels[@]} -gt 0 ] || kernels=(6.1 6.12)
work=$(mktemp -d "${TMPDIR:-/tmp}/npu-pkg.XXXXXX")
if [ -n "${NPU_PKG_KEEP:-}" ]; then
	echo "# scratch directory kept: $work"
else
	trap 'rm -rf "$work"' EXIT
fi
n=0
fails=0
check() { # description, command...
	local what=$1
	shift
	n=$((n + 1))
	if "$@" >"$work/out" 2>&1; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what"
		fails=$((fails + 1))
		sed 's/^/# /' "$work/out" | tail -30
	fi
}
# skip_rest REASON: the remaining checks cannot run; say so and stop
skip_rest() {
	echo "Bail out! $1"
	echo "1..$n"
	exit 1
}

# --- 1. build -------------------------------------------------------------
ver=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
libver=$(make -s --no-print-directory -C "$top/lib" print-version)
dkmsver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")
check "one version: debian/changelog ($ver), npu.h ($libver), dkms.conf ($dkmsver)" \
	test -n "$ver" -a "$ver" = "$libver" -a "$ver" = "$dkmsver"

# a copy, so that the checkout stays clean (dpkg-buildpackage writes ../):
# the tree as git sees it (tracked and new files, not ignored ones such as
# build/), or everything but build/ outside a git checkout
src=$work/npu-$ver
mkdir -p "$src"
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	(cd "$top" && git ls-files -z --cached --others --exclude-standard |
		tar --null --ignore-failed-read -T - -cf -) 2>/dev/null | tar -C "$src" -xf -
else
	tar -C "$top" --exclude=./build -cf - . | tar -C "$src" -xf -
fi
arch=$(dpkg --print-architecture)
# a clean environment: not the calling make's flags nor its BUILD
build_debs() {
	(cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD -u KERNEL \
		dpkg-buildpackage -b -us -uc -j2) >"$work/dpkg-buildpackage.log" 2>&1 && return 0
	tail -40 "$work/dpkg-buildpackage.log"
	return 1
}
start=$(date +%s)
check "dpkg-buildpackage -b -us -uc" build_debs
echo "# dpkg-buildpackage: $(($(date +%s) - start)) s"
debs=(libnpu0 libnpu-dev npu-tools npu-dkms)
deb() { # package -> its .deb
	local a=$arch
	[ "$1" = npu-dkms ] && a=all
	echo "$work/${1}_${ver}_$a.deb"
}
all_debs() {
	local p
	for p in "${debs[@]}"; do
		[ -s "$(deb "$p")" ] || { echo "missing $(deb "$p")"; return 1; }
	done
}
check "four packages: ${debs[*]}" all_debs
[ -s "$(deb libnpu0)" ] || skip_rest "no packages to test"

# warnings are reported (as comments), errors fail
changes=$work/npu_${ver}_$arch.changes
lintian --fail-on error --tag-display-limit 0 "$changes" >"$work/lintian.out" 2>&1
lrc=$?
n=$((n + 1))
if [ $lrc = 0 ] && ! grep -q '^E: ' "$work/lintian.out"; then
	echo "ok $n - lintian: no errors ($(grep -c '^W: ' "$work/lintian.out") warnings)"
else
	echo "not ok $n - lintian: errors (exit $lrc)"
	fails=$((fails + 1))
fi
sed 's/^/# /' "$work/lintian.out"

# --- 2. the packages' files --------------------------------------------------
root=$work/root
mkdir -p "$root"
for p in "${debs[@]}"; do
	dpkg -x "$(deb "$p")" "$root"
done
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
usr=$root/usr
libdir=$usr/lib/$ma
soname=$(objdump -p "$libdir/libnpu.so.$ver" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')

lib_files() {
	[ -n "$soname" ] && [ -f "$libdir/libnpu.so.$ver" ] &&
		[ "$(readlink "$libdir/$soname")" = "libnpu.so.$ver" ] &&
		dpkg-deb -c "$(deb libnpu0)" | grep -q "/$soname -> " &&
		! dpkg-deb -c "$(deb libnpu0)" | grep -q "libnpu.so -> "
}
check "libnpu0: libnpu.so.$ver and its SONAME link ($soname), no development link" lib_files

# every dynamic symbol the library exports is in the symbols file, and back
lib_symbols() {
	dpkg-deb -I "$(deb libnpu0)" symbols >"$work/symbols" &&
		grep -q "^$soname libnpu0 " "$work/symbols" &&
		sed -n 's/^ \([^@]*\)@Base .*/\1/p' "$work/symbols" | sort >"$work/listed" &&
		nm -D --defined-only "$libdir/libnpu.so.$ver" | awk '{ print $3 }' | sort >"$work/exported" &&
		[ -s "$work/listed" ] && diff -u "$work/listed" "$work/exported"
}
check "libnpu0: its symbols file lists exactly the library's exports" lib_symbols

dev_files() {
	local f
	for f in include/npu.h "lib/$ma/libnpu.so" "lib/$ma/pkgconfig/libnpu.pc" bin/npu-cc \
		bin/npu-choreo include/npu/npu_kernel.h include/npu/npu_code.h include/npu/npu_hw.h \
		include/npu/npu_choreo.h lib/npu/libnpu-rt.a lib/npu/npu-module.ld; do
		[ -e "$usr/$f" ] || { echo "missing /usr/$f"; return 1; }
	done
}
check "libnpu-dev: npu.h, libnpu.so, libnpu.pc, npu-cc, npu-choreo, the kernel headers, the device runtime" dev_files

# the tools' command lines belong to them; here: they are there and every
# library they need resolves
tools_files() {
	local t
	for t in npu-smi npu-timeline; do
		[ -x "$usr/bin/$t" ] || { echo "no /usr/bin/$t"; return 1; }
		LD_LIBRARY_PATH=$libdir ldd "$usr/bin/$t" || return 1
		! LD_LIBRARY_PATH=$libdir ldd "$usr/bin/$t" | grep -q "not found" || return 1
	done
}
check "npu-tools: npu-smi and npu-timeline, their libraries all resolve" tools_files

dsrc=$usr/src/npu-$ver
dkms_files() {
	local f
	cmp "$top/dkms.conf" "$dsrc/dkms.conf" && cmp "$top/Kbuild" "$dsrc/Kbuild" || return 1
	for f in "$top"/driver/*.[ch] "$top/uapi/drm/npu_accel.h" "$top/include/npu_hw.h"; do
		cmp "$f" "$dsrc/${f#$top/}" || return 1
	done
}
check "npu-dkms: dkms.conf, Kbuild and the driver's sources in /usr/src/npu-$ver" dkms_files
dkms_scripts() {
	dpkg-deb -I "$(deb npu-dkms)" postinst >"$work/postinst" &&
		dpkg-deb -I "$(deb npu-dkms)" prerm >"$work/prerm" &&
		grep -x "DKMS_NAME=npu" "$work/postinst" && grep -x "DKMS_VERSION=$ver" "$work/postinst" &&
		grep "/usr/lib/dkms/common.postinst" "$work/postinst" &&
		grep -x "DKMS_VERSION=$ver" "$work/prerm" &&
		grep 'dkms remove -m $DKMS_NAME -v $DKMS_VERSION --all' "$work/prerm"
}
check "npu-dkms: its maintainer scripts build the module with dkms and remove it" dkms_scripts

# --- 3. DKMS ------------------------------------------------------------------
# A private tree for everything dkms writes: its build tree, the modules
# it installs (depmod is skipped: it would rewrite the host's modules.dep),
# and a throwaway signing key instead of /var/lib/dkms/mok.*.
dk=$work/dkms
mkdir -p "$dk/tree" "$dk/modules" "$dk/keep"
host_state() {
	find /var/lib/dkms /lib/modules/*/updates 2>/dev/null | sort
}
host_state >"$dk/host-before"
dkms_() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		mok_signing_key="$dk/mok.key" mok_certificate="$dk/mok.pub" \
		dkms "$@" --dkmstree "$dk/tree" --sourcetree "$usr/src" --installtree "$dk/modules"
}
dkms_build() { # release
	dkms_ build -m npu -v "$ver" -k "$1" -j 2 && return 0
	tail -30 "$dk/tree/npu/$ver/$1/$(uname -m)/log/make.log" 2>/dev/null
	return 1
}
dkms_installed() { # release
	local ko
	dkms_ status -m npu -v "$ver" -k "$1" | tee "$work/status"
	grep -q "^npu/$ver, $1, [^:]*: installed" "$work/status" || return 1
	ko=$(find "$dk/modules/$1" -name 'npu.ko*' | head -1)
	[ -f "$ko" ] || { echo "no npu.ko under $dk/modules/$1"; return 1; }
	modinfo "$ko" | grep -E '^(name|vermagic|signer):'
	[ "$(modinfo -F name "$ko")" = npu ] &&
		[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$1" ] || return 1
	# the guest's busybox insmod takes an uncompressed module
	case "$ko" in
	*.xz) xz -dc "$ko" ;;
	*.zst) zstd -qdc "$ko" ;;
	*.gz) gzip -dc "$ko" ;;
	*) cat "$ko" ;;
	esac >"$dk/keep/$1.ko"
}
check "dkms add npu/$ver (the npu-dkms package's sources)" dkms_ add -m npu -v "$ver"
for k in "${kernels[@]}"; do
	rel=$("$top/scripts/kernel-info.sh" "$k" release)
	start=$(date +%s)
	check "dkms build npu/$ver for $rel" dkms_build "$rel"
	echo "# dkms build for $rel: $(($(date +%s) - start)) s"
	mkdir -p "$dk/modules/$rel"
	check "dkms install npu/$ver for $rel (the scratch tree, no depmod)" \
		dkms_ install -m npu -v "$ver" -k "$rel" --no-depmod
	check "dkms status: installed for $rel, a module for that kernel" dkms_installed "$rel"
done
# a kernel older than the driver supports: skipped (77), not a failed build
dkms_excluded() {
	dkms_ build -m npu -v "$ver" -k 5.10.0-30-amd64
	[ $? = 77 ]
}
check "dkms build for a 5.10 kernel: skipped by BUILD_EXCLUSIVE_KERNEL (exit 77)" dkms_excluded
dkms_removed() {
	dkms_ remove -m npu -v "$ver" --all --no-depmod &&
		[ -z "$(find "$dk/modules" -name 'npu.ko*')" ] && [ ! -e "$dk/tree/npu/$ver" ]
}
check "dkms remove npu/$ver --all: no module left in the scratch trees" dkms_removed
check "the host's /var/lib/dkms and /lib/modules/*/updates are as they were" \
	bash -c 'find /var/lib/dkms /lib/modules/*/updates 2>/dev/null | sort | diff -u "$1" -' \
	_ "$dk/host-before"

# --- 4. an example against the installed libnpu-dev -------------------------
ex=$work/example
mkdir -p "$ex/lib" "$ex/kernels"
pc() { PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --define-variable=prefix="$usr" "$@"; }
pc_root() {
	[ "$(pc --modversion libnpu)" = "$ver" ] && pc --cflags --libs libnpu &&
		[ "$(pc --variable=libdir libnpu)" = "$libdir" ] &&
		[ "$(pc --variable=includedir libnpu)" = "$usr/include" ]
}
check "pkg-config: libnpu $ver, its directories in the scratch root" pc_root
check "vectorAdd compiles and links with pkg-config's flags alone" \
	cc -std=c11 -O2 -Wall -Wextra -Werror -I"$top/examples" $(pc --cflags libnpu) \
	-o "$ex/vectorAdd" "$top/examples/vectorAdd.c" $(pc --libs libnpu) -lm
links_package() {
	objdump -p "$ex/vectorAdd" | grep "NEEDED *$soname\$" &&
		LD_LIBRARY_PATH=$libdir ldd "$ex/vectorAdd" | grep "$soname => $libdir/$soname "
}
check "it needs $soname, which resolves to the package's library" links_package
check "the packaged npu-cc compiles vectorAdd's kernel" \
	env -i PATH=/usr/bin:/bin "$(pc --variable=npucc libnpu)" -O2 -Wall -Werror \
	-o "$ex/kernels/vectorAdd.npu" "$top/examples/kernels/vectorAdd.c"
cp -a "$libdir"/libnpu.so.* "$ex/lib/"

# --- 5. the DKMS module and the packaged library in a guest ------------------
# The guest runs make's guest programs (kselftests) beside the package's
# vectorAdd under /npu/bin/pkg, with the package's libnpu.
guestdir=$work/guest
guest_ok() { # runner status, output
	[ "$1" = 0 ] || { cat "$2"; return 1; }
}
guest_check() { # name, output: the guest printed "@@check NAME 0"
	grep -qx "@@check $1 0" "$2" && return 0
	grep -q "@@check $1 " "$2" || { echo "(did not run)"; return 1; }
	# that check's own output: the lines since the previous check
	awk -v n="$1" '/^@@check / { if ($2 == n) { printf "%s", buf; print; exit } buf = ""; next }
		{ buf = buf $0 "\n" }' "$2"
	return 1
}
mkdir -p "$guestdir"
cp -a "$ex" "$guestdir/pkg"
for k in "${kernels[@]}"; do
	rel=$("$top/scripts/kernel-info.sh" "$k" release)
	ko=$dk/keep/$rel.ko
	if [ ! -f "$ko" ]; then
		check "$k guest: boots with the DKMS-built npu.ko" false
		continue
	fi
	sum=$(sha256sum "$ko" | cut -d' ' -f1)
	# each line: "@@check NAME STATUS"
	cmd='c() { n=$1; shift; "$@" >/tmp/c.out 2>&1; r=$?; cat /tmp/c.out; echo "@@check $n $r"; }
c module-is-dkms-build sh -c "sha256sum /lib/modules/99-npu.ko | grep -q ^'"$sum"'"
c driver-bound sh -c "test -e /sys/module/npu && ls /sys/bus/pci/drivers/npu | grep -q :"
c device-node sh -c "ls /dev/accel/accel0 /dev/dri/renderD128 2>/dev/null | grep -q ."
c kselftest-npu_ioctl npu_ioctl_test
c vectorAdd-resolves-package-lib sh -c "cd /npu/bin/pkg && LD_LIBRARY_PATH=/npu/bin/pkg/lib LD_TRACE_LOADED_OBJECTS=1 ./vectorAdd | grep -q \"libnpu.so.0 => /npu/bin/pkg/lib/libnpu.so.0\""
c vectorAdd-passes sh -c "cd /npu/bin/pkg && LD_LIBRARY_PATH=/npu/bin/pkg/lib ./vectorAdd | tee /dev/stderr | grep -q \"Test PASSED\""'
	start=$(date +%s)
	# a driver timeout far above vectorAdd's few seconds on a loaded host:
	# this boot checks the module and the library, not the device's speed
	NPU_MODPARAMS=job_timeout_ms=60000 bash "$top/tests/guest/run.sh" --kernel "$k" --npu-ko "$ko" --extra-bin "$guestdir" \
		--timeout "${NPU_GUEST_TIMEOUT:-600}" --cmd "$cmd" >"$work/guest-$k.out" 2>&1
	grc=$?
	echo "# $k guest: $(($(date +%s) - start)) s"
	check "$k guest: boots with the DKMS-built npu.ko, the module loads, the kernel log is clean" \
		guest_ok "$grc" "$work/guest-$k.out"
	for t in module-is-dkms-build driver-bound device-node kselftest-npu_ioctl \
		vectorAdd-resolves-package-lib vectorAdd-passes; do
		check "$k guest: $t" guest_check "$t" "$work/guest-$k.out"
	done
done

echo "1..$n"
[ $fails = 0 ]
