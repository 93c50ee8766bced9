/* The test build's moverfx_relocate_all (see
 * orchestrator/mover/moverfixture.h): linked into build/numaorchd-test,
 * the unit tests, the live mover tests and migbench in place of
 * orchestrator/mover/moverfixture.c, never into the shipped daemon.
 * Off until a test turns it on (tests/hooks/moverfixture_hooks.h). */
#include "orchestrator/mover/moverfixture.h"
#include "tests/hooks/moverfixture_hooks.h"

#include <pthread.h>
#include <stdatomic.h>

static atomic_bool relocate_all;

void moverfx_set_relocate_all(bool on)
{
	atomic_store(&relocate_all, on);
}

bool moverfx_relocate_all(void)
{
	return atomic_load(&relocate_all);
}

static pthread_mutex_t on_move_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*on_move)(void *ctx, pid_t pid, size_t entries);
static void *on_move_ctx;

void moverfx_set_on_move(void (*fn)(void *ctx, pid_t pid, size_t entries), void *ctx)
{
	pthread_mutex_lock(&on_move_lock);
	on_move = fn;
	on_move_ctx = ctx;
	pthread_mutex_unlock(&on_move_lock);
}

void moverfx_moved(pid_t pid, size_t entries)
{
	pthread_mutex_lock(&on_move_lock);
	if (on_move)
		on_move(on_move_ctx, pid, entries);
	pthread_mutex_unlock(&on_move_lock);
}
