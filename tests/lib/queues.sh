#!/bin/sh
# SPDX-License-Identifier: MIT
# queues.sh user|kernel PROGRAM [ARGS...]: run a library test with its
# streams on user-mode queues or on the driver's kernel queues
# (NPU_QUEUES). Streams run on user queues by default, so tests/guest-suites
# runs each library suite as is and again (its "-kq" line) through
# "queues.sh kernel". The same script sits beside the ASan builds, so that
# those run the sanitized PROGRAM from the same directory.
dir=$(dirname "$0")
case "$1" in
user|kernel) ;;
*)
	echo "usage: queues.sh user|kernel PROGRAM [ARGS...]" >&2
	exit 2
	;;
esac
NPU_QUEUES=$1
export NPU_QUEUES
prog=$2
shift 2
if [ -x "$dir/$prog" ]; then
	exec "$dir/$prog" "$@"
fi
exec "$prog" "$@"
