#include "gpolstore.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"
#include "snapjson.h"

#define FORMAT_NAME "numaorch-guest-policies"
#define FORMAT_VERSION 1
/* Far above GPOLSTORE_MAX records of ~100 bytes. */
#define FILE_MAX (64u << 20)

struct gpolstore {
	pthread_mutex_t lock;
	char *path;                /* NULL: nothing to persist to */
	unsigned n;
	struct gpol_record *r;     /* sorted by id */
	uint64_t gen;
};

/* fs_write_atomic names its temp file PATH.tmp.PID: one left by a process
 * killed mid-write would stay forever, since the next run has another pid. */
static void remove_stale_temps(const char *dir)
{
	static const char prefix[] = GPOLSTORE_FILE ".tmp.";
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, prefix, sizeof(prefix) - 1) == 0)
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}

static int rec_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gpol_record *)a)->id, ((const struct gpol_record *)b)->id);
}

static void time_iso(int64_t ns, char *buf, size_t sz)
{
	time_t sec = (time_t)(ns / 1000000000LL);
	struct tm tm;

	gmtime_r(&sec, &tm);
	strftime(buf, sz, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int time_parse(const char *s, int64_t *out)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!end || *end)
		return -EINVAL;
	*out = (int64_t)timegm(&tm) * 1000000000LL;
	return 0;
}

/* Parse one record; ERR names what is wrong with it. */
static int parse_record(const char *id, json_t *o, struct gpol_record *out, char *err, size_t errsz)
{
	const char *key;
	json_t *v;

	memset(out, 0, sizeof(*out));
	if (!snap_id_valid(id)) {
		snprintf(err, errsz, "\"%.40s\" is not a valid guest id", id);
		return -EINVAL;
	}
	snprintf(out->id, sizeof(out->id), "%s", id);
	out->pol.source = GPOL_SRC_API;
	if (!json_is_object(o)) {
		snprintf(err, errsz, "%s: not an object", id);
		return -EINVAL;
	}
	json_object_foreach(o, key, v) {
		if (strcmp(key, "mode") == 0) {
			if (!json_is_string(v) || gpol_mode_parse(json_string_value(v), &out->pol.mode) < 0) {
				snprintf(err, errsz, "%s: mode must be auto, pinned or ignore", id);
				return -EINVAL;
			}
		} else if (strcmp(key, "nodes") == 0) {
			if (!json_is_string(v) || mask_parse(json_string_value(v), &out->pol.nodes) < 0) {
				snprintf(err, errsz, "%s: nodes must be a node list such as \"0-1\"", id);
				return -EINVAL;
			}
		} else if (strcmp(key, "set") == 0) {
			if (!json_is_string(v) || time_parse(json_string_value(v), &out->set_real_ns) < 0) {
				snprintf(err, errsz, "%s: set must be a time such as 2024-01-31T12:00:00Z", id);
				return -EINVAL;
			}
		} else {
			snprintf(err, errsz, "%s: unknown field \"%.40s\"", id, key);
			return -EINVAL;
		}
	}
	if ((out->pol.mode == GPOL_PINNED) != !mask_empty(&out->pol.nodes)) {
		snprintf(err, errsz, "%s: nodes must be given with mode pinned, and only then", id);
		return -EINVAL;
	}
	return 0;
}

static int load(struct gpolstore *s, char *err, size_t errsz)
{
	json_error_t je;
	json_t *root, *guests, *v;
	const char *key;
	char *text;
	size_t len;
	int r;

	r = fs_read_file(s->path, FILE_MAX, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(err, errsz, "%s: cannot read: %s", s->path, strerror(-r));
		return r;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!root) {
		snprintf(err, errsz, "%s:%d: %s", s->path, je.line, je.text);
		return -EINVAL;
	}
	r = -EINVAL;
	if (!json_is_object(root) ||
	    !json_is_string(json_object_get(root, "format")) ||
	    strcmp(json_string_value(json_object_get(root, "format")), FORMAT_NAME) != 0 ||
	    json_integer_value(json_object_get(root, "version")) != FORMAT_VERSION ||
	    !json_is_object(guests = json_object_get(root, "guests")) || json_object_size(root) != 3) {
		snprintf(err, errsz, "%s: not a numaorch guest policy file (format %s, version %d)", s->path,
			 FORMAT_NAME, FORMAT_VERSION);
		goto out;
	}
	if (json_object_size(guests) > GPOLSTORE_MAX) {
		snprintf(err, errsz, "%s: more than %u guests", s->path, GPOLSTORE_MAX);
		goto out;
	}
	s->r = xcalloc(json_object_size(guests) + 1, sizeof(*s->r));
	json_object_foreach(guests, key, v) {
		char why[200];

		if (parse_record(key, v, &s->r[s->n], why, sizeof(why)) < 0) {
			snprintf(err, errsz, "%s: %s", s->path, why);
			goto out;
		}
		s->n++;
	}
	qsort(s->r, s->n, sizeof(*s->r), rec_cmp);
	r = 0;
out:
	json_decref(root);
	return r;
}

int gpolstore_open(const char *dir, unsigned flags, struct gpolstore **out, char *err, size_t errsz)
{
	struct gpolstore *s = xcalloc(1, sizeof(*s));
	int r;

	pthread_mutex_init(&s->lock, NULL);
	if (dir && *dir) {
		if (flags & GPOLSTORE_CREATE) {
			r = fs_mkdir_p(dir, 0750);
			if (r < 0) {
				snprintf(err, errsz, "state directory %s: %s", dir, strerror(-r));
				gpolstore_free(s);
				return r;
			}
			remove_stale_temps(dir);
		}
		s->path = xasprintf("%s/%s", dir, GPOLSTORE_FILE);
		r = load(s, err, errsz);
		if (r < 0) {
			gpolstore_free(s);
			return r;
		}
	}
	*out = s;
	return 0;
}

void gpolstore_free(struct gpolstore *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->path);
	free(s->r);
	free(s);
}

static struct gpol_record *find(struct gpolstore *s, const char *id)
{
	struct gpol_record key;

	if (!s->n)
		return NULL; /* bsearch's base must not be NULL, even for 0 */
	snprintf(key.id, sizeof(key.id), "%s", id);
	return bsearch(&key, s->r, s->n, sizeof(*s->r), rec_cmp);
}

bool gpolstore_get(struct gpolstore *s, const char *id, struct gpol_record *out)
{
	struct gpol_record *r;

	pthread_mutex_lock(&s->lock);
	r = find(s, id);
	if (r)
		*out = *r;
	pthread_mutex_unlock(&s->lock);
	return r != NULL;
}

static char *serialize(const struct gpol_record *r, unsigned n)
{
	json_t *root = json_object(), *guests = json_object();
	char *text;

	json_object_set_new(root, "format", json_string(FORMAT_NAME));
	json_object_set_new(root, "version", json_integer(FORMAT_VERSION));
	for (unsigned i = 0; i < n; i++) {
		json_t *o = json_object();
		char when[32];

		json_object_set_new(o, "mode", json_string(gpol_mode_name(r[i].pol.mode)));
		if (r[i].pol.mode == GPOL_PINNED)
			json_object_set_new(o, "nodes", json_nodemask(&r[i].pol.nodes));
		time_iso(r[i].set_real_ns, when, sizeof(when));
		json_object_set_new(o, "set", json_string(when));
		json_object_set_new(guests, r[i].id, o);
	}
	json_object_set_new(root, "guests", guests);
	text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(root);
	if (!text)
		abort(); /* jansson fails only on allocation: the OOM policy */
	return text;
}

int gpolstore_set(struct gpolstore *s, const char *id, const struct guest_policy *pol, int64_t now_real_ns)
{
	struct gpol_record *nr, *old;
	unsigned n;
	char *text;
	int r;

	if (!snap_id_valid(id))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	old = find(s, id);
	if (!pol && !old) {
		pthread_mutex_unlock(&s->lock);
		return -ENOENT;
	}
	if (pol && !old && s->n >= GPOLSTORE_MAX) {
		pthread_mutex_unlock(&s->lock);
		return -ENOSPC;
	}
	if (!s->path) {
		pthread_mutex_unlock(&s->lock);
		return -EROFS;
	}
	/* Build the new table aside; it replaces the old one only once the
	 * file holding it is safely in place. */
	nr = xcalloc(s->n + 1, sizeof(*nr));
	n = 0;
	for (unsigned i = 0; i < s->n; i++)
		if (&s->r[i] != old)
			nr[n++] = s->r[i];
	if (pol) {
		memset(&nr[n], 0, sizeof(nr[n]));
		snprintf(nr[n].id, sizeof(nr[n].id), "%s", id);
		nr[n].pol = *pol;
		nr[n].pol.source = GPOL_SRC_API;
		if (nr[n].pol.mode != GPOL_PINNED)
			mask_zero(&nr[n].pol.nodes);
		/* Whole seconds, as the file keeps it: the same after a restart. */
		nr[n].set_real_ns = now_real_ns / 1000000000LL * 1000000000LL;
		n++;
		qsort(nr, n, sizeof(*nr), rec_cmp);
	}
	text = serialize(nr, n);
	r = fs_write_atomic(s->path, text, strlen(text), 0640);
	free(text);
	if (r < 0) {
		free(nr);
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	free(s->r);
	s->r = nr;
	s->n = n;
	s->gen++;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

unsigned gpolstore_list(struct gpolstore *s, struct gpol_record **out)
{
	unsigned n;

	pthread_mutex_lock(&s->lock);
	n = s->n;
	*out = xcalloc(n + 1, sizeof(**out));
	if (n)
		memcpy(*out, s->r, n * sizeof(**out));
	pthread_mutex_unlock(&s->lock);
	return n;
}

unsigned gpolstore_page(struct gpolstore *s, const char *after, unsigned limit, struct gpol_record **out,
			unsigned *total, bool *more)
{
	unsigned lo = 0, hi, n;

	pthread_mutex_lock(&s->lock);
	/* First id greater than AFTER (sorted by strcmp). */
	if (after) {
		hi = s->n;
		while (lo < hi) {
			unsigned mid = lo + (hi - lo) / 2;

			if (strcmp(s->r[mid].id, after) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	n = s->n - lo < limit ? s->n - lo : limit;
	*out = xcalloc(n + 1, sizeof(**out));
	if (n)
		memcpy(*out, s->r + lo, n * sizeof(**out));
	*total = s->n;
	*more = lo + n < s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}

unsigned gpolstore_count(struct gpolstore *s)
{
	unsigned n;

	pthread_mutex_lock(&s->lock);
	n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t gpolstore_generation(struct gpolstore *s)
{
	uint64_t g;

	pthread_mutex_lock(&s->lock);
	g = s->gen;
	pthread_mutex_unlock(&s->lock);
	return g;
}

const char *gpolstore_path(const struct gpolstore *s)
{
	return s->path;
}
