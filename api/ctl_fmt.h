/* ctl_fmt.h — numaorchctl's human output: aligned tables and units. */
#ifndef NUMAORCH_CTL_FMT_H
#define NUMAORCH_CTL_FMT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

struct table;

/* A table with NCOL columns; the first row added is the header. */
struct table *table_new(unsigned ncol);
/* Add a row of NCOL strings (NULL prints as "-"); copied. */
void table_row(struct table *t, ...);
/* Print with each column as wide as its widest cell; frees T. */
void table_print(struct table *t, FILE *f);

/* "1.5 GiB", "512 MiB", "12 KiB", "0 B". */
const char *fmt_bytes(double bytes, char *buf, size_t sz);
/* A 0..1 ratio as "87%"; null as "-". */
const char *fmt_ratio(json_t *v, char *buf, size_t sz);
/* A number with up to DEC decimals; null as "-". */
const char *fmt_num(json_t *v, int dec, char *buf, size_t sz);
/* "3d 4h", "2h 5m", "5m 3s", "42s". */
const char *fmt_duration(double s, char *buf, size_t sz);

/* S as it may go to a terminal: S itself when it holds no control
 * characters (C0, DEL, C1) and is UTF-8, else a copy with those bytes as
 * \xNN, kept until fmt_safe_release() or exit. Names come from the host:
 * a cgroup named with an ESC sequence must not drive the operator's
 * terminal. NULL: "". */
const char *fmt_safe(const char *s);
/* Free every copy fmt_safe has handed out: a long-lived caller (top's
 * live view) calls it once a screen is drawn, or the copies grow without
 * end. */
void fmt_safe_release(void);
/* S escaped as fmt_safe does, always a copy of its own; free() it.
 * NULL: "". */
char *fmt_safe_dup(const char *s);

/* LEN bytes of server text S (NUL bytes too) to F, escaped as fmt_safe
 * does; with LINES, newlines and tabs go through as they are (a
 * multi-line body such as /metrics). */
void fmt_safe_write(FILE *f, const char *s, size_t len, bool lines);

/* J as JSON to F (json_dumps FLAGS) and a newline: jansson leaves DEL and
 * the C1 controls raw in strings, so they are written as \u00NN (the
 * same JSON value) before they reach a terminal. */
void fmt_json_print(FILE *f, json_t *j, size_t flags);

/* A sparkline of V[0..N) (ratios 0..1, NAN: a gap) in at most WIDTH
 * columns (columns average the samples they cover): UTF-8 blocks
 * (▁..█), or "_.,-=+*#" when !UTF8. Returns BUF. */
const char *fmt_spark(const double *v, unsigned n, unsigned width, bool utf8, char *buf, size_t sz);

/* Object member helpers that tolerate absence (NULL object too). */
const char *jstr(json_t *o, const char *key);      /* "" when absent; fmt_safe'd */
double jnum(json_t *o, const char *key);           /* NAN when absent */
long long jint(json_t *o, const char *key);        /* 0 when absent */

#endif
