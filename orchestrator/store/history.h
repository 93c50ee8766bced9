/* history.h — a bounded, in-memory history of every guest: per cycle its
 * locality, CPU use, CPU and memory nodes and memory per node.
 *
 * The engine thread records one sample per guest per cycle (at most one
 * per SPACING seconds, so the ring of HISTORY_SAMPLES covers the
 * configured window whatever the interval); the REST server reads a copy
 * of one guest's series at any time (a short internal lock, never held
 * across I/O). A guest missing from a snapshot loses its history.
 *
 * Samples are quantised — locality to 1e-4, CPU use to 0.01 CPU, memory
 * per node to 1/65536 of the guest's largest node (at least 1 KiB), time
 * to 0.1 s — and stored as the change from the guest's previous sample
 * (history.c has the layout): what stayed the same costs nothing, so a
 * guest that changes its locality, CPU use and one node's memory every
 * sample takes about 7 bytes a sample on 8 nodes. A guest's buffer grows
 * with its samples; the worst case, every field changing by a lot, is
 * 13 + 3 × (nodes + 7) / 8 + 3 × nodes bytes a sample (40 on 8 nodes,
 * plus an eighth of spare room). Memory is bounded
 * by guests × HISTORY_SAMPLES × that; history_bytes() reports what is
 * held.
 */
#ifndef NUMAORCH_HISTORY_H
#define NUMAORCH_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "orchestrator/model/snapshot.h"

/* Samples kept per guest: an hour at the default 15 s interval. */
#define HISTORY_SAMPLES 240u

/* Per-node flags of a sample. */
#define HIST_CPU_NODE 1u   /* the guest's CPUs include this node's */
#define HIST_MEM_NODE 2u   /* cpuset.mems includes it */

struct history;

struct history_point {
	int64_t real_ms;       /* snapshot time, Unix ms (0.1 s resolution) */
	double locality;       /* 0..1, NAN unknown */
	double cpu_use;        /* CPUs, NAN unknown */
	uint64_t *mem;         /* [series.nr_nodes] bytes on each node */
	uint8_t *flags;        /* [series.nr_nodes] HIST_* */
};

/* One guest's samples, oldest first; a single allocation. */
struct history_series {
	unsigned nr_nodes;
	int *node_ids;         /* [nr_nodes] */
	double spacing_s;      /* minimum time between samples when recorded */
	unsigned capacity;     /* HISTORY_SAMPLES */
	unsigned n;
	struct history_point *p;
};

/* SPACING_S: minimum seconds between two samples of a guest (0: every
 * cycle). Never fails (xmalloc policy). */
struct history *history_new(double spacing_s);
void history_free(struct history *h);
/* Change the spacing (engine thread); kept samples stay. */
void history_set_spacing(struct history *h, double spacing_s);

/* Record S's guests (engine thread). S must be finalized (sorted by id). */
void history_record(struct history *h, const struct snapshot *s);

/* A copy of guest ID's series into *OUT (free() it). -ENOENT when the
 * guest has no history. Any thread. */
int history_get(struct history *h, const char *id, struct history_series **out);

/* Bytes held now (rings and index), and guests with a history. Any thread. */
size_t history_bytes(struct history *h, unsigned *nr_guests);

#endif
