#!/bin/sh
# lib_examples.sh - run the libnpu examples (examples/) as one TAP suite:
# each must exit 0 (they check their results); their measurements are
# printed as TAP comments.
n=0
for e in asyncAPI simpleStreams simpleMultiCopy concurrentKernels \
	simpleCallback streamPriorities autoTune vectorAdd matrixMul histogram \
	reduction matrixMulTune gemmTensor; do
	n=$((n + 1))
	if ! command -v "$e" >/dev/null 2>&1; then
		echo "ok $n - # SKIP $e not built"
		continue
	fi
	out=$("$e" 2>&1)
	rc=$?
	echo "$out" | sed 's/^/# /'
	if [ $rc = 0 ]; then
		echo "ok $n - $e"
	else
		echo "not ok $n - $e (exit $rc)"
	fi
done
echo "1..$n"
