#!/bin/bash
# Extract kselftest_harness.h and kselftest.h (and checkpatch.pl) from
# Debian's linux-source-6.1 into the cache; print the include directory.
set -euo pipefail
CACHE=${NPU_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/npu}
tarball=$(ls /usr/src/linux-source-6.1.tar.* 2>/dev/null | head -n1)
if [ -z "$tarball" ]; then
	echo "kselftest-headers: linux-source-6.1 not installed (scripts/setup.sh)" >&2
	exit 1
fi
key=$(stat -c %s-%Y "$tarball")
dir="$CACHE/ksft-$key"
if [ ! -f "$dir/.done" ]; then
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xJf "$tarball" -C "$dir" --strip-components=1 \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/tools/testing/selftests/kselftest.h \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	touch "$dir/.done"
fi
echo "$dir/tools/testing/selftests"
