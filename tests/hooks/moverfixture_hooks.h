/* The test build's switch for moverfx_relocate_all
 * (orchestrator/mover/moverfixture.h): only tests/hooks/moverfixture_hooks.c
 * defines it, so shipped code that called it would not link. */
#ifndef NUMAORCH_MOVERFIXTURE_HOOKS_H
#define NUMAORCH_MOVERFIXTURE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* From the next mover_submit on, jobs move every present page (ON) or
 * only what is off their target (the shipped behaviour, the default). */
void moverfx_set_relocate_all(bool on);

/* From now on FN(CTX, PID, ENTRIES) runs after each of the mover's move
 * calls (moverfx_moved), on the worker that made it; NULL: none. */
void moverfx_set_on_move(void (*fn)(void *ctx, pid_t pid, size_t entries), void *ctx);

#endif
