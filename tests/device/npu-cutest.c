// SPDX-License-Identifier: MIT
/*
 * npu-cutest: the compute units over qtest: RISC-V kernels, the block
 * dispatcher, the cycle model, statistics, traces and printf.
 * Usage: npu-cutest <qemu-system-x86_64>. Prints TAP 13. Kernels are read
 * from the kernels/ directory beside this program.
 */
#define _GNU_SOURCE
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devlib.h"

static struct npu_launch_stats read_stats(const struct buf *b)
{
	struct npu_launch_stats st;

	buf_read(b, 0, &st, sizeof(st));
	return st;
}

static uint64_t stall_sum(const struct npu_launch_stats *st)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < NPU_STALL_COUNT; i++)
		sum += st->stall[i];
	return sum;
}

/* A 1-D grid of threads each writing out[g] = g * 3 + 7. */
static void test_iota(void)
{
	for (int dev = 0; dev < 2; dev++) {
		struct buf out = alloc_buf(4 * 256, dev, 1);
		struct buf sb = alloc_buf(sizeof(struct npu_launch_stats), 0, 1);
		struct launch l = {
			.grid = { 16 }, .block = { 16 }, .stack = 256,
			.stats = sb.va, .nargs = 3,
			.args = { out.va, 3, 7 },
		};
		struct pk p = { .n = 0 };
		uint32_t got[256];
		struct npu_launch_stats st;
		bool good = true;

		load_kernel("iota", dev);
		pk_launch_code(&p, &l);
		ok(ring_run(0, &p, 20000), "iota (%s memory): launch completes",
		   dev ? "device" : "host");
		buf_read(&out, 0, got, sizeof(got));
		for (unsigned g = 0; g < 256; g++) {
			if (got[g] != g * 3 + 7) {
				diag("out[%u] = %u, want %u", g, got[g], g * 3 + 7);
				good = false;
				break;
			}
		}
		ok(good, "iota (%s memory): 16 blocks x 16 threads wrote "
		   "g * 3 + 7", dev ? "device" : "host");
		st = read_stats(&sb);
		ok(st.blocks == 16 && st.instructions > 256 * 10 &&
		   st.cycles > 0 && st.thread_cycles > 0 &&
		   stall_sum(&st) == st.thread_cycles &&
		   st.stall[NPU_STALL_SELECTED] == st.instructions &&
		   st.bytes_written[dev ? NPU_SPACE_DEVICE : NPU_SPACE_HOST] ==
		   1024,
		   "iota (%s memory) stats: %llu blocks, %llu instructions, "
		   "%llu cycles, %llu thread-cycles = sum of stalls",
		   dev ? "device" : "host", (unsigned long long)st.blocks,
		   (unsigned long long)st.instructions,
		   (unsigned long long)st.cycles,
		   (unsigned long long)st.thread_cycles);
	}
}

static void run_all(void)
{
	start(NULL, 0);
	test_iota();
	stop("compute-unit instance");
}

int main(int argc, char **argv)
{
	uint64_t t0 = host_ns();
	char *self;

	if (argc < 2) {
		fprintf(stderr, "usage: %s <qemu-system-x86_64>\n", argv[0]);
		return 2;
	}
	qemu_bin = argv[1];
	self = strdup(argv[0]);
	if (asprintf((char **)&kernel_dir, "%s/kernels", dirname(self)) < 0)
		return 2;
	printf("TAP version 13\n");
	run_all();
	printf("1..%d\n", test_no);
	diag("%d tests, %d failed, %.1f s", test_no, failures,
	     (host_ns() - t0) / 1e9);
	return failures ? 1 : 0;
}
