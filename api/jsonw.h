/* jsonw.h — a streaming JSON text writer for the API's large answers
 * (GET /v1/guests on a host with thousands of guests): straight into one
 * growing buffer, several times faster than building a jansson tree and
 * dumping it. Strings are escaped, and bytes that are not UTF-8 become
 * U+FFFD, so the output is always valid JSON whatever a cgroup is named.
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
/* Raw text that is already valid JSON (a newline at the end, say). */
void jw_raw(struct jw *w, const char *s);

#endif
