/* kbal: who moves a guest's memory beside the kernel's NUMA balancing;
 * the [memory] keys. (kernel.numa_balancing itself is read by the acquirer.) */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/store/config.h"
#include "orchestrator/model/kbal.h"
#include "orchestrator/model/memway.h"

static void test_decide_table(void **state)
{
	static const struct {
		enum kbal_setting s;
		int balancing;
		bool strict;
		double cpu;
		enum kbal_action want;
	} t[] = {
		/* the kernel's balancing off or unknown: the agent migrates */
		{ KBAL_DEFER, 0, false, 1.0, KBAL_ACT_MIGRATE },
		{ KBAL_AUTO, -1, false, 1.0, KBAL_ACT_MIGRATE },
		/* tiering alone (2) migrates between tiers, not to the thread */
		{ KBAL_DEFER, 2, false, 1.0, KBAL_ACT_MIGRATE },
		{ KBAL_DEFER, 1, false, 0.0, KBAL_ACT_DEFER },
		{ KBAL_DEFER, 3, false, 1.0, KBAL_ACT_DEFER },
		{ KBAL_MIGRATE, 1, false, 1.0, KBAL_ACT_MIGRATE },
		/* strict binding ends narrow: narrowing is a migration */
		{ KBAL_DEFER, 1, true, 1.0, KBAL_ACT_MIGRATE },
		{ KBAL_AUTO, 1, true, 1.0, KBAL_ACT_MIGRATE },
		/* auto: the kernel only scans tasks that run */
		{ KBAL_AUTO, 1, false, 1.0, KBAL_ACT_DEFER },
		{ KBAL_AUTO, 1, false, KBAL_BUSY_CPUS, KBAL_ACT_DEFER },
		{ KBAL_AUTO, 1, false, 0.1, KBAL_ACT_MIGRATE },
		{ KBAL_AUTO, 1, false, NAN, KBAL_ACT_MIGRATE },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		enum kbal_action got = kbal_decide(t[i].s, t[i].balancing, t[i].strict, t[i].cpu);

		if (got != t[i].want)
			fail_msg("row %u: %s balancing=%d strict=%d cpu=%g: got %s, want %s", i,
				 kbal_setting_name(t[i].s), t[i].balancing, t[i].strict, t[i].cpu,
				 kbal_action_name(got), kbal_action_name(t[i].want));
	}
}

static void test_names(void **state)
{
	enum kbal_setting s;

	(void)state;
	for (int i = KBAL_AUTO; i <= KBAL_MIGRATE; i++) {
		assert_int_equal(kbal_setting_parse(kbal_setting_name((enum kbal_setting)i), &s), 0);
		assert_int_equal(s, i);
	}
	assert_int_equal(kbal_setting_parse("kernel", &s), -EINVAL);
	assert_null(kbal_setting_name((enum kbal_setting)7));
}

static void test_memory_section(void **state)
{
	struct agent_config c;
	char err[512];

	(void)state;
	assert_int_equal(config_load_string("", "t.conf", &c, err, sizeof(err)), 0);
	assert_int_equal(c.kernel_balancing, KBAL_MIGRATE);
	assert_true(c.mover);
	assert_true(c.mover_on_target);
	config_clear(&c);
	assert_int_equal(config_load_string("[memory]\nkernel_balancing = defer\nmover = no\nworkers = 4\n"
					    "rate_mib = 512\nchunk_ms = 10\njob_timeout = 60\n"
					    "workers_on_target = no\n",
					    "t.conf", &c, err, sizeof(err)), 0);
	assert_int_equal(c.kernel_balancing, KBAL_DEFER);
	assert_false(c.mover);
	assert_int_equal(c.mover_workers, 4);
	assert_true(fabs(c.mover_rate_mib - 512) < 1e-9);
	assert_true(fabs(c.mover_chunk_ms - 10) < 1e-9);
	assert_true(fabs(c.mover_job_timeout_s - 60) < 1e-9);
	assert_false(c.mover_on_target);
	config_clear(&c);
	assert_int_equal(config_load_string("[memory]\nkernel_balancing = kernel\n", "t.conf", &c, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "t.conf:2: [memory] kernel_balancing: must be auto, defer or migrate"));
	assert_int_equal(config_load_string("[memory]\nworkers = 0\n", "t.conf", &c, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "workers: must be an integer 1..16"));
}

/* mem_way_plan: every way a plan can give a move's memory. */
static void test_mem_way_plan_table(void **state)
{
	enum { C = 0, V = 1 };
	static const struct {
		enum kbal_setting s;
		int balancing;
		double cpu;
		bool vm, strict, bind_start, negligible, mover, mover_on, vm_movable;
		enum mem_way want, want_soft;
	} t[] = {
		/* nothing worth migrating: the CPUs' write is all ... */
		{ KBAL_MIGRATE, 0, 1, C, false, false, true, true, true, false, MEM_WAY_NONE, MEM_WAY_NONE },
		{ KBAL_DEFER, 1, 1, V, true, false, true, true, true, true, MEM_WAY_NONE, MEM_WAY_NONE },
		/* ... but for a start binding, whose write narrows */
		{ KBAL_MIGRATE, 0, 1, C, true, true, true, true, true, false, MEM_WAY_BIND_WRITE, MEM_WAY_BIND_WRITE },
		/* the kernel's balancing takes a soft guest's memory */
		{ KBAL_DEFER, 1, 1, C, false, false, false, true, true, false, MEM_WAY_KERNEL, MEM_WAY_KERNEL },
		{ KBAL_AUTO, 1, 1, C, false, false, false, false, false, false, MEM_WAY_KERNEL, MEM_WAY_KERNEL },
		/* ... not an idle one's under auto, nor a strict one's */
		{ KBAL_AUTO, 1, 0.1, C, false, false, false, true, true, false, MEM_WAY_MOVER, MEM_WAY_MOVER },
		{ KBAL_DEFER, 1, 1, C, true, false, false, true, true, false, MEM_WAY_MOVER, MEM_WAY_KERNEL },
		/* a start binding: its write, on a worker where there is a mover */
		{ KBAL_MIGRATE, 0, 1, C, true, true, false, true, true, false, MEM_WAY_BIND_WRITE, MEM_WAY_BIND_WRITE },
		{ KBAL_MIGRATE, 0, 1, C, true, true, false, true, false, false, MEM_WAY_BIND_WRITE, MEM_WAY_BIND_WRITE },
		{ KBAL_DEFER, 1, 1, C, true, true, false, false, false, false, MEM_WAY_WRITE, MEM_WAY_KERNEL },
		{ KBAL_MIGRATE, 0, 1, V, true, true, false, true, true, true, MEM_WAY_WRITE, MEM_WAY_WRITE },
		/* the mover, where it is on and can move the guest */
		{ KBAL_MIGRATE, 1, 1, C, false, false, false, true, true, false, MEM_WAY_MOVER, MEM_WAY_MOVER },
		{ KBAL_MIGRATE, 0, 1, V, true, false, false, true, true, true, MEM_WAY_MOVER, MEM_WAY_MOVER },
		{ KBAL_MIGRATE, 0, 1, V, true, false, false, true, true, false, MEM_WAY_WRITE, MEM_WAY_WRITE },
		/* the mover off: a container's write on a worker, a VM's here */
		{ KBAL_MIGRATE, 0, 1, C, false, false, false, true, false, false, MEM_WAY_WRITE_WORKER,
		  MEM_WAY_WRITE_WORKER },
		{ KBAL_MIGRATE, 0, 1, V, true, false, false, true, false, true, MEM_WAY_WRITE, MEM_WAY_WRITE },
		/* no mover: the write here */
		{ KBAL_MIGRATE, 0, 1, C, false, false, false, false, false, false, MEM_WAY_WRITE, MEM_WAY_WRITE },
		{ KBAL_AUTO, 1, 1, V, true, false, false, false, false, true, MEM_WAY_WRITE, MEM_WAY_KERNEL },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct mem_way_in in = {
			.kbal = t[i].s, .balancing = t[i].balancing, .cpu_use = t[i].cpu, .vm = t[i].vm,
			.strict = t[i].strict, .bind_start = t[i].bind_start, .negligible = t[i].negligible,
			.mover = t[i].mover, .mover_on = t[i].mover_on, .vm_movable = t[i].vm_movable,
		};
		enum mem_way soft, got = mem_way_plan(&in, &soft);

		if (got != t[i].want || soft != t[i].want_soft)
			fail_msg("row %u: got %s (soft %s), want %s (soft %s)", i, mem_way_name(got),
				 mem_way_name(soft), mem_way_name(t[i].want), mem_way_name(t[i].want_soft));
	}
}

/* mem_way_at_apply: each branch of the engine's memory phase. */
static void test_mem_way_at_apply_table(void **state)
{
	enum { SOFT = 1, MOVABLE = 2, NARROW = 4, CHANGE = 8, ROOM = 16, WAITS = 32, NOPROC = 64 };
	static const struct {
		enum mem_way planned, if_soft;
		unsigned facts;
		enum mem_way want;
	} t[] = {
		/* a start binding's write with next to nothing to migrate:
		 * before any room rule or soft binding */
		{ MEM_WAY_BIND_WRITE, MEM_WAY_KERNEL, NARROW | CHANGE | ROOM | SOFT, MEM_WAY_BIND_WRITE },
		{ MEM_WAY_BIND_WRITE, MEM_WAY_BIND_WRITE, NARROW | CHANGE | WAITS, MEM_WAY_WRITE },
		{ MEM_WAY_WRITE, MEM_WAY_WRITE, NARROW | CHANGE, MEM_WAY_WRITE },
		/* room partly to come: only the mover waits for it */
		{ MEM_WAY_MOVER, MEM_WAY_MOVER, MOVABLE | ROOM, MEM_WAY_MOVER },
		{ MEM_WAY_MOVER, MEM_WAY_MOVER, ROOM, MEM_WAY_NO_ROOM },
		{ MEM_WAY_MOVER, MEM_WAY_KERNEL, MOVABLE | ROOM | SOFT, MEM_WAY_NO_ROOM },
		{ MEM_WAY_KERNEL, MEM_WAY_KERNEL, MOVABLE | SOFT | ROOM, MEM_WAY_NO_ROOM },
		{ MEM_WAY_WRITE_WORKER, MEM_WAY_WRITE_WORKER, MOVABLE | ROOM, MEM_WAY_NO_ROOM },
		{ MEM_WAY_BIND_WRITE, MEM_WAY_BIND_WRITE, MOVABLE | CHANGE | ROOM, MEM_WAY_NO_ROOM },
		{ MEM_WAY_WRITE, MEM_WAY_WRITE, ROOM, MEM_WAY_NO_ROOM },
		/* the kernel's balancing: as planned, or a strict guest soft after all */
		{ MEM_WAY_KERNEL, MEM_WAY_KERNEL, MOVABLE | SOFT, MEM_WAY_KERNEL },
		{ MEM_WAY_MOVER, MEM_WAY_KERNEL, MOVABLE | SOFT, MEM_WAY_KERNEL },
		{ MEM_WAY_BIND_WRITE, MEM_WAY_KERNEL, MOVABLE | CHANGE | SOFT, MEM_WAY_KERNEL },
		{ MEM_WAY_MOVER, MEM_WAY_KERNEL, MOVABLE, MEM_WAY_MOVER },
		{ MEM_WAY_MOVER, MEM_WAY_MOVER, MOVABLE | SOFT, MEM_WAY_MOVER },
		/* a start binding's write: a worker's, unless a caller waits or
		 * its mems stay as they are */
		{ MEM_WAY_BIND_WRITE, MEM_WAY_BIND_WRITE, MOVABLE | CHANGE, MEM_WAY_BIND_WRITE },
		{ MEM_WAY_BIND_WRITE, MEM_WAY_BIND_WRITE, MOVABLE | CHANGE | WAITS, MEM_WAY_WRITE },
		{ MEM_WAY_BIND_WRITE, MEM_WAY_BIND_WRITE, MOVABLE, MEM_WAY_WRITE },
		/* a write on a worker, or here */
		{ MEM_WAY_WRITE_WORKER, MEM_WAY_WRITE_WORKER, MOVABLE | CHANGE | WAITS, MEM_WAY_WRITE_WORKER },
		{ MEM_WAY_WRITE, MEM_WAY_WRITE, MOVABLE | CHANGE, MEM_WAY_WRITE },
		/* the mover: unless it cannot move the guest (a VM whose
		 * nodeset cannot be set alone) or there is no process */
		{ MEM_WAY_MOVER, MEM_WAY_MOVER, MOVABLE | CHANGE | WAITS, MEM_WAY_MOVER },
		{ MEM_WAY_MOVER, MEM_WAY_MOVER, 0, MEM_WAY_WRITE },
		{ MEM_WAY_MOVER, MEM_WAY_MOVER, MOVABLE | NOPROC, MEM_WAY_WRITE },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		unsigned x = t[i].facts;
		struct mem_way_facts f = {
			.soft = x & SOFT, .movable = x & MOVABLE, .narrow_only = x & NARROW, .mems_change = x & CHANGE,
			.room_wait = x & ROOM, .caller_waits = x & WAITS, .no_process = x & NOPROC,
		};
		enum mem_way got = mem_way_at_apply(t[i].planned, t[i].if_soft, &f);

		if (got != t[i].want)
			fail_msg("row %u: %s: got %s, want %s", i, mem_way_name(t[i].planned), mem_way_name(got),
				 mem_way_name(t[i].want));
	}
}

/* The engine's memory phase as it chose inline before the plan carried
 * the way (kbal, then its facts in that order): bind_write for a start
 * binding's write (a worker's with a mover and nobody waiting), and the
 * way, for the NO_ROOM case also whether the kernel's balancing was the
 * one that would not wait. */
static enum mem_way old_memory_phase(enum kbal_setting s, int balancing, double cpu, bool soft, bool mover,
				     bool mover_on, bool movable, bool bind_start, bool vm, bool narrow_only,
				     bool room_wait, bool writes_mems, bool sync, bool no_process, bool *kernel)
{
	enum kbal_action act = kbal_decide(s, balancing, !soft, cpu);
	bool to_mover = mover && mover_on && movable && !bind_start;
	enum mem_way bind_write = !sync && mover ? MEM_WAY_BIND_WRITE : MEM_WAY_WRITE;

	*kernel = act == KBAL_ACT_DEFER;
	if (narrow_only)
		return bind_write;
	if (room_wait && (act == KBAL_ACT_DEFER || !to_mover))
		return MEM_WAY_NO_ROOM;
	if (act == KBAL_ACT_DEFER)
		return MEM_WAY_KERNEL;
	if (!to_mover && bind_start && writes_mems)
		return bind_write;
	if (!to_mover && mover && !bind_start && !vm)
		return MEM_WAY_WRITE_WORKER;
	if (!to_mover)
		return MEM_WAY_WRITE;
	return no_process ? MEM_WAY_WRITE : MEM_WAY_MOVER;
}

/* The plan's way refined at apply is the way the memory phase chose
 * inline, for every combination of settings and facts a move that
 * reaches the memory phase can have (apply.c: a container's binding is
 * soft unless strict, pinned or a start binding, or once its target
 * keeps no free huge page; a VM's only then, and when movable; a start
 * binding's negligible write only when its mems change). */
static void test_mem_way_as_memory_phase(void **state)
{
	static const enum kbal_setting settings[] = { KBAL_AUTO, KBAL_DEFER, KBAL_MIGRATE };
	static const double cpus[] = { 0.0, 1.0, NAN };
	unsigned checked = 0;

	(void)state;
	for (unsigned si = 0; si < 3; si++)
	for (int bal = 0; bal <= 1; bal++)
	for (unsigned ci = 0; ci < 3; ci++)
	for (unsigned bits = 0; bits < 1u << 14; bits++) {
		bool vm = bits & 1, strict_cfg = bits & 2, bind_start = bits & 4, mover = bits & 8,
		     mover_on = bits & 16, qemu = bits & 32, set_mems = bits & 64, huge_tight = bits & 128,
		     mems_changed = bits & 256, negligible = bits & 512, room_wait = bits & 1024,
		     sync = bits & 2048, no_process = bits & 4096, pinned = bits & 8192;
		bool soft, movable, narrow_only, reach, kernel_old, kernel_new;
		struct mem_way_in in;
		struct mem_way_facts f, nowait;
		enum mem_way planned, if_soft, want, got;

		if (vm) {
			movable = set_mems && qemu;
			soft = movable && huge_tight;
			narrow_only = false;
			reach = !negligible;
		} else {
			movable = true;
			soft = (!strict_cfg && !pinned && !bind_start) || huge_tight;
			narrow_only = bind_start && negligible && mems_changed;
			/* (soft and negligible: the mems widened in phase 1) */
			reach = !negligible || (narrow_only && !soft);
		}
		if (!reach || (negligible && room_wait))
			continue;
		in = (struct mem_way_in){
			.kbal = settings[si], .balancing = bal, .cpu_use = cpus[ci], .vm = vm,
			.strict = vm || strict_cfg || pinned || bind_start, .bind_start = bind_start,
			.negligible = negligible, .mover = mover, .mover_on = mover_on, .vm_movable = qemu,
		};
		planned = mem_way_plan(&in, &if_soft);
		f = (struct mem_way_facts){
			.soft = soft, .movable = movable, .narrow_only = narrow_only,
			.mems_change = !vm && mems_changed, .room_wait = room_wait, .caller_waits = sync,
			.no_process = no_process,
		};
		got = mem_way_at_apply(planned, if_soft, &f);
		want = old_memory_phase(settings[si], bal, cpus[ci], soft, mover, mover_on, movable, bind_start, vm,
					narrow_only, room_wait, !vm && mems_changed, sync, no_process, &kernel_old);
		nowait = (struct mem_way_facts){ .soft = soft, .movable = movable };
		kernel_new = mem_way_at_apply(planned, if_soft, &nowait) == MEM_WAY_KERNEL;
		if (got != want || (want == MEM_WAY_NO_ROOM && kernel_new != kernel_old))
			fail_msg("%s bal=%d cpu=%g bits=%#x: planned %s (soft %s), got %s, want %s", 
				 kbal_setting_name(settings[si]), bal, cpus[ci], bits, mem_way_name(planned),
				 mem_way_name(if_soft), mem_way_name(got), mem_way_name(want));
		checked++;
	}
	assert_true(checked > 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_table),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_memory_section),
		cmocka_unit_test(test_mem_way_plan_table),
		cmocka_unit_test(test_mem_way_at_apply_table),
		cmocka_unit_test(test_mem_way_as_memory_phase),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
