/* numamaps.h — the one parser of /proc/PID/numa_maps, for VMs' memory
 * per node when their cgroup has none (agents/vmproc.c) and the mover's
 * census of a job's pages (orchestrator/mover.c). Pure; it needs nothing
 * but libc, so the testbed's static helpers that link the mover can too.
 */
#ifndef NUMAORCH_NUMAMAPS_H
#define NUMAORCH_NUMAMAPS_H

#include <stdint.h>

/* Bytes per node id in numa_maps TEXT: every mapping's "N<id>=<pages>"
 * times its kernelpagesize_kB (4 when absent), added to BYTES[id] for
 * id < NIDS (larger ids are skipped). Other tokens, and a malformed one,
 * are skipped: the file is the kernel's, one line a mapping. */
void numamaps_parse(const char *text, uint64_t *bytes, unsigned nids);

/* The same over the anonymous mappings only: lines with an "anon=" count
 * and no "file=" (heap, stack, anonymous mmap, THP; not a file's private
 * copy-on-write pages, nor shared memory): the pages move_pages(2) can
 * move for the one process that maps them. */
void numamaps_parse_anon(const char *text, uint64_t *bytes, unsigned nids);

#endif
