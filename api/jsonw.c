#include "jsonw.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "urlq.h"
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

void jw_str(struct jw *w, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t left = strlen((const char *)p);

	sep(w);
	grow(w, left + 2);
	putc_(w, '"');
	while (left) {
		unsigned char c = *p;
		size_t n;

		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };

			put(w, e, 2);
			p++;
			left--;
		} else if (c < 0x20 || c == 0x7f) {
			char e[8];

			snprintf(e, sizeof(e), "\\u%04x", c);
			put(w, e, 6);
			p++;
			left--;
		} else if ((n = utf8_seq((const char *)p, left))) {
			put(w, (const char *)p, n);
			p += n;
			left -= n;
		} else {
			put(w, "\\ufffd", 6);
			p++;
			left--;
		}
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

void jw_null(struct jw *w)
{
	sep(w);
	put(w, "null", 4);
}

void jw_raw(struct jw *w, const char *s)
{
	put(w, s, strlen(s));
}
