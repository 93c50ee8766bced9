/* cglabel.c — container names from runtimes' state (see cglabel.h). */
#include "cglabel.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cgname.h"
#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/log.h"
#include "../orchestrator/base/xalloc.h"

#define STATE_MAX (16u << 20)  /* containers.json of thousands of containers */

/* One name by key, and what it was read from. */
struct lent {
	char *key;
	struct cglabel_out out;
	unsigned gen;              /* last scan that asked for it (docker) */
	struct timespec mtime;     /* of its config.v2.json (docker) */
	off_t size;
};

/* A sorted table of names by key. */
struct ltab {
	struct lent *e;
	unsigned n, cap;
};

/* A file or directory read whole when it changed. */
struct lsrc {
	unsigned checked;          /* scan that last stat'ed it */
	bool have;
	struct timespec mtime;
	off_t size;
	struct ltab t;
};

struct cglabel {
	char vardir[PATH_MAX];
	char docker_dir[PATH_MAX];
	unsigned gen;
	bool docker_here;          /* this scan: docker's containers directory exists */
	struct ltab docker;
	struct lsrc podman[6], pods;   /* podman: one per storage driver (podman_drivers) */
};

static int lent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lent *)a)->key, ((const struct lent *)b)->key);
}

static struct lent *ltab_find(struct ltab *t, const char *key)
{
	struct lent k = { .key = (char *)key };

	return t->n ? bsearch(&k, t->e, t->n, sizeof(*t->e), lent_cmp) : NULL;
}

/* Append (unsorted: ltab_sort after a batch). */
static struct lent *ltab_add(struct ltab *t, const char *key)
{
	struct lent *e;

	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->e = xrealloc(t->e, t->cap * sizeof(*t->e));
	}
	e = &t->e[t->n++];
	memset(e, 0, sizeof(*e));
	e->key = xstrdup(key);
	return e;
}

static void ltab_sort(struct ltab *t)
{
	if (t->n)
		qsort(t->e, t->n, sizeof(*t->e), lent_cmp);
}

static void ltab_clear(struct ltab *t)
{
	for (unsigned i = 0; i < t->n; i++)
		free(t->e[i].key);
	free(t->e);
	memset(t, 0, sizeof(*t));
}

/* A name as shown: control characters are not, and a long one keeps its
 * head and a hash of the rest (cgname_copy). */
static void tame_copy(char name[128], const char *s)
{
	cgname_copy(name, s, strlen(s));
	for (char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

struct cglabel *cglabel_new(const char *vardir, const char *docker_dir)
{
	struct cglabel *l = xcalloc(1, sizeof(*l));

	snprintf(l->vardir, sizeof(l->vardir), "%s", vardir);
	snprintf(l->docker_dir, sizeof(l->docker_dir), "%s", docker_dir);
	return l;
}

void cglabel_free(struct cglabel *l)
{
	if (!l)
		return;
	ltab_clear(&l->docker);
	for (unsigned i = 0; i < sizeof(l->podman) / sizeof(l->podman[0]); i++)
		ltab_clear(&l->podman[i].t);
	ltab_clear(&l->pods.t);
	free(l);
}

void cglabel_begin(struct cglabel *l)
{
	unsigned k = 0;

	/* Docker's names of containers gone since the scan before. */
	for (unsigned i = 0; i < l->docker.n; i++) {
		if (l->docker.e[i].gen != l->gen) {
			free(l->docker.e[i].key);
			continue;
		}
		l->docker.e[k++] = l->docker.e[i];
	}
	l->docker.n = k;
	l->gen++;
	/* Without docker's state no container has a config.v2.json: one stat
	 * a scan spares one per docker-named guest (another engine's, or a
	 * dockerd with another data root not configured). */
	{
		char path[PATH_MAX];
		struct stat st;

		l->docker_here = snprintf(path, sizeof(path), "%s/containers", l->docker_dir) < (int)sizeof(path) &&
				 stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	}
}

static bool same_stat(const struct stat *st, const struct timespec *mtime, off_t size)
{
	return st->st_mtim.tv_sec == mtime->tv_sec && st->st_mtim.tv_nsec == mtime->tv_nsec &&
	       st->st_size == size;
}

/* ---- docker ------------------------------------------------------------ */

static bool docker_name(struct cglabel *l, const char *id, struct cglabel_out *out)
{
	char path[PATH_MAX], err[256], *buf = NULL;
	struct lent *e = ltab_find(&l->docker, id);
	struct stat st;
	json_error_t jerr;
	const char *nm;
	json_t *j;
	size_t len;
	int r;

	if (!l->docker_here)
		return false;
	if (snprintf(path, sizeof(path), "%s/containers/%s/config.v2.json", l->docker_dir, id) >=
	    (int)sizeof(path))
		return false;
	if (stat(path, &st) < 0)
		return false; /* not docker's (another engine on /docker), or gone */
	if (e && same_stat(&st, &e->mtime, e->size)) {
		e->gen = l->gen;
		if (!e->out.name[0])
			return false;
		*out = e->out;
		return true;
	}
	r = fs_read_regular("docker container config", path, STATE_MAX, &buf, &len, err, sizeof(err));
	if (r < 0) {
		log_debug("docker %s: %s", id, err);
		return false;
	}
	j = json_loadb(buf, len, 0, &jerr);
	free(buf);
	nm = json_string_value(json_object_get(j, "Name"));
	if (!e) {
		e = ltab_add(&l->docker, id);
		ltab_sort(&l->docker);
		e = ltab_find(&l->docker, id);
	}
	memset(&e->out, 0, sizeof(e->out));
	e->mtime = st.st_mtim;
	e->size = st.st_size;
	e->gen = l->gen;
	if (nm) {
		/* Docker keeps the name with a leading '/'. */
		tame_copy(e->out.name, nm[0] == '/' ? nm + 1 : nm);
	} else {
		log_debug("docker %s: config.v2.json has no \"Name\"%s%s", id, j ? "" : ": ",
			  j ? "" : jerr.text);
	}
	json_decref(j);
	if (!e->out.name[0])
		return false;
	*out = e->out;
	return true;
}

int cglabel_docker_data_root(const char *path, char *out, size_t sz, char *err, size_t errsz)
{
	json_error_t jerr;
	const char *dr;
	char *buf = NULL;
	json_t *j, *v;
	size_t len;
	int r;

	r = fs_read_regular("dockerd's configuration", path, 1u << 20, &buf, &len, err, errsz);
	if (r == -ENOENT)
		return 0; /* dockerd's defaults */
	if (r < 0)
		return r;
	j = json_loadb(buf, len, 0, &jerr);
	free(buf);
	if (!json_is_object(j)) {
		snprintf(err, errsz, "%s: not a JSON object%s%s", path, j ? "" : ": ", j ? "" : jerr.text);
		json_decref(j);
		return -EINVAL;
	}
	v = json_object_get(j, "data-root");
	if (!v)
		v = json_object_get(j, "graph");
	dr = json_string_value(v);
	r = 0;
	if (v && (!dr || dr[0] != '/')) {
		snprintf(err, errsz, "%s: \"data-root\" is not an absolute path", path);
		r = -EINVAL;
	} else if (dr && snprintf(out, sz, "%s", dr) >= (int)sz) {
		snprintf(err, errsz, "%s: \"data-root\" too long", path);
		r = -ENAMETOOLONG;
	} else if (dr) {
		/* dockerd cleans the path: a trailing '/' names the same root */
		for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--)
			out[n - 1] = '\0';
		r = 1;
	}
	json_decref(j);
	return r;
}

/* ---- podman (containers/storage) --------------------------------------- */

/* Re-read SRC's file PATH when it changed since; false if it is not there. */
static bool src_fresh(struct cglabel *l, struct lsrc *src, const char *path, struct stat *st, bool *changed)
{
	*changed = false;
	if (src->checked == l->gen)
		return src->have;
	src->checked = l->gen;
	if (stat(path, st) < 0) {
		if (src->have)
			ltab_clear(&src->t);
		src->have = false;
		return false;
	}
	if (src->have && same_stat(st, &src->mtime, src->size))
		return true;
	ltab_clear(&src->t);
	src->have = true;
	src->mtime = st->st_mtim;
	src->size = st->st_size;
	*changed = true;
	return true;
}

/* containers/storage keeps each graph driver's containers apart
 * (<driver>-containers/containers.json): overlay where the filesystem
 * allows, vfs where it does not (overlay on overlay). */
static const char *const podman_drivers[6] = { "overlay", "vfs", "btrfs", "zfs", "devmapper", "aufs" };

static void podman_load(struct lsrc *src, const char *path)
{
	char err[256], *buf = NULL;
	json_error_t jerr;
	size_t len, i;
	json_t *j, *c;
	int r;

	r = fs_read_regular("podman's containers.json", path, STATE_MAX, &buf, &len, err, sizeof(err));
	if (r < 0) {
		log_debug("podman names: %s", err);
		return;
	}
	j = json_loadb(buf, len, 0, &jerr);
	free(buf);
	if (!json_is_array(j))
		log_debug("podman names: %s: %s", path, j ? "not an array" : jerr.text);
	json_array_foreach(j, i, c) {
		const char *id = json_string_value(json_object_get(c, "id"));
		const char *nm = json_string_value(json_array_get(json_object_get(c, "names"), 0));

		if (id && nm && *nm)
			tame_copy(ltab_add(&src->t, id)->out.name, nm);
	}
	json_decref(j);
	ltab_sort(&src->t);
}

static bool podman_name(struct cglabel *l, const char *id, struct cglabel_out *out)
{
	for (unsigned i = 0; i < sizeof(podman_drivers) / sizeof(podman_drivers[0]); i++) {
		char path[PATH_MAX];
		struct stat st;
		struct lent *e;
		bool changed;

		if (snprintf(path, sizeof(path), "%s/lib/containers/storage/%s-containers/containers.json",
			     l->vardir, podman_drivers[i]) >= (int)sizeof(path))
			continue;
		if (!src_fresh(l, &l->podman[i], path, &st, &changed))
			continue;
		if (changed)
			podman_load(&l->podman[i], path);
		e = ltab_find(&l->podman[i].t, id);
		if (e) {
			*out = e->out;
			return true;
		}
	}
	return false;
}

/* ---- kubernetes pods ----------------------------------------------------- */

bool cglabel_pod_dir(const char *dname, char ns[CGLABEL_NS_MAX], char pod[CGLABEL_POD_MAX], char uid[65])
{
	const char *a = strchr(dname, '_'), *b = a ? strchr(a + 1, '_') : NULL;
	size_t nl, pl, ul;

	if (!b || strchr(b + 1, '_'))
		return false;
	nl = (size_t)(a - dname);
	pl = (size_t)(b - a - 1);
	ul = strlen(b + 1);
	if (!nl || !pl || !ul || nl >= CGLABEL_NS_MAX || pl >= CGLABEL_POD_MAX || ul > 64)
		return false;
	memcpy(ns, dname, nl);
	ns[nl] = '\0';
	memcpy(pod, a + 1, pl);
	pod[pl] = '\0';
	memcpy(uid, b + 1, ul);
	uid[ul] = '\0';
	return true;
}

static void pods_load(struct cglabel *l, const char *dir)
{
	DIR *d = opendir(dir);

	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));) {
		char ns[CGLABEL_NS_MAX], pod[CGLABEL_POD_MAX], uid[65], full[CGLABEL_NS_MAX + CGLABEL_POD_MAX];
		struct lent *e;

		if (de->d_name[0] == '.' || !cglabel_pod_dir(de->d_name, ns, pod, uid))
			continue;
		e = ltab_add(&l->pods.t, uid);
		snprintf(e->out.ns, sizeof(e->out.ns), "%s", ns);
		snprintf(e->out.pod, sizeof(e->out.pod), "%s", pod);
		snprintf(full, sizeof(full), "%s/%s", ns, pod);
		tame_copy(e->out.name, full);
	}
	closedir(d);
	ltab_sort(&l->pods.t);
}

static bool pod_name(struct cglabel *l, const char *uid, struct cglabel_out *out)
{
	char dir[PATH_MAX];
	struct stat st;
	struct lent *e;
	bool changed;

	if (snprintf(dir, sizeof(dir), "%s/log/pods", l->vardir) >= (int)sizeof(dir))
		return false;
	/* The directory's mtime changes as pods come and go. */
	if (!src_fresh(l, &l->pods, dir, &st, &changed))
		return false;
	if (changed)
		pods_load(l, dir);
	e = ltab_find(&l->pods.t, uid);
	if (!e)
		return false;
	*out = e->out;
	return true;
}

bool cglabel_lookup(struct cglabel *l, const char *runtime, const char *key, struct cglabel_out *out)
{
	if (strcmp(runtime, "docker") == 0)
		return docker_name(l, key, out);
	if (strcmp(runtime, "podman") == 0)
		return podman_name(l, key, out);
	if (strcmp(runtime, "kubernetes") == 0)
		return pod_name(l, key, out);
	return false;
}
