// SPDX-License-Identifier: MIT
/*
 * npu-isabench: how fast the compute units interpret RISC-V (make bench).
 * One thread of one block runs a compute-bound loop (kernels/bench_compute.h)
 * with the cycle model on; the same C runs natively on the host in the same
 * process. Prints JSON: isa_mips (instructions retired per host second) and
 * isa_native_ratio (native time / device time for the same work), each the
 * median of the trials; isa_mips_16t, the same for 16 threads of one block
 * sharing the work (the scheduler's path for several live threads);
 * isa_mips_sampled, one thread PC-sampled every 64 cycles (an eighth of the
 * work, so that every sample fits the trace buffer); isa_host_bound, the
 * fraction of the one-thread launch's device time that the interpreter,
 * not the cycle model, set (the units are paced to cu-clock-mhz, so the
 * model alone would take cycles / clock); and the occupancy
 * curve: IPC of one unit running a
 * latency-bound kernel (kernels/memlat.c) with 1, 2, 4, 8 and 16 resident
 * threads, next to the model's bound (memory queue / latency).
 * Usage: npu-isabench <qemu-system-x86_64> [trials]
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devlib.h"
#include "kernels/bench_compute.h"

#define N_DEVICE	4000000ul
#define N_NATIVE	400000000ul
#define SAMPLE_PERIOD	64
#define SAMPLE_BYTES	(8ul << 20)	/* 40 B per sample of N_DEVICE / 8 */

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int trials = argc > 2 ? atoi(argv[2]) : 5;
	double mips[32], mips16[32], mipss[32], ratio[32], bound[32], dev_s = 0;
	double clock_hz;
	double nat_s = 0;
	uint64_t instr = 0, cycles = 0;
	unsigned curve_t[16], curve_n = 0;
	double curve_ipc[16], curve_bound = 0;

	if (argc < 2 || trials < 1 || trials > 32) {
		fprintf(stderr, "usage: %s <qemu-system-x86_64> [trials]\n",
			argv[0]);
		return 2;
	}
	qemu_bin = argv[1];
	set_kernel_dir(argv[0]);
	start(NULL, 0);
	load_kernel("bench_compute", 1);
	clock_hz = rd(NPU_REG_CU_CLOCK_MHZ) * 1e6;
	for (int t = 0; t < trials; t++) {
		struct buf out = alloc_buf(4096, 1, 1);
		struct buf sb = alloc_buf(4096, 0, 1);
		struct launch l = { .stack = 64, .stats = sb.va, .nargs = 3,
				    .args = { out.va, N_DEVICE, 12345 + t } };
		struct npu_launch_stats st;
		struct pk p = { .n = 0 };
		uint64_t t0, t1, got;
		volatile unsigned long want;

		pk_launch_code(&p, &l);
		t0 = host_ns();
		if (!ring_run(0, &p, 120000)) {
			fprintf(stderr, "npu-isabench: the launch failed\n");
			return 1;
		}
		t1 = host_ns();
		buf_read(&sb, 0, &st, sizeof(st));
		buf_read(&out, 0, &got, 8);
		dev_s = (t1 - t0) / 1e9;
		instr = st.instructions;
		cycles = st.cycles;
		if (got != bench_compute(N_DEVICE, 12345 + t)) {
			fprintf(stderr, "npu-isabench: device result differs\n");
			return 1;
		}
		t0 = host_ns();
		want = bench_compute(N_NATIVE, 12345 + t);
		t1 = host_ns();
		(void)want;
		nat_s = (t1 - t0) / 1e9 * N_DEVICE / N_NATIVE;
		mips[t] = instr / dev_s / 1e6;
		ratio[t] = nat_s / dev_s;
		bound[t] = 1 - cycles / clock_hz / dev_s;
		if (bound[t] < 0)
			bound[t] = 0;
	}
	/* 16 threads of one unit, each a sixteenth of the work */
	for (int t = 0; t < trials; t++) {
		struct buf out = alloc_buf(4096, 1, 1);
		struct buf sb = alloc_buf(4096, 0, 1);
		struct launch l = { .block = { 16 }, .stack = 64,
				    .stats = sb.va, .nargs = 3,
				    .args = { out.va, N_DEVICE / 16, 777 + t } };
		struct npu_launch_stats st;
		struct pk p = { .n = 0 };
		uint64_t t0, t1, got[16];

		pk_launch_code(&p, &l);
		t0 = host_ns();
		if (!ring_run(0, &p, 120000)) {
			fprintf(stderr, "npu-isabench: the 16-thread launch "
				"failed\n");
			return 1;
		}
		t1 = host_ns();
		buf_read(&sb, 0, &st, sizeof(st));
		buf_read(&out, 0, got, sizeof(got));
		for (int i = 0; i < 16; i++) {
			if (got[i] != bench_compute(N_DEVICE / 16, 777 + t)) {
				fprintf(stderr, "npu-isabench: device result "
					"differs (16 threads)\n");
				return 1;
			}
		}
		mips16[t] = st.instructions / ((t1 - t0) / 1e9) / 1e6;
	}
	/* one thread, PC-sampled */
	for (int t = 0; t < trials; t++) {
		struct buf out = alloc_buf(4096, 1, 1);
		struct buf sb = alloc_buf(4096, 0, 1);
		struct buf tb = alloc_buf(SAMPLE_BYTES, 0, 1);
		struct launch l = { .stack = 64, .stats = sb.va, .nargs = 3,
				    .trace = tb.va, .trace_bytes = SAMPLE_BYTES,
				    .sample_period = SAMPLE_PERIOD,
				    .args = { out.va, N_DEVICE / 8, 99 + t } };
		struct npu_launch_stats st;
		struct pk p = { .n = 0 };
		uint64_t t0, t1, got;

		pk_launch_code(&p, &l);
		t0 = host_ns();
		if (!ring_run(0, &p, 120000)) {
			fprintf(stderr, "npu-isabench: the sampled launch "
				"failed\n");
			return 1;
		}
		t1 = host_ns();
		buf_read(&sb, 0, &st, sizeof(st));
		buf_read(&out, 0, &got, 8);
		if (got != bench_compute(N_DEVICE / 8, 99 + t) ||
		    st.trace_lost ||
		    st.trace_records < st.cycles / SAMPLE_PERIOD) {
			fprintf(stderr, "npu-isabench: sampled launch: result "
				"differs or samples missing (%llu, %llu lost)\n",
				(unsigned long long)st.trace_records,
				(unsigned long long)st.trace_lost);
			return 1;
		}
		mipss[t] = st.instructions / ((t1 - t0) / 1e9) / 1e6;
	}
	/* the occupancy curve */
	{
		struct buf a = alloc_buf(64 * 1024, 1, 1);
		struct buf out = alloc_buf(8 * 1024, 1, 1);
		struct buf sb = alloc_buf(4096, 0, 1);
		unsigned nthr = rd(NPU_REG_CU_THREADS);

		load_kernel("memlat", 1);
		for (unsigned t = 1; t <= nthr && t <= 64; t *= 2) {
			struct launch l = { .block = { t }, .stack = 64,
					    .stats = sb.va, .nargs = 4,
					    .args = { a.va, 200, 16 * 1024 - 1,
						      out.va } };
			struct npu_launch_stats st;
			struct pk p = { .n = 0 };

			pk_launch_code(&p, &l);
			if (!ring_run(0, &p, 120000)) {
				fprintf(stderr, "npu-isabench: memlat failed\n");
				return 1;
			}
			buf_read(&sb, 0, &st, sizeof(st));
			curve_t[curve_n] = t;
			curve_ipc[curve_n] = (double)st.instructions / st.cycles;
			curve_bound = (double)st.instructions / (t * 200) * 8 / 120;
			curve_n++;
		}
	}
	qt_quit(q);
	fprintf(stderr, "npu-isabench: %llu instructions, %llu cycles, %.3f s "
		"on the device, %.5f s native\n", (unsigned long long)instr,
		(unsigned long long)cycles, dev_s, nat_s);
	printf("{\"isa_mips\": {\"median\": %.2f, \"trials\": %d, \"what\": "
	       "\"RISC-V instructions retired per host second, one thread, "
	       "cycle model on\"}, \"isa_mips_16t\": {\"median\": %.2f, "
	       "\"trials\": %d, \"what\": \"the same, 16 threads of one "
	       "block on one unit\"}, "
	       "\"isa_mips_sampled\": {\"median\": %.2f, \"trials\": %d, "
	       "\"what\": \"the same, one thread PC-sampled every %d "
	       "cycles\"}, "
	       "\"isa_native_ratio\": {\"median\": %.5f, "
	       "\"what\": \"native host time / device interpretation time "
	       "for the same C\"}, \"isa_host_bound\": {\"median\": %.4f, "
	       "\"trials\": %d, \"what\": \"fraction of the one-thread "
	       "launch's device time set by the interpreter, not the cycle "
	       "model (%.0f MHz, %.0f M instructions/s at its IPC)\"}, "
	       "\"occupancy_curve\": {\"what\": \"IPC of "
	       "one unit on a latency-bound kernel by resident threads\", "
	       "\"bound\": %.4f, \"points\": [", median(mips, trials), trials,
	       median(mips16, trials), trials, median(mipss, trials), trials,
	       SAMPLE_PERIOD, median(ratio, trials), median(bound, trials),
	       trials, clock_hz / 1e6, clock_hz * instr / cycles / 1e6,
	       curve_bound);
	for (unsigned i = 0; i < curve_n; i++)
		printf("%s[%u, %.4f]", i ? ", " : "", curve_t[i], curve_ipc[i]);
	printf("]}}\n");
	return 0;
}
