/* cgwfeff.c — a fixture tree's effective CPUs made to follow a
 * cpuset.cpus write, as the kernel's do (cgwfixture.h): both the shipped
 * fixture writer and the test build's use it, so a fixture root behaves
 * the same under either binary. */
#include "orchestrator/actuator/cgwfixture.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"

void cgwf_mirror_effective(const char *root, const char *path, const char *file, const char *value)
{
	static const char *const eff[] = { "cpuset.cpus.effective", "cpuset.effective_cpus" };
	const char *slash = strrchr(path, '/');
	char aux[PATH_MAX + 32];

	/* Only where the fixture asks for it: older fixtures hold effective
	 * files that tests read as they were written. */
	if (!slash || strcmp(file, "cpuset.cpus") != 0 ||
	    snprintf(aux, sizeof(aux), "%s/.numaorch-effective", root) >= (int)sizeof(aux) || !fs_exists(aux))
		return;
	for (unsigned i = 0; i < 2; i++) {
		if (snprintf(aux, sizeof(aux), "%.*s/%s", (int)(slash - path), path, eff[i]) >= (int)sizeof(aux) ||
		    !fs_exists(aux))
			continue;
		if (truncate(aux, 0) == 0)
			(void)fs_write_str(aux, value);
		return;
	}
}
