#include "orchestrator/store/gpolstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/log.h"
#include "orchestrator/model/snapjson.h"

#define FORMAT_NAME "numaorch-guest-policies"
#define FORMAT_VERSION 1
/* Far above GPOLSTORE_MAX records of ~100 bytes. */
#define FILE_MAX (64u << 20)

struct gpolstore {
	pthread_mutex_t lock;
	char *path;                /* NULL: nothing to persist to */
	char *dir;
	int dfd;                   /* the checked state directory; -1 */
	int jfd;                   /* the journal, open for append; -1 */
	unsigned jn;               /* records in the journal */
	unsigned n_base;           /* records in the base at the last compaction */
	unsigned n, cap;
	struct gpol_record *r;     /* sorted by id */
	uint64_t gen;
	unsigned nr_dropped;
	char **dropped;            /* what load() left out, and why */
};

/* Temp files are GPOLSTORE_FILE.tmp.XXXXXX (fs_write_atomic_at): one left
 * by a process killed mid-write would stay for ever. */
static void remove_stale_temps(int dfd)
{
	static const char prefix[] = GPOLSTORE_FILE ".tmp.";
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strncmp(de->d_name, prefix, sizeof(prefix) - 1) == 0)
			unlinkat(dfd, de->d_name, 0);
	closedir(d);
}

static void drop(struct gpolstore *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void drop(struct gpolstore *s, const char *fmt, ...)
{
	va_list ap;
	char *m;

	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) < 0)
		abort(); /* the OOM policy */
	va_end(ap);
	s->dropped = xrealloc(s->dropped, (s->nr_dropped + 1) * sizeof(char *));
	s->dropped[s->nr_dropped++] = m;
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

/* A record's fields as the file and the journal hold them, each a JSON
 * string: parsed into a record (a negative errno if it is not one of
 * what MUST says), and emitted as a value (NULL: left out, where its
 * absence says the same). One table keeps the file, the journal and the
 * parser the same. */
struct gpol_field {
	const char *key;
	const char *must;
	int (*parse)(const char *s, struct gpol_record *r);
	json_t *(*emit)(const struct gpol_record *r);
};

static int mode_parse(const char *s, struct gpol_record *r)
{
	return gpol_mode_parse(s, &r->pol.mode);
}

static json_t *mode_emit(const struct gpol_record *r)
{
	return json_string(gpol_mode_name(r->pol.mode));
}

static int nodes_parse(const char *s, struct gpol_record *r)
{
	return mask_parse(s, &r->pol.nodes);
}

static json_t *nodes_emit(const struct gpol_record *r)
{
	return r->pol.mode == GPOL_PINNED ? snapj_nodemask(&r->pol.nodes) : NULL;
}

static int devices_parse(const char *s, struct gpol_record *r)
{
	return gpol_devices_parse(s, &r->pol.devices);
}

static json_t *devices_emit(const struct gpol_record *r)
{
	return r->pol.devices != GPOL_DEV_PREFER ? json_string(gpol_devices_name(r->pol.devices)) : NULL;
}

static int set_parse(const char *s, struct gpol_record *r)
{
	return time_parse(s, &r->set_real_ns);
}

static json_t *set_emit(const struct gpol_record *r)
{
	char when[32];

	time_iso(r->set_real_ns, when, sizeof(when));
	return json_string(when);
}

static const struct gpol_field gpol_fields[] = {
	{ "mode", "auto, pinned or ignore", mode_parse, mode_emit },
	{ "nodes", "a node list such as \"0-1\"", nodes_parse, nodes_emit },
	{ "devices", "prefer, require or ignore", devices_parse, devices_emit },
	{ "set", "a time such as 2024-01-31T12:00:00Z", set_parse, set_emit },
};

/* REC as the object the file and the journal hold. */
static json_t *record_json(const struct gpol_record *rec)
{
	json_t *o = json_object();

	for (size_t i = 0; i < sizeof(gpol_fields) / sizeof(gpol_fields[0]); i++) {
		json_t *v = gpol_fields[i].emit(rec);

		if (v)
			json_object_set_new(o, gpol_fields[i].key, v);
	}
	return o;
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
		const struct gpol_field *f = NULL;

		for (size_t i = 0; i < sizeof(gpol_fields) / sizeof(gpol_fields[0]) && !f; i++)
			if (strcmp(key, gpol_fields[i].key) == 0)
				f = &gpol_fields[i];
		if (!f) {
			snprintf(err, errsz, "%s: unknown field \"%.40s\"", id, key);
			return -EINVAL;
		}
		if (!json_is_string(v) || f->parse(json_string_value(v), out) < 0) {
			snprintf(err, errsz, "%s: %s must be %s", id, f->key, f->must);
			return -EINVAL;
		}
	}
	if ((out->pol.mode == GPOL_PINNED) != !mask_empty(&out->pol.nodes)) {
		snprintf(err, errsz, "%s: nodes must be given with mode pinned, and only then", id);
		return -EINVAL;
	}
	return 0;
}

static struct gpol_record *find(struct gpolstore *s, const char *id)
{
	struct gpol_record key;

	if (!s->n)
		return NULL; /* bsearch's base must not be NULL, even for 0 */
	snprintf(key.id, sizeof(key.id), "%s", id);
	return bsearch(&key, s->r, s->n, sizeof(*s->r), rec_cmp);
}

/* Put REC in the sorted table (replacing one of the same id): a binary
 * search and one memmove, not a copy and sort of the whole table. */
static void table_put(struct gpolstore *s, const struct gpol_record *rec)
{
	unsigned lo = 0, hi = s->n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		int c = strcmp(s->r[mid].id, rec->id);

		if (c == 0) {
			s->r[mid] = *rec;
			return;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->r = xrealloc(s->r, s->cap * sizeof(*s->r));
	}
	memmove(&s->r[lo + 1], &s->r[lo], (s->n - lo) * sizeof(*s->r));
	s->r[lo] = *rec;
	s->n++;
}

static void table_del(struct gpolstore *s, struct gpol_record *old)
{
	unsigned i = (unsigned)(old - s->r);

	memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof(*s->r));
	s->n--;
}

/* The base file: format, version, then the records. A file that is not
 * one (broken JSON, another format) stops the start; one bad record does
 * not: it is left out and named (gpolstore_dropped), the rest load. */
static int load_base(struct gpolstore *s, bool writable, char *err, size_t errsz)
{
	json_error_t je;
	json_t *root, *guests, *v;
	const char *key;
	char *text;
	size_t len;
	int r;

	r = fs_read_file_at(s->dfd, GPOLSTORE_FILE, FILE_MAX, &text, &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(err, errsz, "%s: cannot read: %s%s", s->path, strerror(-r),
			 r == -ELOOP ? " (a symlink: refused)" : r == -EISDIR || r == -EINVAL ?
			 " (not a regular file)" : "");
		return r;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errsz, "%s:%d: %s", s->path, je.line, je.text);
		free(text);
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
	s->cap = (unsigned)json_object_size(guests) + 1;
	s->r = xcalloc(s->cap, sizeof(*s->r));
	json_object_foreach(guests, key, v) {
		char why[200];

		if (parse_record(key, v, &s->r[s->n], why, sizeof(why)) < 0) {
			drop(s, "%s: %s: record dropped", s->path, why);
			continue;
		}
		s->n++;
	}
	qsort(s->r, s->n, sizeof(*s->r), rec_cmp);
	/* Lose nothing: the next compaction rewrites the file without the
	 * dropped records, so keep the text they were in (not in a read-only
	 * open: numaorchd --once creates nothing). */
	if (s->nr_dropped && writable &&
	    fs_write_atomic_at(s->dfd, GPOLSTORE_FILE ".rejected", text, len, 0640) == 0)
		drop(s, "%s: the file as it was is kept in %s/%s.rejected", s->path, s->dir, GPOLSTORE_FILE);
	r = 0;
out:
	free(text);
	json_decref(root);
	return r;
}

/* One journal line: {"id": ID, "policy": RECORD} or {"id": ID,
 * "policy": null} (cleared). */
static char *journal_line(const char *id, const struct gpol_record *rec)
{
	json_t *o = json_object();
	char *text;

	json_object_set_new(o, "id", json_string(id));
	if (rec) {
		json_object_set_new(o, "policy", record_json(rec));
	} else {
		json_object_set_new(o, "policy", json_null());
	}
	text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	if (!text)
		abort(); /* jansson fails only on allocation: the OOM policy */
	return text;
}

/* A journal line is one record of ~150 bytes; a pinned set of every
 * possible node stays far below this. */
#define JOURNAL_LINE_MAX (64u << 10)

struct replay {
	struct gpolstore *s;
	unsigned bad;              /* lines that could not be replayed */
};

static int replay_line(void *ctx, unsigned no, const char *line, size_t len, unsigned flags)
{
	struct replay *rp = ctx;
	struct gpolstore *s = rp->s;
	struct gpol_record rec, *old;
	json_t *o, *pol;
	const char *id;
	char why[200];

	if (flags & FS_LINE_UNTERMINATED) {
		/* A crash mid-append: that change was never acknowledged. */
		drop(s, "%s/%s:%u: incomplete last line (a write cut short): ignored", s->dir, GPOLSTORE_JOURNAL,
		     no);
		rp->bad++;
		return 0;
	}
	s->jn++;
	if (flags & FS_LINE_TOO_LONG) {
		drop(s, "%s/%s:%u: a line of %zu bytes, over the %u a record may have: dropped", s->dir,
		     GPOLSTORE_JOURNAL, no, len, JOURNAL_LINE_MAX);
		rp->bad++;
		return 0;
	}
	if (memchr(line, '\0', len)) {
		/* What a crash can leave in a file's last blocks. */
		drop(s, "%s/%s:%u: NUL bytes, not a journal record: dropped", s->dir, GPOLSTORE_JOURNAL, no);
		rp->bad++;
		return 0;
	}
	o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	id = json_string_value(json_object_get(o, "id"));
	pol = json_object_get(o, "policy");
	if (!id || !pol || json_object_size(o) != 2) {
		drop(s, "%s/%s:%u: not a journal record: dropped", s->dir, GPOLSTORE_JOURNAL, no);
		rp->bad++;
	} else if (json_is_null(pol)) {
		if (snap_id_valid(id) && (old = find(s, id)))
			table_del(s, old);
	} else if (parse_record(id, pol, &rec, why, sizeof(why)) < 0) {
		drop(s, "%s/%s:%u: %s: record dropped", s->dir, GPOLSTORE_JOURNAL, no, why);
		rp->bad++;
	} else if (s->n >= GPOLSTORE_MAX && !find(s, id)) {
		drop(s, "%s/%s:%u: %s: more than %u guests: dropped", s->dir, GPOLSTORE_JOURNAL, no, id,
		     GPOLSTORE_MAX);
		rp->bad++;
	} else {
		table_put(s, &rec);
	}
	json_decref(o);
	return 0;
}

/* Replay the journal over the base: changes since the last compaction,
 * line by line, past any bad one (each is dropped and named, like a bad
 * record). When WRITABLE and anything could not be replayed, the journal
 * as it was is renamed to GPOLSTORE_JOURNAL.rejected before the start-up
 * compaction empties it; if that rename fails the store is not opened
 * (ERR says why), so nothing unread is compacted away. */
static int load_journal(struct gpolstore *s, bool writable, char *err, size_t errsz)
{
	struct replay rp = { .s = s };
	int fd, r;

	fd = fs_openat_regular(s->dfd, GPOLSTORE_JOURNAL, O_RDONLY, 0);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0) {
		snprintf(err, errsz, "%s/%s: cannot read: %s%s", s->dir, GPOLSTORE_JOURNAL, strerror(-fd),
			 fd == -ELOOP ? " (a symlink: refused)" : fd == -EISDIR || fd == -EINVAL ?
			 " (not a regular file)" : "");
		if (!writable) {
			drop(s, "%s; changes since the last compaction are not shown", err);
			return 0;
		}
		return fd;
	}
	r = fs_read_lines(fd, JOURNAL_LINE_MAX, replay_line, &rp);
	close(fd);
	if (r < 0) {
		drop(s, "%s/%s: cannot read past line %u: %s", s->dir, GPOLSTORE_JOURNAL, s->jn, strerror(-r));
		rp.bad++;
	}
	if (!rp.bad || !writable)
		return 0;
	if (renameat(s->dfd, GPOLSTORE_JOURNAL, s->dfd, GPOLSTORE_JOURNAL ".rejected") < 0) {
		r = -errno;
		snprintf(err, errsz, "%s/%s: %u line%s could not be replayed and the file cannot be set aside "
			 "as %s.rejected: %s", s->dir, GPOLSTORE_JOURNAL, rp.bad, rp.bad == 1 ? "" : "s",
			 GPOLSTORE_JOURNAL, strerror(-r));
		return r;
	}
	drop(s, "%s/%s: the journal as it was is kept in %s/%s.rejected", s->dir, GPOLSTORE_JOURNAL, s->dir,
	     GPOLSTORE_JOURNAL);
	return 0;
}

static char *serialize(const struct gpol_record *r, unsigned n)
{
	json_t *root = json_object(), *guests = json_object();
	char *text;

	json_object_set_new(root, "format", json_string(FORMAT_NAME));
	json_object_set_new(root, "version", json_integer(FORMAT_VERSION));
	for (unsigned i = 0; i < n; i++)
		json_object_set_new(guests, r[i].id, record_json(&r[i]));
	json_object_set_new(root, "guests", guests);
	text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(root);
	if (!text)
		abort(); /* jansson fails only on allocation: the OOM policy */
	return text;
}

/* Write the whole table as the base file, then empty the journal. A
 * crash in between replays the journal over a base that already holds
 * it: every record is absolute (set or cleared), so that is harmless. */
static int compact(struct gpolstore *s)
{
	char *text = serialize(s->r, s->n);
	int r, fd;

	r = fs_write_atomic_at(s->dfd, GPOLSTORE_FILE, text, strlen(text), 0640);
	free(text);
	if (r < 0)
		return r;
	fd = fs_openat_regular(s->dfd, GPOLSTORE_JOURNAL, O_WRONLY | O_APPEND | O_CREAT | O_TRUNC, 0640);
	if (fd < 0)
		return fd;
	if (s->jfd >= 0)
		close(s->jfd);
	s->jfd = fd;
	s->jn = 0;
	s->n_base = s->n;
	return 0;
}

/* The journal may grow to this many records before it is folded into
 * the base file: at least 1024, and as many as the base held, so that a
 * rewrite of N records (at most twice the journal) comes once per N/2
 * changes or more: amortised constant per change. */
static bool journal_full(const struct gpolstore *s)
{
	return s->jn >= (s->n_base > 1024 ? s->n_base : 1024);
}

int gpolstore_open(const char *dir, unsigned flags, struct gpolstore **out, char *err, size_t errsz)
{
	struct gpolstore *s = xcalloc(1, sizeof(*s));
	int r;

	pthread_mutex_init(&s->lock, NULL);
	s->dfd = s->jfd = -1;
	if (dir && *dir) {
		s->dir = xstrdup(dir);
		s->path = xasprintf("%s/%s", dir, GPOLSTORE_FILE);
		if (flags & GPOLSTORE_CREATE)
			r = fs_mkdir_trusted("state directory", dir, 0750, err, errsz);
		else if (!fs_exists(dir))
			r = -ENOENT;
		else
			r = fs_open_trusted_dir("state directory", dir, err, errsz);
		if (r == -ENOENT && !(flags & GPOLSTORE_CREATE)) {
			/* Nothing stored yet: an empty store, read-only. */
			free(s->path);
			s->path = NULL;
			*out = s;
			return 0;
		}
		if (r < 0) {
			gpolstore_free(s);
			return r;
		}
		s->dfd = r;
		if (flags & GPOLSTORE_CREATE)
			remove_stale_temps(s->dfd);
		r = load_base(s, flags & GPOLSTORE_CREATE, err, errsz);
		if (r < 0) {
			gpolstore_free(s);
			return r;
		}
		r = load_journal(s, flags & GPOLSTORE_CREATE, err, errsz);
		if (r < 0) {
			gpolstore_free(s);
			return r;
		}
		if (flags & GPOLSTORE_CREATE) {
			/* Start from a compact file when the last run left
			 * changes in the journal (or records were dropped): the
			 * journal then holds only this run's changes. */
			struct stat st;

			if (s->jn || s->nr_dropped || fstatat(s->dfd, GPOLSTORE_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				r = compact(s);
			} else {
				r = fs_openat_regular(s->dfd, GPOLSTORE_JOURNAL, O_WRONLY | O_APPEND | O_CREAT, 0640);
				if (r >= 0) {
					s->jfd = r;
					s->n_base = s->n;
				}
			}
			if (r < 0) {
				snprintf(err, errsz, "%s: cannot write: %s", s->path, strerror(-r));
				gpolstore_free(s);
				return r;
			}
		}
	}
	/* The parse of a large file leaves its tree's memory in the heap
	 * (65536 records: tens of MiB); the table is all that stays. */
	malloc_trim(0);
	*out = s;
	return 0;
}

void gpolstore_free(struct gpolstore *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	if (s->jfd >= 0)
		close(s->jfd);
	if (s->dfd >= 0)
		close(s->dfd);
	for (unsigned i = 0; i < s->nr_dropped; i++)
		free(s->dropped[i]);
	free(s->dropped);
	free(s->path);
	free(s->dir);
	free(s->r);
	free(s);
}

unsigned gpolstore_dropped(const struct gpolstore *s, char *const **msgs)
{
	*msgs = s->dropped;
	return s->nr_dropped;
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

/* Append LINE + '\n' to the journal, durably. On a short or failed
 * write the journal is cut back to where it was: a half line must not
 * glue itself to the next record. */
static int journal_append(struct gpolstore *s, const char *line)
{
	size_t len = strlen(line);
	struct iovec iov[2] = { { (void *)line, len }, { (void *)"\n", 1 } };
	off_t end = lseek(s->jfd, 0, SEEK_END);
	ssize_t w;

	w = writev(s->jfd, iov, 2);
	if (w == (ssize_t)(len + 1) && fdatasync(s->jfd) == 0)
		return 0;
	{
		int r = w < 0 || w == (ssize_t)(len + 1) ? -errno : -EIO;

		if (end >= 0 && ftruncate(s->jfd, end) < 0)
			log_debug("gpolstore: cannot cut the journal back: %s", strerror(errno));
		return r;
	}
}

int gpolstore_set(struct gpolstore *s, const char *id, const struct guest_policy *pol, int64_t now_real_ns)
{
	struct gpol_record rec, *old;
	char *line;
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
	if (!s->path || s->jfd < 0) {
		pthread_mutex_unlock(&s->lock);
		return -EROFS;
	}
	if (pol) {
		memset(&rec, 0, sizeof(rec));
		snprintf(rec.id, sizeof(rec.id), "%s", id);
		rec.pol = *pol;
		rec.pol.source = GPOL_SRC_API;
		if (rec.pol.mode != GPOL_PINNED)
			mask_zero(&rec.pol.nodes);
		/* Whole seconds, as the file keeps it: the same after a restart. */
		rec.set_real_ns = now_real_ns / 1000000000LL * 1000000000LL;
	}
	/* The journal first: memory changes only once the change is on
	 * disk (one appended line, not the whole store rewritten). */
	line = journal_line(id, pol ? &rec : NULL);
	r = journal_append(s, line);
	free(line);
	if (r < 0) {
		pthread_mutex_unlock(&s->lock);
		return r;
	}
	s->jn++;
	if (pol)
		table_put(s, &rec);
	else
		table_del(s, old);
	s->gen++;
	if (journal_full(s)) {
		/* The change is already safe in the journal: a failed
		 * compaction only leaves the journal longer. */
		r = compact(s);
		if (r < 0)
			log_debug("gpolstore: compaction of %s failed: %s", s->path, strerror(-r));
	}
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
