/* The per-guest history: what is recorded comes back (within its
 * documented rounding), oldest first; the ring keeps the newest
 * HISTORY_SAMPLES; spacing drops samples that come too soon; guests that
 * leave lose their history; a topology change starts over; memory stays
 * bounded. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/store/history.h"
#include "orchestrator/model/snapshot.h"

#define GIB (1024ull * 1024 * 1024)
#define MIB (1024ull * 1024)

/* NODES nodes with 2 CPUs each; guests named by IDS, guest k has
 * locality LOC, its CPUs on node k % nodes, memory MEM0 on node 0 and
 * 1 MiB on the others. Taken at T seconds. */
static struct snapshot *snap(unsigned nodes, const char *const *ids, unsigned n, double loc, uint64_t mem0,
			     double t)
{
	struct snapshot *s = snap_new();
	struct snap_node nd[16];

	memset(nd, 0, sizeof(nd));
	for (unsigned i = 0; i < nodes; i++) {
		nd[i].id = (int)i;
		mask_set(&nd[i].cpus, 2 * i);
		mask_set(&nd[i].cpus, 2 * i + 1);
		nd[i].nr_cpus = 2;
		nd[i].mem_total = 4 * GIB;
	}
	snap_set_nodes(s, nd, nodes, NULL);
	for (unsigned k = 0; k < n; k++) {
		struct snap_guest *g = snap_add_guest(s);
		cpumask_t c;

		snprintf(g->id, sizeof(g->id), "%s", ids[k]);
		mask_zero(&c);
		mask_set(&c, 2 * (k % nodes));
		snap_guest_set_cpus(s, g, &c, NULL);
		mask_set(&g->mems, 0);
		g->cpu_use = 1.25;
		for (unsigned i = 0; i < nodes; i++)
			g->mem_node[i] = i == 0 ? mem0 : MIB;
	}
	snap_finalize(s);
	for (unsigned k = 0; k < s->nr_guests; k++)
		s->guests[k].locality = loc;
	s->real_ns = (int64_t)(t * 1e9) + 1700000000ll * 1000000000ll;
	return s;
}

static void record(struct history *h, struct snapshot *s)
{
	history_record(h, s);
	snap_unref(s);
}

static void test_round_trip(void **state)
{
	static const char *const ids[] = { "b", "a" };
	struct history *h = history_new(0);
	struct history_series *hs;

	(void)state;
	record(h, snap(2, ids, 2, 0.25, 3 * GIB + 12345, 0));
	record(h, snap(2, ids, 2, NAN, 5 * MIB, 1.5));
	assert_int_equal(history_get(h, "a", &hs), 0);
	assert_int_equal(hs->nr_nodes, 2);
	assert_int_equal(hs->node_ids[1], 1);
	assert_int_equal(hs->n, 2);
	assert_int_equal(hs->capacity, HISTORY_SAMPLES);
	assert_true(fabs(hs->p[0].locality - 0.25) < 1e-4);
	assert_true(isnan(hs->p[1].locality));
	assert_true(fabs(hs->p[0].cpu_use - 1.25) < 0.01);
	assert_int_equal(hs->p[1].real_ms - hs->p[0].real_ms, 1500);
	/* 3 GiB: 1/65536 of the largest node, relative error < 2e-5 */
	assert_true(fabs((double)hs->p[0].mem[0] - (double)(3 * GIB)) < 3 * GIB * 2e-5);
	assert_true(fabs((double)hs->p[0].mem[1] - (double)MIB) < 3 * GIB * 2e-5);
	assert_int_equal(hs->p[1].mem[0], 5 * MIB);
	assert_int_equal(hs->p[1].mem[1], MIB);
	/* "a" was added second: its CPU is on node 1; mems 0 */
	assert_int_equal(hs->p[0].flags[0], HIST_MEM_NODE);
	assert_int_equal(hs->p[0].flags[1], HIST_CPU_NODE);
	free(hs);
	assert_int_equal(history_get(h, "b", &hs), 0);
	assert_int_equal(hs->p[0].flags[0], HIST_CPU_NODE | HIST_MEM_NODE);
	assert_int_equal(hs->p[0].flags[1], 0);
	free(hs);
	assert_int_equal(history_get(h, "c", &hs), -ENOENT);
	history_free(h);
}

static void test_ring_keeps_the_newest(void **state)
{
	static const char *const ids[] = { "a" };
	struct history *h = history_new(0);
	struct history_series *hs;
	unsigned total = HISTORY_SAMPLES + 37;

	(void)state;
	for (unsigned i = 0; i < total; i++)
		record(h, snap(2, ids, 1, (double)i / total, GIB, i));
	assert_int_equal(history_get(h, "a", &hs), 0);
	assert_int_equal(hs->n, HISTORY_SAMPLES);
	for (unsigned i = 0; i < hs->n; i++) {
		unsigned want = i + 37;

		assert_int_equal(hs->p[i].real_ms - hs->p[0].real_ms, (int64_t)i * 1000);
		assert_true(fabs(hs->p[i].locality - (double)want / total) < 1e-4);
	}
	free(hs);
	history_free(h);
}

static void test_spacing(void **state)
{
	static const char *const ids[] = { "a" };
	struct history *h = history_new(10);
	struct history_series *hs;

	(void)state;
	/* 9 s (10 less the 10% slack) must pass between two samples: kept
	 * at 0, 9.2, 18.5 and 28; 4, 8, 13 and 22 come too soon */
	static const double t[] = { 0, 4, 8, 9.2, 13, 18.5, 22, 28 };
	for (unsigned i = 0; i < 8; i++)
		record(h, snap(2, ids, 1, 0.5, GIB, t[i]));
	assert_int_equal(history_get(h, "a", &hs), 0);
	assert_int_equal(hs->n, 4);
	assert_int_equal(hs->p[1].real_ms - hs->p[0].real_ms, 9200);
	assert_int_equal(hs->p[2].real_ms - hs->p[0].real_ms, 18500);
	assert_int_equal(hs->p[3].real_ms - hs->p[0].real_ms, 28000);
	assert_true(hs->spacing_s == 10);
	free(hs);
	history_set_spacing(h, 0);
	record(h, snap(2, ids, 1, 0.5, GIB, 28.1));
	assert_int_equal(history_get(h, "a", &hs), 0);
	assert_int_equal(hs->n, 5);
	free(hs);
	history_free(h);
}

static void test_gone_guests_and_topology(void **state)
{
	static const char *const abc[] = { "a", "b", "c" }, *const bd[] = { "b", "d" };
	struct history *h = history_new(0);
	struct history_series *hs;
	unsigned ng;

	(void)state;
	record(h, snap(2, abc, 3, 1, GIB, 0));
	record(h, snap(2, bd, 2, 1, GIB, 1));
	assert_int_equal(history_get(h, "a", &hs), -ENOENT);
	assert_int_equal(history_get(h, "c", &hs), -ENOENT);
	assert_int_equal(history_get(h, "b", &hs), 0);
	assert_int_equal(hs->n, 2);
	free(hs);
	assert_int_equal(history_get(h, "d", &hs), 0);
	assert_int_equal(hs->n, 1);
	free(hs);
	history_bytes(h, &ng);
	assert_int_equal(ng, 2);
	/* a node appears: the old samples cannot be read with 3 nodes */
	record(h, snap(3, bd, 2, 1, GIB, 2));
	assert_int_equal(history_get(h, "b", &hs), 0);
	assert_int_equal(hs->n, 1);
	assert_int_equal(hs->nr_nodes, 3);
	free(hs);
	history_free(h);
}

/* A guest whose every field changes in every way the coding has a case
 * for (unknown and back, 0xffff next to 0, nodes gaining and losing
 * memory, the scale changing, masks changing), past the ring's wrap so
 * the oldest sample is re-coded many times: each sample comes back as it
 * was quantised. */
static void test_every_change_round_trips(void **state)
{
	static const char *const ids[] = { "a" };
	enum { NODES = 10, TOTAL = HISTORY_SAMPLES + 61 };
	static double loc[TOTAL], cpu[TOTAL];
	static uint64_t mem[TOTAL][NODES];
	static unsigned cn[TOTAL], mm[TOTAL];
	struct history *h = history_new(0);
	struct history_series *hs;
	uint32_t x = 12345;

	(void)state;
	for (unsigned i = 0; i < TOTAL; i++) {
		struct snapshot *s = snap(NODES, ids, 1, 0, 0, 2.5 * i + (i % 3) * 0.1);
		struct snap_guest *g = &s->guests[0];

		x = x * 1103515245u + 12345u;
		loc[i] = i % 17 == 3 ? NAN : i % 5 == 0 ? 0 : (double)(x % 10001) / 10000;
		x = x * 1103515245u + 12345u;
		cpu[i] = i % 19 == 4 ? NAN : (double)(x % 5000) / 100;
		g->locality = loc[i];
		g->cpu_use = cpu[i];
		mask_zero(&g->cpu_nodes);
		mask_zero(&g->mems);
		cn[i] = (x >> 8) % 1024;
		mm[i] = i % 7 ? mm[i - 1] : (x >> 4) % 1024;
		for (unsigned n = 0; n < NODES; n++) {
			x = x * 1103515245u + 12345u;
			if (cn[i] & (1u << n))
				mask_set(&g->cpu_nodes, n);
			if (mm[i] & (1u << n))
				mask_set(&g->mems, n);
			/* some nodes empty, some tiny, one now and then huge
			 * (changing the scale), some unchanged */
			mem[i][n] = (x >> 9) % 4 == 0 ? 0 : i % 11 == 0 && n == 2 ? 300 * GIB + x
				    : (x >> 9) % 4 == 1 && i ? mem[i - 1][n] : (uint64_t)(x % 4096) * 4096;
			g->mem_node[n] = mem[i][n];
		}
		record(h, s);
	}
	assert_int_equal(history_get(h, "a", &hs), 0);
	assert_int_equal(hs->n, HISTORY_SAMPLES);
	for (unsigned k = 0; k < hs->n; k++) {
		unsigned i = TOTAL - HISTORY_SAMPLES + k;
		const struct history_point *pt = &hs->p[k];
		uint64_t max = 0;

		assert_int_equal(pt->real_ms - 1700000000000ll, (int64_t)(2500 * i + (i % 3) * 100));
		if (isnan(loc[i]))
			assert_true(isnan(pt->locality));
		else
			assert_true(fabs(pt->locality - loc[i]) <= 0.5e-4 + 1e-12);
		if (isnan(cpu[i]))
			assert_true(isnan(pt->cpu_use));
		else
			assert_true(fabs(pt->cpu_use - cpu[i]) <= 0.005 + 1e-9);
		for (unsigned n = 0; n < NODES; n++)
			if (mem[i][n] > max)
				max = mem[i][n];
		for (unsigned n = 0; n < NODES; n++) {
			/* 1/65536 of the largest node (at least 1 KiB), rounded */
			double q = fmax(1024.0, (double)max / 65536.0);

			assert_true(fabs((double)pt->mem[n] - (double)mem[i][n]) <= q);
			if (!mem[i][n])
				assert_int_equal(pt->mem[n], 0);
			assert_int_equal(!!(pt->flags[n] & HIST_CPU_NODE), !!(cn[i] & (1u << n)));
			assert_int_equal(!!(pt->flags[n] & HIST_MEM_NODE), !!(mm[i] & (1u << n)));
		}
	}
	free(hs);
	history_free(h);
}

/* The bound: 1000 guests × HISTORY_SAMPLES on 8 nodes, each sample
 * different from the one before (locality, CPU and the memory of the
 * nodes holding any change), take about 7 bytes a sample where the
 * old fixed layout took 36: what did not change (masks, the other nodes'
 * memory) costs nothing, a change costs its size. */
static void test_bounded(void **state)
{
	enum { N = 1000 };
	static char names[N][16];
	static const char *ids[N];
	struct history *h = history_new(0);
	size_t b;
	unsigned ng;

	(void)state;
	for (unsigned k = 0; k < N; k++) {
		snprintf(names[k], sizeof(names[k]), "g%04u", k);
		ids[k] = names[k];
	}
	for (unsigned i = 0; i < HISTORY_SAMPLES + 10; i++) {
		/* 15 s apart; locality and memory on node 0 change a little */
		struct snapshot *s = snap(8, ids, N, 0.5 + (i % 2) * 0.01, GIB + (i % 2) * 4 * MIB, 15.0 * i);

		for (unsigned k = 0; k < N; k++)
			s->guests[k].cpu_use = 1 + (i % 3) * 0.25;
		record(h, s);
	}
	b = history_bytes(h, &ng);
	assert_int_equal(ng, N);
	print_message("history of %u guests x %u samples on 8 nodes: %zu bytes (%.1f a sample)\n", N,
		      HISTORY_SAMPLES, b, (double)b / (N * HISTORY_SAMPLES));
	/* flags 1, locality 2, CPU 1, the mask of changed nodes 1, node 0's
	 * memory 2 (nodes 1-7 hold an unchanged 1 MiB; 15 s apart every
	 * time, so no time): 7 bytes, an eighth of spare room and the
	 * per-guest overhead */
	assert_true(b >= (size_t)N * HISTORY_SAMPLES * 7);
	assert_true(b <= (size_t)N * (HISTORY_SAMPLES * 7 * 9 / 8 + 200));
	history_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_ring_keeps_the_newest),
		cmocka_unit_test(test_spacing),
		cmocka_unit_test(test_gone_guests_and_topology),
		cmocka_unit_test(test_every_change_round_trips),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
