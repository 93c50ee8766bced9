/* cgfdc.c — the scanner's open files (see cgfdc.h). */
#include "cgfdc.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../orchestrator/base/xalloc.h"

unsigned cgfdc_budget_for(uint64_t nofile)
{
	/* (no limit, or one past what a count of files holds) */
	if (nofile == (uint64_t)RLIM_INFINITY || nofile > UINT_MAX)
		return 1u << 20;
	return nofile > 1024 ? (unsigned)(nofile - 512) : (unsigned)(nofile / 2);
}

void cgfdc_init_budget(struct cgfdc *c, unsigned budget)
{
	memset(c, 0, sizeof(*c));
	c->budget = budget;
}

void cgfdc_init(struct cgfdc *c)
{
	struct rlimit rl;

	/* numaorchd raises the soft limit at start. */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		rl.rlim_cur = RLIM_INFINITY;
	cgfdc_init_budget(c, cgfdc_budget_for((uint64_t)rl.rlim_cur));
}

static uint32_t rel_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void fdc_close(struct cgfdc *c, struct cgfdc_ent *e)
{
	for (unsigned i = 0; i < CGFDC_NR; i++)
		cgfdc_drop(c, e, (enum cgfdc_slot)i);
	if (e->has_cpu)
		c->nr_cpu--;
	cgfdc_kids_forget(c, e);
	free(e->rel);
	e->rel = NULL;
}

static void fdc_insert(struct cgfdc_ent *tab, unsigned cap, const struct cgfdc_ent *e)
{
	unsigned i = rel_hash(e->rel) & (cap - 1);

	while (tab[i].rel)
		i = (i + 1) & (cap - 1);
	tab[i] = *e;
}

/* The slot holding REL, or the empty slot where it would go (CAP > 0). */
static unsigned fdc_probe(const struct cgfdc *c, const char *rel)
{
	unsigned i = rel_hash(rel) & (c->cap - 1);

	while (c->tab[i].rel && strcmp(c->tab[i].rel, rel) != 0)
		i = (i + 1) & (c->cap - 1);
	return i;
}

struct cgfdc_ent *cgfdc_find(struct cgfdc *c, const char *rel)
{
	unsigned i;

	if (!c->cap)
		return NULL;
	i = fdc_probe(c, rel);
	return c->tab[i].rel ? &c->tab[i] : NULL;
}

/* The entry for REL, created if absent. */
struct cgfdc_ent *cgfdc_get(struct cgfdc *c, const char *rel)
{
	unsigned i;

	if (2 * (c->n + 1) > c->cap) {
		unsigned ncap = c->cap ? c->cap * 2 : 64;
		struct cgfdc_ent *nt = xcalloc(ncap, sizeof(*nt));

		for (unsigned j = 0; j < c->cap; j++)
			if (c->tab[j].rel)
				fdc_insert(nt, ncap, &c->tab[j]);
		free(c->tab);
		c->tab = nt;
		c->cap = ncap;
	}
	i = fdc_probe(c, rel);
	if (c->tab[i].rel) {
		c->tab[i].gen = c->gen;
		return &c->tab[i];
	}
	c->tab[i].rel = xstrdup(rel);
	c->tab[i].gen = c->gen;
	for (unsigned k = 0; k < CGFDC_NR; k++)
		c->tab[i].fd[k] = -1;
	c->tab[i].has_cpu = false;
	c->tab[i].kid_names = NULL;
	c->tab[i].kid_ino = NULL;
	c->tab[i].kid_fd = NULL;
	c->tab[i].nr_kids = 0;
	c->n++;
	return &c->tab[i];
}

/* Counters the budget has no room for: guests that have one and lack it,
 * less what the budget has left. */
static unsigned cpu_short(const struct cgfdc *c)
{
	unsigned want = c->nr_cpu - c->cpu_open;

	return c->open + want > c->budget ? c->open + want - c->budget : 0;
}

/* Close other files than counters until the budget holds a counter for
 * every guest that has one (cgfdc.h). */
static void fdc_trim(struct cgfdc *c)
{
	for (unsigned j = 0; j < c->cap && cpu_short(c); j++) {
		struct cgfdc_ent *e = &c->tab[j];

		for (unsigned i = 0; e->rel && i < CGFDC_NR && cpu_short(c); i++)
			if (i != CGFDC_CPU)
				cgfdc_drop(c, e, (enum cgfdc_slot)i);
		for (unsigned i = 0; e->rel && i < 2 * e->nr_kids && cpu_short(c); i++)
			cgfdc_kid_drop(c, e, i);
	}
}

/* Close the files of guests this scan did not see; rehash the rest. */
void cgfdc_sweep(struct cgfdc *c)
{
	struct cgfdc_ent *nt;
	unsigned n = 0;

	if (!c->cap)
		return;
	nt = xcalloc(c->cap, sizeof(*nt));
	for (unsigned j = 0; j < c->cap; j++) {
		struct cgfdc_ent *e = &c->tab[j];

		if (!e->rel)
			continue;
		if (e->gen != c->gen) {
			fdc_close(c, e);
			continue;
		}
		fdc_insert(nt, c->cap, e);
		n++;
	}
	free(c->tab);
	c->tab = nt;
	c->n = n;
	fdc_trim(c);
}

void cgfdc_clear(struct cgfdc *c)
{
	for (unsigned j = 0; j < c->cap; j++)
		if (c->tab[j].rel)
			fdc_close(c, &c->tab[j]);
	free(c->tab);
	c->tab = NULL;
	c->cap = c->n = 0;
}

void cgfdc_begin(struct cgfdc *c)
{
	c->gen++;
}

void cgfdc_drop(struct cgfdc *c, struct cgfdc_ent *e, enum cgfdc_slot slot)
{
	if (e->fd[slot] < 0)
		return;
	close(e->fd[slot]);
	e->fd[slot] = -1;
	c->open--;
	if (slot == CGFDC_CPU)
		c->cpu_open--;
}

bool cgfdc_keep(struct cgfdc *c, struct cgfdc_ent *e, enum cgfdc_slot slot, int fd)
{
	if (slot == CGFDC_CPU && !e->has_cpu) {
		e->has_cpu = true;
		c->nr_cpu++;
	}
	if (c->open >= c->budget)
		return false;
	/* Another file only where a counter for every guest lacking one
	 * would still fit. */
	if (slot != CGFDC_CPU && c->open + (c->nr_cpu - c->cpu_open) >= c->budget)
		return false;
	e->fd[slot] = fd;
	c->open++;
	if (slot == CGFDC_CPU)
		c->cpu_open++;
	return true;
}

void cgfdc_kids_set(struct cgfdc *c, struct cgfdc_ent *e, ino_t dir_ino, nlink_t dir_nlink, const char *names,
		    size_t len, const ino_t *ino, unsigned n)
{
	cgfdc_kids_forget(c, e);
	e->kid_names = xmalloc(len ? len : 1);
	if (len)
		memcpy(e->kid_names, names, len);
	e->kid_ino = xcalloc(n ? n : 1, sizeof(ino_t));
	if (n)
		memcpy(e->kid_ino, ino, n * sizeof(ino_t));
	e->kid_fd = xcalloc(n ? 2 * n : 1, sizeof(int));
	for (unsigned i = 0; i < 2 * n; i++)
		e->kid_fd[i] = -1;
	e->nr_kids = n;
	e->dir_ino = dir_ino;
	e->dir_nlink = dir_nlink;
}

void cgfdc_kids_forget(struct cgfdc *c, struct cgfdc_ent *e)
{
	for (unsigned i = 0; e->kid_fd && i < 2 * e->nr_kids; i++)
		cgfdc_kid_drop(c, e, i);
	free(e->kid_names);
	free(e->kid_ino);
	free(e->kid_fd);
	e->kid_names = NULL;
	e->kid_ino = NULL;
	e->kid_fd = NULL;
	e->nr_kids = 0;
}

void cgfdc_kid_drop(struct cgfdc *c, struct cgfdc_ent *e, unsigned i)
{
	if (!e->kid_fd || e->kid_fd[i] < 0)
		return;
	close(e->kid_fd[i]);
	e->kid_fd[i] = -1;
	c->open--;
}

bool cgfdc_keep_kid(struct cgfdc *c, struct cgfdc_ent *e, unsigned i, int fd)
{
	if (!e->kid_fd || i >= 2 * e->nr_kids || e->kid_fd[i] >= 0 ||
	    c->open + (c->nr_cpu - c->cpu_open) >= c->budget)
		return false;
	e->kid_fd[i] = fd;
	c->open++;
	return true;
}
