#include "orchestrator/base/numamig.h"

#include <errno.h>
#include <numa.h>
#include <numaif.h>

bool numamig_available(void)
{
	return numa_available() >= 0;
}

int numamig_pages(pid_t pid, const int *from, unsigned nfrom, const int *to, unsigned nto)
{
	struct bitmask *f, *t;
	int r = 0;

	if (!numamig_available())
		return -EOPNOTSUPP; /* a kernel without NUMA support */
	if (nfrom == 0 || nto == 0)
		return -EINVAL;
	f = numa_allocate_nodemask();
	t = numa_allocate_nodemask();
	for (unsigned i = 0; i < nfrom; i++)
		if (from[i] >= 0 && (unsigned)from[i] < f->size)
			numa_bitmask_setbit(f, (unsigned)from[i]);
	for (unsigned i = 0; i < nto; i++)
		if (to[i] >= 0 && (unsigned)to[i] < t->size)
			numa_bitmask_setbit(t, (unsigned)to[i]);
	if (numa_migrate_pages(pid, f, t) < 0)
		r = -errno;
	numa_bitmask_free(f);
	numa_bitmask_free(t);
	return r;
}

int numamig_move(pid_t pid, unsigned long count, void **pages, const int *nodes, int *status)
{
	if (!numamig_available())
		return -EOPNOTSUPP;
	if (numa_move_pages(pid, count, pages, nodes, status, nodes ? MPOL_MF_MOVE : 0) < 0)
		return -errno;
	return 0;
}
