/* SPDX-License-Identifier: MIT */
/*
 * parser.y - the grammar of the Choreo subset (Choreo's own syntax, see
 * lib/parser.yy of the Choreo compiler): __co__ functions, declarations,
 * parallel-by, with/foreach/while/if, assignments, dma.copy, wait,
 * sync.shared, println. It only builds the tree (ast.h); sema.c checks it.
 */
%define parse.error verbose
%locations
%expect 2

%code requires {
#include "ast.h"
}

%code {
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "diag.h"

int yylex(void);
static void yyerror(const char *msg);

struct node *parse_result;

#define L(at) ((struct loc){ (at).first_line, (at).first_column })

static struct node *mk(enum node_kind k, YYLTYPE at)
{
	return node_new(k, L(at));
}

static struct node *mk2(enum node_kind k, YYLTYPE at, const char *name,
			struct node *a, struct node *b)
{
	struct node *n = mk(k, at);

	n->name = name ? xstrdup(name) : NULL;
	if (a)
		node_add(n, a);
	if (b)
		node_add(n, b);
	return n;
}

/* an mma statement: its operands, the fragments named (sema.c) */
static struct node *mma_stmt(YYLTYPE at, int op, struct node *a,
			     struct node *b, struct node *c, struct node *d)
{
	struct node *n = mk2(N_MMA, at, NULL, a, b);

	n->flag = op;
	if (c)
		node_add(n, c);
	if (d)
		node_add(n, d);
	return n;
}

/* dma.transp's permutation, checked by sema */
static void set_perm(struct node *d, const struct node *perm)
{
	int i;

	if (perm->nkids > MAX_RANK)
		diag_error(perm->loc, "not supported yet: rank %d (at most %d)",
			   perm->nkids, MAX_RANK);
	d->nperm = perm->nkids;
	for (i = 0; i < perm->nkids; i++)
		d->perm[i] = (int)perm->kids[i]->ival;
}

/* dma.pad's configuration: three lists of a size each, a value */
static void set_pad(struct node *d, struct node *cfg)
{
	int i, k;

	for (k = 0; k < 3; k++) {
		const struct node *l = cfg->kids[k];

		if (l->nkids != cfg->kids[0]->nkids)
			diag_error(l->loc, "type mismatch: dma.pad's lists differ in "
				   "size");
		if (l->nkids > MAX_RANK)
			diag_error(l->loc, "not supported yet: rank %d (at most %d)",
				   l->nkids, MAX_RANK);
		for (i = 0; i < l->nkids; i++) {
			if (l->kids[i]->ival < 0 || l->kids[i]->ival > 1 << 20)
				diag_error(l->kids[i]->loc, "type mismatch: a padding "
					   "must be in 0..%d", 1 << 20);
			d->pad[k][i] = (int)l->kids[i]->ival;
			if (k == 2 && d->pad[k][i])
				diag_error(l->kids[i]->loc, "not supported yet: dma.pad "
					   "with padding between elements");
		}
	}
	d->npad = cfg->kids[0]->nkids;
	d->padval = cfg->kids[3];
}

static struct node *ident(YYLTYPE at, char *name)
{
	struct node *n = mk(E_ID, at);

	n->name = name;
	return n;
}

static void set_span_type(struct type *t, int elem, struct node *dims)
{
	int i;

	t->kind = TY_SPAN;
	t->elem = elem;
	t->rank = 0;
	if (dims->nkids > MAX_RANK)
		diag_error(dims->loc, "not supported yet: rank %d (at most %d)",
			   dims->nkids, MAX_RANK);
	for (i = 0; i < dims->nkids; i++)
		t->dims[t->rank++] = dims->kids[i];
}

/* `T mdspan<n> name`: n dimensions, each a symbol of its own */
static struct node *anon_dims(YYLTYPE at, long long rank, const char *name)
{
	struct node *dims = mk(E_DIMLIST, at);
	long long k;
	char buf[300];

	if (rank < 1 || rank > MAX_RANK)
		diag_error(L(at), "not supported yet: rank %lld (at most %d)",
			   rank, MAX_RANK);
	for (k = 0; k < rank; k++) {
		struct node *d = mk(E_ID, at);

		snprintf(buf, sizeof(buf), "__%s_mds%lld", name, k);
		d->name = xstrdup(buf);
		node_add(dims, d);
	}
	return dims;
}

/* `(k)` in e: dimension k of base (a name with a span: data, a shape) */
static struct node *base_dims(const char *base, struct node *e)
{
	int i;

	if (e->kind == E_INT && e->alias && !strcmp(e->alias, "(k)")) {
		struct node *d = node_new(E_SPAN, e->loc);

		d->name = xstrdup(base);
		d->ival = e->ival;
		return d;
	}
	for (i = 0; i < e->nkids; i++)
		e->kids[i] = base_dims(base, e->kids[i]);
	return e;
}

/* `s : a [(1), (0) / 2, 7]`: each (k) is a's dimension k */
static struct node *derived_dims(const char *base, struct node *list)
{
	int i;

	for (i = 0; i < list->nkids; i++)
		list->kids[i] = base_dims(base, list->kids[i]);
	return list;
}

/* a view of x.span_as(...): of a hidden name declared as that alias
 * (sema.c, check_view), the span_as its kid 2 */
static struct node *over_span_as(struct node *sa, struct node *view)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "__span_as%d_%d", sa->loc.line, sa->loc.col);
	view->name = xstrdup(buf);
	node_add(view, sa);
	return view;
}

/* a view of a view: of a hidden name declared as the inner view
 * (sema.c, check_view), the inner view its kid 2 */
static struct node *over_view(struct node *inner, struct node *view)
{
	static int nviews;
	char buf[64];

	/* one name per view: a chain's views share its first location */
	snprintf(buf, sizeof(buf), "__view%d_%d", view->loc.line, ++nviews);
	view->name = xstrdup(buf);
	node_add(view, inner);
	return view;
}

/* the name of an unnamed parameter: one no identifier can have */
static char *unnamed(YYLTYPE at)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "__unnamed%d_%d", at.first_line, at.first_column);
	return xstrdup(buf);
}

static void unroll_hint(YYLTYPE at, const char *name)
{
	if (strcmp(name, "unroll"))
		diag_error(L(at), "not supported yet: foreach hint '%s'", name);
}

static void set_level(struct node *parby, int level)
{
	parby->flag = level & ~PB_COOP;
	parby->cooperative = level & PB_COOP;
}

/* [a, b] as an operand of shape arithmetic: the list as {a, b} */
static struct node *shape_list(YYLTYPE at, struct node *args)
{
	args->kind = E_DIMLIST;
	args->loc = L(at);
	args->flag = 1;
	return args;
}

static void set_scalar_type(struct type *t, int elem)
{
	t->kind = TY_SCALAR;
	t->elem = elem;
}
}

%union {
	long long i;
	double f;
	char *s;
	int k;
	struct node *n;
}

%token CO "__co__" CALL "call" AUTO "auto" VOID "void" INT "int" BOOL "bool" MUTABLE "mutable"
%token STREAM "stream" PARALLEL "parallel" BY "by" WITH "with" IN "in"
%token APPLY "apply" FRAG "frag"
%token FOREACH "foreach" WHILE "while" IF "if" ELSE "else" BREAK "break"
%token CONTINUE "continue" RETURN "return" SYNC "sync"
%token <k> DMA "dma"
%token TRANSP ".transp" PAD ".pad" STEP ".step" SWIZ ".swiz"
%token WAIT "wait" TO "__to" AT ".at" SPAN ".span" ASYNC ".async"
%token MDSPAN "mdspan" COPY ".copy" DATA ".data" CHUNKAT ".chunkat"
%token YIELD "yield" VIEW ".view" FROM ".from" INTHREADS "inthreads" ASSERT "assert" SUBSPAN ".subspan" SPAN_AS ".span_as" SQZ ".sqz" TRANS "=>" INC "++" DEC "--" EQ "=="
%token MMA "mma" FILL ".fill" LOAD ".load" STORE ".store" ROW ".row" COL ".col"
%token ANY ".any"
%token EVENT "event" TRIGGER "trigger" AFTER "after" ITUPLE "ituple"
%token NE "!=" LE "<=" GE ">=" ANDAND "&&" OROR "||" SHL "<<" SHR ">>"
%token <k> ETYPE "element type" STORAGE "storage" PBLEVEL "parallel level"
%token <k> PRINTLN "println" BOOLLIT "boolean"
%token <s> IDENT "identifier" STRING "string" BUILTIN "built-in"
%token <s> OPASSIGN "compound assignment"
%token <i> INTLIT "integer" UINTLIT "unsigned integer"
%token <i> LLINTLIT "long long integer" ULLINTLIT "unsigned long long integer"
%token <f> FLOATLIT "floating-point number"
%token <n> SCHEDULE "[[schedule]]"

%type <n> program func params param stmts stmt stmts_block decl declarators
%type <n> declarator span_decl span_items span_item dims dim expr args
%type <n> args_opt lvalue dma_expr parallel parbys parby with foreach perm
%type <n> pad_cfg pad_value span_as after_opt
%type <n> withins within bound ranges range range_of bnd idlist waitlist waited if_stmt
%type <k> scalar_type async_opt level_opt mma_layout mma_type transp_opt
%type <i> unroll_opt
%type <n> stream_opt ret_type shape_decl shape_init evdecls evdecl evlist evref ituple_decl
%type <n> subs view shape_items devcall

%precedence IFX
%precedence ELSE
%right '?' ':'
%left OROR
%left ANDAND
%left '|'
%left '^'
%left '&'
%left EQ NE
%left '<' '>' LE GE
%left SHL SHR
%left '+' '-'
%left '*' '/' '%'
%left '#'
%precedence UNARY

%%

program
	: %empty		{ $$ = node_new(N_PROGRAM, (struct loc){ 1, 1 }); parse_result = $$; }
	| program func		{ $$ = node_add($1, $2); }
	;

func
	: CO ret_type IDENT '(' params ')' '{' stmts '}' {
		$$ = mk(N_FUNC, @3);
		$$->name = $3;
		$$->type = $2->type;
		$$->flag = $2->flag;
		node_add($$, $5);
		node_add($$, $8);
	}
	| CO ret_type IDENT '(' ')' '{' stmts '}' {
		$$ = mk(N_FUNC, @3);
		$$->name = $3;
		$$->type = $2->type;
		$$->flag = $2->flag;
		node_add($$, mk(N_BLOCK, @4));
		node_add($$, $7);
	}
	;

ret_type
	: VOID			{ $$ = mk(N_PARAM, @1); $$->type.kind = TY_VOID; $$->type.elem = EL_VOID; }
	| AUTO			{ $$ = mk(N_PARAM, @1); $$->type.kind = TY_VOID; $$->type.elem = EL_VOID; $$->flag = FN_AUTO; }
	| scalar_type		{ $$ = mk(N_PARAM, @1); set_scalar_type(&$$->type, $1); }
	| ETYPE '[' dims ']'	{ $$ = mk(N_PARAM, @1); set_span_type(&$$->type, $1, $3); }
	| ETYPE MDSPAN '[' dims ']' { $$ = mk(N_PARAM, @1); set_span_type(&$$->type, $1, $4); }
	| ETYPE MDSPAN '<' INTLIT '>' {
		/* spanned data of that rank: the first return gives its shape */
		$$ = mk(N_PARAM, @1);
		$$->type.kind = TY_VOID;
		$$->type.elem = EL_VOID;
		$$->flag = FN_AUTO;
		$$->ival = $4;
	}
	| STREAM		{ diag_error(L(@1), "type mismatch: a __co__ function cannot return a stream"); }
	;

params
	: param			{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	| params ',' param	{ $$ = node_add($1, $3); }
	;

param
	: STREAM IDENT		{ $$ = mk(N_PARAM, @2); $$->name = $2; $$->type.kind = TY_STREAM; }
	| scalar_type		{
		/* an unnamed parameter: passed, never used */
		$$ = mk(N_PARAM, @1);
		$$->name = unnamed(@1);
		set_scalar_type(&$$->type, $1);
	}
	| ETYPE '[' dims ']'	{
		$$ = mk(N_PARAM, @1);
		$$->name = unnamed(@1);
		set_span_type(&$$->type, $1, $3);
	}
	| ETYPE MDSPAN '<' INTLIT '>' {
		$$ = mk(N_PARAM, @1);
		$$->name = unnamed(@1);
		set_span_type(&$$->type, $1, anon_dims(@4, $4, $$->name));
	}
	| scalar_type IDENT	{ $$ = mk(N_PARAM, @2); $$->name = $2; set_scalar_type(&$$->type, $1); }
	| ETYPE '[' dims ']' IDENT {
		$$ = mk(N_PARAM, @5);
		$$->name = $5;
		set_span_type(&$$->type, $1, $3);
	}
	| ETYPE MDSPAN '[' dims ']' IDENT {
		$$ = mk(N_PARAM, @6);
		$$->name = $6;
		set_span_type(&$$->type, $1, $4);
	}
	| ETYPE MDSPAN '<' INTLIT '>' IDENT {
		$$ = mk(N_PARAM, @6);
		$$->name = $6;
		set_span_type(&$$->type, $1, anon_dims(@4, $4, $6));
	}
	| ETYPE '[' dims ']' '&' IDENT {
		/* a reference: spanned parameters are the caller's data anyway */
		$$ = mk(N_PARAM, @6);
		$$->name = $6;
		set_span_type(&$$->type, $1, $3);
	}
	| STORAGE ETYPE '[' dims ']' IDENT {
		/* parameters are the caller's (global) memory */
		if ($1 != ST_GLOBAL)
			diag_error(L(@1), "not supported yet: %s parameters",
				   $1 == ST_SHARED ? "shared" : "local");
		$$ = mk(N_PARAM, @6);
		$$->name = $6;
		set_span_type(&$$->type, $2, $4);
	}
	;

scalar_type
	: INT			{ $$ = EL_INT; }
	| BOOL			{ $$ = EL_BOOL; }
	| ETYPE			{ $$ = $1; }
	;

dims
	: dim			{ $$ = node_add(mk(E_DIMLIST, @1), $1); }
	| dims ',' dim		{ $$ = node_add($1, $3); }
	;

dim
	: expr			{ $$ = $1; }
	| IDENT SPAN '[' args ']' {
		/* a.span[(2), (0)]: a shape derived from a's, (k) its
		 * dimension k, spliced in (sema.c: expand_shapes) */
		$$ = shape_list(@1, derived_dims($1, $4));
	}
	| '?'			{
		/* a dimension known at run time only: a symbol of its own,
		 * bound by the caller's data */
		$$ = ident(@1, unnamed(@1));
	}
	;

stmts
	: %empty		{ $$ = node_new(N_BLOCK, (struct loc){ @$.first_line, @$.first_column }); }
	| stmts stmt		{ $$ = node_add($1, $2); }
	;

stmts_block
	: '{' stmts '}'		{ $$ = $2; $$->loc = L(@1); }
	| stmt			{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	;

stmt
	: decl ';'		{ $$ = $1; }
	| span_decl ';'		{ $$ = $1; }
	| lvalue '=' expr ';'	{
		if ($3->kind == E_DIMLIST && $1->kind == E_ID) {
			/* `a = {1, 2};` declares an ituple */
			$$ = node_add(mk(N_SHAPEDECL, @1), $3);
			$$->name = $1->name;
			$$->ival = -1;
			$$->flag = 1;
		} else {
			$$ = mk2(N_ASSIGN, @2, "=", $1, $3);
		}
	}
	| lvalue '=' IDENT '{' args '}' ';' {
		/* `c = a {(0), (1), 2};`, an ituple derived from a's
		 * elements (integers-and-ituples.md): {a(0), a(1), 2} */
		struct node *l = derived_dims($3, $5);

		if ($1->kind != E_ID || $1->index)
			diag_error(L(@1), "syntax error, unexpected '{'");
		l->kind = E_DIMLIST;
		l->flag = 1;
		$$ = node_add(mk(N_SHAPEDECL, @1), l);
		$$->name = $1->name;
		$$->ival = -1;
		$$->flag = 1;
	}
	| lvalue OPASSIGN expr ';' { $$ = mk2(N_ASSIGN, @2, $2, $1, $3); }
	| lvalue '=' dma_expr ';' { $$ = $3; node_add($$, $1); }
	| lvalue '=' DMA ANY ';' {
		/* a placeholder future: no copy yet (sema.c, slots) */
		$$ = mk2(N_DMAANY, @3, NULL, $1, NULL);
	}
	| IDENT idlist ';'	{
		/* `swap a, b;` as dma-advanced.md writes it */
		if (strcmp($1, "swap") && strcmp($1, "rotate"))
			diag_error(L(@2), "syntax error, unexpected identifier");
		$$ = $2;
		$$->kind = N_ROTATE;
		$$->name = $1;
		$$->loc = L(@1);
	}
	| lvalue '=' MMA FILL mma_type expr ';' {
		$$ = mma_stmt(@3, MMA_FILL, $1, $6, NULL, NULL);
		$$->ival = $5;
	}
	| MMA FILL mma_type expr ',' expr ';' {
		$$ = mma_stmt(@1, MMA_FILL, $4, $6, NULL, NULL);
		$$->ival = $3;
	}
	| lvalue '=' MMA mma_layout mma_layout ASYNC expr ',' expr ',' expr ';' {
		/* WGMMA's operation future (mma.md): the npu's mma is done
		 * when the statement is (sema.c) */
		$$ = mma_stmt(@3, MMA_EXEC, $7, $9, $11, $1);
		$$->ival = $4 | !$5 << 1;
	}
	| SCHEDULE lvalue '=' MMA mma_layout mma_layout ASYNC expr ',' expr ',' expr ';' {
		$$ = mma_stmt(@4, MMA_EXEC, $8, $10, $12, $2);
		$$->ival = $5 | !$6 << 1;
		$$->schedule = $1;
	}
	| lvalue '=' MMA LOAD swiz_opt expr ';' {
		/* .swiz<N>: the shared layout a GPU's mma reads; the npu's
		 * tiles load one layout (checked, then dropped) */
		$$ = mma_stmt(@3, MMA_LOAD, $1, $6, NULL, NULL);
	}
	| MMA mma_layout mma_layout expr ',' expr ',' expr ';' {
		$$ = mma_stmt(@1, MMA_EXEC, $4, $6, $8, NULL);
		$$->ival = $2 | !$3 << 1;
	}
	| SCHEDULE MMA mma_layout mma_layout expr ',' expr ',' expr ';' {
		/* [[schedule(k_tiles(...))]]: the order of the mma's K
		 * tiles (sema.c) */
		$$ = mma_stmt(@2, MMA_EXEC, $5, $7, $9, NULL);
		$$->ival = $3 | !$4 << 1;
		$$->schedule = $1;
	}
	| MMA LOAD {
		/* WGMMA's RS mode: mma.load src, frag */
		diag_error(L(@2), "not supported yet: mma.load into a declared "
			   "frag");
	}
	| MMA STORE transp_opt expr ',' expr ';' {
		$$ = mma_stmt(@1, MMA_STORE, $4, $6, NULL, NULL);
		$$->ival = $3;
	}
	| dma_expr ';'		{ $$ = $1; }
	| lvalue INC ';'	{ $$ = mk2(N_EXPRSTMT, @1, NULL, mk2(E_INCDEC, @2, "post++", $1, NULL), NULL); }
	| lvalue DEC ';'	{ $$ = mk2(N_EXPRSTMT, @1, NULL, mk2(E_INCDEC, @2, "post--", $1, NULL), NULL); }
	| INC lvalue ';'	{ $$ = mk2(N_EXPRSTMT, @1, NULL, mk2(E_INCDEC, @1, "++", $2, NULL), NULL); }
	| DEC lvalue ';'	{ $$ = mk2(N_EXPRSTMT, @1, NULL, mk2(E_INCDEC, @1, "--", $2, NULL), NULL); }
	| BUILTIN '(' args ')' ';' {
		struct node *c = mk(E_CALL, @1);

		c->name = $1;
		c->kids = $3->kids;
		c->nkids = $3->nkids;
		c->cap = $3->cap;
		$$ = mk2(N_EXPRSTMT, @1, NULL, c, NULL);
	}
	| devcall ';'		{ $$ = mk2(N_EXPRSTMT, @1, NULL, $1, NULL); }
	| PRINTLN '(' args_opt ')' ';' {
		$$ = $3;
		$$->kind = N_PRINT;
		$$->loc = L(@1);
		$$->flag = $1;
	}
	| IDENT '(' args_opt ')' ';' {
		/* extension: a call of a __co__ function of the file */
		struct node *c = $3;

		c->kind = E_COCALL;
		c->loc = L(@1);
		c->name = $1;
		$$ = mk2(N_EXPRSTMT, @1, NULL, c, NULL);
	}
	| STREAM IDENT ';'	{ $$ = mk(N_STREAMDECL, @2); $$->name = $2; }
	| shape_decl ';'	{ $$ = $1; }
	| ituple_decl ';'	{ $$ = $1; }
	| SYNC '.' STORAGE ';'	{ $$ = mk(N_SYNC, @1); $$->flag = $3; }
	| SYNC '.' IDENT ';'	{ diag_error(L(@3), "not supported yet: sync.%s", $3); }
	| SYNC '.' IDENT ':' PBLEVEL ';' {
		/* sync.barrier : thread (or : block, the block's threads as
		 * CUDA's __syncthreads; or : group, whose threads meet as
		 * the whole block meets, group levels being folded into the
		 * thread level) and sync.fence : thread|group|block */
		if (strcmp($3, "barrier") && strcmp($3, "fence"))
			diag_error(L(@3), "not supported yet: sync.%s", $3);
		$$ = mk(N_SYNC, @1);
		$$->flag = strcmp($3, "barrier") ? SYNC_FENCE : ST_SHARED;
		$$->ival = $5;	/* the level: : block in block<cooperative> */
	}
	| WAIT waitlist ';'	{ $$ = $2; $$->kind = N_WAIT; $$->loc = L(@1); }
	| STORAGE EVENT evdecls ';' {
		$$ = $3;
		/* 1: the thread's own; 2: the device's (sema.c) */
		$$->ival = $1 == ST_LOCAL ? 1 : $1 == ST_GLOBAL ? 2 : 0;
		$$->flag = $1;	/* as written */
	}
	| EVENT evdecls ';'	{ $$ = $2; }
	| STORAGE EVENT '<' { diag_error(L(@3), "not supported yet: event<...>"); }
	| TRIGGER evlist ';'	{ $$ = $2; $$->kind = N_TRIGGER; $$->loc = L(@1); }
	| TRIGGER evlist AFTER waitlist ';' {
		/* trigger e after f, g: published once those futures are
		 * done (ival 1: the last kid is their list) */
		$$ = node_add($2, $4);
		$$->kind = N_TRIGGER;
		$$->loc = L(@1);
		$$->ival = 1;
	}
	| ASSERT '(' expr ',' STRING ')' ';' {
		$$ = mk2(N_ASSERT, @1, $5, $3, NULL);
	}
	| YIELD ';'		{ $$ = mk(N_YIELD, @1); }
	| RETURN ';'		{ $$ = mk(N_RETURN, @1); }
	| RETURN expr ';'	{ $$ = node_add(mk(N_RETURN, @1), $2); }
	| BREAK ';'		{ $$ = mk(N_BREAK, @1); }
	| CONTINUE ';'		{ $$ = mk(N_CONTINUE, @1); }
	| parallel		{ $$ = $1; }
	| with			{ $$ = $1; }
	| foreach		{ $$ = $1; }
	| WHILE '(' expr ')' stmts_block { $$ = mk2(N_WHILE, @1, NULL, $3, $5); }
	| if_stmt		{ $$ = $1; }
	| INTHREADS async_opt '(' expr ')' stmts_block {
		/* an if whose threads meet after it unless .async (N_IF with
		 * ival 1, flag async) */
		$$ = mk2(N_IF, @1, NULL, $4, $6);
		$$->ival = 1;
		$$->flag = $2;
	}
	| ';'			{ $$ = mk(N_BLOCK, @1); }
	;

if_stmt
	: IF '(' expr ')' stmts_block %prec IFX { $$ = mk2(N_IF, @1, NULL, $3, $5); }
	| IF '(' expr ')' stmts_block ELSE stmts_block {
		$$ = mk2(N_IF, @1, NULL, $3, $5);
		node_add($$, $7);
	}
	;

lvalue
	: IDENT			{ $$ = ident(@1, $1); }
	| IDENT subs		{ $$ = ident(@1, $1); $$->index = $2; }
	| IDENT subs AT '(' args ')' {
		$$ = $5;
		$$->kind = E_AT;
		$$->loc = L(@1);
		$$->name = $1;
		$$->index = $2;
	}
	| IDENT AT '(' args ')'	{
		$$ = $4;
		$$->kind = E_AT;
		$$->loc = L(@1);
		$$->name = $1;
	}
	| IDENT DATA AT '(' args ')' {
		$$ = $5;
		$$->kind = E_AT;
		$$->loc = L(@1);
		$$->name = $1;
		$$->flag = 1;	/* through a future's .data */
	}
	;

decl
	: scalar_type declarators {
		int i;

		$$ = $2;
		for (i = 0; i < $$->nkids; i++) {
			set_scalar_type(&$$->kids[i]->type, $1);
			/* element types are mutable, int and bool are not */
			$$->kids[i]->flag = $1 != EL_INT && $1 != EL_BOOL;
		}
	}
	| MUTABLE scalar_type declarators {
		int i;

		$$ = $3;
		for (i = 0; i < $$->nkids; i++) {
			set_scalar_type(&$$->kids[i]->type, $2);
			$$->kids[i]->flag = 1;
		}
	}
	| MUTABLE declarators {
		int i;

		$$ = $2;
		for (i = 0; i < $$->nkids; i++) {
			$$->kids[i]->type.kind = TY_SCALAR;
			$$->kids[i]->type.elem = EL_NONE;	/* from the initialiser */
			$$->kids[i]->flag = 1;
		}
	}
	;

declarators
	: declarator		{ $$ = node_add(mk(N_BLOCK, @1), $1); $$->flag = 1; }
	| declarators ',' declarator { $$ = node_add($1, $3); }
	;

declarator
	: IDENT			{ $$ = mk(N_DECL, @1); $$->name = $1; }
	| IDENT '=' expr	{ $$ = node_add(mk(N_DECL, @1), $3); $$->name = $1; }
	;

/* `call f(a, b)` of a device function (call-and-device.md); a template's
 * arguments `call f<4>(...)` would instantiate C++ */
devcall
	: CALL IDENT '(' args_opt ')' {
		$$ = $4;
		$$->kind = E_DEVCALL;
		$$->loc = L(@1);
		$$->name = $2;
	}
	| CALL IDENT '<' {
		diag_error(L(@3), "not supported yet: a call of a template, '%s<...>' "
			   "(C++; the npu's kernels are C)", $2);
	}
	;

/* a shape (Choreo's mdspan): `s : [7, 8];`, `mdspan<2> s : [a, b];`,
 * `mdspan s : other;` (N_SHAPEDECL: kid 0 the dimension list, ival the
 * declared rank or -1) */
shape_decl
	: IDENT ':' shape_init	{ $$ = node_add(mk(N_SHAPEDECL, @1), $3); $$->name = $1; $$->ival = -1; }
	| MDSPAN IDENT ':' shape_init {
		$$ = node_add(mk(N_SHAPEDECL, @2), $4);
		$$->name = $2;
		$$->ival = -1;
	}
	| MDSPAN '<' INTLIT '>' IDENT ':' shape_init {
		$$ = node_add(mk(N_SHAPEDECL, @5), $7);
		$$->name = $5;
		$$->ival = $3;
	}
	;

/* an ituple (integers with no storage, as a shape's dimensions):
 * `ituple a = {1, x};`, `ituple<2> a = {...};`, `a = {...};` (an
 * N_SHAPEDECL with flag 1) */
ituple_decl
	: ITUPLE IDENT '=' expr {
		$$ = node_add(mk(N_SHAPEDECL, @2), node_add(mk(N_BLOCK, @4), $4));
		$$->name = $2;
		$$->ival = -1;
		$$->flag = 1;
	}
	| ITUPLE '<' INTLIT '>' IDENT '=' expr {
		$$ = node_add(mk(N_SHAPEDECL, @5), node_add(mk(N_BLOCK, @7), $7));
		$$->name = $5;
		$$->ival = $3;
		$$->flag = 1;
	}
	;

shape_init
	: '[' shape_items ']'	{ $$ = $2; }
	| IDENT SPAN '[' args ']' { $$ = derived_dims($1, $4); }
	| '[' ']'		{ $$ = mk(N_BLOCK, @1); }
	| expr			{
		/* `a [2, 3]` parses as a subscripted name: a shape derived
		 * from a's */
		if ($1->kind == E_ID && $1->index && $1->index->nkids)
			$$ = derived_dims($1->name, $1->index);
		else
			$$ = node_add(mk(N_BLOCK, @1), $1);
	}
	;

/* a shape's dimensions: expressions, or a bracketed shape spliced in
 * (`c : [a.span, [3, 2]]`, sema.c: expand_shapes) */
shape_items
	: expr			{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	| '[' args ']'		{ $$ = node_add(mk(N_BLOCK, @1), shape_list(@1, $2)); }
	| shape_items ',' expr	{ $$ = node_add($1, $3); }
	| shape_items ',' '[' args ']' { $$ = node_add($1, shape_list(@3, $4)); }
	;

span_decl
	: ETYPE '[' dims ']' span_items {
		int i;

		$$ = $5;
		for (i = 0; i < $$->nkids; i++)
			set_span_type(&$$->kids[i]->type, $1, $3);
	}
	| ETYPE MDSPAN '[' dims ']' span_items {
		int i;

		$$ = $6;
		for (i = 0; i < $$->nkids; i++)
			set_span_type(&$$->kids[i]->type, $1, $4);
	}
	| STORAGE ETYPE '[' dims ']' span_items {
		int i;

		$$ = $6;
		for (i = 0; i < $$->nkids; i++) {
			set_span_type(&$$->kids[i]->type, $2, $4);
			$$->kids[i]->flag = $1;
		}
	}
	| FRAG ETYPE '[' dims ']' span_items {
		int i;

		/* a fragment: data of the thread that declares it, held whole
		 * by it (the npu's threads share no register file to spread
		 * it over), so local data */
		$$ = $6;
		for (i = 0; i < $$->nkids; i++) {
			set_span_type(&$$->kids[i]->type, $2, $4);
			$$->kids[i]->flag = ST_LOCAL;
			$$->kids[i]->ival = 1;	/* named in mma's messages */
		}
	}
	| FRAG '.' {
		diag_error(L(@1), "not supported yet: frag.T (arrays of mma "
			   "fragments)");
	}
	| FRAG IDENT {
		diag_error(L(@2), "not supported yet: a frag without an element "
			   "type (arrays of mma fragments)");
	}
	;

span_items
	: span_item		{ $$ = node_add(mk(N_BLOCK, @1), $1); $$->flag = 1; }
	| span_items ',' span_item { $$ = node_add($1, $3); }
	;

span_item
	: IDENT			{ $$ = mk(N_SPANDECL, @1); $$->name = $1; }
	| IDENT '{' expr '}'	{ $$ = node_add(mk(N_SPANDECL, @1), $3); $$->name = $1; }
	| IDENT '=' '{' expr '}' { $$ = node_add(mk(N_SPANDECL, @1), $4); $$->name = $1; }
	/* arrays of spanned data: `shared f16[128, 128] tile[2];` */
	| IDENT subs		{ $$ = mk(N_SPANDECL, @1); $$->name = $1; $$->index = $2; }
	| IDENT subs '{' expr '}' {
		$$ = node_add(mk(N_SPANDECL, @1), $4);
		$$->name = $1;
		$$->index = $2;
	}
	| IDENT '=' IDENT '(' args_opt ')' {
		/* extension: the spanned result of a __co__ function */
		struct node *c = $5;

		c->kind = E_COCALL;
		c->loc = L(@3);
		c->name = $3;
		$$ = node_add(mk(N_SPANDECL, @1), c);
		$$->name = $1;
	}
	;

dma_expr
	: DMA COPY async_opt swiz_opt expr TRANS expr after_opt {
		$$ = mk2(N_DMA, @1, NULL, $5, $7);
		$$->tma = $1;
		$$->flag = $3;
		$$->after = $8;
	}
	| DMA COPY async_opt swiz_opt expr TRANS STORAGE after_opt {
		struct node *t = mk(E_ID, @7);

		t->flag = $7;	/* a new buffer of that storage */
		$$ = mk2(N_DMA, @1, NULL, $5, t);
		$$->tma = $1;
		$$->flag = $3;
		$$->after = $8;
	}
	| DMA TRANSP async_opt '<' perm '>' expr TRANS expr {
		$$ = mk2(N_DMA, @1, NULL, $7, $9);
		$$->flag = $3;
		set_perm($$, $5);
	}
	| DMA TRANSP async_opt '<' perm '>' expr TRANS STORAGE {
		struct node *t = mk(E_ID, @9);

		t->flag = $9;
		$$ = mk2(N_DMA, @1, NULL, $7, t);
		$$->flag = $3;
		set_perm($$, $5);
	}
	| DMA PAD async_opt '<' pad_cfg '>' async_opt expr TRANS expr {
		$$ = mk2(N_DMA, @1, NULL, $8, $10);
		$$->flag = $3 || $7;
		set_pad($$, $5);
	}
	| DMA PAD async_opt '<' pad_cfg '>' async_opt expr TRANS STORAGE {
		struct node *t = mk(E_ID, @10);

		t->flag = $10;
		$$ = mk2(N_DMA, @1, NULL, $8, t);
		$$->flag = $3 || $7;
		set_pad($$, $5);
	}
	| DMA '.' IDENT		{ diag_error(L(@3), "not supported yet: dma.%s", $3); }
	;

span_as
	: IDENT SPAN_AS '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, $4, mk(N_BLOCK, @2));
		$$->flag = VIEW_SPAN_AS;
	}
	| IDENT SPAN_AS '(' '[' args ']' ')' {
		$$ = mk2(E_VIEW, @1, $1, $5, mk(N_BLOCK, @2));
		$$->flag = VIEW_SPAN_AS;
	}
	| IDENT subs SPAN_AS '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, $5, mk(N_BLOCK, @3));
		$$->flag = VIEW_SPAN_AS;
		$$->index = $2;
	}
	| IDENT subs SPAN_AS '(' '[' args ']' ')' {
		$$ = mk2(E_VIEW, @1, $1, $6, mk(N_BLOCK, @3));
		$$->flag = VIEW_SPAN_AS;
		$$->index = $2;
	}
	| IDENT DATA SPAN_AS '(' args ')' {
		/* a future's data (check_view) */
		$$ = mk2(E_VIEW, @1, $1, $5, mk(N_BLOCK, @3));
		$$->flag = VIEW_SPAN_AS;
	}
	| IDENT DATA SPAN_AS '(' '[' args ']' ')' {
		$$ = mk2(E_VIEW, @1, $1, $6, mk(N_BLOCK, @3));
		$$->flag = VIEW_SPAN_AS;
	}
	;

/* `=> dst after f, g`: the copy starts when f and g are done (a chain of
 * copies, futures-and-async.md) */
after_opt
	: %empty		{ $$ = NULL; }
	| AFTER waitlist	{ $$ = $2; }
	;

/* dma.pad<{low...}, {high...}, {mid...}, value> */
pad_cfg
	: '{' perm '}' ',' '{' perm '}' ',' '{' perm '}' ',' pad_value {
		$$ = mk(E_DIMLIST, @1);
		node_add($$, $2);
		node_add($$, $6);
		node_add($$, $10);
		node_add($$, $13);
	}
	;

pad_value
	: INTLIT		{ $$ = mk(E_INT, @1); $$->ival = $1; }
	| '-' INTLIT		{ $$ = mk(E_INT, @1); $$->ival = -$2; }
	| FLOATLIT		{ $$ = mk(E_FLOAT, @1); $$->fval = $1; }
	| '-' FLOATLIT		{ $$ = mk(E_FLOAT, @1); $$->fval = -$2; }
	;

/* dma.transp<2, 0, 1>: destination dimension k is source dimension perm[k] */
perm
	: INTLIT		{ $$ = mk(E_DIMLIST, @1); node_add($$, mk(E_INT, @1))->kids[0]->ival = $1; }
	| perm ',' INTLIT	{ $$ = $1; node_add($$, mk(E_INT, @3))->kids[$$->nkids - 1]->ival = $3; }
	;

/* .swiz<N>: the copy's layout in shared memory, chosen for a GPU's
 * banks and read back in it by mma; element copies here have one layout,
 * so it is checked, then dropped */
swiz_opt
	: %empty
	| SWIZ
	| SWIZ '<' INTLIT '>'	{
		if ($3 != 128 && $3 != 64 && $3 != 32)
			diag_error(L(@3), "swizzle value must be 128, 64, or 32");
	}
	;

async_opt
	: %empty		{ $$ = 0; }
	| ASYNC			{ $$ = 1; }
	;

parallel
	: PARALLEL async_opt stream_opt parby ':' IDENT '(' IDENT ')' stmts_block {
		/* a device level (Choreo's heterogeneous programs):
		 * `parallel.async by 1 : device(cpu) { ... }`, a block of
		 * host code named "device" (sema.c); the host runs it at
		 * once, its parallels launch as elsewhere */
		struct node *ext = $4->kids[1];

		if (strcmp($6, "device"))
			diag_error(L(@6), "syntax error, unexpected identifier, "
				   "expecting parallel level");
		if (strcmp($8, "cpu") && strcmp($8, "gpu"))
			diag_error(L(@8), "unknown device target '%s'", $8);
		if ($3)
			diag_error($3->loc, "not supported yet: a stream on a "
				   "device level");
		if ($4->kids[0]->nkids)
			diag_error($4->kids[0]->loc, "not supported yet: a named "
				   "device level");
		if (ext->kind != E_INT || ext->ival != 1)
			diag_error(ext->loc, "not supported yet: a device level "
				   "of extent other than 1");
		$$ = $10;
		$$->flag = 0;
		$$->name = "device";
		$$->loc = L(@1);
	}
	| PARALLEL async_opt stream_opt parbys stmts_block {
		struct node *body = $5, *lvl = NULL;
		int i;

		/* one N_PARALLEL per level, outermost first: kid 0 its
		 * N_PARBY, kid 1 the stream binding (an empty block if none),
		 * kid 2 the body (a block holding the next level) */
		for (i = $4->nkids - 1; i >= 0; i--) {
			lvl = mk(N_PARALLEL, @1);
			node_add(lvl, $4->kids[i]);
			node_add(lvl, i == 0 && $3 ? $3 : mk(N_BLOCK, @1));
			node_add(lvl, body);
			lvl->ival = i > 0;	/* an inner level of a list */
			body = node_add(mk(N_BLOCK, @1), lvl);
		}
		lvl->flag = $2;
		$$ = lvl;
	}
	;

stream_opt
	: %empty		{ $$ = NULL; }
	| '<' IDENT '>'		{ $$ = ident(@2, $2); }
	;

parbys
	: parby level_opt	{ set_level($1, $2); $$ = node_add(mk(N_BLOCK, @1), $1); }
	| parbys ',' parby level_opt { set_level($3, $4); $$ = node_add($1, $3); }
	;

level_opt
	: %empty		{ $$ = PB_NONE; }
	| ':' PBLEVEL		{ $$ = $2; }
	| ':' PBLEVEL '<' IDENT '>' {
		/* block<cooperative>: every block of the grid runs at once
		 * and meets the others at sync.barrier : block */
		if (strcmp($4, "cooperative"))
			diag_error(L(@4), "syntax error, unexpected identifier, "
				   "expecting cooperative");
		$$ = $2;
		if ($2 == PB_BLOCK)
			$$ |= PB_COOP;
		else
			diag_warning(L(@4), "'cooperative' annotation is only valid "
				     "on block-level parallel-by; ignoring.");
	}
	;

parby
	: BY expr		{ $$ = mk(N_PARBY, @1); node_add($$, mk(N_BLOCK, @1)); node_add($$, $2); }
	| IDENT BY expr		{
		$$ = mk(N_PARBY, @1);
		node_add($$, node_add(mk(N_BLOCK, @1), ident(@1, $1)));
		node_add($$, $3);
	}
	| IDENT BY '[' args ']'	{
		/* Choreo tolerates `parallel p by [2]` */
		if ($4->nkids != 1)
			diag_error(L(@1), "type mismatch: the parallel variable '%s' "
				   "can not be assigned multiple bounds", $1);
		$$ = mk(N_PARBY, @1);
		node_add($$, node_add(mk(N_BLOCK, @1), ident(@1, $1)));
		node_add($$, $4->kids[0]);
	}
	| BY '[' args ']'	{
		$$ = mk(N_PARBY, @1);
		node_add($$, mk(N_BLOCK, @1));
		node_add($$, $3);
		$$->ival = 1;
	}
	| '{' idlist '}' BY '[' args ']' {
		$$ = mk(N_PARBY, @1);
		node_add($$, $2);
		node_add($$, $6);
		$$->ival = 1;	/* bracketed: one extent per name */
	}
	| IDENT '=' '{' idlist '}' BY '[' args ']' {
		$$ = mk(N_PARBY, @1);
		node_add($$, $4);
		node_add($$, $8);
		$$->ival = 1;
		$$->name = $1;
	}
	;

idlist
	: IDENT			{ $$ = node_add(mk(N_BLOCK, @1), ident(@1, $1)); }
	| idlist ',' IDENT	{ $$ = node_add($1, ident(@3, $3)); }
	;

/* events (N_EVENTS of N_EVENTDECL): `e`, `e[N]`, either `= ready` */
evdecls
	: evdecl		{ $$ = node_add(mk(N_EVENTS, @1), $1); }
	| evdecls ',' evdecl	{ $$ = node_add($1, $3); }
	;

evdecl
	: IDENT			{ $$ = mk(N_EVENTDECL, @1); $$->name = $1; }
	| IDENT subs		{ $$ = mk(N_EVENTDECL, @1); $$->name = $1; $$->index = $2; }
	| evdecl '=' IDENT	{
		if (strcmp($3, "ready"))
			diag_error(L(@3), "syntax error, unexpected identifier, "
				   "expecting ready");
		$$ = $1;
		$$->flag = 1;
	}
	;

/* an event operand: E_ID, or E_AT (ival 1: `.at(order)`, a cyclic
 * generation, its kid; ival 2: `[i]`, `[i][j]`, a slot, its index) */
evlist
	: evref			{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	| evlist ',' evref	{ $$ = node_add($1, $3); }
	;

evref
	: IDENT			{ $$ = ident(@1, $1); }
	| IDENT AT '(' expr ')'	{ $$ = node_add(mk(E_AT, @1), $4); $$->name = $1; $$->ival = 1; }
	| IDENT subs		{ $$ = mk(E_AT, @1); $$->name = $1; $$->index = $2; $$->ival = 2; }
	;

/* mma.row.col: A row-major (0) or column-major (1); B column-major
 * (stored [K, N], 0) or row-major (stored [N, K], 1) */
mma_layout
	: ROW	{ $$ = 0; }
	| COL	{ $$ = 1; }
	;

mma_type
	: %empty		{ $$ = EL_NONE; }
	| '.' ETYPE		{ $$ = $2; }
	;

transp_opt
	: %empty		{ $$ = 0; }
	| TRANSP		{ $$ = 1; }
	;

/* wait's operands are expressions in Choreo: "wait f;", "wait (f), g;" */
waitlist
	: waited		{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	| waitlist ',' waited	{ $$ = node_add($1, $3); }
	;

waited
	: IDENT			{ $$ = ident(@1, $1); }
	| IDENT AT '(' expr ')'	{ $$ = node_add(mk(E_AT, @1), $4); $$->name = $1; $$->ival = 1; }
	| IDENT subs		{ $$ = mk(E_AT, @1); $$->name = $1; $$->index = $2; $$->ival = 2; }
	| '(' waited ')'	{ $$ = $2; }
	;

with
	: WITH withins stmts_block { $$ = mk2(N_WITH, @1, NULL, $2, $3); }
	;

foreach
	/* apply {i, j} in x.span: every element of a fragment, a foreach */
	: APPLY withins stmts_block {
		$$ = mk2(N_FOREACH, @1, NULL, $2, $3);
		$$->flag = 1;
	}
	| FOREACH withins unroll_opt stmts_block {
		$$ = mk2(N_FOREACH, @1, NULL, $2, $4);
		$$->flag = 1;
		$$->ival = $3;
	}
	| FOREACH ranges unroll_opt stmts_block {
		$$ = mk2(N_FOREACH, @1, NULL, $2, $4);
		$$->ival = $3;
	}
	;

/* `: unroll` and `: unroll(n)`: a hint with no meaning to the result
 * (npu-cc's optimiser decides); checked (n: N_FOREACH ival), then
 * dropped */
unroll_opt
	: %empty		{ $$ = 0; }
	| ':' IDENT		{ unroll_hint(@2, $2); $$ = 0; }
	| ':' IDENT '(' INTLIT ')' { unroll_hint(@2, $2); $$ = $4; }
	;

withins
	: within		{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	| withins ',' within	{ $$ = node_add($1, $3); }
	;

/* N_WITHIN: kid 0 the names (a block of E_ID), kid 1 the bounds */
within
	: IDENT IN bound	{
		$$ = mk2(N_WITHIN, @1, NULL, node_add(mk(N_BLOCK, @1), ident(@1, $1)), $3);
	}
	| '{' idlist '}' IN bound { $$ = mk2(N_WITHIN, @1, NULL, $2, $5); }
	| IDENT '=' '{' idlist '}' IN bound {
		$$ = mk2(N_WITHIN, @1, NULL, $4, $7);
		$$->name = $1;
	}
	;

bound
	: expr			{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	| '[' args ']'		{ $$ = $2; }
	/* a.span[(4)]: a shape derived from a's */
	| IDENT SPAN '[' args ']' {
		$$ = node_add(mk(N_BLOCK, @1),
			      shape_list(@1, derived_dims($1, $4)));
	}
	/* [M, K, N] / block_shape: shape arithmetic on the bracketed
	 * bounds (sema.c: shape_value), as after a span */
	| '[' args ']' '/' expr	{
		$$ = node_add(mk(N_BLOCK, @1),
			      mk2(E_BINARY, @4, "/", shape_list(@1, $2), $5));
	}
	;

ranges
	: range			{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	| ranges ',' range	{ $$ = node_add($1, $3); }
	;

/* N_RANGE: kids lower offset, upper offset, step (each may be an empty
 * block); name the bounded variable, alias the loop's own name if given */
range
	: range_of		{ $$ = $1; }
	| IDENT '=' range_of	{ $$ = $3; $$->alias = $1; $$->loc = L(@1); }
	;

range_of
	: IDENT			{
		$$ = mk(N_RANGE, @1);
		$$->name = $1;
	}
	| IDENT '(' bnd ':' bnd ')' {
		$$ = mk2(N_RANGE, @1, NULL, $3, $5);
		$$->name = $1;
	}
	| IDENT '(' bnd ':' bnd ':' bnd ')' {
		$$ = mk2(N_RANGE, @1, NULL, $3, $5);
		node_add($$, $7);
		$$->name = $1;
	}
	;

bnd
	: %empty		{ $$ = mk(N_BLOCK, @$); }
	| expr			{ $$ = $1; }
	;

/* views (E_VIEW: kid 0 the sizes or tile sizes, kid 1 the indices or
 * offsets); a view of a view (kid 2 the inner one, under a hidden name:
 * sema.c, check_view) */
view
	: IDENT CHUNKAT '(' args ')' {
		/* views (E_VIEW: kid 0 the tile sizes, kid 1 the indices) */
		$$ = mk2(E_VIEW, @1, $1, mk(E_DIMLIST, @2), $4);
		$$->flag = VIEW_CHUNKAT;
	}
	| IDENT subs CHUNKAT '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, mk(E_DIMLIST, @3), $5);
		$$->flag = VIEW_CHUNKAT;
		$$->index = $2;
	}
	| IDENT subs SUBSPAN '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, $5, mk(N_BLOCK, @3));
		$$->flag = VIEW_SUBSPAN;
		$$->index = $2;
	}
	| IDENT subs SUBSPAN '(' args ')' AT '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, $5, $9);
		$$->flag = VIEW_SUBSPAN;
		$$->index = $2;
	}
	| IDENT subs VIEW '(' args ')' FROM '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, $5, $9);
		$$->flag = VIEW_FROM;
		$$->index = $2;
	}
	| IDENT VIEW '(' args ':' args ')' FROM '(' args ')' {
		/* a window with strides: view(16, 8 : 12, 3).from(i, j) */
		$$ = mk2(E_VIEW, @1, $1, $4, $10);
		$$->flag = VIEW_FROM;
		$$->strides = $6;
	}
	| IDENT subs VIEW '(' args ':' args ')' FROM '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, $5, $11);
		$$->flag = VIEW_FROM;
		$$->index = $2;
		$$->strides = $7;
	}
	| span_as CHUNKAT '(' args ')' {
		$$ = over_span_as($1, mk2(E_VIEW, @1, NULL, mk(E_DIMLIST, @2), $4));
		$$->flag = VIEW_CHUNKAT;
	}
	| span_as SUBSPAN '(' args ')' {
		$$ = over_span_as($1, mk2(E_VIEW, @1, NULL, $4, mk(N_BLOCK, @2)));
		$$->flag = VIEW_SUBSPAN;
	}
	| span_as SUBSPAN '(' args ')' AT '(' args ')' {
		$$ = over_span_as($1, mk2(E_VIEW, @1, NULL, $4, $8));
		$$->flag = VIEW_SUBSPAN;
	}
	| IDENT VIEW '(' args ')' FROM '(' args ')' {
		/* the [a, b] tile whose first element is (i, j) */
		$$ = mk2(E_VIEW, @1, $1, $4, $8);
		$$->flag = VIEW_FROM;
	}
	| IDENT SUBSPAN '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, $4, mk(N_BLOCK, @2));
		$$->flag = VIEW_SUBSPAN;
	}
	| IDENT SUBSPAN '(' args ')' AT '(' args ')' {
		$$ = mk2(E_VIEW, @1, $1, $4, $8);
		$$->flag = VIEW_SUBSPAN;
	}
	| IDENT SUBSPAN '(' args ')' STEP '(' args ')' AT '(' args ')' {
		/* tile (i, j) starts at element (i * step0, j * step1): the
		 * window view(sizes).from(i * step0, j * step1) */
		struct node *ix = mk(N_BLOCK, @11);
		int i;

		if ($8->nkids != $12->nkids)
			diag_error(L(@6), "type mismatch: %d steps but %d indices",
				   $8->nkids, $12->nkids);
		for (i = 0; i < $12->nkids; i++) {
			struct node *m = mk2(E_BINARY, @11, "*", $12->kids[i],
					     $8->kids[i]);

			node_add(ix, m);
		}
		$$ = mk2(E_VIEW, @1, $1, $4, ix);
		$$->flag = VIEW_FROM;
	}
	| span_as VIEW '(' args ')' FROM '(' args ')' {
		$$ = over_span_as($1, mk2(E_VIEW, @1, NULL, $4, $8));
		$$->flag = VIEW_FROM;
	}
	| view CHUNKAT '(' args ')' {
		$$ = over_view($1, mk2(E_VIEW, @1, NULL, mk(E_DIMLIST, @2), $4));
		$$->flag = VIEW_CHUNKAT;
	}
	| view SUBSPAN '(' args ')' {
		$$ = over_view($1, mk2(E_VIEW, @1, NULL, $4, mk(N_BLOCK, @2)));
		$$->flag = VIEW_SUBSPAN;
	}
	| view SUBSPAN '(' args ')' AT '(' args ')' {
		$$ = over_view($1, mk2(E_VIEW, @1, NULL, $4, $8));
		$$->flag = VIEW_SUBSPAN;
	}
	| view VIEW '(' args ')' FROM '(' args ')' {
		$$ = over_view($1, mk2(E_VIEW, @1, NULL, $4, $8));
		$$->flag = VIEW_FROM;
	}
	| view SPAN_AS '(' args ')' {
		/* a view's elements from its first, under another shape */
		$$ = over_view($1, mk2(E_VIEW, @1, NULL, $4, mk(N_BLOCK, @2)));
		$$->flag = VIEW_SPAN_AS;
	}
	| view SPAN_AS '(' '[' args ']' ')' {
		$$ = over_view($1, mk2(E_VIEW, @1, NULL, $5, mk(N_BLOCK, @2)));
		$$->flag = VIEW_SPAN_AS;
	}
	| view SQZ '(' ')' {
		/* the view without its dimensions of extent 1 */
		$$ = over_view($1, mk2(E_VIEW, @2, NULL, mk(E_DIMLIST, @2),
				       mk(N_BLOCK, @2)));
		$$->flag = VIEW_SQZ;
	}
	| span_as SQZ '(' ')' {
		$$ = over_span_as($1, mk2(E_VIEW, @2, NULL, mk(E_DIMLIST, @2),
					  mk(N_BLOCK, @2)));
		$$->flag = VIEW_SQZ;
	}
	| IDENT SQZ '(' ')' {
		$$ = mk2(E_VIEW, @2, $1, mk(E_DIMLIST, @2), mk(N_BLOCK, @2));
		$$->flag = VIEW_SQZ;
	}
	;

/* subscripts of an array's name: `[i]`, `[i][j]` (N_BLOCK of the
 * indices) */
subs
	: '[' args ']'		{ $$ = $2; }
	| subs '[' args ']'	{
		int i;

		$$ = $1;
		for (i = 0; i < $3->nkids; i++)
			node_add($$, $3->kids[i]);
	}
	;

args_opt
	: %empty		{ $$ = mk(N_BLOCK, @$); }
	| args			{ $$ = $1; }
	;

args
	: expr			{ $$ = node_add(mk(N_BLOCK, @1), $1); }
	| args ',' expr		{ $$ = node_add($1, $3); }
	;

expr
	: INTLIT		{ $$ = mk(E_INT, @1); $$->ival = $1; }
	| UINTLIT		{ $$ = mk(E_INT, @1); $$->ival = $1; $$->flag = EL_U32; }
	| LLINTLIT		{ $$ = mk(E_INT, @1); $$->ival = $1; $$->flag = EL_S64; }
	/* ival holds the bits of the u64 value */
	| ULLINTLIT		{ $$ = mk(E_INT, @1); $$->ival = $1; $$->flag = EL_U64; }
	| FLOATLIT		{ $$ = mk(E_FLOAT, @1); $$->fval = $1; }
	| BOOLLIT		{ $$ = mk(E_BOOL, @1); $$->ival = $1; }
	| STRING		{ $$ = mk(E_STRING, @1); $$->name = $1; }
	| lvalue		{ $$ = $1; }
	| IDENT SPAN		{ $$ = mk(E_SPAN, @1); $$->name = $1; $$->ival = -1; }
	| IDENT SPAN '(' INTLIT ')' { $$ = mk(E_SPAN, @1); $$->name = $1; $$->ival = $4; }
	| IDENT subs SPAN	{
		$$ = mk(E_SPAN, @1);
		$$->name = $1;
		$$->ival = -1;
		$$->index = $2;
	}
	| IDENT subs SPAN '(' INTLIT ')' {
		$$ = mk(E_SPAN, @1);
		$$->name = $1;
		$$->ival = $5;
		$$->index = $2;
	}
	| IDENT DATA		{ $$ = mk(E_DATA, @1); $$->name = $1; }
	| span_as		{ $$ = $1; }
	| view			{ $$ = $1; }
	| IDENT '(' args_opt ')' {
		/* a __co__ function's call, or an ituple's element idx(0):
		 * sema tells them apart */
		$$ = $3;
		$$->kind = E_COCALL;
		$$->loc = L(@1);
		$$->name = $1;
	}
	| IDENT '(' args_opt ')' '(' expr ')' {
		/* index(1)(-2): an ituple's element, then its offset form
		 * (sema.c, E_COCALL) */
		$$ = node_add($3, $6);
		$$->kind = E_COCALL;
		$$->loc = L(@1);
		$$->name = $1;
		$$->flag = COCALL_ELEM_OFFSET;
	}
	| '(' expr ')'		{
		$$ = $2;
		/* `(k)` in a shape derived from another, `a [(0) / 2, 3]`:
		 * dimension k of a (shape_init) */
		if ($$->kind == E_INT)
			$$->alias = "(k)";
	}
	| '(' scalar_type ')' expr %prec UNARY {
		$$ = mk2(E_CAST, @1, NULL, $4, NULL);
		set_scalar_type(&$$->type, $2);
	}
	| TO '<' STRING {
		diag_error(L(@1), "not supported yet: __to<\"%s\">, a foreign type "
			   "cast", $3);
	}
	| devcall		{ $$ = $1; }
	| TO '<' scalar_type '>' '(' expr ')' {
		$$ = mk2(E_CAST, @1, NULL, $6, NULL);
		set_scalar_type(&$$->type, $3);
	}
	| BUILTIN '(' args ')'	{
		$$ = $3;
		$$->kind = E_CALL;
		$$->loc = L(@1);
		$$->name = $1;
	}
	| '{' args '}'		{
		/* an ituple literal: shape arithmetic (a.span / {2, 1}) and
		 * ituple declarations use it (sema.c: shape_value) */
		$$ = $2;
		$$->kind = E_DIMLIST;
		$$->loc = L(@1);
		$$->flag = 1;
	}
	| '#' IDENT		{ $$ = mk2(E_UBOUND, @1, NULL, ident(@2, $2), NULL); }
	| '|' IDENT '|'		{ $$ = mk2(E_COUNT, @1, NULL, ident(@2, $2), NULL); }
	| '|' IDENT SPAN '|'	{ $$ = mk2(E_COUNT, @1, NULL, ident(@2, $2), NULL); }
	| '|' IDENT subs SPAN '|' {
		$$ = mk2(E_COUNT, @1, NULL, ident(@2, $2), NULL);
		$$->kids[0]->index = $3;
	}
	| lvalue INC		{ $$ = mk2(E_INCDEC, @2, "post++", $1, NULL); }
	| lvalue DEC		{ $$ = mk2(E_INCDEC, @2, "post--", $1, NULL); }
	| INC lvalue %prec UNARY { $$ = mk2(E_INCDEC, @1, "++", $2, NULL); }
	| DEC lvalue %prec UNARY { $$ = mk2(E_INCDEC, @1, "--", $2, NULL); }
	| '&' lvalue %prec UNARY { $$ = mk2(E_ADDR, @1, "&", $2, NULL); }
	| '-' expr %prec UNARY	{ $$ = mk2(E_UNARY, @1, "-", $2, NULL); }
	| '+' expr %prec UNARY	{ $$ = mk2(E_UNARY, @1, "+", $2, NULL); }
	| '!' expr %prec UNARY	{ $$ = mk2(E_UNARY, @1, "!", $2, NULL); }
	| '~' expr %prec UNARY	{ $$ = mk2(E_UNARY, @1, "~", $2, NULL); }
	| expr '?' expr ':' expr {
		$$ = mk2(E_TERNARY, @2, "?", $1, $3);
		node_add($$, $5);
	}
	| expr OROR expr	{ $$ = mk2(E_BINARY, @2, "||", $1, $3); }
	| expr ANDAND expr	{ $$ = mk2(E_BINARY, @2, "&&", $1, $3); }
	| expr '|' expr		{ $$ = mk2(E_BINARY, @2, "|", $1, $3); }
	| expr '^' expr		{ $$ = mk2(E_BINARY, @2, "^", $1, $3); }
	| expr '&' expr		{ $$ = mk2(E_BINARY, @2, "&", $1, $3); }
	| expr EQ expr		{ $$ = mk2(E_BINARY, @2, "==", $1, $3); }
	| expr NE expr		{ $$ = mk2(E_BINARY, @2, "!=", $1, $3); }
	| expr '<' expr		{ $$ = mk2(E_BINARY, @2, "<", $1, $3); }
	| expr '>' expr		{ $$ = mk2(E_BINARY, @2, ">", $1, $3); }
	| expr LE expr		{ $$ = mk2(E_BINARY, @2, "<=", $1, $3); }
	| expr GE expr		{ $$ = mk2(E_BINARY, @2, ">=", $1, $3); }
	| expr SHL expr		{ $$ = mk2(E_BINARY, @2, "<<", $1, $3); }
	| expr SHR expr		{ $$ = mk2(E_BINARY, @2, ">>", $1, $3); }
	| expr '+' expr		{ $$ = mk2(E_BINARY, @2, "+", $1, $3); }
	| expr '-' expr		{ $$ = mk2(E_BINARY, @2, "-", $1, $3); }
	| expr '*' expr		{ $$ = mk2(E_BINARY, @2, "*", $1, $3); }
	| expr '#' expr		{ $$ = mk2(E_BINARY, @2, "#", $1, $3); }
	| expr '/' expr		{ $$ = mk2(E_BINARY, @2, "/", $1, $3); }
	| expr '%' expr		{ $$ = mk2(E_BINARY, @2, "%", $1, $3); }
	/* shape arithmetic with a bracketed shape, d.span / [3, 4, 5, 6]
	 * (an ituple literal to sema.c: shape_value) */
	| expr '+' '[' args ']'	{ $$ = mk2(E_BINARY, @2, "+", $1, shape_list(@3, $4)); }
	| expr '-' '[' args ']'	{ $$ = mk2(E_BINARY, @2, "-", $1, shape_list(@3, $4)); }
	| expr '*' '[' args ']'	{ $$ = mk2(E_BINARY, @2, "*", $1, shape_list(@3, $4)); }
	| expr '/' '[' args ']'	{ $$ = mk2(E_BINARY, @2, "/", $1, shape_list(@3, $4)); }
	| expr '%' '[' args ']'	{ $$ = mk2(E_BINARY, @2, "%", $1, shape_list(@3, $4)); }
	;

%%

static void yyerror(const char *msg)
{
	diag_error(L(yylloc), "%s", msg);
}
