#!/bin/bash
# usage: run.sh --kernel 6.1|6.12 (--suites FILE | --cmd CMD | --shell) [options]
#
# Boot a Debian kernel in QEMU (TCG) with the npu device, load npu.ko and run
# commands in the guest.
#
#   run.sh --kernel 6.1|6.12 --suites FILE [--results DIR]   run test suites
#   run.sh --kernel 6.12 --cmd 'lsmod; ls /dev/accel'        one command
#   run.sh --kernel 6.12 --shell                             interactive shell
#
# Options: --timeout SEC (hard limit for the whole boot, default 900),
#          --device-opts ',compute-rings=4' (appended to -device npu;
#          e.g. ',devmem-size=2G': device memory, 1G by default),
#          --devices N (N npu devices, each with --device-opts; default 1),
#          --outdir DIR (files the guest writes to /out are copied here),
#          --no-npu (do not insmod npu.ko),
#          --npu-ko FILE (load this npu.ko instead of make modules' build,
#          e.g. one DKMS built),
#          --extra-bin DIR (DIR's files join the guest's /npu/bin, which is
#          on PATH: your own programs; also NPU_EXTRA_BIN).
# Environment: QEMU (binary; default: scripts/build-qemu.sh), BUILD (build dir),
#              NPU_MODPARAMS (module parameters for npu.ko, e.g.
#              job_timeout_ms=120000 for kernels running over 60 s), NPU_TCG_THREAD
#              (single, the default, or multi: TCG threads for the vCPUs).
#
# With --cmd the command's output is printed as the guest prints it, and the
# exit status is the command's own, or 125 when the guest run itself failed.
# Otherwise the exit status is non-zero when QEMU crashes or times out, when
# the guest does not finish, when any suite fails, or when the guest kernel
# log shows an Oops, BUG, WARNING, KASAN, lockdep or kmemleak report (with
# --cmd too: that is a failed guest run).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$top/build}
extra_bin=${NPU_EXTRA_BIN:-} kernel=6.12 suites= cmd= shell=0 timeout=900 results= devopts= ndevices=1 outdir= npu=1 npuko=
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift ;;
	--suites) suites=$2; shift ;;
	--cmd) cmd=$2; shift ;;
	--shell) shell=1 ;;
	--timeout) timeout=$2; shift ;;
	--results) results=$2; shift ;;
	--device-opts) devopts=$2; shift ;;
	--devices) ndevices=$2; shift ;;
	--outdir) outdir=$2; shift ;;
	--no-npu) npu=0 ;;
	--npu-ko) npuko=$2; shift ;;
	--extra-bin) extra_bin=$2; shift ;;
	-h | --help)
		# the header comment above is the usage
		sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0 ;;
	*) echo "run.sh: unknown option $1 (see run.sh --help)" >&2; exit 2 ;;
	esac
	shift
done

die() { echo "run.sh: $*" >&2; exit 1; }

release=$("$top/scripts/kernel-info.sh" "$kernel" release) || exit 1
vmlinuz=$("$top/scripts/kernel-info.sh" "$kernel" vmlinuz)
moddir=$("$top/scripts/kernel-info.sh" "$kernel" moddir)
[ -r "$vmlinuz" ] || die "no $vmlinuz (run scripts/setup.sh)"
npuko=${npuko:-$BUILD/kmod/$release/npu.ko}
[ $npu = 0 ] || [ -f "$npuko" ] || die "no $npuko (make modules)"
QEMU=${QEMU:-$("$top/scripts/build-qemu.sh")} || die "QEMU build failed"

work=$(mktemp -d "${TMPDIR:-/tmp}/npu-guest.XXXXXX")
qpid=
trap '[ -n "$qpid" ] && kill "$qpid" 2>/dev/null; rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,out,lib/modules,npu/bin,npu/lib,etc}

# busybox
cp /bin/busybox "$root/bin/busybox"

# Kernel modules npu.ko depends on, in load order (depth first from
# modules.dep), decompressed so busybox insmod can load them.
modlist=$work/modules
: >"$modlist"
add_module() { # path relative to $moddir
	local rel=$1 dep
	grep -qxF "$rel" "$modlist" && return
	for dep in $(awk -F': ' -v m="$rel" '$1 == m { print $2 }' "$moddir/modules.dep"); do
		add_module "$dep"
	done
	echo "$rel" >>"$modlist"
}
if [ $npu = 1 ]; then
	for dep in $(modinfo -F depends "$npuko" | tr ',' ' '); do
		rel=$(awk -F: -v n="$dep" '{ f = $1; sub(/.*\//, "", f); sub(/\.ko(\.xz|\.zst|\.gz)?$/, "", f);
			gsub(/-/, "_", f); m = n; gsub(/-/, "_", m); if (f == m) { print $1; exit } }' "$moddir/modules.dep")
		[ -n "$rel" ] || die "module $dep not found for $release"
		add_module "$rel"
	done
fi
i=0
while read -r rel; do
	i=$((i + 1))
	out=$root/lib/modules/$(printf '%02d' $i)-$(basename "$rel" | sed 's/\.ko.*$//').ko
	case "$rel" in
	*.xz) xz -dc "$moddir/$rel" >"$out" ;;
	*.zst) zstd -qdc "$moddir/$rel" >"$out" ;;
	*.gz) gzip -dc "$moddir/$rel" >"$out" ;;
	*) cp "$moddir/$rel" "$out" ;;
	esac
done <"$modlist"
[ $npu = 1 ] && cp "$npuko" "$root/lib/modules/99-npu.ko"

# Our programs and the shared libraries they need.
if [ -d "$BUILD/guest/bin" ]; then cp -a "$BUILD/guest/bin/." "$root/npu/bin/"; fi
if [ -n "$extra_bin" ]; then cp -a "$extra_bin/." "$root/npu/bin/"; fi
if [ -d "$BUILD/guest/lib" ]; then cp -a "$BUILD/guest/lib/." "$root/npu/lib/"; fi
# the kernel toolchain's tree: npu-cc finds cached code objects by key
if [ -d "$BUILD/sdk" ]; then cp -a "$BUILD/sdk" "$root/npu/sdk"; fi
for f in "$root"/npu/bin/* "$root"/npu/lib/*.so*; do
	[ -f "$f" ] && [ -x "$f" -o "${f%.so*}" != "$f" ] || continue
	LD_LIBRARY_PATH=$root/npu/lib ldd "$f" 2>/dev/null | awk '/=> \//{print $3} /^\t\/lib/{print $1}' |
	while read -r lib; do
		case "$lib" in "$root"/*) continue ;; esac
		mkdir -p "$root$(dirname "$lib")"
		[ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
	done
done
# The x86-64 loader lives at /lib64 in Debian.
if [ -e /lib64/ld-linux-x86-64.so.2 ] && [ ! -e "$root/lib64/ld-linux-x86-64.so.2" ]; then
	mkdir -p "$root/lib64" "$root/lib/x86_64-linux-gnu"
	cp -L /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib/x86_64-linux-gnu/" 2>/dev/null
	ln -sf /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/lib64/ld-linux-x86-64.so.2"
fi

# The job: suites, one command, or a shell. Output of jobs goes to ttyS1.
{
	echo '#!/bin/sh'
	echo 'cd /tmp'
	if [ -n "$suites" ]; then
		grep -v '^[[:space:]]*\(#\|$\)' "$suites" | while read -r name rest; do
			printf 'echo "@@NPU-SUITE-BEGIN %s"\n' "$name"
			printf 'timeout -s KILL %s sh -c %q 2>&1\n' "${NPU_SUITE_TIMEOUT:-300}" "$rest"
			printf 'echo "@@NPU-SUITE-END %s $?"\n' "$name"
		done
	elif [ -n "$cmd" ]; then
		printf '%s\n' "$cmd"
	fi
} >"$root/job.sh"
chmod +x "$root/job.sh"

cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/npu/bin:/npu/sdk/bin:/bin:/sbin LD_LIBRARY_PATH=/npu/lib HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# kmemleak's own scans (60 s after boot, then every 10 min) slow the
# guest's ioctls tenfold while they run, pushing timed tests past their
# limits at random; the scans after the job find every leak.
[ -w /sys/kernel/debug/kmemleak ] && echo scan=off >/sys/kernel/debug/kmemleak
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
ok=1
for m in /lib/modules/*.ko; do
	case "$m" in */99-npu.ko) insmod "$m" $(cat /modparams) || ok=0 ;;
	*) insmod "$m" || ok=0 ;; esac
done
echo "@@NPU-MODULES $ok" >/dev/ttyS1
if [ -f /shell ]; then
	echo "npu guest: $(uname -r); npu.ko loaded=$ok; 'exit' powers off"
	setsid cttyhack sh -l
else
	/job.sh >/dev/ttyS1 2>&1
	echo "@@NPU-JOB-END $?" >/dev/ttyS1
fi
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak; sleep 1
	echo scan >/sys/kernel/debug/kmemleak
fi
echo "@@NPU-DMESG-BEGIN" >/dev/ttyS1
dmesg >/dev/ttyS1
[ -r /sys/kernel/debug/kmemleak ] && cat /sys/kernel/debug/kmemleak >/dev/ttyS1
echo "@@NPU-DMESG-END" >/dev/ttyS1
if [ -n "$(ls /out)" ]; then
	echo "@@NPU-OUT-BEGIN" >/dev/ttyS1
	tar -C /out -cf - . | base64 >/dev/ttyS1
	echo "@@NPU-OUT-END" >/dev/ttyS1
fi
echo "@@NPU-GUEST-DONE" >/dev/ttyS1
sync
poweroff -f
INIT
chmod +x "$root/init"
echo "${NPU_MODPARAMS:-}" >"$root/modparams"
[ $shell = 1 ] && touch "$root/shell"

(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

case $ndevices in [1-8]) ;; *) die "--devices $ndevices: give 1 to 8" ;; esac
qemu_extra=()
if [ $npu = 1 ]; then
	for ((i = 0; i < ndevices; i++)); do qemu_extra+=(-device "npu$devopts"); done
fi
serial_out=$work/ttyS1.log
console=$work/console.log
# One TCG thread runs both vCPUs: QEMU 7.2's multi-threaded TCG can execute
# stale translations of code that another vCPU is patching (the kernel's
# static keys at boot), which oopses the guest on an int3 at random
# (Documentation/testing.rst, "Reliable boots"). NPU_TCG_THREAD=multi
# brings back one thread per vCPU.
tcg_thread=${NPU_TCG_THREAD:-single}
case "$tcg_thread" in single|multi) ;; *) die "NPU_TCG_THREAD must be single or multi" ;; esac
# 4-level paging (la57=off): with the 5-level paging that -cpu max offers,
# the KASAN debug kernel reported a wild-memory-access in do_raw_spin_lock
# early in 3 of 50 boots (Documentation/testing.rst, "Reliable boots").
# no_timer_check: on a busy host the emulated timer may not tick within the
# kernel's early IO-APIC timer check, which then panics ("IO-APIC + timer
# doesn't work!": seen once while both cores built; Documentation/testing.rst).
qemu_args=(-machine q35 -accel "tcg,thread=$tcg_thread" -cpu max,la57=off -m 1G -smp 2 -nographic -no-reboot
	-nic none -L /usr/share/seabios -L /usr/share/qemu
	-kernel "$vmlinuz" -initrd "$work/initrd.gz"
	-append "console=ttyS0 loglevel=$([ $shell = 1 ] && echo 4 || echo 7) panic=-1 no_timer_check"
	"${qemu_extra[@]}"
	-chardev "file,id=results,path=$serial_out" -device isa-serial,chardev=results)

if [ $shell = 1 ]; then
	# The console is stdio; ttyS1 output goes to a file.
	"$QEMU" "${qemu_args[@]}" -serial mon:stdio
	exit $?
fi

start=$(date +%s)
if [ -n "$cmd" ]; then
	# the command's output as the guest prints it (QEMU appends ttyS1 to
	# the file as it comes; tail ends with QEMU)
	: >"$serial_out"
	timeout -k 5 "$timeout" "$QEMU" "${qemu_args[@]}" -serial "file:$console" \
		-monitor none </dev/null &
	qpid=$!
	tail --pid="$qpid" -s 0.2 -n +1 -F "$serial_out" 2>/dev/null |
		{ # line by line: mawk would hold lines back in its input buffer
		  p=0
		  while IFS= read -r l; do
			l=${l%$'\r'}
			case $l in
			@@NPU-JOB-END*) break ;;
			@@NPU-MODULES*) p=1 ;;
			*) [ $p = 0 ] || printf '%s\n' "$l" ;;
			esac
		  done; }
	wait "$qpid"
	qrc=$?
	qpid=
else
	timeout --foreground -k 5 "$timeout" "$QEMU" "${qemu_args[@]}" -serial "file:$console" \
		-monitor none </dev/null
	qrc=$?
fi
[ -f "$serial_out" ] && sed -i 's/\r$//' "$serial_out"
elapsed=$(( $(date +%s) - start ))
rc=0

if [ $qrc = 124 ] || [ $qrc = 137 ]; then
	echo "run.sh: FAIL: guest did not finish within ${timeout}s" >&2
	rc=1
elif [ $qrc != 0 ]; then
	echo "run.sh: FAIL: QEMU exited with status $qrc (crash?)" >&2
	rc=1
fi
if ! grep -q '^@@NPU-GUEST-DONE' "$serial_out" 2>/dev/null; then
	echo "run.sh: FAIL: guest did not reach the end of its job" >&2
	rc=1
fi
if [ $npu = 1 ] && ! grep -q '^@@NPU-MODULES 1' "$serial_out" 2>/dev/null; then
	echo "run.sh: FAIL: loading the modules failed" >&2
	rc=1
fi

# Kernel log: console output plus the dmesg the guest dumped at the end.
klog=$work/kernel.log
{ cat "$console" 2>/dev/null
  sed -n '/^@@NPU-DMESG-BEGIN/,/^@@NPU-DMESG-END/p' "$serial_out" 2>/dev/null; } >"$klog"
bad='unreferenced object|suspected memory leak|Oops|BUG:|WARNING:|UBSAN:|INFO: possible|INFO: task .* blocked|turning off the locking correctness validator|Kernel panic|general protection fault|Call Trace:|refcount_t:|list_add corruption|list_del corruption'
if grep -aEq "$bad" "$klog"; then
	echo "run.sh: FAIL: guest kernel log has a report:" >&2
	grep -aE -m 20 -A 12 "$bad" "$klog" | sed 's/^/  | /' >&2
	rc=1
fi

# Results and files.
if [ -n "$results" ]; then
	mkdir -p "$results"
	cp "$klog" "$results/kernel.log"
	cp "$serial_out" "$results/guest.log" 2>/dev/null
	echo "$elapsed" >"$results/boot-seconds"
	echo "$rc" >"$results/runner-status"
fi
if [ -n "$outdir" ] && grep -q '^@@NPU-OUT-BEGIN' "$serial_out"; then
	mkdir -p "$outdir"
	sed -n '/^@@NPU-OUT-BEGIN/,/^@@NPU-OUT-END/p' "$serial_out" | sed '1d;$d' |
		base64 -d | tar -C "$outdir" -xf -
fi
if [ -n "$cmd" ]; then
	jrc=$(sed -n 's/^@@NPU-JOB-END //p' "$serial_out")
	[ $rc = 0 ] && [ -n "$jrc" ] && exit "$jrc"
	exit 125
fi
if [ -n "$suites" ] && [ -n "$results" ]; then
	awk -v dir="$results" '
		/^@@NPU-SUITE-BEGIN / { name = $2; file = dir "/" name ".tap"; printf "" > file; next }
		/^@@NPU-SUITE-END / { print "# exit status " $3 >> file; close(file); name = ""; next }
		name != "" { print >> file }' "$serial_out"
	# a failing suite fails the run too (runner-status above is the
	# boot's and the log's alone: run-all counts the suites itself)
	for tap in "$results"/*.tap; do
		[ -f "$tap" ] || continue
		if grep -E '^not ok ' "$tap" | grep -viEq '# *todo' ||
		   grep -Eq '^# exit status [^0]' "$tap"; then
			echo "run.sh: FAIL: suite $(basename "$tap" .tap) failed" >&2
			rc=1
		fi
	done
fi
exit $rc
