/* SPDX-License-Identifier: MIT */
/*
 * npu_graph.h - what the graph files share: graphs and their nodes
 * (npu_graph.c builds them), used by stream capture (npu_graph_capture.c,
 * which records into a graph) and by instantiation and launch
 * (npu_graph_exec.c). Files above the graph code see only npu.h.
 */
#ifndef NPU_GRAPH_H
#define NPU_GRAPH_H

#include <stdbool.h>

#include "npu_core.h"

#define GRAPH_MAGIC	0x47525048u
#define NODE_MAGIC	0x4e4f4445u
#define EXEC_MAGIC	0x47455843u
enum { REG_GRAPH = 10, REG_EXEC = 11 };

struct npu_graph_node {
	uint32_t magic;
	struct npu_graph *g;
	unsigned idx;
	npu_graph_node_type_t type;
	struct npu_graph_node **preds;
	unsigned npreds, cap;
	npu_kernel_node_params kp;
	void *dst;
	const void *src;
	size_t count;
	npu_memcpy_kind_t kind;
	int value;
	npu_host_fn_t fn;
	void *user;
	npu_event_t ev;
	uint64_t ev_serial;		/* ev->serial when the node was made */
};

struct npu_graph {
	uint32_t magic;
	struct device *dev;
	struct npu_graph_node **nodes;
	unsigned n, cap;
};

/* ---- npu_graph.c ---- */
npu_status_t npu_graph_check(npu_graph_t g);	/* a live graph handle */
npu_status_t npu_graph_new(struct device *dev, npu_graph_t *out);
/* 1: p added (last in n->preds), 0: already there, -1: out of memory */
int npu_graph_add_pred(struct npu_graph_node *n, struct npu_graph_node *p);
npu_status_t npu_graph_check_kparams(const npu_kernel_node_params *p);
/* Device VA and BO of a copy's ends, checked as npu_memcpy checks them;
 * locked: the caller holds dev->lock. */
npu_status_t npu_graph_check_copy(struct device *dev, void *dst, const void *src,
				  size_t count, npu_memcpy_kind_t kind,
				  uint64_t *dva, uint64_t *sva, uint32_t bo[2],
				  bool *pageable, bool locked);
/* Is a an ancestor of (or equal to) b? */
bool npu_graph_reaches(struct npu_graph *g, struct npu_graph_node *a,
		       struct npu_graph_node *b);

#endif /* NPU_GRAPH_H */
