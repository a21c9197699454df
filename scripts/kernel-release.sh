#!/bin/bash
# Map a kernel name (6.1, 6.12, or a full release) to an installed release.
set -euo pipefail
want=${1:?usage: kernel-release.sh 6.1|6.12|RELEASE}
if [ -d "/lib/modules/$want" ]; then echo "$want"; exit 0; fi
rel=$(ls -1 /lib/modules 2>/dev/null | grep -E "^${want//./\\.}[.-][0-9]" | grep -- '-amd64$' | sort -V | tail -n1 || true)
if [ -z "$rel" ]; then
	echo "kernel-release: no installed kernel matches $want (run scripts/setup.sh)" >&2
	exit 1
fi
echo "$rel"
