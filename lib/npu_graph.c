/* SPDX-License-Identifier: MIT */
/*
 * npu_graph.c - graphs and their nodes: creation, nodes and edges,
 * parameters, the checks every node gets when it is added. Stream capture
 * (npu_graph_capture.c) builds graphs through the same calls; instantiation
 * and launch are in npu_graph_exec.c. Documentation/lib/graphs.rst
 * describes the design.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xf86drm.h>

#include "npu_graph.h"
#include "npu_module.h"

/* ------------------------------------------------------------------------
 * Graph construction
 */
npu_status_t npu_graph_check(npu_graph_t g)
{
	if (!g || !npu_reg_check(g, REG_GRAPH))
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"graph %p is not a live graph", (void *)g);
	return NPU_SUCCESS;
}

static bool node_ok(npu_graph_t g, npu_graph_node_t n)
{
	return n && n->magic == NODE_MAGIC && n->g == g && n->idx < g->n &&
	       g->nodes[n->idx] == n;
}

npu_status_t npu_graph_new(struct device *dev, npu_graph_t *out)
{
	struct npu_graph *g = calloc(1, sizeof(*g));

	if (!g)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "graph");
	g->magic = GRAPH_MAGIC;
	g->dev = dev;
	if (npu_reg_add(g, REG_GRAPH)) {
		free(g);
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "handle registry");
	}
	*out = g;
	return NPU_SUCCESS;
}

npu_status_t npu_graph_create(npu_graph_t *out, unsigned int flags)
{
	struct device *dev;
	npu_status_t st;

	if (!out)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "graph pointer is NULL");
	if (flags)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "flags must be 0");
	st = npu_cur_dev(&dev);
	if (st)
		return st;
	return npu_graph_new(dev, out);
}

static void graph_free(struct npu_graph *g)
{
	unsigned i;

	for (i = 0; i < g->n; i++) {
		if (g->nodes[i]->type == NPU_GRAPH_NODE_KERNEL &&
		    g->nodes[i]->kp.function)
			npu_function_release(g->nodes[i]->kp.function);
		g->nodes[i]->magic = 0;
		free(g->nodes[i]->preds);
		free(g->nodes[i]);
	}
	free(g->nodes);
	g->magic = 0;
	free(g);
}

npu_status_t npu_graph_destroy(npu_graph_t g)
{
	if (!g || !npu_reg_remove(g, REG_GRAPH))
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"graph %p is not a live graph", (void *)g);
	graph_free(g);
	return NPU_SUCCESS;
}

/* 1: added (last in n->preds), 0: already there, -1: out of memory */
int npu_graph_add_pred(struct npu_graph_node *n, struct npu_graph_node *p)
{
	unsigned i;

	for (i = 0; i < n->npreds; i++)
		if (n->preds[i] == p)
			return 0;
	if (n->npreds == n->cap) {
		unsigned nc = n->cap ? 2 * n->cap : 4;
		struct npu_graph_node **np = realloc(n->preds, nc * sizeof(*np));

		if (!np)
			return -1;
		n->preds = np;
		n->cap = nc;
	}
	n->preds[n->npreds++] = p;
	return 1;
}

/* New node with its dependencies; NULL (and the error set) on failure. */
static struct npu_graph_node *node_new(npu_graph_t g, npu_graph_node_type_t t,
				       const npu_graph_node_t *deps, size_t ndeps,
				       npu_status_t *st)
{
	struct npu_graph_node *n;
	size_t i;

	if (ndeps && !deps) {
		*st = npu_fail(NPU_ERROR_INVALID_VALUE, "deps is NULL");
		return NULL;
	}
	for (i = 0; i < ndeps; i++)
		if (!node_ok(g, deps[i])) {
			*st = npu_fail(NPU_ERROR_INVALID_VALUE,
				       "dependency %zu is not a node of the graph", i);
			return NULL;
		}
	if (g->n >= NPU_GRAPH_MAX_NODES) {
		*st = npu_fail(NPU_ERROR_NOT_SUPPORTED, "more than %u nodes",
			       NPU_GRAPH_MAX_NODES);
		return NULL;
	}
	if (g->n == g->cap) {
		unsigned nc = g->cap ? 2 * g->cap : 16;
		struct npu_graph_node **nn = realloc(g->nodes, nc * sizeof(*nn));

		if (!nn) {
			*st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "graph node");
			return NULL;
		}
		g->nodes = nn;
		g->cap = nc;
	}
	n = calloc(1, sizeof(*n));
	if (!n) {
		*st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "graph node");
		return NULL;
	}
	n->magic = NODE_MAGIC;
	n->g = g;
	n->type = t;
	for (i = 0; i < ndeps; i++)
		if (npu_graph_add_pred(n, deps[i]) < 0) {
			free(n->preds);
			free(n);
			*st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "graph node");
			return NULL;
		}
	n->idx = g->n;
	g->nodes[g->n++] = n;
	*st = NPU_SUCCESS;
	return n;
}

npu_status_t npu_graph_check_kparams(const npu_kernel_node_params *p)
{
	unsigned nargs;
	npu_status_t st;

	if (!p)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "params is NULL");
	if (p->function) {	/* a user kernel (npu_module.c) */
		st = npu_function_check(p->function);
		if (!st)
			st = npu_ukernel_check(p->function, p->grid, p->block,
					       p->scratch_bytes);
		if (!st && p->nargs != p->function->desc.nargs)
			st = npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				      "kernel %s takes %u arguments, not %u",
				      p->function->desc.name,
				      p->function->desc.nargs, p->nargs);
		return st;
	}
	if (npu_kernel_info(p->kernel, NULL, &nargs))
		return npu_fail(NPU_ERROR_INVALID_KERNEL, "unknown kernel id 0x%x",
				(unsigned)p->kernel);
	if (p->nargs != nargs)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"kernel takes %u arguments, not %u", nargs, p->nargs);
	if (!p->grid.x || !p->grid.y || !p->grid.z)
		return npu_fail(NPU_ERROR_INVALID_CONFIGURATION,
				"grid has a zero dimension");
	return npu_builtin_check(npu_kernel_find((uint32_t)p->kernel), p->args);
}

static struct alloc *find_alloc(struct alloc_table *t, uint64_t p)
{
	unsigned i;

	for (i = 0; i < t->n; i++)
		if (p >= t->v[i].key && p < t->v[i].key + t->v[i].size)
			return &t->v[i];
	return NULL;
}

/* Device VA and BO of [p, p+n): device memory (want 1), pinned host (0) or
 * either (-1). Caller holds dev->lock. */
static npu_status_t resolve(struct device *dev, const void *ptr, uint64_t n,
			    int want, uint64_t *va, uint32_t *bo, bool *pageable)
{
	uint64_t p = (uintptr_t)ptr;
	struct alloc *a = NULL;

	*pageable = false;
	if (!ptr)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL pointer");
	if (want != 0)
		a = find_alloc(&dev->dmem, p);
	if (!a && want == 1)
		return npu_fail(NPU_ERROR_INVALID_POINTER,
				"%p is not device memory from npu_malloc", ptr);
	if (!a)
		a = find_alloc(&dev->hmem, p);
	if (!a) {
		*pageable = true;
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"%p is pageable host memory: a graph needs device or pinned memory",
				ptr);
	}
	if (p + n > a->key + a->size || p + n < p)
		return npu_fail(NPU_ERROR_INVALID_VALUE,
				"[%p, +%llu) runs past the end of its allocation", ptr,
				(unsigned long long)n);
	*va = a->va + (p - a->key);
	*bo = a->handle;
	return NPU_SUCCESS;
}

npu_status_t npu_graph_check_copy(struct device *dev, void *dst, const void *src,
			       size_t count, npu_memcpy_kind_t kind,
			       uint64_t *dva, uint64_t *sva, uint32_t bo[2],
			       bool *pageable, bool locked)
{
	int wd, ws;
	npu_status_t st;

	st = npu_copy_kind_sides(kind, &wd, &ws);
	if (st)
		return st;
	if (!count)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "count is 0");
	if (!locked)
		pthread_mutex_lock(&dev->lock);
	st = resolve(dev, dst, count, wd, dva, &bo[0], pageable);
	if (!st)
		st = resolve(dev, src, count, ws, sva, &bo[1], pageable);
	if (!locked)
		pthread_mutex_unlock(&dev->lock);
	return st;
}

#define ADD_NODE_PROLOGUE(type)						\
	npu_status_t st = npu_graph_check(g);				\
	struct npu_graph_node *n;					\
	if (st)								\
		return st;						\
	if (!node)							\
		return npu_fail(NPU_ERROR_INVALID_VALUE, "node is NULL");

npu_status_t npu_graph_add_kernel_node(npu_graph_node_t *node, npu_graph_t g,
				       const npu_graph_node_t *deps, size_t ndeps,
				       const npu_kernel_node_params *p)
{
	ADD_NODE_PROLOGUE(NPU_GRAPH_NODE_KERNEL)
	st = npu_graph_check_kparams(p);
	if (!st && p->function)	/* its module stays loaded while n is */
		st = npu_function_hold(p->function);
	if (st)
		return st;
	n = node_new(g, NPU_GRAPH_NODE_KERNEL, deps, ndeps, &st);
	if (!n) {
		if (p->function)
			npu_function_release(p->function);
		return st;
	}
	n->kp = *p;
	*node = n;
	return NPU_SUCCESS;
}

npu_status_t npu_graph_add_memcpy_node(npu_graph_node_t *node, npu_graph_t g,
				       const npu_graph_node_t *deps, size_t ndeps,
				       void *dst, const void *src, size_t count,
				       npu_memcpy_kind_t kind)
{
	uint64_t a, b;
	uint32_t bo[2];
	bool pg;

	ADD_NODE_PROLOGUE(NPU_GRAPH_NODE_MEMCPY)
	st = npu_graph_check_copy(g->dev, dst, src, count, kind, &a, &b, bo, &pg, false);
	if (st)
		return st;
	n = node_new(g, NPU_GRAPH_NODE_MEMCPY, deps, ndeps, &st);
	if (!n)
		return st;
	n->dst = dst;
	n->src = src;
	n->count = count;
	n->kind = kind;
	*node = n;
	return NPU_SUCCESS;
}

npu_status_t npu_graph_add_memset_node(npu_graph_node_t *node, npu_graph_t g,
				       const npu_graph_node_t *deps, size_t ndeps,
				       void *devptr, int value, size_t count)
{
	uint64_t va;
	uint32_t bo;
	bool pg;

	ADD_NODE_PROLOGUE(NPU_GRAPH_NODE_MEMSET)
	if (!count)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "count is 0");
	pthread_mutex_lock(&g->dev->lock);
	st = resolve(g->dev, devptr, count, 1, &va, &bo, &pg);
	pthread_mutex_unlock(&g->dev->lock);
	if (st)
		return st;
	n = node_new(g, NPU_GRAPH_NODE_MEMSET, deps, ndeps, &st);
	if (!n)
		return st;
	n->dst = devptr;
	n->value = value;
	n->count = count;
	*node = n;
	return NPU_SUCCESS;
}

npu_status_t npu_graph_add_host_node(npu_graph_node_t *node, npu_graph_t g,
				     const npu_graph_node_t *deps, size_t ndeps,
				     npu_host_fn_t fn, void *user)
{
	ADD_NODE_PROLOGUE(NPU_GRAPH_NODE_HOST)
	if (!fn)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "host function is NULL");
	n = node_new(g, NPU_GRAPH_NODE_HOST, deps, ndeps, &st);
	if (!n)
		return st;
	n->fn = fn;
	n->user = user;
	*node = n;
	return NPU_SUCCESS;
}

static npu_status_t add_event_node(npu_graph_node_t *node, npu_graph_t g,
				   const npu_graph_node_t *deps, size_t ndeps,
				   npu_event_t e, npu_graph_node_type_t t)
{
	ADD_NODE_PROLOGUE(t)
	if (!e || !npu_reg_check(e, REG_EVENT))
		return npu_fail(NPU_ERROR_INVALID_HANDLE, "event %p is not live",
				(void *)e);
	if (e->dev != g->dev)
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"event and graph belong to different devices");
	if (t == NPU_GRAPH_NODE_EVENT_RECORD && e->imported)
		return npu_fail(NPU_ERROR_INVALID_HANDLE,
				"an imported event cannot be recorded");
	n = node_new(g, t, deps, ndeps, &st);
	if (!n)
		return st;
	n->ev = e;
	n->ev_serial = e->serial;
	*node = n;
	return NPU_SUCCESS;
}

npu_status_t npu_graph_add_event_record_node(npu_graph_node_t *node,
					     npu_graph_t g,
					     const npu_graph_node_t *deps,
					     size_t ndeps, npu_event_t e)
{
	return add_event_node(node, g, deps, ndeps, e, NPU_GRAPH_NODE_EVENT_RECORD);
}

npu_status_t npu_graph_add_event_wait_node(npu_graph_node_t *node,
					   npu_graph_t g,
					   const npu_graph_node_t *deps,
					   size_t ndeps, npu_event_t e)
{
	return add_event_node(node, g, deps, ndeps, e, NPU_GRAPH_NODE_EVENT_WAIT);
}

npu_status_t npu_graph_add_empty_node(npu_graph_node_t *node, npu_graph_t g,
				      const npu_graph_node_t *deps, size_t ndeps)
{
	ADD_NODE_PROLOGUE(NPU_GRAPH_NODE_EMPTY)
	n = node_new(g, NPU_GRAPH_NODE_EMPTY, deps, ndeps, &st);
	if (!n)
		return st;
	*node = n;
	return NPU_SUCCESS;
}

/* Is a an ancestor of (or equal to) b? */
bool npu_graph_reaches(struct npu_graph *g, struct npu_graph_node *a,
		    struct npu_graph_node *b)
{
	unsigned *stack, sp = 0, i;
	bool *seen, found = false;

	if (a == b)
		return true;
	stack = malloc(g->n * sizeof(*stack));
	seen = calloc(g->n, sizeof(*seen));
	if (!stack || !seen) {
		free(stack);
		free(seen);
		return true;		/* refuse when unsure */
	}
	stack[sp++] = b->idx;
	seen[b->idx] = true;
	while (sp && !found) {
		struct npu_graph_node *n = g->nodes[stack[--sp]];

		for (i = 0; i < n->npreds; i++) {
			struct npu_graph_node *p = n->preds[i];

			if (p == a) {
				found = true;
				break;
			}
			if (!seen[p->idx]) {
				seen[p->idx] = true;
				stack[sp++] = p->idx;
			}
		}
	}
	free(stack);
	free(seen);
	return found;
}

npu_status_t npu_graph_add_dependencies(npu_graph_t g, const npu_graph_node_t *from,
					const npu_graph_node_t *to, size_t n)
{
	npu_status_t st = npu_graph_check(g);
	bool *added;
	size_t i;
	int r;

	if (st)
		return st;
	if (n && (!from || !to))
		return npu_fail(NPU_ERROR_INVALID_VALUE, "NULL arrays");
	for (i = 0; i < n; i++)
		if (!node_ok(g, from[i]) || !node_ok(g, to[i]))
			return npu_fail(NPU_ERROR_INVALID_VALUE,
					"edge %zu: not nodes of the graph", i);
	added = calloc(n + 1, sizeof(*added));
	if (!added)
		return npu_fail(NPU_ERROR_OUT_OF_MEMORY, "edges");
	for (i = 0; i < n && !st; i++) {
		if (npu_graph_reaches(g, to[i], from[i])) {
			st = npu_fail(NPU_ERROR_INVALID_VALUE,
				      "edge %zu would make a cycle", i);
			break;
		}
		r = npu_graph_add_pred(to[i], from[i]);
		if (r < 0)
			st = npu_fail(NPU_ERROR_OUT_OF_MEMORY, "edge");
		added[i] = r > 0;
	}
	/* all or nothing: take back the edges added, newest first (each is
	 * the last of its node's list then) */
	if (st)
		while (i-- > 0)
			if (added[i])
				to[i]->npreds--;
	free(added);
	return st;
}

npu_status_t npu_graph_get_nodes(npu_graph_t g, npu_graph_node_t *nodes,
				 size_t *count)
{
	npu_status_t st = npu_graph_check(g);
	size_t i;

	if (st)
		return st;
	if (!count)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "count is NULL");
	if (!nodes) {
		*count = g->n;
		return NPU_SUCCESS;
	}
	for (i = 0; i < *count && i < g->n; i++)
		nodes[i] = g->nodes[i];
	*count = i;
	return NPU_SUCCESS;
}

static npu_status_t check_node(npu_graph_node_t n)
{
	if (!n || n->magic != NODE_MAGIC || !npu_reg_check(n->g, REG_GRAPH))
		return npu_fail(NPU_ERROR_INVALID_HANDLE, "not a live graph node");
	return NPU_SUCCESS;
}

npu_status_t npu_graph_node_get_type(npu_graph_node_t n, npu_graph_node_type_t *t)
{
	npu_status_t st = check_node(n);

	if (st)
		return st;
	if (!t)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "type is NULL");
	*t = n->type;
	return NPU_SUCCESS;
}

npu_status_t npu_graph_kernel_node_get_params(npu_graph_node_t n,
					      npu_kernel_node_params *p)
{
	npu_status_t st = check_node(n);

	if (st)
		return st;
	if (!p || n->type != NPU_GRAPH_NODE_KERNEL)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "not a kernel node");
	*p = n->kp;
	return NPU_SUCCESS;
}

npu_status_t npu_graph_kernel_node_set_params(npu_graph_node_t n,
					      const npu_kernel_node_params *p)
{
	npu_status_t st = check_node(n);

	if (st)
		return st;
	if (n->type != NPU_GRAPH_NODE_KERNEL)
		return npu_fail(NPU_ERROR_INVALID_VALUE, "not a kernel node");
	st = npu_graph_check_kparams(p);
	if (!st && p->function)
		st = npu_function_hold(p->function);
	if (st)
		return st;
	if (n->kp.function)
		npu_function_release(n->kp.function);
	n->kp = *p;
	return NPU_SUCCESS;
}
