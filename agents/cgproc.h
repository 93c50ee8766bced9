/* cgproc.h — where a process's cgroups are, from /proc/PID/cgroup.
 *
 * Runtimes need not put a container at one path in every v1 hierarchy:
 * plain `runc run` without cgroupsPath makes it below runc's own cgroup
 * of each controller, so its memory cgroup can lie elsewhere than its
 * cpuset cgroup. The kernel's word for a member process is the truth.
 */
#ifndef NUMAORCH_CGPROC_H
#define NUMAORCH_CGPROC_H

#include <stddef.h>
#include <sys/types.h>

/* Pure: the path of controller CTRL ("memory", "cpuacct") in TEXT, the
 * contents of a /proc/PID/cgroup ("4:memory:/a/b" lines, controllers
 * comma-separated); CTRL NULL asks for the v2 line ("0::/a"). Into OUT
 * (SZ bytes): 0, -ENOENT if there is no such line or its path is not
 * absolute, -ENAMETOOLONG. */
int cgproc_parse(const char *text, const char *ctrl, char *out, size_t sz);

/* The same read from PROCFS/PID/cgroup: 0, -ESRCH if the process is
 * gone, or cgproc_parse's errors. */
int cgproc_read(const char *procfs, pid_t pid, const char *ctrl, char *out, size_t sz);

#endif
