// SPDX-License-Identifier: MIT
/*
 * npu-timeline - render a Chrome/Perfetto trace (JSON) as a timeline picture.
 *
 *   npu-timeline [-t TITLE] [-w WIDTH] TRACE.json OUTBASE
 *
 * writes OUTBASE.svg and OUTBASE.png: one lane per (pid, tid) of the trace,
 * named by its "thread_name" metadata (libnpu and the demo name lanes
 * "ring N (compute)", "stream N", ...), ordered by "thread_sort_index" when
 * given, else by pid and tid. Complete events (ph "X", ts and dur in
 * microseconds) become boxes coloured by their name; "B"/"E" pairs are
 * accepted too. It prints one line per lane with the number of events, the
 * busy time (union of the boxes) and the busy fraction of the trace's span.
 *
 * The PNG is written by this program (zlib for deflate, a built-in 3x5
 * pixel font for the labels); no other library is needed.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "font3x5.h"

/* ------------------------------------------------------------------------
 * A small JSON reader: builds a tree of values.
 */
enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	double num;
	char *str;		/* J_STR */
	struct jval *kids;	/* J_ARR, J_OBJ: array of n values */
	char **keys;		/* J_OBJ */
	size_t n;
};

struct jparser {
	const char *p, *end;
	int depth;
	const char *err;
};

static void jskip(struct jparser *jp)
{
	while (jp->p < jp->end && isspace((unsigned char)*jp->p))
		jp->p++;
}

static int jparse(struct jparser *jp, struct jval *v);

static char *jstring(struct jparser *jp)
{
	size_t cap = 16, n = 0;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	jp->p++;	/* opening quote */
	while (jp->p < jp->end && *jp->p != '"') {
		char c = *jp->p++;

		if (c == '\\' && jp->p < jp->end) {
			c = *jp->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'u': {
				unsigned u = 0;
				int i;

				for (i = 0; i < 4 && jp->p < jp->end; i++) {
					char h = *jp->p++;

					u = u * 16 + (isdigit((unsigned char)h) ? h - '0' :
						      (tolower((unsigned char)h) - 'a' + 10) & 15);
				}
				c = u < 128 ? (char)u : '?';
				break;
			}
			default: break;	/* \" \\ \/ */
			}
		}
		if (n + 2 > cap) {
			char *t = realloc(s, cap *= 2);

			if (!t) {
				free(s);
				return NULL;
			}
			s = t;
		}
		s[n++] = c;
	}
	if (jp->p >= jp->end) {
		jp->err = "unterminated string";
		free(s);
		return NULL;
	}
	jp->p++;
	s[n] = 0;
	return s;
}

static int jpush(struct jval *v, size_t *cap, char *key, struct jval *kid)
{
	if (v->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 8;
		struct jval *k = realloc(v->kids, nc * sizeof(*k));

		if (!k)
			return -1;
		v->kids = k;
		if (v->type == J_OBJ) {
			char **ks = realloc(v->keys, nc * sizeof(*ks));

			if (!ks)
				return -1;
			v->keys = ks;
		}
		*cap = nc;
	}
	v->kids[v->n] = *kid;
	if (v->type == J_OBJ)
		v->keys[v->n] = key;
	v->n++;
	return 0;
}

static int jparse(struct jparser *jp, struct jval *v)
{
	size_t cap = 0;

	memset(v, 0, sizeof(*v));
	jskip(jp);
	if (jp->p >= jp->end) {
		jp->err = "unexpected end";
		return -1;
	}
	if (++jp->depth > 64) {
		jp->err = "nested too deep";
		return -1;
	}
	switch (*jp->p) {
	case '{':
	case '[': {
		char close = *jp->p == '{' ? '}' : ']';

		v->type = *jp->p == '{' ? J_OBJ : J_ARR;
		jp->p++;
		jskip(jp);
		if (jp->p < jp->end && *jp->p == close) {
			jp->p++;
			break;
		}
		for (;;) {
			struct jval kid;
			char *key = NULL;

			jskip(jp);
			if (v->type == J_OBJ) {
				if (jp->p >= jp->end || *jp->p != '"') {
					jp->err = "expected a key";
					return -1;
				}
				key = jstring(jp);
				if (!key)
					return -1;
				jskip(jp);
				if (jp->p >= jp->end || *jp->p != ':') {
					jp->err = "expected ':'";
					free(key);
					return -1;
				}
				jp->p++;
			}
			if (jparse(jp, &kid) || jpush(v, &cap, key, &kid)) {
				free(key);
				if (!jp->err)
					jp->err = "out of memory";
				return -1;
			}
			jskip(jp);
			if (jp->p < jp->end && *jp->p == ',') {
				jp->p++;
				continue;
			}
			if (jp->p < jp->end && *jp->p == close) {
				jp->p++;
				break;
			}
			jp->err = "expected ',' or a closing bracket";
			return -1;
		}
		break;
	}
	case '"':
		v->type = J_STR;
		v->str = jstring(jp);
		if (!v->str) {
			if (!jp->err)
				jp->err = "out of memory";
			return -1;
		}
		break;
	case 't':
	case 'f':
	case 'n':
		if (jp->end - jp->p >= 4 && !strncmp(jp->p, "true", 4)) {
			v->type = J_BOOL;
			v->num = 1;
			jp->p += 4;
		} else if (jp->end - jp->p >= 5 && !strncmp(jp->p, "false", 5)) {
			v->type = J_BOOL;
			jp->p += 5;
		} else if (jp->end - jp->p >= 4 && !strncmp(jp->p, "null", 4)) {
			jp->p += 4;
		} else {
			jp->err = "bad literal";
			return -1;
		}
		break;
	default: {
		char *e;

		errno = 0;
		v->type = J_NUM;
		v->num = strtod(jp->p, &e);
		if (e == jp->p) {
			jp->err = "bad value";
			return -1;
		}
		jp->p = e;
	}
	}
	jp->depth--;
	return 0;
}

static const struct jval *jget(const struct jval *o, const char *key)
{
	size_t i;

	if (!o || o->type != J_OBJ)
		return NULL;
	for (i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return &o->kids[i];
	return NULL;
}

static const char *jstr(const struct jval *o, const char *key)
{
	const struct jval *v = jget(o, key);

	return v && v->type == J_STR ? v->str : NULL;
}

static int jnum(const struct jval *o, const char *key, double *out)
{
	const struct jval *v = jget(o, key);

	if (v && v->type == J_NUM) {
		*out = v->num;
		return 1;
	}
	if (v && v->type == J_STR) {	/* pid/tid may be strings */
		char *e;

		*out = strtod(v->str, &e);
		return e != v->str;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Trace model
 */
struct lane {
	double pid, tid;
	char name[96];
	double sort;
	int has_sort;
	size_t nev;
	double busy;
	int index;		/* row in the picture */
};

struct event {
	int lane;
	double ts, dur;
	char name[64];
	char tip[256];
};

static struct lane *lanes;
static size_t nlanes, lanes_cap;
static struct event *events;
static size_t nevents, events_cap;

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 64;
	p = realloc(p, *cap * size);
	if (!p) {
		fprintf(stderr, "npu-timeline: out of memory\n");
		exit(1);
	}
	return p;
}

static int lane_of(double pid, double tid)
{
	size_t i;

	for (i = 0; i < nlanes; i++)
		if (lanes[i].pid == pid && lanes[i].tid == tid)
			return (int)i;
	lanes = grow(lanes, &lanes_cap, nlanes, sizeof(*lanes));
	memset(&lanes[nlanes], 0, sizeof(*lanes));
	lanes[nlanes].pid = pid;
	lanes[nlanes].tid = tid;
	snprintf(lanes[nlanes].name, sizeof(lanes[nlanes].name), "%g/%g", pid, tid);
	return (int)nlanes++;
}

static void add_event(int lane, double ts, double dur, const char *name,
		      const struct jval *args)
{
	struct event *e;
	size_t i, off;

	events = grow(events, &events_cap, nevents, sizeof(*events));
	e = &events[nevents++];
	e->lane = lane;
	e->ts = ts;
	e->dur = dur < 0 ? 0 : dur;
	snprintf(e->name, sizeof(e->name), "%s", name ? name : "?");
	off = (size_t)snprintf(e->tip, sizeof(e->tip), "%s: %.1f us", e->name, e->dur);
	for (i = 0; args && args->type == J_OBJ && i < args->n && off < sizeof(e->tip); i++) {
		const struct jval *a = &args->kids[i];

		if (a->type == J_NUM)
			off += (size_t)snprintf(e->tip + off, sizeof(e->tip) - off, ", %s=%g",
						args->keys[i], a->num);
		else if (a->type == J_STR)
			off += (size_t)snprintf(e->tip + off, sizeof(e->tip) - off, ", %s=%s",
						args->keys[i], a->str);
	}
}

static int load_trace(const struct jval *root)
{
	const struct jval *evs = root;
	struct { int lane; double ts; const char *name; } open[256];
	int nopen = 0;
	size_t i;

	if (root->type == J_OBJ)
		evs = jget(root, "traceEvents");
	if (!evs || evs->type != J_ARR) {
		fprintf(stderr, "npu-timeline: no traceEvents array\n");
		return -1;
	}
	for (i = 0; i < evs->n; i++) {
		const struct jval *e = &evs->kids[i];
		const char *ph = jstr(e, "ph"), *name = jstr(e, "name");
		double pid = 0, tid = 0, ts = 0, dur = 0;
		int l;

		if (!ph)
			continue;
		jnum(e, "pid", &pid);
		jnum(e, "tid", &tid);
		if (ph[0] == 'M') {
			const struct jval *args = jget(e, "args");
			const char *n = jstr(args, "name");
			double sort;

			if (!name)
				continue;
			if (!strcmp(name, "thread_name") && n) {
				l = lane_of(pid, tid);
				snprintf(lanes[l].name, sizeof(lanes[l].name), "%s", n);
			} else if (!strcmp(name, "thread_sort_index") &&
				   jnum(args, "sort_index", &sort)) {
				l = lane_of(pid, tid);
				lanes[l].sort = sort;
				lanes[l].has_sort = 1;
			}
			continue;
		}
		if (!jnum(e, "ts", &ts))
			continue;
		if (ph[0] == 'X') {
			jnum(e, "dur", &dur);
			add_event(lane_of(pid, tid), ts, dur, name, jget(e, "args"));
		} else if (ph[0] == 'B' && nopen < 256) {
			open[nopen].lane = lane_of(pid, tid);
			open[nopen].ts = ts;
			open[nopen].name = name;
			nopen++;
		} else if (ph[0] == 'E') {
			int k;

			l = lane_of(pid, tid);
			for (k = nopen - 1; k >= 0; k--)
				if (open[k].lane == l)
					break;
			if (k < 0)
				continue;
			add_event(l, open[k].ts, ts - open[k].ts, open[k].name, NULL);
			open[k] = open[--nopen];
		}
	}
	return 0;
}

static int cmp_lane(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	double kx = x->has_sort ? x->sort : 1e18, ky = y->has_sort ? y->sort : 1e18;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return 0;
}

static int cmp_event_ts(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	if (x->lane != y->lane)
		return x->lane - y->lane;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Colour of an event name: a fixed palette indexed by a hash, so that the
 * same kernel has the same colour in every picture. */
static uint32_t colour_of(const char *name)
{
	static const uint32_t pal[] = {
		0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x8cd17d, 0xedc948,
		0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac, 0x1f77b4, 0x17becf,
	};
	uint32_t h = 2166136261u;

	/* copies share a family of colours by direction */
	if (!strncmp(name, "H2D", 3) || !strncmp(name, "copy H2D", 8))
		return 0x2ca02c;
	if (!strncmp(name, "D2H", 3) || !strncmp(name, "copy D2H", 8))
		return 0xd62728;
	if (!strncmp(name, "D2D", 3) || !strncmp(name, "copy D2D", 8))
		return 0x8c564b;
	/* other copies and fills (e.g. libnpu's "copy 4096 B") */
	if (!strncmp(name, "copy", 4) || !strncmp(name, "memcpy", 6))
		return 0x59a14f;
	if (!strncmp(name, "fill", 4) || !strncmp(name, "memset", 6))
		return 0x9c9c9c;
	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return pal[h % (sizeof(pal) / sizeof(pal[0]))];
}

/* ------------------------------------------------------------------------
 * Raster canvas and PNG writer
 */
struct canvas {
	int w, h;
	uint8_t *px;	/* RGB */
};

static void fill_rect(struct canvas *c, int x, int y, int w, int h, uint32_t rgb)
{
	int i, j;

	if (x < 0) { w += x; x = 0; }
	if (y < 0) { h += y; y = 0; }
	if (x + w > c->w) w = c->w - x;
	if (y + h > c->h) h = c->h - y;
	for (j = y; j < y + h; j++)
		for (i = x; i < x + w; i++) {
			uint8_t *p = c->px + ((size_t)j * c->w + i) * 3;

			p[0] = rgb >> 16;
			p[1] = rgb >> 8;
			p[2] = rgb;
		}
}

/* Text with the 3x5 font at scale s (a glyph cell is 4s x 6s). */
static void draw_text(struct canvas *c, int x, int y, const char *s, int scale,
		      uint32_t rgb)
{
	for (; *s; s++, x += 4 * scale) {
		const uint8_t *g = font3x5_glyph((unsigned char)*s);
		int r, b;

		if (!g)
			continue;
		for (r = 0; r < 5; r++)
			for (b = 0; b < 3; b++)
				if (g[r] & (4 >> b))
					fill_rect(c, x + b * scale, y + r * scale, scale, scale, rgb);
	}
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static int png_chunk(FILE *f, const char *type, const uint8_t *data, uint32_t len)
{
	uint8_t hdr[8];
	uint32_t crc;

	put_be32(hdr, len);
	memcpy(hdr + 4, type, 4);
	crc = crc32(0, (const Bytef *)type, 4);
	if (len)
		crc = crc32(crc, data, len);
	if (fwrite(hdr, 1, 8, f) != 8 || (len && fwrite(data, 1, len, f) != len))
		return -1;
	put_be32(hdr, crc);
	return fwrite(hdr, 1, 4, f) == 4 ? 0 : -1;
}

static int write_png(const char *path, const struct canvas *c)
{
	static const uint8_t sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	size_t rowlen = (size_t)c->w * 3 + 1, rawlen = rowlen * c->h;
	uint8_t ihdr[13], *raw = malloc(rawlen), *z;
	uLongf zlen = compressBound(rawlen);
	FILE *f;
	int y, rc = -1;

	z = malloc(zlen);
	if (!raw || !z)
		goto out;
	for (y = 0; y < c->h; y++) {
		raw[y * rowlen] = 0;	/* filter: none */
		memcpy(raw + y * rowlen + 1, c->px + (size_t)y * c->w * 3, rowlen - 1);
	}
	if (compress2(z, &zlen, raw, rawlen, 6) != Z_OK)
		goto out;
	put_be32(ihdr, c->w);
	put_be32(ihdr + 4, c->h);
	ihdr[8] = 8;	/* bit depth */
	ihdr[9] = 2;	/* RGB */
	ihdr[10] = ihdr[11] = ihdr[12] = 0;
	f = fopen(path, "wb");
	if (!f)
		goto out;
	if (fwrite(sig, 1, 8, f) == 8 && !png_chunk(f, "IHDR", ihdr, 13) &&
	    !png_chunk(f, "IDAT", z, (uint32_t)zlen) && !png_chunk(f, "IEND", NULL, 0))
		rc = 0;
	if (fclose(f))
		rc = -1;
out:
	free(raw);
	free(z);
	return rc;
}

/* ------------------------------------------------------------------------
 * Layout shared by the SVG and PNG renderers
 */
static int LABEL_W = 200;
#define LANE_H		26
#define TOP		40
#define BOTTOM		36
#define MARGIN		12

static double nice_step(double span, int ticks)
{
	double raw = span / ticks, mag = pow(10, floor(log10(raw))), r = raw / mag;

	return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

static void fmt_time(char *buf, size_t n, double us)
{
	if (fabs(us) >= 1e6)
		snprintf(buf, n, "%gs", us / 1e6);
	else if (fabs(us) >= 1e3)
		snprintf(buf, n, "%gms", us / 1e3);
	else
		snprintf(buf, n, "%gus", us);
}

static void xml_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

int main(int argc, char **argv)
{
	const char *title = NULL, *in, *outbase;
	int width = 1400, opt_i = 1, W, H, plot_w;
	double t0 = 1e300, t1 = -1e300, span, step, t;
	struct jparser jp;
	struct jval root;
	struct canvas cv;
	char *buf, path[4096], tl[32];
	size_t len = 0, cap = 1 << 20, i, r;
	FILE *f;

	while (opt_i < argc && argv[opt_i][0] == '-' && argv[opt_i][1]) {
		if (!strcmp(argv[opt_i], "-t") && opt_i + 1 < argc) {
			title = argv[opt_i + 1];
			opt_i += 2;
		} else if (!strcmp(argv[opt_i], "-w") && opt_i + 1 < argc) {
			width = atoi(argv[opt_i + 1]);
			opt_i += 2;
		} else {
			break;
		}
	}
	if (argc - opt_i != 2 || width < 400 || width > 20000) {
		fprintf(stderr, "usage: npu-timeline [-t TITLE] [-w WIDTH] TRACE.json OUTBASE\n"
			"writes OUTBASE.svg and OUTBASE.png\n");
		return 2;
	}
	in = argv[opt_i];
	outbase = argv[opt_i + 1];
	if (!title)
		title = in;

	f = strcmp(in, "-") ? fopen(in, "r") : stdin;
	if (!f) {
		fprintf(stderr, "npu-timeline: %s: %s\n", in, strerror(errno));
		return 1;
	}
	buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + len, 1, cap - len, f);

		len += got;
		if (len < cap)
			break;
		buf = realloc(buf, cap *= 2);
	}
	if (f != stdin)
		fclose(f);
	if (!buf) {
		fprintf(stderr, "npu-timeline: out of memory\n");
		return 1;
	}
	jp.p = buf;
	jp.end = buf + len;
	jp.depth = 0;
	jp.err = NULL;
	if (jparse(&jp, &root)) {
		fprintf(stderr, "npu-timeline: %s: JSON error at byte %zu: %s\n", in,
			(size_t)(jp.p - buf), jp.err ? jp.err : "?");
		return 1;
	}
	if (load_trace(&root))
		return 1;
	if (!nevents) {
		fprintf(stderr, "npu-timeline: %s: no events\n", in);
		return 1;
	}

	/* Sort lanes, renumber the events' lanes, sort events per lane. */
	for (i = 0; i < nlanes; i++)
		lanes[i].index = (int)i;
	qsort(lanes, nlanes, sizeof(*lanes), cmp_lane);
	{
		int *map = calloc(nlanes, sizeof(int));

		if (!map)
			return 1;
		for (i = 0; i < nlanes; i++)
			map[lanes[i].index] = (int)i;
		for (i = 0; i < nevents; i++)
			events[i].lane = map[events[i].lane];
		free(map);
	}
	qsort(events, nevents, sizeof(*events), cmp_event_ts);
	for (i = 0; i < nevents; i++) {
		if (events[i].ts < t0)
			t0 = events[i].ts;
		if (events[i].ts + events[i].dur > t1)
			t1 = events[i].ts + events[i].dur;
	}
	span = t1 - t0 > 0 ? t1 - t0 : 1;

	/* Busy time per lane: union of intervals (events sorted by ts). */
	for (i = 0; i < nevents;) {
		int l = events[i].lane;
		double cur_s = events[i].ts, cur_e = events[i].ts + events[i].dur, busy = 0;
		size_t n = 0;

		for (; i < nevents && events[i].lane == l; i++, n++) {
			double s = events[i].ts, e = s + events[i].dur;

			if (s > cur_e) {
				busy += cur_e - cur_s;
				cur_s = s;
				cur_e = e;
			} else if (e > cur_e) {
				cur_e = e;
			}
		}
		busy += cur_e - cur_s;
		lanes[l].busy = busy;
		lanes[l].nev = n;
	}

	for (r = 0; r < nlanes; r++)	/* room for the longest lane name */
		if ((int)strlen(lanes[r].name) * 8 + 56 > LABEL_W)
			LABEL_W = (int)strlen(lanes[r].name) * 8 + 56;
	if (LABEL_W > width / 2)
		LABEL_W = width / 2;
	W = width;
	plot_w = W - LABEL_W - 2 * MARGIN;
	H = TOP + (int)nlanes * LANE_H + BOTTOM;
	step = nice_step(span, 10);
#define XOF(tt) (LABEL_W + MARGIN + (double)((tt) - t0) / span * plot_w)

	/* SVG */
	snprintf(path, sizeof(path), "%s.svg", outbase);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "npu-timeline: %s: %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", W, H, MARGIN);
	xml_escape(f, title);
	fmt_time(tl, sizeof(tl), span);
	fprintf(f, "</text>\n<text x=\"%d\" y=\"22\" text-anchor=\"end\" fill=\"#555\">"
		"span %s, %zu commands</text>\n", W - MARGIN, tl, nevents);
	for (r = 0; r < nlanes; r++) {
		int y = TOP + (int)r * LANE_H;

		fprintf(f, "<rect x=\"0\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
			y, W, LANE_H, r % 2 ? "#f4f4f4" : "#ffffff");
		fprintf(f, "<text x=\"%d\" y=\"%d\">", MARGIN, y + 17);
		xml_escape(f, lanes[r].name);
		fprintf(f, "</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#777\" "
			"font-size=\"10\">%.0f%%</text>\n", LABEL_W, y + 17,
			100.0 * lanes[r].busy / span);
	}
	for (t = ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) {
		double x = XOF(t);

		fmt_time(tl, sizeof(tl), t - t0);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ccc\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\" "
			"font-size=\"10\">%s</text>\n", x, TOP, x, TOP + (int)nlanes * LANE_H,
			x, TOP + (int)nlanes * LANE_H + 14, tl);
	}
	for (i = 0; i < nevents; i++) {
		const struct event *e = &events[i];
		double x = XOF(e->ts), w = e->dur / span * plot_w;
		int y = TOP + e->lane * LANE_H + 3;

		if (w < 0.5)
			w = 0.5;
		fprintf(f, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
			"fill=\"#%06x\" stroke=\"#333\" stroke-width=\"0.3\"><title>",
			x, y, w, LANE_H - 6, colour_of(e->name));
		xml_escape(f, e->tip);
		fputs("</title></rect>\n", f);
		if (w > 7.0 * strlen(e->name)) {
			fprintf(f, "<text x=\"%.2f\" y=\"%d\" font-size=\"10\" fill=\"white\">",
				x + 3, y + 14);
			xml_escape(f, e->name);
			fputs("</text>\n", f);
		}
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\" font-size=\"10\">time since the first "
		"command (device clock); %% = busy fraction of the span</text>\n</svg>\n",
		MARGIN, H - 6);
	if (fclose(f)) {
		fprintf(stderr, "npu-timeline: %s: write failed\n", path);
		return 1;
	}

	/* PNG: the same layout, drawn into an RGB canvas. */
	cv.w = W;
	cv.h = H;
	cv.px = malloc((size_t)W * H * 3);
	if (!cv.px)
		return 1;
	memset(cv.px, 0xff, (size_t)W * H * 3);
	draw_text(&cv, MARGIN, 10, title, 3, 0x000000);
	for (r = 0; r < nlanes; r++) {
		int y = TOP + (int)r * LANE_H;
		char pct[16];

		fill_rect(&cv, 0, y, W, LANE_H, r % 2 ? 0xf4f4f4 : 0xffffff);
		draw_text(&cv, MARGIN, y + 8, lanes[r].name, 2, 0x000000);
		snprintf(pct, sizeof(pct), "%.0f%%", 100.0 * lanes[r].busy / span);
		draw_text(&cv, LABEL_W - 8 * (int)strlen(pct), y + 8, pct, 2, 0x777777);
	}
	for (t = ceil(t0 / step) * step; t <= t1 + 1e-9; t += step) {
		int x = (int)XOF(t);

		fmt_time(tl, sizeof(tl), t - t0);
		fill_rect(&cv, x, TOP, 1, (int)nlanes * LANE_H, 0xcccccc);
		draw_text(&cv, x - 4 * (int)strlen(tl), TOP + (int)nlanes * LANE_H + 6, tl, 2,
			  0x555555);
	}
	for (i = 0; i < nevents; i++) {
		const struct event *e = &events[i];
		int x = (int)XOF(e->ts), x2 = (int)XOF(e->ts + e->dur);
		int y = TOP + e->lane * LANE_H + 3;

		if (x2 <= x)
			x2 = x + 1;
		fill_rect(&cv, x, y, x2 - x, LANE_H - 6, colour_of(e->name));
		if (x2 - x > 3) {	/* thin dark edge between boxes */
			fill_rect(&cv, x, y, 1, LANE_H - 6, 0x333333);
		}
		if ((size_t)(x2 - x) > 8 * strlen(e->name) + 6)
			draw_text(&cv, x + 3, y + 5, e->name, 2, 0xffffff);
	}
	snprintf(path, sizeof(path), "%s.png", outbase);
	if (write_png(path, &cv)) {
		fprintf(stderr, "npu-timeline: %s: write failed\n", path);
		return 1;
	}

	fmt_time(tl, sizeof(tl), span);
	printf("%-32s %8s %12s %6s   (span %s)\n", "lane", "commands", "busy_us", "busy", tl);
	for (r = 0; r < nlanes; r++)
		printf("%-32s %8zu %12.1f %5.1f%%\n", lanes[r].name, lanes[r].nev, lanes[r].busy,
		       100.0 * lanes[r].busy / span);
	printf("wrote %s.svg and %s.png\n", outbase, outbase);
	return 0;
}
