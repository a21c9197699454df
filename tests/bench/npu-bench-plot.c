// SPDX-License-Identifier: MIT
/*
 * npu-bench-plot - draw the curves of a bench results.json
 * (Documentation/bench.rst): every "curve_<name>" object becomes
 * DIR/curve-<name>.png and DIR/curve-<name>.svg, one line per series,
 * axes labelled with their units, log scales where the curve asks for them.
 *
 *   npu-bench-plot RESULTS.json DIR
 *
 * A curve object: {"title", "x_label", "y_label", "log_x", "log_y",
 * "series": [{"name", "points": [[x, y], ...]}]} (null y: not measured).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cairo.h>
#include <cairo-svg.h>
#include <json-c/json.h>

#define W 820
#define H 520
#define ML 96	/* left margin: y tick labels and y label */
#define MR 190	/* right margin: legend */
#define MT 56
#define MB 70
#define MAXP 64
#define MAXS 8

struct series {
	const char *name;
	int n;
	double x[MAXP], y[MAXP];
};

struct curve {
	const char *title, *xl, *yl;
	int logx, logy, bytes, ns;
	double x0, x1, y0, y1;	/* data range, in axis units (log10 if log) */
	double xt[MAXP];	/* x ticks (data units) */
	int nxt;
	struct series s[MAXS];
};

static const double pal[MAXS][3] = {
	{ 0.12, 0.47, 0.71 }, { 0.85, 0.37, 0.01 }, { 0.17, 0.63, 0.17 }, { 0.84, 0.15, 0.16 },
	{ 0.58, 0.40, 0.74 }, { 0.55, 0.34, 0.29 }, { 0.89, 0.47, 0.76 }, { 0.50, 0.50, 0.50 },
};

static double ax(const struct curve *c, double v)
{
	return c->logx ? log10(v) : v;
}

static double ay(const struct curve *c, double v)
{
	return c->logy ? log10(v) : v;
}

static double px(const struct curve *c, double v)
{
	double a = ax(c, v);

	return ML + (c->x1 > c->x0 ? (a - c->x0) / (c->x1 - c->x0) : 0.5) * (W - ML - MR);
}

static double py(const struct curve *c, double v)
{
	double a = ay(c, v);

	return H - MB - (c->y1 > c->y0 ? (a - c->y0) / (c->y1 - c->y0) : 0.5) * (H - MT - MB);
}

static void fmt(char *b, size_t n, double v, int bytes)
{
	if (bytes && v >= 1024) {
		static const char *u[] = { "KiB", "MiB", "GiB" };
		int i = -1;

		while (v >= 1024 && i < 2) {
			v /= 1024;
			i++;
		}
		snprintf(b, n, "%g %s", v, u[i]);
	} else if (fabs(v) >= 1e6 || (v != 0 && fabs(v) < 1e-3)) {
		snprintf(b, n, "%.0e", v);
	} else {
		snprintf(b, n, "%g", v);
	}
}

static void text(cairo_t *cr, double x, double y, const char *s, double ha, double va)
{
	cairo_text_extents_t e;

	cairo_text_extents(cr, s, &e);
	cairo_move_to(cr, x - e.width * ha - e.x_bearing, y - e.height * va - e.y_bearing);
	cairo_show_text(cr, s);
}

static void draw(cairo_t *cr, const struct curve *c)
{
	double gx0 = ML, gx1 = W - MR, gy0 = MT, gy1 = H - MB, v, step;
	char b[64];
	int i, j;

	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	cairo_set_font_size(cr, 14);
	cairo_set_source_rgb(cr, 0, 0, 0);
	text(cr, W / 2.0, 22, c->title, 0.5, 0.5);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
			       CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, 12);

	/* y grid and ticks */
	cairo_set_line_width(cr, 1);
	if (c->logy) {
		for (v = floor(c->y0); v <= c->y1 + 1e-9; v += 1) {
			int m;

			for (m = 1; m <= 9; m++) {
				double a = v + log10(m), yy;

				if (a < c->y0 - 1e-9 || a > c->y1 + 1e-9)
					continue;
				if (m != 1 && c->y1 - c->y0 > 2.5)
					continue;
				if (m != 1 && m != 2 && m != 5)
					continue;
				yy = py(c, pow(10, a));
				cairo_set_source_rgb(cr, m == 1 ? 0.8 : 0.9, m == 1 ? 0.8 : 0.9,
						     m == 1 ? 0.8 : 0.9);
				cairo_move_to(cr, gx0, yy);
				cairo_line_to(cr, gx1, yy);
				cairo_stroke(cr);
				cairo_set_source_rgb(cr, 0, 0, 0);
				fmt(b, sizeof(b), pow(10, a), 0);
				text(cr, gx0 - 6, yy, b, 1, 0.5);
			}
		}
	} else {
		double span = c->y1 - c->y0, mag = pow(10, floor(log10(span > 0 ? span : 1)));

		step = span / mag > 5 ? 2 * mag : span / mag > 2 ? mag : mag / 2;
		for (v = ceil(c->y0 / step) * step; v <= c->y1 + 1e-9 * span; v += step) {
			double yy = py(c, v);

			cairo_set_source_rgb(cr, 0.85, 0.85, 0.85);
			cairo_move_to(cr, gx0, yy);
			cairo_line_to(cr, gx1, yy);
			cairo_stroke(cr);
			cairo_set_source_rgb(cr, 0, 0, 0);
			fmt(b, sizeof(b), v, 0);
			text(cr, gx0 - 6, yy, b, 1, 0.5);
		}
	}
	/* x ticks: at the measured x values (a label too close to the last
	 * one drawn is left out) */
	for (i = 0, v = -1e9; i < c->nxt; i++) {
		double xx = px(c, c->xt[i]);

		if (xx - v < 48)
			continue;
		v = xx;

		cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
		cairo_move_to(cr, xx, gy0);
		cairo_line_to(cr, xx, gy1);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		fmt(b, sizeof(b), c->xt[i], c->bytes);
		text(cr, xx, gy1 + 8, b, 0.5, 0);
	}
	/* frame and axis labels */
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_rectangle(cr, gx0, gy0, gx1 - gx0, gy1 - gy0);
	cairo_stroke(cr);
	snprintf(b, sizeof(b), "%s%s", c->xl, c->logx ? " (log scale)" : "");
	text(cr, (gx0 + gx1) / 2, H - 22, b, 0.5, 0.5);
	cairo_save(cr);
	cairo_translate(cr, 20, (gy0 + gy1) / 2);
	cairo_rotate(cr, -M_PI / 2);
	snprintf(b, sizeof(b), "%s%s", c->yl, c->logy ? " (log scale)" : "");
	text(cr, 0, 0, b, 0.5, 0.5);
	cairo_restore(cr);

	/* series */
	for (j = 0; j < c->ns; j++) {
		const struct series *s = &c->s[j];

		cairo_set_source_rgb(cr, pal[j][0], pal[j][1], pal[j][2]);
		cairo_set_line_width(cr, 2);
		for (i = 0; i < s->n; i++) {
			if (i == 0)
				cairo_move_to(cr, px(c, s->x[i]), py(c, s->y[i]));
			else
				cairo_line_to(cr, px(c, s->x[i]), py(c, s->y[i]));
		}
		cairo_stroke(cr);
		for (i = 0; i < s->n; i++) {
			cairo_arc(cr, px(c, s->x[i]), py(c, s->y[i]), 3.5, 0, 2 * M_PI);
			cairo_fill(cr);
		}
		/* legend entry */
		cairo_move_to(cr, gx1 + 14, gy0 + 12 + 22 * j);
		cairo_line_to(cr, gx1 + 40, gy0 + 12 + 22 * j);
		cairo_stroke(cr);
		cairo_arc(cr, gx1 + 27, gy0 + 12 + 22 * j, 3.5, 0, 2 * M_PI);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		text(cr, gx1 + 48, gy0 + 12 + 22 * j, s->name, 0, 0.5);
	}
}

static int xt_has(const struct curve *c, double x)
{
	int i;

	for (i = 0; i < c->nxt; i++)
		if (c->xt[i] == x)
			return 1;
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Fill c from the JSON object; 0 if it has at least one point. */
static int load(struct curve *c, struct json_object *o)
{
	struct json_object *v, *ser;
	double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
	size_t i, j;

	memset(c, 0, sizeof(*c));
	c->title = json_object_object_get_ex(o, "title", &v) ? json_object_get_string(v) : "";
	c->xl = json_object_object_get_ex(o, "x_label", &v) ? json_object_get_string(v) : "x";
	c->yl = json_object_object_get_ex(o, "y_label", &v) ? json_object_get_string(v) : "y";
	c->logx = json_object_object_get_ex(o, "log_x", &v) && json_object_get_boolean(v);
	c->logy = json_object_object_get_ex(o, "log_y", &v) && json_object_get_boolean(v);
	c->bytes = strstr(c->xl, "bytes") != NULL;
	if (!json_object_object_get_ex(o, "series", &ser) ||
	    !json_object_is_type(ser, json_type_array))
		return -1;
	for (j = 0; j < json_object_array_length(ser) && c->ns < MAXS; j++) {
		struct json_object *so = json_object_array_get_idx(ser, j), *pts;
		struct series *s = &c->s[c->ns];

		if (!json_object_object_get_ex(so, "points", &pts))
			continue;
		s->name = json_object_object_get_ex(so, "name", &v) ? json_object_get_string(v) : "";
		for (i = 0; i < json_object_array_length(pts) && s->n < MAXP; i++) {
			struct json_object *p = json_object_array_get_idx(pts, i);
			struct json_object *px_ = json_object_array_get_idx(p, 0);
			struct json_object *py_ = json_object_array_get_idx(p, 1);
			double x, y;

			if (!px_ || !py_)
				continue;
			x = json_object_get_double(px_);
			y = json_object_get_double(py_);
			if (!isfinite(x) || !isfinite(y) || (c->logx && x <= 0) ||
			    (c->logy && y <= 0))
				continue;
			s->x[s->n] = x;
			s->y[s->n++] = y;
			xmin = fmin(xmin, x);
			xmax = fmax(xmax, x);
			ymin = fmin(ymin, y);
			ymax = fmax(ymax, y);
			if (!xt_has(c, x) && c->nxt < MAXP)
				c->xt[c->nxt++] = x;
		}
		if (s->n)
			c->ns++;
	}
	if (!c->ns)
		return -1;
	qsort(c->xt, c->nxt, sizeof(double), cmp_d);
	c->x0 = ax(c, xmin);
	c->x1 = ax(c, xmax);
	if (c->x1 <= c->x0) {
		c->x0 -= 1;
		c->x1 += 1;
	} else {	/* a little air left and right */
		double d = (c->x1 - c->x0) * 0.04;

		c->x0 -= d;
		c->x1 += d;
	}
	if (c->logy) {
		c->y0 = floor(log10(ymin));
		c->y1 = ceil(log10(ymax));
		if (c->y1 <= c->y0)
			c->y1 = c->y0 + 1;
	} else {
		c->y0 = 0;
		c->y1 = ymax > 0 ? ymax * 1.1 : 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct json_object *root;
	int rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: npu-bench-plot RESULTS.json DIR\n");
		return 2;
	}
	root = json_object_from_file(argv[1]);
	if (!root) {
		fprintf(stderr, "npu-bench-plot: %s: %s\n", argv[1], json_util_get_last_err());
		return 1;
	}
	json_object_object_foreach(root, key, val) {
		static struct curve c;
		char png[4096], svg[4096];
		cairo_surface_t *sf;
		cairo_t *cr;

		if (strncmp(key, "curve_", 6) || !json_object_is_type(val, json_type_object))
			continue;
		if (load(&c, val)) {
			fprintf(stderr, "npu-bench-plot: %s: no points\n", key);
			continue;
		}
		snprintf(png, sizeof(png), "%s/curve-%s.png", argv[2], key + 6);
		snprintf(svg, sizeof(svg), "%s/curve-%s.svg", argv[2], key + 6);
		sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
		cr = cairo_create(sf);
		draw(cr, &c);
		cairo_destroy(cr);
		if (cairo_surface_write_to_png(sf, png) != CAIRO_STATUS_SUCCESS) {
			fprintf(stderr, "npu-bench-plot: cannot write %s\n", png);
			rc = 1;
		}
		cairo_surface_destroy(sf);
		sf = cairo_svg_surface_create(svg, W, H);
		cr = cairo_create(sf);
		draw(cr, &c);
		cairo_destroy(cr);
		cairo_surface_finish(sf);
		if (cairo_surface_status(sf) != CAIRO_STATUS_SUCCESS) {
			fprintf(stderr, "npu-bench-plot: cannot write %s\n", svg);
			rc = 1;
		}
		cairo_surface_destroy(sf);
		printf("bench: wrote %s and %s\n", png, svg);
	}
	json_object_put(root);
	return rc;
}
