/* cgfdc.h — the container scanner's open files, kept from scan to scan.
 *
 * A guest's cpuset, CPU and memory files stay open and are re-read with
 * pread(..., 0): seq_files render afresh at offset 0, and an open file of
 * a removed cgroup reads ENODEV, so nothing stale can come back. This
 * halves a scan's system calls. The pid lists (cgroup.procs, tasks) are
 * kept only in a v2 hierarchy, whose lists restart their walk of the
 * cgroup's tasks at offset 0: v1 caches a pidlist per open file for a
 * second after each read, which could hand back a stale list. A guest's
 * children's pid lists (a pod's containers') are kept the same way while
 * its children are known (kid_names). Files stay open only within
 * a budget under the fd limit (RLIMIT_NOFILE), leaving room for
 * everything else the agent opens (API clients, libvirt, logs).
 *
 * Within the budget a guest's CPU counter comes first: the watch between
 * cycles reads every guest's counter each pass (cgscan_read_usage,
 * agents/drift.h), through its kept file or else by its path (a path
 * walk, an open and a close each pass, every guest over the budget);
 * the scan reads each of a guest's files once either way, so which files
 * the budget keeps costs it nothing. Another file is kept only while the
 * budget leaves room for a counter for every guest that has one and
 * lacks it; a scan's sweep closes other files until it does, which the
 * first scan (that finds the guests one by one) cannot know to leave, so
 * from the second scan on every guest's counter is kept as long as the
 * budget holds one file a guest.
 */
#ifndef NUMAORCH_CGFDC_H
#define NUMAORCH_CGFDC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "devcg.h"

enum cgfdc_slot {
	CGFDC_CPUS, CGFDC_MEMS, CGFDC_CPU, CGFDC_MEM,
	CGFDC_PROCS, CGFDC_THREADS,  /* v2 only (above) */
	CGFDC_NR
};

struct cgfdc_ent {
	char *rel;          /* NULL: free slot */
	unsigned gen;       /* scan that last saw it */
	int fd[CGFDC_NR];   /* -1: not open */
	bool has_cpu;       /* a CPU counter was read (to keep or not) */
	/* Its devices.list's meaning (v1, devcg.h) and when it was read
	 * (CLOCK_MONOTONIC, 0: never): kept from scan to scan. */
	int64_t dev_at;
	struct devcg_res dev;
	/* Its child cgroups as its last listing found them (cgscan.c reads
	 * them again unlisted while its directory, DIR_INO with DIR_NLINK
	 * links, and each child, KID_INO and no child of its own, are as
	 * they were): NR_KIDS names, each NUL-terminated, in listing order
	 * in KID_NAMES. NULL: none known. */
	char *kid_names;
	ino_t *kid_ino;
	/* Their pid lists (v2, as the guest's own): child I's cgroup.procs
	 * at 2 I, cgroup.threads at 2 I + 1, -1 when not open. */
	int *kid_fd;
	unsigned nr_kids;
	ino_t dir_ino;
	nlink_t dir_nlink;
};

/* A hash table by cgroup (open addressing; cap a power of two). */
struct cgfdc {
	struct cgfdc_ent *tab;
	unsigned cap, n;
	unsigned gen;
	unsigned open, budget;
	/* Entries with has_cpu; those of them with fd[CGFDC_CPU] kept. */
	unsigned nr_cpu, cpu_open;
};

/* An empty cache with its fd budget from the current RLIMIT_NOFILE. */
void cgfdc_init(struct cgfdc *c);
/* An empty cache that keeps at most BUDGET files open. */
void cgfdc_init_budget(struct cgfdc *c, unsigned budget);
/* Pure: the budget under a soft fd limit of NOFILE (RLIM_INFINITY: no
 * limit). */
unsigned cgfdc_budget_for(uint64_t nofile);
/* Close every file and free the table (not C). */
void cgfdc_clear(struct cgfdc *c);
/* A scan begins: entries not looked up from now on are swept after it. */
void cgfdc_begin(struct cgfdc *c);
/* The entry for cgroup REL, created if absent, marked seen by this scan.
 * Valid until the next cgfdc_get or cgfdc_sweep. */
struct cgfdc_ent *cgfdc_get(struct cgfdc *c, const char *rel);
/* The entry for cgroup REL if there is one, neither created nor marked
 * seen (a read between scans: the watch, agents/drift.h). */
struct cgfdc_ent *cgfdc_find(struct cgfdc *c, const char *rel);
/* Close the files of cgroups this scan did not look up, and other files
 * than counters until the budget holds a counter for every guest. */
void cgfdc_sweep(struct cgfdc *c);
/* Close E's file SLOT (it read an error: gone, or recreated). */
void cgfdc_drop(struct cgfdc *c, struct cgfdc_ent *e, enum cgfdc_slot slot);
/* E's child cgroups: the N names in NAMES (LEN bytes, each
 * NUL-terminated) with their inodes INO, found in its directory DIR_INO
 * of DIR_NLINK links. */
void cgfdc_kids_set(struct cgfdc *c, struct cgfdc_ent *e, ino_t dir_ino, nlink_t dir_nlink, const char *names,
		    size_t len, const ino_t *ino, unsigned n);
/* E's child cgroups unknown, their files closed (not free E). */
void cgfdc_kids_forget(struct cgfdc *c, struct cgfdc_ent *e);
/* Close E's child file I (kid_fd[I]). */
void cgfdc_kid_drop(struct cgfdc *c, struct cgfdc_ent *e, unsigned i);
/* Keep FD open as E's child file I if the budget allows, as another file
 * than a counter (cgfdc_keep); false: the caller closes it. */
bool cgfdc_keep_kid(struct cgfdc *c, struct cgfdc_ent *e, unsigned i, int fd);
/* Keep FD open as E's SLOT if the budget allows (a CPU counter first);
 * false: the caller closes it. */
bool cgfdc_keep(struct cgfdc *c, struct cgfdc_ent *e, enum cgfdc_slot slot, int fd);

#endif
