/* xalloc.h — allocation.
 *
 * Out-of-memory policy (whole project): allocation failure aborts the
 * process (xmalloc & co). The agent is small and restartable by systemd;
 * a half-handled ENOMEM path in the middle of a cgroup write is more
 * dangerous than a clean restart. Pure: policies/ may use it.
 */
#ifndef NUMAORCH_XALLOC_H
#define NUMAORCH_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t sz);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The daemon's malloc settings (call once, first thing in main): fixed
 * mmap and trim thresholds. A cycle allocates and frees a few arrays of
 * ~1 MiB (1000 guests); with glibc's sliding thresholds those go back to
 * the kernel at every free and are faulted in again next cycle, which
 * slows the policy step severalfold for no lower peak RSS
 * (tests/README.md, make bench). */
void xmalloc_tune(void);
/* Give the free pages inside the heap back to the kernel (malloc_trim):
 * the engine calls it after each cycle. The fixed trim threshold keeps
 * the heap's top; this returns the holes a cycle's big arrays leave
 * between long-lived records (the decision ring, the history), which
 * otherwise keep the daemon's peak RSS at the heap's widest extent. */
void xmalloc_release(void);

#endif
