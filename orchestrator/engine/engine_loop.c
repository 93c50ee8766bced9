/* engine_loop.c — the engine's loop: one thread waits on signals (as a
 * signalfd), the interval timer (timerfd, re-armed after each cycle), the
 * event fd that wakes it for queued calls and triggers, and the mover's
 * finished jobs (STYLE.md §4). Other threads hand it work with
 * engine_call() and engine_trigger(). */
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

bool engine_trigger(struct engine *e)
{
	uint64_t one = 1;

	/* Already pending: this request rides on that cycle. */
	if (__atomic_exchange_n(&e->triggered, true, __ATOMIC_ACQ_REL))
		return false;
	if (e->efd >= 0) {
		ssize_t w = write(e->efd, &one, sizeof(one));
		(void)w;
	}
	return true;
}

int64_t engine_heartbeat_ns(struct engine *e)
{
	return __atomic_load_n(&e->heartbeat_ns, __ATOMIC_ACQUIRE);
}


void engine_arm_timer(struct engine *e, double seconds)
{
	struct itimerspec its = { 0 };

	if (seconds < 0.001)
		seconds = 0.001;
	its.it_value.tv_sec = (time_t)seconds;
	its.it_value.tv_nsec = (long)((seconds - floor(seconds)) * 1e9);
	timerfd_settime(e->tfd, 0, &its, NULL);
}

static void run_calls(struct engine *e)
{
	for (;;) {
		struct call *c;

		pthread_mutex_lock(&e->q_lock);
		c = e->q_head;
		if (c) {
			e->q_head = c->next;
			if (!e->q_head)
				e->q_tail = NULL;
		}
		pthread_mutex_unlock(&e->q_lock);
		if (!c)
			return;
		c->ret = c->fn(e, c->arg);
		pthread_mutex_lock(&e->q_lock);
		c->done = true;
		if (c->abandoned) {
			pthread_mutex_unlock(&e->q_lock);
			pthread_cond_destroy(&c->cond);
			free(c);
			continue;
		}
		pthread_cond_signal(&c->cond);
		pthread_mutex_unlock(&e->q_lock);
	}
}

int engine_call(struct engine *e, engine_fn fn, void *arg, unsigned timeout_ms)
{
	struct call *c;
	struct timespec until;
	int ret;

	if (e->thread_set && pthread_equal(pthread_self(), e->thread))
		return fn(e, arg);
	c = xcalloc(1, sizeof(*c));
	c->fn = fn;
	c->arg = arg;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_lock(&e->q_lock);
	if (e->stopping || e->efd < 0) {
		pthread_mutex_unlock(&e->q_lock);
		pthread_cond_destroy(&c->cond);
		free(c);
		return -ESHUTDOWN;
	}
	if (e->q_tail)
		e->q_tail->next = c;
	else
		e->q_head = c;
	e->q_tail = c;
	{
		uint64_t one = 1;
		ssize_t w = write(e->efd, &one, sizeof(one));
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
			pthread_cond_wait(&c->cond, &e->q_lock);
		} else if (pthread_cond_timedwait(&c->cond, &e->q_lock, &until) == ETIMEDOUT && !c->done) {
			c->abandoned = true;
			pthread_mutex_unlock(&e->q_lock);
			return -ETIMEDOUT;
		}
	}
	ret = c->ret;
	pthread_mutex_unlock(&e->q_lock);
	pthread_cond_destroy(&c->cond);
	free(c);
	return ret;
}

void engine_stop(struct engine *e)
{
	uint64_t one = 1;

	__atomic_store_n(&e->stopping, true, __ATOMIC_RELEASE);
	if (e->efd >= 0) {
		ssize_t w = write(e->efd, &one, sizeof(one));
		(void)w;
	}
}

/* Calls still queued when the loop ends get -ESHUTDOWN. */
static void fail_pending(struct engine *e)
{
	pthread_mutex_lock(&e->q_lock);
	e->stopping = true;
	while (e->q_head) {
		struct call *c = e->q_head;

		e->q_head = c->next;
		c->ret = -ESHUTDOWN;
		c->done = true;
		if (c->abandoned) {
			pthread_cond_destroy(&c->cond);
			free(c);
		} else {
			pthread_cond_signal(&c->cond);
		}
	}
	e->q_tail = NULL;
	pthread_mutex_unlock(&e->q_lock);
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
	e->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	e->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	pthread_mutex_lock(&e->q_lock);
	e->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_unlock(&e->q_lock);
	if (e->sfd < 0 || e->tfd < 0 || e->efd < 0)
		return -errno;
	e->thread = pthread_self();
	e->thread_set = true;
	return 0;
}

int engine_reload(struct engine *e)
{
	struct agent_config *nc;
	int r = -ENOENT;

	notify_reloading();
	nc = e->reload ? e->reload(e->reload_ctx) : NULL;
	if (nc) {
		/* Running migrations go on: a reload is also logrotate's, and
		 * the settings that made them did not change. Only new mover
		 * settings stop them at a chunk boundary (recorded
		 * "memory_stopped"), and the next cycles decide under those. */
		if (e->mover && engine_mover_settings_differ(&e->base, nc)) {
			log_info("reload: the memory mover's settings changed; stopping its running jobs");
			mover_stop_all(e->mover);
			engine_settle_jobs(e);
		}
		r = engine_apply_config(e, nc);
		if (r == 0) {
			log_info("configuration reloaded");
		} else {
			log_error("new configuration could not be applied; keeping the old one");
			r = -EINVAL;
		}
		config_free(nc);
		engine_arm_timer(e, engine_next_cycle_s(e));
	} else if (e->reload) {
		r = -EINVAL;
	}
	notify_ready(NULL);
	return r;
}

int engine_run(struct engine *e, engine_reload_fn reload, void *ctx)
{
	int r;

	e->reload = reload;
	e->reload_ctx = ctx;

	if (e->efd < 0) {
		r = engine_prepare_loop(e);
		if (r < 0)
			return log_errno(LOG_LEVEL_ERROR, r, "cannot set up the event loop");
	}
	engine_arm_timer(e, 0);
	/* WatchdogSec=: the loop wakes at least every half interval and pings
	 * when it does, so a hung engine (not a hung helper thread) is what
	 * systemd notices. */
	e->watchdog_usec = notify_watchdog_usec();
	while (!__atomic_load_n(&e->stopping, __ATOMIC_ACQUIRE)) {
		struct pollfd pfd[4] = {
			{ .fd = e->sfd, .events = POLLIN },
			{ .fd = e->tfd, .events = POLLIN },
			{ .fd = e->efd, .events = POLLIN },
			{ .fd = e->mover ? mover_event_fd(e->mover) : -1, .events = POLLIN },
		};
		/* At least once a second: the heartbeat GET /v1/health reads. */
		int timeout = e->watchdog_usec && e->watchdog_usec / 2000 < ENGINE_HEARTBEAT_MS ?
			      (int)(e->watchdog_usec / 2000) : ENGINE_HEARTBEAT_MS;

		__atomic_store_n(&e->heartbeat_ns, clock_mono_ns(), __ATOMIC_RELEASE);
		if (e->watchdog_usec)
			notify_watchdog();
		timeout = engine_watch_timeout_ms(e, timeout);
		if (poll(pfd, 4, timeout) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			fail_pending(e);
			return log_errno(LOG_LEVEL_ERROR, r, "poll");
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(e->sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					engine_reload(e);
				} else if (si.ssi_signo == SIGUSR1) {
					/* logrotate's signal: the files reopened, nothing
					 * re-read and no migration stopped. */
					if (engine_reopen_log(e, e->base.decision_log) == 0)
						log_info("received SIGUSR1: decision log reopened");
				} else {
					log_info("received %s, stopping", strsignal((int)si.ssi_signo));
					notify_stopping();
					e->stopping = true;
				}
			}
		}
		if (pfd[2].revents & POLLIN) {
			uint64_t v;
			ssize_t rd = read(e->efd, &v, sizeof(v));

			(void)rd;
			run_calls(e);
		}
		if (pfd[3].revents & POLLIN)
			engine_settle_jobs(e);
		if (e->stopping)
			break;
		if (__atomic_load_n(&e->triggered, __ATOMIC_ACQUIRE) && !(pfd[1].revents & POLLIN)) {
			/* Requested cycles (events, hooks) coalesce: one pending
			 * at most, and it starts no sooner than trigger_gap after
			 * the last cycle ended, so a flood of events runs a cycle
			 * a second, not back to back. */
			double gap = e->cfg.interval_s / 2 < ENGINE_TRIGGER_GAP_S ? e->cfg.interval_s / 2 :
				     ENGINE_TRIGGER_GAP_S;
			double since = (double)(clock_mono_ns() - e->last_cycle_end_ns) / 1e9;
			struct itimerspec cur;

			if (!e->last_cycle_end_ns || since >= gap) {
				__atomic_store_n(&e->triggered, false, __ATOMIC_RELEASE);
				engine_cycle(e, false, NULL);
				engine_arm_timer(e, engine_next_cycle_s(e));
				continue;
			}
			/* Wake when the gap is over, unless the interval's own
			 * cycle comes first; that cycle serves the request. */
			if (timerfd_gettime(e->tfd, &cur) == 0 &&
			    (double)cur.it_value.tv_sec + cur.it_value.tv_nsec / 1e9 > gap - since + 0.001)
				engine_arm_timer(e, gap - since);
			continue;
		}
		if (pfd[1].revents & POLLIN) {
			uint64_t exp;
			ssize_t rd = read(e->tfd, &exp, sizeof(exp));

			(void)rd;
			__atomic_store_n(&e->triggered, false, __ATOMIC_RELEASE);
			engine_cycle(e, false, NULL);
			/* Re-armed relative to the end of the cycle: a slow cycle
			 * (a big migration) never makes cycles pile up. */
			engine_arm_timer(e, engine_next_cycle_s(e));
		}
		engine_watch(e);
	}
	/* SIGTERM: jobs stop at a chunk boundary; their guests keep their
	 * (widened, consistent) mems. */
	if (e->mover) {
		mover_stop_all(e->mover);
		engine_settle_jobs(e);
	}
	/* No start binding outlives the agent (engine_bind.c). */
	engine_release_bindings(e, "the agent stopped");
	fail_pending(e);
	return 0;
}

