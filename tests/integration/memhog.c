/* memhog — a stand-in container workload for the integration tests:
 * allocates MiB of memory, touches every page, starts its THREADS
 * threads, writes "ready" to stdout, then either sleeps or (with --busy)
 * keeps rewriting its memory on them until killed. With --grow G it then keeps allocating
 * and touching G MiB a second more (in quarter-second steps, up to 1 GiB
 * more): a young guest whose memory is still growing. SIGUSR1 makes an
 * idle one busy from then on (its main thread; the watch test's guest
 * that starts working between two cycles).
 *
 *   memhog --mib 64 [--busy] [--threads 2] [--grow 8]
 */
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *mem;
static size_t len;
static volatile int busy;

static void on_usr1(int sig)
{
	(void)sig;
	busy = 1;
}

static void *spin(void *arg)
{
	size_t off = (size_t)(uintptr_t)arg * 4096;

	for (;;) {
		if (!busy) {
			pause();
			continue;
		}
		for (size_t i = off % (len ? len : 1); i < len; i += 4096)
			mem[i]++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long mib = 16, threads = 1, grow = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
			mib = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--grow") == 0 && i + 1 < argc)
			grow = strtoul(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--busy") == 0)
			busy = 1;
		else {
			fprintf(stderr, "usage: memhog --mib N [--busy] [--threads T] [--grow G]\n");
			return 2;
		}
	}
	signal(SIGUSR1, on_usr1);
	len = mib << 20;
	mem = malloc(len ? len : 1);
	if (!mem)
		return 1;
	for (size_t i = 0; i < len; i += 4096)
		mem[i] = 1;
	/* Every thread exists before "ready": a test that counts them (1500
	 * in test_hostile_cgroups) read 574 on a clean clone's CI run, the
	 * rest still being created. */
	for (unsigned long t = 1; t < threads; t++) {
		pthread_t th;

		if (pthread_create(&th, NULL, spin, (void *)(uintptr_t)t) != 0)
			return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (size_t more = 0, step = (grow << 20) / 4; step && more < (1UL << 30); more += step) {
		char *m;

		usleep(250000);
		m = malloc(step);
		if (!m)
			break;
		for (size_t i = 0; i < step; i += 4096)
			m[i] = 1;
	}
	spin(NULL);
	return 0;
}
