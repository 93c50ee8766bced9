/* testutil.h — helpers shared by the cmocka unit tests.
 * Tests run with the repository root as working directory (make check-unit).
 */
#ifndef NUMAORCH_TESTUTIL_H
#define NUMAORCH_TESTUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>

/* Compare ACTUAL with the JSON in golden file PATH (key order ignored).
 * With NUMAORCH_UPDATE_GOLDEN=1 in the environment the file is rewritten
 * instead (review the diff before committing!). Fails the test with both
 * texts printed on mismatch. Does not take ownership of ACTUAL. */
void tu_assert_json_golden(json_t *actual, const char *path);

/* Make a fresh temporary directory (mkdtemp under $TMPDIR or /tmp);
 * returns a malloc'd path. tu_rm_rf removes a tree. */
char *tu_mkdtemp(void);
void tu_rm_rf(const char *path);
/* Write TEXT to ROOT/REL, creating parent directories. */
void tu_write(const char *root, const char *rel, const char *text);

/* N nodes 0..N-1 into snapshot S (snap_set_nodes), each with CPUS
 * CPUs (node k: CPUs k*CPUS .. k*CPUS+CPUS-1) and MEM bytes. */
struct snapshot;
void tu_snap_nodes(struct snapshot *s, unsigned n, unsigned cpus, uint64_t mem);

/* The engine's parts as numaorchd registers them (the host sources of
 * agents/acquire.c, the policies of policies/). */
struct engine_parts;
const struct engine_parts *tu_engine_parts(void);

#endif
