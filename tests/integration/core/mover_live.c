/* mover_live — the memory mover against real processes in a real cgroup
 * (cgroup v1 cpuset on the dev machine; run as root by test_mover.py).
 *
 * On a one-node host there is nowhere else to move to: the jobs use
 * relocate_all (every present page is moved to its own node; the test
 * hook tests/hooks/moverfixture_hooks.c, turned on in main), so the whole
 * path runs — maps walk, chunked move_pages(2) queries and moves, the rate
 * budget, the chunk boundaries — except the copy itself. Each case prints
 * "ok NAME" or "FAIL NAME: why"; exit 0 only when all passed, 77 to skip.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/base/hostpaths.h"
#include "orchestrator/base/log.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/base/numamig.h"
#include "tests/hooks/moverfixture_hooks.h"

#define CPUSET "/sys/fs/cgroup/cpuset"

static char cg[256];
static int failures;

static void fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures++;
}

static int write_file(const char *path, const char *v)
{
	FILE *f = fopen(path, "w");
	int r = 0;

	if (!f)
		return -errno;
	if (fputs(v, f) < 0)
		r = -EIO;
	if (fclose(f) != 0 && !r)
		r = -errno;
	return r;
}

static void read_file(const char *path, char *buf, size_t sz)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (!f)
		return;
	n = fread(buf, 1, sz - 1, f);
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	fclose(f);
}

/* A guest: a process in the cgroup holding MIB of touched memory. */
static pid_t spawn_guest(unsigned mib)
{
	int pfd[2];
	pid_t pid;
	char c;

	if (pipe(pfd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char path[300], me[32];
		size_t len = (size_t)mib << 20;
		char *mem;

		close(pfd[0]);
		snprintf(path, sizeof(path), "%s/tasks", cg);
		snprintf(me, sizeof(me), "%d", (int)getpid());
		if (write_file(path, me) < 0)
			_exit(2);
		mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED)
			_exit(3);
		madvise(mem, len, MADV_NOHUGEPAGE); /* 4 KiB pages: many of them */
		for (size_t i = 0; i < len; i += 4096)
			mem[i] = 1;
		if (write(pfd[1], "r", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(pfd[1]);
	if (pid < 0 || read(pfd[0], &c, 1) != 1) {
		close(pfd[0]);
		return -1;
	}
	close(pfd[0]);
	return pid;
}

static void kill_guest(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

static double now_s(void)
{
	return (double)clock_mono_ns() / 1e9;
}

static unsigned cg_pids(pid_t *out, unsigned max)
{
	char path[300], buf[4096];
	unsigned n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	read_file(path, buf, sizeof(buf));
	for (char *save = NULL, *t = strtok_r(buf, "\n", &save); t && n < max; t = strtok_r(NULL, "\n", &save))
		out[n++] = (pid_t)atoi(t);
	return n;
}

/* A job moving the guest's memory to node 0; WAIT_ROOM: admitted on
 * room to come (mover_spec.wait_room), 64 MiB reserve. */
static uint64_t submit_spec(struct mover *m, const char *guest, bool wait_room)
{
	struct mover_spec s;
	pid_t pids[16];

	memset(&s, 0, sizeof(s));
	snprintf(s.guest, sizeof(s.guest), "%s", guest);
	snprintf(s.cause, sizeof(s.cause), "test");
	s.npids = cg_pids(pids, 16);
	s.pids = pids;
	mask_parse("0", &s.to);
	s.bytes = 256ULL << 20;
	if (wait_room) {
		s.wait_room = true;
		s.min_free_bytes = 64ULL << 20;
		s.min_free_share = 1.0;
	}
	return mover_submit(m, &s);
}

static uint64_t submit(struct mover *m, const char *guest)
{
	return submit_spec(m, guest, false);
}

/* The node memory the wait_room cases see (mover_set_meminfo). */
static uint64_t fake_free;

static int fake_meminfo(const struct host_paths *hp, struct snap_node *nodes, unsigned nr)
{
	(void)hp;
	for (unsigned i = 0; i < nr; i++) {
		nodes[i].mem_total = 8ULL << 30;
		nodes[i].mem_free = __atomic_load_n(&fake_free, __ATOMIC_SEQ_CST);
	}
	return 0;
}

/* The room-claims case's reader: the node's room above the reserve is
 * ROOM_BASE less what the two waiting jobs CLAIM_IDS have moved (their
 * pages landing fill it; the claim ends where the bytes are counted
 * done, so a call's bytes are always one or the other). Once armed
 * (ROOM_MEET), the first two calls meet: each reads the room at its
 * entry and returns only when the other is inside too — two jobs that
 * looked at the same room before either moved, the race the claims are
 * for. */
static struct mover *room_m;
static uint64_t claim_ids[2], room_base;
static int room_meet, room_inside;

static int claims_meminfo(const struct host_paths *hp, struct snap_node *nodes, unsigned nr)
{
	uint64_t done = 0, base = __atomic_load_n(&room_base, __ATOMIC_SEQ_CST), fr;
	struct mover_job_info j;

	(void)hp;
	for (unsigned i = 0; i < 2; i++)
		if (claim_ids[i] && mover_get(room_m, claim_ids[i], &j))
			done += j.bytes_done;
	fr = (64ULL << 20) + (base > done ? base - done : 0);
	if (__atomic_load_n(&room_meet, __ATOMIC_SEQ_CST) &&
	    __atomic_add_fetch(&room_inside, 1, __ATOMIC_SEQ_CST) <= 2) {
		double end = now_s() + 5;

		while (__atomic_load_n(&room_inside, __ATOMIC_SEQ_CST) < 2 && now_s() < end)
			usleep(1000);
		__atomic_store_n(&room_meet, 0, __ATOMIC_SEQ_CST);
	}
	for (unsigned i = 0; i < nr; i++) {
		nodes[i].mem_total = 8ULL << 30;
		nodes[i].mem_free = fr;
	}
	return 0;
}

static uint64_t submit_room(struct mover *m, const char *guest)
{
	return submit_spec(m, guest, true);
}

/* Wait (with a deadline) until job ID has moved something. */
static bool wait_progress(struct mover *m, uint64_t id, double timeout)
{
	struct mover_job_info j;
	double end = now_s() + timeout;

	while (now_s() < end) {
		if (mover_get(m, id, &j) && (j.bytes_done > 0 || mover_state_final(j.state)))
			return j.bytes_done > 0 && !mover_state_final(j.state);
		usleep(10000);
	}
	return false;
}

/* Wait for job ID to end; its state, or MJ_RUNNING on timeout. */
static enum mover_state wait_end(struct mover *m, uint64_t id, double timeout, struct mover_job_info *out)
{
	double end = now_s() + timeout;

	while (now_s() < end) {
		if (mover_get(m, id, out) && mover_state_final(out->state))
			return out->state;
		usleep(10000);
	}
	return MJ_RUNNING;
}

static void drain(struct mover *m)
{
	struct mover_job_info *f;

	mover_take_finished(m, &f);
	free(f);
}

static void check_cpuset(const char *name)
{
	char path[300], cpus[64], mems[64];

	snprintf(path, sizeof(path), "%s/cpuset.cpus", cg);
	read_file(path, cpus, sizeof(cpus));
	snprintf(path, sizeof(path), "%s/cpuset.mems", cg);
	read_file(path, mems, sizeof(mems));
	if (strcmp(cpus, "0") || strcmp(mems, "0"))
		fail(name, "cgroup's cpuset changed: cpus \"%s\" mems \"%s\"", cpus, mems);
}

/* Threads of this process whose Cpus_allowed_list is exactly LIST. */
static unsigned threads_on(const char *list)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], buf[4096], *p;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		read_file(path, buf, sizeof(buf));
		p = strstr(buf, "Cpus_allowed_list:");
		if (p) {
			p += strlen("Cpus_allowed_list:");
			p += strspn(p, " \t");
			n += strncmp(p, list, strlen(list)) == 0 && (p[strlen(list)] == '\n' || !p[strlen(list)]);
		}
	}
	closedir(d);
	return n;
}

/* 7. [memory] workers_on_target: while a job runs, its worker's CPUs are
 * those of the target node (a sysfs fixture says node 0 has only our
 * last CPU, so the pin is visible on a one-node host). The worker stays
 * there between jobs (a next job to the same node makes no affinity
 * call) and is back on its own CPUs for a job once workers_on_target is
 * turned off (a reload); off from the start, no thread is pinned. */
static void check_on_target(const struct host_paths *real)
{
	struct mover_config cfg = { .workers = 1, .rate_mib = 32, .chunk_ms = 20, .job_timeout_s = 60 };
	struct host_paths hp = *real;
	char dir[] = "/tmp/numaorch-it-sysfs-XXXXXX", path[PATH_MAX + 64], want[16];
	cpu_set_t mine;
	int last = -1, failed_before = failures;

	if (sched_getaffinity(0, sizeof(mine), &mine) < 0 || CPU_COUNT(&mine) < 2) {
		printf("SKIP on-target: this process may run on one CPU only (the pin would not show)\n");
		return;
	}
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mine))
			last = c;
	snprintf(want, sizeof(want), "%d", last);
	if (!mkdtemp(dir)) {
		fail("on-target", "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(hp.sysfs, sizeof(hp.sysfs), "%s", dir);
	snprintf(path, sizeof(path), "%s/devices/system/node/node0", dir);
	{
		char cmd[PATH_MAX + 96];

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
		if (system(cmd) != 0) {
			fail("on-target", "cannot make the sysfs fixture");
			return;
		}
	}
	strncat(path, "/cpulist", sizeof(path) - strlen(path) - 1);
	write_file(path, want);
	for (int on = 1; on >= 0; on--) {
		struct mover *m;
		struct mover_job_info j;
		uint64_t id;
		unsigned pinned;

		cfg.on_target = on;
		if (mover_new(&cfg, &hp, &m) < 0) {
			fail("on-target", "mover_new");
			break;
		}
		id = submit(m, on ? "pin" : "nopin");
		if (!wait_progress(m, id, 10)) {
			fail("on-target", "no progress");
			mover_free(m);
			break;
		}
		pinned = threads_on(want);
		mover_cancel(m, id, MJ_CANCELLED);
		wait_end(m, id, 5, &j);
		if (on && pinned != 1) {
			fail("on-target", "%u threads on CPU %s while the job ran (want the worker: 1)", pinned, want);
		} else if (!on && pinned != 0) {
			fail("on-target", "%u threads on CPU %s with workers_on_target off", pinned, want);
		} else if (on && threads_on(want) != 1) {
			fail("on-target", "%u threads on CPU %s after the job (want the idle worker kept there: 1)",
			     threads_on(want), want);
		} else if (on) {
			/* A reload turns it off: the next job runs on the
			 * worker's own CPUs again. */
			cfg.on_target = false;
			mover_set_config(m, &cfg);
			id = submit(m, "unpin");
			if (!wait_progress(m, id, 10)) {
				fail("on-target", "no progress after workers_on_target was turned off");
			} else {
				pinned = threads_on(want);
				mover_cancel(m, id, MJ_CANCELLED);
				wait_end(m, id, 5, &j);
				if (pinned != 0)
					fail("on-target", "%u threads on CPU %s in a job after workers_on_target was "
					     "turned off (want 0: the worker back on its own CPUs)", pinned, want);
			}
		} else if (failures == failed_before) {
			printf("ok on-target: the worker ran on the target node's CPU %s, stayed there between jobs, "
			       "and left it once workers_on_target was off\n", want);
		}
		mover_free(m);
	}
	unlink(path);
	{
		char cmd[PATH_MAX + 96];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			printf("note: could not remove %s\n", dir);
	}
}

int main(void)
{
	struct host_paths hp;
	struct mover_config cfg = { .workers = 2, .rate_mib = 0, .chunk_ms = 20, .job_timeout_s = 60 };
	struct mover *m;
	struct mover_job_info j;
	enum mover_state st;
	pid_t g;
	uint64_t id, id2;
	double t0;
	char path[300];

	setvbuf(stdout, NULL, _IOLBF, 0);
	moverfx_set_relocate_all(true);
	if (geteuid() != 0) {
		printf("SKIP: needs root (a cpuset cgroup and move_pages of another process)\n");
		return 77;
	}
	if (access(CPUSET "/cpuset.mems", F_OK) != 0) {
		printf("SKIP: no cgroup v1 cpuset at %s\n", CPUSET);
		return 77;
	}
	if (!numamig_available()) {
		printf("SKIP: the kernel has no NUMA API (numa_available)\n");
		return 77;
	}
	log_set_level(LOG_LEVEL_WARN);
	host_paths_default(&hp);
	snprintf(cg, sizeof(cg), "%s/numaorch-it-mover-%d", CPUSET, (int)getpid());
	if (mkdir(cg, 0755) < 0) {
		printf("FAIL setup: mkdir %s: %s\n", cg, strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/cpuset.cpus", cg);
	write_file(path, "0");
	snprintf(path, sizeof(path), "%s/cpuset.mems", cg);
	write_file(path, "0");

	/* 1. A job walks every page, in chunks, and ends done. */
	if (mover_new(&cfg, &hp, &m) < 0) {
		printf("FAIL setup: mover_new\n");
		rmdir(cg);
		return 1;
	}
	g = spawn_guest(128);
	id = submit(m, "g1");
	st = wait_end(m, id, 60, &j);
	if (st != MJ_DONE)
		fail("done", "state %s", mover_state_name(st));
	else if (j.bytes_done < (120ULL << 20) || j.chunks < 2)
		fail("done", "%llu bytes in %llu chunks", (unsigned long long)j.bytes_done, (unsigned long long)j.chunks);
	else
		printf("ok done: %.0f MiB in %llu chunks, %.3f s, longest call %.1f ms\n",
		       (double)j.bytes_done / 1048576, (unsigned long long)j.chunks, j.elapsed_s, j.stall_max_ms);
	/* Its census (the guest's numa_maps at the start) against its walk:
	 * one source, node 0 here; every page it counted was walked (the
	 * guest sleeps), so nothing is left but what changed meanwhile. */
	if (st == MJ_DONE) {
		double found = j.nsources ? (double)j.sources[0].found / 1048576 : 0;
		double done0 = j.nsources ? (double)j.sources[0].done / 1048576 : 0;

		if (!j.census || j.nsources != 1 || j.sources[0].node != 0 || j.sources[0].to != 0)
			fail("census", "census %d, %u sources, first node %d to %d", j.census, j.nsources,
			     j.nsources ? j.sources[0].node : -1, j.nsources ? j.sources[0].to : -1);
		else if (found < 128 || fabs(found - done0) > 1 || (double)mover_job_left(&j) / 1048576 > 1)
			fail("census", "node 0: found %.1f MiB, done %.1f MiB, left %.1f MiB", found, done0,
			     (double)mover_job_left(&j) / 1048576);
		else
			printf("ok census: node 0 found %.1f MiB, moved %.1f MiB\n", found, done0);
	}
	check_cpuset("done");
	{
		struct mover_job_info *f;
		unsigned n = mover_take_finished(m, &f);

		if (n != 1 || f[0].id != id)
			fail("finished-once", "%u finished jobs reported", n);
		free(f);
		n = mover_take_finished(m, &f);
		if (n != 0)
			fail("finished-once", "reported again");
		else
			printf("ok finished-once\n");
		free(f);
	}
	kill_guest(g);

	/* 1b. The rest of a window rides along (mover_slice): a 16 MiB guest
	 * and its process's other present pages (libraries, stacks: a few
	 * MiB) take one move call, not a 16 MiB call and another for the
	 * tail — with busy guests each call has a large fixed cost
	 * (orchestrator/README.md). */
	g = spawn_guest(16);
	id = submit(m, "g1b");
	st = wait_end(m, id, 60, &j);
	if (st != MJ_DONE || j.chunks != 1 || j.bytes_done < (16ULL << 20) || j.bytes_done > (24ULL << 20))
		fail("one-call", "state %s, %.1f MiB in %llu calls (want 16-24 MiB in 1)", mover_state_name(st),
		     (double)j.bytes_done / 1048576, (unsigned long long)j.chunks);
	else
		printf("ok one-call: %.1f MiB in 1 call\n", (double)j.bytes_done / 1048576);
	kill_guest(g);
	drain(m);

	/* Slow jobs from here on: a 32 MiB/s budget makes 256 MiB take 8 s. */
	cfg.rate_mib = 32;
	mover_set_config(m, &cfg);

	/* 2. The guest exits: the job ends (vanished) at once, cleanly. */
	g = spawn_guest(256);
	id = submit(m, "g2");
	if (!wait_progress(m, id, 10))
		fail("exit", "no progress");
	kill_guest(g);
	t0 = now_s();
	st = wait_end(m, id, 5, &j);
	if (st != MJ_VANISHED)
		fail("exit", "state %s", mover_state_name(st));
	else
		printf("ok exit: vanished %.2f s after the kill, %.0f MiB done\n", now_s() - t0,
		       (double)j.bytes_done / 1048576);
	drain(m);

	/* 3. A new plan for the guest supersedes its job; DELETE cancels. */
	g = spawn_guest(256);
	id = submit(m, "g3");
	if (!wait_progress(m, id, 10))
		fail("supersede", "no progress");
	id2 = submit(m, "g3");
	st = wait_end(m, id, 2, &j);
	if (st != MJ_SUPERSEDED)
		fail("supersede", "first job %s", mover_state_name(st));
	else
		printf("ok supersede: first job superseded after %.0f MiB\n", (double)j.bytes_done / 1048576);
	if (mover_job_of(m, "g3") != id2)
		fail("supersede", "the new job is not the guest's job");
	if (!wait_progress(m, id2, 10))
		fail("cancel", "second job made no progress");
	if (mover_cancel(m, id2, MJ_CANCELLED) != 0)
		fail("cancel", "mover_cancel refused");
	st = wait_end(m, id2, 2, &j);
	if (st != MJ_CANCELLED)
		fail("cancel", "state %s", mover_state_name(st));
	else
		printf("ok cancel\n");
	if (mover_cancel(m, id2, MJ_CANCELLED) != -EALREADY || mover_cancel(m, 99999, MJ_CANCELLED) != -ENOENT)
		fail("cancel", "cancel of an ended/unknown job not refused");
	check_cpuset("supersede");
	drain(m);

	/* 4. SIGTERM and reload stop every job at a chunk boundary, promptly. */
	id = submit(m, "g3");
	if (!wait_progress(m, id, 10))
		fail("stop", "no progress");
	t0 = now_s();
	mover_stop_all(m);
	if (!mover_get(m, id, &j) || j.state != MJ_STOPPED)
		fail("stop", "state %s", mover_get(m, id, &j) ? mover_state_name(j.state) : "?");
	else if (now_s() - t0 > 1.0)
		fail("stop", "took %.2f s", now_s() - t0);
	else
		printf("ok stop: %.3f s to stop\n", now_s() - t0);
	drain(m);

	/* 5. The rate budget holds the host to its MiB/s. */
	cfg.rate_mib = 64;
	mover_set_config(m, &cfg);
	id = submit(m, "g3");
	st = wait_end(m, id, 30, &j);
	{
		double rate = j.elapsed_s > 0 ? (double)j.bytes_done / 1048576 / j.elapsed_s : 0;

		if (st != MJ_DONE)
			fail("rate", "state %s", mover_state_name(st));
		else if (rate > 64 * 1.15 || rate < 64 * 0.5)
			fail("rate", "%.1f MiB/s with a 64 MiB/s budget", rate);
		else
			printf("ok rate: %.1f MiB/s with a 64 MiB/s budget\n", rate);
	}
	drain(m);

	/* 6. A job past its deadline ends expired. */
	cfg.rate_mib = 32;
	cfg.job_timeout_s = 1;
	mover_set_config(m, &cfg);
	id = submit(m, "g3");
	st = wait_end(m, id, 5, &j);
	if (st != MJ_EXPIRED || j.elapsed_s > 2)
		fail("deadline", "state %s after %.2f s", mover_state_name(st), j.elapsed_s);
	else
		printf("ok deadline: expired after %.2f s\n", j.elapsed_s);
	check_cpuset("deadline");
	drain(m);

	/* 7. Room to come (mover_spec.wait_room): no page moves onto a node
	 * without room above the reserve. Alone — no other job frees any —
	 * such a job fails at once, with the numbers; beside a job that runs
	 * it waits, then moves once the room is there. */
	cfg.rate_mib = 32;
	cfg.job_timeout_s = 60;
	mover_set_config(m, &cfg);
	mover_set_meminfo(m, fake_meminfo);
	__atomic_store_n(&fake_free, 60ULL << 20, __ATOMIC_SEQ_CST);
	id = submit_room(m, "g7");
	st = wait_end(m, id, 5, &j);
	if (st != MJ_FAILED || j.bytes_done != 0 || !strstr(j.msg, "no room") || !strstr(j.msg, "0 MiB free above"))
		fail("room-alone", "state %s, %.1f MiB moved, \"%s\"", mover_state_name(st),
		     (double)j.bytes_done / 1048576, j.msg);
	else
		printf("ok room-alone: %s\n", j.msg);
	drain(m);
	id = submit(m, "g8");
	if (!wait_progress(m, id, 10))
		fail("room-wait", "the other job made no progress");
	id2 = submit_room(m, "g9");
	usleep(1000000);
	if (!mover_get(m, id2, &j) || j.state != MJ_RUNNING || j.bytes_done != 0)
		fail("room-wait", "without room: state %s, %.1f MiB moved", mover_state_name(j.state),
		     (double)j.bytes_done / 1048576);
	__atomic_store_n(&fake_free, 4ULL << 30, __ATOMIC_SEQ_CST);
	mover_cancel(m, id, MJ_CANCELLED);
	cfg.rate_mib = 0;
	mover_set_config(m, &cfg);
	st = wait_end(m, id2, 20, &j);
	if (st != MJ_DONE || j.bytes_done < (200ULL << 20))
		fail("room-wait", "with room: state %s, %.1f MiB moved", mover_state_name(st),
		     (double)j.bytes_done / 1048576);
	else
		printf("ok room-wait: waited while the node had no room, then moved %.0f MiB\n",
		       (double)j.bytes_done / 1048576);
	drain(m);

	/* 8. Two jobs waiting for room, each for what the other's pages
	 * would free, and no job moving: both fail at once with the
	 * numbers, nothing moved, rather than wait for each other until
	 * job_timeout (60 s here). */
	__atomic_store_n(&fake_free, 60ULL << 20, __ATOMIC_SEQ_CST);
	id = submit_room(m, "m1");
	id2 = submit_room(m, "m2");
	t0 = now_s();
	{
		struct mover_job_info j2;
		enum mover_state st2;

		st = wait_end(m, id, 5, &j);
		st2 = wait_end(m, id2, 5, &j2);
		if (st != MJ_FAILED || st2 != MJ_FAILED || j.bytes_done || j2.bytes_done || !strstr(j.msg, "no room") ||
		    !strstr(j2.msg, "no room"))
			fail("room-mutual", "states %s/%s, %.1f/%.1f MiB moved, \"%s\" / \"%s\"", mover_state_name(st),
			     mover_state_name(st2), (double)j.bytes_done / 1048576, (double)j2.bytes_done / 1048576, j.msg,
			     j2.msg);
		else
			printf("ok room-mutual: both failed in %.2f s: %s\n", now_s() - t0, j2.msg);
	}
	drain(m);

	/* 9. The room claims: two waiting jobs (beside a third that moves, so
	 * they wait) look at the same 5 MiB of room above the reserve at
	 * once (claims_meminfo makes their looks meet); each call is at most
	 * 3.2 MiB (a 32 MiB/s budget's 100 ms). Together they may move at
	 * most the 5 MiB: the second's call must see the first's claim.
	 * What it proves: the claim check under the lock, against readers
	 * that looked before either moved. Not: the real kernel's MemFree
	 * timing (the room is the test's own count). */
	cfg.workers = 3;
	cfg.rate_mib = 32;
	mover_set_config(m, &cfg);
	room_m = m;
	__atomic_store_n(&room_base, 0, __ATOMIC_SEQ_CST);
	mover_set_meminfo(m, claims_meminfo);
	id = submit(m, "c0");
	if (!wait_progress(m, id, 10))
		fail("room-claims", "the moving job made no progress");
	claim_ids[0] = submit_room(m, "c1");
	claim_ids[1] = submit_room(m, "c2");
	{
		struct mover_job_info ja, jb;
		double end = now_s() + 5;
		uint64_t most = 0;
		bool waiting = false;

		while (now_s() < end && !waiting) {
			waiting = mover_get(m, claim_ids[0], &ja) && mover_get(m, claim_ids[1], &jb) &&
				  ja.state == MJ_RUNNING && jb.state == MJ_RUNNING;
			usleep(10000);
		}
		__atomic_store_n(&room_inside, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&room_meet, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&room_base, 5ULL << 20, __ATOMIC_SEQ_CST);
		/* Watch until both have had their look and one moved, then
		 * a further 2 s: the sum must never pass the room. */
		end = now_s() + 10;
		for (double quiet_end = 0; now_s() < end && (!quiet_end || now_s() < quiet_end);) {
			uint64_t sum = 0;

			if (mover_get(m, claim_ids[0], &ja) && mover_get(m, claim_ids[1], &jb))
				sum = ja.bytes_done + jb.bytes_done;
			if (sum > most)
				most = sum;
			if (sum && !quiet_end)
				quiet_end = now_s() + 2;
			usleep(5000);
		}
		mover_get(m, claim_ids[0], &ja);
		mover_get(m, claim_ids[1], &jb);
		if (!waiting || most == 0)
			fail("room-claims", "the waiting jobs never moved (states %s/%s)", mover_state_name(ja.state),
			     mover_state_name(jb.state));
		else if (most > (5ULL << 20))
			fail("room-claims", "the waiting jobs moved %.1f MiB together (%.1f + %.1f) into 5 MiB of room",
			     (double)most / 1048576, (double)ja.bytes_done / 1048576, (double)jb.bytes_done / 1048576);
		else if (mover_state_final(ja.state) || mover_state_final(jb.state))
			fail("room-claims", "a waiting job ended (%s/%s) while another moved", mover_state_name(ja.state),
			     mover_state_name(jb.state));
		else
			printf("ok room-claims: %.1f MiB moved together (%.1f + %.1f) into 5 MiB of room, both waiting on\n",
			       (double)most / 1048576, (double)ja.bytes_done / 1048576, (double)jb.bytes_done / 1048576);
	}
	mover_cancel(m, claim_ids[0], MJ_CANCELLED);
	mover_cancel(m, claim_ids[1], MJ_CANCELLED);
	mover_cancel(m, id, MJ_CANCELLED);
	wait_end(m, claim_ids[0], 5, &j);
	wait_end(m, claim_ids[1], 5, &j);
	wait_end(m, id, 5, &j);
	mover_set_meminfo(m, NULL);
	drain(m);

	check_on_target(&hp);

	kill_guest(g);
	mover_free(m);
	rmdir(cg);
	printf("%s\n", failures ? "FAILED" : "PASSED");
	return failures ? 1 : 0;
}
