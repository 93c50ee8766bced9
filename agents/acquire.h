/* acquire.h — builds one snapshot from the host: topology and node load
 * (topo), containers (cgscan) and any further guest sources (libvirt).
 *
 * Rates (node busy, guest CPU use) are deltas against the previous call;
 * the very first call samples twice, PRIME_S apart, so that even
 * `numaorchd --once` decides on measured load. acquirer_prime() takes the
 * first counters early (the engine calls it once its sources are set up),
 * so the daemon's start-up runs inside that window instead of before it.
 */
#ifndef NUMAORCH_ACQUIRE_H
#define NUMAORCH_ACQUIRE_H

#include "cgscan.h"
#include "../orchestrator/base/cghier.h"
#include "../orchestrator/base/hostpaths.h"
#include "../orchestrator/model/snapshot.h"
#include "../orchestrator/model/source.h"

/* The daemon's main registers these as the engine's struct source_ops
 * (orchestrator/model/source.h). */
int acquirer_new(const struct host_paths *hp, const struct cgscan_config *cg, struct acquirer **out);
void acquirer_free(struct acquirer *a);
/* Register an extra source; the acquirer does not own CTX. */
void acquirer_add_source(struct acquirer *a, const struct guest_source *src);
const struct cg_hier *acquirer_hier(const struct acquirer *a);

/* Take the first counters now, if none were taken yet; the first
 * snapshot then waits only what is left of its PRIME_S. */
int acquirer_prime(struct acquirer *a);
/* Take a snapshot (finalised with OV's policy overrides, OV may be NULL;
 * one reference, the caller's; read-only from here on). */
int acquirer_snapshot(struct acquirer *a, double prime_s, const struct snap_policy_overlay *ov,
		      const struct snapshot **out);

/* One watch pass between cycles over LAST's guests (agents/drift.h). */
void acquirer_drift(struct acquirer *a, const struct snapshot *last, const bool *moved, struct drift_report *out);
/* Take every counter again now: the next snapshot's rates are over the
 * time since, at least its PRIME_S. */
int acquirer_rewindow(struct acquirer *a);
/* The host's sources as the engine sees them (orchestrator/model/source.h):
 * one table for the daemon's main and the unit tests. */
extern const struct source_ops acquire_host_ops;

#endif
