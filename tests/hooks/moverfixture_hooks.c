/* The test build's moverfx_relocate_all (see
 * orchestrator/mover/moverfixture.h): linked into build/numaorchd-test,
 * the unit tests, the live mover tests and migbench in place of
 * orchestrator/mover/moverfixture.c, never into the shipped daemon.
 * Off until a test turns it on (tests/hooks/moverfixture_hooks.h). */
#include "orchestrator/mover/moverfixture.h"
#include "tests/hooks/moverfixture_hooks.h"

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
