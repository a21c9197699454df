/* SPDX-License-Identifier: MIT */
/*
 * emit.h - C emission shared by the kernel and host generators:
 * expressions and statements read the same on both sides (the same C
 * names: a kernel's arguments are named like the host values they
 * capture); the differences (launches, bounds checks, println, storage)
 * are decided by `device`.
 */
#ifndef NPU_CHOREO_EMIT_H
#define NPU_CHOREO_EMIT_H

#include <stdio.h>

#include "sema.h"

struct emitter {
	FILE *o;
	bool device;
	struct kernel *kernel;	/* device: the kernel being emitted */
	int kernel_index;
	int indent;
};

void emit_indent(struct emitter *em);
void emit_line(struct emitter *em, struct loc loc);
/* e converted to the storage of el (f16/bf16: rounded to its bits) */
void emit_stored(struct emitter *em, enum elem el, const struct node *e);
void emit_expr(struct emitter *em, const struct node *e);
void emit_block(struct emitter *em, const struct node *b);
void emit_stmt(struct emitter *em, const struct node *s);
/* C for dimension k of spanned data s: a literal or its variable */
void emit_dim(struct emitter *em, const struct sym *s, int k);
/* a C string literal of the .co path (for #line and messages) */
const char *emit_path_literal(void);
/* C type of a scalar of elem */
const char *c_scalar_type(enum elem e);
const char *c_elem_enum(enum elem e);

/* provided by host_gen.c and kernel_gen.c */
void host_emit_launch(struct emitter *em, const struct node *par);
void host_emit_global_event(struct emitter *em, const struct node *d);
void host_emit_span_decl(struct emitter *em, const struct node *d);
void host_emit_return(struct emitter *em, const struct node *r);
void host_emit_call(struct emitter *em, const struct node *e);
void host_emit_stream_decl(struct emitter *em, const struct node *d);
void kernel_emit_thread_parallel(struct emitter *em, const struct node *par);
void kernel_emit_span_decl(struct emitter *em, const struct node *d);

#endif
