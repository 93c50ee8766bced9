#include "orchestrator/actuator/cgplan.h"

#include <errno.h>
#include <stdlib.h>

#include "orchestrator/base/xalloc.h"

void cgplan_clear(struct cgplan *p)
{
	free(p->s);
	p->s = NULL;
	p->n = p->cap = 0;
}

static void add(struct cgplan *p, unsigned sub, const char *file, const char *value, enum cgplan_gone gone)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		p->s = xrealloc(p->s, p->cap * sizeof(*p->s));
	}
	p->s[p->n++] = (struct cgplan_step){ .sub = sub, .file = file, .value = value, .gone = gone };
}

int cgplan_add_set(struct cgplan *p, bool v2, unsigned nsub, const unsigned *depth, const char *file,
		   const char *unionv, const char *newv)
{
	return cgplan_add_set_own(p, v2, nsub, depth, NULL, file, unionv, newv);
}

int cgplan_add_set_own(struct cgplan *p, bool v2, unsigned nsub, const unsigned *depth, const bool *own,
		       const char *file, const char *unionv, const char *newv)
{
	return cgplan_add_set_each(p, v2, nsub, depth, own, file, unionv, newv, NULL, NULL);
}

/* Is cgroup I of the subtree written (cgplan_add_set_each)? */
static bool written(unsigned i, bool v2, const bool *own, const char *const *news)
{
	return i == 0 || !v2 || (own && own[i]) || (news && news[i]);
}

static const char *value_of(unsigned i, const char *const *each, const char *dflt)
{
	return each && each[i] ? each[i] : dflt;
}

int cgplan_add_set_each(struct cgplan *p, bool v2, unsigned nsub, const unsigned *depth, const bool *own,
			const char *file, const char *unionv, const char *newv, const char *const *unions,
			const char *const *news)
{
	bool some = false;

	if (nsub == 0 || (unions == NULL) != (news == NULL))
		return -EINVAL;
	for (unsigned i = 1; v2 && i < nsub; i++)
		some = some || written(i, v2, own, news);
	for (unsigned i = 0; i < nsub; i++) {
		const char *u = value_of(i, unions, unionv), *n = value_of(i, news, newv);

		if (!written(i, v2, own, news))
			continue;
		if (!n || !*n || ((!v2 || some) && (!u || !*u)))
			return -EINVAL;
	}
	if (v2 && !some) {
		add(p, 0, file, newv, CGPLAN_GONE_FAILS);
		return 0;
	}
	add(p, 0, file, unionv, CGPLAN_GONE_FAILS);
	/* A descendant with children of its own is widened too, after its
	 * parent: a grandchild's narrowed set must lie within its parent's
	 * at the time of the write, and the parent is narrowed only after
	 * it. Pre-order: the next cgroup is a child iff it is deeper. A
	 * cgroup with a value of its own (NEWS) widens to its own union,
	 * which lies within its parent's. */
	for (unsigned i = 1; depth && i + 1 < nsub; i++)
		if (depth[i + 1] > depth[i] && written(i, v2, own, news))
			add(p, i, file, value_of(i, unions, unionv), CGPLAN_ENOENT_SKIPS);
	/* Reverse pre-order: every cgroup after all of its descendants. */
	for (unsigned i = nsub; i-- > 0;)
		if (written(i, v2, own, news))
			add(p, i, file, value_of(i, news, newv), i > 0 ? CGPLAN_ENOENT_SKIPS : CGPLAN_GONE_FAILS);
	return 0;
}

void cgplan_add_memory_migrate(struct cgplan *p, unsigned nsub)
{
	for (unsigned i = 0; i < nsub; i++)
		add(p, i, "cpuset.memory_migrate", "1", i > 0 ? CGPLAN_GONE_SKIPS : CGPLAN_GONE_FAILS);
}

unsigned cgplan_revert_order(const struct cgplan_done *done, unsigned n, bool v2, unsigned *order)
{
	unsigned k = 0;

	for (unsigned i = n; i-- > 0;) {
		if (!*done[i].old && !v2)
			continue;
		order[k++] = i;
	}
	return k;
}
