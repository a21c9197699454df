#!/bin/bash
# Install everything npu needs from Debian's archive. Idempotent; run as root.
# A stamp under the cache dir (keyed by this script) skips the work next time.
set -euo pipefail

CACHE=${NPU_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/npu}
mkdir -p "$CACHE"
key=$(sha256sum "$0" | cut -c1-16)
stamp="$CACHE/setup-$key.done"
if [ -f "$stamp" ] && [ -z "${NPU_FORCE_SETUP:-}" ]; then
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "setup: must run as root (installs Debian packages)" >&2
	exit 1
fi

# deb-src entry: a copy of the stock bookworm entry with Types: deb-src.
src=/etc/apt/sources.list.d/npu-deb-src.sources
if [ ! -f "$src" ]; then
	stock=/etc/apt/sources.list.d/debian.sources
	if [ -f "$stock" ]; then
		awk 'BEGIN{RS="";ORS="\n\n"} /Suites:[^\n]*bookworm( |$|\n)/ && /Types: deb/ {sub(/Types: deb/,"Types: deb-src"); print; exit}' \
			"$stock" >"$src"
	else
		grep -E '^deb [^ ]+ bookworm ' /etc/apt/sources.list | head -1 |
			sed 's/^deb /deb-src /' >/etc/apt/sources.list.d/npu-deb-src.list
	fi
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q

pkgs=(
	# QEMU build
	dpkg-dev ninja-build meson libglib2.0-dev libpixman-1-dev libfdt-dev
	flex bison pkg-config python3-venv
	# QEMU runtime firmware
	seabios qemu-system-data
	# kernels and headers: 6.1 LTS and 6.12 LTS
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	linux-source-6.1
	# debug kernel build from linux-source-6.1 (bc: timeconst.h; libelf: objtool)
	bc libelf-dev
	# guest, library, tests
	busybox-static cpio xz-utils zstd kmod libdrm-dev zlib1g-dev gcc make python3
	# npu-choreo: the C++ host programs of .co files (include/choreo.h)
	g++
	# code objects (libelf) and their DWARF (libdw) in libnpu; GSL for the
	# tuner's Gaussian process
	libdw-dev libgsl-dev
	# JSON written by the tools (npu-smi -j)
	libjson-c-dev
	# RISC-V kernels for the compute units (clang-14, ld.lld, llvm-objdump);
	# their C library and libm (picolibc, rv64iafd/lp64d) and the libgcc
	# it calls for integer multiply and divide (gcc-riscv64-unknown-elf)
	clang lld llvm picolibc-riscv64-unknown-elf gcc-riscv64-unknown-elf
	# system call fuzzer run against the device node (tests/fuzz/)
	trinity
	# npu-timeline's pictures (cairo, with fontconfig's DejaVu fonts) and JSON
	# in the tools, the bench and the demo (json-c)
	libcairo2-dev fonts-dejavu-core libjson-c-dev
	# Documentation/ check (tests/docs-check.py)
	python3-docutils
	# demo data
	dataset-fashion-mnist
	# Debian packages and DKMS (debian/, dkms.conf, tests/packaging/);
	# dpkg-buildpackage requires build-essential, a Recommends we skip
	build-essential debhelper dh-dkms dkms lintian
)
apt-get install -y -q --no-install-recommends "${pkgs[@]}"

touch "$stamp"
