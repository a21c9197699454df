// SPDX-License-Identifier: MIT
/*
 * npu-cutest: the compute units over qtest: RISC-V kernels, the block
 * dispatcher, the cycle model, statistics, traces and printf.
 * Usage: npu-cutest <qemu-system-x86_64>. Prints TAP 13. Kernels are read
 * from the kernels/ directory beside this program.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "devlib.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

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

/*
 * Threads of one launch whose code lies 16 and 32 pages apart (one set of
 * the decoded-code cache) each run their own instructions: with two
 * pages, and with three, which evict each other within the scheduler's
 * scan of the live threads, between the choice of a thread and its issue.
 */
static void test_code_alias(void)
{
	const unsigned threads = 6, n = 300;
	struct buf out = alloc_buf(8 * threads, 1, 1);

	load_kernel("code_alias", 1);
	for (unsigned pages = 2; pages <= 3; pages++) {
		struct launch l = { .block = { threads }, .stack = 256,
				    .nargs = 3, .args = { out.va, n, pages } };
		struct pk p = { .n = 0 };
		uint64_t got[6], want[6];
		bool done, good = true;

		for (unsigned t = 0; t < threads; t++) {
			/* kmain's loop, far_sum's, farther_sum's */
			static const uint64_t start[] = { 1, 7, 5 };
			static const uint64_t mul[] = { 5, 3, 7 };
			static const uint64_t x[] = { 0xaa, 0x55, 0x33 };
			uint64_t acc = start[t % pages];

			for (uint64_t i = 0; i < n; i++)
				acc = acc * mul[t % pages] +
				      (i ^ x[t % pages]);
			want[t] = acc;
		}
		memset(got, 0, sizeof(got));
		buf_write(&out, 0, got, sizeof(got));
		pk_launch_code(&p, &l);
		done = ring_run(0, &p, 20000);
		if (!done) {
			diag("ring 0: error %u at PC 0x%llx (thread %u)",
			     rrd(0, NPU_RING_ERROR),
			     (unsigned long long)rrd64(0, NPU_RING_FAULT_PC_LO),
			     rrd(0, NPU_RING_FAULT_THREAD));
			ring_reset(0);
		}
		buf_read(&out, 0, got, sizeof(got));
		for (unsigned t = 0; t < threads; t++) {
			if (got[t] != want[t]) {
				diag("thread %u: 0x%llx, want 0x%llx", t,
				     (unsigned long long)got[t],
				     (unsigned long long)want[t]);
				good = false;
			}
		}
		ok(done && good, "%u threads running code on %u pages 16 "
		   "pages apart each run their own instructions (%u "
		   "iterations)", threads, pages, n);
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

/*
 * A unit with one live thread takes a shorter scheduler path, unless the
 * launch is PC-sampled: both paths must give the same cycles, stalls and
 * counts, also for blocks whose threads end one by one.
 */
static void test_single_thread_path(void)
{
	static const char *const names[] = { "fpchain", "memlat", "chase",
					     "barrier" };
	struct buf a = alloc_buf(64 * 1024, 1, 1);
	struct buf out = alloc_buf(8 * 1024, 1, 1);
	struct buf tb = alloc_buf(1 << 20, 0, 1);
	uint64_t self = a.va;
	bool same = true;

	buf_write(&a, 0, &self, 8);	/* a one-node cycle for chase */
	for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		struct npu_launch_stats st[2];

		load_kernel(names[k], 1);
		for (int sampled = 0; sampled < 2; sampled++) {
			struct launch l = { .stack = 64, .nargs = 4,
					    .args = { a.va, 300, 1023, out.va } };

			if (!strcmp(names[k], "fpchain"))
				l.args[0] = out.va;
			if (!strcmp(names[k], "chase"))
				l.args[2] = out.va;
			if (!strcmp(names[k], "barrier")) {
				/* three threads wait while one works, then
				 * run out one by one: both paths in turn */
				l.args[0] = out.va;
				l.block[0] = 4;
				l.scratch = 64;
			}
			if (!strcmp(names[k], "memlat"))
				l.block[0] = 3;
			if (sampled) {
				l.trace = tb.va;
				l.trace_bytes = 1 << 20;
				l.sample_period = 64;
			}
			if (!run_stats(0, &l, &st[sampled]))
				same = false;
		}
		if (st[0].cycles != st[1].cycles ||
		    st[0].instructions != st[1].instructions ||
		    st[0].thread_cycles != st[1].thread_cycles ||
		    st[0].unit_cycles != st[1].unit_cycles ||
		    memcmp(st[0].stall, st[1].stall, sizeof(st[0].stall)) ||
		    !st[0].instructions || !st[1].trace_records) {
			diag_stalls(names[k], &st[0]);
			diag_stalls("  sampled", &st[1]);
			same = false;
		}
	}
	ok(same, "one thread: the same cycles, instructions and stall counts "
	   "with and without PC sampling (fpchain; memlat, 3 threads; chase; "
	   "barrier, 4 threads)");
}

/* Submit without waiting (the caller waits with ring_wait). */
static void submit_launch(int r, struct launch *l, const struct buf *sb)
{
	struct pk p = { .n = 0 };

	l->stats = sb->va;
	pk_launch_code(&p, l);
	pk_fence(&p, ++seqno[r], fence_pa(r), 0);
	ring_submit(r, &p);
}

static bool completed(int r)
{
	return ring_wait(r, 60000) == (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED)
	       && rrd(r, NPU_RING_FENCE) == seqno[r];
}

/*
 * Blocks go to units as room frees up: two launches whose blocks each fill
 * half the units run side by side; a grid larger than the device runs in
 * waves; built-in kernels hold units beside user kernels.
 */
static void test_dispatcher(void)
{
	unsigned ncu = NPU_CAPS_CUS(rd(NPU_REG_CAPS));
	unsigned nthr = rd(NPU_REG_CU_THREADS);
	struct buf out[2] = { alloc_buf(4096, 1, 1), alloc_buf(4096, 1, 1) };
	struct buf sb[2] = { alloc_buf(4096, 0, 1), alloc_buf(4096, 0, 1) };
	struct npu_launch_stats st[2];
	uint64_t units[2][2 * 64], seen = 0, span;
	const uint64_t n = 200000;
	bool disjoint = true, both, overlap;

	load_kernel("spin", 1);
	for (int r = 0; r < 2; r++) {
		struct launch l = { .grid = { ncu / 2 }, .block = { nthr },
				    .stack = 64, .nargs = 2,
				    .args = { n, out[r].va } };

		submit_launch(r, &l, &sb[r]);
	}
	both = completed(0) & completed(1);
	for (int r = 0; r < 2; r++) {
		st[r] = read_stats(&sb[r]);
		buf_read(&out[r], 0, units[r], 16 * (ncu / 2));
		for (unsigned b = 0; b < ncu / 2; b++) {
			if (seen & (1ull << units[r][2 * b]))
				disjoint = false;
			seen |= 1ull << units[r][2 * b];
		}
	}
	span = MAX(st[0].start_cycle + st[0].cycles,
		   st[1].start_cycle + st[1].cycles) -
	       MIN(st[0].start_cycle, st[1].start_cycle);
	/*
	 * Side by side: each started before the other ended. When the second
	 * ring's launch reaches the dispatcher depends on the host (a busy
	 * host delays its thread by up to a launch's paced time).
	 */
	overlap = MAX(st[0].start_cycle, st[1].start_cycle) <
		  MIN(st[0].start_cycle + st[0].cycles,
		      st[1].start_cycle + st[1].cycles);
	ok(both && disjoint && seen == (ncu == 64 ? ~0ull : (1ull << ncu) - 1)
	   && overlap,
	   "two rings, %u unit-filling blocks each: every unit used once, side "
	   "by side, both in %llu cycles (one takes %llu)", ncu / 2,
	   (unsigned long long)span, (unsigned long long)st[0].cycles);

	/* blocks of two launches resident on one unit at once */
	for (int r = 0; r < 2; r++) {
		struct launch l = { .grid = { ncu }, .block = { nthr / 2 },
				    .stack = 64, .nargs = 2,
				    .args = { n, out[r].va } };

		submit_launch(r, &l, &sb[r]);
	}
	both = completed(0) & completed(1);
	seen = 0;
	for (int r = 0; r < 2; r++) {
		uint64_t mask = 0;

		st[r] = read_stats(&sb[r]);
		buf_read(&out[r], 0, units[r], 16 * ncu);
		for (unsigned b = 0; b < ncu; b++)
			mask |= 1ull << units[r][2 * b];
		seen = r ? seen & mask : mask;
	}
	span = MAX(st[0].start_cycle + st[0].cycles,
		   st[1].start_cycle + st[1].cycles) -
	       MIN(st[0].start_cycle, st[1].start_cycle);
	overlap = MAX(st[0].start_cycle, st[1].start_cycle) <
		  MIN(st[0].start_cycle + st[0].cycles,
		      st[1].start_cycle + st[1].cycles);
	ok(both && seen == (ncu == 64 ? ~0ull : (1ull << ncu) - 1) &&
	   overlap,
	   "two rings' half-unit blocks share every unit: both launches on "
	   "all %u units, together in %llu cycles (one takes %llu)", ncu,
	   (unsigned long long)span, (unsigned long long)st[0].cycles);

	{
		struct launch l = { .grid = { 3 * ncu }, .block = { nthr },
				    .stack = 64, .nargs = 2,
				    .args = { n, out[0].va } };
		struct buf big = alloc_buf(16 * 3 * 64, 1, 1);

		l.args[1] = big.va;
		submit_launch(0, &l, &sb[0]);
		both = completed(0);
		st[0] = read_stats(&sb[0]);
		ok(both && st[0].cycles >= 3 * n && st[0].cycles < 3 * n + n / 2,
		   "%u unit-filling blocks on %u units run in 3 waves (%llu "
		   "cycles, %llu per block)", 3 * ncu, ncu,
		   (unsigned long long)st[0].cycles, (unsigned long long)n);
		/*
		 * Blocks far shorter than a quantum (4096 cycles): the second
		 * wave starts when the first frees its slots, not at the next
		 * quantum, so one and a half waves take two waves' time.
		 */
		l.grid[0] = ncu;
		l.args[0] = 600;
		submit_launch(0, &l, &sb[0]);
		both = completed(0);
		st[1] = read_stats(&sb[0]);
		l.grid[0] = ncu + ncu / 2;
		submit_launch(0, &l, &sb[0]);
		both &= completed(0);
		st[0] = read_stats(&sb[0]);
		ok(both && st[0].cycles <= 2 * st[1].cycles + 16,
		   "%u unit-filling blocks of 600 iterations on %u units: the "
		   "second wave starts as the first ends (%llu cycles in all, "
		   "one wave %llu)", ncu + ncu / 2, ncu,
		   (unsigned long long)st[0].cycles,
		   (unsigned long long)st[1].cycles);
		l.args[0] = n;
		l.grid[0] = 2 * ncu;
		l.block[0] = nthr / 2;
		submit_launch(0, &l, &sb[0]);
		both = completed(0);
		st[0] = read_stats(&sb[0]);
		ok(both && st[0].cycles < n + n / 2,
		   "%u half-unit blocks share the %u units: one wave (%llu "
		   "cycles)", 2 * ncu, ncu, (unsigned long long)st[0].cycles);
	}
}

/* A built-in kernel's blocks hold whole units; user blocks use the rest. */
static void test_shared_with_builtin(void)
{
	unsigned ncu = NPU_CAPS_CUS(rd(NPU_REG_CAPS));
	unsigned nthr = rd(NPU_REG_CU_THREADS);
	struct buf out = alloc_buf(4096, 1, 1), sb = alloc_buf(4096, 0, 1);
	struct buf ts = alloc_buf(4096, 0, 1);
	struct npu_launch_stats st;
	struct pk p = { .n = 0 };
	uint64_t spin_end;
	bool done;

	load_kernel("spin", 1);
	for (int half = 1; half >= 0; half--) {
		struct launch l = { .grid = { ncu / 2 }, .block = { nthr },
				    .stack = 64, .nargs = 2,
				    .args = { 2000, out.va } };

		/*
		 * 300 ms of a built-in kernel on half (or all) the units; it
		 * holds them until at least ts + 300 ms (its start is later
		 * than the timestamp before it).
		 */
		p.n = 0;
		pk_ts(&p, ts.va);
		LAUNCH(&p, NPU_KERNEL_TEST_SPIN, half ? ncu / 2 : ncu,
		       300000000);
		pk_fence(&p, ++seqno[1], fence_pa(1), 0);
		ring_submit(1, &p);
		usleep(50000);
		submit_launch(0, &l, &sb);
		done = completed(0) & completed(1);
		st = read_stats(&sb);
		buf_read(&ts, 0, &spin_end, 8);
		spin_end += 300000000;
		if (half)
			ok(done && st.end_ns < spin_end,
			   "user kernel runs on the units a built-in kernel "
			   "leaves free (ends %.1f ms before it)",
			   (spin_end - st.end_ns) / 1e6);
		else
			ok(done && st.start_ns >= spin_end,
			   "user kernel waits while a built-in kernel holds "
			   "every unit (starts %.1f ms after its end)",
			   ((double)st.start_ns - spin_end) / 1e6);
	}
}

/* PC samples and the instruction trace of one block. */
static void test_traces(void)
{
	struct buf out = alloc_buf(4 * 256, 1, 1);
	struct buf tb = alloc_buf(1 << 20, 0, 1);
	struct buf code;
	struct npu_cu_trace_header h;
	struct npu_launch_stats st;
	struct launch l = { .grid = { 16 }, .block = { 16 }, .stack = 256,
			    .nargs = 3, .args = { out.va, 3, 7 } };
	uint32_t img[256];
	bool good = true;
	uint64_t i;

	load_kernel("iota", 0);
	code.va = DEVTEST_CODE_VA;
	(void)code;
	l.trace = tb.va;
	l.trace_bytes = 1 << 20;
	l.flags = NPU_CODE_ITRACE;
	l.trace_block = 5;
	run_stats(0, &l, &st);
	buf_read(&tb, 0, &h, sizeof(h));
	/* the image, to compare instruction words */
	{
		FILE *f;
		char path[512];

		snprintf(path, sizeof(path), "%s/iota.bin", kernel_dir);
		f = fopen(path, "rb");
		memset(img, 0, sizeof(img));
		if (!f || fread(img, 1, sizeof(img), f) == 0)
			good = false;
		if (f)
			fclose(f);
	}
	for (i = 0; i < h.records && good; i++) {
		struct npu_cu_trace_record r;
		uint64_t off;

		buf_read(&tb, sizeof(h) + i * sizeof(r), &r, sizeof(r));
		off = (r.pc - DEVTEST_CODE_VA) / 4;
		if (r.kind != NPU_CU_TRACE_INSN || r.block != 5 ||
		    off >= 256 || img[off] != r.insn) {
			diag("record %llu: kind %u block %u pc 0x%llx insn 0x%x",
			     (unsigned long long)i, r.kind, r.block,
			     (unsigned long long)r.pc, r.insn);
			good = false;
		}
		if (r.insn == 0x00b52023 && r.addr != out.va + 4 *
		    (5 * 16 + r.thread))	/* sw a1, 0(a0): the store */
			good = false;
	}
	ok(good && h.magic == NPU_CU_TRACE_MAGIC &&
	   h.record_bytes == sizeof(struct npu_cu_trace_record) &&
	   h.records == st.instructions / 16 && !h.lost,
	   "instruction trace of block 5: %llu records (of %llu instructions), "
	   "PCs, words and store addresses match", (unsigned long long)h.records,
	   (unsigned long long)st.instructions);

	l.flags = 0;
	/*
	 * "Every cycle that is a multiple of P": also for periods that are not
	 * powers of two, and for one so short that the buffer overflows.
	 */
	for (unsigned pi = 0; pi < 3; pi++) {
		static const uint32_t periods[] = { 64, 100, 3 };
		uint32_t period = periods[pi];
		uint64_t bad = 0, total;
		bool fields = true;

		l.sample_period = period;
		run_stats(0, &l, &st);
		buf_read(&tb, 0, &h, sizeof(h));
		total = h.records + h.lost;
		good = h.records > 0 && total > st.thread_cycles / period / 2 &&
		       total <= st.thread_cycles / period + 256;
		for (i = 0; i < h.records && fields; i++) {
			struct npu_cu_trace_record r;

			buf_read(&tb, sizeof(h) + i * sizeof(r), &r,
				 sizeof(r));
			if (r.cycle % period && !bad++)
				diag("period %u: record %llu at cycle %llu",
				     period, (unsigned long long)i,
				     (unsigned long long)r.cycle);
			if (r.kind != NPU_CU_TRACE_SAMPLE ||
			    r.stall >= NPU_STALL_COUNT || r.block >= 16 ||
			    r.thread >= 16 || r.pc < DEVTEST_CODE_VA ||
			    r.pc >= DEVTEST_CODE_VA + 1024)
				fields = false;
		}
		ok(good && fields && !bad, "PC sampling every %u cycles: %llu samples "
		   "(%llu lost) of %llu thread-cycles, %llu at a cycle that "
		   "is not a multiple of %u, each a resident thread's PC and "
		   "stall reason", period, (unsigned long long)h.records,
		   (unsigned long long)h.lost,
		   (unsigned long long)st.thread_cycles,
		   (unsigned long long)bad, period);
	}

	l.trace_bytes = sizeof(h) + 10 * sizeof(struct npu_cu_trace_record) + 8;
	run_stats(0, &l, &st);
	buf_read(&tb, 0, &h, sizeof(h));
	ok(h.records == 10 && h.lost > 0 && st.trace_lost == h.lost,
	   "a full trace buffer keeps 10 records and counts %llu lost",
	   (unsigned long long)h.lost);

	/*
	 * A trace buffer whose mapping ends before trace_bytes: the record
	 * that reaches the unmapped page faults the launch there, and every
	 * record before it is in memory (records may reach memory in
	 * batches, but before the launch's end or fault).
	 */
	{
		struct buf tb2 = alloc_buf(2 * 4096, 0, 1);	/* then a guard */
		uint64_t whole = (2 * 4096 - sizeof(h)) /
				 sizeof(struct npu_cu_trace_record);
		struct pk p = { .n = 0 };
		uint64_t seen = 0;
		bool faulted;

		l.trace = tb2.va;
		l.trace_bytes = 4 * 4096;
		l.sample_period = 1;
		pk_launch_code(&p, &l);
		ring_submit(0, &p);
		faulted = expect_error(0, NPU_ERR_MMU_FAULT, tb2.va + 2 * 4096,
				       ~0u);
		for (i = 0; i < whole; i++) {
			struct npu_cu_trace_record r;

			buf_read(&tb2, sizeof(h) + i * sizeof(r), &r,
				 sizeof(r));
			seen += r.kind == NPU_CU_TRACE_SAMPLE &&
				r.pc >= DEVTEST_CODE_VA &&
				r.pc < DEVTEST_CODE_VA + 1024 &&
				r.thread < 16 && r.block < 16;
		}
		ok(faulted && seen == whole,
		   "a trace buffer mapped for 2 of its 4 pages: the launch "
		   "faults at the first unmapped byte, and the %llu records "
		   "before it are in memory (%llu are samples)",
		   (unsigned long long)whole, (unsigned long long)seen);
		ring_resume(0);
	}
}

/*
 * MMU_INVALIDATE and a ring's CONTROL.RESET hold the BQL until the units
 * let go of the ring (Documentation/hw/npu.rst, "Why resets and
 * MMU_INVALIDATE complete synchronously"). Worst case for the units:
 * every thread of every unit PC-sampled every cycle into a 64 MiB trace
 * buffer (8 * 16 * 4096 records a quantum, each written to guest memory).
 * How long a write waits depends on the host's scheduler, so the test
 * measures the work the units do meanwhile: one qtest batch (run under
 * the BQL, back to back) reads every unit's CU_CYCLES, writes the
 * register and reads them again. Letting go at the next instruction, the
 * units run a handful of cycles; waiting for the quantum's end, on
 * average half of 8 * 4096. A host that preempts QEMU's main thread
 * between the first reads and the write lets the units run on meanwhile
 * (about 400 unit-cycles a millisecond here), hence a bound of one unit's
 * quantum on the median. The wall time of each batch is reported too.
 */
#define BQL_WRITES	12
#define BQL_MAX_WORK	4096	/* unit-cycles: one unit's quantum */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Unit-cycles all units run while (reg := v) is written; *ns: batch time. */
static uint64_t work_during_write(unsigned ncu, uint32_t reg, uint32_t v,
				  uint64_t *ns)
{
	char text[8192];
	uint64_t vals[2 * 64] = { 0 }, before = 0, after = 0, t0;
	int n = 0;

	for (unsigned c = 0; c < ncu; c++)
		n += snprintf(text + n, sizeof(text) - n, "readq 0x%llx\n",
			      BAR0 + NPU_REG_CU_CYCLES_LO(c));
	n += snprintf(text + n, sizeof(text) - n, "writel 0x%llx 0x%x\n",
		      BAR0 + reg, v);
	for (unsigned c = 0; c < ncu; c++)
		n += snprintf(text + n, sizeof(text) - n, "readq 0x%llx\n",
			      BAR0 + NPU_REG_CU_CYCLES_LO(c));
	t0 = host_ns();
	if (qt_batch_vals(q, text, vals, 2 * ncu, 10000) != 2 * (int)ncu + 1)
		return UINT64_MAX;
	*ns = host_ns() - t0;
	for (unsigned c = 0; c < ncu; c++) {
		before += vals[c];
		after += vals[ncu + c];
	}
	return after - before;
}

static void test_bql_stalls(void)
{
	unsigned ncu = NPU_CAPS_CUS(rd(NPU_REG_CAPS));
	struct buf out = alloc_buf(16 * 64, 0, 1);
	struct buf tb = alloc_buf(64u << 20, 0, 1);
	struct buf sb = alloc_buf(sizeof(struct npu_launch_stats), 0, 1);
	struct launch l = { .grid = { ncu }, .block = { 16 }, .stack = 256,
			    .nargs = 2, .args = { 400000, out.va },
			    .trace = tb.va, .trace_bytes = 64u << 20,
			    .sample_period = 1 };
	uint64_t work[BQL_WRITES], ns[BQL_WRITES], rwork[4], rns[4];
	uint64_t max_ns = 0;
	struct npu_cu_trace_header h;
	bool running;

	load_kernel("spin", 0);
	submit_launch(0, &l, &sb);
	usleep(5000);
	for (int i = 0; i < BQL_WRITES; i++) {
		work[i] = work_during_write(ncu, NPU_REG_MMU_INVALIDATE,
					    NPU_MMU_INVALIDATE_ALL, &ns[i]);
		max_ns = MAX(max_ns, ns[i]);
		usleep(3000);
	}
	running = !(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
	qsort(work, BQL_WRITES, sizeof(work[0]), cmp_u64);
	qsort(ns, BQL_WRITES, sizeof(ns[0]), cmp_u64);
	ok(running && work[BQL_WRITES / 2] <= BQL_MAX_WORK,
	   "MMU_INVALIDATE while every thread of %u units is sampled every "
	   "cycle: the units run a median of %llu unit-cycles (max %llu) "
	   "during the write (bound %u); the write takes median %.2f ms, max "
	   "%.2f ms; the launch still runs: %s", ncu,
	   (unsigned long long)work[BQL_WRITES / 2],
	   (unsigned long long)work[BQL_WRITES - 1], BQL_MAX_WORK,
	   ns[BQL_WRITES / 2] / 1e6, max_ns / 1e6, running ? "yes" : "no");

	/*
	 * A ring reset cancels the launch; the write waits for that. Each
	 * round resets a fresh launch at another point of its first quanta,
	 * while its trace buffer still takes records.
	 */
	for (int i = 0; i < 4; i++) {
		if (i) {
			submit_launch(0, &l, &sb);
			usleep(3000 + 7000 * i);
		}
		running &= !(rrd(0, NPU_RING_STATUS) & NPU_RING_STS_IDLE);
		rwork[i] = work_during_write(ncu, NPU_RING_BASE(0) +
					     NPU_RING_CONTROL,
					     NPU_RING_CTL_RESET, &rns[i]);
		tail[0] = 0;
		ring_init(0);
		ring_ctx(0);
	}
	qsort(rwork, 4, sizeof(rwork[0]), cmp_u64);
	qsort(rns, 4, sizeof(rns[0]), cmp_u64);
	ok(running && rwork[2] <= BQL_MAX_WORK,
	   "CONTROL.RESET of the ring running that launch: the units run a "
	   "median of %llu unit-cycles (max %llu) during the write; it takes "
	   "median %.2f ms, max %.2f ms (4 resets)",
	   (unsigned long long)rwork[2], (unsigned long long)rwork[3],
	   rns[2] / 1e6, rns[3] / 1e6);

	/* the ring and the units work on after the reset */
	{
		struct npu_launch_stats st;
		uint64_t res[2 * 64];
		bool good;

		l.args[0] = 2000;
		l.trace_bytes = 1 << 20;
		memset(res, 0xff, sizeof(res));
		buf_write(&out, 0, res, 16 * ncu);
		good = run_stats(0, &l, &st);
		buf_read(&out, 0, res, 16 * ncu);
		buf_read(&tb, 0, &h, sizeof(h));
		for (unsigned b = 0; b < ncu; b++)
			good &= res[2 * b] < ncu && res[2 * b + 1] != ~0ull;
		ok(good && h.magic == NPU_CU_TRACE_MAGIC && h.records,
		   "after the reset the ring runs a sampled launch of %u "
		   "blocks (%llu samples)", ncu,
		   (unsigned long long)h.records);
	}
}

/* Device printf: records appended in order, a full buffer counts losses. */
static void test_printf(void)
{
	struct buf pb = alloc_buf(64 * 1024, 0, 1);
	struct npu_printf_header h;
	struct npu_launch_stats st;
	struct launch l = { .grid = { 4 }, .block = { 8 }, .stack = 256,
			    .printf_buf = pb.va, .printf_bytes = 64 * 1024 };
	unsigned seen[32] = { 0 }, n = 0;
	uint64_t off;
	bool good = true;

	load_kernel("printf", 1);
	run_stats(0, &l, &st);
	buf_read(&pb, 0, &h, sizeof(h));
	for (off = sizeof(h); off < sizeof(h) + h.used;) {
		struct npu_printf_record r;
		uint32_t rec[6];

		buf_read(&pb, off, &r, sizeof(r));
		buf_read(&pb, off + sizeof(r), rec, sizeof(rec));
		if (r.bytes != sizeof(r) + 24 || rec[0] != 24 ||
		    rec[1] != r.block || rec[2] != r.thread ||
		    rec[4] != (r.block * 8 + r.thread) * 10 ||
		    r.block >= 4 || r.thread >= 8) {
			good = false;
			break;
		}
		seen[r.block * 8 + r.thread]++;
		n++;
		off += r.bytes;
	}
	for (int i = 0; i < 32; i++)
		good &= seen[i] == 1;
	ok(good && n == 32 && !h.lost && st.printf_records == 32,
	   "printf: 32 threads' records, each once, with block and thread");

	l.printf_bytes = sizeof(h) + 5 * 40 + 39;
	run_stats(0, &l, &st);
	buf_read(&pb, 0, &h, sizeof(h));
	ok(h.used == 5 * 40 && h.lost == 27 && st.printf_lost == 27,
	   "printf into a buffer for 5 records: 5 kept, 27 counted lost "
	   "(used %u, lost %u)", h.used, h.lost);
}

/*
 * One multi-ring workload with timing=virtual: copies, built-in and user
 * kernels, semaphores between rings. Every ring first waits for a "go"
 * semaphore the host writes once everything is queued. Fills ts[] with
 * every timestamp; false if a ring did not finish.
 */
#define VT_TS 12

static bool vt_workload(uint64_t ts_out[VT_TS], uint64_t *cycles)
{
	struct buf ts = alloc_buf(4096, 0, 1), sem = alloc_buf(4096, 0, 1);
	struct buf h = alloc_buf(1 << 20, 0, 1), d = alloc_buf(1 << 20, 1, 1);
	struct buf a = alloc_buf(64 * 1024, 1, 1), out = alloc_buf(8192, 1, 1);
	struct buf sb = alloc_buf(4096, 0, 1);
	unsigned copy = NPU_CAPS_COMPUTE_RINGS(rd(NPU_REG_CAPS));
	struct launch mem = { .grid = { 4 }, .block = { 8 }, .stack = 64,
			      .stats = sb.va, .nargs = 4,
			      .args = { a.va, 100, 16 * 1024 - 1, out.va } };
	struct pk p;
	bool good = true;
	int r;

	load_kernel("memlat", 1);
	/* ring 0: copy, a diagnostic kernel's units, signal, user kernel */
	p.n = 0;
	pk_sem(&p, 1, sem.va, 1);
	pk_ts(&p, ts.va + 0 * 8);
	pk_copy(&p, h.va, d.va, 1 << 20);
	pk_ts(&p, ts.va + 1 * 8);
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 4, 50000);
	pk_ts(&p, ts.va + 2 * 8);
	pk_sem(&p, 0, sem.va + 4, 1);
	pk_launch_code(&p, &mem);
	pk_ts(&p, ts.va + 3 * 8);
	pk_fence(&p, ++seqno[0], fence_pa(0), 0);
	ring_submit(0, &p);
	/* ring 1: a spin on half the units, then wait for ring 0's signal */
	p.n = 0;
	pk_sem(&p, 1, sem.va, 1);
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 4, 100000);
	pk_ts(&p, ts.va + 4 * 8);
	pk_sem(&p, 1, sem.va + 4, 1);
	pk_ts(&p, ts.va + 5 * 8);
	pk_fill(&p, d.va, 1 << 16, 7);
	pk_ts(&p, ts.va + 6 * 8);
	pk_fence(&p, ++seqno[1], fence_pa(1), 0);
	ring_submit(1, &p);
	/* ring 2: a user kernel beside them */
	p.n = 0;
	pk_sem(&p, 1, sem.va, 1);
	mem.stats = 0;
	mem.args[3] = out.va + 4096;
	pk_launch_code(&p, &mem);
	pk_ts(&p, ts.va + 7 * 8);
	pk_fence(&p, ++seqno[2], fence_pa(2), 0);
	ring_submit(2, &p);
	/* a copy ring: two copies */
	p.n = 0;
	pk_sem(&p, 1, sem.va, 1);
	pk_copy(&p, d.va, h.va, 1 << 19);
	pk_ts(&p, ts.va + 8 * 8);
	pk_copy(&p, h.va, d.va + (1 << 19), 1 << 19);
	pk_ts(&p, ts.va + 9 * 8);
	pk_fence(&p, ++seqno[copy], fence_pa(copy), 0);
	ring_submit(copy, &p);

	usleep(20000);		/* let every ring block on "go" */
	qt_writel(q, buf_phys(&sem, 0), 1);
	for (r = 0; r < 3; r++)
		good &= completed(r);
	good &= completed(copy);
	buf_read(&ts, 0, ts_out, 10 * 8);
	ts_out[10] = rd(NPU_REG_CLOCK_LO);
	ts_out[10] |= (uint64_t)rd(NPU_REG_CLOCK_HI) << 32;
	ts_out[11] = qt_readl(q, buf_phys(&sem, 4));
	*cycles = read_stats(&sb).cycles;
	return good;
}

/* timing=virtual: device time is the model's, identical run after run. */
static void test_virtual_time(void)
{
	uint64_t first[VT_TS], ts[VT_TS], cyc0 = 0, cyc;
	bool same = true, good = true;
	int hogs[2] = { 0, 0 };

	for (int run = 0; run < 5; run++) {
		if (run == 3) {
			/* the host fully loaded by two busy processes */
			for (int i = 0; i < 2; i++) {
				hogs[i] = fork();
				if (hogs[i] == 0) {
					for (volatile unsigned long x = 0;; x++)
						;
				}
			}
		}
		start("timing=virtual", 0);
		good &= !!(rd(NPU_REG_FEATURES) & NPU_FEATURE_VIRTUAL_TIME);
		good &= vt_workload(ts, &cyc);
		stop("timing=virtual instance");
		if (run == 3) {
			for (int i = 0; i < 2; i++) {
				kill(hogs[i], SIGKILL);
				waitpid(hogs[i], NULL, 0);
			}
		}
		if (!run) {
			memcpy(first, ts, sizeof(ts));
			cyc0 = cyc;
			continue;
		}
		for (int i = 0; i < VT_TS; i++) {
			if (ts[i] != first[i]) {
				diag("run %d: timestamp %d is %llu, first run %llu",
				     run, i, (unsigned long long)ts[i],
				     (unsigned long long)first[i]);
				same = false;
			}
		}
		if (cyc != cyc0) {
			diag("run %d: the user kernel took %llu cycles, first "
			     "run %llu", run, (unsigned long long)cyc,
			     (unsigned long long)cyc0);
			same = false;
		}
	}
	for (int i = 0; i < 10; i++)
		diag("timestamp %d: %llu ns", i, (unsigned long long)first[i]);
	ok(good && same, "timing=virtual: 5 runs of a 4-ring workload (one "
	   "with the host loaded by 2 busy processes) give identical device "
	   "timestamps");
	/* the times are the model's: 1 MiB over a 4000 MB/s link + 2 us */
	ok(first[0] == 0 && first[1] - first[0] == 2000 + (1 << 20) / 4,
	   "timing=virtual: the 1 MiB copy takes exactly its modelled %d ns",
	   2000 + (1 << 20) / 4);
	/* ring 1 is released exactly when ring 0 signals */
	ok(first[5] == first[2] && first[5] >= first[4],
	   "timing=virtual: a SEM_WAIT ends at the signalling ring's time "
	   "(%llu = %llu)", (unsigned long long)first[5],
	   (unsigned long long)first[2]);
	/* a kernel that never ends: the ring reset still recovers it */
	start("timing=virtual", 0);
	{
		struct pk p = { .n = 0 };
		bool hung, idle, again;

		LAUNCH(&p, NPU_KERNEL_TEST_HANG, 2);
		ring_submit(0, &p);
		usleep(50000);
		hung = rrd(0, NPU_RING_STATUS) == NPU_RING_STS_ENABLED;
		ring_reset(0);
		idle = rrd(0, NPU_RING_STATUS) ==
		       (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED);
		p.n = 0;
		LAUNCH(&p, NPU_KERNEL_NOP, 8);
		again = ring_run(0, &p, 5000);
		ok(hung && idle && again, "timing=virtual: a hung kernel is "
		   "stopped by a ring reset, and the ring runs again");
	}
	stop("timing=virtual instance");
	ok(first[10] >= first[3] && first[10] >= first[9],
	   "timing=virtual: the device clock stands at the last completion "
	   "when idle (%llu ns)", (unsigned long long)first[10]);
}

/*
 * timing=virtual: launches queued back to back on one ring, with nothing
 * else on the device, each start when the ring reaches them (a timestamp
 * before each), not at the units' next quantum: the same launch gives the
 * same start delay and the same time every time, not a whole number of
 * quanta that depends on where the launch before it ended.
 */
#define VT_B2B 3

static void test_virtual_back_to_back(void)
{
	struct buf ts, a, out, sb[VT_B2B];
	struct launch mem = { .grid = { 1 }, .block = { 3 }, .stack = 64,
			      .nargs = 4 };
	struct npu_launch_stats st[VT_B2B];
	uint64_t t[VT_B2B + 1], delay[VT_B2B];
	bool same = true, done;
	struct pk p = { .n = 0 };
	int i;

	start("timing=virtual", 0);
	ts = alloc_buf(4096, 0, 1);
	a = alloc_buf(64 * 1024, 1, 1);
	out = alloc_buf(4096, 1, 1);
	load_kernel("memlat", 1);
	mem.args[0] = a.va;
	mem.args[1] = 37;
	mem.args[2] = 16 * 1024 - 1;
	mem.args[3] = out.va;
	for (i = 0; i < VT_B2B; i++) {
		sb[i] = alloc_buf(4096, 0, 1);
		mem.stats = sb[i].va;
		pk_ts(&p, ts.va + i * 8);
		pk_launch_code(&p, &mem);
	}
	pk_ts(&p, ts.va + VT_B2B * 8);
	done = ring_run(0, &p, 20000);
	buf_read(&ts, 0, t, sizeof(t));
	for (i = 0; i < VT_B2B; i++) {
		st[i] = read_stats(&sb[i]);
		delay[i] = st[i].start_ns - t[i];
		diag("launch %d: timestamp %llu, start %llu, end %llu ns, "
		     "%llu cycles", i, (unsigned long long)t[i],
		     (unsigned long long)st[i].start_ns,
		     (unsigned long long)st[i].end_ns,
		     (unsigned long long)st[i].cycles);
		if (delay[i] != delay[0] || st[i].cycles != st[0].cycles ||
		    t[i + 1] - t[i] != t[1] - t[0])
			same = false;
	}
	stop("timing=virtual instance");
	ok(done && same && st[0].cycles > 4096 && st[0].cycles % 4096 &&
	   delay[0] < 1000,
	   "timing=virtual: %d launches back to back on one ring each start "
	   "%llu ns after their timestamp and take the same %llu ns, not "
	   "rounded to quanta", VT_B2B, (unsigned long long)delay[0],
	   (unsigned long long)(t[1] - t[0]));
}

/*
 * timing=virtual: the clock waits for the host to settle, so work the host
 * queues in reaction to a completion interrupt starts at that completion,
 * even while another ring's long kernel would let the clock run ahead
 * (with vt-settle-us=0 it starts when the device saw it: after the kernel).
 */
static uint64_t vt_reaction(const char *devopts)
{
	uint64_t t[3] = { 0, 0, 0 };
	struct buf ts, sem;
	struct pk p;

	start(devopts, 0);
	ts = alloc_buf(4096, 0, 1);
	sem = alloc_buf(4096, 0, 1);
	/* ring 0: 50 ms of spin on half the units */
	p.n = 0;
	pk_sem(&p, 1, sem.va, 1);
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 4, 50000000);
	pk_ts(&p, ts.va + 0);
	pk_fence(&p, ++seqno[0], fence_pa(0), 0);
	ring_submit(0, &p);
	/* ring 1: 1 ms of spin, then a fence with an interrupt */
	p.n = 0;
	pk_sem(&p, 1, sem.va, 1);
	LAUNCH(&p, NPU_KERNEL_TEST_SPIN, 4, 1000000);
	pk_ts(&p, ts.va + 8);
	pk_fence(&p, ++seqno[1], fence_pa(1), 1);
	ring_submit(1, &p);
	usleep(20000);
	qt_writel(q, buf_phys(&sem, 0), 1);
	/* the host reacts to ring 1's interrupt: a timestamp on ring 2 */
	if (wait_msi(1, 10000) && completed(1)) {
		p.n = 0;
		pk_ts(&p, ts.va + 16);
		pk_fence(&p, ++seqno[2], fence_pa(2), 0);
		ring_submit(2, &p);
		completed(2);
	}
	completed(0);
	buf_read(&ts, 0, t, sizeof(t));
	stop("timing=virtual instance");
	diag("%s: ring 1 done at %llu ns, the host's reaction at %llu ns, "
	     "ring 0 done at %llu ns", devopts, (unsigned long long)t[1],
	     (unsigned long long)t[2], (unsigned long long)t[0]);
	return t[1] && t[2] == t[1] ? 0 : t[2] ? t[2] : UINT64_MAX;
}

static void test_virtual_settle(void)
{
	/*
	 * A settle time far above this program's reaction time, also on a
	 * loaded host: with the default 5 ms, a descheduled qtest reacted
	 * too late once while both cores were busy with builds and guests.
	 */
	uint64_t r = vt_reaction("timing=virtual,vt-settle-us=200000");

	ok(r == 0, "timing=virtual (settle time 200 ms): work queued in "
	   "reaction to an interrupt starts at the completion it followed, not "
	   "after another ring's 50 ms kernel");
	r = vt_reaction("timing=virtual,vt-settle-us=0");
	ok(r != 0 && r != UINT64_MAX, "timing=virtual,vt-settle-us=0: without "
	   "the settle time it starts later (%llu ns)", (unsigned long long)r);
}

/*
 * MMU_INVALIDATE covers blocks placed in the middle of a quantum. On two
 * units: E1 (ring 0, half the slots + 1) holds unit 0, F (ring 1, half)
 * unit 1; E2 (ring 2, like E1) fits nowhere and L (ring 3, one thread)
 * waits behind it. Ring 3 copied from X before L, so its TLB holds X's
 * page. The host unmaps X and writes MMU_INVALIDATE (ring 3 is in no
 * access: it returns at once), then gives X's page to someone else and
 * lets E1 end (E2 waits for the same flag): unit 0 becomes idle and the
 * refill of idle units puts E2 there in the same quantum; E2 ends at once
 * and L takes unit 0, idle again, in that quantum, or, when E2's end falls
 * in the next quantum, unit 1 (most free slots) at its start. Either way
 * L must fault on X, not use the old page.
 */
static void test_late_block_invalidate(void)
{
	struct buf flag, xb, copied, out;
	unsigned nthr, half, stale = 0;
	uint32_t pg[1024], one = 1, pat = 0x5e5e5e5e;
	uint64_t o[2] = { 0, 0 }, t0;
	struct pk p;
	bool copied_ok = false, waiting, faulted, others = true;
	int r;

	start("compute-units=2", 0);
	nthr = rd(NPU_REG_CU_THREADS);
	half = nthr / 2;
	load_kernel("mmu_late", 1);
	flag = alloc_buf(4096, 0, 1);
	xb = alloc_buf(4096, 0, 1);
	copied = alloc_buf(4096, 0, 1);
	out = alloc_buf(4096, 0, 1);
	qt_memset(q, flag.base, 0, 4096);
	qt_memset(q, xb.base, 0x42, 4096);
	qt_memset(q, out.base, 0xff, 4096);

	/* E1, F, E2 queue in that order; each mode-0 block waits for its flag */
	for (r = 0; r < 3; r++) {
		struct launch l = {
			.block = { r == 1 ? half : half + 1 }, .stack = 64,
			.nargs = 4, .args = { 0, 0, flag.va + 4 * (r == 1), 0 },
		};

		p.n = 0;
		pk_launch_code(&p, &l);
		pk_fence(&p, ++seqno[r], fence_pa(r), 0);
		ring_submit(r, &p);
		usleep(20000);
	}
	p.n = 0;
	pk_copy(&p, xb.va, copied.va, 4096);
	pk_launch_code(&p, &(struct launch){
		.block = { 1 }, .stack = 64, .nargs = 4,
		.args = { 1, xb.va, 0, out.va } });
	pk_fence(&p, ++seqno[3], fence_pa(3), 0);
	ring_submit(3, &p);
	for (t0 = host_ns(); host_ns() - t0 < 2000000000ull && !copied_ok;) {
		uint32_t w;

		buf_read(&copied, 4092, &w, 4);
		copied_ok = w == 0x42424242;
		usleep(1000);
	}
	usleep(20000);
	waiting = !(rrd(3, NPU_RING_STATUS) & NPU_RING_STS_IDLE);

	pt_map(xb.va, 0);
	pt_sync();
	wr(NPU_REG_MMU_INVALIDATE, CTX_ID);
	qt_memset(q, xb.base, 0x5e, 4096);	/* the page is someone else's */
	buf_write(&flag, 0, &one, 4);		/* E1 ends */

	faulted = expect_error(3, NPU_ERR_MMU_FAULT, xb.va, ~0u);
	buf_write(&flag, 4, &one, 4);		/* F ends */
	for (r = 0; r < 3; r++)
		others &= ring_wait(r, 20000) ==
			  (NPU_RING_STS_IDLE | NPU_RING_STS_ENABLED) &&
			  rrd(r, NPU_RING_FENCE) == seqno[r];
	buf_read(&out, 0, o, sizeof(o));
	qt_memread(q, xb.base, pg, 4096);
	for (unsigned i = 0; i < 1024; i++)
		stale += pg[i] != pat;
	ok(copied_ok && waiting && others && o[1] <= 1,
	   "late placement staged: ring 3 copied from X and its launch waited "
	   "behind two unit-filling ones; it was placed on unit %llu",
	   (unsigned long long)o[1]);
	ok(faulted && stale == 0 && o[0] == 0xffffffffffffffffull,
	   "a block placed mid-quantum after MMU_INVALIDATE faults on the "
	   "unmapped page (read 0x%llx, %u words of the freed page written)",
	   (unsigned long long)o[0], stale);
	stop("late-placement instance");
}
/*
 * timing=virtual: a launch queued while the units are awake with nothing
 * to do (they took their empty queue just after the launch before it
 * ended, and are about to go idle) is not lost. Ring 0's launch ends; the
 * host sees its statistics written and queues a launch on ring 1 at once,
 * while x-vt-cu-idle-delay-us holds the units in that window (ring 0 waits
 * for the clock, which the units hold). A lost launch leaves its ring
 * blocked for good: nothing else on the device moves the clock. The first
 * round's ring 0 launch comes while the units' first step (at start-up,
 * held as long) has yet to take the clock's lock: it must not be lost
 * either.
 */
#define VT_LOOK_ROUNDS 4

static void test_virtual_late_look(void)
{
	struct launch l = { .grid = { 1 }, .block = { 1 }, .stack = 64,
			    .nargs = 3 };
	struct npu_launch_stats st;
	struct buf out, sb;
	struct pk p;
	uint32_t got[2];
	uint64_t until;
	int i, done = 0;

	start("timing=virtual,vt-settle-us=0,x-vt-cu-idle-delay-us=200000", 0);
	out = alloc_buf(4096, 1, 1);
	sb = alloc_buf(4096, 0, 1);
	load_kernel("iota", 1);
	l.args[1] = 1;
	for (i = 0; i < VT_LOOK_ROUNDS; i++) {
		buf_write(&sb, 0, &(struct npu_launch_stats){ 0 }, sizeof(st));
		p.n = 0;
		l.args[0] = out.va;
		l.args[2] = 1000 + i;
		l.stats = sb.va;
		pk_launch_code(&p, &l);
		pk_fence(&p, ++seqno[0], fence_pa(0), 0);
		ring_submit(0, &p);
		until = host_ns() + 5000000000ull;
		do {
			st = read_stats(&sb);
		} while (!st.cycles && host_ns() < until);
		p.n = 0;
		l.args[0] = out.va + 4;
		l.stats = 0;
		pk_launch_code(&p, &l);
		if (!st.cycles) {
			diag("round %d: ring 0's launch did not end", i);
			break;
		}
		if (!ring_run(1, &p, 5000) || !completed(0)) {
			diag("round %d: ring 1's launch did not complete", i);
			break;
		}
		buf_read(&out, 0, got, sizeof(got));
		if (got[0] != 1000u + i || got[1] != 1000u + i)
			break;
		done++;
	}
	stop("timing=virtual instance");
	ok(done == VT_LOOK_ROUNDS,
	   "timing=virtual: a launch queued while the units are about to go "
	   "idle runs (%d of %d rounds)", done, VT_LOOK_ROUNDS);
}

/*
 * FAULT_ENTRY names the launched kernel of a unit fault (not the function
 * the PC is in): from the ring and from an IB, both launch forms; 0 for
 * any other halt and after a ring reset.
 */
static void test_fault_entry(void)
{
	const uint64_t unmapped = 0x2000000000ull;	/* below the code VA */
	struct launch l = {
		.grid = { 2 }, .block = { 4 }, .stack = 256, .nargs = 3,
		.args = { unmapped, 3, 7 },
	};
	struct buf ib = alloc_buf(4096, 0, 0);
	struct pk p, i;
	uint64_t entry, pc;
	bool good;

	load_kernel("iota", 0);

	p.n = 0;
	pk_launch_code(&p, &l);
	ring_submit(0, &p);
	good = expect_error(0, NPU_ERR_MMU_FAULT, ~0ull, NPU_OP_LAUNCH_CODE);
	entry = rrd64(0, NPU_RING_FAULT_ENTRY_LO);
	pc = rrd64(0, NPU_RING_FAULT_PC_LO);
	ok(good && entry == DEVTEST_CODE_VA && pc > entry,
	   "LAUNCH_CODE fault: FAULT_ENTRY 0x%llx is the launch's entry (want "
	   "0x%llx), FAULT_PC 0x%llx past it", (unsigned long long)entry,
	   (unsigned long long)DEVTEST_CODE_VA, (unsigned long long)pc);
	ring_resume(0);

	i.n = 0;
	pk_launch_code_short(&i, &l);
	buf_write(&ib, 0, i.dw, i.n * 4);
	p.n = 0;
	pk_ib(&p, ib.va, i.n * 4);
	ring_submit(0, &p);
	good = expect_error(0, NPU_ERR_MMU_FAULT, ~0ull,
			    NPU_OP_LAUNCH_CODE_SHORT | 0x100);
	entry = rrd64(0, NPU_RING_FAULT_ENTRY_LO);
	ok(good && entry == DEVTEST_CODE_VA,
	   "LAUNCH_CODE_SHORT fault in an IB: FAULT_ENTRY 0x%llx",
	   (unsigned long long)entry);
	ring_resume(0);

	p.n = 0;
	pk_dw(&p, NPU_PKT_HDR(0xee, 0, 1));
	ring_submit(0, &p);
	good = expect_error(0, NPU_ERR_BAD_OPCODE, ~0ull, ~0u);
	entry = rrd64(0, NPU_RING_FAULT_ENTRY_LO);
	ok(good && entry == 0,
	   "a halt that is no unit fault sets FAULT_ENTRY to 0 (0x%llx)",
	   (unsigned long long)entry);
	ring_resume(0);

	p.n = 0;
	pk_launch_code(&p, &l);
	ring_submit(0, &p);
	good = expect_error(0, NPU_ERR_MMU_FAULT, ~0ull, ~0u) &&
	       rrd64(0, NPU_RING_FAULT_ENTRY_LO) == DEVTEST_CODE_VA;
	wr(NPU_REG_ERR_PENDING, 1u << 0);
	ring_reset(0);
	entry = rrd64(0, NPU_RING_FAULT_ENTRY_LO);
	ok(good && entry == 0, "a ring reset clears FAULT_ENTRY (0x%llx)",
	   (unsigned long long)entry);
}

static void run_all(void)
{
	/* NPU_CUTEST=late_block_invalidate (or code_alias, late_look)
	 * runs only that test (debugging) */
	const char *only = getenv("NPU_CUTEST");

	if (only && strstr(only, "late_look")) {
		test_virtual_late_look();
		return;
	}

	if (only && strstr(only, "late_block_invalidate")) {
		test_late_block_invalidate();
		return;
	}
	if (only && strstr(only, "code_alias")) {
		start(NULL, 0);
		test_code_alias();
		stop("compute-unit instance");
		return;
	}
	start(NULL, 0);
	test_iota();
	test_code_alias();
	test_stall_reasons();
	test_occupancy_curve();
	test_deterministic();
	test_single_thread_path();
	test_dispatcher();
	test_shared_with_builtin();
	test_traces();
	test_printf();
	test_bql_stalls();
	test_fault_entry();
	stop("compute-unit instance");
	test_late_block_invalidate();
	test_virtual_time();
	test_virtual_back_to_back();
	test_virtual_settle();
	test_virtual_late_look();
}

int main(int argc, char **argv)
{
	return devtest_main(argc, argv, run_all);
}
