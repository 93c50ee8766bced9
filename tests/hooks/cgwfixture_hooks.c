/* The test build's cgwf_write (see orchestrator/actuator/cgwfixture.h): linked
 * into build/numaorchd-test and the unit tests in place of
 * orchestrator/actuator/cgwfixture.c, never into the shipped daemon.
 *
 * Fixture trees stand in for the kernel: a file "X.refuse" holding an
 * errno name makes writes to X fail with it (as the kernel refuses
 * EBUSY/EINVAL/ENOSPC), and if "<root>/.numaorch-writes" exists every
 * write is appended to it, so tests can check the order of writes. If
 * "<root>/.numaorch-effective" exists a cpuset.cpus written shows in the
 * cgroup's effective CPUs file, where it has one, as the kernel shows
 * it: a placer that rewrites the cpuset after numaorchd (conflict.h) is
 * told from numaorchd's own write (without it the file keeps what the
 * fixture had, and the next snapshot sees the cpuset as before). */
#include "orchestrator/actuator/cgwfixture.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"

static int refuse_errno(const char *name)
{
	static const struct { const char *n; int e; } t[] = {
		{ "EBUSY", EBUSY }, { "EINVAL", EINVAL }, { "ENOSPC", ENOSPC },
		{ "EACCES", EACCES }, { "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EIO", EIO },
	};

	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(name, t[i].n) == 0)
			return -t[i].e;
	return -EIO;
}

int cgwf_write(const char *root, const char *path, const char *rel, const char *file, const char *value)
{
	char aux[PATH_MAX + 16], name[32];
	FILE *f;
	int r;

	if (snprintf(aux, sizeof(aux), "%s.refuse", path) < (int)sizeof(aux) &&
	    fs_read_line(aux, name, sizeof(name)) == 0)
		return refuse_errno(name);
	if (snprintf(aux, sizeof(aux), "%s/.numaorch-writes", root) >= (int)sizeof(aux))
		aux[0] = '\0';
	if (aux[0] && fs_exists(aux) && (f = fopen(aux, "ae"))) {
		fprintf(f, "%s %s %s\n", rel, file, value);
		fclose(f);
	}
	if (truncate(path, 0) < 0)
		return -errno;
	r = fs_write_str(path, value);
	if (r == 0)
		cgwf_mirror_effective(root, path, file, value);
	return r;
}
