#include "orchestrator/actuator/cgwfixture.h"

#include <errno.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"

int cgwf_write(const char *root, const char *path, const char *rel, const char *file, const char *value)
{
	int r;

	/* A plain file, unlike a kernel attribute, keeps old bytes past a
	 * shorter write: truncate first. */
	if (truncate(path, 0) < 0)
		return -errno;
	r = fs_write_str(path, value);
	if (r == 0)
		cgwf_mirror_effective(root, path, file, value);
	return r;
}
