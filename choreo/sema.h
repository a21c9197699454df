/* SPDX-License-Identifier: MIT */
/* sema.h - name resolution, type checks, and what code generation needs:
 * one kernel per block-level parallel with its captured values. */
#ifndef NPU_CHOREO_SEMA_H
#define NPU_CHOREO_SEMA_H

#include "ast.h"

#define MAX_CAPTURES	64
#define MAX_THREAD_PARS	64
#define MAX_EVENTS	64
#define MMA_FRAG_TILES	6	/* NPU_TILE_REGS less two */
#define MMA_TILE	16	/* the tensor engine's tile: 16 x 16 */
#define MMA_STAGE_BYTES	(MMA_TILE * MMA_TILE * 4)
#define MMA_MAX_THREADS	16	/* a block's threads (MAX_THREADS_PER_BLOCK) */
#define MMA_FRAG_MAX	256	/* a fragment's rows or columns, at most */
#define NPU_MAX_KERNEL_ARGS 16	/* NPU_CODE_MAX_ARGS */

struct kernel {
	struct node *func;
	struct node *par;		/* the host-level N_PARALLEL */
	char name[160];
	struct sym *caps[MAX_CAPTURES];
	int ncaps;
	int nargs;			/* kernel arguments the captures take */
	/* symbolic dimensions of parameters the body uses: an argument of
	 * their own only if the parameter is not captured (whose dimensions
	 * are arguments already) */
	struct sym *dim_caps[MAX_CAPTURES];
	int ndim_caps;
	/* thread-level parallels inside; par itself if it is one */
	struct node *thread_pars[MAX_THREAD_PARS];
	int nthread_pars;
	long shared_bytes;
	long local_bytes;
	bool grid_is_threads;		/* `parallel p by N : thread` on the host */
	/* sync.shared or return inside: each thread runs at most one index
	 * of a thread level, so a level cannot exceed a block */
	bool threads_fixed;
	/* events inside: fixed unless a thread level is split at barriers */
	bool events_fixed;
	bool any_split;
	/* its events: initialised when the kernel starts */
	struct sym *events[MAX_EVENTS];
	int nevents;
	/* shared data sized by host values (shared_offset -1): after the
	 * rest, placed when the kernel starts; the launch adds their bytes */
	struct sym *dyn_shared[MAX_EVENTS];
	int ndyn_shared;
	/* mma fragments: tile registers 0..MMA_FRAG_TILES-1 by name (the
	 * last two tiles are the transposes' scratch); each thread's
	 * staging tile in the scratchpad (MMA_STAGE_BYTES a thread from
	 * mma_stage) when any mma is inside */
	char *frag_names[MMA_FRAG_TILES];
	int nfrags;
	/* the rows and columns each name holds anywhere in the kernel: a
	 * name larger than a tile is held in the thread's memory (an array
	 * of cells on its stack), its tile register the window the tensor
	 * engine works through */
	int frag_rows_max[MMA_FRAG_TILES], frag_cols_max[MMA_FRAG_TILES];
	bool mma;
	long mma_stage;
	/* futures of tile DMA copies: barrier words set when it starts */
	struct sym *tdma[MAX_EVENTS];
	int ntdma;
	/* shared data declared with {init} in a thread level */
	struct node *shared_inits[MAX_EVENTS];
	int nshared_inits;
};

struct program {
	struct node *root;
	struct kernel *kernels;
	int nkernels;
};

void sema_program(struct program *prog);
/* a statement of a split thread-level body placed before its loops */
bool split_hoisted(const struct node *s);

/* constant value of an integer expression, if it has one */
bool const_eval(const struct node *e, long long *value);
/* does the span's dimension k have a compile-time value */
bool span_dim_const(const struct sym *s, int k, long long *value);
/* operands of a math built-in (__sqrt ...), 0 if name is not one */
int math_builtin_args(const char *name);
/* is s an argument of kernel k */
bool kernel_captures(const struct kernel *k, const struct sym *s);
/* is fragment register `tile` of k held in memory (larger than a tile) */
bool frag_in_memory(const struct kernel *k, int tile);
/* a memory-held fragment's cells: a row's (whole tiles) and all */
int frag_row_cells(const struct kernel *k, int tile);
long frag_cells(const struct kernel *k, int tile);
/* the parby of a level: its names and extents */
void parby_parts(const struct node *par, struct node ***names, int *nnames,
		 struct node ***extents, int *nextents);

#endif
