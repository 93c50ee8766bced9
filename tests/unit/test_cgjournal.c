/* The journal executor (orchestrator/actuator/cgjournal.c) on a v1 fixture tree
 * through the fixture writer, with the test build's hooks
 * (tests/hooks/cgwfixture_hooks.c): every write is logged in
 * <cgroupfs>/.numaorch-writes, and X.refuse makes writes to X fail. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "orchestrator/base/cghier.h"
#include "orchestrator/actuator/cgjournal.h"
#include "orchestrator/actuator/cgplan.h"
#include "orchestrator/actuator/cgwrite.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/hostpaths.h"

#define CS "sys/fs/cgroup/cpuset"

struct fx {
	char *root;
	struct host_paths hp;
	struct cg_hier h;
	struct cgw *w;
	char *sub[3];
};

/* /g with children /g/a and /g/b, all on CPUs 0-1. */
static void fx_init(struct fx *f)
{
	static const char *const rel[] = { "/g", "/g/a", "/g/b" };
	char p[256];

	memset(f, 0, sizeof(*f));
	f->root = tu_mkdtemp();
	tu_write(f->root, CS "/tasks", "");
	tu_write(f->root, "sys/fs/cgroup/memory/tasks", "");
	tu_write(f->root, "sys/fs/cgroup/.numaorch-writes", "");
	for (unsigned i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), CS "%s/cpuset.cpus", rel[i]);
		tu_write(f->root, p, "0-1\n");
		f->sub[i] = (char *)rel[i];
	}
	assert_int_equal(host_paths_from_root(&f->hp, f->root), 0);
	assert_int_equal(cgh_detect(f->hp.cgroupfs, &f->h), 0);
	assert_int_equal(cgw_new(&f->h, false, 0, NULL, &f->w), 0);
}

static void fx_done(struct fx *f)
{
	cgw_free(f->w);
	tu_rm_rf(f->root);
	free(f->root);
}

static char *slurp(struct fx *f, const char *rel)
{
	char p[512], *buf = NULL;

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(fs_read_file(p, 1 << 20, &buf, NULL), 0);
	return buf;
}

/* The first line of ROOT/REL (written back files have no newline, the
 * fixture's own have one). */
static void assert_file(struct fx *f, const char *rel, const char *want)
{
	char p[512], got[256];

	snprintf(p, sizeof(p), "%s/%s", f->root, rel);
	assert_int_equal(fs_read_line(p, got, sizeof(got)), 0);
	assert_string_equal(got, want);
}

/* Widen, narrow deepest-first; a value already there is neither written
 * nor journaled. */
static void test_run_skips_what_is_there(void **state)
{
	struct fx f;
	struct cgplan p = { 0 };
	struct cgj j = { 0 };
	unsigned failed = 99;
	char *log;

	(void)state;
	fx_init(&f);
	/* /g/b already holds the target */
	tu_write(f.root, CS "/g/b/cpuset.cpus", "1\n");
	assert_int_equal(cgplan_add_set(&p, false, 3, NULL, "cpuset.cpus", "0-1", "1"), 0);
	assert_int_equal(cgj_run(&j, &f.h, f.w, f.sub, &p, &failed), 0);
	assert_int_equal(failed, 99);
	/* the union write (0-1 over 0-1) and /g/b's are not made */
	assert_int_equal(j.n, 2);
	assert_int_equal(j.e[0].sub, 1);
	assert_int_equal(j.e[1].sub, 0);
	log = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_string_equal(log, "/g/a cpuset.cpus 1\n/g cpuset.cpus 1\n");
	free(log);
	cgj_clear(&j);
	cgplan_clear(&p);
	fx_done(&f);
}

/* A refused write: the steps before it stay made and in the journal,
 * and the revert puts them back, newest first. */
static void test_refused_then_reverted(void **state)
{
	struct fx f;
	struct cgplan p = { 0 };
	struct cgj j = { 0 };
	unsigned failed = 99, writes = 0;
	char *log;

	(void)state;
	fx_init(&f);
	tu_write(f.root, CS "/g/a/cpuset.cpus.refuse", "EBUSY\n");
	/* /g 0-3, /g/b 2-3, /g/a 2-3 (refused), /g 2-3 */
	assert_int_equal(cgplan_add_set(&p, false, 3, NULL, "cpuset.cpus", "0-3", "2-3"), 0);
	assert_int_equal(cgj_run(&j, &f.h, f.w, f.sub, &p, &failed), -EBUSY);
	assert_int_equal(failed, 2);
	assert_int_equal(j.n, 2);
	assert_int_equal(cgj_revert(&j, &f.h, f.w, f.sub, &writes), 0);
	assert_int_equal(writes, 2);
	for (unsigned i = 0; i < 3; i++) {
		char rel[128];

		snprintf(rel, sizeof(rel), CS "%s/cpuset.cpus", f.sub[i]);
		assert_file(&f, rel, "0-1");
	}
	log = slurp(&f, "sys/fs/cgroup/.numaorch-writes");
	assert_string_equal(log, "/g cpuset.cpus 0-3\n/g/b cpuset.cpus 2-3\n"
				 "/g/b cpuset.cpus 0-1\n/g cpuset.cpus 0-1\n");
	free(log);
	cgj_clear(&j);
	assert_int_equal(j.n, 0);
	cgplan_clear(&p);
	fx_done(&f);
}

/* A descendant gone mid-move is nothing to narrow; the guest gone is a
 * failure. */
static void test_gone(void **state)
{
	struct fx f;
	struct cgplan p = { 0 };
	struct cgj j = { 0 };
	unsigned failed = 99;
	char path[512];

	(void)state;
	fx_init(&f);
	snprintf(path, sizeof(path), "%s/" CS "/g/b", f.root);
	tu_rm_rf(path);
	assert_int_equal(cgplan_add_set(&p, false, 3, NULL, "cpuset.cpus", "0-3", "2-3"), 0);
	assert_int_equal(cgj_run(&j, &f.h, f.w, f.sub, &p, &failed), 0);
	assert_int_equal(j.n, 3); /* /g widened, /g/a and /g narrowed */
	assert_file(&f, CS "/g/cpuset.cpus", "2-3");
	cgj_clear(&j);
	snprintf(path, sizeof(path), "%s/" CS "/g", f.root);
	tu_rm_rf(path);
	assert_int_equal(cgj_run(&j, &f.h, f.w, f.sub, &p, &failed), -ENOENT);
	assert_int_equal(failed, 0);
	assert_int_equal(j.n, 0);
	cgplan_clear(&p);
	fx_done(&f);
}

/* The writer process (cgw_write_file_in_child) on plain files: the
 * write's errno comes back, and the child is reaped. */
static void test_child_write_result(void **state)
{
	char *d = tu_mkdtemp(), p[512], *v = NULL;
	size_t len;
	pid_t pid = 0;

	(void)state;
	snprintf(p, sizeof(p), "%s/mems", d);
	tu_write(d, "mems", "");
	assert_int_equal(cgw_write_file_in_child(p, "0-1", &pid), 0);
	assert_true(pid > 0);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_int_equal(fs_read_file(p, 64, &v, &len), 0);
	assert_string_equal(v, "0-1");
	free(v);
	snprintf(p, sizeof(p), "%s/gone/mems", d);
	assert_int_equal(cgw_write_file_in_child(p, "1", NULL), -ENOENT);
	if (access("/dev/full", W_OK) == 0)
		assert_int_equal(cgw_write_file_in_child("/dev/full", "1", NULL), -ENOSPC);
	else
		printf("# /dev/full not writable here: its ENOSPC case skipped\n");
	tu_rm_rf(d);
	free(d);
}

struct fifo_write {
	const char *path;
	pid_t pid;
	int r;
};

static void *fifo_writer(void *arg)
{
	struct fifo_write *fw = arg;

	fw->r = cgw_write_file_in_child(fw->path, "2", &fw->pid);
	return NULL;
}

/* A write that blocks (a FIFO without a reader stands in for the kernel's
 * migration) holds the child, not the caller's descriptors: while it
 * waits, the child has none of the caller's open (they would outlive an
 * agent that exits meanwhile). */
static void test_child_write_keeps_no_descriptor(void **state)
{
	char *d = tu_mkdtemp(), p[512], fdd[64], buf[8] = "";
	struct fifo_write fw = { .path = p };
	pthread_t t;
	int held = open("/dev/null", O_RDONLY), rd, nfd = 0;
	struct dirent *de;
	DIR *dir = NULL;
	pid_t pid;

	(void)state;
	assert_true(held >= 0);
	snprintf(p, sizeof(p), "%s/fifo", d);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(pthread_create(&t, NULL, fifo_writer, &fw), 0);
	/* the child blocks in open() until a reader comes */
	for (int i = 0; i < 500 && !(pid = __atomic_load_n(&fw.pid, __ATOMIC_ACQUIRE)); i++)
		usleep(10000);
	assert_true(pid > 0);
	snprintf(fdd, sizeof(fdd), "/proc/%d/fd", (int)pid);
	/* its descriptors are closed before the open: wait for that */
	for (int i = 0; i < 500; i++) {
		nfd = 0;
		dir = opendir(fdd);
		assert_non_null(dir);
		while ((de = readdir(dir)))
			if (de->d_name[0] != '.')
				nfd++;
		closedir(dir);
		if (nfd == 0)
			break;
		usleep(10000);
	}
	assert_int_equal(nfd, 0);
	rd = open(p, O_RDONLY);
	assert_true(rd >= 0);
	assert_int_equal(read(rd, buf, sizeof(buf) - 1), 1);
	assert_string_equal(buf, "2");
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(fw.r, 0);
	close(rd);
	close(held);
	tu_rm_rf(d);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_skips_what_is_there),
		cmocka_unit_test(test_refused_then_reverted),
		cmocka_unit_test(test_gone),
		cmocka_unit_test(test_child_write_result),
		cmocka_unit_test(test_child_write_keeps_no_descriptor),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
