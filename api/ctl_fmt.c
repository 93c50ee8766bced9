#include "ctl_fmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/utf8.h"

struct table {
	unsigned ncol, nrows, cap;
	char **cells;
};

static void *xalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p)
		abort(); /* the project's OOM policy */
	return p;
}

struct table *table_new(unsigned ncol)
{
	struct table *t = xalloc(sizeof(*t));

	t->ncol = ncol;
	return t;
}

void table_row(struct table *t, ...)
{
	va_list ap;

	if (t->nrows == t->cap) {
		char **nc;

		t->cap = t->cap ? t->cap * 2 : 16;
		nc = realloc(t->cells, (size_t)t->cap * t->ncol * sizeof(char *));
		if (!nc)
			abort();
		t->cells = nc;
	}
	va_start(ap, t);
	for (unsigned c = 0; c < t->ncol; c++) {
		const char *s = va_arg(ap, const char *);
		char *d = strdup(s && *s ? s : "-");

		if (!d)
			abort();
		t->cells[t->nrows * t->ncol + c] = d;
	}
	va_end(ap);
	t->nrows++;
}

void table_print(struct table *t, FILE *f)
{
	size_t *w = xalloc(t->ncol * sizeof(size_t));

	for (unsigned r = 0; r < t->nrows; r++)
		for (unsigned c = 0; c < t->ncol; c++) {
			size_t n = strlen(t->cells[r * t->ncol + c]);

			if (n > w[c])
				w[c] = n;
		}
	for (unsigned r = 0; r < t->nrows; r++) {
		for (unsigned c = 0; c < t->ncol; c++) {
			const char *s = t->cells[r * t->ncol + c];

			if (c + 1 == t->ncol)
				fprintf(f, "%s\n", s);
			else
				fprintf(f, "%-*s  ", (int)w[c], s);
		}
	}
	for (unsigned i = 0; i < t->nrows * t->ncol; i++)
		free(t->cells[i]);
	free(t->cells);
	free(w);
	free(t);
}

const char *fmt_bytes(double b, char *buf, size_t sz)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	unsigned u = 0;

	if (isnan(b)) {
		snprintf(buf, sz, "-");
		return buf;
	}
	while (b >= 1024 && u < 5) {
		b /= 1024;
		u++;
	}
	snprintf(buf, sz, u && b < 10 ? "%.1f %s" : "%.0f %s", b, unit[u]);
	return buf;
}

const char *fmt_ratio(json_t *v, char *buf, size_t sz)
{
	if (!json_is_number(v))
		snprintf(buf, sz, "-");
	else
		snprintf(buf, sz, "%.0f%%", json_number_value(v) * 100);
	return buf;
}

const char *fmt_num(json_t *v, int dec, char *buf, size_t sz)
{
	if (!json_is_number(v))
		snprintf(buf, sz, "-");
	else
		snprintf(buf, sz, "%.*f", dec, json_number_value(v));
	return buf;
}

const char *fmt_duration(double s, char *buf, size_t sz)
{
	long long t = (long long)s;

	if (t >= 86400)
		snprintf(buf, sz, "%lldd %lldh", t / 86400, t % 86400 / 3600);
	else if (t >= 3600)
		snprintf(buf, sz, "%lldh %lldm", t / 3600, t % 3600 / 60);
	else if (t >= 60)
		snprintf(buf, sz, "%lldm %llds", t / 60, t % 60);
	else
		snprintf(buf, sz, "%llds", t);
	return buf;
}


/* What utf8_escape escapes: C0 controls, DEL, C1 controls, and bytes
 * that start no UTF-8 sequence (N == 0). */
static bool unsafe_seq(const unsigned char *s, size_t n)
{
	return n == 0 || (n == 1 && (s[0] < 0x20 || s[0] == 0x7f)) || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
}

/* Whether S holds anything utf8_escape would escape. */
static bool unsafe_str(const char *s)
{
	size_t left = strlen(s);

	while (left) {
		size_t n = utf8_seq(s, left);

		if (unsafe_seq((const unsigned char *)s, n))
			return true;
		s += n;
		left -= n;
	}
	return false;
}

char *fmt_safe_dup(const char *in)
{
	size_t sz;
	char *out;

	if (!in)
		in = "";
	if (!unsafe_str(in)) {
		out = strdup(in);
		if (!out)
			abort();
		return out;
	}
	sz = strlen(in) * 4 + 1;
	out = xalloc(sz);
	utf8_escape(in, out, sz);
	return out;
}

/* Escaped copies handed out by fmt_safe, until fmt_safe_release (or exit). */
static char **safe_copies;
static size_t nr_safe, safe_cap;

void fmt_safe_release(void)
{
	for (size_t i = 0; i < nr_safe; i++)
		free(safe_copies[i]);
	nr_safe = 0;
}

static void safe_free(void)
{
	fmt_safe_release();
	free(safe_copies);
	safe_copies = NULL;
	safe_cap = 0;
}

const char *fmt_safe(const char *in)
{
	if (!in)
		return "";
	/* most text needs nothing: no copy, and no 4x buffer to find out */
	if (!unsafe_str(in))
		return in;
	if (!safe_cap)
		atexit(safe_free);
	if (nr_safe == safe_cap) {
		size_t cap = safe_cap ? safe_cap * 2 : 64;
		char **nv = realloc(safe_copies, cap * sizeof(char *));

		if (!nv)
			abort();
		safe_copies = nv;
		safe_cap = cap;
	}
	safe_copies[nr_safe] = fmt_safe_dup(in);
	return safe_copies[nr_safe++];
}

void fmt_safe_write(FILE *f, const char *s, size_t len, bool lines)
{
	size_t i = 0, run = 0;

	while (i < len) {
		size_t n = utf8_seq(s + i, len - i);

		if (!unsafe_seq((const unsigned char *)s + i, n) || (lines && (s[i] == '\n' || s[i] == '\t'))) {
			i += n ? n : 1;
			continue;
		}
		fwrite(s + run, 1, i - run, f);
		fprintf(f, "\\x%02x", (unsigned char)s[i]);
		run = ++i;
	}
	fwrite(s + run, 1, len - run, f);
}

struct jout {
	FILE *f;
	bool c2; /* the last byte was 0xc2, held back */
};

/* json_dump_callback's writer: straight to the file as the text is made
 * (no copy of a reply's whole text in memory), each DEL and C1 control
 * as \u00NN. Outside strings JSON is ASCII, so every such byte is inside
 * one. A 0xc2 at the end of a chunk waits for the next. */
static int jout_write(const char *buf, size_t size, void *data)
{
	struct jout *o = data;

	for (size_t i = 0; i < size; i++) {
		unsigned char c = (unsigned char)buf[i];

		if (o->c2) {
			o->c2 = false;
			if (c >= 0x80 && c < 0xa0) {
				fprintf(o->f, "\\u00%02x", c);
				continue;
			}
			putc(0xc2, o->f);
		}
		if (c == 0x7f)
			fputs("\\u007f", o->f);
		else if (c == 0xc2)
			o->c2 = true;
		else
			putc(c, o->f);
	}
	return 0;
}

void fmt_json_print(FILE *f, json_t *j, size_t flags)
{
	struct jout o = { .f = f };

	json_dump_callback(j, jout_write, &o, flags);
	if (o.c2)
		putc(0xc2, f);
	putc('\n', f);
}

const char *jstr(json_t *o, const char *key)
{
	return fmt_safe(json_string_value(json_object_get(o, key)));
}

double jnum(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

long long jint(json_t *o, const char *key)
{
	return (long long)json_integer_value(json_object_get(o, key));
}

const char *fmt_spark(const double *v, unsigned n, unsigned width, bool utf8, char *buf, size_t sz)
{
	static const char *const blocks[8] = { "\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
						"\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88" };
	static const char ascii[8] = { '_', '.', ',', '-', '=', '+', '*', '#' };
	unsigned cols = n < width ? n : width;
	size_t len = 0;

	if (sz)
		buf[0] = '\0';
	for (unsigned c = 0; c < cols; c++) {
		/* Column c covers samples [lo, hi): the whole series fits. */
		unsigned lo = (unsigned)((unsigned long long)c * n / cols);
		unsigned hi = (unsigned)((unsigned long long)(c + 1) * n / cols);
		double sum = 0;
		unsigned k = 0;
		const char *cell;
		char one[2] = { ' ', '\0' };
		size_t cl;

		for (unsigned i = lo; i < hi; i++)
			if (!isnan(v[i])) {
				sum += v[i];
				k++;
			}
		if (k) {
			double m = sum / k;
			int lvl = (int)floor((m < 0 ? 0 : m > 1 ? 1 : m) * 8);

			if (lvl > 7)
				lvl = 7;
			one[0] = ascii[lvl];
			cell = utf8 ? blocks[lvl] : one;
		} else {
			cell = " ";
		}
		cl = strlen(cell);
		if (len + cl + 1 > sz)
			break;
		memcpy(buf + len, cell, cl + 1);
		len += cl;
	}
	return buf;
}
