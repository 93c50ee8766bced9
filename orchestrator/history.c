/* history.c — per-guest rings of packed samples; see history.h. */
#include "history.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

/* A packed sample: a 12-byte head, then uint16 mem[nr_nodes] and uint8
 * flags[nr_nodes]. Fields are read and written with memcpy (no alignment
 * assumptions on the stride). */
#define HEAD_T     0   /* uint32: deciseconds since the history's epoch */
#define HEAD_LOC   4   /* uint16: locality × 10000, 0xffff unknown */
#define HEAD_CPU   6   /* uint16: CPUs × 100, 0xffff unknown */
#define HEAD_SHIFT 8   /* uint8: mem[i] << shift is KiB */
#define HEAD_SIZE  12
#define UNKNOWN16  0xffffu

struct hguest {
	char *id;
	int64_t last_ms;       /* time of the newest sample */
	unsigned head;         /* index of the oldest sample */
	unsigned n, cap;       /* cap grows to HISTORY_SAMPLES */
	uint8_t *ring;         /* cap × stride */
};

struct history {
	pthread_mutex_t lock;
	double spacing_s;
	int64_t epoch_ms;      /* t = 0 of the packed times */
	bool have_epoch;
	unsigned nr_nodes;     /* the topology the samples were taken on */
	int *node_ids;
	size_t stride;
	unsigned nr_guests;
	struct hguest *g;      /* sorted by id, like a finalized snapshot */
};

struct history *history_new(double spacing_s)
{
	struct history *h = xcalloc(1, sizeof(*h));

	pthread_mutex_init(&h->lock, NULL);
	h->spacing_s = spacing_s > 0 ? spacing_s : 0;
	return h;
}

static void clear_guests(struct history *h)
{
	for (unsigned i = 0; i < h->nr_guests; i++) {
		free(h->g[i].id);
		free(h->g[i].ring);
	}
	free(h->g);
	h->g = NULL;
	h->nr_guests = 0;
}

void history_free(struct history *h)
{
	if (!h)
		return;
	clear_guests(h);
	free(h->node_ids);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void history_set_spacing(struct history *h, double spacing_s)
{
	pthread_mutex_lock(&h->lock);
	h->spacing_s = spacing_s > 0 ? spacing_s : 0;
	pthread_mutex_unlock(&h->lock);
}

static uint16_t pack_ratio(double v, double scale)
{
	double x;

	if (isnan(v) || v < 0)
		return UNKNOWN16;
	x = round(v * scale);
	return x >= UNKNOWN16 - 1 ? UNKNOWN16 - 1 : (uint16_t)x;
}

static double unpack_ratio(uint16_t v, double scale)
{
	return v == UNKNOWN16 ? NAN : v / scale;
}

static void pack(const struct history *h, const struct snapshot *s, const struct snap_guest *g, uint8_t *rec)
{
	int64_t ms = s->real_ns / 1000000;
	int64_t ds = (ms - h->epoch_ms) / 100;
	uint32_t t = ds < 0 ? 0 : ds > UINT32_MAX ? UINT32_MAX : (uint32_t)ds;
	uint16_t loc = pack_ratio(g->locality, 10000), cpu = pack_ratio(g->cpu_use, 100);
	uint64_t max_kib = 0;
	uint8_t shift = 0;

	memset(rec, 0, h->stride);
	memcpy(rec + HEAD_T, &t, sizeof(t));
	memcpy(rec + HEAD_LOC, &loc, sizeof(loc));
	memcpy(rec + HEAD_CPU, &cpu, sizeof(cpu));
	for (unsigned n = 0; n < h->nr_nodes; n++)
		if (g->mem_node[n] / 1024 > max_kib)
			max_kib = g->mem_node[n] / 1024;
	/* One scale for all nodes of a sample: small nodes lose precision
	 * only relative to the largest, which is what a reader compares. */
	while ((max_kib >> shift) > 0xffff)
		shift++;
	rec[HEAD_SHIFT] = shift;
	for (unsigned n = 0; n < h->nr_nodes; n++) {
		uint64_t kib = g->mem_node[n] / 1024;
		/* Round to nearest, without overflowing 16 bits. */
		uint64_t m = shift ? (kib + (1ull << (shift - 1))) >> shift : kib;
		uint16_t v = m > 0xffff ? 0xffff : (uint16_t)m;
		uint8_t f = 0;

		memcpy(rec + HEAD_SIZE + 2 * n, &v, sizeof(v));
		if (mask_test(&g->cpu_nodes, s->nodes[n].id))
			f |= HIST_CPU_NODE;
		if (mask_test(&g->mems, s->nodes[n].id))
			f |= HIST_MEM_NODE;
		rec[HEAD_SIZE + 2 * h->nr_nodes + n] = f;
	}
}

/* Same node ids in the same order as the samples taken so far? */
static bool same_topology(const struct history *h, const struct snapshot *s)
{
	if (h->nr_nodes != s->nr_nodes)
		return false;
	for (unsigned n = 0; n < s->nr_nodes; n++)
		if (h->node_ids[n] != s->nodes[n].id)
			return false;
	return true;
}

static void add_sample(struct history *h, struct hguest *hg, const struct snapshot *s, const struct snap_guest *g)
{
	int64_t ms = s->real_ns / 1000000;
	unsigned slot;

	/* 10% slack: cycles due every SPACING seconds arrive a little early
	 * or late, and skipping each early one would halve the resolution. */
	if (hg->n && h->spacing_s > 0 && (double)(ms - hg->last_ms) < h->spacing_s * 900.0)
		return;
	if (hg->n == hg->cap && hg->cap < HISTORY_SAMPLES) {
		/* Grow (the ring is not wrapped yet: head is 0 until full). */
		unsigned ncap = hg->cap ? hg->cap * 2 : 8;

		if (ncap > HISTORY_SAMPLES)
			ncap = HISTORY_SAMPLES;
		hg->ring = xrealloc(hg->ring, ncap * h->stride);
		hg->cap = ncap;
	}
	if (hg->n < hg->cap) {
		slot = (hg->head + hg->n) % hg->cap;
		hg->n++;
	} else {
		slot = hg->head;
		hg->head = (hg->head + 1) % hg->cap;
	}
	pack(h, s, g, hg->ring + (size_t)slot * h->stride);
	hg->last_ms = ms;
}

void history_record(struct history *h, const struct snapshot *s)
{
	struct hguest *ng;
	unsigned i = 0, j = 0, k = 0;

	pthread_mutex_lock(&h->lock);
	if (!same_topology(h, s)) {
		/* Samples of another topology cannot be read with this one
		 * (node hotplug, a fixture change): start over. */
		clear_guests(h);
		free(h->node_ids);
		h->nr_nodes = s->nr_nodes;
		h->node_ids = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(int));
		for (unsigned n = 0; n < s->nr_nodes; n++)
			h->node_ids[n] = s->nodes[n].id;
		h->stride = HEAD_SIZE + 3 * (size_t)s->nr_nodes;
	}
	if (!h->have_epoch) {
		h->epoch_ms = s->real_ns / 1000000;
		h->have_epoch = true;
	}
	/* Both lists are sorted by id: one merge keeps the guests still
	 * present, drops the gone and adds the new. */
	ng = xcalloc(s->nr_guests ? s->nr_guests : 1, sizeof(*ng));
	while (j < s->nr_guests) {
		int c = i < h->nr_guests ? strcmp(h->g[i].id, s->guests[j].id) : 1;

		if (c < 0) {
			free(h->g[i].id);
			free(h->g[i].ring);
			i++;
			continue;
		}
		if (c == 0) {
			ng[k] = h->g[i++];
		} else {
			memset(&ng[k], 0, sizeof(ng[k]));
			ng[k].id = xstrdup(s->guests[j].id);
		}
		add_sample(h, &ng[k], s, &s->guests[j]);
		k++;
		j++;
	}
	for (; i < h->nr_guests; i++) {
		free(h->g[i].id);
		free(h->g[i].ring);
	}
	free(h->g);
	h->g = ng;
	h->nr_guests = k;
	pthread_mutex_unlock(&h->lock);
}

static int hguest_cmp(const void *key, const void *el)
{
	return strcmp(key, ((const struct hguest *)el)->id);
}

int history_get(struct history *h, const char *id, struct history_series **out)
{
	struct history_series *hs;
	const struct hguest *hg;
	size_t sz, nn;
	char *p;

	pthread_mutex_lock(&h->lock);
	hg = bsearch(id, h->g, h->nr_guests, sizeof(*h->g), hguest_cmp);
	if (!hg || !hg->n) {
		pthread_mutex_unlock(&h->lock);
		return -ENOENT;
	}
	nn = h->nr_nodes;
	/* Header, node ids, points, then each point's mem and flags; the
	 * uint64 arrays come first after the points to stay aligned. */
	sz = sizeof(*hs) + nn * sizeof(int) + 8 + hg->n * (sizeof(struct history_point) + nn * 9);
	hs = xcalloc(1, sz);
	p = (char *)(hs + 1);
	hs->nr_nodes = (unsigned)nn;
	hs->node_ids = (int *)p;
	memcpy(hs->node_ids, h->node_ids, nn * sizeof(int));
	p += (nn * sizeof(int) + 7) / 8 * 8;
	hs->spacing_s = h->spacing_s;
	hs->capacity = HISTORY_SAMPLES;
	hs->n = hg->n;
	hs->p = (struct history_point *)p;
	p += hg->n * sizeof(struct history_point);
	for (unsigned i = 0; i < hg->n; i++) {
		const uint8_t *rec = hg->ring + (size_t)((hg->head + i) % hg->cap) * h->stride;
		struct history_point *pt = &hs->p[i];
		uint32_t t;
		uint16_t loc, cpu;

		memcpy(&t, rec + HEAD_T, sizeof(t));
		memcpy(&loc, rec + HEAD_LOC, sizeof(loc));
		memcpy(&cpu, rec + HEAD_CPU, sizeof(cpu));
		pt->real_ms = h->epoch_ms + (int64_t)t * 100;
		pt->locality = unpack_ratio(loc, 10000);
		pt->cpu_use = unpack_ratio(cpu, 100);
		pt->mem = (uint64_t *)p;
		p += nn * sizeof(uint64_t);
		for (unsigned n = 0; n < nn; n++) {
			uint16_t v;

			memcpy(&v, rec + HEAD_SIZE + 2 * n, sizeof(v));
			pt->mem[n] = ((uint64_t)v << rec[HEAD_SHIFT]) * 1024;
		}
	}
	/* Flags after all the uint64 arrays. */
	for (unsigned i = 0; i < hg->n; i++) {
		const uint8_t *rec = hg->ring + (size_t)((hg->head + i) % hg->cap) * h->stride;

		hs->p[i].flags = (uint8_t *)p;
		memcpy(p, rec + HEAD_SIZE + 2 * nn, nn);
		p += nn;
	}
	pthread_mutex_unlock(&h->lock);
	*out = hs;
	return 0;
}

size_t history_bytes(struct history *h, unsigned *nr_guests)
{
	size_t b;

	pthread_mutex_lock(&h->lock);
	b = sizeof(*h) + h->nr_nodes * sizeof(int) + h->nr_guests * sizeof(struct hguest);
	for (unsigned i = 0; i < h->nr_guests; i++)
		b += strlen(h->g[i].id) + 1 + h->g[i].cap * h->stride;
	if (nr_guests)
		*nr_guests = h->nr_guests;
	pthread_mutex_unlock(&h->lock);
	return b;
}
