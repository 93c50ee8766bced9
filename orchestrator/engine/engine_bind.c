/* engine_bind.c — start bindings, the table behind a container's start
 * placement (engine_place.c): a young container's mems bound to its
 * target (plan_item.bind_start), released once its memory stops growing,
 * and never left bound by an agent that stopped (bindstate.h: the set on
 * disk, written before each binding write).
 *
 * A binding read back at start is released at once, not resumed: its
 * timeline (its memory at the last look, how long the agent was down) is
 * gone, and the binding is only a help for first touches — its CPUs stay
 * on the target node, so the kernel's local allocation keeps putting new
 * pages there while the node has room. Resuming would keep a guest strict
 * on one node across a crash loop; releasing costs at most a few
 * allocations that spill elsewhere once that node is full, which is what
 * unbound guests do anyway. */
#include "orchestrator/engine/engine.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/store/bindstate.h"
#include "orchestrator/model/bindrule.h"
#include "orchestrator/base/clock.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/log.h"
#include "orchestrator/base/xalloc.h"

static struct ebound *bound_find(struct engine *e, const char *id)
{
	for (unsigned i = 0; i < e->binds.n; i++)
		if (strcmp(e->binds.v[i].id, id) == 0)
			return &e->binds.v[i];
	return NULL;
}

static struct ebound *bound_new(struct engine *e, const char *id)
{
	struct ebound *b;

	if (e->binds.n == e->binds.cap) {
		e->binds.cap = e->binds.cap ? e->binds.cap * 2 : 8;
		e->binds.v = xrealloc(e->binds.v, e->binds.cap * sizeof(*e->binds.v));
	}
	b = &e->binds.v[e->binds.n++];
	memset(b, 0, sizeof(*b));
	snprintf(b->id, sizeof(b->id), "%s", id);
	e->binds.dirty = true;
	return b;
}

static void bound_drop(struct engine *e, unsigned i)
{
	free(e->binds.v[i].cgroup);
	e->binds.v[i] = e->binds.v[--e->binds.n];
	e->binds.dirty = true;
}

void engine_bound_intend(struct engine *e, const struct snapshot *snap, const struct plan_item *it)
{
	const struct snap_guest *g = &snap->guests[it->guest_idx];
	struct ebound *b = bound_find(e, it->guest_id);

	if (b)
		return;
	b = bound_new(e, it->guest_id);
	b->cgroup = xstrdup(g->cgroup ? g->cgroup : "");
	b->wide = g->mems;
	b->bound = it->to_mems;
	b->mem = g->mem_total;
	b->since_ns = snap->mono_ns;
	b->intent = true;
}

void engine_bound_add(struct engine *e, const struct snapshot *snap, const struct plan_item *it)
{
	const struct snap_guest *g = &snap->guests[it->guest_idx];
	struct ebound *b = bound_find(e, it->guest_id);

	if (!b) {
		b = bound_new(e, it->guest_id);
		b->wide = g->mems;
	}
	if (!b->cgroup)
		b->cgroup = xstrdup(g->cgroup ? g->cgroup : "");
	b->bound = it->to_mems;
	b->mem = g->mem_total;
	b->since_ns = snap->mono_ns;
	b->intent = false;
	b->restored = false;
	b->writing = false;
	e->binds.dirty = true;
}

void engine_bound_drop_intents(struct engine *e)
{
	for (unsigned i = 0; i < e->binds.n;)
		if (e->binds.v[i].intent && !e->binds.v[i].writing)
			bound_drop(e, i);
		else
			i++;
}

void engine_bound_writing(struct engine *e, const char *id, bool writing)
{
	for (unsigned i = 0; i < e->binds.n; i++) {
		if (strcmp(e->binds.v[i].id, id) != 0)
			continue;
		e->binds.v[i].writing = writing;
		if (!writing && e->binds.v[i].intent)
			bound_drop(e, i);
		return;
	}
}

/* Release B's binding and record it ("mems_released", WHY in its detail).
 * G: its guest in SNAP, or NULL (the agent is stopping: no fresh
 * snapshot; SNAP, if any, only gives the record its cycle). Returns the
 * outcome's status. */
static enum apply_status release_one(struct engine *e, const struct snapshot *snap, const struct snap_guest *g,
				     const struct ebound *b, const char *why)
{
	struct plan_item it;
	struct apply_result res;

	memset(&it, 0, sizeof(it));
	snprintf(it.guest_id, sizeof(it.guest_id), "%s", b->id);
	it.guest_idx = g ? (unsigned)(g - snap->guests) : UINT_MAX;
	it.kind = PLAN_SETTLED;
	it.reason = REASON_PLACE;
	if (g)
		it.from_nodes = it.to_nodes = g->cpu_nodes;
	it.from_mems = b->bound;
	mask_or(&it.to_mems, &b->bound, &b->wide);
	it.load_before = it.load_after = it.cpu_demand = NAN;
	it.locality_before = g ? g->locality : NAN;
	if (g)
		snprintf(it.detail, sizeof(it.detail), "start binding released: %s (%llu MiB)", why,
			 (unsigned long long)(g->mem_total >> 20));
	else
		snprintf(it.detail, sizeof(it.detail), "start binding released: %s", why);
	apply_release_mems_cgroup(e->app, b->cgroup, &b->bound, &b->wide, &res);
	if (res.status == APPLY_DONE || res.status == APPLY_VANISHED)
		log_info("guest %s: %s: %s", b->id, it.detail, res.msg);
	else
		log_warn("guest %s: %s: %s", b->id, it.detail, res.msg);
	if (snap)
		declog_add(e->dl, declog_make(snap, &it, "mems_released", &res, false));
	return res.status;
}

unsigned engine_restore_bound(struct engine *e, const struct snapshot *snap, char (**released)[GUEST_ID_MAX])
{
	unsigned nrel = 0;

	*released = NULL;
	for (unsigned i = 0; i < e->binds.n;) {
		struct ebound *b = &e->binds.v[i];
		const struct snap_guest *g;
		char now[NODELIST_BUFSZ], was[NODELIST_BUFSZ];
		enum apply_status st;

		if (!b->restored) {
			i++;
			continue;
		}
		g = snap_find_guest(snap, b->id);
		if (!g || g->kind != GUEST_CONTAINER || !g->cgroup || strcmp(g->cgroup, b->cgroup) != 0) {
			log_info("guest %s: start binding from before the restart dropped: cgroup %s is gone", b->id,
				 b->cgroup);
			bound_drop(e, i);
			continue;
		}
		if (!mask_equal(&g->mems, &b->bound)) {
			mask_format(&g->mems, now, sizeof(now));
			mask_format(&b->bound, was, sizeof(was));
			/* Its mems before: the agent died between saving the
			 * binding and writing it. Anything else: someone wrote
			 * them since. Either way they are not ours to widen. */
			log_warn("guest %s: start binding from before the restart dropped: its mems are %s, not the "
				 "%s it was bound to (%s): left alone", b->id, now, was,
				 mask_equal(&g->mems, &b->wide) ? "the binding was never written"
								  : "written since by someone else");
			bound_drop(e, i);
			continue;
		}
		st = release_one(e, snap, g, b, "the agent stopped while it was bound (released at its restart)");
		if (st == APPLY_FAILED || st == APPLY_FAILED_PARTIAL) {
			/* Kept: tried again next cycle, and saved for the next start. */
			i++;
			continue;
		}
		*released = xrealloc(*released, (nrel + 1) * sizeof(**released));
		snprintf((*released)[nrel++], GUEST_ID_MAX, "%s", b->id);
		bound_drop(e, i);
	}
	return nrel;
}

void engine_release_bound(struct engine *e, const struct snapshot *snap, const struct plan *plan, bool do_apply)
{
	for (unsigned i = 0; i < e->binds.n;) {
		struct ebound *b = &e->binds.v[i];
		const struct snap_guest *g = snap_find_guest(snap, b->id);
		bool moved = false, drop = false;
		struct bind_verdict v = { .why = NULL };

		if (b->writing) {
			/* its write is still a mover job's: not yet ours to release */
			i++;
			continue;
		}
		if (b->restored) {
			/* engine_restore_bound's (an applying cycle); a guest gone
			 * needs nothing. */
			if (!g)
				bound_drop(e, i);
			else
				i++;
			continue;
		}
		for (unsigned k = 0; plan && k < plan->nr_items && !moved; k++)
			moved = plan->items[k].kind == PLAN_MOVE && strcmp(plan->items[k].guest_id, b->id) == 0;
		if (!g) {
			drop = true;
		} else if (!moved) {
			bind_rule(&(struct bind_facts){
				.mem_now = g->mem_total, .mem_last = b->mem, .grew = b->grew,
				.age_s = (double)(snap->mono_ns - b->since_ns) / 1e9,
				.node_short = bind_node_short(snap, &g->mems, e->conf.cfg.policy.min_free_bytes,
							      e->conf.cfg.policy.min_free_share),
			}, &v);
			drop = do_apply && v.why;
		}
		if (drop && g) {
			/* Its mems as the snapshot saw them are what it is bound
			 * to now (a later move may have changed them). */
			b->bound = g->mems;
			if (g->cgroup && strcmp(g->cgroup, b->cgroup) != 0) {
				free(b->cgroup);
				b->cgroup = xstrdup(g->cgroup);
			}
			release_one(e, snap, g, b, v.why);
		} else if (g && !moved) {
			b->grew = v.grew;
			b->mem = v.mem;
		}
		if (drop)
			bound_drop(e, i);
		else
			i++;
	}
}

void engine_release_bindings(struct engine *e, const char *why)
{
	struct engine_view *v = engine_view_get(e);
	const struct snapshot *snap = v ? v->snap : NULL;
	bool applying = e->conf.cfg.mode == MODE_ENFORCE && !e->conf.cfg.dry_run;

	for (unsigned i = 0; i < e->binds.n;) {
		const struct ebound *b = &e->binds.v[i];
		enum apply_status st;

		/* A binding from before a restart that this run never applied
		 * (dry run, advise mode) is not this run's to write: it stays
		 * saved for an agent that applies. */
		if ((b->restored && !applying) || b->intent) {
			i++;
			continue;
		}
		st = release_one(e, snap, NULL, b, why);
		if (st == APPLY_FAILED || st == APPLY_FAILED_PARTIAL || st == APPLY_REFUSED) {
			/* Saved: the next start tries again. */
			e->binds.v[i].restored = true;
			i++;
			continue;
		}
		bound_drop(e, i);
	}
	engine_view_unref(v);
	engine_save_bindings(e);
}

void engine_save_bindings(struct engine *e)
{
	struct bindstate_entry *be;
	char *text;
	int r;

	if (engine_state_dir_fd(e) < 0 || !e->binds.dirty)
		return;
	be = xcalloc(e->binds.n ? e->binds.n : 1, sizeof(*be));
	for (unsigned i = 0; i < e->binds.n; i++) {
		snprintf(be[i].id, sizeof(be[i].id), "%s", e->binds.v[i].id);
		be[i].cgroup = e->binds.v[i].cgroup;
		be[i].wide = e->binds.v[i].wide;
		be[i].bound = e->binds.v[i].bound;
		be[i].since_real_ns = e->binds.v[i].since_ns + engine_state_clock_offset(e);
	}
	text = bindstate_format(be, e->binds.n);
	free(be);
	r = text ? fs_write_atomic_at(engine_state_dir_fd(e), BINDSTATE_FILE, text, strlen(text), 0640) : -ENOMEM;
	free(text);
	if (r < 0) {
		log_errno(LOG_LEVEL_WARN, r, "cannot save the start bindings to %s", BINDSTATE_FILE);
		return;
	}
	e->binds.dirty = false;
}

void engine_load_bindings(struct engine *e, int dfd, const char *dir)
{
	struct bindstate bs;
	char *text = NULL, err[400];
	size_t len;
	unsigned nbad = 0, n = 0;
	int r;

	r = fs_read_file_at(dfd, BINDSTATE_FILE, 16 << 20, &text, &len);
	if (r == -ENOENT)
		return;
	if (r < 0) {
		log_errno(LOG_LEVEL_WARN, r, "cannot read %s/%s: start bindings from before the restart are not "
			  "released", dir, BINDSTATE_FILE);
		return;
	}
	if (bindstate_parse(text, len, &bs, &nbad, err, sizeof(err)) < 0) {
		/* A bad file must not stop the agent, nor be lost: kept aside. */
		log_warn("%s/%s: %s; set aside as %s.rejected, starting without its start bindings", dir,
			 BINDSTATE_FILE, err, BINDSTATE_FILE);
		fs_write_atomic_at(dfd, BINDSTATE_FILE ".rejected", text, len, 0640);
		free(text);
		return;
	}
	if (nbad)
		log_warn("%s/%s: %u bad start binding%s left out (%s)", dir, BINDSTATE_FILE, nbad,
			 nbad == 1 ? "" : "s", err);
	free(text);
	for (unsigned i = 0; i < bs.n; i++) {
		struct ebound *b;

		if (bound_find(e, bs.e[i].id))
			continue;
		b = bound_new(e, bs.e[i].id);
		b->cgroup = bs.e[i].cgroup;
		bs.e[i].cgroup = NULL;
		b->wide = bs.e[i].wide;
		b->bound = bs.e[i].bound;
		b->since_ns = bs.e[i].since_real_ns - engine_state_clock_offset(e);
		b->restored = true;
		n++;
	}
	bindstate_clear(&bs);
	if (n)
		log_info("%u start binding%s from before the restart loaded from %s/%s: released at the first "
			 "cycle that applies", n, n == 1 ? "" : "s", dir, BINDSTATE_FILE);
}

void engine_binds_free(struct engine_binds *bs)
{
	for (unsigned i = 0; i < bs->n; i++)
		free(bs->v[i].cgroup);
	free(bs->v);
	bs->v = NULL;
	bs->n = bs->cap = 0;
}

bool engine_binds_waiting(const struct engine *e)
{
	/* (one read back from before a restart waits for an applying
	 * cycle, not for a sooner one) */
	for (unsigned i = 0; i < e->binds.n; i++)
		if (!e->binds.v[i].restored)
			return true;
	return false;
}
