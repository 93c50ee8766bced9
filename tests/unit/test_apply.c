/* apply on fixture cgroup trees: write order, refusals, restores, guards.
 * The fixture writer records every write in <cgroupfs>/.numaorch-writes
 * and refuses writes to X when X.refuse names an errno. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/topo.h"
#include "orchestrator/actuator/apply.h"
#include "orchestrator/base/cghier.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/model/snapshot.h"

struct fx {
	char *root;
	struct host_paths hp;
	struct cg_hier h;
	struct snapshot *snap;
	struct plan_item it;
	cpumask_t to_cpus;
	struct applier *a;
	bool v2;
};

static const char *meminfo(int node, unsigned long free_kb)
{
	static char buf[256];

	snprintf(buf, sizeof(buf), "Node %d MemTotal: 8388608 kB\nNode %d MemFree: %lu kB\n", node, node,
		 free_kb);
	return buf;
}

/* Two nodes: node 0 = CPUs 0-1, node 1 = CPUs 2-3. Guest /grp/g (with a
 * child /grp/g/c in v1) on node 0 with 64 MiB there. */
static void fx_init(struct fx *f, bool v2, unsigned long free_kb_node1)
{
	const char *cs = v2 ? "sys/fs/cgroup" : "sys/fs/cgroup/cpuset";
	char rel[512];
	struct snap_node nodes[2];
	struct snap_guest *g;
	struct apply_opts ao = { .min_free_bytes = 64ULL << 20, .min_free_share = 1.0, .read_meminfo = topo_read_meminfo };

	memset(f, 0, sizeof(*f));
	f->v2 = v2;
	f->root = tu_mkdtemp();
	tu_write(f->root, "sys/devices/system/node/node0/meminfo", meminfo(0, 4000000));
	tu_write(f->root, "sys/devices/system/node/node1/meminfo", meminfo(1, free_kb_node1));
	if (v2)
		tu_write(f->root, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n");
	else {
		tu_write(f->root, "sys/fs/cgroup/memory/tasks", "");
		tu_write(f->root, "sys/fs/cgroup/cpuset/tasks", "");
	}
	tu_write(f->root, "sys/fs/cgroup/.numaorch-writes", "");
	const char *dirs[] = { "grp/g", "grp/g/c" };
	for (unsigned i = 0; i < (v2 ? 1u : 2u); i++) {
		snprintf(rel, sizeof(rel), "%s/%s/cpuset.cpus", cs, dirs[i]);
		tu_write(f->root, rel, "0-1\n");
		snprintf(rel, sizeof(rel), "%s/%s/cpuset.mems", cs, dirs[i]);
		tu_write(f->root, rel, "0\n");
		snprintf(rel, sizeof(rel), v2 ? "%s/%s/cpuset.cpus.effective" : "%s/%s/cpuset.effective_cpus",
			 cs, dirs[i]);
		tu_write(f->root, rel, "0-1\n");
		snprintf(rel, sizeof(rel), v2 ? "%s/%s/cpuset.mems.effective" : "%s/%s/cpuset.effective_mems",
			 cs, dirs[i]);
		tu_write(f->root, rel, "0\n");
		snprintf(rel, sizeof(rel), "%s/%s/cgroup.procs", cs, dirs[i]);
		tu_write(f->root, rel, "");
		if (!v2) {
			snprintf(rel, sizeof(rel), "%s/%s/cpuset.memory_migrate", cs, dirs[i]);
			tu_write(f->root, rel, "0\n");
		}
	}
	assert_int_equal(host_paths_from_root(&f->hp, f->root), 0);
	assert_int_equal(cgh_detect(f->hp.cgroupfs, &f->h), 0);

	memset(nodes, 0, sizeof(nodes));
	nodes[0].id = 0;
	mask_parse("0-1", &nodes[0].cpus);
	nodes[0].nr_cpus = 2;
	nodes[0].mem_total = 8ULL << 30;
	nodes[1].id = 1;
	mask_parse("2-3", &nodes[1].cpus);
	nodes[1].nr_cpus = 2;
	nodes[1].mem_total = 8ULL << 30;
	f->snap = snap_new();
	snap_set_nodes(f->snap, nodes, 2, NULL);
	g = snap_add_guest(f->snap);
	snprintf(g->id, sizeof(g->id), "custom-g");
	snprintf(g->runtime, sizeof(g->runtime), "custom");
	g->cgroup = xstrdup("/grp/g");
	{
		cpumask_t cpus, allowed;

		mask_parse("0-1", &cpus);
		mask_parse("0-3", &allowed);
		snap_guest_set_cpus(f->snap, g, &cpus, &allowed);
	}
	mask_parse("0", &g->mems);
	mask_parse("0-1", &g->allowed_mems);
	g->mem_node[0] = 64ULL << 20;
	snap_finalize(f->snap);

	memset(&f->it, 0, sizeof(f->it));
	snprintf(f->it.guest_id, sizeof(f->it.guest_id), "custom-g");
	f->it.kind = PLAN_MOVE;
	f->it.reason = REASON_LOAD;
	mask_parse("1", &f->it.to_nodes);
	mask_parse("1", &f->it.to_mems);
	mask_parse("2-3", &f->to_cpus);
	f->it.to_cpus = &f->to_cpus;
	f->it.migrate_bytes = 64ULL << 20;
	assert_int_equal(applier_new(&f->hp, &f->h, &ao, &f->a), 0);
}

/* An applier over F's tree with memory_binding = strict (its mems end
 * narrow on the target). Caller frees. */
static struct applier *strict_applier(const struct fx *f)
{
	struct apply_opts ao = { .min_free_bytes = 64ULL << 20, .min_free_share = 1.0, .strict_mems = true,
				 .read_meminfo = topo_read_meminfo };
	struct applier *a;

	assert_int_equal(applier_new(&f->hp, &f->h, &ao, &a), 0);
	return a;
}

static void fx_free(struct fx *f)
{
	applier_free(f->a);
	snap_unref(f->snap);
	tu_rm_rf(f->root);
	free(f->root);
}

static char *slurp(const struct fx *f, const char *rel)
{
	char path[4096], *buf = NULL;

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	if (fs_read_file(path, 1 << 20, &buf, NULL) < 0)
		return xstrdup("<missing>");
	return buf;
}

static void assert_file(const struct fx *f, const char *rel, const char *want)
{
	char *got = slurp(f, rel);

	/* fixture files written by tests end in "\n", by the agent without */
	size_t n = strlen(got);
	while (n && got[n - 1] == '\n')
		got[--n] = '\0';
	assert_string_equal(got, want);
	free(got);
}

static void test_v1_relocation_order(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	fx_init(&f, false, 4000000);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	/* memory_migrate on the subtree first; then widen the guest, shrink the
	 * child, shrink the guest: cpus, then mems. */
	char *w = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_string_equal(w,
			    "/grp/g cpuset.memory_migrate 1\n"
			    "/grp/g/c cpuset.memory_migrate 1\n"
			    "/grp/g cpuset.cpus 0-3\n"
			    "/grp/g/c cpuset.cpus 2-3\n"
			    "/grp/g cpuset.cpus 2-3\n"
			    "/grp/g cpuset.mems 0-1\n"
			    "/grp/g/c cpuset.mems 1\n"
			    "/grp/g cpuset.mems 1\n"
			    /* memory moved: mems widened again (soft binding), guest first */
			    "/grp/g cpuset.mems 0-1\n"
			    "/grp/g/c cpuset.mems 0-1\n");
	free(w);
	assert_file(&f, "sys/fs/cgroup/cpuset/grp/g/cpuset.cpus", "2-3");
	assert_file(&f, "sys/fs/cgroup/cpuset/grp/g/c/cpuset.mems", "0-1");
	assert_int_equal(applier_write_count(f.a), 10);
	assert_non_null(strstr(res.msg, "memory moved to 1, mems 0 -> 0-1"));
	assert_true(res.mems_loosened);
	{
		char buf[NODELIST_BUFSZ];

		mask_format(&res.mems_after, buf, sizeof(buf));
		assert_string_equal(buf, "0-1");
	}
	fx_free(&f);
}

static void test_strict_binding_and_pinned_guests_stay_bound(void **state)
{
	struct fx f;
	struct apply_result res;
	struct applier *strict;

	(void)state;
	fx_init(&f, true, 4000000);
	strict = strict_applier(&f);
	assert_int_equal(apply_move(strict, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "1");
	applier_free(strict);
	fx_free(&f);

	/* A pinned guest is bound strictly whatever memory_binding says. */
	fx_init(&f, true, 4000000);
	f.snap->guests[0].policy.mode = GPOL_PINNED;
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "1");
	fx_free(&f);
}

/* A strictly bound container whose pages the mover moved, and whose
 * narrowing after fails: refused (EBUSY), or the cgroup gone since its
 * job ended (ENOENT: no error, its note says so). Either way its result
 * says where it stays (old ∪ new) for the memory_arrived record, not the
 * target. */
static void test_strict_failed_narrowing_says_wide(void **state)
{
	static const struct {
		const char *refuse;
		int r;
		const char *msg;
	} cases[] = {
		{ "EBUSY\n", -EBUSY, "" },
		{ "ENOENT\n", -ENOENT, "cgroup /grp/g is gone" },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fx f;
		struct apply_result res;
		struct applier *strict;
		struct apply_pending *p;
		nodemask_t want;

		fx_init(&f, true, 4000000);
		strict = strict_applier(&f);
		assert_int_equal(apply_cpus(strict, f.snap, &f.it, &res, &p), 0);
		assert_non_null(p);
		assert_false(apply_pending_soft(p));
		assert_int_equal(apply_memory_widen(strict, p, "to move by the mover", &res), 0);
		assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "0-1");
		tu_write(f.root, "sys/fs/cgroup/grp/g/cpuset.mems.refuse", cases[i].refuse);
		memset(&res, 0, sizeof(res));
		assert_int_equal(apply_memory_settle(strict, p, &res), cases[i].r);
		assert_non_null(strstr(res.msg, cases[i].msg));
		assert_true(res.mems_loosened);
		mask_parse("0-1", &want);
		assert_true(mask_equal(&res.mems_after, &want));
		assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "0-1");
		apply_pending_free(p);
		applier_free(strict);
		fx_free(&f);
	}
}

static void test_v2_cpus_then_mems(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	fx_init(&f, true, 4000000);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	char *w = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_string_equal(w, "/grp/g cpuset.cpus 2-3\n/grp/g cpuset.mems 1\n/grp/g cpuset.mems 0-1\n");
	free(w);
	fx_free(&f);
}

static void test_no_migration_only_widens_mems(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	/* Its memory is on node 1 already: the CPUs move, the mems only grow
	 * (soft binding): never narrowed to be widened again. */
	fx_init(&f, true, 4000000);
	f.it.migrate_bytes = 0;
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	char *w = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_string_equal(w, "/grp/g cpuset.cpus 2-3\n/grp/g cpuset.mems 0-1\n");
	free(w);
	assert_true(res.mems_loosened);
	assert_non_null(strstr(res.msg, "memory already on 1"));
	fx_free(&f);
}

static void test_negligible_migration_is_none(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	/* 512 KiB of its 64 MiB off the target: not worth narrowing the mems
	 * (a walk of the whole address space): handled as no migration. */
	fx_init(&f, true, 4000000);
	f.it.migrate_bytes = 512 << 10;
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	char *w = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_string_equal(w, "/grp/g cpuset.cpus 2-3\n/grp/g cpuset.mems 0-1\n");
	free(w);
	fx_free(&f);
}

static void test_no_migration_mems_already_wide(void **state)
{
	struct fx f;
	struct apply_result res;
	char buf[32];

	(void)state;
	/* mems 0-1 already cover the target node 1, where its memory is:
	 * only the CPUs are written, and the record says the mems stayed
	 * 0-1 (not the target's 1, which was never written). */
	fx_init(&f, true, 4000000);
	tu_write(f.root, "sys/fs/cgroup/grp/g/cpuset.mems", "0-1\n");
	tu_write(f.root, "sys/fs/cgroup/grp/g/cpuset.mems.effective", "0-1\n");
	mask_parse("0-1", &f.snap->guests[0].mems);
	f.it.migrate_bytes = 0;
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	char *w = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_string_equal(w, "/grp/g cpuset.cpus 2-3\n");
	free(w);
	assert_true(res.mems_loosened);
	mask_format(&res.mems_after, buf, sizeof(buf));
	assert_string_equal(buf, "0-1");
	assert_non_null(strstr(res.msg, "mems stay 0-1"));
	fx_free(&f);
}

static void test_v2_child_with_own_mems_moves_with_guest(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	/* A container below the guest sets its own cpuset.mems = 0 (as a
	 * runtime does): it is narrowed with the guest, deepest first, so
	 * its pages follow, and widened with it after (soft binding), so
	 * none of its own nodes pulls them back. */
	fx_init(&f, true, 4000000);
	tu_write(f.root, "sys/fs/cgroup/grp/g/ctr/cpuset.mems", "0\n");
	tu_write(f.root, "sys/fs/cgroup/grp/g/ctr/cpuset.cpus", "\n");
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	assert_true(res.mems_loosened);
	char *w = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_string_equal(w, "/grp/g cpuset.cpus 2-3\n/grp/g cpuset.mems 0-1\n/grp/g/ctr cpuset.mems 1\n"
			       "/grp/g cpuset.mems 1\n/grp/g cpuset.mems 0-1\n/grp/g/ctr cpuset.mems 0-1\n");
	free(w);
	/* the container without mems of its own is not written */
	assert_file(&f, "sys/fs/cgroup/grp/g/ctr/cpuset.cpus", "");
	fx_free(&f);
}

/* A pod on v2 whose containers carry their own mems goes through the
 * mover: the widening reaches the containers (move_pages needs the
 * target inside each task's mems), a strict settle narrows them, and a
 * refused write at any step of the widening puts every value back. */
static void test_v2_pod_widened_for_the_mover(void **state)
{
	static const char *const refuse_at[] = { NULL, "grp/g", "grp/g/c1", "grp/g/c2" };

	(void)state;
	for (unsigned k = 0; k < sizeof(refuse_at) / sizeof(refuse_at[0]); k++) {
		struct fx f;
		struct apply_result res;
		struct applier *strict;
		struct apply_pending *p;
		char rel[128];

		fx_init(&f, true, 4000000);
		tu_write(f.root, "sys/fs/cgroup/grp/g/c1/cpuset.mems", "0\n");
		tu_write(f.root, "sys/fs/cgroup/grp/g/c2/cpuset.mems", "0\n");
		tu_write(f.root, "sys/fs/cgroup/grp/g/c3/cpuset.mems", "\n");
		strict = strict_applier(&f);
		assert_int_equal(apply_cpus(strict, f.snap, &f.it, &res, &p), 0);
		assert_non_null(p);
		assert_true(apply_pending_movable(p));
		if (refuse_at[k]) {
			snprintf(rel, sizeof(rel), "sys/fs/cgroup/%s/cpuset.mems.refuse", refuse_at[k]);
			tu_write(f.root, rel, "EBUSY\n");
			assert_int_equal(apply_memory_widen(strict, p, "to move by the mover", &res), -EBUSY);
			assert_int_equal(res.status, APPLY_FAILED);
			assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "0");
			assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.cpus", "0-1");
			assert_file(&f, "sys/fs/cgroup/grp/g/c1/cpuset.mems", "0");
			assert_file(&f, "sys/fs/cgroup/grp/g/c2/cpuset.mems", "0");
			assert_file(&f, "sys/fs/cgroup/grp/g/c3/cpuset.mems", "");
		} else {
			assert_int_equal(apply_memory_widen(strict, p, "to move by the mover", &res), 0);
			assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "0-1");
			assert_file(&f, "sys/fs/cgroup/grp/g/c1/cpuset.mems", "0-1");
			assert_file(&f, "sys/fs/cgroup/grp/g/c2/cpuset.mems", "0-1");
			assert_file(&f, "sys/fs/cgroup/grp/g/c3/cpuset.mems", "");
			memset(&res, 0, sizeof(res));
			assert_int_equal(apply_memory_settle(strict, p, &res), 0);
			assert_false(res.mems_loosened);
			assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "1");
			assert_file(&f, "sys/fs/cgroup/grp/g/c1/cpuset.mems", "1");
			assert_file(&f, "sys/fs/cgroup/grp/g/c2/cpuset.mems", "1");
			assert_file(&f, "sys/fs/cgroup/grp/g/c3/cpuset.mems", "");
		}
		apply_pending_free(p);
		applier_free(strict);
		fx_free(&f);
	}
}

/* F's guest as a pod of containers c1 and c2 with cpusets of their own
 * (V1: every cgroup has one), moved onto both nodes with c1 given node 0
 * and c2 node 1 (plan_item.parts). */
static void parts_fx(struct fx *f, bool v2, struct plan_part *pp)
{
	const char *cs = v2 ? "sys/fs/cgroup/grp/g" : "sys/fs/cgroup/cpuset/grp/g";
	struct snap_guest *g = &f->snap->guests[0];
	char rel[256];

	for (unsigned i = 1; i <= 2; i++) {
		static const char *const files[][2] = {
			{ "cpuset.cpus", "0-1\n" }, { "cpuset.mems", "0\n" }, { "cgroup.procs", "" },
			{ "cpuset.memory_migrate", "0\n" },
		};

		for (unsigned k = 0; k < (v2 ? 3u : 4u); k++) {
			snprintf(rel, sizeof(rel), "%s/c%u/%s", cs, i, files[k][0]);
			tu_write(f->root, rel, files[k][1]);
		}
		snprintf(rel, sizeof(rel), "/grp/g/c%u", i);
		mask_parse("0", &snap_guest_add_part(f->snap, g, rel)->mems);
	}
	if (!v2) {
		/* fx_init's own child is none of the parts */
		char path[600];

		snprintf(path, sizeof(path), "%s/%s/c", f->root, cs);
		tu_rm_rf(path);
	}
	mask_parse("0-1", &f->it.to_nodes);
	mask_parse("0-1", &f->it.to_mems);
	mask_parse("0-3", &f->to_cpus);
	memset(pp, 0, 2 * sizeof(*pp));
	for (unsigned i = 0; i < 2; i++) {
		pp[i].part = i;
		mask_set(&pp[i].nodes, (int)i);
		mask_set(&pp[i].mems, (int)i);
	}
	f->it.parts = pp;
	f->it.nr_parts = 2;
}

/* A pod whose containers get nodes of their own: each container's
 * cpuset ends on its own node (the target's CPUs there, its mems), the
 * pod's on the whole target, written in the kernel's order (v1: the pod
 * widened first, each container narrowed before the pod); a write
 * refused at any step puts every value back. */
static void test_parts_each_own_target(void **state)
{
	/* (c1 stays on node 0's CPUs and memory: nothing of it is written) */
	static const char *const refuse_at[] = { NULL, "g/cpuset.cpus", "g/c2/cpuset.cpus", "g/cpuset.mems",
						 "g/c2/cpuset.mems" };

	(void)state;
	for (int v2 = 0; v2 <= 1; v2++)
		for (unsigned k = 0; k < sizeof(refuse_at) / sizeof(refuse_at[0]); k++) {
			const char *cs = v2 ? "sys/fs/cgroup/grp/" : "sys/fs/cgroup/cpuset/grp/";
			struct plan_part pp[2];
			struct apply_result res;
			struct applier *strict;
			struct fx f;
			char rel[256];
			int r;

			fx_init(&f, v2, 4000000);
			parts_fx(&f, v2, pp);
			strict = strict_applier(&f);
			if (refuse_at[k]) {
				snprintf(rel, sizeof(rel), "%s%s.refuse", cs, refuse_at[k]);
				tu_write(f.root, rel, "EBUSY\n");
			}
			r = apply_move(strict, f.snap, &f.it, &res);
			snprintf(rel, sizeof(rel), "%sg", cs);
			if (refuse_at[k]) {
				if (r != -EBUSY)
					fail_msg("v%d, %s refused: %d %s", v2 + 1, refuse_at[k], r, res.msg);
				assert_int_equal(res.status, APPLY_FAILED);
				for (unsigned i = 0; i < 3; i++) {
					static const char *const sub[] = { "g", "g/c1", "g/c2" };

					snprintf(rel, sizeof(rel), "%s%s/cpuset.cpus", cs, sub[i]);
					assert_file(&f, rel, "0-1");
					snprintf(rel, sizeof(rel), "%s%s/cpuset.mems", cs, sub[i]);
					assert_file(&f, rel, "0");
				}
			} else {
				char *w = slurp(&f, "sys/fs/cgroup/.numaorch-writes");

				assert_int_equal(r, 0);
				assert_int_equal(res.status, APPLY_DONE);
				snprintf(rel, sizeof(rel), "%sg/cpuset.cpus", cs);
				assert_file(&f, rel, "0-3");
				snprintf(rel, sizeof(rel), "%sg/cpuset.mems", cs);
				assert_file(&f, rel, "0-1");
				snprintf(rel, sizeof(rel), "%sg/c1/cpuset.cpus", cs);
				assert_file(&f, rel, "0-1");
				snprintf(rel, sizeof(rel), "%sg/c1/cpuset.mems", cs);
				assert_file(&f, rel, "0");
				snprintf(rel, sizeof(rel), "%sg/c2/cpuset.cpus", cs);
				assert_file(&f, rel, "2-3");
				snprintf(rel, sizeof(rel), "%sg/c2/cpuset.mems", cs);
				assert_file(&f, rel, "1");
				/* the pod's union first; c2 through the pod's old ∪ its own */
				assert_non_null(strstr(w, "/grp/g cpuset.cpus 0-3\n"));
				assert_true(strstr(w, "/grp/g cpuset.mems 0-1\n") < strstr(w, "/grp/g/c2 cpuset.mems 1\n"));
				assert_non_null(strstr(w, "/grp/g/c2 cpuset.cpus 2-3\n"));
				free(w);
			}
			applier_free(strict);
			fx_free(&f);
		}
}

static void test_refused_mems_restores_everything(void **state)
{
	struct fx f;
	struct apply_result res;
	int r;

	(void)state;
	fx_init(&f, false, 4000000);
	tu_write(f.root, "sys/fs/cgroup/cpuset/grp/g/c/cpuset.mems.refuse", "ENOSPC\n");
	r = apply_move(f.a, f.snap, &f.it, &res);
	assert_int_equal(r, -ENOSPC);
	assert_int_equal(res.status, APPLY_FAILED);
	assert_int_equal(res.err, -ENOSPC);
	assert_non_null(strstr(res.msg, "cpuset.mems of /grp/g/c"));
	assert_non_null(strstr(res.msg, "restored"));
	assert_file(&f, "sys/fs/cgroup/cpuset/grp/g/cpuset.cpus", "0-1");
	assert_file(&f, "sys/fs/cgroup/cpuset/grp/g/c/cpuset.cpus", "0-1");
	assert_file(&f, "sys/fs/cgroup/cpuset/grp/g/cpuset.mems", "0");
	assert_file(&f, "sys/fs/cgroup/cpuset/grp/g/cpuset.memory_migrate", "0");
	assert_file(&f, "sys/fs/cgroup/cpuset/grp/g/c/cpuset.memory_migrate", "0");
	/* The restore replays the sequence backwards: widen first again. */
	char *w = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_non_null(strstr(w, "/grp/g cpuset.mems 0-1\n"
				 "/grp/g cpuset.mems 0\n"
				 "/grp/g cpuset.cpus 0-3\n"
				 "/grp/g/c cpuset.cpus 0-1\n"
				 "/grp/g cpuset.cpus 0-1\n"));
	free(w);
	fx_free(&f);
}

static void test_refused_first_write(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	fx_init(&f, true, 4000000);
	tu_write(f.root, "sys/fs/cgroup/grp/g/cpuset.cpus.refuse", "EBUSY\n");
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), -EBUSY);
	assert_int_equal(res.status, APPLY_FAILED);
	assert_non_null(strstr(res.msg, "Device or resource busy"));
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.cpus", "0-1");
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "0");
	fx_free(&f);
}

static void test_refusal_with_unknown_errno(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	fx_init(&f, true, 4000000);
	/* A refusal the fixture cannot name reads as EIO. */
	tu_write(f.root, "sys/fs/cgroup/grp/g/cpuset.cpus.refuse", "ESOMETHING\n");
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), -EIO);
	assert_int_equal(res.status, APPLY_FAILED);
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.cpus", "0-1");
	fx_free(&f);
}

static void test_vanished_guest(void **state)
{
	struct fx f;
	struct apply_result res;
	char path[4096];

	(void)state;
	fx_init(&f, true, 4000000);
	snprintf(path, sizeof(path), "%s/sys/fs/cgroup/grp/g", f.root);
	tu_rm_rf(path);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_VANISHED);
	assert_int_equal(applier_write_count(f.a), 0);
	fx_free(&f);
}

static void test_changed_since_snapshot(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	fx_init(&f, true, 4000000);
	tu_write(f.root, "sys/fs/cgroup/grp/g/cpuset.cpus.effective", "1\n");
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_CHANGED);
	assert_int_equal(applier_write_count(f.a), 0);
	fx_free(&f);
}

static void test_no_room_on_recheck(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	/* 100 MiB free on node 1, 64 MiB reserve, 64 MiB to move: no room. */
	fx_init(&f, true, 100 * 1024);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_non_null(strstr(res.msg, "MiB must move"));
	assert_int_equal(applier_write_count(f.a), 0);
	fx_free(&f);
}

/* A hugetlb guest: its 64 MiB are 2 MiB huge pages, whose room on node 1
 * is its pool's free pages, not MemFree. */
static void huge_guest(struct fx *f, unsigned free_pages)
{
	struct snap_guest *g = &f->snap->guests[0];
	char buf[32];

	snap_guest_huge(f->snap, g)[0] = 64ULL << 20;
	g->huge_page = 2ULL << 20;
	g->huge_total = 64ULL << 20;
	tu_write(f->root, "sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", "100\n");
	snprintf(buf, sizeof(buf), "%u\n", free_pages);
	tu_write(f->root, "sys/devices/system/node/node1/hugepages/hugepages-2048kB/free_hugepages", buf);
	tu_write(f->root, "sys/devices/system/node/node1/hugepages/hugepages-2048kB/surplus_hugepages", "0\n");
}

static void test_hugetlb_room_on_recheck(void **state)
{
	struct fx f;
	struct apply_result res;
	struct applier *strict;

	(void)state;
	/* No free huge page on node 1 (4 GB of MemFree): no room, nothing written. */
	fx_init(&f, true, 4000000);
	huge_guest(&f, 0);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_non_null(strstr(res.msg, "no free 2048 kB huge pages on node 1"));
	assert_int_equal(applier_write_count(f.a), 0);
	fx_free(&f);

	/* 16 free: 32 MiB for 64. */
	fx_init(&f, true, 4000000);
	huge_guest(&f, 16);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_non_null(strstr(res.msg, "32 MiB of free 2048 kB huge pages, 64 MiB of its huge pages must move"));
	fx_free(&f);

	/* 100 free and MemFree below the reserve: huge pages need no free
	 * memory; it moves. */
	fx_init(&f, true, 100 * 1024);
	huge_guest(&f, 100);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	fx_free(&f);

	/* Strict binding, and node 1 has just the 32 pages it needs: bound
	 * strictly it could not grow there, so it stays soft (old ∪ new);
	 * with a page to spare it is bound strictly. */
	fx_init(&f, true, 4000000);
	huge_guest(&f, 32);
	strict = strict_applier(&f);
	assert_int_equal(apply_move(strict, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "0-1");
	applier_free(strict);
	fx_free(&f);
	fx_init(&f, true, 4000000);
	huge_guest(&f, 33);
	strict = strict_applier(&f);
	assert_int_equal(apply_move(strict, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "1");
	applier_free(strict);
	fx_free(&f);
}

/* Room to come (applier_begin_cycle): node 1 has 36 MiB above the
 * reserve and 64 MiB must move, but another guest's live job is taking
 * 40 MiB off it (snap_node.mem_leaving). With a mover that waits for
 * room the move goes ahead, flagged (apply_pending_room_wait); without
 * one, or with too little coming, it is refused as before. A move that
 * then cannot wait (its memory would move inside the kernel) is undone:
 * its CPUs back where they were. Refusing such a move would put the
 * guest on a busier node. */
static void test_room_to_come(void **state)
{
	struct fx f;
	struct apply_result res;
	struct apply_pending *p = NULL;

	(void)state;
	fx_init(&f, true, 100 * 1024);
	f.snap->nodes[1].mem_leaving = 40ULL << 20;
	/* No room to come counted: refused (and before any cycle began). */
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_null(p);
	applier_begin_cycle(f.a, f.snap, false);
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_null(p);
	/* Too little to come: 36 + 20 < 64. */
	f.snap->nodes[1].mem_leaving = 20ULL << 20;
	applier_begin_cycle(f.a, f.snap, true);
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_non_null(strstr(res.msg, "20 MiB to come"));
	assert_null(p);
	/* What arrives counts against it: 40 leaving, 20 coming. */
	f.snap->nodes[1].mem_leaving = 40ULL << 20;
	f.snap->nodes[1].mem_coming = 20ULL << 20;
	applier_begin_cycle(f.a, f.snap, true);
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_null(p);
	f.snap->nodes[1].mem_coming = 0;
	applier_begin_cycle(f.a, f.snap, true);
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(res.status, APPLY_DONE);
	assert_non_null(p);
	assert_true(apply_pending_room_wait(p));
	print_message("%s\n", apply_pending_room_note(p));
	assert_non_null(strstr(apply_pending_room_note(p), "36 MiB free above the reserve, 40 MiB leaving"));
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.cpus", "2-3");
	assert_int_equal(apply_pending_no_room(f.a, p, "its memory cannot move by the mover", &res), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_non_null(strstr(res.msg, "old cpuset restored"));
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.cpus", "0-1");
	assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.mems", "0");
	apply_pending_free(p);
	fx_free(&f);
}

/* Room to come from this cycle (cycle_flow_add): an earlier move of the
 * same cycle takes guest a's 40 MiB off node 1 (to node 0); guest g's
 * later move onto node 1 (36 MiB above the reserve, 64 MiB to move, no
 * live job) counts those 40 MiB and goes ahead, flagged to wait for
 * them. Without the earlier move it is refused; an earlier move that
 * migrates nothing (its memory negligible) frees nothing. */
static struct snapshot *two_guests(const struct fx *f, uint64_t a_bytes)
{
	struct snapshot *s = snap_new();
	const char *ids[] = { "custom-a", "custom-g" }, *cgs[] = { "/grp/a", "/grp/g" };

	snap_set_nodes(s, f->snap->nodes, f->snap->nr_nodes, NULL);
	for (unsigned i = 0; i < 2; i++) {
		struct snap_guest *g = snap_add_guest(s);
		cpumask_t cpus, allowed;

		snprintf(g->id, sizeof(g->id), "%s", ids[i]);
		snprintf(g->runtime, sizeof(g->runtime), "custom");
		g->cgroup = xstrdup(cgs[i]);
		mask_parse(i ? "0-1" : "2-3", &cpus);
		mask_parse("0-3", &allowed);
		snap_guest_set_cpus(s, g, &cpus, &allowed);
		mask_parse(i ? "0" : "1", &g->mems);
		mask_parse("0-1", &g->allowed_mems);
		g->mem_node[i ? 0 : 1] = i ? 64ULL << 20 : a_bytes;
	}
	snap_finalize(s);
	return s;
}

static void test_room_to_come_this_cycle(void **state)
{
	struct fx f;
	struct apply_result res;
	struct apply_pending *pa = NULL, *pg = NULL;
	struct plan_item ia;
	cpumask_t a_cpus;
	const char *files[][2] = { { "cpuset.cpus", "2-3\n" }, { "cpuset.mems", "1\n" },
				   { "cpuset.cpus.effective", "2-3\n" }, { "cpuset.mems.effective", "1\n" },
				   { "cgroup.procs", "" } };
	char rel[256];

	(void)state;
	fx_init(&f, true, 100 * 1024);
	for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(rel, sizeof(rel), "sys/fs/cgroup/grp/a/%s", files[i][0]);
		tu_write(f.root, rel, files[i][1]);
	}
	memset(&ia, 0, sizeof(ia));
	snprintf(ia.guest_id, sizeof(ia.guest_id), "custom-a");
	ia.kind = PLAN_MOVE;
	ia.reason = REASON_LOAD;
	mask_parse("0", &ia.to_nodes);
	mask_parse("0", &ia.to_mems);
	mask_parse("0-1", &a_cpus);
	ia.to_cpus = &a_cpus;
	for (int pass = 0; pass < 3; pass++) {
		/* 0: a moves first, 40 MiB; 1: a's memory negligible (16 KiB);
		 * 2: g alone. */
		struct snapshot *s = two_guests(&f, pass == 1 ? 16 << 10 : 40ULL << 20);

		ia.guest_idx = (unsigned)(snap_find_guest(s, "custom-a") - s->guests);
		ia.migrate_bytes = pass == 1 ? 16 << 10 : 40ULL << 20;
		f.it.guest_idx = (unsigned)(snap_find_guest(s, "custom-g") - s->guests);
		applier_begin_cycle(f.a, s, true);
		if (pass < 2) {
			assert_int_equal(apply_cpus(f.a, s, &ia, &res, &pa), 0);
			assert_int_equal(res.status, APPLY_DONE);
		}
		assert_int_equal(apply_cpus(f.a, s, &f.it, &res, &pg), 0);
		if (pass == 0) {
			assert_int_equal(res.status, APPLY_DONE);
			assert_non_null(pg);
			assert_true(apply_pending_room_wait(pg));
			print_message("%s\n", apply_pending_room_note(pg));
			assert_non_null(strstr(apply_pending_room_note(pg),
					       "36 MiB free above the reserve, 40 MiB leaving"));
			assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.cpus", "2-3");
			assert_int_equal(apply_pending_no_room(f.a, pg, "test: undo", &res), 0);
			assert_file(&f, "sys/fs/cgroup/grp/g/cpuset.cpus", "0-1");
		} else {
			print_message("pass %d: %s\n", pass, res.msg);
			assert_int_equal(res.status, APPLY_NO_ROOM);
			assert_null(pg);
		}
		apply_pending_free(pa);
		apply_pending_free(pg);
		pa = pg = NULL;
		snap_unref(s);
	}
	fx_free(&f);
}

/* A few KiB left to move is no migration: a full target does not stop
 * the move (refusing it would hold the guest back a cycle with "0 MiB
 * must move"). */
static void test_negligible_migration_needs_no_room(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	fx_init(&f, true, 10 * 1024);
	f.it.migrate_bytes = 60 << 10;
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	fx_free(&f);
}

static void test_guards(void **state)
{
	struct fx f;
	struct apply_result res;
	struct applier *scoped;
	char *scopes[] = { "/other" };
	struct apply_opts ao = { .nr_scopes = 1, .scopes = scopes, .read_meminfo = topo_read_meminfo };

	(void)state;
	fx_init(&f, true, 4000000);
	mask_zero(&f.to_cpus);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), -EINVAL);
	assert_int_equal(res.status, APPLY_REFUSED);
	mask_parse("2-3", &f.to_cpus);
	mask_zero(&f.it.to_mems);
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), -EINVAL);
	assert_int_equal(res.status, APPLY_REFUSED);
	mask_parse("1", &f.it.to_mems);

	assert_int_equal(applier_new(&f.hp, &f.h, &ao, &scoped), 0);
	assert_int_equal(apply_move(scoped, f.snap, &f.it, &res), -EPERM);
	assert_int_equal(res.status, APPLY_REFUSED);
	assert_non_null(strstr(res.msg, "outside the configured scope"));
	assert_int_equal(applier_write_count(scoped), 0);
	applier_free(scoped);

	/* A plan item that names another guest than the snapshot's. */
	snprintf(f.it.guest_id, sizeof(f.it.guest_id), "custom-other");
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), -EINVAL);
	assert_int_equal(applier_write_count(f.a), 0);
	fx_free(&f);
}

static void test_vm_without_actuator(void **state)
{
	struct fx f;
	struct apply_result res;

	(void)state;
	fx_init(&f, true, 4000000);
	f.snap->guests[0].kind = GUEST_VM;
	assert_int_equal(apply_move(f.a, f.snap, &f.it, &res), 0);
	assert_int_equal(res.status, APPLY_NOT_APPLICABLE);
	assert_int_equal(applier_write_count(f.a), 0);
	fx_free(&f);
}

/* A fake VM actuator: what the applier asked libvirt for. */
struct fake_vm {
	unsigned moves, sets;
	nodemask_t moved_mems, set_mems;
	enum apply_status answer;
	int set_answer;              /* what set_mems returns */
};

static int fake_vm_move(void *ctx, const struct snapshot *snap, const struct snap_guest *g,
			const struct plan_item *it, struct apply_result *res)
{
	struct fake_vm *fv = ctx;

	(void)snap;
	(void)g;
	fv->moves++;
	fv->moved_mems = it->to_mems;
	apply_result_set(res, fv->answer, fv->answer == APPLY_DONE ? 0 : -EOPNOTSUPP, "fake libvirt");
	return 0;
}

static int fake_vm_set_mems(void *ctx, const struct snap_guest *g, const nodemask_t *mems, char *err,
			    size_t errsz)
{
	struct fake_vm *fv = ctx;

	(void)g;
	(void)err;
	(void)errsz;
	fv->sets++;
	fv->set_mems = *mems;
	return fv->set_answer;
}

/* A VM's memory through the mover: libvirt widens its nodeset to old ∪
 * new (and pins the CPUs) in one move, the mover gets QEMU's pid, and
 * once the pages are there libvirt narrows the nodeset to the target —
 * libvirt's live view stays true; the cgroup is never written here.
 * Where libvirt refuses (its answer NOT_APPLICABLE) that answer stands
 * and nothing is left wide. */
static void test_vm_memory_by_the_mover(void **state)
{
	struct fx f;
	struct apply_result res;
	struct apply_pending *p;
	struct fake_vm fv = { .answer = APPLY_DONE };
	struct apply_vm_ops ops = { .move = fake_vm_move, .set_mems = fake_vm_set_mems, .ctx = &fv };
	nodemask_t want;
	pid_t *pids;

	(void)state;
	fx_init(&f, true, 4000000);
	f.snap->guests[0].kind = GUEST_VM;
	f.snap->guests[0].vm = xcalloc(1, sizeof(struct snap_vm));
	f.snap->guests[0].vm->qemu_pid = 4242;
	applier_set_vm_ops(f.a, &ops);

	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_non_null(p);
	assert_true(apply_pending_movable(p));
	assert_false(apply_pending_soft(p));
	assert_int_equal(fv.moves, 0); /* a VM with memory to move does it in phase 2 */
	assert_int_equal(apply_memory_widen(f.a, p, "to move by the mover", &res), 0);
	assert_int_equal(res.status, APPLY_DONE);
	assert_int_equal(fv.moves, 1);
	mask_parse("0-1", &want);
	assert_true(mask_equal(&fv.moved_mems, &want));
	assert_true(mask_equal(&res.mems_after, &want));
	assert_non_null(strstr(res.msg, "to move by the mover"));
	assert_int_equal(apply_pending_pids(f.a, p, &pids), 1);
	assert_int_equal(pids[0], 4242);
	free(pids);
	assert_int_equal(apply_memory_settle(f.a, p, &res), 0);
	assert_int_equal(fv.sets, 1);
	mask_parse("1", &want);
	assert_true(mask_equal(&fv.set_mems, &want));
	assert_true(mask_equal(&res.mems_after, &want));
	assert_int_equal(applier_write_count(f.a), 0);
	apply_pending_free(p);

	/* libvirt refuses the narrowing after the pages moved: the result
	 * says where the domain stays bound (old ∪ new), for its record */
	fv = (struct fake_vm){ .answer = APPLY_DONE, .set_answer = -EIO };
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(apply_memory_widen(f.a, p, "to move by the mover", &res), 0);
	memset(&res, 0, sizeof(res));
	assert_int_equal(apply_memory_settle(f.a, p, &res), -EIO);
	assert_int_equal(fv.sets, 1);
	assert_true(res.mems_loosened);
	mask_parse("0-1", &want);
	assert_true(mask_equal(&res.mems_after, &want));
	apply_pending_free(p);

	/* libvirt refuses the nodeset: its answer is the record, no narrowing */
	fv = (struct fake_vm){ .answer = APPLY_NOT_APPLICABLE };
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	apply_memory_widen(f.a, p, "to move by the mover", &res);
	assert_int_equal(res.status, APPLY_NOT_APPLICABLE);
	assert_int_equal(apply_memory_settle(f.a, p, &res), 0);
	assert_int_equal(fv.sets, 0);
	apply_pending_free(p);

	/* A hugetlb domain whose new node would keep no free huge page of
	 * its size (32 free, 32 to move): its nodeset is not narrowed after
	 * the mover; with a page to spare it is. */
	huge_guest(&f, 32);
	fv = (struct fake_vm){ .answer = APPLY_DONE };
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_true(apply_pending_soft(p));
	assert_int_equal(apply_memory_widen(f.a, p, "to move by the mover", &res), 0);
	assert_int_equal(apply_memory_settle(f.a, p, &res), 0);
	assert_int_equal(fv.sets, 0);
	apply_pending_free(p);
	huge_guest(&f, 33);
	fv = (struct fake_vm){ .answer = APPLY_DONE };
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_false(apply_pending_soft(p));
	assert_int_equal(apply_memory_widen(f.a, p, "to move by the mover", &res), 0);
	assert_int_equal(apply_memory_settle(f.a, p, &res), 0);
	assert_int_equal(fv.sets, 1);
	apply_pending_free(p);

	/* an actuator that cannot set a nodeset alone: not the mover's */
	ops.set_mems = NULL;
	applier_set_vm_ops(f.a, &ops);
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_false(apply_pending_movable(p));
	apply_pending_free(p);
	fx_free(&f);
}

/* A domain's move has the room re-check a container's has: libvirt's
 * nodeset write, or the mover, puts its pages onto the target as surely
 * as a cpuset.mems write. No room: refused before anything is asked of
 * libvirt. Room partly to come (another job's pages leaving): the move
 * goes on flagged, for a mover job that waits for it; one that cannot
 * wait is refused, nothing changed. Before, a VM move was never
 * re-checked: planned on room to come, its pages went at once. */
static void test_vm_room(void **state)
{
	struct fx f;
	struct apply_result res;
	struct apply_pending *p = NULL;
	struct fake_vm fv = { .answer = APPLY_DONE };
	struct apply_vm_ops ops = { .move = fake_vm_move, .set_mems = fake_vm_set_mems, .ctx = &fv };

	(void)state;
	/* 100 MiB free on node 1, 64 MiB reserve, 64 MiB to move */
	fx_init(&f, true, 100 * 1024);
	f.snap->guests[0].kind = GUEST_VM;
	f.snap->guests[0].vm = xcalloc(1, sizeof(struct snap_vm));
	f.snap->guests[0].vm->qemu_pid = 4242;
	applier_set_vm_ops(f.a, &ops);
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_non_null(strstr(res.msg, "36 MiB free above the reserve, 64 MiB must move"));
	assert_null(p);
	assert_int_equal(fv.moves, 0);

	/* another job takes 40 MiB off node 1 */
	f.snap->nodes[1].mem_leaving = 40ULL << 20;
	applier_begin_cycle(f.a, f.snap, true);
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(res.status, APPLY_DONE);
	assert_non_null(p);
	assert_true(apply_pending_room_wait(p));
	assert_true(apply_pending_movable(p));
	assert_non_null(strstr(apply_pending_room_note(p), "36 MiB free above the reserve, 40 MiB leaving"));
	assert_int_equal(apply_pending_no_room(f.a, p, "its memory cannot move by the mover", &res), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_non_null(strstr(res.msg, "nothing was changed"));
	assert_int_equal(fv.moves, 0);
	apply_pending_free(p);

	/* too little to come: refused */
	f.snap->nodes[1].mem_leaving = 20ULL << 20;
	applier_begin_cycle(f.a, f.snap, true);
	assert_int_equal(apply_cpus(f.a, f.snap, &f.it, &res, &p), 0);
	assert_int_equal(res.status, APPLY_NO_ROOM);
	assert_null(p);
	assert_int_equal(fv.moves, 0);
	assert_int_equal(applier_write_count(f.a), 0);
	fx_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v1_relocation_order),
		cmocka_unit_test(test_v2_cpus_then_mems),
		cmocka_unit_test(test_strict_binding_and_pinned_guests_stay_bound),
		cmocka_unit_test(test_strict_failed_narrowing_says_wide),
		cmocka_unit_test(test_no_migration_only_widens_mems),
		cmocka_unit_test(test_no_migration_mems_already_wide),
		cmocka_unit_test(test_negligible_migration_is_none),
		cmocka_unit_test(test_v2_child_with_own_mems_moves_with_guest),
		cmocka_unit_test(test_v2_pod_widened_for_the_mover),
		cmocka_unit_test(test_parts_each_own_target),
		cmocka_unit_test(test_refused_mems_restores_everything),
		cmocka_unit_test(test_refused_first_write),
		cmocka_unit_test(test_refusal_with_unknown_errno),
		cmocka_unit_test(test_vanished_guest),
		cmocka_unit_test(test_changed_since_snapshot),
		cmocka_unit_test(test_no_room_on_recheck),
		cmocka_unit_test(test_hugetlb_room_on_recheck),
		cmocka_unit_test(test_room_to_come),
		cmocka_unit_test(test_room_to_come_this_cycle),
		cmocka_unit_test(test_vm_room),
		cmocka_unit_test(test_negligible_migration_needs_no_room),
		cmocka_unit_test(test_guards),
		cmocka_unit_test(test_vm_without_actuator),
		cmocka_unit_test(test_vm_memory_by_the_mover),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
