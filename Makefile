# npu: top-level build and test entry points. See README.md.
#
#   make test            everything: setup, build, device tests, guest tests
#   make demo            the showcase workload in the guest
#   make bench           benchmarks, results in build/bench/results.json
#   make shell KERNEL=6.12   interactive shell in a guest with npu.ko loaded
#   make guest-run KERNEL=6.1 CMD='...'   one command in a guest
#   make boot-soak KERNEL=6.12 N=50        boot a kernel N times, every log clean

SHELL := /bin/bash
TOP := $(CURDIR)
BUILD ?= $(TOP)/build
# Debian's two LTS kernels, and the debug kernel (KASAN, lockdep, kmemleak)
# built from linux-source-6.1: every guest suite runs on all three.
KERNELS ?= 6.1 6.12 debug
KERNEL ?= 6.12
CMD ?= true
N ?= 50
export BUILD KERNEL

.PHONY: boot-soak test-debug all setup qemu modules lib tests test test-runner shell guest-run demo bench \
	install clean checkpatch

all: qemu modules lib tests

setup:
	@bash scripts/setup.sh

qemu: setup
	@bash scripts/build-qemu.sh >/dev/null

# npu.ko per kernel, built in a symlinked copy of the sources so that the two
# kernels' objects never mix.
modules: setup
	@set -e; for k in $(KERNELS); do \
		rel=$$(scripts/kernel-info.sh $$k release); \
		kdir=$$(scripts/kernel-info.sh $$k kdir); \
		d=$(BUILD)/kmod/$$rel; \
		rm -rf $$d; mkdir -p $$d; \
		for f in Kbuild driver uapi include; do \
			[ -e $$f ] && cp -rs $(TOP)/$$f $$d/; \
		done; \
		if [ -f Kbuild ]; then \
			echo "  KBUILD  npu.ko for $$rel"; \
			$(MAKE) -s -C $$kdir M=$$d modules; \
		fi; \
	done

lib: setup
	@if [ -f lib/Makefile ]; then \
		$(MAKE) -s -C toolchain BUILD=$(BUILD) && \
		$(MAKE) -s -C lib BUILD=$(BUILD) && \
		$(MAKE) -s -C choreo BUILD=$(BUILD) && \
		mkdir -p $(BUILD)/guest/lib && cp -a $(BUILD)/lib/libnpu.so* $(BUILD)/guest/lib/; \
	fi

tests: setup lib
	@set -e; ksft=$$(bash scripts/kselftest-headers.sh); \
	for d in tests/device tests/kselftest tests/fuzz tests/lib examples tests/bench demo tools tests/choreo tests/json tests/tools; do \
		[ -f $$d/Makefile ] || continue; \
		$(MAKE) -s -C $$d BUILD=$(BUILD) KSFT_INC=$$ksft; \
	done; \
	echo "  ASAN    library tests under ASan + UBSan"; \
	$(MAKE) -s -C tests/lib asan BUILD=$(BUILD) KSFT_INC=$$ksft

test: qemu modules lib tests
	@bash tests/run-all.sh $(KERNELS)

# The same guest suites on the debug kernel (KASAN, lockdep, kmemleak, fault
# injection), built from linux-source-6.1 and cached.
test-debug: KERNELS = debug
test-debug: qemu modules lib tests
	@NPU_SKIP_DEVICE=1 bash tests/run-all.sh debug

# The runner's own tests: a failing suite, a guest oops and a QEMU crash
# must each fail the run.
test-runner: qemu modules
	@bash tests/guest/selftest.sh

# Targets that boot one kernel build npu.ko for that kernel only.
shell guest-run demo bench boot-soak: KERNELS = $(KERNEL)

shell: qemu modules lib tests
	@bash tests/guest/run.sh --kernel $(KERNEL) --shell

guest-run: qemu modules lib tests
	@bash tests/guest/run.sh --kernel $(KERNEL) --cmd '$(CMD)'

boot-soak: qemu modules
	@bash tests/guest/boot-soak.sh $(KERNEL) $(N)

demo: qemu modules lib tests
	@bash demo/run.sh

bench: qemu modules lib tests
	@bash tests/bench/run.sh

install: lib
	@$(MAKE) -s -C toolchain BUILD=$(BUILD) install
	@$(MAKE) -s -C lib BUILD=$(BUILD) install
	@$(MAKE) -s -C choreo BUILD=$(BUILD) install

checkpatch:
	@d=$$(bash scripts/kselftest-headers.sh)/../../..; \
	perl $$d/scripts/checkpatch.pl --no-tree --strict --terse -f driver/*.[ch] uapi/drm/*.h

clean:
	rm -rf $(BUILD)
