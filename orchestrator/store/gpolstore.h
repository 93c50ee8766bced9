/* gpolstore.h — per-guest policy overrides (auto, pinned NODES, ignore)
 * set through the API, kept under STATE_DIR so they survive restarts.
 *
 * Keyed by guest id: ids are stable across a container's restarts (they
 * come from its runtime name) and a VM's (they come from its uuid), so a
 * guest that comes back keeps its policy.
 *
 * On disk: guest-policies.json (the base, replaced atomically: temp file
 * created with O_EXCL, fsync, rename) and guest-policies.journal (one
 * JSON line per change since, appended and fdatasync'ed). A change costs
 * one appended line, not a rewrite of every record (whose cost grows with
 * the records, on every PUT); the journal is folded into the base at
 * open and whenever it holds as many records as the base did (at least
 * 1024). Both live in a state directory that must be owned by root (or
 * the effective user) and not writable by group or others, and are opened
 * relative to it without following symlinks.
 *
 * Thread-safe: the engine thread writes (one writer), API threads read.
 */
#ifndef NUMAORCH_GPOLSTORE_H
#define NUMAORCH_GPOLSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "orchestrator/model/snapshot.h"

#define GPOLSTORE_FILE "guest-policies.json"
#define GPOLSTORE_JOURNAL "guest-policies.journal"
/* A bound on what an API client can make the agent store. */
#define GPOLSTORE_MAX 65536

struct gpolstore;

struct gpol_record {
	char id[GUEST_ID_MAX];
	struct guest_policy pol;   /* source is GPOL_SRC_API */
	int64_t set_real_ns;       /* when it was set (CLOCK_REALTIME) */
};

enum {
	/* Create the state directory if missing (the daemon). Without it a
	 * missing directory or file is an empty store (numaorchd --once). */
	GPOLSTORE_CREATE = 1u << 0,
};

/* Open the store in DIR and load it. A base file that is not one (broken
 * JSON, another format) is an error (-EINVAL, ERR says where): starting
 * without the operator's pins and ignores could move guests they meant
 * to keep still. One bad record is not: it is left out, the others load,
 * gpolstore_dropped says which and why, and the file as it was is kept
 * as guest-policies.json.rejected. The journal replays past a bad line
 * (NUL bytes, garbage, a line over 64 KiB) the same way: each is named,
 * and the journal as it was is renamed to guest-policies.journal.rejected
 * before the compaction at open; when it cannot be set aside (or cannot
 * be read at all) the open fails rather than compact away what it could
 * not read. A state directory others can write,
 * or a symlink in place of the file, is refused (-EPERM, -ELOOP). With
 * CREATE the directory is created if missing and the journal compacted;
 * without it (numaorchd --once) nothing is written and a missing
 * directory is an empty store that refuses changes (-EROFS). */
int gpolstore_open(const char *dir, unsigned flags, struct gpolstore **out, char *err, size_t errsz);
/* Messages about what gpolstore_open left out (records, journal lines),
 * for the caller to log; owned by the store. */
unsigned gpolstore_dropped(const struct gpolstore *s, char *const **msgs);
void gpolstore_free(struct gpolstore *s);

/* Copy of the override for ID into OUT; false when there is none. */
bool gpolstore_get(struct gpolstore *s, const char *id, struct gpol_record *out);
/* Set (POL non-NULL) or clear (POL NULL) the override for ID, writing the
 * file first: memory changes only when the file was replaced. Returns 0,
 * -ENOENT (clearing an absent one), -ENOSPC (GPOLSTORE_MAX reached),
 * -EROFS (opened without a directory, or without CREATE) or the write's
 * negative errno. */
int gpolstore_set(struct gpolstore *s, const char *id, const struct guest_policy *pol, int64_t now_real_ns);
/* All overrides, sorted by id; *OUT is the caller's to free(). */
unsigned gpolstore_list(struct gpolstore *s, struct gpol_record **out);
/* At most LIMIT overrides with ids after AFTER (NULL: from the first),
 * sorted by id; *TOTAL gets how many there are in all, *MORE whether any
 * follow this page. *OUT is the caller's to free(). A page's copy is
 * what a reader holds, not the whole store. */
unsigned gpolstore_page(struct gpolstore *s, const char *after, unsigned limit, struct gpol_record **out,
			unsigned *total, bool *more);
unsigned gpolstore_count(struct gpolstore *s);
/* Bumped by every change; lets readers cache what they built from it. */
uint64_t gpolstore_generation(struct gpolstore *s);
/* The file's path, or NULL for a store without a directory. */
const char *gpolstore_path(const struct gpolstore *s);

#endif
