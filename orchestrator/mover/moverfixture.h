/* moverfixture.h — the mover's test-only knob: relocate every page.
 *
 * Tests and benchmarks on a one-node host have nowhere to move memory to;
 * a job that moves every present page, each to its own node when that is
 * a target, runs the mover's whole path (the walk, the queries and moves,
 * the rate budget) except the copy. The shipped daemon never does that:
 * it links moverfixture.c, whose answer is always no. The test build
 * (build/numaorchd-test, the unit tests, the live mover tests of
 * tests/integration/core, make bench-migrate's migbench) links
 * tests/hooks/moverfixture_hooks.c in its place, which a test turns on,
 * and which also lets a test observe each move call (moverfx_moved).
 * The shipped binary carries no test hook (make check-shipped proves it).
 */
#ifndef NUMAORCH_MOVERFIXTURE_H
#define NUMAORCH_MOVERFIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Does a job submitted now move every present page (relocate_all)? */
bool moverfx_relocate_all(void);

/* A worker's move call of ENTRIES entries of PID's pages has returned
 * (the shipped build: nothing; the test build tells a test that asked,
 * so it can see which processes' calls ran when). */
void moverfx_moved(pid_t pid, size_t entries);

#endif
