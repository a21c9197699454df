/* SPDX-License-Identifier: MIT */
/*
 * lib_roofline: the profiler's tensor counters and roofline
 * (npu_profile_get_roofline, the report's tensor lines) for the kernels of
 * kernels/roofline.c, one thread each: the counters of `counted` as
 * counted by hand (MMAs by type, tensor-pipe cycles from the spec's
 * occupancy table, DMA copies and bytes), the stall sum with mio_throttle
 * complete, the ceilings from the device's properties; then `mma_loop`
 * (one tile pair, many MMAs) is compute-bound and `stream` (many tiles, one
 * MMA) memory-bound, in npu_profile_get_kernels() and in the report.
 */
#include "tap.h"

#include <stdbool.h>

#define CELLS	256
#define SCRATCH	(8 + 3 * CELLS * 4)
#define LOOP_MMAS	64
#define STREAM_TILES	64

static npu_kernel_roofline_profile *find_roof(npu_kernel_roofline_profile *r,
					      size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(r[i].name, name))
			return &r[i];
	return NULL;
}

int main(void)
{
	npu_device_prop prop;
	npu_module_t m;
	npu_function_t counted, loop, stream;
	npu_kernel_roofline_profile roof[8], *rc, *rl, *rs;
	npu_kernel_profile prof[8], *pc, *pl, *ps;
	float ha[CELLS], hb[CELLS], hc[CELLS];
	float *a, *b, *c, *big;
	unsigned nloop = LOOP_MMAS, nstream = STREAM_TILES;
	size_t nr = 8, np = 8;
	uint64_t sum = 0;
	bool ok = true;
	char *rep, *sec;
	double f32_peak;

	tap_need_user_module(&prop, &m, "kernels/roofline.npu");
	MUST(npu_module_get_function(&counted, m, "counted"));
	MUST(npu_module_get_function(&loop, m, "mma_loop"));
	MUST(npu_module_get_function(&stream, m, "stream"));
	for (unsigned i = 0; i < CELLS; i++) {	/* small integers: exact */
		ha[i] = (float)((int)(i % 7) - 3);
		hb[i] = (float)((int)(i % 5) - 2);
	}
	MUST(npu_malloc((void **)&a, sizeof(ha)));
	MUST(npu_malloc((void **)&b, sizeof(hb)));
	MUST(npu_malloc((void **)&c, sizeof(hc)));
	MUST(npu_malloc((void **)&big, STREAM_TILES * sizeof(ha)));
	MUST(npu_memcpy(a, ha, sizeof(ha), NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memcpy(b, hb, sizeof(hb), NPU_MEMCPY_HOST_TO_DEVICE));
	MUST(npu_memset(big, 0, STREAM_TILES * sizeof(ha)));

	MUST(npu_profiler_start());
	{
		void *args[] = { &a, &b, &c };
		void *largs[] = { &a, &b, &c, &nloop };
		void *sargs[] = { &big, &b, &c, &nstream };
		npu_dim3 one = { 1, 1, 1 };

		MUST(npu_launch_kernel(counted, one, one, SCRATCH, NULL, args));
		MUST(npu_device_synchronize());
		MUST(npu_memcpy(hc, c, sizeof(hc), NPU_MEMCPY_DEVICE_TO_HOST));
		MUST(npu_launch_kernel(loop, one, one, SCRATCH, NULL, largs));
		MUST(npu_launch_kernel(stream, one, one, SCRATCH, NULL, sargs));
		MUST(npu_device_synchronize());
	}
	MUST(npu_profiler_stop());
	for (unsigned i = 0; i < 16 && ok; i++)
		for (unsigned j = 0; j < 16 && ok; j++) {
			float s = 0;

			for (unsigned k = 0; k < 16; k++)
				s += ha[i * 16 + k] * hb[k * 16 + j];
			ok = hc[i * 16 + j] == s;
		}
	tap_ok(ok, "counted computed C = A x B through DMA and the tensor "
	       "engine");

	MUST(npu_profile_get_kernels(prof, &np));
	MUST(npu_profile_get_roofline(roof, &nr));
	tap_ok(nr == np, "one roofline profile per kernel profile (%zu, %zu)",
	       nr, np);
	pc = tap_find_kernel(prof, np, "counted");
	pl = tap_find_kernel(prof, np, "mma_loop");
	ps = tap_find_kernel(prof, np, "stream");
	rc = find_roof(roof, nr, "counted");
	rl = find_roof(roof, nr, "mma_loop");
	rs = find_roof(roof, nr, "stream");
	if (!pc || !pl || !ps || !rc || !rl || !rs) {
		tap_ok(0, "the three kernels were profiled");
		return tap_done();
	}

	/* by hand: 1 f32 and 2 bf16 MMAs; the pipe is busy 64 + 2 x 16
	 * cycles (npu.rst's occupancy table); two 1 KiB tiles in, one out */
	tap_ok(rc->launches == 1 && rc->mma[2] == 1 && rc->mma[1] == 2 &&
	       !rc->mma[0] && !rc->mma[3] && !rc->mma[4],
	       "counted: MMAs f16 %llu bf16 %llu f32 %llu s8 %llu s32 %llu "
	       "(want 0 2 1 0 0)", (unsigned long long)rc->mma[0],
	       (unsigned long long)rc->mma[1], (unsigned long long)rc->mma[2],
	       (unsigned long long)rc->mma[3], (unsigned long long)rc->mma[4]);
	tap_ok(rc->tensor_cycles == 96, "counted: tensor pipe busy %llu "
	       "cycles (want 96)", (unsigned long long)rc->tensor_cycles);
	tap_ok(rc->tdma_copies == 3 && rc->tdma_bytes_read == 2048 &&
	       rc->tdma_bytes_written == 1024, "counted: %llu copies, %llu "
	       "bytes in, %llu out (want 3, 2048, 1024)",
	       (unsigned long long)rc->tdma_copies,
	       (unsigned long long)rc->tdma_bytes_read,
	       (unsigned long long)rc->tdma_bytes_written);
	tap_ok(rc->flops == 3 * 2 * 4096 && rc->memory_bytes == 3072 +
	       pc->bytes_read[2] + pc->bytes_written[2] + pc->bytes_read[3] +
	       pc->bytes_written[3], "counted: %llu FLOP (want 24576) over %llu "
	       "memory bytes", (unsigned long long)rc->flops,
	       (unsigned long long)rc->memory_bytes);
	for (unsigned i = 0; i < NPU_PROFILE_STALLS; i++)
		sum += pc->stall[i];
	tap_ok(rc->stall_mio_throttle > 0 &&
	       sum + rc->stall_mio_throttle == pc->thread_cycles,
	       "counted: the second TLOAD waited for the tile port "
	       "(mio_throttle %llu), and the stall reasons sum to the "
	       "thread-cycles (%llu + %llu = %llu)",
	       (unsigned long long)rc->stall_mio_throttle,
	       (unsigned long long)sum,
	       (unsigned long long)rc->stall_mio_throttle,
	       (unsigned long long)pc->thread_cycles);
	tap_ok(rc->tensor_utilization > 0 && rc->tensor_utilization <= 1 &&
	       fabs(rc->tensor_utilization * pc->unit_cycles - 96) < 1e-6,
	       "counted: tensor pipe utilization %.4f = 96 / %llu unit cycles",
	       rc->tensor_utilization, (unsigned long long)pc->unit_cycles);

	/* one unit, f32 only: 64 MAC per cycle (npu.rst, Roofline ceilings) */
	f32_peak = 2.0 * 64 * prop.unit_clock_mhz / 1e3;
	tap_ok(fabs(rl->peak_gflops - f32_peak) < 1e-9 * f32_peak &&
	       fabs(rl->peak_gbps - prop.mem_bw_mbps / 1e3) < 1e-9,
	       "ceilings from the device: %.3f GFLOP/s (f32, 1 unit at %u MHz), "
	       "%.3f GB/s (want %.3f and %u MB/s)", rl->peak_gflops,
	       prop.unit_clock_mhz, rl->peak_gbps, f32_peak, prop.mem_bw_mbps);
	tap_ok(rl->mma[2] == LOOP_MMAS && rl->compute_bound && !pl->memory_bound &&
	       rl->arithmetic_intensity > rl->ridge,
	       "mma_loop is compute-bound: %.1f FLOP/byte, ridge %.1f, %.1f%% "
	       "of peak", rl->arithmetic_intensity, rl->ridge,
	       100 * rl->peak_fraction);
	tap_ok(rs->tdma_bytes_read == (STREAM_TILES + 1) * 1024ull &&
	       !rs->compute_bound && ps->memory_bound &&
	       rs->arithmetic_intensity < rs->ridge,
	       "stream is memory-bound: %.3f FLOP/byte, ridge %.1f, DMA %.3f "
	       "GB/s", rs->arithmetic_intensity, rs->ridge, rs->dma_gbps);
	tap_ok(rs->dma_gbps > 0 && rs->dma_gbps <= rs->peak_gbps * 1.000001,
	       "stream's DMA throughput %.3f GB/s is within the memory ceiling "
	       "%.3f GB/s", rs->dma_gbps, rs->peak_gbps);

	rep = tap_profile_report();
	sec = tap_profile_section(rep, "mma_loop");
	tap_diag("%s", sec ? sec : "(no mma_loop section)");
	tap_ok(sec && strstr(sec, "tensor pipe: ") && strstr(sec, "tile DMA: ") &&
	       strstr(sec, ": compute-bound") &&
	       strstr(sec, "verdict: compute-bound (roofline"),
	       "the report places mma_loop on the roofline: compute-bound");
	free(sec);
	sec = tap_profile_section(rep, "stream");
	tap_diag("%s", sec ? sec : "(no stream section)");
	tap_ok(sec && strstr(sec, ": memory-bound") &&
	       strstr(sec, "verdict: memory-bound (roofline") &&
	       strstr(sec, "mio_throttle"),
	       "the report places stream on the roofline: memory-bound, with "
	       "its mio_throttle stalls (more copies than DMA slots)");
	free(sec);
	free(rep);
	MUST(npu_module_unload(m));
	return tap_done();
}
