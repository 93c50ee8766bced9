#include "orchestrator/store/declog.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/log.h"
#include "orchestrator/model/snapjson.h"

/* Records are kept as their compact JSON text (what the file holds too),
 * packed (pack() below): a jansson tree costs several KiB a record, the
 * text about twice the packed form, and a full ring of text would also
 * hold a separate copy of each guest id (the sizes: tests/README.md,
 * make bench). */
struct rec {
	uint64_t id;
	int64_t ms;   /* its "time", in ms since the epoch */
	/* One allocation: the guest id, NUL, the packed record, NUL. */
	char *buf;
};

struct declog {
	pthread_mutex_t lock;
	int fd;
	uint64_t next_id;
	unsigned cap, head, n; /* ring: oldest at head */
	size_t bytes;          /* the records' buffers, as allocated */
	struct rec *ring;
};

/* The records' keys, most of a record's text ("cycle", "guest", ...
 * repeat in every one). A packed record has byte i + 1 in place of
 * "KEYS[i]": — bytes 0x01..0x1e, which never occur raw in JSON text
 * (jansson writes control characters as \u escapes), so packing is
 * lossless and unpacking needs no escape of its own. A key not in the
 * table ("errno", rare) stays as it is. The byte CODE_GUEST stands for
 * "guest":"ID" when ID is the record's guest as it is written (its own
 * copy is beside the record, for the guest filter: the id is 70 bytes of
 * a Docker container's record). */
static const char *const KEYS[] = {
	"cycle", "guest", "decision", "reason", "from", "to", "nodes", "mems", "cpus",
	"load_before", "load_after", "migrate_mib", "mem_demand_bytes", "cpu_demand",
	"locality_before", "detail", "dry_run", "skip_reason", "locality_source",
	"mem_in_cpuset_before", "threads", "busy_threads", "runtime", "kind", "outcome",
	"message", "duration_ms", "mems_after", "id", "time",
};
#define NKEYS (sizeof(KEYS) / sizeof(KEYS[0]))
#define CODE_GUEST (NKEYS + 1)
_Static_assert(CODE_GUEST <= 0x1f, "codes are the bytes 0x01..0x1f");

static bool is_key_code(char c)
{
	return (unsigned char)c >= 1 && (unsigned char)c <= NKEYS;
}

/* The end of the JSON string that starts at S (S[0] == '"'): the
 * closing quote. */
static const char *string_end(const char *s)
{
	for (s++; *s && *s != '"'; s++)
		if (*s == '\\' && s[1])
			s++;
	return s;
}

/* The code of the key "S..E" (S, E: its quotes) when E is followed by a
 * colon and the key is in KEYS; 0 if not. */
static unsigned key_code(const char *s, const char *e)
{
	size_t len = (size_t)(e - s - 1);

	if (e[0] != '"' || e[1] != ':')
		return 0;
	for (unsigned i = 0; i < NKEYS; i++)
		if (strlen(KEYS[i]) == len && memcmp(KEYS[i], s + 1, len) == 0)
			return i + 1;
	return 0;
}

/* LINE (JSON text) of a record of GUEST packed into OUT (room for
 * strlen(LINE) + 1: packing never grows it); returns the packed length. */
static size_t pack(const char *line, const char *guest, char *out)
{
	static const char guest_key[] = "\"guest\":\"";
	size_t gl = strlen(guest);
	char *o = out;

	for (const char *s = line; *s;) {
		const char *e;
		unsigned c;

		if (*s != '"') {
			*o++ = *s++;
			continue;
		}
		/* "guest":"ID" with ID exactly as the guest filter has it */
		if (strncmp(s, guest_key, sizeof(guest_key) - 1) == 0 &&
		    strncmp(s + sizeof(guest_key) - 1, guest, gl) == 0 && s[sizeof(guest_key) - 1 + gl] == '"' &&
		    !memchr(guest, '\\', gl) && !memchr(guest, '"', gl)) {
			*o++ = (char)CODE_GUEST;
			s += sizeof(guest_key) + gl;
			continue;
		}
		e = string_end(s);
		if ((c = key_code(s, e))) {
			*o++ = (char)c;
			s = e + 2;
			continue;
		}
		/* a value (or a key not in the table), verbatim */
		if (*e)
			e++;
		memcpy(o, s, (size_t)(e - s));
		o += e - s;
		s = e;
	}
	*o = '\0';
	return (size_t)(o - out);
}

/* The JSON text of packed record P of GUEST; caller frees. */
static char *unpack(const char *p, const char *guest)
{
	size_t len = 0, gl = strlen(guest);
	char *out, *o;

	for (const char *s = p; *s; s++)
		len += is_key_code(*s) ? strlen(KEYS[*s - 1]) + 3 : *s == (char)CODE_GUEST ? gl + 10 : 1;
	o = out = xmalloc(len + 1);
	for (const char *s = p; *s; s++) {
		if (is_key_code(*s)) {
			size_t kl = strlen(KEYS[*s - 1]);

			*o++ = '"';
			memcpy(o, KEYS[*s - 1], kl);
			o += kl;
			*o++ = '"';
			*o++ = ':';
		} else if (*s == (char)CODE_GUEST) {
			memcpy(o, "\"guest\":\"", 9);
			memcpy(o + 9, guest, gl);
			o[9 + gl] = '"';
			o += gl + 10;
		} else
			*o++ = *s;
	}
	*o = '\0';
	return out;
}

char *declog_pack_text(const char *json, const char *guest)
{
	char *out = xmalloc(strlen(json) + 1);

	pack(json, guest, out);
	return out;
}

char *declog_unpack_text(const char *packed, const char *guest)
{
	return unpack(packed, guest);
}

static const char *rec_guest(const struct rec *r)
{
	return r->buf;
}

static const char *rec_packed(const struct rec *r)
{
	return r->buf + strlen(r->buf) + 1;
}

/* A file whose last line has no '\n' (a writer killed mid-record, or
 * another program's): end it, so the next record starts a line of its
 * own instead of gluing itself to that half. */
static void end_line(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);
	char c;

	if (end > 0 && pread(fd, &c, 1, end - 1) == 1 && c != '\n' && write(fd, "\n", 1) != 1)
		log_debug("decision log: cannot end its last line: %s", strerror(errno));
}

/* The file is appended to as root: opened relative to its directory,
 * which must be root's alone (another user who could write it could put
 * a symlink to any file there), never through a symlink, and only if it
 * is a regular file. */
static int open_file(const char *path, char *err, size_t errsz)
{
	const char *base;
	int dfd, fd;

	dfd = fs_open_parent_trusted("decision log", path, &base, err, errsz);
	if (dfd < 0)
		return dfd;
	fd = fs_openat_regular(dfd, base, O_RDWR | O_APPEND | O_CREAT, 0640);
	close(dfd);
	if (fd < 0)
		snprintf(err, errsz, "decision log %s: %s%s", path, strerror(-fd),
			 fd == -ELOOP ? " (a symlink: refused)" : fd == -EISDIR || fd == -EINVAL ?
			 " (not a regular file)" : "");
	else
		end_line(fd);
	return fd;
}

int declog_open(const char *path, unsigned ring_cap, struct declog **out, char *err, size_t errsz)
{
	struct declog *d;
	int fd = -1;

	if (path && *path) {
		fd = open_file(path, err, errsz);
		if (fd < 0)
			return fd;
	}
	d = xcalloc(1, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	d->fd = fd;
	d->next_id = 1;
	d->cap = ring_cap ? ring_cap : 1;
	d->ring = xcalloc(d->cap, sizeof(*d->ring));
	*out = d;
	return 0;
}

void declog_close(struct declog *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	for (unsigned i = 0; i < d->n; i++)
		free(d->ring[(d->head + i) % d->cap].buf);
	free(d->ring);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

int declog_reopen(struct declog *d, const char *path, char *err, size_t errsz)
{
	int fd = -1;

	if (path && *path) {
		fd = open_file(path, err, errsz);
		if (fd < 0)
			return fd;
	}
	pthread_mutex_lock(&d->lock);
	if (d->fd >= 0)
		close(d->fd);
	d->fd = fd;
	pthread_mutex_unlock(&d->lock);
	return 0;
}

static json_t *placement(const nodemask_t *nodes, const nodemask_t *mems, const cpumask_t *cpus)
{
	json_t *o = json_pack("{s:o, s:o}", "nodes", snapj_nodemask(nodes), "mems", snapj_nodemask(mems));

	if (cpus)
		json_object_set_new(o, "cpus", snapj_cpumask(cpus));
	return o;
}

json_t *declog_make(const struct snapshot *snap, const struct plan_item *it, const char *decision,
		    const struct apply_result *res, bool dry_run)
{
	const struct snap_guest *g = it->guest_idx < snap->nr_guests ? &snap->guests[it->guest_idx] : NULL;
	json_t *o;

	o = json_pack("{s:I, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:f, s:I, s:o, s:o, s:s, s:b}",
		      "cycle", (json_int_t)snap->seq,
		      "guest", it->guest_id,
		      "decision", decision,
		      "reason", move_reason_name(it->reason),
		      "from", placement(&it->from_nodes, &it->from_mems, g ? g->cpus : NULL),
		      "to", placement(&it->to_nodes, &it->to_mems, it->to_cpus),
		      "load_before", snapj_real_or_null(it->load_before),
		      "load_after", snapj_real_or_null(it->load_after),
		      "migrate_mib", round((double)it->migrate_bytes / 1048576.0 * 10.0) / 10.0,
		      "mem_demand_bytes", (json_int_t)it->mem_demand,
		      "cpu_demand", snapj_real_or_null(it->cpu_demand),
		      "locality_before", snapj_real_or_null(it->locality_before),
		      "detail", it->detail,
		      "dry_run", dry_run);
	if (!o)
		return NULL;
	if (it->kind == PLAN_SKIP)
		json_object_set_new(o, "skip_reason", json_string(skip_reason_name(it->skip)));
	/* how long the move holds the guest still (cooldown = auto: by its cost) */
	if (it->kind == PLAN_MOVE && it->cooldown_ns > 0)
		json_object_set_new(o, "cooldown_s", json_real((double)it->cooldown_ns / 1e9));
	if (g) {
		/* locality_before is where the threads run; the old "memory
		 * inside the cpuset" ratio stays beside it, named for what it is. */
		json_object_set_new(o, "locality_source", json_string(snap_loc_source_name(g->locality_source)));
		json_object_set_new(o, "mem_in_cpuset_before", snapj_real_or_null(g->mem_in_cpuset));
		/* What bounds the nodes it may be given (policy.h). */
		json_object_set_new(o, "threads", json_integer(g->nr_threads));
		json_object_set_new(o, "busy_threads", g->busy_measured ? json_integer(g->busy_threads) : json_null());
		json_object_set_new(o, "runtime", json_string(g->runtime));
		json_object_set_new(o, "kind", json_string(snap_kind_name(g->kind)));
	}
	if (res) {
		json_object_set_new(o, "outcome", json_string(apply_status_name(res->status)));
		json_object_set_new(o, "message", json_string(res->msg));
		json_object_set_new(o, "duration_ms", snapj_real_or_null(res->duration_s * 1000.0));
		/* Soft memory binding: the memory went to (or already was on)
		 * "to.mems"; the guest's cpuset.mems are this after the move. */
		if (res->mems_loosened)
			json_object_set_new(o, "mems_after", snapj_nodemask(&res->mems_after));
		if (res->err)
			json_object_set_new(o, "errno", json_string(strerrorname_np(-res->err) ?
								    strerrorname_np(-res->err) : "?"));
	}
	return o;
}

void declog_time_sec(time_t sec, int ms, char *buf, size_t sz)
{
	struct tm tm;

	gmtime_r(&sec, &tm);
	snprintf(buf, sz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

void declog_time(int64_t real_ns, char *buf, size_t sz)
{
	declog_time_sec((time_t)(real_ns / 1000000000LL), (int)((real_ns / 1000000LL) % 1000), buf, sz);
}

static json_t *time_string(int64_t real_ns)
{
	char buf[64];

	declog_time(real_ns, buf, sizeof(buf));
	return json_string(buf);
}

json_t *declog_make_cycle(uint64_t seq, const struct declog_cycle_time *t, bool dry_run)
{
	static const char *const names[DECLOG_NR_PHASES] = { "acquire", "decide", "apply", "record" };
	json_t *wall = json_object(), *cpu = json_object(), *rec;
	double wt = 0, ct = 0;

	for (unsigned i = 0; i < DECLOG_NR_PHASES; i++) {
		/* a clock read twice can step back by nothing worth showing */
		double w = t->wall_s[i] > 0 ? t->wall_s[i] : 0, c = t->cpu_s[i] > 0 ? t->cpu_s[i] : 0;

		json_object_set_new(wall, names[i], json_real(w));
		json_object_set_new(cpu, names[i], json_real(c));
		wt += w;
		ct += c;
	}
	json_object_set_new(wall, "total", json_real(wt));
	json_object_set_new(cpu, "total", json_real(ct));
	rec = json_pack("{s:I, s:s, s:{s:o, s:o}}", "cycle", (json_int_t)seq, "decision", "cycle", "engine_time",
			"wall_s", wall, "cpu_s", cpu);
	if (rec && dry_run)
		json_object_set_new(rec, "dry_run", json_true());
	return rec;
}

int64_t declog_add(struct declog *d, json_t *rec)
{
	int64_t now = clock_real_ns();
	struct rec *slot;
	int64_t id;
	int ret = 0;
	char *line;
	size_t len;

	if (!rec)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	id = (int64_t)d->next_id++;
	json_object_set_new(rec, "id", json_integer(id));
	json_object_set_new(rec, "time", time_string(now));
	line = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
	if (!line) {
		pthread_mutex_unlock(&d->lock);
		json_decref(rec);
		return -ENOMEM;
	}
	len = strlen(line);
	if (d->fd >= 0) {
		/* One write() per record, newline included, so concurrent
		 * readers of the file never see half a line. */
		struct iovec iov[2] = { { line, len }, { (void *)"\n", 1 } };
		off_t end = lseek(d->fd, 0, SEEK_END);
		ssize_t w = writev(d->fd, iov, 2);

		if (w < 0)
			ret = -errno;
		else if ((size_t)w != len + 1)
			ret = -EIO;
		/* A write cut short (a full disk) is cut back to where it
		 * started: half a record must not glue itself to the next. */
		if (w > 0 && ret < 0 && end >= 0 && ftruncate(d->fd, end) < 0)
			log_debug("decision log: cannot cut a short write back: %s", strerror(errno));
	}
	if (d->n == d->cap) {
		slot = &d->ring[d->head];
		d->bytes -= strlen(rec_guest(slot)) + strlen(rec_packed(slot)) + 2;
		free(slot->buf);
		d->head = (d->head + 1) % d->cap;
	} else {
		slot = &d->ring[(d->head + d->n) % d->cap];
		d->n++;
	}
	slot->id = (uint64_t)id;
	slot->ms = now / 1000000;
	{
		const char *guest = json_string_value(json_object_get(rec, "guest")) ?: "";
		size_t gl = strlen(guest), pl;
		char *tmp = xmalloc(len + 1);

		/* packed into a scratch buffer first: the record's own is
		 * allocated at its packed size */
		pl = pack(line, guest, tmp);
		slot->buf = xmalloc(gl + 1 + pl + 1);
		memcpy(slot->buf, guest, gl + 1);
		memcpy(slot->buf + gl + 1, tmp, pl + 1);
		d->bytes += gl + 1 + pl + 1;
		free(tmp);
	}
	pthread_mutex_unlock(&d->lock);
	free(line);
	json_decref(rec);
	return ret < 0 ? ret : id;
}

static bool rec_matches(const struct rec *r, uint64_t since_id, int64_t since_ms, const char *guest)
{
	return r->id > since_id && r->ms > since_ms && (!guest || strcmp(rec_guest(r), guest) == 0);
}

/* The matching records from ring position FIRST on, oldest first, at most
 * LIMIT, decoded; *MORE (if not NULL) says whether another one matches
 * after them. Only the records returned are decoded: a jansson tree of a
 * record costs several KiB, and a filter on the text keeps a request's
 * memory to its page however full the ring is. Called with the lock held. */
static json_t *collect(struct declog *d, unsigned first, uint64_t since_id, int64_t since_ms, unsigned limit,
		       const char *guest, bool *more)
{
	json_t *arr = json_array();
	unsigned i;

	for (i = first; i < d->n && json_array_size(arr) < limit; i++) {
		const struct rec *r = &d->ring[(d->head + i) % d->cap];
		json_t *o;

		if (!rec_matches(r, since_id, since_ms, guest))
			continue;
		char *text = unpack(rec_packed(r), rec_guest(r));

		o = json_loads(text, 0, NULL);
		free(text);
		if (o)
			json_array_append_new(arr, o);
	}
	if (more) {
		*more = false;
		for (; i < d->n && !*more; i++)
			*more = rec_matches(&d->ring[(d->head + i) % d->cap], since_id, since_ms, guest);
	}
	return arr;
}

json_t *declog_query(struct declog *d, uint64_t since_id, int64_t since_ms, unsigned limit, const char *guest,
		     bool *more)
{
	json_t *arr;

	pthread_mutex_lock(&d->lock);
	arr = collect(d, 0, since_id, since_ms, limit, guest, more);
	pthread_mutex_unlock(&d->lock);
	return arr;
}

json_t *declog_query_newest(struct declog *d, unsigned limit, const char *guest)
{
	json_t *arr;
	unsigned first, found = 0;

	/* Only the records returned are decoded: walk back from the newest
	 * to find where the LIMIT newest matching ones start. */
	pthread_mutex_lock(&d->lock);
	for (first = d->n; first > 0 && found < limit; first--)
		found += rec_matches(&d->ring[(d->head + first - 1) % d->cap], 0, INT64_MIN, guest);
	arr = collect(d, first, 0, INT64_MIN, limit, guest, NULL);
	pthread_mutex_unlock(&d->lock);
	return arr;
}

size_t declog_bytes(struct declog *d, unsigned *nr_records)
{
	size_t b;

	pthread_mutex_lock(&d->lock);
	b = d->bytes + (size_t)d->cap * sizeof(*d->ring);
	if (nr_records)
		*nr_records = d->n;
	pthread_mutex_unlock(&d->lock);
	return b;
}

uint64_t declog_last_id(struct declog *d)
{
	uint64_t id;

	pthread_mutex_lock(&d->lock);
	id = d->next_id - 1;
	pthread_mutex_unlock(&d->lock);
	return id;
}
