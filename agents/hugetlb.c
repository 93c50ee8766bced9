#include "hugetlb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/numamaps.h"
#include "../orchestrator/model/numastat.h"
#include "../orchestrator/base/xalloc.h"

#define STATUS_MAX    (64u << 10)
#define NUMA_MAPS_MAX (64u << 20)
#define HUGE_STAT_MAX (64u << 10)

bool ghuge_host_in_use(const struct snapshot *s)
{
	for (unsigned n = 0; n < s->nr_nodes; n++)
		for (unsigned i = 0; i < s->nodes[n].nr_hpools && i < SNAP_HP_MAX; i++)
			if (s->nodes[n].hpools[i].total > s->nodes[n].hpools[i].free)
				return true;
	return false;
}

/* The page sizes some node has pages of in use, smallest first. */
static unsigned sizes_in_use(const struct snapshot *s, uint64_t out[SNAP_HP_MAX])
{
	unsigned k = 0;

	for (unsigned n = 0; n < s->nr_nodes; n++)
		for (unsigned i = 0; i < s->nodes[n].nr_hpools && i < SNAP_HP_MAX; i++) {
			const struct snap_hpool *p = &s->nodes[n].hpools[i];
			unsigned j;

			if (p->total <= p->free)
				continue;
			for (j = 0; j < k && out[j] != p->page; j++)
				;
			if (j == k && k < SNAP_HP_MAX)
				out[k++] = p->page;
		}
	return k;
}

/* The kernel's name of a page size in hugetlb cgroup files: 2MB, 1GB, 64KB. */
static void size_name(uint64_t page, char *buf, size_t sz)
{
	if (page >= (1ULL << 30) && !(page & ((1ULL << 30) - 1)))
		snprintf(buf, sz, "%lluGB", (unsigned long long)(page >> 30));
	else if (page >= (1ULL << 20) && !(page & ((1ULL << 20) - 1)))
		snprintf(buf, sz, "%lluMB", (unsigned long long)(page >> 20));
	else
		snprintf(buf, sz, "%lluKB", (unsigned long long)(page >> 10));
}

/* HugetlbPages of /proc/PID/status in bytes. */
static int status_huge(const struct host_paths *hp, pid_t pid, uint64_t *bytes)
{
	char path[PATH_MAX], *buf = NULL, *k;
	size_t len;
	int r;

	if (snprintf(path, sizeof(path), "%s/%d/status", hp->procfs, (int)pid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = fs_read_file(path, STATUS_MAX, &buf, &len);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	k = strstr(buf, "\nHugetlbPages:");
	*bytes = k ? strtoull(k + 14, NULL, 10) << 10 : 0;
	free(buf);
	return 0;
}

/* Keep the size with the most bytes; warn about the others. */
static void take(struct snapshot *s, struct snap_guest *g, const uint64_t sizes[], unsigned k,
		 uint64_t *const by_size[], bool add_to_mem)
{
	unsigned best = k;
	uint64_t bestsum = 0;

	for (unsigned i = 0; i < k; i++) {
		uint64_t sum = 0;

		for (unsigned n = 0; n < s->nr_nodes; n++)
			sum += by_size[i][n];
		if (sum > bestsum) {
			if (best < k)
				snap_warn(s, "guest %s: huge pages of several sizes; those of %llu kB count as ordinary memory",
					  g->id, (unsigned long long)(sizes[best] >> 10));
			bestsum = sum;
			best = i;
		} else if (sum) {
			snap_warn(s, "guest %s: huge pages of several sizes; those of %llu kB count as ordinary memory",
				  g->id, (unsigned long long)(sizes[i] >> 10));
		}
	}
	if (best == k)
		return;
	g->huge_page = sizes[best];
	memcpy(snap_guest_huge(s, g), by_size[best], s->nr_nodes * sizeof(uint64_t));
	for (unsigned i = 0; add_to_mem && i < k; i++)
		for (unsigned n = 0; n < s->nr_nodes; n++)
			g->mem_node[n] += by_size[i][n];
}

int ghuge_read(const struct host_paths *hp, struct snapshot *s, struct snap_guest *g,
	       const char *cgdir, pid_t pid, bool add_to_mem)
{
	uint64_t sizes[SNAP_HP_MAX], *by_size[SNAP_HP_MAX] = { 0 };
	unsigned k = sizes_in_use(s, sizes);
	bool from_cg = false;
	char path[PATH_MAX], *buf = NULL;
	size_t len;
	int r = 0;

	if (!k)
		return 0;
	for (unsigned i = 0; i < k; i++)
		by_size[i] = xcalloc(s->nr_nodes ? s->nr_nodes : 1, sizeof(uint64_t));
	for (unsigned i = 0; cgdir && i < k; i++) {
		char name[24];

		size_name(sizes[i], name, sizeof(name));
		if (snprintf(path, sizeof(path), "%s/hugetlb.%s.numa_stat", cgdir, name) >= (int)sizeof(path))
			continue;
		if (fs_read_file(path, HUGE_STAT_MAX, &buf, &len) < 0)
			continue;
		if (numastat_parse_hugetlb(buf, s, by_size[i]) == 0)
			from_cg = true;
		else
			snap_warn(s, "guest %s: %s: malformed", g->id, path);
		free(buf);
		buf = NULL;
	}
	if (!from_cg && pid > 0) {
		uint64_t total = 0, *by_id;

		r = status_huge(hp, pid, &total);
		if (r < 0 || !total)
			goto out;
		if (snprintf(path, sizeof(path), "%s/%d/numa_maps", hp->procfs, (int)pid) >= (int)sizeof(path)) {
			r = -ENAMETOOLONG;
			goto out;
		}
		r = fs_read_file(path, NUMA_MAPS_MAX, &buf, &len);
		if (r < 0) {
			r = r == -ENOENT ? -ESRCH : r;
			goto out;
		}
		by_id = xcalloc(MASK_MAX_NODES, sizeof(*by_id));
		for (unsigned i = 0; i < k; i++) {
			memset(by_id, 0, MASK_MAX_NODES * sizeof(*by_id));
			numamaps_parse_huge(buf, sizes[i], by_id, MASK_MAX_NODES);
			for (unsigned n = 0; n < s->nr_nodes; n++)
				if (s->nodes[n].id >= 0 && s->nodes[n].id < MASK_MAX_NODES)
					by_size[i][n] = by_id[s->nodes[n].id];
		}
		free(by_id);
		free(buf);
	}
	take(s, g, sizes, k, by_size, add_to_mem);
out:
	for (unsigned i = 0; i < k; i++)
		free(by_size[i]);
	return r;
}
