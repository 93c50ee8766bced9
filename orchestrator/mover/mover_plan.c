/* The mover's pure part: which pages of a process to ask about and to
 * move, in which calls and to which nodes (mappings and move_pages(2)
 * answers in, plans out), how big the next call should be, when a job
 * has settled, and the arithmetic of a job's record (its sources, done
 * and left). No I/O, no threads, no clock: tested without a process
 * (tests/unit/test_mover.c). The jobs, workers and system calls that
 * use it are in mover.c; both are declared in mover.h. */
#include "orchestrator/mover/mover.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/numamaps.h"
#include "orchestrator/base/strtab.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/model/hold.h"

static const char *const state_names[MJ_NR_STATES] = {
	[MJ_QUEUED] = "queued",       [MJ_RUNNING] = "running",     [MJ_DONE] = "done",
	[MJ_VANISHED] = "vanished",   [MJ_SUPERSEDED] = "superseded", [MJ_CANCELLED] = "cancelled",
	[MJ_STOPPED] = "stopped",     [MJ_EXPIRED] = "expired",     [MJ_FAILED] = "failed",
	[MJ_PARTIAL] = "partial",
};

STRTAB_NAME(mover_state_name, enum mover_state, state_names)

bool mover_state_final(enum mover_state s)
{
	return s != MJ_QUEUED && s != MJ_RUNNING;
}

/* The hex number at *P (ending before END), past it; false when none
 * or when it overflows. */
static bool hex_at(const char **p, const char *end, unsigned long long *out)
{
	const char *s = *p;
	unsigned long long v = 0;

	for (; s < end; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
						: -1;

		if (d < 0)
			break;
		if (v >> 60)
			return false;
		v = v << 4 | (unsigned)d;
	}
	if (s == *p)
		return false;
	*p = s;
	*out = v;
	return true;
}

/* Past the spaces, then the word, at *P (ending before END): the word's
 * start and length. */
static const char *word_at(const char **p, const char *end, size_t *len)
{
	const char *s = *p, *w;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	w = s;
	while (s < end && *s != ' ' && *s != '\t')
		s++;
	*p = s;
	*len = (size_t)(s - w);
	return w;
}

/* One maps line L..EOL: "start-end perms offset dev inode [name]", the
 * name (maybe empty) into NAME. */
static bool mapping_line(const char *l, const char *eol, unsigned long long *a, unsigned long long *b,
			 char perms[8], char *name, size_t namesz)
{
	const char *p = l, *w;
	size_t len;

	if (!hex_at(&p, eol, a) || p == eol || *p != '-')
		return false;
	p++;
	if (!hex_at(&p, eol, b))
		return false;
	w = word_at(&p, eol, &len);
	if (len < 4 || len > 7)
		return false;
	memcpy(perms, w, len);
	perms[len] = '\0';
	for (int f = 0; f < 3; f++) { /* offset, device, inode */
		word_at(&p, eol, &len);
		if (!len)
			return false;
	}
	while (p < eol && (*p == ' ' || *p == '\t'))
		p++;
	len = (size_t)(eol - p);
	if (len >= namesz)
		len = namesz - 1;
	memcpy(name, p, len);
	name[len] = '\0';
	return true;
}

/* One smaps "Key:   value [kB]" line L..EOL: the key's length (0 when
 * the line is none). */
static size_t key_line(const char *l, const char *eol)
{
	const char *p = l;

	while (p < eol && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_'))
		p++;
	return p > l && p < eol && *p == ':' ? (size_t)(p - l) : 0;
}

static bool key_is(const char *l, size_t kl, const char *key)
{
	return strlen(key) == kl && memcmp(l, key, kl) == 0;
}

/* Line by line with each line's own end: sscanf(3) measures the whole
 * rest of its input string first, so parsing smaps with it is quadratic
 * in its length and costs many times the kernel's read of it. */
int mover_parse_maps(const char *text, struct mover_vma **out)
{
	struct mover_vma *v = NULL;
	unsigned n = 0, cap = 0;
	bool kept = false;           /* the last mapping line was kept */

	for (const char *line = text; line && *line;) {
		const char *eol = strchr(line, '\n'), *end = eol ? eol : line + strlen(line);
		unsigned long long a, b;
		char perms[8] = "", name[64] = "";

		if (!mapping_line(line, end, &a, &b, perms, name, sizeof(name)) || b < a) {
			size_t kl = key_line(line, end);

			/* smaps: "Key:   value [kB]" lines after their mapping's */
			if (kl) {
				bool kps = kept && key_is(line, kl, "KernelPageSize");

				if (kps || (kept &&
				    (key_is(line, kl, "AnonHugePages") || key_is(line, kl, "ShmemPmdMapped") ||
				     key_is(line, kl, "FilePmdMapped")))) {
					const char *p = line + kl + 1;
					unsigned long long kb = 0;
					bool digits = false;

					while (p < end && (*p == ' ' || *p == '\t'))
						p++;
					for (; p < end && *p >= '0' && *p <= '9' && kb < (1ull << 50); p++, digits = true)
						kb = kb * 10 + (unsigned)(*p - '0');
					if (digits && kps)
						v[n - 1].hpage = (uint64_t)kb << 10;
					else if (digits)
						v[n - 1].thp_bytes += (uint64_t)kb << 10;
				}
				line = eol ? eol + 1 : NULL;
				continue;
			}
			free(v);
			return -EINVAL;
		}
		kept = false;
		line = eol ? eol + 1 : NULL;
		/* Kernel-provided pages do not move; an area mapped with no
		 * access holds no pages. */
		if (strcmp(name, "[vsyscall]") == 0 || strcmp(name, "[vvar]") == 0 || strcmp(name, "[vdso]") == 0)
			continue;
		if (perms[0] != 'r' && perms[1] != 'w' && perms[2] != 'x')
			continue;
		if (b == a)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n].start = (uintptr_t)a;
		v[n].end = (uintptr_t)b;
		v[n].thp_bytes = 0;
		v[n].hpage = 0;
		n++;
		kept = true;
	}
	*out = v;
	return (int)n;
}

size_t mover_huge_cut(const int *status, size_t n, const nodemask_t *to, uint64_t allowed, uint64_t *left)
{
	size_t cut = n;
	uint64_t off = 0;

	*left = 0;
	for (size_t i = 0; i < n; i++) {
		if (status[i] < 0 || status[i] >= MASK_MAX_NODES || mask_test(to, status[i]))
			continue;
		if (off == allowed && cut == n)
			cut = i;
		if (cut < n)
			(*left)++;
		else
			off++;
	}
	return cut;
}

static int census_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct mover_census_vma *)a)->start, y = ((const struct mover_census_vma *)b)->start;

	return x < y ? -1 : x > y;
}

unsigned mover_census_vmas(const char *text, const nodemask_t *stay, struct mover_census_vma **out)
{
	struct mover_census_vma *v = NULL;
	unsigned n = 0, cap = 0;
	bool sorted = true;

	struct numamaps_line ln;

	for (const char *l = text; l && *l; l = ln.next) {
		unsigned long long id;
		uint64_t pages;
		bool moves = false;

		numamaps_line(l, &ln);
		if (!ln.has_start)
			continue;
		/* a page on a node it is to leave */
		while (!moves && numamaps_node(&ln, &id, &pages))
			moves = pages && (!stay || id >= MASK_MAX_NODES || !mask_test(stay, id));
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			v = xrealloc(v, cap * sizeof(*v));
		}
		if (n && v[n - 1].start > ln.start)
			sorted = false;
		v[n].start = ln.start;
		v[n].moves = moves;
		n++;
	}
	if (!sorted)
		qsort(v, n, sizeof(*v), census_cmp);
	*out = v;
	return n;
}

unsigned mover_prune_vmas(struct mover_vma *vmas, unsigned nv, const struct mover_census_vma *census, unsigned nc)
{
	unsigned kept = 0, c = 0;

	for (unsigned i = 0; i < nv; i++) {
		while (c < nc && census[c].start < vmas[i].start)
			c++;
		if (c < nc && census[c].start == vmas[i].start && !census[c].moves)
			continue;
		vmas[kept++] = vmas[i];
	}
	return kept;
}

bool mover_window_has_thp(const struct mover_vma *vmas, unsigned nv, uintptr_t lo, uintptr_t hi)
{
	for (unsigned i = 0; i < nv; i++)
		if (vmas[i].thp_bytes && vmas[i].end > lo && vmas[i].start <= hi)
			return true;
	return false;
}

/* Whether every aligned 2 MiB block of V is a THP mapped whole. */
static bool vma_all_thp(const struct mover_vma *v)
{
	uintptr_t lo = (v->start + MOVER_THP_BYTES - 1) / MOVER_THP_BYTES * MOVER_THP_BYTES, hi = v->end / MOVER_THP_BYTES * MOVER_THP_BYTES;

	return hi > lo && v->thp_bytes >= (uint64_t)(hi - lo);
}

size_t mover_query_plan(void *const *pages, size_t n, size_t page, const struct mover_vma *vmas, unsigned nv,
			size_t *ask)
{
	size_t thp = page && MOVER_THP_BYTES / page > 1 ? MOVER_THP_BYTES / page : 0, nq = 0;
	unsigned v = 0;

	for (size_t i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)pages[i], off = a % MOVER_THP_BYTES, blk = a - off;

		while (v < nv && vmas[v].end <= a)
			v++;
		if (thp && off && v < nv && a >= vmas[v].start && blk >= vmas[v].start &&
		    blk + MOVER_THP_BYTES <= vmas[v].end && vma_all_thp(&vmas[v]) && i >= off / page &&
		    (uintptr_t)pages[i - off / page] == blk)
			continue; /* its THP's head, asked, answers for it */
		ask[nq++] = i;
	}
	return nq;
}

void mover_query_expand(int *status, size_t n, const size_t *ask, size_t nq, const int *qstatus)
{
	size_t q = 0;
	int last = -ENOENT;

	for (size_t i = 0; i < n; i++) {
		if (q < nq && ask[q] == i)
			last = qstatus[q++];
		status[i] = last;
	}
}

size_t mover_next_chunk(const struct mover_vma *vmas, unsigned n, size_t page, size_t max_pages,
			uintptr_t *pos, uintptr_t *start)
{
	if (!max_pages || !page)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		uintptr_t s = vmas[i].start, e = vmas[i].end;
		size_t pages;

		if (e <= *pos)
			continue;
		if (s < *pos)
			s = *pos;
		s -= s % page;
		if (s >= e)
			continue;
		pages = (e - s + page - 1) / page;
		if (pages > max_pages)
			pages = max_pages;
		*start = s;
		*pos = s + pages * page;
		return pages;
	}
	return 0;
}

size_t mover_adapt_chunk(size_t pages, double elapsed_ms, double target_ms)
{
	double f = elapsed_ms > 0 ? target_ms / elapsed_ms : 2;
	double next;

	/* Halve or double at most per call: one slow call (a fault storm, a
	 * preemption) must not collapse the chunk. */
	if (f > 2)
		f = 2;
	if (f < 0.5)
		f = 0.5;
	next = (double)pages * f;
	if (next < MOVER_MIN_CHUNK)
		return MOVER_MIN_CHUNK;
	if (next > MOVER_MAX_CHUNK)
		return MOVER_MAX_CHUNK;
	return (size_t)next;
}

size_t mover_slice(const int *weight, size_t off, size_t k, size_t page, size_t want, size_t limit,
		   size_t *bytes)
{
	size_t sl = 0, b = 0, rest = 0;

	if (off >= k)
		return *bytes = 0, 0;
	for (size_t i = off; i < k && rest <= limit; i++)
		rest += (size_t)weight[i] * page;
	if (rest <= limit) {
		/* the whole rest in one call: a tail call of its own would
		 * pay the fixed cost again for a few pages */
		*bytes = rest;
		return k - off;
	}
	while (off + sl < k && (sl == 0 || b + (size_t)weight[off + sl] * page <= want))
		b += (size_t)weight[off + sl++] * page;
	*bytes = b;
	return sl;
}

#define MOVER_PASS_SMALL (256u << 10)
#define MOVER_PASS_SHARE 32

bool mover_second_pass(uint64_t left, uint64_t planned)
{
	return left > MOVER_PASS_SMALL || left * MOVER_PASS_SHARE > planned;
}

/* A call may lose at most this share of the best rate (pages per ms)
 * the job's bigger calls reached: below, calls grow again. */
#define EFF_KEEP 0.8
/* A size step that raised the rate by this much is taken again. */
#define EFF_CLIMB 1.25
/* The best rate seen fades per call (a lucky call, a guest that turned
 * busy must not hold the size up for ever). */
#define EFF_FADE 0.95

size_t mover_cost_next(struct mover_cost *c, size_t pages, size_t chunk, double ms, double target_ms)
{
	double eff = ms > 0 ? (double)pages / ms : 0, next;
	size_t cur = pages > chunk ? pages : chunk;
	bool grew = c->calls && pages > c->prev_pages * 5 / 4, stay = false;

	if (!pages)
		return chunk;
	c->best_eff *= EFF_FADE;
	if (ms <= 0) {
		next = (double)cur * 2;
	} else if (grew && c->prev_eff > 0 && eff >= c->prev_eff * EFF_CLIMB) {
		/* the bigger call moved markedly faster: there is a fixed
		 * cost to spread; climb on */
		next = (double)pages * 2;
	} else if (c->capped && ms <= MOVER_CALL_MAX_MS && eff >= c->best_eff * EFF_KEEP) {
		/* sized by the stall bound and the rate held: stay there */
		next = (double)cur;
		stay = true;
	} else if (c->best_eff > 0 && eff < c->best_eff * EFF_KEEP && pages < c->best_pages) {
		/* smaller calls lost more than a fifth of the rate bigger ones
		 * had (each call's fixed cost): they would only move less,
		 * the guest waiting
		 * page by page all the same */
		next = (double)pages * 2;
	} else {
		next = (double)mover_adapt_chunk(cur, ms, target_ms);
	}
	if (ms > 0) {
		/* The stall bound before the rate: what this call's rate
		 * moves in MOVER_CALL_MAX_MS at most, and after a call over
		 * it, what it moves in TARGET_MS. */
		double cap = (double)pages * (ms > MOVER_CALL_MAX_MS ? target_ms : MOVER_CALL_MAX_MS) / ms;

		c->capped = (next > cap || stay) && ms <= MOVER_CALL_MAX_MS;
		if (next > cap)
			next = cap;
	}
	if (eff >= c->best_eff) {
		c->best_eff = eff;
		c->best_pages = pages;
	}
	c->prev_eff = eff;
	c->prev_pages = pages;
	c->calls++;
	if (next < MOVER_MIN_CHUNK)
		return MOVER_MIN_CHUNK;
	if (next > MOVER_MAX_CHUNK)
		return MOVER_MAX_CHUNK;
	return (size_t)next;
}

size_t mover_fill_window(const struct mover_vma *vmas, unsigned n, size_t page, size_t max_pages, uintptr_t *pos,
			 void **pages)
{
	size_t filled = 0, got;
	uintptr_t start;

	while (filled < max_pages &&
	       (got = mover_next_chunk(vmas, n, page, max_pages - filled, pos, &start)) > 0)
		for (size_t i = 0; i < got; i++)
			pages[filled++] = (void *)(start + i * page);
	return filled;
}

size_t mover_plan_window(const int *status, void *const *pages, size_t n, size_t page, const nodemask_t *to,
			 bool all, bool compact, size_t *idx, int *weight)
{
	size_t thp = page ? MOVER_THP_BYTES / page : 0, k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t run = 1;

		if (status[i] < 0 || (mask_test(to, status[i]) && !all))
			continue;
		if (compact && thp > 1 && (uintptr_t)pages[i] % MOVER_THP_BYTES == 0 && i + thp <= n &&
		    (uintptr_t)pages[i + thp - 1] == (uintptr_t)pages[i] + (thp - 1) * page) {
			while (run < thp && status[i + run] == status[i])
				run++;
			if (run < thp)
				run = 1;
		}
		idx[k] = i;
		weight[k] = (int)run;
		k++;
		i += run - 1;
	}
	return k;
}

bool mover_guess_failed(const int *status, size_t n, const size_t *idx, const int *weight, size_t k,
			const nodemask_t *to)
{
	for (size_t e = 0; e < k; e++) {
		size_t i = idx[e];

		if (weight[e] <= 1 || i + (size_t)weight[e] > n || status[i] < 0 || !mask_test(to, status[i]))
			continue;
		for (size_t t = 1; t < (size_t)weight[e]; t++)
			if (status[i + t] >= 0 && !mask_test(to, status[i + t]))
				return true;
	}
	return false;
}

size_t mover_verify_plan(void *const *pages, const size_t *idx, const int *weight, size_t k, void **sample)
{
	size_t ns = 0;

	for (size_t e = 0; e < k; e++)
		if (weight[e] > 1) {
			sample[ns++] = pages[idx[e] + (size_t)weight[e] / 2];
			sample[ns++] = pages[idx[e] + (size_t)weight[e] - 1];
		}
	return ns;
}

bool mover_verify_apply(int *status, const size_t *idx, const int *weight, const int *mstatus, size_t k,
			const int *sstatus)
{
	size_t q = 0;

	for (size_t e = 0; e < k; e++) {
		size_t i = idx[e];
		/* where the head is now: the call's answer, else unmoved */
		int at = mstatus[e] >= 0 ? mstatus[e] : status[i];

		if (weight[e] > 1) {
			bool agree = sstatus[q] == at && sstatus[q + 1] == at;

			q += 2;
			if (!agree)
				return false;
			for (size_t t = 0; t < (size_t)weight[e]; t++)
				status[i + t] = at;
		} else {
			status[i] = at;
		}
	}
	return true;
}

size_t mover_drop_refused(int *status, const size_t *idx, const int *mstatus, size_t k)
{
	size_t dropped = 0;

	for (size_t e = 0; e < k; e++)
		if (mstatus[e] == -EACCES || mstatus[e] == -EFAULT || mstatus[e] == -ENOENT) {
			status[idx[e]] = mstatus[e];
			dropped++;
		}
	return dropped;
}

size_t mover_window_left(const int *status, size_t n, const nodemask_t *to)
{
	size_t left = 0;

	for (size_t i = 0; i < n; i++)
		left += (status[i] >= 0 && !mask_test(to, status[i])) || status[i] == -EACCES;
	return left;
}

enum mover_settle mover_settle_step(uint64_t left, uint64_t prev, double waited_s)
{
	uint64_t step;

	if (left < LEFT_MIN_BYTES)
		return MOVER_SETTLE_DONE;
	if (prev == UINT64_MAX)
		return MOVER_SETTLE_WAIT;
	step = prev / 10 > LEFT_MIN_BYTES ? prev / 10 : LEFT_MIN_BYTES;
	if (prev > left && prev - left >= step && waited_s + MOVER_SETTLE_POLL_S <= MOVER_SETTLE_MAX_S + 1e-9)
		return MOVER_SETTLE_WAIT;
	return MOVER_SETTLE_SWEEP;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double mover_stall_p99(double *ms, unsigned n)
{
	unsigned rank;

	if (!n)
		return NAN;
	qsort(ms, n, sizeof(*ms), cmp_double);
	/* nearest rank: the smallest value with at least 99 % at or below it */
	rank = (unsigned)ceil(0.99 * (double)n);
	return ms[rank ? rank - 1 : 0];
}

uint64_t mover_sweep_cap(uint64_t walk_bytes, double walk_ms)
{
	double cap;

	if (walk_bytes < LEFT_MIN_BYTES || !(walk_ms > 0))
		return LEFT_MIN_BYTES;
	cap = (double)walk_bytes / walk_ms * MOVER_SWEEP_MAX_MS;
	return cap < (double)LEFT_MIN_BYTES ? LEFT_MIN_BYTES : cap > 1e18 ? (uint64_t)1e18 : (uint64_t)cap;
}

unsigned mover_sweep_nodes(const uint64_t *by_id, unsigned nr, const nodemask_t *to, uint64_t min_left, int *out)
{
	uint64_t rest = 0;
	unsigned n = 0, k = 0;

	if (nr > MASK_MAX_NODES)
		nr = MASK_MAX_NODES;
	/* The nodes off TO with memory, largest first (ties: lower id). */
	for (unsigned i = 0; i < nr; i++) {
		unsigned at = n;

		if (mask_test(to, (int)i) || !by_id[i])
			continue;
		while (at > 0 && by_id[out[at - 1]] < by_id[i]) {
			out[at] = out[at - 1];
			at--;
		}
		out[at] = (int)i;
		n++;
		rest += by_id[i];
	}
	/* As many as it takes to leave under MIN_LEFT. */
	while (k < n && rest >= min_left)
		rest -= by_id[out[k++]];
	return k;
}

size_t mover_window_moved(const int *first, const int *status, size_t n, const nodemask_t *to, long *by_node)
{
	size_t total = 0;

	for (size_t i = 0; i < n; i++)
		if (first[i] >= 0 && first[i] < MASK_MAX_NODES && status[i] >= 0 && first[i] != status[i] &&
		    mask_test(to, status[i])) {
			by_node[first[i]]++;
			total++;
		}
	return total;
}

int mover_pick_target(const nodemask_t *to, int from)
{
	unsigned nto = mask_count(to), k;

	if (!nto)
		return -1;
	if (mask_test(to, from))
		return from;
	k = (unsigned)(from < 0 ? 0 : from) % nto;
	mask_foreach(b, to) {
		if (k-- == 0)
			return b;
	}
	return mask_first(to->w, MASK_BITS(to));
}

unsigned mover_source_slot(struct mover_job_info *j, int node)
{
	for (unsigned i = 0; i < j->nsources; i++)
		if (j->sources[i].node == node)
			return i;
	if (j->nsources == MOVER_MAX_SOURCES)
		return MOVER_MAX_SOURCES;
	j->sources[j->nsources] = (struct mover_source){
		.node = node, .to = j->has_first ? j->first : mover_pick_target(&j->to, node)
	};
	return j->nsources++;
}

void mover_census_add(struct mover_job_info *j, const char *text, bool all)
{
	uint64_t *by_id = xcalloc(MASK_MAX_NODES, sizeof(*by_id));

	numamaps_parse(text, by_id, MASK_MAX_NODES);
	for (int node = 0; node < MASK_MAX_NODES; node++) {
		unsigned k;

		if (!by_id[node] || (!all && mask_test(&j->to, node)))
			continue;
		mask_set(&j->from, node);
		k = mover_source_slot(j, node);
		if (k < MOVER_MAX_SOURCES)
			j->sources[k].found += by_id[node];
		else
			j->other_found += by_id[node];
	}
	free(by_id);
}

static void add_clamped(uint64_t *v, int64_t d)
{
	if (d >= 0)
		*v += (uint64_t)d;
	else
		*v = *v >= (uint64_t)-d ? *v - (uint64_t)-d : 0;
}

void mover_add_done(struct mover_job_info *j, unsigned slot, int64_t bytes)
{
	add_clamped(slot < j->nsources ? &j->sources[slot].done : &j->other_done, bytes);
	add_clamped(&j->bytes_done, bytes);
}

uint64_t mover_source_left(const struct mover_source *s)
{
	return s->found > s->done ? s->found - s->done : 0;
}

uint64_t mover_job_left(const struct mover_job_info *j)
{
	uint64_t left;

	if (!j->census)
		return j->bytes_done >= j->bytes_expected ? 0 : j->bytes_expected - j->bytes_done;
	left = j->other_found > j->other_done ? j->other_found - j->other_done : 0;
	for (unsigned i = 0; i < j->nsources; i++)
		left += mover_source_left(&j->sources[i]);
	return left;
}

/* Plain loops, not snapshot.c's lookups: migbench links the mover alone. */
void mover_flows_add(const struct mover_job_info *j, struct snapshot *s)
{
	const struct snap_guest *g = NULL;

	for (unsigned i = 0; i < s->nr_guests && !g; i++)
		if (strcmp(s->guests[i].id, j->guest) == 0)
			g = &s->guests[i];
	if (mover_state_final(j->state) || !g || !g->mem_node)
		return;
	for (unsigned n = 0; n < s->nr_nodes; n++) {
		int to, t = -1;

		if (!g->mem_node[n] || mask_test(&j->to, s->nodes[n].id))
			continue;
		to = j->has_first ? j->first : mover_pick_target(&j->to, s->nodes[n].id);
		for (unsigned m = 0; m < s->nr_nodes && to >= 0 && t < 0; m++)
			if (s->nodes[m].id == to)
				t = (int)m;
		s->nodes[n].mem_leaving += g->mem_node[n];
		if (t >= 0)
			s->nodes[t].mem_coming += g->mem_node[n];
	}
}

bool mover_room_ok(uint64_t mem_free, uint64_t min_free, uint64_t bytes)
{
	return mem_free > min_free && mem_free - min_free >= bytes;
}

bool mover_room_claim_ok(uint64_t mem_free, uint64_t claimed, uint64_t min_free, uint64_t bytes)
{
	return mover_room_ok(mem_free > claimed ? mem_free - claimed : 0, min_free, bytes);
}

void mover_job_fact(const struct mover_job_info *j, struct snap_job *out)
{
	*out = (struct snap_job){
		.id = j->id, .to = j->to, .has_first = j->has_first, .first = j->first, .write = j->write,
		.ended = mover_state_final(j->state), .bytes_done = j->bytes_done,
	};
}

bool mover_job_same_move(const struct mover_job_info *j, const nodemask_t *to, int first, uint64_t first_bytes)
{
	struct snap_job f;

	mover_job_fact(j, &f);
	return snap_job_same_move(&f, to, first, first_bytes);
}

bool mover_peer_frees(enum mover_state st, bool stopping, bool room_waiting, bool worker_free)
{
	if (stopping || room_waiting)
		return false;
	/* A queued job moves only once a worker takes it: with every worker
	 * held by jobs waiting for room it never would. */
	return st == MJ_RUNNING || (st == MJ_QUEUED && worker_free);
}

enum mover_room_step mover_room_step(bool room, bool others_moving, bool looked_quiet)
{
	if (room)
		return MOVER_ROOM_TAKE;
	if (others_moving)
		return MOVER_ROOM_WAIT;
	return looked_quiet ? MOVER_ROOM_FAIL : MOVER_ROOM_LOOK_AGAIN;
}

size_t mover_assign_targets(const int *status, size_t *idx, int *weight, size_t k, size_t page,
			    const nodemask_t *to, int first, uint64_t *first_left, int *nodes)
{
	nodemask_t rest = *to;
	size_t kept = 0;

	if (first >= 0 && first < MASK_MAX_NODES && mask_count(to) > 1)
		mask_clear(&rest, first);
	for (size_t e = 0; e < k; e++) {
		int from = status[idx[e]];
		uint64_t bytes = (uint64_t)weight[e] * page;
		int t;

		if (first >= 0 && *first_left >= bytes && from != first) {
			t = first;
			*first_left -= bytes;
		} else if (first >= 0 && *first_left < bytes) {
			if (mask_test(to, from))
				continue;
			t = mover_pick_target(&rest, from);
		} else if (first >= 0) {
			continue; /* already on FIRST */
		} else {
			t = mover_pick_target(to, from);
		}
		idx[kept] = idx[e];
		weight[kept] = weight[e];
		nodes[kept++] = t;
	}
	return kept;
}

size_t mover_vmas_pages(const struct mover_vma *vmas, unsigned n, size_t page)
{
	size_t total = 0;

	for (unsigned i = 0; i < n; i++) {
		size_t p = (size_t)((vmas[i].end - vmas[i].start + page - 1) / page);

		if (p > SIZE_MAX - total)
			return SIZE_MAX;
		total += p;
	}
	return total;
}

size_t mover_buf_grow(size_t cap, size_t need, size_t max)
{
	size_t want;

	if (need > max)
		need = max;
	if (need <= cap)
		return cap;
	want = cap > max / 2 ? max : cap * 2;
	return want > need ? want : need;
}

enum mover_pin mover_pin_action(bool on_target, bool pinned, const nodemask_t *pinned_to, const nodemask_t *to)
{
	if (!on_target)
		return pinned ? MOVER_PIN_RESTORE : MOVER_PIN_NONE;
	if (pinned && mask_equal(pinned_to, to))
		return MOVER_PIN_KEEP;
	return MOVER_PIN_SET;
}

void mover_rate_add(struct mover_rate *r, int64_t start_ns, int64_t end_ns, uint64_t bytes)
{
	if (bytes < (1ULL << 20) || start_ns <= 0 || end_ns <= start_ns)
		return;
	r->j[r->next].start_ns = start_ns;
	r->j[r->next].end_ns = end_ns;
	r->j[r->next].bytes = bytes;
	r->next = (r->next + 1) % MOVER_RATE_JOBS;
	if (r->n < MOVER_RATE_JOBS)
		r->n++;
}

double mover_rate_mibs(const struct mover_rate *r)
{
	unsigned idx[MOVER_RATE_JOBS];
	double bytes = 0.0;
	int64_t busy = 0, end = INT64_MIN;

	/* the jobs by start (insertion sort: eight at most), then the
	 * length of the union of their runs */
	for (unsigned i = 0; i < r->n; i++) {
		unsigned k = i;

		while (k > 0 && r->j[idx[k - 1]].start_ns > r->j[i].start_ns) {
			idx[k] = idx[k - 1];
			k--;
		}
		idx[k] = i;
		bytes += (double)r->j[i].bytes;
	}
	for (unsigned i = 0; i < r->n; i++) {
		int64_t s = r->j[idx[i]].start_ns, e = r->j[idx[i]].end_ns;

		if (s < end)
			s = end;
		if (e > s)
			busy += e - s;
		if (e > end)
			end = e;
	}
	return busy > 0 ? bytes / 1048576.0 / ((double)busy / 1e9) : 0.0;
}
