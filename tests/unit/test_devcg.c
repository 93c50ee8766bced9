/* A container's devices from cgroup v1's devices.list (agents/devcg.c) on
 * a sysfs fixture in the kernel's layout (/sys/dev/char/MAJ:MIN and
 * /sys/dev/block/MAJ:MIN linking into /sys/devices, each device's
 * "device" link to its bus device), and through the container scan
 * (agents/cgscan.c) on a v1 hierarchy with its devices controller: read
 * once, then not again for a while and again by DEVCG_REREAD_NS; looked
 * up once per text. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/cgscan.h"
#include "agents/devcg.h"
#include "orchestrator/base/hostpaths.h"

#define HEX_A "a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2"
#define HEX_B "b1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2c3d4e5f6a1b2"
#define SEC 1000000000LL

/* Docker's default rules: nothing but what every container gets. */
#define DOCKER_DEFAULT                                                                             \
	"c *:* m\nb *:* m\nc 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 1:8 rwm\nc 1:9 rwm\nc 5:0 rwm\n" \
	"c 5:1 rwm\nc 5:2 rwm\nc 136:* rwm\nc 10:200 rwm\n"

/* REL (under ROOT) a symlink to TARGET; its directory made first. */
static void link_at(const char *root, const char *target, const char *rel)
{
	char path[PATH_MAX], keep[PATH_MAX];

	snprintf(keep, sizeof(keep), "%s", rel);
	snprintf(strrchr(keep, '/'), sizeof(keep) - (size_t)(strrchr(keep, '/') - keep), "/.keep");
	tu_write(root, keep, "");
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

/* A device DEV (sysfs path under sys/devices) of class/number KIND
 * ("char" or "block") MAJMIN, its bus device BUS ("" : a virtual one). */
static void device(const char *root, const char *kind, const char *majmin, const char *dev, const char *bus)
{
	char rel[PATH_MAX], target[PATH_MAX];

	snprintf(rel, sizeof(rel), "sys/devices/%s/dev", dev);
	tu_write(root, rel, majmin);
	if (bus[0]) {
		snprintf(rel, sizeof(rel), "sys/devices/%s/device", dev);
		snprintf(target, sizeof(target), "%s/sys/devices/%s", root, bus);
		link_at(root, target, rel);
	}
	snprintf(rel, sizeof(rel), "sys/dev/%s/%s", kind, majmin);
	snprintf(target, sizeof(target), "../../devices/%s", dev);
	link_at(root, target, rel);
}

/* An NVMe controller on node 1 (char 243:0), a virtio disk whose PCI
 * function is on node 0 (block 252:16, its bus device the virtio one
 * below the function), a GPU on node 2 (card0 226:0, renderD128
 * 226:128), a function the firmware gave no node (char 244:0), and the
 * virtual null and fuse. */
static char *fixture(struct host_paths *hp)
{
	char *root = tu_mkdtemp();

	tu_write(root, "sys/devices/pci0000:00/0000:3b:00.1/numa_node", "1\n");
	device(root, "char", "243:0", "pci0000:00/0000:3b:00.1/nvme/nvme0", "pci0000:00/0000:3b:00.1");
	tu_write(root, "sys/devices/pci0000:00/0000:00:04.0/numa_node", "0\n");
	tu_write(root, "sys/devices/pci0000:00/0000:00:04.0/virtio2/features", "0\n");
	device(root, "block", "252:16", "pci0000:00/0000:00:04.0/virtio2/block/vdb", "pci0000:00/0000:00:04.0/virtio2");
	tu_write(root, "sys/devices/pci0000:80/0000:81:00.0/numa_node", "2\n");
	device(root, "char", "226:0", "pci0000:80/0000:81:00.0/drm/card0", "pci0000:80/0000:81:00.0");
	device(root, "char", "226:128", "pci0000:80/0000:81:00.0/drm/renderD128", "pci0000:80/0000:81:00.0");
	tu_write(root, "sys/devices/pci0000:00/0000:00:03.0/numa_node", "-1\n");
	device(root, "char", "244:0", "pci0000:00/0000:00:03.0/misc/x0", "pci0000:00/0000:00:03.0");
	device(root, "char", "1:3", "virtual/mem/null", "");
	device(root, "char", "10:229", "virtual/misc/fuse", "");
	assert_int_equal(host_paths_from_root(hp, root), 0);
	return root;
}

static void done(char *root)
{
	tu_rm_rf(root);
	free(root);
}

static void test_rules(void **state)
{
	struct host_paths hp;
	char *root = fixture(&hp);
	struct devcg_res r;

	(void)state;
	/* what every container gets: nothing */
	assert_int_equal(devcg_parse(&hp, DOCKER_DEFAULT, &r), 0);
	assert_int_equal(r.nr, 0);
	assert_false(r.all);
	assert_true(mask_empty(&r.nodes));
	/* the NVMe, the disk, the GPU's two by its wildcard minor, the one
	 * without a node; mknod alone, virtual devices and ones sysfs does
	 * not have are not counted */
	assert_int_equal(devcg_parse(&hp, DOCKER_DEFAULT "c 243:0 rw\nb 252:16 rwm\nc 226:* rw\nc 244:0 r\n"
					      "c 245:0 m\nc 10:229 rwm\nc 250:1 rwm\n", &r), 0);
	assert_int_equal(r.nr, 5);
	assert_false(r.all);
	assert_int_equal(mask_count(&r.nodes), 3);
	assert_true(mask_test(&r.nodes, 0) && mask_test(&r.nodes, 1) && mask_test(&r.nodes, 2));
	/* a: the char and the block device of a number */
	assert_int_equal(devcg_parse(&hp, "a 243:0 rwm\n", &r), 0);
	assert_int_equal(r.nr, 1);
	assert_true(mask_test(&r.nodes, 1));
	/* every device (a privileged container, or the host's root): all,
	 * on no one node */
	assert_int_equal(devcg_parse(&hp, "a *:* rwm\n", &r), 0);
	assert_true(r.all);
	assert_int_equal(r.nr, 0);
	assert_true(mask_empty(&r.nodes));
	assert_int_equal(devcg_parse(&hp, "c 243:0 rw\nc *:* rw\n", &r), 0);
	assert_true(r.all);
	assert_true(mask_empty(&r.nodes));
	/* not rules */
	assert_int_equal(devcg_parse(&hp, "x 1:3 rwm\n", &r), -EINVAL);
	assert_int_equal(devcg_parse(&hp, "c 1-3 rwm\n", &r), -EINVAL);
	assert_int_equal(devcg_parse(&hp, "c 1:3 rwx\n", &r), -EINVAL);
	assert_int_equal(devcg_parse(&hp, "c 99999999999:3 rw\n", &r), -EINVAL);
	done(root);
}

/* One look-up per distinct text: the same list again costs none. */
static void test_cache(void **state)
{
	struct host_paths hp;
	char *root = fixture(&hp);
	struct devcg_cache *c = devcg_cache_new(&hp);
	struct devcg_res r;
	unsigned n;

	(void)state;
	assert_int_equal(devcg_resolve(c, "c 243:0 rw\nc 226:* rw\n", &r), 0);
	assert_int_equal(r.nr, 3);
	n = devcg_cache_lookups(c);
	assert_true(n >= 3);
	for (int i = 0; i < 100; i++) {
		assert_int_equal(devcg_resolve(c, "c 243:0 rw\nc 226:* rw\n", &r), 0);
		assert_int_equal(r.nr, 3);
	}
	assert_int_equal(devcg_cache_lookups(c), n);
	assert_int_equal(devcg_resolve(c, "c 244:0 rw\n", &r), 0);
	assert_int_equal(devcg_cache_lookups(c), n + 1);
	assert_int_equal(r.nr, 1);
	assert_true(mask_empty(&r.nodes));
	/* more texts than the cache keeps: the oldest goes, answers stay right */
	for (int i = 0; i < DEVCG_CACHE_MAX + 8; i++) {
		char text[64];

		snprintf(text, sizeof(text), "c 243:0 rw\nc 7:%d rw\n", i);
		assert_int_equal(devcg_resolve(c, text, &r), 0);
		assert_int_equal(r.nr, 1);
	}
	assert_int_equal(devcg_resolve(c, "x\n", &r), -EINVAL);
	devcg_cache_free(c);
	done(root);
}

/* A v1 host (cpuset, memory, cpuacct, devices hierarchies) with a docker
 * container. */
static void v1_cg(const char *root, const char *rel, const char *devices)
{
	char p[PATH_MAX];

#define W(fmt, text)                                         \
	do {                                                 \
		snprintf(p, sizeof(p), "sys/fs/cgroup/" fmt, rel); \
		tu_write(root, p, text);                     \
	} while (0)
	W("cpuset%s/cgroup.procs", "100\n");
	W("cpuset%s/tasks", "100\n");
	W("cpuset%s/cpuset.cpus", "0-3\n");
	W("cpuset%s/cpuset.mems", "0\n");
	W("cpuset%s/cpuset.effective_cpus", "0-3\n");
	W("cpuset%s/cpuset.effective_mems", "0\n");
	W("memory%s/cgroup.procs", "100\n");
	W("memory%s/memory.numa_stat", "total=1 N0=1 N1=0\n");
	W("cpuacct%s/cgroup.procs", "100\n");
	W("cpuacct%s/cpuacct.usage", "10\n");
	if (devices) {
		W("devices%s/cgroup.procs", "100\n");
		W("devices%s/devices.list", devices);
	}
#undef W
}

static struct snapshot *scan(struct cgscan *cs, int64_t now)
{
	struct snapshot *s = snap_new();
	struct snap_node n[3];

	memset(n, 0, sizeof(n));
	for (int i = 0; i < 3; i++) {
		n[i].id = i;
		mask_set(&n[i].cpus, (unsigned)i);
		n[i].nr_cpus = 1;
		n[i].mem_total = 1ULL << 30;
	}
	snap_set_nodes(s, n, 3, NULL);
	assert_int_equal(cgscan_scan(cs, s, now), 0);
	return s;
}

static const struct snap_guest *guest(const struct snapshot *s, const char *id)
{
	for (unsigned i = 0; i < s->nr_guests; i++)
		if (strcmp(s->guests[i].id, id) == 0)
			return &s->guests[i];
	fail_msg("no guest %s", id);
	return NULL;
}

static void test_scan_v1(void **state)
{
	struct host_paths hp;
	char *root = fixture(&hp);
	struct cgscan *cs = NULL;
	struct snapshot *s;
	const struct snap_guest *g;

	(void)state;
	v1_cg(root, "", "a *:* rwm\n");
	v1_cg(root, "/docker", "a *:* rwm\n");
	v1_cg(root, "/docker/" HEX_A, DOCKER_DEFAULT "c 243:0 rwm\n");
	v1_cg(root, "/docker/" HEX_B, "a *:* rwm\n");
	/* a pod's cgroup allows what all its containers do: not read */
	v1_cg(root, "/kubepods", "a *:* rwm\n");
	v1_cg(root, "/kubepods/pod3d4c5b6a-7980-4a1b-8c2d-3e4f5a6b7c8d", "c 243:0 rwm\n");
	assert_int_equal(cgscan_new(&hp, NULL, &cs), 0);
	s = scan(cs, 10 * SEC);
	g = guest(s, "kubernetes-3d4c5b6a-7980-4a1b-8c2d-3e4f5a6b7c8d");
	assert_int_equal(g->nr_devices, 0);
	assert_false(g->dev_all);
	g = guest(s, "docker-" HEX_A);
	assert_int_equal(g->nr_devices, 1);
	assert_true(mask_test(&g->dev_nodes, 1) && mask_count(&g->dev_nodes) == 1);
	assert_false(g->dev_all);
	g = guest(s, "docker-" HEX_B);
	assert_true(g->dev_all);
	assert_int_equal(g->nr_devices, 0);
	assert_true(mask_empty(&g->dev_nodes));
	snap_unref(s);

	/* Changed rules are not read a second later, and are by
	 * DEVCG_REREAD_NS. */
	v1_cg(root, "/docker/" HEX_A, DOCKER_DEFAULT "c 226:0 rwm\n");
	s = scan(cs, 11 * SEC);
	g = guest(s, "docker-" HEX_A);
	assert_true(mask_test(&g->dev_nodes, 1) && mask_count(&g->dev_nodes) == 1);
	snap_unref(s);
	s = scan(cs, 10 * SEC + DEVCG_REREAD_NS);
	g = guest(s, "docker-" HEX_A);
	assert_int_equal(g->nr_devices, 1);
	assert_true(mask_test(&g->dev_nodes, 2) && mask_count(&g->dev_nodes) == 1);
	snap_unref(s);
	cgscan_free(cs);
	done(root);
}

/* Without a devices hierarchy (v2: its rules are a BPF program), nothing
 * is read and nothing is said. */
static void test_scan_no_devices_hierarchy(void **state)
{
	struct host_paths hp;
	char *root = fixture(&hp);
	struct cgscan *cs = NULL;
	struct snapshot *s;
	const struct snap_guest *g;

	(void)state;
	v1_cg(root, "", NULL);
	v1_cg(root, "/docker", NULL);
	v1_cg(root, "/docker/" HEX_A, NULL);
	assert_int_equal(cgscan_new(&hp, NULL, &cs), 0);
	s = scan(cs, 10 * SEC);
	g = guest(s, "docker-" HEX_A);
	assert_int_equal(g->nr_devices, 0);
	assert_false(g->dev_all);
	assert_int_equal(s->nr_warnings, 0);
	snap_unref(s);
	cgscan_free(cs);
	done(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_scan_v1),
		cmocka_unit_test(test_scan_no_devices_hierarchy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
