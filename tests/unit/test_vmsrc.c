/* The pure parts of the libvirt VM source and its actuator: what each
 * lifecycle event means, guest ids from uuids, the cpus_without_memory
 * setting and the locality test behind it. The libvirt parts run against
 * a real libvirtd in tests/integration/test_libvirt.py. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "agents/vmapply.h"
#include "agents/vmsrc.h"
#include "orchestrator/store/config.h"

static void test_event_actions(void **state)
{
	static const struct { int ev, detail; enum vmsrc_action a; } t[] = {
		{ VIR_DOMAIN_EVENT_STARTED, VIR_DOMAIN_EVENT_STARTED_BOOTED, VMSRC_PLACE },
		{ VIR_DOMAIN_EVENT_STARTED, VIR_DOMAIN_EVENT_STARTED_MIGRATED, VMSRC_PLACE },
		{ VIR_DOMAIN_EVENT_STARTED, VIR_DOMAIN_EVENT_STARTED_RESTORED, VMSRC_PLACE },
		{ VIR_DOMAIN_EVENT_STARTED, VIR_DOMAIN_EVENT_STARTED_FROM_SNAPSHOT, VMSRC_PLACE },
		{ VIR_DOMAIN_EVENT_STARTED, VIR_DOMAIN_EVENT_STARTED_WAKEUP, VMSRC_PLACE },
		{ VIR_DOMAIN_EVENT_RESUMED, VIR_DOMAIN_EVENT_RESUMED_MIGRATED, VMSRC_PLACE },
		{ VIR_DOMAIN_EVENT_RESUMED, VIR_DOMAIN_EVENT_RESUMED_UNPAUSED, VMSRC_RESCAN },
		{ VIR_DOMAIN_EVENT_STOPPED, VIR_DOMAIN_EVENT_STOPPED_DESTROYED, VMSRC_FORGET },
		{ VIR_DOMAIN_EVENT_STOPPED, VIR_DOMAIN_EVENT_STOPPED_MIGRATED, VMSRC_FORGET },
		{ VIR_DOMAIN_EVENT_STOPPED, VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN, VMSRC_FORGET },
		{ VIR_DOMAIN_EVENT_CRASHED, VIR_DOMAIN_EVENT_CRASHED_PANICKED, VMSRC_RESCAN },
		{ VIR_DOMAIN_EVENT_SHUTDOWN, VIR_DOMAIN_EVENT_SHUTDOWN_FINISHED, VMSRC_NONE },
		{ VIR_DOMAIN_EVENT_SUSPENDED, VIR_DOMAIN_EVENT_SUSPENDED_MIGRATED, VMSRC_NONE },
		{ VIR_DOMAIN_EVENT_DEFINED, VIR_DOMAIN_EVENT_DEFINED_ADDED, VMSRC_NONE },
		{ VIR_DOMAIN_EVENT_UNDEFINED, 0, VMSRC_NONE },
		{ VIR_DOMAIN_EVENT_PMSUSPENDED, 0, VMSRC_NONE },
		{ 99, 0, VMSRC_NONE },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(vmsrc_event_action(t[i].ev, t[i].detail), t[i].a);
	assert_string_equal(vmsrc_action_name(VMSRC_PLACE), "place");
	assert_string_equal(vmsrc_action_name(VMSRC_FORGET), "forget");
}

static void test_guest_id(void **state)
{
	char id[GUEST_ID_MAX];

	(void)state;
	vmsrc_guest_id(id, "6112aa7d-0765-49e7-a90f-029606270916");
	assert_string_equal(id, "vm-6112aa7d-0765-49e7-a90f-029606270916");
	assert_true(snap_id_valid(id));
	/* upper case is kept as given: libvirt prints lower case */
	vmsrc_guest_id(id, "ABCDEF00-0000-0000-0000-000000000000");
	assert_string_equal(id, "vm-ABCDEF00-0000-0000-0000-000000000000");
}

static void test_cpus_without_memory_names(void **state)
{
	enum vm_cpus_without_memory m;

	(void)state;
	assert_int_equal(vm_cpus_without_memory_parse("local", &m), 0);
	assert_int_equal(m, VM_CPUS_LOCAL);
	assert_int_equal(vm_cpus_without_memory_parse("never", &m), 0);
	assert_int_equal(m, VM_CPUS_NEVER);
	assert_int_equal(vm_cpus_without_memory_parse("always", &m), 0);
	assert_int_equal(m, VM_CPUS_ALWAYS);
	assert_int_equal(vm_cpus_without_memory_parse("sometimes", &m), -EINVAL);
	assert_string_equal(vm_cpus_without_memory_name(VM_CPUS_LOCAL), "local");
}

/* Nodes 0 and 1 have memory, node 2 has CPUs only and is nearest to 1. */
static void test_locality_on(void **state)
{
	struct snap_node nodes[3] = { { .id = 0, .nr_cpus = 2, .mem_total = 1ULL << 30 },
				      { .id = 1, .nr_cpus = 2, .mem_total = 1ULL << 30 },
				      { .id = 2, .nr_cpus = 2, .mem_total = 0 } };
	unsigned dist[9] = { 10, 20, 30, 20, 10, 15, 30, 15, 10 };
	struct snapshot *s = snap_new();
	struct snap_guest *g;
	nodemask_t n;

	(void)state;
	snap_set_nodes(s, nodes, 3, dist);
	g = snap_add_guest(s);
	g->mem_node[0] = 300;
	g->mem_node[1] = 100;
	g->mem_total = 400;
	mask_zero(&n);
	mask_set(&n, 0);
	assert_true(fabs(vmapply_locality_on(s, g, &n) - 0.75) < 1e-9);
	mask_zero(&n);
	mask_set(&n, 2); /* memory-less: counts its nearest memory node, 1 */
	assert_true(fabs(vmapply_locality_on(s, g, &n) - 0.25) < 1e-9);
	mask_set(&n, 0);
	/* Its vCPUs half on node 0 (300 of 400 there), half on node 2
	 * (nearest memory node 1: 100): true locality 0.5, not the 1.0 of
	 * "memory anywhere on its nodes". */
	assert_true(fabs(vmapply_locality_on(s, g, &n) - 0.5) < 1e-9);
	g->mem_node[0] = g->mem_node[1] = 0;
	g->mem_total = 0;
	assert_true(fabs(vmapply_locality_on(s, g, &n) - 1.0) < 1e-9);
	snap_unref(s);
}

/* The [libvirt] section: defaults, every key, range errors with the line. */
static void test_libvirt_config(void **state)
{
	struct agent_config c;
	char err[512];

	(void)state;
	assert_int_equal(config_load_string("", "t.conf", &c, err, sizeof(err)), 0);
	assert_true(c.libvirt_enabled);
	assert_string_equal(c.libvirt_uri, "qemu:///system");
	assert_int_equal(c.libvirt_keepalive_interval, 2);
	assert_int_equal(c.libvirt_keepalive_count, 2);
	assert_true(c.libvirt_place_on_start);
	assert_true(fabs(c.libvirt_place_vcpu_load - 1.0) < 1e-9);
	assert_int_equal(c.libvirt_cpus_without_memory, VM_CPUS_LOCAL);
	config_clear(&c);

	assert_int_equal(config_load_string("[libvirt]\nuri = qemu:///system?socket=/tmp/s\nkeepalive_interval = 5\n"
					    "keepalive_count = 1\nplace_on_start = no\nplace_vcpu_load = 25\n"
					    "cpus_without_memory = never\n", "t.conf", &c, err, sizeof(err)), 0);
	assert_string_equal(c.libvirt_uri, "qemu:///system?socket=/tmp/s");
	assert_int_equal(c.libvirt_keepalive_interval, 5);
	assert_int_equal(c.libvirt_keepalive_count, 1);
	assert_false(c.libvirt_place_on_start);
	assert_true(fabs(c.libvirt_place_vcpu_load - 0.25) < 1e-9);
	assert_int_equal(c.libvirt_cpus_without_memory, VM_CPUS_NEVER);
	config_clear(&c);

	static const struct { const char *text, *msg; } bad[] = {
		{ "[libvirt]\nkeepalive_interval = 0\n", "t.conf:2: [libvirt] keepalive_interval: must be an integer 1..60" },
		{ "[libvirt]\n\nkeepalive_count = 61\n", "t.conf:3: [libvirt] keepalive_count: must be an integer 1..60" },
		{ "[libvirt]\nplace_vcpu_load = 0\n", "t.conf:2: [libvirt] place_vcpu_load: must be a number 1..100" },
		{ "[libvirt]\ncpus_without_memory = some\n", "t.conf:2: [libvirt] cpus_without_memory: must be local, never or always" },
		{ "[libvirt]\nplace_on_start = maybe\n", "t.conf:2: [libvirt] place_on_start: must be yes or no" },
		{ "[libvirt]\nuri =\n", "t.conf:2: [libvirt] uri: must not be empty" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(config_load_string(bad[i].text, "t.conf", &c, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, bad[i].msg));
	}
}

/* The narrowing after a VM's mover job names the instance the job moved
 * (the job's snapshot), not the agent's view now: a domain restarted under
 * the same UUID (new id, new QEMU) must not be narrowed, nor a pid that a
 * new process took over. */
static void test_same_instance(void **state)
{
	struct snap_vm job = { .uuid = "u", .name = "vm1", .qemu_pid = 4242, .domid = 7, .qemu_start = 1000 };
	static const struct { int live_domid, start_r; uint64_t live_start; int want; const char *why; } t[] = {
		{ 7, 0, 1000, 0, NULL },
		{ 8, 0, 1000, -ESRCH, "was restarted since its job began (domain id 8, the job's 7)" },
		{ 8, -ESRCH, 0, -ESRCH, "was restarted" },
		{ 7, -ESRCH, 0, -ESRCH, "the QEMU process 4242 its job moved is gone" },
		{ 7, -ENOENT, 0, -ESRCH, "is gone" },
		{ 7, 0, 2000, -ESRCH, "pid 4242 is another process than the QEMU its job moved" },
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		err[0] = '\0';
		assert_int_equal(vmapply_same_instance(&job, t[i].live_domid, t[i].start_r, t[i].live_start, err,
						       sizeof(err)), t[i].want);
		if (t[i].why)
			assert_non_null(strstr(err, t[i].why));
	}
	/* An instance measured without an id or a start time: only what is
	 * known is compared. */
	job.domid = -1;
	job.qemu_start = 0;
	assert_int_equal(vmapply_same_instance(&job, 9, 0, 5, err, sizeof(err)), 0);
	assert_int_equal(vmapply_same_instance(&job, 9, -ESRCH, 0, err, sizeof(err)), -ESRCH);
	job.qemu_pid = 0;
	assert_int_equal(vmapply_same_instance(&job, 9, 0, 5, err, sizeof(err)), -ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_actions),
		cmocka_unit_test(test_guest_id),
		cmocka_unit_test(test_cpus_without_memory_names),
		cmocka_unit_test(test_locality_on),
		cmocka_unit_test(test_libvirt_config),
		cmocka_unit_test(test_same_instance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
