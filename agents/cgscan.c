/* cgscan.c — the container source (see cgscan.h for the naming rules).
 *
 * One scan walks the hierarchy that holds cpuset (the one we act on) with
 * openat/fdopendir, never following symlinks, only into the configured
 * scopes and their ancestors, and stops at each guest: a guest's subtree
 * belongs to it. libvirt's groups and runtime monitors (libpod-conmon-*,
 * lxc.monitor.*) are pruned wherever they appear.
 *
 * Which rule names a guest, strongest first:
 *   1. the name rules (cgscan_classify: docker, kubernetes, podman, lxc,
 *      nspawn) — docker and podman run on runc, and their names are what
 *      an operator knows;
 *   2. runc state (state.json cgroup_paths) — "runc-<id>";
 *   3. a configured parent — "custom-<child dir name>".
 * A configured parent guarantees discovery of its children; it does not
 * rename a child another rule recognises.
 *
 * Files are read into one scratch buffer owned by struct cgscan, so a scan
 * allocates nothing per guest beyond what the snapshot keeps (its cgroup
 * string and mem_node array).
 */
#include "cgscan.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../orchestrator/fs.h"
#include "../orchestrator/parse.h"
#include "../orchestrator/procstat.h"
#include "../orchestrator/xalloc.h"
#include "../orchestrator/log.h"
#include "../orchestrator/numastat.h"

#define WALK_MAX_DEPTH 64
#define READ_MAX (64u << 20)   /* a tasks file of a few million threads */

struct cpu_prev {
	char id[GUEST_ID_MAX];
	uint64_t usage_ns;
	int64_t t_ns;
	unsigned thr_off, nr_thr;     /* its threads' ticks in the thr pool */
};

/* Where a guest's CPU time went, per node: only a guest whose cpus span
 * several nodes needs it (on one node it is all there), and only one
 * with few threads can afford it — one /proc/TID/stat read per thread
 * and cycle. Larger guests keep the policy's estimate (use spread over
 * their CPUs). */
#define THR_SAMPLE_MAX 64

struct thr_tick {
	pid_t tid;
	uint64_t ticks;               /* utime + stime */
};

struct runc_ent {
	char *rel;
	char id[128];
};

/* Files of a guest kept open from scan to scan and re-read with
 * pread(..., 0): seq_files render afresh at offset 0, and an open file of
 * a removed cgroup reads ENODEV, so nothing stale can come back. This
 * halves a scan's system calls. The pid lists (cgroup.procs, tasks) are
 * not kept: v1 caches a pidlist per open file for a second after each
 * read, which could hand back a stale list. */
enum { FC_CPUS, FC_MEMS, FC_CPU, FC_MEM, FC_NR };

struct fdc {
	char *rel;          /* NULL: free slot */
	unsigned gen;       /* scan that last saw it */
	int fd[FC_NR];
};

struct cgscan {
	struct host_paths hp;
	struct cg_hier hier;
	bool v2;                      /* cpuset lives in the v2 tree */
	char cpuset_host[PATH_MAX];   /* cpuset root as the host names it */
	long page_size;
	long clk_tck;

	unsigned nr_scopes;
	char **scopes;
	unsigned nr_parents;
	char **parents;
	unsigned nr_runc_roots;
	char **runc_roots;            /* resolved: fixture root prefixed */

	/* cpu_use bookkeeping: prev is sorted by id; next collects this scan. */
	struct cpu_prev *prev, *next;
	unsigned nr_prev, nr_next, cap_prev, cap_next;
	/* Thread ticks of the guests above (their thr_off/nr_thr), each
	 * guest's slice sorted by tid. */
	struct thr_tick *thr_prev, *thr_next;
	unsigned nr_thr_next, cap_thr_prev, cap_thr_next;
	/* The guest being measured: its thread ids, while under
	 * THR_SAMPLE_MAX (tids_over: more). */
	pid_t tids[THR_SAMPLE_MAX];
	unsigned nr_tids;
	bool tids_over;
	int proc_fd;                  /* procfs, open during a scan; -1 */

	/* Per-scan state. */
	struct runc_ent *runc;
	unsigned nr_runc;
	struct snapshot *snap;
	int64_t now_ns;
	nodemask_t warned_nodes;
	int ctrl_fd[CGC_NR];          /* v1 memory/cpuacct roots, -1 if unused */
	uint64_t *mem;                /* scratch [nr_nodes] */
	unsigned mem_cap;

	char *buf;                    /* scratch for file contents */
	size_t bufcap;

	/* Open files per guest (see struct fdc): a hash table by cgroup. */
	struct fdc *fdc;
	unsigned fdc_cap, fdc_n;      /* cap: a power of two */
	unsigned gen;
	unsigned fds_open, fd_budget;
	struct fdc *cur;              /* the guest being measured, or NULL */
};

/* ---- helpers ---------------------------------------------------------- */

static bool is_vanished(int r)
{
	return r == -ENOENT || r == -ENODEV || r == -ESRCH;
}

static bool is_hex64(const char *s, size_t n)
{
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool starts(const char *s, size_t n, const char *pfx)
{
	size_t p = strlen(pfx);

	return n >= p && memcmp(s, pfx, p) == 0;
}

static bool ends(const char *s, size_t n, const char *sfx)
{
	size_t p = strlen(sfx);

	return n >= p && memcmp(s + n - p, sfx, p) == 0;
}

static bool comp_is(const char *s, size_t n, const char *word)
{
	return s && n == strlen(word) && memcmp(s, word, n) == 0;
}

/* A name of N bytes into NAME. One longer than 127 keeps its first 118
 * bytes and "~" + 8 hex digits of a hash of all of it: two long names
 * that share a prefix stay two guests (they became one when both were
 * cut at 127), and the same name gives the same result on every scan. */
static void copy_name(char name[128], const char *s, size_t n)
{
	if (n > 127) {
		uint32_t h = 2166136261u;

		for (size_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)s[i]) * 16777619u;
		memcpy(name, s, 118);
		snprintf(name + 118, 10, "~%08x", h);
		return;
	}
	memcpy(name, s, n);
	name[n] = '\0';
}

/* Read DFD/[DIR/]FILE (an absolute FILE ignores DFD) whole into cs->buf,
 * NUL-terminated. The final component is never followed if a symlink.
 * DIR lets a guest's files be opened relative to its parent's fd: no fd
 * of its own to open and close (syscalls are the cost of a scan). */
static int rd_fd_until(struct cgscan *cs, int fd, bool to_eof)
{
	size_t n = 0;

	for (;;) {
		ssize_t r;

		if (n + 1 >= cs->bufcap) {
			if (cs->bufcap >= READ_MAX)
				return -EFBIG;
			cs->bufcap *= 2;
			cs->buf = xrealloc(cs->buf, cs->bufcap);
		}
		r = pread(fd, cs->buf + n, cs->bufcap - n - 1, (off_t)n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		/* A file rendered by one show() (cpuset.cpus, cpuacct.usage,
		 * memory.numa_stat: single_open seq_files) fills a read to the
		 * brim unless at EOF (regular files too): a short read is the
		 * end. Sparing the extra read() matters at 6 files × 1000
		 * guests. Record lists (tasks, cgroup.procs, cgroup.threads)
		 * are seq_files of one record per pid, which hand out at most a
		 * page per read: only read() == 0 ends them (a guest of 5001
		 * threads was 682 when the first 4 KiB were taken as all). */
		if (!to_eof && n + 1 < cs->bufcap)
			break;
	}
	cs->buf[n] = '\0';
	return 0;
}

static int rd_fd(struct cgscan *cs, int fd)
{
	return rd_fd_until(cs, fd, false);
}

static int open_at(int dfd, const char *dir, const char *file)
{
	char path[PATH_MAX];
	int fd;

	if (dir) {
		if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path))
			return -ENAMETOOLONG;
		file = path;
	}
	fd = openat(dfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

static int rd(struct cgscan *cs, int dfd, const char *dir, const char *file)
{
	int fd = open_at(dfd, dir, file), r;

	if (fd < 0)
		return fd;
	r = rd_fd(cs, fd);
	close(fd);
	return r;
}

/* rd() of a list file (pids), read to EOF: see rd_fd_until. */
static int rd_list(struct cgscan *cs, int dfd, const char *dir, const char *file)
{
	int fd = open_at(dfd, dir, file), r;

	if (fd < 0)
		return fd;
	r = rd_fd_until(cs, fd, true);
	close(fd);
	return r;
}

/* rd() through the current guest's open file SLOT (-1: not cached). */
static int rd_slot(struct cgscan *cs, int slot, int dfd, const char *dir, const char *file)
{
	struct fdc *e = slot >= 0 ? cs->cur : NULL;
	int fd, r;

	if (e && e->fd[slot] >= 0) {
		r = rd_fd(cs, e->fd[slot]);
		if (r == 0)
			return 0;
		/* Gone (ENODEV), or a cgroup recreated under the same name:
		 * open afresh below, which tells the two apart. */
		close(e->fd[slot]);
		e->fd[slot] = -1;
		cs->fds_open--;
	}
	fd = open_at(dfd, dir, file);
	if (fd < 0)
		return fd;
	r = rd_fd(cs, fd);
	if (r == 0 && e && cs->fds_open < cs->fd_budget) {
		e->fd[slot] = fd;
		cs->fds_open++;
	} else {
		close(fd);
	}
	return r;
}

static uint32_t rel_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static void fdc_close(struct cgscan *cs, struct fdc *e)
{
	for (unsigned i = 0; i < FC_NR; i++)
		if (e->fd[i] >= 0) {
			close(e->fd[i]);
			cs->fds_open--;
		}
	free(e->rel);
	e->rel = NULL;
}

static void fdc_insert(struct fdc *tab, unsigned cap, const struct fdc *e)
{
	unsigned i = rel_hash(e->rel) & (cap - 1);

	while (tab[i].rel)
		i = (i + 1) & (cap - 1);
	tab[i] = *e;
}

/* The entry for REL, created if absent. */
static struct fdc *fdc_get(struct cgscan *cs, const char *rel)
{
	unsigned i;

	if (2 * (cs->fdc_n + 1) > cs->fdc_cap) {
		unsigned ncap = cs->fdc_cap ? cs->fdc_cap * 2 : 64;
		struct fdc *nt = xcalloc(ncap, sizeof(*nt));

		for (unsigned j = 0; j < cs->fdc_cap; j++)
			if (cs->fdc[j].rel)
				fdc_insert(nt, ncap, &cs->fdc[j]);
		free(cs->fdc);
		cs->fdc = nt;
		cs->fdc_cap = ncap;
	}
	for (i = rel_hash(rel) & (cs->fdc_cap - 1); cs->fdc[i].rel; i = (i + 1) & (cs->fdc_cap - 1))
		if (strcmp(cs->fdc[i].rel, rel) == 0)
			return &cs->fdc[i];
	cs->fdc[i].rel = xstrdup(rel);
	cs->fdc[i].gen = 0;
	for (unsigned k = 0; k < FC_NR; k++)
		cs->fdc[i].fd[k] = -1;
	cs->fdc_n++;
	return &cs->fdc[i];
}

/* Close the files of guests this scan did not see; rehash the rest. */
static void fdc_sweep(struct cgscan *cs)
{
	struct fdc *nt;
	unsigned n = 0;

	if (!cs->fdc_cap)
		return;
	nt = xcalloc(cs->fdc_cap, sizeof(*nt));
	for (unsigned j = 0; j < cs->fdc_cap; j++) {
		struct fdc *e = &cs->fdc[j];

		if (!e->rel)
			continue;
		if (e->gen != cs->gen) {
			fdc_close(cs, e);
			continue;
		}
		fdc_insert(nt, cs->fdc_cap, e);
		n++;
	}
	free(cs->fdc);
	cs->fdc = nt;
	cs->fdc_n = n;
}

/* Does the directory PDFD/NAME still exist? */
static bool dir_gone(int pdfd, const char *name)
{
	struct stat st;

	return fstatat(pdfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && is_vanished(-errno);
}

/* ---- classification (pure) -------------------------------------------- */

/* libvirt's VM groups and runtimes' monitor groups: never guests, and
 * nothing below them is ours either. */
static bool name_excluded(const char *b, size_t n)
{
	if (ends(b, n, ".libvirt-qemu") || ends(b, n, ".libvirt-lxc"))
		return true;
	if (starts(b, n, "machine-qemu\\x2d") || starts(b, n, "machine-lxc\\x2d"))
		return true;
	if (starts(b, n, "libpod-conmon-"))
		return true;
	if (comp_is(b, n, "lxc.monitor") || starts(b, n, "lxc.monitor."))
		return true;
	return false;
}

/* A pod uid as found in a cgroup name: lowercase hex and '-' (cgroupfs
 * driver) or '_' (systemd driver, which reserves '-'). Normalised to '-'. */
static bool pod_uid(const char *s, size_t n, char name[128])
{
	if (n < 8 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-' || c == '_'))
			return false;
	}
	copy_name(name, s, n);
	for (char *p = name; *p; p++)
		if (*p == '_')
			*p = '-';
	return true;
}

/* systemd unit-name unescaping of \xNN; false if the result is unusable. */
static bool unit_unescape(const char *s, size_t n, char name[128])
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 3 < n && s[i + 1] == 'x' &&
		    isxdigit((unsigned char)s[i + 2]) && isxdigit((unsigned char)s[i + 3])) {
			char hex[3] = { s[i + 2], s[i + 3], 0 };
			long v = strtol(hex, NULL, 16);

			if (v <= 0)
				return false;
			c = (char)v;
			i += 3;
		}
		if (o >= 127)
			return false;
		name[o++] = c;
	}
	name[o] = '\0';
	return o > 0;
}

/* Classify REL by its last component (and its parents' names), assuming
 * no ancestor is a guest. */
static bool classify_one(const char *rel, char runtime[GUEST_RUNTIME_MAX], char name[128])
{
	const char *b, *p = NULL, *g = NULL;
	size_t bn, pn = 0, gn = 0;
	char nm[128];
	const char *rt = NULL;

	b = strrchr(rel, '/');
	if (!b || !b[1])
		return false;
	b++;
	bn = strlen(b);
	if (b - 1 > rel) {
		const char *e = b - 1;

		p = e - 1;
		while (p > rel && p[-1] != '/')
			p--;
		pn = (size_t)(e - p);
		if (p - 1 > rel) {
			const char *ge = p - 1;

			g = ge - 1;
			while (g > rel && g[-1] != '/')
				g--;
			gn = (size_t)(ge - g);
		}
	}
	if (name_excluded(b, bn))
		return false;

	/* docker: systemd driver scope, or cgroupfs driver /docker/<id>. */
	if (starts(b, bn, "docker-") && ends(b, bn, ".scope") &&
	    is_hex64(b + 7, bn - 7 - 6)) {
		copy_name(nm, b + 7, 64);
		rt = "docker";
	} else if (comp_is(p, pn, "docker") && is_hex64(b, bn)) {
		copy_name(nm, b, 64);
		rt = "docker";
	}
	/* podman: systemd scope anywhere; cgroupfs under libpod_parent. */
	else if (starts(b, bn, "libpod-") && ends(b, bn, ".scope") &&
		 is_hex64(b + 7, bn - 7 - 6)) {
		copy_name(nm, b + 7, 64);
		rt = "podman";
	} else if (starts(b, bn, "libpod-") && is_hex64(b + 7, bn - 7) &&
		   (strstr(rel, "/libpod_parent/") != NULL)) {
		copy_name(nm, b + 7, 64);
		rt = "podman";
	}
	/* kubernetes pods, cgroupfs driver. */
	else if (starts(b, bn, "pod") &&
		 (comp_is(p, pn, "kubepods") ||
		  ((comp_is(p, pn, "burstable") || comp_is(p, pn, "besteffort")) &&
		   comp_is(g, gn, "kubepods")))) {
		if (pod_uid(b + 3, bn - 3, nm))
			rt = "kubernetes";
	}
	/* kubernetes pods, systemd driver. */
	else if (starts(b, bn, "kubepods-") && ends(b, bn, ".slice")) {
		const char *q = b + 9;
		size_t qn = bn - 9 - 6;

		if (starts(q, qn, "burstable-pod")) {
			q += 13;
			qn -= 13;
		} else if (starts(q, qn, "besteffort-pod")) {
			q += 14;
			qn -= 14;
		} else if (starts(q, qn, "pod")) {
			q += 3;
			qn -= 3;
		} else {
			return false;
		}
		if (pod_uid(q, qn, nm))
			rt = "kubernetes";
	}
	/* lxc 4+: /lxc.payload.<name>; older: /lxc/<name>. */
	else if (starts(b, bn, "lxc.payload.") && bn > 12) {
		copy_name(nm, b + 12, bn - 12);
		rt = "lxc";
	} else if (comp_is(p, pn, "lxc")) {
		copy_name(nm, b, bn);
		rt = "lxc";
	}
	/* systemd-nspawn / machined. */
	else if (comp_is(p, pn, "machine.slice") && starts(b, bn, "machine-") &&
		 ends(b, bn, ".scope") && bn > 8 + 6) {
		if (unit_unescape(b + 8, bn - 8 - 6, nm))
			rt = "nspawn";
	}
	if (!rt)
		return false;
	snprintf(runtime, GUEST_RUNTIME_MAX, "%s", rt);
	memcpy(name, nm, sizeof(nm));
	return true;
}

static bool rel_excluded(const char *rel)
{
	const char *b = strrchr(rel, '/');

	return b && name_excluded(b + 1, strlen(b + 1));
}

bool cgscan_classify(const char *rel, char runtime[GUEST_RUNTIME_MAX], char name[128])
{
	char buf[PATH_MAX], rt[GUEST_RUNTIME_MAX], nm[128];
	size_t n;

	if (!cgh_rel_valid(rel) || strcmp(rel, "/") == 0)
		return false;
	n = strlen(rel);
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, rel, n + 1);
	/* Nothing below a guest (or below libvirt's groups) is a guest. */
	for (size_t i = 1; i < n; i++) {
		if (buf[i] != '/')
			continue;
		buf[i] = '\0';
		if (rel_excluded(buf) || classify_one(buf, rt, nm))
			return false;
		buf[i] = '/';
	}
	if (!classify_one(rel, rt, nm))
		return false;
	memcpy(runtime, rt, sizeof(rt));
	memcpy(name, nm, sizeof(nm));
	return true;
}

/* ---- construction ----------------------------------------------------- */

static char **copy_rels(char **in, unsigned n, int *err)
{
	char **out;

	if (!n)
		return NULL;
	out = xcalloc(n, sizeof(char *));
	for (unsigned i = 0; i < n; i++) {
		size_t len;

		if (!in[i] || !cgh_rel_valid(in[i])) {
			/* "/x/" is a common spelling of "/x": accept it. */
			if (in[i] && in[i][0] == '/') {
				char *t = xstrdup(in[i]);

				len = strlen(t);
				while (len > 1 && t[len - 1] == '/')
					t[--len] = '\0';
				if (cgh_rel_valid(t)) {
					out[i] = t;
					continue;
				}
				free(t);
			}
			*err = -EINVAL;
			continue;
		}
		out[i] = xstrdup(in[i]);
	}
	return out;
}

static void free_strv(char **v, unsigned n)
{
	if (!v)
		return;
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void cgscan_free(struct cgscan *cs)
{
	if (!cs)
		return;
	free_strv(cs->scopes, cs->nr_scopes);
	free_strv(cs->parents, cs->nr_parents);
	free_strv(cs->runc_roots, cs->nr_runc_roots);
	free(cs->prev);
	free(cs->next);
	free(cs->thr_prev);
	free(cs->thr_next);
	free(cs->mem);
	free(cs->buf);
	for (unsigned j = 0; j < cs->fdc_cap; j++)
		if (cs->fdc[j].rel)
			fdc_close(cs, &cs->fdc[j]);
	free(cs->fdc);
	free(cs);
}

/* The fixture root a non-live host_paths points into: rundir minus "/run". */
static void fixture_root(const struct host_paths *hp, char *out, size_t sz)
{
	size_t n = strlen(hp->rundir);

	snprintf(out, sz, "%s", hp->rundir);
	if (n >= 4 && strcmp(hp->rundir + n - 4, "/run") == 0)
		out[n - 4] = '\0';
	else {
		char *s = strrchr(out, '/');

		if (s)
			*s = '\0';
	}
}

int cgscan_new(const struct host_paths *hp, const struct cgscan_config *cfg,
	       struct cgscan **out)
{
	struct cgscan *cs;
	char root[PATH_MAX];
	int r, err = 0;

	cs = xcalloc(1, sizeof(*cs));
	cs->hp = *hp;
	r = cgh_detect(hp->cgroupfs, &cs->hier);
	if (r < 0) {
		free(cs);
		return r;
	}
	if (!cgh_has(&cs->hier, CGC_CPUSET)) {
		free(cs);
		return -EOPNOTSUPP;
	}
	cs->v2 = cs->hier.v2[CGC_CPUSET];
	cs->page_size = sysconf(_SC_PAGESIZE);
	if (cs->page_size <= 0)
		cs->page_size = 4096;
	cs->clk_tck = sysconf(_SC_CLK_TCK);
	if (cs->clk_tck <= 0)
		cs->clk_tck = 100;
	fixture_root(hp, root, sizeof(root));

	/* runc records host paths ("/sys/fs/cgroup/cpuset/a/b"): name the
	 * cpuset root the way the host does. */
	if (hp->live) {
		snprintf(cs->cpuset_host, sizeof(cs->cpuset_host), "%s", cs->hier.dir[CGC_CPUSET]);
	} else {
		const char *d = cs->hier.dir[CGC_CPUSET];
		size_t rl = strlen(root), cl = strlen(hp->cgroupfs);

		if (rl && strncmp(d, root, rl) == 0 && d[rl] == '/')
			snprintf(cs->cpuset_host, sizeof(cs->cpuset_host), "%s", d + rl);
		else if (strncmp(d, hp->cgroupfs, cl) == 0)
			snprintf(cs->cpuset_host, sizeof(cs->cpuset_host), "/sys/fs/cgroup%s", d + cl);
		else
			snprintf(cs->cpuset_host, sizeof(cs->cpuset_host), "%s", d);
	}

	if (cfg) {
		cs->scopes = copy_rels(cfg->scopes, cfg->nr_scopes, &err);
		cs->nr_scopes = cfg->scopes ? cfg->nr_scopes : 0;
		cs->parents = copy_rels(cfg->parents, cfg->nr_parents, &err);
		cs->nr_parents = cfg->parents ? cfg->nr_parents : 0;
		if (cfg->runc_roots && cfg->nr_runc_roots) {
			cs->nr_runc_roots = cfg->nr_runc_roots;
			cs->runc_roots = xcalloc(cfg->nr_runc_roots, sizeof(char *));
			for (unsigned i = 0; i < cfg->nr_runc_roots; i++) {
				const char *p = cfg->runc_roots[i];

				if (!p || p[0] != '/') {
					err = -EINVAL;
					continue;
				}
				cs->runc_roots[i] = hp->live ? xstrdup(p) : xasprintf("%s%s", root, p);
			}
		}
	}
	if (err) {
		cgscan_free(cs);
		return err;
	}
	if (!cs->nr_runc_roots) {
		cs->nr_runc_roots = 1;
		cs->runc_roots = xcalloc(1, sizeof(char *));
		cs->runc_roots[0] = xasprintf("%s/runc", hp->rundir);
	}
	cs->bufcap = 64 * 1024;
	cs->buf = xmalloc(cs->bufcap);
	{
		/* Keep guests' files open only within the fd limit, leaving
		 * room for everything else the agent opens (API clients,
		 * libvirt, logs). numaorchd raises the soft limit at start. */
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
			cs->fd_budget = rl.rlim_cur > 1024 ? (unsigned)(rl.rlim_cur - 512)
							   : (unsigned)(rl.rlim_cur / 2);
		else
			cs->fd_budget = 1u << 20;
	}
	*out = cs;
	return 0;
}

const struct cg_hier *cgscan_hier(const struct cgscan *cs)
{
	return &cs->hier;
}

/* ---- runc state ------------------------------------------------------- */

static int runc_cmp(const void *a, const void *b)
{
	return strcmp(((const struct runc_ent *)a)->rel, ((const struct runc_ent *)b)->rel);
}

static void runc_clear(struct cgscan *cs)
{
	for (unsigned i = 0; i < cs->nr_runc; i++)
		free(cs->runc[i].rel);
	free(cs->runc);
	cs->runc = NULL;
	cs->nr_runc = 0;
}

/* Host cgroup path from state.json → relative path, or NULL. */
static const char *runc_rel(const struct cgscan *cs, json_t *paths)
{
	const char *keys[2] = { cs->v2 ? "" : "cpuset", cs->v2 ? "cpuset" : "" };
	size_t hl = strlen(cs->cpuset_host);

	for (unsigned k = 0; k < 2; k++) {
		const char *p = json_string_value(json_object_get(paths, keys[k]));

		if (p && strncmp(p, cs->cpuset_host, hl) == 0 && p[hl] == '/' &&
		    cgh_rel_valid(p + hl))
			return p + hl;
	}
	return NULL;
}

static void runc_load_root(struct cgscan *cs, const char *rootdir, unsigned *cap)
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
				snap_warn(cs->snap, "runc state %s/state.json: %s", de->d_name, jerr.text);
			continue;
		}
		id = json_string_value(json_object_get(st, "id"));
		rel = runc_rel(cs, json_object_get(st, "cgroup_paths"));
		if (!id || !*id) {
			snap_warn(cs->snap, "runc state %s/state.json: no \"id\"", de->d_name);
		} else if (rel) {
			if (cs->nr_runc == *cap) {
				*cap = *cap ? *cap * 2 : 16;
				cs->runc = xrealloc(cs->runc, *cap * sizeof(*cs->runc));
			}
			cs->runc[cs->nr_runc].rel = xstrdup(rel);
			copy_name(cs->runc[cs->nr_runc].id, id, strlen(id));
			cs->nr_runc++;
		} else {
			log_debug("runc %s: no cgroup under %s", id, cs->cpuset_host);
		}
		json_decref(st);
	}
	closedir(d);
}

static void runc_load(struct cgscan *cs)
{
	unsigned cap = 0;

	runc_clear(cs);
	for (unsigned i = 0; i < cs->nr_runc_roots; i++)
		runc_load_root(cs, cs->runc_roots[i], &cap);
	if (cs->nr_runc)
		qsort(cs->runc, cs->nr_runc, sizeof(*cs->runc), runc_cmp);
}

static const struct runc_ent *runc_find(const struct cgscan *cs, const char *rel)
{
	struct runc_ent key = { .rel = (char *)rel };

	if (!cs->nr_runc)
		return NULL;
	return bsearch(&key, cs->runc, cs->nr_runc, sizeof(*cs->runc), runc_cmp);
}

/* ---- measuring one guest ---------------------------------------------- */

struct gmeas {
	unsigned nr_threads, nr_procs;
	pid_t main_pid;
	pid_t min_pid;      /* smallest pid below the guest's own cgroup */
	bool vanished;
};

/* Count lines; the first line's pid into *first (0 if none). With
 * TIDS, the ids also go to its tids (see THR_SAMPLE_MAX). */
static int count_pids(const char *s, unsigned *count, pid_t *first, pid_t *min, struct cgscan *tids)
{
	unsigned n = 0;

	while (*s) {
		const char *e = strchr(s, '\n');
		size_t len = e ? (size_t)(e - s) : strlen(s);

		if (len) {
			long v = 0;

			for (size_t i = 0; i < len; i++) {
				if (s[i] < '0' || s[i] > '9' || v > 0x3fffffff)
					return -EINVAL;
				v = v * 10 + (s[i] - '0');
			}
			if (n == 0 && first)
				*first = (pid_t)v;
			if (min && (*min == 0 || v < *min))
				*min = (pid_t)v;
			if (tids && tids->nr_tids < THR_SAMPLE_MAX)
				tids->tids[tids->nr_tids++] = (pid_t)v;
			else if (tids)
				tids->tids_over = true;
			n++;
		}
		if (!e)
			break;
		s = e + 1;
	}
	*count += n;
	return 0;
}

static const char *threads_file(const struct cgscan *cs)
{
	return cs->v2 ? "cgroup.threads" : "tasks";
}

/* Read procs and threads of DFD (REL for messages). SELF: the guest's own
 * cgroup (its first pid is the main pid). Returns a vanish code or 0. */
static int read_pids(struct cgscan *cs, int dfd, const char *dir, const char *rel, bool self,
		     struct gmeas *m)
{
	const char *files[2] = { "cgroup.procs", threads_file(cs) };

	for (unsigned i = 0; i < 2; i++) {
		int r = rd_list(cs, dfd, dir, files[i]);

		if (r == 0)
			r = i == 0 ? count_pids(cs->buf, &m->nr_procs, self ? &m->main_pid : NULL,
						self ? NULL : &m->min_pid, NULL)
				   : count_pids(cs->buf, &m->nr_threads, NULL, NULL, cs);
		if (r == -EINVAL)
			snap_warn(cs->snap, "cgroup %s: %s: malformed", rel, files[i]);
		else if (is_vanished(r))
			return r;
		else if (r < 0)
			snap_warn(cs->snap, "cgroup %s: cannot read %s: %s", rel, files[i], strerror(-r));
	}
	return 0;
}

/* Sum procs/threads of every cgroup below the directory FD (which this
 * takes over). Descendants that vanish are skipped; the guest stays. */
static void sum_subtree(struct cgscan *cs, int fd, char *rel, size_t rlen, unsigned depth,
			struct gmeas *m)
{
	DIR *d = depth < WALK_MAX_DEPTH ? fdopendir(fd) : NULL;

	if (!d) {
		close(fd);
		return;
	}
	for (struct dirent *de; (de = readdir(d));) {
		size_t nl = strlen(de->d_name);
		struct stat st;
		int cfd;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (rlen + 1 + nl >= PATH_MAX)
			continue;
		cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue; /* a file (DT_UNKNOWN), a symlink, or gone */
		rel[rlen] = '/';
		memcpy(rel + rlen + 1, de->d_name, nl + 1);
		/* kernfs keeps nlink = 2 + subdirectories: leaves need no listing. */
		if (read_pids(cs, cfd, NULL, rel, false, m) == 0 &&
		    fstat(cfd, &st) == 0 && st.st_nlink != 2)
			sum_subtree(cs, cfd, rel, rlen + 1 + nl, depth + 1, m);
		else
			close(cfd);
		rel[rlen] = '\0';
	}
	closedir(d);
}

static const char *eff_cpus_file(const struct cgscan *cs)
{
	return cs->v2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus";
}

static const char *eff_mems_file(const struct cgscan *cs)
{
	return cs->v2 ? "cpuset.mems.effective" : "cpuset.effective_mems";
}

/* Read a CPU or node list of the cgroup at DFD: the effective file, else
 * the configured one (an empty v2 one means "inherit": INHERIT is used).
 * PDFD/DNAME locate the cgroup to tell a vanished cgroup from a missing
 * file; PDFD < 0 (a parent) returns vanish codes without a word.
 * Returns 0, a vanish code, or a negative errno after warning. */
static int read_list(struct cgscan *cs, int dfd, const char *dir, const char *rel, bool cpus,
		     uint64_t *w, unsigned nbits, const uint64_t *inherit, int pdfd,
		     const char *dname)
{
	const char *used = cpus ? eff_cpus_file(cs) : eff_mems_file(cs);
	int r;

	/* A guest's effective file stays open between scans; a parent's is
	 * read once per scan (PDFD < 0). */
	r = rd_slot(cs, pdfd >= 0 ? (cpus ? FC_CPUS : FC_MEMS) : -1, dfd, dir, used);
	if (is_vanished(r)) {
		if (pdfd >= 0 && dir_gone(pdfd, dname))
			return r;
		/* Kernels before 4.x have no effective files. */
		used = cpus ? "cpuset.cpus" : "cpuset.mems";
		r = rd(cs, dfd, dir, used);
		if (r == 0 && cs->v2 && inherit && cs->buf[strspn(cs->buf, " \n")] == '\0') {
			memcpy(w, inherit, nbits / 8);
			return 0;
		}
	}
	if (r == 0) {
		if (mask_parse_list(cs->buf, w, nbits) < 0) {
			snap_warn(cs->snap, "cgroup %s: %s: malformed", rel, used);
			return -EINVAL;
		}
		return 0;
	}
	if (is_vanished(r) && (pdfd < 0 || dir_gone(pdfd, dname)))
		return r;
	snap_warn(cs->snap, "cgroup %s: cannot read %s: %s", rel, used, strerror(-r));
	return r;
}

/* Open the file of controller C for REL. In the cpuset hierarchy GFD is
 * used; elsewhere the path. Returns rd()'s result. */
static int rd_ctrl(struct cgscan *cs, enum cg_ctrl c, int slot, int pdfd, const char *dname,
		   const char *rel, const char *file)
{
	char path[PATH_MAX];
	int r;

	if (strcmp(cs->hier.dir[c], cs->hier.dir[CGC_CPUSET]) == 0)
		return rd_slot(cs, slot, pdfd, dname, file);
	if (cs->ctrl_fd[c] >= 0)
		return rd_slot(cs, slot, cs->ctrl_fd[c], rel + 1, file);
	r = cgh_path(&cs->hier, c, rel, file, path, sizeof(path));
	if (r < 0)
		return r == -ENODEV ? -EOPNOTSUPP : r;
	return rd_slot(cs, slot, AT_FDCWD, NULL, path);
}

/* Find KEY at the start of a line in S ("key value\n"); returns the value. */
static const char *stat_field(const char *s, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = s; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
			return p + kl + 1;
	return NULL;
}

/* 0: usage read; 1: not available (warned); or a vanish code. */
static int read_cpu(struct cgscan *cs, int pdfd, const char *dname, const char *rel,
		    uint64_t *usage)
{
	bool v2 = cs->hier.v2[CGC_CPUACCT];
	const char *file = v2 ? "cpu.stat" : "cpuacct.usage";
	uint64_t v;
	int r;

	r = rd_ctrl(cs, CGC_CPUACCT, FC_CPU, pdfd, dname, rel, file);
	if (r == -EOPNOTSUPP)
		return 1; /* no cpuacct anywhere: warned once per scan */
	if (is_vanished(r)) {
		if (dir_gone(pdfd, dname))
			return r;
		snap_warn(cs->snap, "cgroup %s: %s: missing%s", rel, file,
			  v2 ? "" : " in the cpuacct hierarchy");
		return 1;
	}
	if (r < 0) {
		snap_warn(cs->snap, "cgroup %s: cannot read %s: %s", rel, file, strerror(-r));
		return 1;
	}
	if (v2) {
		const char *f = stat_field(cs->buf, "usage_usec");
		char num[32];
		size_t n = f ? strcspn(f, "\n") : 0;

		r = -EINVAL;
		if (f && n > 0 && n < sizeof(num)) {
			memcpy(num, f, n);
			num[n] = '\0';
			r = parse_u64(num, &v);
			if (r == 0 && v > UINT64_MAX / 1000)
				r = -ERANGE;
			v *= 1000;
		}
	} else {
		r = parse_u64(cs->buf, &v);
	}
	if (r < 0) {
		snap_warn(cs->snap, "cgroup %s: %s: malformed", rel, file);
		return 1;
	}
	*usage = v;
	return 0;
}


/* Fill cs->mem from memory.numa_stat. 0: done (zeros after a warning
 * included); or a vanish code. */
static int read_mem(struct cgscan *cs, int pdfd, const char *dname, const char *rel)
{
	bool v2 = cs->hier.v2[CGC_MEMORY];
	const char *file = "memory.numa_stat";
	int r;

	memset(cs->mem, 0, cs->snap->nr_nodes * sizeof(uint64_t));
	if (!cgh_has(&cs->hier, CGC_MEMORY))
		return 0; /* warned once per scan */
	r = rd_ctrl(cs, CGC_MEMORY, FC_MEM, pdfd, dname, rel, file);
	if (is_vanished(r)) {
		if (dir_gone(pdfd, dname))
			return r;
		snap_warn(cs->snap, "cgroup %s: %s: missing%s", rel, file,
			  v2 ? "" : " in the memory hierarchy");
		return 0;
	}
	if (r < 0) {
		snap_warn(cs->snap, "cgroup %s: cannot read %s: %s", rel, file, strerror(-r));
		return 0;
	}
	{
		nodemask_t unknown;

		mask_zero(&unknown);
		r = numastat_parse(cs->buf, v2, cs->page_size, cs->snap, cs->mem, &unknown);
		mask_foreach(id, &unknown) {
			if (mask_test(&cs->warned_nodes, id))
				continue;
			mask_set(&cs->warned_nodes, id);
			snap_warn(cs->snap, "cgroup %s: memory.numa_stat: unknown node %d ignored", rel, id);
		}
	}
	if (r < 0) {
		memset(cs->mem, 0, cs->snap->nr_nodes * sizeof(uint64_t));
		snap_warn(cs->snap, "cgroup %s: %s: malformed, memory counted as 0", rel, file);
	}
	return 0;
}

/* The bound a writer must stay within: the parent's effective sets, read
 * once per parent directory. */
struct parent_sets {
	bool read;
	bool ok;
	cpumask_t cpus;
	nodemask_t mems;
};

static void read_parent(struct cgscan *cs, int pdfd, const char *prel, struct parent_sets *ps)
{
	ps->read = true;
	ps->ok = read_list(cs, pdfd, NULL, prel, true, ps->cpus.w, MASK_BITS(&ps->cpus), NULL,
			   -1, NULL) == 0 &&
		 read_list(cs, pdfd, NULL, prel, false, ps->mems.w, MASK_BITS(&ps->mems), NULL,
			   -1, NULL) == 0;
}

static void cpu_record(struct cgscan *cs, const char *id, uint64_t usage, unsigned thr_off, unsigned nr_thr)
{
	if (cs->nr_next == cs->cap_next) {
		cs->cap_next = cs->cap_next ? cs->cap_next * 2 : 64;
		cs->next = xrealloc(cs->next, cs->cap_next * sizeof(*cs->next));
	}
	memcpy(cs->next[cs->nr_next].id, id, GUEST_ID_MAX);
	cs->next[cs->nr_next].usage_ns = usage;
	cs->next[cs->nr_next].t_ns = cs->now_ns;
	cs->next[cs->nr_next].thr_off = thr_off;
	cs->next[cs->nr_next].nr_thr = nr_thr;
	cs->nr_next++;
}

static int prev_cmp(const void *a, const void *b)
{
	return strcmp(((const struct cpu_prev *)a)->id, ((const struct cpu_prev *)b)->id);
}

/* What the previous scan measured of guest ID, NULL if it did not. */
static const struct cpu_prev *cpu_prev_find(const struct cgscan *cs, const char *id)
{
	struct cpu_prev key;

	if (!cs->nr_prev)
		return NULL;
	memcpy(key.id, id, GUEST_ID_MAX);
	return bsearch(&key, cs->prev, cs->nr_prev, sizeof(*cs->prev), prev_cmp);
}

static double cpu_rate(const struct cgscan *cs, const struct cpu_prev *p, uint64_t usage)
{
	if (!p || usage < p->usage_ns || cs->now_ns <= p->t_ns)
		return NAN;
	return (double)(usage - p->usage_ns) / (double)(cs->now_ns - p->t_ns);
}

static int tid_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct thr_tick *)a)->tid, y = ((const struct thr_tick *)b)->tid;

	return (x > y) - (x < y);
}

/* Where guest G's CPU time went, per node, from its threads (cs->tids):
 * each thread's ticks since the previous scan count on the node of the
 * CPU it last ran on (/proc/TID/task/TID/stat "processor"). A thread that changed
 * nodes within the window counts wholly on its last one: it answers the
 * policy's question (which nodes carry this guest's load, so what is
 * left there without it) far better than spreading the use evenly over
 * its CPUs, which took two busy guests on one node for a quarter each.
 * P is what the previous scan recorded of the guest (NULL: nothing).
 * Sets g->cpu_node when there is something to share out; records the
 * ticks (pool slice *OFF, *N) for the next scan either way. */
static void thread_nodes(struct cgscan *cs, struct snap_guest *g, const struct cpu_prev *p, unsigned *off,
			 unsigned *n)
{
	const struct snapshot *s = cs->snap;
	char path[PATH_MAX];
	nodemask_t nodes;
	double *dn, busy_ticks;
	bool measured = false;

	*off = cs->nr_thr_next;
	*n = 0;
	if (cs->tids_over || !cs->nr_tids || s->nr_nodes < 2)
		return;
	snap_cpus_to_nodes(s, g->cpus, &nodes);
	if (mask_count(&nodes) < 2)
		return;
	if (cs->nr_thr_next + cs->nr_tids > cs->cap_thr_next) {
		cs->cap_thr_next = (cs->nr_thr_next + cs->nr_tids) * 2;
		cs->thr_next = xrealloc(cs->thr_next, cs->cap_thr_next * sizeof(*cs->thr_next));
	}
	dn = xcalloc(s->nr_nodes, sizeof(double));
	/* Busy: at least SNAP_BUSY_THREAD_CPU of a CPU over the window. */
	busy_ticks = p && cs->now_ns > p->t_ns
		     ? SNAP_BUSY_THREAD_CPU * (double)(cs->now_ns - p->t_ns) / 1e9 * (double)cs->clk_tck
		     : INFINITY;
	if (cs->proc_fd < 0)
		cs->proc_fd = open(cs->hp.procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (unsigned i = 0; i < cs->nr_tids; i++) {
		struct thr_tick *t = &cs->thr_next[cs->nr_thr_next + *n];
		const struct thr_tick *was;
		uint64_t ticks;
		int cpu, k;

		/* task/TID: /proc/PID/stat of a group leader sums every
		 * thread of its process (a one-thread guest's idle main
		 * thread counted as a second busy thread, carrying the whole
		 * process's ticks to its own last CPU's node). */
		snprintf(path, sizeof(path), "%d/task/%d/stat", (int)cs->tids[i], (int)cs->tids[i]);
		if (cs->proc_fd < 0 || rd(cs, cs->proc_fd, NULL, path) < 0 ||
		    proc_stat_ticks_cpu(cs->buf, &ticks, &cpu) < 0)
			continue; /* exited since the list was read */
		t->tid = cs->tids[i];
		t->ticks = ticks;
		(*n)++;
		was = p && p->nr_thr ? bsearch(t, cs->thr_prev + p->thr_off, p->nr_thr, sizeof(*t), tid_cmp)
				     : NULL;
		if (!was || t->ticks <= was->ticks || (k = snap_cpu_node_index(s, cpu)) < 0)
			continue; /* new (its window is unknown), idle, or an unknown CPU */
		dn[k] += (double)(t->ticks - was->ticks);
		measured = true;
		if ((double)(t->ticks - was->ticks) >= busy_ticks)
			g->busy_threads++;
	}
	qsort(cs->thr_next + cs->nr_thr_next, *n, sizeof(struct thr_tick), tid_cmp);
	cs->nr_thr_next += *n;
	g->busy_measured = measured;
	g->cpu_node = snap_node_use(s, dn, g->cpu_use);
}

/* A guest seen for the first time has no earlier usage sample, hence no
 * rate, and the policy leaves it alone until the next cycle: a guest that
 * started between two cycles would wait a whole interval before it is
 * placed (15 s by default; measured on the multi-node testbed). If its
 * main process started less than FIRST_SIGHT_MAX_AGE_S ago, its average
 * use since then is the best estimate there is. An older guest (one that
 * just came into scope) keeps NAN: its lifetime average says little
 * about now. Returns NAN when unknown. */
#define FIRST_SIGHT_MIN_AGE_S 1.0
#define FIRST_SIGHT_MAX_AGE_S 120.0

static double young_guest_rate(struct cgscan *cs, pid_t pid, uint64_t usage_ns)
{
	char path[PATH_MAX];
	double up, age;
	const char *f[20];
	unsigned long long start = 0;

	if (pid <= 0 ||
	    snprintf(path, sizeof(path), "%s/uptime", cs->hp.procfs) >= (int)sizeof(path) ||
	    rd(cs, AT_FDCWD, NULL, path) < 0)
		return NAN;
	up = strtod(cs->buf, NULL);
	if (snprintf(path, sizeof(path), "%s/%d/stat", cs->hp.procfs, (int)pid) >= (int)sizeof(path) ||
	    rd(cs, AT_FDCWD, NULL, path) < 0)
		return NAN;
	/* Field 22: starttime, clock ticks after boot. */
	if (proc_stat_fields(cs->buf, f, 20) < 0 || sscanf(f[19], "%llu", &start) != 1)
		return NAN;
	age = up - (double)start / (double)cs->clk_tck;
	if (!(age >= FIRST_SIGHT_MIN_AGE_S && age <= FIRST_SIGHT_MAX_AGE_S))
		return NAN;
	return (double)usage_ns / 1e9 / age;
}

static void measure_guest(struct cgscan *cs, int pdfd, const char *prel, struct parent_sets *ps,
			  const char *dname, char *rel, size_t rlen, const char *runtime,
			  const char *name)
{
	struct snapshot *snap = cs->snap;
	struct snap_guest *g;
	const struct cpu_prev *prev;
	struct gmeas m = { 0 };
	char id[GUEST_ID_MAX];
	cpumask_t cpus;
	nodemask_t mems;
	uint64_t usage = 0;
	bool have_usage;
	struct stat st;
	int r;

	if (fstatat(pdfd, dname, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (!is_vanished(-errno))
			snap_warn(snap, "cgroup %s: cannot stat: %s", rel, strerror(errno));
		return;
	}
	if (!ps->read)
		read_parent(cs, pdfd, prel, ps);
	cs->nr_tids = 0;
	cs->tids_over = false;

	if (read_pids(cs, pdfd, dname, rel, true, &m) != 0)
		return;
	/* kernfs keeps nlink = 2 + subdirectories: leaves need no listing. */
	if (st.st_nlink != 2) {
		int gfd = openat(pdfd, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (gfd < 0)
			return; /* a directory a moment ago: gone */
		sum_subtree(cs, gfd, rel, rlen, 0, &m);
		rel[rlen] = '\0';
	}
	if (!m.main_pid)
		m.main_pid = m.min_pid;

	mask_zero(&cpus);
	mask_zero(&mems);
	r = read_list(cs, pdfd, dname, rel, true, cpus.w, MASK_BITS(&cpus),
		      ps->ok ? ps->cpus.w : NULL, pdfd, dname);
	if (is_vanished(r))
		return;
	r = read_list(cs, pdfd, dname, rel, false, mems.w, MASK_BITS(&mems),
		      ps->ok ? ps->mems.w : NULL, pdfd, dname);
	if (is_vanished(r))
		return;

	r = read_cpu(cs, pdfd, dname, rel, &usage);
	if (is_vanished(r))
		return;
	have_usage = r == 0;

	if (snap->nr_nodes > cs->mem_cap) {
		cs->mem_cap = snap->nr_nodes;
		cs->mem = xrealloc(cs->mem, cs->mem_cap * sizeof(uint64_t));
	}
	if (is_vanished(read_mem(cs, pdfd, dname, rel)))
		return;

	snap_make_id(id, runtime, name);
	g = snap_add_guest(snap);
	memcpy(g->id, id, sizeof(id));
	g->kind = GUEST_CONTAINER;
	snprintf(g->runtime, sizeof(g->runtime), "%s", runtime);
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->cgroup = xstrdup(rel);
	g->nr_threads = m.nr_threads;
	g->nr_procs = m.nr_procs;
	g->main_pid = m.main_pid;
	g->cpu_usage_ns = usage;
	prev = cpu_prev_find(cs, id);
	g->cpu_use = have_usage ? cpu_rate(cs, prev, usage) : NAN;
	if (have_usage && isnan(g->cpu_use) && cs->gen > 1 && !prev)
		g->cpu_use = young_guest_rate(cs, m.main_pid, usage);
	if (snap->nr_nodes)
		memcpy(g->mem_node, cs->mem, snap->nr_nodes * sizeof(uint64_t));
	g->mems = mems;
	if (ps->ok) {
		snap_guest_set_cpus(snap, g, &cpus, &ps->cpus);
		g->allowed_mems = ps->mems;
	} else {
		snap_guest_set_cpus(snap, g, &cpus, &cpus);
		g->allowed_mems = mems;
	}
	g->policy.mode = GPOL_AUTO;
	g->policy.source = GPOL_SRC_DEFAULT;
	if (have_usage) {
		unsigned thr_off, nr_thr;

		thread_nodes(cs, g, prev, &thr_off, &nr_thr);
		cpu_record(cs, id, usage, thr_off, nr_thr);
	}
}

static void measure(struct cgscan *cs, int pdfd, const char *prel, struct parent_sets *ps,
		    const char *dname, char *rel, size_t rlen, const char *runtime, const char *name)
{
	cs->cur = fdc_get(cs, rel);
	cs->cur->gen = cs->gen;
	measure_guest(cs, pdfd, prel, ps, dname, rel, rlen, runtime, name);
	cs->cur = NULL;
}

/* ---- the walk ---------------------------------------------------------- */

static bool in_any_scope(const struct cgscan *cs, const char *rel)
{
	if (!cs->nr_scopes)
		return true;
	for (unsigned i = 0; i < cs->nr_scopes; i++)
		if (cgh_rel_under(rel, cs->scopes[i]))
			return true;
	return false;
}

static bool above_a_scope(const struct cgscan *cs, const char *rel)
{
	for (unsigned i = 0; i < cs->nr_scopes; i++)
		if (cgh_rel_under(cs->scopes[i], rel))
			return true;
	return false;
}

static bool is_parent(const struct cgscan *cs, const char *rel)
{
	for (unsigned i = 0; i < cs->nr_parents; i++)
		if (strcmp(cs->parents[i], rel) == 0)
			return true;
	return false;
}

/* Walk the directory DFD (REL, DEPTH levels down), which this takes over:
 * every path out of here closes it. */
static void walk(struct cgscan *cs, int dfd, char *rel, size_t rlen, unsigned depth)
{
	struct parent_sets ps = { .read = false };
	char prel[PATH_MAX];
	bool parent_cfg;
	DIR *d;

	if (depth >= WALK_MAX_DEPTH) {
		close(dfd);
		snap_warn(cs->snap, "cgroup %s: more than %d levels deep, not searched further", rel,
			  WALK_MAX_DEPTH);
		return;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	memcpy(prel, rlen ? rel : "/", rlen ? rlen + 1 : 2);
	parent_cfg = is_parent(cs, prel);
	for (struct dirent *de; (de = readdir(d));) {
		size_t nl = strlen(de->d_name);
		char runtime[GUEST_RUNTIME_MAX], name[128];
		bool guest = false, scoped;
		struct stat st;
		int cfd;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type == DT_UNKNOWN &&
		    (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		     !S_ISDIR(st.st_mode)))
			continue;
		if (rlen + 1 + nl >= PATH_MAX)
			continue;
		rel[rlen] = '/';
		memcpy(rel + rlen + 1, de->d_name, nl + 1);

		scoped = in_any_scope(cs, rel);
		if (!scoped && !above_a_scope(cs, rel))
			goto next;
		if (name_excluded(de->d_name, nl))
			goto next;
		if (classify_one(rel, runtime, name)) {
			guest = true;
		} else {
			const struct runc_ent *re = runc_find(cs, rel);

			if (re) {
				snprintf(runtime, sizeof(runtime), "runc");
				snprintf(name, sizeof(name), "%s", re->id);
				guest = true;
			} else if (parent_cfg) {
				snprintf(runtime, sizeof(runtime), "custom");
				copy_name(name, de->d_name, nl);
				guest = true;
			}
		}
		if (guest) {
			/* Outside the scopes a guest is neither reported nor
			 * searched: its subtree is its own. */
			if (scoped)
				measure(cs, dirfd(d), prel, &ps, de->d_name, rel, rlen + 1 + nl,
					runtime, name);
			goto next;
		}
		/* Leaves have nlink 2 on kernfs: no need to open them. */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_nlink == 2)
			goto next;
		cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd >= 0)
			walk(cs, cfd, rel, rlen + 1 + nl, depth + 1);
next:
		rel[rlen] = '\0';
	}
	closedir(d);
}

static int warn_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cgscan_scan(struct cgscan *cs, struct snapshot *snap, int64_t now_ns)
{
	unsigned first_warning = snap->nr_warnings;
	char rel[PATH_MAX];
	struct cpu_prev *t;
	unsigned tc;
	int fd;

	fd = open(cs->hier.dir[CGC_CPUSET], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	cs->snap = snap;
	cs->now_ns = now_ns;
	cs->nr_next = 0;
	cs->nr_thr_next = 0;
	cs->proc_fd = -1;
	mask_zero(&cs->warned_nodes);
	snap->layout = cs->hier.layout;
	if (!cgh_has(&cs->hier, CGC_MEMORY))
		snap_warn(snap, "no memory controller: guests' memory per node is unknown");
	if (!cgh_has(&cs->hier, CGC_CPUACCT))
		snap_warn(snap, "no cpuacct controller: guests' CPU use is unknown");

	/* Other v1 hierarchies are read relative to their roots: shorter
	 * lookups than absolute paths. */
	for (unsigned c = 0; c < CGC_NR; c++) {
		cs->ctrl_fd[c] = -1;
		if ((c == CGC_MEMORY || c == CGC_CPUACCT) && cgh_has(&cs->hier, c) &&
		    strcmp(cs->hier.dir[c], cs->hier.dir[CGC_CPUSET]) != 0)
			cs->ctrl_fd[c] = open(cs->hier.dir[c], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}

	runc_load(cs);
	rel[0] = '\0';
	cs->gen++;
	walk(cs, fd, rel, 0, 0);
	fdc_sweep(cs);
	runc_clear(cs);
	if (cs->proc_fd >= 0)
		close(cs->proc_fd);
	cs->proc_fd = -1;
	for (unsigned c = 0; c < CGC_NR; c++)
		if (cs->ctrl_fd[c] >= 0)
			close(cs->ctrl_fd[c]);

	/* Stable warning order whatever order readdir gave. */
	if (snap->nr_warnings > first_warning + 1)
		qsort(snap->warnings + first_warning, snap->nr_warnings - first_warning,
		      sizeof(char *), warn_cmp);

	if (cs->nr_next)
		qsort(cs->next, cs->nr_next, sizeof(*cs->next), prev_cmp);
	t = cs->prev;
	cs->prev = cs->next;
	cs->next = t;
	tc = cs->cap_prev;
	cs->cap_prev = cs->cap_next;
	cs->cap_next = tc;
	cs->nr_prev = cs->nr_next;
	cs->nr_next = 0;
	{
		struct thr_tick *tt = cs->thr_prev;

		cs->thr_prev = cs->thr_next;
		cs->thr_next = tt;
		tc = cs->cap_thr_prev;
		cs->cap_thr_prev = cs->cap_thr_next;
		cs->cap_thr_next = tc;
		cs->nr_thr_next = 0;
	}
	cs->snap = NULL;
	return 0;
}
