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

/* Run l on ring r with a statistics record; false if it did not complete. */
static bool run_stats(int r, struct launch *l, struct npu_launch_stats *st)
{
	struct buf sb = alloc_buf(sizeof(*st), 0, 1);
	struct pk p = { .n = 0 };
	bool done;

	l->stats = sb.va;
	pk_launch_code(&p, l);
	done = ring_run(r, &p, 60000);
	*st = read_stats(&sb);
	return done;
}

static double frac(const struct npu_launch_stats *st, unsigned why)
{
	return st->thread_cycles ? (double)st->stall[why] / st->thread_cycles
				 : 0;
}

static void diag_stalls(const char *what, const struct npu_launch_stats *st)
{
	static const char *const names[NPU_STALL_COUNT] = {
		"selected", "not_selected", "wait", "short_scoreboard",
		"long_scoreboard", "math_pipe_throttle", "lg_throttle",
		"barrier", "branch_resolving",
	};
	char line[512];
	int n = 0;

	for (unsigned i = 0; i < NPU_STALL_COUNT; i++)
		n += snprintf(line + n, sizeof(line) - n, " %s %.3f", names[i],
			      frac(st, i));
	diag("%s: %llu cycles, IPC %.3f,%s", what,
	     (unsigned long long)st->cycles,
	     st->cycles ? (double)st->instructions / st->cycles : 0, line);
}

/* The stall reason that dominates matches what the code waits for. */
static void test_stall_reasons(void)
{
	struct npu_launch_stats st;
	struct buf out = alloc_buf(4096, 1, 1);
	struct buf list = alloc_buf(64 * 4096, 1, 1);
	struct launch l;
	uint64_t next;
	bool done;

	load_kernel("fpchain", 1);
	l = (struct launch){ .stack = 64, .nargs = 2, .args = { out.va, 2000 } };
	done = run_stats(0, &l, &st);
	ok(done && frac(&st, NPU_STALL_WAIT) > 0.6,
	   "dependent FP chain: mostly 'wait' (%.2f)",
	   frac(&st, NPU_STALL_WAIT));
	diag_stalls("fpchain", &st);

	/* a list that jumps a page each hop: x -> 37x + 11 mod 64 is one cycle */
	for (unsigned i = 0; i < 64; i++) {
		unsigned j = (i * 37 + 11) % 64;

		next = list.va + j * 4096 + (j % 8) * 64;
		buf_write(&list, i * 4096 + (i % 8) * 64, &next, 8);
	}
	load_kernel("chase", 1);
	l = (struct launch){ .stack = 64, .nargs = 3,
			     .args = { list.va, 500, out.va } };
	done = run_stats(0, &l, &st);
	ok(done && frac(&st, NPU_STALL_LONG_SCOREBOARD) > 0.8,
	   "pointer chase in device memory: mostly 'long_scoreboard' (%.2f)",
	   frac(&st, NPU_STALL_LONG_SCOREBOARD));
	diag_stalls("chase", &st);

	load_kernel("barrier", 1);
	l = (struct launch){ .block = { 8 }, .scratch = 64, .stack = 64,
			     .nargs = 2, .args = { out.va, 3000 } };
	done = run_stats(0, &l, &st);
	ok(done && frac(&st, NPU_STALL_BARRIER) > 0.6,
	   "uneven barrier (one thread works, seven wait): mostly 'barrier' "
	   "(%.2f)", frac(&st, NPU_STALL_BARRIER));
	diag_stalls("barrier", &st);
	{
		uint64_t v[8], first;
		bool same = true;

		buf_read(&out, 0, v, sizeof(v));
		first = v[0];
		for (int i = 0; i < 8; i++)
			same &= v[i] == first && first != 0;
		ok(same, "barrier: every thread read thread 0's scratchpad "
		   "write after it");
	}
}

/* IPC per unit rises with resident threads on a latency-bound kernel. */
static void test_occupancy_curve(void)
{
	struct buf a = alloc_buf(64 * 1024, 1, 1);
	struct buf out = alloc_buf(8 * 1024, 1, 1);
	double ipc[6], bound;
	unsigned threads[6] = { 1, 2, 4, 8, 16 }, nt = 5;
	struct npu_launch_stats st;
	bool rising = true;

	load_kernel("memlat", 1);
	for (unsigned i = 0; i < nt; i++) {
		struct launch l = { .block = { threads[i] }, .stack = 64,
				    .nargs = 4,
				    .args = { a.va, 200, 16 * 1024 - 1, out.va } };

		run_stats(0, &l, &st);
		ipc[i] = (double)st.instructions / st.cycles;
		diag("memlat, %u threads: IPC %.3f, achieved occupancy %.2f, "
		     "long_scoreboard %.2f, lg_throttle %.2f", threads[i],
		     ipc[i], (double)st.thread_cycles / st.unit_cycles /
		     rd(NPU_REG_CU_THREADS),
		     frac(&st, NPU_STALL_LONG_SCOREBOARD),
		     frac(&st, NPU_STALL_LG_THROTTLE));
		if (i && i < 4 && !(ipc[i] > 1.6 * ipc[i - 1]))
			rising = false;
	}
	ok(rising, "latency-bound kernel: IPC rises with resident threads "
	   "1 -> 8 (%.3f %.3f %.3f %.3f)", ipc[0], ipc[1], ipc[2], ipc[3]);
	/*
	 * The model's bound: 8 loads in flight per unit, 120 cycles each
	 * (Documentation/hw/npu.rst), so IPC <= instructions per load * 8 / 120.
	 */
	bound = (double)st.instructions / (16 * 200) * 8 / 120;
	ok(ipc[4] <= bound * 1.02 && ipc[4] >= bound * 0.85 &&
	   frac(&st, NPU_STALL_LG_THROTTLE) > 0.2,
	   "16 threads: at the memory request queue's bound (IPC %.3f, bound "
	   "%.3f, lg_throttle %.2f)", ipc[4], bound,
	   frac(&st, NPU_STALL_LG_THROTTLE));
}

/* The same launch gives the same cycles and stalls, run after run. */
static void test_deterministic(void)
{
	struct buf a = alloc_buf(64 * 1024, 1, 1);
	struct buf out = alloc_buf(8 * 1024, 1, 1);
	struct npu_launch_stats first, st;
	bool same = true;

	load_kernel("memlat", 1);
	for (int run = 0; run < 10; run++) {
		struct launch l = { .grid = { 12 }, .block = { 6 }, .stack = 64,
				    .nargs = 4,
				    .args = { a.va, 300, 16 * 1024 - 1, out.va } };

		run_stats(0, &l, &st);
		if (!run)
			first = st;
		else if (st.cycles != first.cycles ||
			 st.instructions != first.instructions ||
			 memcmp(st.stall, first.stall, sizeof(st.stall)))
			same = false;
	}
	ok(same && first.cycles, "10 runs of a 12-block launch: identical "
	   "cycles (%llu) and stall counts",
	   (unsigned long long)first.cycles);
}

static void run_all(void)
{
	start(NULL, 0);
	test_iota();
	test_stall_reasons();
	test_occupancy_curve();
	test_deterministic();
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
