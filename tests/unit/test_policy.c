/* test_policy.c — the placement policy, table-driven (in the manner of
 * systemd's src/oom/test-oomd-util.c): each case declares a host (nodes:
 * CPUs, memory, free, busy; distances) and guests (CPU use, memory per
 * node, where their cpuset is, policy, last move) and the plan expected
 * per guest. Then separate tests for determinism, convergence, advice,
 * config validation, pstate and JSON.
 */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orchestrator/model/snapjson.h"
#include "orchestrator/mover/mover.h"
#include "policies/guards.h"
#include "policies/parts.h"
#include "policies/policies.h"

#define MIB (1024ULL * 1024ULL)
#define SEC 1000000000LL
#define T0 (100000 * SEC) /* snapshot mono_ns in the tables */

/* policy_decide, each planned move then carried out: its cool-down noted
 * in *NEXT as the engine's record step notes it (plan_note_cooldowns),
 * so that a simulation's next cycle decides on what the engine's would. */
static int decide_carried_out(const struct policy_config *cfg, const struct snapshot *s, const struct pstate *prev,
			      bool verbose, struct plan **plan, struct pstate **next)
{
	int r = policy_decide(cfg, s, prev, verbose, plan, next);

	if (r == 0)
		plan_note_cooldowns(*plan, *next);
	return r;
}
#define REAL0 (1800000000LL * SEC) /* and its real_ns (2027-01-15) */
#define TMAXN 16
#define TMAXG 12

struct tnode {
	int id;
	unsigned cpus;     /* consecutive CPU ids, in table order */
	unsigned mem_mib;
	unsigned free_mib;
	double busy;
	unsigned hp_total, hp_free; /* its pool of 2 MiB huge pages; 0/0: none */
};

struct tguest {
	const char *id;
	double use;               /* CPUs; NAN: first sight */
	const char *on;           /* node list its cpuset spans */
	const char *mems;         /* node list; NULL: same as on */
	unsigned mib[TMAXN];      /* memory per node, table order */
	const char *allowed_cpus; /* CPU list; NULL: unrestricted */
	const char *allowed_mems; /* node list; NULL: unrestricted */
	enum gpol_mode pol;
	const char *pin;
	int moved_s_ago;          /* 0: never moved */
	int cool_s;               /* the cool-down its last move earned (pstate_entry.cooldown_ns); 0: not kept */
	int pin_set_s_ago;        /* its policy set through the API; 0: not known */
	unsigned threads;         /* nr_threads; 0: unknown */
	unsigned busy;            /* measured busy threads; 0: not measured */
	double ran[TMAXN];        /* CPUs of use measured per node (cpu_node); all 0: none */
	bool first;               /* first_sight: use is its young process's average */
	const char *owner;        /* snap_guest.owner (its reason: "why"); NULL: none */
	bool mem_unknown;         /* memory per node not measured (mib is then ignored) */
	unsigned huge[TMAXN];     /* MiB of 2 MiB huge pages per node, a part of mib */
	int flow[TMAXN];          /* the kernel's measured flow over a 1 s window, its CPUs
				   * steady: MiB arrived (> 0) or left (< 0) per node; all 0: none */
};

#define NOITEM 99
#define MIG(m) ((long long)(m) + 1) /* 0 in a table: not checked */

struct texp {
	const char *id;
	int kind;                 /* PLAN_* or NOITEM */
	enum move_reason reason;
	enum skip_reason skip;
	const char *to;           /* to_nodes; NULL: not checked */
	const char *mems;         /* to_mems; NULL: not checked */
	const char *cpus;         /* to_cpus; NULL: not checked */
	long long mig;            /* MIG(MiB) */
	const char *detail_has;   /* substring of detail */
};

struct tcase {
	const char *name;
	unsigned nn;
	struct tnode nodes[TMAXN];
	const unsigned *dist;
	struct tguest g[TMAXG];
	struct texp e[TMAXG];
	void (*tweak)(struct policy_config *c);
	bool verbose;
	int numa_balancing;       /* kernel.numa_balancing; 0 in a table: unknown */
};

/* Two sockets of two nodes: 0-1 and 2-3. */
static const unsigned dist4[16] = {
	10, 11, 21, 21,
	11, 10, 21, 21,
	21, 21, 10, 11,
	21, 21, 11, 10,
};

/* Two sockets of four nodes: 0-3 and 4-7. */
static const unsigned dist8[64] = {
	10, 12, 12, 12, 32, 32, 32, 32,
	12, 10, 12, 12, 32, 32, 32, 32,
	12, 12, 10, 12, 32, 32, 32, 32,
	12, 12, 12, 10, 32, 32, 32, 32,
	32, 32, 32, 32, 10, 12, 12, 12,
	32, 32, 32, 32, 12, 10, 12, 12,
	32, 32, 32, 32, 12, 12, 10, 12,
	32, 32, 32, 32, 12, 12, 12, 10,
};

static void max_moves_2(struct policy_config *c) { c->max_moves = 2; }
/* What the engine tells auto (policy_mover_in): a 15 s interval, 8
 * workers, the mover measured at 40 MiB/s (600 MiB an interval: under
 * auto's floor) or 400 MiB/s (6000 MiB), or not measured yet. */
static void told(struct policy_config *c, double rate)
{
	c->in = (struct policy_mover_in){ .interval_s = 15, .workers = 8, .rate_mibs = rate };
}
/* The oversubscribed host's seven guests (max_moves cases): each on node
 * 0's CPUs with its 128 MiB on node 1, too busy to take them; and the
 * first four's moves. */
#define SEVEN_REMOTE                                                   \
	{ { .id = "a", .use = 0.1, .on = "0", .mib = { 0, 128 } },    \
	  { .id = "b", .use = 0.1, .on = "0", .mib = { 0, 128 } },    \
	  { .id = "c", .use = 0.1, .on = "0", .mib = { 0, 128 } },    \
	  { .id = "d", .use = 0.1, .on = "0", .mib = { 0, 128 } },    \
	  { .id = "e", .use = 0.1, .on = "0", .mib = { 0, 128 } },    \
	  { .id = "f", .use = 0.1, .on = "0", .mib = { 0, 128 } },    \
	  { .id = "g", .use = 0.1, .on = "0", .mib = { 0, 128 } } }
#define FOUR_MOVED                                              \
	{ .id = "a", .kind = PLAN_MOVE, .mig = MIG(128) },      \
	{ .id = "b", .kind = PLAN_MOVE, .mig = MIG(128) },      \
	{ .id = "c", .kind = PLAN_MOVE, .mig = MIG(128) },      \
	{ .id = "d", .kind = PLAN_MOVE, .mig = MIG(128) }

static void max_moves_4_told(struct policy_config *c)
{
	told(c, 40);
	c->max_moves_auto = false;
	c->max_moves = 4;
}
static void auto_40(struct policy_config *c) { told(c, 40); }
static void auto_400(struct policy_config *c) { told(c, 400); }
static void auto_unmeasured(struct policy_config *c) { told(c, 0); }
static void auto_2_workers(struct policy_config *c)
{
	told(c, 40);
	c->in.workers = 2;
}
static void fixed_cooldown_told(struct policy_config *c)
{
	told(c, 40);
	c->cooldown_auto = false;
}
static void no_migration(struct policy_config *c) { c->max_migrate_bytes = 0; }
static void margin_0(struct policy_config *c) { c->less_busy_margin = 0.0; }
static void no_start_place(struct policy_config *c) { c->start_place = false; }
static void start_bind(struct policy_config *c) { c->start_bind_mems = true; }

#define N(i, c, m, f, b) { .id = (i), .cpus = (c), .mem_mib = (m), .free_mib = (f), .busy = (b) }
#define N8(i, f, b) N(i, 8, 16384, f, b)

static const struct tcase cases[] = {
	{
		.name = "already local: settled, no item",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "vm-a", .use = 1.0, .on = "0", .mib = { 2048, 0 } } },
		.e = { { .id = "vm-a", .kind = NOITEM } },
	},
	{
		.name = "already local, verbose: settled item",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "vm-a", .use = 1.0, .on = "0", .mib = { 2048, 0 } } },
		.e = { { .id = "vm-a", .kind = PLAN_SETTLED, .to = "0", .mems = "0", .detail_has = "settled" } },
		.verbose = true,
	},
	{
		/* 6 CPUs of demand on 4-CPU nodes: needs a pair; {0,1} is
		 * within a socket, {0,2} would be a little less busy. */
		.name = "bigger than a node: closest pair",
		.nn = 4, .dist = dist4,
		.nodes = { N(0, 4, 16384, 8192, 0.4), N(1, 4, 16384, 8192, 0.4),
			   N(2, 4, 16384, 8192, 0.35), N(3, 4, 16384, 8192, 0.6) },
		.g = { { .id = "big", .use = 5.0, .on = "0-3", .mib = { 1024, 1024, 1024, 1024 } } },
		.e = { { .id = "big", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0-1",
			 .mems = "0-1", .cpus = "0-7", .mig = MIG(2048), .detail_has = "consolidate 4→2" } },
	},
	{
		.name = "bigger than the host: no fit",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "huge", .use = 20.0, .on = "0-1", .mib = { 1024, 1024 } } },
		.e = { { .id = "huge", .kind = PLAN_SKIP, .reason = REASON_LOAD, .skip = SKIP_NO_FIT,
			 .to = "", .detail_has = "no node set fits" } },
	},
	{
		/* Nothing fits with headroom, and it is local on one node that
		 * is no busier than the other: it stays. */
		.name = "all nodes full: stays local where it is",
		.nn = 2, .nodes = { N8(0, 8192, 0.95), N8(1, 8192, 0.95) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 1024, 0 } } },
		.e = { { .id = "a", .kind = PLAN_SETTLED, .to = "0", .detail_has = "fits without headroom" } },
		.verbose = true,
	},
	{
		.name = "cool-down holds a recent mover, not an old one",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0-1", .mib = { 2048, 0 }, .moved_s_ago = 100 },
		       { .id = "b", .use = 1.0, .on = "0-1", .mib = { 2048, 0 }, .moved_s_ago = 400 } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .reason = REASON_CONSOLIDATE, .skip = SKIP_COOLDOWN,
			 .to = "0", .detail_has = "cool-down" },
		       { .id = "b", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0", .mig = MIG(0) } },
	},
	{
		/* Memory all on node 1, no room to pull it to node 0; node 1
		 * would be exactly as busy (0.50) as node 0 is now. Its CPUs
		 * going to its memory is the cheap way to locality: the
		 * less-busy margin, for moves made for load, does not hold it
		 * (it did, and the guest stayed 0 % local for good). */
		.name = "less-busy rule: equal load, CPUs go to their memory",
		.nn = 2, .nodes = { N8(0, 200, 0.5), N8(1, 8192, 0.35) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 0, 4096 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY,
			 .to = "1", .mig = MIG(0), .detail_has = "CPUs to its memory" } },
	},
	{
		/* The same with its memory's node busier than its own would
		 * be after (0.575 > 0.50): the less-busy rule holds it. */
		.name = "less-busy rule: a busier memory node blocks the relocation",
		.nn = 2, .nodes = { N8(0, 200, 0.5), N8(1, 8192, 0.45) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 0, 4096 } } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .reason = REASON_LOCALITY, .skip = SKIP_NOT_LESS_BUSY,
			 .to = "1", .mig = MIG(0), .detail_has = "not less busy" } },
	},
	{
		/* 0.40 × 1.12 = 0.448 < 0.50 */
		.name = "less-busy rule: allowed beyond the margin",
		.nn = 2, .nodes = { N8(0, 200, 0.5), N8(1, 8192, 0.25) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 0, 4096 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "1", .mems = "1",
			 .cpus = "8-15", .mig = MIG(0) } },
	},
	{
		/* 0.45 × 1.12 = 0.504 ≥ 0.50: inside the margin, but its
		 * memory is there, so its CPUs go (they did not). */
		.name = "less-busy rule: inside the margin, CPUs go to their memory",
		.nn = 2, .nodes = { N8(0, 200, 0.5), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 0, 4096 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .to = "1", .mig = MIG(0) } },
	},
	{
		.name = "less-busy rule: the same case with margin 0 passes",
		.nn = 2, .nodes = { N8(0, 200, 0.5), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 0, 4096 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "1" } },
		.tweak = margin_0,
	},
	{
		/* Node 0 is idle but has 1244 MiB of room for 3379 needed. */
		.name = "memory-tight node: CPU room, no memory room: another node",
		.nn = 3, .nodes = { N8(0, 1500, 0.1), N8(1, 8192, 0.3), N8(2, 8192, 0.5) },
		.g = { { .id = "a", .use = 1.0, .on = "0-2", .mib = { 1024, 1024, 1024 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "1", .mems = "1",
			 .mig = MIG(2048) } },
	},
	{
		/* Its memory sits on a memory-only node (2): any CPU set must
		 * take it in, and none has room. */
		.name = "memory-tight everywhere: skip, never planned onto it",
		.nn = 3, .nodes = { N8(0, 200, 0.1), N8(1, 300, 0.95), N(2, 0, 8192, 2048, NAN) },
		.g = { { .id = "a", .use = 1.0, .on = "1", .mib = { 0, 0, 4096 } } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .skip = SKIP_NO_FIT, .to = "", .mems = "" } },
	},
	{
		/* All its memory is on its node, which is too full for the 10%
		 * growth headroom: staying moves no memory, so it fits; it is
		 * not migrated away for headroom's sake (testbed memtight). */
		.name = "memory already local on a full node: stays",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 300, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "1", .mib = { 0, 4096 } } },
		.e = { { .id = "a", .kind = NOITEM } },
	},
	{
		/* Node 4 is the least busy; its socket neighbours beat node 2
		 * of the other socket although node 2 is less busy than them. */
		.name = "8 nodes, 2 sockets: a pair within one socket",
		.nn = 8, .dist = dist8,
		.nodes = { N(0, 4, 8192, 4096, 0.35), N(1, 4, 8192, 4096, 0.35), N(2, 4, 8192, 4096, 0.25),
			   N(3, 4, 8192, 4096, 0.35), N(4, 4, 8192, 4096, 0.2), N(5, 4, 8192, 4096, 0.35),
			   N(6, 4, 8192, 4096, 0.35), N(7, 4, 8192, 4096, 0.35) },
		.g = { { .id = "wide", .use = 5.0, .on = "0-7",
			 .mib = { 512, 512, 512, 512, 512, 512, 512, 512 } } },
		.e = { { .id = "wide", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "4-5",
			 .mems = "4-5", .cpus = "16-23", .mig = MIG(3072) } },
	},
	{
		/* Node 0 has room for two 2 GiB guests (with headroom). Once
		 * g1 and g3 moved there, g2 and g4 find no room on it, and
		 * their nodes are no longer busy: they stay. */
		.name = "many guests, one good node: only as many as fit",
		.nn = 3, .nodes = { N8(0, 4862, 0.0), N8(1, 8192, 0.95), N8(2, 8192, 0.95) },
		.g = { { .id = "g1", .use = 1.0, .on = "1", .mib = { 0, 2048, 0 } },
		       { .id = "g2", .use = 1.0, .on = "1", .mib = { 0, 2048, 0 } },
		       { .id = "g3", .use = 1.0, .on = "2", .mib = { 0, 0, 2048 } },
		       { .id = "g4", .use = 1.0, .on = "2", .mib = { 0, 0, 2048 } } },
		.e = { { .id = "g1", .kind = PLAN_MOVE, .reason = REASON_LOAD, .to = "0", .mig = MIG(2048) },
		       { .id = "g2", .kind = NOITEM },
		       { .id = "g3", .kind = PLAN_MOVE, .reason = REASON_LOAD, .to = "0", .mig = MIG(2048) },
		       { .id = "g4", .kind = NOITEM } },
	},
	{
		/* Moves of CPUs alone (the memory is where they go) are one
		 * cpuset write each: max_moves does not hold them back. */
		.name = "max_moves does not cap moves that migrate nothing",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 0.2, .on = "0-1", .mib = { 512, 0 } },
		       { .id = "b", .use = 0.2, .on = "0-1", .mib = { 512, 0 } },
		       { .id = "c", .use = 0.2, .on = "0-1", .mib = { 512, 0 } },
		       { .id = "d", .use = 0.2, .on = "0-1", .mib = { 512, 0 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .to = "0", .mig = MIG(0) },
		       { .id = "b", .kind = PLAN_MOVE, .to = "0", .mig = MIG(0) },
		       { .id = "c", .kind = PLAN_MOVE, .to = "0", .mig = MIG(0) },
		       { .id = "d", .kind = PLAN_MOVE, .to = "0", .mig = MIG(0) } },
		.tweak = max_moves_2,
	},
	{
		/* Each of these must pull its memory (its node 1 is too busy to
		 * take its CPUs): max_moves caps those, two this cycle. */
		.name = "max_moves caps the moves that migrate",
		.nn = 2, .nodes = { N8(0, 8192, 0.1), N8(1, 8192, 0.95) },
		.g = { { .id = "a", .use = 0.2, .on = "0", .mib = { 0, 512 } },
		       { .id = "b", .use = 0.2, .on = "0", .mib = { 0, 512 } },
		       { .id = "c", .use = 0.2, .on = "0", .mib = { 0, 512 } },
		       { .id = "d", .use = 0.2, .on = "0", .mib = { 0, 512 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .to = "0", .mig = MIG(512) },
		       { .id = "b", .kind = PLAN_MOVE, .to = "0", .mig = MIG(512) },
		       { .id = "c", .kind = PLAN_SKIP, .skip = SKIP_MAX_MOVES, .detail_has = "migrating moves" },
		       { .id = "d", .kind = PLAN_SKIP, .skip = SKIP_MAX_MOVES } },
		.tweak = max_moves_2,
	},
	{
		/* An oversubscribed host: seven guests whose node 1 is too busy
		 * to take their CPUs, each must pull its memory. A fixed
		 * max_moves of 4 leaves three for the next cycle (and its
		 * cool-down)... */
		.name = "max_moves = 4: seven migrating moves take two cycles",
		.nn = 2, .nodes = { N8(0, 8192, 0.05), N8(1, 8192, 0.95) },
		.g = SEVEN_REMOTE,
		.e = { FOUR_MOVED,
		       { .id = "e", .kind = PLAN_SKIP, .skip = SKIP_MAX_MOVES, .detail_has = "4 (max_moves)" },
		       { .id = "f", .kind = PLAN_SKIP, .skip = SKIP_MAX_MOVES },
		       { .id = "g", .kind = PLAN_SKIP, .skip = SKIP_MAX_MOVES } },
		.tweak = max_moves_4_told,
	},
	{
		/* ... auto starts as many as the mover has workers (8): all
		 * seven this cycle, none queued behind another. */
		.name = "auto max_moves: seven migrating moves at once with 8 workers",
		.nn = 2, .nodes = { N8(0, 8192, 0.05), N8(1, 8192, 0.95) },
		.g = SEVEN_REMOTE,
		.e = { FOUR_MOVED,
		       { .id = "e", .kind = PLAN_MOVE, .mig = MIG(128) },
		       { .id = "f", .kind = PLAN_MOVE, .mig = MIG(128) },
		       { .id = "g", .kind = PLAN_MOVE, .mig = MIG(128) } },
		.tweak = auto_40,
	},
	{
		/* auto with 2 workers: two, and the skip says where the 2
		 * came from. */
		.name = "auto max_moves is the workers, and says so",
		.nn = 2, .nodes = { N8(0, 8192, 0.05), N8(1, 8192, 0.95) },
		.g = { { .id = "a", .use = 0.1, .on = "0", .mib = { 0, 128 } },
		       { .id = "b", .use = 0.1, .on = "0", .mib = { 0, 128 } },
		       { .id = "c", .use = 0.1, .on = "0", .mib = { 0, 128 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .mig = MIG(128) },
		       { .id = "b", .kind = PLAN_MOVE, .mig = MIG(128) },
		       { .id = "c", .kind = PLAN_SKIP, .skip = SKIP_MAX_MOVES, .detail_has = "2 = [memory] workers" } },
		.tweak = auto_2_workers,
	},
	{
		/* auto bytes: what the mover moves in an interval, 400 MiB/s x
		 * 15 s = 6000 MiB: a (4 GiB) goes, b (4 GiB) would pass it,
		 * c (1 GiB) still fits. */
		.name = "auto max_migrate: the measured rate times the interval",
		.nn = 2, .nodes = { N(0, 8, 32768, 24000, 0.3), N(1, 8, 32768, 16384, 0.95) },
		.g = { { .id = "a", .use = 0.5, .on = "0", .mib = { 0, 4096 } },
		       { .id = "b", .use = 0.4, .on = "0", .mib = { 0, 4096 } },
		       { .id = "c", .use = 0.3, .on = "0", .mib = { 0, 1024 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .mig = MIG(4096) },
		       { .id = "b", .kind = PLAN_SKIP, .skip = SKIP_MAX_MIGRATE,
			 .detail_has = "of this cycle's 6000 MiB = 400 MiB/s measured x 15 s" },
		       { .id = "c", .kind = PLAN_MOVE, .mig = MIG(1024) } },
		.tweak = auto_400,
	},
	{
		/* Not measured yet (no job has ended): auto's floor, 4 GiB. */
		.name = "auto max_migrate before the mover measured itself: the floor",
		.nn = 2, .nodes = { N(0, 8, 32768, 24000, 0.3), N(1, 8, 32768, 16384, 0.95) },
		.g = { { .id = "a", .use = 0.5, .on = "0", .mib = { 0, 3072 } },
		       { .id = "b", .use = 0.4, .on = "0", .mib = { 0, 2048 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .mig = MIG(3072) },
		       { .id = "b", .kind = PLAN_SKIP, .skip = SKIP_MAX_MIGRATE,
			 .detail_has = "4096 MiB, auto's floor: the mover has not measured its rate yet" } },
		.tweak = auto_unmeasured,
	},
	{
		/* A guest bigger than the whole auto budget still goes, alone. */
		.name = "auto max_migrate: a guest bigger than the budget goes alone",
		.nn = 2, .nodes = { N(0, 8, 32768, 24000, 0.3), N(1, 8, 32768, 16384, 0.95) },
		.g = { { .id = "a", .use = 0.5, .on = "0", .mib = { 0, 5120 } },
		       { .id = "b", .use = 0.4, .on = "0", .mib = { 0, 128 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .mig = MIG(5120) },
		       { .id = "b", .kind = PLAN_SKIP, .skip = SKIP_MAX_MIGRATE, .detail_has = "auto's floor (40 MiB/s" } },
		.tweak = auto_40,
	},
	{
		/* auto cool-downs: a moved 45 s ago at a cost that earned it
		 * 256 s stays; b, moved as long ago for free (30 s), may move
		 * again; c's state was saved before the length was kept: the
		 * number (300 s) holds it. */
		.name = "auto cool-down: as long as the last move earned",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0-1", .mib = { 2048, 0 }, .moved_s_ago = 45, .cool_s = 256 },
		       { .id = "b", .use = 1.0, .on = "0-1", .mib = { 2048, 0 }, .moved_s_ago = 45, .cool_s = 30 },
		       { .id = "c", .use = 1.0, .on = "0-1", .mib = { 2048, 0 }, .moved_s_ago = 45 } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .skip = SKIP_COOLDOWN,
			 .detail_has = "(< 256s, auto: sized by its last move's cost)" },
		       { .id = "b", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0", .mig = MIG(0) },
		       { .id = "c", .kind = PLAN_SKIP, .skip = SKIP_COOLDOWN, .detail_has = "(< 300s, auto's most)" } },
		.tweak = auto_40,
	},
	{
		/* A number holds for every guest, whatever its move earned. */
		.name = "fixed cool-down: the number, not what the move earned",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "b", .use = 1.0, .on = "0-1", .mib = { 2048, 0 }, .moved_s_ago = 45, .cool_s = 30 } },
		.e = { { .id = "b", .kind = PLAN_SKIP, .skip = SKIP_COOLDOWN, .detail_has = "(< 300s)" } },
		.tweak = fixed_cooldown_told,
	},
	{
		/* 4 GiB per cycle: a (3 GiB) first, b (2 GiB) would pass the
		 * budget, c (512 MiB) still fits it. */
		.name = "max_migrate caps the cycle, a smaller move still fits",
		.nn = 2, .nodes = { N8(0, 12000, 0.3), N8(1, 8192, 0.6) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 0, 3072 } },
		       { .id = "b", .use = 1.0, .on = "0", .mib = { 0, 2048 } },
		       { .id = "c", .use = 1.0, .on = "0", .mib = { 0, 512 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "0", .mems = "0",
			 .mig = MIG(3072) },
		       { .id = "b", .kind = PLAN_SKIP, .reason = REASON_LOCALITY, .skip = SKIP_MAX_MIGRATE,
			 .mig = MIG(2048), .detail_has = "exceeds" },
		       { .id = "c", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "0", .mig = MIG(512) } },
	},
	{
		/* 6 GiB remote is more than the 4 GiB budget: it may go alone,
		 * as the cycle's first migrating move; b must wait. */
		.name = "a guest bigger than the migration budget moves alone",
		.nn = 2, .nodes = { N8(0, 12000, 0.3), N8(1, 8192, 0.6) },
		.g = { { .id = "a", .use = 2.0, .on = "0", .mib = { 0, 6144 } },
		       { .id = "b", .use = 1.0, .on = "0", .mib = { 0, 512 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "0", .mig = MIG(6144) },
		       { .id = "b", .kind = PLAN_SKIP, .skip = SKIP_MAX_MIGRATE, .detail_has = "0 MiB left" } },
	},
	{
		/* max_migrate_mib = 0 forbids migration: the locality pull
		 * waits, the consolidation onto its memory (no migration) goes. */
		.name = "a migration budget of 0 forbids migrating, not moving",
		.nn = 2, .nodes = { N8(0, 12000, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 0, 512 } },
		       { .id = "b", .use = 1.0, .on = "0-1", .mib = { 0, 512 } } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .skip = SKIP_MAX_MIGRATE },
		       { .id = "b", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "1", .mig = MIG(0) } },
		.tweak = no_migration,
	},
	{
		/* Spread over all nodes, memory on node 0: shrink to node 0
		 * with no migration. b would fit node 0 alone but not after
		 * a: it shrinks to node 1 and migrates. */
		.name = "misplaced spread guests shrink to where memory is",
		.nn = 4, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.2), N8(2, 8192, 0.2), N8(3, 8192, 0.2) },
		.g = { { .id = "a", .use = 2.0, .on = "0-3", .mib = { 2048, 0, 0, 0 } },
		       { .id = "b", .use = 4.0, .on = "0-3", .mib = { 2048, 0, 0, 0 } } },
		/* Both are a quarter local where their threads run (spread
		 * evenly); b, with twice the CPU use, gains more by going first
		 * and stays with the memory. */
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "1", .mems = "1",
			 .mig = MIG(2048) },
		       { .id = "b", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0", .mems = "0",
			 .cpus = "0-7", .mig = MIG(0) } },
	},
	{
		.name = "locality pull: same nodes, memory brought local",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.5) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mems = "0-1", .mib = { 1024, 3072 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "0", .mems = "0",
			 .cpus = "0-7", .mig = MIG(3072), .detail_has = "pull memory" } },
	},
	{
		/* The same over two nodes (its 12 CPUs of use fit no one
		 * node): memory inside them is not memory on each thread's
		 * node, so the record promises no 1.00. */
		.name = "locality pull onto two nodes: no locality promised",
		.nn = 4, .nodes = { N8(0, 8192, 0.1), N8(1, 8192, 0.1), N8(2, 8192, 0.1), N8(3, 8192, 0.1) },
		.g = { { .id = "a", .use = 12.0, .on = "0-1", .mems = "0-3", .mib = { 0, 0, 2048, 2048 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "0-1", .mems = "0-1",
			 .mig = MIG(4096), .detail_has = "locality 0.00→at most 1.00 (over 2 nodes" } },
	},
	{
		.name = "pinned: moves to its nodes, usage not needed; settled when there",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "p", .use = 1.0, .on = "0", .mib = { 1024, 0 }, .pol = GPOL_PINNED, .pin = "1" },
		       { .id = "q", .use = NAN, .on = "0", .mib = { 512, 0 }, .pol = GPOL_PINNED, .pin = "1" },
		       { .id = "r", .use = 1.0, .on = "0", .mib = { 1024, 0 }, .pol = GPOL_PINNED, .pin = "0" } },
		.e = { { .id = "p", .kind = PLAN_MOVE, .reason = REASON_PINNED, .to = "1", .mems = "1",
			 .cpus = "8-15", .mig = MIG(1024) },
		       { .id = "q", .kind = PLAN_MOVE, .reason = REASON_PINNED, .to = "1", .mig = MIG(512) },
		       { .id = "r", .kind = NOITEM } },
	},
	{
		.name = "pinned without room: skip",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 300, 0.3) },
		.g = { { .id = "p", .use = 1.0, .on = "0", .mib = { 1024, 0 }, .pol = GPOL_PINNED, .pin = "1" } },
		.e = { { .id = "p", .kind = PLAN_SKIP, .reason = REASON_PINNED, .skip = SKIP_NO_ROOM_PINNED,
			 .to = "1", .detail_has = "room" } },
	},
	{
		/* p runs partly on its pinned node: cool-down holds; q is
		 * entirely outside: the pin is obeyed at once. */
		.name = "pinned and cool-down",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "p", .use = 1.0, .on = "0-1", .mib = { 1024, 0 }, .pol = GPOL_PINNED, .pin = "1",
			 .moved_s_ago = 100 },
		       { .id = "q", .use = 1.0, .on = "0", .mib = { 1024, 0 }, .pol = GPOL_PINNED, .pin = "1",
			 .moved_s_ago = 100 } },
		.e = { { .id = "p", .kind = PLAN_SKIP, .reason = REASON_PINNED, .skip = SKIP_COOLDOWN, .to = "1" },
		       { .id = "q", .kind = PLAN_MOVE, .reason = REASON_PINNED, .to = "1" } },
	},
	{
		/* The operator widens a pin from the node the agent moved it
		 * to 100 s ago: r's pin was set since (50 s ago), an order the
		 * cool-down does not hold; s's before its move (150 s ago):
		 * held as p above. */
		.name = "pinned since the last move: not held",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "r", .use = 1.0, .on = "0", .mib = { 1024, 0 }, .pol = GPOL_PINNED, .pin = "0-1",
			 .moved_s_ago = 100, .pin_set_s_ago = 50 },
		       { .id = "s", .use = 1.0, .on = "0", .mib = { 1024, 0 }, .pol = GPOL_PINNED, .pin = "0-1",
			 .moved_s_ago = 100, .pin_set_s_ago = 150 } },
		.e = { { .id = "r", .kind = PLAN_MOVE, .reason = REASON_PINNED, .to = "0-1" },
		       { .id = "s", .kind = PLAN_SKIP, .reason = REASON_PINNED, .skip = SKIP_COOLDOWN, .to = "0-1" } },
	},
	{
		.name = "ignore: skip item, never moved",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "i", .use = 1.0, .on = "0-1", .mib = { 0, 2048 }, .pol = GPOL_IGNORE } },
		.e = { { .id = "i", .kind = PLAN_SKIP, .skip = SKIP_IGNORED, .to = "" } },
	},
	{
		/* the kubelet's exclusive CPUs and NUMA assignments */
		.name = "another placer's guest: skip item with its reason, never moved, even pinned elsewhere",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "k", .use = 1.0, .on = "0-1", .mib = { 0, 2048 }, .owner = "kubelet" },
		       { .id = "p", .use = 1.0, .on = "0", .mib = { 1024, 0 }, .pol = GPOL_PINNED, .pin = "1",
			 .owner = "kubelet" } },
		.e = { { .id = "k", .kind = PLAN_SKIP, .skip = SKIP_OWNED, .to = "",
			 .detail_has = "placed by the kubelet, never moved: why" },
		       { .id = "p", .kind = PLAN_SKIP, .skip = SKIP_OWNED, .to = "" } },
	},
	{
		.name = "one CPU node: nothing, not even for a misplaced guest",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N(1, 0, 16384, 16384, NAN) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mems = "0-1", .mib = { 0, 2048 } } },
		.e = { { .id = "a", .kind = NOITEM } },
	},
	{
		.name = "one CPU node, verbose: one_node items",
		.nn = 1, .nodes = { N8(0, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 2048 } },
		       { .id = "b", .use = NAN, .on = "0", .mib = { 2048 } } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .skip = SKIP_ONE_NODE },
		       { .id = "b", .kind = PLAN_SKIP, .skip = SKIP_ONE_NODE } },
		.verbose = true,
	},
	{
		/* Memory not measured (a cgroup in the cpuset hierarchy only):
		 * its zeros read as "no memory, all local" would have let it be
		 * consolidated from two nodes to one, its memory unsized; it is
		 * left where it is, pinned elsewhere or not. */
		.name = "memory not measured: left where it is",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0-1", .mem_unknown = true },
		       { .id = "p", .use = 1.0, .on = "0", .pol = GPOL_PINNED, .pin = "1", .mem_unknown = true },
		       { .id = "b", .use = 1.0, .on = "0-1", .mib = { 0, 0 } } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .skip = SKIP_MEM_UNKNOWN, .detail_has = "not measured" },
		       { .id = "p", .kind = PLAN_SKIP, .skip = SKIP_MEM_UNKNOWN },
		       { .id = "b", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE } },
	},
	{
		.name = "first sight: no usage yet",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "new", .use = NAN, .on = "0-1", .mib = { 1024, 1024 } } },
		.e = { { .id = "new", .kind = PLAN_SKIP, .skip = SKIP_NO_USAGE } },
	},
	{
		/* The testbed's churn: a container appears on the 4 x 2-CPU host
		 * with nothing touched yet; node 0 runs one busy guest (whose
		 * memory is where the new one's first touches would go), node 1
		 * another. Placed at once, taken as one CPU, on an idle node, so
		 * the kernel's local first touch puts its memory there: no
		 * migration, no cool-down (check_invariants). */
		.name = "start placement: a new container with nothing touched goes to an idle node at once",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.5), N(1, 2, 1024, 600, 0.5),
				    N(2, 2, 1024, 600, 0.0), N(3, 2, 1024, 900, 0.0) },
		.g = { { .id = "new", .use = NAN, .on = "0-3", .mib = { 1, 0, 0, 0 } } },
		.e = { { .id = "new", .kind = PLAN_MOVE, .reason = REASON_PLACE, .to = "2", .mems = "2",
			 .cpus = "4-5", .detail_has = "start: 1 MiB touched, CPU use not measured yet (taken as 1 CPU), "
						 "its first touches left to the kernel's local placement" } },
	},
	{
		/* start_bind_mems = yes: the same placement, its mems bound
		 * too (bind_start, check_invariants), and the record says so. */
		.name = "start placement, start_bind_mems = yes: placed the same, its mems bound",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.5), N(1, 2, 1024, 600, 0.5),
				    N(2, 2, 1024, 600, 0.0), N(3, 2, 1024, 900, 0.0) },
		.g = { { .id = "new", .use = NAN, .on = "0-3", .mib = { 1, 0, 0, 0 } } },
		.e = { { .id = "new", .kind = PLAN_MOVE, .reason = REASON_PLACE, .to = "2", .mems = "2",
			 .cpus = "4-5", .mig = MIG(1),
			 .detail_has = "mems bound to the target until its memory stops growing" } },
		.tweak = start_bind,
	},
	{
		/* Only the idle nodes are candidates: taken as one CPU with
		 * headroom (1.2), it does not fit beside a busy thread on a
		 * 2-CPU node (1 + 1.2 > 0.9 x 2). */
		.name = "start placement: not beside a busy thread on a small node",
		.nn = 2, .nodes = { N(0, 2, 1024, 900, 0.5), N(1, 2, 1024, 600, 0.0) },
		.g = { { .id = "new", .use = NAN, .on = "0-1", .mib = { 0, 0 } } },
		.e = { { .id = "new", .kind = PLAN_MOVE, .reason = REASON_PLACE, .to = "1", .mems = "1",
			 .mig = MIG(0) } },
	},
	{
		/* 128 MiB or more touched: placing it now would migrate much, and
		 * its use decides where (as before start placement). */
		.name = "start placement: too late once it holds memory",
		.nn = 2, .nodes = { N(0, 2, 1024, 900, 0.5), N(1, 2, 1024, 600, 0.0) },
		.g = { { .id = "new", .use = NAN, .on = "0-1", .mib = { 128, 0 } } },
		.e = { { .id = "new", .kind = PLAN_SKIP, .skip = SKIP_NO_USAGE } },
	},
	{
		/* First seen a second late (a prompted cycle waits for the gap),
		 * 64 MiB touched on the busy node: still placed on the idle one;
		 * what it touched moves with it, and the record says so. */
		.name = "start placement: a little memory touched moves with it",
		.nn = 2, .nodes = { N(0, 2, 1024, 900, 0.5), N(1, 2, 1024, 600, 0.0) },
		.g = { { .id = "new", .use = NAN, .on = "0-1", .mib = { 64, 0 } } },
		.e = { { .id = "new", .kind = PLAN_MOVE, .reason = REASON_PLACE, .to = "1", .mems = "1",
			 .mig = MIG(64), .detail_has = "start: 64 MiB touched" } },
	},
	{
		/* The testbed's churn pod first decided a second after its
		 * start, so its use comes from its process's average since then
		 * (a young-process rate, not NaN), with 84 MiB touched on node 0
		 * where another guest runs. Moved as an old guest (mems not
		 * bound), its later touches would keep landing on node 0 and all
		 * of them be migrated after it. First sight is first sight:
		 * placed and bound like a guest with no use yet. */
		.name = "start placement: first seen a second late, its young process's average use known",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.5), N(1, 2, 1024, 600, 0.5),
				    N(2, 2, 1024, 600, 0.5), N(3, 2, 1024, 900, 0.0) },
		.g = { { .id = "new", .use = 1.0, .first = true, .on = "0-3", .mib = { 84, 0, 0, 0 } } },
		.e = { { .id = "new", .kind = PLAN_MOVE, .reason = REASON_PLACE, .to = "3", .mems = "3",
			 .mig = MIG(84), .detail_has = "start: 84 MiB touched" } },
	},
	{
		/* The same guest seen before (a window's rate): an old guest,
		 * decided on its use and memory (a local fit on node 0, where
		 * its memory is and a CPU is free), not start-placed. */
		.name = "start placement: not for a guest seen before",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.5), N(1, 2, 1024, 600, 0.5),
				    N(2, 2, 1024, 600, 0.5), N(3, 2, 1024, 900, 0.0) },
		.g = { { .id = "new", .use = 1.0, .on = "0-3", .mib = { 84, 0, 0, 0 } } },
		.e = { { .id = "new", .kind = PLAN_MOVE, .to = "0" } },
	},
	{
		.name = "start placement off: decided next cycle",
		.nn = 2, .nodes = { N(0, 2, 1024, 900, 0.5), N(1, 2, 1024, 600, 0.0) },
		.g = { { .id = "new", .use = NAN, .on = "0-1", .mib = { 0, 0 } } },
		.e = { { .id = "new", .kind = PLAN_SKIP, .skip = SKIP_NO_USAGE } },
		.tweak = no_start_place,
	},
	{
		/* Already on one node that fits it: nothing to place. */
		.name = "start placement: already on one node, nothing to do",
		.nn = 2, .nodes = { N(0, 2, 1024, 900, 0.0), N(1, 2, 1024, 600, 0.0) },
		.g = { { .id = "new", .use = NAN, .on = "0", .mib = { 0, 0 } } },
		.e = { { .id = "new", .kind = PLAN_SKIP, .skip = SKIP_NO_USAGE } },
	},
	{
		/* Node 2 has memory only: never a CPU target, and memory there
		 * is remote (a: locality 0.5; b: all of it remote). */
		.name = "memory-only node: never a CPU target, its memory is remote",
		.nn = 3, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3), N(2, 0, 32768, 32768, NAN) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mems = "0,2", .mib = { 1024, 0, 1024 } },
		       { .id = "b", .use = 1.0, .on = "0-1", .mems = "2", .mib = { 0, 0, 2048 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "0", .mems = "0",
			 .mig = MIG(1024) },
		       { .id = "b", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0", .mems = "0",
			 .mig = MIG(2048) } },
	},
	{
		/* The parent allows nodes 1-2 only (a), or half of node 1 (b):
		 * node 0, where their memory is, is out of bounds. */
		.name = "allowed_cpus/allowed_mems bound the target",
		.nn = 3, .nodes = { N8(0, 8192, 0.2), N8(1, 8192, 0.2), N8(2, 8192, 0.2) },
		.g = { { .id = "a", .use = 1.0, .on = "0-2", .mib = { 2048, 0, 0 },
			 .allowed_cpus = "8-23", .allowed_mems = "1-2" },
		       { .id = "b", .use = 1.0, .on = "0-2", .mib = { 2048, 0, 0 },
			 .allowed_cpus = "8-11", .allowed_mems = "1" } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "1", .mems = "1",
			 .cpus = "8-15", .mig = MIG(2048) },
		       { .id = "b", .kind = PLAN_MOVE, .to = "1", .mems = "1", .cpus = "8-11",
			 .mig = MIG(2048) } },
	},
	{
		.name = "allowed_cpus on no online CPU: outside allowed",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0-1", .mib = { 1024, 0 }, .allowed_cpus = "100-101" } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .skip = SKIP_OUTSIDE_ALLOWED } },
	},
	{
		.name = "busy node: load relocation to a less busy node",
		.nn = 2, .nodes = { N8(0, 8192, 0.85), N8(1, 8192, 0.2) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 1024, 0 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOAD, .to = "1", .mems = "1",
			 .mig = MIG(1024), .detail_has = "relieve load" } },
	},
	{
		.name = "busy but no node less busy by the margin: settled",
		.nn = 2, .nodes = { N8(0, 8192, 0.82), N8(1, 8192, 0.7) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mib = { 1024, 0 } } },
		.e = { { .id = "a", .kind = NOITEM } },
	},
	{
		/* Shrinking onto node 0 (where its memory is) leaves node 0 at
		 * 0.875, over rebalance_util, node 2 at 0.60 × 1.12 below that.
		 * Node 0 holds all its memory, so leaving it for load must pay
		 * for the migration (score 0.875 against node 2's 0.60 + 0.5):
		 * it would not be moved off again, and it goes there, nothing
		 * to migrate (without holds_memory it would go to node 2 with
		 * its 2 GiB). */
		.name = "stability: no shrink onto a node it would be moved off again",
		.nn = 3, .nodes = { N8(0, 8192, 0.7), N8(1, 8192, 0.7), N8(2, 8192, 0.3) },
		.g = { { .id = "a", .use = 2.0, .on = "0-1", .mib = { 2048, 0, 0 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0",
			 .mig = MIG(0) } },
	},
	{
		/* Its memory on no node alone: a shrink onto node 0 or 1 would
		 * leave it hot (0.875) with half its memory to migrate, node 2
		 * at 0.70 after is not less busy than 0.70 now: stay spread. */
		.name = "stability: hot shrink and blocked relocation: stay",
		.nn = 3, .nodes = { N8(0, 8192, 0.7), N8(1, 8192, 0.7), N8(2, 8192, 0.4) },
		.g = { { .id = "a", .use = 2.0, .on = "0-1", .mib = { 1024, 1024, 0 } } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .reason = REASON_CONSOLIDATE, .skip = SKIP_NOT_LESS_BUSY,
			 .detail_has = "to be left for nodes 2" } },
	},
	{
		.name = "busy not measured: taken as idle, said in detail",
		.nn = 2, .nodes = { N8(0, 8192, NAN), N8(1, 8192, 0.3) },
		.g = { { .id = "a", .use = 1.0, .on = "0-1", .mib = { 1024, 0 } } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0", .mig = MIG(0),
			 .detail_has = "not measured" } },
	},
	/* ---- decide on locality where the threads run ---- */
	{
		/* The testbed (4 nodes x 2 CPUs, every node full): a one-thread
		 * guest on a two-node cpuset, its 320 MiB on node 0, its thread
		 * on node 1 — 100 % inside its cpuset, 0 % local. Nothing fits
		 * with headroom; one node holds its one thread: node 1, the
		 * least loaded of those (node 0 has two other busy threads),
		 * its memory following it. */
		.name = "crowded one-thread guest on two nodes: one node, memory follows",
		.nn = 4, .nodes = { N(0, 2, 1024, 60, 1.0), N(1, 2, 1024, 640, 1.0),
				    N(2, 2, 1024, 360, 1.0), N(3, 2, 1024, 360, 1.0) },
		.g = { { .id = "one", .use = 1.0, .on = "0-1", .mib = { 320, 0, 0, 0 }, .threads = 1, .busy = 1,
			 .ran = { 0, 1.0, 0, 0 } } },
		.e = { { .id = "one", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "1", .mems = "1",
			 .mig = MIG(320), .detail_has = "nothing fits with headroom" } },
	},
	{
		/* No single node fits it with headroom, a pair would: one busy
		 * thread never gets two nodes (it would run on one of them, and
		 * its memory be local there only). It stays local on its node. */
		.name = "never more nodes than its busy threads fill",
		.nn = 4, .nodes = { N(0, 2, 1024, 500, 1.0), N(1, 2, 1024, 500, 0.6),
				    N(2, 2, 1024, 500, 0.6), N(3, 2, 1024, 500, 0.6) },
		.g = { { .id = "one", .use = 1.0, .on = "0", .mib = { 320, 0, 0, 0 }, .threads = 1 } },
		.e = { { .id = "one", .kind = PLAN_SETTLED, .to = "0", .detail_has = "fits without headroom" } },
		.verbose = true,
	},
	{
		/* The testbed: a three-thread guest over nodes 0-2, two threads
		 * on node 0 and one on node 1, its 699 MiB on node 2 — 100 %
		 * inside its cpuset, 0 % local. Three busy threads fill two
		 * 2-CPU nodes: never three. No pair fits with headroom, so the
		 * least-loaded pairs within its set that hold them; of those the
		 * one keeping its memory. */
		.name = "three-thread guest larger than a node: two nodes, not three",
		.nn = 4, .nodes = { N(0, 2, 1024, 200, 1.0), N(1, 2, 1024, 900, 1.0),
				    N(2, 2, 1024, 200, 0.5), N(3, 2, 1024, 900, 1.0) },
		.g = { { .id = "three", .use = 3.0, .on = "0-2", .mib = { 0, 0, 699, 0 }, .threads = 3, .busy = 3,
			 .ran = { 2.0, 1.0, 0, 0 } } },
		.e = { { .id = "three", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0,2",
			 .mig = MIG(0) } },
	},
	{
		/* The "already local, leave it" guard uses where the threads
		 * run: two busy threads on two 1-CPU nodes (they need both), all
		 * memory on node 0, inside its cpuset — 1.0 in its cpuset, 0.5
		 * where its threads run. Not settled: flagged for locality. No
		 * cpuset write places its memory by thread, and the kernel's
		 * NUMA balancing is off: a skip that says so. */
		.name = "in its cpuset is not local: the guard looks at the threads",
		.nn = 3, .nodes = { N(0, 1, 4096, 2048, 1.0), N(1, 1, 4096, 2048, 1.0), N(2, 1, 4096, 2048, 0.0) },
		.g = { { .id = "a", .use = 2.0, .on = "0-1", .mib = { 1024, 0, 0 }, .threads = 2, .busy = 2,
			 .ran = { 1.0, 1.0, 0 } } },
		.e = { { .id = "a", .kind = PLAN_SKIP, .reason = REASON_LOCALITY, .skip = SKIP_IN_SET,
			 .detail_has = "balancing is unknown" } },
		.verbose = true,
	},
	{
		/* The same with the kernel's NUMA balancing on: memory inside
		 * the set is its job (it moves pages to the threads touching
		 * them); settled, and said so. */
		.name = "spread as it must be, kernel balancing on: in-set memory left to it",
		.nn = 3, .nodes = { N(0, 1, 4096, 2048, 1.0), N(1, 1, 4096, 2048, 1.0), N(2, 1, 4096, 2048, 0.0) },
		.g = { { .id = "a", .use = 2.0, .on = "0-1", .mib = { 1024, 0, 0 }, .threads = 2, .busy = 2,
			 .ran = { 1.0, 1.0, 0 } } },
		.e = { { .id = "a", .kind = PLAN_SETTLED, .to = "0-1", .detail_has = "NUMA balancing (on)" } },
		.verbose = true,
		.numa_balancing = 1,
	},
	{
		/* The testbed's misplaced beside the kernel's balancing, at the
		 * agent's first cycle: web1's thread runs on node 3 and the
		 * kernel has moved a third of its memory there on fault (216 MiB
		 * still on node 0), at 50 MiB/s. Moving its CPUs to node 0 sends
		 * the 104 MiB back; keeping them on node 3 waits for 216 MiB to
		 * come: the CPUs go to the larger part, fewer bytes cross. */
		.name = "beside the kernel's balancing, the kernel not past half: CPUs to the larger part",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.0), N(1, 2, 1024, 600, 0.0),
				    N(2, 2, 1024, 900, 0.0), N(3, 2, 1024, 800, 0.5) },
		.g = { { .id = "web1", .use = 1.0, .on = "0-3", .mib = { 216, 0, 0, 104 }, .threads = 1, .busy = 1,
			 .ran = { 0, 0, 0, 1.0 }, .flow = { -50, 0, 0, 50 } } },
		.e = { { .id = "web1", .kind = PLAN_MOVE, .to = "0", .mems = "0", .mig = MIG(104) } },
		.verbose = true,
		.numa_balancing = 1,
	},
	{
		/* The same with nothing measured of the kernel's flow (the
		 * agent's first look): no assumption that the kernel brings
		 * it; the CPUs go to the larger part as with balancing off. */
		.name = "beside the kernel's balancing, no flow measured: CPUs to the larger part",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.0), N(1, 2, 1024, 600, 0.0),
				    N(2, 2, 1024, 900, 0.0), N(3, 2, 1024, 800, 0.5) },
		.g = { { .id = "web1", .use = 1.0, .on = "0-3", .mib = { 216, 0, 0, 104 }, .threads = 1, .busy = 1,
			 .ran = { 0, 0, 0, 1.0 } } },
		.e = { { .id = "web1", .kind = PLAN_MOVE, .to = "0", .mems = "0", .mig = MIG(104) } },
		.verbose = true,
		.numa_balancing = 1,
	},
	{
		/* The kernel measured past half (216 MiB arrived on node 3
		 * where the thread runs, 104 left on node 0) and fast enough:
		 * the CPUs stay where it brings the rest, though node 3 is the
		 * busier (0.7, another guest's load besides) — without the
		 * measured flow they would go to the idle node 0 and 216 MiB
		 * would cross back. */
		.name = "beside the kernel's balancing, the kernel past half: CPUs stay where it brings the memory",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.0), N(1, 2, 1024, 600, 0.0),
				    N(2, 2, 1024, 900, 0.0), N(3, 2, 1024, 800, 0.7) },
		.g = { { .id = "web1", .use = 1.0, .on = "0-3", .mib = { 104, 0, 0, 216 }, .threads = 1, .busy = 1,
			 .ran = { 0, 0, 0, 1.0 }, .flow = { -50, 0, 0, 50 } } },
		.e = { { .id = "web1", .kind = PLAN_MOVE, .to = "3", .mems = "3", .mig = MIG(104) } },
		.verbose = true,
		.numa_balancing = 1,
	},
	{
		/* The same with balancing not on: nothing moves its memory but
		 * the agent, and moving the CPUs to the most of it is cheapest. */
		.name = "balancing not on: CPUs to where most of the memory is",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.0), N(1, 2, 1024, 600, 0.0),
				    N(2, 2, 1024, 900, 0.0), N(3, 2, 1024, 800, 0.5) },
		.g = { { .id = "web1", .use = 1.0, .on = "0-3", .mib = { 216, 0, 0, 104 }, .threads = 1, .busy = 1,
			 .ran = { 0, 0, 0, 1.0 } } },
		.e = { { .id = "web1", .kind = PLAN_MOVE, .to = "0", .mems = "0", .mig = MIG(104) } },
		.verbose = true,
	},
	{
		/* Beside the kernel, but its threads' node has no room for its
		 * memory (memtight's node 0): the CPUs go to the memory. */
		.name = "beside the kernel's balancing: not onto a node without room",
		.nn = 4, .nodes = { N(0, 2, 1024, 600, 0.0), N(1, 2, 1024, 600, 0.0),
				    N(2, 2, 1024, 900, 0.0), N(3, 2, 1024, 40, 0.5) },
		.g = { { .id = "web1", .use = 1.0, .on = "0-3", .mib = { 216, 0, 0, 104 }, .threads = 1, .busy = 1,
			 .ran = { 0, 0, 0, 1.0 } } },
		.e = { { .id = "web1", .kind = PLAN_MOVE, .to = "0", .mems = "0", .mig = MIG(104) } },
		.verbose = true,
		.numa_balancing = 1,
	},
	{
		/* The testbed's memtight hog: two busy threads (of three) using
		 * 2 CPUs on its one 2-CPU node, not sampled per thread. Its
		 * headroom does not make it a third busy thread: it is not
		 * spread over two nodes to relieve load. */
		.name = "unmeasured busy threads come from use, not demand",
		.nn = 4, .nodes = { N(0, 2, 1024, 300, 0.0), N(1, 2, 1024, 300, 1.0),
				    N(2, 2, 1024, 900, 1.0), N(3, 2, 1024, 900, 1.0) },
		.g = { { .id = "hog", .use = 2.0, .on = "2", .mib = { 0, 0, 64, 0 }, .threads = 3 } },
		.e = { { .id = "hog", .kind = PLAN_SETTLED, .to = "2" } },
		.verbose = true,
	},
	{
		/* One busy thread, 1200 MiB on 1 GiB nodes: its memory needs
		 * two nodes, its thread one (split): its CPUs on one node, its
		 * memory there up to the node's room (644 MiB) and the rest on
		 * one more, and the record says that is why. Given two nodes'
		 * CPUs, its thread would run on one of them and be local to
		 * whatever half of its memory is there. */
		.name = "more nodes than its threads fill only for memory, and said so",
		.nn = 4, .nodes = { N(0, 2, 1024, 900, 0.2), N(1, 2, 1024, 900, 0.2),
				    N(2, 2, 1024, 900, 0.2), N(3, 2, 1024, 900, 0.2) },
		.g = { { .id = "fat", .use = 1.0, .on = "0-3", .mib = { 300, 300, 300, 300 }, .threads = 1,
			 .busy = 1, .ran = { 1.0, 0, 0, 0 } } },
		.e = { { .id = "fat", .kind = PLAN_MOVE, .reason = REASON_CONSOLIDATE, .to = "0", .mems = "0-1",
			 .detail_has = "fit no one node" } },
	},
	{
		/* Locality where it runs drives the pull: on node 0 with all its
		 * memory in its mems {0,1} but 3/4 of it on node 1. */
		.name = "one node, memory on the other: true locality pulls it",
		.nn = 2, .nodes = { N8(0, 8192, 0.3), N8(1, 8192, 0.5) },
		.g = { { .id = "a", .use = 1.0, .on = "0", .mems = "0-1", .mib = { 1024, 3072 }, .threads = 1 } },
		.e = { { .id = "a", .kind = PLAN_MOVE, .reason = REASON_LOCALITY, .to = "0", .mems = "0",
			 .mig = MIG(3072) } },
	},
	{
		/* Two busy threads on a 2-CPU node can read 2.02 CPUs
		 * (accounting jitter). The per-CPU check of a local fit allows
		 * the same LOCAL_FIT_SLACK as the node's total: on the node
		 * holding all its memory it is a local fit, not "nothing
		 * fits". */
		.name = "two busy threads at 2.02 CPUs local-fit a 2-CPU node",
		.nn = 4, .nodes = { N(0, 2, 1024, 300, 1.0), N(1, 2, 1024, 300, 1.0),
				    N(2, 2, 1024, 700, 1.01), N(3, 2, 1024, 900, 0.5) },
		.g = { { .id = "two", .use = 2.02, .on = "2", .mib = { 0, 0, 300, 0 }, .threads = 2, .busy = 2,
			 .ran = { 0, 0, 2.02, 0 } } },
		.e = { { .id = "two", .kind = PLAN_SETTLED, .to = "2", .detail_has = "fits without headroom" } },
		.verbose = true,
	},
	{
		/* The same guest beside a 4-CPU node at 0.1: the relief there
		 * (util 0.60) must pay for moving its 300 MiB (a local fit
		 * stays unless the move scores better: 1.10 vs 1.01); taken
		 * as no fit, it was moved for load. */
		.name = "two busy threads at 2.02 CPUs: local fit holds against a quieter node",
		.nn = 4, .nodes = { N(0, 2, 1024, 300, 1.0), N(1, 2, 1024, 300, 1.0),
				    N(2, 2, 1024, 700, 1.01), N(3, 4, 2048, 1800, 0.1) },
		.g = { { .id = "two", .use = 2.02, .on = "2", .mib = { 0, 0, 300, 0 }, .threads = 2, .busy = 2,
			 .ran = { 0, 0, 2.02, 0 } } },
		.e = { { .id = "two", .kind = PLAN_SETTLED, .to = "2", .detail_has = "fits without headroom" } },
		.verbose = true,
	},
	{
		/* Busy threads still each need a CPU of their own: three at
		 * 2.02 CPUs never local-fit two CPUs; it goes to the idle
		 * 4-CPU node with its memory. */
		.name = "three busy threads never local-fit a 2-CPU node",
		.nn = 4, .nodes = { N(0, 2, 1024, 300, 1.0), N(1, 2, 1024, 300, 1.0),
				    N(2, 2, 1024, 700, 1.01), N(3, 4, 2048, 1800, 0.0) },
		.g = { { .id = "three", .use = 2.02, .on = "2", .mib = { 0, 0, 300, 0 }, .threads = 3,
			 .busy = 3, .ran = { 0, 0, 2.02, 0 } } },
		.e = { { .id = "three", .kind = PLAN_MOVE, .to = "3", .mems = "3", .mig = MIG(300) } },
	},
	{
		/* On a big node the slack is more than a CPU (5 % of 40): 41
		 * busy threads at 40.9 CPUs still do not fit 40 CPUs: they get
		 * the second node's CPUs too, their memory staying. */
		.name = "busy threads past a big node's CPUs: no local fit however small the excess",
		.nn = 2, .nodes = { N(0, 40, 65536, 30000, 1.02), N(1, 40, 65536, 60000, 0.1) },
		.g = { { .id = "wide", .use = 40.9, .on = "0", .mib = { 4096, 0 }, .threads = 41, .busy = 41,
			 .ran = { 40.9, 0 } } },
		.e = { { .id = "wide", .kind = PLAN_MOVE, .to = "0-1", .mig = MIG(0) } },
	},
	/* Hugetlb guests (the testbed's shape): 128 MiB of 2 MiB huge
	 * pages on node 0 and 4 MiB of ordinary memory on node 1, its thread
	 * on node 1, node 1 the less busy. Their room is the free pages of
	 * their size, not MemFree. */
	{
		.name = "hugetlb: no free huge pages where its thread runs: its CPUs go to its memory",
		.nn = 2, .nodes = { { .id = 0, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.5, .hp_total = 100, .hp_free = 36 },
				    { .id = 1, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.2, .hp_total = 0 } },
		.g = { { .id = "hvm", .use = 1.0, .on = "1", .mib = { 128, 4 }, .huge = { 128, 0 }, .threads = 1 } },
		.e = { { .id = "hvm", .kind = PLAN_MOVE, .to = "0", .mems = "0", .mig = MIG(4) } },
	},
	{
		.name = "hugetlb: a pool of its size exhausted on the thread's node: its CPUs go to its memory",
		.nn = 2, .nodes = { { .id = 0, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.5, .hp_total = 100, .hp_free = 36 },
				    { .id = 1, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.2, .hp_total = 64, .hp_free = 10 } },
		.g = { { .id = "hvm", .use = 1.0, .on = "1", .mib = { 128, 4 }, .huge = { 128, 0 }, .threads = 1 } },
		.e = { { .id = "hvm", .kind = PLAN_MOVE, .to = "0", .mems = "0", .mig = MIG(4) } },
	},
	{
		.name = "hugetlb: free huge pages there: its memory follows its thread",
		.nn = 2, .nodes = { { .id = 0, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.5, .hp_total = 100, .hp_free = 36 },
				    { .id = 1, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.2, .hp_total = 100, .hp_free = 100 } },
		.g = { { .id = "hvm", .use = 1.0, .on = "1", .mib = { 128, 4 }, .huge = { 128, 0 }, .threads = 1 } },
		.e = { { .id = "hvm", .kind = PLAN_MOVE, .to = "1", .mems = "1", .mig = MIG(128) } },
	},
	{
		/* Node 0 full: its CPUs cannot go to its memory, and node 1
		 * has no free huge pages: it stays, and the record says why. */
		.name = "hugetlb: neither way fits: the skip says no free huge pages",
		.nn = 2, .nodes = { { .id = 0, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 1.0, .hp_total = 100, .hp_free = 36 },
				    { .id = 1, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.2, .hp_total = 0 } },
		.g = { { .id = "hvm", .use = 1.0, .on = "1", .mib = { 128, 4 }, .huge = { 128, 0 }, .threads = 1 } },
		.e = { { .id = "hvm", .kind = PLAN_SKIP, .skip = SKIP_NOT_LESS_BUSY,
			 .detail_has = "; no free 2048 kB huge pages on node 1 (128 MiB of its huge pages must move)" } },
	},
	{
		/* Two guests want node 1's 100 free pages (200 MiB): the
		 * first planned takes 128 MiB of them, the second's 128 MiB
		 * no longer fit and its CPUs go to its memory. */
		.name = "hugetlb: free huge pages taken by an earlier move of the cycle",
		.nn = 3, .nodes = { { .id = 0, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.5, .hp_total = 100, .hp_free = 0 },
				    { .id = 1, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.1, .hp_total = 100, .hp_free = 100 },
				    { .id = 2, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.5, .hp_total = 100, .hp_free = 0 } },
		.g = { { .id = "hvm-a", .use = 1.0, .on = "1", .mib = { 128, 4, 0 }, .huge = { 128, 0, 0 }, .threads = 1 },
		       { .id = "hvm-b", .use = 1.0, .on = "1", .mib = { 0, 4, 128 }, .huge = { 0, 0, 128 }, .threads = 1 } },
		.e = { { .id = "hvm-a", .kind = PLAN_MOVE, .to = "1", .mems = "1", .mig = MIG(128) },
		       { .id = "hvm-b", .kind = PLAN_MOVE, .to = "2", .mems = "2", .mig = MIG(4) } },
	},
	{
		/* No hugetlb: the same shape with ordinary memory moves it to
		 * the thread, as before. */
		.name = "hugetlb: the same guest without huge pages follows its thread",
		.nn = 2, .nodes = { { .id = 0, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.5, .hp_total = 100, .hp_free = 36 },
				    { .id = 1, .cpus = 8, .mem_mib = 16384, .free_mib = 8192, .busy = 0.2, .hp_total = 0 } },
		.g = { { .id = "vm", .use = 1.0, .on = "1", .mib = { 128, 4 }, .threads = 1 } },
		.e = { { .id = "vm", .kind = PLAN_MOVE, .to = "1", .mems = "1", .mig = MIG(128) } },
	},
};

static void parse_nodes(const char *s, nodemask_t *m)
{
	mask_zero(m);
	if (s)
		assert_int_equal(mask_parse(s, m), 0);
}

static struct snapshot *build(const struct tcase *tc, struct pstate **prev)
{
	cpumask_t cpus, allowed;
	struct snapshot *s = snap_new();
	struct snap_node sn[TMAXN];
	unsigned cpu = 0;

	memset(sn, 0, sizeof(sn));
	for (unsigned i = 0; i < tc->nn; i++) {
		const struct tnode *t = &tc->nodes[i];

		sn[i].id = t->id;
		for (unsigned c = 0; c < t->cpus; c++, cpu++)
			mask_set(&sn[i].cpus, cpu);
		sn[i].nr_cpus = t->cpus;
		sn[i].mem_total = t->mem_mib * MIB;
		sn[i].mem_free = t->free_mib * MIB;
		sn[i].busy = t->cpus ? t->busy : NAN;
		if (t->hp_total) {
			sn[i].nr_hpools = 1;
			sn[i].hpools[0] = (struct snap_hpool){ .page = 2 * MIB, .total = t->hp_total, .free = t->hp_free };
		}
	}
	snap_set_nodes(s, sn, tc->nn, tc->dist);
	s->seq = 7;
	s->mono_ns = T0;
	s->real_ns = REAL0;
	s->window_s = 10;
	s->numa_balancing = tc->numa_balancing ? tc->numa_balancing : -1;
	*prev = pstate_new();
	for (unsigned gi = 0; gi < TMAXG && tc->g[gi].id; gi++) {
		const struct tguest *t = &tc->g[gi];
		struct snap_guest *g = snap_add_guest(s);
		nodemask_t on;

		snprintf(g->id, sizeof(g->id), "%s", t->id);
		snprintf(g->runtime, sizeof(g->runtime), "docker");
		g->cpu_use = t->use;
		g->first_sight = t->first;
		if (t->owner) {
			snprintf(g->owner, sizeof(g->owner), "%s", t->owner);
			snprintf(g->owner_reason, sizeof(g->owner_reason), "why");
		}
		g->mem_unknown = t->mem_unknown;
		parse_nodes(t->on, &on);
		snap_nodes_to_cpus(s, &on, &cpus);
		mask_zero(&allowed);
		parse_nodes(t->mems ? t->mems : t->on, &g->mems);
		for (unsigned n = 0; n < tc->nn; n++) {
			g->mem_node[n] = t->mib[n] * MIB;
			if (t->huge[n]) {
				snap_guest_huge(s, g)[n] = t->huge[n] * MIB;
				g->huge_page = 2 * MIB;
			}
		}
		if (t->allowed_cpus)
			assert_int_equal(mask_parse(t->allowed_cpus, &allowed), 0);
		snap_guest_set_cpus(s, g, &cpus, &allowed);
		parse_nodes(t->allowed_mems, &g->allowed_mems);
		g->policy.mode = t->pol;
		parse_nodes(t->pin, &g->policy.nodes);
		if (t->pin_set_s_ago)
			g->policy.set_real_ns = s->real_ns - t->pin_set_s_ago * SEC;
		if (t->moved_s_ago)
			pstate_note_move(*prev, t->id, T0 - t->moved_s_ago * SEC);
		if (t->moved_s_ago && t->cool_s)
			pstate_note_cooldown(*prev, t->id, t->cool_s * SEC);
		g->nr_threads = t->threads;
		g->busy_threads = t->busy;
		g->busy_measured = t->busy > 0;
		for (unsigned n = 0; n < tc->nn; n++)
			if (t->ran[n] > 0.0) {
				if (!g->cpu_node)
					g->cpu_node = calloc(tc->nn, sizeof(double));
				g->cpu_node[n] = t->ran[n];
			}
		for (unsigned n = 0; n < tc->nn; n++)
			if (t->flow[n]) {
				struct snap_kflow *f = g->kflow;

				if (!f) {
					f = g->kflow = calloc(1, sizeof(*f));
					f->delta = calloc(tc->nn, sizeof(*f->delta));
					f->window_s = 1.0;
					f->cpus_steady = true;
				}
				f->delta[n] = (int64_t)t->flow[n] * (int64_t)MIB;
				if (t->flow[n] > 0)
					f->arrived += (uint64_t)t->flow[n] * MIB;
				else
					f->left += (uint64_t)-t->flow[n] * MIB;
				f->moved = f->arrived < f->left ? f->arrived : f->left;
			}
	}
	snap_finalize(s);
	return s;
}

static const struct plan_item *find_item(const struct plan *p, const char *id)
{
	for (unsigned i = 0; i < p->nr_items; i++)
		if (strcmp(p->items[i].guest_id, id) == 0)
			return &p->items[i];
	return NULL;
}

static void assert_nodes(const char *what, const nodemask_t *m, const char *want, const char *tc,
			 const char *id)
{
	char buf[NODELIST_BUFSZ];

	assert_int_equal(mask_format(m, buf, sizeof(buf)), 0);
	if (strcmp(buf, want) != 0)
		fail_msg("%s: %s: %s is \"%s\", expected \"%s\"", tc, id, what, buf, want);
}

/* What must hold for any plan, whatever the case. */
static void check_invariants(const struct policy_config *told, const struct snapshot *s,
			     const struct plan *p, const struct pstate *next, const char *tc)
{
	struct policy_config resolved;
	/* the budgets as the policy sized them (auto) */
	const struct policy_config *cfg = &resolved;

	policy_resolve(told, &resolved);
	uint64_t mig = 0;
	unsigned moves = 0;
	json_t *j;

	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];
		const struct snap_guest *g = snap_find_guest(s, it->guest_id);
		cpumask_t tc_cpus;

		assert_non_null(g);
		assert_int_equal(it->guest_idx, (unsigned)(g - s->guests));
		if (!it->detail[0])
			fail_msg("%s: %s: empty detail", tc, it->guest_id);
		if (it->kind != PLAN_MOVE) {
			assert_null(it->to_cpus);
			continue;
		}
		moves++;
		mig += it->migrate_bytes;
		assert_non_null(it->to_cpus);
		assert_false(mask_empty(it->to_cpus));
		snap_nodes_to_cpus(s, &it->to_nodes, &tc_cpus);
		assert_true(mask_subset(it->to_cpus, &tc_cpus));
		mask_foreach(id, &it->to_nodes)
			assert_true(s->nodes[snap_node_index(s, id)].nr_cpus > 0);
		{
			uint64_t room = 0, already = 0, hroom = 0, halready = 0;

			mask_foreach(id, &it->to_mems) {
				int n = snap_node_index(s, id);

				/* Room to come counts: memory live jobs take off
				 * the node, less what they bring (mem_leaving). */
				int64_t fr = (int64_t)s->nodes[n].mem_free + (int64_t)s->nodes[n].mem_leaving -
					     (int64_t)s->nodes[n].mem_coming;

				int64_t keep = (int64_t)policy_reserve(cfg->min_free_bytes, cfg->min_free_share,
								       s->nodes[n].mem_total);

				assert_true(s->nodes[n].mem_total > 0);
				if (fr > keep)
					room += (uint64_t)(fr - keep);
				already += g->mem_node[n];
				if (g->huge_node) {
					const struct snap_hpool *hp = snap_node_hpool(&s->nodes[n], g->huge_page);

					halready += g->huge_node[n];
					hroom += hp ? hp->free * hp->page : 0;
				}
			}
			/* Huge pages only into free pages of their size; the
			 * rest against free memory as below. */
			if (g->huge_total - halready > hroom)
				fail_msg("%s: %s: %llu MiB of huge pages planned onto nodes with %llu MiB of free ones", tc,
					 it->guest_id, (unsigned long long)((g->huge_total - halready) / MIB),
					 (unsigned long long)(hroom / MIB));
			already += g->huge_total - halready;
			/* Its memory there but for a few stray pages that fit
			 * the room: as good as all there (guards.c mem_ok). */
			/* Crowded (nothing fits with headroom): its footprint
			 * without the growth headroom (pcand.bare_mem). */
			if (room + already < (it->crowded ? g->mem_total : it->mem_demand) && it->migrate_bytes > 0 &&
			    !(plan_migration_negligible(it->migrate_bytes, g->mem_total) && it->migrate_bytes <= room))
				fail_msg("%s: %s: planned onto nodes without room", tc, it->guest_id);
		}
		/* Over max_util only where nothing fitted with headroom. */
		/* A local fit: its memory already there, no headroom, ≤ 1
		 * (+ LOCAL_FIT_SLACK, guards.h). */
		/* Beside the kernel's balancing, more than half of it there
		 * (the kernel brings the rest on fault). */
		if (it->local_fit && (!(it->load_after <= 1.05 + 1e-9) ||
				      (!plan_migration_negligible(it->migrate_bytes, g->mem_total) &&
				       !(s->numa_balancing > 0 && 2 * it->migrate_bytes < g->mem_total))))
			fail_msg("%s: %s: local fit with load_after %.3f, %llu bytes to migrate", tc, it->guest_id,
				 it->load_after, (unsigned long long)it->migrate_bytes);
		/* A split: its threads on one node, a whole CPU each, no
		 * headroom (as a local fit). */
		if (it->split && (!(it->load_after <= 1.05 + 1e-9) || mask_count(&it->to_nodes) != 1 ||
				  !mask_test(&it->to_mems, it->first_node)))
			fail_msg("%s: %s: split with load_after %.3f onto nodes/mems that do not hold its first node",
				 tc, it->guest_id, it->load_after);
		if (it->reason != REASON_PINNED && !it->crowded && !it->local_fit && !it->split &&
		    !(it->load_after <= cfg->max_util + 1e-9))
			fail_msg("%s: %s: load_after %.3f over max_util", tc, it->guest_id, it->load_after);
		assert_false(isnan(it->cpu_demand));
		assert_false(isnan(it->load_before));
		{
			const struct pstate_entry *pe = pstate_find(next, it->guest_id);

			/* A start placement starts no cool-down; its mems are
			 * bound as start_bind_mems says, and only then. */
			assert_true(!it->bind_start || it->start);
			if (it->start)
				assert_int_equal(it->bind_start, cfg->start_bind_mems);
			if (it->start) {
				assert_true(isnan(g->cpu_use) || g->first_sight);
				assert_true(!pe || pe->last_move_ns != s->mono_ns);
			} else {
				assert_non_null(pe);
				assert_int_equal(pe->last_move_ns, s->mono_ns);
			}
		}
	}
	assert_int_equal(moves, p->nr_moves);
	assert_int_equal(mig, p->migrate_bytes);
	/* max_moves counts the moves that migrate memory */
	{
		unsigned migrating_moves = 0;

		for (unsigned i = 0; i < p->nr_items; i++) {
			const struct plan_item *it = &p->items[i];

			migrating_moves += it->kind == PLAN_MOVE &&
					   !plan_migration_negligible(it->migrate_bytes, s->guests[it->guest_idx].mem_total);
		}
		assert_true(migrating_moves <= cfg->max_moves);
	}
	if (p->migrate_bytes > cfg->max_migrate_bytes) {
		/* Only as one oversize move alone. */
		unsigned migrating = 0;

		for (unsigned i = 0; i < p->nr_items; i++)
			migrating += p->items[i].kind == PLAN_MOVE && p->items[i].migrate_bytes > 0;
		if (migrating != 1 || cfg->max_migrate_bytes == 0)
			fail_msg("%s: %u migrating moves take %llu bytes over a %llu budget", tc, migrating,
				 (unsigned long long)p->migrate_bytes,
				 (unsigned long long)cfg->max_migrate_bytes);
	}
	for (unsigned i = 1; i < next->n; i++)
		assert_true(strcmp(next->e[i - 1].id, next->e[i].id) < 0);
	j = plan_to_json(p);
	assert_non_null(j);
	assert_int_equal(json_array_size(json_object_get(j, "items")), p->nr_items);
	json_decref(j);
}

static void run_case(const struct tcase *tc)
{
	struct policy_config cfg;
	struct pstate *prev, *next = NULL;
	struct plan *p = NULL;
	struct snapshot *s;

	policy_config_default(&cfg);
	if (tc->tweak)
		tc->tweak(&cfg);
	s = build(tc, &prev);
	assert_int_equal(decide_carried_out(&cfg, s, prev, tc->verbose, &p, &next), 0);
	check_invariants(&cfg, s, p, next, tc->name);

	/* Every item is expected; every expectation is met. */
	for (unsigned i = 0; i < p->nr_items; i++) {
		bool listed = false;

		for (unsigned k = 0; k < TMAXG && tc->e[k].id; k++)
			if (strcmp(tc->e[k].id, p->items[i].guest_id) == 0 && tc->e[k].kind != NOITEM)
				listed = true;
		if (!listed)
			fail_msg("%s: unexpected item for %s: %s %s/%s: %s", tc->name, p->items[i].guest_id,
				 plan_kind_name(p->items[i].kind), move_reason_name(p->items[i].reason),
				 skip_reason_name(p->items[i].skip), p->items[i].detail);
	}
	for (unsigned k = 0; k < TMAXG && tc->e[k].id; k++) {
		const struct texp *e = &tc->e[k];
		const struct plan_item *it = find_item(p, e->id);

		if (e->kind == NOITEM) {
			if (it)
				fail_msg("%s: %s: expected no item, got %s/%s: %s", tc->name, e->id,
					 plan_kind_name(it->kind), skip_reason_name(it->skip), it->detail);
			continue;
		}
		if (!it)
			fail_msg("%s: %s: no item", tc->name, e->id);
		if ((int)it->kind != e->kind || it->skip != e->skip ||
		    (e->reason != REASON_NONE && it->reason != e->reason))
			fail_msg("%s: %s: got %s %s/%s, expected %s %s/%s (%s)", tc->name, e->id,
				 plan_kind_name(it->kind), move_reason_name(it->reason),
				 skip_reason_name(it->skip), plan_kind_name(e->kind),
				 move_reason_name(e->reason), skip_reason_name(e->skip), it->detail);
		if (e->to && getenv("TEST_POLICY_DEBUG"))
			fprintf(stderr, "%s: %s: %s\n", tc->name, e->id, it->detail);
		if (e->to)
			assert_nodes("to_nodes", &it->to_nodes, e->to, tc->name, e->id);
		if (e->mems)
			assert_nodes("to_mems", &it->to_mems, e->mems, tc->name, e->id);
		if (e->cpus) {
			char buf[CPULIST_BUFSZ];

			assert_non_null(it->to_cpus);
			assert_int_equal(mask_format(it->to_cpus, buf, sizeof(buf)), 0);
			if (strcmp(buf, e->cpus) != 0)
				fail_msg("%s: %s: to_cpus \"%s\", expected \"%s\"", tc->name, e->id, buf, e->cpus);
		}
		if (e->mig && it->migrate_bytes != (uint64_t)(e->mig - 1) * MIB)
			fail_msg("%s: %s: migrate %llu MiB, expected %lld (%s)", tc->name, e->id,
				 (unsigned long long)(it->migrate_bytes / MIB), e->mig - 1, it->detail);
		if (e->detail_has && !strstr(it->detail, e->detail_has))
			fail_msg("%s: %s: detail \"%s\" lacks \"%s\"", tc->name, e->id, it->detail, e->detail_has);
	}
	plan_free(p);
	pstate_free(next);
	pstate_free(prev);
	snap_unref(s);
}

static void test_table(void **state)
{
	const struct tcase *tc = *state;

	run_case(tc);
}

/* ---- generated hosts: determinism, convergence, speed ---- */

static uint32_t lcg(uint32_t *st)
{
	*st = *st * 1664525u + 1013904223u;
	return *st >> 8;
}

/* NN nodes of 16 or more CPUs, 64 GiB; NG guests on random node sets with random
 * memory spread; node busy = Σ guest use on it (+ a base). */
static struct snapshot *gen_host(unsigned nn, unsigned ng, uint32_t seed)
{
	cpumask_t cpus;
	struct snapshot *s = snap_new();
	/* Enough CPUs for the guests' mean use of 0.75 CPU to fill about 60%. */
	unsigned ncpu = ng * 5 / 4 / nn < 16 ? 16 : ng * 5 / 4 / nn;
	struct snap_node *sn = calloc(nn, sizeof(*sn));
	unsigned *dist = calloc((size_t)nn * nn, sizeof(*dist));
	double *busy = calloc(nn, sizeof(*busy));
	uint64_t *used = calloc(nn, sizeof(*used));
	uint32_t st = seed;

	for (unsigned i = 0; i < nn; i++) {
		sn[i].id = (int)i;
		for (unsigned c = 0; c < ncpu; c++)
			mask_set(&sn[i].cpus, i * ncpu + c);
		sn[i].nr_cpus = ncpu;
		sn[i].mem_total = 65536 * MIB;
		for (unsigned j = 0; j < nn; j++)
			dist[i * nn + j] = i == j ? 10 : (i / 4 == j / 4 ? 12 : 32);
		busy[i] = 0.5 + (lcg(&st) % 20) / 10.0;
	}
	snap_set_nodes(s, sn, nn, dist);
	s->seq = 1;
	s->mono_ns = T0;
	for (unsigned gi = 0; gi < ng; gi++) {
		struct snap_guest *g = snap_add_guest(s);
		nodemask_t on;
		unsigned first = lcg(&st) % nn, span = 1 + lcg(&st) % (lcg(&st) % 4 == 0 ? nn : 2);
		uint64_t mem = (64 + lcg(&st) % 512) * MIB;

		snprintf(g->id, sizeof(g->id), "docker-g%04u", gi);
		g->cpu_use = (lcg(&st) % 150) / 100.0;
		mask_zero(&on);
		for (unsigned k = 0; k < span; k++)
			mask_set(&on, (first + k) % nn);
		snap_nodes_to_cpus(s, &on, &cpus);
		g->cpus = snap_cpumask(s, &cpus);
		g->mems = on;
		/* Memory mostly on the first node, some elsewhere. */
		for (unsigned k = 0; k < span; k++) {
			unsigned n = (first + k) % nn;
			uint64_t part = k == 0 ? mem * 3 / 4 : mem / 4 / (span - 1);

			g->mem_node[n] = part;
			used[n] += part;
			busy[n] += g->cpu_use / span;
		}
		if (lcg(&st) % 50 == 0)
			g->cpu_use = NAN;
	}
	for (unsigned i = 0; i < nn; i++) {
		s->nodes[i].busy = fmin(1.0, busy[i] / ncpu);
		s->nodes[i].mem_free = s->nodes[i].mem_total - used[i] - 4096 * MIB;
	}
	snap_finalize(s);
	free(sn);
	free(dist);
	free(busy);
	free(used);
	return s;
}

static char *plan_text(const struct plan *p)
{
	json_t *j = plan_to_json(p);
	char *t = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);

	json_decref(j);
	return t;
}

static void test_determinism(void **state)
{
	struct policy_config cfg;
	struct snapshot *s = gen_host(8, 300, 42);
	struct pstate *prev = pstate_new(), *n1, *n2;
	struct plan *p1, *p2;
	char *t1, *t2;

	policy_config_default(&cfg);
	cfg.max_moves = 20;
	pstate_note_move(prev, "docker-g0007", T0 - 10 * SEC);
	assert_int_equal(decide_carried_out(&cfg, s, prev, true, &p1, &n1), 0);
	assert_int_equal(decide_carried_out(&cfg, s, prev, true, &p2, &n2), 0);
	t1 = plan_text(p1);
	t2 = plan_text(p2);
	assert_string_equal(t1, t2);
	assert_true(p1->nr_moves > 0);
	assert_int_equal(n1->n, n2->n);
	assert_memory_equal(n1->e, n2->e, n1->n * sizeof(*n1->e));
	/* prev is not touched */
	assert_int_equal(prev->n, 1);
	assert_int_equal(prev->e[0].nr_moves, 1);
	check_invariants(&cfg, s, p1, n1, "determinism");
	free(t1);
	free(t2);
	plan_free(p1);
	plan_free(p2);
	pstate_free(n1);
	pstate_free(n2);
	pstate_free(prev);
	snap_unref(s);
}

/* Carry out a plan on the snapshot by hand, as apply would, and as the
 * next acquire would measure it: cpuset, memory placement, node busy and
 * free memory. */
static void apply_by_hand(struct snapshot *s, const struct plan *p)
{
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];
		struct snap_guest *g = &s->guests[it->guest_idx];
		unsigned tot = 0, nm = 0;
		uint64_t moved = 0;

		if (it->kind != PLAN_MOVE)
			continue;
		for (unsigned n = 0; n < s->nr_nodes; n++)
			for (size_t w = 0; w < MASK_WORDS(g->cpus); w++)
				tot += (unsigned)__builtin_popcountll(g->cpus->w[w] & s->nodes[n].cpus.w[w]);
		for (unsigned n = 0; n < s->nr_nodes; n++) {
			struct snap_node *nd = &s->nodes[n];
			unsigned on = 0, to = 0, tt = mask_count(it->to_cpus);

			for (size_t w = 0; w < MASK_WORDS(g->cpus); w++) {
				on += (unsigned)__builtin_popcountll(g->cpus->w[w] & nd->cpus.w[w]);
				to += (unsigned)__builtin_popcountll(it->to_cpus->w[w] & nd->cpus.w[w]);
			}
			if (nd->nr_cpus)
				nd->busy = fmax(0.0, nd->busy - g->cpu_use * on / tot / nd->nr_cpus) +
					   g->cpu_use * to / tt / nd->nr_cpus;
			if (!mask_test(&it->to_mems, nd->id)) {
				moved += g->mem_node[n];
				nd->mem_free += g->mem_node[n];
				g->mem_node[n] = 0;
			}
		}
		nm = mask_count(&it->to_mems);
		mask_foreach(id, &it->to_mems) {
			int n = snap_node_index(s, id);

			g->mem_node[n] += moved / nm;
			s->nodes[n].mem_free -= moved / nm;
		}
		g->cpus = snap_cpumask(s, it->to_cpus);
		g->mems = it->to_mems;
	}
	snap_finalize(s);
}

static unsigned converge(struct snapshot *s, const struct policy_config *cfg, unsigned max_cycles,
			 const char *name)
{
	struct pstate *st = pstate_new();
	unsigned last = 1, total = 0;

	for (unsigned cyc = 0; cyc < max_cycles && last; cyc++) {
		struct plan *p;
		struct pstate *next;

		assert_int_equal(decide_carried_out(cfg, s, st, false, &p, &next), 0);
		check_invariants(cfg, s, p, next, name);
		last = p->nr_moves;
		total += last;
		if (getenv("TEST_POLICY_DEBUG")) {
			char *t = plan_text(p);

			fprintf(stderr, "%s cycle %u: %s\n", name, cyc, t);
			free(t);
		}
		apply_by_hand(s, p);
		plan_free(p);
		pstate_free(st);
		st = next;
		/* Beyond any cool-down: only the less-busy rule, fit and
		 * hysteresis may stop a move back. */
		s->mono_ns += cfg->cooldown_ns + SEC;
	}
	if (last)
		fail_msg("%s: still moving after %u cycles", name, max_cycles);
	/* Nothing moved twice. */
	for (unsigned i = 0; i < st->n; i++)
		if (st->e[i].nr_moves > 1)
			fail_msg("%s: %s moved %u times", name, st->e[i].id, st->e[i].nr_moves);
	pstate_free(st);
	return total;
}

static void test_convergence_table(void **state)
{
	/* Cases with moves of every kind; each must settle after one move
	 * per guest. */
	static const char *const names[] = {
		"bigger than a node: closest pair",
		"less-busy rule: allowed beyond the margin",
		"memory-tight node: CPU room, no memory room: another node",
		"8 nodes, 2 sockets: a pair within one socket",
		"many guests, one good node: only as many as fit",
		"misplaced spread guests shrink to where memory is",
		"locality pull: same nodes, memory brought local",
		"memory-only node: never a CPU target, its memory is remote",
		"busy node: load relocation to a less busy node",
		"stability: no shrink onto a node it would be moved off again",
	};
	struct policy_config cfg;

	policy_config_default(&cfg);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct tcase *tc = NULL;
		struct pstate *prev;
		struct snapshot *s;

		for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
			if (strcmp(cases[k].name, names[i]) == 0)
				tc = &cases[k];
		assert_non_null(tc);
		s = build(tc, &prev);
		converge(s, &cfg, 4, tc->name);
		pstate_free(prev);
		snap_unref(s);
	}
}

static void test_convergence_generated(void **state)
{
	struct policy_config cfg;

	const char *env = getenv("TEST_POLICY_SEEDS");
	uint32_t nseeds = env ? (uint32_t)atoi(env) : 5;

	policy_config_default(&cfg);
	cfg.max_moves = 1000;
	cfg.max_migrate_bytes = 1ULL << 40;
	for (uint32_t seed = 1; seed <= nseeds; seed++) {
		struct snapshot *s = gen_host(8, 200, seed);
		unsigned moves;
		char name[32];

		snprintf(name, sizeof(name), "generated seed %u", seed);
		moves = converge(s, &cfg, 6, name);
		print_message("%s: %u moves\n", name, moves);
		assert_true(moves > 0);
		snap_unref(s);
	}
}

/* With the default per-cycle budgets the same hosts take many cycles;
 * still nobody moves twice and it ends. */
static void test_convergence_default_budgets(void **state)
{
	struct policy_config cfg;

	policy_config_default(&cfg);
	for (uint32_t seed = 1; seed <= 3; seed++) {
		struct snapshot *s = gen_host(8, 200, seed);
		char name[48];

		snprintf(name, sizeof(name), "generated seed %u, default budgets", seed);
		assert_true(converge(s, &cfg, 100, name) > cfg.max_moves);
		snap_unref(s);
	}
}

/* Two guests side by side on equally loaded nodes, each local: neither
 * moves, and swapping load between them does not start a ping-pong.
 * Each cycle is decided from the previous one's state, beyond any
 * cool-down, with the busier node alternating between 0 and 1 (by 0.1 of
 * a node, under max_util): every cycle both guests are settled and the
 * plan moves nothing. */
static void test_no_thrash_equal_nodes(void **state)
{
	static const struct tcase tc = {
		.name = "equal nodes",
		.nn = 2, .nodes = { N8(0, 8192, 0.6), N8(1, 8192, 0.6) },
		.g = { { .id = "a", .use = 2.0, .on = "0", .mib = { 1024, 0 } },
		       { .id = "b", .use = 2.0, .on = "1", .mib = { 0, 1024 } } },
	};
	static const double busy[][2] = { { 0.6, 0.6 }, { 0.7, 0.6 }, { 0.6, 0.7 }, { 0.7, 0.6 },
					  { 0.6, 0.7 }, { 0.6, 0.6 } };
	struct policy_config cfg;
	struct pstate *prev, *st;
	struct snapshot *s;

	policy_config_default(&cfg);
	s = build(&tc, &prev);
	st = prev;
	for (size_t cyc = 0; cyc < sizeof(busy) / sizeof(busy[0]); cyc++) {
		struct plan *p;
		struct pstate *next;

		s->nodes[0].busy = busy[cyc][0];
		s->nodes[1].busy = busy[cyc][1];
		assert_int_equal(decide_carried_out(&cfg, s, st, true, &p, &next), 0);
		check_invariants(&cfg, s, p, next, tc.name);
		if (p->nr_moves != 0) {
			char *t = plan_text(p);

			fail_msg("equal nodes, cycle %zu (busy %.2f/%.2f): %u moves: %s", cyc, busy[cyc][0],
				 busy[cyc][1], p->nr_moves, t);
		}
		for (const char *const *id = (const char *const[]){ "a", "b", NULL }; *id; id++) {
			const struct plan_item *it = find_item(p, *id);

			assert_non_null(it);
			if (it->kind != PLAN_SETTLED)
				fail_msg("equal nodes, cycle %zu: %s is not settled: %s", cyc, *id, it->detail);
		}
		plan_free(p);
		pstate_free(st);
		st = next;
		s->mono_ns += cfg.cooldown_ns + SEC;
	}
	pstate_free(st);
	snap_unref(s);
}

/* Scale: 1000 guests on 8 and on 64 nodes decide completely and keep the
 * invariants. How fast is `make bench`'s business, not a unit test's. */
static void test_scale_1000_guests(void **state)
{
	struct policy_config cfg;
	struct snapshot *s = gen_host(8, 1000, 7);
	struct plan *p;
	struct pstate *next;

	(void)state;
	policy_config_default(&cfg);
	assert_int_equal(decide_carried_out(&cfg, s, NULL, true, &p, &next), 0);
	assert_int_equal(p->nr_items, 1000);
	check_invariants(&cfg, s, p, next, "1000 guests x 8 nodes");
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

static void test_scale_64_nodes(void **state)
{
	struct policy_config cfg;
	struct snapshot *s = gen_host(64, 1000, 11);
	struct plan *p;
	struct pstate *next;

	(void)state;
	policy_config_default(&cfg);
	assert_int_equal(decide_carried_out(&cfg, s, NULL, false, &p, &next), 0);
	check_invariants(&cfg, s, p, next, "1000 guests x 64 nodes");
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

/* Odd hosts: memory-only and memory-less nodes, unmeasured busy, random
 * distances, random allowed masks and policies. Nothing may crash or
 * break the invariants. */
static struct snapshot *gen_odd(uint32_t seed, struct pstate **prev)
{
	cpumask_t cpus, allowed;
	struct snapshot *s = snap_new();
	struct snap_node sn[6];
	unsigned dist[36], nn, cpu = 0, ng;
	uint32_t st = seed;

	memset(sn, 0, sizeof(sn));
	nn = 1 + lcg(&st) % 6;
	for (unsigned i = 0; i < nn; i++) {
		unsigned kind = lcg(&st) % 6;

		sn[i].id = (int)(i * 2 + lcg(&st) % 2); /* sparse ids */
		sn[i].nr_cpus = kind == 0 ? 0 : 1 + lcg(&st) % 8;
		for (unsigned c = 0; c < sn[i].nr_cpus; c++, cpu++)
			mask_set(&sn[i].cpus, cpu);
		sn[i].mem_total = kind == 1 ? 0 : (1024 + lcg(&st) % 16384) * MIB;
		sn[i].mem_free = sn[i].mem_total ? (lcg(&st) % (sn[i].mem_total / MIB)) * MIB : 0;
		sn[i].busy = !sn[i].nr_cpus || lcg(&st) % 8 == 0 ? NAN : (lcg(&st) % 101) / 100.0;
		for (unsigned j = 0; j <= i; j++)
			dist[i * nn + j] = dist[j * nn + i] = i == j ? 10 : 11 + lcg(&st) % 30;
	}
	snap_set_nodes(s, sn, nn, dist);
	s->mono_ns = T0;
	*prev = pstate_new();
	ng = lcg(&st) % 12;
	for (unsigned gi = 0; gi < ng; gi++) {
		struct snap_guest *g = snap_add_guest(s);
		nodemask_t on;

		snprintf(g->id, sizeof(g->id), "lxc-%u", lcg(&st) % 20);
		g->cpu_use = lcg(&st) % 10 == 0 ? NAN : (lcg(&st) % 600) / 100.0;
		mask_zero(&on);
		mask_zero(&g->mems);
		for (unsigned n = 0; n < nn; n++) {
			if (lcg(&st) % 2)
				mask_set(&on, s->nodes[n].id);
			if (lcg(&st) % 2)
				mask_set(&g->mems, s->nodes[n].id);
			if (s->nodes[n].mem_total && lcg(&st) % 2)
				g->mem_node[n] = (lcg(&st) % 4096) * MIB;
		}
		snap_nodes_to_cpus(s, &on, &cpus);
		mask_zero(&allowed);
		if (lcg(&st) % 4 == 0)
			for (unsigned c = 0; c < cpu; c++)
				if (lcg(&st) % 2)
					mask_set(&allowed, c);
		snap_guest_set_cpus(s, g, &cpus, &allowed);
		if (lcg(&st) % 4 == 0)
			for (unsigned n = 0; n < nn; n++)
				if (lcg(&st) % 2)
					mask_set(&g->allowed_mems, s->nodes[n].id);
		switch (lcg(&st) % 8) {
		case 0:
			g->policy.mode = GPOL_IGNORE;
			break;
		case 1:
		case 2:
			g->policy.mode = GPOL_PINNED;
			for (unsigned n = 0; n < nn; n++)
				if (lcg(&st) % 2)
					mask_set(&g->policy.nodes, s->nodes[n].id);
			break;
		}
		if (lcg(&st) % 3 == 0)
			pstate_note_move(*prev, g->id, T0 - (int64_t)(lcg(&st) % 600) * SEC);
	}
	snap_finalize(s);
	return s;
}

static void test_odd_hosts(void **state)
{
	struct policy_config cfg;

	policy_config_default(&cfg);
	for (uint32_t seed = 1; seed <= 500; seed++) {
		struct pstate *prev, *next;
		struct plan *p;
		struct snapshot *s = gen_odd(seed, &prev);
		struct advice a;
		struct advice_reservation r = { .cpus = 1.5, .mem_bytes = 512 * MIB };
		struct advice_request req = { .cpus = (seed % 7) * 0.9, .mem_bytes = (seed % 5) * 1024 * MIB,
					      .nr_reservations = 1, .reservations = &r };
		char name[32];

		snprintf(name, sizeof(name), "odd host %u", seed);
		cfg.max_moves = 1 + seed % 5;
		cfg.max_migrate_bytes = (seed % 4) * 1024 * MIB;
		assert_int_equal(decide_carried_out(&cfg, s, prev, seed % 2, &p, &next), 0);
		check_invariants(&cfg, s, p, next, name);
		if (seed % 2)
			assert_true(p->nr_items == s->nr_guests);
		plan_free(p);
		pstate_free(next);

		mask_zero(&r.nodes);
		if (s->nr_nodes)
			mask_set(&r.nodes, s->nodes[seed % s->nr_nodes].id);
		assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
		assert_true(a.detail[0] != '\0');
		if (a.ok) {
			assert_true(!mask_empty(&a.nodes));
			assert_true(!mask_empty(&a.mems));
			mask_foreach(id, &a.nodes)
				assert_true(s->nodes[snap_node_index(s, id)].nr_cpus > 0);
		}
		pstate_free(prev);
		snap_unref(s);
	}
}

/* ---- advice ---- */

static struct snapshot *advise_host(void)
{
	static const struct tcase tc = {
		.nn = 3, .dist = NULL,
		.nodes = { N8(0, 8192, 0.5), N8(1, 8192, 0.2), N8(2, 4096, 0.3) },
		/* advice ignores running guests: their load is in busy */
		.g = { { .id = "running", .use = 1.0, .on = "0", .mib = { 1024 } } },
	};
	struct pstate *prev;
	struct snapshot *s = build(&tc, &prev);

	pstate_free(prev);
	return s;
}

static void test_advise_fits(void **state)
{
	struct policy_config cfg;
	struct snapshot *s = advise_host();
	struct advice_request req = { .cpus = 2.0, .mem_bytes = 4096 * MIB };
	struct advice a;

	policy_config_default(&cfg);
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_nodes("nodes", &a.nodes, "1", "advise", "fits");
	assert_nodes("mems", &a.mems, "1", "advise", "fits");
	assert_true(fabs(a.load_after - (1.6 + 2.0) / 8) < 1e-9);
	assert_int_equal(a.mem_free_after, 4096 * MIB);
	assert_non_null(strstr(a.detail, "util"));

	/* Bigger than a node: the two least busy together. */
	req.cpus = 10.0;
	req.mem_bytes = 1024 * MIB;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_nodes("nodes", &a.nodes, "1-2", "advise", "two nodes");
	snap_unref(s);
}

static void test_advise_reservations(void **state)
{
	struct policy_config cfg;
	struct snapshot *s = advise_host();
	struct advice_reservation r = { .cpus = 4.0, .mem_bytes = 1024 * MIB };
	struct advice_request req = { .cpus = 2.0, .mem_bytes = 2048 * MIB };
	struct advice a;

	policy_config_default(&cfg);
	/* The first request got node 1; promised to it, the second goes
	 * elsewhere: node 1 would be (1.6+4+2)/8 = 0.95 > 0.9. */
	mask_zero(&r.nodes);
	mask_set(&r.nodes, 1);
	req.nr_reservations = 1;
	req.reservations = &r;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_nodes("nodes", &a.nodes, "2", "advise", "reserved");

	/* Memory reservations count too: without CPUs promised, node 1
	 * would do, but 7000 of its 7936 MiB of room are promised. */
	r.cpus = 0;
	r.mem_bytes = 7000 * MIB;
	req.mem_bytes = 3000 * MIB;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_true(a.ok);
	assert_nodes("nodes", &a.nodes, "2", "advise", "reserved memory");
	r.mem_bytes = 0;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_nodes("nodes", &a.nodes, "1", "advise", "nothing reserved");
	snap_unref(s);
}

static void test_decide_respects_reservations(void **state)
{
	cpumask_t cpus;
	struct policy_config cfg;
	struct snapshot *s = advise_host();
	struct snap_guest *g;
	struct advice_reservation r = { .cpus = 4.0, .mem_bytes = 1024 * MIB };
	struct plan *p;
	struct pstate *next;
	const struct plan_item *it;

	(void)state;
	policy_config_default(&cfg);
	/* A guest spread over every node with its memory nowhere in
	 * particular consolidates onto the least busy node, node 1... */
	g = snap_add_guest(s);
	snprintf(g->id, sizeof(g->id), "spread");
	g->cpu_use = 1.5;
	snap_nodes_to_cpus(s, &(nodemask_t){ .w = { 0x7 } }, &cpus);
	g->cpus = snap_cpumask(s, &cpus);
	mask_parse("0-2", &g->mems);
	g->mem_node[0] = g->mem_node[1] = g->mem_node[2] = 256 * MIB;
	snap_finalize(s);
	assert_int_equal(decide_carried_out(&cfg, s, NULL, false, &p, &next), 0);
	it = find_item(p, "spread");
	assert_non_null(it);
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_nodes("to", &it->to_nodes, "1", "decide", "unreserved");
	plan_free(p);
	pstate_free(next);

	/* ...unless node 1's room is promised to a guest about to start. */
	mask_zero(&r.nodes);
	mask_set(&r.nodes, 1);
	assert_int_equal(policy_decide_reserved(&cfg, s, NULL, false, &r, 1, NULL, &p, &next), 0);
	it = find_item(p, "spread");
	assert_non_null(it);
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_nodes("to", &it->to_nodes, "2", "decide", "reserved");
	plan_free(p);
	pstate_free(next);
	assert_int_equal(policy_decide_reserved(&cfg, s, NULL, false, NULL, 1, NULL, &p, &next), -EINVAL);
	snap_unref(s);
}

/* A guest's demand never exceeds what its threads can use: two busy
 * 1-thread guests (1.0 CPU each; +20% headroom would be 1.2) both fit the
 * one 2-CPU node with room, filled to 100%; with 1.2 each the second
 * would not fit anywhere. */
/* The testbed's "misplaced" start (tests/numa-vm, 4 nodes x 2 CPUs): four
 * 1-CPU guests spread over every node, two with their memory on node 0,
 * two on node 1. Early in the cycle every node still carries a share of
 * the guests about to leave it, so no single node looks free enough for
 * the first guest decided, which would get two nodes (memory on one: its
 * one thread may then run on the other, kept there by the cool-down).
 * Each must end on one node — the one holding its memory: two one-thread
 * guests fit a 2-CPU node without headroom (local fit), so nothing has to
 * migrate, where moving two of them to the idle nodes 2 and 3 would
 * migrate 640 MiB and make them local later than the kernel's balancing
 * would. */
static const struct tcase spread_start = {
	.name = "spread start: every guest on one node, with its memory",
	.nn = 4,
	.nodes = { N(0, 2, 1024, 295, 0.5), N(1, 2, 1024, 347, 0.5), N(2, 2, 1024, 893, 0.5),
		   N(3, 2, 1024, 989, 0.5) },
	.g = { { .id = "web1", .use = 0.97, .on = "0-3", .mib = { 320, 0, 0, 0 } },
	       { .id = "web2", .use = 0.97, .on = "0-3", .mib = { 320, 0, 0, 0 } },
	       { .id = "db1", .use = 0.97, .on = "0-3", .mib = { 0, 320, 0, 0 } },
	       { .id = "db2", .use = 0.96, .on = "0-3", .mib = { 0, 320, 0, 0 } } },
};

static void test_spread_start_one_node_each(void **state)
{
	struct policy_config cfg;
	struct pstate *prev, *next = NULL;
	struct plan *p = NULL;
	struct snapshot *s;

	(void)state;
	policy_config_default(&cfg);
	s = build(&spread_start, &prev);
	assert_int_equal(decide_carried_out(&cfg, s, prev, false, &p, &next), 0);
	check_invariants(&cfg, s, p, next, spread_start.name);
	for (unsigned k = 0; k < 4; k++) {
		const char *id = spread_start.g[k].id;
		const struct plan_item *it = find_item(p, id);

		assert_non_null(it);
		if (it->kind != PLAN_MOVE || mask_count(&it->to_nodes) != 1 ||
		    !mask_test(&it->to_nodes, id[0] == 'w' ? 0 : 1) || it->migrate_bytes != 0)
			fail_msg("%s: %s %s: %s", id, plan_kind_name(it->kind), move_reason_name(it->reason),
				 it->detail);
		/* memory stays on that node */
		assert_true(mask_equal(&it->to_mems, &it->to_nodes));
	}
	assert_int_equal(p->migrate_bytes, 0);
	plan_free(p);
	pstate_free(prev);
	pstate_free(next);
	snap_unref(s);
}

/* A host of N nodes with 2 CPUs each (node i: CPUs 2i and 2i+1) and
 * MEM_MIB of memory each, FREE_MIB[i] of it free, BUSY[i] of its CPUs busy
 * (a fraction); taken at T0. */
static struct snapshot *host_2cpu(unsigned n, uint64_t mem_mib, const uint64_t *free_mib, const double *busy)
{
	struct snapshot *s = snap_new();
	struct snap_node *nodes = calloc(n, sizeof(*nodes));

	assert_non_null(nodes);
	for (unsigned i = 0; i < n; i++) {
		nodes[i].id = (int)i;
		mask_set(&nodes[i].cpus, 2 * i);
		mask_set(&nodes[i].cpus, 2 * i + 1);
		nodes[i].nr_cpus = 2;
		nodes[i].mem_total = mem_mib * MIB;
		nodes[i].mem_free = free_mib[i] * MIB;
		nodes[i].busy = busy[i];
	}
	snap_set_nodes(s, nodes, n, NULL);
	free(nodes);
	s->mono_ns = T0;
	return s;
}

/* A guest of S using USE CPUs in THREADS threads, on CPUS with MEMS; with
 * RUNS_ON >= 0 its use was measured all on that node index (cpu_node). */
static struct snap_guest *guest_on(struct snapshot *s, const char *id, double use, unsigned threads,
				   const char *cpus, const char *mems, int runs_on)
{
	struct snap_guest *g = snap_add_guest(s);
	cpumask_t c;

	snprintf(g->id, sizeof(g->id), "%s", id);
	g->cpu_use = use;
	g->nr_threads = threads;
	mask_parse(cpus, &c);
	g->cpus = snap_cpumask(s, &c);
	mask_parse(mems, &g->mems);
	if (runs_on >= 0) {
		g->cpu_node = calloc(s->nr_nodes, sizeof(double));
		g->cpu_node[runs_on] = use;
	}
	return g;
}

/* Finalize S, decide with the default policy, check the invariants; S
 * is released. */
static struct plan *decide_default(struct snapshot *s, const char *tc)
{
	struct policy_config cfg;
	struct pstate *next;
	struct plan *p;

	snap_finalize(s);
	policy_config_default(&cfg);
	assert_int_equal(decide_carried_out(&cfg, s, NULL, false, &p, &next), 0);
	if (tc)
		check_invariants(&cfg, s, p, next, tc);
	pstate_free(next);
	snap_unref(s);
	return p;
}

static void test_demand_capped_by_threads(void **state)
{
	/* node 0: only the guests' own share; node 1: 1.5 CPUs of other load */
	static const uint64_t free_mib[2] = { 6144, 6144 };
	static const double busy[2] = { 0.5, 1.0 };
	struct policy_config cfg;
	struct snapshot *s = host_2cpu(2, 8192, free_mib, busy);
	struct plan *p;
	struct pstate *next;
	unsigned moved_to_0 = 0;

	(void)state;
	for (int i = 0; i < 2; i++) {
		char id[32];

		snprintf(id, sizeof(id), "one-thread-%d", i);
		guest_on(s, id, 1.0, 1, "0-3", "0-1", -1)->mem_node[0] = 300 * MIB;
	}
	snap_finalize(s);
	policy_config_default(&cfg);
	/* Filling a node to 100% allowed, and not a load case by itself. */
	cfg.max_util = 1.0;
	cfg.rebalance_util = 1.0;
	assert_int_equal(decide_carried_out(&cfg, s, NULL, false, &p, &next), 0);
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		assert_int_equal(it->kind, PLAN_MOVE);
		assert_true(it->cpu_demand <= 1.0 + 1e-9);
		moved_to_0 += mask_test(&it->to_nodes, 0) && mask_count(&it->to_nodes) == 1;
	}
	/* Both go where their memory is: no migration. */
	assert_int_equal(moved_to_0, 2);
	assert_int_equal(p->migrate_bytes, 0);
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

/* Two 1-CPU guests free to run on both nodes, both running on node 1,
 * where their memory is; node 0 idle. Spread evenly over their CPUs,
 * their use would leave a phantom 1 CPU of "other" load on node 1, and
 * neither could stay there. Measured per node (cpu_node), one stays with
 * its memory and only the other migrates. */
static struct plan *two_on_node1(bool measured)
{
	static const uint64_t free_mib[2] = { 6144, 6144 };
	static const double busy[2] = { 0.0, 1.0 };
	struct snapshot *s = host_2cpu(2, 8192, free_mib, busy);

	for (int i = 0; i < 2; i++)
		guest_on(s, i ? "on-node1-1" : "on-node1-0", 1.0, 1, "0-3", "0-1", measured ? 1 : -1)->mem_node[1] =
			300 * MIB;
	return decide_default(s, NULL);
}

static void test_measured_node_share(void **state)
{
	struct plan *p;
	unsigned stay = 0;

	(void)state;
	p = two_on_node1(true);
	assert_int_equal(p->nr_moves, 2);
	for (unsigned i = 0; i < p->nr_items; i++)
		stay += p->items[i].kind == PLAN_MOVE && mask_count(&p->items[i].to_nodes) == 1 &&
			mask_test(&p->items[i].to_nodes, 1);
	/* Both fit node 1 without headroom (local fit): neither migrates. */
	assert_int_equal(stay, 2);
	assert_int_equal(p->migrate_bytes, 0);
	plan_free(p);
	/* The even spread put 1 CPU of theirs on idle node 0 and left a
	 * phantom 1 CPU of "other" load on node 1, and one of them migrated
	 * for nothing — until pctx_settle: node 1's load is what its guests
	 * own plus its share of the real unowned total (0 here). */
	p = two_on_node1(false);
	stay = 0;
	for (unsigned i = 0; i < p->nr_items; i++)
		stay += p->items[i].kind == PLAN_MOVE && mask_count(&p->items[i].to_nodes) == 1 &&
			mask_test(&p->items[i].to_nodes, 1);
	print_message("even spread: %u stay, %llu MiB\n", stay, (unsigned long long)(p->migrate_bytes / MIB));
	assert_int_equal(stay, 2);
	assert_int_equal(p->migrate_bytes, 0);
	plan_free(p);
}

/* The testbed's misplaced scenario as the agent measured it: four
 * unrestricted 1-thread guests, memory of web1/web2 on node 0 and of
 * db1/db2 on node 1, their threads (by chance) on nodes 0, 1, 3 and 1.
 * Node 1, holding the dbs' memory, is busy with web2 and db2, and web2 is
 * about to leave it: floaters' load counts as free room, so the dbs'
 * memory node stays usable. Two one-thread guests fit each 2-CPU node
 * without headroom (local fit), so none migrates (not two of them to the
 * idle nodes 2 and 3). */
static void test_floaters_make_room(void **state)
{
	static const struct {
		const char *id;
		int mem_node, runs_on;
	} gs[] = { { "web1", 0, 0 }, { "web2", 0, 1 }, { "db1", 1, 3 }, { "db2", 1, 1 } };
	static const uint64_t free_mib[4] = { 300, 300, 940, 940 };
	static const double busy[4] = { 0.5, 1.0, 0.0, 0.5 };
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct plan *p;
	unsigned stay = 0;

	(void)state;
	for (unsigned i = 0; i < 4; i++)
		guest_on(s, gs[i].id, 1.0, 2, "0-7", "0-3", gs[i].runs_on)->mem_node[gs[i].mem_node] = 320 * MIB;
	p = decide_default(s, "floaters");
	assert_int_equal(p->nr_moves, 4);
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		assert_int_equal(mask_count(&it->to_nodes), 1);
		stay += it->migrate_bytes == 0;
	}
	/* Two one-thread guests fit each 2-CPU node without headroom (local
	 * fit): all four stay with their memory. */
	if (stay != 4 || p->migrate_bytes != 0)
		fail_msg("%u guests stay with their memory, %llu MiB migrate (want 4, 0)", stay,
			 (unsigned long long)(p->migrate_bytes / MIB));
	plan_free(p);
}

/* One start of tests/numa-vm/guest/diag_misplaced_start.sh as the agent
 * measured it (its snapshot): four 2-thread guests, one busy thread
 * each, 320 MiB on node MEM_NODE each, their threads last seen on
 * RUNS_ON. All four must stay with their memory, nothing to migrate.
 * CPU_NODE_DB2, when set, is db2's own share of nodes 1 and 3. */
struct mstart_guest {
	const char *id;
	double use;
	int mem_node, runs_on;
};

static void misplaced_start(const struct mstart_guest *gs, const uint64_t *free_mib, const double *busy,
			    const double *cpu_node_db2, const char *tc)
{
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct plan *p;
	unsigned stay = 0;

	for (unsigned i = 0; i < 4; i++) {
		struct snap_guest *g = guest_on(s, gs[i].id, gs[i].use, 2, "0-7", "0-3", gs[i].runs_on);

		g->mem_node[gs[i].mem_node] = 320 * MIB;
		g->busy_threads = 1;
		g->busy_measured = true;
		if (cpu_node_db2 && strcmp(gs[i].id, "db2") == 0) {
			g->cpu_node[1] = cpu_node_db2[0];
			g->cpu_node[3] = cpu_node_db2[1];
		}
	}
	p = decide_default(s, tc);
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		print_message("%s: %s\n", it->guest_id, it->detail);
		stay += it->kind == PLAN_MOVE && mask_count(&it->to_nodes) == 1 && it->migrate_bytes < MIB;
	}
	if (stay != 4 || p->migrate_bytes != 0) {
		unsigned long long mig = p->migrate_bytes / MIB;

		plan_free(p);
		fail_msg("%s: %u guests stay with their memory, %llu MiB migrate (want 4, 0)", tc, stay, mig);
	}
	plan_free(p);
}

/* Start "1 0 0 1": threads set free a moment before the sample, so db1's
 * ticks, mostly run on node 0, count wholly on node 2, where it was last
 * seen. Node 0 measured 1.66 busy CPUs, of which its guests own 1.02
 * (web2); node 2 0.30, of which they own 1.00. The 0.64 nobody owns on
 * node 0 is db1's, not other load: web2 still fits beside web1 on node 0
 * with its memory. Without pctx_settle web2 would go to idle node 2 with
 * 320 MiB to migrate. */
static void test_phantom_load_of_a_moving_thread(void **state)
{
	static const struct mstart_guest gs[] = {
		{ "web1", 1.00, 0, 1 }, { "web2", 1.02, 0, 0 }, { "db1", 1.00, 1, 2 }, { "db2", 1.01, 1, 1 } };
	static const uint64_t free_mib[4] = { 336, 336, 890, 949 };
	static const double busy[4] = { 0.83, 1.0, 0.15, 0.01 };

	(void)state;
	misplaced_start(gs, free_mib, busy, NULL, "phantom_load");
}

/* Start "1 2 3 1": db2's busy thread measured 1.028 CPUs, its idle thread
 * 0.049 — 1.077 in all, one busy thread measured. Counted as two busy
 * threads (ceil(1.077 − 0.05)) it would fit no 2-CPU node beside db1 and
 * go to idle node 3 with 320 MiB to migrate; within the local fit's
 * slack it is one, and stays with its memory on node 1. */
static void test_jitter_is_no_second_busy_thread(void **state)
{
	static const struct mstart_guest gs[] = {
		{ "web1", 1.001, 0, 1 }, { "web2", 1.008, 0, 2 }, { "db1", 0.995, 1, 3 }, { "db2", 1.077, 1, 1 } };
	static const uint64_t free_mib[4] = { 311, 310, 915, 982 };
	static const double busy[4] = { 0.069, 1.0, 0.421, 0.455 };
	static const double db2[2] = { 1.028, 0.049 };

	(void)state;
	misplaced_start(gs, free_mib, busy, db2, "jitter_busy_threads");
}

/* Start "2 0 3 1", the window's node load measured low (0.55 to 0.71 busy
 * CPUs per node while each guest used 0.92–0.95 CPU): db2's own memory
 * node fits it with headroom at util 0.87 (≥ rebalance_util); dropped as
 * a target it would be moved off again (it would not: holds_memory), it
 * would send db2 to idle node 2 with its 320 MiB. */
static void test_low_node_load_window(void **state)
{
	static const struct mstart_guest gs[] = {
		{ "web1", 0.918, 0, 2 }, { "web2", 0.933, 0, 0 }, { "db1", 0.934, 1, 3 }, { "db2", 0.949, 1, 1 } };
	static const uint64_t free_mib[4] = { 345, 350, 918, 923 };
	static const double busy[4] = { 0.355, 0.309, 0.281, 0.273 };

	(void)state;
	misplaced_start(gs, free_mib, busy, NULL, "low_node_load_window");
}

/* One guest of the testbed's misplaced beside the kernel's balancing, at
 * the agent's first cycle: its use, the node index its thread ran on, its
 * memory per node (MiB) and its memory's node (index). */
struct kside_guest {
	const char *id;
	double use;
	int runs_on;
	uint64_t mib[4];
	int home;
};

/* The four guests of GS on the testbed's 4 x 2-CPU host (FREE_MIB, BUSY)
 * with the kernel's balancing on and no flow measured yet: every guest
 * must go to its memory's node (CPUs to the memory, two one-thread
 * guests a 2-CPU node), migrating at most MAX_MIB (what the kernel has
 * moved off those nodes, back). */
static void misplaced_beside_kernel(const struct kside_guest *gs, const uint64_t *free_mib, const double *busy,
				    uint64_t max_mib, const char *tc)
{
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct plan *p;
	unsigned home = 0;

	s->numa_balancing = 1;
	for (unsigned i = 0; i < 4; i++) {
		struct snap_guest *g = guest_on(s, gs[i].id, gs[i].use, 2, "0-7", "0-3", gs[i].runs_on);

		for (unsigned n = 0; n < 4; n++)
			g->mem_node[n] = gs[i].mib[n] * MIB;
		g->busy_threads = 1;
		g->busy_measured = true;
	}
	p = decide_default(s, tc);
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];
		int want = -1;
		char to[32];

		for (unsigned k = 0; k < 4; k++)
			if (strcmp(gs[k].id, it->guest_id) == 0)
				want = gs[k].home;
		mask_format(&it->to_nodes, to, sizeof(to));
		print_message("%s: %s to %s, %llu MiB: %s\n", it->guest_id, plan_kind_name(it->kind), to,
			      (unsigned long long)(it->migrate_bytes / MIB), it->detail);
		home += it->kind == PLAN_MOVE && mask_count(&it->to_nodes) == 1 && want >= 0 &&
			mask_test(&it->to_nodes, (unsigned)want);
	}
	if (home != 4 || p->migrate_bytes > max_mib * MIB) {
		unsigned long long mig = p->migrate_bytes / MIB;

		plan_free(p);
		fail_msg("%s: %u guests to their memory's node, %llu MiB to migrate (want 4, at most %llu)", tc, home,
			 mig, (unsigned long long)max_mib);
	}
	plan_free(p);
}

/* The testbed's misplaced beside the kernel's balancing, at the agent's
 * first cycle: web1/web2's memory on node 0, db1/db2's on node 1, their
 * threads by chance on nodes 3, 1, 0 and 2, and the kernel has already
 * moved 12-20 % of each onto its thread's node (no flow measured yet).
 * Two one-thread guests fit each 2-CPU memory node without headroom, as
 * with balancing off: all four go there, and what comes back is the
 * kernel's first moves (182 MiB). Held to all of their memory there, the
 * second guest on each memory node fitted it neither way and was pulled
 * with all its 328 MiB to an idle node (733 MiB). */
static void test_misplaced_beside_kernel_first_moves(void **state)
{
	static const struct kside_guest gs[] = { { "web1", 1.0, 3, { 290, 0, 0, 38 }, 0 },
						 { "web2", 1.0, 1, { 289, 39, 0, 0 }, 0 },
						 { "db1", 1.0, 0, { 66, 262, 0, 0 }, 1 },
						 { "db2", 1.0, 2, { 0, 289, 39, 0 }, 1 } };
	static const uint64_t free_mib[4] = { 316, 355, 850, 927 };
	static const double busy[4] = { 0.5, 0.5, 0.5, 0.5 };

	(void)state;
	misplaced_beside_kernel(gs, free_mib, busy, 182, "misplaced_beside_kernel");
}

/* The same a moment later, as the testbed's run met it: the kernel had
 * moved 20-35 % of each guest onto its thread's node (web2: 98 MiB onto
 * node 1, 222 MiB still on node 0). Web1 goes first (the most to gain)
 * and takes node 0; web2 then fits there only without headroom (util
 * 1.02), and an idle node scored lower with all its 320 MiB moved
 * (0.61 + 0.5 against 1.02 + 0.15 for the 98 MiB back): its CPUs went to
 * node 2 and the memory the kernel had carried to node 1 crossed again,
 * 1041 MiB moved in all where 346 MiB had to come back. Beside the
 * kernel a set holding the larger part of the memory goes first. */
static void test_misplaced_beside_kernel_later(void **state)
{
	static const struct kside_guest gs[] = { { "web1", 1.0225, 3, { 256, 0, 0, 64 }, 0 },
						 { "web2", 1.0212, 1, { 222, 98, 0, 0 }, 0 },
						 { "db1", 1.0228, 2, { 0, 248, 72, 0 }, 1 },
						 { "db2", 1.0226, 0, { 112, 208, 0, 0 }, 1 } };
	static const uint64_t free_mib[4] = { 300, 345, 884, 978 };
	static const double busy[4] = { 0.5, 0.37, 0.36, 0.36 };

	(void)state;
	misplaced_beside_kernel(gs, free_mib, busy, 346, "misplaced_beside_kernel_later");
}

/* The testbed's big-interleaved-pod at the agent's first cycle: a pod of
 * three busy threads (on nodes 1, 2 and 3) whose 1440 MiB are interleaved
 * over the four 1536 MiB nodes, and two one-thread guests whose 320 MiB
 * each are on node 0 (one thread there, one on node 3), every guest free
 * to run anywhere. No node set fits the pod with headroom; every pair
 * holds half of it, and the pairs differ by a MiB or two of its memory.
 * By that MiB it took nodes 0-1 (balancing on) or 0,3 (off), and both
 * small guests, which fit node 0 with their memory, had all of it moved
 * off (570-640 MiB). A pair without node 0 serves the pod as well and
 * leaves them where their memory is: nothing of theirs moves. */
static void big_pod_beside_small(int balancing, const char *tc)
{
	static const uint64_t free_mib[4] = { 476, 989, 1123, 1116 };
	static const double busy[4] = { 0.5, 0.5, 0.5, 1.0 };
	static const uint64_t pod_mib[4] = { 361, 359, 363, 357 };
	struct snapshot *s = host_2cpu(4, 1536, free_mib, busy);
	struct snap_guest *g;
	struct plan *p;
	uint64_t small_mig = 0;
	bool pod_on_0 = false;

	s->numa_balancing = balancing;
	g = guest_on(s, "pod", 3.025, 5, "0-7", "0-3", -1);
	g->cpu_node = calloc(4, sizeof(double));
	for (unsigned n = 0; n < 4; n++) {
		g->mem_node[n] = pod_mib[n] * MIB;
		g->cpu_node[n] = n ? 1.0 : 0.0;
	}
	g->busy_threads = 3;
	g->busy_measured = true;
	g = guest_on(s, "small1", 1.012, 2, "0-7", "0-3", 3);
	g->mem_node[0] = 318 * MIB;
	g->busy_threads = 1;
	g->busy_measured = true;
	g = guest_on(s, "small2", 1.012, 2, "0-7", "0-3", 0);
	g->mem_node[0] = 320 * MIB;
	g->busy_threads = 1;
	g->busy_measured = true;
	p = decide_default(s, tc);
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];
		char to[32];

		mask_format(&it->to_nodes, to, sizeof(to));
		print_message("%s: %s to %s, %llu MiB: %s\n", it->guest_id, plan_kind_name(it->kind), to,
			      (unsigned long long)(it->migrate_bytes / MIB), it->detail);
		if (it->kind != PLAN_MOVE)
			continue;
		if (strcmp(it->guest_id, "pod") == 0)
			pod_on_0 = mask_test(&it->to_nodes, 0);
		else
			small_mig += it->migrate_bytes;
	}
	plan_free(p);
	if (pod_on_0 || small_mig > 0)
		fail_msg("%s: the pod %s node 0, the small guests migrate %llu MiB (want: not on node 0, 0 MiB)", tc,
			 pod_on_0 ? "takes" : "leaves", (unsigned long long)(small_mig / MIB));
}

static void test_big_pod_leaves_small_guests_memory_node(void **state)
{
	(void)state;
	big_pod_beside_small(0, "big_pod_balancing_off");
	big_pod_beside_small(1, "big_pod_beside_kernel");
}

/* Part K of G: its cgroup, MEM (MiB per node), its CPU use per node
 * (CPU, NULL: not measured), busy threads, and its effective mems. */
static void part_on(struct snapshot *s, struct snap_guest *g, const char *cg, const uint64_t *mem,
		    const double *cpu, unsigned busy, const char *mems)
{
	struct snap_part *p = snap_guest_add_part(s, g, cg);

	for (unsigned n = 0; n < s->nr_nodes; n++)
		p->mem_node[n] = mem[n] * MIB;
	if (cpu) {
		p->cpu_node = calloc(s->nr_nodes, sizeof(double));
		for (unsigned n = 0; n < s->nr_nodes; n++) {
			p->cpu_node[n] = cpu[n];
			p->cpu_use += cpu[n];
		}
	}
	p->busy_threads = busy;
	mask_parse(mems, &p->mems);
}

/* The pod of big_pod_beside_small with its two containers as parts (a
 * 2-thread one holding two thirds of its memory, a 1-thread one the
 * rest, both interleaved), the pod on CPUS/MEMS with its threads on the
 * nodes A_CPU and B_CPU say. */
static struct snapshot *parts_host(const char *cpus, const char *mems, const uint64_t *a_mem, const double *a_cpu,
				   const uint64_t *b_mem, const double *b_cpu, const char *a_mems, const char *b_mems)
{
	static const uint64_t free_mib[4] = { 476, 989, 1123, 1116 };
	static const double busy[4] = { 0.5, 0.5, 0.5, 1.0 };
	struct snapshot *s = host_2cpu(4, 1536, free_mib, busy);
	struct snap_guest *g;

	g = guest_on(s, "pod", 3.0, 5, cpus, mems, -1);
	g->cpu_node = calloc(4, sizeof(double));
	for (unsigned n = 0; n < 4; n++) {
		g->mem_node[n] = (a_mem[n] + b_mem[n]) * MIB;
		g->cpu_node[n] = a_cpu[n] + b_cpu[n];
	}
	g->busy_threads = 3;
	g->busy_measured = true;
	part_on(s, g, "/kubepods/pod1/a", a_mem, a_cpu, 2, a_mems);
	part_on(s, g, "/kubepods/pod1/b", b_mem, b_cpu, 1, b_mems);
	g = guest_on(s, "small1", 1.0, 2, "0-7", "0-3", 3);
	g->mem_node[0] = 318 * MIB;
	g->busy_threads = 1;
	g->busy_measured = true;
	g = guest_on(s, "small2", 1.0, 2, "0-7", "0-3", 0);
	g->mem_node[0] = 320 * MIB;
	g->busy_threads = 1;
	g->busy_measured = true;
	return s;
}

static int first_node(const nodemask_t *m)
{
	return mask_first(m->w, MASK_BITS(m));
}

static const struct plan_item *item_of(const struct plan *p, const char *id)
{
	for (unsigned i = 0; i < p->nr_items; i++)
		if (strcmp(p->items[i].guest_id, id) == 0)
			return &p->items[i];
	return NULL;
}

/* The big-interleaved-pod with container cpusets: the pod goes to two
 * nodes, and each container gets a node of its own there (the 2-thread
 * one a whole node's CPUs, the other the other node), so each is local
 * once its memory follows; what must move is what each container has
 * off its own node, more than the pod's off the pair. */
static void test_pod_parts_split(void **state)
{
	static const uint64_t a_mem[4] = { 241, 239, 242, 238 }, b_mem[4] = { 120, 120, 121, 119 };
	static const double a_cpu[4] = { 0, 1, 1, 0 }, b_cpu[4] = { 0, 0, 0, 1 };
	struct snapshot *s = parts_host("0-7", "0-3", a_mem, a_cpu, b_mem, b_cpu, "0-3", "0-3");
	const struct plan_item *it;
	struct plan *p;
	uint64_t want = 0;
	int na, nb;

	(void)state;
	p = decide_default(s, "pod_parts_split");
	it = item_of(p, "pod");
	assert_non_null(it);
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_int_equal(mask_count(&it->to_nodes), 2);
	assert_int_equal(it->nr_parts, 2);
	assert_non_null(it->parts);
	assert_int_equal(mask_count(&it->parts[0].nodes), 1);
	assert_int_equal(mask_count(&it->parts[1].nodes), 1);
	assert_true(mask_subset(&it->parts[0].nodes, &it->to_nodes));
	assert_true(mask_subset(&it->parts[1].nodes, &it->to_nodes));
	assert_true(mask_equal(&it->parts[0].nodes, &it->parts[0].mems));
	na = first_node(&it->parts[0].nodes);
	nb = first_node(&it->parts[1].nodes);
	assert_int_not_equal(na, nb);
	for (unsigned n = 0; n < 4; n++)
		want += ((int)n != na ? a_mem[n] : 0) + ((int)n != nb ? b_mem[n] : 0);
	assert_int_equal(it->migrate_bytes, want * MIB);
	assert_non_null(strstr(it->detail, "containers: a to node"));
	plan_free(p);
}

/* The same pod with a migration budget that admits its move but not the
 * split's larger migration: the pod moves unsplit, within the budget,
 * and its record says why its containers kept the pod's nodes. */
static void test_pod_parts_split_within_budget(void **state)
{
	static const uint64_t a_mem[4] = { 241, 239, 242, 238 }, b_mem[4] = { 120, 120, 121, 119 };
	static const double a_cpu[4] = { 0, 1, 1, 0 }, b_cpu[4] = { 0, 0, 0, 1 };
	struct snapshot *s = parts_host("0-7", "0-3", a_mem, a_cpu, b_mem, b_cpu, "0-3", "0-3");
	struct policy_config cfg;
	struct pstate *next;
	const struct plan_item *it;
	struct plan *p;

	(void)state;
	snap_finalize(s);
	policy_config_default(&cfg);
	/* The pod's move off two of its four nodes is ~720 MiB; each
	 * container on a node of its own ~1080. */
	cfg.max_migrate_bytes = 800 * MIB;
	assert_int_equal(decide_carried_out(&cfg, s, NULL, false, &p, &next), 0);
	check_invariants(&cfg, s, p, next, "pod_parts_split_within_budget");
	it = item_of(p, "pod");
	assert_non_null(it);
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_int_equal(mask_count(&it->to_nodes), 2);
	assert_null(it->parts);
	assert_true(it->migrate_bytes <= 800 * MIB);
	assert_true(p->migrate_bytes <= 800 * MIB);
	assert_non_null(strstr(it->detail, "its containers not given nodes of their own"));
	plan_free(p);
	pstate_free(next);
	snap_unref(s);
}

/* The pod already on its two nodes, its memory all there, but each
 * container's threads and memory spread over both: a locality move onto
 * the same nodes that only re-splits. Once each container sits on its
 * own node with its memory, nothing more. */
static void test_pod_parts_resplit(void **state)
{
	static const uint64_t a_mem[4] = { 0, 480, 480, 0 }, b_mem[4] = { 0, 240, 240, 0 };
	static const double a_cpu[4] = { 0, 1, 1, 0 }, b_cpu[4] = { 0, 0.5, 0.5, 0 };
	static const uint64_t a_home[4] = { 0, 950, 10, 0 }, b_home[4] = { 0, 5, 475, 0 };
	static const double a_on[4] = { 0, 2, 0, 0 }, b_on[4] = { 0, 0, 1, 0 };
	struct snapshot *s = parts_host("2-5", "1-2", a_mem, a_cpu, b_mem, b_cpu, "1-2", "1-2");
	const struct plan_item *it;
	struct plan *p;

	(void)state;
	p = decide_default(s, "pod_parts_resplit");
	it = item_of(p, "pod");
	assert_non_null(it);
	assert_int_equal(it->kind, PLAN_MOVE);
	assert_int_equal(it->reason, REASON_LOCALITY);
	assert_true(mask_equal(&it->to_nodes, &it->from_nodes));
	assert_int_equal(it->nr_parts, 2);
	assert_int_not_equal(first_node(&it->parts[0].nodes), first_node(&it->parts[1].nodes));
	assert_true(it->migrate_bytes >= 480 * MIB);
	plan_free(p);

	s = parts_host("2-5", "1-2", a_home, a_on, b_home, b_on, "1", "2");
	p = decide_default(s, "pod_parts_home");
	it = item_of(p, "pod");
	assert_true(!it || it->kind != PLAN_MOVE);
	plan_free(p);
}

/* parts_split on tables: the bigger part first to the node with most of
 * its memory; a part that fits no node alone keeps the whole target; a
 * target of one node, or parts unmeasured, no split. */
static void test_parts_split_table(void **state)
{
	static const uint64_t a_mem[4] = { 0, 100, 300, 0 }, b_mem[4] = { 0, 200, 10, 0 };
	static const double a_cpu[4] = { 0, 1, 1, 0 }, b_cpu[4] = { 0, 1, 0, 0 };
	static const double big_cpu[4] = { 0, 2, 1, 0 };
	struct snapshot *s = parts_host("2-5", "1-2", a_mem, a_cpu, b_mem, b_cpu, "1-2", "1-2");
	struct plan_part pp[2];
	nodemask_t nodes, one;
	cpumask_t cpus;
	uint64_t mig = 0;

	(void)state;
	snap_finalize(s);
	mask_parse("1-2", &nodes);
	mask_parse("2-5", &cpus);
	/* a (2 CPUs, most memory on node 2) takes node 2; b node 1 */
	assert_int_equal(parts_split(s, &s->guests[0], &nodes, &nodes, &cpus, pp, &mig), 2);
	assert_int_equal(first_node(&pp[0].nodes), 2);
	assert_int_equal(first_node(&pp[1].nodes), 1);
	assert_int_equal(mig, (100 + 10) * MIB);
	snap_unref(s);
	/* a use read a little over its two busy threads still fits 2 CPUs */
	{
		static const double over[4] = { 0, 1.06, 1.06, 0 };

		s = parts_host("2-5", "1-2", a_mem, over, b_mem, b_cpu, "1-2", "1-2");
		snap_finalize(s);
		assert_int_equal(parts_split(s, &s->guests[0], &nodes, &nodes, &cpus, pp, &mig), 2);
		assert_int_equal(first_node(&pp[0].nodes), 2);
	}
	/* one node: nothing to split */
	mask_parse("1", &one);
	assert_int_equal(parts_split(s, &s->guests[0], &one, &one, &cpus, pp, NULL), 0);
	snap_unref(s);

	/* a needs 3 CPUs: no single node has them; it keeps the whole
	 * target, b still gets its node */
	s = parts_host("2-5", "1-2", a_mem, big_cpu, b_mem, b_cpu, "1-2", "1-2");
	s->guests[0].parts[0].busy_threads = 3;
	snap_finalize(s);
	assert_int_equal(parts_split(s, &s->guests[0], &nodes, &nodes, &cpus, pp, &mig), 1);
	assert_true(mask_equal(&pp[0].nodes, &nodes));
	assert_int_equal(mask_count(&pp[1].nodes), 1);
	snap_unref(s);

	/* not measured: no split */
	s = parts_host("2-5", "1-2", a_mem, a_cpu, b_mem, b_cpu, "1-2", "1-2");
	for (unsigned i = 0; i < 2; i++) {
		free(s->guests[0].parts[i].cpu_node);
		s->guests[0].parts[i].cpu_node = NULL;
		s->guests[0].parts[i].cpu_use = 0;
	}
	snap_finalize(s);
	assert_int_equal(parts_split(s, &s->guests[0], &nodes, &nodes, &cpus, pp, &mig), 0);
	snap_unref(s);
}

/* pctx_settle itself: with no node owning more than it measured the
 * load stays as measured (other load is real: hogs outside the guests);
 * with a node owning more, the surplus elsewhere shrinks by that much,
 * shared by surplus, and the host's total unowned load is kept. */
static void test_settle_keeps_real_other_load(void **state)
{
	static const uint64_t free_mib[4] = { 500, 500, 500, 500 };
	static const double busy[4] = { 0.5, 1.0, 0.15, 0.0 };  /* 1.0, 2.0, 0.3, 0 CPUs */
	struct policy_config cfg;
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct pctx x;
	/* 1: node 1's 2.0 CPUs are hogs nobody owns; the guests own what the
	 * nodes measured or less. */
	const double owned1[4] = { 1.0, 0.0, 0.3, 0.0 };
	/* 2: 0.7 owned on node 2 beyond its 0.3, 1.0 + 2.0 unowned on nodes
	 * 0 and 1: 3.0 − 0.7 = 2.3 really unowned, shared 1:2. */
	const double owned2[4] = { 0.0, 0.0, 1.0, 0.0 };

	(void)state;
	snap_finalize(s);
	policy_config_default(&cfg);
	pctx_init(&x, &cfg, s);
	pctx_settle(&x, owned1);
	assert_float_equal(x.busy[0], 1.0, 1e-9);
	assert_float_equal(x.busy[1], 2.0, 1e-9);
	assert_float_equal(x.busy[2], 0.3, 1e-9);
	assert_float_equal(x.busy[3], 0.0, 1e-9);
	pctx_fini(&x);
	pctx_init(&x, &cfg, s);
	pctx_settle(&x, owned2);
	assert_float_equal(x.busy[0], 2.3 / 3.0, 1e-9);
	assert_float_equal(x.busy[1], 2.0 * 2.3 / 3.0, 1e-9);
	assert_float_equal(x.busy[2], 1.0, 1e-9);
	assert_float_equal(x.busy[0] + x.busy[1] + x.busy[2] + x.busy[3] - 1.0, 2.3, 1e-9);
	/* and a reset starts from there again */
	x.busy[0] = 5.0;
	pctx_reset(&x);
	assert_float_equal(x.busy[0], 2.3 / 3.0, 1e-9);
	pctx_fini(&x);
	snap_unref(s);
}

/* The testbed's oversubscribed scenario: six 2-thread guests (12 busy
 * threads on 8 CPUs, each guest 1.33 CPUs) with their memory over all
 * nodes. Nothing fits with headroom but a guest's own node, and there is
 * no room to float to; rather than leave them spread (half remote) each
 * guest is placed on one node of its own as far as there are
 * nodes — the least loaded that holds its two busy threads — with its
 * memory there. Once with the testbed's nodes (room for one guest each
 * above the reserve) and once with memory to spare: there, a guest that
 * counted its own load against its node (its share taken as floated when
 * nothing floated; the guards' floated flag) would send two guests to
 * node 2 while node 3 stood empty. */
static void test_oversubscribed_local_least_loaded(void **state)
{
	static const uint64_t total_mib[2] = { 1024, 8192 };

	(void)state;
	for (unsigned h = 0; h < 2; h++) {
		const uint64_t free_mib[4] = { total_mib[h] - 454, total_mib[h] - 454, total_mib[h] - 454,
					       total_mib[h] - 454 };
		static const double busy[4] = { 1.0, 1.0, 1.0, 1.0 };
		struct snapshot *s = host_2cpu(4, total_mib[h], free_mib, busy);
		nodemask_t used;
		struct plan *p;

		for (int i = 0; i < 6; i++) {
			static const char *const ids[6] = { "w1", "w2", "w3", "w4", "w5", "w6" };
			struct snap_guest *g = guest_on(s, ids[i], 8.0 / 6.0, 2, "0-7", "0-3", i % 4);

			g->busy_threads = 2;
			g->busy_measured = true;
			for (int n = 0; n < 4; n++)
				g->mem_node[n] = 75 * MIB;
		}
		p = decide_default(s, "oversubscribed");
		/* max_moves (4): four this cycle, each alone on a node. */
		assert_int_equal(p->nr_moves, 4);
		mask_zero(&used);
		for (unsigned i = 0; i < p->nr_items; i++) {
			const struct plan_item *it = &p->items[i];

			if (it->kind != PLAN_MOVE)
				continue;
			if (mask_count(&it->to_nodes) != 1 || !mask_equal(&it->to_nodes, &it->to_mems) ||
			    mask_intersects(&it->to_nodes, &used))
				fail_msg("%llu MiB nodes: %s: %s", (unsigned long long)total_mib[h], it->guest_id,
					 it->detail);
			mask_or(&used, &used, &it->to_nodes);
			assert_int_equal(it->migrate_bytes, 225 * MIB);
		}
		plan_free(p);
	}
}

/* cooldown = auto: each move earns a cool-down sized by its cost. "dear"
 * pulls 1 GiB at the measured 40 MiB/s (25.6 s of the mover's time: 10x
 * that, 256 s), "cheap" moves its CPUs alone (the floor: 2 intervals,
 * 30 s). The next cycles: at 15 s both are held; at 45 s the cheap one
 * may be corrected, the dear one is not moved again for minutes. A fixed
 * cool-down (the number) holds both alike. */
static void test_auto_cooldown_by_cost(void **state)
{
	static const struct tcase tc = {
		.name = "auto cool-down by cost",
		.nn = 2, .nodes = { N8(0, 8192, 0.05), N8(1, 8192, 0.95) },
		.g = { { .id = "cheap", .use = 1.0, .on = "0-1", .mib = { 2048, 0 } },
		       { .id = "dear", .use = 0.5, .on = "0", .mib = { 0, 1024 } } },
	};

	(void)state;
	for (int fixed = 0; fixed < 2; fixed++) {
		struct policy_config cfg;
		struct pstate *prev, *next;
		struct plan *p;
		struct snapshot *s;
		const struct plan_item *cheap, *dear;

		policy_config_default(&cfg);
		told(&cfg, 40);
		cfg.cooldown_auto = !fixed;
		s = build(&tc, &prev);
		assert_int_equal(decide_carried_out(&cfg, s, prev, true, &p, &next), 0);
		cheap = find_item(p, "cheap");
		dear = find_item(p, "dear");
		assert_non_null(cheap);
		assert_non_null(dear);
		if (cheap->kind != PLAN_MOVE || cheap->migrate_bytes || dear->kind != PLAN_MOVE ||
		    dear->migrate_bytes != 1024 * MIB)
			fail_msg("cheap: %s, dear: %s", cheap->detail, dear->detail);
		assert_int_equal(pstate_find(next, "cheap")->cooldown_ns, fixed ? 300 * SEC : 30 * SEC);
		assert_int_equal(pstate_find(next, "dear")->cooldown_ns, fixed ? 300 * SEC : 256 * SEC);
		plan_free(p);
		pstate_free(prev);
		for (int later = 15; later <= 45; later += 30) {
			struct pstate *again;

			s->mono_ns = T0 + later * SEC;
			assert_int_equal(decide_carried_out(&cfg, s, next, true, &p, &again), 0);
			assert_int_equal(find_item(p, "dear")->skip, SKIP_COOLDOWN);
			if (later == 45 && !fixed)
				assert_int_equal(find_item(p, "cheap")->kind, PLAN_MOVE);
			else
				assert_int_equal(find_item(p, "cheap")->skip, SKIP_COOLDOWN);
			plan_free(p);
			pstate_free(again);
		}
		pstate_free(next);
		snap_unref(s);
	}
}

/* The auto budgets and cool-downs as sized (policy_resolve,
 * policy_move_cooldown): from the workers and the measured rate once
 * told, the numbers until then, a number given always. */
static void test_auto_sizing(void **state)
{
	struct policy_config c, r;
	char why[160];

	(void)state;
	policy_config_default(&c);
	assert_true(c.max_moves_auto && c.max_migrate_auto && c.cooldown_auto);
	/* not told: the numbers */
	policy_resolve(&c, &r);
	assert_int_equal(r.max_moves, 4);
	assert_int_equal(r.max_migrate_bytes, 4096 * MIB);
	assert_int_equal(policy_move_cooldown(&c, 0, NULL, 0), 300 * SEC);
	/* told: 6 workers, 80 MiB/s x 20 s is under the floor */
	c.in = (struct policy_mover_in){ .interval_s = 20, .workers = 6, .rate_mibs = 80 };
	policy_resolve(&c, &r);
	assert_int_equal(r.max_moves, 6);
	assert_int_equal(r.max_migrate_bytes, 4096 * MIB);
	policy_migrate_why(&r, why, sizeof(why));
	assert_string_equal(why, "4096 MiB, auto's floor (80 MiB/s measured x 20 s is 1600 MiB)");
	/* 400 MiB/s x 20 s is over it */
	c.in.rate_mibs = 400;
	policy_resolve(&c, &r);
	assert_int_equal(r.max_migrate_bytes, 8000 * MIB);
	policy_migrate_why(&r, why, sizeof(why));
	assert_string_equal(why, "8000 MiB = 400 MiB/s measured x 20 s");
	c.in.rate_mibs = 80;
	policy_moves_why(&r, why, sizeof(why));
	assert_string_equal(why, "6 = [memory] workers");
	/* the rate budget caps it */
	c.in.rate_cap_mibs = 50;
	policy_resolve(&c, &r);
	assert_int_equal(r.max_migrate_bytes, 1000 * MIB);
	policy_migrate_why(&r, why, sizeof(why));
	assert_string_equal(why, "1000 MiB = rate_mib 50 MiB/s x 20 s");
	c.in.rate_cap_mibs = 0;
	/* cool-downs: free 40 s (2 intervals), 800 MiB 10 x 10 s = 100 s,
	 * 8 GiB the most, a migrating move unmeasured the most */
	assert_int_equal(policy_move_cooldown(&c, 0, NULL, 0), 40 * SEC);
	assert_int_equal(policy_move_cooldown(&c, 800 * MIB, why, sizeof(why)), 100 * SEC);
	assert_non_null(strstr(why, "10 x 10.0 s to migrate 800 MiB at 80 MiB/s"));
	assert_int_equal(policy_move_cooldown(&c, 8192 * MIB, NULL, 0), 300 * SEC);
	/* once its job has ended: by what it measured */
	assert_int_equal(policy_job_cooldown(&c, 12.0), 120 * SEC);
	assert_int_equal(policy_job_cooldown(&c, 1.0), 40 * SEC);
	assert_int_equal(policy_job_cooldown(&c, 100.0), 300 * SEC);
	c.in.interval_s = 5;
	assert_int_equal(policy_move_cooldown(&c, 0, NULL, 0), 30 * SEC);
	c.in.rate_mibs = 0;
	assert_int_equal(policy_move_cooldown(&c, 64 * MIB, NULL, 0), 300 * SEC);
	assert_int_equal(policy_guest_cooldown(&c, 30 * SEC), 30 * SEC);
	assert_int_equal(policy_guest_cooldown(&c, 0), 300 * SEC);
	/* numbers given: as they are, whatever was told */
	c.in.rate_mibs = 80;
	c.max_moves_auto = c.max_migrate_auto = c.cooldown_auto = false;
	c.max_moves = 3;
	c.max_migrate_bytes = 512 * MIB;
	c.cooldown_ns = 120 * SEC;
	policy_resolve(&c, &r);
	assert_int_equal(r.max_moves, 3);
	assert_int_equal(r.max_migrate_bytes, 512 * MIB);
	assert_int_equal(policy_move_cooldown(&c, 0, NULL, 0), 120 * SEC);
	assert_int_equal(policy_job_cooldown(&c, 12.0), 120 * SEC);
	assert_int_equal(policy_job_cooldown(&c, 1.0), 120 * SEC);
	assert_int_equal(policy_guest_cooldown(&c, 30 * SEC), 120 * SEC);
}

/* The libvirt-in-VM check's domain (test_vm_mover.sh): two vCPUs spinning
 * at ~1 CPU each, pinned apart before the agent starts — vCPU 0 and the
 * emulator on node 1's two CPUs, vCPU 1 on node 2's — and its 145 MiB on
 * node 0, whose two CPUs are full of spinners; node 3 idle. QEMU's
 * process uses more than its vCPUs (emulator and RCU threads under TCG).
 * Both vCPUs fit one node: the domain goes onto one node with all its
 * memory, every vCPU local. Counting the process's use (2.2 CPUs, not
 * its vCPUs' 2) as a third busy thread would let nodes 1-2 (CPUs 2-5)
 * fit it as they are: its memory onto node 1, and vCPU 1, on node 2,
 * with none of it local. */
static void test_vm_emulator_use_is_no_busy_vcpu(void **state)
{
	static const uint64_t free_mib[4] = { 1200, 1400, 1400, 1400 };
	static const double uses[] = { 2.25, 2.05, 1.6 };

	(void)state;
	for (unsigned u = 0; u < sizeof(uses) / sizeof(uses[0]); u++) {
		double v0 = fmin(1.0, uses[u] / 2), v1 = fmin(0.98, uses[u] / 2);
		double on1 = uses[u] - v1;
		double busy[4] = { 1.0, on1 / 2, v1 / 2, 0.02 };
		struct snapshot *s = host_2cpu(4, 1536, free_mib, busy);
		struct snap_guest *g = guest_on(s, "vm2", uses[u], 7, "2-5", "0", -1);
		struct plan *p;
		unsigned moved = 0;

		g->kind = GUEST_VM;
		g->vm = calloc(1, sizeof(*g->vm));
		g->vm->nr_vcpus = 2;
		g->vm->vcpu_use = calloc(2, sizeof(double));
		g->vm->vcpu_use[0] = v0;
		g->vm->vcpu_use[1] = v1;
		g->busy_threads = 2;
		g->busy_measured = true;
		g->cpu_node = calloc(4, sizeof(double));
		g->cpu_node[1] = on1;
		g->cpu_node[2] = v1;
		g->mem_node[0] = 145 * MIB;
		p = decide_default(s, "vm_emulator_use");
		for (unsigned i = 0; i < p->nr_items; i++) {
			const struct plan_item *it = &p->items[i];

			print_message("use %.2f: %s: %s\n", uses[u], it->guest_id, it->detail);
			if (it->kind != PLAN_MOVE)
				continue;
			if (mask_count(&it->to_nodes) != 1 || !mask_equal(&it->to_nodes, &it->to_mems) ||
			    mask_test(&it->to_nodes, 0))
				fail_msg("use %.2f: %s", uses[u], it->detail);
			moved++;
		}
		assert_int_equal(moved, 1);
		plan_free(p);
	}
}

/* The testbed's memtight with its threads' start fixed (run_on): x and
 * y, one busy thread each, both on node 0's two CPUs, their 350 MiB on
 * node 1 (64 KiB stray on node 0), node 1 idle but for 0.4 CPU of
 * background (numaorchd's own start-up), nodes 2 and 3 full of hogs,
 * node 0 full of an idle cache. Node 1 holds both threads (two CPUs)
 * with their memory: both go there and nothing migrates, rather than y
 * going "nothing fits with headroom: least loaded" to node 2 among two
 * hogs with its 350 MiB. */
static void test_memtight_both_to_their_memory(void **state)
{
	static const uint64_t free_mib[4] = { 246, 281, 824, 922 };
	static const double busy[4] = { 1.0, 0.2, 1.0, 1.0 };  /* of each node's CPUs */
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct snap_guest *g;
	struct plan *p;
	unsigned on1 = 0;

	(void)state;
	g = guest_on(s, "cache", 0.0, 1, "0-1", "0", 0);
	g->mem_node[0] = 700 * MIB;
	for (int i = 0; i < 2; i++) {
		g = guest_on(s, i ? "hog3" : "hog2", 2.0, 3, i ? "6-7" : "4-5", i ? "3" : "2", 2 + i);
		g->mem_node[2 + i] = 64 * MIB;
		g->busy_threads = 2;
		g->busy_measured = true;
	}
	for (int i = 0; i < 2; i++) {
		g = guest_on(s, i ? "y" : "x", 1.03, 2, "0-7", "0-3", 0);
		g->mem_node[0] = 64 * 1024;
		g->mem_node[1] = 350 * MIB;
		g->busy_threads = 1;
		g->busy_measured = true;
	}
	p = decide_default(s, "memtight_fixed_start");
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		print_message("%s: %s\n", it->guest_id, it->detail);
		if (strcmp(it->guest_id, "x") != 0 && strcmp(it->guest_id, "y") != 0)
			continue;
		if (it->kind == PLAN_MOVE && mask_count(&it->to_nodes) == 1 && mask_test(&it->to_nodes, 1) &&
		    it->migrate_bytes < MIB)
			on1++;
	}
	assert_int_equal(on1, 2);
	plan_free(p);
}

/* The testbed's oversubscribed: w6 placed on nodes 0,2 (node 2 alone had
 * no room yet: other guests' pages were still leaving it), both its
 * threads then on node 2 with 76 MiB left on node 0. Held by the
 * cool-down, the shrink onto node 2 would wait for all of it. A shrink
 * onto the nodes where its threads already run moves no thread: it goes
 * ahead inside the cool-down; a relocation does not. */
static void test_shrink_onto_threads_inside_cooldown(void **state)
{
	static const uint64_t free_mib[4] = { 470, 540, 460, 410 };
	static const double busy[4] = { 1.0, 1.0, 1.0, 1.0 };
	struct policy_config cfg;
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct snap_guest *g;
	struct pstate *st = pstate_new(), *next;
	const struct plan_item *it;
	struct plan *p;

	(void)state;
	for (int i = 0; i < 2; i++) {
		g = guest_on(s, i ? "w5" : "w3", 1.0, 3, "0-1", "0-3", 0);
		g->mem_node[0] = 300 * MIB;
		g->busy_threads = 2;
		g->busy_measured = true;
		g = guest_on(s, i ? "w4" : "w1", 1.0, 3, "2-3", "0-3", 1);
		g->mem_node[1] = 300 * MIB;
		g->busy_threads = 2;
		g->busy_measured = true;
	}
	g = guest_on(s, "w2", 2.0, 3, "6-7", "0-3", 3);
	g->mem_node[3] = 300 * MIB;
	g->busy_threads = 2;
	g->busy_measured = true;
	g = guest_on(s, "w6", 2.0, 3, "0-1,4-5", "0-3", 2);
	g->mem_node[0] = 76 * MIB;
	g->mem_node[2] = 231 * MIB;
	g->busy_threads = 2;
	g->busy_measured = true;
	snap_finalize(s);
	policy_config_default(&cfg);
	for (const char *const *id = (const char *const[]){ "w1", "w2", "w3", "w4", "w5", "w6", NULL }; *id; id++)
		pstate_note_move(st, *id, s->mono_ns - 16 * SEC);
	assert_int_equal(decide_carried_out(&cfg, s, st, false, &p, &next), 0);
	check_invariants(&cfg, s, p, next, "shrink_in_cooldown");
	it = find_item(p, "w6");
	assert_non_null(it);
	print_message("w6: %s\n", it->detail);
	if (it->kind != PLAN_MOVE || mask_count(&it->to_nodes) != 1 || !mask_test(&it->to_nodes, 2))
		fail_msg("w6 does not narrow onto node 2: %s", it->detail);
	assert_int_equal(it->migrate_bytes, 76 * MIB);
	/* The others are where they belong, or held by the cool-down. */
	for (unsigned i = 0; i < p->nr_items; i++)
		if (strcmp(p->items[i].guest_id, "w6") != 0 && p->items[i].kind == PLAN_MOVE)
			fail_msg("%s moves inside its cool-down: %s", p->items[i].guest_id, p->items[i].detail);
	plan_free(p);
	pstate_free(st);
	pstate_free(next);
	snap_unref(s);
}

/* The testbed's crowded scenario: three busy one-thread guests (240 MiB
 * each) whose runtime confined them to node 0's two CPUs, 0.67 CPU each;
 * nodes 1-3 nearly idle. Three threads do not fit two CPUs (a local fit
 * counts a CPU per busy thread, not their 0.67 each): one moves to another
 * node with its memory. The other two then fit node 0 without headroom
 * with their memory there (local fit): moving them too would migrate
 * 480 MiB where 240 MiB removes the crowding. */
static void test_crowded_two_stay_local(void **state)
{
	static const uint64_t free_mib[4] = { 250, 990, 990, 990 };
	/* a little other load on nodes 1-3: moving for relief alone would
	 * not pay for the migration */
	static const double busy[4] = { 1.0, 0.3, 0.3, 0.3 };
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct plan *p;
	unsigned moved = 0;

	(void)state;
	for (int i = 0; i < 3; i++) {
		static const char *const ids[3] = { "api1", "api2", "api3" };
		struct snap_guest *g = guest_on(s, ids[i], 2.0 / 3.0, 1, "0-1", "0", 0);

		g->mem_node[0] = 240 * MIB;
	}
	p = decide_default(s, "crowded");
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		if (it->kind != PLAN_MOVE)
			continue;
		moved++;
		if (mask_test(&it->to_nodes, 0) || it->migrate_bytes != 240 * MIB)
			fail_msg("%s: %s", it->guest_id, it->detail);
	}
	assert_int_equal(moved, 1);
	plan_free(p);
}

/* A guest with four busy threads on two 2-CPU nodes (they fill both, so
 * it keeps both), its 800 MiB first touched on node 1 while its threads
 * now all run on node 0 (node 1's CPUs busy with others): 0 % local where
 * they run. With the kernel's NUMA balancing off nothing else moves pages
 * inside a set: its memory follows its threads onto node 0, CPUs
 * unchanged. With balancing on it is the kernel's job (settled); where the
 * threads' node lacks room it stays SKIP_IN_SET. */
static struct plan *spread_two(int balancing, uint64_t free_mib)
{
	const uint64_t free_m[2] = { free_mib, 1500 };
	static const double busy[2] = { 1.0, 0.5 };
	struct snapshot *s = host_2cpu(2, 2048, free_m, busy);
	struct snap_guest *g = guest_on(s, "four", 2.0, 4, "0-3", "0-1", 0);

	g->busy_threads = 4;
	g->busy_measured = true;
	g->mem_node[1] = 800 * MIB;
	s->numa_balancing = balancing;
	return decide_default(s, "spread two");
}

static void test_spread_memory_follows_threads(void **state)
{
	struct plan *p;
	const struct plan_item *it;

	(void)state;
	p = spread_two(0, 1500);
	it = find_item(p, "four");
	assert_non_null(it);
	if (it->kind != PLAN_MOVE || it->reason != REASON_LOCALITY || it->migrate_bytes != 800 * MIB)
		fail_msg("%s %s: %s", plan_kind_name(it->kind), move_reason_name(it->reason), it->detail);
	assert_nodes("cpus", &it->to_nodes, "0-1", "spread two", "four");
	assert_nodes("mems", &it->to_mems, "0", "spread two", "four");
	plan_free(p);
	p = spread_two(1, 1500);
	assert_null(find_item(p, "four"));   /* settled: the kernel's balancing */
	plan_free(p);
	p = spread_two(0, 600);
	it = find_item(p, "four");
	assert_non_null(it);
	if (it->kind != PLAN_SKIP || it->skip != SKIP_IN_SET)
		fail_msg("%s: %s", plan_kind_name(it->kind), it->detail);
	plan_free(p);
}

/* A one-thread guest pinned to nodes 0-1 (cpus and mems: the pin), its
 * thread on node 0, its 600 MiB on node 1: 100 % of its memory inside
 * the pin, 0 % local where it runs. It was settled ("settled on pinned
 * nodes"), since no cpuset write can do better. With the kernel's
 * balancing off its memory now follows its thread inside the pin — the
 * cpuset as pinned, the mover putting it on node 0 (first_node) — and it
 * is settled once there, so nothing moves again; with balancing on it
 * is the kernel's job. */
static struct snapshot *pinned_two_snap(int balancing, unsigned on0_mib)
{
	static const uint64_t free_mib[2] = { 1500, 1500 };
	static const double busy[2] = { 0.5, 0.0 };
	struct snapshot *s = host_2cpu(2, 2048, free_mib, busy);
	struct snap_guest *g = guest_on(s, "pin", 1.0, 1, "0-3", "0-1", 0);

	g->policy.mode = GPOL_PINNED;
	mask_parse("0-1", &g->policy.nodes);
	g->busy_threads = 1;
	g->busy_measured = true;
	g->mem_node[0] = on0_mib * MIB;
	g->mem_node[1] = (600 - on0_mib) * MIB;
	s->numa_balancing = balancing;
	return s;
}

static struct plan *pinned_two(int balancing, unsigned on0_mib)
{
	return decide_default(pinned_two_snap(balancing, on0_mib), "pinned two");
}

static void test_pinned_memory_follows_threads(void **state)
{
	const struct plan_item *it;
	struct plan *p;

	(void)state;
	p = pinned_two(0, 0);
	it = find_item(p, "pin");
	assert_non_null(it);
	if (it->kind != PLAN_MOVE || it->reason != REASON_PINNED || it->first_bytes != 600 * MIB ||
	    it->first_node != 0 || it->migrate_bytes != 600 * MIB)
		fail_msg("%s %s: %s", plan_kind_name(it->kind), move_reason_name(it->reason), it->detail);
	assert_nodes("cpus", &it->to_nodes, "0-1", "pinned two", "pin");
	assert_nodes("mems", &it->to_mems, "0-1", "pinned two", "pin");
	plan_free(p);
	/* the kernel's balancing on: its job */
	p = pinned_two(1, 0);
	assert_null(find_item(p, "pin"));
	plan_free(p);
	/* once the memory is there: settled */
	p = pinned_two(0, 600);
	assert_null(find_item(p, "pin"));
	plan_free(p);
}

/* The same guest 10 s after a move (the operator's pin onto nodes 0-1,
 * or the agent's spread), under the default 300 s cool-down. The move
 * is what put its thread on node 0 away from its memory, so the first
 * pull is not held: else it would run remote for the rest of the
 * cool-down (the testbed's spread_guest_measured_soon runs with the
 * default cool-down for that).
 * That pull is noted as one (last_follow), and a second pull inside the
 * cool-down — the scheduler moved the thread again — is held. */
static struct plan *pinned_two_after(const struct pstate *prev, struct pstate **next)
{
	struct snapshot *s = pinned_two_snap(0, 0);
	struct policy_config cfg;
	struct plan *p;

	snap_finalize(s);
	policy_config_default(&cfg);
	assert_true(cfg.cooldown_ns == 300 * SEC);
	assert_int_equal(decide_carried_out(&cfg, s, prev, true, &p, next), 0);
	check_invariants(&cfg, s, p, *next, "pinned two after a move");
	snap_unref(s);
	return p;
}

static void test_pinned_follow_after_a_move(void **state)
{
	struct pstate *prev = pstate_new(), *next = NULL, *next2 = NULL;
	const struct pstate_entry *e;
	const struct plan_item *it;
	struct plan *p;

	(void)state;
	pstate_note_move(prev, "pin", T0 - 10 * SEC);
	p = pinned_two_after(prev, &next);
	it = find_item(p, "pin");
	assert_non_null(it);
	if (it->kind != PLAN_MOVE || !it->follow || it->first_node != 0 || it->first_bytes != 600 * MIB)
		fail_msg("%s %s: %s", plan_kind_name(it->kind), move_reason_name(it->reason), it->detail);
	e = pstate_find(next, "pin");
	assert_non_null(e);
	assert_true(e->last_follow && e->last_move_ns == T0 && e->nr_moves == 2);
	plan_free(p);
	/* its memory was pulled 10 s ago and the thread is away again: held */
	pstate_free(prev);
	prev = pstate_new();
	pstate_note_follow(prev, "pin", T0 - 10 * SEC);
	p = pinned_two_after(prev, &next2);
	it = find_item(p, "pin");
	assert_non_null(it);
	if (it->kind != PLAN_SKIP || it->skip != SKIP_COOLDOWN)
		fail_msg("%s: %s", plan_kind_name(it->kind), it->detail);
	e = pstate_find(next2, "pin");
	assert_true(e && e->last_follow && e->last_move_ns == T0 - 10 * SEC);
	plan_free(p);
	/* a move that is not a pull clears the mark */
	pstate_note_move(prev, "pin", T0);
	assert_false(pstate_find(prev, "pin")->last_follow);
	pstate_free(next2);
	pstate_free(next);
	pstate_free(prev);
}

/* The testbed's oversubscribed scenario after its first cycles: four
 * 2-thread guests alone on a node each with their 300 MiB, the last two
 * (w2, w6) still on every node with 76 MiB on each; nodes 425-486 MiB
 * free, min_free 256 MiB. Each of w2 and w6 fits one node only with the
 * room the other would leave; planned there both, the applier would
 * refuse both (real free memory), every cycle. Memory a move leaves is
 * credited only when that move does not need credit itself: at least one
 * of them gets a target its migration fits as the applier will find it. */
static void test_no_mutual_room_credit(void **state)
{
	static const uint64_t free_mib[4] = { 450, 437, 415, 474 };
	static const double busy[4] = { 1.0, 1.0, 1.0, 1.0 };
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct policy_config cfg;
	struct plan *p;
	unsigned grounded = 0, moves = 0;

	(void)state;
	for (int i = 0; i < 4; i++) {
		static const char *const ids[4] = { "w1", "w3", "w4", "w5" };
		char c[8];
		struct snap_guest *g;

		snprintf(c, sizeof(c), "%d-%d", 2 * i, 2 * i + 1);
		g = guest_on(s, ids[i], 1.35, 3, c, "0-3", i);
		g->mem_node[i] = 300 * MIB;
	}
	for (int i = 0; i < 2; i++) {
		struct snap_guest *g = guest_on(s, i ? "w6" : "w2", 1.35, 3, "0-7", "0-3", i ? 3 : 0);

		g->cpu_node[i ? 3 : 0] = 0.7;
		g->cpu_node[i ? 2 : 1] = 0.65;
		g->busy_threads = 2;
		g->busy_measured = true;
		for (int n = 0; n < 4; n++)
			g->mem_node[n] = 76 * MIB;
	}
	snap_finalize(s);
	policy_config_default(&cfg);
	/* one reference for decide_default to drop, one kept (snap_ref counts on const pointers) */
	snap_ref(s);
	p = decide_default(s, NULL);
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];
		uint64_t real = 0;

		if (it->kind != PLAN_MOVE)
			continue;
		moves++;
		mask_foreach(id, &it->to_mems) {
			const struct snap_node *nd = &s->nodes[snap_node_index(s, id)];

			uint64_t keep = policy_reserve(cfg.min_free_bytes, cfg.min_free_share, nd->mem_total);

			if (nd->mem_free > keep)
				real += nd->mem_free - keep;
		}
		grounded += real >= it->migrate_bytes;
		print_message("%s: %s\n", it->guest_id, it->detail);
	}
	if (moves && !grounded)
		fail_msg("%u moves, none fits the nodes' real free memory", moves);
	assert_true(grounded >= 1);
	plan_free(p);
	snap_unref(s);
}

/* The testbed's oversubscribed scenario at its third cycle: five guests
 * placed one or two cycles before, each on one node (w3, w4 on node 0;
 * w5, w1 on node 1; w6 on node 3), their memory still interleaved
 * (75 MiB on every node), their mover jobs just started; w2 still on
 * every node. Node 2 — the least loaded, none of the
 * five placed there — had 377 MiB free (121 above the reserve), so w2
 * (330 MiB demand, 75 MiB already there) would go "least loaded" onto
 * node 3 beside w6, and every cool-down then hold node 2 idle (threads
 * per node 3/2/0/3). The five jobs take 375 MiB off node 2
 * (snap_node.mem_leaving, mover_flows_add): room to come, w2 goes there.
 * Nodes 0 and 1 each get 450 MiB and lose 225: no room for w2. */
static void test_room_to_come_from_live_jobs(void **state)
{
	static const uint64_t free_mib[4] = { 523, 532, 377, 530 };
	/* Of each node's two CPUs: two guests on nodes 0 and 1, w6 and a
	 * thread of w2 on node 3, w2's other thread on node 2. */
	static const double busy[4] = { 1.0, 1.0, 0.3, 0.8 };
	static const struct {
		const char *id, *cpus;
		int node;
	} placed[5] = {
		{ "w3", "0-1", 0 }, { "w4", "0-1", 0 }, { "w5", "2-3", 1 }, { "w1", "2-3", 1 }, { "w6", "6-7", 3 },
	};
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct policy_config cfg;
	struct pstate *st = pstate_new(), *next;
	const struct plan_item *it;
	struct snap_guest *g;
	struct plan *p;

	(void)state;
	for (int i = 0; i < 5; i++) {
		char mems[4];

		snprintf(mems, sizeof(mems), "0-3");
		g = guest_on(s, placed[i].id, 1.0, 3, placed[i].cpus, mems, placed[i].node);
		g->busy_threads = 2;
		g->busy_measured = true;
		for (int n = 0; n < 4; n++)
			g->mem_node[n] = 75 * MIB;
	}
	g = guest_on(s, "w2", 1.2, 3, "0-7", "0-3", 3);
	g->cpu_node[3] = 0.6;
	g->cpu_node[2] = 0.6;
	g->busy_threads = 2;
	g->busy_measured = true;
	for (int n = 0; n < 4; n++)
		g->mem_node[n] = 75 * MIB;
	snap_finalize(s);
	for (int i = 0; i < 5; i++) {
		struct mover_job_info j = { .state = MJ_RUNNING };

		snprintf(j.guest, sizeof(j.guest), "%s", placed[i].id);
		mask_set(&j.to, placed[i].node);
		mover_flows_add(&j, s);
	}
	assert_int_equal(s->nodes[2].mem_leaving, 375 * MIB);
	assert_int_equal(s->nodes[2].mem_coming, 0);
	assert_int_equal(s->nodes[0].mem_leaving, 225 * MIB);
	assert_int_equal(s->nodes[0].mem_coming, 450 * MIB);
	assert_int_equal(s->nodes[3].mem_leaving, 300 * MIB);
	assert_int_equal(s->nodes[3].mem_coming, 225 * MIB);
	policy_config_default(&cfg);
	for (int i = 0; i < 5; i++)
		pstate_note_move(st, placed[i].id, s->mono_ns - 2 * SEC);
	assert_int_equal(decide_carried_out(&cfg, s, st, false, &p, &next), 0);
	check_invariants(&cfg, s, p, next, "room_to_come");
	it = find_item(p, "w2");
	assert_non_null(it);
	print_message("w2: %s\n", it->detail);
	if (it->kind != PLAN_MOVE || mask_count(&it->to_nodes) != 1 || !mask_test(&it->to_nodes, 2))
		fail_msg("w2 does not go onto node 2, whose other guests' memory is leaving: %s", it->detail);
	assert_int_equal(it->migrate_bytes, 225 * MIB);
	plan_free(p);
	pstate_free(st);
	pstate_free(next);
	snap_unref(s);
}

/* The testbed's oversubscribed scenario at its second cycle. Four
 * guests placed in the first (nodes 1, 0, 2, 3), their jobs just started
 * (75 MiB of each still on every node); ddc5 and 3f19 left on every node,
 * their two threads on two nodes each. ddc5 goes onto node 1 first; then
 * no single node has room for 3f19's demand with the 10 % headroom (330
 * MiB: 75 there + 214-238 MiB room), and it would go "memory does not
 * fit fewer nodes" onto nodes 0,2 — one thread on each, half remote,
 * held there by the cool-down. When nothing
 * fits with headroom (crowded), a node holding its threads that has room
 * for its footprint (300 MiB) without the growth headroom is local at
 * once: it goes there, not onto two. */
static void test_crowded_memory_without_headroom(void **state)
{
	static const uint64_t free_mib[4] = { 489, 536, 470, 494 };
	static const double busy[4] = { 1.0, 1.0, 1.0, 1.0 };
	static const struct {
		const char *id, *cpus;
		int node;
	} placed[4] = {
		{ "d03b", "0-1", 0 }, { "5316", "2-3", 1 }, { "aa4f", "4-5", 2 }, { "f51e", "6-7", 3 },
	};
	struct snapshot *s = host_2cpu(4, 1024, free_mib, busy);
	struct policy_config cfg;
	struct pstate *st = pstate_new(), *next;
	const struct plan_item *it;
	struct snap_guest *g;
	struct plan *p;

	(void)state;
	for (int i = 0; i < 4; i++) {
		g = guest_on(s, placed[i].id, 1.3, 3, placed[i].cpus, "0-3", placed[i].node);
		g->busy_threads = 2;
		g->busy_measured = true;
		for (int n = 0; n < 4; n++)
			g->mem_node[n] = 75 * MIB;
	}
	for (int i = 0; i < 2; i++) {
		g = guest_on(s, i ? "3f19" : "ddc5", 1.35, 3, "0-7", "0-3", i ? 0 : 1);
		g->cpu_node[i ? 0 : 1] = 0.7;
		g->cpu_node[i ? 2 : 3] = 0.65;
		g->busy_threads = 2;
		g->busy_measured = true;
		for (int n = 0; n < 4; n++)
			g->mem_node[n] = 75 * MIB;
	}
	snap_finalize(s);
	for (int i = 0; i < 4; i++) {
		struct mover_job_info j = { .state = MJ_RUNNING };

		snprintf(j.guest, sizeof(j.guest), "%s", placed[i].id);
		mask_set(&j.to, placed[i].node);
		mover_flows_add(&j, s);
	}
	policy_config_default(&cfg);
	for (int i = 0; i < 4; i++)
		pstate_note_move(st, placed[i].id, s->mono_ns - 2 * SEC);
	assert_int_equal(decide_carried_out(&cfg, s, st, false, &p, &next), 0);
	check_invariants(&cfg, s, p, next, "crowded_no_headroom");
	for (unsigned i = 0; i < p->nr_items; i++)
		print_message("%s: %s\n", p->items[i].guest_id, p->items[i].detail);
	for (const char *const *id = (const char *const[]){ "3f19", "ddc5", NULL }; *id; id++) {
		it = find_item(p, *id);
		assert_non_null(it);
		if (it->kind != PLAN_MOVE || mask_count(&it->to_nodes) != 1 || !mask_equal(&it->to_nodes, &it->to_mems))
			fail_msg("%s is not placed on one node: %s", *id, it->detail);
	}
	plan_free(p);
	pstate_free(st);
	pstate_free(next);
	snap_unref(s);
}

/* The same scenario's end when node 2 was left idle: every guest local
 * on one node, two guests (four busy threads) on each of nodes 0, 1 and
 * 3, node 2 idle with 791 MiB free, and all six "cool-down: would go to
 * nodes 2" (threads per node 3/2/0/3: less work done than with every
 * node busy). A move onto nodes idle but for the guest, from nodes with
 * more busy threads than CPUs, passes the cool-down: one
 * guest goes, the others stay (node 2 is no longer idle once it is
 * there), and the cycle after moves nothing. BUILD puts MOVED (NULL:
 * none) on node 2 and marks its old node FROM as half as busy. */
static struct snapshot *overload_end(const char *moved, int from)
{
	static const uint64_t free_mib[4] = { 331, 341, 791, 329 };
	static const struct {
		const char *id;
		int node;
	} at[6] = {
		{ "w3", 0 }, { "w4", 0 }, { "w5", 1 }, { "w1", 1 }, { "w6", 3 }, { "w2", 3 },
	};
	double busy[4] = { 1.0, 1.0, 0.01, 1.0 };
	struct snapshot *s;

	if (moved)
		busy[2] = 1.0;
	s = host_2cpu(4, 1024, free_mib, busy);
	for (int i = 0; i < 6; i++) {
		int n = moved && strcmp(moved, at[i].id) == 0 ? 2 : at[i].node;
		bool alone = moved && n == from;
		char cpus[8], mems[4];
		struct snap_guest *g;

		snprintf(cpus, sizeof(cpus), "%d-%d", 2 * n, 2 * n + 1);
		snprintf(mems, sizeof(mems), "%d", n);
		/* Two guests on a node share its two CPUs; one alone has both. */
		g = guest_on(s, at[i].id, n == 2 || alone ? 2.0 : 1.0, 3, cpus, mems, n);
		g->busy_threads = 2;
		g->busy_measured = true;
		g->mem_node[n] = 300 * MIB;
	}
	snap_finalize(s);
	return s;
}

static void test_idle_node_passes_cooldown(void **state)
{
	struct policy_config cfg;
	struct snapshot *s = overload_end(NULL, -1);
	struct pstate *st = pstate_new(), *next, *next2;
	const struct plan_item *mv = NULL;
	char moved[GUEST_ID_MAX];
	int from = -1;
	struct plan *p;

	(void)state;
	policy_config_default(&cfg);
	for (const char *const *id = (const char *const[]){ "w1", "w2", "w3", "w4", "w5", "w6", NULL }; *id; id++)
		pstate_note_move(st, *id, s->mono_ns - 20 * SEC);
	assert_int_equal(decide_carried_out(&cfg, s, st, false, &p, &next), 0);
	check_invariants(&cfg, s, p, next, "idle_node");
	for (unsigned i = 0; i < p->nr_items; i++) {
		const struct plan_item *it = &p->items[i];

		print_message("%s: %s\n", it->guest_id, it->detail);
		if (it->kind != PLAN_MOVE)
			continue;
		if (mv)
			fail_msg("a second move: %s: %s", it->guest_id, it->detail);
		mv = it;
	}
	if (!mv)
		fail_msg("nothing moves onto idle node 2");
	if (mask_count(&mv->to_nodes) != 1 || !mask_test(&mv->to_nodes, 2) || mv->migrate_bytes != 300 * MIB)
		fail_msg("%s: %s", mv->guest_id, mv->detail);
	snprintf(moved, sizeof(moved), "%s", mv->guest_id);
	from = snap_find_guest(s, moved)->cpus && mask_test(snap_find_guest(s, moved)->cpus, 0) ? 0
	     : mask_test(snap_find_guest(s, moved)->cpus, 2) ? 1 : 3;
	plan_free(p);
	snap_unref(s);
	/* The cycle after: it is on node 2, just moved; nothing else goes. */
	s = overload_end(moved, from);
	s->mono_ns += 15 * SEC;
	assert_int_equal(decide_carried_out(&cfg, s, next, false, &p, &next2), 0);
	check_invariants(&cfg, s, p, next2, "idle_node_after");
	for (unsigned i = 0; i < p->nr_items; i++)
		if (p->items[i].kind == PLAN_MOVE)
			fail_msg("moves again: %s: %s", p->items[i].guest_id, p->items[i].detail);
	plan_free(p);
	pstate_free(st);
	pstate_free(next);
	pstate_free(next2);
	snap_unref(s);
}

/* The testbed's bigguest scenario as measured: a 2-CPU guest with its
 * memory interleaved over all four nodes, its threads on nodes 0 and 1;
 * two 1-CPU guests with their memory on node 0, their threads on nodes 2
 * and 3. The big one does not fit one node but will be given fewer
 * than four: it floats too. Its threads go to one node other than 0
 * (split: node 0 has the least room for its memory), so both small
 * guests stay with their memory on node 0's two CPUs (without the split
 * rule the big one would take two nodes and only one small guest stay). */
static void test_big_floater_makes_room(void **state)
{
	static const uint64_t free_mib[4] = { 390, 1000, 1000, 1000 };
	static const double busy[4] = { 0.5, 0.5, 0.5, 0.5 };
	struct snapshot *s = host_2cpu(4, 1536, free_mib, busy);
	struct snap_guest *big = guest_on(s, "big", 2.0, 3, "0-7", "0-3", -1);
	const struct plan_item *it;
	struct plan *p;
	unsigned stay = 0;

	(void)state;
	big->cpu_node = calloc(4, sizeof(double));
	big->cpu_node[0] = big->cpu_node[1] = 1.0;
	for (int n = 0; n < 4; n++)
		big->mem_node[n] = 425 * MIB;
	guest_on(s, "small1", 1.0, 2, "0-7", "0-3", 2)->mem_node[0] = 320 * MIB;
	guest_on(s, "small2", 1.0, 2, "0-7", "0-3", 3)->mem_node[0] = 320 * MIB;
	p = decide_default(s, "big floater");
	for (int i = 1; i <= 2; i++) {
		it = find_item(p, i == 1 ? "small1" : "small2");
		assert_non_null(it);
		stay += it->kind == PLAN_MOVE && mask_count(&it->to_nodes) == 1 && mask_test(&it->to_nodes, 0) &&
			it->migrate_bytes == 0;
	}
	assert_int_equal(stay, 2);
	it = find_item(p, "big");
	assert_non_null(it);
	if (it->kind != PLAN_MOVE || !it->split || mask_count(&it->to_nodes) != 1 || mask_test(&it->to_nodes, 0))
		fail_msg("big: %s", it->detail);
	plan_free(p);
}

/* The testbed's bigguest scenario (4 nodes × 2 CPUs, 1536 MiB each): a
 * 1700 MiB guest with two busy threads, its memory interleaved (425 MiB on
 * each node), free to run anywhere, its threads on nodes 1 and 2; nodes
 * 1-3 have 1000 MiB free, node 0 390 (the two small guests' 640 MiB). Its
 * memory (1870 MiB with headroom) fits no node: spread over two nodes,
 * each thread is local to the half of it on its own node — 50 %, the end
 * state of every placer in the matrix. Its threads fit one node's two
 * CPUs: both go to one of nodes 1-3, its memory onto that node up to its
 * room (less 1/16 kept back for huge pages), the rest on one more node.
 * The room is what the reserve leaves: 4 % of the node (61 MiB) by
 * default, 880 MiB more there (77 %); with the fixed 256 MiB of before
 * (min_free_share 100 %) 744 MiB, 698 kept (66 %). */
static struct snapshot *bigguest_host(void)
{
	static const uint64_t free_mib[4] = { 390, 1000, 1000, 1000 };
	static const double busy[4] = { 0.5, 0.5, 0.5, 0.5 };
	struct snapshot *s = host_2cpu(4, 1536, free_mib, busy);
	/* 2.02 CPUs (its idle main thread's ticks, rounding), as a first
	 * cycle can read: more than its node's two CPUs, which must not make
	 * it miss the split (the cool-down would then hold it). */
	struct snap_guest *big = guest_on(s, "big", 2.02, 3, "0-7", "0-3", -1);

	big->cpu_node = calloc(4, sizeof(double));
	big->cpu_node[1] = big->cpu_node[2] = 1.01;
	big->busy_threads = 2;
	big->busy_measured = true;
	for (int n = 0; n < 4; n++)
		big->mem_node[n] = 425 * MIB;
	return s;
}

static void test_bigguest_split(void **state)
{
	(void)state;
	for (unsigned fixed = 0; fixed < 2; fixed++) {
		struct snapshot *s = bigguest_host();
		struct policy_config cfg;
		const struct plan_item *it;
		struct pstate *next;
		struct plan *p;
		uint64_t room;
		int first;

		snap_finalize(s);
		policy_config_default(&cfg);
		if (fixed)
			cfg.min_free_share = 1.0;
		room = 1000 * MIB - policy_reserve(cfg.min_free_bytes, cfg.min_free_share, 1536 * MIB);
		assert_int_equal(decide_carried_out(&cfg, s, NULL, false, &p, &next), 0);
		check_invariants(&cfg, s, p, next, "bigguest split");
		pstate_free(next);
		snap_unref(s);
		it = find_item(p, "big");
		assert_non_null(it);
		if (it->kind != PLAN_MOVE || !it->split)
			fail_msg("%s %s: %s", plan_kind_name(it->kind), move_reason_name(it->reason), it->detail);
		print_message("big (%s reserve): %s\n", fixed ? "256 MiB" : "4 %", it->detail);
		/* both threads on one node with room, that node's CPUs only */
		assert_int_equal(mask_count(&it->to_nodes), 1);
		first = mask_first(it->to_nodes.w, MASK_BITS(&it->to_nodes));
		assert_true(first >= 1);
		assert_int_equal(it->first_node, first);
		assert_int_equal(mask_count(it->to_cpus), 2);
		/* memory on that node and one more; the node takes all its room */
		assert_int_equal(mask_count(&it->to_mems), 2);
		assert_true(mask_test(&it->to_mems, first));
		assert_int_equal(it->first_bytes, room - room / 16);
		/* what is off the two nodes (850 MiB), or what the first takes
		 * when that is more (some of it from the second node) */
		assert_int_equal(it->migrate_bytes, it->first_bytes > 850 * MIB ? it->first_bytes : 850 * MIB);
		if (!fixed)
			assert_true(it->first_bytes > 870 * MIB);
		plan_free(p);
	}

	/* Once there (1305 MiB on node 1, the rest on node 2) it stays: node
	 * 3, emptied, could hold nearly as much, not more by the slack. */
	{
		static const uint64_t free_mib[4] = { 815, 120, 1030, 1425 };
		static const double busy[4] = { 0.5, 1.0, 0.0, 0.0 };
		struct snapshot *s = host_2cpu(4, 1536, free_mib, busy);
		struct snap_guest *big = guest_on(s, "big", 2.0, 2, "2-3", "0-3", 1);
		struct plan *p;

		big->busy_threads = 2;
		big->busy_measured = true;
		big->mem_node[1] = 1305 * MIB;
		big->mem_node[2] = 395 * MIB;
		p = decide_default(s, "bigguest settled");
		assert_null(find_item(p, "big"));
		plan_free(p);
	}
}

static void test_advise_nothing_fits(void **state)
{
	struct policy_config cfg;
	struct snapshot *s = advise_host();
	struct advice_request req = { .cpus = 30.0, .mem_bytes = 1024 * MIB };
	struct advice a;

	policy_config_default(&cfg);
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_false(a.ok);
	assert_non_null(strstr(a.detail, "nothing fits"));
	req.cpus = 1;
	req.mem_bytes = 64 * 1024 * MIB;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), 0);
	assert_false(a.ok);

	req.cpus = NAN;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), -EINVAL);
	req.cpus = 1;
	req.nr_reservations = 1;
	req.reservations = NULL;
	assert_int_equal(policy_advise(&cfg, s, &req, &a), -EINVAL);
	snap_unref(s);
}

/* ---- config, pstate, JSON ---- */

/* The reserve: min_free_mib, no more than min_free_share of the node. */
static void test_reserve(void **state)
{
	(void)state;
	/* 4 % of a 1.5 GiB node is 61 MiB; from 6.4 GiB up, 256 MiB */
	assert_int_equal(policy_reserve(256 * MIB, 0.04, 1536 * MIB), (uint64_t)(0.04 * 1536.0 * MIB));
	assert_int_equal(policy_reserve(256 * MIB, 0.04, 6400 * MIB), 256 * MIB);
	assert_int_equal(policy_reserve(256 * MIB, 0.04, 192ULL * 1024 * MIB), 256 * MIB);
	/* 100 %: the fixed reserve; 0 %: none */
	assert_int_equal(policy_reserve(256 * MIB, 1.0, 1024 * MIB), 256 * MIB);
	assert_int_equal(policy_reserve(256 * MIB, 1.0, 128 * MIB), 256 * MIB);
	assert_int_equal(policy_reserve(256 * MIB, 0.0, 1024 * MIB), 0);
	/* a node whose size is not known keeps the fixed reserve */
	assert_int_equal(policy_reserve(256 * MIB, 0.04, 0), 256 * MIB);
	assert_int_equal(policy_reserve(256 * MIB, NAN, 1024 * MIB), 256 * MIB);
}

static void test_config_validate(void **state)
{
	static const char *const bad[] = {
		"locality_target", "cpu_headroom", "min_cpu", "mem_headroom", "min_free_mib",
		"less_busy_margin", "max_util", "rebalance_util", "cooldown", "max_moves",
		"max_migrate_mib", "min_free_share",
	};
	struct policy_config c;
	const char *field = "untouched";

	policy_config_default(&c);
	assert_int_equal(policy_config_validate(&c, &field), 0);
	assert_string_equal(field, "untouched");
	assert_true(c.locality_target == 0.9 && c.cpu_headroom == 0.2 && c.min_cpu == 0.1);
	assert_true(c.mem_headroom == 0.1 && c.less_busy_margin == 0.12 && c.max_util == 0.9);
	assert_true(c.rebalance_util == 0.8);
	assert_int_equal(c.min_free_bytes, 256 * MIB);
	assert_true(c.min_free_share == 0.04);
	assert_int_equal(c.cooldown_ns, 300 * SEC);
	assert_int_equal(c.max_moves, 4);
	assert_int_equal(c.max_migrate_bytes, 4096 * MIB);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		policy_config_default(&c);
		switch (i) {
		case 0: c.locality_target = 1.5; break;
		case 1: c.cpu_headroom = -0.1; break;
		case 2: c.min_cpu = NAN; break;
		case 3: c.mem_headroom = 11; break;
		case 4: c.min_free_bytes = 1ULL << 60; break;
		case 5: c.less_busy_margin = 1.5; break;
		case 6: c.max_util = 0; break;
		case 7: c.rebalance_util = 1.01; break;
		case 8: c.cooldown_ns = -1; break;
		case 9: c.max_moves = 0; break;
		case 10: c.max_migrate_bytes = 1ULL << 62; break;
		case 11: c.min_free_share = 1.01; break;
		}
		field = NULL;
		assert_int_equal(policy_config_validate(&c, &field), -EINVAL);
		assert_non_null(field);
		assert_string_equal(field, bad[i]);
	}
	/* The first bad field is named. */
	policy_config_default(&c);
	c.max_util = 2;
	c.cpu_headroom = -1;
	assert_int_equal(policy_config_validate(&c, &field), -EINVAL);
	assert_string_equal(field, "cpu_headroom");
	/* Edges that are fine. */
	policy_config_default(&c);
	c.max_util = 1;
	c.less_busy_margin = 0;
	c.cooldown_ns = 0;
	c.max_migrate_bytes = 0;
	c.locality_target = 0;
	assert_int_equal(policy_config_validate(&c, NULL), 0);
	/* decide refuses a bad config */
	{
		struct snapshot *s = advise_host();
		struct plan *p = NULL;
		struct pstate *n = NULL;

		c.max_moves = 0;
		assert_int_equal(decide_carried_out(&c, s, NULL, false, &p, &n), -EINVAL);
		assert_null(p);
		assert_null(n);
		snap_unref(s);
	}
}

static void test_pstate(void **state)
{
	struct pstate *s = pstate_new(), *c;

	assert_null(pstate_find(s, "a"));
	pstate_note_move(s, "m", 5);
	pstate_note_move(s, "c", 6);
	pstate_note_move(s, "x", 7);
	pstate_note_move(s, "a", 8);
	pstate_note_move(s, "m", 9);
	assert_int_equal(s->n, 4);
	assert_string_equal(s->e[0].id, "a");
	assert_string_equal(s->e[1].id, "c");
	assert_string_equal(s->e[2].id, "m");
	assert_string_equal(s->e[3].id, "x");
	assert_int_equal(pstate_find(s, "m")->last_move_ns, 9);
	assert_int_equal(pstate_find(s, "m")->nr_moves, 2);
	assert_null(pstate_find(s, "b"));
	c = pstate_clone(s);
	pstate_note_move(c, "b", 10);
	assert_int_equal(c->n, 5);
	assert_int_equal(s->n, 4);
	pstate_free(c);
	pstate_free(s);
	pstate_free(NULL);
	c = pstate_clone(NULL);
	assert_int_equal(c->n, 0);
	pstate_free(c);
	plan_free(NULL);
}

static void test_next_state_drops_vanished(void **state)
{
	const struct tcase *tc = &cases[0];
	struct policy_config cfg;
	struct pstate *prev, *next;
	struct plan *p;
	struct snapshot *s = build(tc, &prev);

	policy_config_default(&cfg);
	pstate_note_move(prev, "gone", T0 - SEC);
	pstate_note_move(prev, "vm-a", T0 - 1000 * SEC);
	assert_int_equal(decide_carried_out(&cfg, s, prev, false, &p, &next), 0);
	assert_int_equal(next->n, 1);
	assert_string_equal(next->e[0].id, "vm-a");
	assert_int_equal(next->e[0].last_move_ns, T0 - 1000 * SEC);
	plan_free(p);
	pstate_free(next);
	pstate_free(prev);
	snap_unref(s);
}

/* Locality where the threads run (snap_finalize): the testbed's wloc
 * weighted by CPU time. A one-thread guest on two nodes with its memory
 * on the other one is 0 % local and 100 % inside its cpuset; on one node
 * the two figures agree; a thread on a memory-less node is local to the
 * nearest node with memory. */
static void test_true_locality(void **state)
{
	static const uint64_t free_mib[3] = { 500, 500, 500 };
	static const double busy[3] = { 0.5, 0.5, 0.5 };
	struct snapshot *s = host_2cpu(3, 1024, free_mib, busy);
	struct snap_guest *g;
	const struct snap_guest *f;

	(void)state;
	s->nodes[2].mem_total = 0; /* memory-less, nearest to node 0 by index on a tie */
	s->nodes[2].mem_free = 0;
	g = guest_on(s, "wrong-half", 1.0, 1, "0-3", "0-1", 1);
	g->mem_node[0] = 320 * MIB;
	g = guest_on(s, "one-node", 1.0, 1, "0-1", "0", -1);
	g->mem_node[0] = 240 * MIB;
	g->mem_node[1] = 80 * MIB;
	g = guest_on(s, "two-thirds", 1.5, 3, "0-3", "0-1", 0);
	g->cpu_node[0] = 1.0;
	g->cpu_node[1] = 0.5;
	g->mem_node[0] = 300 * MIB;
	g = guest_on(s, "memless", 1.0, 1, "4-5", "0", 2);
	g->mem_node[0] = 100 * MIB;
	g = guest_on(s, "unmeasured", 1.0, 1, "0-3", "0-1", -1);
	g->mem_node[1] = 100 * MIB;
	snap_finalize(s);

	f = snap_find_guest(s, "wrong-half");
	assert_float_equal(f->locality, 0.0, 1e-9);
	assert_float_equal(f->mem_in_cpuset, 1.0, 1e-9);
	assert_int_equal(f->locality_source, LOC_THREADS);
	f = snap_find_guest(s, "one-node");
	assert_float_equal(f->locality, 0.75, 1e-9);
	assert_float_equal(f->mem_in_cpuset, 0.75, 1e-9);
	assert_int_equal(f->locality_source, LOC_ONE_NODE);
	f = snap_find_guest(s, "two-thirds");
	assert_float_equal(f->locality, 2.0 / 3.0, 1e-9);
	f = snap_find_guest(s, "memless");
	assert_float_equal(f->locality, 1.0, 1e-9);
	assert_float_equal(f->mem_in_cpuset, 0.0, 1e-9);
	f = snap_find_guest(s, "unmeasured");
	assert_float_equal(f->locality, 0.5, 1e-9);
	assert_int_equal(f->locality_source, LOC_ESTIMATE);
	snap_unref(s);
}

static void test_json(void **state)
{
	const struct tcase *tc = NULL;
	struct policy_config cfg;
	struct pstate *prev, *next;
	struct plan *p;
	struct snapshot *s;
	json_t *j, *it;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		if (strstr(cases[k].name, "closest pair"))
			tc = &cases[k];
	s = build(tc, &prev);
	policy_config_default(&cfg);
	assert_int_equal(decide_carried_out(&cfg, s, prev, false, &p, &next), 0);
	j = plan_to_json(p);
	assert_int_equal(json_integer_value(json_object_get(j, "seq")), 7);
	assert_int_equal(json_integer_value(json_object_get(j, "nr_moves")), 1);
	it = json_array_get(json_object_get(j, "items"), 0);
	assert_string_equal(json_string_value(json_object_get(it, "guest")), "big");
	assert_string_equal(json_string_value(json_object_get(it, "kind")), "move");
	assert_string_equal(json_string_value(json_object_get(it, "reason")), "consolidate");
	assert_string_equal(json_string_value(json_object_get(it, "skip")), "none");
	assert_string_equal(json_string_value(json_object_get(it, "from_nodes")), "0-3");
	assert_string_equal(json_string_value(json_object_get(it, "to_nodes")), "0-1");
	assert_string_equal(json_string_value(json_object_get(it, "to_mems")), "0-1");
	assert_string_equal(json_string_value(json_object_get(it, "to_cpus")), "0-7");
	assert_int_equal(json_integer_value(json_object_get(it, "migrate_bytes")), 2048 * MIB);
	assert_int_equal(json_integer_value(json_object_get(it, "mem_demand_bytes")),
			 (json_int_t)(4096 * MIB * 1.1));
	assert_true(fabs(json_real_value(json_object_get(it, "cpu_demand")) - 6.0) < 1e-9);
	assert_true(json_is_real(json_object_get(it, "load_before")));
	assert_true(json_is_real(json_object_get(it, "load_after")));
	assert_true(json_is_real(json_object_get(it, "locality_before")));
	assert_true(json_is_real(json_object_get(it, "gain")));
	assert_true(json_is_string(json_object_get(it, "detail")));
	json_decref(j);
	assert_string_equal(plan_kind_name(PLAN_SETTLED), "settled");
	assert_string_equal(move_reason_name(REASON_PLACE), "place");
	assert_string_equal(skip_reason_name(SKIP_OUTSIDE_ALLOWED), "outside_allowed");
	plan_free(p);
	pstate_free(next);
	pstate_free(prev);
	snap_unref(s);
}

int main(void)
{
	enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
	struct CMUnitTest tests[NCASES + 49];
	size_t n = 0;

	for (size_t i = 0; i < NCASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_table, (void *)&cases[i]);
		tests[n].name = cases[i].name;
		n++;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_determinism);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_convergence_table);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_convergence_generated);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_convergence_default_budgets);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_no_thrash_equal_nodes);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_odd_hosts);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_scale_1000_guests);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_scale_64_nodes);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_advise_fits);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_advise_reservations);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_advise_nothing_fits);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_decide_respects_reservations);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_demand_capped_by_threads);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_measured_node_share);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_floaters_make_room);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_big_floater_makes_room);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_bigguest_split);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_oversubscribed_local_least_loaded);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_auto_cooldown_by_cost);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_auto_sizing);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_memtight_both_to_their_memory);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_vm_emulator_use_is_no_busy_vcpu);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_phantom_load_of_a_moving_thread);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_settle_keeps_real_other_load);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_jitter_is_no_second_busy_thread);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_low_node_load_window);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_misplaced_beside_kernel_first_moves);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_misplaced_beside_kernel_later);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_big_pod_leaves_small_guests_memory_node);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_pod_parts_split);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_pod_parts_split_within_budget);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_pod_parts_resplit);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parts_split_table);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_shrink_onto_threads_inside_cooldown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_crowded_two_stay_local);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_spread_memory_follows_threads);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_pinned_memory_follows_threads);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_pinned_follow_after_a_move);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_no_mutual_room_credit);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_room_to_come_from_live_jobs);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_idle_node_passes_cooldown);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_crowded_memory_without_headroom);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_spread_start_one_node_each);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_reserve);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_config_validate);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_pstate);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_next_state_drops_vanished);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_json);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_true_locality);
	return _cmocka_run_group_tests("policy", tests, n, NULL, NULL);
}
