#include "orchestrator/base/hostpaths.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "orchestrator/base/fs.h"

void host_paths_default(struct host_paths *hp)
{
	memset(hp, 0, sizeof(*hp));
	strcpy(hp->sysfs, "/sys");
	strcpy(hp->procfs, "/proc");
	strcpy(hp->cgroupfs, "/sys/fs/cgroup");
	strcpy(hp->rundir, "/run");
	strcpy(hp->vardir, "/var");
	hp->live = true;
}

int host_paths_from_root(struct host_paths *hp, const char *root)
{
	struct host_paths t;
	int n = 0;

	if (!root || !*root)
		return -EINVAL;
	if (!fs_is_dir(root))
		return -ENOENT;
	memset(&t, 0, sizeof(t));
	n |= snprintf(t.sysfs, sizeof(t.sysfs), "%s/sys", root) >= (int)sizeof(t.sysfs);
	n |= snprintf(t.procfs, sizeof(t.procfs), "%s/proc", root) >= (int)sizeof(t.procfs);
	n |= snprintf(t.cgroupfs, sizeof(t.cgroupfs), "%s/sys/fs/cgroup", root) >= (int)sizeof(t.cgroupfs);
	n |= snprintf(t.rundir, sizeof(t.rundir), "%s/run", root) >= (int)sizeof(t.rundir);
	n |= snprintf(t.vardir, sizeof(t.vardir), "%s/var", root) >= (int)sizeof(t.vardir);
	if (n)
		return -ENAMETOOLONG;
	t.live = false;
	*hp = t;
	return 0;
}
