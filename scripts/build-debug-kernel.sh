#!/bin/bash
# Build the debug kernel: Debian's linux-source-6.1 configured as a QEMU guest
# with KASAN, lockdep (PROVE_LOCKING), kmemleak, fault injection (FAILSLAB,
# FAIL_PAGE_ALLOC, debugfs), SW_SYNC, and the DRM core, GEM shmem helpers and
# GPU scheduler as modules. Built once and cached, keyed by the source
# tarball and this script. Prints the directory holding:
#   bzImage, build/ (kernel tree to build modules against),
#   root/lib/modules/<release>/, release
set -euo pipefail
CACHE=${NPU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/npu}
tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n1)
[ -n "$tarball" ] || { echo "build-debug-kernel: no linux-source-6.1" >&2; exit 1; }
key=$( (stat -c %s-%Y "$tarball"; cat "$0") | sha256sum | cut -c1-16)
out=$CACHE/debug-kernel-$key
if [ -f "$out/.done" ]; then echo "$out"; exit 0; fi

rm -rf "$out"
mkdir -p "$out"
echo "build-debug-kernel: extracting $tarball" >&2
tar -xaf "$tarball" -C "$out"
mv "$out"/linux-source-6.1 "$out/build"
cd "$out/build"
make -s x86_64_defconfig kvm_guest.config >&2
scripts/config \
	-e KASAN -e KASAN_GENERIC -e KASAN_INLINE \
	-e DEBUG_KMEMLEAK -d DEBUG_KMEMLEAK_DEFAULT_OFF \
	-e PROVE_LOCKING -e DEBUG_ATOMIC_SLEEP -e DEBUG_LIST \
	-e FAULT_INJECTION -e FAILSLAB -e FAIL_PAGE_ALLOC -e FAULT_INJECTION_DEBUG_FS \
	-e SYNC_FILE -e SW_SYNC -e DEBUG_FS -e DEVTMPFS -e DEVTMPFS_MOUNT \
	-e PCI_MSI -e BLK_DEV_INITRD -e RD_GZIP \
	-e COMPILE_TEST -e COMMON_CLK -m DRM -m DRM_V3D \
	-d DEBUG_INFO -d DEBUG_INFO_DWARF4 -d DEBUG_INFO_DWARF5 -e DEBUG_INFO_NONE \
	-d MODULE_SIG -d WERROR \
	--set-str LOCALVERSION "-npu-debug" -d LOCALVERSION_AUTO
make -s olddefconfig >&2
for opt in KASAN PROVE_LOCKING DEBUG_KMEMLEAK FAILSLAB SW_SYNC; do
	grep -q "^CONFIG_$opt=y" .config || { echo "build-debug-kernel: CONFIG_$opt not set" >&2; exit 1; }
done
grep -q '^CONFIG_DRM_SCHED=m' .config || { echo "build-debug-kernel: DRM_SCHED not a module" >&2; exit 1; }
echo "build-debug-kernel: building (this takes a while)" >&2
make -s -j"$(nproc)" bzImage modules >&2
make -s INSTALL_MOD_PATH="$out/root" modules_install >&2
cp arch/x86/boot/bzImage "$out/bzImage"
make -s kernelrelease >"$out/release"
touch "$out/.done"
echo "$out"
