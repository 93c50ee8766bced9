#include "orchestrator/actuator/cgjournal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/log.h"

void cgj_clear(struct cgj *j)
{
	for (unsigned i = 0; i < j->n; i++)
		free(j->e[i].old);
	free(j->e);
	memset(j, 0, sizeof(*j));
}

/* Write and remember the old value. Refuses to write an empty cpuset:
 * with tasks attached that is ENOSPC in v1, and "inherit" in v2 is never
 * what a move means. */
static int jwrite(struct cgj *j, const struct cg_hier *h, struct cgw *w, char *const *sub, unsigned s,
		  const char *file, const char *value)
{
	char *old = NULL;
	int r;

	if (!value || !*value)
		return -EINVAL;
	r = cgh_read_value(h, CGC_CPUSET, sub[s], file, &old);
	if (r < 0)
		return r;
	if (strcmp(old, value) == 0) {
		free(old);
		return 0;
	}
	r = cgw_write(w, CGC_CPUSET, sub[s], file, value);
	if (r < 0) {
		free(old);
		return r;
	}
	if (j->n == j->cap) {
		j->cap = j->cap ? j->cap * 2 : 8;
		j->e = xrealloc(j->e, j->cap * sizeof(*j->e));
	}
	j->e[j->n++] = (struct cgplan_done){ .sub = s, .file = file, .old = old };
	return 0;
}

static bool skips(enum cgplan_gone g, int r)
{
	switch (g) {
	case CGPLAN_GONE_FAILS: return false;
	case CGPLAN_ENOENT_SKIPS: return r == -ENOENT;
	case CGPLAN_GONE_SKIPS: return r == -ENOENT || r == -ENODEV || r == -ESRCH;
	}
	return false;
}

int cgj_run(struct cgj *j, const struct cg_hier *h, struct cgw *w, char *const *sub, const struct cgplan *p,
	    unsigned *failed)
{
	for (unsigned i = 0; i < p->n; i++) {
		const struct cgplan_step *st = &p->s[i];
		int r = jwrite(j, h, w, sub, st->sub, st->file, st->value);

		if (r < 0 && !skips(st->gone, r)) {
			*failed = i;
			return r;
		}
	}
	return 0;
}

int cgj_revert(const struct cgj *j, const struct cg_hier *h, struct cgw *w, char *const *sub,
	       unsigned *writes)
{
	unsigned *order = xcalloc(j->n ? j->n : 1, sizeof(*order));
	unsigned n = cgplan_revert_order(j->e, j->n, h->v2[CGC_CPUSET], order);
	int ret = 0;

	for (unsigned k = 0; k < n; k++) {
		const struct cgplan_done *e = &j->e[order[k]];
		int r = cgw_write(w, CGC_CPUSET, sub[e->sub], e->file, e->old);

		(*writes)++;
		if (r < 0 && r != -ENOENT) {
			log_errno(LOG_LEVEL_ERROR, r, "restoring %s of cgroup %s to \"%s\"", e->file, sub[e->sub],
				  e->old);
			ret = r;
		}
	}
	free(order);
	return ret;
}
