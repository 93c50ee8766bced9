/* ctl_top.c — `numaorchctl top`.
 *
 * Plain ANSI/VT100 escapes and termios, not ncurses: the view is a few
 * tables redrawn whole on every refresh, which needs only "home, clear to
 * end of line, clear below", reverse video, the alternate screen and a
 * hidden cursor; every terminal with cursor addressing (xterm and its
 * kin, the Linux console, tmux, screen) has those. What ncurses would add
 * is covered here: a resize is SIGWINCH and TIOCGWINSZ (the whole screen
 * redrawn at the new size), and a terminal without cursor addressing
 * (TERM unset or "dumb") gets the plain --once screen instead of escapes. Each refresh reads GET /v1/status,
 * /v1/nodes, /v1/guests, /v1/migrations (the memory mover's jobs) and the
 * decisions new since the last refresh (GET /v1/decisions?since=ID), so
 * 1000 guests cost one list a refresh.
 */
#include "ctl_top.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ctl_fmt.h"

enum sort_key { SORT_LOCALITY = 0, SORT_CPU, SORT_MEM, SORT_NAME, SORT_DECISION, NR_SORT };
static const char *const sort_names[NR_SORT] = { "locality", "cpu", "mem", "name", "decision" };
static const char sort_keys[NR_SORT] = { 'l', 'c', 'm', 'n', 'd' };

struct tguest {
	json_t *g;            /* borrowed from top.guests */
	json_t *last;         /* newest decision record, borrowed from top.last; NULL: none */
	json_t *mig;          /* its queued or running migration job, NULL: none */
	char *id;             /* its id as printed (escaped once a refresh), owned */
	double loc, cpu, mem; /* the sort keys, NAN when absent */
	long long dec_id;     /* its newest decision's id, -1: none */
};

struct top {
	const struct ctl_conn *conn;
	json_t *status, *nodes, *guests;
	json_t *migrations;   /* GET /v1/migrations, NULL: the agent has none (older, or no route) */
	json_t *last;         /* guest id (as sent) -> newest decision record */
	long long last_id;    /* newest decision id seen */
	char err[512];        /* why the last refresh failed, "" if it did not */
	bool bad_reply;       /* it failed on what the agent answered, not on reaching it */
	struct tguest *tg;
	size_t ntg;
	enum sort_key sort;
	double delay_s;
	size_t scroll;
	unsigned width, height;
};

/* ---- output buffer ---------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;

		while (b->len + n + 1 > nc)
			nc *= 2;
		b->p = realloc(b->p, nc);
		if (!b->p)
			abort();
		b->cap = nc;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* Display columns of UTF-8 text (one per code point: what the agent
 * sends is ASCII plus a few arrows and comparison signs). */
static size_t text_cols(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* S in exactly W columns: cut (marked with '~') or padded. */
static void sb_cell(struct sbuf *b, const char *s, size_t w, bool right)
{
	size_t cols = text_cols(s), i = 0, c = 0;

	if (cols <= w) {
		if (right)
			for (size_t k = cols; k < w; k++)
				sb_add(b, " ", 1);
		sb_puts(b, s);
		if (!right)
			for (size_t k = cols; k < w; k++)
				sb_add(b, " ", 1);
		return;
	}
	if (!w)
		return;
	/* W - 1 code points, then the mark. */
	while (s[i] && c < w - 1) {
		i++;
		while (((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		c++;
	}
	sb_add(b, s, i);
	sb_add(b, "~", 1);
}

/* ---- formatting ------------------------------------------------------- */

/* "1.2G", "512M", "64K", "0": four or five columns. */
static const char *short_bytes(double v, char *buf, size_t sz)
{
	static const char units[] = "BKMGTP";
	unsigned u = 0;

	if (isnan(v)) {
		snprintf(buf, sz, "-");
		return buf;
	}
	while (v >= 1000 && u < 5) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, sz, "%.0f", v);
	else
		snprintf(buf, sz, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
	return buf;
}

static const char *pct(double v, char *buf, size_t sz)
{
	if (isnan(v))
		snprintf(buf, sz, "-");
	else
		snprintf(buf, sz, "%.0f%%", v * 100);
	return buf;
}

/* Seconds since an RFC 3339 UTC time ("2026-12-01T09:16:56.294Z"); NAN if
 * it does not parse. */
static double age_of(const char *t)
{
	struct tm tm = { 0 };

	if (!t || !strptime(t, "%Y-%m-%dT%H:%M:%S", &tm))
		return NAN;
	return difftime(time(NULL), timegm(&tm));
}

static const char *short_age(double s, char *buf, size_t sz)
{
	if (isnan(s))
		snprintf(buf, sz, "?");
	else if (s < 0)
		snprintf(buf, sz, "0s");
	else if (s < 120)
		snprintf(buf, sz, "%.0fs", s);
	else if (s < 7200)
		snprintf(buf, sz, "%.0fm", s / 60);
	else if (s < 172800)
		snprintf(buf, sz, "%.0fh", s / 3600);
	else
		snprintf(buf, sz, "%.0fd", s / 86400);
	return buf;
}

/* ---- fetching --------------------------------------------------------- */

static json_t *get_json(struct top *t, const char *path)
{
	struct ctl_reply rep;
	char err[512];
	json_t *j;
	int r;

	r = ctl_request(t->conn, "GET", path, NULL, CTL_JSON_MAX, &rep, err, sizeof(err));
	if (r < 0) {
		snprintf(t->err, sizeof(t->err), "%s", fmt_safe(err));
		t->bad_reply = r == -EFBIG;
		return NULL;
	}
	j = json_loadb(rep.body, rep.len, 0, NULL);
	if (rep.status != 200 || !json_is_object(j)) {
		const char *detail = jstr(j, "detail");

		snprintf(t->err, sizeof(t->err), "GET %s: HTTP %ld%s%s", path, rep.status, *detail ? ": " : "",
			 detail);
		t->bad_reply = true;
		json_decref(j);
		ctl_reply_free(&rep);
		return NULL;
	}
	ctl_reply_free(&rep);
	return j;
}

/* GET PATH and the pages after it (the agent sends at most 1000 guests
 * an answer; "next" is the cursor to pass as "after"), KEY's arrays
 * joined into the first answer. NULL and t->err on failure. */
static json_t *get_pages(struct top *t, const char *path, const char *key)
{
	json_t *j = get_json(t, path);

	for (unsigned page = 0; j && json_is_string(json_object_get(j, "next")); page++) {
		char *e = ctl_escape(json_string_value(json_object_get(j, "next")));
		char next[512];
		json_t *more;

		snprintf(next, sizeof(next), "%s%safter=%s", path, strchr(path, '?') ? "&" : "?", e);
		free(e);
		more = page + 1 < CTL_PAGES_MAX ? get_json(t, next) : NULL;
		if (!more) {
			if (page + 1 >= CTL_PAGES_MAX) {
				snprintf(t->err, sizeof(t->err), "GET %s: more than %u pages", path, CTL_PAGES_MAX);
				t->bad_reply = true;
			}
			json_decref(j);
			return NULL;
		}
		json_array_extend(json_object_get(j, key), json_object_get(more, key));
		json_object_set(j, "next", json_object_get(more, "next"));
		json_decref(more);
	}
	return j;
}

/* Keep the newest record of each guest from the decisions after
 * t->last_id (all of the newest 1000 the first time). */
static int fetch_decisions(struct top *t)
{
	for (int page = 0; page < 20; page++) {
		char path[96];
		json_t *j, *arr, *d;
		size_t i;
		long long server_last;

		if (t->last_id > 0)
			snprintf(path, sizeof(path), "/v1/decisions?since=%lld&limit=1000", t->last_id);
		else
			snprintf(path, sizeof(path), "/v1/decisions?limit=1000");
		j = get_json(t, path);
		if (!j)
			return -1;
		server_last = jint(j, "last_id");
		if (server_last < t->last_id) {
			/* The agent restarted: its ids start over. */
			json_object_clear(t->last);
			t->last_id = 0;
			json_decref(j);
			continue;
		}
		arr = json_object_get(j, "decisions");
		json_array_foreach(arr, i, d) {
			const char *g = json_string_value(json_object_get(d, "guest"));

			if (g && *g)
				json_object_set(t->last, g, d);
			if (jint(d, "id") > t->last_id)
				t->last_id = jint(d, "id");
		}
		if (json_array_size(arr) < 1000 || t->last_id >= server_last) {
			if (t->last_id < server_last)
				t->last_id = server_last;
			json_decref(j);
			return 0;
		}
		json_decref(j);
	}
	return 0;
}

static int cmp_name(const struct tguest *a, const struct tguest *b)
{
	return strcmp(a->id, b->id);
}

static enum sort_key g_sort; /* for qsort's comparator */

static int cmp_guest(const void *pa, const void *pb)
{
	const struct tguest *a = pa, *b = pb;
	double x, y;

	switch (g_sort) {
	case SORT_LOCALITY: /* least local first; unknown last */
		x = a->loc;
		y = b->loc;
		if (isnan(x) != isnan(y))
			return isnan(x) ? 1 : -1;
		if (x != y && !isnan(x))
			return x < y ? -1 : 1;
		break;
	case SORT_CPU:
	case SORT_MEM: /* biggest first */
		x = g_sort == SORT_CPU ? a->cpu : a->mem;
		y = g_sort == SORT_CPU ? b->cpu : b->mem;
		if (isnan(x))
			x = -1;
		if (isnan(y))
			y = -1;
		if (x != y)
			return x > y ? -1 : 1;
		break;
	case SORT_DECISION: /* newest decision first; none last */
		x = (double)a->dec_id;
		y = (double)b->dec_id;
		if (x != y)
			return x > y ? -1 : 1;
		break;
	default:
		break;
	}
	return cmp_name(a, b);
}

static bool is_live(json_t *m)
{
	return strcmp(jstr(m, "state"), "running") == 0 || strcmp(jstr(m, "state"), "queued") == 0;
}

static void rows_free(struct top *t)
{
	for (size_t i = 0; i < t->ntg; i++)
		free(t->tg[i].id);
	free(t->tg);
	t->tg = NULL;
	t->ntg = 0;
}

/* The rows of the guests panel: each guest with its newest decision and
 * its live job, found by id in a map (a loop over every job for every
 * guest took seconds with thousands of each), and its sort keys read
 * once; then sorted. */
static void build_rows(struct top *t)
{
	json_t *arr = json_object_get(t->guests, "guests"), *g, *m;
	json_t *live = json_object(); /* guest id -> its live job */
	size_t i;

	rows_free(t);
	json_array_foreach(json_object_get(t->migrations, "migrations"), i, m) {
		const char *gid = json_string_value(json_object_get(m, "guest"));

		/* the last live one listed, as before */
		if (gid && is_live(m))
			json_object_set(live, gid, m);
	}
	t->ntg = json_array_size(arr);
	t->tg = calloc(t->ntg ? t->ntg : 1, sizeof(*t->tg));
	if (!t->tg)
		abort();
	json_array_foreach(arr, i, g) {
		struct tguest *r = &t->tg[i];
		const char *gid = json_string_value(json_object_get(g, "id"));

		r->g = g;
		r->id = fmt_safe_dup(gid);
		r->last = gid ? json_object_get(t->last, gid) : NULL;
		r->mig = gid ? json_object_get(live, gid) : NULL;
		r->loc = jnum(g, "locality");
		r->cpu = jnum(g, "cpu_use");
		r->mem = jnum(g, "mem_total_bytes");
		r->dec_id = r->last ? jint(r->last, "id") : -1;
	}
	/* the jobs stay in t->migrations, which outlives the rows */
	json_decref(live);
	g_sort = t->sort;
	qsort(t->tg, t->ntg, sizeof(*t->tg), cmp_guest);
}

/* One refresh; on failure the previous data stays and t->err says why. */
static int refresh(struct top *t)
{
	json_t *st, *nd, *gs;

	t->err[0] = '\0';
	t->bad_reply = false;
	st = get_json(t, "/v1/status");
	nd = st ? get_json(t, "/v1/nodes") : NULL;
	gs = nd ? get_pages(t, "/v1/guests", "guests") : NULL;
	if (!gs || fetch_decisions(t) < 0) {
		json_decref(st);
		json_decref(nd);
		json_decref(gs);
		return -1;
	}
	json_decref(t->status);
	json_decref(t->nodes);
	json_decref(t->guests);
	t->status = st;
	t->nodes = nd;
	t->guests = gs;
	/* Optional: an agent without the route (older) shows no migrations. */
	json_decref(t->migrations);
	t->migrations = get_json(t, "/v1/migrations");
	t->err[0] = '\0';
	build_rows(t);
	return 0;
}

/* ---- drawing ---------------------------------------------------------- */

/* A line of at most WIDTH columns from FMT (cut with '~'). */
static void line(struct sbuf *b, unsigned width, bool ansi, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void line(struct sbuf *b, unsigned width, bool ansi, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (text_cols(buf) > width)
		sb_cell(b, buf, width, false);
	else
		sb_puts(b, buf);
	sb_puts(b, ansi ? "\033[K\r\n" : "\n");
}

static void draw_header(struct top *t, struct sbuf *b, bool ansi)
{
	json_t *s = t->status, *lc = json_object_get(s, "last_cycle"), *tot = json_object_get(s, "totals");
	json_t *gs = json_object_get(s, "guests");
	char up[32], ago[16], mig[16], now[16];
	time_t tt = time(NULL);
	struct tm tm;

	localtime_r(&tt, &tm);
	strftime(now, sizeof(now), "%H:%M:%S", &tm);
	line(b, t->width, ansi, "%s numaorchd %s, up %s, %s%s; cycle %lld: %.0f ms, %s ago", now, jstr(s, "version"),
	     fmt_duration(jnum(s, "uptime_s"), up, sizeof(up)), jstr(s, "mode"),
	     json_is_true(json_object_get(s, "dry_run")) ? " (dry run)" : "", jint(lc, "seq"),
	     jnum(lc, "duration_s") * 1e3, short_age(age_of(jstr(lc, "time")), ago, sizeof(ago)));
	line(b, t->width, ansi, "guests %lld (%lld VMs), moves %lld, failed %lld, skipped %lld, migrated %s; libvirt %s",
	     jint(gs, "total"), jint(gs, "vms"), jint(tot, "moves"), jint(tot, "move_failures"),
	     jint(tot, "moves_skipped"), short_bytes(jnum(tot, "migrated_mib") * 1048576.0, mig, sizeof(mig)),
	     jstr(json_object_get(s, "libvirt"), "state"));
}

/* Bytes still to move into and out of a node. */
struct flow {
	long long node;
	double in, out;
};

static int cmp_flow(const void *pa, const void *pb)
{
	const struct flow *a = pa, *b = pb;

	return (a->node > b->node) - (a->node < b->node);
}

/* What the live jobs of MIGRATIONS (GET /v1/migrations) still have to move
 * into and out of each node, one entry a node sorted by node (*N of them;
 * free() it): each job's sources say what each node has left to give and
 * which node takes it. A queued job has no sources yet (the mover counts
 * them when it starts): nothing moves. One pass over the jobs, so that
 * each node's row finds its sums by binary search. */
static struct flow *flows(json_t *migrations, size_t *n)
{
	json_t *m, *src;
	struct flow *f = NULL;
	size_t i, k, nf = 0, cap = 0, w = 0;

	json_array_foreach(json_object_get(migrations, "migrations"), i, m) {
		if (!is_live(m))
			continue;
		json_array_foreach(json_object_get(m, "sources"), k, src) {
			double left = jnum(src, "left_mib") * 1048576.0;

			if (isnan(left))
				continue;
			if (nf + 2 > cap) {
				cap = cap ? cap * 2 : 16;
				f = realloc(f, cap * sizeof(*f));
				if (!f)
					abort();
			}
			f[nf++] = (struct flow){ .node = jint(src, "node"), .out = left };
			f[nf++] = (struct flow){ .node = jint(src, "to"), .in = left };
		}
	}
	if (nf)
		qsort(f, nf, sizeof(*f), cmp_flow);
	for (i = 0; i < nf; i++) {
		if (w && f[w - 1].node == f[i].node) {
			f[w - 1].in += f[i].in;
			f[w - 1].out += f[i].out;
		} else {
			f[w++] = f[i];
		}
	}
	*n = w;
	return f;
}

static void draw_nodes(struct sbuf *b, json_t *nodes, json_t *migrations, unsigned width, bool ansi,
		       unsigned max_rows)
{
	json_t *arr = json_object_get(nodes, "nodes"), *n;
	/* "-": no mover (memory moves with cpuset.mems writes, unseen here) */
	bool mover = json_is_true(json_object_get(migrations, "mover"));
	size_t i, nf;
	struct flow *f = flows(migrations, &nf);

	line(b, width, ansi, "%s%-5s %5s %5s %6s %7s %7s %6s %7s %7s%s", ansi ? "\033[7m" : "", "NODE", "CPUS",
	     "BUSY", "LOAD", "FREE", "TOTAL", "GUESTS", "MIG IN", "MIG OUT", ansi ? "\033[K\033[0m" : "");
	json_array_foreach(arr, i, n) {
		char busy[16], load[16], fr[16], tot[16], mi[16], mo[16];
		double l = jnum(n, "load_cpus"), in = 0, out = 0;
		struct flow key = { .node = jint(n, "id") }, *hit;

		if (i >= max_rows) {
			line(b, width, ansi, "  (%zu more nodes)", json_array_size(arr) - i);
			break;
		}
		if (isnan(l))
			snprintf(load, sizeof(load), "-");
		else
			snprintf(load, sizeof(load), "%.1f", l);
		hit = nf ? bsearch(&key, f, nf, sizeof(*f), cmp_flow) : NULL;
		if (hit) {
			in = hit->in;
			out = hit->out;
		}
		line(b, width, ansi, "%-5lld %5lld %5s %6s %7s %7s %6zu %7s %7s", jint(n, "id"), jint(n, "nr_cpus"),
		     pct(jnum(n, "busy"), busy, sizeof(busy)), load,
		     short_bytes(jnum(n, "mem_free_bytes"), fr, sizeof(fr)),
		     short_bytes(jnum(n, "mem_total_bytes"), tot, sizeof(tot)),
		     json_array_size(json_object_get(n, "guests")),
		     mover ? short_bytes(in, mi, sizeof(mi)) : "-", mover ? short_bytes(out, mo, sizeof(mo)) : "-");
	}
	free(f);
}

char *ctl_top_nodes_text(json_t *nodes, json_t *migrations, unsigned width, unsigned max_rows)
{
	struct sbuf b = { 0 };

	draw_nodes(&b, nodes, migrations, width, false, max_rows);
	if (!b.p)
		sb_puts(&b, "");
	return b.p;
}

/* The guests panel's columns, in screen order: one table drives the
 * header and every row. */
enum gcol { GC_ID, GC_RT, GC_NODES, GC_LOC, GC_CPU, GC_MEM, GC_DEC, GC_N };

static const struct {
	const char *title;
	bool right;            /* numbers align right */
} gcol_def[GC_N] = {
	[GC_ID] = { "GUEST", false },
	[GC_RT] = { "RUNTIME", false },
	[GC_NODES] = { "NODES", false },
	[GC_LOC] = { "LOC", true },
	[GC_CPU] = { "CPU", true },
	[GC_MEM] = { "MEM/NODE", false },
	[GC_DEC] = { "LAST DECISION", false },
};

struct gcols {
	size_t w[GC_N];
};

/* Column widths of the guests panel for a terminal WIDTH wide: the
 * fixed columns, then what is left shared by id, memory and decision. */
static void guest_cols(unsigned width, struct gcols *c)
{
	size_t fixed, left;

	c->w[GC_RT] = width >= 100 ? 10 : 7;
	c->w[GC_NODES] = 5;
	c->w[GC_LOC] = 5;
	c->w[GC_CPU] = 5;
	fixed = c->w[GC_RT] + c->w[GC_NODES] + c->w[GC_LOC] + c->w[GC_CPU] + (GC_N - 1); /* separating spaces */
	left = width > fixed + 40 ? width - fixed : 40;
	/* 80 columns: id 17, memory 14, decision the rest (21) */
	c->w[GC_ID] = left * 36 / 100;
	if (c->w[GC_ID] > 48)
		c->w[GC_ID] = 48;
	c->w[GC_MEM] = left * 28 / 100;
	if (c->w[GC_MEM] > 32)
		c->w[GC_MEM] = 32;
	c->w[GC_DEC] = left - c->w[GC_ID] - c->w[GC_MEM];
}

/* One line of the panel: CELL[k] in column k, one space between. */
static void gcols_row(struct sbuf *b, const struct gcols *c, const char *const cell[GC_N])
{
	for (unsigned k = 0; k < GC_N; k++) {
		if (k)
			sb_puts(b, " ");
		sb_cell(b, cell[k], c->w[k], gcol_def[k].right);
	}
}

static void mem_text(json_t *g, char *buf, size_t sz)
{
	json_t *m = json_object_get(g, "mem_bytes_by_node"), *v;
	const char *k;
	size_t len = 0;

	buf[0] = '\0';
	json_object_foreach(m, k, v) {
		char b[16];
		double x = json_number_value(v);

		/* Nodes with less than 1 MiB of it are noise at this width. */
		if (x < 1048576.0)
			continue;
		len += (size_t)snprintf(buf + len, len < sz ? sz - len : 0, "%s%s:%s", len ? " " : "", fmt_safe(k),
					short_bytes(x, b, sizeof(b)));
		if (len >= sz)
			break;
	}
	if (!buf[0])
		snprintf(buf, sz, "-");
}

static void decision_text(json_t *d, bool wide, char *buf, size_t sz)
{
	const char *why;
	char ago[16];

	if (!d) {
		snprintf(buf, sz, "-");
		return;
	}
	why = *jstr(d, "skip_reason") ? jstr(d, "skip_reason") : jstr(d, "reason");
	/* the age first: a narrow column cuts the end of the reason */
	snprintf(buf, sz, "%s %s %s%s%s", short_age(age_of(jstr(d, "time")), ago, sizeof(ago)), jstr(d, "decision"),
		 why, wide ? ": " : "", wide ? jstr(d, "detail") : "");
}

/* "moving 0>2 45% 12M/s 3s": a live job, shown instead of the decision. */
static void migration_text(json_t *m, char *buf, size_t sz)
{
	double done = jnum(m, "done_mib"), left = jnum(m, "left_mib"), rate = jnum(m, "rate_mib_s");
	double eta = jnum(m, "eta_s"), all = done + left;
	char r[16], e[16];

	if (strcmp(jstr(m, "state"), "queued") == 0) {
		snprintf(buf, sz, "queued %s>%s %.0fM", jstr(m, "from"), jstr(m, "to"), isnan(left) ? 0 : left);
		return;
	}
	snprintf(r, sizeof(r), "%s/s", short_bytes(isnan(rate) ? NAN : rate * 1048576.0, e, sizeof(e)));
	snprintf(buf, sz, "moving %s>%s %.0f%% %s %s", jstr(m, "from"), jstr(m, "to"),
		 all > 0 ? 100 * done / all : 0.0, r, isnan(eta) ? "" : short_age(eta, e, sizeof(e)));
}

static void draw_guests(struct top *t, struct sbuf *b, bool ansi, size_t rows)
{
	struct gcols c;
	const char *cell[GC_N];
	char loc_s[16], cpu_s[16], mem_s[1024], dec_s[1024];

	guest_cols(t->width, &c);
	if (t->scroll + rows > t->ntg)
		t->scroll = t->ntg > rows ? t->ntg - rows : 0;
	if (ansi)
		sb_puts(b, "\033[7m");
	for (unsigned k = 0; k < GC_N; k++)
		cell[k] = gcol_def[k].title;
	gcols_row(b, &c, cell);
	sb_puts(b, ansi ? "\033[K\033[0m\r\n" : "\n");
	for (size_t i = t->scroll; i < t->ntg && i < t->scroll + rows; i++) {
		json_t *g = t->tg[i].g;
		double loc = jnum(g, "locality"), cpu = jnum(g, "cpu_use");

		cell[GC_ID] = t->tg[i].id;
		/* the one runtime name longer than a narrow column */
		cell[GC_RT] = c.w[GC_RT] < 10 && strcmp(jstr(g, "runtime"), "kubernetes") == 0 ? "k8s"
							: jstr(g, "runtime");
		cell[GC_NODES] = jstr(g, "cpu_nodes");
		pct(loc, loc_s, sizeof(loc_s));
		/* '~': estimated from its CPUs, not measured from its threads */
		if (!isnan(loc) && strcmp(jstr(g, "locality_source"), "estimate") == 0)
			strcat(loc_s, "~");
		cell[GC_LOC] = loc_s;
		if (isnan(cpu))
			snprintf(cpu_s, sizeof(cpu_s), "-");
		else
			snprintf(cpu_s, sizeof(cpu_s), "%.2f", cpu);
		cell[GC_CPU] = cpu_s;
		mem_text(g, mem_s, sizeof(mem_s));
		cell[GC_MEM] = mem_s;
		if (t->tg[i].mig)
			migration_text(t->tg[i].mig, dec_s, sizeof(dec_s));
		else
			decision_text(t->tg[i].last, c.w[GC_DEC] > 30, dec_s, sizeof(dec_s));
		cell[GC_DEC] = dec_s;
		gcols_row(b, &c, cell);
		sb_puts(b, ansi ? "\033[K\r\n" : "\n");
	}
}

char *ctl_top_guests_text(json_t *guests, json_t *migrations, json_t *last, const char *sort, unsigned width)
{
	struct top t = { .guests = guests, .migrations = migrations, .last = last, .width = width };
	struct sbuf b = { 0 };

	for (int s = 0; sort && s < NR_SORT; s++)
		if (strcmp(sort, sort_names[s]) == 0)
			t.sort = (enum sort_key)s;
	build_rows(&t);
	draw_guests(&t, &b, false, t.ntg);
	rows_free(&t);
	fmt_safe_release();
	if (!b.p)
		sb_puts(&b, "");
	return b.p;
}

static void draw(struct top *t, struct sbuf *b, bool ansi)
{
	size_t nnodes = json_array_size(json_object_get(t->nodes, "nodes")), rows, node_rows;

	if (ansi)
		sb_puts(b, "\033[H");
	if (!t->status) {
		line(b, t->width, ansi, "numaorchctl top: %s", t->err[0] ? t->err : "waiting for the agent");
		if (ansi)
			sb_puts(b, "\033[J");
		return;
	}
	draw_header(t, b, ansi);
	if (t->err[0])
		line(b, t->width, ansi, "%s(refresh failed: %s; showing the last data)%s", ansi ? "\033[1m" : "", t->err,
		     ansi ? "\033[0m" : "");
	else
		line(b, t->width, ansi, "%s", "");
	/* Nodes take at most a third of a small screen. */
	node_rows = ansi ? (t->height / 3 > 2 ? t->height / 3 - 1 : 1) : nnodes;
	draw_nodes(b, t->nodes, t->migrations, t->width, ansi, (unsigned)node_rows);
	line(b, t->width, ansi, "%s", "");
	if (ansi) {
		size_t used = 3 + 1 + (nnodes < node_rows ? nnodes : node_rows + 1) + 1 + 1 + 1;

		rows = t->height > used ? t->height - used : 0;
	} else {
		rows = t->ntg;
	}
	draw_guests(t, b, ansi, rows);
	if (ansi) {
		char f[256];

		snprintf(f, sizeof(f), "%zu-%zu of %zu guests, sort %s, every %gs | l c m n d: sort, "
			 "up/down/space: scroll, +/-: interval, q: quit", t->ntg ? t->scroll + 1 : 0,
			 t->scroll + rows < t->ntg ? t->scroll + rows : t->ntg, t->ntg, sort_names[t->sort], t->delay_s);
		/* the footer on the last line */
		sb_puts(b, "\033[J");
		{
			char pos[32];

			snprintf(pos, sizeof(pos), "\033[%u;1H\033[7m", t->height);
			sb_puts(b, pos);
		}
		sb_cell(b, f, t->width, false);
		sb_puts(b, "\033[0m");
	}
}

/* ---- terminal --------------------------------------------------------- */

static volatile sig_atomic_t quit_flag, winch_flag;
static struct termios saved_tio;
static bool tio_saved;

static void on_signal(int sig)
{
	if (sig == SIGWINCH)
		winch_flag = 1;
	else
		quit_flag = 1;
}

static void term_restore(void)
{
	static const char s[] = "\033[0m\033[?25h\033[?1049l";

	if (tio_saved) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
		tio_saved = false;
		if (write(STDOUT_FILENO, s, sizeof(s) - 1) < 0) {
			/* nothing left to tell */
		}
	}
}

static int term_setup(void)
{
	struct termios tio;
	struct sigaction sa;
	static const char s[] = "\033[?1049h\033[?25l\033[H\033[2J";

	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return -errno;
	tio = saved_tio;
	tio.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	tio.c_cc[VMIN] = 1;
	tio.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &tio) < 0)
		return -errno;
	tio_saved = true;
	atexit(term_restore);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: poll() returns at once on a resize or ^C */
	sigaction(SIGWINCH, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (write(STDOUT_FILENO, s, sizeof(s) - 1) < 0)
		return -errno;
	return 0;
}

static void term_size(struct top *t)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	t->width = 80;
	t->height = 24;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
		t->width = ws.ws_col;
		t->height = ws.ws_row;
	} else if (cols && atoi(cols) > 0) {
		t->width = (unsigned)atoi(cols);
	}
	if (t->width < 40)
		t->width = 40;
	if (t->height < 10)
		t->height = 10;
}

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

/* Keys read; returns true when the view must be redrawn. */
static bool handle_keys(struct top *t, bool *refetch)
{
	char buf[64];
	ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
	size_t page = t->height > 12 ? t->height - 12 : 1;
	bool redraw = false;

	for (ssize_t i = 0; i < n; i++) {
		char k = buf[i];

		if (k == '\033' && i + 2 < n && buf[i + 1] == '[') {
			char c = buf[i + 2];

			i += 2;
			if (c == 'A' && t->scroll > 0)
				t->scroll--;
			else if (c == 'B')
				t->scroll++;
			else if ((c == '5' || c == '6') && i + 1 < n && buf[i + 1] == '~') {
				i++;
				if (c == '5')
					t->scroll = t->scroll > page ? t->scroll - page : 0;
				else
					t->scroll += page;
			}
			redraw = true;
			continue;
		}
		switch (k) {
		case 'q':
		case 'Q':
			quit_flag = 1;
			return false;
		case ' ':
			t->scroll += page;
			break;
		case 'k':
			if (t->scroll > 0)
				t->scroll--;
			break;
		case 'j':
			t->scroll++;
			break;
		case 'g':
			t->scroll = 0;
			break;
		case '+':
			t->delay_s = t->delay_s < 60 ? t->delay_s * 2 : t->delay_s;
			break;
		case '-':
			t->delay_s = t->delay_s > 0.25 ? t->delay_s / 2 : t->delay_s;
			break;
		case 'r':
			*refetch = true;
			break;
		default:
			for (int s = 0; s < NR_SORT; s++)
				if (k == sort_keys[s]) {
					t->sort = (enum sort_key)s;
					t->scroll = 0;
					build_rows(t);
				}
			break;
		}
		redraw = true;
	}
	return redraw;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int ctl_top(const struct ctl_conn *c, const struct ctl_top_opts *o)
{
	struct top t = { .conn = c, .delay_s = o->delay_s > 0 ? o->delay_s : 2 };
	struct sbuf b = { 0 };
	const char *term = getenv("TERM");
	/* A terminal that cannot move its cursor (TERM unset or "dumb": an
	 * editor's shell buffer, a serial console without terminfo) would show
	 * the live view's escapes as text: it gets the plain screen. */
	bool dumb = !term || !*term || strcmp(term, "dumb") == 0;
	bool once = o->once || dumb || !isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO);
	double next;
	int rc = 0;

	if (o->sort) {
		int s;

		for (s = 0; s < NR_SORT; s++)
			if (strcmp(o->sort, sort_names[s]) == 0)
				break;
		if (s == NR_SORT) {
			fprintf(stderr, "numaorchctl: top --sort: must be locality, cpu, mem, name or decision, got \"%s\"\n",
				o->sort);
			return 2;
		}
		t.sort = (enum sort_key)s;
	}
	t.last = json_object();
	term_size(&t);
	if (once) {
		if (refresh(&t) < 0) {
			fprintf(stderr, "numaorchctl: %s\n", t.err);
			rc = t.bad_reply ? 1 : 3;
		} else {
			draw(&t, &b, false);
			write_all(b.p, b.len);
		}
		goto out;
	}
	if (term_setup() < 0) {
		fprintf(stderr, "numaorchctl: top: cannot set up the terminal: %s\n", strerror(errno));
		rc = 1;
		goto out;
	}
	refresh(&t);
	next = now_s() + t.delay_s;
	while (!quit_flag) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		double wait = next - now_s();
		bool refetch = false;
		int r;

		b.len = 0;
		draw(&t, &b, true);
		write_all(b.p, b.len);
		/* what this screen escaped; the rows keep their own ids */
		fmt_safe_release();
		r = poll(&pfd, 1, wait > 0 ? (int)(wait * 1000) + 1 : 0);
		if (quit_flag)
			break;
		if (winch_flag) {
			winch_flag = 0;
			term_size(&t);
			/* the old picture may be wider than the new screen */
			write_all("\033[2J", 4);
		}
		if (r > 0 && (pfd.revents & (POLLHUP | POLLERR)))
			break;
		if (r > 0 && (pfd.revents & POLLIN))
			handle_keys(&t, &refetch);
		if (refetch || now_s() >= next) {
			refresh(&t);
			next = now_s() + t.delay_s;
		}
	}
	term_restore();
out:
	free(b.p);
	rows_free(&t);
	json_decref(t.status);
	json_decref(t.nodes);
	json_decref(t.guests);
	json_decref(t.migrations);
	json_decref(t.last);
	return rc;
}
