/* resv.c — the reservations, one array (resv.h). */
#include "orchestrator/model/resv.h"

#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"

void resv_list_clear(struct resv_list *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->r[i].label);
	free(l->r);
	free(l->rooms);
	memset(l, 0, sizeof(*l));
}

static struct resv *grow(struct resv_list *l)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->r = xrealloc(l->r, l->cap * sizeof(*l->r));
	}
	memset(&l->r[l->n], 0, sizeof(l->r[l->n]));
	l->gen++;
	return &l->r[l->n++];
}

uint64_t resv_add(struct resv_list *l, const struct advice_reservation *room, const nodemask_t *cpu_nodes,
		  const nodemask_t *mems, int64_t expires_ns, const char *label)
{
	struct resv *r = grow(l);

	r->id = ++l->next_id;
	r->expires_ns = expires_ns;
	r->label = label ? xstrdup(label) : NULL;
	r->room = *room;
	mask_zero(&r->cpu_nodes);
	mask_zero(&r->mems);
	if (cpu_nodes && mems && !mask_empty(cpu_nodes) && !mask_empty(mems)) {
		r->cpu_nodes = *cpu_nodes;
		r->mems = *mems;
	}
	return r->id;
}

void resv_restore(struct resv_list *l, const struct resv *src)
{
	struct resv *r = grow(l);

	*r = *src;
	r->label = src->label ? xstrdup(src->label) : NULL;
	if (src->id > l->next_id)
		l->next_id = src->id;
}

void resv_remove_at(struct resv_list *l, unsigned i)
{
	if (i >= l->n)
		return;
	free(l->r[i].label);
	l->gen++;
	l->n--;
	memmove(&l->r[i], &l->r[i + 1], (l->n - i) * sizeof(*l->r));
}

void resv_expire(struct resv_list *l, int64_t now_ns)
{
	for (unsigned i = 0; i < l->n;)
		if (l->r[i].expires_ns <= now_ns)
			resv_remove_at(l, i);
		else
			i++;
}

bool resv_drop(struct resv_list *l, uint64_t id, const char *label)
{
	for (unsigned i = 0; i < l->n; i++)
		if ((id && l->r[i].id == id) ||
		    (!id && label && l->r[i].label && strcmp(l->r[i].label, label) == 0)) {
			resv_remove_at(l, i);
			return true;
		}
	return false;
}

int resv_find_label(const struct resv_list *l, const char *const *keys, unsigned nkeys)
{
	for (unsigned i = 0; i < l->n; i++)
		for (unsigned k = 0; k < nkeys; k++)
			if (l->r[i].label && keys[k] && keys[k][0] && strcmp(l->r[i].label, keys[k]) == 0)
				return (int)i;
	return -1;
}

unsigned resv_rooms(struct resv_list *l, const struct advice_reservation **out)
{
	if (l->n > l->cap_rooms) {
		l->cap_rooms = l->cap;
		l->rooms = xrealloc(l->rooms, l->cap_rooms * sizeof(*l->rooms));
	}
	for (unsigned i = 0; i < l->n; i++)
		l->rooms[i] = l->r[i].room;
	*out = l->rooms;
	return l->n;
}
