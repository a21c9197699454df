// SPDX-License-Identifier: MIT
/*
 * npu_kprofile.c - profiles of user kernels (Documentation/lib/profiling.rst):
 * while the profiler runs, each user-kernel launch (a stream launch, or a
 * kernel node of a graph launch) gets a statistics record
 * and a PC-sampling trace buffer (pinned memory, a pool); when a
 * synchronize or a query sees the launch complete, its counters are added
 * to its kernel's profile and its samples to per-source-line counts (the
 * code object's DWARF, through npu_module.c). npu_profile_report() prints
 * them; npu_profile_get_kernels() returns them.
 */
/* pthread_rwlock_t (the allocation tables' lock, npu_internal.h) */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npu_core.h"
#include "npu_json.h"
#include "npu_kprofile.h"
#include "npu_module.h"

#define NSLOTS		128
#define TRACE_BYTES	(64u << 10)
/* struct npu_launch_stats, then the tensor counters (NPU_CODE_STATS_TENSOR) */
#define STATS_BYTES	512u
#define SLOT_BYTES	(STATS_BYTES + TRACE_BYTES)
#define SAMPLE_PERIOD	997		/* cycles, prime: no aliasing with loops */
#define TRACE_RECORDS	((TRACE_BYTES - sizeof(struct npu_cu_trace_header)) / \
			 sizeof(struct npu_cu_trace_record))
#define MAX_KERNELS	256
#define MAX_LINES	64		/* hot-spot lines kept per kernel */

_Static_assert(sizeof(struct npu_launch_stats) +
	       sizeof(struct npu_launch_stats_tensor) <= STATS_BYTES, "stats slot");
_Static_assert(NPU_PROFILE_MMA_TYPES == NPU_MMA_TYPES, "npu.h mirrors npu_hw.h");
_Static_assert(NPU_PROFILE_STALLS == NPU_STALL_COUNT &&
	       NPU_PROFILE_SPACES == NPU_SPACE_COUNT, "npu.h mirrors npu_hw.h");

struct kslot {
	bool used, tracked;
	struct tl *tl;
	uint64_t point;
	int kernel;			/* index in kern[] */
	uint32_t period;		/* its sampling period */
};

struct line_count {
	char where[96];			/* "file.c:12" or "kernel+0x40" */
	uint64_t n;			/* thread-cycles: samples x period */
};

/* Samples by line, of whole launches or of launches whose trace buffer
 * filled up (those cover only the launch's first cycles). */
struct lines {
	struct line_count line[MAX_LINES];
	unsigned nlines;
	uint64_t total;			/* thread-cycles of all samples */
	uint64_t samples;
};

struct kern {
	npu_kernel_profile p;
	npu_kernel_roofline_profile r;
	uint64_t units_sum;		/* units each launch could use, summed */
	uint64_t l2_hit_sectors;	/* of the copies' reads, the L2's */
	double theor_sum;		/* theoretical occupancy x launches */
	struct lines whole, partial;
	uint32_t period;		/* sampling period of the next launch */
};

/* klock nests inside dev->lock; it protects everything below */
static pthread_mutex_t klock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct device *dev;
	uint32_t handle;
	uint8_t *map;
	uint64_t va;
	struct kslot slot[NSLOTS];
} pool;
static struct kern *kern;
static unsigned nkern;
static uint64_t unprofiled;		/* launches with no free slot */

static const char *const stall_names[NPU_PROFILE_STALLS] = {
	"selected", "not_selected", "wait", "short_scoreboard",
	"long_scoreboard", "math_pipe_throttle", "lg_throttle", "barrier",
	"branch_resolving",
};

const char *npu_profile_stall_name(unsigned int reason)
{
	return reason < NPU_PROFILE_STALLS ? stall_names[reason] : "?";
}

static int kern_index(const char *name, const char *module)
{
	unsigned i;

	for (i = 0; i < nkern; i++)
		if (!strcmp(kern[i].p.name, name) &&
		    !strcmp(kern[i].p.module, module))
			return (int)i;
	if (nkern == MAX_KERNELS)
		return -1;
	if (!kern) {
		kern = calloc(MAX_KERNELS, sizeof(*kern));
		if (!kern)
			return -1;
	}
	snprintf(kern[nkern].p.name, sizeof(kern[nkern].p.name), "%s", name);
	snprintf(kern[nkern].p.module, sizeof(kern[nkern].p.module), "%s", module);
	return (int)nkern++;
}

bool npu_kprofile_slot(struct device *dev, npu_function_t f,
		       unsigned block_threads, uint64_t scratch, int *slot,
		       uint64_t *stats_va, uint64_t *trace_va, uint32_t *trace_bytes,
		       uint32_t *period)
{
	unsigned i, per_unit, threads = dev->prop.unit_threads;
	int k;

	npu_kprofile_harvest(dev);
	pthread_mutex_lock(&klock);
	if (!pool.dev) {
		if (npu_host_bo(dev, (uint64_t)SLOT_BYTES * NSLOTS, &pool.handle,
				&pool.va, (void **)&pool.map)) {
			pthread_mutex_unlock(&klock);
			return false;
		}
		pool.dev = dev;
	}
	k = kern_index(f->desc.name, f->mod->name);
	for (i = 0; i < NSLOTS && pool.slot[i].used; i++)
		;
	if (pool.dev != dev || k < 0 || i == NSLOTS) {
		unprofiled++;
		pthread_mutex_unlock(&klock);
		return false;
	}
	/* the occupancy calculator's figure for this configuration */
	per_unit = threads / block_threads;
	if (scratch && dev->prop.unit_scratch_bytes / scratch < per_unit)
		per_unit = (unsigned)(dev->prop.unit_scratch_bytes / scratch);
	kern[k].theor_sum += threads ? (double)per_unit * block_threads / threads : 0;
	memset(pool.map + (size_t)i * SLOT_BYTES, 0, STATS_BYTES +
	       sizeof(struct npu_cu_trace_header));
	pool.slot[i].used = true;
	pool.slot[i].tracked = false;
	pool.slot[i].kernel = k;
	pool.slot[i].period = kern[k].period ? kern[k].period : SAMPLE_PERIOD;
	*slot = (int)i;
	*stats_va = pool.va + (uint64_t)i * SLOT_BYTES;
	*trace_va = *stats_va + STATS_BYTES;
	*trace_bytes = TRACE_BYTES;
	*period = pool.slot[i].period;
	pthread_mutex_unlock(&klock);
	return true;
}

void npu_kprofile_track(struct device *dev, int slot, struct tl *tl,
			uint64_t point)
{
	npu_on_complete(dev, npu_kprofile_harvest);	/* from now on */
	pthread_mutex_lock(&klock);
	tl->refs++;
	pool.slot[slot].tl = tl;
	pool.slot[slot].point = point;
	pool.slot[slot].tracked = true;
	pthread_mutex_unlock(&klock);
}

static void slot_free(struct device *dev, struct kslot *s)
{
	if (s->tl)
		npu_tl_put(dev, s->tl);
	memset(s, 0, sizeof(*s));
}

void npu_kprofile_cancel(struct device *dev, int slot)
{
	pthread_mutex_lock(&klock);
	slot_free(dev, &pool.slot[slot]);
	pthread_mutex_unlock(&klock);
}

static void add_sample(struct lines *ls, const char *where, uint32_t period)
{
	unsigned i;

	ls->total += period;
	ls->samples++;
	for (i = 0; i < ls->nlines; i++)
		if (!strcmp(ls->line[i].where, where)) {
			ls->line[i].n += period;
			return;
		}
	if (ls->nlines == MAX_LINES)
		return;			/* counted in total only */
	snprintf(ls->line[ls->nlines].where, sizeof(ls->line[0].where), "%s",
		 where);
	ls->line[ls->nlines++].n = period;
}

/*
 * The device samples every resident thread at each sample point and
 * keeps records until the buffer is full: with the period too short for
 * the launch, every record comes from its first few thousand cycles
 * (threads in the entry stub and index arithmetic), whatever the loop
 * does after. The next launch of the kernel gets the period that would
 * have filled half the buffer with this one's samples (its samples
 * spread over the whole launch); shorter launches bring it back down.
 */
static uint32_t next_period(uint32_t period, uint64_t wanted)
{
	uint64_t p = (uint64_t)period * wanted / (TRACE_RECORDS / 2);

	if (p < SAMPLE_PERIOD)
		return SAMPLE_PERIOD;
	if (p > UINT32_MAX)
		p = UINT32_MAX;
	return (uint32_t)p | 1;		/* odd: no aliasing with even loops */
}

/* The tensor counters of a completed launch. klock held. */
static void take_tensor(struct kern *k, const struct npu_launch_stats *st,
			const uint8_t *rec)
{
	struct npu_launch_stats_tensor t;
	npu_kernel_roofline_profile *r = &k->r;
	uint32_t units = pool.dev->prop.compute_units;
	unsigned i;

	memcpy(&t, rec, sizeof(t));
	r->launches++;
	k->units_sum += st->blocks < units || !units ? st->blocks : units;
	for (i = 0; i < NPU_MMA_TYPES; i++)
		r->mma[i] += t.mma[i];
	r->tensor_cycles += t.tensor_cycles;
	r->stall_mio_throttle += t.stall_mio_throttle;
	r->tdma_copies += t.tdma_copies;
	r->tdma_bytes_read += t.tdma_bytes_read;
	r->tdma_bytes_written += t.tdma_bytes_written;
	k->l2_hit_sectors += t.l2_hit_sectors;
}

/* Add a completed launch to its kernel's profile. klock held. */
static void take(struct kslot *s, const uint8_t *base)
{
	struct npu_launch_stats st;
	struct npu_cu_trace_header th;
	struct kern *k = &kern[s->kernel];
	npu_kernel_profile *p = &k->p;
	struct lines *lines;
	uint32_t period;
	uint64_t i, n;

	memcpy(&st, base, sizeof(st));
	if (!st.end_ns)
		return;			/* it failed: nothing was written */
	take_tensor(k, &st, base + sizeof(st));
	p->launches++;
	p->time_ms += (double)(st.end_ns - st.start_ns) / 1e6;
	p->cycles += st.cycles;
	p->instructions += st.instructions;
	p->blocks += st.blocks;
	p->thread_cycles += st.thread_cycles;
	p->unit_cycles += st.unit_cycles;
	for (i = 0; i < NPU_STALL_COUNT; i++)
		p->stall[i] += st.stall[i];
	for (i = 0; i < NPU_SPACE_COUNT; i++) {
		p->bytes_read[i] += st.bytes_read[i];
		p->bytes_written[i] += st.bytes_written[i];
	}
	memcpy(&th, base + STATS_BYTES, sizeof(th));
	if (th.magic != NPU_CU_TRACE_MAGIC ||
	    th.record_bytes != sizeof(struct npu_cu_trace_record))
		return;
	p->samples_lost += th.lost;
	n = th.records;
	if (n > TRACE_RECORDS)
		n = TRACE_RECORDS;
	period = s->period;
	lines = th.lost ? &k->partial : &k->whole;
	k->period = next_period(period, th.records + th.lost);
	for (i = 0; i < n; i++) {
		struct npu_cu_trace_record r;
		char where[96];

		memcpy(&r, base + STATS_BYTES + sizeof(th) + i * sizeof(r),
		       sizeof(r));
		if (r.kind != NPU_CU_TRACE_SAMPLE)
			continue;
		p->samples++;
		if (r.stall < NPU_STALL_COUNT)
			p->sample_stall[r.stall]++;
		npu_module_line(r.pc, where, sizeof(where));
		add_sample(lines, where, period);
	}
}

void npu_kprofile_harvest(struct device *dev)
{
	unsigned i;

	pthread_mutex_lock(&klock);
	for (i = 0; pool.dev == dev && i < NSLOTS; i++) {
		struct kslot *s = &pool.slot[i];

		if (!s->used || !s->tracked || !npu_tl_done(dev, s->tl, s->point))
			continue;
		take(s, pool.map + (size_t)i * SLOT_BYTES);
		slot_free(dev, s);
	}
	pthread_mutex_unlock(&klock);
}

static double model_ms(const npu_kernel_profile *p, const npu_device_prop *prop);

/*
 * The kernel's place on the roofline, from the counters alone: its FLOPs
 * are its MMAs' (2 x 4096 each), its bytes what the threads and the tile
 * DMA moved to and from device and host memory. The compute ceiling is
 * the rate of the kernel's own mix of MMA types on the units its launches
 * could use, the memory ceiling the device's bandwidth; both from the
 * device's properties.
 */
static void derive_roofline(struct kern *k, const npu_device_prop *prop)
{
	npu_kernel_roofline_profile *r = &k->r;
	const npu_kernel_profile *p = &k->p;
	double pipe_cycles = 0, macs = 0, units, secs;
	uint64_t l2_bytes;
	unsigned i;

	snprintf(r->name, sizeof(r->name), "%s", p->name);
	snprintf(r->module, sizeof(r->module), "%s", p->module);
	for (i = 0; i < NPU_MMA_TYPES; i++) {
		pipe_cycles += (double)r->mma[i] * NPU_MMA_CYCLES(i);
		macs += (double)r->mma[i] * NPU_MMA_MACS;
	}
	if (!macs) {			/* no MMA: the f32 ceiling */
		pipe_cycles = NPU_MMA_CYCLES(NPU_MMA_F32);
		macs = NPU_MMA_MACS;
	}
	r->flops = 0;
	for (i = 0; i < NPU_MMA_TYPES; i++)
		r->flops += 2 * r->mma[i] * NPU_MMA_MACS;
	/* what the L2 served never reached device memory */
	l2_bytes = k->l2_hit_sectors * 32;
	if (l2_bytes > r->tdma_bytes_read)
		l2_bytes = r->tdma_bytes_read;
	r->memory_bytes = p->bytes_read[NPU_SPACE_DEVICE] +
		p->bytes_written[NPU_SPACE_DEVICE] +
		p->bytes_read[NPU_SPACE_HOST] + p->bytes_written[NPU_SPACE_HOST] +
		r->tdma_bytes_read - l2_bytes + r->tdma_bytes_written;
	r->modelled_ms = model_ms(p, prop);
	secs = r->modelled_ms / 1e3;
	units = r->launches ? (double)k->units_sum / r->launches : 0;
	r->tensor_utilization = p->unit_cycles ?
		(double)r->tensor_cycles / p->unit_cycles : 0;
	r->dma_gbps = secs > 0 ? (r->tdma_bytes_read + r->tdma_bytes_written) /
		secs / 1e9 : 0;
	r->arithmetic_intensity = r->memory_bytes ?
		(double)r->flops / r->memory_bytes : 0;
	r->achieved_gflops = secs > 0 ? r->flops / secs / 1e9 : 0;
	r->peak_gflops = 2 * macs / pipe_cycles * prop->unit_clock_mhz *
		units / 1e3;
	r->peak_gbps = prop->mem_bw_mbps / 1e3;
	r->ridge = r->peak_gbps > 0 ? r->peak_gflops / r->peak_gbps : 0;
	r->peak_fraction = r->peak_gflops > 0 ?
		r->achieved_gflops / r->peak_gflops : 0;
	/* no memory traffic at all: nothing but the pipe can bound it */
	r->compute_bound = r->flops && (!r->memory_bytes ||
					r->arithmetic_intensity >= r->ridge);
}

static bool uses_tensor(const npu_kernel_roofline_profile *r)
{
	return r->tensor_cycles || r->tdma_copies;
}

/* Derived figures of a profile. */
static void derive(struct kern *k, const npu_device_prop *prop)
{
	npu_kernel_profile *p = &k->p;
	uint64_t mem, cmp;

	p->ipc = p->unit_cycles ? (double)p->instructions / p->unit_cycles : 0;
	p->achieved_occupancy = p->unit_cycles && prop->unit_threads ?
		(double)p->thread_cycles / ((double)p->unit_cycles *
					    prop->unit_threads) : 0;
	p->theoretical_occupancy = p->launches ? k->theor_sum / p->launches : 0;
	mem = p->stall[NPU_STALL_LONG_SCOREBOARD] + p->stall[NPU_STALL_LG_THROTTLE];
	cmp = p->stall[NPU_STALL_WAIT] + p->stall[NPU_STALL_MATH_PIPE_THROTTLE] +
	      p->stall[NPU_STALL_SELECTED] + p->stall[NPU_STALL_NOT_SELECTED];
	p->memory_bound = mem > cmp;
	derive_roofline(k, prop);
	if (uses_tensor(&k->r))		/* its counters place it */
		p->memory_bound = !k->r.compute_bound;
}

/* The walk both getters share: harvest, derive each profiled kernel's
 * figures (its roofline alone, or all of them) and copy the profile or its
 * roofline side into out[0..*count) (out may be NULL to ask for the
 * number); *count becomes the number of profiled kernels. */
static npu_status_t collect(void *out, size_t *count, bool roofline)
{
	struct device *dev;
	npu_status_t st;
	size_t i, n;

	if (!count)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "count is NULL");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	pthread_mutex_lock(&dev->lock);
	npu_kprofile_harvest(dev);
	pthread_mutex_lock(&klock);
	n = 0;
	for (i = 0; i < nkern; i++) {
		if (!kern[i].p.launches)
			continue;
		if (roofline)
			derive_roofline(&kern[i], &dev->prop);
		else
			derive(&kern[i], &dev->prop);
		if (out && n < *count) {
			if (roofline)
				((npu_kernel_roofline_profile *)out)[n] =
					kern[i].r;
			else
				((npu_kernel_profile *)out)[n] = kern[i].p;
		}
		n++;
	}
	pthread_mutex_unlock(&klock);
	pthread_mutex_unlock(&dev->lock);
	*count = n;
	return NPU_SUCCESS;
}

npu_status_t npu_profile_get_kernels(npu_kernel_profile *out, size_t *count)
{
	return collect(out, count, false);
}

npu_status_t npu_profile_get_roofline(npu_kernel_roofline_profile *out,
				      size_t *count)
{
	return collect(out, count, true);
}

static int cmp_lines(const void *a, const void *b)
{
	const struct line_count *x = a, *y = b;

	return x->n < y->n ? 1 : x->n > y->n ? -1 : strcmp(x->where, y->where);
}

/* The lines with the most sampled thread-cycles: of whole launches, or
 * if the buffer filled in every launch, of their beginnings (said so). */
static void hot_spots(FILE *f, struct kern *k)
{
	struct lines *ls = k->whole.samples ? &k->whole : &k->partial;
	unsigned j;

	if (!ls->samples)
		return;
	qsort(ls->line, ls->nlines, sizeof(ls->line[0]), cmp_lines);
	fprintf(f, "    hot spots (%" PRIu64 " PC samples", ls->samples);
	if (ls == &k->partial)
		fprintf(f, " of the launches' first cycles only: %" PRIu64
			" did not fit; the next launch samples every %u "
			"cycles", k->p.samples_lost, k->period);
	fprintf(f, "):");
	for (j = 0; j < ls->nlines && j < 5; j++)
		fprintf(f, " %s %.1f%%", ls->line[j].where,
			100.0 * ls->line[j].n / ls->total);
	fprintf(f, "\n");
}

/* A profile's device time in the model: its unit cycles at the unit
 * clock, in ms. */
static double model_ms(const npu_kernel_profile *p, const npu_device_prop *prop)
{
	unsigned mhz = prop->unit_clock_mhz ? prop->unit_clock_mhz : 1000;

	return (double)p->cycles / (mhz * 1e3);
}

/* Measured device time beyond the model by more than this fraction: the
 * host interpreted the units slower than the model (timing=on paces the
 * units to wall time, never faster than the model, but cannot make the
 * host faster). Under timing=virtual the two agree. */
#define HOST_BOUND_TOLERANCE	0.01

static bool host_bound(const npu_kernel_profile *p, const npu_device_prop *prop)
{
	double m = model_ms(p, prop);

	return m > 0 && p->time_ms > m * (1 + HOST_BOUND_TOLERANCE);
}

/* How to get the model's times: printed with each notice. */
#define TIMING_VIRTUAL_HINT \
	"run the device with timing=virtual (npu-run --timing virtual; " \
	"QEMU -device npu,timing=virtual)"

bool npu_kprofile_host_bound(struct device *dev, double *measured_ms,
			     double *modelled_ms)
{
	unsigned i;

	*measured_ms = *modelled_ms = 0;
	pthread_mutex_lock(&dev->lock);
	npu_kprofile_harvest(dev);
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_lock(&klock);
	for (i = 0; i < nkern; i++) {
		const npu_kernel_profile *p = &kern[i].p;

		if (!p->launches || !host_bound(p, &dev->prop))
			continue;
		*measured_ms += p->time_ms;
		*modelled_ms += model_ms(p, &dev->prop);
	}
	pthread_mutex_unlock(&klock);
	return *measured_ms > 0;
}

/* The tensor engine's lines of a kernel's report: nothing for a kernel
 * that used neither the tensor pipe nor the tile DMA. */
static void report_roofline(FILE *f, struct kern *k)
{
	static const char *const type[NPU_MMA_TYPES] = {
		"f16", "bf16", "f32", "s8", "s32",
	};
	npu_kernel_roofline_profile *r = &k->r;
	unsigned i;

	if (!uses_tensor(r))
		return;
	fprintf(f, "\n    tensor pipe: %.1f%% of unit cycles busy, MMAs:",
		100 * r->tensor_utilization);
	for (i = 0; i < NPU_MMA_TYPES; i++)
		if (r->mma[i])
			fprintf(f, " %s %" PRIu64, type[i], r->mma[i]);
	fprintf(f, "\n    tile DMA: %" PRIu64 " copies, %" PRIu64 " bytes in (%"
		PRIu64 " sectors from the L2), %" PRIu64 " bytes out, %.3f "
		"GB/s\n", r->tdma_copies, r->tdma_bytes_read, k->l2_hit_sectors,
		r->tdma_bytes_written, r->dma_gbps);
	fprintf(f, "    roofline: %.2f FLOP/byte (ridge %.2f), %.3f GFLOP/s of "
		"%.3f peak (%.1f%%), memory ceiling %.3f GB/s: %s",
		r->arithmetic_intensity, r->ridge, r->achieved_gflops,
		r->peak_gflops, 100 * r->peak_fraction, r->peak_gbps,
		r->compute_bound ? "compute-bound" : "memory-bound");
}

void npu_kprofile_report(struct device *dev, FILE *f)
{
	unsigned i, j;

	pthread_mutex_lock(&dev->lock);
	npu_kprofile_harvest(dev);
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_lock(&klock);
	if (!nkern) {
		pthread_mutex_unlock(&klock);
		return;
	}
	fprintf(f, "user kernels (per kernel, all its profiled launches):\n");
	for (i = 0; i < nkern; i++) {
		struct kern *k = &kern[i];
		npu_kernel_profile *p = &k->p;
		uint64_t stalled = 0, dev_bytes, order[NPU_STALL_COUNT];
		double mms;

		if (!p->launches)
			continue;
		derive(k, &dev->prop);
		dev_bytes = p->bytes_read[NPU_SPACE_DEVICE] +
			    p->bytes_written[NPU_SPACE_DEVICE];
		mms = model_ms(p, &dev->prop);
		fprintf(f, "  %s (%s): %" PRIu64 " launch(es), %.3f ms, %" PRIu64
			" blocks, %" PRIu64 " instructions\n", p->name, p->module,
			p->launches, p->time_ms, p->blocks, p->instructions);
		fprintf(f, "    device time: %.3f ms measured, %.3f ms modelled "
			"(%" PRIu64 " unit cycles at %u MHz)\n", p->time_ms, mms,
			p->cycles, dev->prop.unit_clock_mhz ?
			dev->prop.unit_clock_mhz : 1000);
		if (host_bound(p, &dev->prop))
			fprintf(f, "    host-bound: the launches took %.1fx their "
				"modelled time: the host interpreted the units "
				"slower than the model, so the measured device "
				"time (and events around these launches) is the "
				"host's; for the model's times " TIMING_VIRTUAL_HINT
				"\n", p->time_ms / mms);
		fprintf(f, "    occupancy: theoretical %.1f%%, achieved %.1f%%; "
			"IPC %.3f per unit\n", 100 * p->theoretical_occupancy,
			100 * p->achieved_occupancy, p->ipc);
		fprintf(f, "    memory: device %.3f GB/s (%" PRIu64 " bytes), host "
			"%" PRIu64 " bytes, scratchpad %" PRIu64 " bytes\n",
			mms > 0 ? dev_bytes / (mms * 1e6) : 0.0,
			dev_bytes, p->bytes_read[NPU_SPACE_HOST] +
			p->bytes_written[NPU_SPACE_HOST],
			p->bytes_read[NPU_SPACE_SCRATCH] +
			p->bytes_written[NPU_SPACE_SCRATCH]);
		for (j = 0; j < NPU_STALL_COUNT; j++) {
			stalled += p->stall[j];
			order[j] = j;
		}
		for (j = 1; j < NPU_STALL_COUNT; j++)	/* by thread-cycles */
			for (unsigned q = j; q && p->stall[order[q]] >
			     p->stall[order[q - 1]]; q--) {
				uint64_t t = order[q];

				order[q] = order[q - 1];
				order[q - 1] = t;
			}
		stalled += k->r.stall_mio_throttle;
		fprintf(f, "    thread-cycles:");
		for (j = 0; j < NPU_STALL_COUNT && p->stall[order[j]]; j++)
			fprintf(f, " %s %.1f%%", stall_names[order[j]],
				stalled ? 100.0 * p->stall[order[j]] / stalled : 0.0);
		if (k->r.stall_mio_throttle)
			fprintf(f, " mio_throttle %.1f%%", 100.0 *
				k->r.stall_mio_throttle / stalled);
		report_roofline(f, k);
		if (uses_tensor(&k->r))
			fprintf(f, "\n    verdict: %s (roofline: arithmetic "
				"intensity %s the ridge point)\n", p->memory_bound ?
				"memory-bound" : "compute-bound", p->memory_bound ?
				"below" : "at or above");
		else
			fprintf(f, "\n    verdict: %s\n", p->memory_bound ?
				"memory-bound (waiting for device or host "
				"memory: long_scoreboard + lg_throttle exceed "
				"issue and arithmetic)" : "compute-bound (issue: "
				"selected + not_selected, and arithmetic "
				"dependencies exceed memory waits)");
		hot_spots(f, k);
	}
	if (unprofiled)
		fprintf(f, "  (%" PRIu64 " launch(es) not profiled: every "
			"statistics buffer was in use)\n", unprofiled);
	pthread_mutex_unlock(&klock);
}

void npu_kprofile_reset(void)
{
	unsigned i;

	/* keep the names: launches still in flight refer to them */
	pthread_mutex_lock(&klock);
	for (i = 0; i < nkern; i++) {
		struct kern *k = &kern[i];
		npu_kernel_profile keep = k->p;
		uint32_t period = k->period;

		memset(k, 0, sizeof(*k));
		memcpy(k->p.name, keep.name, sizeof(keep.name));
		memcpy(k->p.module, keep.module, sizeof(keep.module));
		k->period = period;	/* what launches of it need */
	}
	unprofiled = 0;
	pthread_mutex_unlock(&klock);
}

/* ------------------------------------------------------------------------
 * Instruction trace of one block, as Chrome/Perfetto JSON.
 */
#define ITRACE_RECORDS	65536u
#define PC_CACHE	1024

struct pc_line {
	uint64_t pc;
	bool valid;
	char where[96];
};

/* s as the body of a JSON string (quotes, backslashes, controls escaped) */
static npu_status_t itrace_json(const char *path, const uint8_t *buf,
				uint64_t n, double mhz, const char *kernel,
				unsigned trace_block)
{
	const struct npu_cu_trace_record *r = (const void *)buf;
	uint64_t *next = malloc((n ? n : 1) * sizeof(*next));
	struct pc_line *cache = calloc(PC_CACHE, sizeof(*cache));
	uint64_t later[NPU_CODE_MAX_THREADS];
	bool named[NPU_CODE_MAX_THREADS];
	char lane[160];
	FILE *f;
	uint64_t i;

	if (!next || !cache) {
		free(next);
		free(cache);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "trace");
	}
	/* each instruction lasts until its thread's next issue (one block:
	 * one unit, threads < NPU_CODE_MAX_THREADS) */
	for (i = 0; i < NPU_CODE_MAX_THREADS; i++)
		later[i] = UINT64_MAX;
	for (i = n; i-- > 0;) {
		unsigned t = r[i].thread % NPU_CODE_MAX_THREADS;

		next[i] = later[t] == UINT64_MAX ? r[i].cycle + 1 : later[t];
		later[t] = r[i].cycle;
	}
	f = fopen(path, "w");
	if (!f) {
		free(next);
		free(cache);
		return npu_fail(NPU_ERROR_OS, "%s: %s", path, strerror(errno));
	}
	memset(named, 0, sizeof(named));
	fprintf(f, "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
	for (i = 0; i < n; i++) {
		unsigned t = r[i].thread % NPU_CODE_MAX_THREADS;

		if (named[t])
			continue;
		named[t] = true;
		snprintf(lane, sizeof(lane), "unit %u, %s block %u thread %u", r[i].unit,
			 kernel, trace_block, r[i].thread);
		fprintf(f, "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %u, "
			"\"tid\": %u, \"args\": {\"name\": ", r[i].unit, r[i].thread);
		npu_json_put_string(f, lane);
		fputs("}},\n", f);
	}
	for (i = 0; i < n; i++) {
		/* loops repeat PCs: a small direct-mapped cache of lines */
		struct pc_line *c = &cache[(r[i].pc >> 2) % PC_CACHE];

		if (!c->valid || c->pc != r[i].pc) {
			npu_module_line(r[i].pc, c->where, sizeof(c->where));
			c->pc = r[i].pc;
			c->valid = true;
		}
		fprintf(f, "{\"name\": ");
		npu_json_put_string(f, c->where);
		fprintf(f, ", \"ph\": \"X\", \"pid\": %u, \"tid\": %u, \"ts\": "
			"%.4f, \"dur\": %.4f, \"args\": {\"cycle\": %" PRIu64
			", \"pc\": \"0x%" PRIx64 "\", \"insn\": \"0x%08x\", "
			"\"addr\": \"0x%" PRIx64 "\"}}%s\n", r[i].unit, r[i].thread,
			r[i].cycle / mhz, (next[i] - r[i].cycle) / mhz, r[i].cycle,
			r[i].pc, r[i].insn, r[i].addr, i + 1 < n ? "," : "");
	}
	fprintf(f, "]}\n");
	free(next);
	free(cache);
	if (fclose(f))
		return npu_fail(NPU_ERROR_OS, "%s: %s", path, strerror(errno));
	return NPU_SUCCESS;
}

npu_status_t npu_kernel_trace(npu_function_t f, npu_dim3 grid, npu_dim3 block,
			      unsigned int scratch_bytes, void **args,
			      unsigned int trace_block, const char *json_path,
			      uint64_t *instructions, uint64_t *lost)
{
	uint64_t bytes, n;
	struct npu_pkt_launch_code extra;
	struct npu_cu_trace_header th;
	struct npu_stream *s;
	struct device *dev;
	npu_status_t st;
	uint8_t *buf = NULL;
	void *dbuf = NULL;
	double mhz;

	if (!json_path)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "json_path is NULL");
	st = npu_ukernel_prepare(f, grid, block, scratch_bytes, args);
	if (st)
		return st;
	/* a legacy-stream launch, then a device synchronize: refused where a
	 * capture forbids them (stream capture hook, npu_core.h) */
	if (npu_capturing() && npu_capture()->uncaptured(NULL, true, &st))
		return st;
	if ((uint64_t)trace_block >= (uint64_t)grid.x * grid.y * grid.z)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "trace_block %u: the grid "
				"has %llu blocks", trace_block,
				(unsigned long long)grid.x * grid.y * grid.z);
	bytes = sizeof(th) + (uint64_t)ITRACE_RECORDS *
		sizeof(struct npu_cu_trace_record);
	st = npu_host_alloc((void **)&buf, bytes, 0);
	if (!st)
		st = npu_host_get_device_pointer(&dbuf, buf, 0);
	if (!st)
		st = npu_get_stream(NULL, &dev, &s);
	if (st)
		goto out;
	memset(buf, 0, sizeof(th));
	memset(&extra, 0, sizeof(extra));
	extra.flags = NPU_CODE_ITRACE;
	extra.trace = (uint64_t)(uintptr_t)dbuf;
	extra.trace_bytes = (uint32_t)bytes;
	extra.trace_block = trace_block;
	pthread_mutex_lock(&dev->lock);
	st = dev->sticky ? npu_fail_sticky(dev, dev->sticky) :
	     npu_ukernel_submit(dev, s, f, grid, block, scratch_bytes, args,
				&extra, NULL);
	pthread_mutex_unlock(&dev->lock);
	if (!st)
		st = npu_device_synchronize();
	if (st)
		goto out;
	memcpy(&th, buf, sizeof(th));
	if (th.magic != NPU_CU_TRACE_MAGIC ||
	    th.record_bytes != sizeof(struct npu_cu_trace_record)) {
		st = npu_fail(NPU_ERROR_LAUNCH_FAILURE, "no instruction trace "
			      "was written");
		goto out;
	}
	n = th.records < ITRACE_RECORDS ? th.records : ITRACE_RECORDS;
	mhz = dev->prop.unit_clock_mhz ? dev->prop.unit_clock_mhz : 1000;
	st = itrace_json(json_path, buf + sizeof(th), n, mhz, f->desc.name,
			 trace_block);
	if (!st && instructions)
		*instructions = n;
	if (!st && lost)
		*lost = th.lost;
out:
	if (buf)
		npu_host_free(buf);
	return st;
}
