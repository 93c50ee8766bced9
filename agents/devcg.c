/* devcg.c — a container's devices from cgroup v1's devices.list (see
 * devcg.h). */
#include "devcg.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devnode.h"
#include "../orchestrator/base/xalloc.h"

#define ANY (~0u) /* "*" as a major or minor */

/* The char devices every container gets (runc's and Docker's defaults):
 * they say nothing about where it belongs. MIN ANY: the whole major. */
static const struct { unsigned maj, min; } generic_char[] = {
	{ 1, 3 },     /* null */
	{ 1, 5 },     /* zero */
	{ 1, 7 },     /* full */
	{ 1, 8 },     /* random */
	{ 1, 9 },     /* urandom */
	{ 5, 0 },     /* tty */
	{ 5, 1 },     /* console */
	{ 5, 2 },     /* ptmx */
	{ 10, 200 },  /* net/tun */
	{ 10, 229 },  /* fuse */
	{ 136, ANY }, /* pts */
};

struct centry {
	char *text;
	uint64_t hash;
	uint64_t used; /* the cache's clock when last asked for */
	struct devcg_res res;
};

struct devcg_cache {
	struct host_paths hp;
	struct centry ent[DEVCG_CACHE_MAX];
	unsigned n;
	uint64_t clock;
	unsigned lookups;
};

static bool generic(char type, unsigned maj, unsigned min)
{
	if (type != 'c')
		return false;
	for (size_t i = 0; i < sizeof(generic_char) / sizeof(generic_char[0]); i++)
		if (generic_char[i].maj == maj && (generic_char[i].min == ANY || generic_char[i].min == min))
			return true;
	return false;
}

/* "*" or a decimal number (at most 2^32 - 2) at *S, S moved past it. */
static int num(const char **s, unsigned *out)
{
	unsigned long long v = 0;
	const char *p = *s;

	if (*p == '*') {
		*out = ANY;
		*s = p + 1;
		return 0;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (unsigned)(*p++ - '0');
		if (v >= ANY)
			return -EINVAL;
	}
	*out = (unsigned)v;
	*s = p;
	return 0;
}

/* One rule, "TYPE MAJ:MIN ACCESS", into its parts. */
static int rule(const char *line, char *type, unsigned *maj, unsigned *min, bool *rw)
{
	const char *p = line;

	if (!strchr("abc", *p) || p[1] != ' ')
		return -EINVAL;
	*type = *p;
	p += 2;
	if (num(&p, maj) < 0 || *p++ != ':' || num(&p, min) < 0 || *p++ != ' ')
		return -EINVAL;
	if (!*p || strspn(p, "rwm") != strlen(p))
		return -EINVAL;
	*rw = strpbrk(p, "rw") != NULL;
	return 0;
}

/* Device MAJ:MIN (BLOCK or char) into OUT when it has a bus device. */
static void add_dev(const struct host_paths *hp, bool block, unsigned maj, unsigned min, struct devcg_res *out,
		    unsigned *lookups)
{
	int node;

	(*lookups)++;
	if (devnode_of_dev(hp, block, maj, min, &node) < 0)
		return;
	out->nr++;
	if (node >= 0)
		mask_set(&out->nodes, (unsigned)node);
}

/* Every device of major MAJ (BLOCK or char) sysfs lists, not generic. */
static void add_major(const struct host_paths *hp, char type, unsigned maj, struct devcg_res *out,
		      unsigned *lookups)
{
	char path[PATH_MAX];
	struct dirent *de;
	unsigned seen = 0;
	DIR *d;

	if (snprintf(path, sizeof(path), "%s/dev/%s", hp->sysfs, type == 'b' ? "block" : "char") >= (int)sizeof(path))
		return;
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && seen < DEVCG_WILD_MAX) {
		unsigned ma, mi;
		const char *p = de->d_name;

		if (num(&p, &ma) < 0 || ma != maj || ma == ANY || *p++ != ':' || num(&p, &mi) < 0 || mi == ANY || *p)
			continue;
		seen++;
		if (!generic(type, ma, mi))
			add_dev(hp, type == 'b', ma, mi, out, lookups);
	}
	closedir(d);
}

static int parse(const struct host_paths *hp, const char *text, struct devcg_res *out, unsigned *lookups)
{
	struct devcg_res r;
	const char *p = text;

	memset(&r, 0, sizeof(r));
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[64], type;
		unsigned maj, min;
		bool rw;

		if (len >= sizeof(line))
			return -EINVAL;
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (nl ? 1 : 0);
		if (!len)
			continue;
		if (rule(line, &type, &maj, &min, &rw) < 0)
			return -EINVAL;
		/* mknod alone opens nothing. */
		if (!rw)
			continue;
		if (maj == ANY) {
			r.all = true;
			continue;
		}
		/* a: the char and the block device of that number */
		for (unsigned b = 0; b < 2; b++) {
			char t = b ? 'b' : 'c';

			if ((type != 'a' && type != t) || generic(t, maj, min))
				continue;
			if (min == ANY)
				add_major(hp, t, maj, &r, lookups);
			else
				add_dev(hp, b, maj, min, &r, lookups);
		}
	}
	/* Every device: no one of them says where it belongs. */
	if (r.all) {
		r.nr = 0;
		mask_zero(&r.nodes);
	}
	*out = r;
	return 0;
}

int devcg_parse(const struct host_paths *hp, const char *text, struct devcg_res *out)
{
	unsigned lookups = 0;

	return parse(hp, text, out, &lookups);
}

/* FNV-1a: to find a text among the kept ones before comparing it. */
static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

struct devcg_cache *devcg_cache_new(const struct host_paths *hp)
{
	struct devcg_cache *c = xcalloc(1, sizeof(*c));

	c->hp = *hp;
	return c;
}

void devcg_cache_free(struct devcg_cache *c)
{
	if (!c)
		return;
	for (unsigned i = 0; i < c->n; i++)
		free(c->ent[i].text);
	free(c);
}

unsigned devcg_cache_lookups(const struct devcg_cache *c)
{
	return c->lookups;
}

int devcg_resolve(struct devcg_cache *c, const char *text, struct devcg_res *out)
{
	uint64_t h = hash(text);
	struct centry *e;
	unsigned victim = 0;
	int r;

	c->clock++;
	for (unsigned i = 0; i < c->n; i++)
		if (c->ent[i].hash == h && strcmp(c->ent[i].text, text) == 0) {
			c->ent[i].used = c->clock;
			*out = c->ent[i].res;
			return 0;
		}
	r = parse(&c->hp, text, out, &c->lookups);
	if (r < 0)
		return r;
	if (c->n < DEVCG_CACHE_MAX) {
		victim = c->n++;
	} else {
		for (unsigned i = 1; i < c->n; i++)
			if (c->ent[i].used < c->ent[victim].used)
				victim = i;
		free(c->ent[victim].text);
	}
	e = &c->ent[victim];
	e->text = xstrdup(text);
	e->hash = h;
	e->used = c->clock;
	e->res = *out;
	return 0;
}
