#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Fuzz the npu device node as an unprivileged user (runs as root in the
# guest, gives the node to group render as udev would, and drops to user
# fuzz in that group). TAP output.
#
#   npu_fuzz.sh ioctl SEED OPS      npu_fuzz: structured npu ioctls, 2 processes
#   npu_fuzz.sh trinity SEED OPS    trinity: OPS system calls on the node
#
# Both end with a known-good FILL and COPY checked on a fresh file.
mode=$1 seed=$2 ops=$3
uid=1000
[ -n "$mode" ] && [ -n "$seed" ] && [ -n "$ops" ] || {
	echo "usage: npu_fuzz.sh ioctl|trinity SEED OPS" >&2; exit 2; }

grep -q '^render:' /etc/group 2>/dev/null || echo "render:x:$uid:" >>/etc/group
grep -q '^fuzz:' /etc/passwd 2>/dev/null ||
	echo "fuzz:x:$uid:$uid:npu fuzzer:/tmp:/bin/sh" >>/etc/passwd

# the npu node: an accel node (6.2+) or a render node (6.1)
node=
for d in /sys/class/accel/accel* /sys/class/drm/renderD*; do
	[ "$(basename "$(readlink -f "$d/device/driver")")" = npu ] || continue
	case "$d" in
	*/accel/*) node=/dev/accel/${d##*/} ;;
	*) node=/dev/dri/${d##*/} ;;
	esac
	break
done
if [ -z "$node" ] || [ ! -c "$node" ]; then
	echo "1..0 # SKIP no npu device node"
	exit 0
fi
chgrp render "$node" && chmod 0660 "$node"

case "$mode" in
ioctl)
	exec npu_fuzz --user $uid --seed "$seed" --ops "$ops"
	;;
trinity)
	echo "TAP version 13"
	echo "1..2"
	echo "# trinity -s $seed -N $ops against $node as uid $uid"
	work=/tmp/trinity.$$
	mkdir -p $work && chown $uid:$uid $work
	# Only the node as a file victim; no sockets, pipes, perf and other fd
	# providers, so the calls land on the node (and trinity's own maps).
	# trinity forks its children after opening the node, so they share
	# its files; close, dup and fork exercise those paths.
	(cd $work && su fuzz -c "trinity -q -l off -s $seed -N $ops -C 2 -V $node \
		--disable-fds=sockets,pipes,perf,epoll,eventfd,pseudo,timerfd,testfile,memfd,drm \
		-c ioctl -c mmap -c munmap -c mremap -c mprotect -c madvise -c msync \
		-c close -c dup -c fcntl -c read -c write -c poll -c fork" \
		</dev/null >$work/out 2>&1)
	rc=$?
	ran=$(sed -n 's/.*Ran \([0-9]*\) syscalls.*/\1/p' $work/out | tail -1)
	sed 's/^/# /' $work/out | grep -v 'futex:' | tail -25
	if [ $rc = 0 ] && [ -n "$ran" ] && [ "$ran" -ge "$ops" ]; then
		echo "ok 1 - trinity ran $ran system calls on $node as uid $uid (seed $seed)"
	else
		echo "not ok 1 - trinity exited with $rc after ${ran:-no} system calls (seed $seed)"
	fi
	rm -rf $work
	check=$(npu_fuzz --user $uid --check)
	crc=$?
	echo "$check" | grep '^#'
	if [ $crc = 0 ]; then
		echo "ok 2 - the device runs a FILL and a COPY after trinity"
	else
		echo "not ok 2 - the device runs a FILL and a COPY after trinity"
	fi
	[ $rc = 0 ] && [ $crc = 0 ]
	;;
*)
	echo "npu_fuzz.sh: unknown mode $mode" >&2
	exit 2
	;;
esac
