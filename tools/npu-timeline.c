// SPDX-License-Identifier: MIT
/*
 * npu-timeline - draw a Chrome/Perfetto trace (JSON) as a timeline picture
 * in PNG, SVG or PDF (Documentation/lib/profiling.rst, "npu-timeline").
 *
 * One lane per (pid, tid) of the trace, named by its "thread_name" metadata
 * and ordered by "thread_sort_index" (else by pid and tid). Complete events
 * ("X") and "B"/"E" pairs become boxes coloured by what they are (the
 * legend), flow events ("s"/"f", libnpu's cross-stream event dependencies)
 * become arrows from the end of one box to the start of another. Each lane
 * shows its utilisation (busy time, the union of its boxes, over the
 * window) and the time axis is in s, ms or us as the window needs.
 *
 * json-c parses the trace; cairo draws all three formats through one
 * drawing path, with the system's fonts.
 */
#define _GNU_SOURCE
#include <cairo.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FONT		"DejaVu Sans"
#define MAX_LEGEND	12	/* colours; the rest share "other" */
#define MAX_OPEN	256	/* nested "B" events per lane */
#define MAX_TICKS	200	/* time axis ticks, whatever the rounding */

/* ------------------------------------------------------------------------
 * Trace model
 */
struct lane {
	char *pid, *tid;	/* as written in the trace */
	char *name;
	double sort;
	int has_sort;
	int has_events;		/* lanes with metadata only are not drawn */
	size_t nev;		/* events in the window */
	double busy;		/* union of its boxes in the window, us */
	int row;
};

struct event {
	size_t lane;
	double ts, dur;		/* us */
	char *name;
	int group;		/* legend entry */
};

struct flow_end {
	char *key;		/* cat, name and id: one flow */
	size_t lane;
	double ts;
	int bind_enclosing;	/* "f" with "bp":"e" */
};

struct group {
	char *key;
	double whole;		/* us in the whole trace: the colour's rank */
	double total;		/* us in the window */
	int colour;		/* palette index or -1 for "other" */
};

static struct lane *lanes;
static size_t nlanes;
static struct event *events;
static size_t nevents;
static struct flow_end *starts, *finishes;
static size_t nstarts, nfinishes;
static struct group *groups;
static size_t ngroups;

static void *xrealloc(void *p, size_t n, size_t size)
{
	p = realloc(p, (n ? n : 1) * size);
	if (!p) {
		fprintf(stderr, "npu-timeline: out of memory\n");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d) {
		fprintf(stderr, "npu-timeline: out of memory\n");
		exit(1);
	}
	return d;
}

/* pid and tid may be numbers or strings: their text is the key. */
static char *id_text(struct json_object *o)
{
	char buf[64];

	if (!o)
		return xstrdup("0");
	if (json_object_is_type(o, json_type_string))
		return xstrdup(json_object_get_string(o));
	snprintf(buf, sizeof(buf), "%.17g", json_object_get_double(o));
	return xstrdup(buf);
}

static size_t lane_of(struct json_object *ev)
{
	struct json_object *jp = NULL, *jt = NULL;
	char *pid, *tid;
	size_t i;

	json_object_object_get_ex(ev, "pid", &jp);
	json_object_object_get_ex(ev, "tid", &jt);
	pid = id_text(jp);
	tid = id_text(jt);
	for (i = 0; i < nlanes; i++)
		if (!strcmp(lanes[i].pid, pid) && !strcmp(lanes[i].tid, tid)) {
			free(pid);
			free(tid);
			return i;
		}
	lanes = xrealloc(lanes, nlanes + 1, sizeof(*lanes));
	memset(&lanes[nlanes], 0, sizeof(*lanes));
	lanes[nlanes].pid = pid;
	lanes[nlanes].tid = tid;
	if (asprintf(&lanes[nlanes].name, "%s/%s", pid, tid) < 0)
		lanes[nlanes].name = xstrdup("?");
	return nlanes++;
}

static const char *str_of(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int num_of(struct json_object *o, const char *key, double *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return 0;
	*out = json_object_get_double(v);
	return isfinite(*out);
}

/*
 * The legend entry of an event: libnpu's copies and fills by kind (their
 * names carry sizes), the demo's "H2D ..." copies by direction, anything
 * else by its name.
 */
static char *group_key(const char *name, struct json_object *args)
{
	const char *kind = args ? str_of(args, "kind") : NULL;

	if (kind && (!strcmp(kind, "copy") || !strcmp(kind, "memset")))
		return xstrdup(kind);
	if (!strncmp(name, "H2D", 3) || !strncmp(name, "D2H", 3) || !strncmp(name, "D2D", 3)) {
		char *k = xstrdup(name);

		k[3] = 0;
		return k;
	}
	return xstrdup(name);
}

/* A name as drawn: line breaks as an arrow, other control characters as a
 * middle dot (the font has no glyph for them). */
static char *display_name(const char *s)
{
	char *d = xrealloc(NULL, 3 * strlen(s) + 1, 1), *p = d;

	for (; *s; s++) {
		if (*s == '\n' || *s == '\r') {
			memcpy(p, "\xe2\x86\xb5", 3);	/* U+21B5 */
			p += 3;
		} else if (*s == '\t') {
			*p++ = ' ';
		} else if ((unsigned char)*s < 0x20 || *s == 0x7f) {
			memcpy(p, "\xc2\xb7", 2);		/* U+00B7 */
			p += 2;
		} else {
			*p++ = *s;
		}
	}
	*p = 0;
	return d;
}

static void add_event(size_t lane, double ts, double dur, const char *name,
		      struct json_object *args)
{
	struct event *e;
	char *key;
	size_t g;

	events = xrealloc(events, nevents + 1, sizeof(*events));
	e = &events[nevents++];
	e->lane = lane;
	e->ts = ts;
	e->dur = dur > 0 ? dur : 0;
	e->name = display_name(name ? name : "?");
	key = group_key(e->name, args);
	for (g = 0; g < ngroups; g++)
		if (!strcmp(groups[g].key, key))
			break;
	if (g == ngroups) {
		groups = xrealloc(groups, ngroups + 1, sizeof(*groups));
		groups[g].key = key;
		groups[g].whole = 0;
		groups[g].total = 0;
		ngroups++;
	} else {
		free(key);
	}
	e->group = (int)g;
	groups[g].whole += e->dur;
}

static void add_flow(struct json_object *ev, const char *ph, size_t lane, double ts)
{
	struct json_object *id = NULL;
	const char *cat = str_of(ev, "cat"), *name = str_of(ev, "name"), *bp = str_of(ev, "bp");
	struct flow_end *f;
	char *key;

	if (!json_object_object_get_ex(ev, "id", &id))
		return;
	if (asprintf(&key, "%s\n%s\n%s", cat ? cat : "", name ? name : "",
		     json_object_get_string(id)) < 0)
		return;
	if (ph[0] == 's') {
		starts = xrealloc(starts, nstarts + 1, sizeof(*starts));
		f = &starts[nstarts++];
	} else {
		finishes = xrealloc(finishes, nfinishes + 1, sizeof(*finishes));
		f = &finishes[nfinishes++];
	}
	f->key = key;
	f->lane = lane;
	f->ts = ts;
	f->bind_enclosing = bp && !strcmp(bp, "e");
}

static int load_trace(struct json_object *root, const char *in)
{
	struct json_object *evs = root;
	struct { size_t lane; double ts; const char *name; } open[MAX_OPEN];
	int nopen = 0;
	size_t i, n;

	if (json_object_is_type(root, json_type_object) &&
	    !json_object_object_get_ex(root, "traceEvents", &evs))
		evs = NULL;
	if (!evs || !json_object_is_type(evs, json_type_array)) {
		fprintf(stderr, "npu-timeline: %s: no traceEvents array\n", in);
		return -1;
	}
	n = json_object_array_length(evs);
	for (i = 0; i < n; i++) {
		struct json_object *e = json_object_array_get_idx(evs, i), *args = NULL;
		const char *ph, *name;
		double ts, dur = 0;
		size_t l;

		if (!json_object_is_type(e, json_type_object))
			continue;
		ph = str_of(e, "ph");
		name = str_of(e, "name");
		if (!ph)
			continue;
		json_object_object_get_ex(e, "args", &args);
		if (ph[0] == 'M') {
			const char *n2 = args ? str_of(args, "name") : NULL;
			double sort;

			if (!name)
				continue;
			if (!strcmp(name, "thread_name") && n2) {
				l = lane_of(e);
				free(lanes[l].name);
				lanes[l].name = display_name(n2);
			} else if (!strcmp(name, "thread_sort_index") && args &&
				   num_of(args, "sort_index", &sort)) {
				l = lane_of(e);
				lanes[l].sort = sort;
				lanes[l].has_sort = 1;
			}
			continue;
		}
		if (!num_of(e, "ts", &ts))
			continue;
		switch (ph[0]) {
		case 'X':
			num_of(e, "dur", &dur);
			add_event(lane_of(e), ts, dur, name, args);
			break;
		case 'B':
			if (nopen < MAX_OPEN) {
				open[nopen].lane = lane_of(e);
				open[nopen].ts = ts;
				open[nopen].name = name;
				nopen++;
			}
			break;
		case 'E': {
			int k;

			l = lane_of(e);
			for (k = nopen - 1; k >= 0; k--)
				if (open[k].lane == l)
					break;
			if (k < 0)
				break;
			add_event(l, open[k].ts, ts - open[k].ts, open[k].name, NULL);
			open[k] = open[--nopen];
			break;
		}
		case 's':
		case 'f':
			add_flow(e, ph, lane_of(e), ts);
			break;
		default:
			break;
		}
	}
	return 0;
}

static int cmp_lane(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	double kx = x->has_sort ? x->sort : 1e300, ky = y->has_sort ? y->sort : 1e300;
	double px = atof(x->pid), py = atof(y->pid), tx = atof(x->tid), ty = atof(y->tid);
	int c;

	if (x->has_events != y->has_events)
		return x->has_events ? -1 : 1;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	if (px != py)
		return px < py ? -1 : 1;
	if (tx != ty)
		return tx < ty ? -1 : 1;
	c = strcmp(x->pid, y->pid);
	return c ? c : strcmp(x->tid, y->tid);
}

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->whole != y->whole)
		return x->whole > y->whole ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* The box a flow end binds to: "s" and "f"+"bp":"e" to the box around ts
 * on its lane, plain "f" to the next box starting at or after ts. */
static const struct event *bound_event(const struct flow_end *f, int is_start)
{
	const struct event *best = NULL;
	size_t i;

	for (i = 0; i < nevents; i++) {
		const struct event *e = &events[i];

		if (e->lane != f->lane)
			continue;
		if (is_start || f->bind_enclosing) {
			if (e->ts <= f->ts && f->ts <= e->ts + e->dur)
				best = e;	/* innermost: the last that starts */
		} else if (e->ts >= f->ts && (!best || e->ts < best->ts)) {
			best = e;
		}
	}
	return best;
}

/* ------------------------------------------------------------------------
 * Drawing: one path for every cairo surface
 */
struct view {
	const char *title;
	double from, to;	/* window, us from the trace's first event */
	double origin;		/* ts of the trace's first event */
	double width, height;
	double label_w, util_w, plot_x, plot_w;
	double legend_y, legend_h, axis_y, lanes_y;
	int flows;
	size_t nflows_drawn;
};

#define MARGIN		16.0
#define LANE_H		24.0
#define LEGEND_ROW	20.0
#define TITLE_SIZE	17.0
#define TEXT_SIZE	12.0
#define SMALL_SIZE	10.5

static const uint32_t palette[MAX_LEGEND] = {
	0x4e79a7, 0xf28e2b, 0x59a14f, 0xe15759, 0x76b7b2, 0xedc948,
	0xb07aa1, 0xff9da7, 0x9c755f, 0x17becf, 0x8c564b, 0xbcbd22,
};
#define OTHER_COLOUR	0xbab0ac

static uint32_t group_colour(int g)
{
	int c = groups[g].colour;

	return c < 0 ? OTHER_COLOUR : palette[c];
}

static void set_rgb(cairo_t *cr, uint32_t rgb, double alpha)
{
	cairo_set_source_rgba(cr, (rgb >> 16 & 255) / 255.0, (rgb >> 8 & 255) / 255.0,
			      (rgb & 255) / 255.0, alpha);
}

static void font(cairo_t *cr, double size, int bold)
{
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

static double text_w(cairo_t *cr, const char *s)
{
	cairo_text_extents_t te;

	cairo_text_extents(cr, s, &te);
	return te.x_advance;
}

/* align: 0 left, 1 centre, 2 right of x; y is the baseline */
static void text(cairo_t *cr, double x, double y, const char *s, int align)
{
	double w = align ? text_w(cr, s) : 0;

	cairo_move_to(cr, x - (align == 1 ? w / 2 : align == 2 ? w : 0), y);
	cairo_show_text(cr, s);
}

/* s cut with "..." to fit max_w, into buf */
static const char *fit(cairo_t *cr, const char *s, double max_w, char *buf, size_t n)
{
	size_t len = strlen(s);

	if (text_w(cr, s) <= max_w)
		return s;
	if (len >= n)
		len = n - 1;
	while (len > 0) {
		len--;
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;	/* not inside a UTF-8 character */
		snprintf(buf, n, "%.*s...", (int)len, s);
		if (text_w(cr, buf) <= max_w)
			return buf;
	}
	return "";
}

static double nice_step(double span, double ticks)
{
	double raw = span / ticks, mag = pow(10, floor(log10(raw))), r = raw / mag;

	return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

/* The unit for times around us: its divisor and name. */
static void time_unit(double us, double *div, const char **unit)
{
	if (fabs(us) >= 1e6) {
		*div = 1e6;
		*unit = "s";
	} else if (fabs(us) >= 1e3) {
		*div = 1e3;
		*unit = "ms";
	} else {
		*div = 1;
		*unit = "\xc2\xb5s";	/* µs */
	}
}

static void fmt_time(char *buf, size_t n, double us)
{
	double div;
	const char *unit;

	time_unit(us, &div, &unit);
	snprintf(buf, n, "%.4g %s", us / div, unit);
}

static double x_of(const struct view *v, double t)
{
	return v->plot_x + (t - v->origin - v->from) / (v->to - v->from) * v->plot_w;
}

static double lane_y(const struct view *v, size_t row)
{
	return v->lanes_y + (double)row * LANE_H;
}

static void draw_axis(cairo_t *cr, const struct view *v, double y, int above)
{
	double span = v->to - v->from, step = nice_step(span, v->plot_w / 110), t, div;
	double first = ceil(v->from / step - 1e-9) * step;
	const char *unit;
	int k;
	char buf[48];

	time_unit(v->to, &div, &unit);
	font(cr, SMALL_SIZE, 0);
	for (k = 0, t = ceil(v->from / step - 1e-9) * step;
	     t <= v->to + step * 1e-6 && k < MAX_TICKS; k++, t = first + k * step) {
		double x = x_of(v, v->origin + t);

		set_rgb(cr, 0x555555, 1);
		cairo_rectangle(cr, floor(x), above ? y - 5 : y, 1, 5);
		cairo_fill(cr);
		snprintf(buf, sizeof(buf), "%g %s", fabs(t / div) < 1e-9 ? 0 : t / div,
			 fabs(t) < 1e-9 ? "" : unit);
		text(cr, x, above ? y - 8 : y + 16, buf, 1);
	}
	set_rgb(cr, 0x555555, 1);
	cairo_rectangle(cr, v->plot_x, above ? y - 1 : y, v->plot_w, 1);
	cairo_fill(cr);
}

static void draw_arrow(cairo_t *cr, double x1, double y1, double x2, double y2, double a)
{
	double dx = fmin(fmax((x2 - x1) / 2, 6), 40);

	cairo_move_to(cr, x1, y1);
	if (fabs(y2 - y1) < 1)
		cairo_line_to(cr, x2 - a, y2);
	else
		cairo_curve_to(cr, x1 + dx, y1, x2 - dx, y2, x2 - a, y2);
	cairo_stroke(cr);
	cairo_move_to(cr, x2, y2);
	cairo_line_to(cr, x2 - a * 1.6, y2 - a * 0.8);
	cairo_line_to(cr, x2 - a * 1.6, y2 + a * 0.8);
	cairo_close_path(cr);
	cairo_fill(cr);
}

static void draw(cairo_t *cr, struct view *v)
{
	char buf[256], t1[48], t2[48], t3[48];
	double x, y;
	size_t i, g;

	cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
	set_rgb(cr, 0xffffff, 1);
	cairo_paint(cr);

	/* title and what the picture covers */
	set_rgb(cr, 0x111111, 1);
	font(cr, TITLE_SIZE, 1);
	text(cr, MARGIN, MARGIN + TITLE_SIZE, fit(cr, v->title, v->width - 2 * MARGIN, buf,
						   sizeof(buf)), 0);
	fmt_time(t1, sizeof(t1), v->from);
	fmt_time(t2, sizeof(t2), v->to);
	{
		size_t n = 0;

		for (i = 0; i < nlanes; i++)
			n += lanes[i].nev;
		fmt_time(t3, sizeof(t3), v->to - v->from);
		snprintf(buf, sizeof(buf), "%s to %s after the first command (%s)"
			 "  \xc2\xb7  %zu commands on %zu lanes", v->from > 0 ? t1 : "0",
			 t2, t3, n, nlanes);
	}
	font(cr, TEXT_SIZE, 0);
	set_rgb(cr, 0x555555, 1);
	text(cr, MARGIN, MARGIN + TITLE_SIZE + 18, buf, 0);
	if (v->flows && v->nflows_drawn) {
		snprintf(buf, sizeof(buf), "%zu event %s (arrows)", v->nflows_drawn,
			 v->nflows_drawn == 1 ? "dependency" : "dependencies");
		text(cr, v->width - MARGIN, MARGIN + TITLE_SIZE + 18, buf, 2);
	}

	/* legend: colour, name, share of the busy time */
	x = MARGIN;
	y = v->legend_y;
	font(cr, TEXT_SIZE, 0);
	{
		double total = 0;

		for (g = 0; g < ngroups; g++)
			total += groups[g].total;
		for (g = 0; g <= ngroups; g++) {
			const char *name;
			double share = 0, w;
			uint32_t col;

			if (g < ngroups && (groups[g].colour < 0 || groups[g].total <= 0))
				continue;
			if (g == ngroups) {	/* "other": the rest together */
				size_t k, nother = 0;

				for (k = 0; k < ngroups; k++)
					if (groups[k].colour < 0) {
						share += groups[k].total;
						nother++;
					}
				if (!nother)
					break;
				snprintf(t1, sizeof(t1), "%zu others", nother);
				name = t1;
				col = OTHER_COLOUR;
			} else {
				name = groups[g].key;
				share = groups[g].total;
				col = group_colour((int)g);
			}
			snprintf(buf, sizeof(buf), "%s", name);
			fit(cr, name, 260, buf, sizeof(buf));
			snprintf(t2, sizeof(t2), " %.0f%%", total > 0 ? 100 * share / total : 0);
			w = 16 + text_w(cr, buf) + text_w(cr, t2) + 18;
			if (x + w > v->width - MARGIN && x > MARGIN) {
				x = MARGIN;
				y += LEGEND_ROW;
			}
			set_rgb(cr, col, 1);
			cairo_rectangle(cr, x, y - 10, 12, 12);
			cairo_fill(cr);
			set_rgb(cr, 0x222222, 1);
			text(cr, x + 16, y, buf, 0);
			set_rgb(cr, 0x777777, 1);
			text(cr, x + 16 + text_w(cr, buf), y, t2, 0);
			x += w;
		}
	}

	/* lanes: background, label, utilisation bar */
	for (i = 0; i < nlanes; i++) {
		const struct lane *l = &lanes[i];
		double ly = lane_y(v, i), u = v->to > v->from ? l->busy / (v->to - v->from) : 0;

		set_rgb(cr, i % 2 ? 0xf2f2f2 : 0xffffff, 1);
		cairo_rectangle(cr, 0, ly, v->width, LANE_H);
		cairo_fill(cr);
		font(cr, TEXT_SIZE, 0);
		set_rgb(cr, 0x111111, 1);
		text(cr, MARGIN, ly + LANE_H / 2 + 4.5,
		     fit(cr, l->name, v->label_w - 8, buf, sizeof(buf)), 0);
		x = MARGIN + v->label_w;
		set_rgb(cr, 0xdddddd, 1);
		cairo_rectangle(cr, x, ly + 6, v->util_w - 44, LANE_H - 12);
		cairo_fill(cr);
		set_rgb(cr, 0x555555, 1);	/* not a legend colour */
		cairo_rectangle(cr, x, ly + 6, (v->util_w - 44) * fmin(u, 1), LANE_H - 12);
		cairo_fill(cr);
		font(cr, SMALL_SIZE, 0);
		set_rgb(cr, 0x333333, 1);
		snprintf(buf, sizeof(buf), "%.0f%%", 100 * u);
		text(cr, x + v->util_w - 8, ly + LANE_H / 2 + 4, buf, 2);
	}

	/* grid lines */
	{
		double step = nice_step(v->to - v->from, v->plot_w / 110), t;
		double first = ceil(v->from / step - 1e-9) * step;
		int k;

		set_rgb(cr, 0xd0d0d0, 1);
		for (k = 0, t = first; t <= v->to + step * 1e-6 && k < MAX_TICKS;
		     k++, t = first + k * step) {
			cairo_rectangle(cr, floor(x_of(v, v->origin + t)), v->lanes_y, 1,
					(double)nlanes * LANE_H);
			cairo_fill(cr);
		}
	}

	/* boxes, clipped to the plot */
	cairo_save(cr);
	cairo_rectangle(cr, v->plot_x, v->lanes_y, v->plot_w, (double)nlanes * LANE_H);
	cairo_clip(cr);
	for (i = 0; i < nevents; i++) {
		const struct event *e = &events[i];
		double x1 = x_of(v, e->ts), x2 = x_of(v, e->ts + e->dur);
		double by = lane_y(v, (size_t)lanes[e->lane].row) + 3, bh = LANE_H - 6;
		uint32_t col = group_colour(e->group);

		if (x2 < v->plot_x || x1 > v->plot_x + v->plot_w)
			continue;
		if (x2 - x1 < 1)
			x2 = x1 + 1;	/* every command stays visible */
		set_rgb(cr, col, 1);
		cairo_rectangle(cr, x1, by, x2 - x1, bh);
		cairo_fill(cr);
		if (x2 - x1 >= 4) {
			set_rgb(cr, 0x000000, 0.35);
			cairo_set_line_width(cr, 0.6);
			cairo_rectangle(cr, x1 + 0.3, by + 0.3, x2 - x1 - 0.6, bh - 0.6);
			cairo_stroke(cr);
		}
		if (x2 - x1 > 30) {
			double lum = 0.299 * (col >> 16 & 255) + 0.587 * (col >> 8 & 255) +
				     0.114 * (col & 255);
			double lx = fmax(x1, v->plot_x) + 3, rx = fmin(x2, v->plot_x + v->plot_w) - 3;
			const char *s;

			font(cr, SMALL_SIZE, 0);
			s = fit(cr, e->name, rx - lx, buf, sizeof(buf));
			set_rgb(cr, lum > 150 ? 0x111111 : 0xffffff, 1);
			text(cr, lx, by + bh / 2 + 3.8, s, 0);
		}
	}

	/* dependencies: from the end of the box before the record to the
	 * start of the box after the wait */
	if (v->flows) {
		/* many arrows close together: thinner and lighter, so that the
		 * boxes stay readable under them */
		int dense = (double)v->nflows_drawn > v->plot_w / 60;
		double head = dense ? 4 : 5.5;

		cairo_set_line_width(cr, dense ? 0.8 : 1.3);
		set_rgb(cr, 0x222222, dense ? 0.45 : 0.75);
		for (i = 0; i < nfinishes; i++) {
			const struct event *a = NULL, *b;
			size_t k;

			for (k = 0; k < nstarts; k++)
				if (!strcmp(starts[k].key, finishes[i].key)) {
					a = bound_event(&starts[k], 1);
					break;
				}
			b = bound_event(&finishes[i], 0);
			if (!a || !b)
				continue;
			draw_arrow(cr, x_of(v, a->ts + a->dur),
				   lane_y(v, (size_t)lanes[a->lane].row) + LANE_H / 2,
				   x_of(v, b->ts), lane_y(v, (size_t)lanes[b->lane].row) + LANE_H / 2,
				   head);
		}
	}
	cairo_restore(cr);

	/* axes above and below the lanes, and what they measure */
	draw_axis(cr, v, v->lanes_y, 1);
	draw_axis(cr, v, v->lanes_y + (double)nlanes * LANE_H, 0);
	font(cr, SMALL_SIZE, 0);
	set_rgb(cr, 0x555555, 1);
	text(cr, v->plot_x, v->height - MARGIN + 2,
	     "time since the first command in the trace (the trace's clock); "
	     "% = busy fraction of each lane in the window", 0);
	font(cr, SMALL_SIZE, 1);
	set_rgb(cr, 0x333333, 1);
	text(cr, MARGIN, v->lanes_y - 8, "lane", 0);
	text(cr, MARGIN + v->label_w, v->lanes_y - 8, "busy", 0);
}

/* Count the flows drawn in the window (both ends bound) for the subtitle. */
static size_t count_flows(const struct view *v)
{
	size_t i, k, n = 0;

	for (i = 0; i < nfinishes; i++)
		for (k = 0; k < nstarts; k++)
			if (!strcmp(starts[k].key, finishes[i].key)) {
				const struct event *a = bound_event(&starts[k], 1);
				const struct event *b = bound_event(&finishes[i], 0);

				n += a && b && a->ts + a->dur >= v->origin + v->from &&
				     b->ts <= v->origin + v->to;
				break;
			}
	return n;
}

/* Lay the picture out: label column from the longest name, legend rows. */
static void layout(struct view *v)
{
	cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 8, 8);
	cairo_t *cr = cairo_create(s);
	double x = MARGIN, w;
	char pct[16];
	size_t i, g, nother = 0;

	font(cr, TEXT_SIZE, 0);
	v->label_w = 60;
	for (i = 0; i < nlanes; i++)
		v->label_w = fmax(v->label_w, text_w(cr, lanes[i].name) + 16);
	v->label_w = fmin(v->label_w, v->width * 0.3);
	v->util_w = 96;
	v->plot_x = MARGIN + v->label_w + v->util_w;
	v->plot_w = v->width - v->plot_x - MARGIN - 8;
	v->legend_y = MARGIN + TITLE_SIZE + 44;
	v->legend_h = LEGEND_ROW;
	for (g = 0; g < ngroups; g++)
		nother += groups[g].colour < 0;
	for (g = 0; g <= ngroups; g++) {
		const char *name;

		if (g < ngroups && (groups[g].colour < 0 || groups[g].total <= 0))
			continue;
		if (g == ngroups && !nother)
			break;
		/* as wide as draw() can make it, so the rows are enough */
		name = g < ngroups ? groups[g].key : "99 others";
		snprintf(pct, sizeof(pct), " 100%%");
		w = 16 + fmin(text_w(cr, name), 260) + text_w(cr, pct) + 18;
		if (x + w > v->width - MARGIN && x > MARGIN) {
			x = MARGIN;
			v->legend_h += LEGEND_ROW;
		}
		x += w;
	}
	v->lanes_y = v->legend_y + v->legend_h + 34;
	v->height = v->lanes_y + (double)nlanes * LANE_H + 24 + 26 + MARGIN;
	cairo_destroy(cr);
	cairo_surface_destroy(s);
}

enum format { FMT_PNG, FMT_SVG, FMT_PDF };

static int render(struct view *v, const char *path, enum format fmt)
{
	cairo_surface_t *s;
	cairo_status_t st;
	cairo_t *cr;

	switch (fmt) {
	case FMT_PNG:
		s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)ceil(v->width),
					       (int)ceil(v->height));
		break;
	case FMT_SVG:
		s = cairo_svg_surface_create(path, v->width, v->height);
		break;
	default:
		s = cairo_pdf_surface_create(path, v->width, v->height);
		break;
	}
	cr = cairo_create(s);
	draw(cr, v);
	st = cairo_status(cr);
	cairo_destroy(cr);
	if (!st && fmt == FMT_PNG)
		st = cairo_surface_write_to_png(s, path);
	cairo_surface_finish(s);
	if (!st)
		st = cairo_surface_status(s);
	cairo_surface_destroy(s);
	if (st) {
		fprintf(stderr, "npu-timeline: %s: %s\n", path, cairo_status_to_string(st));
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Command line
 */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: npu-timeline [OPTIONS] TRACE.json OUTPUT...\n"
		"Draw a Chrome/Perfetto trace (libnpu's npu_trace_write_json, NPU_TRACE=)\n"
		"as a timeline: one lane per thread of the trace with its busy fraction,\n"
		"boxes coloured as the legend says, arrows for event dependencies.\n"
		"\n"
		"OUTPUT ending in .png, .svg or .pdf is written in that format; any other\n"
		"OUTPUT is a base name: OUTPUT.svg and OUTPUT.png (or --format's list).\n"
		"TRACE.json may be - for standard input.\n"
		"\n"
		"  -t, --title TEXT     title (default: the trace's file name)\n"
		"  -w, --width PIXELS   picture width, 400 to 20000 (default 1400)\n"
		"      --from TIME      start of the window, from the first command\n"
		"      --to TIME        end of the window (default: the last command's end)\n"
		"                       TIME is a number with a unit: 250us, 1.5ms, 2s, 800ns\n"
		"                       (a bare number is microseconds)\n"
		"  -f, --format LIST    formats for a base name or to force one: png,svg,pdf\n"
		"      --no-flows       leave out the dependency arrows\n"
		"  -q, --quiet          no per-lane table on standard output\n"
		"  -h, --help           this text\n");
}

static int parse_time(const char *s, double *us)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !isfinite(v) || v < 0)
		return -1;
	if (!*end || !strcmp(end, "us"))
		*us = v;
	else if (!strcmp(end, "ns"))
		*us = v / 1e3;
	else if (!strcmp(end, "ms"))
		*us = v * 1e3;
	else if (!strcmp(end, "s"))
		*us = v * 1e6;
	else
		return -1;
	return 0;
}

static int parse_formats(const char *s, unsigned *mask)
{
	char *copy = xstrdup(s), *tok, *save = NULL;
	int rc = 0;

	*mask = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "png"))
			*mask |= 1u << FMT_PNG;
		else if (!strcmp(tok, "svg"))
			*mask |= 1u << FMT_SVG;
		else if (!strcmp(tok, "pdf"))
			*mask |= 1u << FMT_PDF;
		else
			rc = -1;
	}
	free(copy);
	return rc || !*mask ? -1 : 0;
}

static const char *const ext[] = { ".png", ".svg", ".pdf" };

static int ext_format(const char *path)
{
	size_t n = strlen(path), i;

	for (i = 0; i < 3; i++)
		if (n > 4 && !strcasecmp(path + n - 4, ext[i]))
			return (int)i;
	return -1;
}

static char *read_all(const char *in, size_t *len)
{
	FILE *f = strcmp(in, "-") ? fopen(in, "rb") : stdin;
	size_t cap = 1 << 16, got;
	char *buf;

	if (!f) {
		fprintf(stderr, "npu-timeline: %s: %s\n", in, strerror(errno));
		return NULL;
	}
	buf = xrealloc(NULL, cap, 1);
	*len = 0;
	while ((got = fread(buf + *len, 1, cap - *len, f)) > 0) {
		*len += got;
		if (*len == cap)
			buf = xrealloc(buf, cap *= 2, 1);
	}
	if (ferror(f)) {
		fprintf(stderr, "npu-timeline: %s: read error\n", in);
		free(buf);
		buf = NULL;
	}
	if (f != stdin)
		fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "title", required_argument, NULL, 't' },
		{ "width", required_argument, NULL, 'w' },
		{ "from", required_argument, NULL, 'F' },
		{ "to", required_argument, NULL, 'T' },
		{ "format", required_argument, NULL, 'f' },
		{ "no-flows", no_argument, NULL, 'N' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct view v = { .flows = 1, .width = 1400 };
	const char *in;
	unsigned forced = 0;
	int have_from = 0, have_to = 0, quiet = 0, c, a, rc = 0;
	double first = INFINITY, last = -INFINITY;
	struct json_tokener *tok;
	struct json_object *root;
	enum json_tokener_error jerr;
	size_t len, i, g;
	char *buf, *end;
	int *map;

	while ((c = getopt_long(argc, argv, "t:w:f:qh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			v.title = optarg;
			break;
		case 'w':
			errno = 0;
			v.width = strtod(optarg, &end);
			if (*end || errno || !(v.width >= 400 && v.width <= 20000)) {
				fprintf(stderr, "npu-timeline: --width %s: a number of pixels "
					"from 400 to 20000\n", optarg);
				return 2;
			}
			break;
		case 'F':
		case 'T':
			if (parse_time(optarg, c == 'F' ? &v.from : &v.to)) {
				fprintf(stderr, "npu-timeline: --%s %s: a time such as 250us, "
					"1.5ms or 2s\n", c == 'F' ? "from" : "to", optarg);
				return 2;
			}
			*(c == 'F' ? &have_from : &have_to) = 1;
			break;
		case 'f':
			if (parse_formats(optarg, &forced)) {
				fprintf(stderr, "npu-timeline: --format %s: a list of png, svg "
					"and pdf\n", optarg);
				return 2;
			}
			break;
		case 'N':
			v.flows = 0;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		usage(stderr);
		return 2;
	}
	in = argv[optind];
	if (!v.title)
		v.title = strcmp(in, "-") ? in : "trace";

	buf = read_all(in, &len);
	if (!buf)
		return 1;
	tok = json_tokener_new();
	if (!tok) {
		fprintf(stderr, "npu-timeline: out of memory\n");
		return 1;
	}
	root = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!root || jerr != json_tokener_success) {
		fprintf(stderr, "npu-timeline: %s: not JSON: %s at byte %zu\n", in,
			json_tokener_error_desc(jerr == json_tokener_success ?
						json_tokener_continue : jerr),
			json_tokener_get_parse_end(tok));
		return 1;
	}
	json_tokener_free(tok);
	free(buf);
	if (load_trace(root, in))
		return 1;
	json_object_put(root);
	if (!nevents) {
		fprintf(stderr, "npu-timeline: %s: no events to draw (no \"X\" or \"B\"/\"E\")\n",
			in);
		return 1;
	}

	/* order the lanes, renumber the events' lanes, sort events per lane */
	for (i = 0; i < nlanes; i++)
		lanes[i].row = (int)i;	/* creation order, as events refer to lanes */
	for (i = 0; i < nevents; i++)
		lanes[events[i].lane].has_events = 1;
	qsort(lanes, nlanes, sizeof(*lanes), cmp_lane);
	map = xrealloc(NULL, nlanes, sizeof(*map));
	for (i = 0; i < nlanes; i++)
		map[lanes[i].row] = (int)i;
	for (i = 0; i < nlanes; i++)
		lanes[i].row = (int)i;
	for (i = 0; i < nevents; i++)
		events[i].lane = (size_t)map[events[i].lane];
	for (i = 0; i < nstarts; i++)
		starts[i].lane = (size_t)map[starts[i].lane];
	for (i = 0; i < nfinishes; i++)
		finishes[i].lane = (size_t)map[finishes[i].lane];
	free(map);
	while (nlanes && !lanes[nlanes - 1].has_events)
		nlanes--;	/* sorted last: drop them */

	for (i = 0; i < nevents; i++) {
		if (events[i].ts < first)
			first = events[i].ts;
		if (events[i].ts + events[i].dur > last)
			last = events[i].ts + events[i].dur;
	}
	if (!isfinite(last - first)) {
		fprintf(stderr, "npu-timeline: %s: event times out of range\n", in);
		return 1;
	}
	v.origin = first;
	if (!have_from)
		v.from = 0;
	if (!have_to)
		v.to = last - first;
	if (v.to <= v.from) {
		char t1[48], t2[48];

		fmt_time(t1, sizeof(t1), v.from);
		fmt_time(t2, sizeof(t2), v.to);
		fprintf(stderr, "npu-timeline: empty window: from %s to %s (the trace spans %s)\n",
			t1, t2, (fmt_time(t1, sizeof(t1), last - first), t1));
		return 2;
	}
	qsort(events, nevents, sizeof(*events), cmp_event);

	/* per lane: events and busy time (union of boxes) inside the window */
	for (i = 0; i < nevents;) {
		size_t l = events[i].lane;
		double lo = first + v.from, hi = first + v.to, cs = 0, ce = -INFINITY, busy = 0;

		for (; i < nevents && events[i].lane == l; i++) {
			double s = fmax(events[i].ts, lo), e = fmin(events[i].ts + events[i].dur, hi);

			if (events[i].ts > hi || events[i].ts + events[i].dur < lo ||
			    (events[i].dur > 0 && (events[i].ts + events[i].dur <= lo ||
						   events[i].ts >= hi)))
				continue;	/* outside, or only touching the window */
			lanes[l].nev++;
			groups[events[i].group].total += e > s ? e - s : 0;
			if (e <= s)
				continue;
			if (s > ce) {
				if (ce > cs)
					busy += ce - cs;
				cs = s;
				ce = e;
			} else if (e > ce) {
				ce = e;
			}
		}
		if (ce > cs)
			busy += ce - cs;
		lanes[l].busy = busy;
	}

	/* legend colours by busy time: the largest first */
	{
		struct group *sorted = xrealloc(NULL, ngroups, sizeof(*sorted));
		int *rank = xrealloc(NULL, ngroups, sizeof(*rank));

		memcpy(sorted, groups, ngroups * sizeof(*groups));
		qsort(sorted, ngroups, sizeof(*sorted), cmp_group);
		for (g = 0; g < ngroups; g++) {
			size_t k;

			for (k = 0; k < ngroups; k++)
				if (sorted[k].key == groups[g].key)
					break;
			rank[g] = (int)k;
		}
		for (g = 0; g < ngroups; g++)
			groups[g].colour = ngroups <= MAX_LEGEND ? rank[g] :
					   rank[g] < MAX_LEGEND - 1 ? rank[g] : -1;
		free(sorted);
		free(rank);
	}

	layout(&v);
	v.nflows_drawn = v.flows ? count_flows(&v) : 0;
	for (a = optind + 1; a < argc; a++) {
		const char *out = argv[a];
		int f = ext_format(out);

		if (forced && (f < 0 || !(forced & (1u << f)))) {
			/* a base name (or another format's name): one file per format */
			for (f = 0; f < 3; f++) {
				char *path;

				if (!(forced & (1u << f)))
					continue;
				if (asprintf(&path, "%s%s", out, ext[f]) < 0)
					return 1;
				rc |= render(&v, path, (enum format)f);
				if (!quiet)
					printf("wrote %s\n", path);
				free(path);
			}
		} else if (f >= 0) {
			rc |= render(&v, out, (enum format)f);
			if (!quiet)
				printf("wrote %s\n", out);
		} else {
			for (f = 0; f < 2; f++) {	/* default: SVG and PNG */
				char *path;
				int fmt = f ? FMT_PNG : FMT_SVG;

				if (asprintf(&path, "%s%s", out, ext[fmt]) < 0)
					return 1;
				rc |= render(&v, path, (enum format)fmt);
				if (!quiet)
					printf("wrote %s\n", path);
				free(path);
			}
		}
	}
	if (!quiet) {
		char t1[48];

		fmt_time(t1, sizeof(t1), v.to - v.from);
		printf("%-32s %8s %12s %6s   (window %s)\n", "lane", "commands", "busy_us", "busy",
		       t1);
		for (i = 0; i < nlanes; i++)
			printf("%-32s %8zu %12.1f %5.1f%%\n", lanes[i].name, lanes[i].nev,
			       lanes[i].busy, 100.0 * lanes[i].busy / (v.to - v.from));
		printf("%zu event dependencies in the window\n", v.nflows_drawn);
	}
	return rc ? 1 : 0;
}
