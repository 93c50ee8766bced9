/* The test build's switch for moverfx_relocate_all
 * (orchestrator/mover/moverfixture.h): only tests/hooks/moverfixture_hooks.c
 * defines it, so shipped code that called it would not link. */
#ifndef NUMAORCH_MOVERFIXTURE_HOOKS_H
#define NUMAORCH_MOVERFIXTURE_HOOKS_H

#include <stdbool.h>

/* From the next mover_submit on, jobs move every present page (ON) or
 * only what is off their target (the shipped behaviour, the default). */
void moverfx_set_relocate_all(bool on);

#endif
