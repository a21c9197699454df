#!/bin/bash
# Build the debug kernel: Debian's linux-source-6.1 configured as a QEMU guest
# with KASAN, lockdep (PROVE_LOCKING), kmemleak, DMA API debugging, fault
# injection (FAILSLAB, FAIL_PAGE_ALLOC, debugfs), SW_SYNC, and the DRM core,
# GEM shmem helpers and GPU scheduler as modules. Built once and cached,
# keyed by the source tarball and this script. Prints the directory holding:
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
# x86_64_defconfig minus what a diskless, network-less QEMU guest never
# uses (disks, network drivers and protocols, USB, sound, input, laptops,
# other GPUs, file systems, tracing, power management): the instrumented
# build compiles about half the files the whole defconfig would.
make -s x86_64_defconfig >&2
scripts/config \
	-e KASAN -e KASAN_GENERIC -e KASAN_INLINE \
	-e DEBUG_KMEMLEAK -d DEBUG_KMEMLEAK_DEFAULT_OFF \
	-e PROVE_LOCKING -e DEBUG_ATOMIC_SLEEP -e DEBUG_LIST \
	-e DMA_API_DEBUG -e DMA_API_DEBUG_SG -e USERFAULTFD \
	-e FAULT_INJECTION -e FAILSLAB -e FAIL_PAGE_ALLOC -e FAULT_INJECTION_DEBUG_FS \
	-e SYNC_FILE -e SW_SYNC -e DEBUG_FS -e DEVTMPFS -e DEVTMPFS_MOUNT \
	-e PCI_MSI -e BLK_DEV_INITRD -e RD_GZIP \
	-e COMPILE_TEST -e COMMON_CLK -m DRM -m DRM_V3D \
	-d DEBUG_INFO -d DEBUG_INFO_DWARF4 -d DEBUG_INFO_DWARF5 -e DEBUG_INFO_NONE \
	-d MODULE_SIG -d SYSTEM_TRUSTED_KEYRING -d WERROR \
	--set-str LOCALVERSION "-npu-debug" -d LOCALVERSION_AUTO
scripts/config -e EXPERT \
	-d BLOCK -d INET -d NETFILTER -d WIRELESS -d CFG80211 -d MAC80211 -d RFKILL -d NET_9P \
	-d NETDEVICES -d PACKET -d XFRM_USER -d NETLABEL -d NET_SCHED \
	-d ATA -d SCSI -d MD -d USB_SUPPORT -d SOUND -d HID -d INPUT_JOYSTICK \
	-d INPUT_TABLET -d INPUT_TOUCHSCREEN -d INPUT_MISC -d INPUT_MOUSE \
	-d AGP -d DRM_I915 -d DRM_VIRTIO_GPU -d FB -d I2C -d WATCHDOG \
	-d DMADEVICES -d X86_PLATFORM_DEVICES -d MACINTOSH_DRIVERS -d PCCARD \
	-d HOTPLUG_PCI -d AMD_IOMMU -d INTEL_IOMMU -d VIRTIO_MENU -d HW_RANDOM \
	-d EXT4_FS -d QUOTA -d AUTOFS_FS -d ISO9660_FS -d MSDOS_FS -d VFAT_FS \
	-d NETWORK_FILESYSTEMS -d HUGETLBFS -d SECURITY -d AUDIT \
	-d FTRACE -d KPROBES -d PROFILING -d BLK_DEV_IO_TRACE \
	-d EFI -d KEXEC -d CRASH_DUMP -d HIBERNATION -d SUSPEND -d CPU_FREQ \
	-d MICROCODE -d NUMA -d IA32_EMULATION -d CGROUPS -d TASKSTATS \
	-d BSD_PROCESS_ACCT -d KALLSYMS_ALL
make -s olddefconfig >&2
for opt in KASAN PROVE_LOCKING DEBUG_KMEMLEAK DMA_API_DEBUG FAILSLAB FAIL_PAGE_ALLOC FAULT_INJECTION_DEBUG_FS USERFAULTFD SW_SYNC BLK_DEV_INITRD RD_GZIP SERIAL_8250_CONSOLE PCI_MSI DEVTMPFS UNIX; do
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
