/* The VM actuator's move without libvirt: the planner (agents/vmplan.c:
 * which calls, in which order, what each replaces) on tables, and the
 * executor (agents/vmjournal.c) through a mock domain in place of
 * libvirt's calls — the calls it makes, a failure injected at every step
 * with the rollback putting back exactly what was there, and a domain
 * that vanishes mid-move. The re-check before a move and the real calls
 * run against a real libvirtd in tests/integration/test_libvirt.py. */
#include "testutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/vmjournal.h"
#include "agents/vmplan.h"

/* ---- the mock domain ------------------------------------------------------- */

enum { E_REFUSED = 1, E_GONE = 2 };

#define NCPU 8                 /* one byte per map */
#define LOGMAX 64

struct mock {
	/* What libvirt reports: two vCPUs, the emulator, one I/O thread. */
	unsigned nv;
	unsigned char vcpu[4];
	bool have_emu;
	unsigned char emu;
	unsigned nio;
	unsigned io_ids[2];
	unsigned char io[2];
	char nodeset[32];
	bool restrictive;
	/* Injection. */
	int fail_at;               /* the write call (0-based) that fails; -1: none */
	int fail_code;             /* E_REFUSED, or E_GONE: the domain is gone from then on */
	bool fail_after;           /* every write after fail_at is refused too */
	int fail_read;             /* 1 vCPU pins, 2 emulator, 3 I/O threads fail (0: none) */
	bool numa_refused;         /* numatune's nodeset cannot change (mode strict) */
	bool gone;
	/* What happened. */
	unsigned nwrites;
	unsigned nlog;
	char log[LOGMAX][48];
	struct vmlv_err err;
};

static struct mock M;

static void mock_reset(void)
{
	memset(&M, 0, sizeof(M));
	M.nv = 2;
	M.vcpu[0] = M.vcpu[1] = 0x0f;     /* CPUs 0-3 */
	M.have_emu = true;
	M.emu = 0x0f;
	M.nio = 1;
	M.io_ids[0] = 7;
	M.io[0] = 0x0f;
	snprintf(M.nodeset, sizeof(M.nodeset), "0");
	M.restrictive = true;
	M.fail_at = -1;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;

	assert_true(M.nlog < LOGMAX);
	va_start(ap, fmt);
	vsnprintf(M.log[M.nlog++], sizeof(M.log[0]), fmt, ap);
	va_end(ap);
}

static int mfail(int code, const char *msg)
{
	M.err.code = code;
	snprintf(M.err.msg, sizeof(M.err.msg), "%s", msg);
	return -1;
}

/* A write call: 0 to make it, or -1 with the mock's error. */
static int write_call(void)
{
	int k = (int)M.nwrites++;

	if (M.gone)
		return mfail(E_GONE, "Domain not found");
	if (k == M.fail_at) {
		M.gone = M.fail_code == E_GONE;
		return mfail(M.fail_code, M.gone ? "Domain not found" : "injected failure");
	}
	if (M.fail_at >= 0 && k > M.fail_at && M.fail_after)
		return mfail(E_REFUSED, "restore refused");
	return 0;
}

static int m_vcpu_pins(void *dom, unsigned nvcpus, unsigned char *maps, int maplen)
{
	assert_ptr_equal(dom, &M);
	assert_int_equal(maplen, 1);
	if (M.gone || M.fail_read == 1)
		return mfail(M.gone ? E_GONE : E_REFUSED, M.gone ? "Domain not found" : "read refused");
	memcpy(maps, M.vcpu, nvcpus < M.nv ? nvcpus : M.nv);
	return (int)M.nv;
}

static int m_emulator_pin(void *dom, unsigned char *map, int maplen)
{
	if (M.gone || M.fail_read == 2)
		return mfail(M.gone ? E_GONE : E_REFUSED, M.gone ? "Domain not found" : "read refused");
	*map = M.emu;
	return M.have_emu;
}

static int m_iothreads(void *dom, int maplen, unsigned **ids, unsigned char **maps)
{
	if (M.gone || M.fail_read == 3)
		return mfail(M.gone ? E_GONE : E_REFUSED, M.gone ? "Domain not found" : "read refused");
	*ids = calloc(M.nio ? M.nio : 1, sizeof(unsigned));
	*maps = calloc(M.nio ? M.nio : 1, 1);
	memcpy(*ids, M.io_ids, M.nio * sizeof(unsigned));
	memcpy(*maps, M.io, M.nio);
	return (int)M.nio;
}

static int m_set_numa(void *dom, const char *nodeset, bool restrictive)
{
	logf_("numatune %s%s", nodeset, restrictive ? " restrictive" : "");
	if (write_call() < 0)
		return -1;
	if (M.numa_refused)
		return mfail(E_REFUSED, "change of nodeset for running domain requires restrictive numa mode");
	snprintf(M.nodeset, sizeof(M.nodeset), "%s", nodeset);
	M.restrictive = M.restrictive || restrictive;
	return 0;
}

static int m_pin_vcpu(void *dom, unsigned vcpu, const unsigned char *map, int maplen)
{
	logf_("vcpupin %u %#x", vcpu, *map);
	assert_true(vcpu < M.nv);
	if (write_call() < 0)
		return -1;
	M.vcpu[vcpu] = *map;
	return 0;
}

static int m_pin_emulator(void *dom, const unsigned char *map, int maplen)
{
	logf_("emulatorpin %#x", *map);
	if (write_call() < 0)
		return -1;
	M.emu = *map;
	return 0;
}

static int m_pin_iothread(void *dom, unsigned id, const unsigned char *map, int maplen)
{
	logf_("iothreadpin %u %#x", id, *map);
	assert_int_equal(id, M.io_ids[0]);
	if (write_call() < 0)
		return -1;
	M.io[0] = *map;
	return 0;
}

static void m_error(struct vmlv_err *e)
{
	*e = M.err;
}

static bool m_gone(void *dom, const struct vmlv_err *e)
{
	return e->code == E_GONE;
}

static const struct vmlv mock_lv = {
	.vcpu_pins = m_vcpu_pins,
	.emulator_pin = m_emulator_pin,
	.iothreads = m_iothreads,
	.set_numa = m_set_numa,
	.pin_vcpu = m_pin_vcpu,
	.pin_emulator = m_pin_emulator,
	.pin_iothread = m_pin_iothread,
	.error = m_error,
	.gone = m_gone,
};

/* ---- a move's inputs ------------------------------------------------------- */

struct fx {
	cpumask_t to_cpus;
	nodemask_t mems, to_mems;
	struct vmxml_info x;
	struct vmplan_in in;
};

/* dom on CPUs 0-3 with its memory on node 0 (numatune restrictive "0"),
 * to CPUs 4-7 and node 1. */
static void fx_init(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(mask_parse("4-7", &f->to_cpus), 0);
	assert_int_equal(mask_parse("0", &f->mems), 0);
	assert_int_equal(mask_parse("1", &f->to_mems), 0);
	f->x.has_numatune = true;
	snprintf(f->x.numatune_mode, sizeof(f->x.numatune_mode), "restrictive");
	snprintf(f->x.numatune_nodeset, sizeof(f->x.numatune_nodeset), "0");
	f->in = (struct vmplan_in){
		.name = "dom", .nr_vcpus = 2, .to_cpus = &f->to_cpus, .mems = &f->mems, .to_mems = &f->to_mems,
		.to_cpus_s = "4-7", .from_cpus_s = "0-3", .to_mems_s = "1", .x = &f->x, .ncpus = NCPU,
		.cwm = VM_CPUS_LOCAL, .locality_now = 0.5, .locality_target = 0.5,
	};
}

static struct vmpins pins_now(void)
{
	struct vmpins p;

	assert_int_equal(vmj_read(&mock_lv, &M, 2, 1, &p), 0);
	return p;
}

static void assert_log(const char *const *want, unsigned n)
{
	assert_int_equal(M.nlog, n);
	for (unsigned i = 0; i < n; i++)
		assert_string_equal(M.log[i], want[i]);
}

/* ---- the planner ----------------------------------------------------------- */

static void assert_steps(const struct vmplan *p, const char *const *want, unsigned n)
{
	char buf[64];

	assert_int_equal(p->n, n);
	for (unsigned i = 0; i < n; i++)
		assert_string_equal(vmplan_step_name(&p->s[i], buf, sizeof(buf)), want[i]);
}

/* One node to another: memory first, then each vCPU, the emulator, the
 * I/O threads, each step with the pin it replaces. */
static void test_plan_one_node_to_another(void **state)
{
	static const char *const want[] = { "numatune", "vcpupin 0", "vcpupin 1", "emulatorpin", "iothreadpin 7" };
	struct fx f;
	struct vmpins now;
	struct vmplan p;

	mock_reset();
	fx_init(&f);
	now = pins_now();
	vmplan_make(&p, &f.in, &now);
	assert_steps(&p, want, 5);
	assert_int_equal(p.maplen, 1);
	assert_int_equal(p.target[0], 0xf0);
	assert_null(p.s[0].old);
	for (unsigned i = 1; i < 5; i++)
		assert_int_equal(*p.s[i].old, 0x0f);
	assert_string_equal(p.old_nodeset, "0");
	assert_false(p.restrictive);
	assert_true(p.mem_movable);
	assert_false(p.mem_refused);
	vmplan_free(&p);
	vmpins_free(&now);
}

/* A pin already on the target is no step, nor an emulator libvirt
 * reports no pinning for; memory already where numatune says, and named
 * by it, is no step either. */
static void test_plan_only_what_changes(void **state)
{
	static const char *const want[] = { "vcpupin 0", "iothreadpin 7" };
	struct fx f;
	struct vmpins now;
	struct vmplan p;

	mock_reset();
	M.vcpu[1] = 0xf0;
	M.have_emu = false;
	fx_init(&f);
	f.mems = f.to_mems;
	snprintf(f.x.numatune_nodeset, sizeof(f.x.numatune_nodeset), "1");
	now = pins_now();
	vmplan_make(&p, &f.in, &now);
	assert_steps(&p, want, 2);
	assert_string_equal(p.old_nodeset, "1");
	vmplan_free(&p);
	vmpins_free(&now);

	/* numatune names the target but the memory is elsewhere: the step
	 * is made (libvirt's view must say where the memory belongs). */
	mock_reset();
	fx_init(&f);
	snprintf(f.x.numatune_nodeset, sizeof(f.x.numatune_nodeset), "1");
	now = pins_now();
	vmplan_make(&p, &f.in, &now);
	assert_int_equal(p.n, 5);
	assert_int_equal(p.s[0].kind, VMSTEP_NUMATUNE);
	vmplan_free(&p);
	vmpins_free(&now);
}

/* Memory libvirt can or cannot move: no <numatune> (set with mode
 * restrictive, the old nodeset is the guest's memory), mode strict (tried,
 * a refusal expected), memory bound per guest cell (no call at all). */
static void test_plan_memory_modes(void **state)
{
	struct fx f;
	struct vmpins now;
	struct vmplan p;

	mock_reset();
	now = pins_now();

	fx_init(&f);
	f.x.has_numatune = false;
	f.x.numatune_nodeset[0] = '\0';
	vmplan_make(&p, &f.in, &now);
	assert_int_equal(p.s[0].kind, VMSTEP_NUMATUNE);
	assert_true(p.restrictive);
	assert_true(p.mem_movable);
	assert_string_equal(p.old_nodeset, "0");
	vmplan_free(&p);

	fx_init(&f);
	snprintf(f.x.numatune_mode, sizeof(f.x.numatune_mode), "strict");
	vmplan_make(&p, &f.in, &now);
	assert_int_equal(p.s[0].kind, VMSTEP_NUMATUNE);
	assert_false(p.restrictive);
	assert_false(p.mem_movable);
	vmplan_free(&p);

	fx_init(&f);
	f.x.nr_memnodes_bound = 2;
	vmplan_make(&p, &f.in, &now);
	assert_int_equal(p.n, 4);
	assert_int_equal(p.s[0].kind, VMSTEP_VCPU);
	assert_true(p.mem_refused);
	assert_string_equal(p.mem_msg, "2 guest NUMA cells are bound to host nodes by <memnode>: "
			    "libvirt cannot move that memory live");
	vmplan_free(&p);
	f.x.nr_memnodes_bound = 1;
	vmplan_make(&p, &f.in, &now);
	assert_non_null(strstr(p.mem_msg, "1 guest NUMA cell is bound"));
	vmplan_free(&p);
	vmpins_free(&now);
}

/* cpus_without_memory: never, always, and local (only if the locality on
 * the target is not lower). */
static void test_plan_cpus_without_memory(void **state)
{
	static const struct {
		enum vm_cpus_without_memory cwm;
		double now, target;
		bool follow;
	} t[] = {
		{ VM_CPUS_NEVER, 0.2, 0.9, false },
		{ VM_CPUS_ALWAYS, 0.9, 0.1, true },
		{ VM_CPUS_LOCAL, 0.5, 0.5, true },
		{ VM_CPUS_LOCAL, 0.5, 0.5 - 1e-12, true },
		{ VM_CPUS_LOCAL, 0.5, 0.4, false },
		{ VM_CPUS_LOCAL, 0.2, 0.9, true },
	};
	struct fx f;
	struct vmpins now;
	struct vmplan p;

	mock_reset();
	now = pins_now();
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		fx_init(&f);
		f.in.cwm = t[i].cwm;
		f.in.locality_now = t[i].now;
		f.in.locality_target = t[i].target;
		vmplan_make(&p, &f.in, &now);
		assert_int_equal(p.cpus_follow, t[i].follow);
		vmplan_free(&p);
	}
	vmpins_free(&now);
}

/* ---- the executor ---------------------------------------------------------- */

static void carry(struct fx *f, struct apply_result *res, bool *touched)
{
	memset(res, 0, sizeof(*res));
	vmj_carry(&mock_lv, &M, &f->in, res, touched);
}

static void assert_state_initial(void)
{
	assert_int_equal(M.vcpu[0], 0x0f);
	assert_int_equal(M.vcpu[1], 0x0f);
	assert_int_equal(M.emu, 0x0f);
	assert_int_equal(M.io[0], 0x0f);
	assert_string_equal(M.nodeset, "0");
}

static void test_move_done(void **state)
{
	static const char *const want[] = { "numatune 1", "vcpupin 0 0xf0", "vcpupin 1 0xf0", "emulatorpin 0xf0",
					    "iothreadpin 7 0xf0" };
	struct fx f;
	struct apply_result res;
	bool touched;

	mock_reset();
	fx_init(&f);
	carry(&f, &res, &touched);
	assert_log(want, 5);
	assert_int_equal(res.status, APPLY_DONE);
	assert_string_equal(res.msg, "via libvirt: 2 vCPUs, emulator, iothreads -> CPUs 4-7 (vCPU0 was 0-3); "
			    "memory nodes 1");
	assert_int_equal(res.writes, 5);
	assert_true(touched);
	assert_string_equal(M.nodeset, "1");
	assert_int_equal(M.emu, 0xf0);

	/* No <numatune>: set with mode restrictive; a move whose memory
	 * stays makes only the pins. */
	mock_reset();
	fx_init(&f);
	f.x.has_numatune = false;
	carry(&f, &res, &touched);
	assert_string_equal(M.log[0], "numatune 1 restrictive");
	assert_non_null(strstr(res.msg, "memory nodes 1 (numatune restrictive)"));

	mock_reset();
	M.nio = 0;
	fx_init(&f);
	f.mems = f.to_mems;
	snprintf(f.x.numatune_nodeset, sizeof(f.x.numatune_nodeset), "1");
	carry(&f, &res, &touched);
	assert_int_equal(M.nlog, 3);
	assert_string_equal(res.msg, "via libvirt: 2 vCPUs, emulator -> CPUs 4-7 (vCPU0 was 0-3); "
			    "memory stays on nodes 1");
}

/* libvirt refuses the nodeset (mode strict) or memory is bound per cell:
 * the CPUs move as cpus_without_memory says. */
static void test_move_memory_cannot_move(void **state)
{
	static const char *const left[] = { "numatune 1" };
	struct fx f;
	struct apply_result res;
	bool touched;

	mock_reset();
	M.numa_refused = true;
	fx_init(&f);
	snprintf(f.x.numatune_mode, sizeof(f.x.numatune_mode), "strict");
	f.in.cwm = VM_CPUS_NEVER;
	carry(&f, &res, &touched);
	assert_log(left, 1);
	assert_int_equal(res.status, APPLY_NOT_APPLICABLE);
	assert_int_equal(res.err, -EOPNOTSUPP);
	assert_string_equal(res.msg, "memory of dom cannot move to nodes 1 (numatune strict): libvirt: change of "
			    "nodeset for running domain requires restrictive numa mode; CPUs left on 0-3 "
			    "(cpus_without_memory=never: locality 0.50 there, 0.50 on the target)");
	assert_int_equal(res.writes, 1);
	assert_false(touched);
	assert_false(res.cpus_moved);
	assert_state_initial();

	mock_reset();
	M.numa_refused = true;
	f.in.cwm = VM_CPUS_ALWAYS;
	carry(&f, &res, &touched);
	assert_int_equal(M.nlog, 5);
	assert_int_equal(res.status, APPLY_NOT_APPLICABLE);
	assert_true(res.cpus_moved);
	assert_true(touched);
	assert_non_null(strstr(res.msg, "; CPUs moved 0-3 -> 4-7 (cpus_without_memory=always)"));
	assert_string_equal(M.nodeset, "0");
	assert_int_equal(M.vcpu[0], 0xf0);

	/* <memnode>: no numatune call; local keeps the CPUs when the target
	 * would lower the locality. */
	mock_reset();
	fx_init(&f);
	f.x.nr_memnodes_bound = 1;
	f.in.locality_target = 0.25;
	carry(&f, &res, &touched);
	assert_int_equal(M.nlog, 0);
	assert_int_equal(res.writes, 0);
	assert_int_equal(res.status, APPLY_NOT_APPLICABLE);
	assert_non_null(strstr(res.msg, "1 guest NUMA cell is bound to host nodes by <memnode>"));
	assert_non_null(strstr(res.msg, "cpus_without_memory=local: locality 0.50 there, 0.25 on the target"));
}

/* A failure at each step in turn: the steps before it are undone newest
 * first, each to the value it replaced, and everything is as before. */
static void test_failure_at_every_step(void **state)
{
	static const char *const fwd[] = { "numatune 1", "vcpupin 0 0xf0", "vcpupin 1 0xf0", "emulatorpin 0xf0",
					   "iothreadpin 7 0xf0" };
	static const char *const back[] = { "numatune 0", "vcpupin 0 0xf", "vcpupin 1 0xf", "emulatorpin 0xf",
					    "iothreadpin 7 0xf" };
	static const char *const step[] = { "numatune", "vcpupin 0", "vcpupin 1", "emulatorpin", "iothreadpin 7" };
	struct fx f;
	struct apply_result res;
	bool touched;
	char want[320];

	for (int k = 0; k < 5; k++) {
		mock_reset();
		M.fail_at = k;
		M.fail_code = E_REFUSED;
		fx_init(&f);
		carry(&f, &res, &touched);
		assert_state_initial();
		assert_int_equal(res.status, APPLY_FAILED);
		assert_int_equal(res.err, -EIO);
		/* forward up to the failed call, then back in reverse */
		assert_int_equal(M.nlog, (unsigned)(2 * k + 1));
		for (int i = 0; i <= k; i++)
			assert_string_equal(M.log[i], fwd[i]);
		for (int i = 0; i < k; i++)
			assert_string_equal(M.log[k + 1 + i], back[k - 1 - i]);
		assert_int_equal(res.writes, (unsigned)(2 * k + 1));
		if (k == 0) {
			assert_string_equal(res.msg, "libvirt refused memory nodes 1 for dom: injected failure");
			assert_false(touched);
		} else {
			snprintf(want, sizeof(want), "libvirt refused %s for dom: injected failure; "
				 "old pinning and nodeset restored", step[k]);
			assert_string_equal(res.msg, want);
			assert_true(touched);
		}
	}

	/* Without a memory step: the pins only. */
	for (int k = 0; k < 4; k++) {
		mock_reset();
		M.fail_at = k;
		M.fail_code = E_REFUSED;
		fx_init(&f);
		f.mems = f.to_mems;
		snprintf(f.x.numatune_nodeset, sizeof(f.x.numatune_nodeset), "1");
		snprintf(M.nodeset, sizeof(M.nodeset), "1");
		carry(&f, &res, &touched);
		assert_int_equal(res.status, APPLY_FAILED);
		assert_non_null(strstr(res.msg, "; old pinning restored"));
		assert_int_equal(M.nlog, (unsigned)(2 * k + 1));
		snprintf(M.nodeset, sizeof(M.nodeset), "0");
		assert_state_initial();
	}
}

/* The rollback fails too: every undo is still tried, the first failure
 * is named. An unknown old nodeset cannot be put back. */
static void test_failure_and_rollback_fails(void **state)
{
	struct fx f;
	struct apply_result res;
	bool touched;

	mock_reset();
	M.fail_at = 3;
	M.fail_code = E_REFUSED;
	M.fail_after = true;
	fx_init(&f);
	carry(&f, &res, &touched);
	assert_int_equal(res.status, APPLY_FAILED_PARTIAL);
	assert_int_equal(res.err, -EIO);
	assert_string_equal(res.msg, "libvirt refused emulatorpin for dom: injected failure; restoring the old "
			    "pinning/nodeset also failed: restore refused");
	assert_int_equal(M.nlog, 7);
	assert_int_equal(res.writes, 7);

	mock_reset();
	M.fail_at = 1;
	M.fail_code = E_REFUSED;
	fx_init(&f);
	f.x.has_numatune = false;
	mask_zero(&f.mems);
	carry(&f, &res, &touched);
	assert_int_equal(res.status, APPLY_FAILED_PARTIAL);
	assert_non_null(strstr(res.msg, "also failed: the old nodeset is unknown"));
	assert_int_equal(res.writes, 3);   /* the numatune step, the failed pin, the nodeset not written back */
	assert_int_equal(M.nlog, 2);
}

/* The domain goes away mid-move: VANISHED; the pins made are still put
 * back (libvirt refuses them: it is gone), the nodeset is not. */
static void test_domain_vanishes(void **state)
{
	struct fx f;
	struct apply_result res;
	bool touched;

	for (int k = 0; k < 5; k++) {
		mock_reset();
		M.fail_at = k;
		M.fail_code = E_GONE;
		fx_init(&f);
		carry(&f, &res, &touched);
		assert_int_equal(res.status, APPLY_VANISHED);
		assert_int_equal(res.err, 0);
		assert_string_equal(res.msg, k ? "domain dom stopped during the move" : "domain dom stopped");
		assert_int_equal(touched, k > 0);
		for (unsigned i = 1; i < M.nlog; i++)
			assert_null(strstr(M.log[i], "numatune"));
		/* tried: forward to the failure, then every pin made */
		assert_int_equal(M.nlog, (unsigned)(k ? 2 * k : 1));
	}

	/* Gone, or refused, while its pinning is read: nothing written. */
	for (int r = 1; r <= 3; r++) {
		mock_reset();
		M.fail_read = r;
		fx_init(&f);
		carry(&f, &res, &touched);
		assert_int_equal(res.status, APPLY_FAILED);
		assert_string_equal(res.msg, "libvirt: reading the pinning of dom: read refused");
		assert_int_equal(M.nlog, 0);
		assert_false(touched);
	}
	mock_reset();
	M.gone = true;
	fx_init(&f);
	carry(&f, &res, &touched);
	assert_int_equal(res.status, APPLY_VANISHED);
	assert_string_equal(res.msg, "domain dom stopped");
	assert_int_equal(M.nlog, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plan_one_node_to_another),
		cmocka_unit_test(test_plan_only_what_changes),
		cmocka_unit_test(test_plan_memory_modes),
		cmocka_unit_test(test_plan_cpus_without_memory),
		cmocka_unit_test(test_move_done),
		cmocka_unit_test(test_move_memory_cannot_move),
		cmocka_unit_test(test_failure_at_every_step),
		cmocka_unit_test(test_failure_and_rollback_fails),
		cmocka_unit_test(test_domain_vanishes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
