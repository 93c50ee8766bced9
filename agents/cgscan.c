/* cgscan.c — the container source (see cgscan.h for the naming rules).
 *
 * One scan walks the hierarchy that holds cpuset (the one we act on) with
 * openat/fdopendir, never following symlinks, only into the configured
 * scopes and their ancestors, and stops at each guest: a guest's subtree
 * belongs to it. libvirt's groups and runtime monitors (libpod-conmon-*,
 * lxc.monitor.*) are pruned wherever they appear.
 *
 * Which rule names a guest, strongest first:
 *   1. the name rules (cgname.c: docker, kubernetes, podman, lxc,
 *      nspawn) — docker and podman run on runc, and their names are what
 *      an operator knows;
 *   2. runc state (state.json cgroup_paths) — "runc-<id>", or
 *      "containerd-<id>" from containerd's runc roots;
 *   3. a configured parent — "custom-<child dir name>".
 * A configured parent guarantees discovery of its children; it does not
 * rename a child another rule recognises.
 *
 * Files are read into one scratch buffer owned by struct cgscan, so a scan
 * allocates nothing per guest beyond what the snapshot keeps (its cgroup
 * string and mem_node array).
 */
#include "cgscan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgfdc.h"
#include "cglabel.h"
#include "cgname.h"
#include "cgproc.h"
#include "cgrunc.h"
#include "cgthr.h"
#include "devcg.h"
#include "devnode.h"
#include "kubestate.h"
#include "hugetlb.h"
#include "../orchestrator/base/clock.h"
#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/parse.h"
#include "../orchestrator/base/procstat.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"
#include "../orchestrator/model/numastat.h"

#define WALK_MAX_DEPTH 64
#define READ_MAX (64u << 20)   /* a tasks file of a few million threads */
#define LIST_SHORT 2048u       /* half the smallest page: see rd_fd_until */
/* A guest's container cgroups with a cpuset of their own that get a
 * part each (snap_part); a pod has a handful. */
#define CGSCAN_PARTS_MAX 16
/* A guest's child cgroups whose threads are told apart while its lists
 * are read, before it is known whether any of them is a part: as many as
 * cgthr's part numbers hold (an unsigned char, CGTHR_NO_PART excluded). */
#define CGSCAN_KIDS_MAX CGTHR_NO_PART

struct cgscan {
	struct host_paths hp;
	struct cg_hier hier;
	bool v2;                      /* cpuset lives in the v2 tree */
	bool huge_cg;                 /* this scan: guests' hugetlb.<size>.numa_stat may exist */
	char huge_v1[PATH_MAX];       /* the v1 hugetlb hierarchy's root, "" if none */
	char dev_v1[PATH_MAX];        /* the v1 devices hierarchy's root, "" if none */
	struct devcg_cache *devc;     /* devices.list texts' meanings */
	char cpuset_host[PATH_MAX];   /* cpuset root as the host names it */
	long page_size;

	unsigned nr_scopes;
	char **scopes;
	unsigned nr_parents;
	char **parents;
	unsigned nr_runc_roots;
	char **runc_roots;            /* resolved: fixture root prefixed */
	unsigned nr_ctrd_roots;
	char **ctrd_roots;            /* containerd's, resolved the same way */

	struct cgthr thr;             /* CPU use across scans */
	struct cglabel *label;        /* names from the runtimes' state */

	/* The kubelet's checkpoints (kubestate.h), re-read when changed. */
	char kubelet_dir[PATH_MAX];
	struct kube_state kube;
	struct kube_file {
		const char *name;
		bool have;
		struct timespec mtime;
		off_t size;
		ino_t ino;            /* the kubelet replaces its checkpoints by rename */
		char err[256];        /* why the last read failed, "" if none */
	} kfile[2], kconf;            /* kconf: its config.yaml (reservedSystemCPUs) */
	struct kube_file kdev;        /* device-plugins/kubelet_internal_checkpoint */
	cpumask_t kube_reserved;      /* left out of the shared pool */
	bool reserved_set;            /* by [kubelet] reserved_cpus: config.yaml unread */
	unsigned gen;                 /* scans made */

	/* Per-scan state. */
	struct cgrunc runc;
	struct snapshot *snap;
	int64_t now_ns;
	int64_t scan_mono_ns;         /* the monotonic clock when this scan began */
	nodemask_t warned_nodes;
	int ctrl_fd[CGC_NR];          /* v1 memory/cpuacct roots, -1 if unused */
	uint64_t *mem;                /* scratch [nr_nodes] */
	unsigned mem_cap;

	char *buf;                    /* scratch for file contents */
	size_t bufcap;

	struct cgfdc fdc;             /* guests' files kept open */
	struct cgfdc_ent *cur;        /* the guest being measured, or NULL */

	/* The guest being measured: its child cgroups as sum_subtree found
	 * them, each a part (snap_part) if the guest is spread over nodes
	 * and the child has a cpuset of its own (parts_attach). Their paths
	 * are in one pool, so a guest's children cost no allocation. */
	struct cgscan_kid {
		size_t rel_off;       /* its path in kid_rel */
		pid_t pid;            /* its smallest pid, 0: none */
	} *kids;
	unsigned nr_kids, cap_kids;
	char *kid_rel;
	size_t kid_len, kid_cap;

	/* The guest's children as its listing finds them this scan, kept
	 * in its cgfdc entry for the next (kids_cached): their names, one
	 * after the other, and inodes; LST_OK while each is a leaf read
	 * whole. */
	char *lst_names;
	size_t lst_len, lst_cap;
	ino_t *lst_ino;
	unsigned lst_n, lst_cap_n;
	bool lst_ok;
};

/* ---- helpers ---------------------------------------------------------- */

static void parts_reset(struct cgscan *cs);
static int part_begin(struct cgscan *cs, const char *rel);
static void part_end(struct cgscan *cs, int i, pid_t pid);

static bool is_vanished(int r)
{
	return r == -ENOENT || r == -ENODEV || r == -ESRCH;
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
		 * page per read: a read of a full page is not the end (taking
		 * the first page as all would lose most threads of a large
		 * guest). But seq_file stops filling a read short of the
		 * buffer only at the end or when its page-sized buffer cannot
		 * take the next record (a pid line, a dozen bytes at most): a
		 * read of less than LIST_SHORT bytes is the end too, which
		 * spares the read() == 0 of every small guest's two lists. */
		if (n + 1 < cs->bufcap && (!to_eof || (size_t)r < LIST_SHORT))
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
		/* (not snprintf: its format parsing was a tenth of a scan's
		 * instructions, a path a file) */
		size_t dl = strlen(dir), fl = strlen(file);

		if (dl + 1 + fl >= sizeof(path))
			return -ENAMETOOLONG;
		memcpy(path, dir, dl);
		path[dl] = '/';
		memcpy(path + dl + 1, file, fl + 1);
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

/* rd() (TO_EOF: rd_list()) through the current guest's open file SLOT
 * (-1: not cached). */
static int rd_slot_until(struct cgscan *cs, int slot, int dfd, const char *dir, const char *file,
			 bool to_eof)
{
	struct cgfdc_ent *e = slot >= 0 ? cs->cur : NULL;
	int fd, r;

	if (e && e->fd[slot] >= 0) {
		r = rd_fd_until(cs, e->fd[slot], to_eof);
		if (r == 0)
			return 0;
		/* Gone (ENODEV), or a cgroup recreated under the same name:
		 * open afresh below, which tells the two apart. */
		cgfdc_drop(&cs->fdc, e, (enum cgfdc_slot)slot);
	}
	fd = open_at(dfd, dir, file);
	if (fd < 0)
		return fd;
	r = rd_fd_until(cs, fd, to_eof);
	if (!(r == 0 && e && cgfdc_keep(&cs->fdc, e, (enum cgfdc_slot)slot, fd)))
		close(fd);
	return r;
}

static int rd_slot(struct cgscan *cs, int slot, int dfd, const char *dir, const char *file)
{
	return rd_slot_until(cs, slot, dfd, dir, file, false);
}

/* Does the directory PDFD/NAME still exist? */
static bool dir_gone(int pdfd, const char *name)
{
	struct stat st;

	return fstatat(pdfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 && is_vanished(-errno);
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
	free_strv(cs->ctrd_roots, cs->nr_ctrd_roots);
	cgthr_clear(&cs->thr);
	cglabel_free(cs->label);
	kube_clear(&cs->kube);
	parts_reset(cs);
	free(cs->kids);
	free(cs->kid_rel);
	free(cs->lst_names);
	free(cs->lst_ino);
	free(cs->mem);
	free(cs->buf);
	cgfdc_clear(&cs->fdc);
	devcg_cache_free(cs->devc);
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

/* Configured state roots (absolute host paths) as this process sees
 * them: under the fixture ROOT when not live. */
static char **resolve_roots(const struct host_paths *hp, const char *root, char **in, unsigned n,
			    unsigned *nout, int *err)
{
	char **out = xcalloc(n, sizeof(char *));

	for (unsigned i = 0; i < n; i++) {
		const char *p = in[i];

		if (!p || p[0] != '/') {
			*err = -EINVAL;
			continue;
		}
		out[i] = hp->live ? xstrdup(p) : xasprintf("%s%s", root, p);
	}
	*nout = n;
	return out;
}

/* A runtime's state directory into OUT: the configured one (an absolute
 * host path, under the fixture ROOT when not live) or VARDIR/DEFLT. */
static int var_state_dir(const struct host_paths *hp, const char *root, const char *conf, const char *deflt,
			 char out[PATH_MAX])
{
	if (conf && conf[0] != '/')
		return -EINVAL;
	if ((conf ? snprintf(out, PATH_MAX, "%s%s", hp->live ? "" : root, conf) :
		    snprintf(out, PATH_MAX, "%s/%s", hp->vardir, deflt)) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/* dockerd's data root as this process sees it into OUT: [containers]
 * docker_root when set (it wins: dockerd's own --data-root option is not
 * visible from here, so only the operator can say it); else "data-root"
 * in dockerd's daemon.json ([containers] docker_config, default
 * /etc/docker/daemon.json, under the fixture ROOT when not live); else
 * <var>/lib/docker. An unreadable daemon.json is said and the default
 * used: dockerd itself would not start with it. */
static int docker_data_dir(const struct host_paths *hp, const char *root, const struct cgscan_config *cfg,
			   char out[PATH_MAX])
{
	const char *dc = cfg && cfg->docker_config ? cfg->docker_config : "/etc/docker/daemon.json";
	char conf[PATH_MAX], dr[PATH_MAX], err[PATH_MAX + 128];
	int r;

	if (cfg && cfg->docker_root)
		return var_state_dir(hp, root, cfg->docker_root, "lib/docker", out);
	if (dc[0] != '/')
		return -EINVAL;
	if (snprintf(conf, sizeof(conf), "%s%s", hp->live ? "" : root, dc) >= (int)sizeof(conf))
		return -ENAMETOOLONG;
	r = cglabel_docker_data_root(conf, dr, sizeof(dr), err, sizeof(err));
	if (r < 0)
		log_warn("%s; docker containers are named from %s/lib/docker", err, hp->vardir);
	if (r <= 0)
		return var_state_dir(hp, root, NULL, "lib/docker", out);
	log_info("docker's data root %s (data-root in %s)", dr, dc);
	return var_state_dir(hp, root, dr, "lib/docker", out);
}

/* A v1 (or hybrid) host's hugetlb hierarchy: mounted on its own, as
 * systemd and the distributions mount it, at CGROUPFS/hugetlb (only
 * cpu,cpuacct and net_cls,net_prio share a mount). Its cgroups have
 * hugetlb.<size>.numa_stat from Linux 5.16 on. */
static void huge_v1_detect(struct cgscan *cs)
{
	char dir[PATH_MAX];

	cs->huge_v1[0] = '\0';
	if (cs->hier.layout != CG_LAYOUT_V1 && cs->hier.layout != CG_LAYOUT_HYBRID)
		return;
	if (snprintf(dir, sizeof(dir), "%s/hugetlb", cs->hp.cgroupfs) < (int)sizeof(dir) && fs_is_dir(dir))
		snprintf(cs->huge_v1, sizeof(cs->huge_v1), "%s", dir);
}

/* The v1 devices hierarchy (its devices.list; v2 has none to read). */
static void dev_v1_detect(struct cgscan *cs)
{
	char dir[PATH_MAX];

	cs->dev_v1[0] = '\0';
	if (cs->hier.layout != CG_LAYOUT_V1 && cs->hier.layout != CG_LAYOUT_HYBRID)
		return;
	if (snprintf(dir, sizeof(dir), "%s/devices", cs->hp.cgroupfs) < (int)sizeof(dir) && fs_is_dir(dir)) {
		snprintf(cs->dev_v1, sizeof(cs->dev_v1), "%s", dir);
		cs->devc = devcg_cache_new(&cs->hp);
	}
}

int cgscan_new(const struct host_paths *hp, const struct cgscan_config *cfg,
	       struct cgscan **out)
{
	struct cgscan *cs;
	char root[PATH_MAX], docker_dir[PATH_MAX];
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
	huge_v1_detect(cs);
	dev_v1_detect(cs);
	cs->page_size = sysconf(_SC_PAGESIZE);
	if (cs->page_size <= 0)
		cs->page_size = 4096;
	cgthr_init(&cs->thr, hp->procfs);
	cgfdc_init(&cs->fdc);
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
		if (cfg->runc_roots && cfg->nr_runc_roots)
			cs->runc_roots = resolve_roots(hp, root, cfg->runc_roots, cfg->nr_runc_roots,
						       &cs->nr_runc_roots, &err);
		if (cfg->containerd_roots && cfg->nr_containerd_roots)
			cs->ctrd_roots = resolve_roots(hp, root, cfg->containerd_roots,
						       cfg->nr_containerd_roots, &cs->nr_ctrd_roots, &err);
	}
	cs->kfile[0].name = "cpu_manager_state";
	cs->kfile[1].name = "memory_manager_state";
	r = var_state_dir(hp, root, cfg ? cfg->kubelet_root : NULL, "lib/kubelet", cs->kubelet_dir);
	if (r < 0)
		err = r;
	r = docker_data_dir(hp, root, cfg, docker_dir);
	if (r < 0)
		err = r;
	else
		cs->label = cglabel_new(hp->vardir, docker_dir);
	cs->kconf.name = "config.yaml";
	cs->kdev.name = "device-plugins/kubelet_internal_checkpoint";
	cs->reserved_set = cfg && cfg->kubelet_reserved;
	if (cs->reserved_set && mask_parse(cfg->kubelet_reserved, &cs->kube_reserved) < 0)
		err = -EINVAL;
	if (err) {
		cgscan_free(cs);
		return err;
	}
	if (!cs->nr_runc_roots) {
		cs->nr_runc_roots = 1;
		cs->runc_roots = xcalloc(1, sizeof(char *));
		cs->runc_roots[0] = xasprintf("%s/runc", hp->rundir);
	}
	if (!cs->nr_ctrd_roots) {
		cs->nr_ctrd_roots = 1;
		cs->ctrd_roots = xcalloc(1, sizeof(char *));
		cs->ctrd_roots[0] = xasprintf("%s/containerd/runc", hp->rundir);
	}
	cs->bufcap = 64 * 1024;
	cs->buf = xmalloc(cs->bufcap);
	*out = cs;
	return 0;
}

int cgscan_read_usage(struct cgscan *cs, const char *rel, uint64_t *ns)
{
	struct cgfdc_ent *e = cgfdc_find(&cs->fdc, rel);
	int r;

	if (!e || e->fd[CGFDC_CPU] < 0)
		return -ENOENT;
	/* An error (a cgroup removed reads ENODEV) is the next scan's to
	 * sort out: the file stays as it is. */
	r = rd_fd(cs, e->fd[CGFDC_CPU]);
	return r < 0 ? r : cgscan_parse_usage(cs->buf, cs->hier.v2[CGC_CPUACCT], ns);
}

unsigned cgscan_thread_ids(const struct cgscan *cs, const char *id, pid_t *out, unsigned max)
{
	return cgthr_prev_tids(&cs->thr, id, out, max);
}

int cgscan_read_thread(struct cgscan *cs, pid_t tid, uint64_t *ns, int *cpu)
{
	return cgthr_read_thread(&cs->thr, tid, ns, cpu);
}

const struct cg_hier *cgscan_hier(const struct cgscan *cs)
{
	return &cs->hier;
}

/* ---- measuring one guest ---------------------------------------------- */

struct gmeas {
	unsigned nr_threads, nr_procs;
	pid_t main_pid;
	pid_t min_pid;      /* smallest pid below the guest's own cgroup */
	bool vanished;
};

/* Count lines; the first line's pid into *first (0 if none). With
 * TIDS, the ids also go to the thread accounting (cgthr_add_tid). */
static int count_pids(const char *s, unsigned *count, pid_t *first, pid_t *min, struct cgthr *tids)
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
			if (tids)
				cgthr_add_tid(tids, (pid_t)v);
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

/* rd_list() through the current guest's open child file I (cgfdc.h's
 * kid_fd), kept open when the budget allows. */
static int rd_kid_list(struct cgscan *cs, unsigned i, int dfd, const char *dir, const char *file)
{
	struct cgfdc_ent *e = cs->cur;
	int fd, r;

	if (e->kid_fd[i] >= 0) {
		r = rd_fd_until(cs, e->kid_fd[i], true);
		if (r == 0)
			return 0;
		/* gone (ENODEV): open afresh, which tells */
		cgfdc_kid_drop(&cs->fdc, e, i);
	}
	fd = open_at(dfd, dir, file);
	if (fd < 0)
		return fd;
	r = rd_fd_until(cs, fd, true);
	if (!(r == 0 && cgfdc_keep_kid(&cs->fdc, e, i, fd)))
		close(fd);
	return r;
}

/* Read procs and threads of DFD (REL for messages). SELF: the guest's own
 * cgroup (its first pid is the main pid). KID >= 0: the guest's child of
 * that number in its cgfdc entry (kids_cached). Returns a vanish code or 0. */
static int read_pids(struct cgscan *cs, int dfd, const char *dir, const char *rel, bool self, int kid,
		     struct gmeas *m)
{
	const char *files[2] = { "cgroup.procs", threads_file(cs) };
	/* The guest's own lists and its children's stay open where that is
	 * safe (cgfdc.h). */
	const int slots[2] = { CGFDC_PROCS, CGFDC_THREADS };
	bool keep = self && cs->v2, keep_kid = kid >= 0 && cs->v2 && cs->cur && cs->cur->kid_fd;

	for (unsigned i = 0; i < 2; i++) {
		int r = keep ? rd_slot_until(cs, slots[i], dfd, dir, files[i], true) :
			keep_kid ? rd_kid_list(cs, 2 * (unsigned)kid + i, dfd, dir, files[i]) :
			rd_list(cs, dfd, dir, files[i]);

		if (r == 0)
			r = i == 0 ? count_pids(cs->buf, &m->nr_procs, self ? &m->main_pid : NULL,
						self ? NULL : &m->min_pid, NULL)
				   : count_pids(cs->buf, &m->nr_threads, NULL, NULL, &cs->thr);
		if (r == -EINVAL)
			snap_warn(cs->snap, "cgroup %s: %s: malformed", rel, files[i]);
		else if (is_vanished(r))
			return r;
		else if (r < 0)
			snap_warn(cs->snap, "cgroup %s: cannot read %s: %s", rel, files[i], strerror(-r));
	}
	return 0;
}

/* A child of the guest, NAME (NL bytes) with inode INO, as its listing
 * found it (kids_cached); LEAF: no child of its own, read whole. */
static void kid_listed(struct cgscan *cs, const char *name, size_t nl, ino_t ino, bool leaf)
{
	if (!leaf)
		cs->lst_ok = false;
	if (!cs->lst_ok)
		return;
	if (cs->lst_n == cs->lst_cap_n) {
		cs->lst_cap_n = cs->lst_cap_n ? cs->lst_cap_n * 2 : 8;
		cs->lst_ino = xrealloc(cs->lst_ino, cs->lst_cap_n * sizeof(ino_t));
	}
	if (cs->lst_len + nl + 1 > cs->lst_cap) {
		cs->lst_cap = (cs->lst_len + nl + 1) * 2;
		cs->lst_names = xrealloc(cs->lst_names, cs->lst_cap);
	}
	memcpy(cs->lst_names + cs->lst_len, name, nl + 1);
	cs->lst_len += nl + 1;
	cs->lst_ino[cs->lst_n++] = ino;
}

static void sum_subtree(struct cgscan *cs, int fd, char *rel, size_t rlen, unsigned depth,
			struct gmeas *m);

/* One child REL of a guest's subtree counted into M, at DEPTH 0 as a
 * part the guest may use (part_begin): DIR under DFD (its lists only:
 * kids_cached found it a leaf), or (DIR NULL) the directory DFD, which
 * this takes over, with its own subtree unless a leaf; KID: its number
 * in the guest's cgfdc entry, or -1. Returns 1: a
 * leaf read whole (ST its stat); 0: read, with a subtree (or through
 * DIR); else a negative errno. */
static int sum_child(struct cgscan *cs, int dfd, const char *dir, int kid, char *rel, size_t rlen,
		     unsigned depth, struct gmeas *m, struct stat *st)
{
	pid_t min_pid;
	int part, r;

	part = depth == 0 ? part_begin(cs, rel) : -1;
	min_pid = m->min_pid;
	m->min_pid = 0;
	r = read_pids(cs, dfd, dir, rel, false, kid, m);
	if (!dir) {
		if (r == 0 && fstat(dfd, st) < 0)
			r = -errno;
		/* kernfs keeps nlink = 2 + subdirectories: leaves need no listing. */
		if (r == 0 && st->st_nlink != 2) {
			sum_subtree(cs, dfd, rel, rlen, depth + 1, m);
		} else {
			close(dfd);
			if (r == 0)
				r = 1;
		}
	}
	if (part >= 0)
		part_end(cs, part, m->min_pid);
	if (min_pid && (!m->min_pid || min_pid < m->min_pid))
		m->min_pid = min_pid;
	return r;
}

/* Sum procs/threads of every cgroup below the directory FD (which this
 * takes over). Descendants that vanish are skipped; the guest stays. */
static void sum_subtree(struct cgscan *cs, int fd, char *rel, size_t rlen, unsigned depth,
			struct gmeas *m)
{
	DIR *d = depth < WALK_MAX_DEPTH ? fdopendir(fd) : NULL;

	if (!d) {
		close(fd);
		cs->lst_ok = false;
		return;
	}
	for (struct dirent *de; (de = readdir(d));) {
		size_t nl = strlen(de->d_name);
		struct stat st;
		int cfd, r;

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (rlen + 1 + nl >= PATH_MAX) {
			cs->lst_ok = false;
			continue;
		}
		cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			/* a file (DT_UNKNOWN), a symlink, or gone */
			cs->lst_ok = false;
			continue;
		}
		rel[rlen] = '/';
		memcpy(rel + rlen + 1, de->d_name, nl + 1);
		r = sum_child(cs, cfd, NULL, -1, rel, rlen + 1 + nl, depth, m, &st);
		if (depth == 0)
			kid_listed(cs, de->d_name, nl, st.st_ino, r == 1);
		rel[rlen] = '\0';
	}
	closedir(d);
}

/* The guest's subtree (of its directory PDFD/DNAME, stat ST, at REL)
 * counted into M from the children its last listing found (cgfdc.h),
 * without listing it again: only while its directory is the same with
 * as many links (kernfs keeps nlink = 2 + subdirectories), each of
 * those children the same and still a leaf, so that the listing would
 * find them and only them. false: not known so; nothing counted. */
static bool kids_cached(struct cgscan *cs, int pdfd, const char *dname, const struct stat *st, char *rel,
			size_t rlen, struct gmeas *m)
{
	const struct cgfdc_ent *e = cs->cur;
	size_t dl = strlen(dname);
	char dir[PATH_MAX];
	const char *k;
	unsigned i;

	if (!e || !e->kid_names || e->dir_ino != st->st_ino || e->dir_nlink != st->st_nlink)
		return false;
	for (i = 0, k = e->kid_names; i < e->nr_kids; i++, k += strlen(k) + 1) {
		size_t nl = strlen(k);
		struct stat kst;

		/* room for the lists' names after the child's path */
		if (dl + 1 + nl + 32 >= sizeof(dir) || rlen + 1 + nl >= PATH_MAX)
			return false;
		memcpy(dir, dname, dl);
		dir[dl] = '/';
		memcpy(dir + dl + 1, k, nl + 1);
		if (fstatat(pdfd, dir, &kst, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(kst.st_mode) ||
		    kst.st_ino != e->kid_ino[i] || kst.st_nlink != 2)
			return false;
	}
	for (i = 0, k = e->kid_names; i < e->nr_kids; i++, k += strlen(k) + 1) {
		size_t nl = strlen(k);
		struct stat kst;

		memcpy(dir, dname, dl);
		dir[dl] = '/';
		memcpy(dir + dl + 1, k, nl + 1);
		rel[rlen] = '/';
		memcpy(rel + rlen + 1, k, nl + 1);
		(void)sum_child(cs, pdfd, dir, (int)i, rel, rlen + 1 + nl, 0, m, &kst);
	}
	rel[rlen] = '\0';
	return true;
}

/* Count the guest's subtree (kids_cached, else listed by sum_subtree)
 * into M; false: its directory is gone. */
static bool sum_kids(struct cgscan *cs, int pdfd, const char *dname, const struct stat *st, char *rel,
		     size_t rlen, struct gmeas *m)
{
	int gfd;

	if (kids_cached(cs, pdfd, dname, st, rel, rlen, m))
		return true;
	gfd = openat(pdfd, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (gfd < 0)
		return false; /* a directory a moment ago: gone */
	cs->lst_ok = true;
	cs->lst_n = 0;
	cs->lst_len = 0;
	sum_subtree(cs, gfd, rel, rlen, 0, m);
	rel[rlen] = '\0';
	if (!cs->cur)
		return true;
	if (cs->lst_ok && cs->lst_n + 2 == st->st_nlink)
		cgfdc_kids_set(&cs->fdc, cs->cur, st->st_ino, st->st_nlink, cs->lst_names, cs->lst_len, cs->lst_ino,
			       cs->lst_n);
	else
		cgfdc_kids_forget(&cs->fdc, cs->cur);
	return true;
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
	r = rd_slot(cs, pdfd >= 0 ? (cpus ? CGFDC_CPUS : CGFDC_MEMS) : -1, dfd, dir, used);
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

/* rd_ctrl() of the cgroup that /proc/PID/cgroup names for controller C,
 * when it is not REL: a runtime may put a container's cgroups of other
 * v1 hierarchies at other paths (cgproc.h). -ENOENT when it names REL,
 * the root (the host's, not the container's) or nothing. */
static int rd_ctrl_of_pid(struct cgscan *cs, enum cg_ctrl c, int slot, pid_t pid, const char *rel,
			  const char *file)
{
	char at[PATH_MAX], path[PATH_MAX];
	int r;

	if (pid <= 0 || cs->hier.v2[c] || strcmp(cs->hier.dir[c], cs->hier.dir[CGC_CPUSET]) == 0)
		return -ENOENT;
	r = cgproc_read(cs->hp.procfs, pid, cgh_ctrl_name(c), at, sizeof(at));
	if (r < 0 || strcmp(at, rel) == 0 || strcmp(at, "/") == 0 || !cgh_rel_valid(at))
		return -ENOENT;
	r = cgh_path(&cs->hier, c, at, file, path, sizeof(path));
	if (r < 0)
		return r;
	log_debug("cgroup %s: %s read at %s, where process %d's %s cgroup is", rel, file, at, (int)pid,
		  cgh_ctrl_name(c));
	return rd_slot(cs, slot, AT_FDCWD, NULL, path);
}

int cgscan_parse_usage(const char *text, bool v2, uint64_t *ns)
{
	uint64_t v;
	int r;

	if (!text)
		return -EINVAL;
	if (!v2)
		return parse_u64(text, ns);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		static const char key[] = "usage_usec ";
		char num[32];
		size_t n;

		if (strncmp(p, key, sizeof(key) - 1) != 0)
			continue;
		p += sizeof(key) - 1;
		n = strcspn(p, "\n");
		if (n == 0 || n >= sizeof(num))
			return -EINVAL;
		memcpy(num, p, n);
		num[n] = '\0';
		r = parse_u64(num, &v);
		if (r < 0)
			return r;
		if (v > UINT64_MAX / 1000)
			return -ERANGE;
		*ns = v * 1000;
		return 0;
	}
	return -EINVAL;
}

/* When the guest whose usage was just read was read: the scan's time
 * plus how far into the scan that read came. A rate over the scan's one
 * time is off by the difference between the two scans' progress at that
 * guest (their reads, other guests' files, a stall of the agent's CPU),
 * most of all for a VM, whose reads come after libvirt's calls. A fixture root's time is the
 * caller's alone: its tests give exact times. */
static int64_t read_time(const struct cgscan *cs)
{
	if (!cs->hp.live)
		return cs->now_ns;
	return cs->now_ns + (clock_mono_ns() - cs->scan_mono_ns);
}

/* 0: usage read; 1: not available (warned); or a vanish code. */
static int read_cpu(struct cgscan *cs, int pdfd, const char *dname, const char *rel, pid_t pid,
		    uint64_t *usage)
{
	bool v2 = cs->hier.v2[CGC_CPUACCT];
	const char *file = v2 ? "cpu.stat" : "cpuacct.usage";
	uint64_t v;
	int r;

	r = rd_ctrl(cs, CGC_CPUACCT, CGFDC_CPU, pdfd, dname, rel, file);
	if (r == -EOPNOTSUPP)
		return 1; /* no cpuacct anywhere: warned once per scan */
	if (is_vanished(r) && !dir_gone(pdfd, dname)) {
		int r2 = rd_ctrl_of_pid(cs, CGC_CPUACCT, CGFDC_CPU, pid, rel, file);

		if (r2 != -ENOENT)
			r = r2;
	}
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
	r = cgscan_parse_usage(cs->buf, v2, &v);
	if (r < 0) {
		snap_warn(cs->snap, "cgroup %s: %s: malformed", rel, file);
		return 1;
	}
	*usage = v;
	return 0;
}


/* Fill cs->mem from memory.numa_stat. 0: done; 1: not measured (zeros,
 * warned); or a vanish code. */
static int read_mem_into(struct cgscan *cs, int slot, int pdfd, const char *dname, const char *rel, pid_t pid,
			 uint64_t *mem)
{
	bool v2 = cs->hier.v2[CGC_MEMORY];
	const char *file = "memory.numa_stat";
	int r;

	memset(mem, 0, cs->snap->nr_nodes * sizeof(uint64_t));
	if (!cgh_has(&cs->hier, CGC_MEMORY))
		return 1; /* warned once per scan */
	r = rd_ctrl(cs, CGC_MEMORY, slot, pdfd, dname, rel, file);
	if (is_vanished(r) && !dir_gone(pdfd, dname)) {
		int r2 = rd_ctrl_of_pid(cs, CGC_MEMORY, slot, pid, rel, file);

		if (r2 != -ENOENT)
			r = r2;
	}
	if (is_vanished(r)) {
		if (dir_gone(pdfd, dname))
			return r;
		snap_warn(cs->snap, "cgroup %s: %s: missing%s", rel, file,
			  v2 ? "" : " in the memory hierarchy");
		return 1;
	}
	if (r < 0) {
		snap_warn(cs->snap, "cgroup %s: cannot read %s: %s", rel, file, strerror(-r));
		return 1;
	}
	{
		nodemask_t unknown;

		mask_zero(&unknown);
		r = numastat_parse(cs->buf, v2, cs->page_size, cs->snap, mem, &unknown);
		mask_foreach(id, &unknown) {
			if (mask_test(&cs->warned_nodes, id))
				continue;
			mask_set(&cs->warned_nodes, id);
			snap_warn(cs->snap, "cgroup %s: memory.numa_stat: unknown node %d ignored", rel, id);
		}
	}
	if (r < 0) {
		memset(mem, 0, cs->snap->nr_nodes * sizeof(uint64_t));
		snap_warn(cs->snap, "cgroup %s: %s: malformed, memory not measured", rel, file);
		return 1;
	}
	return 0;
}

static int read_mem(struct cgscan *cs, int pdfd, const char *dname, const char *rel, pid_t pid)
{
	return read_mem_into(cs, CGFDC_MEM, pdfd, dname, rel, pid, cs->mem);
}

/* ---- a guest's parts (snap_part) ---------------------------------------- */

static void parts_reset(struct cgscan *cs)
{
	cs->nr_kids = 0;
	cs->kid_len = 0;
	cgthr_set_part(&cs->thr, CGTHR_NO_PART);
}

/* Does the child cgroup at DIR carry a cpuset of its own? In v1 every
 * cgroup does (a task may join one only then); in v2 one whose runtime
 * wrote cpuset.cpus or cpuset.mems (empty: inherits). */
static bool own_cpuset(struct cgscan *cs, const char *dir)
{
	if (!cs->v2)
		return true;
	for (unsigned i = 0; i < 2; i++)
		if (rd(cs, AT_FDCWD, dir, i ? "cpuset.mems" : "cpuset.cpus") == 0 &&
		    cs->buf[strspn(cs->buf, " \n")] != '\0')
			return true;
	return false;
}

/* A child REL of the guest being measured: its threads are counted for
 * it (cgthr_set_part) until part_end. Whether it is a part is asked only
 * of a guest that can use parts (parts_attach): most guests sit on one
 * node, and a host of hundreds of pods would read two files of each of
 * their containers every scan for nothing. Returns its index, or -1. */
static int part_begin(struct cgscan *cs, const char *rel)
{
	size_t n = strlen(rel) + 1;

	if (cs->nr_kids >= CGSCAN_KIDS_MAX || !cs->snap->nr_nodes)
		return -1;
	if (cs->nr_kids == cs->cap_kids) {
		cs->cap_kids = cs->cap_kids ? cs->cap_kids * 2 : 8;
		cs->kids = xrealloc(cs->kids, cs->cap_kids * sizeof(*cs->kids));
	}
	if (cs->kid_len + n > cs->kid_cap) {
		cs->kid_cap = (cs->kid_len + n) * 2;
		cs->kid_rel = xrealloc(cs->kid_rel, cs->kid_cap);
	}
	memcpy(cs->kid_rel + cs->kid_len, rel, n);
	cs->kids[cs->nr_kids].rel_off = cs->kid_len;
	cs->kids[cs->nr_kids].pid = 0;
	cs->kid_len += n;
	cgthr_set_part(&cs->thr, cs->nr_kids);
	return (int)cs->nr_kids++;
}

/* Child I's processes are counted (PID: the smallest, for a v1 memory
 * cgroup the runtime put elsewhere). */
static void part_end(struct cgscan *cs, int i, pid_t pid)
{
	cgthr_set_part(&cs->thr, CGTHR_NO_PART);
	cs->kids[i].pid = pid;
}

/* Part P (REL, at DIR; PID its smallest process): its effective mems and
 * memory per node. */
static void part_read(struct cgscan *cs, struct snap_part *p, const char *dir, const char *rel, pid_t pid)
{
	if (rd(cs, AT_FDCWD, dir, eff_mems_file(cs)) == 0)
		(void)mask_parse_list(cs->buf, p->mems.w, MASK_BITS(&p->mems));
	if (read_mem_into(cs, -1, AT_FDCWD, dir, rel, pid, p->mem_node) != 0) {
		free(p->mem_node);
		p->mem_node = NULL;
	}
}

/* G, whose CPUs span several nodes, gets a part for each child its scan
 * found with a cpuset of its own (the first CGSCAN_PARTS_MAX), and its
 * threads are renumbered to those parts. A guest on one node has none:
 * its children's cpusets are not read. */
static void parts_attach(struct cgscan *cs, struct snap_guest *g)
{
	unsigned char map[CGSCAN_KIDS_MAX];
	nodemask_t nodes;

	snap_cpus_to_nodes(cs->snap, g->cpus, &nodes);
	if (mask_count(&nodes) < 2 || !cs->nr_kids)
		return;
	for (unsigned i = 0; i < cs->nr_kids; i++) {
		const char *rel = cs->kid_rel + cs->kids[i].rel_off;
		char dir[PATH_MAX];

		map[i] = CGTHR_NO_PART;
		if (g->nr_parts >= CGSCAN_PARTS_MAX ||
		    cgh_path(&cs->hier, CGC_CPUSET, rel, NULL, dir, sizeof(dir)) < 0 || !own_cpuset(cs, dir))
			continue;
		map[i] = (unsigned char)g->nr_parts;
		part_read(cs, snap_guest_add_part(cs->snap, g, rel), dir, rel, cs->kids[i].pid);
	}
	cgthr_map_parts(&cs->thr, map, cs->nr_kids);
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

/* ---- the kubelet --------------------------------------------------------- */

/* Has F's file at PATH changed since it was last read (ST: its stat)?
 * false, and F forgotten, when it is not there. */
static bool kube_changed(struct kube_file *f, const char *path, struct stat *st)
{
	if (stat(path, st) < 0) {
		f->have = false;
		f->err[0] = '\0';
		return false;
	}
	if (f->have && st->st_mtim.tv_sec == f->mtime.tv_sec && st->st_mtim.tv_nsec == f->mtime.tv_nsec &&
	    st->st_size == f->size && st->st_ino == f->ino)
		return false;
	f->have = true;
	f->mtime = st->st_mtim;
	f->size = st->st_size;
	f->ino = st->st_ino;
	f->err[0] = '\0';
	return true;
}

/* The reserved CPUs from the kubelet's config.yaml when [kubelet]
 * reserved_cpus does not give them. */
static void kube_refresh_reserved(struct cgscan *cs)
{
	struct kube_file *f = &cs->kconf;
	char path[PATH_MAX], *buf = NULL;
	bool had = f->have;
	struct stat st;
	size_t len;
	int r;

	if (snprintf(path, sizeof(path), "%s/%s", cs->kubelet_dir, f->name) >= (int)sizeof(path))
		return;
	if (!kube_changed(f, path, &st)) {
		if (had && !f->have)
			mask_zero(&cs->kube_reserved);
		return;
	}
	mask_zero(&cs->kube_reserved);
	r = fs_read_regular("kubelet configuration", path, 1u << 20, &buf, &len, f->err, sizeof(f->err));
	if (r == 0 && kube_parse_reserved(buf, &cs->kube_reserved) < 0) {
		mask_zero(&cs->kube_reserved);
		snprintf(f->err, sizeof(f->err), "%s: reservedSystemCPUs is not a CPU list", f->name);
	}
	free(buf);
}

typedef int (*kube_parse_fn)(struct kube_state *ks, const char *text, char *err, size_t errsz);

/* Checkpoint F of the kubelet's directory, parsed by PARSE when it
 * changed; EMPTY (what a kubelet without that manager means) while it is
 * missing, and after a read error too with EMPTY_ON_ERROR (else the error
 * stands, as PARSE's callers read it). 0: read and parsed, 1: unchanged,
 * else a negative errno with the reason in F->err. */
static int kube_reload(struct cgscan *cs, struct kube_file *f, kube_parse_fn parse, const char *empty,
		       bool empty_on_error)
{
	char path[PATH_MAX], scratch[8], *buf = NULL;
	struct stat st;
	size_t len;
	int r;

	if (snprintf(path, sizeof(path), "%s/%s", cs->kubelet_dir, f->name) >= (int)sizeof(path))
		return 1;
	if (!kube_changed(f, path, &st)) {
		if (!f->have)
			parse(&cs->kube, empty, f->err, sizeof(f->err));
		return 1;
	}
	r = fs_read_regular(f->name, path, 16u << 20, &buf, &len, f->err, sizeof(f->err));
	if (r == 0)
		r = parse(&cs->kube, buf, f->err, sizeof(f->err));
	else if (empty_on_error)
		parse(&cs->kube, empty, scratch, sizeof(scratch));
	free(buf);
	return r;
}

/* The device manager's checkpoint when it changed: the devices of pods
 * (none without it, or while it cannot be read, which only warns: the
 * devices are a preference, not the kubelet's placement). The nodes of
 * the PCI addresses it gives none for are looked up in sysfs here, once
 * per change of the checkpoint, not by every scan for every pod. */
static void kube_refresh_dev(struct cgscan *cs)
{
	int r = kube_reload(cs, &cs->kdev, kube_parse_dev, "{\"Data\":{}}", true);

	if (r == 1)
		return;
	if (r == 0)
		log_debug("kubelet %s read", cs->kdev.name);
	for (unsigned k = 0; k < cs->kube.nr_pods; k++) {
		struct kube_pod *pod = &cs->kube.pods[k];

		mask_zero(&pod->dev_pci_nodes);
		for (unsigned i = 0; i < pod->nr_dev_pci; i++) {
			int node;

			if (devnode_of(&cs->hp, DEVNODE_PCI, pod->dev_pci[i], &node) == 0 && node >= 0)
				mask_set(&pod->dev_pci_nodes, node);
		}
	}
}

/* Pod G's devices, POD's in the checkpoint: their nodes as the kubelet
 * has them, else (PCI addresses) as sysfs had them when it was read. */
static void kube_devices(struct snap_guest *g, const struct kube_pod *pod)
{
	if (!pod || !pod->nr_dev)
		return;
	g->nr_devices = pod->nr_dev;
	mask_or(&g->dev_nodes, &pod->dev_nodes, &pod->dev_pci_nodes);
}

/* Re-read the kubelet's checkpoints that changed since the last scan; a
 * missing one is a kubelet without that manager (or no kubelet). */
static void kube_refresh(struct cgscan *cs)
{
	static const char *const none[2] = { "{\"policyName\":\"none\"}", "{\"policyName\":\"None\"}" };

	for (unsigned i = 0; i < 2; i++)
		if (kube_reload(cs, &cs->kfile[i], i ? kube_parse_mem : kube_parse_cpu, none[i], false) == 0)
			log_debug("kubelet %s read: %u pods with exclusive CPUs or NUMA assignments",
				  cs->kfile[i].name, cs->kube.nr_pods);
	if (!cs->reserved_set)
		kube_refresh_reserved(cs);
	kube_refresh_dev(cs);
	for (unsigned i = 0; i < 2; i++)
		if (cs->kfile[i].err[0])
			snap_warn(cs->snap, "kubelet %s", cs->kfile[i].err);
	if (cs->kconf.err[0])
		snap_warn(cs->snap, "kubelet %s", cs->kconf.err);
	if (cs->kdev.err[0])
		snap_warn(cs->snap, "kubelet %s: its pods' devices unknown", cs->kdev.err);
}

/* Pod G (uid UID) as the kubelet placed it: owned when it holds exclusive
 * CPUs or a NUMA assignment (or a checkpoint cannot be read); else, under
 * the static CPU Manager, bound to the shared pool (defaultCpuSet but the
 * reserved CPUs). */
static void kube_mark(struct cgscan *cs, struct snap_guest *g, const char *uid)
{
	cpumask_t pool;

	kube_devices(g, kube_find(&cs->kube, uid));
	for (unsigned i = 0; i < 2; i++) {
		/* What the kubelet decided is unknown: leave every pod to it. */
		if (cs->kfile[i].err[0]) {
			snprintf(g->owner, sizeof(g->owner), "kubelet");
			snprintf(g->owner_reason, sizeof(g->owner_reason), "the kubelet's %s cannot be read",
				 cs->kfile[i].name);
			return;
		}
	}
	kube_owner_reason(kube_find(&cs->kube, uid), g->owner_reason, sizeof(g->owner_reason));
	if (g->owner_reason[0]) {
		snprintf(g->owner, sizeof(g->owner), "kubelet");
		return;
	}
	if (!cs->kube.cpu_static)
		return;
	mask_andnot(&pool, &cs->kube.shared, &cs->kube_reserved);
	if (!mask_empty(g->allowed_cpus))
		mask_and(&pool, &pool, g->allowed_cpus);
	if (mask_empty(&pool)) {
		/* An empty bound reads "anywhere": never that. */
		snprintf(g->owner, sizeof(g->owner), "kubelet");
		snprintf(g->owner_reason, sizeof(g->owner_reason),
			 "the kubelet's shared pool (defaultCpuSet but the reserved CPUs) leaves it no CPU");
		return;
	}
	snap_guest_set_cpus(cs->snap, g, g->cpus, &pool);
}

/* Guest REL's FILE ("" for its directory) in the v1 hierarchy of
 * controller CTRL mounted at ROOT into OUT: at REL, else where
 * /proc/PID/cgroup puts PID (a process of the guest's own cgroup) in it,
 * as the other v1 controllers are found (cgproc.h). -ENOENT when it has
 * none of its own there (the host's root). */
static int v1_guest_path(const struct cgscan *cs, const char *root, const char *ctrl, const char *rel, pid_t pid,
			 const char *file, char *out, size_t sz)
{
	char at[PATH_MAX];

	if (snprintf(out, sz, "%s%s%s", root, rel, file) >= (int)sz)
		return -ENAMETOOLONG;
	if (*file ? fs_exists(out) : fs_is_dir(out))
		return 0;
	if (pid <= 0 || cgproc_read(cs->hp.procfs, pid, ctrl, at, sizeof(at)) < 0 ||
	    strcmp(at, "/") == 0 || strcmp(at, rel) == 0 || !cgh_rel_valid(at))
		return -ENOENT;
	if (snprintf(out, sz, "%s%s%s", root, at, file) >= (int)sz)
		return -ENAMETOOLONG;
	return 0;
}

/* Guest REL's cgroup directory in the hierarchy that has hugetlb into
 * OUT: v2's (the memory controller's tree), or v1's hugetlb hierarchy
 * (v1_guest_path). */
static int huge_cgdir(const struct cgscan *cs, const char *rel, pid_t pid, char *out, size_t sz)
{
	if (cs->hier.v2[CGC_MEMORY])
		return cgh_path(&cs->hier, CGC_MEMORY, rel, NULL, out, sz);
	return v1_guest_path(cs, cs->huge_v1, "hugetlb", rel, pid, "", out, sz);
}

/* G's devices from its devices cgroup (v1): its devices.list read when
 * the guest is first seen and every DEVCG_REREAD_NS after, its meaning
 * looked up once per distinct text (devcg.h). Unreadable: none known.
 * Not a pod's: its guest is the pod's cgroup, whose rules are the union
 * of its containers' (every device, as the kubelet leaves it); the
 * kubelet's checkpoint names a pod's devices. */
static void devcg_guest(struct cgscan *cs, struct snap_guest *g, const char *rel, pid_t pid)
{
	struct cgfdc_ent *e = cs->cur;
	char path[PATH_MAX], *buf = NULL;
	int64_t now = cs->now_ns ? cs->now_ns : 1;
	int r;

	if (!cs->dev_v1[0] || !e || g->nr_devices || strcmp(g->runtime, "kubernetes") == 0)
		return;
	if (!e->dev_at || now - e->dev_at >= DEVCG_REREAD_NS) {
		uint64_t h = 5381;

		/* Guests first seen together are read again spread over half
		 * the period, not all in one scan. */
		for (const char *c = rel; !e->dev_at && *c; c++)
			h = h * 33 + (unsigned char)*c;
		memset(&e->dev, 0, sizeof(e->dev));
		e->dev_at = e->dev_at ? now : now - (int64_t)(h % (uint64_t)(DEVCG_REREAD_NS / 2));
		if (!e->dev_at)
			e->dev_at = 1;
		r = v1_guest_path(cs, cs->dev_v1, "devices", rel, pid, "/devices.list", path, sizeof(path));
		if (r == 0)
			r = fs_read_file(path, 1u << 20, &buf, NULL);
		if (r == 0 && devcg_resolve(cs->devc, buf, &e->dev) < 0)
			snap_warn(cs->snap, "cgroup %s: devices.list not understood: its devices unknown", rel);
		free(buf);
	}
	g->nr_devices = e->dev.nr;
	g->dev_nodes = e->dev.nodes;
	g->dev_all = e->dev.all;
}

/* NAME is the key of its id (a container id, a pod uid); NS a containerd
 * namespace, or NULL. */
static void measure_guest(struct cgscan *cs, int pdfd, const char *prel, struct parent_sets *ps,
			  const char *dname, char *rel, size_t rlen, const char *runtime,
			  const char *name, const char *ns)
{
	struct cglabel_out label;
	struct snapshot *snap = cs->snap;
	struct snap_guest *g;
	const struct cgthr_prev *prev;
	struct gmeas m = { 0 };
	char id[GUEST_ID_MAX];
	cpumask_t cpus;
	nodemask_t mems;
	uint64_t usage = 0;
	pid_t own_pid;
	int64_t t_read;
	bool have_usage;
	struct stat st;
	int r, mem_r;

	if (fstatat(pdfd, dname, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (!is_vanished(-errno))
			snap_warn(snap, "cgroup %s: cannot stat: %s", rel, strerror(errno));
		return;
	}
	if (!ps->read)
		read_parent(cs, pdfd, prel, ps);
	cgthr_guest_begin(&cs->thr);
	parts_reset(cs);
	if (snap->nr_nodes > cs->mem_cap) {
		cs->mem_cap = snap->nr_nodes;
		cs->mem = xrealloc(cs->mem, cs->mem_cap * sizeof(uint64_t));
	}

	if (read_pids(cs, pdfd, dname, rel, true, -1, &m) != 0)
		return;
	/* kernfs keeps nlink = 2 + subdirectories: leaves need no listing. */
	if (st.st_nlink != 2 && !sum_kids(cs, pdfd, dname, &st, rel, rlen, &m))
		return;
	if (st.st_nlink == 2 && cs->cur)
		cgfdc_kids_forget(&cs->fdc, cs->cur);
	/* A process of the guest's own cgroup says where its other
	 * controllers' cgroups are (read_mem, read_cpu). */
	own_pid = m.main_pid;
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

	r = read_cpu(cs, pdfd, dname, rel, own_pid, &usage);
	t_read = read_time(cs);
	if (is_vanished(r))
		return;
	have_usage = r == 0;

	mem_r = read_mem(cs, pdfd, dname, rel, own_pid);
	if (is_vanished(mem_r))
		return;

	snap_make_id(id, runtime, name);
	g = snap_add_guest(snap);
	memcpy(g->id, id, sizeof(id));
	g->kind = GUEST_CONTAINER;
	snprintf(g->runtime, sizeof(g->runtime), "%s", runtime);
	snprintf(g->name, sizeof(g->name), "%s", name);
	if (cglabel_lookup(cs->label, runtime, name, &label)) {
		memcpy(g->name, label.name, sizeof(g->name));
		snprintf(g->ns, sizeof(g->ns), "%s", label.ns);
		snprintf(g->pod, sizeof(g->pod), "%s", label.pod);
	} else if (ns) {
		snprintf(g->ns, sizeof(g->ns), "%s", ns);
	}
	g->cgroup = xstrdup(rel);
	g->nr_threads = m.nr_threads;
	g->nr_procs = m.nr_procs;
	g->main_pid = m.main_pid;
	g->cpu_usage_ns = usage;
	prev = cgthr_prev_find(&cs->thr, id);
	g->cpu_use = have_usage ? cgthr_rate(prev, usage, t_read) : NAN;
	g->first_sight = !prev;
	if (have_usage && isnan(g->cpu_use) && cs->gen > 1 && !prev)
		g->cpu_use = cgthr_young_rate(&cs->thr, m.main_pid, usage);
	if (snap->nr_nodes)
		memcpy(g->mem_node, cs->mem, snap->nr_nodes * sizeof(uint64_t));
	g->mem_unknown = mem_r != 0;
	/* Huge pages are not in memory.numa_stat: only on a host whose pools
	 * have pages in use is a guest asked for them (hugetlb.h). */
	if (ghuge_host_in_use(snap)) {
		char cgdir[PATH_MAX];
		bool cg = cs->huge_cg && huge_cgdir(cs, rel, own_pid, cgdir, sizeof(cgdir)) == 0;

		r = ghuge_read(&cs->hp, snap, g, cg ? cgdir : NULL, m.main_pid, true);
		if (r < 0 && r != -ESRCH)
			snap_warn(snap, "cgroup %s: hugetlb memory per node unknown: %s", rel, strerror(-r));
	}
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
	if (strcmp(runtime, "kubernetes") == 0)
		kube_mark(cs, g, name);
	devcg_guest(cs, g, rel, own_pid);
	parts_attach(cs, g);
	if (have_usage) {
		unsigned thr_off, nr_thr;

		cgthr_thread_nodes(&cs->thr, snap, g, prev, t_read, &thr_off, &nr_thr);
		cgthr_record(&cs->thr, id, usage, t_read, thr_off, nr_thr);
	}
}

static void measure(struct cgscan *cs, int pdfd, const char *prel, struct parent_sets *ps,
		    const char *dname, char *rel, size_t rlen, const char *runtime, const char *name,
		    const char *ns)
{
	cs->cur = cgfdc_get(&cs->fdc, rel);
	measure_guest(cs, pdfd, prel, ps, dname, rel, rlen, runtime, name, ns);
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
		const char *ns = NULL;
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
		if (!scoped && !above_a_scope(cs, rel)) {
			log_debug("cgroup %s: outside the scopes, not searched", rel);
			goto next;
		}
		if (cgname_excluded(de->d_name, nl)) {
			log_debug("cgroup %s: libvirt's or a runtime monitor's, not a guest", rel);
			goto next;
		}
		if (cgname_classify_one(rel, runtime, name)) {
			guest = true;
		} else {
			const struct cgrunc_ent *re = cgrunc_find(&cs->runc, rel);

			if (re) {
				snprintf(runtime, sizeof(runtime), "%s", re->runtime);
				snprintf(name, sizeof(name), "%s", re->id);
				ns = re->ns[0] ? re->ns : NULL;
				guest = true;
			} else if (parent_cfg) {
				snprintf(runtime, sizeof(runtime), "custom");
				cgname_copy(name, de->d_name, nl);
				guest = true;
			}
		}
		if (guest) {
			/* Outside the scopes a guest is neither reported nor
			 * searched: its subtree is its own. */
			if (scoped)
				measure(cs, dirfd(d), prel, &ps, de->d_name, rel, rlen + 1 + nl,
					runtime, name, ns);
			else
				log_debug("cgroup %s: a %s guest outside the scopes, not reported", rel, runtime);
			goto next;
		}
		/* Leaves have nlink 2 on kernfs: no need to open them. */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_nlink == 2) {
			/* Why a container the operator expected is not found. */
			log_debug("cgroup %s: not a guest: no runtime's name, no runc or containerd "
				  "state, no configured parent names it", rel);
			goto next;
		}
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
	int fd;

	fd = open(cs->hier.dir[CGC_CPUSET], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	cs->snap = snap;
	cs->now_ns = now_ns;
	cs->scan_mono_ns = clock_mono_ns();
	cgthr_begin(&cs->thr);
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

	cgrunc_load(&cs->runc, cs->runc_roots, cs->nr_runc_roots, cs->ctrd_roots, cs->nr_ctrd_roots,
		    cs->cpuset_host, cs->v2, snap);
	cglabel_begin(cs->label);
	kube_refresh(cs);
	/* Only a v2 hierarchy whose root offers hugetlb can have the guests'
	 * hugetlb.<size>.numa_stat: elsewhere nobody looks for them. */
	cs->huge_cg = false;
	if (!cs->hier.v2[CGC_MEMORY] && cs->huge_v1[0])
		cs->huge_cg = ghuge_host_in_use(snap);
	else if (cs->hier.v2[CGC_MEMORY] && ghuge_host_in_use(snap)) {
		char path[PATH_MAX], *ctl = NULL;

		if (cgh_path(&cs->hier, CGC_MEMORY, "/", "cgroup.controllers", path, sizeof(path)) == 0 &&
		    fs_read_file(path, 4096, &ctl, NULL) == 0) {
			cs->huge_cg = strstr(ctl, "hugetlb") != NULL;
			free(ctl);
		}
	}
	rel[0] = '\0';
	cs->gen++;
	cgfdc_begin(&cs->fdc);
	walk(cs, fd, rel, 0, 0);
	cgfdc_sweep(&cs->fdc);
	cgrunc_clear(&cs->runc);
	cgthr_end(&cs->thr);
	for (unsigned c = 0; c < CGC_NR; c++)
		if (cs->ctrl_fd[c] >= 0)
			close(cs->ctrl_fd[c]);

	/* Stable warning order whatever order readdir gave. */
	if (snap->nr_warnings > first_warning + 1)
		qsort(snap->warnings + first_warning, snap->nr_warnings - first_warning,
		      sizeof(char *), warn_cmp);

	cs->snap = NULL;
	return 0;
}
