/* devnode.c — a device's NUMA node from sysfs (see devnode.h). */
#include "devnode.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/mask.h"
#include "../orchestrator/base/parse.h"

/* Levels walked up from a vDPA or mdev device to the PCI function: a
 * vhost-vdpa device, its vdpa device, an auxiliary or virtio device, the
 * function; a little more for bridges in between. */
#define WALK_MAX 6

static bool all_of(const char *s, size_t n, const char *set)
{
	return strspn(s, set) == n;
}

bool devnode_is_pci(const char *s)
{
	static const char hex[] = "0123456789abcdefABCDEF";

	/* DDDD:BB:SS.F, as /sys/bus/pci/devices names them. */
	return strlen(s) == 12 && all_of(s, 4, hex) && s[4] == ':' && all_of(s + 5, 2, hex) && s[7] == ':' &&
	       all_of(s + 8, 2, hex) && s[10] == '.' && s[11] >= '0' && s[11] <= '7';
}

static bool is_vdpa_dev(const char *s)
{
	static const char pre[] = "/dev/vhost-vdpa-";
	size_t n = strlen(pre);

	return strncmp(s, pre, n) == 0 && s[n] && strlen(s + n) < 8 && all_of(s + n, strlen(s + n), "0123456789");
}

static bool is_uuid(const char *s)
{
	return strlen(s) == 36 && all_of(s, 36, "0123456789abcdefABCDEF-");
}

/* DIR's numa_node into *NODE: 0, or -ENOENT when it has none. */
static int read_node(const char *dir, int *node)
{
	char path[PATH_MAX], buf[32];
	uint64_t v;

	if (snprintf(path, sizeof(path), "%s/numa_node", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (fs_read_line(path, buf, sizeof(buf)) < 0)
		return -ENOENT;
	if (strcmp(buf, "-1") == 0) {
		*node = -1;
		return 0;
	}
	if (parse_u64(buf, &v) < 0 || v >= MASK_MAX_NODES)
		return -EINVAL;
	*node = (int)v;
	return 0;
}

/* From DIR (a device's directory, reached through sysfs' symlinks) up to
 * the nearest directory with a numa_node: the kernel resolves each ".."
 * after the link, so this climbs the device tree, not the bus's list. */
static int walk_up(const char *dir, int *node)
{
	char path[PATH_MAX];

	if (access(dir, F_OK) < 0)
		return -ENOENT;
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	for (unsigned i = 0; i < WALK_MAX; i++) {
		int r = read_node(path, node);

		if (r != -ENOENT)
			return r;
		if (strlen(path) + 3 >= sizeof(path))
			return -ENAMETOOLONG;
		strcat(path, "/..");
	}
	*node = -1;
	return 0;
}

/* The vdpa device holding vhost-vdpa-N (/sys/bus/vdpa/devices/vdpaX/
 * vhost-vdpa-N), and from it up. */
static int vdpa_node(const struct host_paths *hp, const char *dev, int *node)
{
	const char *chr = strrchr(dev, '/') + 1;
	char bus[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	int r = -ENOENT;
	DIR *d;

	if (snprintf(bus, sizeof(bus), "%s/bus/vdpa/devices", hp->sysfs) >= (int)sizeof(bus))
		return -ENAMETOOLONG;
	d = opendir(bus);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s/%s", bus, de->d_name, chr) >= (int)sizeof(path) ||
		    access(path, F_OK) < 0)
			continue;
		r = walk_up(path, node);
		break;
	}
	closedir(d);
	return r;
}

int devnode_of_dev(const struct host_paths *hp, bool block, unsigned maj, unsigned min, int *node)
{
	char path[PATH_MAX];

	/* A virtual device (/sys/devices/virtual/...) has no "device" link:
	 * no bus device behind it. */
	if (snprintf(path, sizeof(path), "%s/dev/%s/%u:%u/device", hp->sysfs, block ? "block" : "char", maj, min) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	return walk_up(path, node);
}

int devnode_of(const struct host_paths *hp, enum devnode_kind kind, const char *addr, int *node)
{
	char path[PATH_MAX];
	int r;

	switch (kind) {
	case DEVNODE_PCI:
		if (!devnode_is_pci(addr))
			return -EINVAL;
		if (snprintf(path, sizeof(path), "%s/bus/pci/devices/%s", hp->sysfs, addr) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		if (access(path, F_OK) < 0)
			return -ENOENT;
		/* A kernel without NUMA has no numa_node: no node. */
		r = read_node(path, node);
		if (r == -ENOENT) {
			*node = -1;
			r = 0;
		}
		return r;
	case DEVNODE_VDPA:
		if (!is_vdpa_dev(addr))
			return -EINVAL;
		return vdpa_node(hp, addr, node);
	case DEVNODE_MDEV:
		if (!is_uuid(addr))
			return -EINVAL;
		if (snprintf(path, sizeof(path), "%s/bus/mdev/devices/%s", hp->sysfs, addr) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		return walk_up(path, node);
	}
	return -EINVAL;
}
