#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# npu_modparams.sh - module parameters of npu.ko are checked at load time:
# reload the driver with bad values (each must be refused); with no
# parameters at all (the defaults a user gets), where a job longer than a
# few seconds must complete; then with the run's own parameters again.
# TAP; runs last, since it reloads the driver.
ko=/lib/modules/99-npu.ko
n=0 failed=0
t() {	# t STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}
node() { ls /dev/accel/accel* /dev/dri/renderD* 2>/dev/null | head -n 1; }

rmmod npu
t $? "rmmod npu"
for bad in job_timeout_ms=0 job_timeout_ms=-1 job_timeout_ms=x; do
	insmod $ko $bad 2>/dev/null
	rc=$?
	loaded() { grep -q '^npu ' /proc/modules; }
	if loaded; then rmmod npu; false; else [ $rc != 0 ]; fi
	t $? "insmod $bad is refused"
done
insmod $ko job_timeout_ms=1
t $? "insmod job_timeout_ms=1 loads"
rmmod npu
insmod $ko
t $? "insmod with the default parameters loads"
npu_default_timeout_test >/tmp/npu_default_timeout.tap 2>&1
rc=$?
sed 's/^/# /' /tmp/npu_default_timeout.tap
t $rc "a 3 s job completes with the default job timeout"
rmmod npu
insmod $ko $(cat /modparams 2>/dev/null)
t $? "insmod with the run's parameters loads"
[ -n "$(node)" ]
t $? "device node is back ($(node))"
echo "1..$n"
[ $failed = 0 ]
