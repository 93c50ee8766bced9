/* ctl_top.h — `numaorchctl top`: a live full-screen view of the agent
 * (nodes, guests, last decisions), or one plain screen with --once.
 */
#ifndef NUMAORCH_CTL_TOP_H
#define NUMAORCH_CTL_TOP_H

#include <jansson.h>
#include <stdbool.h>

#include "ctl_http.h"

struct ctl_top_opts {
	double delay_s;      /* between refreshes (> 0) */
	bool once;           /* one screen, no terminal control, then exit */
	const char *sort;    /* locality, cpu, mem, name, decision; NULL: locality */
};

/* Run it. Returns an exit status: 0 done, 2 bad option, 3 cannot reach
 * the agent (--once only: the live view shows the error and retries),
 * 1 a reply that is not what the API documents. */
int ctl_top(const struct ctl_conn *c, const struct ctl_top_opts *o);

/* The nodes panel as --once prints it (a header, then a row a node, at
 * most MAX_ROWS) of NODES (GET /v1/nodes) and MIGRATIONS (GET
 * /v1/migrations; NULL: no mover) in WIDTH columns; the caller frees it. */
char *ctl_top_nodes_text(json_t *nodes, json_t *migrations, unsigned width, unsigned max_rows);

/* The guests panel as --once prints it (a header, then every guest) of
 * GUESTS (GET /v1/guests), MIGRATIONS (GET /v1/migrations; NULL: none)
 * and LAST (guest id -> its newest decision record; NULL: none), sorted
 * by SORT (a --sort key; NULL: locality), in WIDTH columns: what one
 * refresh of the live view builds and draws. The caller frees it. */
char *ctl_top_guests_text(json_t *guests, json_t *migrations, json_t *last, const char *sort, unsigned width);

#endif
