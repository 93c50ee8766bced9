/* history.c — per-guest histories of delta-coded samples; see history.h.
 *
 * A sample is first quantised (struct hstate: locality × 10000 and CPUs
 * × 100 as uint16, 0xffff unknown; node masks as bits by node index;
 * memory per node as uint16 units of 2^shift KiB, the shift chosen so the
 * guest's largest node fits) — the precision the API promises. It is then
 * stored as the difference to the guest's previous sample, so what did
 * not change costs nothing:
 *
 *   flags    uint8, R_* below: which fields follow
 *   dt       R_DT:    zigzag varint, change of the time since the sample
 *                     before (deciseconds): cycles come at a steady pace,
 *                     so it is mostly absent or one byte
 *   loc      R_LOC:   zigzag varint, change of the uint16 (mod 2^16)
 *   cpu      R_CPU:   the same for CPU use
 *   cpu nodes, mems   R_CNODE, R_MEMS: the new mask, (nodes + 7) / 8 bytes
 *   shift    R_SHIFT: the new shift, one byte
 *   mem      R_MEM:   the mask of nodes whose units changed, then for
 *                     each of them the zigzag varint change
 *
 * The first sample of a guest's buffer is coded against the zero state,
 * so when the oldest sample goes, the second is decoded and re-coded
 * against zero in its place (its time is the guest's base time; its dt,
 * kept, is what the third is coded against). The newest sample's state is kept decoded,
 * for coding the next one. Buffers grow as a guest's samples come in
 * (never more than an eighth plus one sample above what they hold).
 */
#include "orchestrator/store/history.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"

#define R_LOC   0x01u
#define R_CPU   0x02u
#define R_CNODE 0x04u
#define R_MEMS  0x08u
#define R_SHIFT 0x10u
#define R_MEM   0x20u
#define R_DT    0x40u
#define UNKNOWN16 0xffffu

/* One quantised sample. bits[] holds cpu_nodes[nb], mems[nb], then the
 * memory per node as uint16 [nr_nodes] (memcpy'd: no alignment). */
struct hstate {
	uint32_t dt;           /* deciseconds since the sample before */
	uint16_t loc, cpu;
	uint8_t shift;
	uint8_t bits[];
};

struct hguest {
	char *id;
	int64_t last_ms;       /* time of the newest sample */
	uint32_t t_base;       /* deciseconds since the epoch, of the oldest sample */
	uint32_t t_last;       /* the same, of the newest sample */
	unsigned n;            /* samples held */
	uint32_t len, cap;     /* bytes of buf used, allocated */
	uint8_t *buf;
	struct hstate *last;   /* the newest sample, decoded */
};

struct history {
	pthread_mutex_t lock;
	double spacing_s;
	int64_t epoch_ms;      /* t = 0 of the packed times */
	bool have_epoch;
	unsigned nr_nodes;     /* the topology the samples were taken on */
	int *node_ids;
	size_t nb;             /* bytes of a node mask */
	size_t state_sz;       /* sizeof(struct hstate) + its bits */
	size_t max_rec;        /* longest coded sample */
	/* Engine-thread scratch (under the lock): zero, two decoded states
	 * and a coded sample. */
	struct hstate *zero, *sa, *sb;
	uint8_t *rec, *changed;
	unsigned nr_guests;
	struct hguest *g;      /* sorted by id, like a finalized snapshot */
};

static inline uint8_t *st_cnode(const struct history *h, struct hstate *s) { (void)h; return s->bits; }
static inline uint8_t *st_mems(const struct history *h, struct hstate *s) { return s->bits + h->nb; }

static inline uint16_t st_mem(const struct history *h, const struct hstate *s, unsigned n)
{
	uint16_t v;

	memcpy(&v, s->bits + 2 * h->nb + 2 * (size_t)n, sizeof(v));
	return v;
}

static inline void st_set_mem(const struct history *h, struct hstate *s, unsigned n, uint16_t v)
{
	memcpy(s->bits + 2 * h->nb + 2 * (size_t)n, &v, sizeof(v));
}

static inline bool bit(const uint8_t *m, unsigned n) { return m[n / 8] & (1u << (n % 8)); }

static size_t put_uv(uint8_t *p, uint32_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Our own buffers only: no bounds to check. */
static size_t get_uv(const uint8_t *p, uint32_t *v)
{
	uint32_t x = 0;
	unsigned sh = 0;
	size_t n = 0;
	uint8_t b;

	do {
		b = p[n++];
		x |= (uint32_t)(b & 0x7f) << sh;
		sh += 7;
	} while (b & 0x80);
	*v = x;
	return n;
}

static uint32_t zigzag(int32_t d) { return ((uint32_t)d << 1) ^ (uint32_t)(d >> 31); }
static int32_t unzigzag(uint32_t u) { return (int32_t)(u >> 1) ^ -(int32_t)(u & 1); }

/* Change of a uint16 field, taken mod 2^16 so that 0xffff (unknown) next
 * to small values stays short. */
static uint32_t delta16(uint16_t from, uint16_t to) { return zigzag((int16_t)(uint16_t)(to - from)); }

/* Code CUR against PREV into OUT (h->max_rec bytes); returns the length. */
static size_t encode(struct history *h, struct hstate *prev, struct hstate *cur, uint8_t *out)
{
	uint8_t *p = out + 1, flags = 0, *changed = h->changed;

	if (cur->dt != prev->dt) {
		flags |= R_DT;
		p += put_uv(p, zigzag((int32_t)(cur->dt - prev->dt)));
	}
	if (cur->loc != prev->loc) {
		flags |= R_LOC;
		p += put_uv(p, delta16(prev->loc, cur->loc));
	}
	if (cur->cpu != prev->cpu) {
		flags |= R_CPU;
		p += put_uv(p, delta16(prev->cpu, cur->cpu));
	}
	if (memcmp(st_cnode(h, cur), st_cnode(h, prev), h->nb) != 0) {
		flags |= R_CNODE;
		memcpy(p, st_cnode(h, cur), h->nb);
		p += h->nb;
	}
	if (memcmp(st_mems(h, cur), st_mems(h, prev), h->nb) != 0) {
		flags |= R_MEMS;
		memcpy(p, st_mems(h, cur), h->nb);
		p += h->nb;
	}
	if (cur->shift != prev->shift) {
		flags |= R_SHIFT;
		*p++ = cur->shift;
	}
	memset(changed, 0, h->nb);
	for (unsigned n = 0; n < h->nr_nodes; n++)
		if (st_mem(h, prev, n) != st_mem(h, cur, n)) {
			changed[n / 8] |= (uint8_t)(1u << (n % 8));
			flags |= R_MEM;
		}
	if (flags & R_MEM) {
		memcpy(p, changed, h->nb);
		p += h->nb;
		for (unsigned n = 0; n < h->nr_nodes; n++)
			if (bit(changed, n))
				p += put_uv(p, zigzag((int32_t)st_mem(h, cur, n) - (int32_t)st_mem(h, prev, n)));
	}
	out[0] = flags;
	return (size_t)(p - out);
}

/* Decode REC against PREV into CUR; returns its length. */
static size_t decode(struct history *h, struct hstate *prev, const uint8_t *rec, struct hstate *cur)
{
	const uint8_t *p = rec + 1;
	uint8_t flags = rec[0];
	uint32_t v;

	memcpy(cur, prev, h->state_sz);
	if (flags & R_DT) {
		p += get_uv(p, &v);
		cur->dt = prev->dt + (uint32_t)unzigzag(v);
	}
	if (flags & R_LOC) {
		p += get_uv(p, &v);
		cur->loc = (uint16_t)(prev->loc + unzigzag(v));
	}
	if (flags & R_CPU) {
		p += get_uv(p, &v);
		cur->cpu = (uint16_t)(prev->cpu + unzigzag(v));
	}
	if (flags & R_CNODE) {
		memcpy(st_cnode(h, cur), p, h->nb);
		p += h->nb;
	}
	if (flags & R_MEMS) {
		memcpy(st_mems(h, cur), p, h->nb);
		p += h->nb;
	}
	if (flags & R_SHIFT)
		cur->shift = *p++;
	if (flags & R_MEM) {
		const uint8_t *changed = p;

		p += h->nb;
		for (unsigned n = 0; n < h->nr_nodes; n++)
			if (bit(changed, n)) {
				p += get_uv(p, &v);
				st_set_mem(h, cur, n, (uint16_t)(st_mem(h, prev, n) + unzigzag(v)));
			}
	}
	return (size_t)(p - rec);
}

struct history *history_new(double spacing_s)
{
	struct history *h = xcalloc(1, sizeof(*h));

	pthread_mutex_init(&h->lock, NULL);
	h->spacing_s = spacing_s > 0 ? spacing_s : 0;
	return h;
}

static void hguest_clear(struct hguest *hg)
{
	free(hg->id);
	free(hg->buf);
	free(hg->last);
}

static void clear_guests(struct history *h)
{
	for (unsigned i = 0; i < h->nr_guests; i++)
		hguest_clear(&h->g[i]);
	free(h->g);
	h->g = NULL;
	h->nr_guests = 0;
}

static void free_topology(struct history *h)
{
	free(h->node_ids);
	free(h->zero);
	free(h->sa);
	free(h->sb);
	free(h->rec);
	free(h->changed);
}

void history_free(struct history *h)
{
	if (!h)
		return;
	clear_guests(h);
	free_topology(h);
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

/* G in S, quantised into OUT. */
static void quantise(const struct history *h, const struct snapshot *s, const struct snap_guest *g,
		     struct hstate *out)
{
	uint64_t max_kib = 0;
	uint8_t shift = 0;

	memset(out, 0, h->state_sz);
	out->loc = pack_ratio(g->locality, 10000);
	out->cpu = pack_ratio(g->cpu_use, 100);
	for (unsigned n = 0; n < h->nr_nodes; n++)
		if (g->mem_node[n] / 1024 > max_kib)
			max_kib = g->mem_node[n] / 1024;
	/* One scale for all nodes of a sample: small nodes lose precision
	 * only relative to the largest, which is what a reader compares. */
	while ((max_kib >> shift) > 0xffff)
		shift++;
	out->shift = shift;
	for (unsigned n = 0; n < h->nr_nodes; n++) {
		uint64_t kib = g->mem_node[n] / 1024;
		/* Round to nearest, without overflowing 16 bits. */
		uint64_t m = shift ? (kib + (1ull << (shift - 1))) >> shift : kib;

		st_set_mem(h, out, n, m > 0xffff ? 0xffff : (uint16_t)m);
		if (mask_test(&g->cpu_nodes, s->nodes[n].id))
			st_cnode(h, out)[n / 8] |= (uint8_t)(1u << (n % 8));
		if (mask_test(&g->mems, s->nodes[n].id))
			st_mems(h, out)[n / 8] |= (uint8_t)(1u << (n % 8));
	}
}

/* Same node ids in the same order as the samples taken so far? */
static bool same_topology(const struct history *h, const struct snapshot *s)
{
	if (!h->zero || h->nr_nodes != s->nr_nodes)
		return false;
	for (unsigned n = 0; n < s->nr_nodes; n++)
		if (h->node_ids[n] != s->nodes[n].id)
			return false;
	return true;
}

static void set_topology(struct history *h, const struct snapshot *s)
{
	unsigned nn = s->nr_nodes;

	free_topology(h);
	h->nr_nodes = nn;
	h->node_ids = xcalloc(nn ? nn : 1, sizeof(int));
	for (unsigned n = 0; n < nn; n++)
		h->node_ids[n] = s->nodes[n].id;
	h->nb = (nn + 7) / 8;
	h->state_sz = sizeof(struct hstate) + 2 * h->nb + 2 * (size_t)nn;
	/* flags, dt (5), loc and cpu (3 each), three masks, shift, 3 a node */
	h->max_rec = 1 + 5 + 3 + 3 + 3 * h->nb + 1 + 3 * (size_t)nn;
	h->zero = xcalloc(1, h->state_sz);
	h->sa = xcalloc(1, h->state_sz);
	h->sb = xcalloc(1, h->state_sz);
	h->rec = xcalloc(1, h->max_rec);
	h->changed = xcalloc(1, h->nb ? h->nb : 1);
}

/* Make room for LEN bytes in HG's buffer, with up to an eighth to spare
 * so that growing is not a realloc every sample. */
static void reserve(struct hguest *hg, size_t len)
{
	if (len <= hg->cap)
		return;
	hg->cap = (uint32_t)(len + len / 8);
	hg->buf = xrealloc(hg->buf, hg->cap);
}

/* Drop HG's oldest sample: the second is re-coded against zero. */
static void drop_oldest(struct history *h, struct hguest *hg)
{
	size_t l0 = decode(h, h->zero, hg->buf, h->sa);
	size_t l1 = decode(h, h->sa, hg->buf + l0, h->sb);
	size_t ln = encode(h, h->zero, h->sb, h->rec);
	size_t rest = hg->len - l0 - l1;

	reserve(hg, ln + rest);
	memmove(hg->buf + ln, hg->buf + l0 + l1, rest);
	memcpy(hg->buf, h->rec, ln);
	hg->len = (uint32_t)(ln + rest);
	hg->t_base += h->sb->dt;
	hg->n--;
}

static void add_sample(struct history *h, struct hguest *hg, const struct snapshot *s, const struct snap_guest *g)
{
	int64_t ms = s->real_ns / 1000000;
	int64_t ds = (ms - h->epoch_ms) / 100;
	uint32_t t = ds < 0 ? 0 : ds > UINT32_MAX ? UINT32_MAX : (uint32_t)ds;
	size_t l;

	/* 10% slack: cycles due every SPACING seconds arrive a little early
	 * or late, and skipping each early one would halve the resolution. */
	if (hg->n && h->spacing_s > 0 && (double)(ms - hg->last_ms) < h->spacing_s * 900.0)
		return;
	if (hg->n == HISTORY_SAMPLES)
		drop_oldest(h, hg);
	quantise(h, s, g, h->sa);
	if (!hg->n) {
		hg->last = xcalloc(1, h->state_sz);
		hg->t_base = hg->t_last = t;
	}
	/* A gap of more than 6.8 years is 6.8 years: the changes of dt
	 * stay within int32. */
	h->sa->dt = t > hg->t_last ? (t - hg->t_last > INT32_MAX ? INT32_MAX : t - hg->t_last) : 0;
	l = encode(h, hg->n ? hg->last : h->zero, h->sa, h->rec);
	reserve(hg, hg->len + l);
	memcpy(hg->buf + hg->len, h->rec, l);
	hg->len += (uint32_t)l;
	memcpy(hg->last, h->sa, h->state_sz);
	hg->t_last = t > hg->t_last ? t : hg->t_last;
	hg->n++;
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
		set_topology(h, s);
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
			hguest_clear(&h->g[i++]);
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
	for (; i < h->nr_guests; i++)
		hguest_clear(&h->g[i]);
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
	struct hstate *a, *b;
	size_t sz, nn, off = 0;
	uint8_t *fl;
	uint32_t t;
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
	a = xcalloc(1, h->state_sz);
	b = xcalloc(1, h->state_sz);
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
	fl = (uint8_t *)p + hg->n * nn * sizeof(uint64_t);
	t = hg->t_base;
	for (unsigned i = 0; i < hg->n; i++) {
		struct history_point *pt = &hs->p[i];
		struct hstate *tmp;

		off += decode(h, i ? a : h->zero, hg->buf + off, b);
		if (i)
			t += b->dt;
		pt->real_ms = h->epoch_ms + (int64_t)t * 100;
		pt->locality = unpack_ratio(b->loc, 10000);
		pt->cpu_use = unpack_ratio(b->cpu, 100);
		pt->mem = (uint64_t *)p;
		p += nn * sizeof(uint64_t);
		pt->flags = fl;
		fl += nn;
		for (unsigned n = 0; n < nn; n++) {
			pt->mem[n] = ((uint64_t)st_mem(h, b, n) << b->shift) * 1024;
			pt->flags[n] = (bit(st_cnode(h, b), n) ? HIST_CPU_NODE : 0) |
				       (bit(st_mems(h, b), n) ? HIST_MEM_NODE : 0);
		}
		tmp = a;
		a = b;
		b = tmp;
	}
	pthread_mutex_unlock(&h->lock);
	free(a);
	free(b);
	*out = hs;
	return 0;
}

size_t history_bytes(struct history *h, unsigned *nr_guests)
{
	size_t b;

	pthread_mutex_lock(&h->lock);
	b = sizeof(*h) + h->nr_nodes * sizeof(int) + 3 * h->state_sz + h->max_rec + h->nb +
	    h->nr_guests * sizeof(struct hguest);
	for (unsigned i = 0; i < h->nr_guests; i++)
		b += strlen(h->g[i].id) + 1 + h->g[i].cap + (h->g[i].last ? h->state_sz : 0);
	if (nr_guests)
		*nr_guests = h->nr_guests;
	pthread_mutex_unlock(&h->lock);
	return b;
}
