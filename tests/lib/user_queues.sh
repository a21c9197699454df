#!/bin/sh
# SPDX-License-Identifier: MIT
# user_queues.sh PROGRAM [ARGS...]: run a library test with its streams on
# user-mode queues (NPU_QUEUES=user). tests/guest-suites names the suites
# that run this way; the same script sits beside the ASan builds, so that
# those run the sanitized PROGRAM from the same directory.
dir=$(dirname "$0")
prog=$1
shift
NPU_QUEUES=user
export NPU_QUEUES
if [ -x "$dir/$prog" ]; then
	exec "$dir/$prog" "$@"
fi
exec "$prog" "$@"
