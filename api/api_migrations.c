/* api_migrations.c — GET /v1/migrations, DELETE /v1/migrations/{id}: the
 * memory mover's jobs (orchestrator/mover/mover.h). The mover is thread-safe:
 * these answer without the engine thread. */
#include "api_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/store/declog.h"
#include "../orchestrator/base/parse.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/mover/mover.h"

#define MIB (1024.0 * 1024.0)

static json_t *time_or_null(int64_t real_ns)
{
	char t[40];

	if (!real_ns)
		return json_null();
	declog_time(real_ns, t, sizeof(t));
	return json_string(t);
}

static json_t *nodes_json(const nodemask_t *m)
{
	char buf[NODELIST_BUFSZ];

	if (mask_format(m, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	return json_string(buf);
}

static double mib1(uint64_t bytes)
{
	return round((double)bytes / MIB * 10) / 10;
}

static int cmp_source(const void *a, const void *b)
{
	const struct mover_source *x = a, *y = b;

	return (x->node > y->node) - (x->node < y->node);
}

/* Each source node of J, by node: what the job found there, has moved
 * from there, has left there, and where those pages go. */
static json_t *sources_json(const struct mover_job_info *j)
{
	struct mover_source s[MOVER_MAX_SOURCES];
	json_t *arr = json_array();

	memcpy(s, j->sources, j->nsources * sizeof(s[0]));
	qsort(s, j->nsources, sizeof(s[0]), cmp_source);
	for (unsigned i = 0; i < j->nsources; i++)
		json_array_append_new(arr, json_pack("{s:i, s:i, s:f, s:f, s:f}", "node", s[i].node, "to", s[i].to,
						     "found_mib", mib1(s[i].found), "done_mib", mib1(s[i].done),
						     "left_mib", mib1(mover_source_left(&s[i]))));
	return arr;
}

json_t *api_migration_json(const struct mover_job_info *j)
{
	double done = (double)j->bytes_done / MIB;
	double left = (double)mover_job_left(j) / MIB;
	double rate = j->elapsed_s > 0 ? done / j->elapsed_s : 0;
	json_t *eta = json_null();

	/* An ETA only while it runs and has a rate to go by. */
	if (j->state == MJ_RUNNING && rate > 0)
		eta = json_real(round(left / rate * 10) / 10);
	return json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:s, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:o, s:I, s:f, s:o, s:o, s:o}",
			 "id", (json_int_t)j->id, "guest", j->guest, "cause", j->cause,
			 "how", j->write ? "cpuset_write" : "move_pages",
			 "from", nodes_json(&j->from), "to", nodes_json(&j->to),
			 "state", mover_state_name(j->state),
			 "expected_mib", round((double)j->bytes_expected / MIB * 10) / 10,
			 "done_mib", round(done * 10) / 10, "left_mib", round(left * 10) / 10,
			 "rate_mib_s", round(rate * 10) / 10,
			 "queued", time_or_null(j->queued_real_ns), "started", time_or_null(j->started_real_ns),
			 "ended", time_or_null(j->ended_real_ns), "eta_s", eta,
			 "chunks", (json_int_t)j->chunks, "stall_max_ms", round(j->stall_max_ms * 100) / 100,
			 "stall_p99_ms", isnan(j->stall_p99_ms) ? json_null() : json_real(round(j->stall_p99_ms * 100) / 100),
			 "error", j->msg[0] ? api_json_tame(j->msg, 200) : json_null(), "sources", sources_json(j));
}

void h_migrations(struct rq *r)
{
	struct mover *m = engine_mover(r->a->e);
	struct mover_job_info *v = NULL;
	json_t *arr = json_array();
	unsigned n;

	if (m) {
		n = mover_list(m, &v);
		for (unsigned i = 0; i < n; i++)
			json_array_append_new(arr, api_migration_json(&v[i]));
		free(v);
	}
	api_reply_json(r, 200, json_pack("{s:b, s:o}", "mover", m != NULL, "migrations", arr));
}

void h_migration_delete(struct rq *r)
{
	struct mover *m = engine_mover(r->a->e);
	struct mover_job_info j;
	uint64_t id;
	int ret;

	if (parse_u64(r->id, &id) < 0 || id == 0) {
		problem(r, 400, "bad-request", "id", "a migration id is a positive integer, got \"%.40s\"", r->id);
		return;
	}
	if (!m) {
		problem(r, 404, "not-found", "id", "no migration %s: the memory mover is not running", r->id);
		return;
	}
	ret = mover_cancel(m, id, MJ_CANCELLED);
	if (ret == -ENOENT) {
		problem(r, 404, "not-found", "id", "no migration %s", r->id);
		return;
	}
	if (ret == -EALREADY) {
		problem(r, 409, "conflict", "id", "migration %s has already ended", r->id);
		return;
	}
	/* It stops at its next chunk boundary: 202 with the job as it is. */
	if (!mover_get(m, id, &j)) {
		api_set_body(r->resp, 204, NULL, xstrdup(""), 0);
		return;
	}
	api_reply_json(r, 202, api_migration_json(&j));
}
