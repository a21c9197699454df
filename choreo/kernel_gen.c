// SPDX-License-Identifier: MIT
/*
 * kernel_gen.c - kernel C for npu-cc. Each block-level parallel becomes
 * an NPU_KERNEL whose arguments are the host values its body captures
 * (scalars by value; spanned data as its device pointer followed by its
 * dimensions that are not compile-time constants). Blocks of the grid are
 * the outer level, threads of a block the inner `: thread` level. shared
 * data lives in the block's scratchpad (the launch's dynamic scratchpad),
 * local data in C arrays on the thread's stack.
 */
#include <string.h>

#include "device_code.h"
#include "diag.h"
#include "emit.h"
#include "kernel_gen.h"

int kernel_args(const struct kernel *k, const char *types[], const char *names[],
		char buf[][96], int max)
{
	int i, d, n = 0;
	long long v;

	for (i = 0; i < k->ncaps && n < max; i++) {
		const struct sym *s = k->caps[i];

		if (s->type.kind == TY_SPAN) {
			snprintf(buf[n], sizeof(buf[n]), "%s *", elem_ctype(s->type.elem));
			types[n] = buf[n];
			names[n++] = s->cname;
			for (d = 0; d < s->type.rank && n < max; d++) {
				if (span_dim_const(s, d, &v))
					continue;
				snprintf(buf[n], sizeof(buf[n]), "%s_d%d", s->cname, d);
				types[n] = "unsigned long";
				names[n] = buf[n];
				n++;
			}
		} else {
			types[n] = c_scalar_type(s->type.elem);
			names[n++] = s->cname;
		}
	}
	return n;
}

/* bind the names of one level from a linear index: row-major over the
 * extents, as Choreo's {i, j} by [m, n] */
static void emit_level_names(struct emitter *em, const struct node *par,
			     const char *linear)
{
	struct node **names, **extents;
	int nnames, nextents, i, k;

	parby_parts(par, &names, &nnames, &extents, &nextents);
	for (i = 0; i < nnames; i++) {
		emit_indent(em);
		fprintf(em->o, "const int %s = (int)((%s)", names[i]->sym->cname, linear);
		for (k = i + 1; k < nextents; k++) {
			fputs(" / (unsigned long)(", em->o);
			emit_expr(em, extents[k]);
			fputc(')', em->o);
		}
		if (nextents > 1) {
			fputs(" % (unsigned long)(", em->o);
			emit_expr(em, extents[nnames > 1 ? i : 0]);
			fputc(')', em->o);
		}
		fprintf(em->o, ");\n");
		emit_indent(em);
		fprintf(em->o, "(void)%s;\n", names[i]->sym->cname);
	}
}

static void emit_extent_product(struct emitter *em, const struct node *par)
{
	struct node **names, **extents;
	int nnames, nextents, i;

	parby_parts(par, &names, &nnames, &extents, &nextents);
	fputs("((unsigned long)1", em->o);
	for (i = 0; i < nextents; i++) {
		fputs(" * (unsigned long)(", em->o);
		emit_expr(em, extents[i]);
		fputc(')', em->o);
	}
	fputc(')', em->o);
}

/* Each thread takes the indices npu_thread_index() + k * block size of a
 * thread level: the host launches at most a block of threads (fewer than
 * the level when it is larger than the device allows, and the kernel has
 * no barrier or return inside that would need every index in a thread of
 * its own). */
static void emit_thread_loop(struct emitter *em, const struct node *par)
{
	fputs("for (unsigned long npu__t = npu_thread_index(); npu__t < ", em->o);
	emit_extent_product(em, par);
	fputs("; npu__t += npu_block_threads()) {\n", em->o);
}

/* where a yield goes: the end of the thread's current index */
static void emit_yield_label(struct emitter *em, const struct node *par)
{
	if (!par->yields)
		return;
	emit_indent(em);
	fprintf(em->o, "npu__yield_%d_%d: ;\n", par->loc.line, par->loc.col);
}

/* a thread level's body split at its barriers (sema.c: split_point): one
 * loop over the level per part, the barrier between them; its shared
 * data placed before them */
static void emit_split_loops(struct emitter *em, const struct node *par)
{
	const struct node *body = par->kids[2];
	FILE *o = em->o;
	int i;

	for (i = 0; i < body->nkids; i++)
		if (split_hoisted(body->kids[i]))
			emit_stmt(em, body->kids[i]);
	emit_indent(em);
	emit_thread_loop(em, par);
	em->indent++;
	emit_level_names(em, par, "npu__t");
	for (i = 0; i < body->nkids; i++) {
		const struct node *s = body->kids[i];

		if (split_hoisted(s))
			continue;
		if (!(s->split && s->kind == N_SYNC))
			emit_stmt(em, s);
		if (!s->split || i == body->nkids - 1)
			continue;
		em->indent--;
		emit_indent(em);
		fputs("}\n", o);
		emit_indent(em);
		fputs("npu_barrier();\n", o);
		emit_indent(em);
		emit_thread_loop(em, par);
		em->indent++;
		emit_level_names(em, par, "npu__t");
	}
	em->indent--;
	emit_indent(em);
	fputs("}\n", o);
}

void kernel_emit_thread_parallel(struct emitter *em, const struct node *par)
{
	FILE *o = em->o;

	/* what the block did before is visible to the threads, and what they
	 * did to the block after */
	fputs("{\n", o);
	em->indent++;
	emit_indent(em);
	fputs("npu_barrier();\n", o);
	if (par->splits) {
		emit_split_loops(em, par);
	} else {
		emit_indent(em);
		emit_thread_loop(em, par);
		em->indent++;
		emit_level_names(em, par, "npu__t");
		emit_block(em, par->kids[2]);
		emit_yield_label(em, par);
		em->indent--;
		emit_indent(em);
		fputs("}\n", o);
	}
	emit_indent(em);
	fputs("npu_barrier();\n", o);
	em->indent--;
	emit_indent(em);
	fputs("}\n", o);
}

/* the bytes of shared data sized by host values */
void kernel_emit_dyn_bytes(struct emitter *em, const struct sym *s)
{
	int k;

	fprintf(em->o, "(unsigned long)%zu", (size_t)elem_size(s->type.elem));
	for (k = 0; k < s->type.rank; k++) {
		fputs(" * (unsigned long)(", em->o);
		emit_expr(em, s->type.dims[k]);
		fputc(')', em->o);
	}
}

/* a thread level's shared data with {init}, set when the kernel starts */
static void emit_shared_init(struct emitter *em, const struct node *d)
{
	const struct sym *s = d->sym;
	FILE *o = em->o;
	int k;

	fputs("\t\tfor (long long i_ = 0; i_ < 1", o);
	for (k = 0; k < s->type.rank; k++) {
		fputs(" * (long long)(", o);
		emit_expr(em, s->type.dims[k]);
		fputc(')', o);
	}
	fputs("; i_++)\n", o);
	if (s->shared_offset < 0)
		fprintf(o, "\t\t\t((%s *)(npu__scratch + npu__off_%s))[i_] = ",
			elem_ctype(s->type.elem), s->cname);
	else
		fprintf(o, "\t\t\t((%s *)(npu__scratch + %ld))[i_] = ",
			elem_ctype(s->type.elem), s->shared_offset);
	emit_stored(em, s->type.elem, d->kids[0]);
	fputs(";\n", o);
}

/* shared data sized by host values: its dimensions as the names .at()
 * checks against (emit_dim), its place from the kernel's start */
static void emit_dyn_shared_decl(struct emitter *em, const struct node *d)
{
	const struct sym *s = d->sym;
	FILE *o = em->o;
	long long v;
	int k;

	for (k = 0; k < s->type.rank; k++) {
		if (span_dim_const(s, k, &v))
			continue;
		fprintf(o, "const long long %s_d%d = (long long)(", s->cname, k);
		emit_expr(em, s->type.dims[k]);
		fputs(");\n", o);
		emit_indent(em);
		fprintf(o, "(void)%s_d%d;\n", s->cname, k);
		emit_indent(em);
	}
	if (s->dyn_local) {
		/* this thread's copy */
		fprintf(o, "%s *const %s = (%s *)(npu__scratch + npu__off_%s + "
			"npu_thread_index() * ((", elem_ctype(s->type.elem), s->cname,
			elem_ctype(s->type.elem), s->cname);
		kernel_emit_dyn_bytes(em, s);
		fputs(" + 15) & ~15UL));\n", o);
	} else {
		fprintf(o, "%s *const %s = (%s *)(npu__scratch + npu__off_%s);\n",
			elem_ctype(s->type.elem), s->cname, elem_ctype(s->type.elem), s->cname);
	}
	emit_indent(em);
	fprintf(o, "(void)%s;\n", s->cname);
	if (d->nkids && !s->init_hoisted) {
		emit_indent(em);
		fputs("for (long long i_ = 0; i_ < 1", o);
		for (k = 0; k < s->type.rank; k++) {
			fputs(" * ", o);
			emit_dim(em, s, k);
		}
		fputs("; i_++)\n", o);
		emit_indent(em);
		fprintf(o, "\t%s[i_] = ", s->cname);
		emit_stored(em, s->type.elem, d->kids[0]);
		fputs(";\n", o);
	}
}

void kernel_emit_span_decl(struct emitter *em, const struct node *d)
{
	const struct sym *s = d->sym;
	FILE *o = em->o;
	long long count = 1, v;
	int k;

	if ((s->storage == ST_SHARED && s->shared_offset < 0) || s->dyn_local) {
		emit_dyn_shared_decl(em, d);
		return;
	}

	for (k = 0; k < s->type.rank; k++) {
		span_dim_const(s, k, &v);
		count *= v;
	}
	if (s->storage == ST_SHARED)
		fprintf(o, "%s *const %s = (%s *)(npu__scratch + %ld);\n",
			elem_ctype(s->type.elem), s->cname, elem_ctype(s->type.elem),
			s->shared_offset);
	else
		fprintf(o, "%s %s[%lld];\n", elem_ctype(s->type.elem), s->cname, count);
	emit_indent(em);
	fprintf(o, "(void)%s;\n", s->cname);
	if (d->nkids && !s->init_hoisted) {
		emit_indent(em);
		fprintf(o, "for (long i_ = 0; i_ < %lld; i_++)\n", count);
		emit_indent(em);
		fprintf(o, "\t%s[i_] = ", s->cname);
		emit_stored(em, s->type.elem, d->kids[0]);
		fputs(";\n", o);
	}
}

static void emit_kernel(FILE *o, struct kernel *k, int index)
{
	struct emitter em = { .o = o, .device = true, .kernel = k,
			      .kernel_index = index, .indent = 1 };
	const char *types[NPU_MAX_KERNEL_ARGS], *names[NPU_MAX_KERNEL_ARGS];
	char buf[NPU_MAX_KERNEL_ARGS][96];
	int n, i;
	long stack = 0, frag_bytes = 0;

	n = kernel_args(k, types, names, buf, NPU_MAX_KERNEL_ARGS);
	for (i = 0; i < k->nfrags; i++)
		if (frag_in_memory(k, i))
			frag_bytes += 4L * frag_cells(k, i);
	k->local_bytes += frag_bytes;
	if (k->local_bytes) {
		stack = (k->local_bytes + 8192 + 4095) & ~4095L;
		if (stack > 64 * 1024 && frag_bytes)
			diag_error(k->par->loc, "not supported yet: %ld bytes of local "
				   "data per thread (%ld of them mma fragments larger "
				   "than a tile, held in the thread's memory)",
				   k->local_bytes, frag_bytes);
		if (stack > 64 * 1024)
			diag_error(k->par->loc, "not supported yet: %ld bytes of local "
				   "data per thread", k->local_bytes);
	}
	emit_line(&em, k->par->loc);
	fprintf(o, "NPU_KERNEL_EX(%s, 0, 0, %ld", k->name, stack);
	for (i = 0; i < n; i++)
		fprintf(o, ", (%s, %s)", types[i], names[i]);
	fputs(")\n{\n", o);
	if (k->shared_bytes || k->ndyn_shared)
		fputs("\tchar *const npu__scratch = (char *)npu_scratch();\n", o);
	for (i = 0; i < n; i++)
		fprintf(o, "\t(void)%s;\n", names[i]);
	/* fragments larger than a tile: a cell per element, as in a tile
	 * register (emit.c's emit_mma) */
	for (i = 0; i < k->nfrags; i++)
		if (frag_in_memory(k, i))
			fprintf(o, "\tunion { float f; int32_t i; uint16_t h; int8_t b; } "
				"npu__frag%d[%ld];\n", i, frag_cells(k, i));
	/* events: counters of published generations in the scratchpad, set
	 * (1 for `= ready`) before any thread can trigger or wait; each
	 * thread counts its own waits */
	for (i = 0; i < k->nevents; i++) {
		const struct sym *s = k->events[i];

		fprintf(o, "\tunsigned *const %s = (unsigned *)(npu__scratch + %ld);\n",
			s->cname, s->shared_offset);
		fprintf(o, "\tunsigned %s_gen[%ld] = { 0 };\n\t(void)%s_gen;\n",
			s->cname, s->event_slots, s->cname);
	}
	/* global events: their counters are the host's; each thread of
	 * this launch counts its own waits */
	for (i = 0; i < k->ncaps; i++)
		if (k->caps[i]->kind == SY_EVENT)
			fprintf(o, "\tunsigned %s_gen[%ld] = { 0 };\n\t(void)%s_gen;\n",
				k->caps[i]->cname, k->caps[i]->event_slots,
				k->caps[i]->cname);
	/* tile DMA futures: copies issued (each thread its own count) and
	 * counted (the barrier word, zero before any copy names it) */
	for (i = 0; i < k->ntdma; i++) {
		fprintf(o, "\tunsigned npu__tc_%s = 0;\n\t(void)npu__tc_%s;\n",
			k->tdma[i]->cname, k->tdma[i]->cname);
		fprintf(o, "\tif (npu_thread_index() == 0)\n\t\t((struct npu_tdma_barrier *)"
			"(npu__scratch + %ldUL))->count = 0;\n", k->tdma[i]->shared_offset);
	}
	if (k->nevents) {
		fputs("\tif (npu_thread_index() == 0) {\n", o);
		for (i = 0; i < k->nevents; i++)
			fprintf(o, "\t\tfor (int i_ = 0; i_ < %ld; i_++)\n\t\t\t%s[i_] = %d;\n",
				k->events[i]->event_slots, k->events[i]->cname,
				k->events[i]->event_ready);
		fputs("\t}\n\tnpu_barrier();\n", o);
	}
	/* shared data sized by host values: after the rest, in order, as
	 * the launch counted them (host_gen.c) */
	if (k->ndyn_shared) {
		fprintf(o, "\tunsigned long npu__dyn = %ldUL;\n", (k->shared_bytes + 15) & ~15L);
		for (i = 0; i < k->ndyn_shared; i++) {
			fprintf(o, "\tconst unsigned long npu__off_%s = npu__dyn;\n",
				k->dyn_shared[i]->cname);
			fputs("\tnpu__dyn = (npu__dyn + ", o);
			if (k->dyn_shared[i]->dyn_local) {
				/* a copy a thread */
				fputs("((", o);
				kernel_emit_dyn_bytes(&em, k->dyn_shared[i]);
				fputs(" + 15) & ~15UL) * npu_block_threads()", o);
			} else {
				kernel_emit_dyn_bytes(&em, k->dyn_shared[i]);
			}
			fputs(" + 15) & ~15UL;\n", o);
		}
		fputs("\t(void)npu__dyn;\n", o);
	}
	if (k->nshared_inits) {
		fputs("\tif (npu_thread_index() == 0) {\n", o);
		em.indent = 2;
		for (i = 0; i < k->nshared_inits; i++)
			emit_shared_init(&em, k->shared_inits[i]);
		em.indent = 1;
		fputs("\t}\n\tnpu_barrier();\n", o);
	}
	if (k->grid_is_threads && k->par->splits) {
		emit_split_loops(&em, k->par);
	} else if (k->grid_is_threads) {
		/* one block whose threads are this level */
		fputs("\t", o);
		emit_thread_loop(&em, k->par);
		em.indent++;
		emit_level_names(&em, k->par, "npu__t");
		emit_block(&em, k->par->kids[2]);
		emit_yield_label(&em, k->par);
		em.indent--;
		fputs("\t}\n", o);
	} else {
		emit_level_names(&em, k->par, "npu_block_index()");
		emit_block(&em, k->par->kids[2]);
	}
	fputs("}\n\n", o);
}

void kernel_gen(FILE *o, struct program *prog)
{
	int i;

	fputs("/* generated by npu-choreo: the device kernels */\n"
	      "#include <npu_kernel.h>\n"
	      "#include <math.h>\n#include <stdint.h>\n#include <npu_half.h>\n\n"
	      "/* an out-of-bounds index faults here: the fault names the .co\n"
	      " * line of the access (#line), and nothing is written */\n"
	      "#define NPU_CO_TRAP() (*(volatile int *)(unsigned long)16 = 0)\n"
	      "#define NPU_CO_IX(i, n) __extension__ ({ long long i_ = (i); \\\n"
	      "\tif ((unsigned long long)i_ >= (unsigned long long)(n)) \\\n"
	      "\t\tNPU_CO_TRAP(); \\\n"
	      "\ti_; })\n\n", o);
	device_code_emit(o);
	for (i = 0; i < prog->nkernels; i++)
		emit_kernel(o, &prog->kernels[i], i);
}
