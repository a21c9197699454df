// SPDX-License-Identifier: MIT
/*
 * sema.c - binds every identifier to its symbol, gives every expression a
 * type, enforces the rules of the subset (mutability, stream bindings,
 * parallel levels) and collects, per block-level parallel, the kernel it
 * becomes: the host values its body captures, its thread-level parallels,
 * its scratchpad (shared) and stack (local) data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_code.h"
#include "diag.h"
#include "sema.h"

struct scope {
	struct sym **syms;
	int n, cap;
	struct scope *up;
};

/* walking state */
static struct scope *scope;
static struct program *program;
static struct node *cur_func;
static struct kernel *cur_kernel;	/* inside a parallel body */
static int cur_level;			/* 0 host, 1 block body, 2 thread body */
static int loop_depth;
static int name_uses;
static struct sym *func_syms;
static int deepest_ref;			/* highest level of a symbol referenced */

static void check_stmt(struct node *s);
static void check_block(struct node *b);
static struct node *int_node(struct loc loc, long long v);
static struct node *ident_node(struct loc at, const char *name);
static void check_foreach(struct node *f);
static struct node *expand_shapes(struct node *list);
static bool shape_value(struct node *e, struct node *out);
static struct type check_expr(struct node *e);
static void slot_data_used(const struct sym *f, struct loc at);
static bool untracked_future(const char *name);
static void finish_any_buffers(struct kernel *k);
static const char *kind_text(struct type t);
static void check_assignable(struct loc loc, struct type to, struct type from);

static void push_scope(void)
{
	struct scope *s = xmalloc(sizeof(*s));

	s->up = scope;
	scope = s;
}

static void pop_scope(void)
{
	scope = scope->up;
}

static struct sym *lookup(const char *name)
{
	struct scope *s;
	int i;

	for (s = scope; s; s = s->up)
		for (i = s->n - 1; i >= 0; i--)
			if (!strcmp(s->syms[i]->name, name))
				return s->syms[i];
	return NULL;
}

static bool cname_taken(const char *cname)
{
	struct sym *s;

	for (s = func_syms; s; s = s->next_in_func)
		if (!strcmp(s->cname, cname))
			return true;
	return false;
}

static struct sym *declare(const char *name, enum sym_kind kind,
			   struct node *decl)
{
	struct sym *s = xmalloc(sizeof(*s));
	char buf[256];
	int i;

	for (i = 0; i < scope->n; i++)
		if (!strcmp(scope->syms[i]->name, name) &&
		    !(kind == SY_FUTURE && scope->syms[i]->kind == SY_FUTURE))
			diag_error(decl ? decl->loc : (struct loc){ 0, 0 },
				   "'%s' is declared already", name);
	s->kind = kind;
	s->name = xstrdup(name);
	s->level = cur_level;
	s->decl = decl;
	s->scope = scope;
	snprintf(buf, sizeof(buf), "v_%s", name);
	/* the integers of an ituple are named idx(0), idx(1) */
	for (i = 0; buf[i]; i++)
		if (buf[i] == '(' || buf[i] == ')')
			buf[i] = '_';
	while (cname_taken(buf)) {
		snprintf(buf, sizeof(buf), "v_%s_%d", name, ++name_uses);
		for (i = 0; buf[i]; i++)
			if (buf[i] == '(' || buf[i] == ')')
				buf[i] = '_';
	}
	s->cname = xstrdup(buf);
	s->next_in_func = func_syms;
	func_syms = s;
	if (scope->n == scope->cap) {
		scope->cap = scope->cap ? 2 * scope->cap : 8;
		scope->syms = realloc(scope->syms, scope->cap * sizeof(*scope->syms));
		if (!scope->syms)
			exit(2);
	}
	scope->syms[scope->n++] = s;
	return s;
}

static struct type scalar(enum elem e)
{
	struct type t = { .kind = TY_SCALAR, .elem = e };

	return t;
}

static bool is_numeric(struct type t)
{
	return t.kind == TY_SCALAR && t.elem != EL_VOID;
}

static bool is_integer(struct type t)
{
	return is_numeric(t) && !elem_is_float(t.elem);
}

/* __alignup(a, b) is (a + b - 1) / b * b and __aligndown(a, b) is
 * a / b * b, as Choreo desugars them: b need not be a power of two;
 * cdiv(a, b), the ceiling of a / b, is (a + b - 1) / b */
static bool is_align_call(const struct node *e)
{
	return !strcmp(e->name, "__alignup") || !strcmp(e->name, "__aligndown") ||
	       !strcmp(e->name, "cdiv");
}

static long long align_value(const char *name, long long a, long long b)
{
	if (!strcmp(name, "cdiv"))
		return (a + b - 1) / b;
	return (strcmp(name, "__alignup") ? a : a + b - 1) / b * b;
}

/* the math built-ins of Choreo (its numerics documentation): name and
 * number of operands */
static const struct {
	const char *name;
	int nargs;
} math_builtins[] = {
	{ "__acos", 1 }, { "__asin", 1 }, { "__atan", 1 }, { "__atan2", 2 },
	{ "__ceil", 1 }, { "__cos", 1 }, { "__cosh", 1 }, { "__exp", 1 },
	{ "__exp2f", 1 }, { "__expm1", 1 }, { "__fabs", 1 }, { "__fmaf", 3 },
	{ "__frcp_rn", 1 }, { "__floor", 1 }, { "__gelu", 1 },
	{ "__isfinite", 1 }, { "__round", 1 }, { "__rsqrt", 1 },
	{ "__sigmoid", 1 }, { "__sinh", 1 }, { "__softplus", 1 },
	{ "__sqrt", 1 }, { "__tan", 1 }, { "__log1p", 1 }, { "__log", 1 },
	{ "__pow", 2 }, { "__sign", 1 }, { "__sin", 1 }, { "__tanh", 1 },
};

int math_builtin_args(const char *name)
{
	unsigned i;

	for (i = 0; i < sizeof(math_builtins) / sizeof(math_builtins[0]); i++)
		if (!strcmp(name, math_builtins[i].name))
			return math_builtins[i].nargs;
	return 0;
}

bool const_eval(const struct node *e, long long *v)
{
	long long a, b;

	switch (e->kind) {
	case E_INT:
		/* a u64 beyond s64's range is not a long long */
		if (e->flag == EL_U64 && e->ival < 0)
			return false;
		*v = e->ival;
		return true;
	case E_UNARY:
		if (!const_eval(e->kids[0], &a))
			return false;
		if (!strcmp(e->name, "-"))
			*v = -a;
		else if (!strcmp(e->name, "+"))
			*v = a;
		else
			return false;
		return true;
	case E_SPAN:	/* a dimension of data or of a shape */
		return e->sym && e->ival >= 0 && e->ival < e->sym->type.rank &&
		       const_eval(e->sym->type.dims[e->ival], v);
	case E_UBOUND:
		return e->kids[0]->sym && e->kids[0]->sym->ubound &&
		       const_eval(e->kids[0]->sym->ubound, v);
	case E_ID:	/* an immutable int set once by a constant: `int M = 16` */
		return e->sym && e->sym->kind == SY_VAR && !e->sym->mutable_ &&
		       e->sym->type.kind == TY_SCALAR && e->sym->type.elem == EL_INT &&
		       e->sym->decl && e->sym->decl->kind == N_DECL &&
		       e->sym->decl->nkids == 1 && const_eval(e->sym->decl->kids[0], v);
	case E_BINARY:
		if (!const_eval(e->kids[0], &a) || !const_eval(e->kids[1], &b))
			return false;
		if (e->name[1] || strchr("<>", e->name[0])) {
			static const char *const ops[] = {
				"==", "!=", "<", ">", "<=", ">=", "&&", "||",
			};
			int i;

			for (i = 0; i < 8 && strcmp(e->name, ops[i]); i++)
				;
			switch (i) {
			case 0: *v = a == b; return true;
			case 1: *v = a != b; return true;
			case 2: *v = a < b; return true;
			case 3: *v = a > b; return true;
			case 4: *v = a <= b; return true;
			case 5: *v = a >= b; return true;
			case 6: *v = a && b; return true;
			case 7: *v = a || b; return true;
			default: return false;
			}
		}
		switch (e->name[0]) {
		case '+': *v = a + b; return true;
		case '-': *v = a - b; return true;
		case '*': *v = a * b; return true;
		case '/': if (!b) return false; *v = a / b; return true;
		case '%': if (!b) return false; *v = a % b; return true;
		default: return false;
		}
	case E_CALL:
		if (!is_align_call(e) || e->nkids != 2 ||
		    !const_eval(e->kids[0], &a) || !const_eval(e->kids[1], &b) || !b)
			return false;
		*v = align_value(e->name, a, b);
		return true;
	default:
		return false;
	}
}

bool span_dim_const(const struct sym *s, int k, long long *v)
{
	return const_eval(s->type.dims[k], v);
}

void parby_parts(const struct node *par, struct node ***names, int *nnames,
		 struct node ***extents, int *nextents)
{
	struct node *pb = par->kids[0];

	*names = pb->kids[0]->kids;
	*nnames = pb->kids[0]->nkids;
	if (pb->ival) {
		*extents = pb->kids[1]->kids;
		*nextents = pb->kids[1]->nkids;
	} else {
		*extents = &pb->kids[1];
		*nextents = 1;
	}
}

/* a host symbol used inside a kernel becomes one of its arguments */
bool kernel_captures(const struct kernel *k, const struct sym *s)
{
	int i;

	for (i = 0; i < k->ncaps; i++)
		if (k->caps[i] == s)
			return true;
	return false;
}

static void capture_now(struct kernel *k, struct sym *s, struct loc loc);
static void capture_expr(const struct node *e);

static void capture(struct sym *s, struct loc loc)
{
	struct kernel *k = cur_kernel;
	int i;

	if (!k || s->level > 0)
		return;
	if (s->kind == SY_ALIAS) {
		/* no data of its own: its data and what its shape and
		 * layout are computed from */
		capture(s->target, loc);
		for (i = 0; i < s->type.rank; i++)
			capture_expr(s->type.dims[i]);
		if (s->view_off) {
			capture_expr(s->view_off);
			for (i = 0; i < s->type.rank; i++)
				capture_expr(s->view_strides[i]);
		}
		return;
	}
	if (s->kind == SY_DIM && s->dim_of) {
		/* decided when the kernel is complete (finish_dim_caps) */
		for (i = 0; i < k->ndim_caps; i++)
			if (k->dim_caps[i] == s)
				return;
		if (k->ndim_caps == MAX_CAPTURES)
			diag_error(loc, "not supported yet: more than %d captured "
				   "values", MAX_CAPTURES);
		k->dim_caps[k->ndim_caps++] = s;
		return;
	}
	capture_now(k, s, loc);
}

/* a parameter's dimension: its own argument unless the parameter's
 * dimensions are arguments already */
static void finish_dim_caps(struct kernel *k)
{
	long long v;
	int i;

	for (i = 0; i < k->ndim_caps; i++) {
		struct sym *d = k->dim_caps[i];

		if (!kernel_captures(k, d->dim_of) ||
		    span_dim_const(d->dim_of, d->dim_index, &v))
			capture_now(k, d, k->par->loc);
	}
}

static void capture_now(struct kernel *k, struct sym *s, struct loc loc)
{
	int i, n = 1;

	if (kernel_captures(k, s))
		return;
	if (s->type.kind == TY_STREAM)
		diag_error(loc, "not supported yet: stream '%s' in a parallel body", s->name);
	if (s->type.kind == TY_FUTURE || s->ptr)
		diag_error(loc, "not supported yet: future '%s' in a parallel body", s->name);
	if (s->type.kind == TY_SPAN) {
		long long v;

		for (i = 0; i < s->type.rank; i++)
			if (!span_dim_const(s, i, &v))
				n++;
	}
	if (k->ncaps == MAX_CAPTURES || k->nargs + n > NPU_MAX_KERNEL_ARGS)
		diag_error(loc, "not supported yet: more than %d captured values",
			   NPU_MAX_KERNEL_ARGS);
	k->caps[k->ncaps++] = s;
	k->nargs += n;
}

static void capture_expr(const struct node *e);
/* views are dma.copy operands only */
static bool view_ok;
static struct type check_view(struct node *e);

static const char *ordinal(int k)
{
	static char buf[16];

	snprintf(buf, sizeof(buf), "%d%s", k + 1,
		 k == 0 ? "st" : k == 1 ? "nd" : k == 2 ? "rd" : "th");
	return buf;
}

/* the values of bounded variables inside an if (or inthreads) whose
 * condition limits them: `t < 2`, `p > 0 && p <= 3` */
static struct {
	const struct sym *s;
	long long lo, hi;
} narrow[32];
static int nnarrow;

static void narrow_by(const struct node *c)
{
	const struct node *v, *k;
	long long n, lo = -(1LL << 62), hi = 1LL << 62;
	const char *op;
	bool flip;

	if (c->kind != E_BINARY)
		return;
	if (!strcmp(c->name, "&&")) {
		narrow_by(c->kids[0]);
		narrow_by(c->kids[1]);
		return;
	}
	op = c->name;
	flip = c->kids[0]->kind != E_ID;
	v = flip ? c->kids[1] : c->kids[0];
	k = flip ? c->kids[0] : c->kids[1];
	if (v->kind != E_ID || !v->sym || !const_eval(k, &n) ||
	    nnarrow == (int)(sizeof(narrow) / sizeof(narrow[0])))
		return;
	if (flip)	/* c < v is v > c */
		op = !strcmp(op, "<") ? ">" : !strcmp(op, ">") ? "<" :
		     !strcmp(op, "<=") ? ">=" : !strcmp(op, ">=") ? "<=" : op;
	if (!strcmp(op, "<"))
		hi = n - 1;
	else if (!strcmp(op, "<="))
		hi = n;
	else if (!strcmp(op, ">"))
		lo = n + 1;
	else if (!strcmp(op, ">="))
		lo = n;
	else if (!strcmp(op, "=="))
		lo = hi = n;
	else
		return;
	narrow[nnarrow].s = v->sym;
	narrow[nnarrow].lo = lo;
	narrow[nnarrow].hi = hi;
	nnarrow++;
}

/* the values an integer index can take, where known: constants, the
 * variables of parallel-by and of foreach/with (from 0 to their bound,
 * within the conditions of the ifs around), immutable integers set from
 * those, and their arithmetic */
static bool index_range(const struct node *e, long long *lo, long long *hi)
{
	long long a0, a1, b0, b1, v;
	const struct sym *s = e->sym;
	int i;

	if (const_eval(e, &v)) {
		*lo = *hi = v;
		return true;
	}
	switch (e->kind) {
	case E_ID:
		if (!s)
			return false;
		if ((s->kind == SY_PVAR ||
		     (s->kind == SY_LOOPVAR && s->decl &&
		      !(s->decl->kind == N_RANGE && s->decl->nkids))) &&
		    s->ubound && const_eval(s->ubound, &v) && v > 0) {
			*lo = 0;
			*hi = v - 1;
			for (i = 0; i < nnarrow; i++) {
				if (narrow[i].s != s)
					continue;
				if (narrow[i].lo > *lo)
					*lo = narrow[i].lo;
				if (narrow[i].hi < *hi)
					*hi = narrow[i].hi;
			}
			return *lo <= *hi;
		}
		if (s->kind == SY_VAR && !s->mutable_ && s->decl &&
		    s->decl->kind == N_DECL && s->decl->nkids == 1)
			return index_range(s->decl->kids[0], lo, hi);
		return false;
	case E_BINARY:
		if (!index_range(e->kids[0], &a0, &a1))
			return false;
		if (!strcmp(e->name, "%")) {
			/* a non-negative value modulo a positive constant */
			if (!const_eval(e->kids[1], &v) || v <= 0 || a0 < 0)
				return false;
			*lo = 0;
			*hi = a1 < v ? a1 : v - 1;
			return true;
		}
		if (!index_range(e->kids[1], &b0, &b1))
			return false;
		if (!strcmp(e->name, "+")) {
			*lo = a0 + b0;
			*hi = a1 + b1;
		} else if (!strcmp(e->name, "-")) {
			*lo = a0 - b1;
			*hi = a1 - b0;
		} else if (!strcmp(e->name, "*")) {
			long long p[4] = { a0 * b0, a0 * b1, a1 * b0, a1 * b1 };

			*lo = *hi = p[0];
			for (i = 1; i < 4; i++) {
				if (p[i] < *lo)
					*lo = p[i];
				if (p[i] > *hi)
					*hi = p[i];
			}
		} else {
			return false;
		}
		return true;
	default:
		return false;
	}
}

static const struct node *find_incdec(const struct node *e)
{
	const struct node *f;
	int i;

	if (e->kind == E_INCDEC)
		return e;
	for (i = 0; i < e->nkids; i++)
		if ((f = find_incdec(e->kids[i])))
			return f;
	return NULL;
}

/* the subscripts of an element of an array (of spanned data or of
 * events) s: one integer per extent, each checked where its values are
 * known (the rest when it runs, emit.c) */
static void check_subscripts(struct node *ix, const struct sym *s,
			     struct loc at)
{
	int k;

	/* of events, fewer name each event they select (a row of e[2][2]) */
	if (ix->nkids != s->narr && !(s->kind == SY_EVENT && ix->nkids < s->narr))
		diag_error(at, "invalid array access: '%s' has %d dimension%s, but "
			   "%d %s used", s->name, s->narr, s->narr == 1 ? "" : "s",
			   ix->nkids, ix->nkids == 1 ? "was" : "were");
	for (k = 0; k < ix->nkids; k++) {
		struct node *e = ix->kids[k];
		struct type t = check_expr(e);
		long long lo, hi;

		if (!is_integer(t))
			diag_error(e->loc, "type mismatch: index of array '%s' is %s, "
				   "not an integer", s->name, kind_text(t));
		/* the element's address is computed at each use of it */
		if (find_incdec(e))
			diag_error(find_incdec(e)->loc, "not supported yet: ++ or -- "
				   "in a subscript of array '%s'", s->name);
		if (!index_range(e, &lo, &hi))
			continue;
		if (lo == hi && (lo < 0 || lo >= s->arr[k]))
			diag_error(e->loc, "index %lld is out of bounds of the %s "
				   "dimension of array '%s', where the valid range is "
				   "[0, %ld)", lo, ordinal(k), s->name, s->arr[k]);
		/* an index below 0 may be excluded by a condition around it:
		 * checked when it runs */
		if (hi >= s->arr[k])
			diag_error(e->loc, "index out of bounds of the %s dimension of "
				   "array '%s': it reaches %lld, the valid range is "
				   "[0, %ld)", ordinal(k), s->name, hi, s->arr[k]);
	}
}

/* x[i][j] of an array of spanned data: a symbol of that element, its
 * address set when it is emitted (emit.c) */
static struct sym *array_element(struct node *id, struct sym *s)
{
	struct sym *el = xmalloc(sizeof(*el));
	int k;

	check_subscripts(id->index, s, id->loc);
	*el = *s;
	el->narr = 0;
	el->array_of = s;
	el->type.rank = s->type.rank - s->narr;
	for (k = 0; k < el->type.rank; k++)
		el->type.dims[k] = s->type.dims[k + s->narr];
	el->next_in_func = NULL;
	return el;
}

/* x = a[i][j] (or a[i][j].span_as(...)): x names the element at
 * constant indices, its address the array's plus a constant */
static void alias_element(struct sym *x, const struct node *ref)
{
	const struct sym *a = ref->sym->array_of;
	long long off = 0, n = 1, v;
	char buf[300];
	int k;

	for (k = 0; k < ref->index->nkids; k++) {
		if (!const_eval(ref->index->kids[k], &v))
			diag_error(ref->index->kids[k]->loc, "not supported yet: "
				   "naming an element of array '%s' at an index not "
				   "known at compile time", a->name);
		off = off * a->arr[k] + v;
	}
	for (k = a->narr; k < a->type.rank; k++) {
		if (!span_dim_const(a, k, &v))
			diag_error(ref->loc, "not supported yet: naming an element "
				   "of array '%s' of a size not known at compile time",
				   a->name);
		n *= v;
	}
	snprintf(buf, sizeof(buf), "(%s + %lldLL)", a->cname, off * n);
	x->cname = xstrdup(buf);
	/* the array is what a kernel captures */
	x->target = (struct sym *)a;
}

/* the buffer a future copied into; an mma's future has none */
static struct sym *future_buffer(const struct sym *f, struct loc at)
{
	if (!f->target)
		diag_error(at, "type mismatch: '%s' is an mma's future, which "
			   "holds no data (its accumulator is the result)", f->name);
	return f->target;
}

/* names of the fragments of host code's mma runs so far (host_mma_run) */
static const char **host_frags;
static int nhost_frags;

static void unknown_identifier(struct loc at, const char *name)
{
	int i;

	for (i = 0; i < nhost_frags; i++)
		if (!strcmp(host_frags[i], name))
			diag_error(at, "not supported yet: mma fragment '%s' of host "
				   "code used after other statements (consecutive mma "
				   "statements of host code run on the npu as one "
				   "launch)", name);
	diag_error(at, "unknown identifier '%s'", name);
}

static struct sym *resolve(struct node *id)
{
	struct sym *s = lookup(id->name);

	if (!s)
		unknown_identifier(id->loc, id->name);
	if (s->kind == SY_SPAN && s->narr && !id->index)
		diag_error(id->loc, "invalid array access: '%s' is an array of %d "
			   "dimension%s, an element is '%s[i]%s'", s->name, s->narr,
			   s->narr == 1 ? "" : "s", s->name, s->narr > 1 ? "[j]" : "");
	if (s->kind == SY_EVENT)
		/* Choreo's event predicates (`while (e)`) */
		diag_error(id->loc, "not supported yet: event '%s' in an "
			   "expression", s->name);
	if (id->index && !(s->kind == SY_SPAN && s->narr))
		diag_error(id->loc, "type mismatch: '%s' is not an array", s->name);
	id->sym = s;
	if (s->level > deepest_ref)
		deepest_ref = s->level;
	/* a future is not an argument: the buffer it copied into is; an
	 * ituple's integers are */
	if (s->kind == SY_FUTURE) {
		if (s->target)
			capture(s->target, id->loc);
	} else if (s->kind == SY_SHAPE || s->kind == SY_ALIAS) {
		int k;

		if (s->kind == SY_ALIAS)
			capture(s->target, id->loc);
		/* no data: its dimensions' expressions are what a kernel needs */
		for (k = 0; k < s->type.rank; k++)
			capture_expr(s->type.dims[k]);
		if (s->view_off) {
			capture_expr(s->view_off);
			for (k = 0; k < s->type.rank; k++)
				capture_expr(s->view_strides[k]);
		}
	} else if (s->kind == SY_TUPLE) {
		int k;

		/* by name: a foreach may have re-bound them */
		for (k = 0; k < s->type.rank; k++)
			capture(lookup(s->elems[k]->name), id->loc);
	} else {
		capture(s, id->loc);
	}
	if (id->index) {
		s = array_element(id, s);
		id->sym = s;
	}
	return s;
}

/* a name whose shape is wanted: a future's is its buffer's (f.span) */
static struct sym *resolve_data(struct node *id)
{
	struct sym *s = resolve(id);

	if (s->kind == SY_FUTURE) {
		slot_data_used(s, id->loc);
		s = future_buffer(s, id->loc);
		id->sym = s;
	}
	return s;
}

/* an expression checked elsewhere (a bound) used again in a kernel:
 * capture what it refers to, keeping its bindings */
static void capture_expr(const struct node *e)
{
	int i;

	if (e->sym && e->sym->kind == SY_SHAPE) {
		/* no data: its dimensions' expressions are what a kernel needs */
		for (i = 0; i < e->sym->type.rank; i++)
			capture_expr(e->sym->type.dims[i]);
	} else if (e->sym) {
		capture(e->sym, e->loc);
	}
	if (e->kind == E_UBOUND && e->kids[0]->sym && e->kids[0]->sym->ubound)
		capture_expr(e->kids[0]->sym->ubound);
	for (i = 0; i < e->nkids; i++)
		capture_expr(e->kids[i]);
}

static struct type arith(struct type a, struct type b)
{
	if (a.elem == EL_F64 || b.elem == EL_F64)
		return scalar(EL_F64);
	if (elem_is_float(a.elem) || elem_is_float(b.elem))
		return scalar(EL_F32);
	/* as in C: u64 with any narrower integer is u64 */
	if (a.elem == EL_U64 || b.elem == EL_U64)
		return scalar(EL_U64);
	if (a.elem == EL_S64 || b.elem == EL_S64)
		return scalar(EL_S64);
	return scalar(EL_INT);
}

static const char *kind_text(struct type t)
{
	switch (t.kind) {
	case TY_SPAN: return "spanned data";
	case TY_STREAM: return "a stream";
	case TY_STRING: return "a string";
	case TY_FUTURE: return "a future";
	case TY_VOID: return "void";
	case TY_TUPLE: return "an ituple";
	default: return t.elem == EL_BOOL ? "a boolean" : "a number";
	}
}

static void want_numeric(struct node *e, struct type t)
{
	if (!is_numeric(t))
		diag_error(e->loc, "type mismatch: %s where a number is expected",
			   kind_text(t));
}

static struct type check_at(struct node *e)
{
	struct sym *s = resolve(&(struct node){ .kind = E_ID, .loc = e->loc,
						 .name = e->name, .index = e->index });
	int i;

	if (e->flag) {		/* f.data.at(...) */
		if (s->kind != SY_FUTURE)
			diag_error(e->loc, "type mismatch: '%s' is not a future", s->name);
		slot_data_used(s, e->loc);
		s = future_buffer(s, e->loc);
		capture(s, e->loc);
	}
	e->sym = s;
	if (s->type.kind != TY_SPAN || s->kind == SY_SHAPE)
		diag_error(e->loc, "type mismatch: '%s' is not spanned data", s->name);
	/* an ituple index stands for its integers */
	for (i = 0; i < e->nkids; i++) {
		struct node *ix = e->kids[i];
		struct sym *t;
		int k;

		if (ix->kind != E_ID || !(t = lookup(ix->name)) || t->kind != SY_TUPLE)
			continue;
		if (e->nkids - 1 + t->type.rank > MAX_RANK)
			diag_error(ix->loc, "type mismatch: too many indices");
		memmove(&e->kids[i + t->type.rank], &e->kids[i + 1],
			(e->nkids - i - 1) * sizeof(e->kids[0]));
		for (k = 0; k < t->type.rank; k++) {
			struct node *el = node_new(E_ID, ix->loc);

			el->name = t->elems[k]->name;
			e->kids[i + k] = el;
		}
		e->nkids += t->type.rank - 1;
		i += t->type.rank - 1;
	}
	if (e->nkids != s->type.rank)
		diag_error(e->loc, "type mismatch: '%s' has rank %d but .at() has %d "
			   "index%s", s->name, s->type.rank, e->nkids,
			   e->nkids == 1 ? "" : "es");
	for (i = 0; i < e->nkids; i++) {
		struct type t = check_expr(e->kids[i]);

		if (!is_integer(t))
			diag_error(e->kids[i]->loc, "type mismatch: index of '%s' is "
				   "%s, not an integer", s->name, kind_text(t));
	}
	return scalar(s->type.elem);
}

/* at: where an error is reported (an assignment's operator, as Choreo
 * reports it; the operand of ++/--) */
static void check_mutable(struct node *lv, struct loc at)
{
	if (lv->kind == E_AT)
		return;
	if (lv->sym->type.kind == TY_SPAN)
		diag_error(at, "type mismatch: cannot assign to spanned data '%s'",
			   lv->name);
	if (lv->sym->type.kind != TY_SCALAR)
		diag_error(at, "type mismatch: cannot assign to %s",
			   kind_text(lv->sym->type));
	if (!lv->sym->mutable_)
		diag_error(at, "'%s' is not mutable", lv->name);
	if (cur_level > lv->sym->level && lv->sym->level == 0 && cur_kernel)
		diag_error(at, "not supported yet: assigning host variable "
			   "'%s' in a parallel body", lv->name);
}

static struct type check_lvalue(struct node *lv)
{
	if (lv->kind == E_AT)
		return check_at(lv);
	resolve(lv);
	return lv->sym->type;
}

static struct type check_call(struct node *e)
{
	struct type a, b;
	int cas;

	if (!strcmp(e->name, "__min") || !strcmp(e->name, "__max")) {
		if (e->nkids != 2)
			diag_error(e->loc, "type mismatch: %s takes 2 arguments", e->name);
		a = check_expr(e->kids[0]);
		want_numeric(e->kids[0], a);
		b = check_expr(e->kids[1]);
		want_numeric(e->kids[1], b);
		return arith(a, b);
	}
	if (is_align_call(e)) {
		if (e->nkids != 2)
			diag_error(e->loc, "type mismatch: %s takes 2 arguments", e->name);
		a = check_expr(e->kids[0]);
		b = check_expr(e->kids[1]);
		if (!is_integer(a) || !is_integer(b))
			diag_error(e->loc, "type mismatch: %s needs integers", e->name);
		return arith(a, b);
	}
	if (math_builtin_args(e->name)) {
		int i, n = math_builtin_args(e->name);
		struct type t = scalar(EL_F32);

		/* computed in f32 (CUDA's float functions), in f64 when an
		 * operand is f64; __isfinite is a boolean */
		if (e->nkids != n)
			diag_error(e->loc, "type mismatch: %s takes %d argument%s",
				   e->name, n, n > 1 ? "s" : "");
		for (i = 0; i < n; i++) {
			a = check_expr(e->kids[i]);
			want_numeric(e->kids[i], a);
			if (a.elem == EL_F64 && e->kids[i]->kind != E_FLOAT)
				t = scalar(EL_F64);
		}
		return !strcmp(e->name, "__isfinite") ? scalar(EL_BOOL) : t;
	}
	/* __atomic_*(&x.at(i), v) or (x.at(i), v); __atomic_cas(x.at(i),
	 * expected, desired) */
	cas = !strcmp(e->name, "__atomic_cas");
	if (e->nkids != 2 + cas)
		diag_error(e->loc, "type mismatch: %s takes %d arguments", e->name,
			   2 + cas);
	if (e->kids[0]->kind == E_ADDR)
		e->kids[0] = e->kids[0]->kids[0];
	if (e->kids[0]->kind != E_AT)
		diag_error(e->kids[0]->loc, "type mismatch: %s needs an element "
			   "of spanned data", e->name);
	a = check_at(e->kids[0]);
	b = check_expr(e->kids[1]);
	want_numeric(e->kids[1], b);
	if (cas) {
		b = check_expr(e->kids[2]);
		want_numeric(e->kids[2], b);
	}
	if (elem_is_float(a.elem) && (a.elem == EL_F64 ||
				      (strcmp(e->name, "__atomic_add") &&
				       strcmp(e->name, "__atomic_sub") &&
				       strcmp(e->name, "__atomic_exch"))))
		diag_error(e->loc, "not supported yet: %s on %s", e->name,
			   elem_name(a.elem));
	if (elem_size(a.elem) < 4)
		diag_error(e->loc, "not supported yet: %s on %s", e->name,
			   elem_name(a.elem));
	return a;
}

#define MAX_EXPR_DEPTH	4000
static int expr_depth;

static struct type check_expr_inner(struct node *e);

/* bounded recursion: every later pass walks expressions recursively too */
static struct type check_expr(struct node *e)
{
	struct type t;

	if (++expr_depth > MAX_EXPR_DEPTH)
		diag_error(e->loc, "not supported yet: an expression nested more "
			   "than %d deep", MAX_EXPR_DEPTH);
	t = check_expr_inner(e);
	expr_depth--;
	return t;
}

/*
 * p # q, Choreo's index composition: the bounded variable p * #q + q,
 * whose bound is #p * #q (q's chunks inside each of p's; not
 * commutative). e becomes that arithmetic; the bound is returned, not
 * checked yet. The operands are bounded variables or compositions.
 */
static struct node *compose_index(struct node *e)
{
	struct node *lb, *rb, *mul, *bound;
	struct sym *v;

	if (e->kind == E_BINARY && !strcmp(e->name, "#")) {
		lb = compose_index(e->kids[0]);
		rb = compose_index(e->kids[1]);
		mul = node_new(E_BINARY, e->loc);
		mul->name = xstrdup("*");
		node_add(mul, e->kids[0]);
		node_add(mul, node_clone(rb));
		e->kids[0] = mul;
		e->name = xstrdup("+");
		bound = node_new(E_BINARY, e->loc);
		bound->name = xstrdup("*");
		node_add(bound, lb);
		node_add(bound, rb);
		return bound;
	}
	v = e->kind == E_ID ? lookup(e->name) : NULL;
	if (!v || !v->ubound)
		diag_error(e->loc, "type mismatch: '#' composes bounded variables "
			   "(p # q)");
	bound = node_new(E_UBOUND, e->loc);
	node_add(bound, node_clone(e));
	return bound;
}

static struct node *find_func(const char *name)
{
	int i;

	for (i = 0; i < program->root->nkids; i++)
		if (!strcmp(program->root->kids[i]->name, name))
			return program->root->kids[i];
	return NULL;
}

/* where a call's spanned result may go: a statement (dropped) or the
 * spanned data it declares */
static bool span_result_ok;

/*
 * Extension: host code calls another __co__ function of the file, as a C
 * caller would (the callee checks ranks, element types and bound symbols
 * at run time; element types and ranks are known here already).
 */
static struct type check_cocall(struct node *e)
{
	struct node *f = find_func(e->name), *params = f->kids[0];
	bool result_ok = span_result_ok;
	int i;

	span_result_ok = false;
	e->callee = f;
	if (cur_level > 0)
		diag_error(e->loc, "not supported yet: calling a __co__ function "
			   "in a parallel body");
	if (e->nkids != params->nkids)
		diag_error(e->loc, "type mismatch: '%s' takes %d argument%s, %d given",
			   f->name, params->nkids, params->nkids == 1 ? "" : "s",
			   e->nkids);
	for (i = 0; i < e->nkids; i++) {
		struct node *a = e->kids[i], *p = params->kids[i];
		struct type t;

		if (p->type.kind == TY_SPAN || p->type.kind == TY_STREAM) {
			if (a->kind != E_ID)
				diag_error(a->loc, "type mismatch: argument '%s' of '%s' "
					   "must name %s", p->name, f->name,
					   p->type.kind == TY_SPAN ? "spanned data" :
					   "a stream");
			t = resolve(a)->type;
			if (t.kind != p->type.kind)
				diag_error(a->loc, "type mismatch: argument '%s' of '%s' "
					   "is %s", p->name, f->name, kind_text(p->type));
			if (t.kind == TY_SPAN && (t.elem != p->type.elem ||
						  t.rank != p->type.rank))
				diag_error(a->loc, "type mismatch: argument '%s' of '%s' "
					   "is %s[rank %d], '%s' is %s[rank %d]", p->name,
					   f->name, elem_name(p->type.elem), p->type.rank,
					   a->name, elem_name(t.elem), t.rank);
			continue;
		}
		t = check_expr(a);
		check_assignable(a->loc, scalar(p->type.elem), t);
	}
	if (f->type.kind == TY_SPAN && !result_ok)
		diag_error(e->loc, "not supported yet: the spanned result of '%s' "
			   "outside a declaration of spanned data", f->name);
	if (f->type.kind == TY_SPAN)
		return f->type;
	return f->type.kind == TY_SCALAR ? scalar(f->type.elem) : f->type;
}

/* where a device function's call may be: a statement, a scalar's
 * initialiser, an assignment's value, an if's condition (the context
 * gives its type) */
static bool devcall_ok;

/*
 * call f(a, b) (call-and-device.md): f a device function of the program
 * (device_code.c), in a parallel body; scalars are passed as values,
 * spanned data (x, f.data) as a pointer to its first element.
 */
static void check_devcall(struct node *e)
{
	int i;

	if (find_func(e->name))
		diag_error(e->loc, "'%s' is a __co__ function: Croqtile functions "
			   "cannot call other Croqtile functions ('call' calls a "
			   "device function)", e->name);
	if (cur_level == 0)
		diag_error(e->loc, "unable to call device function '%s' outside the "
			   "parallel-by block(s)", e->name);
	if (!device_function(e->name))
		diag_error(e->loc, "call of '%s', which this file does not define: "
			   "define it as a __device__ function or in a __cok__ { } "
			   "block", e->name);
	for (i = 0; i < e->nkids; i++) {
		struct node *a = e->kids[i];
		struct sym *v = a->kind == E_ID ? lookup(a->name) : NULL;
		struct type t;

		if (v && v->kind == SY_FUTURE)
			diag_error(a->loc, "type mismatch: the %s argument of '%s', "
				   "future '%s', cannot be passed to a device function "
				   "(its data can: %s.data)", ordinal(i), e->name,
				   a->name, a->name);
		if (v && v->kind == SY_FRAG)
			diag_error(a->loc, "not supported yet: mma fragment '%s' as a "
				   "device function's argument", a->name);
		if (a->kind == E_VIEW)
			diag_error(a->loc, "not supported yet: a view as a device "
				   "function's argument (copy it into local or shared "
				   "data first)");
		t = check_expr(a);
		if (t.kind == TY_SPAN && (a->kind == E_ID || a->kind == E_DATA)) {
			if (a->sym->view_off)
				diag_error(a->loc, "not supported yet: view '%s' as a "
					   "device function's argument", a->sym->name);
			continue;
		}
		if (t.kind != TY_SCALAR)
			diag_error(a->loc, "type mismatch: the %s argument of '%s' is "
				   "%s, which cannot be passed to a device function",
				   ordinal(i), e->name, a->kind == E_SPAN ? "a shape" :
				   kind_text(t));
	}
}

static struct type check_expr_inner(struct node *e)
{
	struct type t, a, b;
	struct sym *s;
	bool devcall_here = devcall_ok;

	devcall_ok = false;

	switch (e->kind) {
	case E_INT:
		if (e->flag == EL_U32 || e->flag == EL_S64 || e->flag == EL_U64)
			t = scalar(e->flag);
		else
			t = scalar(e->ival > 2147483647LL || e->ival < -2147483648LL ?
				   EL_S64 : EL_INT);
		break;
	case E_FLOAT:
		t = scalar(EL_F64);
		break;
	case E_BOOL:
		t = scalar(EL_BOOL);
		break;
	case E_STRING:
		t.kind = TY_STRING;
		t.elem = EL_NONE;
		break;
	case E_ID:
		if (lookup(e->name) && lookup(e->name)->kind == SY_SHAPE) {
			/* a shape's name stands for the shape: s is s.span */
			e->kind = E_SPAN;
			e->ival = -1;
			t = check_expr_inner(e);
			break;
		}
		s = resolve(e);
		t = s->type;
		break;
	case E_AT:
		t = check_at(e);
		break;
	case E_VIEW:
		t = check_view(e);
		break;
	case E_COCALL:
		if (!strcmp(e->name, "select") || !strcmp(e->name, "swap") ||
		    !strcmp(e->name, "rotate"))
			diag_error(e->loc, "not supported yet: %s here (%s)", e->name,
				   e->name[1] == 'e' ? "a dma.copy's destination, or "
				   "`x = select(...);`" : "a statement of its own");
		if (e->flag == COCALL_ELEM_OFFSET) {
			/* index(1)(-2): the element is a bounded variable,
			 * then that variable's offset form */
			struct node *off = e->kids[--e->nkids];
			long long k;

			s = lookup(e->name);
			if (!s || s->kind != SY_TUPLE)
				diag_error(e->loc, "type mismatch: '%s' is not an ituple",
					   e->name);
			if (e->nkids != 1 || !const_eval(e->kids[0], &k) || k < 0 ||
			    k >= s->type.rank)
				diag_error(e->loc, "type mismatch: element of an ituple "
					   "of rank %d needs a constant index below it",
					   s->type.rank);
			e->name = s->elems[k]->name;
			e->kids[0] = off;
			e->flag = 0;
		}
		if (e->nkids == 1 && lookup(e->name) && lookup(e->name)->ubound) {
			/* y(k): a bounded variable's value k, y(-k) its k-th
			 * from the end (dma-advanced.md: y(-1) is y's last
			 * value within its bound), as in chunkat's indices */
			struct node *ub, *off = e->kids[0];
			long long k;

			if (!const_eval(off, &k))
				diag_error(off->loc, "type mismatch: %s(k) needs a "
					   "constant k", e->name);
			ub = node_new(E_UBOUND, e->loc);
			node_add(ub, ident_node(e->loc, e->name));
			e->nkids = 0;
			if (k >= 0) {
				e->kind = E_INT;
				e->ival = k;
				e->name = NULL;
			} else {
				e->kind = E_BINARY;
				e->name = xstrdup("+");
				node_add(e, ub);
				node_add(e, int_node(e->loc, k));
			}
			t = check_expr_inner(e);
			break;
		}
		if (lookup(e->name) && lookup(e->name)->kind == SY_SHAPE) {
			long long k;

			/* a shape's dimension: s(0) */
			if (e->nkids != 1 || !const_eval(e->kids[0], &k))
				diag_error(e->loc, "type mismatch: a dimension of shape "
					   "'%s' needs one constant index", e->name);
			e->kind = E_SPAN;
			e->ival = k;
			e->nkids = 0;
			t = check_expr_inner(e);
			break;
		}
		if (lookup(e->name) || !find_func(e->name)) {
			struct node *arg, *id;

			/* not a function: an ituple's element, idx(0) */
			if (e->nkids != 1) {
				if (!lookup(e->name))
					diag_error(e->loc, "unknown identifier '%s'", e->name);
				diag_error(e->loc, "type mismatch: '%s' is not a __co__ "
					   "function", e->name);
			}
			arg = e->kids[0];
			id = node_new(E_ID, e->loc);
			id->name = e->name;
			e->kind = E_ELEM;
			e->nkids = 0;
			node_add(e, id);
			node_add(e, arg);
			e->name = NULL;
			t = check_expr_inner(e);
			break;
		}
		t = check_cocall(e);
		break;
	case E_ELEM: {
		long long k;

		s = resolve(e->kids[0]);
		if (s->kind != SY_TUPLE)
			diag_error(e->loc, "type mismatch: '%s' is not an ituple", s->name);
		if (!const_eval(e->kids[1], &k) || k < 0 || k >= s->type.rank)
			diag_error(e->kids[1]->loc, "type mismatch: element of an ituple "
				   "of rank %d needs a constant index below it",
				   s->type.rank);
		/* it is that bounded integer */
		e->kind = E_ID;
		e->name = s->elems[k]->name;
		e->nkids = 0;
		t = check_expr(e);
		break;
	}
	case E_SPAN:
		s = resolve_data(e);
		if (s->type.kind != TY_SPAN)
			diag_error(e->loc, "type mismatch: '%s' is not spanned data", s->name);
		if (e->ival >= s->type.rank)
			diag_error(e->loc, "type mismatch: '%s' has rank %d", s->name,
				   s->type.rank);
		if (e->ival >= 0) {
			t = scalar(EL_S64);
		} else {
			t = s->type;
			t.kind = TY_VOID;	/* a shape: only printed or used as dims */
			t.elem = EL_NONE;
		}
		break;
	case E_DATA:
		s = resolve(e);
		if (s->kind != SY_FUTURE)
			diag_error(e->loc, "type mismatch: '%s' is not a future", s->name);
		slot_data_used(s, e->loc);
		capture(future_buffer(s, e->loc), e->loc);
		e->sym = s->target;	/* f.data is the buffer f copied into */
		t = s->target->type;
		break;
	case E_COUNT:
		s = resolve_data(e->kids[0]);	/* |f.span|: its data's */
		if (s->type.kind != TY_SPAN)
			diag_error(e->loc, "type mismatch: '%s' is not spanned data", s->name);
		t = scalar(EL_S64);
		break;
	case E_UBOUND:
		s = resolve(e->kids[0]);
		if (!s->ubound)
			diag_error(e->loc, "type mismatch: '%s' is not a bounded variable",
				   s->name);
		capture_expr(s->ubound);
		t = scalar(EL_INT);
		break;
	case E_CAST:
		a = check_expr(e->kids[0]);
		want_numeric(e->kids[0], a);
		t = e->type;
		break;
	case E_CALL:
		t = check_call(e);
		break;
	case E_DEVCALL:
		if (!devcall_here)
			diag_error(e->loc, "'call' inside an expression: a device "
				   "function's result can only initialise or be "
				   "assigned to a variable, or be an if's condition");
		check_devcall(e);
		t = scalar(EL_NONE);	/* the context's (devcall_ok) */
		break;
	case E_INCDEC:
		t = check_lvalue(e->kids[0]);
		check_mutable(e->kids[0], e->kids[0]->loc);
		want_numeric(e->kids[0], t);
		if (elem_is_half(t.elem))
			diag_error(e->loc, "not supported yet: %s on %s", e->name[0] == 'p' ?
				   e->name + 4 : e->name, elem_name(t.elem));
		break;
	case E_ADDR:
		diag_error(e->loc, "not supported yet: '&' outside an atomic built-in");
	case E_UNARY:
		a = check_expr(e->kids[0]);
		want_numeric(e->kids[0], a);
		if (e->name[0] == '!')
			t = scalar(EL_BOOL);
		else if (e->name[0] == '~' && !is_integer(a))
			diag_error(e->loc, "type mismatch: '~' needs an integer");
		else
			t = a.elem == EL_BOOL ? scalar(EL_INT) : a;
		break;
	case E_TERNARY:
		a = check_expr(e->kids[0]);
		want_numeric(e->kids[0], a);
		a = check_expr(e->kids[1]);
		want_numeric(e->kids[1], a);
		b = check_expr(e->kids[2]);
		want_numeric(e->kids[2], b);
		t = a.elem == EL_BOOL && b.elem == EL_BOOL ? a : arith(a, b);
		break;
	case E_BINARY:
		if (!strcmp(e->name, "#"))
			compose_index(e);	/* now p * #q + q */
		a = check_expr(e->kids[0]);
		want_numeric(e->kids[0], a);
		b = check_expr(e->kids[1]);
		want_numeric(e->kids[1], b);
		/* Choreo promotes neither of f16 and bf16 to the other */
		if ((a.elem == EL_F16 && b.elem == EL_BF16) ||
		    (a.elem == EL_BF16 && b.elem == EL_F16))
			diag_error(e->loc, "type mismatch: %s and %s in '%s' (convert one "
				   "with __to<f32>)", elem_name(a.elem), elem_name(b.elem),
				   e->name);
		if (strchr("<>=!", e->name[0]) && strcmp(e->name, "<<") &&
		    strcmp(e->name, ">>"))
			t = scalar(EL_BOOL);
		else if (!strcmp(e->name, "&&") || !strcmp(e->name, "||"))
			t = scalar(EL_BOOL);
		else if (strchr("%&|^", e->name[0]) || !strcmp(e->name, "<<") ||
			 !strcmp(e->name, ">>")) {
			if (!is_integer(a) || !is_integer(b))
				diag_error(e->loc, "type mismatch: '%s' needs integers",
					   e->name);
			t = arith(a, b);
		} else {
			t = arith(a, b);
		}
		break;
	default:
		diag_error(e->loc, "syntax error, unexpected expression");
	}
	e->ety = t;
	return t;
}

/* value of type `from` stored into a `to` */
static void check_assignable(struct loc loc, struct type to, struct type from)
{
	if (to.kind == TY_SCALAR && from.kind == TY_SCALAR) {
		/* Choreo: `bool b = 0;` is an error */
		if (to.elem == EL_BOOL && from.elem != EL_BOOL)
			diag_error(loc, "type mismatch: cannot assign a number to a "
				   "boolean");
		return;
	}
	if (to.kind == TY_SCALAR && from.kind == TY_SPAN)
		diag_error(loc, "type mismatch: cannot assign spanned data to a scalar");
	if (to.kind == TY_SCALAR && from.kind == TY_STRING)
		diag_error(loc, "type mismatch: cannot assign a string to a number");
	diag_error(loc, "type mismatch: cannot assign %s to %s", kind_text(from),
		   kind_text(to));
}

static void check_scalar_decl(struct node *d)
{
	struct sym *s;
	struct type t = d->type;

	if (d->nkids && d->kids[0]->kind == E_DEVCALL) {
		if (t.elem == EL_NONE)
			diag_error(d->loc, "unable to deduce the type of '%s' from a "
				   "call (mutable int %s = call ...)", d->name, d->name);
		if (!d->flag)
			diag_error(d->loc, "'%s' must be annotated as a mutable type "
				   "to hold a call's result", d->name);
		devcall_ok = true;
		check_expr(d->kids[0]);
		d->kids[0]->ety = t;
	} else if (d->nkids) {
		struct type it = check_expr(d->kids[0]);

		if (t.elem == EL_NONE) {
			if (it.kind == TY_SPAN)
				diag_error(d->kids[0]->loc, "not supported yet: "
					   "aliasing spanned data");
			check_assignable(d->kids[0]->loc, scalar(EL_INT), it);
			t = it;
		} else {
			check_assignable(d->kids[0]->loc, t, it);
		}
	} else if (t.elem == EL_NONE) {
		diag_error(d->loc, "type mismatch: '%s' needs a type or an initialiser",
			   d->name);
	}
	s = declare(d->name, SY_VAR, d);
	s->type = t;
	s->mutable_ = d->flag;
	d->sym = s;
}

static void check_dims(struct node *d, struct type *t)
{
	struct type out = *t;
	int i, k;

	out.rank = 0;
	for (i = 0; i < t->rank; i++) {
		struct node *e = t->dims[i], *sh = node_new(N_BLOCK, e->loc);
		struct type dt;

		if ((e->kind == E_BINARY || e->kind == E_DIMLIST) && shape_value(e, sh)) {
			/* f32[a.span / {2, 1}]: its dimensions */
			for (k = 0; k < sh->nkids; k++) {
				if (!is_integer(check_expr(sh->kids[k])))
					diag_error(sh->kids[k]->loc, "type mismatch: a "
						   "dimension must be an integer");
				if (out.rank == MAX_RANK)
					diag_error(d->loc, "not supported yet: rank above %d",
						   MAX_RANK);
				out.dims[out.rank++] = sh->kids[k];
			}
			continue;
		}

		if (e->kind == E_ID && lookup(e->name) &&
		    lookup(e->name)->kind == SY_SHAPE) {
			e->kind = E_SPAN;	/* f32[s]: the shape s */
			e->ival = -1;
		}
		if (e->kind == E_SPAN && e->ival < 0) {
			struct sym *s = resolve_data(e);

			if (s->type.kind != TY_SPAN)
				diag_error(e->loc, "type mismatch: '%s' is not spanned data",
					   s->name);
			for (k = 0; k < s->type.rank; k++) {
				struct node *de;

				if (out.rank == MAX_RANK)
					diag_error(d->loc, "not supported yet: rank above %d",
						   MAX_RANK);
				/* its dimension k, as an expression */
				de = node_new(E_SPAN, e->loc);
				de->name = e->name;
				de->ival = k;
				de->index = e->index;
				check_expr(de);
				/* of shared data sized by host values: those */
				if ((s->storage == ST_SHARED && s->shared_offset < 0) ||
				    s->dyn_local)
					de = s->type.dims[k];
				out.dims[out.rank++] = de;
			}
			continue;
		}
		dt = check_expr(e);
		if (!is_integer(dt))
			diag_error(e->loc, "type mismatch: a dimension must be an integer");
		if (out.rank == MAX_RANK)
			diag_error(d->loc, "not supported yet: rank above %d", MAX_RANK);
		out.dims[out.rank++] = e;
	}
	*t = out;
}

/* an expression of host values only (integers, their arithmetic) */
static bool host_value(struct node *e)
{
	long long v;
	int i;

	switch (e->kind) {
	case E_INT:
		return true;
	case E_UBOUND:	/* a constant extent, or one of host values */
		return const_eval(e, &v) ||
		       (e->kids[0]->sym && e->kids[0]->sym->ubound &&
			host_value(e->kids[0]->sym->ubound));
	case E_ID:
		return e->sym && e->sym->level == 0 &&
		       (e->sym->kind == SY_DIM || e->sym->kind == SY_VAR ||
			e->sym->kind == SY_PARAM) &&
		       e->sym->type.kind == TY_SCALAR && is_integer(e->sym->type);
	case E_SPAN:	/* a dimension of host data */
		if (!e->sym && e->name && !e->nkids && lookup(e->name) &&
		    lookup(e->name)->level == 0)
			resolve_data(e);
		return e->ival >= 0 && !e->nkids && e->sym && e->sym->level == 0 &&
		       (e->sym->kind == SY_PARAM || e->sym->kind == SY_SPAN);
	case E_CALL:	/* cdiv, __alignup, __aligndown: arithmetic */
		if (!e->name || !is_align_call(e))
			return false;
		/* fall through */
	case E_BINARY:
	case E_UNARY:
	case E_TERNARY:
		for (i = 0; i < e->nkids; i++)
			if (!host_value(e->kids[i]))
				return false;
		return e->nkids > 0;
	default:
		return false;
	}
}

/*
 * A dimension of a kernel's own view of host data (x.span_as([B * T, H])
 * in a parallel body: its alias) whose expression is of host values:
 * that expression, so that the launch can count the bytes of data sized
 * by it.
 */
static void host_alias_dims(struct node **pe)
{
	struct node *e = *pe;
	const struct sym *s = e->sym;
	int i;

	if (e->kind == E_SPAN && s && s->level > 0 && s->kind == SY_ALIAS &&
	    !e->nkids && e->ival >= 0 && s->type.kind == TY_SPAN &&
	    e->ival < s->type.rank && host_value(s->type.dims[e->ival])) {
		*pe = s->type.dims[e->ival];
		return;
	}
	for (i = 0; i < e->nkids; i++)
		host_alias_dims(&e->kids[i]);
}

/* shared data with a dimension known only at run time, each of them
 * computed from host values */
static bool dyn_shared_ok(const struct sym *s)
{
	long long v;
	bool dyn = false;
	int i;

	for (i = 0; i < s->type.rank; i++) {
		if (span_dim_const(s, i, &v))
			continue;
		if (!host_value(s->type.dims[i]))
			return false;
		dyn = true;
	}
	return dyn;
}

/* an array's extents (of spanned data or of events): integers known
 * when it compiles, each above 0, as Croqtile has them */
static long array_extents(struct node *ix, const char *name, long *arr)
{
	long count = 1;
	int k;

	if (ix->nkids > MAX_RANK)
		diag_error(ix->loc, "not supported yet: an array of more than %d "
			   "dimensions", MAX_RANK);
	for (k = 0; k < ix->nkids; k++) {
		struct node *e = ix->kids[k];
		struct type t = check_expr(e);
		long long v;

		if (!is_integer(t))
			diag_error(e->loc, "type mismatch: a dimension of array '%s' "
				   "is %s, not an integer", name, kind_text(t));
		if (!const_eval(e, &v))
			diag_error(e->loc, "the dimensions of array '%s' should be "
				   "static (compile-time known integers)", name);
		if (v <= 0)
			diag_error(e->loc, "the dimensions of array '%s' should be "
				   "greater than 0, but got %lld", name, v);
		if (v > (1L << 20) || count * v > (1L << 20))
			diag_error(e->loc, "not supported yet: an array of more than "
				   "%ld elements", 1L << 20);
		arr[k] = (long)v;
		count *= (long)v;
	}
	return count;
}

/* an array of spanned data: its extents go first among its type's
 * dimensions (the elements one after another, row-major) */
static void array_dims(struct node *d)
{
	long arr[MAX_RANK];
	int k, n = d->index->nkids;

	array_extents(d->index, d->name, arr);
	if (d->type.rank + n > MAX_RANK)
		diag_error(d->index->loc, "not supported yet: rank %d with the "
			   "array's dimensions (at most %d)", d->type.rank + n, MAX_RANK);
	memmove(&d->type.dims[n], &d->type.dims[0],
		d->type.rank * sizeof(d->type.dims[0]));
	for (k = 0; k < n; k++)
		d->type.dims[k] = int_node(d->index->kids[k]->loc, arr[k]);
	d->type.rank += n;
}

static void check_span_decl(struct node *d)
{
	struct sym *s;
	long long v;
	int i;
	long bytes;

	if (d->nkids && d->kids[0]->kind == E_COCALL) {
		struct type rt;

		span_result_ok = true;
		rt = check_expr(d->kids[0]);
		span_result_ok = false;
		if (d->kids[0]->kind != E_COCALL || rt.kind != TY_SPAN)
			diag_error(d->kids[0]->loc, "type mismatch: %s where spanned "
				   "data is expected", kind_text(rt));
		if (rt.elem != d->type.elem || rt.rank != d->type.rank)
			diag_error(d->kids[0]->loc, "type mismatch: '%s' returns "
				   "%s[rank %d], '%s' is %s[rank %d]", d->kids[0]->name,
				   elem_name(rt.elem), rt.rank, d->name,
				   elem_name(d->type.elem), d->type.rank);
		/* an unknown name among the dimensions is bound by the result,
		 * as a parameter's are by the caller's data */
		for (i = 0; i < d->type.rank; i++) {
			struct node *dim = d->type.dims[i];

			if (dim->kind == E_ID && !lookup(dim->name)) {
				struct sym *ds = declare(dim->name, SY_DIM, dim);

				ds->type = scalar(EL_S64);
				ds->dim_index = i;
				ds->decl = d;
			}
		}
		check_dims(d, &d->type);
		goto declare_it;
	}
	check_dims(d, &d->type);
	if (d->index)
		array_dims(d);
	if (d->nkids) {
		struct type it = check_expr(d->kids[0]);

		check_assignable(d->kids[0]->loc, scalar(d->type.elem), it);
	}
declare_it:
	/* global data of host code is what the host declares anyway:
	 * memory every block reaches */
	if (d->flag == ST_GLOBAL && !cur_kernel)
		d->flag = ST_DEFAULT;
	s = declare(d->name, SY_SPAN, d);
	s->type = d->type;
	s->mutable_ = true;
	s->storage = d->flag;
	if (d->index) {
		int k;

		/* array_dims put the extents first, as constants */
		s->narr = d->index->nkids;
		for (k = 0; k < s->narr; k++)
			s->arr[k] = (long)d->type.dims[k]->ival;
	}
	d->sym = s;
	/* Croqtile's storage rules (parallel-by.md): shared data lives in
	 * a parallel body, global data outside (local data of host code is
	 * the host's, an extension) */
	if (s->storage == ST_GLOBAL)
		diag_error(d->loc, "global variable '%s' mustn't be declared inside "
			   "parallel-by", d->name);
	if (!cur_kernel) {
		if (s->storage == ST_SHARED)
			diag_error(d->loc, "shared variable '%s' must be declared "
				   "inside parallel-by", d->name);
		return;
	}
	/* scratchpad and stack data need compile-time sizes; shared data
	 * may take its sizes from host values (the launch's scratchpad) */
	bytes = elem_size(s->type.elem);
	/* shared data with {init} in a thread level: every index of every
	 * thread would set it again, so the kernel sets it once when it
	 * starts (an init of host values) */
	if (s->storage == ST_SHARED && cur_level == 2 && d->nkids &&
	    cur_kernel->nshared_inits < MAX_EVENTS &&
	    (const_eval(d->kids[0], &v) || host_value(d->kids[0]))) {
		s->init_hoisted = true;
		cur_kernel->shared_inits[cur_kernel->nshared_inits++] = d;
	}
	/* only for data refused otherwise: the expressions it rewrites may
	 * be shared with others (the same values either way) */
	for (i = 0; i < s->type.rank && !dyn_shared_ok(s); i++)
		if (!span_dim_const(s, i, &v))
			host_alias_dims(&s->type.dims[i]);
	/* local data sized by host values: a thread's stack is sized when
	 * the kernel is built, so each thread's copy goes to the launch's
	 * scratchpad beside the shared data sized at run time */
	if (dyn_shared_ok(s)) {
		if (cur_kernel->ndyn_shared == MAX_EVENTS)
			diag_error(d->loc, "not supported yet: more than %d %s "
				   "buffers sized at run time", MAX_EVENTS,
				   s->storage == ST_SHARED ? "shared" : "shared or local");
		for (i = 0; i < s->type.rank; i++)
			capture_expr(s->type.dims[i]);
		if (s->storage != ST_SHARED) {
			s->storage = ST_LOCAL;
			s->dyn_local = true;
		}
		s->shared_offset = -1;
		cur_kernel->dyn_shared[cur_kernel->ndyn_shared++] = s;
		return;
	}
	for (i = 0; i < s->type.rank; i++) {
		if (!span_dim_const(s, i, &v) || v <= 0)
			diag_error(s->type.dims[i]->loc, "not supported yet: %s data of "
				   "a size known only at run time in a parallel body",
				   s->storage == ST_SHARED ? "shared" : "local");
		bytes *= v;
	}
	if (s->storage == ST_SHARED) {
		cur_kernel->shared_bytes = (cur_kernel->shared_bytes + 15) & ~15L;
		s->shared_offset = cur_kernel->shared_bytes;
		cur_kernel->shared_bytes += bytes;
	} else {
		s->storage = ST_LOCAL;
		cur_kernel->local_bytes += bytes;
	}
}

/* shared event a, b[N] = ready;: counters in the kernel's scratchpad,
 * set when it starts (kernel_gen.c); waits need every thread-level index
 * on a thread of its own */
/* global event e, e[N] (or an event of host code): counters in memory
 * host code allocates, which every launch that names the event is
 * passed; each thread of a launch counts its own waits (kernel_gen.c) */
static void global_event(struct node *d)
{
	struct sym *sy;
	long n = 1;

	sy = declare(d->name, SY_EVENT, d);
	sy->storage = ST_GLOBAL;
	if (d->index) {
		n = array_extents(d->index, d->name, sy->arr);
		if (n > 4096)
			diag_error(d->index->loc, "not supported yet: an event array of "
				   "more than 4096 events");
		sy->narr = d->index->nkids;
	}
	sy->event_slots = n;
	sy->event_array = d->index != NULL;
	sy->event_ready = d->flag;
	/* passed to a kernel as its counters' address */
	sy->type.kind = TY_SPAN;
	sy->type.elem = EL_U32;
	sy->type.rank = 1;
	sy->type.dims[0] = int_node(d->loc, n);
	d->sym = sy;
}

static void check_events(struct node *s)
{
	int i;

	for (i = 0; i < s->nkids; i++) {
		struct node *d = s->kids[i];
		struct sym *sy;
		long long n = 1;
		long arr[MAX_RANK] = { 0 };

		if (s->ival == 2 && cur_kernel)
			diag_error(d->loc, "global event '%s' mustn't be declared "
				   "inside parallel-by", d->name);
		if (!cur_kernel && s->ival == 1)
			diag_error(d->loc, "local event '%s' must be declared inside "
				   "parallel-by", d->name);
		if (!cur_kernel && s->flag == ST_SHARED)
			diag_error(d->loc, "shared event '%s' must be declared inside "
				   "parallel-by", d->name);
		if (!cur_kernel) {
			global_event(d);
			continue;
		}
		if (s->ival) {
			/* local: the thread's own counters (emit.c) */
			sy = declare(d->name, SY_EVENT, d);
			sy->event_ready = d->flag;
			sy->storage = ST_LOCAL;
			sy->event_slots = d->index ?
				array_extents(d->index, d->name, sy->arr) : 1;
			if (sy->event_slots > 4096)
				diag_error(d->index->loc, "not supported yet: an event "
					   "array of more than 4096 events");
			sy->narr = d->index ? d->index->nkids : 0;
			sy->event_array = d->index != NULL;
			d->sym = sy;
			continue;
		}
		if (d->index) {
			n = array_extents(d->index, d->name, arr);
			if (n > 4096)
				diag_error(d->index->loc, "not supported yet: an event "
					   "array of more than 4096 events");
		}
		if (cur_kernel->nevents == MAX_EVENTS)
			diag_error(d->loc, "not supported yet: more than %d events "
				   "in a parallel", MAX_EVENTS);
		sy = declare(d->name, SY_EVENT, d);
		sy->storage = ST_SHARED;
		sy->event_slots = n;
		sy->event_array = d->index != NULL;
		if (d->index) {
			sy->narr = d->index->nkids;
			memcpy(sy->arr, arr, sizeof(arr));
		}
		sy->event_ready = d->flag;
		d->sym = sy;
		cur_kernel->shared_bytes = (cur_kernel->shared_bytes + 15) & ~15L;
		sy->shared_offset = cur_kernel->shared_bytes;
		cur_kernel->shared_bytes += 4 * n;
		cur_kernel->events[cur_kernel->nevents++] = sy;
		cur_kernel->events_fixed = true;
	}
}

/* an operand of trigger or wait: e (of an array: each slot), e[i] (a
 * slot), e.at(order) (a cyclic generation of an event array) */
static void check_event_ref(struct node *r)
{
	struct sym *s = lookup(r->name);
	struct type t;

	if (!s)
		diag_error(r->loc, "unknown identifier '%s'", r->name);
	if (s->kind != SY_EVENT)
		diag_error(r->loc, "type mismatch: '%s' is not an event", r->name);
	r->sym = s;
	if (!cur_kernel)
		diag_error(r->loc, "not supported yet: trigger or wait in host code");
	if (s->storage == ST_GLOBAL) {
		capture(s, r->loc);
		/* a wait needs the triggering index on a thread of its own */
		cur_kernel->events_fixed = true;
	}
	if (r->kind != E_AT)
		return;	/* an array: every slot */
	if (!s->event_array)
		diag_error(r->loc, "type mismatch: '%s' is not an event array",
			   r->name);
	if (r->ival == 2) {	/* e[i][j]: a slot */
		check_subscripts(r->index, s, r->loc);
		return;
	}
	if (s->narr != 1)
		diag_error(r->loc, "'.at(order)' requires a one-dimensional event "
			   "array; '%s' has %d dimensions", r->name, s->narr);
	t = check_expr(r->kids[0]);
	if (!is_integer(t))
		diag_error(r->kids[0]->loc, "type mismatch: an event index must "
			   "be an integer");
}

static void check_decl_group(struct node *b)
{
	int i;

	for (i = 0; i < b->nkids; i++) {
		struct node *d = b->kids[i];

		d->level = cur_level;
		d->par = cur_kernel ? cur_kernel->par : NULL;
		if (d->kind == N_DECL)
			check_scalar_decl(d);
		else
			check_span_decl(d);
	}
}

static struct sym *declare_bounded(struct node *id, struct node *ub,
				   enum sym_kind kind)
{
	struct sym *s = declare(id->name, kind, id);

	s->type = scalar(EL_INT);
	s->ubound = ub;
	id->sym = s;
	return s;
}

/* names and bounds of a with/foreach; the bounds are checked by the caller */
static void declare_withins(struct node *withins)
{
	int i, k;

	for (i = 0; i < withins->nkids; i++) {
		struct node *w = withins->kids[i];
		struct node *names = w->kids[0], *bounds = w->kids[1];
		bool shaped;

		/* shape arithmetic: its dimensions, none of them zero (as
		 * Choreo refuses it) */
		shaped = expand_shapes(bounds) != bounds;
		if (shaped)
			w->kids[1] = bounds = expand_shapes(bounds);
		/* [a.span]: one bound per dimension of a (a shape's or an
		 * ituple's name is its span) */
		for (k = 0; k < bounds->nkids; k++) {
			struct node *b = bounds->kids[k];

			if (b->kind == E_ID && lookup(b->name) &&
			    lookup(b->name)->kind == SY_SHAPE)
				b->kind = E_SPAN, b->ival = -1;

			if (b->kind == E_SPAN && b->ival < 0) {
				struct node *nb = node_new(N_BLOCK, bounds->loc);
				struct sym *s = resolve_data(b);
				int d, j;

				if (s->type.kind != TY_SPAN)
					diag_error(b->loc, "type mismatch: '%s' is not spanned "
						   "data", s->name);
				for (j = 0; j < bounds->nkids; j++) {
					if (j != k) {
						node_add(nb, bounds->kids[j]);
						continue;
					}
					for (d = 0; d < s->type.rank; d++) {
						struct node *de = node_new(E_SPAN, b->loc);

						de->name = b->name;
						de->ival = d;
						de->index = b->index;
						node_add(nb, de);
					}
				}
				w->kids[1] = bounds = nb;
				k = -1;
			}
		}
		for (k = 0; k < bounds->nkids; k++) {
			struct type t = check_expr(bounds->kids[k]);
			long long v;

			if (!is_integer(t))
				diag_error(bounds->kids[k]->loc, "type mismatch: a bound "
					   "must be an integer");
			if (shaped && const_eval(bounds->kids[k], &v) && v == 0)
				diag_error(bounds->kids[k]->loc, "zero value is deduced "
					   "for the mdspan inside the with-in statement");
		}
		if (names->nkids == 1 && bounds->nkids > 1 && !w->name) {
			/* `idx in [m, n]`: an ituple of hidden bounded integers */
			struct node *tn = node_new(E_ID, names->kids[0]->loc);

			tn->name = names->kids[0]->name;
			w->name = tn->name;
			names = node_new(N_BLOCK, names->loc);
			for (k = 0; k < bounds->nkids; k++) {
				struct node *id = node_new(E_ID, tn->loc);
				char buf[256];

				snprintf(buf, sizeof(buf), "%s(%d)", tn->name, k);
				id->name = xstrdup(buf);
				node_add(names, id);
			}
			w->kids[0] = names;
		}
		if (names->nkids != bounds->nkids)
			diag_error(w->loc, "type mismatch: %d names but %d bounds",
				   names->nkids, bounds->nkids);
		if (names->nkids > MAX_RANK && w->name)
			diag_error(w->loc, "not supported yet: an ituple of rank %d",
				   names->nkids);
		for (k = 0; k < names->nkids; k++)
			declare_bounded(names->kids[k], bounds->kids[k], SY_LOOPVAR);
		if (w->name) {
			/* `idx = {x, y} in [...]` or the hidden form: idx names them */
			struct sym *t = declare(w->name, SY_TUPLE, w);

			t->type.kind = TY_TUPLE;
			t->type.rank = names->nkids;
			for (k = 0; k < names->nkids; k++)
				t->elems[k] = names->kids[k]->sym;
		}
	}
}

static void check_body(struct node *b)
{
	push_scope();
	check_block(b);
	pop_scope();
}

/* A parby's names (nm[0..nn), or made-up ones when it names none) into
 * names and its extents ex[0..ne) into exts. */
static void parby_ids(struct node *p, struct node **nm, int nn,
		      struct node **ex, int ne, struct node *names,
		      struct node *exts)
{
	char buf[64];
	int i;

	for (i = 0; i < ne; i++) {
		struct node *id = nn ? nm[i] : node_new(E_ID, p->loc);

		if (!nn) {
			snprintf(buf, sizeof(buf), "__group%d_%d_%d", p->loc.line,
				 p->loc.col, i);
			id->name = xstrdup(buf);
		}
		node_add(names, id);
		node_add(exts, ex[i]);
	}
}

/* the names and extents of a level's parby into names and exts; false
 * if it has a form that cannot be folded */
static bool parby_append(struct node *p, struct node *names, struct node *exts)
{
	struct node **nm, **ex;
	int nn, ne;

	if (p->kids[0]->name)	/* p = {i, j} by ...: an ituple */
		return false;
	parby_parts(p, &nm, &nn, &ex, &ne);
	if (nn && nn != ne)
		return false;
	parby_ids(p, nm, nn, ex, ne, names, exts);
	return true;
}

/*
 * Choreo's group levels (on a GPU a warp of a block's threads, `: group`,
 * or four, `: group-4`) have no counterpart on the npu: a group level
 * folds into the thread level. `parallel g by G : group { parallel t by T
 * : thread {...} }` is `parallel {g, t} by [G, T] : thread` (thread
 * g * T + t, as CUDA numbers them); a group level without a thread level
 * inside is a thread level, one thread per group.
 */
static const struct node *find_kind(const struct node *n, enum node_kind kind)
{
	const struct node *f;
	int i;

	if (!n)
		return NULL;
	if (n->kind == kind)
		return n;
	for (i = 0; i < n->nkids; i++)
		if ((f = find_kind(n->kids[i], kind)))
			return f;
	return NULL;
}

/*
 * A group level whose body holds a parallel level beside other statements
 * (or deeper, inside a foreach) has no thread level to fold into: its
 * groups run one after another, a foreach over the group indices at block
 * level (in a one-block kernel at host level) whose parallels are the
 * block's threads. What the groups of one block share (shared data,
 * barriers, copies) means the same in that order; events from one group
 * to another could wait for a group that has not run yet, and are refused.
 * p becomes the loop (or the block level holding it).
 */
static void sequential_groups(struct node *p)
{
	struct node *pb = p->kids[0], *body = p->kids[2], **nm, **ex;
	struct node *names = node_new(N_BLOCK, pb->loc), *bounds = node_new(N_BLOCK, pb->loc);
	struct node *withins = node_new(N_BLOCK, pb->loc), *loop;
	const struct node *t;
	int nn, ne;

	if ((t = find_kind(body, N_TRIGGER)))
		diag_error(t->loc, "not supported yet: events between the groups of a "
			   "group level with statements beside its thread level");
	parby_parts(p, &nm, &nn, &ex, &ne);
	parby_ids(p, nm, nn, ex, ne, names, bounds);
	node_add(withins, node_add(node_add(node_new(N_WITHIN, pb->loc), names), bounds));
	withins->kids[0]->name = pb->name;	/* p = {g, h} by [...]: the ituple */
	if (cur_level == 0) {
		struct node *npb = node_new(N_PARBY, pb->loc);

		loop = node_new(N_FOREACH, p->loc);
		node_add(loop, withins);
		node_add(loop, body);
		loop->flag = 1;
		node_add(npb, node_new(N_BLOCK, pb->loc));
		node_add(npb, int_node(pb->loc, 1));
		npb->flag = PB_BLOCK;
		p->kids[0] = npb;
		p->kids[2] = node_add(node_new(N_BLOCK, body->loc), loop);
		return;
	}
	p->kind = N_FOREACH;
	p->kids[0] = withins;
	p->kids[1] = body;
	p->nkids = 2;
	p->flag = 1;
	p->ival = 0;	/* no unroll hint */
}

/* folded levels may reuse a name: the inner one hides the outer one,
 * which nothing can name then (its body was the inner level alone) */
static void unshadow(struct node *names)
{
	char buf[300];
	int i, k;

	for (i = 0; i < names->nkids; i++)
		for (k = i + 1; k < names->nkids; k++)
			if (!strcmp(names->kids[i]->name, names->kids[k]->name)) {
				snprintf(buf, sizeof(buf), "__hidden%d_%s", i,
					 names->kids[i]->name);
				names->kids[i]->name = xstrdup(buf);
				break;
			}
}

/* true when p became a foreach (sequential_groups) */
static bool fold_group(struct node *p)
{
	struct node *pb = p->kids[0], *body = p->kids[2], *in, *npb, *names, *exts;

	if (pb->flag != PB_GROUP && pb->flag != PB_GROUP4)
		return false;
	if (body->nkids == 1 && body->kids[0]->kind == N_PARALLEL) {
		in = body->kids[0];
		if ((in->kids[0]->flag == PB_GROUP || in->kids[0]->flag == PB_GROUP4) &&
		    !in->flag && in->kids[1]->kind != E_ID) {
			/* group-4 holding group: the inner level folds first, as
			 * inside a block (this level is a block's part, or the
			 * one-block kernel its sequential groups make) */
			int saved_level = cur_level;

			cur_level = 1;
			fold_group(in);
			cur_level = saved_level;
			if (in->kind == N_FOREACH)
				goto sequential;
		}
		if ((in->kids[0]->flag != PB_THREAD && in->kids[0]->flag != PB_NONE) ||
		    in->flag || in->kids[1]->kind == E_ID)
			goto thread_level;
		npb = node_new(N_PARBY, pb->loc);
		names = node_new(N_BLOCK, pb->loc);
		exts = node_new(N_BLOCK, pb->loc);
		if (!parby_append(p, names, exts) || !parby_append(in, names, exts))
			goto thread_level;
		if (names->nkids > MAX_RANK)
			goto thread_level;
		unshadow(names);
		node_add(npb, names);
		node_add(npb, exts);
		npb->ival = 1;
		npb->flag = PB_THREAD;
		p->kids[0] = npb;
		p->kids[2] = in->kids[2];
		return false;
	}
sequential:
	if (find_kind(body, N_PARALLEL) && cur_level < 2) {
		sequential_groups(p);
		return p->kind == N_FOREACH;
	}
thread_level:
	pb->flag = PB_THREAD;
	return false;
}

/* the thread-level parallel whose body is being checked */
static struct node *cur_thread_par;

/*
 * A barrier between two statements of a thread level's body (sync.shared,
 * the end of an inthreads) splits the body: the level then runs as one
 * loop over its indices per part, the barrier between the loops, so a
 * level may be larger than a block (kernel_gen.c). Anything else with a
 * barrier inside fixes the level to a thread per index.
 */
static bool split_point(struct node *s)
{
	struct node *body;
	int i;

	if (cur_level != 2 || !cur_thread_par || !cur_kernel)
		return false;
	body = cur_thread_par->kids[2];
	if (body->kind != N_BLOCK || body->flag)
		return false;
	for (i = 0; i < body->nkids; i++)
		if (body->kids[i] == s) {
			s->split = true;
			cur_thread_par->splits++;
			return true;
		}
	return false;
}

/* shared data declared in a split body: placed before the loops */
bool split_hoisted(const struct node *s)
{
	int i;

	if (s->kind == N_EVENTS)
		return true;
	if (s->kind != N_BLOCK || !s->flag)
		return false;
	for (i = 0; i < s->nkids; i++) {
		const struct node *d = s->kids[i];

		if (d->kind != N_SPANDECL || !d->sym || d->sym->storage != ST_SHARED ||
		    (d->nkids && !d->sym->init_hoisted))
			return false;
	}
	return true;
}

static bool tree_has(const struct node *n, const struct node *want)
{
	int i;

	if (!n)
		return false;
	if (n == want)
		return true;
	for (i = 0; i < n->nkids; i++)
		if (tree_has(n->kids[i], want))
			return true;
	return false;
}

/* does n use a name declared in body's statements [from, to) */
static bool uses_decl_in(const struct node *n, const struct node *body, int from,
			 int to)
{
	int i;

	if (!n)
		return false;
	if (n->sym && n->sym->decl)
		for (i = from; i < to; i++)
			if (!split_hoisted(body->kids[i]) &&
			    tree_has(body->kids[i], n->sym->decl))
				return true;
	for (i = 0; i < n->nkids; i++)
		if (uses_decl_in(n->kids[i], body, from, to))
			return true;
	return false;
}

/* a split body whose parts share no thread's own names, no yield */
static void check_split(struct node *p)
{
	struct node *body = p->kids[2];
	int i, start = 0;

	if (!p->splits)
		return;
	if (p->yields)
		goto fixed;
	for (i = 0; i < body->nkids; i++) {
		if (start && uses_decl_in(body->kids[i], body, 0, start))
			goto fixed;
		if (body->kids[i]->split)
			start = i + 1;
	}
	cur_kernel->any_split = true;
	return;
fixed:
	/* a copy into shared data alone never fixed the level */
	for (i = 0; i < body->nkids; i++) {
		if (body->kids[i]->split && body->kids[i]->kind != N_DMA)
			cur_kernel->threads_fixed = true;
		body->kids[i]->split = false;
	}
	p->splits = 0;
}

static void check_parallel(struct node *p)
{
	struct node *saved_thread_par = NULL;
	struct node *stream = p->kids[1], **names, **extents;
	int nnames, nextents, i, saved_level = cur_level;
	struct kernel *saved_kernel = cur_kernel;
	struct node *pb = p->kids[0];
	bool thread_level;

	if (fold_group(p)) {
		check_foreach(p);
		return;
	}
	pb = p->kids[0];
	if (stream->kind == E_ID) {
		struct sym *s = lookup(stream->name);

		if (!s)
			diag_error(stream->loc, "unknown identifier '%s'", stream->name);
		if (s->type.kind != TY_STREAM)
			diag_error(stream->loc, "'%s' is not a stream", stream->name);
		stream->sym = s;
	}
	if (pb->flag == PB_OTHER)
		diag_error(pb->loc, "not supported yet: this parallel level");
	if (cur_level == 0) {
		thread_level = pb->flag == PB_THREAD;
	} else if (cur_level == 1) {
		if (pb->flag == PB_BLOCK)
			diag_error(pb->loc, "not supported yet: a block-level parallel "
				   "inside a parallel body");
		thread_level = true;
	} else {
		diag_error(p->loc, "not supported yet: a parallel inside a "
			   "thread-level parallel");
	}
	if ((cur_level > 0 || p->ival) && p->flag)
		diag_error(p->loc, "inner parallel-by level can not be asynchronous");
	if (stream->kind == E_ID && (cur_level > 0 || p->ival || thread_level))
		diag_error(stream->loc, "stream binding is only allowed on a "
			   "block-level parallel");
	parby_parts(p, &names, &nnames, &extents, &nextents);
	if (nnames > 1 && nnames != nextents)
		diag_error(pb->loc, "type mismatch: %d names but %d extents",
			   nnames, nextents);
	if (cur_level == 0) {
		struct kernel *k;

		program->kernels = realloc(program->kernels, (program->nkernels + 1) *
					   sizeof(*program->kernels));
		if (!program->kernels)
			exit(2);
		k = &program->kernels[program->nkernels];
		memset(k, 0, sizeof(*k));
		k->func = cur_func;
		k->par = p;
		k->grid_is_threads = thread_level;
		snprintf(k->name, sizeof(k->name), "%s__parallel%d", cur_func->name,
			 program->nkernels);
		p->kernel = program->nkernels++;
		/* extents are evaluated on the host */
		for (i = 0; i < nextents; i++) {
			struct type t = check_expr(extents[i]);

			if (!is_integer(t))
				diag_error(extents[i]->loc, "type mismatch: an extent "
					   "must be an integer");
		}
		cur_kernel = &program->kernels[p->kernel];
		/* the kernel splits its linear index by the extents (several,
		 * or a one-block thread grid's bound): they are arguments too */
		if (nextents > 1 || thread_level)
			for (i = 0; i < nextents; i++)
				capture_expr(extents[i]);
		if (thread_level)
			cur_kernel->thread_pars[cur_kernel->nthread_pars++] = p;
	} else {
		/* extents of a thread level size the block on the host */
		deepest_ref = 0;
		for (i = 0; i < nextents; i++) {
			struct type t = check_expr(extents[i]);

			if (!is_integer(t))
				diag_error(extents[i]->loc, "type mismatch: an extent "
					   "must be an integer");
		}
		if (deepest_ref > 0)
			diag_error(extents[0]->loc, "not supported yet: a thread-level "
				   "extent computed inside the parallel body");
		if (cur_kernel->nthread_pars == MAX_THREAD_PARS)
			diag_error(p->loc, "not supported yet: more than %d thread-level "
				   "parallels in a kernel", MAX_THREAD_PARS);
		cur_kernel->thread_pars[cur_kernel->nthread_pars++] = p;
	}
	p->par = cur_kernel->par;
	p->level = cur_level;
	cur_level = thread_level ? 2 : 1;
	if (thread_level) {
		saved_thread_par = cur_thread_par;
		cur_thread_par = p;
	}
	push_scope();
	for (i = 0; i < nnames; i++)
		declare_bounded(names[i], nnames > 1 ? extents[i] : extents[0],
				SY_PVAR)->level = cur_level;
	{
		int saved_loops = loop_depth;

		loop_depth = 0;
		check_block(p->kids[2]);
		loop_depth = saved_loops;
	}
	pop_scope();
	if (thread_level)
		check_split(p);
	if (saved_level == 0) {
		finish_any_buffers(cur_kernel);
		finish_dim_caps(cur_kernel);
	}
	if (saved_level == 0 && cur_kernel->events_fixed && !cur_kernel->any_split)
		cur_kernel->threads_fixed = true;
	cur_level = saved_level;
	cur_kernel = saved_kernel;
	if (thread_level)
		cur_thread_par = saved_thread_par;
}

static void check_foreach(struct node *f)
{
	struct node *items = f->kids[0];
	int i;

	push_scope();
	if (f->flag) {
		declare_withins(items);
	} else {
		struct node *expanded = node_new(N_BLOCK, items->loc);

		/* `foreach idx` over an ituple: its integers, outer to inner */
		for (i = 0; i < items->nkids; i++) {
			struct node *r = items->kids[i];
			struct sym *s = lookup(r->name);
			int k;

			if (!s || s->kind != SY_TUPLE) {
				node_add(expanded, r);
				continue;
			}
			if (r->nkids)
				diag_error(r->loc, "type mismatch: a range applies to a "
					   "bounded integer, not to the ituple '%s'", r->name);
			if (r->alias)
				diag_error(r->loc, "not supported yet: a local name for "
					   "an ituple");
			for (k = 0; k < s->type.rank; k++) {
				struct node *er = node_new(N_RANGE, r->loc);

				er->name = s->elems[k]->name;
				er->ival = 1;	/* belongs to the ituple below */
				node_add(expanded, er);
			}
			r->sym = s;
		}
		f->kids[0] = items = expanded;
		for (i = 0; i < items->nkids; i++) {
			struct node *r = items->kids[i], *id;
			struct sym *s = lookup(r->name), *ns;
			int k;

			if (!s)
				diag_error(r->loc, "unknown identifier '%s'", r->name);
			if (!s->ubound)
				diag_error(r->loc, "type mismatch: '%s' is not a bounded "
					   "variable", r->name);
			for (k = 0; k < r->nkids; k++) {
				if (r->kids[k]->kind == N_BLOCK)
					continue;
				if (!is_integer(check_expr(r->kids[k])))
					diag_error(r->kids[k]->loc, "type mismatch: a range "
						   "must be an integer");
			}
			/* the bound is evaluated where the variable was declared */
			id = node_new(E_ID, r->loc);
			id->name = r->alias ? r->alias : r->name;
			ns = declare_bounded(id, s->ubound, SY_LOOPVAR);
			ns->decl = r;
			r->sym = ns;
			if (s->level == 0)
				capture(s, r->loc);	/* the bound's own captures */
			/* capture what the bound refers to */
			capture_expr(s->ubound);
		}
		/* an ituple iterated here names this loop's integers */
		for (i = 0; i < items->nkids; i++) {
			struct node *r = items->kids[i];
			char base[256];
			struct sym *t, *old;
			int k;

			if (!r->ival || !strchr(r->name, '('))
				continue;
			snprintf(base, sizeof(base), "%s", r->name);
			*strchr(base, '(') = 0;
			old = lookup(base);
			if (!old || old->kind != SY_TUPLE || lookup(base)->decl == f)
				continue;
			t = declare(base, SY_TUPLE, f);
			t->type = old->type;
			for (k = 0; k < t->type.rank; k++) {
				char en[300];

				snprintf(en, sizeof(en), "%s(%d)", base, k);
				t->elems[k] = lookup(en);
			}
		}
	}
	if (f->ival > 0) {
		/* unroll(n) beyond the innermost loop's constant extent: as
		 * Choreo refuses it */
		const struct node *last = f->kids[0]->kids[f->kids[0]->nkids - 1];
		const struct node *ub = NULL;
		long long v;

		if (f->flag)
			ub = last->kids[1]->kids[last->kids[1]->nkids - 1];
		else if (last->sym && !last->nkids)
			ub = last->sym->ubound;
		if (ub && const_eval(ub, &v) && v < f->ival)
			diag_error(f->loc, "unroll factor (%lld) exceeds the loop extent "
				   "(%lld)", f->ival, v);
	}
	f->level = cur_level;
	loop_depth++;
	check_block(f->kids[1]);	/* the body may not redeclare them */
	loop_depth--;
	pop_scope();
}

static void check_mma(struct node *m);

/* a dma.copy operand's shape: a view's tile, or the data's */
static const struct type *tdma_type(const struct node *e)
{
	return e->kind == E_VIEW ? &e->ety : &e->sym->type;
}

/* the memory side of a tile DMA copy: host data or a parameter, whole or
 * a rectangular view of it (chunkat, subspan, view/from; not span_as) */
static bool tdma_mem(const struct node *e)
{
	if (e->kind != E_ID && !(e->kind == E_VIEW && e->flag != VIEW_SPAN_AS &&
				  !e->strides))
		return false;
	return e->sym && e->sym->level == 0 && e->sym->storage != ST_SHARED &&
	       (e->sym->kind == SY_SPAN || e->sym->kind == SY_PARAM);
}

/* the scratchpad side: shared data, whole */
static bool tdma_scratch(const struct node *e)
{
	return (e->kind == E_ID || e->kind == N_SPANDECL) && e->sym &&
	       e->sym->kind == SY_SPAN && e->sym->storage == ST_SHARED;
}

/*
 * f = dma.copy.async (or tma.copy.async) between host data and shared
 * data at block level: the tile DMA engine copies it while the block
 * computes, counted on a barrier word of f's, and `wait f` waits for the
 * count. Rank 1 or 2, sizes known at compile time, the source fitting the
 * destination in each dimension (element (i, j) to (i, j), as the element
 * loop would copy it); anything else keeps the element loop.
 */
static void check_tdma(struct node *d)
{
	struct node *src = d->kids[0], *dst = d->kids[1];
	const struct type *st, *dt;
	struct sym *f;
	long long a, b;
	int k;

	if (!d->flag || d->nkids < 3 || !cur_kernel || cur_level != 1 ||
	    d->nperm || d->npad || cur_kernel->ntdma == MAX_EVENTS)
		return;
	/* a slot's wait would not know which copies its data came from */
	if (d->slot_op || dst->kind == E_SELECT || (d->kids[2]->kind == E_ID &&
			   untracked_future(d->kids[2]->name)))
		return;
	if (!(tdma_mem(src) && tdma_scratch(dst)) &&
	    !(tdma_scratch(src) && tdma_mem(dst)))
		return;
	st = tdma_type(src);
	dt = tdma_type(dst);
	if (st->rank != dt->rank || st->rank > 2)
		return;
	for (k = 0; k < st->rank; k++)
		if (!const_eval(st->dims[k], &a) || !const_eval(dt->dims[k], &b) ||
		    a > b || a < 1)
			return;
	f = d->kids[2]->sym;
	d->tdma = true;
	f->tdma = true;
	for (k = 0; k < cur_kernel->ntdma; k++)
		if (!strcmp(cur_kernel->tdma[k]->name, f->name)) {
			f->tdma_first = cur_kernel->tdma[k];
			return;
		}
	f->tdma_first = f;
	cur_kernel->shared_bytes = (cur_kernel->shared_bytes + 7) & ~7L;
	f->shared_offset = cur_kernel->shared_bytes;
	cur_kernel->shared_bytes += 8;
	cur_kernel->tdma[cur_kernel->ntdma++] = f;
}

/*
 * Slots: futures that dma.any, swap, rotate and select make. A future is
 * otherwise a name for the buffer its copy wrote, known when compiling;
 * once futures are exchanged at run time (double and triple buffering),
 * each holds a pointer to the data it stands for now (its ->target, a
 * pointer span). Copies finish when issued unless the tile DMA engine
 * makes them (check_tdma), which slots never use, so waiting on a slot,
 * one dma.any never assigned included, has nothing left to do.
 */

/* names that are slots, and names no tile DMA copy may take (slots and
 * futures a select chooses from), in the function being checked */
static const char **slot_names, **untracked_names;
static int nslot_names, nuntracked_names;
/* the function's slots; dma.any statements waiting for their own buffer */
static struct sym **slots;
static int nslots;
static struct node **anys;
static struct kernel **any_kernels;
static int nanys;

static void add_name(const char ***names, int *n, const char *name)
{
	*names = realloc(*names, (*n + 1) * sizeof(**names));
	if (!*names)
		exit(2);
	(*names)[(*n)++] = name;
}

static bool has_name(const char **names, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

static bool is_call_of(const struct node *e, const char *name)
{
	return e && e->kind == E_COCALL && e->name && !strcmp(e->name, name);
}

/* the names swap, rotate, dma.any and `x = select(...)` make slots of */
static void find_slot_names(const struct node *n)
{
	const struct node *call = NULL;
	int i;

	/* statements only: expressions may be nested too deep to walk here
	 * (check_expr refuses them) */
	if (!n || n->kind >= E_INT)
		return;
	if (n->kind == N_DMAANY && n->kids[0]->kind == E_ID)
		add_name(&slot_names, &nslot_names, n->kids[0]->name);
	if (n->kind == N_ROTATE)
		call = n;
	if (n->kind == N_EXPRSTMT && (is_call_of(n->kids[0], "swap") ||
				      is_call_of(n->kids[0], "rotate")))
		call = n->kids[0];
	if (call)
		for (i = 0; i < call->nkids; i++)
			if (call->kids[i]->kind == E_ID)
				add_name(&slot_names, &nslot_names, call->kids[i]->name);
	if (n->kind == N_ASSIGN && n->nkids == 2 && n->kids[0]->kind == E_ID &&
	    is_call_of(n->kids[1], "select")) {
		add_name(&slot_names, &nslot_names, n->kids[0]->name);
		for (i = 1; i < n->kids[1]->nkids; i++)
			if (n->kids[1]->kids[i]->kind == E_ID)
				add_name(&untracked_names, &nuntracked_names,
					 n->kids[1]->kids[i]->name);
	}
	for (i = 0; i < n->nkids; i++)
		find_slot_names(n->kids[i]);
}

static void start_slots(struct node *func)
{
	nslot_names = nuntracked_names = nslots = nanys = 0;
	find_slot_names(func);
}

static bool untracked_future(const char *name)
{
	return has_name(slot_names, nslot_names, name) ||
	       has_name(untracked_names, nuntracked_names, name);
}

static struct sym *slot_root(struct sym *s)
{
	while (s->slot_up)
		s = s->slot_up;
	return s;
}

/* "local f32 [4, 2]" */
static const char *span_text(const struct sym *data, char *buf, size_t size)
{
	static const char *const st[] = { "", "shared ", "local ", "global " };
	size_t n;
	long long v;
	int k;

	n = (size_t)snprintf(buf, size, "%s%s [", st[data->storage],
			     elem_name(data->type.elem));
	for (k = 0; k < data->type.rank && n < size; k++) {
		if (span_dim_const(data, k, &v))
			n += (size_t)snprintf(buf + n, size - n, "%s%lld", k ? ", " : "", v);
		else
			n += (size_t)snprintf(buf + n, size - n, "%s?", k ? ", " : "");
	}
	if (n < size)
		snprintf(buf + n, size - n, "]");
	return buf;
}

/* the class's type in every slot of it */
static void sync_slot_types(void)
{
	int i;

	for (i = 0; i < nslots; i++) {
		struct sym *r = slot_root(slots[i]);

		if (r != slots[i] && r->slot_typed) {
			slots[i]->target->type = r->target->type;
			slots[i]->target->storage = r->target->storage;
		}
	}
}

static bool same_data_type(const struct sym *a, const struct sym *b)
{
	long long x, y;
	int k;

	if (a->type.elem != b->type.elem || a->type.rank != b->type.rank ||
	    a->storage != b->storage)
		return false;
	for (k = 0; k < a->type.rank; k++)
		if (!span_dim_const(a, k, &x) || !span_dim_const(b, k, &y) || x != y)
			return false;
	return true;
}

/* slot s holds data like `like` (a buffer, or the data of a future) */
static void slot_set_type(struct sym *s, const struct sym *like, struct loc at)
{
	struct sym *r = slot_root(s);
	char a[160], b[160];
	long long v;
	int k;

	if (like->type.kind != TY_SPAN)
		diag_error(at, "type mismatch: a future holds spanned data");
	if (!cur_kernel && like->kind == SY_PARAM)
		diag_error(at, "not supported yet: future '%s' holding a parameter's "
			   "data on the host (swap, rotate, select, dma.any)", s->name);
	if (r->slot_typed) {
		if (!same_data_type(r->target, like))
			diag_error(at, "type mismatch: future '%s' holds %s, this is %s",
				   s->name, span_text(r->target, a, sizeof(a)),
				   span_text(like, b, sizeof(b)));
		return;
	}
	for (k = 0; k < like->type.rank; k++)
		if (!span_dim_const(like, k, &v))
			diag_error(at, "not supported yet: future '%s' of data sized at "
				   "run time (swap, rotate, select, dma.any)", s->name);
	r->slot_typed = true;
	r->target->type = like->type;
	r->target->type.kind = TY_SPAN;
	r->target->storage = like->storage;
	sync_slot_types();
}

/* slots exchanged or chosen between hold one type */
static void slot_unite(struct sym *a, struct sym *b, struct loc at)
{
	struct sym *ra = slot_root(a), *rb = slot_root(b);

	if (ra == rb)
		return;
	if (rb->slot_typed)
		slot_set_type(a, rb->target, at);
	if (ra->slot_async && rb->slot_async && ra->slot_async != rb->slot_async)
		diag_error(at, "type mismatch: futures of a synchronous and an "
			   "asynchronous copy ('%s', '%s') exchanged or chosen "
			   "together", a->name, b->name);
	if (!ra->slot_async)
		ra->slot_async = rb->slot_async;
	rb->slot_up = ra;
	ra->slot_own |= rb->slot_own;
	sync_slot_types();
}

static struct sym *ptr_span(const char *name, const char *cname)
{
	struct sym *p = xmalloc(sizeof(*p));

	p->kind = SY_SPAN;
	p->name = xstrdup(name);
	p->cname = xstrdup(cname);
	p->ptr = true;
	p->mutable_ = true;
	p->level = cur_level;
	p->type.kind = TY_VOID;
	p->type.elem = EL_NONE;
	return p;
}

static struct sym *declare_slot(const char *name, struct node *decl)
{
	struct sym *s;
	char buf[300];

	if (lookup(name) && lookup(name)->kind != SY_FUTURE)
		diag_error(decl->loc, "type mismatch: '%s' is not a future", name);
	s = declare(name, SY_FUTURE, decl);
	s->type.kind = TY_FUTURE;
	s->slot = true;
	snprintf(buf, sizeof(buf), "npu__fp_%s", s->cname);
	s->target = ptr_span(name, buf);
	slots = realloc(slots, (nslots + 1) * sizeof(*slots));
	if (!slots)
		exit(2);
	slots[nslots++] = s;
	return s;
}

/* a slot's data used: it needs a type by now */
static void slot_data_used(const struct sym *f, struct loc at)
{
	if (f->kind == SY_FUTURE && f->slot && !slot_root((struct sym *)f)->slot_typed)
		diag_error(at, "type mismatch: placeholder future '%s' holds no data "
			   "yet (no copy assigned to it)", f->name);
}

/* f = dma.any; */
static void check_dma_any(struct node *s)
{
	struct node *f = s->kids[0];

	if (f->kind != E_ID)
		diag_error(f->loc, "type mismatch: a future needs a name");
	f->sym = declare_slot(f->name, s);
	anys = realloc(anys, (nanys + 1) * sizeof(*anys));
	any_kernels = realloc(any_kernels, (nanys + 1) * sizeof(*any_kernels));
	if (!anys || !any_kernels)
		exit(2);
	anys[nanys] = s;
	any_kernels[nanys++] = cur_kernel;
}

/* the own buffers of a kernel's (or the host's) dma.any slots: where a
 * copy into `=> local` or `=> shared` is assigned to their class, or any
 * of a kernel's local or shared class, so that their data is theirs */
static void finish_any_buffers(struct kernel *k)
{
	int i, j, saved_level = cur_level;

	for (i = 0; i < nanys; i++) {
		struct node *a = anys[i], *d;
		struct sym *f = a->kids[0]->sym, *r = slot_root(f);
		char buf[300];

		if (any_kernels[i] != k || a->nkids > 1 || !r->slot_typed)
			continue;
		if (!r->slot_own && !(k && (r->target->storage == ST_LOCAL ||
					    r->target->storage == ST_SHARED)))
			continue;
		if (k && r->target->storage != ST_LOCAL &&
		    r->target->storage != ST_SHARED)
			continue;
		d = node_new(N_SPANDECL, a->loc);
		snprintf(buf, sizeof(buf), "%s_own", f->cname);
		d->name = xstrdup(buf);
		d->type = r->target->type;
		for (j = 0; j < d->type.rank; j++) {
			long long v = 0;

			span_dim_const(r->target, j, &v);
			d->type.dims[j] = node_new(E_INT, a->loc);
			d->type.dims[j]->ival = v;
		}
		d->flag = k ? r->target->storage : ST_DEFAULT;
		d->level = a->level;
		cur_level = a->level;
		check_span_decl(d);
		cur_level = saved_level;
		node_add(a, d);
	}
}

/* swap(a, b), rotate(a, b, c...): slots of one scope and one type */
static void check_rotate(struct node *s)
{
	bool swap = !strcmp(s->name, "swap");
	int i;

	if (swap ? s->nkids != 2 : s->nkids < 2)
		diag_error(s->loc, "type mismatch: %s needs %s futures, not %d",
			   s->name, swap ? "two" : "two or more", s->nkids);
	for (i = 0; i < s->nkids; i++) {
		struct node *k = s->kids[i];
		struct sym *f;

		if (k->kind != E_ID)
			diag_error(k->loc, "type mismatch: %s needs futures", s->name);
		f = resolve(k);
		if (f->kind != SY_FUTURE)
			diag_error(k->loc, "type mismatch: '%s' is not a future", f->name);
		if (!f->slot)
			diag_error(k->loc, "not supported yet: %s of future '%s' "
				   "declared before the name was a slot", s->name, f->name);
		if (i && f->scope != s->kids[0]->sym->scope)
			/* a future of an inner scope would leave its data behind */
			diag_error(k->loc, "type mismatch: %s of futures declared in "
				   "different scopes ('%s' and '%s')", s->name,
				   s->kids[0]->sym->name, f->name);
		if (i && f == s->kids[i - 1]->sym)
			diag_error(k->loc, "type mismatch: %s of '%s' with itself",
				   s->name, f->name);
		if (i && slot_root(f)->slot_typed &&
		    slot_root(s->kids[0]->sym)->slot_typed &&
		    !same_data_type(slot_root(f)->target,
				    slot_root(s->kids[0]->sym)->target)) {
			char a[160], b[160];

			diag_error(k->loc, "type mismatch: %s of futures holding %s "
				   "('%s') and %s ('%s')", s->name,
				   span_text(s->kids[0]->sym->target, a, sizeof(a)),
				   s->kids[0]->sym->name,
				   span_text(f->target, b, sizeof(b)), f->name);
		}
		if (i)
			slot_unite(s->kids[0]->sym, f, k->loc);
	}
}

/* select(i, a, b, ...): operand i of spanned data or futures, all of one
 * type; its ->sym a pointer span to the choice (named by the caller) */
static struct type check_select(struct node *e, struct sym *into)
{
	struct sym *first = NULL;
	char buf[300], ta[160], tb[160];
	struct type it;
	long long v;
	int i, n = e->nkids - 1;
	bool futures = false;

	e->kind = E_SELECT;
	if (n < 1)
		diag_error(e->loc, "type mismatch: select needs a factor and at least "
			   "one operand");
	it = check_expr(e->kids[0]);
	if (!is_integer(it))
		diag_error(e->kids[0]->loc, "type mismatch: the select factor must be "
			   "an integer, not %s", kind_text(it));
	if (const_eval(e->kids[0], &v) && (v < 0 || v >= n))
		diag_error(e->kids[0]->loc, "type mismatch: the select factor %lld is "
			   "not in [0, %d)", v, n);
	for (i = 1; i <= n; i++) {
		struct node *k = e->kids[i];
		struct sym *s, *data;

		if (k->kind != E_ID)
			diag_error(k->loc, "not supported yet: select of an operand "
				   "other than a name");
		s = resolve(k);
		if (i == 1)
			futures = s->kind == SY_FUTURE;
		if (futures != (s->kind == SY_FUTURE))
			diag_error(k->loc, "type mismatch: select of futures and data "
				   "together");
		if (futures) {
			if (into && into->slot)
				if (s->slot)
					slot_unite(into, s, k->loc);
			data = future_buffer(s, k->loc);
			if (!s->slot || slot_root(s)->slot_typed) {
				if (!first)
					first = data;
				else if (!same_data_type(first, data))
					diag_error(k->loc, "type mismatch: select of %s "
						   "('%s') and %s ('%s')",
						   span_text(first, ta, sizeof(ta)),
						   e->kids[1]->name,
						   span_text(data, tb, sizeof(tb)), s->name);
			}
		} else {
			if (s->type.kind != TY_SPAN || s->kind == SY_SHAPE)
				diag_error(k->loc, "type mismatch: '%s' is not spanned data "
					   "or a future", s->name);
			if (!cur_kernel && s->kind == SY_PARAM)
				diag_error(k->loc, "not supported yet: select of a "
					   "parameter's data on the host");
			if (!first)
				first = s;
			else if (!same_data_type(first, s))
				diag_error(k->loc, "type mismatch: select of %s ('%s') "
					   "and %s ('%s')", span_text(first, ta, sizeof(ta)),
					   e->kids[1]->name, span_text(s, tb, sizeof(tb)),
					   s->name);
		}
	}
	if (!first)
		diag_error(e->loc, "type mismatch: select of placeholder futures "
			   "that hold no data yet");
	if (futures && into) {
		slot_set_type(into, first, e->loc);
		e->sym = into->target;
	} else if (futures) {
		diag_error(e->loc, "not supported yet: select of futures here");
	} else {
		snprintf(buf, sizeof(buf), "npu__sel_%d_%d", e->loc.line, e->loc.col);
		e->sym = ptr_span("select", buf);
		e->sym->type = first->type;
		e->sym->storage = first->storage;
		for (i = 0; i < first->type.rank; i++)
			if (!span_dim_const(first, i, &v))
				diag_error(e->loc, "not supported yet: select of data "
					   "sized at run time");
	}
	e->ety = e->sym->type;
	return e->sym->type;
}

/* x = select(i, ...); declares x: a slot when it chooses futures, else a
 * name for the chosen data; an existing slot is set again */
static void check_select_assign(struct node *s)
{
	struct node *x = s->kids[0], *e = s->kids[1];
	struct sym *old, *into;
	int i;
	bool futures = false;

	if (x->kind != E_ID)
		diag_error(x->loc, "not supported yet: select into an element");
	for (i = 1; i < e->nkids; i++)
		if (e->kids[i]->kind == E_ID && lookup(e->kids[i]->name) &&
		    lookup(e->kids[i]->name)->kind == SY_FUTURE)
			futures = true;
	old = lookup(x->name);
	if (futures) {
		if (old && old->slot) {
			into = old;
			s->slot_op = 2;
			if (cur_kernel && !old->level)
				diag_error(x->loc, "not supported yet: future '%s' in a "
					   "parallel body", old->name);
		} else {
			into = declare_slot(x->name, s);
			s->slot_op = 1;
		}
		x->sym = into;
		check_select(e, into);
		return;
	}
	if (old && old->scope == scope)
		diag_error(x->loc, "'%s' is declared already", x->name);
	check_select(e, NULL);
	into = declare(x->name, SY_SPAN, s);
	into->ptr = true;
	into->mutable_ = true;
	into->type = e->sym->type;
	into->storage = e->sym->storage;
	e->sym = into;
	x->sym = into;
	s->slot_op = 1;
}

/* The name a future is given (f = dma.copy ..., f = mma...async): what
 * it names already, if anything, which must be a future. */
static struct sym *future_name(const struct node *f)
{
	struct sym *s;

	if (f->kind != E_ID)
		diag_error(f->loc, "type mismatch: a future needs a name");
	s = lookup(f->name);
	if (s && s->kind != SY_FUTURE)
		diag_error(f->loc, "type mismatch: '%s' is not a future", f->name);
	return s;
}

static void check_dma(struct node *d)
{
	struct node *src = d->kids[0], *dst = d->kids[1];
	struct sym *slot = NULL;
	struct type st;
	int i;

	for (i = 0; d->after && i < d->after->nkids; i++) {
		struct node *f = d->after->kids[i];

		if (f->kind != E_ID || resolve(f)->kind != SY_FUTURE)
			diag_error(f->loc, "type mismatch: a dma.copy is after futures");
	}

	/* a copy named after an existing slot sets it (the slot's own data
	 * for `=> local`), one of a slot name declares it */
	if (d->nkids > 2 && d->kids[2]->kind == E_ID) {
		struct sym *old = lookup(d->kids[2]->name);

		if (old && old->slot) {
			slot = old;
			if (cur_kernel && !slot->level)
				diag_error(d->kids[2]->loc, "not supported yet: future "
					   "'%s' in a parallel body", slot->name);
		}
	}

	/* a future stands for its data: dma.copy f => out is f.data */
	if (src->kind == E_ID && lookup(src->name) &&
	    lookup(src->name)->kind == SY_FUTURE)
		src->kind = E_DATA;
	if (dst->kind == E_ID && dst->name && lookup(dst->name) &&
	    lookup(dst->name)->kind == SY_FUTURE)
		dst->kind = E_DATA;
	view_ok = true;
	st = check_expr(src);
	view_ok = false;

	if (st.kind != TY_SPAN)
		diag_error(src->loc, "type mismatch: dma.copy needs spanned data");
	if (d->nperm) {
		struct type pt = st;
		int k, seen = 0;

		if (d->nperm != st.rank)
			diag_error(d->loc, "type mismatch: dma.transp of rank %d data "
				   "needs %d dimensions", st.rank, st.rank);
		for (k = 0; k < d->nperm; k++) {
			if (d->perm[k] < 0 || d->perm[k] >= st.rank ||
			    (seen & (1 << d->perm[k])))
				diag_error(d->loc, "type mismatch: dma.transp needs a "
					   "permutation of 0..%d", st.rank - 1);
			seen |= 1 << d->perm[k];
			pt.dims[k] = st.dims[d->perm[k]];
		}
		st = pt;
	}
	if (d->npad) {
		int k;

		if (d->npad != st.rank)
			diag_error(d->loc, "type mismatch: dma.pad of rank %d data "
				   "needs %d paddings each", st.rank, st.rank);
		check_expr(d->padval);
		/* dimension k: low + high + n + (n - 1) * mid */
		for (k = 0; k < st.rank; k++) {
			struct node *n = st.dims[k], *e = node_new(E_BINARY, d->loc);
			struct node *m = node_new(E_BINARY, d->loc);
			struct node *n1 = node_new(E_BINARY, d->loc);

			n1->name = xstrdup("-");
			node_add(n1, n);
			node_add(n1, int_node(d->loc, 1));
			m->name = xstrdup("*");
			node_add(m, n1);
			node_add(m, int_node(d->loc, d->pad[2][k]));
			e->name = xstrdup("+");
			node_add(e, n);
			node_add(e, int_node(d->loc, (long long)d->pad[0][k] + d->pad[1][k]));
			n = node_new(E_BINARY, d->loc);
			n->name = xstrdup("+");
			node_add(n, e);
			node_add(n, m);
			check_expr(n);
			st.dims[k] = n;
		}
	}
	if (dst->kind == E_ID && !dst->name && slot) {
		/* `=> shared` into a slot: the data it holds now */
		struct sym data = { .kind = SY_SPAN, .type = st };

		if (dst->flag == ST_SHARED && !cur_kernel)
			diag_error(dst->loc, "'shared' can not be DMA destination "
				   "outside parallel-by");
		if (dst->flag == ST_GLOBAL && cur_kernel)
			diag_error(dst->loc, "not supported yet: global data in a "
				   "parallel body");
		data.storage = !cur_kernel ? ST_DEFAULT :
			dst->flag == ST_SHARED ? ST_SHARED : ST_LOCAL;
		slot_set_type(slot, &data, dst->loc);
		slot_root(slot)->slot_own = true;
		dst->name = xstrdup(slot->name);
		dst->sym = slot->target;
	} else if (dst->kind == E_ID && !dst->name) {
		/* `=> shared`: a new buffer shaped like the source */
		char name[64];

		if (dst->flag == ST_SHARED && !cur_kernel)
			diag_error(dst->loc, "'shared' can not be DMA destination "
				   "outside parallel-by");
		if (dst->flag == ST_GLOBAL && cur_kernel)
			diag_error(dst->loc, "not supported yet: global data in a "
				   "parallel body");
		snprintf(name, sizeof(name), "dma%d_%d", d->loc.line, d->loc.col);
		dst->kind = N_SPANDECL;
		dst->name = xstrdup(name);
		dst->type = st;	/* a view's: its tile's */
		dst->flag = dst->flag == ST_SHARED ? ST_SHARED : ST_LOCAL;
		if (!cur_kernel)
			dst->flag = ST_DEFAULT;
		dst->level = cur_level;
		check_span_decl(dst);
	} else {
		struct type dt;

		view_ok = true;
		if (is_call_of(dst, "select"))
			dt = check_select(dst, NULL);
		else
			dt = check_expr(dst);
		view_ok = false;
		if (dt.kind != TY_SPAN)
			diag_error(dst->loc, "type mismatch: dma.copy needs spanned data");
		long long sn = 1, dn = 1, v;
		bool known = true;
		int k;

		if (dt.elem != st.elem)
			diag_error(dst->loc, "type mismatch: dma.copy from %s to %s",
				   elem_name(st.elem), elem_name(dt.elem));
		/* transposed or padded: the destination has the result's shape */
		if ((d->nperm || d->npad) && dst->kind != E_VIEW) {
			long long a, b;

			if (dt.rank != st.rank)
				diag_error(dst->loc, "type mismatch: dma.%s of rank %d "
					   "into rank %d", d->nperm ? "transp" : "pad",
					   st.rank, dt.rank);
			for (k = 0; k < st.rank; k++)
				if (const_eval(st.dims[k], &a) &&
				    const_eval(dt.dims[k], &b) && a != b)
					diag_error(dst->loc, "type mismatch: dma.%s gives "
						   "%lld in dimension %d, '%s' has %lld",
						   d->nperm ? "transp" : "pad", a, k,
						   dst->sym ? dst->sym->name : "?", b);
		}
		for (k = 0; k < st.rank; k++)
			if (const_eval(st.dims[k], &v))
				sn *= v;
			else
				known = false;
		for (k = 0; k < dt.rank; k++)
			if (const_eval(dt.dims[k], &v))
				dn *= v;
			else
				known = false;
		/* a view's tile may be partly filled (subspan(31, 32) into a
		 * subspan(32, 32)): each index must fit, checked when it runs */
		if (known && sn != dn && src->kind != E_VIEW && dst->kind != E_VIEW)
			diag_error(dst->loc, "type mismatch: dma.copy of %lld elements "
				   "into %lld", sn, dn);
	}
	if (d->nkids > 2) {
		struct node *f = d->kids[2];
		struct sym *s = future_name(f);

		if (slot) {
			if (dst->sym != slot->target)
				slot_set_type(slot, dst->sym, dst->loc);
			f->sym = slot;
			d->slot_op = 2;
		} else if (has_name(slot_names, nslot_names, f->name)) {
			s = declare_slot(f->name, d);
			slot_set_type(s, dst->sym, dst->loc);
			f->sym = s;
			d->slot_op = 1;
		}
		if (d->slot_op) {
			struct sym *r = slot_root(f->sym);
			int kind = d->flag ? 2 : 1;

			if (r->slot_async && r->slot_async != kind)
				diag_error(d->loc, "type mismatch: future '%s' of %s "
					   "copies named by a%s one", f->name,
					   kind == 2 ? "synchronous" : "asynchronous",
					   kind == 2 ? "n asynchronous" : " synchronous");
			r->slot_async = kind;
		} else {
			s = declare(f->name, SY_FUTURE, d);
			s->type.kind = TY_FUTURE;
			s->target = dst->sym;
			f->sym = s;
		}
	} else if (d->flag) {
		/* as Croqtile: nothing could wait for it */
		diag_error(d->loc, "an asynchronous copy needs a named future "
			   "(f = dma.copy.async ...)");
	} else if (cur_level == 2 && dst->sym && dst->sym->storage == ST_SHARED) {
		/* each thread of the level copies the whole: the block's
		 * threads meet after it, before any uses the data */
		split_point(d);
	}
}

/* the types the tensor engine multiplies (A and B), as Choreo names them */
static bool mma_input(enum elem e)
{
	return e == EL_F16 || e == EL_BF16 || e == EL_F32 || e == EL_S8 ||
	       e == EL_S32;
}

/* the fragment an mma statement names: declared by its first assignment
 * (mma.fill, mma.load), a tile register of the kernel's by name */
static struct sym *mma_frag(struct node *e, bool assign)
{
	struct sym *s;
	int i;

	if (e->kind != E_ID)
		diag_error(e->loc, "not supported yet: an mma fragment that is not "
			   "a plain name");
	s = lookup(e->name);
	if (s && s->kind == SY_SPAN && s->decl && s->decl->kind == N_SPANDECL &&
	    s->decl->ival == 1)
		diag_error(e->loc, "not supported yet: a declared frag ('%s') as an "
			   "mma operand (mma.fill, mma.load and mma give tile "
			   "registers)", e->name);
	if (s && s->kind != SY_FRAG)
		diag_error(e->loc, "type mismatch: '%s' is not an mma fragment", e->name);
	if (!s && !assign)
		unknown_identifier(e->loc, e->name);
	if (!s) {
		s = declare(e->name, SY_FRAG, e);
		s->type.kind = TY_SCALAR;
		s->type.elem = EL_NONE;
		s->tile = -1;
		for (i = 0; i < cur_kernel->nfrags; i++)
			if (!strcmp(cur_kernel->frag_names[i], e->name))
				s->tile = i;
		if (s->tile < 0) {
			if (cur_kernel->nfrags == MMA_FRAG_TILES)
				diag_error(e->loc, "not supported yet: more than %d mma "
					   "fragments in a parallel (the npu has %d tile "
					   "registers; name fewer fragments)",
					   MMA_FRAG_TILES, MMA_FRAG_TILES + 2);
			s->tile = cur_kernel->nfrags;
			cur_kernel->frag_names[cur_kernel->nfrags++] = e->name;
		}
	}
	e->sym = s;
	return s;
}

/* an operand's dimension: a fragment larger than a tile is held in
 * memory, up to MMA_FRAG_MAX a side */
static int mma_dim(const struct node *at, const struct type *t, int k)
{
	long long v;

	if (!const_eval(t->dims[k], &v))
		diag_error(at->loc, "not supported yet: an mma operand whose shape "
			   "is not known at compile time");
	if (v < 1 || v > MMA_FRAG_MAX)
		diag_error(at->loc, "not supported yet: an mma operand of %lld %s "
			   "(at most %d: the npu's tile is %d x %d, a larger "
			   "fragment is held in the thread's memory)", v,
			   k ? "columns" : "rows", MMA_FRAG_MAX, MMA_TILE, MMA_TILE);
	return (int)v;
}

/* fragment s holds rows x cols here: its name's extent in the kernel */
static void frag_extent(const struct sym *s, int rows, int cols)
{
	int *r = &cur_kernel->frag_rows_max[s->tile];
	int *c = &cur_kernel->frag_cols_max[s->tile];

	*r = rows > *r ? rows : *r;
	*c = cols > *c ? cols : *c;
}

bool frag_in_memory(const struct kernel *k, int tile)
{
	return k->frag_rows_max[tile] > MMA_TILE || k->frag_cols_max[tile] > MMA_TILE;
}

int frag_row_cells(const struct kernel *k, int tile)
{
	return (k->frag_cols_max[tile] + MMA_TILE - 1) / MMA_TILE * MMA_TILE;
}

long frag_cells(const struct kernel *k, int tile)
{
	return (long)(k->frag_rows_max[tile] + MMA_TILE - 1) / MMA_TILE * MMA_TILE *
	       frag_row_cells(k, tile);
}

/* spanned data or a view an mma loads or stores: rank 2, a tile at most */
static struct type mma_data(struct node *e)
{
	struct type t;

	if (e->kind == E_ID && lookup(e->name) && lookup(e->name)->kind == SY_FUTURE)
		e->kind = E_DATA;
	view_ok = true;
	t = check_expr(e);
	view_ok = false;
	if (t.kind != TY_SPAN)
		diag_error(e->loc, "type mismatch: mma needs spanned data");
	if (t.rank != 2)
		diag_error(e->loc, "not supported yet: mma on data of rank %d (a "
			   "matrix has rank 2)", t.rank);
	return t;
}

/*
 * [[schedule(k_tiles(...))]] before an mma: the order of its K tiles
 * (Croqtile's mma.md), a permutation of them. The npu's tile is 16 wide:
 * an mma wider than that runs its K tiles in this order (the order of
 * the f32 sums).
 */
static void check_mma_schedule(const struct node *m)
{
	const struct node *a = m->kids[1], *order = m->schedule;
	const struct sym *s = a->kind == E_ID ? lookup(a->name) : NULL;
	bool seen[64] = { false };
	long long k = -1;
	long tiles;
	int i;

	if (!order || !s)
		return;
	if (s->kind == SY_FRAG)
		k = m->ival & 1 ? s->frag_rows : s->frag_cols;
	else if (s->type.kind == TY_SPAN && s->type.rank == 2 &&
		 !span_dim_const(s, m->ival & 1 ? 0 : 1, &k))
		k = -1;
	if (k <= 0)
		return;
	tiles = (long)((k + MMA_TILE - 1) / MMA_TILE);
	if (order->nkids != tiles)
		diag_error(m->loc, "MMA k_tiles schedule must contain exactly one "
			   "entry for each auto-split WGMMA K iteration (expected "
			   "%ld, got %d).", tiles, order->nkids);
	for (i = 0; i < order->nkids; i++) {
		long long t = order->kids[i]->ival;

		if (t >= tiles || tiles > 64 || seen[t])
			diag_error(m->loc, "MMA k_tiles schedule must be a permutation "
				   "of [0, %ld).", tiles);
		seen[t] = true;
	}
}

/*
 * An mma's A or B given as data (Croqtile's mma.md, "Direct WGMMA shared
 * operands"): the npu multiplies tile registers, so the data is loaded
 * into a fragment of its own (named `mma.a` or `mma.b`, which no program
 * can spell) just before the mma, as `mma.load` would; data larger than
 * a tile is loaded a tile at a time as the mma goes. A declared fragment
 * (`frag T[dims] x`, the thread's data) is such data too.
 */
static void mma_data_operand(struct node *m, int k)
{
	struct node *e = m->kids[k], *id, *ld;
	const struct sym *s = e->kind == E_ID ? lookup(e->name) : NULL;

	if (e->kind == E_ID && (!s || s->kind == SY_FRAG))
		return;		/* a fragment (or mma_frag's error) */
	id = node_new(E_ID, e->loc);
	id->name = k == 1 ? "mma.a" : "mma.b";
	ld = node_add(node_add(node_new(N_MMA, m->loc), id), e);
	ld->flag = MMA_LOAD;
	ld->level = m->level;
	ld->mma_hidden = true;
	check_mma(ld);
	m->mma_loads[k - 1] = ld;
	m->kids[k] = node_new(E_ID, e->loc);
	m->kids[k]->name = id->name;
}

/* `f = mma.row.row.async c, a, b`: WGMMA's operation future. The npu's
 * mma is done when its statement is, so f is complete at once and a wait
 * for it waits for nothing; it holds no data (c is the result). */
static void mma_future(struct node *m)
{
	struct node *f = m->kids[3];
	const struct sym *old = future_name(f);
	struct sym *s;

	if (old && old->slot)
		diag_error(f->loc, "not supported yet: an mma's future in a "
			   "placeholder future ('%s')", f->name);
	s = declare(f->name, SY_FUTURE, m);
	s->type.kind = TY_FUTURE;
	f->sym = s;
}

/* mma.fill, mma.load, mma.row.col (and the other layouts), mma.store:
 * onto the tensor engine's 16 x 16 tiles, one set per thread */
static void check_mma(struct node *m)
{
	struct sym *c, *a, *b;
	struct type t;
	enum elem cell;

	if (!cur_kernel)
		diag_error(m->loc, "not supported yet: mma outside a parallel body");
	/* fragments are a thread's tile registers: a thread running several
	 * indices of a level would share them (the launch fails instead) */
	if (cur_level == 2)
		cur_kernel->threads_fixed = true;
	if (!cur_kernel->mma) {
		cur_kernel->mma = true;
		cur_kernel->shared_bytes = (cur_kernel->shared_bytes + 15) & ~15L;
		cur_kernel->mma_stage = cur_kernel->shared_bytes;
		cur_kernel->shared_bytes += (long)MMA_STAGE_BYTES * MMA_MAX_THREADS;
	}
	switch (m->flag) {
	case MMA_FILL:
		t = check_expr(m->kids[1]);
		if (t.kind != TY_SCALAR || t.elem == EL_BOOL)
			diag_error(m->kids[1]->loc, "type mismatch: mma.fill needs a number");
		c = mma_frag(m->kids[0], true);
		c->frag_acc = true;
		c->frag_rows = c->frag_cols = MMA_TILE;
		frag_extent(c, MMA_TILE, MMA_TILE);
		if (m->ival == EL_NONE) {
			if (!c->frag_typed)
				c->type.elem = EL_F32;
			break;
		}
		if (m->ival == EL_S32)
			cell = EL_S32;
		else if (m->ival == EL_F32 || m->ival == EL_F16 || m->ival == EL_BF16)
			cell = EL_F32;
		else
			diag_error(m->loc, "not supported yet: mma.fill.%s (accumulators "
				   "are f32, f16, bf16 or s32)", elem_name((enum elem)m->ival));
		c->type.elem = cell;
		c->frag_typed = true;
		break;
	case MMA_LOAD:
		t = mma_data(m->kids[1]);
		if (!mma_input(t.elem))
			diag_error(m->loc, "not supported yet: mma on %s (the npu "
				   "multiplies f16, bf16, f32, s8 and s32)", elem_name(t.elem));
		a = mma_frag(m->kids[0], true);
		a->frag_rows = mma_dim(m->kids[1], &t, 0);
		a->frag_cols = mma_dim(m->kids[1], &t, 1);
		/* data larger than a tile given to an mma is read a tile at a
		 * time (no copy of it all): the fragment is its window */
		m->mma_direct = m->mma_hidden && (a->frag_rows > MMA_TILE ||
						  a->frag_cols > MMA_TILE);
		if (!m->mma_direct)
			frag_extent(a, a->frag_rows, a->frag_cols);
		if (a->frag_acc) {
			if (a->type.elem != (t.elem == EL_S32 || t.elem == EL_S8 ?
					     EL_S32 : EL_F32) || t.elem == EL_S8)
				diag_error(m->loc, "type mismatch: accumulator '%s' "
					   "loaded from %s data", a->name,
					   elem_name(t.elem));
		} else {
			a->type.elem = t.elem;
		}
		m->ety.elem = t.elem;	/* what this load reads (a name may be
					 * loaded with several types) */
		break;
	case MMA_EXEC:
		mma_data_operand(m, 1);
		mma_data_operand(m, 2);
		if (m->nkids > 3)
			mma_future(m);
		check_mma_schedule(m);
		c = mma_frag(m->kids[0], false);
		a = mma_frag(m->kids[1], false);
		b = mma_frag(m->kids[2], false);
		if (a == c || b == c || a == b)
			diag_error(m->loc, "not supported yet: an mma whose operands "
				   "are one fragment");
		if (a->frag_acc || b->frag_acc)
			diag_error(m->kids[a->frag_acc ? 1 : 2]->loc, "type mismatch: "
				   "'%s' is an accumulator, not an mma operand",
				   (a->frag_acc ? a : b)->name);
		if (a->type.elem != b->type.elem)
			diag_error(m->loc, "type mismatch: mma of %s and %s",
				   elem_name(a->type.elem), elem_name(b->type.elem));
		m->ety.elem = a->type.elem;
		cell = a->type.elem == EL_S8 || a->type.elem == EL_S32 ? EL_S32 : EL_F32;
		if (!c->frag_acc) {
			/* mma.load of C: the data converts to the accumulator */
			if (c->type.elem == EL_S8 || (cell == EL_S32) !=
			    (c->type.elem == EL_S32))
				diag_error(m->kids[0]->loc, "type mismatch: accumulator "
					   "'%s' holds %s, the mma gives %s", c->name,
					   elem_name(c->type.elem), elem_name(cell));
			c->frag_acc = true;
			c->type.elem = cell;
		} else if (c->type.elem != cell) {
			if (c->frag_typed)
				diag_error(m->kids[0]->loc, "type mismatch: accumulator "
					   "'%s' is %s, the mma of %s gives %s", c->name,
					   elem_name(c->type.elem), elem_name(a->type.elem),
					   elem_name(cell));
			c->type.elem = cell;
		}
		{
			/* A is M x K (stored K x M when column-major), B K x N
			 * (stored N x K when row-major) */
			int am = m->ival & 1 ? a->frag_cols : a->frag_rows;
			int ak = m->ival & 1 ? a->frag_rows : a->frag_cols;
			int bk = m->ival & 2 ? b->frag_cols : b->frag_rows;
			int bn = m->ival & 2 ? b->frag_rows : b->frag_cols;

			m->mma_mnk[0] = am;
			m->mma_mnk[1] = bn;
			m->mma_mnk[2] = ak;
			frag_extent(c, am, bn);
			if (ak != bk)
				diag_error(m->loc, "type mismatch: mma of a %d x %d and a "
					   "%d x %d operand (K %d and %d)", am, ak,
					   m->ival & 2 ? b->frag_cols : b->frag_rows,
					   m->ival & 2 ? b->frag_rows : b->frag_cols, ak, bk);
		}
		break;
	case MMA_STORE:
		c = mma_frag(m->kids[0], false);
		t = mma_data(m->kids[1]);
		{
			int rows = mma_dim(m->kids[1], &t, 0);
			int cols = mma_dim(m->kids[1], &t, 1);

			/* .transp: element (i, j) of the data is (j, i) of C */
			if (m->ival)
				frag_extent(c, cols, rows);
			else
				frag_extent(c, rows, cols);
		}
		if (!c->frag_acc)
			diag_error(m->kids[0]->loc, "not supported yet: mma.store of "
				   "'%s', which is not an accumulator", c->name);
		if (!mma_input(t.elem) && t.elem != EL_F64)
			diag_error(m->kids[1]->loc, "not supported yet: mma.store "
				   "into %s data", elem_name(t.elem));
		if ((c->type.elem == EL_S32) != (t.elem == EL_S32 || t.elem == EL_S8))
			diag_error(m->kids[1]->loc, "type mismatch: mma.store of an "
				   "accumulator of %s into %s data", elem_name(c->type.elem),
				   elem_name(t.elem));
		break;
	}
}

static void check_return(struct node *r)
{
	struct type want = cur_func->type;

	if (cur_kernel) {
		cur_kernel->threads_fixed = true;
		if (r->nkids)
			diag_error(r->loc, "not supported yet: returning a value from a "
				   "parallel body");
		return;
	}
	if (!r->nkids) {
		if (want.kind != TY_VOID)
			diag_error(r->loc, "type mismatch: '%s' returns a value",
				   cur_func->name);
		return;
	}
	{
		struct type t = check_expr(r->kids[0]);

		if ((cur_func->flag & FN_AUTO) && want.kind == TY_VOID &&
		    (t.kind == TY_SPAN || t.kind == TY_SCALAR)) {
			/* the first return gives an auto function its type; the
			 * dimensions of a spanned result are the returned data's,
			 * known at run time only (callers bind them) */
			want = t;
			memset(want.dims, 0, sizeof(want.dims));
			cur_func->type = want;
		}
		if (want.kind == TY_VOID)
			diag_error(r->loc, "type mismatch: '%s' returns void",
				   cur_func->name);
		if (want.kind == TY_SPAN) {
			struct node *e = r->kids[0];

			if (e->kind != E_ID || t.kind != TY_SPAN)
				diag_error(e->loc, "type mismatch: '%s' returns spanned data",
					   cur_func->name);
			if (e->sym->kind != SY_SPAN || e->sym->level || e->sym->ptr)
				diag_error(e->loc, "not supported yet: returning spanned data "
					   "not declared in the function");
			if (t.elem != want.elem || t.rank != want.rank)
				diag_error(e->loc, "type mismatch: returns %s of rank %d, "
					   "declared %s of rank %d", elem_name(t.elem), t.rank,
					   elem_name(want.elem), want.rank);
			return;
		}
		check_assignable(r->kids[0]->loc, want, t);
	}
}

static void check_print(struct node *p)
{
	int i;

	for (i = 0; i < p->nkids; i++) {
		struct type t = check_expr(p->kids[i]);

		if (t.kind == TY_SPAN)
			diag_error(p->kids[i]->loc, "type mismatch: cannot print spanned "
				   "data (print an element or its .span)");
		if (t.kind == TY_TUPLE) {
			/* printed as its integers' current values */
			struct node *a = p->kids[i];
			int k;

			for (k = 0; k < t.rank; k++) {
				struct node *el = node_new(E_ID, a->loc);

				el->name = a->sym->elems[k]->name;
				check_expr(el);
				node_add(a, el);
			}
		}
		if (t.kind == TY_STREAM || t.kind == TY_FUTURE)
			diag_error(p->kids[i]->loc, "type mismatch: cannot print %s",
				   kind_text(t));
	}
}

/* a value of print!: what is known when the program compiles */
static void static_value(const struct node *e)
{
	long long v;

	if (const_eval(e, &v)) {
		if (e->ety.kind == TY_SCALAR && e->ety.elem == EL_BOOL)
			fputs(v ? "true" : "false", stdout);
		else
			printf("%lld", v);
		return;
	}
	switch (e->kind) {
	case E_ID:
		/* a host value by its name: what it is is known at run time */
		if (e->sym && e->sym->level == 0 && (e->sym->kind == SY_DIM ||
		    e->sym->kind == SY_PARAM) && is_integer(e->sym->type)) {
			printf("%s", e->name);
			return;
		}
		break;
	case E_SPAN:
		if (e->ival >= 0 && e->sym && e->ival < e->sym->type.rank &&
		    e->sym->type.dims[e->ival] != e) {
			static_value(e->sym->type.dims[e->ival]);
			return;
		}
		break;
	case E_BINARY:
		if (is_integer(e->ety)) {
			putchar('(');
			static_value(e->kids[0]);
			printf(" %s ", e->name);
			static_value(e->kids[1]);
			putchar(')');
			return;
		}
		break;
	default:
		break;
	}
	if (e->ety.kind == TY_SCALAR && elem_is_float(e->ety.elem)) {
		fputs("unknown", stdout);
		return;
	}
	fputs("rt-val", stdout);
}

/* print!(...) and println!(...): their arguments one after another,
 * strings with their escapes, as they are known when the program
 * compiles; nothing runs */
static void static_print(struct node *p)
{
	struct node **dims = xmalloc((size_t)(p->nkids + 1) * sizeof(*dims));
	int i, k;

	/* every argument checked before anything is printed */
	for (i = 0; i < p->nkids; i++) {
		struct node *a = p->kids[i];

		dims[i] = node_new(N_BLOCK, a->loc);
		if (a->kind == E_BINARY && shape_value(a, dims[i])) {
			for (k = 0; k < dims[i]->nkids; k++)
				check_expr(dims[i]->kids[k]);
			continue;
		}
		dims[i] = NULL;
		check_expr(a);
		/* a bounded ituple (a loop's indices) is rt-val */
		if (a->ety.kind != TY_SCALAR && a->ety.kind != TY_STRING &&
		    a->ety.kind != TY_TUPLE && !(a->kind == E_SPAN && a->ival < 0))
			diag_error(a->loc, "type mismatch: print! of %s", kind_text(a->ety));
	}
	for (i = 0; i < p->nkids; i++) {
		const struct node *a = p->kids[i];
		const char *c;

		if (dims[i]) {
			/* shape arithmetic (nit + 1): an ituple */
			putchar('{');
			for (k = 0; k < dims[i]->nkids; k++) {
				if (k)
					fputs(", ", stdout);
				static_value(dims[i]->kids[k]);
			}
			putchar('}');
			continue;
		}
		if (a->kind == E_STRING) {
			for (c = a->name; *c; c++) {
				if (*c != '\\' || !c[1]) {
					putchar(*c);
					continue;
				}
				switch (*++c) {
				case 'n': putchar('\n'); break;
				case 't': putchar('\t'); break;
				default: putchar(*c); break;
				}
			}
		} else if (a->kind == E_SPAN && a->ival < 0 && a->sym) {
			/* a shape or an ituple */
			putchar(a->sym->ituple ? '{' : '[');
			for (k = 0; k < a->sym->type.rank; k++) {
				if (k)
					fputs(", ", stdout);
				static_value(a->sym->type.dims[k]);
			}
			putchar(a->sym->ituple ? '}' : ']');
		} else {
			static_value(a);
		}
	}
	if (p->flag & 1)
		putchar('\n');
	fflush(stdout);
	free(dims);
}

#define MAX_STMT_DEPTH	256
static int stmt_depth;

static void check_stmt_inner(struct node *s);


static struct node *int_node(struct loc loc, long long v)
{
	struct node *n = node_new(E_INT, loc);

	n->ival = v;
	check_expr(n);
	return n;
}

/*
 * A view of spanned data (Choreo's view operations): a tile of it.
 * x.chunkat(p, _, q): dimension k is split into #index_k equal chunks (the
 * bounded variables, an ituple standing for its elements, `_` the whole
 * dimension) and the index_k-th is taken; x.subspan(a, b) is the tile
 * [a, b] at the origin, x.subspan(a, b).at(i, j) the (i, j)-th such tile.
 * After this, kid 0 holds the tile's dimensions and kid 1 one index per
 * dimension (in tiles); e->sym is the data.
 */
static struct type check_view_of(struct node *e);

/* a view of x.span_as(...) (kid 2): the alias, declared under the view's
 * hidden name (parser.y, over_span_as), is its base */
static void named_view(struct sym *x, struct node *e);
static void alias_element(struct sym *x, const struct node *ref);

static void reshape_view(struct node *e);

static struct type check_view(struct node *e)
{
	if (e->flag == VIEW_SQZ) {
		/* Croqtile's rule: a chunkat's tile is never squeezed alone */
		const struct node *in = e->nkids > 2 ? e->kids[2] : NULL;

		while (in && in->flag == VIEW_CHUNKAT)
			in = in->nkids > 2 ? in->kids[2] : NULL;
		if (!in)
			diag_error(e->loc, ".sqz requires a preceding .subspan, "
				   ".span_as, or .view");
	}
	if (e->nkids > 2 && !lookup(e->name) &&
	    !(e->kids[2]->flag == VIEW_SPAN_AS && e->kids[2]->nkids == 2)) {
		/* a view of a view: the inner one as a named view */
		struct node *in = e->kids[2];
		struct type b = check_view(in);
		struct sym *sy = declare(e->name, SY_ALIAS, e);

		sy->type = b;
		named_view(sy, in);
	} else if (e->nkids > 2 && !lookup(e->name)) {
		struct node *sa = e->kids[2];
		struct type b = check_view_of(sa);
		struct sym *sy = declare(e->name, SY_ALIAS, e);

		sy->type = b;
		sy->target = sa->sym;
		sy->cname = sy->target->cname;
		if (sy->target->array_of)
			alias_element(sy, sa);
	}
	if (e->flag == VIEW_SQZ || (e->flag == VIEW_SPAN_AS && e->nkids > 2))
		reshape_view(e);
	return check_view_of(e);
}

static struct node *ident_node(struct loc at, const char *name)
{
	struct node *id = node_new(E_ID, at);

	id->name = xstrdup(name);
	return id;
}

/* does e name a bounded variable (or is too deep to tell) */
static bool has_bounded_at(const struct node *e, int depth)
{
	struct sym *v;
	int i;

	if (depth > 64)
		return true;
	if (e->kind == E_ID || e->kind == E_COCALL)
		if ((v = lookup(e->name)) && (v->ubound || v->kind == SY_TUPLE))
			return true;
	for (i = 0; i < e->nkids; i++)
		if (e->kids[i] && has_bounded_at(e->kids[i], depth + 1))
			return true;
	return false;
}

static bool has_bounded(const struct node *e)
{
	return has_bounded_at(e, 0);
}

/* the bounded variable of y + k, y - k, k + y (k without one), if any */
static struct node *bounded_term(struct node *e, int depth)
{
	struct node *l, *r;
	struct sym *v;

	if (e->kind == E_ID)
		return (v = lookup(e->name)) && v->ubound && v->kind != SY_TUPLE ?
		       e : NULL;
	if (e->kind != E_BINARY || (strcmp(e->name, "+") && strcmp(e->name, "-")) ||
	    depth > 64)
		return NULL;
	l = bounded_term(e->kids[0], depth + 1);
	r = bounded_term(e->kids[1], depth + 1);
	if (l && !r && !has_bounded(e->kids[1]))
		return l;
	if (r && !l && !strcmp(e->name, "+") && !has_bounded(e->kids[0]))
		return r;
	return NULL;
}

/* span_as's new shape: sizes (integers, at most MAX_RANK) as t's
 * dimensions; their product into *n; false if one is not a constant */
static bool span_as_dims(const struct node *e, const struct node *sizes,
			 struct type *t, long long *n)
{
	bool known = true;
	long long v;
	int k;

	if (sizes->nkids > MAX_RANK)
		diag_error(e->loc, "not supported yet: rank %d (at most %d)",
			   sizes->nkids, MAX_RANK);
	t->rank = sizes->nkids;
	for (k = 0; k < sizes->nkids; k++) {
		if (!is_integer(check_expr(sizes->kids[k])))
			diag_error(sizes->kids[k]->loc, "type mismatch: a "
				   "dimension must be an integer");
		t->dims[k] = sizes->kids[k];
		if (const_eval(t->dims[k], &v))
			*n *= v;
		else
			known = false;
	}
	return known;
}

static struct type check_view_of(struct node *e)
{
	struct node *sizes = e->kids[0], *ix = e->kids[1];
	struct node *nsizes = node_new(E_DIMLIST, e->loc);
	struct node *nix = node_new(N_BLOCK, e->loc);
	struct sym *s = resolve(&(struct node){ .kind = E_ID, .loc = e->loc,
						 .name = e->name, .index = e->index });
	struct type t;
	int i, k, rank;

	if (!view_ok)
		diag_error(e->loc, "not supported yet: a view outside dma.copy");
	if (s->kind == SY_FUTURE)	/* f.data.span_as(...): its buffer */
		s = future_buffer(s, e->loc);
	if (s->type.kind != TY_SPAN || s->kind == SY_SHAPE)
		diag_error(e->loc, "type mismatch: '%s' is not spanned data", s->name);
	e->sym = s;
	rank = s->type.rank;
	if (e->flag == VIEW_CHUNKAT) {
		for (i = 0; i < ix->nkids; i++) {
			struct node *a = ix->kids[i], *ub;
			struct sym *v;
			int n = 1;

			if (a->kind == E_ID && !strcmp(a->name, "_")) {
				if (nix->nkids >= rank)
					break;
				node_add(nsizes, NULL);
				node_add(nix, int_node(a->loc, 0));
				continue;
			}
			if (a->kind == E_BINARY && !strcmp(a->name, "#")) {
				/* p # q: one index, #p * #q chunks */
				if (nix->nkids >= rank)
					break;
				ub = compose_index(a);
				check_expr(ub);
				check_expr(a);
				node_add(nsizes, ub);
				node_add(nix, a);
				continue;
			}
			if (a->kind == E_COCALL && a->nkids == 1 && lookup(a->name) &&
			    lookup(a->name)->ubound) {
				/* y(k): y's value k, y(-k) its k-th from the end
				 * (dma-advanced.md: y(-1) is y's last value) */
				long long k0;
				struct node *val;

				if (!const_eval(a->kids[0], &k0))
					diag_error(a->kids[0]->loc, "type mismatch: %s(k) "
						   "needs a constant k", a->name);
				if (nix->nkids >= rank)
					break;
				ub = node_new(E_UBOUND, a->loc);
				node_add(ub, ident_node(a->loc, a->name));
				if (k0 >= 0) {
					val = int_node(a->loc, k0);
				} else {
					val = node_new(E_BINARY, a->loc);
					val->name = xstrdup("+");
					node_add(val, node_clone(ub));
					node_add(val, int_node(a->loc, k0));
				}
				check_expr(ub);
				check_expr(val);
				node_add(nsizes, ub);
				node_add(nix, val);
				continue;
			}
			if (a->kind == E_BINARY && bounded_term(a, 0)) {
				/* y - 1, y + k: an index of y's tiles (out of
				 * them it faults, as any view index) */
				struct node *b = bounded_term(a, 0);

				if (nix->nkids >= rank)
					break;
				if (!is_integer(check_expr(a)))
					diag_error(a->loc, "type mismatch: an index must be "
						   "an integer");
				ub = node_new(E_UBOUND, a->loc);
				node_add(ub, ident_node(a->loc, b->name));
				check_expr(ub);
				node_add(nsizes, ub);
				node_add(nix, a);
				continue;
			}
			if (a->kind != E_ID)
				diag_error(a->loc, "type mismatch: chunkat needs bounded "
					   "variables or '_'");
			v = lookup(a->name);
			if (v && v->kind == SY_TUPLE)
				n = v->type.rank;
			for (k = 0; k < n; k++) {
				struct node *id = node_new(E_ID, a->loc);

				id->name = v && v->kind == SY_TUPLE ? v->elems[k]->name :
					   a->name;
				check_expr(id);
				if (!id->sym->ubound)
					diag_error(a->loc, "type mismatch: '%s' is not a "
						   "bounded variable", id->name);
				if (nix->nkids >= rank)
					break;
				ub = node_new(E_UBOUND, a->loc);
				node_add(ub, id);
				node_add(nsizes, ub);
				node_add(nix, id);
			}
		}
		if (nix->nkids != rank || i != ix->nkids)
			diag_error(e->loc, "type mismatch: chunkat of '%s' (rank %d) "
				   "needs %d indices", s->name, rank, rank);
		/* tile dimension k: x.span(k) / #index_k */
		for (k = 0; k < rank; k++) {
			struct node *d = node_new(E_SPAN, e->loc), *q;

			d->name = e->name;
			d->ival = k;
			d->index = e->index;
			if (nsizes->kids[k]) {
				q = node_new(E_BINARY, e->loc);
				q->name = xstrdup("/");
				node_add(q, d);
				node_add(q, nsizes->kids[k]);
				d = q;
			}
			nsizes->kids[k] = d;
		}
	} else if (e->flag == VIEW_SPAN_AS) {
		long long n = 1, m = 1, v;
		bool known = true;

		/* the same elements in row-major order, another shape */
		t = s->type;
		known = span_as_dims(e, sizes, &t, &n);
		for (k = 0; k < rank; k++)
			if (span_dim_const(s, k, &v))
				m *= v;
			else
				known = false;
		if (known && n != m)
			diag_error(e->loc, "type mismatch: span_as of %lld elements "
				   "as %lld", m, n);
		return t;
	} else {
		/* with strides, a window of any rank over the data's elements */
		if (e->strides) {
			if (sizes->nkids > MAX_RANK)
				diag_error(e->loc, "not supported yet: rank %d (at most "
					   "%d)", sizes->nkids, MAX_RANK);
			rank = sizes->nkids;
		}
		if (sizes->nkids != rank)
			diag_error(e->loc, "type mismatch: %s of '%s' (rank %d) "
				   "needs %d sizes", e->flag == VIEW_FROM ? "view" :
				   "subspan", s->name, rank, rank);
		if (ix->nkids && ix->nkids != rank)
			diag_error(e->loc, "type mismatch: %s of '%s' (rank %d) "
				   "needs %d %s", e->flag == VIEW_FROM ? "view" :
				   "subspan", s->name, rank, rank,
				   e->flag == VIEW_FROM ? "offsets" : "indices");
		if (e->strides && e->strides->nkids != rank)
			diag_error(e->loc, "type mismatch: a view of %d sizes needs "
				   "%d strides", rank, rank);
		for (k = 0; e->strides && k < rank; k++)
			if (!is_integer(check_expr(e->strides->kids[k])))
				diag_error(e->strides->kids[k]->loc, "type mismatch: a "
					   "stride must be an integer");
		for (k = 0; k < rank; k++) {
			struct node *z = sizes->kids[k];

			/* `_`: the whole dimension (at index or offset 0) */
			if (z->kind == E_ID && !strcmp(z->name, "_")) {
				z = node_new(E_SPAN, z->loc);
				z->name = e->name;
				z->ival = k;
				z->index = e->index;
			}
			node_add(nsizes, z);
			node_add(nix, ix->nkids ? ix->kids[k] : int_node(e->loc, 0));
		}
	}
	t = s->type;
	for (k = 0; k < rank; k++) {
		if (!is_integer(check_expr(nsizes->kids[k])))
			diag_error(nsizes->kids[k]->loc, "type mismatch: a dimension "
				   "must be an integer");
		if (!is_integer(check_expr(nix->kids[k])))
			diag_error(nix->kids[k]->loc, "type mismatch: an index must "
				   "be an integer");
		t.dims[k] = nsizes->kids[k];
	}
	t.rank = rank;
	e->kids[0] = nsizes;
	e->kids[1] = nix;
	return t;
}

/*
 * A shape (mdspan): its dimensions are integer expressions, shapes (their
 * dimensions concatenated) or data's .span. It has no storage: each use
 * of a dimension is its expression (a constant where there is one).
 */
static bool shape_value(struct node *e, struct node *out);

/* the dimensions of a, as expressions a.span(k) */
static void span_dims(struct node *e, struct node *out)
{
	struct sym *s = resolve_data(e);
	int k;

	if (s->type.kind != TY_SPAN)
		diag_error(e->loc, "type mismatch: '%s' is not spanned data", s->name);
	for (k = 0; k < s->type.rank; k++) {
		struct node *de = node_new(E_SPAN, e->loc);

		de->name = e->name;
		de->ival = k;
		de->index = e->index;
		node_add(out, de);
	}
}

static bool shape_operand(struct node *e, struct node *out)
{
	struct sym *s;

	if (e->kind == E_ID && (s = lookup(e->name)) && s->kind == SY_SHAPE) {
		span_dims(e, out);
		return true;
	}
	if (e->kind == E_SPAN && e->ival < 0) {
		span_dims(e, out);
		return true;
	}
	return shape_value(e, out);
}

/*
 * Shape arithmetic (Choreo's shapes and ituples guides): an ituple
 * literal {a, b} (an element that is a shape or an ituple is spliced in),
 * and +, -, *, /, % of a shape (a.span, a shape's or an ituple's name, a
 * literal) with another of the same rank or with an integer, element by
 * element: [7, 18, 28] / {1, 2, 4} is [7, 9, 7]. The dimensions, as
 * expressions not checked yet, go to out; false if e is no shape.
 */
static bool shape_value(struct node *e, struct node *out)
{
	struct node *l, *r;
	bool ls, rs;
	int k, n;

	if (e->kind == E_DIMLIST && e->flag == 1) {
		for (k = 0; k < e->nkids; k++)
			if (!shape_operand(e->kids[k], out))
				node_add(out, e->kids[k]);
		return true;
	}
	/* cdiv(d.span, {9, 7}) and the align built-ins: element by element
	 * too */
	if (e->kind == E_CALL && e->nkids == 2 && is_align_call(e))
		;
	else if (e->kind != E_BINARY || !strchr("+-*/%", e->name[0]) || e->name[1])
		return false;
	l = node_new(N_BLOCK, e->loc);
	r = node_new(N_BLOCK, e->loc);
	ls = shape_operand(e->kids[0], l);
	rs = shape_operand(e->kids[1], r);
	if (!ls && !rs)
		return false;
	if (ls && rs && l->nkids != r->nkids)
		diag_error(e->loc, "type mismatch: '%s' of shapes of rank %d and %d",
			   e->name, l->nkids, r->nkids);
	n = ls ? l->nkids : r->nkids;
	for (k = 0; k < n; k++) {
		struct node *a = ls ? l->kids[k] : k ? node_clone(e->kids[0]) : e->kids[0];
		struct node *b = rs ? r->kids[k] : k ? node_clone(e->kids[1]) : e->kids[1];
		struct node *op = node_new(e->kind, e->loc);

		op->name = e->name;
		node_add(op, a);
		node_add(op, b);
		node_add(out, op);
	}
	return true;
}

/* a list whose elements may be shape arithmetic: each such element
 * replaced by its dimensions (list itself if none is) */
static struct node *expand_shapes(struct node *list)
{
	struct node *out = node_new(list->kind, list->loc);
	bool any = false;
	int i;

	out->flag = list->flag;
	for (i = 0; i < list->nkids; i++) {
		struct node *e = list->kids[i];

		if ((e->kind == E_BINARY || e->kind == E_DIMLIST || e->kind == E_CALL) &&
		    shape_value(e, out)) {
			any = true;
			continue;
		}
		node_add(out, e);
	}
	return any ? out : list;
}

static void check_shape_decl(struct node *d)
{
	struct node *list = d->kids[0];
	struct type t = { .kind = TY_SPAN, .elem = EL_NONE };
	struct sym *sy;
	int i, k;

	d->kids[0] = list = expand_shapes(list);
	for (i = 0; i < list->nkids; i++) {
		struct node *e = list->kids[i];
		struct sym *src = NULL;

		if (e->kind == E_ID && lookup(e->name) &&
		    lookup(e->name)->kind == SY_SHAPE)
			e->kind = E_SPAN, e->ival = -1;
		if (e->kind == E_SPAN && e->ival < 0) {
			src = resolve_data(e);
			if (src->type.kind != TY_SPAN)
				diag_error(e->loc, "type mismatch: '%s' is not spanned "
					   "data", src->name);
			for (k = 0; k < src->type.rank; k++) {
				struct node *de = node_new(E_SPAN, e->loc);

				if (t.rank == MAX_RANK)
					diag_error(e->loc, "not supported yet: rank above %d",
						   MAX_RANK);
				de->name = e->name;
				de->ival = k;
				de->index = e->index;
				check_expr(de);
				t.dims[t.rank++] = de;
			}
			continue;
		}
		if (!is_integer(check_expr(e)))
			diag_error(e->loc, "type mismatch: a dimension must be an integer");
		if (t.rank == MAX_RANK)
			diag_error(e->loc, "not supported yet: rank above %d", MAX_RANK);
		t.dims[t.rank++] = e;
	}
	if (d->ival >= 0 && d->ival != t.rank)
		diag_error(d->loc, "type mismatch: %s '%s' declared of rank %lld "
			   "has %d %s", d->flag ? "ituple" : "mdspan", d->name, d->ival,
			   t.rank, d->flag ? "elements" : "dimensions");
	sy = declare(d->name, SY_SHAPE, d);
	sy->type = t;
	sy->ituple = d->flag;
	d->sym = sy;
}

/* the fragment statements copy, reduce_sum and reduce_max, written out as
 * foreach loops (below) */
static struct node *fb_node(enum node_kind k, struct loc loc, const char *name)
{
	struct node *n = node_new(k, loc);

	n->name = name ? xstrdup(name) : NULL;
	return n;
}

static struct node *fb_bin(struct loc loc, const char *op, struct node *a,
			   struct node *b)
{
	struct node *n = fb_node(E_BINARY, loc, op);

	node_add(n, a);
	node_add(n, b);
	return n;
}

static struct node *fb_span(struct loc loc, const char *data, int k)
{
	struct node *n = fb_node(E_SPAN, loc, data);

	n->ival = k;
	return n;
}

static struct node *fb_loopvar(struct loc loc, int k)
{
	char name[24];

	snprintf(name, sizeof(name), "__frag%d", k);
	return fb_node(E_ID, loc, name);
}

/* data.at(...) of the index expressions in ix (taken) */
static struct node *fb_at(struct loc loc, const char *data, struct node *ix)
{
	struct node *n = fb_node(E_AT, loc, data);
	int i;

	for (i = 0; i < ix->nkids; i++)
		node_add(n, ix->kids[i]);
	return n;
}

/* foreach {__frag<k> for k in dims} in [data.span(k)...] { body } */
static struct node *fb_foreach(struct loc loc, const char *data, const int *dims,
			       int n, struct node *body)
{
	struct node *w = node_new(N_WITHIN, loc), *names = node_new(N_BLOCK, loc);
	struct node *bounds = node_new(N_BLOCK, loc), *ws = node_new(N_BLOCK, loc);
	struct node *f = node_new(N_FOREACH, loc);
	int i;

	for (i = 0; i < n; i++) {
		node_add(names, fb_loopvar(loc, dims[i]));
		node_add(bounds, fb_span(loc, data, dims[i]));
	}
	node_add(w, names);
	node_add(w, bounds);
	node_add(ws, w);
	node_add(f, ws);
	node_add(f, body);
	f->flag = 1;
	return f;
}

/*
 * copy(dst, src), reduce_sum(dst, src, d), reduce_max(dst, src, d) of
 * fragments (Croqtile's mma.md, "Fragment Reductions"; co-mock's
 * cute_frag_ops): copy sets dst's elements to src's, both in row-major
 * order; a reduction folds src along its dimension d and writes the
 * results in row-major order into dst, which has that many elements (a
 * lower rank, or the same rank with dimension d of 1). Returns the loops
 * that do it, not checked yet.
 */
static struct node *frag_statement(struct node *c)
{
	bool copy = !strcmp(c->name, "copy"), max = !strcmp(c->name, "reduce_max");
	struct node *dst = c->nkids > 0 ? c->kids[0] : NULL;
	struct node *src = c->nkids > 1 ? c->kids[1] : NULL;
	struct sym *ds, *ss;
	struct node *lin = NULL, *dix, *six, *body, *ix0, *acc;
	long long d = -1, sn = 1, dn = 1, v;
	int outer[MAX_RANK], no = 0, k, rank;
	bool known = true;

	if (c->nkids != (copy ? 2 : 3) || dst->kind != E_ID || src->kind != E_ID)
		diag_error(c->loc, "type mismatch: %s takes %s", c->name,
			   copy ? "(dst, src)" : "(dst, src, dimension)");
	ds = resolve(dst);
	ss = resolve(src);
	if (ds->type.kind != TY_SPAN || ss->type.kind != TY_SPAN ||
	    ds->kind == SY_SHAPE || ss->kind == SY_SHAPE)
		diag_error(c->loc, "type mismatch: %s needs spanned data", c->name);
	rank = ss->type.rank;
	if (!copy) {
		check_expr(c->kids[2]);
		if (!const_eval(c->kids[2], &d) || d < 0 || d >= rank)
			diag_error(c->kids[2]->loc, "type mismatch: %s's dimension "
				   "must be a constant below %d", c->name, rank);
	}
	/* the element counts, when known, must agree */
	for (k = 0; k < rank; k++)
		if (k != d && !(const_eval(ss->type.dims[k], &v) && (sn *= v, 1)))
			known = false;
	for (k = 0; k < ds->type.rank; k++)
		if (!(const_eval(ds->type.dims[k], &v) && (dn *= v, 1)))
			known = false;
	if (known && sn != dn)
		diag_error(c->loc, "type mismatch: %s of %lld elements into '%s' "
			   "of %lld", c->name, sn, ds->name, dn);
	/* L: the row-major number of a result over src's other dimensions */
	for (k = 0; k < rank; k++) {
		if (k == d)
			continue;
		outer[no++] = k;
		lin = lin ? fb_bin(c->loc, "+", fb_bin(c->loc, "*", lin,
						       fb_span(c->loc, src->name, k)),
				   fb_loopvar(c->loc, k)) :
			    fb_loopvar(c->loc, k);
	}
	if (!lin)
		lin = int_node(c->loc, 0);
	/* dst's index of L: (L / the product of the later dimensions) % its
	 * own (the first without %: too large an L fails its bounds check) */
	dix = node_new(N_BLOCK, c->loc);
	for (k = 0; k < ds->type.rank; k++) {
		struct node *e = node_clone(lin);
		int j;

		for (j = k + 1; j < ds->type.rank; j++)
			e = fb_bin(c->loc, "/", e, fb_span(c->loc, dst->name, j));
		if (k)
			e = fb_bin(c->loc, "%", e, fb_span(c->loc, dst->name, k));
		node_add(dix, e);
	}
	six = node_new(N_BLOCK, c->loc);
	ix0 = node_new(N_BLOCK, c->loc);
	for (k = 0; k < rank; k++) {
		node_add(six, fb_loopvar(c->loc, k));
		node_add(ix0, k == d ? int_node(c->loc, 0) : fb_loopvar(c->loc, k));
	}
	body = node_new(N_BLOCK, c->loc);
	acc = fb_at(c->loc, dst->name, dix);
	if (copy) {
		node_add(body, fb_bin(c->loc, "=", acc, fb_at(c->loc, src->name, six)));
		body->kids[0]->kind = N_ASSIGN;
		return fb_foreach(c->loc, src->name, outer, no, body);
	}
	/* dst = src[.., 0, ..]; then each later element folded in */
	node_add(body, fb_bin(c->loc, "=", node_clone(acc), fb_at(c->loc, src->name, ix0)));
	body->kids[0]->kind = N_ASSIGN;
	{
		struct node *in = node_new(N_BLOCK, c->loc), *iff = node_new(N_IF, c->loc);
		struct node *then = node_new(N_BLOCK, c->loc), *val;
		struct node *sv = fb_at(c->loc, src->name, six);
		int dd = (int)d;

		if (max) {
			val = fb_node(E_TERNARY, c->loc, "?");
			node_add(val, fb_bin(c->loc, ">", node_clone(sv), node_clone(acc)));
			node_add(val, sv);
			node_add(val, node_clone(acc));
		} else {
			val = fb_bin(c->loc, "+", node_clone(acc), sv);
		}
		node_add(then, fb_bin(c->loc, "=", acc, val));
		then->kids[0]->kind = N_ASSIGN;
		node_add(iff, fb_bin(c->loc, ">", fb_loopvar(c->loc, dd), int_node(c->loc, 0)));
		node_add(iff, then);
		node_add(in, iff);
		node_add(body, fb_foreach(c->loc, src->name, &dd, 1, in));
	}
	return no ? fb_foreach(c->loc, src->name, outer, no, body) : body;
}

static void check_stmt(struct node *s)
{
	if (++stmt_depth > MAX_STMT_DEPTH)
		diag_error(s->loc, "not supported yet: statements nested more than "
			   "%d deep", MAX_STMT_DEPTH);
	check_stmt_inner(s);
	stmt_depth--;
}

/*
 * x = y.view(...).from(...) (or y.chunkat(...), y.subspan(...).at(...)):
 * x names that window of y's data, y perhaps a named view itself: its
 * first element's offset and each dimension's stride in the data's
 * elements (a view without strides has the data's row-major ones).
 */
static void named_view(struct sym *x, struct node *e)
{
	struct sym *b = e->sym;
	struct node *off, *nix = e->kids[1], *sizes = e->kids[0];
	int k, m, rank = x->type.rank;

	if (b->array_of)
		diag_error(e->loc, "not supported yet: a named view of an "
			   "element of array '%s'", b->array_of->name);
	if (b->kind == SY_ALIAS && !b->view_off && strcmp(b->cname, b->target->cname))
		diag_error(e->loc, "not supported yet: a named view of '%s', "
			   "an element of an array", b->name);
	if (b->view_off) {
		if (e->strides)
			diag_error(e->loc, "not supported yet: a view with strides "
				   "of the named view '%s'", b->name);
		x->target = b->target;
		off = b->view_off;
		for (k = 0; k < rank; k++)
			x->view_strides[k] = b->view_strides[k];
	} else {
		/* data, or data under another shape (span_as): row-major */
		x->target = b->kind == SY_ALIAS ? b->target : b;
		off = int_node(e->loc, 0);
		for (k = 0; k < rank; k++) {
			struct node *st = e->strides ? e->strides->kids[k] :
					  int_node(e->loc, 1);

			/* row-major: the product of the later dimensions */
			for (m = k + 1; !e->strides && m < b->type.rank; m++) {
				struct node *d = fb_node(E_SPAN, e->loc, e->name);

				d->ival = m;
				check_expr(d);
				st = fb_bin(e->loc, "*", st, d);
			}
			x->view_strides[k] = st;
		}
	}
	/* its origin: offsets of view.from, tile index times tile size */
	for (k = 0; k < rank; k++) {
		struct node *o = nix->kids[k];

		if (e->flag != VIEW_FROM)
			o = fb_bin(e->loc, "*", o, sizes->kids[k]);
		off = fb_bin(e->loc, "+", off, fb_bin(e->loc, "*", o,
						       x->view_strides[k]));
	}
	x->view_off = off;
	x->cname = x->target->cname;
}

/*
 * x.sqz() and x.span_as(...) of a view x (named under e's hidden name by
 * check_view): a named view of x's data under a hidden name of its own,
 * e then the whole of it (a subspan of `_`s). sqz keeps x's offset and
 * the strides of the dimensions not of extent 1 (at least one); span_as
 * reads x's elements from its first on, row-major in the new shape, as
 * Croqtile does: x's own layout is only right for that if x is
 * contiguous, a warning says when that is not certain.
 */
static void reshape_view(struct node *e)
{
	static int nreshaped;
	struct sym *x = resolve(&(struct node){ .kind = E_ID, .loc = e->loc,
						 .name = e->name }), *r;
	struct node *sizes = e->kids[0], *whole = node_new(E_DIMLIST, e->loc);
	struct node *strides[MAX_RANK], *off;
	struct type t = x->type;
	char buf[64];
	int k, m;

	if (x->type.kind != TY_SPAN || x->kind == SY_SHAPE)
		diag_error(e->loc, "type mismatch: '%s' is not spanned data", x->name);
	/* x's layout: a named view's, or its data's row-major one */
	off = x->view_off ? x->view_off : int_node(e->loc, 0);
	for (k = 0; k < x->type.rank; k++) {
		if (x->view_off) {
			strides[k] = x->view_strides[k];
			continue;
		}
		strides[k] = int_node(e->loc, 1);
		for (m = k + 1; m < x->type.rank; m++) {
			struct node *d = fb_node(E_SPAN, e->loc, x->name);

			d->ival = m;
			check_expr(d);
			strides[k] = fb_bin(e->loc, "*", strides[k], d);
		}
	}
	snprintf(buf, sizeof(buf), "__reshaped%d_%d", e->loc.line, ++nreshaped);
	r = declare(buf, SY_ALIAS, e);
	r->target = x->kind == SY_ALIAS ? x->target : x;
	if (r->target->array_of || (x->kind == SY_ALIAS && !x->view_off &&
				    strcmp(x->cname, x->target->cname)))
		diag_error(e->loc, "not supported yet: %s of an element of an "
			   "array", e->flag == VIEW_SQZ ? ".sqz" : "span_as");
	r->cname = r->target->cname;
	r->view_off = off;
	if (e->flag == VIEW_SQZ) {
		long long v;

		t.rank = 0;
		for (k = 0; k < x->type.rank; k++) {
			if (const_eval(x->type.dims[k], &v) && v == 1 &&
			    (t.rank || k < x->type.rank - 1))
				continue;
			/* the last one stays if all are 1 */
			r->view_strides[t.rank] = strides[k];
			t.dims[t.rank++] = x->type.dims[k];
		}
		if (!t.rank)
			diag_error(e->loc, "internal error: .sqz of rank 0");
	} else {
		long long n = 1, want = 1, v, dense = 1, st;
		bool known = true, contiguous = true;

		known = span_as_dims(e, sizes, &t, &n);
		for (k = x->type.rank - 1; k >= 0; k--) {
			if (!const_eval(x->type.dims[k], &v) ||
			    !const_eval(strides[k], &st)) {
				known = contiguous = false;
				break;
			}
			if (v != 1 && st != dense)
				contiguous = false;
			dense *= v;
			want *= v;
		}
		if (known && n != want)
			diag_error(e->loc, "type mismatch: span_as of %lld elements "
				   "as %lld", want, n);
		if (!contiguous)
			diag_warning(e->loc, "'span_as' %s applied to non-contiguous "
				     "spanned data (it reads from the view's first "
				     "element on)", known ? "is" : "may be");
		for (k = t.rank - 1; k >= 0; k--) {
			r->view_strides[k] = int_node(e->loc, 1);
			for (m = k + 1; m < t.rank; m++)
				r->view_strides[k] = fb_bin(e->loc, "*",
							    r->view_strides[k],
							    t.dims[m]);
		}
	}
	r->type = t;
	/* e: the whole of r */
	for (k = 0; k < t.rank; k++)
		node_add(whole, ident_node(e->loc, "_"));
	e->name = r->name;
	e->flag = VIEW_SUBSPAN;
	e->kids[0] = whole;
	e->kids[1] = node_new(N_BLOCK, e->loc);
	e->nkids = 2;
}

static void check_stmt_inner(struct node *s)
{
	struct type a, b;

	s->level = cur_level;
	s->par = cur_kernel ? cur_kernel->par : NULL;
	switch (s->kind) {
	case N_BLOCK:
		if (s->name && !strcmp(s->name, "device") && cur_kernel)
			diag_error(s->loc, "not supported yet: a device level "
				   "inside a parallel body");
		if (s->flag)
			check_decl_group(s);
		else
			check_body(s);
		break;
	case N_ASSIGN:
		if (!strcmp(s->name, "=") && is_call_of(s->kids[1], "select")) {
			check_select_assign(s);
			break;
		}
		if (s->kids[0]->kind == E_ID && !lookup(s->kids[0]->name) &&
		    !strcmp(s->name, "=") && s->kids[1]->kind == E_VIEW &&
		    s->kids[1]->flag == VIEW_SPAN_AS && s->kids[1]->nkids == 2) {
			/* `x = y.span_as(...)`: x is y's data with another shape */
			struct sym *sy;

			view_ok = true;
			b = check_expr(s->kids[1]);
			view_ok = false;
			sy = declare(s->kids[0]->name, SY_ALIAS, s);
			sy->type = b;
			sy->target = s->kids[1]->sym;
			sy->cname = sy->target->cname;
			if (sy->target->array_of)
				alias_element(sy, s->kids[1]);
			s->kids[0]->sym = sy;
			s->kind = N_SHAPEDECL;	/* nothing to run */
			break;
		}
		if (s->kids[0]->kind == E_ID && !lookup(s->kids[0]->name) &&
		    !strcmp(s->name, "=") && s->kids[1]->kind == E_VIEW &&
		    (s->kids[1]->nkids == 2 || s->kids[1]->flag == VIEW_SQZ ||
		     s->kids[1]->flag == VIEW_SPAN_AS)) {
			/* `b = a.view(...).from(...)`: b names that window */
			struct sym *sy;

			view_ok = true;
			b = check_expr(s->kids[1]);
			view_ok = false;
			sy = declare(s->kids[0]->name, SY_ALIAS, s);
			sy->type = b;
			named_view(sy, s->kids[1]);
			s->kids[0]->sym = sy;
			s->kind = N_SHAPEDECL;
			break;
		}
		if (s->kids[0]->kind == E_ID && !lookup(s->kids[0]->name) &&
		    !strcmp(s->name, "=") && s->kids[1]->kind == E_ID &&
		    !s->kids[1]->index && lookup(s->kids[1]->name) &&
		    lookup(s->kids[1]->name)->kind == SY_SHAPE) {
			/* `b = a;` of an ituple (a shape): b is one like it */
			struct node *l = node_new(N_BLOCK, s->loc);

			node_add(l, s->kids[1]);
			s->kind = N_SHAPEDECL;
			s->name = s->kids[0]->name;
			s->flag = lookup(s->kids[1]->name)->ituple;
			s->ival = -1;
			s->kids[0] = l;
			s->nkids = 1;
			check_shape_decl(s);
			break;
		}
		if (s->kids[0]->kind == E_ID && !lookup(s->kids[0]->name) &&
		    !strcmp(s->name, "=") && s->kids[1]->kind == E_BINARY &&
		    shape_value(s->kids[1], node_new(N_BLOCK, s->loc))) {
			/* `b = d.span % [3, 4];`: an ituple of shape arithmetic */
			struct node *l = node_new(N_BLOCK, s->loc);

			node_add(l, s->kids[1]);
			s->kind = N_SHAPEDECL;
			s->name = s->kids[0]->name;
			s->flag = 1;
			s->ival = -1;
			s->kids[0] = l;
			s->nkids = 1;
			check_shape_decl(s);
			break;
		}
		if (s->kids[1]->kind == E_DEVCALL) {
			if (s->kids[0]->kind == E_ID && !lookup(s->kids[0]->name))
				diag_error(s->kids[0]->loc, "unable to deduce the type "
					   "of '%s' from a call (mutable int %s = call ...)",
					   s->kids[0]->name, s->kids[0]->name);
			devcall_ok = true;
		}
		b = check_expr(s->kids[1]);
		if (s->kids[0]->kind == E_ID && !lookup(s->kids[0]->name) &&
		    !strcmp(s->name, "=") && s->kids[1]->kind == E_ID &&
		    s->kids[1]->sym->array_of) {
			/* `x = a[i][j];`: x names that element */
			struct sym *sy = declare(s->kids[0]->name, SY_ALIAS, s);

			sy->type = b;
			alias_element(sy, s->kids[1]);
			s->kids[0]->sym = sy;
			s->kind = N_SHAPEDECL;
			break;
		}
		if (s->kids[0]->kind == E_ID && !lookup(s->kids[0]->name) &&
		    !strcmp(s->name, "=")) {
			/* `x = e;` declares x (immutable), as in Choreo */
			struct node *d = node_new(N_DECL, s->kids[0]->loc);

			d->name = s->kids[0]->name;
			d->type.kind = TY_SCALAR;
			d->type.elem = EL_NONE;
			node_add(d, s->kids[1]);
			d->level = cur_level;
			s->kind = N_BLOCK;
			s->flag = 1;
			s->nkids = 0;
			node_add(s, d);
			if (b.kind == TY_SPAN)
				diag_error(d->loc, "not supported yet: aliasing spanned data");
			if (b.kind == TY_STRING)
				diag_error(d->loc, "not supported yet: string variables");
			if (b.kind == TY_FUTURE)
				diag_error(d->loc, "type mismatch: '%s' cannot be initialized "
					   "with a future (a copy, dma.any or select names "
					   "one)", d->name);
			check_assignable(d->loc, scalar(EL_INT), b);
			{
				struct sym *sy = declare(d->name, SY_VAR, d);

				sy->type = b;
				d->type = b;
				d->sym = sy;
			}
			break;
		}
		a = check_lvalue(s->kids[0]);
		if (s->kids[1]->kind == E_DEVCALL)
			b = s->kids[1]->ety = a;	/* converted as C converts */
		/* Choreo reports both at the assignment operator */
		check_assignable(s->loc, a, b);
		check_mutable(s->kids[0], s->loc);
		if (strcmp(s->name, "=")) {
			want_numeric(s->kids[1], b);
			if (strchr("%&|^<>", s->name[0]) &&
			    (!is_integer(a) || !is_integer(b)))
				diag_error(s->loc, "type mismatch: '%s' needs integers",
					   s->name);
		}
		break;
	case N_DMAANY:
		check_dma_any(s);
		break;
	case N_ROTATE:
		check_rotate(s);
		break;
	case N_EXPRSTMT:
		if (is_call_of(s->kids[0], "swap") || is_call_of(s->kids[0], "rotate")) {
			struct node *c = s->kids[0];

			s->kind = N_ROTATE;
			s->name = c->name;
			s->kids = c->kids;
			s->nkids = c->nkids;
			s->cap = c->cap;
			check_rotate(s);
			break;
		}
		if (s->kids[0]->kind == E_CALL &&
		    (!strcmp(s->kids[0]->name, "copy") ||
		     !strcmp(s->kids[0]->name, "reduce_sum") ||
		     !strcmp(s->kids[0]->name, "reduce_max"))) {
			struct node *loops = frag_statement(s->kids[0]);

			s->kind = N_BLOCK;
			s->nkids = 0;
			node_add(s, loops);
			check_stmt_inner(s);
			break;
		}
		/* a call's result may be dropped */
		span_result_ok = s->kids[0]->kind == E_COCALL;
		devcall_ok = s->kids[0]->kind == E_DEVCALL;
		check_expr(s->kids[0]);
		span_result_ok = false;
		if (s->kids[0]->kind == E_DEVCALL)
			s->kids[0]->ety.kind = TY_VOID;
		break;
	case N_SHAPEDECL:
		check_shape_decl(s);
		break;
	case N_YIELD:
		/* this thread's index is done: on to its next one */
		if (cur_level != 2 || !cur_thread_par)
			diag_error(s->loc, "not supported yet: yield outside a "
				   "thread-level parallel");
		s->callee = cur_thread_par;
		cur_thread_par->yields = true;
		break;
	case N_ASSERT: {
		struct type c = check_expr(s->kids[0]);
		long long v;

		if (!is_numeric(c))
			diag_error(s->kids[0]->loc, "type mismatch: assert needs a "
				   "condition");
		/* decided here when it can be: no code, or an error */
		if (is_integer(c) && const_eval(s->kids[0], &v)) {
			if (!v)
				diag_error(s->loc, "choreo assertion abort: %s", s->name);
			s->flag = 1;
		}
		break;
	}
	case N_STREAMDECL: {
		/* extension: a stream local, created where it is declared */
		struct sym *sy;

		if (cur_level > 0)
			diag_error(s->loc, "not supported yet: a stream declared in a "
				   "parallel body");
		sy = declare(s->name, SY_VAR, s);
		sy->type.kind = TY_STREAM;
		s->sym = sy;
		break;
	}
	case N_PRINT:
		if (s->flag & PRINT_STATIC) {
			static_print(s);
			/* nothing of it is left to run */
			s->kind = N_BLOCK;
			s->nkids = 0;
			break;
		}
		check_print(s);
		break;
	case N_SYNC:
		if (s->flag == SYNC_FENCE)
			break;
		if (cur_kernel && !split_point(s))
			cur_kernel->threads_fixed = true;
		/* sync.global in host code: every launch done */
		if (s->flag == ST_GLOBAL && !cur_kernel)
			break;
		if (s->flag != ST_SHARED)
			diag_error(s->loc, "not supported yet: sync.%s",
				   s->flag == ST_LOCAL ? "local" : "global");
		break;
	case N_WAIT: {
		int i;

		for (i = 0; i < s->nkids; i++) {
			struct node *k = s->kids[i];

			if (k->kind == E_AT) {
				check_event_ref(k);
				continue;
			}
			if (lookup(k->name) && lookup(k->name)->kind == SY_EVENT) {
				check_event_ref(k);
				continue;
			}
			if (resolve(k)->kind != SY_FUTURE)
				diag_error(k->loc, "type mismatch: '%s' is not a "
					   "future", k->sym->name);
			k->sym->waited = true;
		}
		break;
	}
	case N_TRIGGER: {
		int i, nev = s->nkids - (s->ival ? 1 : 0);

		for (i = 0; i < nev; i++)
			check_event_ref(s->kids[i]);
		if (!s->ival)
			break;
		/* trigger e after f, g: futures whose copies publish e */
		for (i = 0; i < s->kids[nev]->nkids; i++) {
			struct node *k = s->kids[nev]->kids[i];

			if (k->kind != E_ID || !lookup(k->name) ||
			    lookup(k->name)->kind != SY_FUTURE ||
			    resolve(k)->kind != SY_FUTURE)
				diag_error(k->loc, "type mismatch: '%s' is not a future",
					   k->name);
			/* Croqtile's rules: a TMA copy's completion binds the
			 * event, once, instead of a wait; an mma (WGMMA) has no
			 * completion event to bind */
			if (k->sym->decl && k->sym->decl->kind == N_MMA &&
			    !k->sym->waited)
				diag_error(k->loc, "trigger-after cannot bind an MMA "
					   "future because WGMMA has no native "
					   "completion event; use 'wait %s; trigger "
					   "<event>'.", k->name);
			if (k->sym->decl && k->sym->decl->kind == N_MMA)
				;
			else if (!k->sym->decl || k->sym->decl->kind != N_DMA ||
			    !k->sym->decl->tma)
				diag_error(k->loc, "trigger-after requires native "
					   "completion-event binding; use an explicit "
					   "wait followed by a direct trigger for this "
					   "DMA future");
			if (k->sym->waited)
				diag_error(k->loc, "trigger-after cannot bind future "
					   "'%s' after it was explicitly waited; trigger "
					   "the event directly after the wait", k->name);
		}
		for (i = 0; i < nev && s->kids[nev]->nkids > 1; i++) {
			const struct node *r = s->kids[i];

			if (r->kind == E_AT && r->ival == 1 && r->kids[0]->kind == E_INCDEC)
				diag_error(r->kids[0]->loc, "an incremented event order "
					   "cannot be shared by multiple trigger-after "
					   "dependencies; advance the order in a separate "
					   "statement after the joined trigger");
		}
		break;
	}
	case N_EVENTS:
		check_events(s);
		break;
	case N_DMA:
		check_dma(s);
		check_tdma(s);
		break;
	case N_MMA:
		check_mma(s);
		break;
	case N_RETURN:
		check_return(s);
		break;
	case N_BREAK:
	case N_CONTINUE:
		if (!loop_depth)
			diag_error(s->loc, "syntax error, '%s' outside a loop",
				   s->kind == N_BREAK ? "break" : "continue");
		break;
	case N_PARALLEL:
		check_parallel(s);
		break;
	case N_WITH:
		push_scope();
		declare_withins(s->kids[0]);
		check_body(s->kids[1]);
		pop_scope();
		break;
	case N_FOREACH:
		check_foreach(s);
		break;
	case N_WHILE:
		a = check_expr(s->kids[0]);
		want_numeric(s->kids[0], a);
		loop_depth++;
		check_body(s->kids[1]);
		loop_depth--;
		break;
	case N_IF:
		/* if (call f(...)): its value tested as C tests it */
		devcall_ok = s->kids[0]->kind == E_DEVCALL;
		a = check_expr(s->kids[0]);
		if (s->kids[0]->kind == E_DEVCALL)
			a = s->kids[0]->ety = scalar(EL_INT);
		want_numeric(s->kids[0], a);
		/* inthreads (not .async) in a thread level: the block's threads
		 * meet after it (a barrier); elsewhere it is an if */
		if (s->ival == 1 && !s->flag && cur_level == 2 && cur_kernel) {
			s->ival = 2;
			if (!split_point(s))
				cur_kernel->threads_fixed = true;
		}
		{
			int saved = nnarrow;

			narrow_by(s->kids[0]);
			check_body(s->kids[1]);
			nnarrow = saved;
		}
		if (s->nkids > 2)
			check_body(s->kids[2]);
		break;
	default:
		diag_error(s->loc, "syntax error, unexpected statement");
	}
}

/* sync.barrier : block in a block<cooperative> level: every block of
 * the grid meets there */
static bool grid_barrier(const struct node *s)
{
	return s->kind == N_SYNC && s->flag == ST_SHARED && s->ival == PB_BLOCK;
}

static const struct node *nested_grid_barrier(const struct node *n)
{
	const struct node *b;
	int i;

	if (grid_barrier(n))
		return n;
	for (i = 0; i < n->nkids; i++)
		if ((b = nested_grid_barrier(n->kids[i])))
			return b;
	return NULL;
}

/* a name among the expressions of n (not a string, an operator or a
 * built-in's name) */
static const struct node *name_used(const struct node *n, const char *name)
{
	const struct node *u;
	int i;

	if (n->name && n->kind >= E_ID && n->kind != E_BINARY &&
	    n->kind != E_UNARY && n->kind != E_TERNARY && n->kind != E_CALL &&
	    n->kind != E_INCDEC && n->kind != E_ADDR && !strcmp(n->name, name))
		return n;
	for (i = 0; i < n->nkids; i++)
		if ((u = name_used(n->kids[i], name)))
			return u;
	return NULL;
}

/* a name declared before a grid barrier: the statements of body from
 * `from` on (after the barrier) must not use it */
static void check_not_used_after(const struct node *body, int from, const char *name)
{
	const struct node *u;
	int i;

	for (i = from; i < body->nkids; i++)
		if ((u = name_used(body->kids[i], name)))
			diag_error(u->loc, "not supported yet: '%s' declared before a "
				   "grid barrier and used after it", name);
}

/*
 * A block<cooperative> level: all blocks of the grid run at once and meet
 * at sync.barrier : block. The npu launches the level once per part of
 * its body between such barriers, in order on one stream: a launch ends
 * (every block done) before the next starts, which is the grid barrier.
 * Names declared in a part (the blocks' own data) do not live on into the
 * next launch, so a later part must not use them.
 */
static void split_cooperative(struct node *b, int at)
{
	struct node *p = b->kids[at], *body, *part;
	int i, k, start = 0, added = 0;

	if (p->kind != N_PARALLEL || !p->kids[0]->cooperative || p->kids[0]->flag != PB_BLOCK)
		return;
	body = p->kids[2];
	for (i = 0; i < body->nkids; i++) {
		const struct node *s = body->kids[i], *nested;

		if (grid_barrier(s))
			continue;
		if ((nested = nested_grid_barrier(s)))
			diag_error(nested->loc, "not supported yet: a grid barrier "
				   "(sync.barrier : block) inside a nested statement");
	}
	for (i = 0; i < body->nkids; i++) {
		const struct node *s = body->kids[i];
		int after = i + 1;

		while (after < body->nkids && !grid_barrier(body->kids[after - 1]))
			after++;
		if (grid_barrier(s) || after >= body->nkids)
			continue;
		/* declarations: a group of declarators, a future, a shape */
		if (s->kind == N_BLOCK && s->flag)
			for (k = 0; k < s->nkids; k++)
				check_not_used_after(body, after, s->kids[k]->name);
		if (s->kind == N_DMA && s->nkids > 2 && s->kids[2]->kind == E_ID)
			check_not_used_after(body, after, s->kids[2]->name);
		if (s->kind == N_SHAPEDECL || s->kind == N_STREAMDECL)
			check_not_used_after(body, after, s->name);
		if (s->kind == N_EVENTS)
			for (k = 0; k < s->nkids; k++)
				check_not_used_after(body, after, s->kids[k]->name);
	}
	part = node_new(N_BLOCK, body->loc);
	for (i = 0; i <= body->nkids; i++) {
		struct node *q;

		if (i < body->nkids && !grid_barrier(body->kids[i])) {
			node_add(part, body->kids[i]);
			continue;
		}
		if (!part->nkids)
			continue;
		if (!start) {
			q = p;
			start = 1;
		} else {
			q = node_new(N_PARALLEL, p->loc);
			node_add(q, node_clone(p->kids[0]));
			node_add(q, node_clone(p->kids[1]));
			node_add(q, NULL);
			q->flag = p->flag;
			node_insert(b, at + ++added, q);
		}
		q->kids[2] = part;
		part = node_new(N_BLOCK, body->loc);
	}
	if (!start)	/* only barriers: one launch of nothing */
		p->kids[2] = part;
}

/*
 * mma statements in host code (co-mock's tests): the npu's tensor engine
 * multiplies, so each run of consecutive mma statements becomes one
 * launch of one thread, `parallel by 1 : block { ... }`, its fragments
 * that launch's tile registers. A fragment cannot outlive its run.
 */
static void host_mma_run(struct node *b, int i)
{
	struct node *par, *parby, *one, *body;
	int j, k;

	for (j = i; j < b->nkids && b->kids[j]->kind == N_MMA; j++)
		;
	one = node_new(E_INT, b->kids[i]->loc);
	one->ival = 1;
	parby = node_add(node_add(node_new(N_PARBY, b->kids[i]->loc),
				  node_new(N_BLOCK, b->kids[i]->loc)), one);
	parby->flag = PB_BLOCK;
	body = node_new(N_BLOCK, b->kids[i]->loc);
	for (k = i; k < j; k++) {
		node_add(body, b->kids[k]);
		/* its fragments: named for the message when a later run
		 * uses one */
		if (b->kids[k]->kids[0]->kind == E_ID) {
			host_frags = realloc(host_frags, (nhost_frags + 1) *
					     sizeof(*host_frags));
			if (!host_frags)
				exit(2);
			host_frags[nhost_frags++] = b->kids[k]->kids[0]->name;
		}
	}
	par = node_new(N_PARALLEL, b->kids[i]->loc);
	node_add(par, parby);
	node_add(par, node_new(N_BLOCK, b->kids[i]->loc));
	node_add(par, body);
	b->kids[i] = par;
	memmove(&b->kids[i + 1], &b->kids[j], (b->nkids - j) * sizeof(*b->kids));
	b->nkids -= j - i - 1;
}

static void check_block(struct node *b)
{
	int i;

	for (i = 0; i < b->nkids; i++) {
		if (cur_level == 0)
			split_cooperative(b, i);
		if (!cur_kernel && cur_level == 0 && b->kids[i]->kind == N_MMA)
			host_mma_run(b, i);
		check_stmt(b->kids[i]);
	}
}

/*
 * Croqtile's parallel levels, outermost first: block, group-4 (a GPU's
 * warpgroup), group (a warp), thread; here ranked 3 down to 0, the host
 * above them all (4). A level without `: level` nested in another takes
 * the innermost level above every level nested in it (a leaf: thread),
 * so `parallel by 2 parallel by 4 parallel by 6` is block, group, thread
 * and four such levels are block, group-4, group, thread; an outermost
 * one holding others is the block level (alone it stays as it is: one
 * level, sema's block grid). Where no level fits between two (`: thread`
 * holding `: block`, five levels) the nest is refused as Croqtile refuses
 * it; a nest that annotates some levels and not others is warned about,
 * as Croqtile does. The group levels then fold into the thread level
 * (fold_group).
 */
#define HOST_RANK 4
static const char *const rank_names[] = { "thread", "group", "group-4", "block" };
static const int rank_levels[] = { PB_THREAD, PB_GROUP, PB_GROUP4, PB_BLOCK };

static int level_rank(int level)
{
	switch (level) {
	case PB_THREAD: return 0;
	case PB_GROUP: return 1;
	case PB_GROUP4: return 2;
	case PB_BLOCK: return 3;
	}
	return -1;	/* not annotated */
}

/* the lowest rank a level holding n needs: one above each parallel in it */
static int rank_needed(const struct node *n)
{
	int i, r = 0, own;

	if (!n || n->kind >= E_INT)
		return 0;
	if (n->kind == N_PARALLEL) {
		own = level_rank(n->kids[0]->flag);
		if (own < 0)
			own = rank_needed(n->kids[2]);
		return own + 1;
	}
	for (i = 0; i < n->nkids; i++)
		if ((own = rank_needed(n->kids[i])) > r)
			r = own;
	return r;
}

/* the highest annotated level in n, -1 if none */
static int top_annotated(const struct node *n)
{
	int i, r = -1, k;

	if (!n || n->kind >= E_INT)
		return -1;
	if (n->kind == N_PARALLEL && (r = level_rank(n->kids[0]->flag)) >= 0)
		return r;
	for (i = 0; i < n->nkids; i++)
		if ((k = top_annotated(n->kids[i])) > r)
			r = k;
	return r;
}

/* the number of levels in n's deepest nest */
static int nest_depth(const struct node *n)
{
	int i, r = 0, k;

	if (!n || n->kind >= E_INT)
		return 0;
	for (i = 0; i < n->nkids; i++)
		if ((k = nest_depth(n->kids[i])) > r)
			r = k;
	return r + (n->kind == N_PARALLEL);
}

static void infer_levels(struct node *n, const struct node *outer, int outer_rank,
			 bool annotated_above, int depth)
{
	struct node *pb;
	int i, own, inner;
	bool annotated;

	/* parallels are statements: no need to walk (deep) expressions */
	if (!n || n->kind >= E_INT)
		return;
	if (n->kind != N_PARALLEL) {
		for (i = 0; i < n->nkids; i++)
			infer_levels(n->kids[i], outer, outer_rank, annotated_above,
				     depth);
		return;
	}
	pb = n->kids[0];
	own = level_rank(pb->flag);
	annotated = own >= 0;
	if (outer && annotated != annotated_above)
		diag_warning(n->loc, "For nested parallel-by, "
			     "it is better to either explicitly specify all parallelism "
			     "levels, or none (Choreo to automatically infer the "
			     "levels).");
	if (annotated) {
		if (own >= outer_rank)
			diag_error(outer->loc, "unable to infer the parallel-by level(s) "
				   "between %s and %s.", rank_names[outer_rank],
				   rank_names[own]);
	} else {
		inner = rank_needed(n->kids[2]);
		own = outer_rank == HOST_RANK && inner ? 3 : inner;
		if (own >= outer_rank || inner > own) {
			int anchor = top_annotated(n->kids[2]);

			if (anchor < 0 && !annotated_above)
				diag_error(n->loc, "too many parallel-by levels: %d > %d.",
					   depth + nest_depth(n), HOST_RANK);
			diag_error(outer ? outer->loc : n->loc, "unable to infer the "
				   "parallel-by level(s) between %s and %s.",
				   rank_names[outer ? outer_rank : 3],
				   rank_names[anchor < 0 ? 0 : anchor]);
		}
		/* an outermost level alone keeps its own meaning */
		if (outer_rank != HOST_RANK || inner)
			pb->flag = rank_levels[own];
	}
	infer_levels(n->kids[2], n, own, annotated || annotated_above, depth + 1);
}

static void check_func(struct node *f)
{
	struct node *params = f->kids[0];
	int i, k;

	cur_func = f;
	cur_level = 0;
	cur_kernel = NULL;
	func_syms = NULL;
	name_uses = 0;
	start_slots(f);
	push_scope();
	for (i = 0; i < params->nkids; i++) {
		struct node *p = params->kids[i];
		struct sym *s;

		if (lookup(p->name) && lookup(p->name)->kind == SY_PARAM)
			diag_error(p->loc, "type mismatch: parameter '%s' declared twice",
				   p->name);
		/* dimension symbols: bound by their first use */
		if (p->type.kind == TY_SPAN)
			for (k = 0; k < p->type.rank; k++) {
				struct node *d = p->type.dims[k];
				long long v;

				if (d->kind == E_ID) {
					struct sym *ds = lookup(d->name);

					if (!ds) {
						ds = declare(d->name, SY_DIM, d);
						ds->type = scalar(EL_S64);
						ds->dim_index = k;
						ds->decl = p;
					} else if (ds->kind != SY_DIM) {
						diag_error(d->loc, "type mismatch: '%s' is not a "
							   "dimension", d->name);
					}
					d->sym = ds;
				} else if (const_eval(d, &v)) {
					d->kind = E_INT;
					d->ival = v;
					d->nkids = 0;
				} else {
					diag_error(d->loc, "not supported yet: this dimension "
						   "of a parameter");
				}
			}
		s = declare(p->name, SY_PARAM, p);
		s->type = p->type;
		s->mutable_ = p->type.kind == TY_SCALAR && p->type.elem != EL_INT &&
			      p->type.elem != EL_BOOL;
		p->sym = s;
	}
	/* dimension symbols know the parameter that binds them */
	for (i = 0; i < params->nkids; i++) {
		struct node *p = params->kids[i];

		if (p->type.kind != TY_SPAN)
			continue;
		for (k = 0; k < p->type.rank; k++) {
			struct sym *ds = p->type.dims[k]->sym;

			if (p->type.dims[k]->kind == E_ID && !ds->dim_of &&
			    ds->decl == p)
				ds->dim_of = p->sym;
		}
	}
	if (f->type.kind == TY_SPAN) {
		for (k = 0; k < f->type.rank; k++) {
			long long v;

			if (f->type.dims[k]->kind == E_ID)
				resolve(f->type.dims[k]);
			else if (!const_eval(f->type.dims[k], &v))
				diag_error(f->type.dims[k]->loc, "not supported yet: this "
					   "dimension of a return type");
		}
	}
	infer_levels(f->kids[1], NULL, HOST_RANK, false, 0);
	push_scope();
	check_block(f->kids[1]);
	finish_any_buffers(NULL);
	pop_scope();
	pop_scope();
}

/* a __co__ function is a C function of the same name */
static void check_func_name(const struct node *f)
{
	static const char *const taken[] = {
		"auto", "break", "case", "char", "const", "continue", "default",
		"do", "double", "else", "enum", "extern", "float", "for", "goto",
		"if", "inline", "int", "long", "register", "restrict", "return",
		"short", "signed", "sizeof", "static", "struct", "switch",
		"typedef", "union", "unsigned", "void", "volatile", "while",
		"main", "printf", "fflush", "memset", "memcpy", "malloc", "free",
		"realloc", "exit", "abort",
	};
	unsigned i;

	for (i = 0; i < sizeof(taken) / sizeof(taken[0]); i++)
		if (!strcmp(f->name, taken[i]))
			diag_error(f->loc, "not supported yet: a __co__ function named "
				   "'%s' (a C name)", f->name);
	if (!strncmp(f->name, "npu_", 4) || !strncmp(f->name, "__", 2) ||
	    strstr(f->name, "__parallel"))
		diag_error(f->loc, "not supported yet: a __co__ function named '%s' "
			   "(reserved for generated code)", f->name);
}

void sema_program(struct program *prog)
{
	int i, k;

	program = prog;
	for (i = 0; i < prog->root->nkids; i++) {
		check_func_name(prog->root->kids[i]);
		for (k = 0; k < i; k++)
			if (!strcmp(prog->root->kids[k]->name, prog->root->kids[i]->name))
				diag_error(prog->root->kids[i]->loc, "type mismatch: '%s' "
					   "is defined twice", prog->root->kids[i]->name);
		check_func(prog->root->kids[i]);
	}
}
