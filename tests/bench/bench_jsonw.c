/* bench_jsonw — GET /v1/guests's document written two ways: the streaming
 * writer the API uses (api/jsonw.c), and a jansson tree of the same
 * guests dumped as the other answers are (api.c's dump(): compact, 10
 * significant digits). Both texts are checked to be the same
 * bytes, then each is built REPS times: the time of one build (median,
 * p90) and the peak of heap bytes live during one build (every malloc,
 * calloc and realloc counted, through malloc_usable_size).
 *
 *   build/bench/bench_jsonw [GUESTS...]     (default: 100 1000)
 *
 * The guests are shaped as bench_cycle --generate's Docker guests on an
 * 8-node host, as the agent shows them: 64-hex ids, systemd scope
 * cgroups, memory on every node. The per-guest lookups guests_doc also
 * does (the policy store, formatting CPU lists) cost the same either way
 * and are left out.
 */
#include <jansson.h>
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/jsonw.h"
#include "orchestrator/base/xalloc.h"

#define REPS 200
#define NODES 8

/* ---- counting allocator (interposes on glibc's) ---------------------- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static bool counting;
static size_t live, peak;

static void add(void *p)
{
	if (p && counting) {
		live += malloc_usable_size(p);
		if (live > peak)
			peak = live;
	}
}

static void sub(void *p)
{
	if (p && counting) {
		size_t n = malloc_usable_size(p);

		live = live > n ? live - n : 0;
	}
}

void *malloc(size_t n)
{
	void *p = __libc_malloc(n);

	add(p);
	return p;
}

void *calloc(size_t a, size_t b)
{
	void *p = __libc_calloc(a, b);

	add(p);
	return p;
}

void *realloc(void *old, size_t n)
{
	size_t was = old && counting ? malloc_usable_size(old) : 0;
	void *p;

	/* The old block and the new one may both be live for the copy. */
	if (counting && peak < live + n)
		peak = live + n;
	p = __libc_realloc(old, n);
	if (p && counting) {
		live = live - was + malloc_usable_size(p);
		if (live > peak)
			peak = live;
	}
	return p;
}

void free(void *p)
{
	sub(p);
	__libc_free(p);
}

/* ---- the guests ------------------------------------------------------- */

struct g {
	char id[80], name[72], cgroup[120];
	double cpu_use, locality, mem_in_cpuset;
	int64_t mem_node[NODES], mem_total;
};

static struct g *make_guests(unsigned n)
{
	struct g *gs = xcalloc(n, sizeof(*gs));

	for (unsigned i = 0; i < n; i++) {
		struct g *g = &gs[i];

		snprintf(g->name, sizeof(g->name), "%064x", i + 1);
		snprintf(g->id, sizeof(g->id), "docker-%s", g->name);
		snprintf(g->cgroup, sizeof(g->cgroup), "/system.slice/docker-%s.scope", g->name);
		g->cpu_use = (i % 7) * 0.0625;
		g->locality = 0.125 + (i % 5) * 0.1111;
		g->mem_in_cpuset = 1.0;
		for (unsigned k = 0; k < NODES; k++) {
			g->mem_node[k] = (int64_t)(k == i % NODES ? 200 : 40) << 20;
			g->mem_total += g->mem_node[k];
		}
	}
	return gs;
}

static double round4(double v)
{
	return round(v * 10000.0) / 10000.0;
}

/* The keys and order of api_read.c's guests_doc. */
static char *by_jsonw(const struct g *gs, unsigned n, size_t *len)
{
	struct jw w;

	jw_init(&w, 512 + (size_t)n * 512);
	jw_obj(&w);
	jw_key(&w, "guests");
	jw_arr(&w);
	for (unsigned i = 0; i < n; i++) {
		const struct g *g = &gs[i];

		jw_obj(&w);
		jw_key(&w, "cgroup");
		jw_str(&w, g->cgroup);
		jw_key(&w, "cpu_nodes");
		jw_str(&w, "0-7");
		jw_key(&w, "cpu_use");
		jw_real(&w, g->cpu_use);
		jw_key(&w, "cpus");
		jw_str(&w, "0-63");
		jw_key(&w, "id");
		jw_str(&w, g->id);
		jw_key(&w, "kind");
		jw_str(&w, "container");
		jw_key(&w, "locality");
		jw_real(&w, g->locality);
		jw_key(&w, "locality_source");
		jw_str(&w, "estimate");
		jw_key(&w, "mem_bytes_by_node");
		jw_obj(&w);
		for (unsigned k = 0; k < NODES; k++) {
			char id[16];

			snprintf(id, sizeof(id), "%u", k);
			jw_key(&w, id);
			jw_int(&w, g->mem_node[k]);
		}
		jw_obj_end(&w);
		jw_key(&w, "mem_in_cpuset");
		jw_real(&w, g->mem_in_cpuset);
		jw_key(&w, "mem_total_bytes");
		jw_int(&w, g->mem_total);
		jw_key(&w, "mems");
		jw_str(&w, "0-7");
		jw_key(&w, "name");
		jw_str(&w, g->name);
		jw_key(&w, "policy");
		jw_obj(&w);
		jw_key(&w, "mode");
		jw_str(&w, "auto");
		jw_key(&w, "source");
		jw_str(&w, "default");
		jw_obj_end(&w);
		jw_key(&w, "runtime");
		jw_str(&w, "docker");
		jw_obj_end(&w);
	}
	jw_arr_end(&w);
	jw_key(&w, "count");
	jw_int(&w, n);
	jw_key(&w, "next");
	jw_null(&w);
	jw_key(&w, "seq");
	jw_int(&w, 42);
	jw_obj_end(&w);
	jw_raw(&w, "\n");
	return jw_take(&w, len);
}

/* The same document as a jansson tree, dumped as api.c's dump() does but
 * without JSON_SORT_KEYS (the list has "guests" first; jansson keeps the
 * order keys were set in, and sorting would only add to its cost). */
static char *by_jansson(const struct g *gs, unsigned n, size_t *len)
{
	json_t *arr = json_array(), *root;
	char *s, *t;

	for (unsigned i = 0; i < n; i++) {
		const struct g *g = &gs[i];
		json_t *mem = json_object(), *o;

		for (unsigned k = 0; k < NODES; k++) {
			char id[16];

			snprintf(id, sizeof(id), "%u", k);
			json_object_set_new(mem, id, json_integer(g->mem_node[k]));
		}
		o = json_pack("{s:s, s:s, s:f, s:s, s:s, s:s, s:f, s:s, s:o, s:f, s:I, s:s, s:s, "
			      "s:{s:s, s:s}, s:s}",
			      "cgroup", g->cgroup, "cpu_nodes", "0-7", "cpu_use", round4(g->cpu_use),
			      "cpus", "0-63", "id", g->id, "kind", "container", "locality", round4(g->locality),
			      "locality_source", "estimate", "mem_bytes_by_node", mem,
			      "mem_in_cpuset", round4(g->mem_in_cpuset), "mem_total_bytes", (json_int_t)g->mem_total,
			      "mems", "0-7", "name", g->name, "policy", "mode", "auto", "source", "default",
			      "runtime", "docker");
		json_array_append_new(arr, o);
	}
	root = json_pack("{s:o, s:I, s:n, s:I}", "guests", arr, "count", (json_int_t)n, "next", "seq",
			 (json_int_t)42);
	s = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(10));
	json_decref(root);
	*len = strlen(s);
	t = xrealloc(s, *len + 2);
	t[(*len)++] = '\n';
	t[*len] = '\0';
	return t;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void measure(const char *what, char *(*fn)(const struct g *, unsigned, size_t *), const struct g *gs,
		    unsigned n)
{
	static double t[REPS];
	size_t len;

	for (unsigned r = 0; r < REPS; r++) {
		double t0 = now_us();

		free(fn(gs, n, &len));
		t[r] = now_us() - t0;
	}
	qsort(t, REPS, sizeof(t[0]), dcmp);
	live = peak = 0;
	counting = true;
	free(fn(gs, n, &len));
	counting = false;
	printf("%7u %-8s %9zu %10.0f %10.0f %12zu\n", n, what, len, t[REPS / 2], t[REPS * 9 / 10], peak);
}

int main(int argc, char **argv)
{
	static const unsigned defaults[] = { 100, 1000 };
	unsigned nr = argc > 1 ? (unsigned)argc - 1 : 2;

	xmalloc_tune(); /* as numaorchd does */
	printf("%7s %-8s %9s %10s %10s %12s\n", "guests", "writer", "bytes", "p50 us", "p90 us", "peak heap B");
	for (unsigned k = 0; k < nr; k++) {
		unsigned n = argc > 1 ? (unsigned)strtoul(argv[k + 1], NULL, 10) : defaults[k];
		struct g *gs = make_guests(n);
		size_t l1, l2;
		char *a = by_jsonw(gs, n, &l1), *b = by_jansson(gs, n, &l2);

		if (l1 != l2 || memcmp(a, b, l1) != 0) {
			fprintf(stderr, "bench_jsonw: the two texts differ at %u guests\n", n);
			return 1;
		}
		free(a);
		free(b);
		measure("jsonw", by_jsonw, gs, n);
		measure("jansson", by_jansson, gs, n);
		free(gs);
	}
	return 0;
}
