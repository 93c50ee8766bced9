/* jsonw.h — a streaming JSON text writer for the API's one large answer,
 * GET /v1/guests (a page of up to a thousand guests, rebuilt for every
 * filtered or paged request): straight into one growing buffer.
 *
 * Kept beside jansson for a measured reason: for the same bytes, a jansson
 * tree of the guests plus json_dumps takes about five times the CPU and
 * over three times the peak heap (tests/bench/bench_jsonw.c builds the
 * document both ways, checks the texts are identical, and times them).
 * The other answers go through jansson.
 *
 * One escaping rule for both writers: jw_str writes a string exactly as
 * json_dumps does (test_api_parse compares them over a table of control
 * characters, non-ASCII and broken UTF-8); bytes that are not UTF-8, which
 * jansson refuses and a cgroup may be named with, become U+FFFD.
 */
#ifndef NUMAORCH_JSONW_H
#define NUMAORCH_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jw {
	char *buf;
	size_t len, cap;
	bool comma;       /* a value was written at this level: the next needs ',' */
};

void jw_init(struct jw *w, size_t cap);
/* The text (NUL-terminated), the caller's to free(). */
char *jw_take(struct jw *w, size_t *len);
void jw_free(struct jw *w);

void jw_obj(struct jw *w);            /* { */
void jw_obj_end(struct jw *w);        /* } */
void jw_arr(struct jw *w);            /* [ */
void jw_arr_end(struct jw *w);        /* ] */
void jw_key(struct jw *w, const char *k);   /* "k": (K is trusted ASCII) */

void jw_str(struct jw *w, const char *s);
void jw_int(struct jw *w, int64_t v);
/* Rounded to 4 decimals as snapjson does; null for NaN/Inf. */
void jw_real(struct jw *w, double v);
void jw_null(struct jw *w);
void jw_bool(struct jw *w, bool v);
/* Raw text that is already valid JSON (a newline at the end, say). */
void jw_raw(struct jw *w, const char *s);

#endif
