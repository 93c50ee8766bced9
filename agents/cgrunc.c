/* cgrunc.c — runc's state directories (see cgrunc.h). */
#include "cgrunc.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgname.h"
#include "../orchestrator/base/cghier.h"
#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"

static int runc_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cgrunc_ent *)a)->rel, ((const struct cgrunc_ent *)b)->rel);
}

void cgrunc_clear(struct cgrunc *r)
{
	for (unsigned i = 0; i < r->n; i++)
		free(r->e[i].rel);
	free(r->e);
	r->e = NULL;
	r->n = 0;
}

/* Host cgroup path from state.json → relative path, or NULL. */
static const char *runc_rel(const char *cpuset_host, bool v2, json_t *paths)
{
	const char *keys[2] = { v2 ? "" : "cpuset", v2 ? "cpuset" : "" };
	size_t hl = strlen(cpuset_host);

	for (unsigned k = 0; k < 2; k++) {
		const char *p = json_string_value(json_object_get(paths, keys[k]));

		if (p && strncmp(p, cpuset_host, hl) == 0 && p[hl] == '/' &&
		    cgh_rel_valid(p + hl))
			return p + hl;
	}
	return NULL;
}

static void runc_load_root(struct cgrunc *r, const char *rootdir, const char *ns, const char *cpuset_host,
			   bool v2, struct snapshot *snap, unsigned *cap)
{
	DIR *d = opendir(rootdir);

	if (!d)
		return; /* no such runtime here (yet): nothing to claim */
	for (struct dirent *de; (de = readdir(d));) {
		char path[PATH_MAX];
		json_error_t jerr;
		const char *id, *rel;
		json_t *st;

		if (de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s/state.json", rootdir, de->d_name) >=
		    (int)sizeof(path))
			continue;
		st = json_load_file(path, 0, &jerr);
		if (!st) {
			/* A container being created or deleted has no (complete)
			 * state yet; only a present, broken file is worth a word. */
			if (fs_exists(path))
				snap_warn(snap, "%s state %s%s%s/state.json: %s", ns ? "containerd" : "runc",
					  ns ? ns : "", ns ? "/" : "", de->d_name, jerr.text);
			continue;
		}
		id = json_string_value(json_object_get(st, "id"));
		rel = runc_rel(cpuset_host, v2, json_object_get(st, "cgroup_paths"));
		if (!id || !*id) {
			snap_warn(snap, "%s state %s%s%s/state.json: no \"id\"", ns ? "containerd" : "runc",
				  ns ? ns : "", ns ? "/" : "", de->d_name);
		} else if (rel) {
			struct cgrunc_ent *e;

			if (r->n == *cap) {
				*cap = *cap ? *cap * 2 : 16;
				r->e = xrealloc(r->e, *cap * sizeof(*r->e));
			}
			e = &r->e[r->n++];
			e->rel = xstrdup(rel);
			cgname_copy(e->id, id, strlen(id));
			snprintf(e->runtime, sizeof(e->runtime), "%s", ns ? "containerd" : "runc");
			snprintf(e->ns, sizeof(e->ns), "%s", ns ? ns : "");
		} else {
			log_debug("%s %s: its state (%s) names no cgroup under %s, not a guest",
				  ns ? "containerd" : "runc", id, rootdir, cpuset_host);
		}
		json_decref(st);
	}
	closedir(d);
}

/* containerd's runc roots: one per namespace below NSROOT. */
static void runc_load_namespaces(struct cgrunc *r, const char *nsroot, const char *cpuset_host, bool v2,
				 struct snapshot *snap, unsigned *cap)
{
	DIR *d = opendir(nsroot);

	if (!d)
		return; /* no containerd here (yet) */
	for (struct dirent *de; (de = readdir(d));) {
		char path[PATH_MAX];

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(r->e->ns))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", nsroot, de->d_name) >= (int)sizeof(path))
			continue;
		runc_load_root(r, path, de->d_name, cpuset_host, v2, snap, cap);
	}
	closedir(d);
}

void cgrunc_load(struct cgrunc *r, char *const *roots, unsigned nr, char *const *ns_roots, unsigned nns,
		 const char *cpuset_host, bool v2, struct snapshot *snap)
{
	unsigned cap = 0;

	cgrunc_clear(r);
	for (unsigned i = 0; i < nr; i++)
		runc_load_root(r, roots[i], NULL, cpuset_host, v2, snap, &cap);
	for (unsigned i = 0; i < nns; i++)
		runc_load_namespaces(r, ns_roots[i], cpuset_host, v2, snap, &cap);
	if (r->n)
		qsort(r->e, r->n, sizeof(*r->e), runc_cmp);
}

const struct cgrunc_ent *cgrunc_find(const struct cgrunc *r, const char *rel)
{
	struct cgrunc_ent key = { .rel = (char *)rel };

	if (!r->n)
		return NULL;
	return bsearch(&key, r->e, r->n, sizeof(*r->e), runc_cmp);
}
