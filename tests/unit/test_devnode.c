/* A guest's devices and their nodes: agents/devnode.c on a sysfs fixture
 * (PCI functions with numa_node, a vDPA device and an mdev under one),
 * agents/vmxml.c's <hostdev> and <interface> elements, agents/kubestate.c's
 * device-plugin checkpoint in the kubelet's format. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/devnode.h"
#include "agents/kubestate.h"
#include "agents/vmxml.h"
#include "orchestrator/base/hostpaths.h"

#define PCI "sys/devices/pci0000:00/0000:00:02.0"

/* A root with a NIC function on node 1 (0000:3b:00.1), one the firmware
 * gave no node (0000:00:03.0), a vDPA device and an mdev on the first. */
static char *fixture(struct host_paths *hp)
{
	char *root = tu_mkdtemp(), path[PATH_MAX];

	tu_write(root, PCI "/0000:3b:00.1/numa_node", "1\n");
	tu_write(root, PCI "/0000:3b:00.1/vdpa0/vhost-vdpa-0/dev", "238:0\n");
	tu_write(root, PCI "/0000:3b:00.1/1b8c3d7e-6a4f-4a56-9a2b-3c1d2e3f4a5b/mdev_type/name", "x\n");
	tu_write(root, "sys/devices/pci0000:00/0000:00:03.0/numa_node", "-1\n");
	tu_write(root, "sys/bus/pci/devices/.keep", "");
	tu_write(root, "sys/bus/vdpa/devices/.keep", "");
	tu_write(root, "sys/bus/mdev/devices/.keep", "");
	/* The buses list their devices by symlink, relative, as sysfs does. */
	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/0000:3b:00.1", root);
	assert_int_equal(symlink("../../../devices/pci0000:00/0000:00:02.0/0000:3b:00.1", path), 0);
	snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/0000:00:03.0", root);
	assert_int_equal(symlink("../../../devices/pci0000:00/0000:00:03.0", path), 0);
	snprintf(path, sizeof(path), "%s/sys/bus/vdpa/devices/vdpa0", root);
	assert_int_equal(symlink("../../../devices/pci0000:00/0000:00:02.0/0000:3b:00.1/vdpa0", path), 0);
	snprintf(path, sizeof(path), "%s/sys/bus/mdev/devices/1b8c3d7e-6a4f-4a56-9a2b-3c1d2e3f4a5b", root);
	assert_int_equal(symlink("../../../devices/pci0000:00/0000:00:02.0/0000:3b:00.1/"
				 "1b8c3d7e-6a4f-4a56-9a2b-3c1d2e3f4a5b", path), 0);
	assert_int_equal(host_paths_from_root(hp, root), 0);
	return root;
}

static void test_sysfs_nodes(void **state)
{
	struct host_paths hp;
	char *root = fixture(&hp);
	int node = 42;

	(void)state;
	assert_int_equal(devnode_of(&hp, DEVNODE_PCI, "0000:3b:00.1", &node), 0);
	assert_int_equal(node, 1);
	assert_int_equal(devnode_of(&hp, DEVNODE_PCI, "0000:00:03.0", &node), 0);
	assert_int_equal(node, -1);
	assert_int_equal(devnode_of(&hp, DEVNODE_PCI, "0000:99:00.0", &node), -ENOENT);
	/* Never a path: an address that is not one reads nothing. */
	assert_int_equal(devnode_of(&hp, DEVNODE_PCI, "../../etc/passwd", &node), -EINVAL);
	node = 42;
	assert_int_equal(devnode_of(&hp, DEVNODE_VDPA, "/dev/vhost-vdpa-0", &node), 0);
	assert_int_equal(node, 1);
	assert_int_equal(devnode_of(&hp, DEVNODE_VDPA, "/dev/vhost-vdpa-7", &node), -ENOENT);
	assert_int_equal(devnode_of(&hp, DEVNODE_VDPA, "/dev/sda", &node), -EINVAL);
	node = 42;
	assert_int_equal(devnode_of(&hp, DEVNODE_MDEV, "1b8c3d7e-6a4f-4a56-9a2b-3c1d2e3f4a5b", &node), 0);
	assert_int_equal(node, 1);
	assert_true(devnode_is_pci("0000:3b:00.1"));
	assert_false(devnode_is_pci("3b:00.1"));
	tu_rm_rf(root);
	free(root);
}

static const char *dom_xml =
	"<domain type='kvm'>\n"
	"  <name>nic-vm</name>\n"
	"  <uuid>6112aa7d-0765-49e7-a90f-029606270916</uuid>\n"
	"  <metadata>\n"
	"    <numaorch:policy xmlns:numaorch=\"urn:numaorch:libvirt:1\" mode=\"auto\" devices=\"require\"/>\n"
	"  </metadata>\n"
	"  <devices>\n"
	"    <disk type='file' device='disk'><source file='/x.img'/><target dev='vda'/></disk>\n"
	"    <hostdev mode='subsystem' type='pci' managed='yes'>\n"
	"      <source><address domain='0x0000' bus='0x3b' slot='0x00' function='0x1'/></source>\n"
	"      <address type='pci' domain='0x0000' bus='0x00' slot='0x05' function='0x0'/>\n"
	"    </hostdev>\n"
	"    <interface type='hostdev' managed='yes'>\n"
	"      <source><address type='pci' domain='0x0000' bus='0x00' slot='0x03' function='0x0'/></source>\n"
	"    </interface>\n"
	"    <interface type='vdpa'><source dev='/dev/vhost-vdpa-0'/></interface>\n"
	"    <interface type='network'><source network='default'/></interface>\n"
	"    <hostdev mode='subsystem' type='mdev' model='vfio-pci'>\n"
	"      <source><address uuid='1b8c3d7e-6a4f-4a56-9a2b-3c1d2e3f4a5b'/></source>\n"
	"    </hostdev>\n"
	"    <hostdev mode='subsystem' type='usb'><source><vendor id='0x1'/></source></hostdev>\n"
	"  </devices>\n"
	"</domain>\n";

static void test_domain_devices(void **state)
{
	struct vmxml_info x;
	struct host_paths hp;
	char err[200], *root = fixture(&hp);
	int nodes[4];

	(void)state;
	assert_int_equal(vmxml_parse(dom_xml, strlen(dom_xml), &x, err, sizeof(err)), 0);
	assert_int_equal(x.nr_devs, 4);
	assert_int_equal(x.devs[0].kind, DEVNODE_PCI);
	assert_string_equal(x.devs[0].addr, "0000:3b:00.1");
	assert_int_equal(x.devs[1].kind, DEVNODE_PCI);
	assert_string_equal(x.devs[1].addr, "0000:00:03.0");
	assert_int_equal(x.devs[2].kind, DEVNODE_VDPA);
	assert_string_equal(x.devs[2].addr, "/dev/vhost-vdpa-0");
	assert_int_equal(x.devs[3].kind, DEVNODE_MDEV);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(devnode_of(&hp, x.devs[i].kind, x.devs[i].addr, &nodes[i]), 0);
	assert_int_equal(nodes[0], 1);
	assert_int_equal(nodes[1], -1);
	assert_int_equal(nodes[2], 1);
	assert_int_equal(nodes[3], 1);
	assert_true(x.has_policy);
	assert_int_equal(x.policy.devices, GPOL_DEV_REQUIRE);
	tu_rm_rf(root);
	free(root);
}

static void test_bad_devices_attr(void **state)
{
	static const char *xml =
		"<domain><uuid>6112aa7d-0765-49e7-a90f-029606270916</uuid><metadata>"
		"<p:policy xmlns:p=\"urn:numaorch:libvirt:1\" mode=\"auto\" devices=\"always\"/></metadata></domain>";
	struct vmxml_info x;
	char err[200];

	(void)state;
	assert_int_equal(vmxml_parse(xml, strlen(xml), &x, err, sizeof(err)), 0);
	assert_false(x.has_policy);
	assert_non_null(strstr(x.policy_error, "devices"));
	assert_int_equal(x.nr_devs, 0);
}

/* The device manager's checkpoint as the kubelet (1.20+) writes it: ids
 * by the node the plugin reported, -1 for none (here PCI addresses, an
 * SR-IOV plugin's); a pod with devices is no pod the kubelet owns. */
static const char *ckpt =
	"{\"Data\":{\"PodDeviceEntries\":["
	"{\"PodUID\":\"uid-a\",\"ContainerName\":\"app\",\"ResourceName\":\"example.com/nic\","
	"\"DeviceIDs\":{\"1\":[\"dev1\",\"dev2\"]},\"AllocResp\":\"CgA=\"},"
	"{\"PodUID\":\"uid-b\",\"ContainerName\":\"app\",\"ResourceName\":\"intel.com/sriov\","
	"\"DeviceIDs\":{\"-1\":[\"0000:3b:00.1\"]},\"AllocResp\":\"CgA=\"},"
	"{\"PodUID\":\"uid-c\",\"ContainerName\":\"side\",\"ResourceName\":\"example.com/gpu\","
	"\"DeviceIDs\":{\"0\":[\"g0\"],\"1\":[\"g1\"]},\"AllocResp\":\"CgA=\"}],"
	"\"RegisteredDevices\":{\"example.com/nic\":[\"dev1\",\"dev2\",\"dev3\"]}},\"Checksum\":1234567}";

static void test_kubelet_checkpoint(void **state)
{
	struct kube_state ks = { 0 };
	const struct kube_pod *p;
	char err[256] = "", reason[256];

	(void)state;
	assert_int_equal(kube_parse_dev(&ks, ckpt, err, sizeof(err)), 0);
	p = kube_find(&ks, "uid-a");
	assert_non_null(p);
	assert_int_equal(p->nr_dev, 2);
	assert_true(mask_test(&p->dev_nodes, 1));
	assert_int_equal(mask_count(&p->dev_nodes), 1);
	kube_owner_reason(p, reason, sizeof(reason));
	assert_string_equal(reason, "");
	p = kube_find(&ks, "uid-b");
	assert_non_null(p);
	assert_int_equal(p->nr_dev, 1);
	assert_true(mask_empty(&p->dev_nodes));
	assert_int_equal(p->nr_dev_pci, 1);
	assert_string_equal(p->dev_pci[0], "0000:3b:00.1");
	p = kube_find(&ks, "uid-c");
	assert_int_equal(mask_count(&p->dev_nodes), 2);
	/* The format before 1.20: a list, no node. */
	assert_int_equal(kube_parse_dev(&ks, "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"uid-d\","
				     "\"ContainerName\":\"c\",\"ResourceName\":\"r\",\"DeviceIDs\":[\"x\"],"
				     "\"AllocResp\":null}],\"RegisteredDevices\":null},\"Checksum\":1}",
				     err, sizeof(err)), 0);
	assert_null(kube_find(&ks, "uid-a"));
	assert_int_equal(kube_find(&ks, "uid-d")->nr_dev, 1);
	/* Malformed: an error, nothing kept. */
	assert_int_equal(kube_parse_dev(&ks, "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"u\","
				     "\"DeviceIDs\":{\"x\":[\"a\"]}}]}}", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a node"));
	assert_int_equal(ks.nr_pods, 0);
	assert_int_equal(kube_parse_dev(&ks, "nope", err, sizeof(err)), -EINVAL);
	kube_clear(&ks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sysfs_nodes),
		cmocka_unit_test(test_domain_devices),
		cmocka_unit_test(test_bad_devices_attr),
		cmocka_unit_test(test_kubelet_checkpoint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
