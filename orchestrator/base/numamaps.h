/* numamaps.h — the one parser of /proc/PID/numa_maps, for VMs' memory
 * per node when their cgroup has none (agents/vmproc.c) and the mover's
 * census of a job's pages (orchestrator/mover/mover.c). Pure; it needs nothing
 * but libc, so the testbed's static helpers that link the mover can too.
 */
#ifndef NUMAORCH_NUMAMAPS_H
#define NUMAORCH_NUMAMAPS_H

#include <stdbool.h>
#include <stdint.h>

/* One line of numa_maps, one mapping: numamaps_line() fills it,
 * numamaps_node() then gives its "N<id>=<pages>" counts one by one. */
struct numamaps_line {
	const char *next;            /* the next line; NULL after the last */
	bool has_start;              /* the line starts with an address */
	uintptr_t start;             /* the mapping's start (has_start) */
	bool anon;                   /* an "anon=" count and no "file=" */
	bool huge;                   /* a hugetlb mapping: the "huge" token */
	uint64_t page;               /* bytes a page: kernelpagesize_kB, 4 KiB when absent */
	const char *cur, *eol;       /* numamaps_node's place on the line */
};

/* The line at L (up to its newline or the end of the text) into *LN. */
void numamaps_line(const char *l, struct numamaps_line *ln);

/* The next "N<id>=<pages>" count of LN's line into *ID and *PAGES (in
 * LN->page units); false after the last. A malformed token is skipped. */
bool numamaps_node(struct numamaps_line *ln, unsigned long long *id, uint64_t *pages);

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

/* The same over the hugetlb mappings of PAGE bytes a page only (lines
 * with the "huge" token and that kernelpagesize_kB): a guest's hugetlb
 * memory per node, which memory.numa_stat does not count. */
void numamaps_parse_huge(const char *text, uint64_t page, uint64_t *bytes, unsigned nids);

#endif
