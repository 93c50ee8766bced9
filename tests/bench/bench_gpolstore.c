/* bench_gpolstore — what one per-guest policy change (PUT /v1/guests/ID/
 * policy) costs the store at 1k, 10k and 65k records: the time of
 * gpolstore_set (append + fdatasync, and the compaction when one falls
 * due) and the process RSS with the table loaded.
 *
 *   build/bench/bench_gpolstore [DIR]     (DIR: where the store goes; /var/tmp)
 *
 * Each size: a store of N records (a base file, as a daemon leaves it),
 * opened, then 300 timed PUTs that
 * change existing records (the table size stays N), and report the mean,
 * p50, p99 and max, plus the cost of a reopen (load + compaction).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "orchestrator/base/clock.h"
#include "orchestrator/base/fs.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/store/gpolstore.h"

#define PUTS 300

static long rss_kib(void)
{
	char *text, *p;
	long v = -1;

	if (fs_read_file("/proc/self/status", 1 << 16, &text, NULL) < 0)
		return -1;
	p = strstr(text, "VmRSS:");
	if (p)
		v = strtol(p + 6, NULL, 10);
	free(text);
	return v;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static const unsigned sizes[] = { 1000, 10000, 65000 };
	const char *base = argc > 1 ? argv[1] : "/var/tmp";
	struct guest_policy pol = { .mode = GPOL_PINNED };
	char err[400];

	xmalloc_tune(); /* as numaorchd does */
	mask_zero(&pol.nodes);
	mask_set(&pol.nodes, 1);
	printf("%8s %10s %10s %10s %10s %12s %10s\n", "records", "put mean", "p50", "p99", "max",
	       "reopen", "RSS");
	for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		char *dir = xasprintf("%s/bench-gpolstore-%ld-%u", base, (long)getpid(), sizes[k]);
		struct gpolstore *s;
		double t[PUTS], sum = 0, reopen;
		int64_t t0;
		long rss;

		/* The store as a daemon left it: a base file of N records. */
		{
			size_t cap = (size_t)sizes[k] * 200 + 200, off = 0;
			char *text = xmalloc(cap);

			if (fs_mkdir_p(dir, 0750) < 0)
				return 1;
			off += (size_t)snprintf(text + off, cap - off,
						"{\"format\": \"numaorch-guest-policies\", \"version\": 1, \"guests\": {");
			for (unsigned i = 0; i < sizes[k]; i++)
				off += (size_t)snprintf(text + off, cap - off,
							"%s\"docker-%060u\": {\"mode\": \"pinned\", \"nodes\": \"1\", "
							"\"set\": \"2026-12-01T00:00:00Z\"}", i ? ", " : "", i);
			off += (size_t)snprintf(text + off, cap - off, "}}\n");
			{
				char *path = xasprintf("%s/%s", dir, GPOLSTORE_FILE);

				if (fs_write_atomic(path, text, off, 0640) < 0)
					return 1;
				free(path);
			}
			free(text);
		}
		if (gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)) < 0) {
			fprintf(stderr, "bench_gpolstore: %s\n", err);
			return 1;
		}
		if (gpolstore_count(s) != sizes[k])
			return 1;
		for (unsigned i = 0; i < PUTS; i++) {
			char id[80];

			snprintf(id, sizeof(id), "docker-%060u", (i * 7919u) % sizes[k]);
			pol.mode = i % 2 ? GPOL_PINNED : GPOL_IGNORE;
			if (pol.mode == GPOL_IGNORE)
				mask_zero(&pol.nodes);
			else
				mask_set(&pol.nodes, 1);
			t0 = clock_mono_ns();
			if (gpolstore_set(s, id, &pol, clock_real_ns()) < 0)
				return 1;
			t[i] = (double)(clock_mono_ns() - t0) / 1e6;
			sum += t[i];
		}
		rss = rss_kib();
		gpolstore_free(s);
		t0 = clock_mono_ns();
		if (gpolstore_open(dir, GPOLSTORE_CREATE, &s, err, sizeof(err)) < 0)
			return 1;
		reopen = (double)(clock_mono_ns() - t0) / 1e6;
		if (gpolstore_count(s) != sizes[k])
			return 1;
		gpolstore_free(s);
		qsort(t, PUTS, sizeof(double), dcmp);
		printf("%8u %8.3fms %8.3fms %8.3fms %8.3fms %10.1fms %7ldKiB\n", sizes[k], sum / PUTS, t[PUTS / 2],
		       t[PUTS * 99 / 100], t[PUTS - 1], reopen, rss);
		{
			char *cmd = xasprintf("rm -rf '%s'", dir);

			if (system(cmd) != 0)
				fprintf(stderr, "bench_gpolstore: could not remove %s\n", dir);
			free(cmd);
		}
		free(dir);
	}
	return 0;
}
