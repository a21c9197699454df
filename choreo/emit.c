// SPDX-License-Identifier: MIT
/* emit.c - expressions and statements as C, for kernels and host code. */
/* open_memstream: an array element's address as a string */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "emit.h"

static char path_literal[4200];

const char *emit_path_literal(void)
{
	const char *p = diag_path();
	char *q = path_literal;

	if (*q)
		return path_literal;
	*q++ = '"';
	for (; *p && q < path_literal + sizeof(path_literal) - 4; p++) {
		if (*p == '"' || *p == '\\')
			*q++ = '\\';
		*q++ = *p;
	}
	*q++ = '"';
	*q = 0;
	return path_literal;
}

const char *c_scalar_type(enum elem e)
{
	return elem_ctype(e == EL_NONE ? EL_S64 : e);
}

const char *c_elem_enum(enum elem e)
{
	static const char *const names[] = {
		"NPU_CHOREO_U8", "NPU_CHOREO_S8", "NPU_CHOREO_U16",
		"NPU_CHOREO_S16", "NPU_CHOREO_U32", "NPU_CHOREO_S32",
		"NPU_CHOREO_S64", "NPU_CHOREO_F32", "NPU_CHOREO_F64",
		"NPU_CHOREO_F16", "NPU_CHOREO_BF16", "NPU_CHOREO_F8_E4M3",
		"NPU_CHOREO_F8_E5M2", "NPU_CHOREO_U64",
	};

	if (elem_bits(e))
		return elem_signed_bits(e) ? "NPU_CHOREO_S8" : "NPU_CHOREO_U8";
	return e <= EL_U64 ? names[e] : "NPU_CHOREO_S32";
}

void emit_indent(struct emitter *em)
{
	int i;

	for (i = 0; i < em->indent; i++)
		fputc('\t', em->o);
}

void emit_line(struct emitter *em, struct loc loc)
{
	fprintf(em->o, "#line %d %s\n", loc.line, emit_path_literal());
}

void emit_dim(struct emitter *em, const struct sym *s, int k)
{
	long long v;

	if (s->array_of) {	/* an array's element: the array's dimension */
		emit_dim(em, s->array_of, k + s->array_of->narr);
		return;
	}
	if (span_dim_const(s, k, &v)) {
		fprintf(em->o, "%lldL", v);
	} else if (s->kind == SY_SHAPE || s->kind == SY_ALIAS) {
		fputs("((long long)(", em->o);
		emit_expr(em, s->type.dims[k]);
		fputs("))", em->o);
	} else
		fprintf(em->o, "%s_d%d", s->cname, k);
}

static void emit_count(struct emitter *em, const struct sym *s)
{
	int k;

	fputs("((long long)", em->o);
	for (k = 0; k < s->type.rank; k++) {
		if (k)
			fputs(" * (long long)", em->o);
		emit_dim(em, s, k);
	}
	if (!s->type.rank)
		fputs("1", em->o);
	fputc(')', em->o);
}

/*
 * An element of an array of spanned data, x[i][j]: the array's address
 * plus the element's row-major index times an element's count, each
 * index checked (a kernel faults at the line, the host reports it).
 * Its symbol is the use's own (sema.c: array_element), so the C of the
 * element's address is its name while the statement is emitted.
 */
static void set_elem_cname(struct emitter *em, const struct node *n)
{
	struct sym *el = n->sym;
	const struct sym *a = el->array_of;
	FILE *saved = em->o;
	char *buf = NULL;
	size_t len = 0;
	int k;

	em->o = open_memstream(&buf, &len);
	if (!em->o) {
		perror("npu-choreo");
		exit(2);
	}
	fprintf(em->o, "(%s + (", a->cname);
	for (k = 0; k < n->index->nkids; k++)
		fputc('(', em->o);
	for (k = 0; k < n->index->nkids; k++) {
		if (k)
			fprintf(em->o, " * %ldLL + ", a->arr[k]);
		fputs(em->device ? "NPU_CO_IX(" : "NPU_CO_HIX(", em->o);
		emit_expr(em, n->index->kids[k]);
		fprintf(em->o, ", %ld", a->arr[k]);
		if (!em->device)
			fprintf(em->o, ", %d, \"%s\"", n->loc.line, a->name);
		fputs("))", em->o);
	}
	fputs(") * (long long)", em->o);
	for (k = a->narr; k < a->type.rank; k++) {
		if (k > a->narr)
			fputs(" * (long long)", em->o);
		emit_dim(em, a, k);
	}
	if (a->narr == a->type.rank)
		fputs("1", em->o);
	fputc(')', em->o);
	fclose(em->o);
	em->o = saved;
	el->cname = buf;
}

/* the elements of arrays a statement (or expression) uses: their
 * addresses (set_elem_cname) */
static void elem_cnames(struct emitter *em, const struct node *n)
{
	int i;

	if (!n)
		return;
	for (i = 0; i < n->nkids; i++)
		elem_cnames(em, n->kids[i]);
	if (!n->index)
		return;
	elem_cnames(em, n->index);
	if (n->sym && n->sym->array_of)
		set_elem_cname(em, n);
}

/* the data a name stands for: an alias's (span_as, a named view) */
static const struct sym *data_sym(const struct sym *s)
{
	return s->kind == SY_ALIAS && s->target ? s->target : s;
}

/* index k of element access e of s, checked against its dimension
 * (NPU_CO_IX on the device; NPU_CO_HIX on the host, with the line and
 * name its error gives) */
static void emit_checked_index(struct emitter *em, const struct sym *s,
			       const struct node *e, int k)
{
	fputs(em->device ? "NPU_CO_IX(" : "NPU_CO_HIX(", em->o);
	emit_expr(em, e->kids[k]);
	fputs(", ", em->o);
	emit_dim(em, s, k);
	if (!em->device)
		fprintf(em->o, ", %d, \"%s\"", e->loc.line, s->name);
	fputc(')', em->o);
}

/* the element: data[row-major index], each index checked against its
 * dimension (a kernel faults at its .co line; the host reports it) */
static void emit_at(struct emitter *em, const struct node *e)
{
	const struct sym *s = e->sym;
	int k;

	fprintf(em->o, "%s[", s->cname);
	if (!em->device && data_sym(s)->kind == SY_PARAM)
		fprintf(em->o, "NPU_CO_ON_HOST(%s_on_device, %d, \"%s\") + ",
			data_sym(s)->cname, e->loc.line, data_sym(s)->name);
	if (s->view_off) {
		/* a named view: its offset, each index times its stride */
		fputs("(long long)(", em->o);
		emit_expr(em, s->view_off);
		fputs(")", em->o);
		for (k = 0; k < e->nkids; k++) {
			fputs(" + ", em->o);
			emit_checked_index(em, s, e, k);
			fputs(" * (long long)(", em->o);
			emit_expr(em, s->view_strides[k]);
			fputs(")", em->o);
		}
		fputc(']', em->o);
		return;
	}
	for (k = 0; k < e->nkids; k++)
		fputc('(', em->o);
	for (k = 0; k < e->nkids; k++) {
		if (k) {
			fputs(" * (long long)", em->o);
			emit_dim(em, s, k);
			fputs(" + ", em->o);
		}
		emit_checked_index(em, s, e, k);
		fputc(')', em->o);
	}
	fputc(']', em->o);
}

/* f16/bf16 values are held as bits: reading one widens it to f32,
 * storing rounds an f32 to nearest even (npu_half.h) */
static const char *half_to_f32(enum elem el)
{
	static char name[40];

	snprintf(name, sizeof(name), "npu_%s_to_f32", elem_name(el));
	return name;
}

static const char *half_from_f32(enum elem el)
{
	static char name[40];

	snprintf(name, sizeof(name), "npu_%s_from_f32", elem_name(el));
	return name;
}

/* a scalar variable or an element that holds f16/bf16 bits */
static bool half_lvalue(const struct node *e)
{
	if (e->kind == E_AT)
		return elem_is_half(e->sym->type.elem);
	return e->kind == E_ID && e->sym && e->sym->type.kind == TY_SCALAR &&
	       elem_is_half(e->sym->type.elem);
}

/* (a sub-byte integer: its low bits, sign-extended when signed) */
static void emit_bits_open(struct emitter *em, enum elem el)
{
	int n = elem_bits(el);

	if (elem_signed_bits(el))
		fprintf(em->o, "(int8_t)((int8_t)((uint8_t)(%d & (", (1 << n) - 1);
	else
		fprintf(em->o, "(uint8_t)(%d & (", (1 << n) - 1);
}

static void emit_bits_close(struct emitter *em, enum elem el)
{
	int n = elem_bits(el);

	if (elem_signed_bits(el))
		fprintf(em->o, ")) << %d) >> %d)", 8 - n, 8 - n);
	else
		fputs("))", em->o);
}

void emit_stored(struct emitter *em, enum elem el, const struct node *e)
{
	if (elem_bits(el)) {
		emit_bits_open(em, el);
		emit_expr(em, e);
		emit_bits_close(em, el);
		return;
	}
	if (elem_is_half(el))
		fprintf(em->o, "%s((float)(", half_from_f32(el));
	else
		fprintf(em->o, "(%s)(", c_scalar_type(el));
	emit_expr(em, e);
	fputs(elem_is_half(el) ? "))" : ")", em->o);
}

/* lhs op= rhs where lhs holds f16/bf16 bits: computed in f32, rounded */
static void emit_half_assign(struct emitter *em, const struct node *s)
{
	const struct node *l = s->kids[0];
	enum elem el = l->sym->type.elem;
	size_t n = strlen(s->name);

	if (l->kind == E_AT)
		emit_at(em, l);
	else
		fputs(l->sym->cname, em->o);
	fprintf(em->o, " = %s((float)(", half_from_f32(el));
	if (n > 1) {
		emit_expr(em, l);
		fprintf(em->o, " %.*s (", (int)(n - 1), s->name);
		emit_expr(em, s->kids[1]);
		fputc(')', em->o);
	} else {
		emit_expr(em, s->kids[1]);
	}
	fputs("));\n", em->o);
}

/* the C of each math built-in over x_ (y_, z_), in float; "%s" is the
 * suffix of <math.h>'s functions ("f", or "" for double) */
static const struct {
	const char *name, *c;
} math_c[] = {
	{ "__acos", "acos%s(x_)" }, { "__asin", "asin%s(x_)" },
	{ "__atan", "atan%s(x_)" }, { "__atan2", "atan2%s(x_, y_)" },
	{ "__ceil", "ceil%s(x_)" }, { "__cos", "cos%s(x_)" },
	{ "__cosh", "cosh%s(x_)" }, { "__exp", "exp%s(x_)" },
	{ "__exp2f", "exp2%s(x_)" }, { "__expm1", "expm1%s(x_)" },
	{ "__fabs", "fabs%s(x_)" }, { "__fmaf", "fma%s(x_, y_, z_)" },
	{ "__frcp_rn", "1 / x_" }, { "__floor", "floor%s(x_)" },
	{ "__gelu", "x_ / 2 * (1 + erf%s(x_ * (T_)0.70710678118654752440))" },
	{ "__isfinite", "isfinite(x_)" }, { "__round", "round%s(x_)" },
	{ "__rsqrt", "1 / sqrt%s(x_)" },
	{ "__sigmoid", "1 / (1 + exp%s(-x_))" }, { "__sinh", "sinh%s(x_)" },
	{ "__softplus", "log1p%s(exp%s(x_))" }, { "__sqrt", "sqrt%s(x_)" },
	{ "__tan", "tan%s(x_)" }, { "__log1p", "log1p%s(x_)" },
	{ "__log", "log%s(x_)" }, { "__pow", "pow%s(x_, y_)" },
	{ "__sign", "(T_)((x_ > 0) - (x_ < 0))" }, { "__sin", "sin%s(x_)" },
	{ "__tanh", "tanh%s(x_)" },
};

/* a math built-in: its operands converted once to T_ (float, or double
 * when sema typed the call f64), then <math.h> */
static void emit_math(struct emitter *em, const struct node *e)
{
	static const char *const names[] = { "x_", "y_", "z_" };
	bool dbl = e->ety.elem == EL_F64;
	const char *fmt = NULL, *sfx = dbl ? "" : "f";
	unsigned i;
	int k;

	if (e->ety.elem == EL_BOOL)	/* __isfinite: of the operand's type */
		dbl = e->kids[0]->ety.elem == EL_F64;
	for (i = 0; i < sizeof(math_c) / sizeof(math_c[0]); i++)
		if (!strcmp(e->name, math_c[i].name))
			fmt = math_c[i].c;
	fprintf(em->o, "__extension__ ({ typedef %s T_; ", dbl ? "double" : "float");
	for (k = 0; k < e->nkids; k++) {
		fprintf(em->o, "T_ %s = (T_)(", names[k]);
		emit_expr(em, e->kids[k]);
		fputs("); ", em->o);
	}
	fprintf(em->o, fmt, sfx, sfx);
	fputs("; })", em->o);
}

static void emit_call(struct emitter *em, const struct node *e)
{
	const char *n = e->name;
	const struct node *at, *v;
	enum elem el;

	if (math_builtin_args(n)) {
		emit_math(em, e);
		return;
	}
	/* two-operand built-ins: each operand evaluated once, as a_ and b_ */
	if (!strcmp(n, "__min") || !strcmp(n, "__max") || !strcmp(n, "cdiv") ||
	    !strcmp(n, "__alignup") || !strcmp(n, "__aligndown")) {
		fputs("__extension__ ({ __typeof__((", em->o);
		emit_expr(em, e->kids[0]);
		fputs(") + (", em->o);
		emit_expr(em, e->kids[1]);
		fputs(")) a_ = (", em->o);
		emit_expr(em, e->kids[0]);
		fputs("), b_ = (", em->o);
		emit_expr(em, e->kids[1]);
		if (!strcmp(n, "__min") || !strcmp(n, "__max"))
			fprintf(em->o, "); a_ %s b_ ? a_ : b_; })",
				n[3] == 'i' ? "<" : ">");
		else if (!strcmp(n, "cdiv"))
			fputs("); (a_ + b_ - 1) / b_; })", em->o);
		else
			fprintf(em->o, "); (a_%s) / b_ * b_; })",
				!strcmp(n, "__alignup") ? " + b_ - 1" : "");
		return;
	}
	at = e->kids[0];
	v = e->kids[1];
	el = at->sym->type.elem;
	if (!strcmp(n, "__atomic_cas")) {
		/* the old value; desired is stored only if it equalled
		 * expected (host code: one thread, as below) */
		const char *t = c_scalar_type(el);

		if (em->device) {
			fputs("npu_atomic_cas(&", em->o);
			emit_at(em, at);
			fprintf(em->o, ", (%s)(", t);
		} else {
			fprintf(em->o, "__extension__ ({ %s *p_ = &", t);
			emit_at(em, at);
			fprintf(em->o, "; %s o_ = *p_, e_ = (%s)(", t, t);
		}
		emit_expr(em, v);
		fprintf(em->o, em->device ? "), (%s)(" : "), v_ = (%s)(", t);
		emit_expr(em, e->kids[2]);
		fputs(em->device ? "))" :
		      "); if (o_ == e_) *p_ = v_; o_; })", em->o);
		return;
	}
	if (em->device) {
		const char *op = n + strlen("__atomic_");

		if (el == EL_F32 && !strcmp(op, "add"))
			fputs("npu_atomic_add_f32(&", em->o);
		else if (el == EL_F32 && !strcmp(op, "sub"))
			fputs("npu_atomic_add_f32(&", em->o);
		else if (el == EL_F32 && !strcmp(op, "exch"))
			fputs("npu_atomic_exch_f32(&", em->o);
		else if (!strcmp(op, "sub"))
			fputs("npu_atomic_add(&", em->o);
		else
			fprintf(em->o, "npu_atomic_%s(&", op);
		emit_at(em, at);
		fprintf(em->o, ", (%s)(%s", c_scalar_type(el),
			!strcmp(op, "sub") ? "-(" : "(");
		emit_expr(em, v);
		fputs(")))", em->o);
		return;
	}
	/* host code runs on one thread: a read-modify-write returning the old
	 * value (the host does not race the device: launches complete first
	 * unless .async, and then the host must not touch the data anyway) */
	fprintf(em->o, "__extension__ ({ %s *p_ = &", c_scalar_type(el));
	emit_at(em, at);
	fprintf(em->o, "; %s o_ = *p_, v_ = (%s)(", c_scalar_type(el),
		c_scalar_type(el));
	emit_expr(em, v);
	fputs("); ", em->o);
	n += strlen("__atomic_");
	if (!strcmp(n, "add"))
		fputs("*p_ = o_ + v_;", em->o);
	else if (!strcmp(n, "sub"))
		fputs("*p_ = o_ - v_;", em->o);
	else if (!strcmp(n, "min"))
		fputs("*p_ = v_ < o_ ? v_ : o_;", em->o);
	else if (!strcmp(n, "max"))
		fputs("*p_ = v_ > o_ ? v_ : o_;", em->o);
	else if (!strcmp(n, "exch"))
		fputs("*p_ = v_;", em->o);
	else if (!strcmp(n, "and"))
		fputs("*p_ = o_ & v_;", em->o);
	else if (!strcmp(n, "or"))
		fputs("*p_ = o_ | v_;", em->o);
	else
		fputs("*p_ = o_ ^ v_;", em->o);
	fputs(" o_; })", em->o);
}

/* call f(a, b): a C call; spanned data (x, f.data) decays to a pointer
 * to its first element, of its element's C type */
static void emit_devcall(struct emitter *em, const struct node *e)
{
	int i;

	fprintf(em->o, "%s(", e->name);
	for (i = 0; i < e->nkids; i++) {
		const struct node *a = e->kids[i];

		if (i)
			fputs(", ", em->o);
		if (a->ety.kind != TY_SPAN) {
			emit_expr(em, a);
			continue;
		}
		if (a->index && a->sym->array_of)
			set_elem_cname(em, a);
		fprintf(em->o, "((%s *)(%s))", elem_ctype(a->sym->type.elem),
			a->sym->cname);
	}
	fputc(')', em->o);
}

void emit_expr(struct emitter *em, const struct node *e)
{
	FILE *o = em->o;
	long long v;

	if (e->index && e->sym && e->sym->array_of)
		set_elem_cname(em, e);

	switch (e->kind) {
	case E_INT:
		if (e->flag == EL_U32)
			fprintf(o, "%lluU", (unsigned long long)e->ival);
		else if (e->flag == EL_U64)
			fprintf(o, "%lluULL", (unsigned long long)e->ival);
		else if (e->flag == EL_S64 || e->ival > 2147483647LL ||
			 e->ival < -2147483647LL)
			fprintf(o, "%lldLL", e->ival);
		else
			fprintf(o, "%lld", e->ival);
		break;
	case E_FLOAT:
		if (isinf(e->fval))
			fputs("__builtin_inf()", o);
		else
			fprintf(o, "%.17e", e->fval);
		break;
	case E_BOOL:
		fprintf(o, "((_Bool)%lld)", e->ival);
		break;
	case E_ID:
		if (em->device && e->sym->kind == SY_DIM && e->sym->dim_of &&
		    !kernel_captures(em->kernel, e->sym)) {
			/* the dimension argument of its parameter */
			fprintf(o, "((long long)%s_d%d)", e->sym->dim_of->cname,
				e->sym->dim_index);
			break;
		}
		if (half_lvalue(e))
			fprintf(o, "%s(%s)", half_to_f32(e->sym->type.elem), e->sym->cname);
		else
			fputs(e->sym->cname, o);
		break;
	case E_AT:
		if (half_lvalue(e))
			fprintf(o, "%s(", half_to_f32(e->sym->type.elem));
		emit_at(em, e);
		if (half_lvalue(e))
			fputc(')', o);
		break;
	case E_SPAN:
		emit_dim(em, e->sym, (int)e->ival);
		break;
	case E_COUNT:
		emit_count(em, e->kids[0]->sym);
		break;
	case E_UBOUND:
		if (const_eval(e, &v)) {
			fprintf(o, "%lld", v);
		} else {
			fputs("((int)(", o);
			emit_expr(em, e->kids[0]->sym->ubound);
			fputs("))", o);
		}
		break;
	case E_CAST:
		if (elem_is_half(e->type.elem)) {
			/* the f32 value of the rounded f16/bf16 */
			fprintf(o, "%s(", half_to_f32(e->type.elem));
			emit_stored(em, e->type.elem, e->kids[0]);
			fputc(')', o);
			break;
		}
		fprintf(o, "((%s)(", c_scalar_type(e->type.elem));
		emit_expr(em, e->kids[0]);
		fputs("))", o);
		break;
	case E_COCALL:
		host_emit_call(em, e);
		break;
	case E_CALL:
		emit_call(em, e);
		break;
	case E_DEVCALL:
		emit_devcall(em, e);
		break;
	case E_INCDEC:
		fputc('(', o);
		if (e->name[0] != 'p')
			fputs(e->name, o);
		emit_expr(em, e->kids[0]);
		if (e->name[0] == 'p')
			fputs(e->name + 4, o);
		fputc(')', o);
		break;
	case E_UNARY:
		fprintf(o, "(%s(", e->name);
		emit_expr(em, e->kids[0]);
		fputs("))", o);
		break;
	case E_BINARY:
		fputs("((", o);
		emit_expr(em, e->kids[0]);
		fprintf(o, ") %s (", e->name);
		emit_expr(em, e->kids[1]);
		fputs("))", o);
		break;
	case E_TERNARY:
		fputs("((", o);
		emit_expr(em, e->kids[0]);
		fputs(") ? (", o);
		emit_expr(em, e->kids[1]);
		fputs(") : (", o);
		emit_expr(em, e->kids[2]);
		fputs("))", o);
		break;
	default:
		diag_error(e->loc, "not supported yet: this expression here");
	}
}

/*
 * A condition in its own parentheses: a binary expression already has
 * one pair (clang warns about `if ((a == b))`).
 */
static void emit_cond(struct emitter *em, const struct node *e)
{
	if (e->kind == E_BINARY) {
		emit_expr(em, e);
		return;
	}
	fputc('(', em->o);
	emit_expr(em, e);
	fputc(')', em->o);
}

/* println as Choreo's runtime prints: integers %lld (u64 %llu), floats %f, booleans
 * true/false, shapes [d0, d1], ituples {a, b}; arguments separated by one
 * space */
static void emit_print(struct emitter *em, const struct node *p)
{
	FILE *o = em->o;
	int i, k;

	fputs("printf(\"", o);
	for (i = 0; i < p->nkids; i++) {
		const struct node *a = p->kids[i];
		const char *c;

		if (i)
			fputc(' ', o);
		if (a->kind == E_STRING) {
			for (c = a->name; *c; c++) {
				if (*c == '%')
					fputc('%', o);
				fputc(*c, o);
			}
		} else if (a->ety.kind == TY_STRING) {
			fputs("%s", o);
		} else if (a->ety.kind == TY_TUPLE) {
			fputc('{', o);
			for (k = 0; k < a->sym->type.rank; k++)
				fputs(k ? ", %lld" : "%lld", o);
			fputc('}', o);
		} else if (a->kind == E_SPAN && a->ival < 0) {
			fputc(a->sym->ituple ? '{' : '[', o);
			for (k = 0; k < a->sym->type.rank; k++)
				fputs(k ? ", %lld" : "%lld", o);
			fputc(a->sym->ituple ? '}' : ']', o);
		} else if (a->ety.elem == EL_BOOL) {
			fputs("%s", o);
		} else if (elem_is_float(a->ety.elem)) {
			fputs("%f", o);
		} else if (a->ety.elem == EL_U64) {
			fputs("%llu", o);
		} else {
			fputs("%lld", o);
		}
	}
	if (p->flag)
		fputs("\\n", o);
	fputc('"', o);
	for (i = 0; i < p->nkids; i++) {
		const struct node *a = p->kids[i];

		if (a->kind == E_STRING)
			continue;
		if (a->ety.kind == TY_TUPLE) {
			for (k = 0; k < a->sym->type.rank; k++)
				fprintf(o, ", (long long)%s", a->kids[k]->sym->cname);
			continue;
		}
		if (a->kind == E_SPAN && a->ival < 0) {
			for (k = 0; k < a->sym->type.rank; k++) {
				fputs(", (long long)", o);
				emit_dim(em, a->sym, k);
			}
			continue;
		}
		fputs(", ", o);
		if (a->ety.elem == EL_BOOL) {
			fputc('(', o);
			emit_expr(em, a);
			fputs(") ? \"true\" : \"false\"", o);
		} else if (elem_is_float(a->ety.elem)) {
			fputs("(double)(", o);
			emit_expr(em, a);
			fputc(')', o);
		} else if (a->ety.elem == EL_U64) {
			fputs("(unsigned long long)(", o);
			emit_expr(em, a);
			fputc(')', o);
		} else {
			fputs("(long long)(", o);
			emit_expr(em, a);
			fputc(')', o);
		}
	}
	fputs(");\n", o);
	if (!em->device) {
		/* keep host lines in order with the device's, which libnpu
		 * writes to the same stdout when launches complete */
		emit_indent(em);
		fputs("fflush(stdout);\n", o);
	}
}

static void emit_scalar_decl(struct emitter *em, const struct node *d)
{
	FILE *o = em->o;

	fprintf(o, "%s %s = ", c_scalar_type(d->sym->type.elem), d->sym->cname);
	if (d->nkids) {
		emit_stored(em, d->sym->type.elem, d->kids[0]);
		fputs(";\n", o);
	} else {
		fputs("0;\n", o);
	}
	/* a never-read local is no error in Choreo */
	emit_indent(em);
	fprintf(o, "(void)%s;\n", d->sym->cname);
}

/* copy |src| elements; the element loop also serves spans whose data
 * lives in the scratchpad or on the stack */
/* a dma.copy operand: spanned data or a view of it (E_VIEW) */
static int op_rank(const struct node *e)
{
	return e->kind == E_VIEW ? e->ety.rank : e->sym->type.rank;
}

static void emit_op_dim(struct emitter *em, const struct node *e, int k)
{
	if (e->kind != E_VIEW) {
		emit_dim(em, e->sym, k);
		return;
	}
	fputs("((long long)(", em->o);
	emit_expr(em, e->ety.dims[k]);
	fputs("))", em->o);
}

/* j_[0..rank) from the row-major index in r_ over the dimensions dims[] */
static void emit_unravel(struct emitter *em, int rank, const char *dims)
{
	int k;

	for (k = rank - 1; k >= 0; k--) {
		emit_indent(em);
		if (k)
			fprintf(em->o, "\t\tj_[%d] = r_ %% %s[%d];\n", k, dims, k);
		else
			fputs("\t\tj_[0] = r_;\n", em->o);
		if (k) {
			emit_indent(em);
			fprintf(em->o, "\t\tr_ /= %s[%d];\n", dims, k);
		}
	}
}

/* var = the element offset of j_ in the operand: in a view, tile index
 * times tile size plus j_, each checked against the data's dimension */
static void emit_op_offset(struct emitter *em, const struct node *e,
			   const char *var, int line)
{
	FILE *o = em->o;
	int k, rank = op_rank(e);

	emit_indent(em);
	fprintf(o, "\t\t%s = 0;\n", var);
	if ((e->kind == E_VIEW && e->strides) || e->sym->view_off) {
		/* a strided window or a named view's: an offset and strides
		 * in the data's elements, the element checked against the
		 * data's count */
		const struct sym *s = e->sym, *data = s->view_off ? s->target : s;

		if (s->view_off) {
			emit_indent(em);
			fprintf(o, "\t\t%s = (long long)(", var);
			emit_expr(em, s->view_off);
			fputs(");\n", o);
		}
		for (k = 0; k < rank; k++) {
			emit_indent(em);
			fprintf(o, "\t\t%s += (", var);
			if (e->kind == E_VIEW) {
				/* the view's origin in the data (named view) */
				fputs("(long long)(", o);
				emit_expr(em, e->kids[1]->kids[k]);
				fputs(")", o);
				if (e->flag != VIEW_FROM) {
					fputs(" * ", o);
					emit_op_dim(em, e, k);
				}
				fputs(" + ", o);
			}
			fprintf(o, "j_[%d]) * (long long)(", k);
			if (s->view_off)
				emit_expr(em, s->view_strides[k]);
			else
				emit_expr(em, e->strides->kids[k]);
			fputs(");\n", o);
		}
		emit_indent(em);
		fprintf(o, "\t\tif (%s < 0 || %s >= ", var, var);
		emit_count(em, data);
		fputs(")", o);
		if (em->device) {
			fputs("\n", o);
			emit_indent(em);
			fputs("\t\t\tNPU_CO_TRAP();\n", o);
			return;
		}
		fprintf(o, " {\n\t\t\tnpu_co_bad_strided(%s, %d, %s, ",
			emit_path_literal(), line, var);
		emit_count(em, data);
		fputs(");\n\t\t\tnpu__st = NPU_ERROR_INVALID_VALUE;\n"
		      "\t\t\tgoto npu__out;\n\t\t}\n", o);
		return;
	}
	for (k = 0; k < rank; k++) {
		emit_indent(em);
		fputs("\t\t{\n", o);
		emit_indent(em);
		fputs("\t\t\tlong long b_ = ", o);
		if (e->kind == E_VIEW && e->flag == VIEW_SPAN_AS) {
			/* row-major in its own shape */
			fprintf(o, "j_[%d], bd_ = ", k);
			emit_op_dim(em, e, k);
			fprintf(o, ";\n");
			emit_indent(em);
			fprintf(o, "\t\t\t%s = %s * bd_ + b_;\n", var, var);
			emit_indent(em);
			fputs("\t\t}\n", o);
			continue;
		}
		if (e->kind == E_VIEW) {
			fputs("(long long)(", o);
			emit_expr(em, e->kids[1]->kids[k]);
			fputs(")", o);
			if (e->flag != VIEW_FROM) {	/* tiles, not elements */
				fputs(" * ", o);
				emit_op_dim(em, e, k);
			}
			fputs(" + ", o);
		}
		fprintf(o, "j_[%d], bd_ = ", k);
		emit_dim(em, e->sym, k);
		fputs(";\n", o);
		if (e->kind == E_VIEW) {
			emit_indent(em);
			if (em->device)
				fputs("\t\t\tif (b_ < 0 || b_ >= bd_)\n\t\t\t\tNPU_CO_TRAP();\n", o);
			else
				fprintf(o, "\t\t\tif (b_ < 0 || b_ >= bd_) {\n"
					"\t\t\t\tnpu_co_bad_view(%s, %d, %d, b_, bd_);\n"
					"\t\t\t\tnpu__st = NPU_ERROR_INVALID_VALUE;\n"
					"\t\t\t\tgoto npu__out;\n\t\t\t}\n",
					emit_path_literal(), line, k);
		}
		emit_indent(em);
		fprintf(o, "\t\t\t%s = %s * bd_ + b_;\n", var, var);
		emit_indent(em);
		fputs("\t\t}\n", o);
	}
}

/* does kernel code at block level run on one thread per block: the tile
 * DMA's barrier words and counts are the block's then */
static bool tdma_block_thread(const struct emitter *em)
{
	return em->device && !em->kernel->nthread_pars && !em->kernel->grid_is_threads;
}

/* the barrier word of a tile DMA future */
static void emit_tdma_barrier(struct emitter *em, const struct sym *f)
{
	fprintf(em->o, "(struct npu_tdma_barrier *)(npu__scratch + %ldUL)",
		f->tdma_first->shared_offset);
}

/*
 * A copy check_tdma chose, issued to the tile DMA engine: the rectangle of
 * the source's shape between the memory side (its first element's address,
 * rows its data's row apart) and the shared data (rows its row apart).
 * The view's first and last elements are checked as the element loop
 * checks each one (a fault at the line).
 */
static void emit_tdma(struct emitter *em, const struct node *d)
{
	FILE *o = em->o;
	const struct node *src = d->kids[0], *dst = d->kids[1];
	bool to_mem = src->sym->storage == ST_SHARED;
	const struct node *mem = to_mem ? dst : src, *scr = to_mem ? src : dst;
	const struct sym *f = d->kids[2]->sym;
	int k, rank = op_rank(src);
	size_t w = elem_size(src->sym->type.elem);

	fputs("{\n", o);
	emit_indent(em);
	fprintf(o, "\tlong long j_[%d] = { 0 }, o0_, o1_;\n\n", MAX_RANK);
	emit_op_offset(em, mem, "o0_", d->loc.line);
	for (k = 0; k < rank; k++) {
		emit_indent(em);
		fprintf(o, "\tj_[%d] = ", k);
		emit_op_dim(em, src, k);
		fputs(" - 1;\n", o);
	}
	emit_op_offset(em, mem, "o1_", d->loc.line);
	emit_indent(em);
	fputs("\t(void)o1_;\n", o);
	emit_indent(em);
	fputs("\tnpu_tdma_2d(", o);
	emit_tdma_barrier(em, f);
	fprintf(o, ", (void *)%s, (unsigned long)(%s + o0_), (unsigned)(",
		scr->sym->cname, mem->sym->cname);
	emit_op_dim(em, src, rank - 1);
	fprintf(o, " * %zu), ", w);
	if (rank == 2)
		emit_op_dim(em, src, 0);
	else
		fputs("1", o);
	fputs(", (unsigned long)(", o);
	if (rank == 2)
		emit_dim(em, mem->sym, 1);
	else
		fputs("0", o);
	fprintf(o, " * %zu), (unsigned)(", w);
	if (rank == 2)
		emit_dim(em, scr->sym, 1);
	else
		fputs("0", o);
	fprintf(o, " * %zu), %d);\n", w, to_mem);
	emit_indent(em);
	fprintf(o, "\tnpu__tc_%s++;\n", f->tdma_first->cname);
	emit_indent(em);
	fputs("}\n", o);
}

static void emit_dma(struct emitter *em, const struct node *d)
{
	FILE *o = em->o;
	const struct node *src = d->kids[0], *dst = d->kids[1];
	const struct sym *ss = src->sym, *ds;
	int k, sr = op_rank(src), dr = op_rank(dst);

	if (dst->kind == N_SPANDECL) {
		if (em->device)
			kernel_emit_span_decl(em, dst);
		else
			host_emit_span_decl(em, dst);
		emit_indent(em);
	}
	ds = dst->sym;
	if (d->tdma && tdma_block_thread(em)) {
		emit_tdma(em, d);
		return;
	}
	fputs("{\n", o);
	if (!em->device) {
		if (data_sym(ss)->kind == SY_PARAM) {
			emit_indent(em);
			fprintf(o, "\t(void)NPU_CO_ON_HOST(%s_on_device, %d, \"%s\");\n",
				data_sym(ss)->cname, d->loc.line, data_sym(ss)->name);
		}
		if (data_sym(ds)->kind == SY_PARAM) {
			emit_indent(em);
			fprintf(o, "\t(void)NPU_CO_ON_HOST(%s_on_device, %d, \"%s\");\n",
				data_sym(ds)->cname, d->loc.line, data_sym(ds)->name);
		}
	}
	emit_indent(em);
	fputs("\tlong long sd_[] = { ", o);
	for (k = 0; k < sr; k++) {
		fputs(k ? ", " : "", o);
		emit_op_dim(em, src, k);
	}
	fputs(" }, dd_[] = { ", o);
	for (k = 0; k < dr; k++) {
		fputs(k ? ", " : "", o);
		emit_op_dim(em, dst, k);
	}
	fputs(" };\n", o);
	emit_indent(em);
	fprintf(o, "\tlong long n_ = 1, m_ = 1, j_[%d] = { 0 };\n", MAX_RANK);
	/* a view of the same rank takes as much of the other as fits in
	 * each dimension (a tile partly filled, or partly taken) */
	if (sr == dr && !d->nperm && (src->kind == E_VIEW || dst->kind == E_VIEW)) {
		emit_indent(em);
		fprintf(o, "\tfor (int k_ = 0; k_ < %d; k_++)\n", sr);
		emit_indent(em);
		fputs("\t\tif (sd_[k_] > dd_[k_])\n", o);
		emit_indent(em);
		fputs("\t\t\tsd_[k_] = dd_[k_];\n", o);
	}
	emit_indent(em);
	fprintf(o, "\tfor (int k_ = 0; k_ < %d; k_++)\n", sr);
	emit_indent(em);
	fputs("\t\tn_ *= sd_[k_];\n", o);
	emit_indent(em);
	fprintf(o, "\tfor (int k_ = 0; k_ < %d; k_++)\n", dr);
	emit_indent(em);
	fputs("\t\tm_ *= dd_[k_];\n", o);
	/* same rank and each dimension fits: element (i, j) goes to (i, j);
	 * otherwise the elements in row-major order */
	emit_indent(em);
	fputs("\tint fit_ = ", o);
	if (d->npad) {
		fputs("1", o);
	} else if (d->nperm) {
		fputs("n_ == m_", o);
	} else if (sr == dr) {
		fputs("1", o);
		for (k = 0; k < sr; k++)
			fprintf(o, " && sd_[%d] <= dd_[%d]", k, k);
	} else {
		fputs("0", o);
	}
	fputs(";\n", o);
	emit_indent(em);
	if (em->device)
		/* a shape mismatch faults at this line */
		fputs("\tif (!fit_ && n_ > m_)\n\t\tNPU_CO_TRAP();\n", o);
	else
		fprintf(o, "\tif (!fit_ && n_ > m_) {\n\t\tnpu_co_bad_copy(%s, %d, n_, m_);\n"
			"\t\tnpu__st = NPU_ERROR_INVALID_VALUE;\n\t\tgoto npu__out;\n"
			"\t}\n", emit_path_literal(), d->loc.line);
	if (d->npad) {
		/* dma.pad: the destination is the padding value first */
		emit_indent(em);
		fputs("\tfor (long long i_ = 0; i_ < m_; i_++) {\n", o);
		emit_indent(em);
		fputs("\t\tlong long r_ = i_, do_;\n\n", o);
		emit_unravel(em, dr, "dd_");
		emit_op_offset(em, dst, "do_", d->loc.line);
		emit_indent(em);
		fprintf(o, "\t\t%s[do_] = ", ds->cname);
		emit_stored(em, ds->type.elem, d->padval);
		fputs(";\n", o);
		emit_indent(em);
		fputs("\t}\n", o);
	}
	emit_indent(em);
	fputs("\tfor (long long i_ = 0; i_ < n_; i_++) {\n", o);
	emit_indent(em);
	fputs("\t\tlong long r_ = i_, so_, do_;\n\n", o);
	emit_unravel(em, sr, "sd_");
	emit_op_offset(em, src, "so_", d->loc.line);
	for (k = 0; k < d->npad; k++) {
		emit_indent(em);
		fprintf(o, "\t\tj_[%d] = %d + j_[%d] * %lld;\n", k, d->pad[0][k], k,
			(long long)d->pad[2][k] + 1);
	}
	if (d->nperm) {
		/* dma.transp: destination index k is source index perm[k] */
		emit_indent(em);
		fputs("\t\t{\n", o);
		emit_indent(em);
		fprintf(o, "\t\t\tlong long t_[%d] = { ", MAX_RANK);
		for (k = 0; k < d->nperm; k++)
			fprintf(o, "%sj_[%d]", k ? ", " : "", d->perm[k]);
		fputs(" };\n", o);
		emit_indent(em);
		fprintf(o, "\t\t\tfor (int k_ = 0; k_ < %d; k_++)\n", d->nperm);
		emit_indent(em);
		fputs("\t\t\t\tj_[k_] = t_[k_];\n", o);
		emit_indent(em);
		fputs("\t\t}\n", o);
	}
	emit_indent(em);
	fputs("\t\tif (!fit_) {\n", o);
	emit_indent(em);
	fputs("\t\t\tr_ = i_;\n", o);
	emit_unravel(em, dr, "dd_");
	emit_indent(em);
	fputs("\t\t}\n", o);
	emit_op_offset(em, dst, "do_", d->loc.line);
	emit_indent(em);
	fprintf(o, "\t\t%s[do_] = %s[so_];\n", ds->cname, ss->cname);
	emit_indent(em);
	fputs("\t}\n", o);
	emit_indent(em);
	fputs("}\n", o);
}

/* A fragment's cells: f16/bf16 bits in 16-bit cells, s8 in 8-bit ones,
 * f32 and s32 (accumulators too) in 32-bit ones (npu.rst, "Tile
 * registers") */
static const char *mma_esize(enum elem e)
{
	if (e == EL_F16 || e == EL_BF16)
		return "NPU_TILE_E16";
	return e == EL_S8 ? "NPU_TILE_E8" : "NPU_TILE_E32";
}

static const char *mma_ctype(enum elem e)
{
	if (e == EL_F16 || e == EL_BF16)
		return "uint16_t";
	if (e == EL_S8)
		return "int8_t";
	return e == EL_S32 ? "int32_t" : "float";
}

static const char *mma_op_name(enum elem e)
{
	switch (e) {
	case EL_F16: return "npu_mma_f16";
	case EL_BF16: return "npu_mma_bf16";
	case EL_S8: return "npu_mma_s8";
	case EL_S32: return "npu_mma_s32";
	default: return "npu_mma_f32";
	}
}

/* the thread's staging tile in the scratchpad, as T *st_ */
static void emit_mma_stage(struct emitter *em, const char *ctype)
{
	emit_indent(em);
	fprintf(em->o, "\t%s *const st_ = (%s *)(npu__scratch + %ldUL + "
		"npu_thread_index() * %dUL);\n", ctype, ctype,
		em->kernel->mma_stage, MMA_STAGE_BYTES);
}

/* the element loop over a 2-D operand: j_[0], j_[1] and its offset o_ */
static void emit_mma_loop(struct emitter *em, const struct node *e, int line)
{
	FILE *o = em->o;
	int k;

	emit_indent(em);
	fputs("\tlong long sd_[] = { ", o);
	for (k = 0; k < 2; k++) {
		fputs(k ? ", " : "", o);
		emit_op_dim(em, e, k);
	}
	fprintf(o, " }, j_[%d] = { 0 };\n", MAX_RANK);
	emit_indent(em);
	fputs("\tfor (long long i_ = 0; i_ < sd_[0] * sd_[1]; i_++) {\n", o);
	emit_indent(em);
	fputs("\t\tlong long r_ = i_, o_;\n\n", o);
	emit_unravel(em, 2, "sd_");
	emit_op_offset(em, e, "o_", line);
}

/* A (column-major: stored K x M) or B (row-major: stored N x K) turned
 * into the tile the engine multiplies, through the staging tile */
static void emit_mma_transpose(struct emitter *em, int tile, enum elem e, int to)
{
	emit_indent(em);
	fputs("\t{\n", em->o);
	em->indent++;
	emit_mma_stage(em, mma_ctype(e));
	emit_indent(em);
	fprintf(em->o, "\tnpu_tile_store(%d, st_, %d * sizeof(*st_), %s);\n",
		tile, MMA_TILE, mma_esize(e));
	emit_indent(em);
	fprintf(em->o, "\tnpu_tile_load_t(%d, st_, %d * sizeof(*st_), %s);\n",
		to, MMA_TILE, mma_esize(e));
	em->indent--;
	emit_indent(em);
	fputs("\t}\n", em->o);
}

/* a memory-held fragment's cells (kernel_gen.c declares them): the
 * union member of an element type */
static const char *frag_cell(enum elem e)
{
	if (e == EL_F16 || e == EL_BF16)
		return "h";
	if (e == EL_S8)
		return "b";
	return e == EL_S32 ? "i" : "f";
}

/* tile (ti, tj) of a memory-held fragment, through the staging tile st_
 * (of element type e), into tile register `tile` (transposed if
 * `transp`), or out of it */
static void emit_frag_tile(struct emitter *em, int tile, enum elem e,
			   const char *ti, const char *tj, int dir, bool transp)
{
	FILE *o = em->o;

	if (dir < 0) {
		emit_indent(em);
		fprintf(o, "\tnpu_tile_store(%d, st_, %d * sizeof(*st_), %s);\n",
			tile, MMA_TILE, mma_esize(e));
	}
	emit_indent(em);
	fprintf(o, "\tfor (int r_ = 0; r_ < %d; r_++)\n", MMA_TILE);
	emit_indent(em);
	fprintf(o, "\t\tfor (int q_ = 0; q_ < %d; q_++)\n", MMA_TILE);
	emit_indent(em);
	if (dir > 0)
		fprintf(o, "\t\t\tst_[r_ * %d + q_] = npu__frag%d[(%s * %d + r_) * %d "
			"+ %s * %d + q_].%s;\n", MMA_TILE, tile, ti, MMA_TILE,
			frag_row_cells(em->kernel, tile), tj, MMA_TILE, frag_cell(e));
	else
		fprintf(o, "\t\t\tnpu__frag%d[(%s * %d + r_) * %d + %s * %d + q_].%s "
			"= st_[r_ * %d + q_];\n", tile, ti, MMA_TILE,
			frag_row_cells(em->kernel, tile), tj, MMA_TILE, frag_cell(e), MMA_TILE);
	if (dir > 0) {
		emit_indent(em);
		fprintf(o, "\tnpu_tile_load%s(%d, st_, %d * sizeof(*st_), %s);\n",
			transp ? "_t" : "", tile, MMA_TILE, mma_esize(e));
	}
}

/* tile (ti, tj) of data an mma reads directly (a shared operand larger
 * than a tile), through the staging tile st_, into tile register `tile`:
 * the elements of the data's operand (dma.copy's offsets and checks),
 * zero beyond it */
static void emit_data_tile(struct emitter *em, const struct node *ld,
			   const char *ti, const char *tj, bool transp)
{
	FILE *o = em->o;
	const struct node *d = ld->kids[1];
	enum elem e = ld->ety.elem;
	int k;

	emit_indent(em);
	fputs("	long long sd_[] = { ", o);
	for (k = 0; k < 2; k++) {
		fputs(k ? ", " : "", o);
		emit_op_dim(em, d, k);
	}
	fprintf(o, " }, j_[%d] = { 0 };\n", MAX_RANK);
	emit_indent(em);
	fprintf(o, "\tfor (long long i_ = 0; i_ < %d; i_++) {\n", MMA_TILE * MMA_TILE);
	emit_indent(em);
	fputs("\t\tlong long o_;\n\n", o);
	emit_indent(em);
	fputs("\t\tst_[i_] = 0;\n", o);
	emit_indent(em);
	fprintf(o, "\t\tj_[0] = %s * %d + i_ / %d;\n", ti, MMA_TILE, MMA_TILE);
	emit_indent(em);
	fprintf(o, "\t\tj_[1] = %s * %d + i_ %% %d;\n", tj, MMA_TILE, MMA_TILE);
	emit_indent(em);
	fputs("\t\tif (j_[0] >= sd_[0] || j_[1] >= sd_[1])\n", o);
	emit_indent(em);
	fputs("\t\t\tcontinue;\n", o);
	emit_op_offset(em, d, "o_", ld->loc.line);
	emit_indent(em);
	fprintf(o, "\t\tst_[i_] = (%s)%s[o_];\n", mma_ctype(e), d->sym->cname);
	emit_indent(em);
	fputs("\t}\n", o);
	emit_indent(em);
	fprintf(o, "\tnpu_tile_load%s(%d, st_, %d * sizeof(*st_), %s);\n",
		transp ? "_t" : "", ld->kids[0]->sym->tile, MMA_TILE, mma_esize(e));
}

/* One operand tile (row ti, column tj of the stored operand) of a tiled
 * mma into its tile register: staged from the thread's memory (in_mem) or
 * from data given to the mma (data), else transposed in place into tile
 * register scratch when stored transposed. */
static void emit_mma_operand(struct emitter *em, const struct node *m,
			     bool in_mem, const struct node *data, int tile,
			     bool transp, const char *ti, const char *tj,
			     int scratch)
{
	const char *i = transp ? tj : ti, *j = transp ? ti : tj;

	if (in_mem || data) {
		emit_indent(em);
		fputs("\t{\n", em->o);
		em->indent++;
		emit_mma_stage(em, mma_ctype(m->ety.elem));
		if (data)
			emit_data_tile(em, data, i, j, transp);
		else
			emit_frag_tile(em, tile, m->ety.elem, i, j, 1, transp);
		em->indent--;
		emit_indent(em);
		fputs("\t}\n", em->o);
	} else if (transp) {
		emit_mma_transpose(em, tile, m->ety.elem, scratch);
	}
}

/*
 * An mma with an operand held in memory: C's tiles one by one, each
 * through C's tile register, K's tiles (in [[schedule]]'s order if
 * given) through A's and B's registers; an operand in a register is one
 * tile (at most 16 x 16), used as the register-only mma uses it.
 */
static void emit_mma_tiled(struct emitter *em, const struct node *m)
{
	FILE *o = em->o;
	const struct sym *c = m->kids[0]->sym, *a = m->kids[1]->sym,
			 *b = m->kids[2]->sym;
	struct kernel *k = em->kernel;
	bool cm = frag_in_memory(k, c->tile), am = frag_in_memory(k, a->tile),
	     bm = frag_in_memory(k, b->tile);
	const struct node *ad = m->mma_loads[0] && m->mma_loads[0]->mma_direct ?
				m->mma_loads[0] : NULL;
	const struct node *bd = m->mma_loads[1] && m->mma_loads[1]->mma_direct ?
				m->mma_loads[1] : NULL;
	int tiles[3], i, ra, rb;

	for (i = 0; i < 3; i++)
		tiles[i] = (m->mma_mnk[i] + MMA_TILE - 1) / MMA_TILE;
	if (m->schedule) {
		emit_indent(em);
		fputs("\tstatic const int ko_[] = { ", o);
		for (i = 0; i < m->schedule->nkids; i++)
			fprintf(o, "%s%lld", i ? ", " : "", m->schedule->kids[i]->ival);
		fputs(" };\n", o);
	}
	emit_indent(em);
	fprintf(o, "\tfor (int mi_ = 0; mi_ < %d; mi_++)\n", tiles[0]);
	emit_indent(em);
	fprintf(o, "\tfor (int ni_ = 0; ni_ < %d; ni_++) {\n", tiles[1]);
	em->indent++;
	if (cm) {
		emit_indent(em);
		fputs("\t{\n", o);
		em->indent++;
		emit_mma_stage(em, mma_ctype(c->type.elem));
		emit_frag_tile(em, c->tile, c->type.elem, "mi_", "ni_", 1, false);
		em->indent--;
		emit_indent(em);
		fputs("\t}\n", o);
	}
	emit_indent(em);
	fprintf(o, "\tfor (int k_ = 0; k_ < %d; k_++) {\n", tiles[2]);
	em->indent++;
	emit_indent(em);
	fprintf(o, "\tconst int ki_ = %s;\n", m->schedule && m->schedule->nkids ==
		tiles[2] ? "ko_[k_]" : "k_");
	emit_indent(em);
	fputs("\t(void)ki_;\n", o);
	/* A is stored [M, K] (column-major: [K, M]), B [K, N] (row-major:
	 * [N, K]); a stored-transposed operand loads transposed */
	emit_mma_operand(em, m, am, ad, a->tile, m->ival & 1, "mi_", "ki_",
			 MMA_FRAG_TILES);
	emit_mma_operand(em, m, bm, bd, b->tile, m->ival & 2, "ki_", "ni_",
			 MMA_FRAG_TILES + 1);
	ra = !am && !ad && (m->ival & 1) ? MMA_FRAG_TILES : a->tile;
	rb = !bm && !bd && (m->ival & 2) ? MMA_FRAG_TILES + 1 : b->tile;
	emit_indent(em);
	fprintf(o, "\t%s(%d, %d, %d);\n", mma_op_name(m->ety.elem), c->tile, ra, rb);
	em->indent--;
	emit_indent(em);
	fputs("\t}\n", o);
	if (cm) {
		emit_indent(em);
		fputs("\t{\n", o);
		em->indent++;
		emit_mma_stage(em, mma_ctype(c->type.elem));
		emit_frag_tile(em, c->tile, c->type.elem, "mi_", "ni_", -1, false);
		em->indent--;
		emit_indent(em);
		fputs("\t}\n", o);
	}
	em->indent--;
	emit_indent(em);
	fputs("\t}\n", o);
}

/*
 * mma statements on the tensor engine: a fragment is a tile register of
 * the thread (16 x 16, zero beyond the operand's rows and columns);
 * loads and stores go through the thread's staging tile in the
 * scratchpad (tiles reach only the scratchpad), with the element loop of
 * dma.copy, so views and their bounds checks are dma.copy's.
 */
static void emit_mma(struct emitter *em, const struct node *m)
{
	FILE *o = em->o;
	const struct sym *c = m->kids[0]->sym, *a, *b;
	const struct node *d;
	enum elem de, fe;
	bool mem;
	int i;

	fputs("{\n", o);
	mem = frag_in_memory(em->kernel, c->tile);
	switch (m->flag) {
	case MMA_FILL:
		emit_indent(em);
		if (mem) {
			/* every cell of the fragment's memory */
			fprintf(o, "\tfor (int i_ = 0; i_ < %ld; i_++)\n",
				frag_cells(em->kernel, c->tile));
			emit_indent(em);
			fprintf(o, "\t\tnpu__frag%d[i_].%s = (%s)(", c->tile,
				frag_cell(c->type.elem), mma_ctype(c->type.elem));
			emit_expr(em, m->kids[1]);
			fputs(");\n", o);
			break;
		}
		if (c->type.elem == EL_S32)
			fprintf(o, "\tnpu_tile_fill(%d, (int32_t)(", c->tile);
		else
			fprintf(o, "\tnpu_tile_fill_f32(%d, (float)(", c->tile);
		emit_expr(em, m->kids[1]);
		fprintf(o, ")%s);\n", c->type.elem == EL_S32 ? ", NPU_TILE_E32" : "");
		break;
	case MMA_LOAD:
		d = m->kids[1];
		de = d->sym->type.elem;
		/* an operand's cells are its data's; an accumulator's f32/s32 */
		fe = c->frag_acc ? c->type.elem : m->ety.elem;
		if (mem) {
			/* zero beyond the operand, as a tile register is */
			emit_indent(em);
			fprintf(o, "\tfor (int i_ = 0; i_ < %ld; i_++)\n",
				frag_cells(em->kernel, c->tile));
			emit_indent(em);
			fprintf(o, "\t\tnpu__frag%d[i_].%s = 0;\n", c->tile, frag_cell(fe));
			emit_mma_loop(em, d, m->loc.line);
			emit_indent(em);
			fprintf(o, "\t\tnpu__frag%d[j_[0] * %d + j_[1]].%s = ", c->tile,
				frag_row_cells(em->kernel, c->tile), frag_cell(fe));
		} else {
			emit_mma_stage(em, mma_ctype(fe));
			emit_indent(em);
			fprintf(o, "\tfor (int i_ = 0; i_ < %d; i_++)\n", MMA_TILE * MMA_TILE);
			emit_indent(em);
			fputs("\t\tst_[i_] = 0;\n", o);
			emit_mma_loop(em, d, m->loc.line);
			emit_indent(em);
			fprintf(o, "\t\tst_[j_[0] * %d + j_[1]] = ", MMA_TILE);
		}
		/* an accumulator's f16/bf16 data widens to its f32 cells */
		if (c->frag_acc && elem_is_half(de))
			fprintf(o, "%s(%s[o_]);\n", half_to_f32(de), d->sym->cname);
		else
			fprintf(o, "(%s)%s[o_];\n", mma_ctype(fe), d->sym->cname);
		emit_indent(em);
		fputs("\t}\n", o);
		if (mem)
			break;
		emit_indent(em);
		fprintf(o, "\tnpu_tile_load(%d, st_, %d * sizeof(*st_), %s);\n",
			c->tile, MMA_TILE, mma_esize(fe));
		break;
	case MMA_EXEC:
		a = m->kids[1]->sym;
		b = m->kids[2]->sym;
		/* A or B given as data: loaded into its own fragment first
		 * (a tile at a time as the mma goes if larger than a tile) */
		for (i = 0; i < 2; i++)
			if (m->mma_loads[i] && !m->mma_loads[i]->mma_direct) {
				em->indent++;
				emit_indent(em);
				emit_mma(em, m->mma_loads[i]);
				em->indent--;
			}
		if (mem || frag_in_memory(em->kernel, a->tile) ||
		    frag_in_memory(em->kernel, b->tile) ||
		    (m->mma_loads[0] && m->mma_loads[0]->mma_direct) ||
		    (m->mma_loads[1] && m->mma_loads[1]->mma_direct)) {
			emit_mma_tiled(em, m);
			break;
		}
		if (m->ival & 1)
			emit_mma_transpose(em, a->tile, m->ety.elem, MMA_FRAG_TILES);
		if (m->ival & 2)
			emit_mma_transpose(em, b->tile, m->ety.elem, MMA_FRAG_TILES + 1);
		emit_indent(em);
		fprintf(o, "\t%s(%d, %d, %d);\n", mma_op_name(m->ety.elem), c->tile,
			m->ival & 1 ? MMA_FRAG_TILES : a->tile,
			m->ival & 2 ? MMA_FRAG_TILES + 1 : b->tile);
		break;
	case MMA_STORE:
		d = m->kids[1];
		de = d->sym->type.elem;
		if (!mem) {
			emit_mma_stage(em, mma_ctype(c->type.elem));
			emit_indent(em);
			fprintf(o, "\tnpu_tile_store(%d, st_, %d * sizeof(*st_), "
				"NPU_TILE_E32);\n", c->tile, MMA_TILE);
		}
		emit_mma_loop(em, d, m->loc.line);
		emit_indent(em);
		fprintf(o, "\t\t%s[o_] = ", d->sym->cname);
		if (elem_is_half(de))
			fprintf(o, "%s(", half_from_f32(de));
		else
			fprintf(o, "(%s)(", c_scalar_type(de));
		/* .transp: element (i, j) of the data is (j, i) of C */
		if (mem)
			fprintf(o, "npu__frag%d[j_[%d] * %d + j_[%d]].%s);\n", c->tile,
				m->ival ? 1 : 0, frag_row_cells(em->kernel, c->tile), m->ival ? 0 : 1,
				frag_cell(c->type.elem));
		else
			fprintf(o, "st_[j_[%d] * %d + j_[%d]]);\n", m->ival ? 1 : 0,
				MMA_TILE, m->ival ? 0 : 1);
		emit_indent(em);
		fputs("\t}\n", o);
		break;
	}
	emit_indent(em);
	fputs("}\n", o);
}

/* does writing s's data touch memory other threads see: shared data and
 * the host's (a kernel's local data is private to each thread) */
static bool visible(const struct sym *s)
{
	return s->level == 0 || s->storage == ST_SHARED;
}

/* the C type of a pointer to a slot's or a select's data */
static const char *ptr_ctype(const struct sym *p)
{
	return p->type.kind == TY_SPAN ? elem_ctype(p->type.elem) : "void";
}

/* what a select operand points at: data, or the data of a future */
static const char *data_cname(const struct sym *s)
{
	return s->kind == SY_FUTURE ? s->target->cname : s->cname;
}

/* p (declared, or set) = operand i of select(i, ...); an index out of
 * [0, n) faults (a kernel) or fails the call (host) */
static void emit_select(struct emitter *em, const struct node *e,
			const struct sym *p, bool declare)
{
	FILE *o = em->o;
	int i, n = e->nkids - 1;

	if (declare) {
		fprintf(o, "%s *%s = NULL;\n", ptr_ctype(p), p->cname);
		emit_indent(em);
		fprintf(o, "(void)%s;\n", p->cname);
		emit_indent(em);
	}
	fputs("{\n", o);
	emit_indent(em);
	fputs("\tlong long s_ = (long long)(", o);
	emit_expr(em, e->kids[0]);
	fputs(");\n", o);
	emit_indent(em);
	if (em->device)
		fprintf(o, "\tif (s_ < 0 || s_ >= %d)\n\t\tNPU_CO_TRAP();\n", n);
	else
		fprintf(o, "\tif (s_ < 0 || s_ >= %d) {\n\t\tfflush(stdout);\n"
			"\t\tfprintf(stderr, \"%%s:%%d: error: the select factor %%lld "
			"is not in [0, %d)\\n\", %s, %d, s_);\n"
			"\t\tnpu__st = NPU_ERROR_INVALID_VALUE;\n\t\tgoto npu__out;\n\t}\n",
			n, n, emit_path_literal(), e->loc.line);
	emit_indent(em);
	fprintf(o, "\t%s = ", p->cname);
	for (i = 1; i < n; i++)
		fprintf(o, "s_ == %d ? %s : ", i - 1, data_cname(e->kids[i]->sym));
	fprintf(o, "%s;\n", data_cname(e->kids[n]->sym));
	emit_indent(em);
	fputs("}\n", o);
}

/* f = dma.any: the slot points at its own buffer, if it has one */
static void emit_dma_any(struct emitter *em, const struct node *s)
{
	const struct sym *p = s->kids[0]->sym->target;
	FILE *o = em->o;

	if (s->nkids > 1) {
		if (em->device)
			kernel_emit_span_decl(em, s->kids[1]);
		else
			host_emit_span_decl(em, s->kids[1]);
		emit_indent(em);
	}
	fprintf(o, "%s *%s = %s;\n", ptr_ctype(p), p->cname,
		s->nkids > 1 ? s->kids[1]->sym->cname : "NULL");
	emit_indent(em);
	fprintf(o, "(void)%s;\n", p->cname);
}

/* rotate(a, b, c): a takes b's data, b c's, c a's (swap: two) */
static void emit_rotate(struct emitter *em, const struct node *s)
{
	const struct sym *first = s->kids[0]->sym->target;
	FILE *o = em->o;
	int i;

	fprintf(o, "{\n");
	emit_indent(em);
	fprintf(o, "\t%s *t_ = %s;\n", ptr_ctype(first), first->cname);
	for (i = 0; i + 1 < s->nkids; i++) {
		emit_indent(em);
		fprintf(o, "\t%s = %s;\n", s->kids[i]->sym->target->cname,
			s->kids[i + 1]->sym->target->cname);
	}
	emit_indent(em);
	fprintf(o, "\t%s = t_;\n", s->kids[s->nkids - 1]->sym->target->cname);
	emit_indent(em);
	fputs("}\n", o);
}

/* after a copy named by a slot: the slot points at the copy's data */
static void emit_slot_after_dma(struct emitter *em, const struct node *d)
{
	const struct sym *f = d->kids[2]->sym, *data = d->kids[1]->sym;
	FILE *o = em->o;

	if (data == f->target)
		return;
	emit_indent(em);
	if (d->slot_op == 1)
		fprintf(o, "%s *%s = %s;\n", ptr_ctype(f->target), f->target->cname,
			data->cname);
	else
		fprintf(o, "%s = %s;\n", f->target->cname, data->cname);
	emit_indent(em);
	fprintf(o, "(void)%s;\n", f->target->cname);
}

static void emit_event_wait(struct emitter *em, const struct node *r);

/* wait f, e (and a copy's `after f`): a tile DMA future until its copies
 * are counted; other dma.copy.async copies at once (allowed to complete
 * early): waiting for them has nothing left to do; events below */
static void emit_wait(struct emitter *em, const struct node *s)
{
	FILE *o = em->o;
	int i;

	fputs("{\n", o);
	for (i = 0; i < s->nkids; i++) {
		const struct sym *f = s->kids[i]->sym;

		if (f && f->kind == SY_EVENT)
			emit_event_wait(em, s->kids[i]);
		if (f && f->kind == SY_FUTURE && f->tdma && tdma_block_thread(em)) {
			emit_indent(em);
			fputs("\tnpu_tdma_wait(", o);
			emit_tdma_barrier(em, f);
			fprintf(o, ", npu__tc_%s);\n", f->tdma_first->cname);
		}
	}
	emit_indent(em);
	fputs("}\n", o);
}

/* In a block with threads, block-level side effects on visible memory are
 * done once, by thread 0; everything else (locals, local data) by every
 * thread alike, so that each thread's private copy holds the values the
 * block computed. */
static bool single_thread(struct emitter *em, const struct node *s)
{
	const struct node *e;

	if (!em->device || s->level != 1 || !em->kernel->nthread_pars ||
	    em->kernel->grid_is_threads)
		return false;
	switch (s->kind) {
	case N_PRINT:
		return true;
	case N_TRIGGER:
		/* a local event is each thread's own */
		return s->kids[0]->sym->storage != ST_LOCAL;
	case N_DMA:
		return s->kids[1]->kind != N_SPANDECL && visible(s->kids[1]->sym);
	case N_ASSIGN:
		return s->kids[0]->kind == E_AT && visible(s->kids[0]->sym);
	case N_EXPRSTMT:
		e = s->kids[0];
		/* a device function: every thread calls it, as each of a
		 * CUDA block's threads would */
		if (e->kind == E_DEVCALL)
			return false;
		if (e->kind == E_CALL)
			return e->nkids == 2 && e->kids[0]->kind == E_AT &&
			       visible(e->kids[0]->sym);
		return e->kids[0]->kind == E_AT && visible(e->kids[0]->sym);
	default:
		return false;
	}
}

/* an atomic or ++/-- on memory other threads see, inside e */
static const struct node *shared_effect(const struct node *e)
{
	const struct node *f;
	int i;

	if (!e)
		return NULL;
	if (e->kind == E_CALL && strncmp(e->name, "__atomic_", 9) == 0 &&
	    visible(e->kids[0]->sym))
		return e;
	if (e->kind == E_INCDEC && e->kids[0]->kind == E_AT &&
	    visible(e->kids[0]->sym))
		return e;
	for (i = 0; i < e->nkids; i++) {
		f = shared_effect(e->kids[i]);
		if (f)
			return f;
	}
	return NULL;
}

/* Block-level code that every thread runs must not change memory the
 * others see: it would happen once per thread. */
static void check_every_thread(struct emitter *em, const struct node *s)
{
	const struct node *e = NULL;
	int i;

	if (!em->device || s->level != 1 || !em->kernel->nthread_pars ||
	    em->kernel->grid_is_threads || single_thread(em, s))
		return;
	switch (s->kind) {
	case N_BLOCK:
		if (s->flag)
			for (i = 0; i < s->nkids && !e; i++)
				e = s->kids[i]->nkids ? shared_effect(s->kids[i]->kids[0]) : NULL;
		break;
	case N_ASSIGN:
		e = shared_effect(s->kids[1]);
		break;
	case N_IF:
	case N_WHILE:
	case N_RETURN:
		e = s->nkids ? shared_effect(s->kids[0]) : NULL;
		break;
	default:
		break;
	}
	if (e)
		diag_error(e->loc, "not supported yet: an atomic or ++/-- on shared "
			   "data in block-level code whose result every thread "
			   "needs");
}

/* e[i][j]: its slot, row-major over the array's extents, each index
 * checked (a kernel faults at the line) */
static void emit_event_index(struct emitter *em, const struct node *r)
{
	const struct sym *s = r->sym;
	int k;

	for (k = 0; k < r->index->nkids; k++)
		fputc('(', em->o);
	for (k = 0; k < r->index->nkids; k++) {
		if (k)
			fprintf(em->o, " * %ldL + ", s->arr[k]);
		fputs("NPU_CO_IX(", em->o);
		emit_expr(em, r->index->kids[k]);
		fprintf(em->o, ", %ld))", s->arr[k]);
	}
	/* fewer subscripts than extents: the first of the slots they
	 * select */
	for (; k < s->narr; k++)
		fprintf(em->o, " * %ldL", s->arr[k]);
}

/* the slots an event operand names: the first (C), how many (result);
 * e (every slot of an array), e[i][j], e[i] of e[2][2] (a row) */
static long emit_event_slots(struct emitter *em, const struct node *r)
{
	const struct sym *s = r->sym;
	long n = 1;
	int k;

	if (r->kind != E_AT) {
		fputs("0", em->o);
		return s->event_slots;
	}
	emit_event_index(em, r);
	for (k = r->index->nkids; k < s->narr; k++)
		n *= s->arr[k];
	return n;
}

/* wait for slot s_'s generation g_: a shared event's counter is another
 * thread's to advance; a local event's only this thread's, so one not
 * published yet never would be (a fault at the line, not a hang) */
static void emit_event_spin(struct emitter *em, const struct sym *s, const char *ind)
{
	FILE *o = em->o;

	emit_indent(em);
	fprintf(o, "%s%s ((int)(__atomic_load_n(&%s[s_], __ATOMIC_ACQUIRE) - g_) <= 0)\n",
		ind, s->storage == ST_LOCAL ? "if" : "while", s->cname);
	emit_indent(em);
	fprintf(o, "%s\t%s;\n", ind, s->storage == ST_LOCAL ? "NPU_CO_TRAP()" : "");
}

/* an event's counter: the number of generations published; that of
 * e.at(order) is slot order % N */
static void emit_event_slot(struct emitter *em, const struct node *r)
{
	const struct sym *s = r->sym;

	fprintf(em->o, "%s[(unsigned long long)(", s->cname);
	emit_expr(em, r->kids[0]);
	fprintf(em->o, ") %% %ldu]", s->event_slots);
}

/* wait e, e[i]: the thread's next generation of that slot (its own count
 * of the waits it did); wait e.at(order): generation order / N of slot
 * order % N. Either blocks until the slot's counter is past it. */
static void emit_event_wait(struct emitter *em, const struct node *r)
{
	const struct sym *s = r->sym;
	FILE *o = em->o;

	emit_indent(em);
	fputs("\t{\n", o);
	emit_indent(em);
	if (r->kind == E_AT && r->ival == 1) {
		fputs("\t\tunsigned long long o_ = (unsigned long long)(", o);
		emit_expr(em, r->kids[0]);
		fprintf(o, ");\n");
		emit_indent(em);
		fprintf(o, "\t\tunsigned s_ = (unsigned)(o_ %% %ldu), g_ = (unsigned)(o_ / %ldu);\n",
			s->event_slots, s->event_slots);
	} else {
		/* each slot named (of an array, a row, one): its next
		 * generation */
		long n;

		fputs("\t\tunsigned f_ = (unsigned)(", o);
		n = emit_event_slots(em, r);
		fputs(");\n", o);
		emit_indent(em);
		fprintf(o, "\t\tfor (unsigned s_ = f_; s_ < f_ + %ldu; s_++) {\n", n);
		emit_indent(em);
		fprintf(o, "\t\t\tunsigned g_ = %s_gen[s_]++;\n", s->cname);
		emit_event_spin(em, s, "\t\t\t");
		emit_indent(em);
		fputs("\t\t}\n", o);
		emit_indent(em);
		fputs("\t}\n", o);
		return;
	}
	emit_event_spin(em, s, "\t\t");
	emit_indent(em);
	fputs("\t}\n", o);
}

void emit_stmt(struct emitter *em, const struct node *s)
{
	FILE *o = em->o;
	int i;
	bool once = single_thread(em, s);

	check_every_thread(em, s);
	elem_cnames(em, s);

	if (s->kind == N_BLOCK && s->flag) {
		for (i = 0; i < s->nkids; i++) {
			const struct node *d = s->kids[i];

			emit_line(em, d->loc);
			emit_indent(em);
			if (d->kind == N_DECL)
				emit_scalar_decl(em, d);
			else if (em->device)
				kernel_emit_span_decl(em, d);
			else
				host_emit_span_decl(em, d);
		}
		goto check;
	}
	emit_line(em, s->loc);
	emit_indent(em);
	/* the chosen destination: every thread's own pointer */
	if (s->kind == N_DMA && s->after) {
		emit_wait(em, s->after);
		emit_indent(em);
	}
	if (s->kind == N_DMA && s->kids[1]->kind == E_SELECT) {
		emit_select(em, s->kids[1], s->kids[1]->sym, true);
		emit_indent(em);
	}
	if (once)
		fputs("if (npu_thread_index() == 0) ", o);
	switch (s->kind) {
	case N_DMAANY:
		emit_dma_any(em, s);
		break;
	case N_ROTATE:
		emit_rotate(em, s);
		break;
	case N_BLOCK:
		fputs("{\n", o);
		em->indent++;
		emit_block(em, s);
		em->indent--;
		emit_indent(em);
		fputs("}\n", o);
		break;
	case N_ASSIGN:
		if (s->kids[1]->kind == E_SELECT) {
			emit_select(em, s->kids[1], s->kids[1]->sym, s->slot_op == 1);
			break;
		}
		if (half_lvalue(s->kids[0])) {
			emit_half_assign(em, s);
			break;
		}
		if (s->kids[0]->sym && elem_bits(s->kids[0]->sym->type.elem)) {
			enum elem el = s->kids[0]->sym->type.elem;
			size_t n = strlen(s->name);

			/* lhs op= rhs: lhs = bits(lhs op rhs) */
			emit_expr(em, s->kids[0]);
			fputs(" = ", o);
			emit_bits_open(em, el);
			if (n > 1) {
				emit_expr(em, s->kids[0]);
				fprintf(o, " %.*s (", (int)(n - 1), s->name);
				emit_expr(em, s->kids[1]);
				fputc(')', o);
			} else {
				emit_expr(em, s->kids[1]);
			}
			emit_bits_close(em, el);
			fputs(";\n", o);
			break;
		}
		emit_expr(em, s->kids[0]);
		fprintf(o, " %s ", s->name);
		emit_expr(em, s->kids[1]);
		fputs(";\n", o);
		break;
	case N_EXPRSTMT:
		fputs("(void)", o);
		emit_expr(em, s->kids[0]);
		fputs(";\n", o);
		break;
	case N_PRINT:
		emit_print(em, s);
		break;
	case N_SHAPEDECL:	/* a shape has no storage */
		break;
	case N_YIELD:
		fprintf(o, "goto npu__yield_%d_%d;\n", s->callee->loc.line,
			s->callee->loc.col);
		break;
	case N_ASSERT:
		if (s->flag)	/* held at compile time */
			break;
		fputs("if (!(", o);
		emit_expr(em, s->kids[0]);
		if (em->device)
			/* faults at the assertion's line */
			fputs("))\n\tNPU_CO_TRAP();\n", o);
		else
			fprintf(o, ")) {\n\tfflush(stdout);\n\tfprintf(stderr, \"%%s:%%d: "
				"error: choreo assertion abort: %%s\\n\", %s, %d, \"%s\");\n"
				"\tnpu__st = NPU_ERROR_INVALID_VALUE;\n\tgoto npu__out;\n}\n",
				emit_path_literal(), s->loc.line, s->name);
		break;
	case N_STREAMDECL:
		host_emit_stream_decl(em, s);
		break;
	case N_SYNC:
		if (s->flag == SYNC_FENCE)
			fputs("__sync_synchronize();\n", o);
		else if (s->flag == ST_GLOBAL && !em->device)
			fprintf(o, "if ((npu__st = npu_device_synchronize())) {\n"
				"\tnpu_co_fail(NPU_CO_FILE, %d, npu__st);\n"
				"\tgoto npu__out;\n}\n", s->loc.line);
		else
			fputs(em->device ? "npu_barrier();\n" : ";\n", o);
		break;
	case N_WAIT:
		emit_wait(em, s);
		break;
	case N_TRIGGER:
		fputs("{\n", o);
		/* trigger ... after f: its copies done first (a tile DMA
		 * future's counted; the others copied at once), then the
		 * events published; the path waits where a GPU's barrier
		 * would be signalled by the copy itself */
		if (s->ival) {
			emit_indent(em);
			fputc('\t', o);
			emit_wait(em, s->kids[s->nkids - 1]);
		}
		for (i = 0; i < s->nkids - (s->ival ? 1 : 0); i++) {
			const struct node *r = s->kids[i];
			long n;

			emit_indent(em);
			if (r->kind == E_AT && r->ival == 1) {
				fputs("\t__atomic_fetch_add(&", o);
				emit_event_slot(em, r);
				fputs(", 1u, __ATOMIC_RELEASE);\n", o);
				continue;
			}
			/* each slot named: of an array, a row, one */
			fputs("\t{\n", o);
			emit_indent(em);
			fputs("\t\tlong f_ = (long)(", o);
			n = emit_event_slots(em, r);
			fputs(");\n", o);
			emit_indent(em);
			fprintf(o, "\t\tfor (long e_ = f_; e_ < f_ + %ld; e_++)\n", n);
			emit_indent(em);
			fprintf(o, "\t\t\t__atomic_fetch_add(&%s[e_], 1u, __ATOMIC_RELEASE);\n",
				r->sym->cname);
			emit_indent(em);
			fputs("\t}\n", o);
		}
		emit_indent(em);
		fputs("}\n", o);
		break;
	case N_EVENTS:
		/* the kernel set a shared event's counters when it started;
		 * a local event's are the thread's own, from here */
		fputs(";\n", o);
		for (i = 0; i < s->nkids; i++) {
			const struct sym *e = s->kids[i]->sym;

			if (e->storage == ST_GLOBAL) {
				host_emit_global_event(em, s->kids[i]);
				continue;
			}
			if (e->storage != ST_LOCAL)
				continue;
			emit_indent(em);
			fprintf(o, "unsigned %s[%ld] = { 0 }, %s_gen[%ld] = { 0 };\n",
				e->cname, e->event_slots, e->cname, e->event_slots);
			emit_indent(em);
			fprintf(o, "(void)%s;\n", e->cname);
			emit_indent(em);
			fprintf(o, "(void)%s_gen;\n", e->cname);
			if (e->event_ready) {	/* generation zero published */
				emit_indent(em);
				fprintf(o, "for (int i_ = 0; i_ < %ld; i_++)\n", e->event_slots);
				emit_indent(em);
				fprintf(o, "\t%s[i_] = 1;\n", e->cname);
			}
		}
		break;
	case N_DMA:
		emit_dma(em, s);
		if (s->slot_op)
			emit_slot_after_dma(em, s);
		break;
	case N_MMA:
		emit_mma(em, s);
		break;
	case N_RETURN:
		if (em->device)
			fputs("return;\n", o);
		else
			host_emit_return(em, s);
		break;
	case N_BREAK:
		fputs("break;\n", o);
		break;
	case N_CONTINUE:
		fputs("continue;\n", o);
		break;
	case N_PARALLEL:
		if (em->device)
			kernel_emit_thread_parallel(em, s);
		else
			host_emit_launch(em, s);
		break;
	case N_WITH:
		fputs("{\n", o);
		em->indent++;
		for (i = 0; i < s->kids[0]->nkids; i++) {
			const struct node *names = s->kids[0]->kids[i]->kids[0];
			int k;

			for (k = 0; k < names->nkids; k++) {
				emit_indent(em);
				/* outside foreach a bounded variable is 0 */
				fprintf(o, "const int %s = 0;\n(void)%s;\n",
					names->kids[k]->sym->cname,
					names->kids[k]->sym->cname);
			}
		}
		emit_block(em, s->kids[1]);
		em->indent--;
		emit_indent(em);
		fputs("}\n", o);
		break;
	case N_FOREACH: {
		const struct node *items = s->kids[0];
		int loops = 0, k;

		fputs("{\n", o);
		for (i = 0; i < items->nkids; i++) {
			const struct node *it = items->kids[i];

			if (s->flag) {
				const struct node *names = it->kids[0];

				for (k = 0; k < names->nkids; k++, loops++) {
					const struct sym *v = names->kids[k]->sym;

					emit_indent(em);
					fprintf(o, "for (int %s = 0; %s < (", v->cname, v->cname);
					emit_expr(em, v->ubound);
					fprintf(o, "); %s++)\n", v->cname);
				}
			} else {
				const struct sym *v = it->sym;

				emit_indent(em);
				fprintf(o, "for (int %s = 0", v->cname);
				if (it->nkids > 0 && it->kids[0]->kind != N_BLOCK) {
					fputs(" + (", o);
					emit_expr(em, it->kids[0]);
					fputc(')', o);
				}
				fprintf(o, "; %s < (", v->cname);
				emit_expr(em, v->ubound);
				fputc(')', o);
				if (it->nkids > 1 && it->kids[1]->kind != N_BLOCK) {
					fputs(" + (", o);
					emit_expr(em, it->kids[1]);
					fputc(')', o);
				}
				fprintf(o, "; %s += ", v->cname);
				if (it->nkids > 2 && it->kids[2]->kind != N_BLOCK) {
					fputc('(', o);
					emit_expr(em, it->kids[2]);
					fputs(")", o);
				} else {
					fputs("1", o);
				}
				fputs(")\n", o);
				loops++;
			}
		}
		emit_indent(em);
		fputs("{\n", o);
		em->indent++;
		emit_block(em, s->kids[1]);
		em->indent--;
		emit_indent(em);
		fputs("}\n", o);
		emit_indent(em);
		fputs("}\n", o);
		(void)loops;
		break;
	}
	case N_WHILE:
		fputs("while ", o);
		emit_cond(em, s->kids[0]);
		fputs(" {\n", o);
		em->indent++;
		emit_block(em, s->kids[1]);
		em->indent--;
		emit_indent(em);
		fputs("}\n", o);
		break;
	case N_IF:
		fputs("if ", o);
		emit_cond(em, s->kids[0]);
		fputs(" {\n", o);
		em->indent++;
		emit_block(em, s->kids[1]);
		em->indent--;
		emit_indent(em);
		fputs("}", o);
		if (s->nkids > 2) {
			fputs(" else {\n", o);
			em->indent++;
			emit_block(em, s->kids[2]);
			em->indent--;
			emit_indent(em);
			fputs("}", o);
		}
		fputc('\n', o);
		/* after inthreads (a split body's loops meet after it) */
		if (s->ival == 2 && em->device && !s->split) {
			emit_indent(em);
			fputs("npu_barrier();\n", o);
		}
		break;
	default:
		diag_error(s->loc, "not supported yet: this statement");
	}
check:
	/* host: a bad index or copy has left through npu__out */
	return;
}

void emit_block(struct emitter *em, const struct node *b)
{
	int i;

	for (i = 0; i < b->nkids; i++)
		emit_stmt(em, b->kids[i]);
}
