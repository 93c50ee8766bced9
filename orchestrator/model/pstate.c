/* pstate.c — what the policy remembers between cycles: per guest, when it
 * was last moved. An array sorted by id, searched by bisection. */
#include "orchestrator/model/pstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"

struct pstate *pstate_new(void)
{
	return xcalloc(1, sizeof(struct pstate));
}

void pstate_free(struct pstate *s)
{
	if (!s)
		return;
	free(s->e);
	free(s);
}

/* Index of ID, or of where it would go (*found false). */
static unsigned pstate_pos(const struct pstate *s, const char *id, bool *found)
{
	unsigned lo = 0, hi = s->n;

	*found = false;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		int c = strcmp(s->e[mid].id, id);

		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct pstate_entry *pstate_find(const struct pstate *s, const char *id)
{
	bool found;
	unsigned i;

	if (!s || !id)
		return NULL;
	i = pstate_pos(s, id, &found);
	return found ? &s->e[i] : NULL;
}

struct pstate *pstate_clone(const struct pstate *s)
{
	struct pstate *c = pstate_new();

	if (s && s->n) {
		c->e = xcalloc(s->n, sizeof(*c->e));
		memcpy(c->e, s->e, s->n * sizeof(*c->e));
		c->n = s->n;
	}
	return c;
}

static struct pstate_entry *pstate_note(struct pstate *s, const char *id, int64_t now_ns)
{
	bool found;
	unsigned i = pstate_pos(s, id, &found);

	if (!found) {
		s->e = xrealloc(s->e, (s->n + 1) * sizeof(*s->e));
		memmove(&s->e[i + 1], &s->e[i], (s->n - i) * sizeof(*s->e));
		memset(&s->e[i], 0, sizeof(s->e[i]));
		snprintf(s->e[i].id, sizeof(s->e[i].id), "%s", id);
		s->n++;
	}
	s->e[i].last_move_ns = now_ns;
	s->e[i].nr_moves++;
	s->e[i].cooldown_ns = 0;
	return &s->e[i];
}

void pstate_note_move(struct pstate *s, const char *id, int64_t now_ns)
{
	pstate_note(s, id, now_ns)->last_follow = false;
}

void pstate_note_follow(struct pstate *s, const char *id, int64_t now_ns)
{
	pstate_note(s, id, now_ns)->last_follow = true;
}

void pstate_note_cooldown(struct pstate *s, const char *id, int64_t cooldown_ns)
{
	bool found = false;
	unsigned i = s ? pstate_pos(s, id, &found) : 0;

	if (found)
		s->e[i].cooldown_ns = cooldown_ns;
}
