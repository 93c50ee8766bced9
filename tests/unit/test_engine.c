/* test_engine.c — the conductor's decisions, on hand-built structs (in the
 * manner of systemd's src/oom/test-oomd-util.c): the cool-down a move
 * that was not carried out must not start, the decision log's dedup of
 * repeated skips and advised moves, reservations, start placement (the
 * pure choice, policy_place, and the counting of its outcome).
 *
 * The engine-level cases register fake sources and a fake policy (the
 * interfaces main registers: orchestrator/model/source.h, policy.h) that hand
 * the engine hand-built snapshots and plans, and check what it records
 * and what the policy sees as its previous state next cycle.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>

#include "orchestrator/store/bindstate.h"
#include "orchestrator/base/cghier.h"
#include "orchestrator/base/clock.h"
#include "orchestrator/store/config.h"
#include "orchestrator/engine/engine.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/store/engstate.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/base/log.h"
#include "orchestrator/store/logged.h"
#include "orchestrator/model/resv.h"
#include "orchestrator/actuator/vmplugin.h"
#include "orchestrator/base/xalloc.h"
#include "policies/policies.h"

#define MIB (1024ULL * 1024ULL)
#define GIB (1024ULL * MIB)
#define SEC 1000000000LL
#define T0 (100000 * SEC)
#define HOLD (300 * SEC) /* the default cool-down */

/* ---- a hand-built two-node host ---------------------------------------- */

struct tg {
	const char *id;
	const char *on;          /* CPU nodes of its cpuset */
	uint64_t mem[2];         /* bytes per node */
	enum gpol_mode pol;
	const char *pin;
	const char *allowed_cpus;
};

static void nodes_of(const char *list, nodemask_t *m)
{
	mask_zero(m);
	if (list)
		assert_int_equal(mask_parse(list, m), 0);
}

/* Nodes 0 (CPUs 0-3) and 1 (CPUs 4-7), 8 GiB each with FREE free; node 0
 * a little less busy than node 1. */
static struct snapshot *host(const struct tg *g, unsigned ng, uint64_t free, const struct snap_policy_overlay *ov)
{
	struct snapshot *s = snap_new();
	struct snap_node sn[2];

	memset(sn, 0, sizeof(sn));
	for (int i = 0; i < 2; i++) {
		sn[i].id = i;
		for (unsigned c = 0; c < 4; c++)
			mask_set(&sn[i].cpus, (unsigned)i * 4 + c);
		sn[i].nr_cpus = 4;
		sn[i].mem_total = 8 * GIB;
		sn[i].mem_free = free;
		sn[i].busy = i == 0 ? 0.1 : 0.2;
	}
	snap_set_nodes(s, sn, 2, NULL);
	s->seq = 1;
	s->mono_ns = T0;
	s->window_s = 10;
	s->numa_balancing = -1;
	for (unsigned i = 0; i < ng; i++) {
		struct snap_guest *x = snap_add_guest(s);
		cpumask_t cpus, allowed;
		nodemask_t on;

		snprintf(x->id, sizeof(x->id), "%s", g[i].id);
		snprintf(x->runtime, sizeof(x->runtime), "docker");
		snprintf(x->name, sizeof(x->name), "%s", g[i].id);
		x->cgroup = xasprintf("/grp/%s", g[i].id);
		x->cpu_use = 1.0;
		nodes_of(g[i].on, &on);
		snap_nodes_to_cpus(s, &on, &cpus);
		x->mems = on;
		mask_zero(&allowed);
		if (g[i].allowed_cpus)
			assert_int_equal(mask_parse(g[i].allowed_cpus, &allowed), 0);
		snap_guest_set_cpus(s, x, &cpus, &allowed);
		x->mem_node[0] = g[i].mem[0];
		x->mem_node[1] = g[i].mem[1];
		x->policy.mode = g[i].pol;
		nodes_of(g[i].pin, &x->policy.nodes);
	}
	snap_finalize_with(s, ov);
	return s;
}

static void assert_nodes(const nodemask_t *m, const char *want)
{
	char buf[NODELIST_BUFSZ];

	mask_format(m, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static cpumask_t node1_cpus;

static struct plan_item item(const char *id, enum plan_kind kind, enum move_reason reason, enum skip_reason skip,
			     const char *to)
{
	struct plan_item it;

	memset(&it, 0, sizeof(it));
	snprintf(it.guest_id, sizeof(it.guest_id), "%s", id);
	it.kind = kind;
	it.reason = reason;
	it.skip = skip;
	nodes_of(to, &it.to_nodes);
	nodes_of(to, &it.to_mems);
	it.migrate_bytes = 64 * MIB;
	if (kind == PLAN_MOVE) {
		mask_zero(&node1_cpus);
		for (unsigned c = 4; c < 8; c++)
			mask_set(&node1_cpus, c);
		it.to_cpus = &node1_cpus;
	}
	return it;
}

/* ---- the record of a job that ended ------------------------------------------
 * Only a job that ended done narrows a strictly bound guest (a libvirt
 * domain's live nodeset too); one that ended early — cancelled, stopped,
 * superseded, expired, failed — leaves its mems on old ∪ new, and its
 * record must say so (mems_after), not imply the target (the in-VM
 * libvirt test found a cancelled domain's record silent about it). A soft
 * binding is always wide; a vanished guest has no mems to name. */
static void test_job_outcome(void **state)
{
	static const struct {
		enum mover_state st;
		bool soft;
		enum apply_status want;
		bool wide;
	} cases[] = {
		{ MJ_DONE, false, APPLY_DONE, false },
		{ MJ_DONE, true, APPLY_DONE, true },
		{ MJ_CANCELLED, false, APPLY_CHANGED, true },
		{ MJ_STOPPED, false, APPLY_CHANGED, true },
		{ MJ_SUPERSEDED, false, APPLY_CHANGED, true },
		{ MJ_EXPIRED, false, APPLY_CHANGED, true },
		{ MJ_FAILED, false, APPLY_FAILED, true },
		/* walked, waited, swept, and memory still off the target: the
		 * mems stay wide, never narrowed onto a node without its pages */
		{ MJ_PARTIAL, false, APPLY_CHANGED, true },
		{ MJ_PARTIAL, true, APPLY_CHANGED, true },
		{ MJ_CANCELLED, true, APPLY_CHANGED, true },
		{ MJ_VANISHED, false, APPLY_VANISHED, false },
		{ MJ_VANISHED, true, APPLY_VANISHED, false },
	};

	(void)state;
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		bool wide = !cases[c].wide;

		assert_int_equal(engine_job_outcome(cases[c].st, cases[c].soft, &wide), cases[c].want);
		if (wide != cases[c].wide)
			fail_msg("case %u (%s, %s): mems_after %s", c, mover_state_name(cases[c].st),
				 cases[c].soft ? "soft" : "strict", wide ? "set" : "absent");
	}
}

/* ---- the cool-down of a move that was not carried out ---------------------
 * The policy's next state carries the old entries only; the engine notes
 * a cool-down for the moves it carried out. A move that did not happen
 * for a normal reason (the guest vanished, its cpuset changed, no room at
 * apply time) must leave the guest its old entry, or it would sit out a
 * cool-down for a move it never had. */
static void test_skipped_move_reverts_cooldown(void **state)
{
	static const struct { enum apply_status st; bool reverted; const char *counter; } cases[] = {
		{ APPLY_VANISHED, true, "skipped" },
		{ APPLY_CHANGED, true, "skipped" },
		{ APPLY_NO_ROOM, true, "skipped" },
		{ APPLY_DONE, false, "moves" },
		{ APPLY_FAILED, false, "failures" },
		{ APPLY_FAILED_PARTIAL, false, "failures" },
		{ APPLY_REFUSED, false, "failures" },
		{ APPLY_NOT_APPLICABLE, false, "skipped" },
	};

	(void)state;
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct pstate *prev = pstate_new(), *next;
		struct engine_stats st;
		struct plan_item old = item("moved-before", PLAN_MOVE, REASON_LOCALITY, SKIP_NONE, "1");
		struct plan_item fresh = item("never-moved", PLAN_MOVE, REASON_LOCALITY, SKIP_NONE, "1");
		const struct pstate_entry *e;

		memset(&st, 0, sizeof(st));
		pstate_note_move(prev, "moved-before", T0 - 1000 * SEC);
		/* what the policy returned: the old entries; both moves
		 * planned at T0 */
		next = pstate_clone(prev);

		engine_count_outcome(&st, next, &old, cases[c].st, T0);
		engine_count_outcome(&st, next, &fresh, cases[c].st, T0);

		e = pstate_find(next, "moved-before");
		assert_non_null(e);
		if (cases[c].reverted) {
			assert_true(e->last_move_ns == T0 - 1000 * SEC);
			assert_int_equal(e->nr_moves, 1);
			assert_null(pstate_find(next, "never-moved"));
		} else {
			assert_true(e->last_move_ns == T0);
			assert_int_equal(e->nr_moves, 2);
			assert_non_null(pstate_find(next, "never-moved"));
		}
		if (strcmp(cases[c].counter, "moves") == 0) {
			assert_int_equal(st.moves, 2);
			assert_int_equal(st.migrated_bytes, 128 * MIB);
		} else if (strcmp(cases[c].counter, "failures") == 0) {
			assert_int_equal(st.move_failures, 2);
			assert_int_equal(st.moves, 0);
		} else {
			assert_int_equal(st.moves_skipped, 2);
			assert_int_equal(st.moves, 0);
		}
		pstate_free(prev);
		pstate_free(next);
	}
}

/* A start placement done or refused starts the guest's cool-down (the
 * policy leaves it alone until its use is measured; a refused write is not
 * retried at once); one skipped at apply time does not. */
static void test_place_outcome_cooldown(void **state)
{
	static const struct { enum apply_status st; bool cools; } cases[] = {
		{ APPLY_DONE, true }, { APPLY_FAILED, true }, { APPLY_REFUSED, true },
		{ APPLY_VANISHED, false }, { APPLY_CHANGED, false }, { APPLY_NO_ROOM, false },
	};

	(void)state;
	for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct pstate *ps = pstate_new();
		struct engine_stats st;
		struct plan_item it = item("vm-a", PLAN_MOVE, REASON_PLACE, SKIP_NONE, "1");
		const struct pstate_entry *e;

		memset(&st, 0, sizeof(st));
		engine_count_place_outcome(&st, ps, &it, cases[c].st, T0);
		e = pstate_find(ps, "vm-a");
		if (cases[c].cools) {
			assert_non_null(e);
			assert_true(e->last_move_ns == T0);
		} else {
			assert_null(e);
			assert_int_equal(st.moves_skipped, 1);
		}
		pstate_free(ps);
	}
}

/* ---- the decision log's dedup -------------------------------------------- */

static void test_skip_record_dedup(void **state)
{
	struct logged_table t = { 0 };
	struct plan_item items[2];
	struct plan p = { .nr_items = 2, .items = items };
	struct plan_item again, other;

	(void)state;
	items[0] = item("a", PLAN_SKIP, REASON_LOCALITY, SKIP_COOLDOWN, "1");
	items[1] = item("b", PLAN_MOVE, REASON_LOAD, SKIP_NONE, "1");
	/* nothing recorded yet */
	assert_false(logged_repeats(&t, &items[0], false, T0, HOLD));
	logged_update(&t, &p, T0, HOLD);

	/* the same skip: recorded once, also for an explicit request */
	assert_true(logged_repeats(&t, &items[0], false, T0, HOLD));
	assert_true(logged_repeats(&t, &items[0], true, T0, HOLD));
	/* another skip reason, or another move reason: recorded */
	other = item("a", PLAN_SKIP, REASON_LOCALITY, SKIP_NO_FIT, "1");
	assert_false(logged_repeats(&t, &other, false, T0, HOLD));
	other = item("a", PLAN_SKIP, REASON_LOAD, SKIP_COOLDOWN, "1");
	assert_false(logged_repeats(&t, &other, false, T0, HOLD));
	/* the same advised move: once; an explicit request always records;
	 * another target is news once the hold (the cool-down) is over */
	assert_true(logged_repeats(&t, &items[1], false, T0, HOLD));
	assert_false(logged_repeats(&t, &items[1], true, T0, HOLD));
	other = item("b", PLAN_MOVE, REASON_LOAD, SKIP_NONE, "0");
	assert_true(logged_repeats(&t, &other, false, T0 + HOLD - SEC, HOLD));
	assert_false(logged_repeats(&t, &other, false, T0 + HOLD, HOLD));
	/* a skip is not a move */
	other = item("b", PLAN_SKIP, REASON_LOAD, SKIP_COOLDOWN, "1");
	assert_false(logged_repeats(&t, &other, false, T0, HOLD));

	/* a cycle where "a" was settled (no item) forgets it: the same skip
	 * later is recorded again */
	p.items = &items[1];
	p.nr_items = 1;
	logged_update(&t, &p, T0, HOLD);
	again = item("a", PLAN_SKIP, REASON_LOCALITY, SKIP_COOLDOWN, "1");
	assert_false(logged_repeats(&t, &again, false, T0, HOLD));
	assert_true(logged_repeats(&t, &items[1], false, T0, HOLD));
	/* settled items are not remembered either */
	items[0].kind = PLAN_SETTLED;
	p.items = items;
	p.nr_items = 2;
	logged_update(&t, &p, T0, HOLD);
	assert_null(logged_find(&t, "a"));
	logged_table_clear(&t);
}

/* Dry run on the bench fixture: the planned target of a guest flaps with
 * load jitter (nodes 1, 0, 1, …; or settled in between), and every
 * change was a new "planned" record nearly every cycle. Within the hold
 * (the cool-down: had the move been made, the guest would not move
 * again before it ends) one record stands; after it, the next is news. */
static void test_planned_flap_dedup(void **state)
{
	static const char *const to[6] = { "1", "0", NULL, "1", "2", "0" };
	struct logged_table t = { 0 };
	struct plan_item it;
	struct plan p = { .nr_items = 1, .items = &it };
	unsigned recorded = 0;

	(void)state;
	for (int c = 0; c < 6; c++) {
		int64_t now = T0 + c * 15 * SEC;

		if (to[c]) {
			it = item("b", PLAN_MOVE, c % 2 ? REASON_LOAD : REASON_LOCALITY, SKIP_NONE, to[c]);
			recorded += !logged_repeats(&t, &it, false, now, HOLD);
			p.nr_items = 1;
		} else {
			p.nr_items = 0; /* settled this cycle */
		}
		logged_update(&t, &p, now, HOLD);
	}
	assert_int_equal(recorded, 1);
	/* the hold runs from the record, not from the last repeat */
	it = item("b", PLAN_MOVE, REASON_LOAD, SKIP_NONE, "3");
	assert_false(logged_repeats(&t, &it, false, T0 + HOLD, HOLD));
	/* an explicit request records all the same */
	assert_false(logged_repeats(&t, &it, true, T0 + 90 * SEC, HOLD));
	/* a skip is not held by a planned move */
	it = item("b", PLAN_SKIP, REASON_LOAD, SKIP_NO_FIT, "3");
	assert_false(logged_repeats(&t, &it, false, T0 + 90 * SEC, HOLD));
	logged_table_clear(&t);

	/* The move budget holds a guest back every other cycle (planned,
	 * max_moves, planned, …: the bench fixture in dry run, 30 guests, 4
	 * moves a cycle): one planned record and one skip, not one a cycle. */
	recorded = 0;
	for (int c = 0; c < 8; c++) {
		int64_t now = T0 + c * SEC;

		it = c % 2 ? item("b", PLAN_SKIP, REASON_LOCALITY, SKIP_MAX_MOVES, "1")
			   : item("b", PLAN_MOVE, REASON_LOCALITY, SKIP_NONE, c % 4 ? "2" : "1");
		p.nr_items = 1;
		recorded += !logged_repeats(&t, &it, false, now, HOLD);
		logged_update(&t, &p, now, HOLD);
	}
	assert_int_equal(recorded, 2);
	logged_table_clear(&t);

	/* Two skips that alternate (max_moves, no_usage, max_moves, …): each
	 * once within the hold; after it, news again. */
	recorded = 0;
	for (int c = 0; c < 8; c++) {
		it = item("b", PLAN_SKIP, REASON_LOCALITY, c % 2 ? SKIP_NO_USAGE : SKIP_MAX_MOVES, "1");
		p.nr_items = 1;
		recorded += !logged_repeats(&t, &it, false, T0 + c * SEC, HOLD);
		logged_update(&t, &p, T0 + c * SEC, HOLD);
	}
	assert_int_equal(recorded, 2);
	it = item("b", PLAN_SKIP, REASON_LOCALITY, SKIP_MAX_MOVES, "1");
	assert_false(logged_repeats(&t, &it, false, T0 + HOLD, HOLD));
	logged_table_clear(&t);
}

/* ---- reservations -------------------------------------------------------- */

static void test_reservations(void **state)
{
	struct resv_list l = { 0 };
	struct advice_reservation room = { .cpus = 2, .mem_bytes = GIB };
	const struct advice_reservation *rooms;
	nodemask_t cpu, mems, none;
	const char *keys[] = { "vm-b", "uuid-x", "" };
	struct resv saved;
	uint64_t a, b, c;

	(void)state;
	nodes_of("1", &room.nodes);
	nodes_of("1", &cpu);
	nodes_of("1", &mems);
	mask_zero(&none);
	a = resv_add(&l, &room, &cpu, &mems, T0 + 10 * SEC, "vm-a");
	b = resv_add(&l, &room, &cpu, &none, T0 + 20 * SEC, "vm-b");
	c = resv_add(&l, &room, NULL, NULL, T0 + 30 * SEC, NULL);
	assert_true(a == 1 && b == 2 && c == 3);
	assert_int_equal(resv_rooms(&l, &rooms), 3);
	assert_true(rooms[2].mem_bytes == GIB && rooms[2].cpus == 2);
	/* where the advice put it: kept only when both masks are known */
	assert_nodes(&l.r[0].cpu_nodes, "1");
	assert_true(mask_empty(&l.r[1].cpu_nodes) && mask_empty(&l.r[1].mems));

	/* found by any of its keys; empty keys match nothing */
	assert_int_equal(resv_find_label(&l, keys, 3), 1);
	keys[0] = "nobody";
	assert_int_equal(resv_find_label(&l, keys, 3), -1);

	/* expiry is at expires_ns, inclusive */
	resv_expire(&l, T0 + 10 * SEC - 1);
	assert_int_equal(l.n, 3);
	resv_expire(&l, T0 + 10 * SEC);
	assert_int_equal(l.n, 2);
	assert_true(l.r[0].id == b);

	/* dropped by label (id 0), or by id; ids are never reused */
	assert_false(resv_drop(&l, 0, "vm-a"));
	assert_true(resv_drop(&l, 0, "vm-b"));
	assert_true(resv_drop(&l, c, NULL));
	assert_int_equal(resv_rooms(&l, &rooms), 0);
	assert_true(resv_add(&l, &room, NULL, NULL, T0, NULL) == 4);

	/* restoring saved state keeps the id and moves next_id past it */
	memset(&saved, 0, sizeof(saved));
	saved.id = 40;
	saved.label = "vm-c";
	saved.room = room;
	saved.expires_ns = T0 + 5 * SEC;
	resv_restore(&l, &saved);
	assert_true(resv_add(&l, &room, NULL, NULL, T0, NULL) == 41);
	keys[0] = "vm-c";
	assert_int_equal(resv_find_label(&l, keys, 1), 1);
	resv_list_clear(&l);
	assert_int_equal(l.n, 0);
}

/* ---- the state that survives a restart ----------------------------------- */

/* Saved by one process, read by the next (another monotonic clock: after a
 * reboot it starts again near 0): the cool-downs keep their age, live
 * reservations their remaining time, expired ones are left out. */
static void test_engine_state_round_trip(void **state)
{
	const int64_t off1 = 1700000000LL * SEC, off2 = off1 + 99951 * SEC; /* realtime - monotonic */
	const int64_t now1 = T0, now2 = 50 * SEC; /* the same instant on the second clock: ... */
	struct advice_reservation room = { .cpus = 1.5, .mem_bytes = 3 * GIB };
	struct pstate *ps = pstate_new(), *back = NULL;
	struct resv_list rl = { 0 }, rb = { 0 };
	nodemask_t cpu, mems;
	json_t *j, *bad;
	char err[200];
	const struct pstate_entry *e;

	(void)state;
	/* now1 + off1 == now2 + off2 + 1 s: the second run starts 1 s later */
	assert_true(now1 + off1 + SEC == now2 + off2);
	pstate_note_move(ps, "moved-10s-ago", now1 - 10 * SEC);
	pstate_note_move(ps, "moved-10s-ago", now1 - 10 * SEC);
	/* a pull of a pinned guest's memory stays one across a restart */
	pstate_note_follow(ps, "pulled-5s-ago", now1 - 5 * SEC);
	/* the cool-down its move earned (cooldown = auto) too */
	pstate_note_cooldown(ps, "moved-10s-ago", 256 * SEC);
	nodes_of("0-1", &room.nodes);
	nodes_of("1", &cpu);
	nodes_of("1", &mems);
	resv_add(&rl, &room, &cpu, &mems, now1 + 600 * SEC, "vm-a");
	resv_add(&rl, &room, NULL, NULL, now1 + SEC / 2, NULL); /* gone by the restart */
	j = engstate_to_json(ps, &rl, off1);

	assert_int_equal(engstate_from_json(j, off2, now2, NULL, &back, &rb, err, sizeof(err)), 0);
	e = pstate_find(back, "moved-10s-ago");
	assert_non_null(e);
	assert_int_equal(e->nr_moves, 2);
	assert_true(now2 - e->last_move_ns == 11 * SEC);
	assert_false(e->last_follow);
	assert_int_equal(e->cooldown_ns, 256 * SEC);
	e = pstate_find(back, "pulled-5s-ago");
	assert_true(e && e->last_follow && e->nr_moves == 1 && now2 - e->last_move_ns == 6 * SEC);
	assert_int_equal(e->cooldown_ns, 0);
	assert_null(json_object_get(json_array_get(json_object_get(j, "cooldowns"), 1), "cooldown_ns"));
	assert_int_equal(rb.n, 1);
	assert_true(rb.r[0].id == 1);
	assert_string_equal(rb.r[0].label, "vm-a");
	assert_true(rb.r[0].expires_ns - now2 == 599 * SEC);
	assert_nodes(&rb.r[0].room.nodes, "0-1");
	assert_nodes(&rb.r[0].cpu_nodes, "1");
	assert_true(rb.r[0].room.mem_bytes == 3 * GIB && rb.r[0].room.cpus == 1.5);
	assert_true(resv_add(&rb, &room, NULL, NULL, now2, NULL) == 3); /* ids go on past the saved ones */

	/* What the host cannot have is not believed: the whole file then is
	 * refused, as a malformed one (the engine sets it aside). */
	{
		const struct engstate_limits host = { .cpus = 4, .mem_bytes = 8 * GIB }, small = { .cpus = 1 };
		struct resv_list rc = { 0 };
		struct pstate *pc = NULL;
		json_t *x;

		assert_int_equal(engstate_from_json(j, off2, now2, &host, &pc, &rc, err, sizeof(err)), 0);
		pstate_free(pc);
		pc = NULL;
		resv_list_clear(&rc);
		assert_int_equal(engstate_from_json(j, off2, now2, &small, &pc, &rc, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "reservations[0]: 1.5 CPUs"));
		assert_null(pc);
		assert_int_equal(rc.n, 0);
		/* 10^6 CPUs, 2^60 bytes, expiring in 2200: each alone */
		for (int k = 0; k < 3; k++) {
			x = json_pack("{s:s, s:i, s:[], s:[{s:I, s:n, s:I, s:s, s:f, s:I, s:s, s:s}]}", "format",
				      "numaorch-engine-state", "version", 1, "cooldowns", "reservations", "id",
				      (json_int_t)1, "label", "expires_real_ns",
				      (json_int_t)(k == 2 ? 7258118400LL * SEC : off2 + now2 + 60 * SEC), "nodes", "0",
				      "cpus", k == 0 ? 1e6 : 1.0, "mem_bytes",
				      (json_int_t)(k == 1 ? 1LL << 60 : 1LL << 20), "cpu_nodes", "0", "mems", "0");
			assert_int_equal(engstate_from_json(x, off2, now2, k == 2 ? &host : NULL, &pc, &rc, err,
							     sizeof(err)), -EINVAL);
			assert_non_null(strstr(err, "reservations[0]"));
			json_decref(x);
		}
		/* a move in 2200, or before the epoch */
		for (int k = 0; k < 2; k++) {
			x = json_pack("{s:s, s:i, s:[{s:s, s:I, s:i}], s:[]}", "format", "numaorch-engine-state",
				      "version", 1, "cooldowns", "guest", "g",
				      "last_move_real_ns", (json_int_t)(k ? -1 : 7258118400LL * SEC), "moves", 1,
				      "reservations");
			assert_int_equal(engstate_from_json(x, off2, now2, &host, &pc, &rc, err, sizeof(err)),
					 -EINVAL);
			assert_non_null(strstr(err, "cooldowns[0]: last_move_real_ns"));
			json_decref(x);
		}
	}

	/* A state saved before the cool-down's length was kept (no
	 * "cooldown_ns", no "follow") loads: its length not known (0, the
	 * configured cool-down holds it); a length past a week does not. */
	{
		const char *old_file = "{\"format\": \"numaorch-engine-state\", \"version\": 1, \"cooldowns\": "
				       "[{\"guest\": \"g\", \"last_move_real_ns\": 1700000000000000000, \"moves\": 3}], "
				       "\"reservations\": [], \"last_reservation_id\": 4}";
		struct resv_list rc = { 0 };
		struct pstate *pc = NULL;
		json_t *x = json_loads(old_file, 0, NULL);

		assert_non_null(x);
		assert_int_equal(engstate_from_json(x, off2, now2, NULL, &pc, &rc, err, sizeof(err)), 0);
		e = pstate_find(pc, "g");
		assert_true(e && e->nr_moves == 3 && e->cooldown_ns == 0 && !e->last_follow);
		pstate_free(pc);
		pc = NULL;
		resv_list_clear(&rc);
		json_decref(x);
		x = json_pack("{s:s, s:i, s:[{s:s, s:I, s:i, s:I}], s:[]}", "format", "numaorch-engine-state",
			      "version", 1, "cooldowns", "guest", "g", "last_move_real_ns", (json_int_t)1, "moves", 1,
			      "cooldown_ns", (json_int_t)(8LL * 86400 * SEC), "reservations");
		assert_int_equal(engstate_from_json(x, off2, now2, NULL, &pc, &rc, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "cooldowns[0]: cooldown_ns"));
		assert_null(pc);
		json_decref(x);
	}

	/* not a state file, or a bad entry: -EINVAL, nothing written */
	bad = json_pack("{s:s, s:i, s:[], s:[]}", "format", "something-else", "version", 1, "cooldowns",
			"reservations");
	pstate_free(back);
	back = NULL;
	assert_int_equal(engstate_from_json(bad, off2, now2, NULL, &back, &rb, err, sizeof(err)), -EINVAL);
	assert_null(back);
	json_decref(bad);
	bad = json_pack("{s:s, s:i, s:[{s:s, s:I, s:i}], s:[]}", "format", "numaorch-engine-state", "version", 1,
			"cooldowns", "guest", "g", "last_move_real_ns", (json_int_t)1, "moves", 0, "reservations");
	assert_int_equal(engstate_from_json(bad, off2, now2, NULL, &back, &rb, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "cooldowns[0]"));
	assert_null(back);
	json_decref(bad);
	json_decref(j);
	pstate_free(ps);
	resv_list_clear(&rl);
	resv_list_clear(&rb);
}

/* ---- start placement: the pure choice ------------------------------------ */

static struct policy_config pcfg(void)
{
	struct policy_config c;

	policy_config_default(&c);
	c.min_free_bytes = 256 * MIB;
	return c;
}

static struct place_request preq(const char *id, double cpus, uint64_t mem)
{
	struct place_request r;

	memset(&r, 0, sizeof(r));
	r.guest_id = id;
	r.cpus = cpus;
	r.mem_bytes = mem;
	return r;
}

static void test_place_choice(void **state)
{
	const struct tg g[] = {
		{ .id = "vm-auto", .on = "0-1" },
		{ .id = "vm-pinned", .on = "0-1", .pol = GPOL_PINNED, .pin = "1" },
		{ .id = "vm-ignored", .on = "0-1", .pol = GPOL_IGNORE },
		{ .id = "vm-fenced", .on = "0", .pol = GPOL_PINNED, .pin = "1", .allowed_cpus = "0-3" },
		{ .id = "vm-memory", .on = "0-1", .mem = { 512 * MIB, 0 } },
	};
	struct snapshot *s = host(g, 5, 6 * GIB, NULL);
	struct policy_config c = pcfg();
	struct advice_reservation taken = { .cpus = 3.5, .mem_bytes = 5 * GIB };
	struct place_result r;
	struct place_request q;
	char cpus[64];

	(void)state;
	/* no policy: the advice's choice, the less busy node 0 */
	q = preq("vm-auto", 1, GIB);
	assert_int_equal(policy_place(&c, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_MOVE);
	assert_int_equal(r.item.reason, REASON_PLACE);
	assert_nodes(&r.item.to_nodes, "0");
	assert_true(r.item.to_cpus == &r.cpus);
	assert_false(r.used_reservation);
	assert_non_null(strstr(r.item.detail, "initial placement"));

	/* another guest's reservation fills node 0: it counts as load */
	nodes_of("0", &taken.nodes);
	q.nr_reservations = 1;
	q.reservations = &taken;
	assert_int_equal(policy_place(&c, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_MOVE);
	assert_nodes(&r.item.to_nodes, "1");

	/* pinned: its nodes, their CPUs, memory there */
	q = preq("vm-pinned", 1, GIB);
	assert_int_equal(policy_place(&c, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_MOVE);
	assert_nodes(&r.item.to_nodes, "1");
	assert_nodes(&r.item.to_mems, "1");
	mask_format(&r.cpus, cpus, sizeof(cpus));
	assert_string_equal(cpus, "4-7");
	assert_non_null(strstr(r.item.detail, "pinned"));

	/* its own reservation wins over the advice and its pin, exactly where
	 * the advice that made it put it; the reservation is used */
	q = preq("vm-pinned", 1, GIB);
	q.reserved = true;
	q.reserved_id = 7;
	q.reserved_label = "vm-pinned";
	nodes_of("0", &q.reserved_nodes);
	nodes_of("0", &q.reserved_cpu_nodes);
	nodes_of("0", &q.reserved_mems);
	assert_int_equal(policy_place(&c, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_MOVE);
	assert_nodes(&r.item.to_nodes, "0");
	assert_true(r.used_reservation);
	assert_non_null(strstr(r.item.detail, "reservation 7"));

	/* ignore: not placed, and its reservation is left alone */
	q.guest_id = "vm-ignored";
	assert_int_equal(policy_place(&c, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_SKIP);
	assert_int_equal(r.item.skip, SKIP_IGNORED);
	assert_false(r.used_reservation);
	assert_null(r.item.to_cpus);

	/* pinned outside what its parent allows: no usable CPUs there */
	q = preq("vm-fenced", 1, GIB);
	assert_int_equal(policy_place(&c, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_SKIP);
	assert_int_equal(r.item.skip, SKIP_OUTSIDE_ALLOWED);

	/* more memory than the host has free: nothing fits */
	q = preq("vm-auto", 1, 13 * GIB);
	assert_int_equal(policy_place(&c, s, &q, &r), 0);
	assert_int_equal(r.item.kind, PLAN_SKIP);
	assert_int_equal(r.item.skip, SKIP_NO_FIT);
	assert_non_null(strstr(r.item.detail, "not placed"));

	/* the memory it has already that is not where it goes must move */
	q = preq("vm-memory", 1, GIB);
	q.nr_reservations = 1;
	q.reservations = &taken;
	assert_int_equal(policy_place(&c, s, &q, &r), 0);
	assert_nodes(&r.item.to_mems, "1");
	assert_true(r.item.migrate_bytes == 512 * MIB);

	q = preq("not-there", 1, GIB);
	assert_int_equal(policy_place(&c, s, &q, &r), -ENOENT);
	snap_unref(s);
}

static struct start_vm start(const char *id, double cpus, uint64_t mem, int room)
{
	struct start_vm s;

	memset(&s, 0, sizeof(s));
	snprintf(s.id, sizeof(s.id), "%s", id);
	s.cpus = cpus;
	s.mem_bytes = mem;
	s.room = room;
	return s;
}

static const struct plan_item *item_of(const struct plan *p, const char *id)
{
	const struct plan_item *it = NULL;

	for (unsigned i = 0; i < p->nr_items; i++)
		if (strcmp(p->items[i].guest_id, id) == 0) {
			assert_null(it); /* one item per guest */
			it = &p->items[i];
		}
	return it;
}

/* The VMs that just started are an input of the policy's one decide: each
 * one's start placement is its item in the plan (reason "place", not held
 * though the engine counts it as placed this cycle), its own reservation
 * taken and the others counted as load, one reservation taken once; a
 * guest not in the snapshot has none, one whose policy says ignore a
 * skip. The cool-down it leaves is the engine's to note. */
static void test_place_starts_in_the_plan(void **state)
{
	const struct tg g[] = {
		{ .id = "vm-a", .on = "0-1" },
		{ .id = "vm-b", .on = "0-1" },
		{ .id = "vm-ignored", .on = "0-1", .pol = GPOL_IGNORE },
	};
	struct snapshot *s = host(g, 3, 6 * GIB, NULL);
	struct policy_config c = pcfg();
	struct advice_reservation rooms[2] = { { .cpus = 3.9, .mem_bytes = 5 * GIB },
					       { .cpus = 1, .mem_bytes = GIB } };
	struct start_vm sv[4];
	char placed[2][GUEST_ID_MAX] = { "vm-a", "vm-b" };
	struct plan_holds h = { .placed = placed, .nplaced = 2, .applying = true, .starting = sv, .nstarting = 4 };
	const struct plan_item *a, *b, *ig;
	struct plan *p = NULL;
	struct pstate *next = NULL;

	(void)state;
	/* room 0 is someone else's, on node 0; room 1 is vm-b's, on node 1 */
	nodes_of("0", &rooms[0].nodes);
	nodes_of("1", &rooms[1].nodes);
	sv[0] = start("vm-a", 1, GIB, -1);
	sv[1] = start("vm-b", 1, GIB, 1);
	sv[1].resv_id = 42;
	sv[1].resv_label = "vm-b";
	sv[1].resv_nodes = rooms[1].nodes;
	sv[1].resv_cpu_nodes = rooms[1].nodes;
	sv[1].resv_mems = rooms[1].nodes;
	sv[2] = start("vm-ignored", 1, GIB, -1);
	sv[3] = start("not-there", 1, GIB, -1);
	assert_int_equal(policy_decide_reserved(&c, s, NULL, false, rooms, 2, &h, &p, &next), 0);
	plan_mem_ways(p, s, &(struct mem_way_cfg){ .kbal = KBAL_AUTO, .mover = true, .mover_on = true });

	/* the other guest's room fills node 0: vm-a goes to node 1 */
	a = item_of(p, "vm-a");
	assert_non_null(a);
	assert_int_equal(a->kind, PLAN_MOVE);
	assert_int_equal(a->reason, REASON_PLACE);
	assert_true(a->vm_start);
	assert_int_equal(a->hold, HOLD_NONE);
	assert_int_equal(a->resv_used, 0);
	assert_non_null(a->to_cpus);
	assert_nodes(&a->to_nodes, "1");
	assert_int_equal(a->mem_way, MEM_WAY_WRITE);
	assert_non_null(strstr(a->detail, "initial placement"));
	/* vm-b on its own room, which it takes */
	b = item_of(p, "vm-b");
	assert_non_null(b);
	assert_int_equal(b->kind, PLAN_MOVE);
	assert_nodes(&b->to_nodes, "1");
	assert_int_equal(b->resv_used, 42);
	assert_non_null(strstr(b->detail, "reservation 42"));
	ig = item_of(p, "vm-ignored");
	assert_non_null(ig);
	assert_int_equal(ig->kind, PLAN_SKIP);
	assert_int_equal(ig->skip, SKIP_IGNORED);
	assert_true(ig->vm_start);
	assert_null(item_of(p, "not-there"));
	/* no cool-down yet: the engine notes it once the move is made */
	assert_null(pstate_find(next, "vm-a"));
	plan_free(p);
	pstate_free(next);

	/* a reservation is taken once: a second start with the same room
	 * does not get it */
	sv[0] = sv[1];
	snprintf(sv[0].id, sizeof(sv[0].id), "vm-a");
	h.nstarting = 2;
	assert_int_equal(policy_decide_reserved(&c, s, NULL, false, rooms, 2, &h, &p, &next), 0);
	assert_int_equal(item_of(p, "vm-a")->resv_used, 42);
	assert_int_equal(item_of(p, "vm-b")->resv_used, 0);
	assert_null(strstr(item_of(p, "vm-b")->detail, "reservation"));
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

/* ---- the engine with fake parts ------------------------------------------ */

struct acquirer {
	struct host_paths hp;
	struct cg_hier h;
};

static struct {
	/* g1 as the snapshot shows it, when set (else on node 0, 1 GiB on node 1) */
	bool custom;
	const char *g1_on, *g1_mems;
	const char *g1_runtime;        /* custom: its runtime, else docker */
	uint64_t g1_mem0, free;
	double g1_use;
	unsigned calls;
	struct plan_item items[2];
	unsigned nr_items;
	unsigned drift_calls, rewindows; /* the watch's source ops (watch_parts) */
	unsigned drift_stepped;        /* what the next pass reports */
	unsigned drift_away;
	bool drift_g1_moved;           /* the last pass was told g1 was moved */
	bool prev_had_guest;           /* in the last decide call */
	unsigned nres;                 /* reservations the last call saw */
	nodemask_t res_nodes;
} fake;

static int fake_acquirer_new(const struct host_paths *hp, const struct cgscan_config *cg, struct acquirer **out)
{
	struct acquirer *a = xcalloc(1, sizeof(*a));

	(void)cg;
	a->hp = *hp;
	assert_int_equal(cgh_detect(hp->cgroupfs, &a->h), 0);
	*out = a;
	return 0;
}

static void fake_acquirer_free(struct acquirer *a) { free(a); }
static void fake_add_source(struct acquirer *a, const struct guest_source *src) { (void)a; (void)src; }
static const struct cg_hier *fake_hier(const struct acquirer *a) { return &a->h; }

static int fake_snapshot(struct acquirer *a, double prime_s, const struct snap_policy_overlay *ov,
			 const struct snapshot **out)
{
	const struct tg g[] = { { .id = "g1", .on = "0", .mem = { 0, GIB } } };
	struct snapshot *s;

	(void)a;
	(void)prime_s;
	if (fake.custom) {
		const struct tg c[] = { { .id = "g1", .on = fake.g1_on, .mem = { fake.g1_mem0, 0 } } };

		s = host(c, 1, fake.free, NULL);
		nodes_of(fake.g1_mems, &s->guests[0].mems);
		s->guests[0].cpu_use = fake.g1_use;
		s->guests[0].mem_total = fake.g1_mem0;
		if (fake.g1_runtime)
			snprintf(s->guests[0].runtime, sizeof(s->guests[0].runtime), "%s", fake.g1_runtime);
	} else {
		s = host(g, 1, 6 * GIB, ov);
	}
	s->seq = ++fake.calls;
	s->mono_ns = T0 + (int64_t)fake.calls * SEC;
	*out = s;
	return 0;
}

static int fake_meminfo(const struct host_paths *hp, struct snap_node *nodes, unsigned nr)
{
	(void)hp;
	(void)nodes;
	(void)nr;
	return 0;
}

/* Returns the items of FAKE, held as the real policy holds them
 * (plan_mark_holds), and PREV's entries as the next state. */
static int fake_decide(const struct policy_config *cfg, const struct snapshot *snap, const struct pstate *prev,
		       bool verbose, const struct advice_reservation *res, unsigned nres,
		       const struct plan_holds *holds, struct plan **plan, struct pstate **next)
{
	struct plan *p = xcalloc(1, sizeof(*p));

	(void)cfg;
	(void)verbose;
	fake.prev_had_guest = pstate_find(prev, "g1") != NULL;
	fake.nres = nres;
	mask_zero(&fake.res_nodes);
	for (unsigned i = 0; i < nres; i++)
		mask_or(&fake.res_nodes, &fake.res_nodes, &res[i].nodes);
	p->seq = snap->seq;
	p->items = xcalloc(2, sizeof(*p->items));
	p->nr_items = fake.nr_items;
	memcpy(p->items, fake.items, fake.nr_items * sizeof(*p->items));
	for (unsigned i = 0; i < p->nr_items; i++)
		if (p->items[i].to_cpus) {
			/* a plan owns its items' cpus (plan_free) */
			cpumask_t *c = xmalloc(sizeof(*c));

			*c = *p->items[i].to_cpus;
			p->items[i].to_cpus = c;
		}
	/* like policy_decide_reserved: the old entries, the engine notes
	 * the cool-downs of the moves it carries out */
	*next = pstate_clone(prev);
	for (unsigned i = 0; i < p->nr_items; i++)
		if (p->items[i].kind == PLAN_MOVE)
			p->nr_moves++;
	plan_mark_holds(p, snap, holds);
	/* the VMs that just started, placed as the real policy places them */
	if (holds && holds->nstarting) {
		bool *used = xcalloc(nres ? nres : 1, sizeof(*used));
		struct plan_item *starts;
		unsigned nst;

		place_starts(cfg, snap, holds, res, nres, used, &starts, &nst);
		place_starts_splice(p, starts, nst);
		free(starts);
		free(used);
	}
	*plan = p;
	return 0;
}

static int fake_advise(const struct policy_config *cfg, const struct snapshot *snap,
		       const struct advice_request *req, struct advice *out)
{
	(void)cfg;
	(void)snap;
	(void)req;
	memset(out, 0, sizeof(*out));
	return 0;
}

static const struct source_ops fake_src = {
	.acquirer_new = fake_acquirer_new, .acquirer_free = fake_acquirer_free, .add_source = fake_add_source,
	.hier = fake_hier, .snapshot = fake_snapshot, .read_meminfo = fake_meminfo,
};
static const struct policy_ops fake_pol = { .decide = fake_decide, .advise = fake_advise };
static const struct engine_parts fake_parts = { .sources = &fake_src, .policy = &fake_pol };

static void fake_drift(struct acquirer *a, const struct snapshot *last, const bool *moved, struct drift_report *out)
{
	(void)a;
	assert_non_null(last);
	memset(out, 0, sizeof(*out));
	fake.drift_calls++;
	fake.drift_g1_moved = moved && moved[0];
	out->read = 1;
	out->stepped = fake.drift_stepped;
	out->away = fake.drift_away;
	snprintf(out->away_first, sizeof(out->away_first), "g1");
	out->away_ref = 1.0;
	out->away_now = 0.0;
	snprintf(out->first, sizeof(out->first), "g1");
	out->first_ref = 0.0;
	out->first_now = 1.0;
}

static int fake_rewindow(struct acquirer *a)
{
	(void)a;
	fake.rewindows++;
	return 0;
}

static const struct source_ops watch_src = {
	.acquirer_new = fake_acquirer_new, .acquirer_free = fake_acquirer_free, .add_source = fake_add_source,
	.hier = fake_hier, .snapshot = fake_snapshot, .read_meminfo = fake_meminfo,
	.drift = fake_drift, .rewindow = fake_rewindow,
};
static const struct engine_parts watch_parts = { .sources = &watch_src, .policy = &fake_pol };

struct efx {
	char *dir;
	struct host_paths hp;
	struct agent_config cfg;
	struct engine *e;
};

static void efx_init(struct efx *f, enum agent_mode mode)
{
	char *root;

	memset(&fake, 0, sizeof(fake));
	memset(f, 0, sizeof(*f));
	log_set_level(LOG_LEVEL_ERROR);
	f->dir = tu_mkdtemp();
	/* a cgroup v2 root with no guest's cgroup in it: every move vanishes */
	tu_write(f->dir, "sys/fs/cgroup/cgroup.controllers", "cpuset cpu memory\n");
	tu_write(f->dir, "sys/devices/system/node/online", "0-1\n");
	root = xstrdup(f->dir);
	assert_int_equal(host_paths_from_root(&f->hp, root), 0);
	free(root);
	config_default(&f->cfg);
	f->cfg.mode = mode;
	f->cfg.libvirt_enabled = false;
	f->cfg.mover = false;
	free(f->cfg.state_dir);
	f->cfg.state_dir = xasprintf("%s/state", f->dir);
	assert_int_equal(engine_new(&f->cfg, &f->hp, &fake_parts, &f->e), 0);
}

static void efx_fini(struct efx *f)
{
	engine_free(f->e);
	config_clear(&f->cfg);
	tu_rm_rf(f->dir);
	free(f->dir);
}

/* How many records the decision log holds with DECISION. */
static unsigned records(struct efx *f, const char *decision)
{
	json_t *all = declog_query(engine_declog(f->e), 0, INT64_MIN, 1000, NULL, NULL), *recs, *r;
	unsigned n = 0;
	size_t i;

	recs = json_is_array(all) ? all : json_object_get(all, "records");
	json_array_foreach(recs, i, r)
		if (strcmp(json_string_value(json_object_get(r, "decision")) ?: "", decision) == 0)
			n++;
	json_decref(all);
	return n;
}

/* Seconds until the engine's cycle timer fires. */
static double timer_left(struct engine *e)
{
	struct itimerspec cur;

	assert_int_equal(timerfd_gettime(e->loop.tfd, &cur), 0);
	return (double)cur.it_value.tv_sec + (double)cur.it_value.tv_nsec / 1e9;
}

/* A pass that is due, with the next cycle far off, asks the sources; a
 * step takes fresh counters and arms a cycle `sample` s out, counted.
 * Nothing more until that cycle has run; then a step within
 * ENGINE_WATCH_GAP_S of the last prompted cycle waits, one after it does
 * not; a pass with the interval's cycle about to come asks nothing; no
 * step, no cycle; watch = 0, no pass. */
static void test_engine_watch_rules(void **state)
{
	struct efx f;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	engine_free(f.e);
	assert_int_equal(engine_new(&f.cfg, &f.hp, &watch_parts, &f.e), 0);
	assert_int_equal(engine_prepare_loop(f.e), 0);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0); /* a view to watch */
	engine_arm_timer(f.e, 100);

	engine_watch(f.e); /* the first call only schedules the first pass */
	assert_int_equal(fake.drift_calls, 0);
	f.e->watch.next_ns = 1; /* due */
	fake.drift_stepped = 1;
	engine_watch(f.e);
	assert_int_equal(fake.drift_calls, 1);
	assert_int_equal(fake.rewindows, 1);
	assert_true(f.e->watch.pending);
	assert_int_equal(f.e->stats.watch_cycles, 1);
	assert_true(timer_left(f.e) <= f.cfg.sample_s + 0.01);
	assert_true(f.e->watch.next_ns > clock_mono_ns()); /* the next pass a watch away */

	f.e->watch.next_ns = 1;
	engine_watch(f.e); /* its cycle has not run yet */
	assert_int_equal(fake.drift_calls, 1);

	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_false(f.e->watch.pending);
	engine_arm_timer(f.e, 100);
	f.e->watch.next_ns = 1;
	engine_watch(f.e); /* a step again, but within the gap */
	assert_int_equal(fake.drift_calls, 2);
	assert_int_equal(fake.rewindows, 1);
	f.e->watch.cycle_ns -= (int64_t)((ENGINE_WATCH_GAP_S + 1) * 1e9);
	f.e->watch.next_ns = 1;
	engine_watch(f.e); /* past the gap */
	assert_int_equal(fake.drift_calls, 3);
	assert_int_equal(fake.rewindows, 2);
	assert_int_equal(f.e->stats.watch_cycles, 2);

	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	engine_arm_timer(f.e, f.cfg.watch_s / 2); /* the interval's cycle comes first */
	f.e->watch.next_ns = 1;
	engine_watch(f.e);
	assert_int_equal(fake.drift_calls, 3);

	engine_arm_timer(f.e, 100);
	f.e->watch.cycle_ns = 0;
	fake.drift_stepped = 0; /* no step: no cycle */
	f.e->watch.next_ns = 1;
	engine_watch(f.e);
	assert_int_equal(fake.drift_calls, 4);
	assert_int_equal(fake.rewindows, 2);
	fake.drift_away = 1; /* no step, but a guest's threads left its memory */
	f.e->watch.next_ns = 1;
	engine_watch(f.e);
	assert_int_equal(fake.drift_calls, 5);
	assert_int_equal(fake.rewindows, 3);
	assert_true(f.e->watch.pending);
	assert_int_equal(f.e->stats.watch_cycles, 3);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	engine_arm_timer(f.e, 100);
	fake.drift_away = 0;
	f.e->watch.cycle_ns = 0;

	/* The pass after a cycle that moved g1 is told so (its threads now
	 * run where the move put them, not where the snapshot saw them);
	 * after a cycle that did not, it is not. */
	assert_false(fake.drift_g1_moved);
	fake.items[0] = item("g1", PLAN_MOVE, REASON_LOCALITY, SKIP_NONE, "1");
	for (unsigned k = 0; k < 2; k++) {
		fake.nr_items = k == 0; /* a move of g1, then none */
		assert_int_equal(engine_cycle(f.e, false, NULL), 0);
		engine_arm_timer(f.e, 100);
		f.e->watch.next_ns = 1;
		engine_watch(f.e);
		assert_int_equal(fake.drift_calls, 6 + k);
		assert_true(fake.drift_g1_moved == (k == 0));
	}
	fake.nr_items = 0;

	f.e->conf.cfg.watch_s = 0; /* off */
	fake.drift_stepped = 1;
	f.e->watch.next_ns = 1;
	engine_watch(f.e);
	assert_int_equal(fake.drift_calls, 7);
	assert_int_equal(engine_watch_timeout_ms(f.e, 1000), 1000);
	efx_fini(&f);
}

/* A guard that keeps saying the same thing is recorded once; when it says
 * something else, that is recorded. */
static void test_engine_records_a_repeated_skip_once(void **state)
{
	struct efx f;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	fake.items[0] = item("g1", PLAN_SKIP, REASON_LOCALITY, SKIP_COOLDOWN, "1");
	fake.nr_items = 1;
	for (int i = 0; i < 3; i++)
		assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "skipped"), 1);
	fake.items[0].skip = SKIP_NO_FIT;
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "skipped"), 2);
	efx_fini(&f);
}

/* A reload (or PUT /v1/policy) republishes the last view with the new
 * settings at once; the plan stays the cycle's, shared, freed once. */
static void test_engine_reload_republishes_the_view(void **state)
{
	struct engine_view *v0, *v1, *v2;
	struct efx f;

	(void)state;
	efx_init(&f, MODE_ADVISE);
	fake.items[0] = item("g1", PLAN_MOVE, REASON_LOCALITY, SKIP_NONE, "1");
	fake.nr_items = 1;
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	v0 = engine_view_get(f.e);
	assert_int_equal(v0->base_policy.max_moves, f.cfg.policy.max_moves);
	/* a number, as the file or PUT /v1/policy would give it */
	f.cfg.policy.max_moves_auto = false;
	f.cfg.policy.max_moves = 7;
	f.cfg.log_level = LOG_LEVEL_ERROR;
	assert_int_equal(engine_apply_config(f.e, &f.cfg), 0);
	v1 = engine_view_get(f.e);
	assert_ptr_not_equal(v1, v0);
	assert_int_equal(v1->base_policy.max_moves, 7);
	assert_int_equal(v1->policy.max_moves, 7);
	assert_ptr_equal(v1->plan, v0->plan);
	assert_ptr_equal(v1->snap, v0->snap);
	assert_int_equal(v1->stats.cycles, v0->stats.cycles);
	f.cfg.policy.max_moves = 9;
	assert_int_equal(engine_apply_config(f.e, &f.cfg), 0);
	v2 = engine_view_get(f.e);
	assert_int_equal(v2->base_policy.max_moves, 9);
	assert_ptr_equal(v2->plan, v0->plan);
	engine_view_unref(v0);
	engine_view_unref(v1);
	/* the plan outlives the views that made and shared it first */
	assert_int_equal(v2->plan->nr_items, 1);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	engine_view_unref(v2);
	efx_fini(&f);
}

/* Advise mode plans the same move every cycle: advised once. */
static void test_engine_records_a_repeated_advice_once(void **state)
{
	struct efx f;

	(void)state;
	efx_init(&f, MODE_ADVISE);
	fake.items[0] = item("g1", PLAN_MOVE, REASON_LOCALITY, SKIP_NONE, "1");
	fake.nr_items = 1;
	for (int i = 0; i < 3; i++)
		assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "advised"), 1);
	/* and an advised move starts no cool-down */
	assert_false(fake.prev_had_guest);
	efx_fini(&f);
}

/* The move the policy planned does not happen (the guest's cgroup is not
 * there): the next cycle's previous state must not hold a cool-down for
 * it. */
static void test_engine_vanished_move_starts_no_cooldown(void **state)
{
	struct efx f;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	fake.items[0] = item("g1", PLAN_MOVE, REASON_LOCALITY, SKIP_NONE, "1");
	fake.nr_items = 1;
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "skipped"), 1);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_false(fake.prev_had_guest);
	efx_fini(&f);
}

/* Reservations reach the policy as room taken, until dropped. */
static void test_engine_reservations_reach_the_policy(void **state)
{
	struct advice_reservation room = { .cpus = 2, .mem_bytes = GIB };
	const struct advice_reservation *rs;
	nodemask_t cpu, mems;
	struct efx f;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	nodes_of("1", &room.nodes);
	nodes_of("1", &cpu);
	nodes_of("1", &mems);
	assert_true(engine_reserve_placement(f.e, &room, &cpu, &mems, 600, "vm-a") == 1);
	assert_true(engine_reserve_placement(f.e, &room, NULL, NULL, 0, "gone-at-once") == 2);
	assert_int_equal(engine_reservations(f.e, &rs), 1);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(fake.nres, 1);
	assert_nodes(&fake.res_nodes, "1");
	assert_true(engine_unreserve(f.e, 0, "vm-a"));
	assert_false(engine_unreserve(f.e, 0, "vm-a"));
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(fake.nres, 0);
	efx_fini(&f);
}

/* ---- start placement through the engine, with a fake VM source --------- */

static unsigned fake_take_placements(struct vmsrc *vs, const struct snapshot *snap, struct vmsrc_placement **out)
{
	struct vmsrc_placement *pl = xcalloc(1, sizeof(*pl));

	(void)vs;
	(void)snap;
	snprintf(pl->id, sizeof(pl->id), "g1");
	snprintf(pl->name, sizeof(pl->name), "dom-g1");
	pl->nr_vcpus = 1;
	pl->mem_bytes = GIB;
	*out = pl;
	return 1;
}

static void fake_get_status(struct vmsrc *vs, struct vmsrc_status *st)
{
	(void)vs;
	memset(st, 0, sizeof(*st));
}

static void fake_src_free(struct vmsrc *vs) { (void)vs; }

static const struct vmplugin fake_vmp = {
	.abi = VMPLUGIN_ABI, .size = sizeof(struct vmplugin), .src_free = fake_src_free,
	.take_placements = fake_take_placements, .get_status = fake_get_status,
};

/* A domain that starts is placed in the cycle that sees it: its own
 * reservation (by its name) is consumed, the others stay and count as
 * load; the placement is recorded with reason "place". */
static void test_engine_places_a_started_domain(void **state)
{
	struct advice_reservation room = { .cpus = 3.9, .mem_bytes = 5 * GIB };
	const struct advice_reservation *rs;
	json_t *recs;
	struct efx f;
	int dummy;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	/* the engine's VM source, as build_sources sets it up with libvirt */
	f.e->vmp = &fake_vmp;
	f.e->vm = (struct vmsrc *)&dummy;
	f.cfg.libvirt_place_on_start = true;
	f.cfg.log_level = LOG_LEVEL_ERROR;
	assert_int_equal(engine_apply_config(f.e, &f.cfg), 0);
	f.e->vmp = &fake_vmp;
	f.e->vm = (struct vmsrc *)&dummy;
	/* another guest's room fills node 0, which is otherwise the less busy */
	nodes_of("0", &room.nodes);
	engine_reserve_placement(f.e, &room, NULL, NULL, 600, "someone-else");
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	recs = declog_query_newest(engine_declog(f.e), 1, "g1");
	{
		json_t *r = json_array_get(recs, 0);

		assert_non_null(r);
		assert_string_equal(json_string_value(json_object_get(r, "reason")) ?: "", "place");
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "to"), "nodes")) ?: "", "1");
	}
	json_decref(recs);
	assert_int_equal(engine_reservations(f.e, &rs), 1);

	/* its own reservation, on node 0 where the other one is: placed there,
	 * and consumed */
	nodes_of("0", &room.nodes);
	room.cpus = 1;
	room.mem_bytes = GIB;
	engine_unreserve(f.e, 0, "someone-else");
	engine_reserve_placement(f.e, &room, &room.nodes, &room.nodes, 600, "dom-g1");
	assert_int_equal(engine_reservations(f.e, &rs), 1);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(engine_reservations(f.e, &rs), 0);
	recs = declog_query_newest(engine_declog(f.e), 1, "g1");
	{
		json_t *r = json_array_get(recs, 0);

		assert_non_null(r);
		assert_string_equal(json_string_value(json_object_get(json_object_get(r, "to"), "nodes")) ?: "", "0");
		assert_non_null(strstr(json_string_value(json_object_get(r, "detail")) ?: "", "reserved for it"));
	}
	json_decref(recs);
	f.e->vm = NULL;
	f.e->vmp = NULL;
	efx_fini(&f);
}

/* A start placement (plan_item.bind_start) binds the mems to the target
 * even under soft binding, and the engine releases them (widened to the
 * old ∪ target) once the guest's memory stops growing — or at once when
 * its node runs short of free memory. On a fixture cgroup v2 tree. */
static void bind_start_fixture(struct efx *f)
{
	tu_write(f->dir, "sys/fs/cgroup/grp/g1/cpuset.cpus", "0-7\n");
	tu_write(f->dir, "sys/fs/cgroup/grp/g1/cpuset.mems", "0-1\n");
	tu_write(f->dir, "sys/fs/cgroup/grp/g1/cgroup.procs", "");
	fake.custom = true;
	fake.g1_on = "0-1";
	fake.g1_mems = "0-1";
	fake.g1_mem0 = 0;
	fake.g1_use = NAN;
	fake.free = 6 * GIB;
	fake.items[0] = item("g1", PLAN_MOVE, REASON_PLACE, SKIP_NONE, "1");
	fake.items[0].migrate_bytes = 0;
	fake.items[0].start = true;
	fake.items[0].bind_start = true;
	fake.nr_items = 1;
}

/* From the next cycle on, g1 as a start placement left it: on node 1,
 * bound there, no more moves planned; USE CPUs and MEM bytes. */
static void bound_on_node1(double use, uint64_t mem)
{
	fake.nr_items = 0;
	fake.g1_on = "1";
	fake.g1_mems = "1";
	fake.g1_use = use;
	fake.g1_mem0 = mem;
}

static struct efx f_global;

static char *mems_file(struct efx *f)
{
	char *p = xasprintf("%s/sys/fs/cgroup/grp/g1/cpuset.mems", f->dir), *v = NULL;

	assert_int_equal(fs_read_file(p, 4096, &v, NULL), 0);
	free(p);
	v[strcspn(v, "\n")] = '\0';
	return v;
}

static void test_engine_releases_a_start_binding(void **state)
{
	struct efx f;
	char *v;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	bind_start_fixture(&f);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "moved"), 1);
	v = mems_file(&f);
	assert_string_equal(v, "1");                   /* bound, not left wide */
	free(v);
	assert_true(engine_next_cycle_s(f.e) <= ENGINE_BIND_CYCLE_S);

	/* next cycles: it is on node 1, bound there, touching its memory */
	bound_on_node1(1.0, 100 * MIB);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	fake.g1_mem0 = 300 * MIB;
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "mems_released"), 0);
	v = mems_file(&f);
	assert_string_equal(v, "1");                   /* still growing: still bound */
	free(v);
	/* its memory stopped growing: released */
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);

	assert_int_equal(records(&f, "mems_released"), 1);
	v = mems_file(&f);
	assert_string_equal(v, "0-1");
	free(v);
	assert_true(engine_next_cycle_s(f.e) == f.cfg.interval_s);
	/* and only once */
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "mems_released"), 1);
	efx_fini(&f);

	/* still growing, but its node runs short of free memory: released */
	efx_init(&f, MODE_ENFORCE);
	bind_start_fixture(&f);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	bound_on_node1(1.0, 500 * MIB);
	fake.free = 100 * MIB;
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "mems_released"), 1);
	v = mems_file(&f);
	assert_string_equal(v, "0-1");
	free(v);
	efx_fini(&f);
}

/* A container's start placement is a cpuset write the kubelet rewrites
 * as much as a rebalancing move's: a pod start-placed on node 1 and found
 * back on its shared pool (both nodes) the next cycle is one conflict
 * record, and the policy's move back to node 1 is held, not carried out,
 * while it stays there. */
static void test_engine_start_placement_conflict(void **state)
{
	struct efx f;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	bind_start_fixture(&f);
	fake.items[0].bind_start = false;
	fake.g1_runtime = "kubernetes";
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "moved"), 1);
	assert_int_equal(records(&f, "conflict"), 0);
	/* the kubelet wrote its shared pool back (g1 stays on 0-1); the
	 * policy would move it to node 1 again */
	fake.items[0] = item("g1", PLAN_MOVE, REASON_LOAD, SKIP_NONE, "1");
	fake.g1_use = 1.0;
	fake.g1_mem0 = 64 * MIB;
	for (int i = 0; i < 3; i++)
		assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "conflict"), 1);
	assert_int_equal(records(&f, "moved"), 1);
	assert_int_equal(f.e->stats.placer_conflicts_kubelet, 1);
	efx_fini(&f);
}

/* The start bindings saved in the state directory (bindstate.h). */
static struct bindstate saved_bindings(struct efx *f)
{
	char *p = xasprintf("%s/" BINDSTATE_FILE, f->cfg.state_dir), *text = NULL, err[300];
	struct bindstate bs;
	unsigned nbad;
	size_t len;

	assert_int_equal(fs_read_file(p, 1 << 20, &text, &len), 0);
	assert_int_equal(bindstate_parse(text, len, &bs, &nbad, err, sizeof(err)), 0);
	assert_int_equal(nbad, 0);
	free(text);
	free(p);
	return bs;
}

static void use_state_dir(struct efx *f)
{
	char err[600];

	assert_int_equal(engine_use_state_dir(f->e, f->cfg.state_dir, NULL, err, sizeof(err)), 0);
}

/* The detail of the last record with DECISION contains TEXT. */
static void last_detail_has(struct efx *f, const char *decision, const char *text)
{
	json_t *all = declog_query(engine_declog(f->e), 0, INT64_MIN, 1000, NULL, NULL), *recs, *r;
	const char *last = NULL;
	size_t i;

	recs = json_is_array(all) ? all : json_object_get(all, "records");
	json_array_foreach(recs, i, r)
		if (strcmp(json_string_value(json_object_get(r, "decision")) ?: "", decision) == 0)
			last = json_string_value(json_object_get(r, "detail"));
	if (!last || !strstr(last, text))
		fail_msg("last %s record: \"%s\", wants \"%s\"", decision, last ? last : "(none)", text);
	json_decref(all);
}

/* A guest bound at its start that has touched nothing yet is starting,
 * not done: its binding stays until its memory grows and then stops
 * (diag_bindwrite: a pod released "stopped growing (0 MiB)" 1.2 s after
 * its placement, before its first touch); one that never grows is
 * released after ENGINE_BIND_START_S. */
static void test_engine_keeps_a_start_binding_until_the_guest_grows(void **state)
{
	struct efx f;
	char *v;
	unsigned k;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	bind_start_fixture(&f);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	bound_on_node1(0.0, 1 * MIB);       /* its exec, no touch yet */
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "mems_released"), 0);
	v = mems_file(&f);
	assert_string_equal(v, "1");
	free(v);
	fake.g1_use = 1.0;
	fake.g1_mem0 = 200 * MIB;                      /* it touches */
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "mems_released"), 0);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);  /* and is done */
	assert_int_equal(records(&f, "mems_released"), 1);
	last_detail_has(&f, "mems_released", "its memory stopped growing (200 MiB)");
	efx_fini(&f);

	/* never grows: released once ENGINE_BIND_START_S have passed (a
	 * cycle is 1 s of the fake clock), not before */
	efx_init(&f, MODE_ENFORCE);
	bind_start_fixture(&f);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	bound_on_node1(0.0, 0);
	for (k = 1; k < (unsigned)ENGINE_BIND_START_S; k++)
		assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "mems_released"), 0);
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_int_equal(records(&f, "mems_released"), 1);
	last_detail_has(&f, "mems_released", "its memory did not begin to grow");
	v = mems_file(&f);
	assert_string_equal(v, "0-1");
	free(v);
	efx_fini(&f);
}

/* Bind g1 to node 1 (start placement) with the state directory in use;
 * the binding is saved: g1, its cgroup, mems 0-1 before, 1 bound. */
static void bind_and_save(struct efx *f)
{
	struct bindstate bs;
	char *v;

	efx_init(f, MODE_ENFORCE);
	use_state_dir(f);
	bind_start_fixture(f);
	assert_int_equal(engine_cycle(f->e, false, NULL), 0);
	v = mems_file(f);
	assert_string_equal(v, "1");
	free(v);
	bs = saved_bindings(f);
	assert_int_equal(bs.n, 1);
	assert_string_equal(bs.e[0].id, "g1");
	assert_string_equal(bs.e[0].cgroup, "/grp/g1");
	assert_nodes(&bs.e[0].wide, "0-1");
	assert_nodes(&bs.e[0].bound, "1");
	bindstate_clear(&bs);
	/* from now on it is a young guest on node 1, bound, still growing */
	bound_on_node1(1.0, 100 * MIB);
}

/* The agent killed (no clean stop) and started again on the same state
 * directory. */
static void kill_and_restart(struct efx *f)
{
	engine_free(f->e);
	assert_int_equal(engine_new(&f->cfg, &f->hp, &fake_parts, &f->e), 0);
	use_state_dir(f);
}

/* A start binding whose write a mover job runs (engine_jobs.c): its
 * intent stays, saved, through the cycle's end (drop_intents) and the
 * release of due bindings, however due it looks; taken back as not made
 * (the job ended before it wrote) it is dropped and unsaved; made, it is
 * an ordinary binding. */
static void test_engine_binding_while_its_write_runs(void **state)
{
	struct efx f;
	struct engine_view *v;
	struct plan_item it;
	struct bindstate bs;
	int k = -1;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	use_state_dir(&f);
	bind_start_fixture(&f);
	fake.nr_items = 0;
	fake.g1_use = 1.0;
	fake.free = 100 * MIB;          /* its nodes short of room: any binding is due */
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	v = engine_view_get(f.e);
	for (unsigned i = 0; i < v->snap->nr_guests; i++)
		if (strcmp(v->snap->guests[i].id, "g1") == 0)
			k = (int)i;
	assert_true(k >= 0);
	memset(&it, 0, sizeof(it));
	snprintf(it.guest_id, sizeof(it.guest_id), "g1");
	it.guest_idx = (unsigned)k;
	it.kind = PLAN_MOVE;
	it.start = true;
	it.bind_start = true;
	mask_set(&it.to_mems, 1);

	for (int made = 0; made < 2; made++) {
		engine_bound_intend(f.e, v->snap, &it);
		engine_save_bindings(f.e);
		engine_bound_writing(f.e, "g1", true);
		engine_bound_drop_intents(f.e);
		/* its node short of free memory: due, yet kept */
		engine_release_bound(f.e, v->snap, NULL, true);
		assert_int_equal(records(&f, "mems_released"), 0);
		engine_save_bindings(f.e);
		bs = saved_bindings(&f);
		assert_int_equal(bs.n, 1);
		assert_string_equal(bs.e[0].id, "g1");
		bindstate_clear(&bs);
		if (!made) {
			engine_bound_writing(f.e, "g1", false);
			engine_save_bindings(f.e);
			bs = saved_bindings(&f);
			assert_int_equal(bs.n, 0);
			bindstate_clear(&bs);
			continue;
		}
		engine_bound_add(f.e, v->snap, &it);
		engine_bound_drop_intents(f.e);
		engine_save_bindings(f.e);
		bs = saved_bindings(&f);
		assert_int_equal(bs.n, 1);
		bindstate_clear(&bs);
		/* an ordinary binding now: released when due */
		engine_release_bound(f.e, v->snap, NULL, true);
		assert_int_equal(records(&f, "mems_released"), 1);
	}
	engine_view_unref(v);
	efx_fini(&f);
}

/* A start binding never outlives the agent. A clean stop
 * releases it; after a kill, the next start releases it if the guest is
 * still bound exactly as saved, and leaves alone one whose mems someone
 * else changed; an entry whose guest is gone is dropped. */
static void test_engine_start_binding_outlives_no_agent(void **state)
{
	struct bindstate bs;
	char *v;

	(void)state;
	/* clean stop */
	bind_and_save(&f_global);
	engine_release_bindings(f_global.e, "the agent stopped");
	v = mems_file(&f_global);
	assert_string_equal(v, "0-1");
	free(v);
	assert_int_equal(records(&f_global, "mems_released"), 1);
	last_detail_has(&f_global, "mems_released", "the agent stopped");
	bs = saved_bindings(&f_global);
	assert_int_equal(bs.n, 0);
	bindstate_clear(&bs);
	efx_fini(&f_global);

	/* killed while bound, started again: released in its first cycle */
	bind_and_save(&f_global);
	kill_and_restart(&f_global);
	assert_int_equal(engine_cycle(f_global.e, false, NULL), 0);
	v = mems_file(&f_global);
	assert_string_equal(v, "0-1");
	free(v);
	assert_int_equal(records(&f_global, "mems_released"), 1);
	last_detail_has(&f_global, "mems_released", "stopped while it was bound");
	bs = saved_bindings(&f_global);
	assert_int_equal(bs.n, 0);
	bindstate_clear(&bs);
	/* and only once; cycles back at the interval */
	fake.g1_mems = "0-1";
	assert_int_equal(engine_cycle(f_global.e, false, NULL), 0);
	assert_int_equal(records(&f_global, "mems_released"), 1);
	assert_true(engine_next_cycle_s(f_global.e) == f_global.cfg.interval_s);
	efx_fini(&f_global);

	/* killed; someone else wrote its mems meanwhile: left alone */
	bind_and_save(&f_global);
	tu_write(f_global.dir, "sys/fs/cgroup/grp/g1/cpuset.mems", "0\n");
	fake.g1_mems = "0";
	kill_and_restart(&f_global);
	assert_int_equal(engine_cycle(f_global.e, false, NULL), 0);
	v = mems_file(&f_global);
	assert_string_equal(v, "0");
	free(v);
	assert_int_equal(records(&f_global, "mems_released"), 0);
	bs = saved_bindings(&f_global);
	assert_int_equal(bs.n, 0);
	bindstate_clear(&bs);
	efx_fini(&f_global);

	/* a dry run after the restart writes nothing and keeps the entry for
	 * an agent that applies */
	bind_and_save(&f_global);
	f_global.cfg.dry_run = true;
	kill_and_restart(&f_global);
	assert_int_equal(engine_cycle(f_global.e, false, NULL), 0);
	engine_release_bindings(f_global.e, "the agent stopped");
	v = mems_file(&f_global);
	assert_string_equal(v, "1");
	free(v);
	bs = saved_bindings(&f_global);
	assert_int_equal(bs.n, 1);
	bindstate_clear(&bs);
	efx_fini(&f_global);
}

/* An entry whose guest is gone is dropped; a corrupt file is set aside
 * with a warning, and the agent starts. */
static void test_engine_bad_or_stale_bindings_file(void **state)
{
	struct bindstate bs;
	char *p;

	(void)state;
	efx_init(&f_global, MODE_ENFORCE);
	bind_start_fixture(&f_global);
	fake.nr_items = 0;
	tu_write(f_global.dir, "state/" BINDSTATE_FILE,
		 "{\"format\":\"numaorch-start-bindings\",\"version\":1,\"bindings\":[{\"guest\":\"gone\","
		 "\"cgroup\":\"/grp/gone\",\"mems_before\":\"0-1\",\"mems_bound\":\"1\",\"since_real_ns\":1}]}");
	use_state_dir(&f_global);
	assert_int_equal(engine_cycle(f_global.e, false, NULL), 0);
	assert_int_equal(records(&f_global, "mems_released"), 0);
	bs = saved_bindings(&f_global);
	assert_int_equal(bs.n, 0);
	bindstate_clear(&bs);
	efx_fini(&f_global);

	efx_init(&f_global, MODE_ENFORCE);
	tu_write(f_global.dir, "state/" BINDSTATE_FILE, "{\"format\": 3, garbage");
	use_state_dir(&f_global);
	p = xasprintf("%s/" BINDSTATE_FILE ".rejected", f_global.cfg.state_dir);
	assert_true(fs_exists(p));
	free(p);
	assert_int_equal(engine_cycle(f_global.e, false, NULL), 0);
	efx_fini(&f_global);
}

/* A guest left to the next cycle (first sight, use not measured) brings
 * that cycle in a second, not at the interval. */
static void test_engine_first_sight_comes_back_soon(void **state)
{
	struct efx f;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	assert_true(engine_next_cycle_s(f.e) == f.cfg.interval_s);
	fake.items[0] = item("g1", PLAN_SKIP, REASON_NONE, SKIP_NO_USAGE, "1");
	fake.nr_items = 1;
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_true(engine_next_cycle_s(f.e) <= ENGINE_TRIGGER_GAP_S);
	fake.items[0].skip = SKIP_COOLDOWN;
	assert_int_equal(engine_cycle(f.e, false, NULL), 0);
	assert_true(engine_next_cycle_s(f.e) == f.cfg.interval_s);
	efx_fini(&f);
}

/* A cycle that moved a busy guest onto CPUs of two nodes brings the next
 * ENGINE_SPREAD_CYCLES in ENGINE_SPREAD_CYCLE_S each (where its threads
 * run there is measured from two scans of it spread); onto one node, or
 * an idle guest, or a dry run, or a move not made, does not. */
static void test_engine_spread_move_comes_back_soon(void **state)
{
	static cpumask_t all_cpus;
	struct efx f;
	struct {
		const char *to;
		double use;
		bool dry, gone, soon;
	} c[] = {
		{ "0-1", 1.0, false, false, true },
		{ "1", 1.0, false, false, false },
		{ "0-1", 0.1, false, false, false },
		{ "0-1", 1.0, true, false, false },
		{ "0-1", 1.0, false, true, false },
	};

	(void)state;
	mask_zero(&all_cpus);
	for (unsigned k = 0; k < 8; k++)
		mask_set(&all_cpus, k);
	for (unsigned i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		efx_init(&f, MODE_ENFORCE);
		if (!c[i].gone) {
			tu_write(f.dir, "sys/fs/cgroup/grp/g1/cpuset.cpus", "0-3\n");
			tu_write(f.dir, "sys/fs/cgroup/grp/g1/cpuset.mems", "0\n");
			tu_write(f.dir, "sys/fs/cgroup/grp/g1/cgroup.procs", "");
		}
		fake.custom = true;
		fake.g1_on = "0";
		fake.g1_mems = "0";
		fake.g1_mem0 = 64 * MIB;
		fake.g1_use = c[i].use;
		fake.free = 6 * GIB;
		fake.items[0] = item("g1", PLAN_MOVE, REASON_PINNED, SKIP_NONE, c[i].to);
		fake.items[0].migrate_bytes = 0;
		if (strcmp(c[i].to, "0-1") == 0)
			fake.items[0].to_cpus = &all_cpus;
		fake.nr_items = 1;
		assert_int_equal(engine_cycle(f.e, c[i].dry, NULL), 0);
		assert_int_equal(records(&f, "moved"), !c[i].dry && !c[i].gone);
		if (c[i].soon)
			assert_true(engine_next_cycle_s(f.e) <= ENGINE_SPREAD_CYCLE_S);
		else
			assert_true(engine_next_cycle_s(f.e) == f.cfg.interval_s);
		fake.nr_items = 0; /* the next cycles move nothing: then the interval */
		for (unsigned k = 1; k <= ENGINE_SPREAD_CYCLES; k++) {
			assert_int_equal(engine_cycle(f.e, false, NULL), 0);
			if (c[i].soon && k < ENGINE_SPREAD_CYCLES)
				assert_true(engine_next_cycle_s(f.e) <= ENGINE_SPREAD_CYCLE_S);
			else
				assert_true(engine_next_cycle_s(f.e) == f.cfg.interval_s);
		}
		efx_fini(&f);
	}
}

/* Each cycle is one observation of the cycle-duration histogram, for the
 * whole cycle and each phase: cumulative buckets, a count and a sum that
 * agree with the last-cycle figures. */
static void test_engine_cycle_histogram(void **state)
{
	struct efx f;
	double sum = 0;

	(void)state;
	efx_init(&f, MODE_ENFORCE);
	for (unsigned c = 0; c < 3; c++) {
		assert_int_equal(engine_cycle(f.e, false, NULL), 0);
		sum += f.e->stats.last_cycle_s;
	}
	for (int p = CYCLE_TOTAL; p < CYCLE_NR_PHASES; p++) {
		const struct engine_hist *h = &f.e->stats.cycle_hist[p];

		assert_non_null(engine_cycle_phase_name((enum engine_cycle_phase)p));
		assert_int_equal(h->count, 3);
		for (unsigned b = 1; b < ENGINE_CYCLE_NR_BUCKETS; b++)
			assert_true(h->le[b] >= h->le[b - 1]);
		/* a fixture cycle takes far less than the last bound */
		assert_int_equal(h->le[ENGINE_CYCLE_NR_BUCKETS - 1], 3);
		/* the engine thread's CPU time in the same phases */
		h = &f.e->stats.cycle_cpu_hist[p];
		assert_int_equal(h->count, 3);
		assert_true(h->sum_s >= 0);
		assert_true(h->sum_s <= f.e->stats.cycle_hist[p].sum_s + 0.01);
	}
	assert_string_equal(engine_cycle_phase_name(CYCLE_RECORD), "record");
	assert_true(fabs(f.e->stats.cycle_hist[CYCLE_TOTAL].sum_s - sum) < 1e-9);
	assert_string_equal(engine_cycle_phase_name(CYCLE_DECIDE), "decide");
	assert_null(engine_cycle_phase_name(CYCLE_NR_PHASES));
	efx_fini(&f);
}


/* An engine needs every part. */
static void test_engine_needs_its_parts(void **state)
{
	struct policy_ops no_advice = fake_pol;
	struct engine_parts parts = { .sources = &fake_src, .policy = &no_advice };
	struct agent_config cfg;
	struct host_paths hp;
	struct engine *e = NULL;

	(void)state;
	no_advice.advise = NULL;
	config_default(&cfg);
	host_paths_default(&hp);
	assert_int_equal(engine_new(&cfg, &hp, &parts, &e), -EINVAL);
	assert_int_equal(engine_new(&cfg, &hp, NULL, &e), -EINVAL);
	assert_null(e);
	config_clear(&cfg);
}

/* A reload (logrotate's SIGHUP, a policy reset) stopped every running
 * migration; now only new mover settings do (engine_reload). */
static void test_reload_stops_migrations_only_for_new_mover_settings(void **state)
{
	struct agent_config a, b;

	(void)state;
	config_default(&a);
	config_default(&b);
	assert_false(engine_mover_settings_differ(&a, &b));
	b.policy.max_util = 0.85;
	b.mode = MODE_ADVISE;
	b.interval_s = a.interval_s * 2;
	assert_false(engine_mover_settings_differ(&a, &b));
	b.mover_workers = a.mover_workers + 1;
	assert_true(engine_mover_settings_differ(&a, &b));
	b.mover_workers = a.mover_workers;
	b.mover_rate_mib = a.mover_rate_mib + 100;
	assert_true(engine_mover_settings_differ(&a, &b));
	b.mover_rate_mib = a.mover_rate_mib;
	b.mover = !a.mover;
	assert_true(engine_mover_settings_differ(&a, &b));
	config_clear(&a);
	config_clear(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_skipped_move_reverts_cooldown),
		cmocka_unit_test(test_job_outcome),
		cmocka_unit_test(test_place_outcome_cooldown),
		cmocka_unit_test(test_skip_record_dedup),
		cmocka_unit_test(test_planned_flap_dedup),
		cmocka_unit_test(test_reservations),
		cmocka_unit_test(test_engine_state_round_trip),
		cmocka_unit_test(test_place_choice),
		cmocka_unit_test(test_place_starts_in_the_plan),
		cmocka_unit_test(test_engine_watch_rules),
		cmocka_unit_test(test_engine_records_a_repeated_skip_once),
		cmocka_unit_test(test_engine_records_a_repeated_advice_once),
		cmocka_unit_test(test_engine_reload_republishes_the_view),
		cmocka_unit_test(test_engine_vanished_move_starts_no_cooldown),
		cmocka_unit_test(test_engine_reservations_reach_the_policy),
		cmocka_unit_test(test_engine_places_a_started_domain),
		cmocka_unit_test(test_engine_releases_a_start_binding),
		cmocka_unit_test(test_engine_start_placement_conflict),
		cmocka_unit_test(test_engine_keeps_a_start_binding_until_the_guest_grows),
		cmocka_unit_test(test_engine_binding_while_its_write_runs),
		cmocka_unit_test(test_engine_start_binding_outlives_no_agent),
		cmocka_unit_test(test_engine_bad_or_stale_bindings_file),
		cmocka_unit_test(test_engine_first_sight_comes_back_soon),
		cmocka_unit_test(test_engine_spread_move_comes_back_soon),
		cmocka_unit_test(test_engine_needs_its_parts),
		cmocka_unit_test(test_engine_cycle_histogram),
		cmocka_unit_test(test_reload_stops_migrations_only_for_new_mover_settings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
