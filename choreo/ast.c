// SPDX-License-Identifier: MIT
/* ast.c - node construction and element type facts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"

void *xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr, "npu-choreo: out of memory\n");
		exit(2);
	}
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(xmalloc(n), s, n);
}

struct node *node_new(enum node_kind kind, struct loc loc)
{
	struct node *n = xmalloc(sizeof(*n));

	n->kind = kind;
	n->loc = loc;
	n->kernel = -1;
	return n;
}

struct node *node_add(struct node *parent, struct node *kid)
{
	if (parent->nkids == parent->cap) {
		parent->cap = parent->cap ? 2 * parent->cap : 4;
		parent->kids = realloc(parent->kids,
				       parent->cap * sizeof(*parent->kids));
		if (!parent->kids) {
			fprintf(stderr, "npu-choreo: out of memory\n");
			exit(2);
		}
	}
	parent->kids[parent->nkids++] = kid;
	return parent;
}

struct node *node_clone(const struct node *n)
{
	struct node *c = xmalloc(sizeof(*c));
	int i;

	*c = *n;
	c->name = n->name ? xstrdup(n->name) : NULL;
	c->alias = n->alias ? xstrdup(n->alias) : NULL;
	c->kids = NULL;
	c->nkids = c->cap = 0;
	for (i = 0; i < n->nkids; i++)
		node_add(c, node_clone(n->kids[i]));
	if (n->index)
		c->index = node_clone(n->index);
	if (n->strides)
		c->strides = node_clone(n->strides);
	return c;
}

struct node *node_insert(struct node *parent, int at, struct node *kid)
{
	int i;

	node_add(parent, kid);
	for (i = parent->nkids - 1; i > at; i--)
		parent->kids[i] = parent->kids[i - 1];
	parent->kids[at] = kid;
	return parent;
}

static const struct {
	const char *name, *ctype;
	size_t size;
} elems[] = {
	[EL_U8] = { "u8", "uint8_t", 1 },
	[EL_S8] = { "s8", "int8_t", 1 },
	[EL_U16] = { "u16", "uint16_t", 2 },
	[EL_S16] = { "s16", "int16_t", 2 },
	[EL_U32] = { "u32", "uint32_t", 4 },
	[EL_S32] = { "s32", "int32_t", 4 },
	[EL_S64] = { "s64", "int64_t", 8 },
	[EL_U64] = { "u64", "uint64_t", 8 },
	[EL_F32] = { "f32", "float", 4 },
	[EL_F64] = { "f64", "double", 8 },
	[EL_F16] = { "f16", "uint16_t", 2 },
	[EL_BF16] = { "bf16", "uint16_t", 2 },
	[EL_F8E4M3] = { "f8_e4m3", "uint8_t", 1 },
	[EL_F8E5M2] = { "f8_e5m2", "uint8_t", 1 },
	[EL_U6] = { "u6", "uint8_t", 1 },
	[EL_S6] = { "s6", "int8_t", 1 },
	[EL_U4] = { "u4", "uint8_t", 1 },
	[EL_S4] = { "s4", "int8_t", 1 },
	[EL_U2] = { "u2", "uint8_t", 1 },
	[EL_S2] = { "s2", "int8_t", 1 },
	[EL_U1] = { "u1", "uint8_t", 1 },
	[EL_BIN1] = { "bin1", "uint8_t", 1 },
	[EL_INT] = { "int", "int", 4 },
	[EL_BOOL] = { "bool", "_Bool", 1 },
	[EL_VOID] = { "void", "void", 0 },
	[EL_NONE] = { "?", "long long", 8 },
};

const char *elem_name(enum elem e)
{
	return elems[e].name;
}

const char *elem_ctype(enum elem e)
{
	return elems[e].ctype;
}

size_t elem_size(enum elem e)
{
	return elems[e].size;
}

bool elem_is_float(enum elem e)
{
	return e == EL_F32 || e == EL_F64 || elem_is_half(e);
}

/* 16- and 8-bit floating point: stored as bits, computed with as f32
 * (npu_<name>_to_f32, npu_<name>_from_f32 in npu_half.h) */
bool elem_is_half(enum elem e)
{
	return e == EL_F16 || e == EL_BF16 || e == EL_F8E4M3 || e == EL_F8E5M2;
}

int elem_bits(enum elem e)
{
	switch (e) {
	case EL_U6: case EL_S6: return 6;
	case EL_U4: case EL_S4: return 4;
	case EL_U2: case EL_S2: return 2;
	case EL_U1: case EL_BIN1: return 1;
	default: return 0;
	}
}

bool elem_signed_bits(enum elem e)
{
	return e == EL_S6 || e == EL_S4 || e == EL_S2;
}
