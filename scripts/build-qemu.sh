#!/bin/bash
# Build qemu-system-x86_64 from Debian's QEMU source package plus our device
# (qemu-device/*.c, *.h and include/npu_hw.h, added as hw/misc/npu/; its
# trace-events appended to hw/misc/trace-events).
#
# Cache layout (outside the clone, reused across clones):
#   $CACHE/qemu/src-<ver>/      unpacked `apt-get source qemu`
#   $CACHE/qemu/build-<ver>/    configured build directory (incremental)
#   $CACHE/qemu/bin-<key>/      finished binary, key = hash of our inputs
# Prints the path of the binary on stdout.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${NPU_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/npu}
mkdir -p "$CACHE/qemu"

ver=$(apt-cache showsrc qemu 2>/dev/null | awk '/^Version:/{print $2}' |
	sort -V | tail -n1 | tr ':' '_' || true)
if [ -z "$ver" ]; then
	echo "build-qemu: no qemu source package (run scripts/setup.sh)" >&2
	exit 1
fi
key=$( (echo "$ver"; cat "$0";
	cd "$top" && cat include/npu_hw.h qemu-device/*) | sha256sum | cut -c1-16)
bin="$CACHE/qemu/bin-$key/qemu-system-x86_64"
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

# One build at a time: clones share the cache, and a second configure would
# remove the first one's build directory under it.
exec 9>"$CACHE/qemu/.lock"
flock 9
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

src="$CACHE/qemu/src-$ver"
if [ ! -f "$src/.unpacked" ]; then
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	(cd "$src.tmp" && apt-get source -q qemu >&2)
	mv "$src.tmp"/qemu-*/ "$src"
	rm -rf "$src.tmp"
	touch "$src/.unpacked"
fi

# Add our device: copy only files whose content changed (keeps ninja quiet).
dev="$src/hw/misc/npu"
mkdir -p "$dev"
for f in "$top"/qemu-device/*.c "$top"/qemu-device/*.h "$top"/include/npu_hw.h; do
	[ -f "$f" ] || continue
	cmp -s "$f" "$dev/$(basename "$f")" || cp "$f" "$dev/"
done
for f in "$dev"/*; do
	base=$(basename "$f")
	[ "$base" = meson.build ] && continue
	[ -f "$top/qemu-device/$base" ] || [ "$base" = npu_hw.h ] || rm -f "$f"
done
srcs=$(cd "$dev" && ls *.c | sed "s/.*/'&'/" | paste -sd, -)
printf "softmmu_ss.add(when: 'CONFIG_PCI', if_true: files(%s))\n" "$srcs" \
	>"$dev/meson.build.new"
cmp -s "$dev/meson.build.new" "$dev/meson.build" || mv "$dev/meson.build.new" "$dev/meson.build"
rm -f "$dev/meson.build.new"
# Our trace events join hw/misc's group (trace/trace-hw_misc.h) as a block
# between markers in hw/misc/trace-events, replaced when it changes: other
# clones building other versions of the device share this tree.
te="$src/hw/misc/trace-events"
te_begin="# npu device (scripts/build-qemu.sh)"
te_end="# end of npu device"
{
	awk -v b="$te_begin" -v e="$te_end" \
		'$0 == b { skip = 1 } !skip { print } $0 == e { skip = 0 }' "$te"
	if [ -f "$top/qemu-device/trace-events" ]; then
		echo "$te_begin"
		grep -v '^#' "$top/qemu-device/trace-events" | grep .
		echo "$te_end"
	fi
} >"$te.new"
cmp -s "$te.new" "$te" || mv "$te.new" "$te"
rm -f "$te.new"
grep -q "^subdir('npu')" "$src/hw/misc/meson.build" ||
	echo "subdir('npu')" >>"$src/hw/misc/meson.build"

build="$CACHE/qemu/build-$ver"
if [ ! -f "$build/build.ninja" ]; then
	rm -rf "$build"
	mkdir -p "$build"
	(cd "$build" && "$src/configure" --target-list=x86_64-softmmu \
		--without-default-features --enable-tcg --enable-kvm \
		--enable-fdt=system --disable-docs --disable-werror \
		--disable-install-blobs >&2)
fi
ninja -C "$build" -j"$(nproc)" qemu-system-x86_64 >&2

mkdir -p "$(dirname "$bin")"
cp "$build/qemu-system-x86_64" "$bin.tmp"
mv "$bin.tmp" "$bin"
# Keep the cache small: keep the four newest binaries (others may be in use).
ls -1dt "$CACHE"/qemu/bin-* | tail -n +5 | xargs -r rm -rf
echo "$bin"
