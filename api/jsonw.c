#include "jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/utf8.h"

void jw_init(struct jw *w, size_t cap)
{
	w->cap = cap ? cap : 256;
	w->len = 0;
	w->buf = xmalloc(w->cap);
	w->buf[0] = '\0';
	w->comma = false;
}

char *jw_take(struct jw *w, size_t *len)
{
	char *b = w->buf;

	if (len)
		*len = w->len;
	w->buf = NULL;
	w->len = w->cap = 0;
	return b;
}

void jw_free(struct jw *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

static void grow(struct jw *w, size_t more)
{
	if (w->len + more + 1 <= w->cap)
		return;
	while (w->len + more + 1 > w->cap)
		w->cap *= 2;
	w->buf = xrealloc(w->buf, w->cap);
}

static void put(struct jw *w, const char *s, size_t n)
{
	grow(w, n);
	memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

static void putc_(struct jw *w, char c)
{
	put(w, &c, 1);
}

/* Before a value or a key: the comma that separates it from the last. */
static void sep(struct jw *w)
{
	if (w->comma)
		putc_(w, ',');
	w->comma = true;
}

void jw_obj(struct jw *w)
{
	sep(w);
	putc_(w, '{');
	w->comma = false;
}

void jw_obj_end(struct jw *w)
{
	putc_(w, '}');
	w->comma = true;
}

void jw_arr(struct jw *w)
{
	sep(w);
	putc_(w, '[');
	w->comma = false;
}

void jw_arr_end(struct jw *w)
{
	putc_(w, ']');
	w->comma = true;
}

void jw_key(struct jw *w, const char *k)
{
	sep(w);
	putc_(w, '"');
	put(w, k, strlen(k));
	put(w, "\":", 2);
	w->comma = false;
}

/* A string as jansson's json_dumps writes it (its dump.c), so that this
 * answer and the jansson ones escape alike: '"' and '\\' escaped, \b \f
 * \n \r \t in their short forms, the other C0 controls as \u00XX in
 * upper-case hex, everything else (DEL, C1 controls, any other UTF-8) as
 * it is; '/' is not escaped. jansson refuses bytes that are not UTF-8;
 * here each such byte becomes U+FFFD, written as UTF-8, as if the name had
 * been repaired before jansson saw it. */
void jw_str(struct jw *w, const char *s)
{
	const char *p = s ? s : "";
	size_t left = strlen(p);

	sep(w);
	grow(w, left + 2);
	putc_(w, '"');
	while (left) {
		unsigned char c = (unsigned char)*p;
		const char *e;
		char u[8];
		size_t n = 0;

		/* Runs of plain ASCII, the whole of most names, in one copy. */
		while (n < left && (unsigned char)p[n] >= 0x20 && (unsigned char)p[n] < 0x80 && p[n] != '"' &&
		       p[n] != '\\')
			n++;
		if (n) {
			put(w, p, n);
			p += n;
			left -= n;
			continue;
		}
		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			if (c < 0x20) {
				snprintf(u, sizeof(u), "\\u%04X", c);
				e = u;
			} else if ((n = utf8_seq(p, left))) {
				put(w, p, n);
				p += n;
				left -= n;
				continue;
			} else {
				e = "\xef\xbf\xbd";
			}
		}
		put(w, e, strlen(e));
		p++;
		left--;
	}
	putc_(w, '"');
}

void jw_int(struct jw *w, int64_t v)
{
	char b[24];

	sep(w);
	put(w, b, (size_t)snprintf(b, sizeof(b), "%lld", (long long)v));
}

void jw_real(struct jw *w, double v)
{
	char b[40];
	int n;

	if (isnan(v) || isinf(v)) {
		jw_null(w);
		return;
	}
	sep(w);
	n = snprintf(b, sizeof(b), "%.10g", round(v * 10000.0) / 10000.0);
	/* As jansson writes reals: always with a '.' or an exponent. */
	if (!strpbrk(b, ".e"))
		n += snprintf(b + n, sizeof(b) - (size_t)n, ".0");
	put(w, b, (size_t)n);
}

void jw_bool(struct jw *w, bool v)
{
	sep(w);
	put(w, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(struct jw *w)
{
	sep(w);
	put(w, "null", 4);
}

void jw_raw(struct jw *w, const char *s)
{
	put(w, s, strlen(s));
}
