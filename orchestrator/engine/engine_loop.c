/* engine_loop.c — the engine's loop: one thread waits on signals (as a
 * signalfd), the interval timer (timerfd, re-armed after each cycle), the
 * event fd that wakes it for queued calls and triggers, and the mover's
 * finished jobs (ARCHITECTURE.md, "Threads and state"). Other threads
 * hand it work with engine_call() and engine_trigger(). engine_run
 * (engine.c) turns it: engine_loop_wait, the signals
 * (engine_loop_signal) handled there, then engine_loop_dispatch: the
 * calls, the finished jobs, the cycles and the watch. */
#include "orchestrator/engine/engine.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/engine/engine_int.h"
#include "orchestrator/base/log.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/base/notify.h"
#include "orchestrator/base/xalloc.h"

/* A call queued for the engine thread (engine_call). */
struct call {
	engine_fn fn;
	void *arg;
	int ret;
	bool done, abandoned;
	pthread_cond_t cond;
	struct call *next;
};

void engine_loopst_init(struct engine_loopst *l)
{
	l->sfd = l->tfd = l->efd = -1;
	pthread_mutex_init(&l->q_lock, NULL);
}

void engine_loopst_free(struct engine_loopst *l)
{
	if (l->sfd >= 0)
		close(l->sfd);
	if (l->tfd >= 0)
		close(l->tfd);
	if (l->efd >= 0)
		close(l->efd);
	pthread_mutex_destroy(&l->q_lock);
}

bool engine_trigger(struct engine *e)
{
	uint64_t one = 1;

	/* Already pending: this request rides on that cycle. */
	if (__atomic_exchange_n(&e->loop.triggered, true, __ATOMIC_ACQ_REL))
		return false;
	if (e->loop.efd >= 0) {
		ssize_t w = write(e->loop.efd, &one, sizeof(one));
		(void)w;
	}
	return true;
}

int64_t engine_heartbeat_ns(struct engine *e)
{
	return __atomic_load_n(&e->loop.heartbeat_ns, __ATOMIC_ACQUIRE);
}


void engine_arm_timer(struct engine *e, double seconds)
{
	struct itimerspec its = { 0 };

	if (seconds < 0.001)
		seconds = 0.001;
	its.it_value.tv_sec = (time_t)seconds;
	its.it_value.tv_nsec = (long)((seconds - floor(seconds)) * 1e9);
	timerfd_settime(e->loop.tfd, 0, &its, NULL);
}

static void run_calls(struct engine *e)
{
	for (;;) {
		struct call *c;

		pthread_mutex_lock(&e->loop.q_lock);
		c = e->loop.q_head;
		if (c) {
			e->loop.q_head = c->next;
			if (!e->loop.q_head)
				e->loop.q_tail = NULL;
		}
		pthread_mutex_unlock(&e->loop.q_lock);
		if (!c)
			return;
		c->ret = c->fn(e, c->arg);
		pthread_mutex_lock(&e->loop.q_lock);
		c->done = true;
		if (c->abandoned) {
			pthread_mutex_unlock(&e->loop.q_lock);
			pthread_cond_destroy(&c->cond);
			free(c);
			continue;
		}
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&e->loop.q_lock);
	}
}

int engine_call(struct engine *e, engine_fn fn, void *arg, unsigned timeout_ms)
{
	struct call *c;
	struct timespec until;
	int ret;

	if (e->loop.thread_set && pthread_equal(pthread_self(), e->loop.thread))
		return fn(e, arg);
	c = xcalloc(1, sizeof(*c));
	c->fn = fn;
	c->arg = arg;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_lock(&e->loop.q_lock);
	if (e->loop.stopping || e->loop.efd < 0) {
		pthread_mutex_unlock(&e->loop.q_lock);
		pthread_cond_destroy(&c->cond);
		free(c);
		return -ESHUTDOWN;
	}
	if (e->loop.q_tail)
		e->loop.q_tail->next = c;
	else
		e->loop.q_head = c;
	e->loop.q_tail = c;
	{
		uint64_t one = 1;
		ssize_t w = write(e->loop.efd, &one, sizeof(one));
		(void)w;
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (!c->done) {
		if (timeout_ms == 0) {
			pthread_cond_wait(&c->cond, &e->loop.q_lock);
		} else if (pthread_cond_timedwait(&c->cond, &e->loop.q_lock, &until) == ETIMEDOUT && !c->done) {
			c->abandoned = true;
			pthread_mutex_unlock(&e->loop.q_lock);
			return -ETIMEDOUT;
		}
	}
	ret = c->ret;
	pthread_mutex_unlock(&e->loop.q_lock);
	pthread_cond_destroy(&c->cond);
	free(c);
	return ret;
}

void engine_stop(struct engine *e)
{
	uint64_t one = 1;

	__atomic_store_n(&e->loop.stopping, true, __ATOMIC_RELEASE);
	if (e->loop.efd >= 0) {
		ssize_t w = write(e->loop.efd, &one, sizeof(one));
		(void)w;
	}
}

void engine_loop_fail_pending(struct engine *e)
{
	pthread_mutex_lock(&e->loop.q_lock);
	e->loop.stopping = true;
	while (e->loop.q_head) {
		struct call *c = e->loop.q_head;

		e->loop.q_head = c->next;
		c->ret = -ESHUTDOWN;
		c->done = true;
		if (c->abandoned) {
			pthread_cond_destroy(&c->cond);
			free(c);
		} else {
			pthread_cond_signal(&c->cond);
		}
	}
	e->loop.q_tail = NULL;
	pthread_mutex_unlock(&e->loop.q_lock);
}

int engine_prepare_loop(struct engine *e)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	e->loop.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	e->loop.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	pthread_mutex_lock(&e->loop.q_lock);
	e->loop.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_unlock(&e->loop.q_lock);
	if (e->loop.sfd < 0 || e->loop.tfd < 0 || e->loop.efd < 0)
		return -errno;
	e->loop.thread = pthread_self();
	e->loop.thread_set = true;
	return 0;
}

void engine_watch(struct engine *e)
{
	double s = engine_watch_pass(e, e->loop.tfd);

	if (!isnan(s))
		engine_arm_timer(e, s);
}

bool engine_loop_stopping(struct engine *e)
{
	return __atomic_load_n(&e->loop.stopping, __ATOMIC_ACQUIRE);
}

void engine_loop_halt(struct engine *e)
{
	e->loop.stopping = true;
}

int engine_loop_wait(struct engine *e, short rev[ENGINE_LOOP_NFD])
{
	struct pollfd pfd[ENGINE_LOOP_NFD] = {
		{ .fd = e->loop.sfd, .events = POLLIN },
		{ .fd = e->loop.tfd, .events = POLLIN },
		{ .fd = e->loop.efd, .events = POLLIN },
		{ .fd = e->jobs.mover ? mover_event_fd(e->jobs.mover) : -1, .events = POLLIN },
	};
	/* At least once a second: the heartbeat GET /v1/health reads. */
	int timeout = e->watchdog_usec && e->watchdog_usec / 2000 < ENGINE_HEARTBEAT_MS ?
		      (int)(e->watchdog_usec / 2000) : ENGINE_HEARTBEAT_MS;
	int r;

	__atomic_store_n(&e->loop.heartbeat_ns, clock_mono_ns(), __ATOMIC_RELEASE);
	if (e->watchdog_usec)
		notify_watchdog();
	timeout = engine_watch_timeout_ms(e, timeout);
	if (poll(pfd, ENGINE_LOOP_NFD, timeout) < 0) {
		if (errno == EINTR)
			return 1;
		r = -errno;
		engine_loop_fail_pending(e);
		return log_errno(LOG_LEVEL_ERROR, r, "poll");
	}
	for (unsigned i = 0; i < ENGINE_LOOP_NFD; i++)
		rev[i] = pfd[i].revents;
	return 0;
}

int engine_loop_signal(struct engine *e)
{
	struct signalfd_siginfo si;

	if (read(e->loop.sfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

bool engine_loop_dispatch(struct engine *e, const short rev[ENGINE_LOOP_NFD])
{
	if (rev[ENGINE_LOOP_CALLS] & POLLIN) {
		uint64_t v;
		ssize_t rd = read(e->loop.efd, &v, sizeof(v));

		(void)rd;
		run_calls(e);
	}
	if (rev[ENGINE_LOOP_MOVER] & POLLIN) {
		engine_settle_jobs(e);
		/* Moves held for a migrating write are decided again as soon
		 * as the last such write is over, not an interval later. */
		if (e->cyc.deferred && !engine_jobs_writes_running(e)) {
			e->cyc.deferred = false;
			engine_trigger(e);
		}
	}
	if (e->loop.stopping)
		return true;
	if (__atomic_load_n(&e->loop.triggered, __ATOMIC_ACQUIRE) && !(rev[ENGINE_LOOP_TIMER] & POLLIN)) {
		/* Requested cycles (events, hooks) coalesce: one pending
		 * at most, and it starts no sooner than trigger_gap after
		 * the last cycle ended, so a flood of events runs a cycle
		 * a second, not back to back. */
		double gap = e->conf.cfg.interval_s / 2 < ENGINE_TRIGGER_GAP_S ? e->conf.cfg.interval_s / 2 :
			     ENGINE_TRIGGER_GAP_S;
		double since = (double)(clock_mono_ns() - e->cyc.last_end_ns) / 1e9;
		struct itimerspec cur;

		if (!e->cyc.last_end_ns || since >= gap) {
			__atomic_store_n(&e->loop.triggered, false, __ATOMIC_RELEASE);
			engine_cycle(e, false, NULL);
			engine_arm_timer(e, engine_next_cycle_s(e));
			return false;
		}
		/* Wake when the gap is over, unless the interval's own
		 * cycle comes first; that cycle serves the request. */
		if (timerfd_gettime(e->loop.tfd, &cur) == 0 &&
		    (double)cur.it_value.tv_sec + cur.it_value.tv_nsec / 1e9 > gap - since + 0.001)
			engine_arm_timer(e, gap - since);
		return false;
	}
	if (rev[ENGINE_LOOP_TIMER] & POLLIN) {
		uint64_t exp;
		ssize_t rd = read(e->loop.tfd, &exp, sizeof(exp));

		(void)rd;
		__atomic_store_n(&e->loop.triggered, false, __ATOMIC_RELEASE);
		engine_cycle(e, false, NULL);
		/* Re-armed relative to the end of the cycle: a slow cycle
		 * (a big migration) never makes cycles pile up. */
		engine_arm_timer(e, engine_next_cycle_s(e));
	}
	engine_watch(e);
	return false;
}
