#include "orchestrator/actuator/cgwrite.h"

#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "orchestrator/actuator/cgwfixture.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/base/log.h"

struct cgw {
	struct cg_hier h;
	bool live;
	unsigned nr_scopes;
	char **scopes;
	unsigned long writes;
};

static pthread_once_t cg_once = PTHREAD_ONCE_INIT;
static int cg_init_rc;

static void cg_init(void)
{
	cg_init_rc = cgroup_init();
}

int cgw_new(const struct cg_hier *h, bool live, unsigned nr_scopes, char *const *scopes,
	    struct cgw **out)
{
	struct cgw *w;

	if (live) {
		pthread_once(&cg_once, cg_init);
		if (cg_init_rc != 0) {
			log_debug("cgroup_init: %s", cgroup_strerror(cg_init_rc));
			return -ENODEV;
		}
	}
	w = xcalloc(1, sizeof(*w));
	w->h = *h;
	w->live = live;
	for (unsigned i = 0; i < nr_scopes; i++) {
		w->scopes = xrealloc(w->scopes, (w->nr_scopes + 1) * sizeof(char *));
		w->scopes[w->nr_scopes++] = xstrdup(scopes[i]);
	}
	*out = w;
	return 0;
}

void cgw_free(struct cgw *w)
{
	if (!w)
		return;
	for (unsigned i = 0; i < w->nr_scopes; i++)
		free(w->scopes[i]);
	free(w->scopes);
	free(w);
}

bool cgw_in_scope(const struct cgw *w, const char *rel)
{
	if (!cgh_rel_valid(rel))
		return false;
	if (w->nr_scopes == 0)
		return true;
	for (unsigned i = 0; i < w->nr_scopes; i++)
		if (cgh_rel_under(rel, w->scopes[i]))
			return true;
	return false;
}

unsigned long cgw_write_count(const struct cgw *w)
{
	/* (a mover worker writes too: a start binding, engine_jobs.c) */
	return __atomic_load_n(&w->writes, __ATOMIC_RELAXED);
}

/* Set by cgw_child_writes on a mover worker's thread. */
static __thread bool child_writes;

void cgw_child_writes(bool on)
{
	child_writes = on;
}

/* The writer process: async-signal-safe calls only (the agent has other
 * threads, whose locks it may have copied held). Closing every inherited
 * descriptor first keeps it from holding the agent's listeners and files
 * past the agent's exit. The comm name lets an operator see what it is. */
static _Noreturn void child_write(const char *path, const char *value, size_t len, long maxfd)
{
	ssize_t n;
	int fd;

	if (close_range(0, ~0U, 0) < 0)
		for (long i = 0; i < maxfd; i++)
			close((int)i);
	prctl(PR_SET_NAME, "numaorch-write", 0, 0, 0);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		_exit(errno > 0 && errno < 256 ? errno : EIO);
	n = write(fd, value, len);
	if (n < 0)
		_exit(errno > 0 && errno < 256 ? errno : EIO);
	_exit((size_t)n == len ? 0 : EIO);
}

int cgw_write_file_in_child(const char *path, const char *value, pid_t *pidp)
{
	size_t len = strlen(value);
	long maxfd = sysconf(_SC_OPEN_MAX);
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child_write(path, value, len, maxfd > 0 ? maxfd : 1024);
	if (pidp)
		__atomic_store_n(pidp, pid, __ATOMIC_RELEASE); /* another thread may watch it */
	log_debug("cgroup write %s = \"%s\" by writer process %d", path, value, (int)pid);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(st))
		return -WEXITSTATUS(st);
	return -EINTR;
}

/* libcgroup reports ECGOTHER & co; the kernel's errno is behind
 * cgroup_get_last_errno() for write failures. */
static int lcg_errno(int rc)
{
	int e;

	if (rc == 0)
		return 0;
	if (rc == ECGROUPNOTEXIST || rc == ECGROUPVALUENOTEXIST)
		return -ENOENT;
	e = cgroup_get_last_errno();
	if (e > 0)
		return -e;
	return -EIO;
}

static int write_libcgroup(struct cgw *w, enum cg_ctrl c, const char *rel, const char *file,
			   const char *value)
{
	struct cgroup_controller *ctl;
	struct cgroup *cg;
	int rc;

	/* libcgroup's cgroup names are relative to the mount, without the
	 * leading slash; the root is "". */
	cg = cgroup_new_cgroup(rel[1] ? rel + 1 : "");
	if (!cg)
		return -ENOMEM;
	ctl = cgroup_add_controller(cg, cgh_ctrl_name(c));
	if (!ctl) {
		cgroup_free(&cg);
		return -ENOMEM;
	}
	rc = cgroup_add_value_string(ctl, file, value);
	if (rc == 0)
		rc = cgroup_modify_cgroup(cg);
	cgroup_free(&cg);
	return lcg_errno(rc);
}

int cgw_write(struct cgw *w, enum cg_ctrl c, const char *rel, const char *file, const char *value)
{
	char path[PATH_MAX];
	int r;

	if (!cgh_rel_valid(rel) || !file || strchr(file, '/'))
		return -EINVAL;
	if (!cgw_in_scope(w, rel))
		return -EPERM;
	r = cgh_path(&w->h, c, rel, file, path, sizeof(path));
	if (r < 0)
		return r;
	if (!fs_exists(path))
		return -ENOENT;
	__atomic_add_fetch(&w->writes, 1, __ATOMIC_RELAXED);
	/* cpuset files (what moves guests) go through libcgroup; the freeze
	 * switch (cgroup.freeze / freezer.state) is a core file in v2 that
	 * libcgroup has no controller name for, so it is written directly. */
	/* The writer process writes the file itself: libcgroup's calls
	 * allocate and take locks, which a child of a threaded process must
	 * not. */
	if (w->live && c == CGC_CPUSET && child_writes)
		r = cgw_write_file_in_child(path, value, NULL);
	else if (w->live && c == CGC_CPUSET)
		r = write_libcgroup(w, c, rel, file, value);
	else if (!w->live)
		r = cgwf_write(w->h.root, path, rel, file, value);
	else
		r = fs_write_str(path, value);
	log_debug("cgroup write %s %s = \"%s\": %s", rel, file, value, r < 0 ? strerror(-r) : "ok");
	return r;
}
