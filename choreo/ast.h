/* SPDX-License-Identifier: MIT */
/*
 * ast.h - the syntax tree of npu-choreo: one generic node type (a kind,
 * a source location, a few scalar fields and a list of children), the
 * types of the language subset, and the symbols that sema.c binds.
 */
#ifndef NPU_CHOREO_AST_H
#define NPU_CHOREO_AST_H

#include <stdbool.h>
#include <stddef.h>

struct loc {
	int line, col;
};

/* Element and scalar types; the order of the first fourteen is the order
 * of enum npu_choreo_elem in npu_choreo.h. f16, bf16 and the fp8 types are
 * held as their bits (uint16_t, uint8_t) in memory and in variables;
 * read, they are f32 values (npu_half.h). */
enum elem {
	EL_U8, EL_S8, EL_U16, EL_S16, EL_U32, EL_S32, EL_S64, EL_F32, EL_F64,
	EL_F16, EL_BF16, EL_F8E4M3, EL_F8E5M2, EL_U64,
	/* integers narrower than a byte: one a byte (u8/s8 at the C
	 * interface), a store keeps the low bits (sign-extended) */
	EL_U6, EL_S6, EL_U4, EL_S4, EL_U2, EL_S2, EL_U1, EL_BIN1,
	EL_INT,		/* `int`: immutable unless declared mutable */
	EL_BOOL,
	EL_VOID,
	EL_NONE,
};

enum type_kind {
	TY_SCALAR,	/* elem */
	TY_SPAN,	/* spanned data of elem, rank dims */
	TY_STREAM,
	TY_STRING,
	TY_FUTURE,	/* result of dma.copy */
	TY_VOID,
	TY_TUPLE,	/* a bounded ituple: rank bounded integers */
};

#define MAX_RANK 6

struct node;

struct type {
	enum type_kind kind;
	enum elem elem;
	int rank;
	struct node *dims[MAX_RANK];	/* expressions (parameters: id/literal) */
};

enum node_kind {
	/* top level */
	N_PROGRAM, N_FUNC, N_PARAM,
	/* statements */
	N_BLOCK, N_DECL, N_SPANDECL, N_PARALLEL, N_PARBY, N_WITH, N_WITHIN,
	N_FOREACH, N_RANGE, N_WHILE, N_IF, N_BREAK, N_CONTINUE, N_RETURN,
	N_EXPRSTMT, N_ASSIGN, N_PRINT, N_SYNC, N_DMA, N_WAIT, N_STREAMDECL,
	N_SHAPEDECL, N_ASSERT, N_YIELD,
	N_EVENTS,	/* shared event a, b[2] = ready; kids N_EVENTDECL */
	N_EVENTDECL,	/* kid 0 the slot count if an array; flag: = ready */
	N_TRIGGER,	/* trigger e, f[i], g.at(order); */
	N_MMA,		/* flag: enum mma_op; name: the fragment assigned */
	N_DMAANY,	/* f = dma.any; kid 0 the name, kid 1 (sema) the
			 * placeholder's own buffer (an N_SPANDECL) if it needs one */
	N_ROTATE,	/* swap(a, b) / rotate(a, b, c...): name says which */
	/* expressions */
	E_INT, E_FLOAT, E_BOOL, E_STRING, E_ID, E_BINARY, E_UNARY, E_TERNARY,
	E_AT, E_SPAN, E_COUNT, E_CALL, E_CAST, E_UBOUND, E_INCDEC, E_ADDR,
	E_DATA, E_DIMLIST, E_ELEM,
	E_COCALL,	/* extension: a call of a __co__ function (->callee) */
	E_VIEW,		/* x.chunkat(...), x.subspan(...)[.at(...)] */
	E_SELECT,	/* select(i, a, b, ...): operand i (from 0) of a, b, ...;
			 * sema's ->sym: a pointer span naming the choice */
	E_DEVCALL,	/* call f(a, b): a device function of the program
			 * (device_code.c); its value only assigned or tested */
};

/* N_PRINT's flag: 1 println (a newline), PRINT_STATIC print! and
 * println!, which print when the program compiles */
#define PRINT_STATIC	2

struct sym;

struct node {
	enum node_kind kind;
	struct loc loc;
	char *name;		/* identifier, operator, builtin, string text */
	char *alias;		/* N_RANGE: the loop variable's own name */
	long long ival;		/* literal; flags (see below) */
	double fval;
	int flag;		/* kind-specific: async, mutable, storage, E_INT's
				 * suffix type (EL_U32, EL_S64; else 0) ... */
	struct type type;	/* declared type (N_PARAM, N_DECL, N_FUNC) */
	struct node **kids;
	int nkids, cap;
	/* a name with subscripts, an element of an array of spanned data
	 * or of events: `tile[i]`, `s[i][j].at(k)` (an N_BLOCK of the
	 * indices); N_SPANDECL, N_EVENTDECL: the array's extents */
	struct node *index;
	/* E_VIEW of x.view(sizes : strides).from(offsets): the strides (an
	 * N_BLOCK), in elements of x's data: element j of the view is
	 * x's element sum((offset_k + j_k) * stride_k), row-major */
	struct node *strides;
	/* filled by sema */
	struct sym *sym;	/* E_ID, declarations */
	struct type ety;	/* type of an expression */
	int level;		/* 0 host, 1 block body, 2 thread body */
	int kernel;		/* N_PARALLEL at block level: kernel number */
	struct node *par;	/* enclosing block-level N_PARALLEL */
	struct node *callee;	/* E_COCALL: the called N_FUNC; N_YIELD: its
				 * thread-level N_PARALLEL */
	bool yields;		/* N_PARALLEL: a yield inside */
	/* thread levels larger than a block with barriers only between the
	 * statements of their body: N_PARALLEL: how many such barriers (its
	 * body runs as loops over the level split at them); a statement: the
	 * barrier (sync) or the statement the barrier follows (inthreads) */
	int splits;
	bool split;
	/* N_PARBY: `: block<cooperative>`, its body's grid barriers
	 * (sync.barrier : block) split it into launches (sema.c) */
	bool cooperative;
	/* N_DMA of dma.transp: destination dimension k is source dimension
	 * perm[k] */
	int perm[MAX_RANK];
	int nperm;
	/* N_DMA of dma.pad: low, high and interior padding per dimension,
	 * the value (a literal) of the padding */
	int pad[3][MAX_RANK];
	int npad;
	struct node *padval;
	/* N_DMA: an asynchronous copy the tile DMA engine can make (sema.c:
	 * check_tdma), if its kernel's blocks are one thread each */
	bool tdma;
	/* N_DMA assigned to a future that is a slot (sema.c): 1 declares
	 * the slot, 2 sets an existing one */
	int slot_op;
	/* N_DMA: `after f, g`, the futures it starts after (a block of E_ID) */
	struct node *after;
	/* N_DMA: tma.copy / tma.load (trigger ... after binds only those,
	 * as Croqtile has it) */
	bool tma;
	/* N_MMA of MMA_EXEC: [[schedule(k_tiles(...))]], the order of its
	 * K tiles (a block of E_INT) */
	struct node *schedule;
	/* N_MMA of MMA_EXEC: its M, N and K in elements; the loads of A
	 * and B given as data (WGMMA's shared operands, sema.c) */
	int mma_mnk[3];
	struct node *mma_loads[2];
	/* N_MMA of MMA_LOAD: one of those loads (mma_hidden), of data
	 * larger than a tile, which the mma then reads a tile at a time
	 * (mma_direct) */
	bool mma_hidden, mma_direct;
};

/* N_FUNC flag: `__co__ auto f(...)`, its type is the first return's
 * (void until one is seen) */
#define FN_AUTO 1

/* E_COCALL flag: index(1)(-2), the last kid the offset applied to the
 * ituple's element */
#define COCALL_ELEM_OFFSET 1

/* E_VIEW flag; VIEW_SQZ: x.subspan(1, 9, 8).at(p, 0, 0).sqz(), the inner
 * view without its dimensions of extent 1 */
enum { VIEW_CHUNKAT = 1, VIEW_SUBSPAN, VIEW_SPAN_AS, VIEW_FROM, VIEW_SQZ };

/* N_MMA flag; ival: MMA_EXEC's layout (A column-major: 1, B row-major,
 * i.e. stored [N, K]: 2), MMA_FILL's type (an elem, EL_NONE if none),
 * MMA_STORE's transpose (1) */
enum mma_op { MMA_FILL = 1, MMA_LOAD, MMA_EXEC, MMA_STORE };

/* storage classes (N_SPANDECL flag, DMA target) */
enum storage { ST_DEFAULT, ST_SHARED, ST_LOCAL, ST_GLOBAL };
/* N_SYNC flag: a storage (sync.shared), or sync.fence */
#define SYNC_FENCE 16

/* parallel levels (N_PARBY flag) */
enum pblevel { PB_NONE, PB_BLOCK, PB_THREAD, PB_OTHER, PB_GROUP, PB_GROUP4 };
/* the parser's `: block<cooperative>` beside the level (N_PARBY
 * cooperative) */
#define PB_COOP 0x100

enum sym_kind {
	SY_PARAM, SY_DIM, SY_VAR, SY_SPAN, SY_PVAR, SY_LOOPVAR, SY_FUTURE,
	SY_TUPLE,
	SY_SHAPE,	/* an mdspan: type TY_SPAN of EL_NONE, no data */
	SY_ALIAS,	/* x = y.span_as(...): y's data (->target), x's shape */
	SY_EVENT,	/* shared event: ->event_slots counters in the scratchpad */
	SY_FRAG,	/* an mma fragment: a tile register of the thread */
};

struct sym {
	enum sym_kind kind;
	char *name;
	char *cname;		/* name in the generated C */
	struct type type;
	bool mutable_;
	int level;		/* where it was declared */
	enum storage storage;
	struct node *decl;
	struct node *ubound;	/* bounded variables: upper bound */
	struct sym *dim_of;	/* SY_DIM: the parameter that binds it */
	int dim_index;
	struct sym *target;	/* SY_FUTURE: the buffer it copies into */
	struct sym *elems[MAX_RANK];	/* SY_TUPLE: its bounded integers */
	long shared_offset;	/* shared spans: byte offset in the scratchpad */
	long event_slots;	/* SY_EVENT: its slots (1 for a scalar event) */
	bool event_array;	/* SY_EVENT: declared with [N] */
	bool event_ready;	/* SY_EVENT: = ready, generation zero published */
	bool ituple;		/* SY_SHAPE of an ituple: printed {a, b} */
	bool init_hoisted;	/* shared data of a thread level: its {init} is
				 * set once when the kernel starts */
	bool dyn_local;		/* local data sized by host values: each
				 * thread's copy in the launch's scratchpad */
	/* SY_FRAG: its tile register, the rows and columns it holds, its
	 * element type (an accumulator's: EL_F32 or EL_S32) */
	int tile;
	int frag_rows, frag_cols;
	bool frag_acc;		/* the C operand of an mma */
	bool frag_typed;	/* mma.fill.T named its type */
	/* SY_FUTURE of a tile DMA copy; the first future of its name in the
	 * kernel, whose barrier word (at its shared_offset) and count all of
	 * them share: `wait f` waits for every copy named f issued so far */
	bool tdma;
	struct sym *tdma_first;
	bool waited;		/* SY_FUTURE: named by a wait already */
	/* SY_ALIAS of a named view (b = a.view(16, 8 : 12, 3).from(1, 2),
	 * c = b.chunkat(p, q)): its element j is element view_off +
	 * sum(j_k * view_strides[k]) of ->target's data */
	struct node *view_off;
	struct node *view_strides[MAX_RANK];
	/* an array (of spanned data: its type's first narr dimensions are
	 * the array's extents, constants; of events: event_slots is their
	 * product) */
	int narr;
	long arr[MAX_RANK];
	/* an element of an array of spanned data, one per use (sema.c:
	 * resolve): its type the element's, its cname set by emit.c before
	 * the use is emitted (the array's address plus the element's
	 * offset); ->array_of is the array, elem_ref the use */
	struct sym *array_of;
	const struct node *elem_ref;
	struct sym *next_in_func;
	/* a slot: a future that dma.any, swap, rotate or select make (or
	 * that a copy names after them); ->target is a pointer span (ptr)
	 * whose C variable points at the data the slot holds now. Slots
	 * swapped or selected together have one type: slot_up leads to the
	 * class's first, which holds whether it is known (slot_typed), the
	 * type and storage (in its ->target), and whether a copy into
	 * `=> local`/`=> shared` writes the slot's own buffer (slot_own),
	 * whether its copies are asynchronous (slot_async) */
	bool slot, slot_typed, slot_own;
	int slot_async;		/* class: 0 no copy yet, 1 sync, 2 .async */
	struct sym *slot_up;
	bool ptr;		/* SY_SPAN whose cname is a pointer variable */
	const void *scope;	/* where it was declared (sema.c) */
};

/* byte range [start, end) of a __co__ function in the source (lexer.l) */
struct co_range {
	long start, end;
};
extern struct co_range *co_ranges;
extern int n_co_ranges;

struct node *node_new(enum node_kind kind, struct loc loc);
struct node *node_add(struct node *parent, struct node *kid);
/* a deep copy of a tree not checked yet (sema fills no field of it) */
struct node *node_clone(const struct node *n);
/* kid becomes parent's kid number at, the later ones move up */
struct node *node_insert(struct node *parent, int at, struct node *kid);
char *xstrdup(const char *s);
void *xmalloc(size_t n);
const char *elem_name(enum elem e);
const char *elem_ctype(enum elem e);
size_t elem_size(enum elem e);
bool elem_is_float(enum elem e);
bool elem_is_half(enum elem e);
/* the bits of a sub-byte integer (0 for the other types), its sign */
int elem_bits(enum elem e);
bool elem_signed_bits(enum elem e);

#endif
