/* engine_state.c — the cool-downs (the policy's state between cycles)
 * and the reservations: kept, handed out, and saved under the state
 * directory whenever they change (engstate.h). */
#include "orchestrator/engine/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/log.h"

void engine_state_init(struct engine_state *st)
{
	st->dfd = -1;
	st->ps = pstate_new();
}

void engine_state_free(struct engine_state *st)
{
	pstate_free(st->ps);
	resv_list_clear(&st->res);
	pstate_free(st->saved_ps);
	if (st->dfd >= 0)
		close(st->dfd);
}

int engine_state_dir_fd(struct engine *e) { return e->st.dfd; }
int64_t engine_state_clock_offset(const struct engine *e) { return e->st.clock_offset_ns; }

void engine_state_set_ps(struct engine *e, struct pstate *next)
{
	pstate_free(e->st.ps);
	e->st.ps = next;
}

uint64_t engine_reserve_placement(struct engine *e, const struct advice_reservation *r,
				  const nodemask_t *cpu_nodes, const nodemask_t *mems, double seconds,
				  const char *label)
{
	int64_t now = clock_mono_ns();

	uint64_t id;

	resv_expire(&e->st.res, now);
	id = resv_add(&e->st.res, r, cpu_nodes, mems, now + (int64_t)(seconds * 1e9), label);
	engine_save_state(e);
	return id;
}

bool engine_unreserve(struct engine *e, uint64_t id, const char *label)
{
	bool found = resv_drop(&e->st.res, id, label);

	engine_save_state(e);
	return found;
}

unsigned engine_reservations(struct engine *e, const struct advice_reservation **out)
{
	resv_expire(&e->st.res, clock_mono_ns());
	return resv_rooms(&e->st.res, out);
}

int engine_resv_lookup(struct engine *e, const char *const *keys, unsigned nkeys, const struct resv **rv)
{
	int ri = resv_find_label(&e->st.res, keys, nkeys);

	*rv = ri >= 0 ? &e->st.res.r[ri] : NULL;
	return ri;
}

void engine_resv_used(struct engine *e, uint64_t id)
{
	resv_drop(&e->st.res, id, NULL);
}

static bool pstate_same(const struct pstate *a, const struct pstate *b)
{
	return a && b && a->n == b->n && (a->n == 0 || memcmp(a->e, b->e, a->n * sizeof(*a->e)) == 0);
}

void engine_save_state(struct engine *e)
{
	struct engine_state *st = &e->st;
	json_t *j;
	char *text;
	int r;

	if (st->dfd < 0 || (st->saved_once && st->saved_res_gen == st->res.gen && pstate_same(st->ps, st->saved_ps)))
		return;
	j = engstate_to_json(st->ps, &st->res, st->clock_offset_ns);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	r = text ? fs_write_atomic_at(st->dfd, ENGSTATE_FILE, text, strlen(text), 0640) : -ENOMEM;
	free(text);
	if (r < 0) {
		/* Tried again at the next change; the state in memory is intact. */
		log_errno(LOG_LEVEL_WARN, r, "cannot save the cool-downs and reservations (%s)", ENGSTATE_FILE);
		return;
	}
	pstate_free(st->saved_ps);
	st->saved_ps = pstate_clone(st->ps);
	st->saved_res_gen = st->res.gen;
	st->saved_once = true;
}

void engine_state_set_dir(struct engine *e, int dfd)
{
	if (e->st.dfd >= 0)
		close(e->st.dfd);
	e->st.dfd = dfd;
	e->st.clock_offset_ns = clock_real_ns() - clock_mono_ns();
}

/* A state file that is not believed must not stop the agent, nor be
 * lost: renamed to .rejected (whatever its size), and said. */
static void set_state_aside(int dfd, const char *dir, const char *why)
{
	if (renameat(dfd, ENGSTATE_FILE, dfd, ENGSTATE_FILE ".rejected") < 0)
		log_warn("%s/%s: %s; cannot set it aside as %s.rejected (%s), starting without saved cool-downs "
			 "and reservations", dir, ENGSTATE_FILE, why, ENGSTATE_FILE, strerror(errno));
	else
		log_warn("%s/%s: %s; set aside as %s.rejected, starting without saved cool-downs and "
			 "reservations", dir, ENGSTATE_FILE, why, ENGSTATE_FILE);
}

void engine_state_load(struct engine *e, int dfd, const char *dir, const struct engstate_limits *lim)
{
	char *text = NULL, why[400];
	size_t len;
	json_t *j;
	int r;

	/* ~100 bytes a guest that moved: room for far more guests than a host has */
	r = fs_read_file_at(dfd, ENGSTATE_FILE, ENGSTATE_FILE_MAX, &text, &len);
	if (r == -ENOENT)
		return;
	if (r < 0) {
		snprintf(why, sizeof(why), "cannot read: %s%s", strerror(-r),
			 r == -EFBIG ? " (over 64 MiB)" : r == -ELOOP ? " (a symlink)" : "");
		set_state_aside(dfd, dir, why);
		return;
	}
	j = json_loadb(text, len, 0, NULL);
	if (j) {
		struct pstate *ps = NULL;
		struct resv_list rl = { 0 };

		r = engstate_from_json(j, e->st.clock_offset_ns, clock_mono_ns(), lim, &ps, &rl, why, sizeof(why));
		json_decref(j);
		if (r == 0) {
			pstate_free(e->st.ps);
			e->st.ps = ps;
			for (unsigned i = 0; i < rl.n; i++)
				resv_restore(&e->st.res, &rl.r[i]);
			if (rl.next_id > e->st.res.next_id)
				e->st.res.next_id = rl.next_id;
			log_info("%u cool-down%s and %u reservation%s loaded from %s/%s", ps->n, ps->n == 1 ? "" : "s",
				 rl.n, rl.n == 1 ? "" : "s", dir, ENGSTATE_FILE);
			resv_list_clear(&rl);
			free(text);
			engine_save_state(e);
			return;
		}
	} else {
		snprintf(why, sizeof(why), "not JSON");
	}
	set_state_aside(dfd, dir, why);
	free(text);
}

void engine_state_job_cost(struct engine *e, const char *id, int64_t cooldown_ns)
{
	pstate_note_cooldown(e->st.ps, id, cooldown_ns);
}
