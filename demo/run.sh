#!/bin/bash
# make demo: boot a guest with the virtual NPU, train a 784-128-10 MLP on
# Fashion-MNIST and classify the test set serially, pipelined over streams
# and as a graph (Documentation/demo.rst). The trace and the timeline
# pictures land in build/demo/ on the host.
#
# Environment: KERNEL (6.12 or 6.1, default 6.12), DEMO_ARGS (extra
# fmnist-demo options, e.g. "--quick"), DEMO_DEVICE_OPTS (appended to
# -device npu; default ",link-bw-mbps=16,cu-mops=100": a slower host link
# than the default, so that moving a batch of images costs about as much
# as classifying it, the copies are worth hiding and the pipelined way
# shows it (cu-mops sets no command's time since the built-ins became
# code; the profiler's estimates read it).
# DEMO_DEVICE_OPTS=" " runs the device with its default figures.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$top/build}
kernel=${KERNEL:-6.12}
out=$BUILD/demo/out

devopts=${DEMO_DEVICE_OPTS:-,link-bw-mbps=16,cu-mops=100}
devopts=${devopts// /}
if [ ! -x "$BUILD/guest/bin/fmnist-demo" ]; then
	echo "demo: $BUILD/guest/bin/fmnist-demo is not built (is libnpu built? make -C demo BUILD=$BUILD)" >&2
	exit 1
fi
rm -rf "$out"
mkdir -p "$out"
guest_cmd='fmnist-demo --out /out '"${DEMO_ARGS:-}"'; rc=$?
echo; npu-smi
exit $rc'
echo "demo: booting Linux $kernel with the virtual NPU (-device npu$devopts; TCG, takes a few minutes)..."
start=$(date +%s)
bash "$top/tests/guest/run.sh" --kernel "$kernel" --timeout "${DEMO_TIMEOUT:-1500}" \
	--extra-bin "$BUILD/demo/guest" --device-opts "$devopts" \
	--outdir "$out" --cmd "$guest_cmd"
rc=$?
# The pictures are drawn on the host (npu-timeline uses cairo and fonts),
# after a strict check of the JSON.
echo
echo "demo: finished in $(( $(date +%s) - start )) s, status $rc"
for f in "$out"/fmnist-trace.json "$out"/fmnist-libnpu-trace.json; do
	[ -f "$f" ] || continue
	"$BUILD/tests/json/npu-json-check" -q "$f" || rc=1
done
if [ -f "$out/fmnist-trace.json" ]; then
	"$BUILD/tools/npu-timeline" -t "fmnist-demo: serial vs pipelined classification (device time)" \
		"$out/fmnist-trace.json" "$out/fmnist-timeline" || rc=1
fi
if [ -f "$out/fmnist-libnpu-trace.json" ]; then
	"$BUILD/tools/npu-timeline" -t "fmnist-demo: libnpu trace, one lane per ring and per stream" \
		"$out/fmnist-libnpu-trace.json" "$out/fmnist-libnpu-timeline" || rc=1
fi
for f in fmnist-trace.json fmnist-timeline.svg fmnist-timeline.png fmnist-libnpu-trace.json \
	 fmnist-libnpu-timeline.svg fmnist-libnpu-timeline.png; do
	if [ -f "$out/$f" ]; then
		echo "demo: $out/$f"
	else
		echo "demo: (no $f)"
	fi
done
[ -f "$out/fmnist-trace.json" ] && echo "demo: open the JSON in https://ui.perfetto.dev or chrome://tracing"
exit $rc
