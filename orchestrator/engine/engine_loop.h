/* engine_loop.h — the loop and the call queue (engine_loop.c): the
 * engine thread's fds, its waits and what each wakes it for. Calls
 * engine_cycle.c, engine_watch.c and engine_jobs.c. */
#ifndef NUMAORCH_ENGINE_LOOP_H
#define NUMAORCH_ENGINE_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct engine;
struct call;

/* Written by engine_loop.c alone; engine.c reads EFD (is the loop set
 * up?). */
struct engine_loopst {
	pthread_t thread;
	bool thread_set;
	int sfd, tfd, efd;
	pthread_mutex_t q_lock;
	struct call *q_head, *q_tail;
	bool stopping;
	bool triggered;
	int64_t heartbeat_ns;        /* the loop's last turn (atomic), 0: not running */
};

/* The fds a turn polls, in engine_loop_wait's REV. */
enum { ENGINE_LOOP_SIGNALS, ENGINE_LOOP_TIMER, ENGINE_LOOP_CALLS, ENGINE_LOOP_MOVER, ENGINE_LOOP_NFD };

void engine_loopst_init(struct engine_loopst *l);
void engine_loopst_free(struct engine_loopst *l);
/* The cycle timer to fire in SECONDS. */
void engine_arm_timer(struct engine *e, double seconds);
/* The watch's pass (engine_watch_pass), and the cycle it asks for armed. */
void engine_watch(struct engine *e);
/* Has the loop been told to stop (engine_stop, engine_loop_halt)? */
bool engine_loop_stopping(struct engine *e);
/* Stop after this turn (a signal that stops the agent). */
void engine_loop_halt(struct engine *e);
/* One turn's wait: the heartbeat noted, the watchdog pinged, then poll
 * until something is ready or the watch's next pass is due; REV gets
 * each fd's revents. Returns 0, 1 (interrupted: turn again) or a
 * negative errno (logged; the queued calls failed). */
int engine_loop_wait(struct engine *e, short rev[ENGINE_LOOP_NFD]);
/* The next signal read from the signalfd, 0: none left. */
int engine_loop_signal(struct engine *e);
/* The rest of the turn after its signals: queued calls, the mover's
 * finished jobs, a triggered or timed cycle, the watch. Returns true
 * when the loop must stop. */
bool engine_loop_dispatch(struct engine *e, const short rev[ENGINE_LOOP_NFD]);
/* Calls still queued when the loop ends get -ESHUTDOWN. */
void engine_loop_fail_pending(struct engine *e);

#endif
