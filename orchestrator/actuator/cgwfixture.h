/* cgwfixture.h — cgroup writes into a fixture tree (--root).
 *
 * A fixture tree holds plain files where the kernel has attributes, so a
 * write there is a plain file write. The shipped daemon links
 * cgwfixture.c; the test build (build/numaorchd-test, and the unit tests)
 * links tests/hooks/cgwfixture_hooks.c in its place, which can also make
 * the "kernel" refuse a write and record every write for the tests. The
 * shipped binary carries no test hook (make check-shipped proves it).
 */
#ifndef NUMAORCH_CGWFIXTURE_H
#define NUMAORCH_CGWFIXTURE_H

/* Write VALUE to the fixture file PATH (FILE of cgroup REL under the
 * cgroupfs ROOT). Returns 0 or a negative errno. */
int cgwf_write(const char *root, const char *path, const char *rel, const char *file, const char *value);
/* After a write of FILE at PATH: where the fixture under ROOT holds
 * ".numaorch-effective", a cpuset.cpus write shows in the cgroup's
 * effective CPUs file too (cgwfeff.c). */
void cgwf_mirror_effective(const char *root, const char *path, const char *file, const char *value);

#endif
