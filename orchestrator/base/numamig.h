/* numamig.h — the live host's NUMA actions through libnuma.
 *
 * Kept apart from the rest because <numa.h> defines its own nodemask_t,
 * which clashes with ours (mask.h); this header uses plain node-id arrays.
 */
#ifndef NUMAORCH_NUMAMIG_H
#define NUMAORCH_NUMAMIG_H

#include <stdbool.h>
#include <sys/types.h>

/* true if the running kernel supports the NUMA API (numa_available()). */
bool numamig_available(void);

/* Move PID's pages from the nodes in FROM to those in TO (migrate_pages(2)
 * through numa_migrate_pages). 0, -ESRCH if the process is gone,
 * -EOPNOTSUPP on a kernel without NUMA support, or the
 * negative errno. */
int numamig_pages(pid_t pid, const int *from, unsigned nfrom, const int *to, unsigned nto);

/* move_pages(2) for PID (numa_move_pages): NODES NULL queries, else
 * moves PAGES[i] to NODES[i] (MPOL_MF_MOVE: pages only PID maps). STATUS
 * gets each page's node or negative errno. 0, or the negative errno of
 * the call (-ESRCH: gone; -EACCES/-EINVAL: a node outside its mems). */
int numamig_move(pid_t pid, unsigned long count, void **pages, const int *nodes, int *status);

#endif
