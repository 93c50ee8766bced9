#include "cgwatch.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"

#define DEFAULT_MAX_WATCHES 65536
#define MAX_DEPTH 32
/* Looks for a missing root per arm_missing: a level deeper each (more
 * only while its path is created and removed again as we look). */
#define ARM_PASSES 64
#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_MODIFY | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK)
/* An ancestor of a missing root: only new directories matter there. Added
 * to what a directory already watched as part of a scope asks for. */
#define ANCHOR_MASK (IN_CREATE | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_MASK_ADD)

/* wd → directory, open addressing (wds only grow: an array indexed by wd
 * would grow with every guest that ever came and went). */
struct slot {
	int wd;                  /* 0: empty, -1: deleted */
	bool anchor;             /* only waits for a missing root below it */
	char *path;
};

struct cgwatch {
	int ifd, stopfd;
	pthread_t thread;
	cgwatch_prompt_fn prompt;
	void *ctx;
	unsigned max_watches;
	unsigned nroots;
	char **roots;
	bool *missing;           /* roots[i] does not exist (yet): an anchor waits for it */
	int *anchor_wd;          /* ... watching its nearest existing ancestor */
	struct slot *slots;
	unsigned cap, used, tomb;
	pthread_mutex_t lock;    /* stats only: the thread owns the rest */
	struct cgwatch_stats st;
};

bool cgwatch_event_prompts(uint32_t mask, const char *name)
{
	static const char *const files[] = { "cgroup.procs", "tasks", "cpuset.cpus", "cpuset.mems" };

	if (mask & IN_Q_OVERFLOW)
		return true;
	if (mask & IN_ISDIR)
		return (mask & (IN_CREATE | IN_DELETE)) != 0;
	if (!(mask & IN_MODIFY) || !name)
		return false;
	for (unsigned i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (strcmp(name, files[i]) == 0)
			return true;
	return false;
}

static unsigned slot_of(const struct cgwatch *w, int wd)
{
	return ((unsigned)wd * 2654435761u) & (w->cap - 1);
}

static struct slot *find(struct cgwatch *w, int wd)
{
	if (!w->cap)
		return NULL;
	for (unsigned i = slot_of(w, wd), n = 0; n < w->cap; i = (i + 1) & (w->cap - 1), n++) {
		if (w->slots[i].wd == 0)
			return NULL;
		if (w->slots[i].wd == wd)
			return &w->slots[i];
	}
	return NULL;
}

static void put(struct cgwatch *w, int wd, char *path, bool anchor);

static void grow(struct cgwatch *w)
{
	struct slot *old = w->slots;
	unsigned oldcap = w->cap;

	w->cap = w->cap ? w->cap * 2 : 256;
	w->slots = xcalloc(w->cap, sizeof(*w->slots));
	w->used = w->tomb = 0;
	for (unsigned i = 0; i < oldcap; i++)
		if (old[i].wd > 0)
			put(w, old[i].wd, old[i].path, old[i].anchor);
	free(old);
}

/* Takes PATH. ANCHOR: the directory is watched only for a missing root
 * to appear in it, not as part of a scope. */
static void put(struct cgwatch *w, int wd, char *path, bool anchor)
{
	struct slot *s = find(w, wd);

	if (s) {
		/* inotify gives the same wd for the same inode: a re-walk. A
		 * directory inside a scope stays one; an anchor that a scope's
		 * walk reaches becomes part of it. */
		if (s->anchor && !anchor)
			s->anchor = false;
		if (s->anchor == anchor) {
			free(s->path);
			s->path = path;
		} else {
			free(path);
		}
		return;
	}
	if ((w->used + w->tomb + 1) * 4 > w->cap * 3)
		grow(w);
	for (unsigned i = slot_of(w, wd);; i = (i + 1) & (w->cap - 1))
		if (w->slots[i].wd <= 0) {
			if (w->slots[i].wd < 0)
				w->tomb--;
			w->slots[i].wd = wd;
			w->slots[i].anchor = anchor;
			w->slots[i].path = path;
			w->used++;
			return;
		}
}

static void drop(struct cgwatch *w, int wd)
{
	struct slot *s = find(w, wd);

	if (!s)
		return;
	free(s->path);
	s->path = NULL;
	s->wd = -1;
	w->used--;
	w->tomb++;
}

static void set_watches(struct cgwatch *w)
{
	pthread_mutex_lock(&w->lock);
	w->st.watches = w->used;
	pthread_mutex_unlock(&w->lock);
}

/* Watch DIR and every directory below it. A directory created while we
 * walk is caught either by the walk or by its parent's watch. */
static void watch_tree(struct cgwatch *w, const char *dir, unsigned depth)
{
	DIR *d;
	struct dirent *de;
	int wd;

	if (depth > MAX_DEPTH)
		return;
	if (w->used >= w->max_watches) {
		pthread_mutex_lock(&w->lock);
		if (!w->st.limited)
			log_warn("cgroup watcher: %u directories watched, the most it may: guests below others "
				 "are noticed at the interval", w->max_watches);
		w->st.limited = true;
		pthread_mutex_unlock(&w->lock);
		return;
	}
	wd = inotify_add_watch(w->ifd, dir, WATCH_MASK);
	if (wd < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			log_debug("cgroup watcher: %s: %s", dir, strerror(errno));
		return;
	}
	put(w, wd, xstrdup(dir), false);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char sub[PATH_MAX];

		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub))
			continue;
		watch_tree(w, sub, depth + 1);
	}
	closedir(d);
}

/* Watch the nearest existing ancestor of missing root I (the
 * hierarchy's mount point at worst) for the next step towards it; *LEN:
 * the length of its path. 0, or -errno when no ancestor can be watched. */
static int arm_anchor(struct cgwatch *w, unsigned i, size_t *len)
{
	char dir[PATH_MAX];
	int wd = -1;

	errno = ENOENT;
	snprintf(dir, sizeof(dir), "%s", w->roots[i]);
	for (char *slash; wd < 0 && (slash = strrchr(dir, '/'));) {
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		wd = inotify_add_watch(w->ifd, dir, ANCHOR_MASK);
		if (wd < 0 && errno != ENOENT && errno != ENOTDIR)
			break;
		if (slash == dir)
			break;
	}
	if (wd < 0)
		return -errno;
	*len = strlen(dir);
	put(w, wd, xstrdup(dir), true);
	w->anchor_wd[i] = wd;
	return 0;
}

/* Whether PATH's nearest existing ancestor (or PATH itself) has a longer
 * path than LEN: a directory was created below an anchor of that length. */
static bool deeper_exists(const char *path, size_t len)
{
	char dir[PATH_MAX];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	while (strlen(dir) > len) {
		char *slash;

		if (stat(dir, &st) == 0)
			return true;
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return false;
		*slash = '\0';
	}
	return false;
}

/* A root that does not exist yet (a scope or parent created after the
 * daemon started: machine.slice before the first VM, a runtime's parent
 * before its first container) is waited for on its nearest existing
 * ancestor; every directory created there or below brings it one step
 * closer, until it exists and is watched as a scope. Anchors no missing
 * root needs any more are dropped: a busy ancestor (the hierarchy's root)
 * must not cost a wake-up per cgroup forever. Returns whether a missing
 * root appeared. */
static bool arm_missing(struct cgwatch *w)
{
	bool appeared = false;

	for (unsigned i = 0; i < w->nroots; i++) {
		/* A level created after the root's watch below failed and
		 * before the anchor's watch is armed sends its IN_CREATE to
		 * nobody (mkdir -p of a runtime's parent and its first
		 * container: test_cgwatch.c, 1 round in ~150 there). Once the
		 * anchor is armed every later level wakes us, so look once more
		 * whether a deeper one exists already; each pass goes at least
		 * a level deeper. */
		for (unsigned pass = 0; w->missing[i] && pass < ARM_PASSES; pass++) {
			size_t len = 0;
			int wd;

			w->anchor_wd[i] = -1;
			wd = inotify_add_watch(w->ifd, w->roots[i], WATCH_MASK);
			if (wd >= 0) {
				w->missing[i] = false;
				appeared = true;
				log_info("cgroup watcher: %s appeared: watching it", w->roots[i]);
				/* Its slot now: removed again before watch_tree's
				 * own watch (ENOENT, no slot), its IN_IGNORED would
				 * find none, and it would never be waited for again
				 * (test_cgwatch.c: a scope created and removed at
				 * once, then no watch at all). */
				put(w, wd, xstrdup(w->roots[i]), false);
				watch_tree(w, w->roots[i], 0);
				break;
			}
			if (errno != ENOENT && errno != ENOTDIR) {
				log_debug("cgroup watcher: %s: %s", w->roots[i], strerror(errno));
				break;
			}
			if (arm_anchor(w, i, &len) < 0) {
				log_debug("cgroup watcher: no ancestor of %s to watch: %s", w->roots[i],
					  strerror(errno));
				break;
			}
			if (!deeper_exists(w->roots[i], len))
				break;
		}
	}
	for (unsigned k = 0; k < w->cap; k++) {
		const struct slot *s = &w->slots[k];
		bool needed = false;

		if (s->wd <= 0 || !s->anchor)
			continue;
		for (unsigned i = 0; i < w->nroots && !needed; i++)
			needed = w->missing[i] && w->anchor_wd[i] == s->wd;
		if (!needed) {
			int wd = s->wd;

			/* Its IN_IGNORED finds no slot: fine. */
			drop(w, wd);
			inotify_rm_watch(w->ifd, wd);
		}
	}
	return appeared;
}

static bool any_missing(const struct cgwatch *w)
{
	for (unsigned i = 0; i < w->nroots; i++)
		if (w->missing[i])
			return true;
	return false;
}

static void watch_all(struct cgwatch *w)
{
	for (unsigned i = 0; i < w->nroots; i++) {
		struct stat st;

		if (stat(w->roots[i], &st) < 0 || !S_ISDIR(st.st_mode))
			w->missing[i] = true;
		else
			watch_tree(w, w->roots[i], 0);
	}
	arm_missing(w);
	set_watches(w);
}

static void prompt(struct cgwatch *w)
{
	pthread_mutex_lock(&w->lock);
	w->st.prompts++;
	pthread_mutex_unlock(&w->lock);
	w->prompt(w->ctx);
}

/* Directory PATH (inside a scope) was removed: forget its watches and
 * those of everything below it. On cgroup v1's cgroupfs an rmdir gives the
 * parent its IN_DELETE but the removed directory no IN_DELETE_SELF or
 * IN_IGNORED (on every kernel this was tried on), so its watch would pin
 * a kernel inotify watch and a slot for every guest that ever left. Where the
 * kernel does send IN_IGNORED (tmpfs, cgroup2), that event then finds no
 * slot and changes nothing. A root (or an anchor) among them is waited for
 * again where it would come back. */
static void forget_tree(struct cgwatch *w, const char *path)
{
	size_t n = strlen(path);
	bool rearm = false;

	for (unsigned k = 0; k < w->cap; k++) {
		struct slot *s = &w->slots[k];
		int wd = s->wd;

		if (wd <= 0 || strncmp(s->path, path, n) != 0 || (s->path[n] != '\0' && s->path[n] != '/'))
			continue;
		for (unsigned i = 0; i < w->nroots; i++)
			if (s->anchor ? w->missing[i] && w->anchor_wd[i] == wd : strcmp(s->path, w->roots[i]) == 0) {
				w->missing[i] = true;
				rearm = true;
			}
		drop(w, wd);
		inotify_rm_watch(w->ifd, wd);
	}
	if (rearm && arm_missing(w))
		prompt(w);
}

static void handle(struct cgwatch *w, const struct inotify_event *ev)
{
	const char *name = ev->len ? ev->name : NULL;

	if (ev->mask & IN_Q_OVERFLOW) {
		/* Events were lost, creations among them: walk again (the
		 * watches that exist are found again, same wd). */
		pthread_mutex_lock(&w->lock);
		w->st.overflows++;
		pthread_mutex_unlock(&w->lock);
		watch_all(w);
		prompt(w);
		return;
	}
	if (ev->mask & IN_IGNORED) {
		struct slot *s = find(w, ev->wd);
		bool rearm = false;

		/* A root removed (or an anchor's directory): wait for it again
		 * where it would come back. */
		for (unsigned i = 0; s && i < w->nroots; i++)
			if (s->anchor ? w->missing[i] && w->anchor_wd[i] == ev->wd : strcmp(s->path, w->roots[i]) == 0) {
				w->missing[i] = true;
				rearm = true;
			}
		drop(w, ev->wd);
		if (rearm && arm_missing(w))
			prompt(w);
		set_watches(w);
		return;
	}
	{
		struct slot *s = find(w, ev->wd);

		if (s && s->anchor) {
			/* Outside every scope: only a step towards a missing root
			 * counts, and only its arrival prompts. */
			if ((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR) && arm_missing(w))
				prompt(w);
			set_watches(w);
			return;
		}
		if ((ev->mask & IN_DELETE) && (ev->mask & IN_ISDIR) && name && s) {
			char sub[PATH_MAX];

			if (snprintf(sub, sizeof(sub), "%s/%s", s->path, name) < (int)sizeof(sub))
				forget_tree(w, sub);
			s = NULL; /* forget_tree may have grown the table */
			set_watches(w);
		}
		if ((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR) && name) {
			char sub[PATH_MAX];

			if (s && snprintf(sub, sizeof(sub), "%s/%s", s->path, name) < (int)sizeof(sub))
				watch_tree(w, sub, 0);
			/* a root nested in another scope is reached this way, and
			 * one whose anchor was dropped while this event waited */
			if (any_missing(w) && arm_missing(w)) {
				set_watches(w);
				prompt(w);
				return;
			}
			set_watches(w);
		}
	}
	/* An event of a watch already dropped (an anchor no longer needed,
	 * a directory forgotten) is about nothing the agent watches. */
	if (find(w, ev->wd) && cgwatch_event_prompts(ev->mask, name))
		prompt(w);
}

static void *run(void *arg)
{
	struct cgwatch *w = arg;
	_Alignas(struct inotify_event) char buf[64 * 1024];

	for (;;) {
		struct pollfd pfd[2] = { { .fd = w->ifd, .events = POLLIN }, { .fd = w->stopfd, .events = POLLIN } };
		ssize_t n;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_error("cgroup watcher: poll: %s; guests are noticed at the interval", strerror(errno));
			break;
		}
		if (pfd[1].revents)
			break;
		n = read(w->ifd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			log_error("cgroup watcher: read: %s; guests are noticed at the interval", strerror(errno));
			break;
		}
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			handle(w, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
	return NULL;
}

static void add_root(struct cgwatch *w, const struct cg_hier *h, const char *rel)
{
	char path[PATH_MAX];

	if (cgh_path(h, CGC_CPUSET, rel, NULL, path, sizeof(path)) < 0)
		return;
	for (unsigned i = 0; i < w->nroots; i++)
		if (strcmp(w->roots[i], path) == 0)
			return;
	w->roots = xrealloc(w->roots, (w->nroots + 1) * sizeof(*w->roots));
	w->missing = xrealloc(w->missing, (w->nroots + 1) * sizeof(*w->missing));
	w->anchor_wd = xrealloc(w->anchor_wd, (w->nroots + 1) * sizeof(*w->anchor_wd));
	w->missing[w->nroots] = false;
	w->anchor_wd[w->nroots] = -1;
	w->roots[w->nroots++] = xstrdup(path);
}

static void free_all(struct cgwatch *w)
{
	for (unsigned i = 0; i < w->cap; i++)
		free(w->slots[i].path);
	free(w->slots);
	for (unsigned i = 0; i < w->nroots; i++)
		free(w->roots[i]);
	free(w->roots);
	free(w->missing);
	free(w->anchor_wd);
	if (w->ifd >= 0)
		close(w->ifd);
	if (w->stopfd >= 0)
		close(w->stopfd);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

int cgwatch_start(const struct cg_hier *h, const struct cgscan_config *cfg, unsigned max_watches,
		  cgwatch_prompt_fn fn, void *ctx, struct cgwatch **out)
{
	struct cgwatch *w;
	sigset_t all, old;
	int r;

	if (!cgh_has(h, CGC_CPUSET))
		return -ENODEV;
	w = xcalloc(1, sizeof(*w));
	w->prompt = fn;
	w->ctx = ctx;
	w->max_watches = max_watches ? max_watches : DEFAULT_MAX_WATCHES;
	w->stopfd = -1;
	pthread_mutex_init(&w->lock, NULL);
	w->ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (w->ifd < 0) {
		r = -errno;
		free_all(w);
		return r;
	}
	w->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->stopfd < 0) {
		r = -errno;
		free_all(w);
		return r;
	}
	/* Parents hold guests too, and may lie outside every scope only if
	 * the configuration says so; both are where guests appear. */
	if (!cfg->nr_scopes)
		add_root(w, h, "/");
	for (unsigned i = 0; i < cfg->nr_scopes; i++)
		add_root(w, h, cfg->scopes[i]);
	for (unsigned i = 0; i < cfg->nr_parents; i++) {
		bool inside = !cfg->nr_scopes;

		for (unsigned s = 0; s < cfg->nr_scopes && !inside; s++)
			inside = cgh_rel_under(cfg->parents[i], cfg->scopes[s]);
		if (!inside)
			continue; /* out of scope: never a guest, nothing to notice */
		add_root(w, h, cfg->parents[i]);
	}
	watch_all(w);
	/* The engine's signals stay the engine's (its signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&w->thread, NULL, run, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0) {
		free_all(w);
		return r;
	}
	*out = w;
	return 0;
}

void cgwatch_stop(struct cgwatch *w)
{
	uint64_t one = 1;

	if (!w)
		return;
	if (write(w->stopfd, &one, sizeof(one)) < 0)
		log_debug("cgroup watcher: eventfd write: %s", strerror(errno));
	pthread_join(w->thread, NULL);
	free_all(w);
}

void cgwatch_get_stats(struct cgwatch *w, struct cgwatch_stats *out)
{
	pthread_mutex_lock(&w->lock);
	*out = w->st;
	pthread_mutex_unlock(&w->lock);
}
