#include "orchestrator/model/numastat.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The decimal digits at S as *V, *E after them: false on overflow (what
 * strtoull's ERANGE was). S starts with a digit. Four thousand guests'
 * numa_stat are a hundred thousand numbers a scan: strtoull's locale and
 * base handling cost several times the digits. */
static bool digits(const char *s, unsigned long long *v, char **e)
{
	unsigned long long x = 0;

	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (ULLONG_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*v = x;
	*e = (char *)s;
	return true;
}

/* "N<id>=<count>" tokens in [S, END) into MEM (×MULT). */
static int node_counts(const char *s, const char *end, uint64_t mult, const struct snapshot *snap,
		       uint64_t *mem, nodemask_t *unknown)
{
	while (s < end) {
		unsigned long long id, v;
		char *e;
		int idx;

		while (s < end && *s == ' ')
			s++;
		if (s >= end)
			break;
		if (*s != 'N' || s[1] < '0' || s[1] > '9')
			return -EINVAL;
		if (!digits(s + 1, &id, &e) || *e != '=' || e[1] < '0' || e[1] > '9' || id >= MASK_MAX_NODES)
			return -EINVAL;
		if (!digits(e + 1, &v, &e) || e > end || (e < end && *e != ' '))
			return -EINVAL;
		s = e;
		idx = snap_node_index(snap, (int)id);
		if (idx < 0) {
			if (unknown)
				mask_set(unknown, id);
			continue;
		}
		mem[idx] += (uint64_t)v * mult;
	}
	return 0;
}

int numastat_parse(const char *text, bool v2, long page_size, const struct snapshot *snap,
		   uint64_t *mem, nodemask_t *unknown)
{
	const char *total = NULL, *total_end = NULL, *anon = NULL, *anon_end = NULL;
	const char *fil = NULL, *fil_end = NULL;
	bool hier = false;
	int r = -EINVAL;

	memset(mem, 0, snap->nr_nodes * sizeof(uint64_t));
	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');

		if (!e)
			e = p + strlen(p);
		if (!v2) {
			if (strncmp(p, "hierarchical_total=", 19) == 0) {
				total = p + 19;
				total_end = e;
				hier = true;
			} else if (!hier && strncmp(p, "total=", 6) == 0) {
				total = p + 6;
				total_end = e;
			}
		} else if (strncmp(p, "anon ", 5) == 0 && !anon) {
			anon = p + 5;
			anon_end = e;
		} else if (strncmp(p, "file ", 5) == 0 && !fil) {
			fil = p + 5;
			fil_end = e;
		}
		p = *e ? e + 1 : e;
	}
	if (!v2 && total) {
		/* Skip the total itself: "=N" up to the first blank. */
		const char *s = total;

		while (s < total_end && *s >= '0' && *s <= '9')
			s++;
		if (s > total && (s == total_end || *s == ' '))
			r = node_counts(s, total_end, (uint64_t)(page_size > 0 ? page_size : 4096), snap, mem,
					unknown);
	} else if (v2 && anon && fil) {
		r = node_counts(anon, anon_end, 1, snap, mem, unknown);
		if (r == 0)
			r = node_counts(fil, fil_end, 1, snap, mem, unknown);
	}
	if (r < 0)
		memset(mem, 0, snap->nr_nodes * sizeof(uint64_t));
	return r;
}

int numastat_parse_hugetlb(const char *text, const struct snapshot *snap, uint64_t *mem)
{
	/* The v1 memory.numa_stat layout, "total=" and "hierarchical_total="
	 * lines, in bytes: page size 1. */
	return numastat_parse(text, false, 1, snap, mem, NULL);
}
