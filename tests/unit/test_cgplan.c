/* The pure write planner of a container move (orchestrator/actuator/cgplan.c) on
 * tables, carried out on a model of the v1 kernel's cpuset rules: a
 * child's set within its parent's (else EACCES), a parent's set covering
 * every child's (else EBUSY), never empty (ENOSPC with tasks attached).
 * Every step of every plan — and of every revert plan after a write
 * refused at any step — must be accepted by that model and end where it
 * should. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/actuator/cgplan.h"
#include "orchestrator/base/mask.h"

#define MAXCG 8

/* A guest's subtree in pre-order; the guest's own parent allows 0-7. */
struct model {
	unsigned n;
	int parent[MAXCG];          /* -1: the guest */
	char val[MAXCG][32];        /* the set, as the kernel shows it */
	unsigned writes;
};

static void set_of(const char *s, cpumask_t *m)
{
	mask_zero(m);
	if (*s)
		assert_int_equal(mask_parse(s, m), 0);
}

/* The v1 kernel's answer to writing V into cgroup I: 0 or -errno. */
static int model_check(const struct model *m, unsigned i, const char *v)
{
	cpumask_t x, par, ch;

	set_of(v, &x);
	if (mask_empty(&x))
		return -ENOSPC;
	set_of(m->parent[i] < 0 ? "0-7" : m->val[m->parent[i]], &par);
	if (!mask_subset(&x, &par))
		return -EACCES;
	for (unsigned k = 0; k < m->n; k++) {
		if (m->parent[k] != (int)i)
			continue;
		set_of(m->val[k], &ch);
		if (!mask_subset(&ch, &x))
			return -EBUSY;
	}
	return 0;
}

/* Carry out P as cgjournal.c does (a value already there is not written
 * and not journaled), refusing step REFUSE (-1: none) with -EBUSY. Every
 * write must pass model_check. Returns the failing step's index or -1;
 * DONE/ND get the journal. */
static int run(struct model *m, const struct cgplan *p, int refuse, struct cgplan_done *done, unsigned *nd,
	       const char *what)
{
	*nd = 0;
	for (unsigned i = 0; i < p->n; i++) {
		const struct cgplan_step *s = &p->s[i];
		int r;

		assert_true(s->sub < m->n);
		assert_non_null(s->value);
		if (!*s->value)
			fail_msg("%s: step %u writes an empty set", what, i);
		if (strcmp(m->val[s->sub], s->value) == 0)
			continue;
		if ((int)i == refuse)
			return (int)i;
		r = model_check(m, s->sub, s->value);
		if (r < 0)
			fail_msg("%s: step %u (cgroup %u = %s) refused by the kernel's rules: %s", what, i, s->sub,
				 s->value, strerror(-r));
		done[*nd] = (struct cgplan_done){ .sub = s->sub, .file = s->file, .old = strdup(m->val[s->sub]) };
		(*nd)++;
		snprintf(m->val[s->sub], sizeof(m->val[0]), "%s", s->value);
		m->writes++;
	}
	return -1;
}

static void revert(struct model *m, struct cgplan_done *done, unsigned nd, const char *what)
{
	unsigned order[64];
	unsigned n = cgplan_revert_order(done, nd, false, order);

	for (unsigned k = 0; k < n; k++) {
		const struct cgplan_done *e = &done[order[k]];
		int r = model_check(m, e->sub, e->old);

		if (r < 0)
			fail_msg("%s: restore %u (cgroup %u = %s) refused by the kernel's rules: %s", what, k, e->sub,
				 e->old, strerror(-r));
		snprintf(m->val[e->sub], sizeof(m->val[0]), "%s", e->old);
	}
	for (unsigned i = 0; i < nd; i++)
		free(done[i].old);
}

/* guest /g with children c1, c2, c3, pre-order. */
static const int flat4[] = { -1, 0, 0, 0 };
/* guest /g with c1, its child c1/x (and x's child c1/x/y), and c2. */
static const int tree4[] = { -1, 0, 1, 0 };
static const int tree5[] = { -1, 0, 1, 2, 0 };

struct tcase {
	const char *name;
	unsigned n;
	const int *parent;
	const char *from[MAXCG];
	const char *unionv, *newv;
};

static const struct tcase cases[] = {
	{ "disjoint: 0-1 -> 2-3", 4, flat4, { "0-1", "0-1", "1", "0" }, "0-3", "2-3" },
	{ "overlap: 0-2 -> 1-3", 4, flat4, { "0-2", "0-2", "0-2", "2" }, "0-3", "1-3" },
	{ "narrow only: 0-3 -> 2", 4, flat4, { "0-3", "0-3", "3", "0-1" }, "0-3", "2" },
	{ "widen only: 2 -> 0-5", 4, flat4, { "2", "2", "2", "2" }, "0-5", "0-5" },
	{ "guest alone: 4-7 -> 0-3", 1, flat4, { "4-7" }, "0-7", "0-3" },
	/* a grandchild's narrow write must fit its parent at that moment */
	{ "grandchild, disjoint: 0-1 -> 2-3", 4, tree4, { "0-1", "0-1", "1", "0" }, "0-3", "2-3" },
	{ "grandchild, overlap: 0-2 -> 2-4", 4, tree4, { "0-2", "0-1", "0", "2" }, "0-4", "2-4" },
	{ "depth 3, disjoint: 4-5 -> 0", 5, tree5, { "4-5", "4-5", "4-5", "5", "4" }, "0,4-5", "0" },
};

static void depths(const struct tcase *tc, unsigned *d)
{
	for (unsigned i = 0; i < tc->n; i++) {
		d[i] = 0;
		for (int a = tc->parent[i]; a >= 0; a = tc->parent[a])
			d[i]++;
	}
}

/* The cgroups of TC with children below them, other than the guest. */
static unsigned inner(const struct tcase *tc)
{
	unsigned k = 0;

	for (unsigned i = 1; i < tc->n; i++)
		for (unsigned c = 0; c < tc->n; c++)
			if (tc->parent[c] == (int)i) {
				k++;
				break;
			}
	return k;
}

static void test_v1_order_and_end_state(void **state)
{
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct tcase *tc = &cases[c];
		struct cgplan p = { 0 };
		struct cgplan_done done[64];
		struct model m = { .n = tc->n };
		unsigned nd, d[MAXCG], w = 1 + inner(tc);

		for (unsigned i = 0; i < tc->n; i++) {
			m.parent[i] = tc->parent[i];
			snprintf(m.val[i], sizeof(m.val[0]), "%s", tc->from[i]);
		}
		depths(tc, d);
		assert_int_equal(cgplan_add_set(&p, false, tc->n, d, "cpuset.cpus", tc->unionv, tc->newv), 0);
		/* widen the guest and the cgroups with children first, top-down;
		 * then narrow every cgroup after its descendants */
		assert_int_equal(p.n, w + tc->n);
		assert_int_equal(p.s[0].sub, 0);
		for (unsigned i = 0; i < w; i++) {
			assert_string_equal(p.s[i].value, tc->unionv);
			if (i > 0)
				assert_true(p.s[i].sub > p.s[i - 1].sub);
		}
		for (unsigned i = w; i < p.n; i++) {
			assert_string_equal(p.s[i].value, tc->newv);
			for (unsigned k = i + 1; k < p.n; k++) {
				/* no ancestor of step k's cgroup is written at i < k */
				for (int a = m.parent[p.s[k].sub]; a >= 0; a = m.parent[a])
					if ((unsigned)a == p.s[i].sub)
						fail_msg("%s: cgroup %u narrowed before its descendant %u", tc->name,
							 p.s[i].sub, p.s[k].sub);
			}
			assert_int_equal(p.s[i].gone, p.s[i].sub ? CGPLAN_ENOENT_SKIPS : CGPLAN_GONE_FAILS);
		}
		assert_int_equal(run(&m, &p, -1, done, &nd, tc->name), -1);
		for (unsigned i = 0; i < tc->n; i++)
			assert_string_equal(m.val[i], tc->newv);
		for (unsigned i = 0; i < nd; i++)
			free(done[i].old);
		cgplan_clear(&p);
		assert_int_equal(p.n, 0);
	}
}

/* A write refused at any step: what was written is put back, every
 * restore accepted, and the tree is as it was. */
static void test_v1_revert_on_refused_write(void **state)
{
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct tcase *tc = &cases[c];
		struct cgplan p = { 0 };
		unsigned d[MAXCG];

		depths(tc, d);
		assert_int_equal(cgplan_add_set(&p, false, tc->n, d, "cpuset.cpus", tc->unionv, tc->newv), 0);
		for (unsigned refuse = 0; refuse < p.n; refuse++) {
			struct cgplan_done done[64];
			struct model m = { .n = tc->n };
			char what[96];
			unsigned nd;
			int f;

			for (unsigned i = 0; i < tc->n; i++) {
				m.parent[i] = tc->parent[i];
				snprintf(m.val[i], sizeof(m.val[0]), "%s", tc->from[i]);
			}
			snprintf(what, sizeof(what), "%s, step %u refused", tc->name, refuse);
			f = run(&m, &p, (int)refuse, done, &nd, what);
			if (f < 0) {
				/* the refused step had nothing to write */
				for (unsigned i = 0; i < nd; i++)
					free(done[i].old);
				continue;
			}
			revert(&m, done, nd, what);
			for (unsigned i = 0; i < tc->n; i++)
				assert_string_equal(m.val[i], tc->from[i]);
		}
		cgplan_clear(&p);
	}
}

/* v2: the guest's one write; the kernel limits the descendants. */
static void test_v2_one_write(void **state)
{
	struct cgplan p = { 0 };

	assert_int_equal(cgplan_add_set(&p, true, 4, NULL, "cpuset.mems", NULL, "1"), 0);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.s[0].sub, 0);
	assert_string_equal(p.s[0].file, "cpuset.mems");
	assert_string_equal(p.s[0].value, "1");
	assert_int_equal(p.s[0].gone, CGPLAN_GONE_FAILS);
	cgplan_clear(&p);
}

/* Never an empty set: a plan that would write one is not made. */
static void test_empty_set_refused(void **state)
{
	struct cgplan p = { 0 };

	assert_int_equal(cgplan_add_set(&p, false, 3, NULL, "cpuset.cpus", "0-3", ""), -EINVAL);
	assert_int_equal(cgplan_add_set(&p, false, 3, NULL, "cpuset.cpus", "", "0-3"), -EINVAL);
	assert_int_equal(cgplan_add_set(&p, false, 3, NULL, "cpuset.cpus", NULL, "0-3"), -EINVAL);
	assert_int_equal(cgplan_add_set(&p, true, 3, NULL, "cpuset.cpus", NULL, ""), -EINVAL);
	assert_int_equal(cgplan_add_set(&p, true, 0, NULL, "cpuset.cpus", NULL, "1"), -EINVAL);
	assert_int_equal(p.n, 0);
	cgplan_clear(&p);
}

/* v1 memory_migrate=1 on every cgroup, in pre-order, before the sets
 * (apply.c puts it first in phase 1's plan); a descendant gone is skipped. */
static void test_memory_migrate_then_cpus(void **state)
{
	struct cgplan p = { 0 };

	cgplan_add_memory_migrate(&p, 3);
	assert_int_equal(cgplan_add_set(&p, false, 3, NULL, "cpuset.cpus", "0-3", "2-3"), 0);
	assert_int_equal(p.n, 3 + 4);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(p.s[i].sub, i);
		assert_string_equal(p.s[i].file, "cpuset.memory_migrate");
		assert_string_equal(p.s[i].value, "1");
		assert_int_equal(p.s[i].gone, i ? CGPLAN_GONE_SKIPS : CGPLAN_GONE_FAILS);
	}
	assert_string_equal(p.s[3].file, "cpuset.cpus");
	assert_int_equal(p.s[3].sub, 0);
	assert_string_equal(p.s[3].value, "0-3");
	assert_int_equal(p.s[4].sub, 2);
	assert_int_equal(p.s[5].sub, 1);
	assert_int_equal(p.s[6].sub, 0);
	assert_string_equal(p.s[6].value, "2-3");
	cgplan_clear(&p);
}

/* The revert order: newest first; v1 leaves an empty old value alone, v2
 * restores it (empty is "inherit" there). */
static void test_revert_order(void **state)
{
	char a[] = "0-1", b[] = "", c[] = "2";
	const struct cgplan_done done[] = {
		{ .sub = 0, .file = "cpuset.cpus", .old = a },
		{ .sub = 1, .file = "cpuset.cpus", .old = b },
		{ .sub = 0, .file = "cpuset.mems", .old = c },
	};
	unsigned order[3];

	assert_int_equal(cgplan_revert_order(done, 3, false, order), 2);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 0);
	assert_int_equal(cgplan_revert_order(done, 3, true, order), 3);
	assert_int_equal(order[0], 2);
	assert_int_equal(order[1], 1);
	assert_int_equal(order[2], 0);
	assert_int_equal(cgplan_revert_order(done, 0, false, order), 0);
}

/* v2's effective set of cgroup I in M: its own value within its parent's
 * effective one, or the parent's where it has none or they do not meet. */
static void v2_effective(const struct model *m, unsigned i, cpumask_t *out)
{
	cpumask_t own, par;

	if (m->parent[i] < 0)
		set_of(m->val[i], &par);
	else
		v2_effective(m, (unsigned)m->parent[i], &par);
	set_of(m->val[i], &own);
	mask_and(&own, &own, &par);
	*out = mask_empty(&own) ? par : own;
}

/* Pods as runtimes make them on v2: the pod (guest) and container
 * cgroups, some with their own cpuset.mems ("" inherits). */
struct v2case {
	const char *name;
	unsigned n;
	const int *parent;
	const char *from[MAXCG];
	const char *unionv, *newv;
};

static const struct v2case v2cases[] = {
	{ "pod, two containers with own mems", 4, flat4, { "0", "0", "0", "" }, "0,2", "2" },
	{ "pod, container and its child own", 4, tree4, { "0-1", "0-1", "0", "" }, "0-3", "2-3" },
	{ "pod, only a grandchild owns", 5, tree5, { "1", "", "", "1", "" }, "1,3", "3" },
};

/* v2 with descendants that set their own mems: the guest and each of
 * them end on the target, the others still inherit; while widened every
 * cgroup's effective set holds the target (what move_pages(2) needs);
 * a write refused at any step puts every value back. */
static void test_v2_own_descendants(void **state)
{
	for (size_t c = 0; c < sizeof(v2cases) / sizeof(v2cases[0]); c++) {
		const struct v2case *tc = &v2cases[c];
		struct cgplan p = { 0 }, w = { 0 };
		struct cgplan_done done[64];
		struct model m = { .n = tc->n };
		unsigned d[MAXCG], nd;
		bool own[MAXCG];
		cpumask_t target, eff;

		for (unsigned i = 0; i < tc->n; i++) {
			d[i] = 0;
			for (int a = tc->parent[i]; a >= 0; a = tc->parent[a])
				d[i]++;
			own[i] = i > 0 && tc->from[i][0];
		}
		/* the mover's widening: old ∪ new everywhere it is owned */
		assert_int_equal(cgplan_add_set_own(&w, true, tc->n, d, own, "cpuset.mems", tc->unionv, tc->unionv), 0);
		for (unsigned i = 0; i < tc->n; i++) {
			m.parent[i] = tc->parent[i];
			snprintf(m.val[i], sizeof(m.val[0]), "%s", tc->from[i]);
		}
		for (unsigned i = 0; i < w.n; i++) {
			m.val[w.s[i].sub][0] = '\0';
			strcat(m.val[w.s[i].sub], w.s[i].value);
		}
		set_of(tc->newv, &target);
		for (unsigned i = 0; i < tc->n; i++) {
			v2_effective(&m, i, &eff);
			if (!mask_subset(&target, &eff))
				fail_msg("%s: cgroup %u widened to %s cannot take pages on %s", tc->name, i, m.val[i],
					 tc->newv);
			if (!own[i] && i > 0)
				assert_string_equal(m.val[i], "");
		}
		cgplan_clear(&w);

		/* the kernel's way: widen, narrow deepest-first */
		assert_int_equal(cgplan_add_set_own(&p, true, tc->n, d, own, "cpuset.mems", tc->unionv, tc->newv), 0);
		for (unsigned i = 0; i < p.n; i++)
			assert_true(p.s[i].sub == 0 || own[p.s[i].sub]);
		for (unsigned i = 0; i < tc->n; i++) {
			m.parent[i] = tc->parent[i];
			snprintf(m.val[i], sizeof(m.val[0]), "%s", tc->from[i]);
		}
		for (unsigned i = 0; i < p.n; i++)
			snprintf(m.val[p.s[i].sub], sizeof(m.val[0]), "%s", p.s[i].value);
		for (unsigned i = 0; i < tc->n; i++) {
			assert_string_equal(m.val[i], i == 0 || own[i] ? tc->newv : "");
			v2_effective(&m, i, &eff);
			assert_true(mask_equal(&eff, &target));
		}
		for (unsigned refuse = 0; refuse < p.n; refuse++) {
			unsigned order[64], k;

			for (unsigned i = 0; i < tc->n; i++)
				snprintf(m.val[i], sizeof(m.val[0]), "%s", tc->from[i]);
			nd = 0;
			for (unsigned i = 0; i < refuse; i++) {
				const struct cgplan_step *s = &p.s[i];

				if (strcmp(m.val[s->sub], s->value) == 0)
					continue;
				done[nd++] = (struct cgplan_done){ .sub = s->sub, .file = s->file,
								    .old = strdup(m.val[s->sub]) };
				snprintf(m.val[s->sub], sizeof(m.val[0]), "%s", s->value);
			}
			k = cgplan_revert_order(done, nd, true, order);
			assert_int_equal(k, nd);
			for (unsigned i = 0; i < k; i++)
				snprintf(m.val[done[order[i]].sub], sizeof(m.val[0]), "%s", done[order[i]].old);
			for (unsigned i = 0; i < tc->n; i++)
				assert_string_equal(m.val[i], tc->from[i]);
			for (unsigned i = 0; i < nd; i++)
				free(done[i].old);
		}
		cgplan_clear(&p);
	}
}

/* v2 with no descendant of its own: the guest's one write, as before. */
static void test_v2_own_none_is_one_write(void **state)
{
	struct cgplan p = { 0 };
	bool own[4] = { false, false, false, false };

	assert_int_equal(cgplan_add_set_own(&p, true, 4, NULL, own, "cpuset.mems", NULL, "1"), 0);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.s[0].value, "1");
	cgplan_clear(&p);
	own[2] = true;
	/* with one, the union is needed: never an empty or missing value */
	assert_int_equal(cgplan_add_set_own(&p, true, 4, NULL, own, "cpuset.mems", NULL, "1"), -EINVAL);
	assert_int_equal(p.n, 0);
}

/* A pod whose containers get parts of their own (cgplan_add_set_each):
 * PART[i] the values of cgroup i (NULL: the pod's), as apply.c gives
 * every cgroup of a part's subtree its part's values. */
struct eachcase {
	const char *name;
	unsigned n;
	const int *parent;
	const char *from[MAXCG];
	const char *unionv, *newv;
	const char *unions[MAXCG], *news[MAXCG];
};

static const struct eachcase eachcases[] = {
	{ "split 0-3 -> 2-3 over two containers", 4, flat4, { "0-3", "0-3", "0-3", "0-3" }, "0-3", "2-3",
	  { NULL, "0-3", "0-3", NULL }, { NULL, "2", "3", NULL } },
	{ "re-split in place", 4, flat4, { "2-3", "2-3", "2-3", "2-3" }, "2-3", "2-3",
	  { NULL, "2-3", "2-3", NULL }, { NULL, "3", "2", NULL } },
	{ "split pod moved on", 4, flat4, { "2-3", "2", "3", "2-3" }, "0-3", "0-1",
	  { NULL, "0,2", "1,3", NULL }, { NULL, "0", "1", NULL } },
	{ "container with a child", 4, tree4, { "0-1", "0-1", "1", "0" }, "0-3", "2-3",
	  { NULL, "0-2", "0-2", NULL }, { NULL, "2", "2", NULL } },
};

static void each_model(const struct eachcase *tc, struct model *m, unsigned *d)
{
	memset(m, 0, sizeof(*m));
	m->n = tc->n;
	for (unsigned i = 0; i < tc->n; i++) {
		m->parent[i] = tc->parent[i];
		snprintf(m->val[i], sizeof(m->val[0]), "%s", tc->from[i]);
		d[i] = 0;
		for (int a = tc->parent[i]; a >= 0; a = tc->parent[a])
			d[i]++;
	}
}

/* v1: every step accepted by the kernel's rules, each container ends on
 * its own value and the rest on the pod's; a write refused at any step
 * puts everything back. */
static void test_v1_parts(void **state)
{
	for (size_t c = 0; c < sizeof(eachcases) / sizeof(eachcases[0]); c++) {
		const struct eachcase *tc = &eachcases[c];
		struct cgplan p = { 0 };
		struct cgplan_done done[64];
		struct model m;
		unsigned d[MAXCG], nd;

		each_model(tc, &m, d);
		assert_int_equal(cgplan_add_set_each(&p, false, tc->n, d, NULL, "cpuset.cpus", tc->unionv, tc->newv,
						     tc->unions, tc->news), 0);
		/* the pod widens first */
		assert_int_equal(p.s[0].sub, 0);
		assert_string_equal(p.s[0].value, tc->unionv);
		assert_int_equal(run(&m, &p, -1, done, &nd, tc->name), -1);
		for (unsigned i = 0; i < tc->n; i++)
			assert_string_equal(m.val[i], tc->news[i] ? tc->news[i] : tc->newv);
		for (unsigned i = 0; i < nd; i++)
			free(done[i].old);
		for (unsigned refuse = 0; refuse < p.n; refuse++) {
			char what[128];
			int f;

			each_model(tc, &m, d);
			snprintf(what, sizeof(what), "%s, step %u refused", tc->name, refuse);
			f = run(&m, &p, (int)refuse, done, &nd, what);
			if (f < 0) {
				for (unsigned i = 0; i < nd; i++)
					free(done[i].old);
				continue;
			}
			revert(&m, done, nd, what);
			for (unsigned i = 0; i < tc->n; i++)
				assert_string_equal(m.val[i], tc->from[i]);
		}
		cgplan_clear(&p);
	}
}

/* v2: the pod and the containers with values of their own are written
 * (cpus too, which no container would get otherwise), the others left
 * to inherit; each ends where it should; a refused write at any step is
 * undone newest first. */
static void test_v2_parts(void **state)
{
	static const char *const from[4] = { "0-7", "0-7", "0-7", "" };
	static const char *const unions[4] = { NULL, "0-7", "0-7", NULL };
	static const char *const news[4] = { NULL, "2-3", "4-5", NULL };
	struct cgplan p = { 0 };
	unsigned d[4] = { 0, 1, 1, 1 };
	char val[4][32];

	assert_int_equal(cgplan_add_set_each(&p, true, 4, d, NULL, "cpuset.cpus", "0-7", "2-5", unions, news), 0);
	for (unsigned i = 0; i < p.n; i++)
		assert_true(p.s[i].sub != 3);
	assert_int_equal(p.s[0].sub, 0);
	for (unsigned i = 0; i < 4; i++)
		snprintf(val[i], sizeof(val[i]), "%s", from[i]);
	for (unsigned i = 0; i < p.n; i++)
		snprintf(val[p.s[i].sub], sizeof(val[0]), "%s", p.s[i].value);
	assert_string_equal(val[0], "2-5");
	assert_string_equal(val[1], "2-3");
	assert_string_equal(val[2], "4-5");
	assert_string_equal(val[3], "");
	for (unsigned refuse = 0; refuse < p.n; refuse++) {
		struct cgplan_done done[16];
		unsigned order[16], nd = 0, k;

		for (unsigned i = 0; i < 4; i++)
			snprintf(val[i], sizeof(val[i]), "%s", from[i]);
		for (unsigned i = 0; i < refuse; i++) {
			if (strcmp(val[p.s[i].sub], p.s[i].value) == 0)
				continue;
			done[nd++] = (struct cgplan_done){ .sub = p.s[i].sub, .file = p.s[i].file,
							    .old = strdup(val[p.s[i].sub]) };
			snprintf(val[p.s[i].sub], sizeof(val[0]), "%s", p.s[i].value);
		}
		k = cgplan_revert_order(done, nd, true, order);
		for (unsigned i = 0; i < k; i++)
			snprintf(val[done[order[i]].sub], sizeof(val[0]), "%s", done[order[i]].old);
		for (unsigned i = 0; i < 4; i++)
			assert_string_equal(val[i], from[i]);
		for (unsigned i = 0; i < nd; i++)
			free(done[i].old);
	}
	cgplan_clear(&p);
	/* a part's empty value is never written; half the arrays is no plan */
	{
		static const char *const empty[4] = { NULL, "", "4-5", NULL };

		assert_int_equal(cgplan_add_set_each(&p, true, 4, d, NULL, "cpuset.cpus", "0-7", "2-5", unions, empty),
				 -EINVAL);
		assert_int_equal(cgplan_add_set_each(&p, true, 4, d, NULL, "cpuset.cpus", "0-7", "2-5", unions, NULL),
				 -EINVAL);
		assert_int_equal(p.n, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v1_order_and_end_state),
		cmocka_unit_test(test_v1_revert_on_refused_write),
		cmocka_unit_test(test_v2_one_write),
		cmocka_unit_test(test_empty_set_refused),
		cmocka_unit_test(test_memory_migrate_then_cpus),
		cmocka_unit_test(test_revert_order),
		cmocka_unit_test(test_v2_own_descendants),
		cmocka_unit_test(test_v2_own_none_is_one_write),
		cmocka_unit_test(test_v1_parts),
		cmocka_unit_test(test_v2_parts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
