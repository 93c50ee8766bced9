#include "promtext.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/xalloc.h"

void prom_init(struct prom *p)
{
	prom_init_size(p, 0);
}

void prom_init_size(struct prom *p, size_t expect)
{
	p->cap = expect > 4096 ? expect : 4096;
	p->len = 0;
	p->buf = xmalloc(p->cap);
	p->buf[0] = '\0';
}

char *prom_take(struct prom *p, size_t *len)
{
	char *b = p->buf;

	if (len)
		*len = p->len;
	p->buf = NULL;
	p->len = p->cap = 0;
	return b;
}

void prom_free(struct prom *p)
{
	free(p->buf);
	p->buf = NULL;
	p->len = p->cap = 0;
}

static void reserve(struct prom *p, size_t more)
{
	if (p->len + more + 1 <= p->cap)
		return;
	while (p->len + more + 1 > p->cap)
		p->cap *= 2;
	p->buf = xrealloc(p->buf, p->cap);
}

static void put(struct prom *p, const char *s, size_t n)
{
	reserve(p, n);
	memcpy(p->buf + p->len, s, n);
	p->len += n;
	p->buf[p->len] = '\0';
}

void prom_printf(struct prom *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(p->buf + p->len, p->cap - p->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= p->cap - p->len) {
		reserve(p, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(p->buf + p->len, p->cap - p->len, fmt, ap);
		va_end(ap);
	}
	p->len += (size_t)n;
}

void prom_family(struct prom *p, const char *name, const char *type, const char *help)
{
	/* HELP text escapes only backslash and newline. */
	prom_printf(p, "# HELP %s ", name);
	for (const char *c = help; *c; c++) {
		if (*c == '\\')
			put(p, "\\\\", 2);
		else if (*c == '\n')
			put(p, "\\n", 2);
		else
			put(p, c, 1);
	}
	prom_printf(p, "\n# TYPE %s %s\n", name, type);
}

static void label_value(struct prom *p, const char *v)
{
	for (const char *c = v; *c; c++) {
		if (*c == '\\')
			put(p, "\\\\", 2);
		else if (*c == '"')
			put(p, "\\\"", 2);
		else if (*c == '\n')
			put(p, "\\n", 2);
		else
			put(p, c, 1);
	}
}

void prom_sample(struct prom *p, const char *name, double value, unsigned nlabels, ...)
{
	va_list ap;

	put(p, name, strlen(name));
	if (nlabels) {
		va_start(ap, nlabels);
		put(p, "{", 1);
		for (unsigned i = 0; i < nlabels; i++) {
			const char *k = va_arg(ap, const char *), *v = va_arg(ap, const char *);

			prom_printf(p, "%s%s=\"", i ? "," : "", k);
			label_value(p, v ? v : "");
			put(p, "\"", 1);
		}
		put(p, "}", 1);
		va_end(ap);
	}
	if (isnan(value))
		put(p, " NaN\n", 5);
	else if (isinf(value))
		prom_printf(p, " %cInf\n", value > 0 ? '+' : '-');
	else if (value == floor(value) && fabs(value) < 9.007199254740992e15)
		prom_printf(p, " %.0f\n", value);
	else
		prom_printf(p, " %.15g\n", value);
}

void prom_gauge(struct prom *p, const char *name, const char *help, double value)
{
	prom_family(p, name, "gauge", help);
	prom_sample(p, name, value, 0);
}
