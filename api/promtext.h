/* promtext.h — a writer for the Prometheus text exposition format
 * (version 0.0.4): HELP/TYPE lines once per family, then samples with
 * escaped label values. Pure: it only fills a growing buffer.
 */
#ifndef NUMAORCH_PROMTEXT_H
#define NUMAORCH_PROMTEXT_H

#include <stddef.h>

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct prom {
	char *buf;
	size_t len, cap;
};

void prom_init(struct prom *p);
/* The same with room for EXPECT bytes: a text of a few MiB grown by
 * doubling holds its old and new buffer at once at each step. */
void prom_init_size(struct prom *p, size_t expect);
/* Hand the text (NUL-terminated) to the caller, who frees it. */
char *prom_take(struct prom *p, size_t *len);
void prom_free(struct prom *p);

/* Start family NAME; TYPE is "gauge", "counter", "histogram"... */
void prom_family(struct prom *p, const char *name, const char *type, const char *help);
/* One sample: NAME (a family name, or one with a _bucket/_sum/_count
 * suffix), NLABELS pairs of (const char *name, const char *value) as
 * variadic arguments, then the value. NaN and ±Inf are written as
 * Prometheus spells them. */
void prom_sample(struct prom *p, const char *name, double value, unsigned nlabels, ...);

/* printf into the buffer (raw). */
/* A gauge family with one unlabelled sample. */
void prom_gauge(struct prom *p, const char *name, const char *help, double value);
void prom_printf(struct prom *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
