/* mover: the pure part — /proc/PID/maps → ranges, ranges → chunks, the
 * chunk size a call's duration gives, the target node of a page, and a
 * job's accounting by source node. */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "orchestrator/base/hostpaths.h"
#include "orchestrator/mover/mover.h"
#include "orchestrator/base/numamaps.h"
#include "orchestrator/base/xalloc.h"
#include "orchestrator/mover/moverfixture.h"
#include "tests/hooks/moverfixture_hooks.h"

static const char *maps =
	"55d0c0000000-55d0c0002000 r--p 00000000 08:01 1234   /usr/bin/memhog\n"
	"55d0c0002000-55d0c0003000 r-xp 00002000 08:01 1234   /usr/bin/memhog\n"
	"7f0000000000-7f0010000000 rw-p 00000000 00:00 0 \n"
	"7f0010000000-7f0010001000 ---p 00000000 00:00 0 \n"
	"7f0010001000-7f0010002000 rw-s 00000000 00:05 99     /dev/zero (deleted)\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]\n"
	"7ffd000fe000-7ffd00100000 r--p 00000000 00:00 0      [vvar]\n"
	"7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0      [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n";

/* smaps' KernelPageSize marks a hugetlb mapping; mover_huge_cut keeps its
 * walk to as many of its off-target huge pages as the target's pools have
 * free (none: the kernel would make surplus pages there). */
static void test_hugetlb_mappings(void **state)
{
	static const char smaps[] =
		"7f0000000000-7f0008000000 rw-s 00000000 00:0f 1234 /anon_hugepage (deleted)\n"
		"Size:             131072 kB\n"
		"KernelPageSize:     2048 kB\n"
		"MMUPageSize:        2048 kB\n"
		"7f0010000000-7f0010400000 rw-p 00000000 00:00 0\n"
		"Size:               4096 kB\n"
		"KernelPageSize:        4 kB\n"
		"AnonHugePages:      2048 kB\n";
	/* node of each huge page: 0, 0, absent, 1 (the target), 0, 0 */
	const int status[6] = { 0, 0, -14, 1, 0, 0 };
	struct mover_vma *v;
	nodemask_t to;
	uint64_t left;

	(void)state;
	assert_int_equal(mover_parse_maps(smaps, &v), 2);
	assert_int_equal(v[0].hpage, 2 << 20);
	assert_int_equal(v[0].thp_bytes, 0);
	assert_int_equal(v[1].hpage, 4096);
	assert_int_equal(v[1].thp_bytes, 2 << 20);
	free(v);

	mask_zero(&to);
	mask_set(&to, 1);
	/* no free page: nothing from the start */
	assert_int_equal(mover_huge_cut(status, 6, &to, 0, &left), 0);
	assert_int_equal(left, 4);
	/* two free: the first two; the last two left */
	assert_int_equal(mover_huge_cut(status, 6, &to, 2, &left), 4);
	assert_int_equal(left, 2);
	/* three: up to the third off-target page's place */
	assert_int_equal(mover_huge_cut(status, 6, &to, 3, &left), 5);
	assert_int_equal(left, 1);
	/* enough for all */
	assert_int_equal(mover_huge_cut(status, 6, &to, 4, &left), 6);
	assert_int_equal(left, 0);
	assert_int_equal(mover_huge_cut(status, 6, &to, 100, &left), 6);
	assert_int_equal(left, 0);
}

static void test_parse_maps(void **state)
{
	struct mover_vma *v;
	int n;

	(void)state;
	n = mover_parse_maps(maps, &v);
	/* vvar, vdso, vsyscall and the ---p guard are left out */
	assert_int_equal(n, 5);
	assert_true(v[0].start == 0x55d0c0000000ULL && v[0].end == 0x55d0c0002000ULL);
	assert_true(v[2].start == 0x7f0000000000ULL && v[2].end == 0x7f0010000000ULL);
	assert_true(v[3].start == 0x7f0010001000ULL);
	assert_true(v[4].end == 0x7ffd00021000ULL);
	free(v);
	assert_int_equal(mover_parse_maps("", &v), 0);
	free(v);
	assert_int_equal(mover_parse_maps("not a maps line\n", &v), -EINVAL);
	assert_int_equal(mover_parse_maps("2000-1000 rw-p 0 00:00 0\n", &v), -EINVAL);
	/* a mapping line short of its offset, device or inode; perms too
	 * short; an address past 64 bits */
	assert_int_equal(mover_parse_maps("1000-2000 rw-p 0 00:00\n", &v), -EINVAL);
	assert_int_equal(mover_parse_maps("1000-2000 rw 0 00:00 0\n", &v), -EINVAL);
	assert_int_equal(mover_parse_maps("10000000000000000-10000000000001000 rw-p 0 00:00 0\n", &v), -EINVAL);
	/* the last line without its newline; a name of several words */
	assert_int_equal(mover_parse_maps("1000-2000 rw-p 0 00:00 0\n"
					  "7f0000000000-7f0000400000 rw-s 00000000 00:01 7 /memfd:ram (deleted)",
					  &v),
			 2);
	assert_true(v[0].start == 0x1000 && v[0].end == 0x2000);
	assert_true(v[1].start == 0x7f0000000000ULL && v[1].end == 0x7f0000400000ULL);
	free(v);
}

/* A large smaps parses whole: 4000 mappings of 20 lines each, every
 * line read to its own end by the hand parser. Its speed is a benchmark
 * figure (make bench-migrate --trace's "maps"), not this test's. */
static void test_parse_smaps_large(void **state)
{
	enum { N = 4000 };
	size_t cap = (size_t)N * 640, len = 0;
	char *text = malloc(cap);
	struct mover_vma *v;
	uint64_t thp = 0;

	(void)state;
	assert_non_null(text);
	for (unsigned i = 0; i < N; i++) {
		unsigned long long a = 0x7f0000000000ULL + (unsigned long long)i * 0x400000ULL;

		len += (size_t)snprintf(text + len, cap - len, "%llx-%llx rw-p 00000000 00:00 0\n", a, a + 0x400000ULL);
		for (unsigned k = 0; k < 18; k++)
			len += (size_t)snprintf(text + len, cap - len, "Key_%c:              %u kB\n", 'A' + k, i);
		len += (size_t)snprintf(text + len, cap - len, "AnonHugePages:      %u kB\n", i % 3 ? 2048u : 0u);
	}
	assert_true(len < cap);
	assert_int_equal(mover_parse_maps(text, &v), N);
	for (unsigned i = 0; i < N; i++)
		thp += v[i].thp_bytes;
	assert_true(v[N - 1].start == 0x7f0000000000ULL + (N - 1) * 0x400000ULL);
	assert_true(thp == (uint64_t)(N - (N + 2) / 3) * (2048u << 10));
	free(v);
	free(text);
}

/* smaps: the same mappings, each followed by its "Key: value" lines; a
 * mapping's AnonHugePages is kept, a left-out mapping's is not taken */
static void test_parse_smaps(void **state)
{
	static const char smaps[] =
		"55d0c0000000-55d0c0002000 r--p 00000000 08:01 1234   /usr/bin/guest\n"
		"Size:                  8 kB\n"
		"AnonHugePages:         0 kB\n"
		"VmFlags: rd mr mw me\n"
		"7f0000000000-7f0001000000 rw-p 00000000 00:00 0\n"
		"Size:              16384 kB\n"
		"AnonHugePages:     14336 kB\n"
		"THPeligible:    1\n"
		"7ffd000fe000-7ffd00100000 r--p 00000000 00:00 0      [vvar]\n"
		"AnonHugePages:      2048 kB\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0      [stack]\n"
		"AnonHugePages:         0 kB\n";
	struct mover_vma *v;

	(void)state;
	assert_int_equal(mover_parse_maps(smaps, &v), 3);
	assert_true(v[0].thp_bytes == 0);
	assert_true(v[1].start == 0x7f0000000000ULL && v[1].thp_bytes == 14336ull << 10);
	assert_true(v[2].start == 0x7ffd00000000ULL && v[2].thp_bytes == 0);
	free(v);
	/* shmem and file THPs count too; a window over mappings without
	 * any guesses no THP */
	assert_int_equal(mover_parse_maps("7f0000000000-7f0000400000 rw-s 00000000 00:01 7 /memfd:ram (deleted)\n"
					  "AnonHugePages:         0 kB\n"
					  "ShmemPmdMapped:     4096 kB\n",
					  &v),
			 1);
	assert_true(v[0].thp_bytes == 4096ull << 10);
	assert_true(mover_window_has_thp(v, 1, 0x7f0000100000ULL, 0x7f0000200000ULL));
	assert_false(mover_window_has_thp(v, 1, 0x7f0000400000ULL, 0x7f0000500000ULL));
	v[0].thp_bytes = 0;
	assert_false(mover_window_has_thp(v, 1, 0x7f0000000000ULL, 0x7f0000400000ULL));
	free(v);
	/* a key line before any mapping names none */
	assert_int_equal(mover_parse_maps("AnonHugePages: 2048 kB\n", &v), 0);
	free(v);
}

/* The census by mapping: which mappings hold a page on a node it is to
 * leave; the walk then skips the others (a guest's inherited libraries
 * and empty thread stacks), and keeps what the census did not see. */
static void test_census_prune(void **state)
{
	static const char numa_maps[] =
		"00400000 default file=/usr/bin/guest mapped=4 N0=4 kernelpagesize_kB=4\n"
		"7f0000000000 default anon=4096 dirty=4096 N0=3584 N1=512 kernelpagesize_kB=4\n"
		"7f1000000000 default\n"
		"7f2000000000 default anon=10 dirty=10 N1=10 kernelpagesize_kB=4\n"
		"7ffd00000000 default stack anon=3 dirty=3 N2=3 kernelpagesize_kB=4\n"
		"not an address line N0=9\n"
		"7ffe00000000 bind:1 anon=1 dirty=1 N12=1 kernelpagesize_kB=4";
	struct mover_vma vmas[] = {
		{ 0x400000, 0x401000, 0, 0 },               /* file pages on node 0 */
		{ 0x7f0000000000ULL, 0x7f0001000000ULL, 0, 0 }, /* most on 0 */
		{ 0x7f1000000000ULL, 0x7f1000800000ULL, 0, 0 }, /* nothing present */
		{ 0x7f2000000000ULL, 0x7f2000010000ULL, 0, 0 }, /* all on 1 */
		{ 0x7f3000000000ULL, 0x7f3000010000ULL, 0, 0 }, /* mapped since */
		{ 0x7ffd00000000ULL, 0x7ffd00021000ULL, 0, 0 }, /* on 2 */
		{ 0x7ffe00000000ULL, 0x7ffe00001000ULL, 0, 0 }, /* on 12 */
	};
	struct mover_vma w[7];
	struct mover_census_vma *c;
	nodemask_t to;
	unsigned nc, n;

	(void)state;
	mask_zero(&to);
	mask_set(&to, 1);
	nc = mover_census_vmas(numa_maps, &to, &c);
	assert_int_equal(nc, 6);
	assert_true(c[0].start == 0x400000 && c[0].moves);
	assert_true(c[1].moves && !c[2].moves && !c[3].moves && c[4].moves && c[5].moves);
	memcpy(w, vmas, sizeof(w));
	n = mover_prune_vmas(w, 7, c, nc);
	assert_int_equal(n, 5);
	assert_true(w[0].start == 0x400000 && w[1].start == 0x7f0000000000ULL && w[2].start == 0x7f3000000000ULL &&
		    w[3].start == 0x7ffd00000000ULL && w[4].start == 0x7ffe00000000ULL);
	free(c);
	/* a split job's pages leave every node but its first: node 2 stays */
	mask_zero(&to);
	mask_set(&to, 2);
	nc = mover_census_vmas(numa_maps, &to, &c);
	memcpy(w, vmas, sizeof(w));
	n = mover_prune_vmas(w, 7, c, nc);
	assert_int_equal(n, 5);
	assert_true(w[2].start == 0x7f2000000000ULL && w[3].start == 0x7f3000000000ULL &&
		    w[4].start == 0x7ffe00000000ULL);
	free(c);
	/* relocate_all (no STAY): every mapping with a page present moves */
	nc = mover_census_vmas(numa_maps, NULL, &c);
	memcpy(w, vmas, sizeof(w));
	n = mover_prune_vmas(w, 7, c, nc);
	assert_int_equal(n, 6);
	assert_true(w[2].start == 0x7f2000000000ULL);
	free(c);
	/* out of order (never from the kernel), sorted; an empty census
	 * prunes nothing */
	nc = mover_census_vmas("7f2000000000 default anon=1 N0=1\n00400000 default\n", &to, &c);
	assert_int_equal(nc, 2);
	assert_true(c[0].start == 0x400000 && !c[0].moves && c[1].moves);
	free(c);
	nc = mover_census_vmas("", &to, &c);
	assert_int_equal(nc, 0);
	memcpy(w, vmas, sizeof(w));
	assert_int_equal(mover_prune_vmas(w, 7, c, nc), 7);
	free(c);
}

/* Only a mapping whose AnonHugePages covers all its aligned 2 MiB blocks
 * is asked one page per block; its unaligned edges, other mappings, and a
 * block whose head is not in the window are asked page by page. */
static void test_query_plan(void **state)
{
	enum { P = 4096, B = 512 };
	/* all THP: 1 MiB unaligned head edge, 2 blocks; then 4 KiB pages */
	struct mover_vma v[2] = { { 0x40100000, 0x40600000, 4u << 20, 0 }, { 0x50000000, 0x50004000, 0, 0 } };
	static void *pg[256 + 2 * B + 4];
	static size_t ask[256 + 2 * B + 4];
	static int st[256 + 2 * B + 4], qs[256 + 2 * B + 4];
	size_t n = 0, nq;

	(void)state;
	for (uintptr_t a = v[0].start; a < v[0].end; a += P)
		pg[n++] = (void *)a;
	for (uintptr_t a = v[1].start; a < v[1].end; a += P)
		pg[n++] = (void *)a;
	assert_int_equal(n, 256 + 2 * B + 4);
	nq = mover_query_plan(pg, n, P, v, 2, ask);
	/* 256 edge pages, the two heads, the 4 small pages */
	assert_int_equal(nq, 256 + 2 + 4);
	assert_int_equal(ask[255], 255);
	assert_int_equal(ask[256], 256);     /* first block's head */
	assert_int_equal(ask[257], 256 + B); /* second block's head */
	assert_int_equal(ask[258], 256 + 2 * B);
	for (size_t q = 0; q < nq; q++)
		qs[q] = (int)(q % 3);
	mover_query_expand(st, n, ask, nq, qs);
	assert_int_equal(st[255], 255 % 3);
	for (size_t i = 256; i < 256 + B; i++)
		assert_int_equal(st[i], 256 % 3);
	for (size_t i = 256 + B; i < 256 + 2 * B; i++)
		assert_int_equal(st[i], 257 % 3);
	assert_int_equal(st[n - 1], (int)((nq - 1) % 3));
	/* one block short of all THP: every page is asked */
	v[0].thp_bytes = 2u << 20;
	assert_int_equal(mover_query_plan(pg, n, P, v, 2, ask), n);
	/* a window that starts mid-block: that block's head is not in it */
	v[0].thp_bytes = 4u << 20;
	nq = mover_query_plan(pg + 256 + 10, n - 256 - 10, P, v, 2, ask);
	assert_int_equal(nq, (B - 10) + 1 + 4);
}

/* mappings + target chunk size → the chunks a job walks */
static void test_chunks_cover_every_page_once(void **state)
{
	const struct mover_vma v[] = {
		{ 0x10000, 0x10000 + 10 * 4096, 0, 0 },  /* 10 pages */
		{ 0x40000, 0x40000 + 3 * 4096, 0, 0 },   /* 3 pages */
		{ 0x80000, 0x80000 + 4096, 0, 0 },       /* 1 page */
	};
	static const struct {
		uintptr_t start;
		size_t pages;
	} want[] = {
		{ 0x10000, 4 }, { 0x14000, 4 }, { 0x18000, 2 }, /* never across a mapping's end */
		{ 0x40000, 3 }, { 0x80000, 1 },
	};
	uintptr_t pos = 0, start;
	size_t n, total = 0;
	unsigned k = 0;

	(void)state;
	while ((n = mover_next_chunk(v, 3, 4096, 4, &pos, &start)) > 0) {
		assert_true(k < sizeof(want) / sizeof(want[0]));
		assert_true(start == want[k].start);
		assert_int_equal(n, want[k].pages);
		total += n;
		k++;
	}
	assert_int_equal(k, 5);
	assert_int_equal(total, 14);
	/* the chunk size may change between calls (it adapts): the cursor
	 * resumes where the last chunk ended */
	pos = 0;
	assert_int_equal(mover_next_chunk(v, 3, 4096, 3, &pos, &start), 3);
	assert_int_equal(mover_next_chunk(v, 3, 4096, 100, &pos, &start), 7);
	assert_true(start == 0x13000);
	assert_int_equal(mover_next_chunk(v, 3, 4096, 100, &pos, &start), 3);
	assert_int_equal(mover_next_chunk(v, 3, 4096, 100, &pos, &start), 1);
	assert_int_equal(mover_next_chunk(v, 3, 4096, 100, &pos, &start), 0);
	/* nothing to walk */
	pos = 0;
	assert_int_equal(mover_next_chunk(v, 0, 4096, 4, &pos, &start), 0);
	assert_int_equal(mover_next_chunk(v, 3, 4096, 0, &pos, &start), 0);
}

/* a window's query results + target → the entries to move */
static void test_plan_window(void **state)
{
	enum { N = 1024 + 8 };
	static int status[N];
	static size_t idx[N];
	static int w[N];
	static void *pg[N];
	nodemask_t to;
	size_t k;

	(void)state;
	mask_parse("1", &to);
	for (int i = 0; i < N; i++)
		pg[i] = (void *)(uintptr_t)(0x40000000 + (uintptr_t)i * 4096);
	/* pages 0..1023 from a 2 MiB-aligned start, all on node 0 (two
	 * probable THPs); then 8 pages: on the target, absent, on node 2 */
	for (int i = 0; i < 1024; i++)
		status[i] = 0;
	status[1024] = 1;
	status[1025] = 1;
	status[1026] = -14; /* -EFAULT: not present */
	status[1027] = -2;  /* -ENOENT */
	for (int i = 1028; i < N; i++)
		status[i] = 2;
	k = mover_plan_window(status, pg, N, 4096, &to, false, true, idx, w);
	assert_int_equal(k, 2 + 4);
	assert_int_equal(idx[0], 0);
	assert_int_equal(w[0], 512);
	assert_int_equal(idx[1], 512);
	assert_int_equal(w[1], 512);
	for (unsigned e = 2; e < 6; e++) {
		assert_int_equal(idx[e], 1028 + e - 2);
		assert_int_equal(w[e], 1);
	}
	/* without compaction (the second pass) every misplaced page is one entry */
	k = mover_plan_window(status, pg, N, 4096, &to, false, false, idx, w);
	assert_int_equal(k, 1024 + 4);
	assert_int_equal(w[700], 1);
	/* a run broken by one page elsewhere is no THP; nor one that is not
	 * 2 MiB-aligned */
	status[300] = 3;
	k = mover_plan_window(status, pg, N, 4096, &to, false, true, idx, w);
	assert_int_equal(k, 512 + 1 + 4);
	assert_int_equal(w[0], 1);
	assert_int_equal(idx[512], 512);
	assert_int_equal(w[512], 512);
	status[300] = 0;
	for (int i = 0; i < N; i++)
		pg[i] = (void *)(uintptr_t)(0x40001000 + (uintptr_t)i * 4096);
	k = mover_plan_window(status, pg, N, 4096, &to, false, true, idx, w);
	assert_int_equal(k, 1024 + 4 - 511); /* only the run starting at 0x40200000 is aligned */
	/* a window spans mappings: an aligned run with a hole in its
	 * addresses (two mappings) is no THP */
	for (int i = 0; i < N; i++)
		pg[i] = (void *)(uintptr_t)(0x40000000 + (uintptr_t)i * 4096 + (i >= 100 ? 0x100000 : 0));
	k = mover_plan_window(status, pg, N, 4096, &to, false, true, idx, w);
	assert_true(k > 512);
	assert_int_equal(w[0], 1);
	for (int i = 0; i < N; i++)
		pg[i] = (void *)(uintptr_t)(0x40000000 + (uintptr_t)i * 4096);
	/* relocate_all (tests): every present page, the target's too */
	k = mover_plan_window(status, pg, N, 4096, &to, true, false, idx, w);
	assert_int_equal(k, N - 2);
}

/* a window takes pages from as many mappings as fit */
static void test_fill_window(void **state)
{
	struct mover_vma v[3] = { { 0x1000, 0x3000, 0, 0 }, { 0x10000, 0x11000, 0, 0 }, { 0x20000, 0x25000, 0, 0 } };
	void *pg[16];
	uintptr_t pos = 0;

	(void)state;
	assert_int_equal(mover_fill_window(v, 3, 4096, 4, &pos, pg), 4);
	assert_ptr_equal(pg[0], (void *)0x1000);
	assert_ptr_equal(pg[1], (void *)0x2000);
	assert_ptr_equal(pg[2], (void *)0x10000);
	assert_ptr_equal(pg[3], (void *)0x20000);
	assert_int_equal(mover_fill_window(v, 3, 4096, 16, &pos, pg), 4);
	assert_ptr_equal(pg[3], (void *)0x24000);
	assert_int_equal(mover_fill_window(v, 3, 4096, 16, &pos, pg), 0);
}

/* a guessed THP whose head moved without the rest was 4 KiB pages */
static void test_guess_failed(void **state)
{
	enum { N = 1024 };
	static int st[N];
	size_t idx[2] = { 0, 512 };
	int w[2] = { 512, 512 };
	nodemask_t to;

	(void)state;
	mask_parse("1", &to);
	for (int i = 0; i < N; i++)
		st[i] = 1;
	assert_false(mover_guess_failed(st, N, idx, w, 2, &to));
	st[600] = 0;
	assert_true(mover_guess_failed(st, N, idx, w, 2, &to));
	/* the head did not move (busy): no verdict on the guess */
	st[512] = 0;
	assert_false(mover_guess_failed(st, N, idx, w, 2, &to));
}

/* The exact tally of a window (what a job counts as moved, cancelled,
 * stopped or failed mid-window): a page counts once, by the node it was
 * on, when it is on the target now and was not there before — or came
 * onto the first node from another target node. */
static void test_window_moved(void **state)
{
	/* before:  0  0  2  1  -  3  1  0 */
	int first[8] = { 0, 0, 2, 1, -ENOENT, 3, 1, 0 };
	/* now:     1  0  1  1  1  -  3  3 */
	int now[8] = { 1, 0, 1, 1, 1, -EFAULT, 3, 3 };
	long by[MASK_MAX_NODES] = { 0 };
	nodemask_t to;

	(void)state;
	mask_parse("1,3", &to);
	/* page 0: 0->1, page 2: 2->1, page 7: 0->3 count; page 6: 1->3 counts
	 * (onto another target node: the first node's room ran out); page 1
	 * stayed; page 3 stayed on the target; page 4 was not present
	 * before; page 5 is gone now */
	assert_int_equal(mover_window_moved(first, now, 8, &to, by), 4);
	assert_int_equal(by[0], 2);
	assert_int_equal(by[1], 1);
	assert_int_equal(by[2], 1);
	assert_int_equal(by[3], 0);
	/* nothing moved: nothing counted */
	for (int i = 0; i < MASK_MAX_NODES; i++)
		by[i] = 0;
	assert_int_equal(mover_window_moved(first, first, 8, &to, by), 0);
	assert_int_equal(by[0] + by[1] + by[2] + by[3], 0);
}

/* What a window's walk saw and left off the target on purpose: present
 * off it, or refused as shared (EACCES); not what it could not see
 * (EFAULT: untouched, or marked for a NUMA hinting fault), not what is
 * on the target, not what the move found gone (ENOENT). */
static void test_window_left(void **state)
{
	int st[8] = { 1, 0, -EACCES, -EFAULT, 2, -ENOENT, 1, 3 };
	nodemask_t to;

	(void)state;
	mask_parse("1", &to);
	assert_int_equal(mover_window_left(st, 8, &to), 4); /* 0, EACCES, 2, 3 */
	mask_parse("1-3", &to);
	assert_int_equal(mover_window_left(st, 8, &to), 2); /* 0, EACCES */
}

/* After the walk: done under LEFT_MIN_BYTES; else one look to see, then
 * wait while the kernel's balancing takes what is left down by a tenth
 * (or 2 MiB) a look, up to MOVER_SETTLE_MAX_S; else sweep. */
static void test_settle_step(void **state)
{
	const uint64_t M = 1ULL << 20;

	(void)state;
	assert_int_equal(mover_settle_step(0, UINT64_MAX, 0), MOVER_SETTLE_DONE);
	assert_int_equal(mover_settle_step(2 * M - 1, UINT64_MAX, 0), MOVER_SETTLE_DONE);
	/* the first look always waits: the kernel may be moving them */
	assert_int_equal(mover_settle_step(160 * M, UINT64_MAX, 0), MOVER_SETTLE_WAIT);
	/* the kernel moved 60 of 160 MiB in the last look: wait on */
	assert_int_equal(mover_settle_step(100 * M, 160 * M, 0.5), MOVER_SETTLE_WAIT);
	/* 10 of 160: under a tenth, the rest is idle memory: sweep */
	assert_int_equal(mover_settle_step(150 * M, 160 * M, 0.5), MOVER_SETTLE_SWEEP);
	/* small remainders need 2 MiB of progress a look, not a tenth */
	assert_int_equal(mover_settle_step(9 * M, 10 * M, 0.5), MOVER_SETTLE_SWEEP);
	assert_int_equal(mover_settle_step(7 * M, 10 * M, 0.5), MOVER_SETTLE_WAIT);
	/* no look beyond MOVER_SETTLE_MAX_S, however fast it goes */
	assert_int_equal(mover_settle_step(50 * M, 160 * M, MOVER_SETTLE_MAX_S), MOVER_SETTLE_SWEEP);
	assert_int_equal(mover_settle_step(50 * M, 160 * M, MOVER_SETTLE_MAX_S - MOVER_SETTLE_POLL_S),
			 MOVER_SETTLE_WAIT);
	/* more than before (the guest grew off the target): sweep */
	assert_int_equal(mover_settle_step(170 * M, 160 * M, 0.5), MOVER_SETTLE_SWEEP);
	/* and done whenever it drops under the floor */
	assert_int_equal(mover_settle_step(M, 160 * M, MOVER_SETTLE_MAX_S), MOVER_SETTLE_DONE);
}

/* A sweep call is a stall of the whole remainder of one node: it may
 * move no more than the job's own calls moved in MOVER_SWEEP_MAX_MS (a
 * node's 278 MiB unseen beside the kernel's balancing, swept in one
 * call, stalled its guest for 18 s). */
static void test_sweep_cap(void **state)
{
	const uint64_t M = 1ULL << 20;

	(void)state;
	/* 64 MiB in 1000 ms of calls: 6.4 MiB may go in one call */
	assert_int_equal(mover_sweep_cap(64 * M, 1000.0), (uint64_t)(64.0 * M / 1000.0 * MOVER_SWEEP_MAX_MS));
	assert_true(mover_sweep_cap(64 * M, 1000.0) < 278 * M);
	/* nothing measured (every page unseen): only the floor */
	assert_int_equal(mover_sweep_cap(0, 0), LEFT_MIN_BYTES);
	assert_int_equal(mover_sweep_cap(M, 5.0), LEFT_MIN_BYTES);
	/* a slow job never gets less than the floor */
	assert_int_equal(mover_sweep_cap(4 * M, 1e6), LEFT_MIN_BYTES);
	/* a fast one may sweep a node's leftover in one call */
	assert_true(mover_sweep_cap(1024 * M, 100.0) >= 1024 * M);
}

/* A job's p99 stall: nearest rank over its calls; none, NAN. */
static void test_stall_p99(void **state)
{
	double v[200];

	(void)state;
	assert_true(isnan(mover_stall_p99(v, 0)));
	v[0] = 7.0;
	assert_true(mover_stall_p99(v, 1) == 7.0);
	/* 1..200 ms in reverse: the 198th value is the p99 */
	for (unsigned i = 0; i < 200; i++)
		v[i] = 200.0 - i;
	assert_true(mover_stall_p99(v, 200) == 198.0);
	/* 100 calls of 20 ms and one of 18 s: the p99 is 20 ms, the max is not */
	for (unsigned i = 0; i < 100; i++)
		v[i] = 20.0;
	v[100] = 18000.0;
	assert_true(mover_stall_p99(v, 101) == 20.0);
}

/* The sweep's calls: one per source node off the target, largest first,
 * until what the rest hold is under the floor; never a target node. */
static void test_sweep_nodes(void **state)
{
	const uint64_t M = 1ULL << 20;
	uint64_t by[4] = { 40 * M, 150 * M, 0, M };
	int out[4] = { -1, -1, -1, -1 };
	nodemask_t to;

	(void)state;
	mask_parse("2", &to);
	/* 191 MiB off node 2: node 1, then 0; node 3's 1 MiB is under 2 */
	assert_int_equal(mover_sweep_nodes(by, 4, &to, LEFT_MIN_BYTES, out), 2);
	assert_int_equal(out[0], 1);
	assert_int_equal(out[1], 0);
	/* with no floor every node with memory gets its call */
	assert_int_equal(mover_sweep_nodes(by, 4, &to, 1, out), 3);
	assert_int_equal(out[2], 3);
	/* the largest node is the target: it is not swept */
	mask_parse("1", &to);
	assert_int_equal(mover_sweep_nodes(by, 4, &to, LEFT_MIN_BYTES, out), 1);
	assert_int_equal(out[0], 0);
	/* all of it on the target, or too little off it: no call */
	mask_parse("0-1", &to);
	assert_int_equal(mover_sweep_nodes(by, 4, &to, LEFT_MIN_BYTES, out), 0);
	mask_parse("0-3", &to);
	assert_int_equal(mover_sweep_nodes(by, 4, &to, 1, out), 0);
	/* two 1.5 MiB nodes: together over the floor, so one call (the
	 * lower id on a tie), after which 1.5 MiB is under it */
	by[0] = by[1] = 3 * M / 2;
	by[3] = 0;
	mask_parse("2", &to);
	assert_int_equal(mover_sweep_nodes(by, 4, &to, LEFT_MIN_BYTES, out), 1);
	assert_int_equal(out[0], 0);
}

/* numa_maps of anonymous mappings only: what the mover's settle counts.
 * Each line's tokens are its own (the second case): a line without a
 * page size is 4 KiB even when the next one names 2048 (hugetlbfs), and
 * the last line needs no newline. */
static void test_numamaps_anon(void **state)
{
	static const struct {
		const char *text;
		uint64_t all[4], anon[4];
	} cases[] = {
		{ "00400000 default file=/bin/guestload mapped=40 N0=40 kernelpagesize_kB=4\n"
		  "7f0000000000 default anon=32768 dirty=32768 N0=32256 N1=512 kernelpagesize_kB=4\n"
		  "7f1000000000 default file=/lib/libc.so.6 anon=2 dirty=2 mapped=300 N2=300 kernelpagesize_kB=4\n"
		  "7f2000000000 default file=/memfd:guest-ram (deleted) dirty=512 N3=512 kernelpagesize_kB=4\n"
		  "7ffc00000000 default stack anon=8 dirty=8 N1=8 kernelpagesize_kB=4\n",
		  { (40 + 32256) * 4096ULL, (512 + 8) * 4096ULL, 300 * 4096ULL, 512 * 4096ULL },
		  { 32256 * 4096ULL, (512 + 8) * 4096ULL, 0, 0 } },
		{ "7f0000000000 default anon=2 dirty=2 N0=2\n"
		  "7f1000000000 default file=/dev/hugepages/x huge dirty=1 N1=1 kernelpagesize_kB=2048\n"
		  "7f2000000000 default anon=3 dirty=3 N2=3",
		  { 2 * 4096ULL, 2048 * 1024ULL, 3 * 4096ULL, 0 },
		  { 2 * 4096ULL, 0, 3 * 4096ULL, 0 } },
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		uint64_t all[4] = { 0 }, anon[4] = { 0 };

		numamaps_parse(cases[c].text, all, 4);
		numamaps_parse_anon(cases[c].text, anon, 4);
		for (int n = 0; n < 4; n++) {
			assert_int_equal(all[n], cases[c].all[n]);
			assert_int_equal(anon[n], cases[c].anon[n]);
		}
	}
}

/* After a move, where the window's pages are is known from the call's own
 * answers and two samples per guessed THP, without a query of the window;
 * a sample that disagrees sends the caller back to the whole query. */
static void test_verify_after_move(void **state)
{
	enum { N = 1536 };
	static int st[N], ss[8];
	static void *pg[N];
	void *sample[8];
	/* a guessed THP at 0, a 4 KiB page at 512, a guessed THP at 1024 */
	size_t idx[3] = { 0, 512, 1024 };
	int w[3] = { 512, 1, 512 }, ms[3] = { 1, 1, 1 };

	(void)state;
	for (int i = 0; i < N; i++) {
		pg[i] = (void *)(uintptr_t)(0x40000000u + (unsigned)i * 4096u);
		st[i] = 0;
	}
	assert_int_equal(mover_verify_plan(pg, idx, w, 3, sample), 4);
	assert_ptr_equal(sample[0], pg[256]);
	assert_ptr_equal(sample[1], pg[511]);
	assert_ptr_equal(sample[2], pg[1024 + 256]);
	assert_ptr_equal(sample[3], pg[1535]);
	/* both THPs moved whole, the page too: every page of them is on 1,
	 * the pages no entry covered stay where they were */
	ss[0] = ss[1] = ss[2] = ss[3] = 1;
	assert_true(mover_verify_apply(st, idx, w, ms, 3, ss));
	for (int i = 0; i < 512; i++)
		assert_int_equal(st[i], 1);
	assert_int_equal(st[512], 1);
	assert_int_equal(st[513], 0);
	assert_int_equal(st[1535], 1);
	/* the second THP's head moved alone: 4 KiB pages, ask the window */
	for (int i = 0; i < N; i++)
		st[i] = 0;
	ss[3] = 0;
	assert_false(mover_verify_apply(st, idx, w, ms, 3, ss));
	/* a head the call could not move (busy) stays, and so does its THP */
	for (int i = 0; i < N; i++)
		st[i] = 0;
	ms[0] = -EBUSY;
	ss[0] = ss[1] = 0;
	ss[2] = ss[3] = 1;
	assert_true(mover_verify_apply(st, idx, w, ms, 3, ss));
	assert_int_equal(st[0], 0);
	assert_int_equal(st[511], 0);
	assert_int_equal(st[1024], 1);
	/* a refused page keeps its place here (mover_drop_refused marks it) */
	ms[0] = 1;
	ss[0] = ss[1] = 1;
	ms[1] = -EACCES;
	st[512] = 0;
	assert_true(mover_verify_apply(st, idx, w, ms, 3, ss));
	assert_int_equal(st[512], 0);
	/* no guessed THP: nothing to ask */
	assert_int_equal(mover_verify_plan(pg, &idx[1], &w[1], 1, sample), 0);
}

static void test_adapt_chunk(void **state)
{
	(void)state;
	/* a 40 ms call for a 20 ms target halves; a 5 ms one doubles at most */
	assert_int_equal(mover_adapt_chunk(1024, 40, 20), 512);
	assert_int_equal(mover_adapt_chunk(1024, 5, 20), 2048);
	assert_int_equal(mover_adapt_chunk(1024, 16, 20), 1280);
	/* one very slow call does not collapse it */
	assert_int_equal(mover_adapt_chunk(1024, 10000, 20), 512);
	assert_int_equal(mover_adapt_chunk(16, 10000, 20), 16);
	assert_int_equal(mover_adapt_chunk(65536, 1, 20), 65536);
	assert_int_equal(mover_adapt_chunk(100, 0, 20), 200);
}

/* Calls of A ms fixed + B ms a page, from FIRST pages, N times, each
 * pages rounded up to QUANTUM (a THP: 512); the last size. */
static size_t run_calls(double a, double b, size_t first, size_t quantum, int n, double target, double *last_ms)
{
	struct mover_cost c = { 0 };
	size_t chunk = first, pages = 0;
	double ms = 0;

	for (int i = 0; i < n; i++) {
		pages = (chunk + quantum - 1) / quantum * quantum;
		ms = a + b * (double)pages;
		chunk = mover_cost_next(&c, pages, chunk, ms, target);
	}
	*last_ms = ms;
	return pages;
}

static void test_cost_next(void **state)
{
	double ms;
	size_t pages;

	(void)state;
	/* idle 4 KiB, a small fixed cost (1 ms), 0.02 ms a page: calls settle
	 * near the 20 ms target (950 pages) */
	pages = run_calls(1, 0.02, 1024, 1, 40, 20, &ms);
	assert_true(ms >= 14 && ms <= 26);
	/* busy THP under emulation: 150 ms fixed, one THP 20 ms more. Shrinking to
	 * one THP (512 pages) loses the rate; the chunk climbs instead, until
	 * the fixed cost is at most about a fifth of a call or the call
	 * nears MOVER_CALL_MAX_MS (the stall bound wins over the rate) */
	pages = run_calls(150, 20.0 / 512, 1024, 512, 40, 20, &ms);
	assert_true(pages >= 8 * 512);
	assert_true(150 / ms <= 0.4);
	assert_true(ms <= MOVER_CALL_MAX_MS);
	/* a fixed cost of 400 ms a call (a crowded emulated host): the climb
	 * for the rate stops where a call would pass MOVER_CALL_MAX_MS, a
	 * stall the guest may feel, however much rate it would gain */
	pages = run_calls(400, 20.0 / 512, 1024, 512, 40, 20, &ms);
	assert_true(ms <= MOVER_CALL_MAX_MS + 1e-9);
	/* a call far over it (one slow call of 16 THPs: 8 s) shrinks the
	 * next to the target at once, not by half */
	{
		struct mover_cost c = { 0 };

		assert_true(mover_cost_next(&c, 8192, 8192, 8000.0, 20) <= 8192 * 20 / 8000 + 16);
	}
	/* busy 4 KiB: 100 ms fixed, 0.5 ms a page */
	pages = run_calls(100, 0.5, 1024, 1, 40, 20, &ms);
	assert_true(100 / ms <= 0.35);
	/* no fixed cost at all: the target alone (40 pages) */
	pages = run_calls(0, 0.5, 1024, 1, 40, 20, &ms);
	assert_true(pages >= 20 && pages <= 60);
	/* never under 16 pages, never over 65536 */
	pages = run_calls(0, 5, 1024, 1, 40, 1, &ms);
	assert_int_equal(pages, 16);
	pages = run_calls(0, 0.00001, 1024, 1, 40, 20, &ms);
	assert_int_equal(pages, 65536);
}

static void test_slice(void **state)
{
	/* a busy THP guest as make bench-migrate runs them: 8 THP entries
	 * (16 MiB) and 186 small pages of its process */
	int w[194];
	size_t bytes, sl;

	(void)state;
	for (int i = 0; i < 194; i++)
		w[i] = i < 8 ? 512 : 1;
	/* the 744 KiB tail rides along: one call, not a second one */
	sl = mover_slice(w, 0, 194, 4096, 16u << 20, 24u << 20, &bytes);
	assert_int_equal(sl, 194);
	assert_int_equal(bytes, (16u << 20) + 186 * 4096);
	/* without slack the tail is a call of its own */
	sl = mover_slice(w, 0, 194, 4096, 16u << 20, 16u << 20, &bytes);
	assert_int_equal(sl, 8);
	assert_int_equal(bytes, 16u << 20);
	sl = mover_slice(w, 8, 194, 4096, 16u << 20, 16u << 20, &bytes);
	assert_int_equal(sl, 186);
	/* a rest over the limit is cut at WANT; the next slice takes what is
	 * then within the limit: 40 MiB goes 16 + 24, not 16 + 16 + 8 */
	for (int i = 0; i < 20; i++)
		w[i] = 512;
	sl = mover_slice(w, 0, 20, 4096, 16u << 20, 24u << 20, &bytes);
	assert_int_equal(sl, 8);
	sl = mover_slice(w, 8, 20, 4096, 16u << 20, 24u << 20, &bytes);
	assert_int_equal(sl, 12);
	assert_int_equal(bytes, 24u << 20);
	/* at least one entry, even one bigger than WANT */
	sl = mover_slice(w, 0, 20, 4096, 4096, 4096, &bytes);
	assert_int_equal(sl, 1);
	assert_int_equal(bytes, 2u << 20);
	/* nothing past the end */
	assert_int_equal(mover_slice(w, 20, 20, 4096, 4096, 4096, &bytes), 0);
	assert_int_equal(bytes, 0);
}

static void test_second_pass(void **state)
{
	(void)state;
	/* a few pages left of a 17 MiB window are not worth a second
	 * call's fixed cost */
	assert_false(mover_second_pass(24u << 10, 17u << 20));
	assert_false(mover_second_pass(56u << 10, (15u << 20) + (2u << 20)));
	/* a guessed THP that was 4 KiB pages: 511 of 512 left: worth it */
	assert_true(mover_second_pass(3840u << 10, 17u << 20));
	/* a small process: a few pages are a real share of it */
	assert_true(mover_second_pass(24u << 10, 40u << 10));
	/* more than 256 KiB is always worth a call */
	assert_true(mover_second_pass(300u << 10, 1u << 30));
	assert_false(mover_second_pass(0, 0));
}

static void test_drop_refused(void **state)
{
	/* a window of 6 pages, all on node 0; entries 0..3 were moved */
	int status[6] = { 0, 0, 0, 0, 0, 0 };
	size_t idx[4] = { 1, 2, 4, 5 };
	int mst[4] = { -EACCES, -EBUSY, -ENOENT, -EAGAIN };
	nodemask_t to;
	size_t pidx[6];
	int w[6];

	(void)state;
	mask_parse("1", &to);
	assert_int_equal(mover_drop_refused(status, idx, mst, 4), 2);
	assert_int_equal(status[1], -EACCES);
	assert_int_equal(status[4], -ENOENT);
	/* busy (-EBUSY, -EAGAIN) pages are planned again, refused ones not */
	assert_int_equal(mover_plan_window(status, (void *[]){ (void *)0x1000, (void *)0x2000, (void *)0x3000,
								 (void *)0x4000, (void *)0x5000, (void *)0x6000 },
					   6, 4096, &to, false, false, pidx, w),
			 4);
	assert_int_equal(pidx[0], 0);
	assert_int_equal(pidx[1], 2);
	assert_int_equal(pidx[2], 3);
	assert_int_equal(pidx[3], 5);
}

static void test_pick_target(void **state)
{
	nodemask_t to;

	(void)state;
	mask_zero(&to);
	assert_int_equal(mover_pick_target(&to, 0), -1);
	mask_parse("2-3", &to);
	/* a target node keeps its pages; the others spread by position */
	assert_int_equal(mover_pick_target(&to, 2), 2);
	assert_int_equal(mover_pick_target(&to, 0), 2);
	assert_int_equal(mover_pick_target(&to, 1), 3);
	mask_parse("1", &to);
	assert_int_equal(mover_pick_target(&to, 0), 1);
	assert_int_equal(mover_pick_target(&to, 3), 1);
}

/* Memory in flight (snap_node.mem_leaving/mem_coming): a live job's guest
 * memory off its target leaves its node and comes onto the node its pages
 * go to (mover_pick_target; a split job's to FIRST). An ended job and a
 * guest the snapshot does not hold add nothing. */
static void test_flows(void **state)
{
	struct snap_node nodes[4];
	struct snapshot *s = snap_new();
	struct snap_guest *g;
	struct mover_job_info j = { .state = MJ_RUNNING };

	(void)state;
	memset(nodes, 0, sizeof(nodes));
	for (int i = 0; i < 4; i++) {
		nodes[i].id = i;
		nodes[i].mem_total = 1ULL << 30;
	}
	snap_set_nodes(s, nodes, 4, NULL);
	g = snap_add_guest(s);
	snprintf(g->id, sizeof(g->id), "w1");
	g->cgroup = xstrdup("/w1");
	for (int n = 0; n < 4; n++)
		g->mem_node[n] = (uint64_t)(n + 1) << 20;
	snap_finalize(s);
	snprintf(j.guest, sizeof(j.guest), "w1");
	mask_parse("2-3", &j.to);
	mover_flows_add(&j, s);
	/* node 0 → 2, node 1 → 3 (by position), nodes 2 and 3 stay */
	assert_int_equal(s->nodes[0].mem_leaving, 1 << 20);
	assert_int_equal(s->nodes[1].mem_leaving, 2 << 20);
	assert_int_equal(s->nodes[2].mem_leaving, 0);
	assert_int_equal(s->nodes[2].mem_coming, 1 << 20);
	assert_int_equal(s->nodes[3].mem_coming, 2 << 20);
	/* A split job's pages all go to FIRST. */
	j.has_first = true;
	j.first = 3;
	mover_flows_add(&j, s);
	assert_int_equal(s->nodes[3].mem_coming, 5 << 20);
	assert_int_equal(s->nodes[2].mem_coming, 1 << 20);
	/* Ended, or not in the snapshot: nothing. */
	j.state = MJ_DONE;
	mover_flows_add(&j, s);
	j.state = MJ_QUEUED;
	snprintf(j.guest, sizeof(j.guest), "gone");
	mover_flows_add(&j, s);
	assert_int_equal(s->nodes[0].mem_leaving, 2 << 20);
	assert_int_equal(s->nodes[3].mem_coming, 5 << 20);
	snap_unref(s);
}

/* A move call may land only where the reserve stays free after it. */
static void test_room_ok(void **state)
{
	(void)state;
	assert_true(mover_room_ok(100 << 20, 64 << 20, 36 << 20));
	assert_false(mover_room_ok(100 << 20, 64 << 20, (36 << 20) + 1));
	assert_false(mover_room_ok(60 << 20, 64 << 20, 0));
	assert_false(mover_room_ok(64 << 20, 64 << 20, 0));
	assert_true(mover_room_ok(65 << 20, 64 << 20, 1 << 20));
	/* Two jobs waiting for the same 20 MiB above the reserve: the
	 * first's 16 MiB call claims it; the second's 16 MiB does not fit
	 * beside it, 4 MiB does; once released (claim 0) it fits again. */
	assert_true(mover_room_claim_ok(84 << 20, 0, 64 << 20, 16 << 20));
	assert_false(mover_room_claim_ok(84 << 20, 16 << 20, 64 << 20, 16 << 20));
	assert_true(mover_room_claim_ok(84 << 20, 16 << 20, 64 << 20, 4 << 20));
	assert_false(mover_room_claim_ok(84 << 20, 100 << 20, 64 << 20, 0));
}

/* A job waiting for room waits only while another job really moves
 * pages: two jobs each waiting for the room the other's pages would
 * free fail at once (after one more look), not at job_timeout. */
static void test_room_wait_peers(void **state)
{
	static const struct {
		enum mover_state st;
		bool stopping, waiting, worker_free, frees;
	} peers[] = {
		{ MJ_RUNNING, false, false, false, true },  /* moving, or between calls */
		{ MJ_RUNNING, false, true, true, false },   /* itself waiting for room */
		{ MJ_RUNNING, true, false, true, false },   /* ends at its next boundary */
		{ MJ_QUEUED, false, false, true, true },    /* a worker takes it at once */
		{ MJ_QUEUED, false, false, false, false },  /* every worker held: never starts */
		{ MJ_QUEUED, true, false, true, false },
		{ MJ_DONE, false, false, true, false },
		{ MJ_FAILED, false, false, true, false },
	};
	static const struct {
		bool room, others, quiet;
		enum mover_room_step want;
	} steps[] = {
		{ true, false, true, MOVER_ROOM_TAKE },
		{ true, true, false, MOVER_ROOM_TAKE },
		{ false, true, false, MOVER_ROOM_WAIT },
		{ false, true, true, MOVER_ROOM_WAIT },       /* a job started moving since */
		{ false, false, false, MOVER_ROOM_LOOK_AGAIN }, /* one may have ended since the read */
		{ false, false, true, MOVER_ROOM_FAIL },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(peers) / sizeof(peers[0]); i++) {
		print_message("peer %u: %s\n", i, mover_state_name(peers[i].st));
		assert_int_equal(mover_peer_frees(peers[i].st, peers[i].stopping, peers[i].waiting,
						  peers[i].worker_free),
				 peers[i].frees);
	}
	for (unsigned i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		assert_int_equal(mover_room_step(steps[i].room, steps[i].others, steps[i].quiet), steps[i].want);
}

/* A plan that asks for the move a live job is making is that job's
 * (mover_job_same_move): the same target nodes and first node, a job not
 * ended and not a start binding's write. Anything else is a new plan. */
static void test_job_same_move(void **state)
{
	static const struct {
		const char *job_to;
		enum mover_state st;
		int job_first;          /* -1: none */
		bool write;
		const char *to;
		int first;
		uint64_t first_bytes;
		bool same;
	} cases[] = {
		{ "1", MJ_RUNNING, -1, false, "1", -1, 0, true },
		{ "1", MJ_QUEUED, -1, false, "1", -1, 0, true },
		{ "1", MJ_RUNNING, -1, false, "2", -1, 0, false },     /* elsewhere now */
		{ "1", MJ_RUNNING, -1, false, "1-2", -1, 0, false },   /* wider */
		{ "1-2", MJ_RUNNING, -1, false, "1", -1, 0, false },   /* narrower */
		{ "1", MJ_DONE, -1, false, "1", -1, 0, false },        /* ended */
		{ "1", MJ_SUPERSEDED, -1, false, "1", -1, 0, false },
		{ "1", MJ_RUNNING, -1, true, "1", -1, 0, false },      /* a start binding's write */
		{ "1-2", MJ_RUNNING, 1, false, "1-2", 1, 64 << 20, true },
		{ "1-2", MJ_RUNNING, 1, false, "1-2", 2, 64 << 20, false }, /* another first node */
		{ "1-2", MJ_RUNNING, 1, false, "1-2", 1, 0, false },   /* no longer split */
		{ "1-2", MJ_RUNNING, -1, false, "1-2", 1, 64 << 20, false }, /* split now */
		{ "1-2", MJ_RUNNING, -1, false, "1-2", 3, 64 << 20, true },  /* a first outside: none (mover_submit) */
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mover_job_info j;
		nodemask_t to;

		memset(&j, 0, sizeof(j));
		mask_parse(cases[i].job_to, &j.to);
		j.state = cases[i].st;
		j.has_first = cases[i].job_first >= 0;
		j.first = cases[i].job_first;
		j.write = cases[i].write;
		mask_parse(cases[i].to, &to);
		print_message("case %u: job onto %s (%s), plan onto %s\n", i, cases[i].job_to,
			      mover_state_name(cases[i].st), cases[i].to);
		assert_int_equal(mover_job_same_move(&j, &to, cases[i].first, cases[i].first_bytes), cases[i].same);
	}
}

/* A split guest's job (mover_spec.first): node 1 takes pages from
 * everywhere — from the other target node 2 too — until its bytes are
 * spent; then pages on a target stay and the rest go to the targets but
 * node 1, which has no room left. */
static void test_assign_first(void **state)
{
	/* window: pages on nodes 0, 2, 3, 2, 0, 3 (none on 1: selected
	 * against {1}); each entry one 4 KiB page but the second (a THP). */
	static const int status[6] = { 0, 2, 3, 2, 0, 3 };
	size_t idx[6] = { 0, 1, 2, 3, 4, 5 };
	int weight[6] = { 1, 512, 1, 1, 1, 1 }, nodes[6];
	uint64_t left = 514 * 4096ULL;
	nodemask_t to;
	size_t k;

	(void)state;
	mask_parse("1-2", &to);
	k = mover_assign_targets(status, idx, weight, 6, 4096, &to, 1, &left, nodes);
	/* 0→1, THP 2→1 (514 - 513 = 1 page left), 3→1 (0 left); then the
	 * page on 2 stays, 0 and 3 go to node 2 */
	assert_int_equal(k, 5);
	assert_int_equal(left, 0);
	assert_int_equal(idx[0], 0);
	assert_int_equal(nodes[0], 1);
	assert_int_equal(idx[1], 1);
	assert_int_equal(nodes[1], 1);
	assert_int_equal(weight[1], 512);
	assert_int_equal(idx[2], 2);
	assert_int_equal(nodes[2], 1);
	assert_int_equal(idx[3], 4);
	assert_int_equal(nodes[3], 2);
	assert_int_equal(idx[4], 5);
	assert_int_equal(nodes[4], 2);

	/* no first node: mover_pick_target, nothing dropped */
	{
		size_t idx2[2] = { 0, 2 };
		int w2[2] = { 1, 1 };
		uint64_t none = 0;

		k = mover_assign_targets(status, idx2, w2, 2, 4096, &to, -1, &none, nodes);
		assert_int_equal(k, 2);
		assert_int_equal(nodes[0], mover_pick_target(&to, 0));
		assert_int_equal(nodes[1], mover_pick_target(&to, 3));
	}
}

static void test_state_names(void **state)
{
	(void)state;
	for (int s = 0; s < MJ_NR_STATES; s++)
		assert_non_null(mover_state_name((enum mover_state)s));
	assert_null(mover_state_name(MJ_NR_STATES));
	assert_false(mover_state_final(MJ_RUNNING));
	assert_true(mover_state_final(MJ_SUPERSEDED));
}

#define MIB (1ULL << 20)

/* A job's census (numa_maps of its processes) and moves, by source node:
 * the node that gave most has most left. A job from "0,2" to 1 with
 * node 2 holding ~2 MiB of 128: each source must carry its own
 * remainder, not a share of the job's. */
static void test_sources_census_and_moves(void **state)
{
	struct mover_job_info j;
	unsigned s0, s2;

	(void)state;
	memset(&j, 0, sizeof(j));
	mask_parse("1", &j.to);
	j.bytes_expected = 130 * MIB;
	/* before the census (a queued job) the plan's figure is all there is */
	assert_int_equal(mover_job_left(&j), 130 * MIB);
	assert_int_equal(j.nsources, 0);
	/* two processes; pages on the target (node 1) are not sources; a
	 * 2 MiB huge page mapping counts in its own page size */
	mover_census_add(&j, "7f0000000000 default anon=32768 dirty=32768 N0=32256 N1=512 kernelpagesize_kB=4\n"
			     "7f1000000000 default file=/usr/lib/libc.so.6 mapped=100 N0=100 kernelpagesize_kB=4\n",
			 false);
	mover_census_add(&j, "7f0000000000 default anon=512 dirty=512 N2=512 kernelpagesize_kB=4\n"
			     "7f2000000000 bind:0 huge anon=1 dirty=1 N0=1 kernelpagesize_kB=2048\n",
			 false);
	j.census = true;
	assert_int_equal(j.nsources, 2);
	s0 = mover_source_slot(&j, 0);
	s2 = mover_source_slot(&j, 2);
	assert_int_equal(j.nsources, 2); /* found, not added again */
	assert_int_equal(j.sources[s0].node, 0);
	assert_int_equal(j.sources[s0].to, 1);
	assert_int_equal(j.sources[s0].found, (32256 + 100) * 4096ULL + 2 * MIB);
	assert_int_equal(j.sources[s2].found, 2 * MIB);
	assert_int_equal(j.sources[s2].to, 1);
	{
		char buf[64];

		assert_true(mask_format(&j.from, buf, sizeof(buf)) >= 0);
		assert_string_equal(buf, "0,2");
	}
	/* the walk moves 40 MiB off node 0, then 1 MiB off node 2 */
	mover_add_done(&j, s0, (int64_t)(40 * MIB));
	mover_add_done(&j, s2, (int64_t)MIB);
	assert_int_equal(j.bytes_done, 41 * MIB);
	assert_int_equal(mover_source_left(&j.sources[s0]), j.sources[s0].found - 40 * MIB);
	assert_int_equal(mover_source_left(&j.sources[s2]), MIB);
	assert_int_equal(mover_job_left(&j), j.sources[s0].found - 40 * MIB + MIB);
	/* a window's exact count corrects a THP guess: down, never below 0 */
	mover_add_done(&j, s2, -(int64_t)(3 * MIB));
	assert_int_equal(j.sources[s2].done, 0);
	assert_int_equal(mover_source_left(&j.sources[s2]), 2 * MIB);
	assert_int_equal(j.bytes_done, 38 * MIB);
	/* more moved than the census saw (the guest allocated meanwhile):
	 * nothing is left there, not a negative remainder */
	mover_add_done(&j, s2, (int64_t)(5 * MIB));
	assert_int_equal(mover_source_left(&j.sources[s2]), 0);
	/* a node the census did not see becomes a source when pages move off it */
	assert_int_equal(mover_source_slot(&j, 3), 2);
	assert_int_equal(j.sources[2].found, 0);
	/* a split job: its sources go to FIRST (the threads' node) while it
	 * has room; the census leaves out the target's nodes, so pages moved
	 * onto FIRST from another target node count as done, found 0 */
	memset(&j, 0, sizeof(j));
	mask_parse("1-2", &j.to);
	j.has_first = true;
	j.first = 2;
	mover_census_add(&j, "7f0000000000 default N0=256 N1=512 N2=512 kernelpagesize_kB=4\n", false);
	j.census = true;
	assert_int_equal(j.nsources, 1);
	assert_int_equal(j.sources[0].node, 0);
	assert_int_equal(j.sources[0].to, 2);
	mover_add_done(&j, mover_source_slot(&j, 1), (int64_t)(2 * MIB));
	assert_int_equal(j.sources[1].node, 1);
	assert_int_equal(j.sources[1].to, 2);
	assert_int_equal(mover_source_left(&j.sources[1]), 0);
	assert_int_equal(mover_job_left(&j), MIB);
	assert_int_equal(j.bytes_done, 2 * MIB);
	/* relocate_all (one-node hosts, benchmarks): every page is a source,
	 * going to its own node when that is a target */
	memset(&j, 0, sizeof(j));
	mask_parse("1", &j.to);
	mover_census_add(&j, "7f0000000000 default N1=256 kernelpagesize_kB=4\n", true);
	assert_int_equal(j.nsources, 1);
	assert_int_equal(j.sources[0].node, 1);
	assert_int_equal(j.sources[0].to, 1);
	assert_int_equal(j.sources[0].found, MIB);
}

/* More source nodes than a job keeps apart: the rest count in its totals. */
static void test_sources_overflow(void **state)
{
	struct mover_job_info j;
	char *text = calloc(1, 40 * (MOVER_MAX_SOURCES + 2));
	size_t n = 0;

	(void)state;
	memset(&j, 0, sizeof(j));
	mask_parse("0", &j.to);
	n += (size_t)sprintf(text + n, "7f0000000000 default");
	for (int node = 1; node <= MOVER_MAX_SOURCES + 1; node++)
		n += (size_t)sprintf(text + n, " N%d=256", node);
	sprintf(text + n, " kernelpagesize_kB=4\n");
	mover_census_add(&j, text, false);
	j.census = true;
	free(text);
	assert_int_equal(j.nsources, MOVER_MAX_SOURCES);
	assert_int_equal(j.other_found, MIB);
	assert_int_equal(mover_source_slot(&j, MOVER_MAX_SOURCES + 1), MOVER_MAX_SOURCES);
	assert_int_equal(mover_job_left(&j), (MOVER_MAX_SOURCES + 1) * MIB);
	mover_add_done(&j, MOVER_MAX_SOURCES, (int64_t)MIB);
	assert_int_equal(j.other_done, MIB);
	assert_int_equal(j.bytes_done, MIB);
	assert_int_equal(mover_job_left(&j), MOVER_MAX_SOURCES * MIB);
}

/* A worker's buffers: grown to the walk's window once, kept after. */
static void test_buf_grow(void **state)
{
	(void)state;
	/* the first walk: just what it needs (a 16 MiB guest is ~5000
	 * pages, not the 65536 of the widest window) */
	assert_int_equal(mover_buf_grow(0, 5103, 65536), 5103);
	/* enough already: kept (no allocation between jobs) */
	assert_int_equal(mover_buf_grow(5103, 5103, 65536), 5103);
	assert_int_equal(mover_buf_grow(8192, 100, 65536), 8192);
	assert_int_equal(mover_buf_grow(8192, 0, 65536), 8192);
	/* more: at least twice as much, so a creeping need grows rarely */
	assert_int_equal(mover_buf_grow(5103, 5136, 65536), 10206);
	assert_int_equal(mover_buf_grow(5103, 20000, 65536), 20000);
	/* never past the window, whatever the process holds */
	assert_int_equal(mover_buf_grow(40000, 50000, 65536), 65536);
	assert_int_equal(mover_buf_grow(0, 1u << 30, 65536), 65536);
	assert_int_equal(mover_buf_grow(65536, 1u << 30, 65536), 65536);
}

static void test_vmas_pages(void **state)
{
	const struct mover_vma v[] = {
		{ 0x1000, 0x3000, 0, 0 },     /* 2 pages */
		{ 0x10000, 0x10800, 0, 0 },   /* half a page: 1 */
		{ 0x200000, 0x400000, 0, 0 }, /* 512 */
	};
	const struct mover_vma huge[] = { { 0, UINTPTR_MAX - 4095, 0, 0 }, { 0, UINTPTR_MAX - 4095, 0, 0 } };

	(void)state;
	assert_int_equal(mover_vmas_pages(v, 3, 4096), 515);
	assert_int_equal(mover_vmas_pages(v, 0, 4096), 0);
	/* saturates rather than wraps */
	assert_true(mover_vmas_pages(huge, 2, 1) == SIZE_MAX);
}

/* A worker's affinity at a job's start: only a change of target (or of
 * workers_on_target) costs an affinity call. */
static void test_pin_action(void **state)
{
	nodemask_t n1, n1b, n12, n0;

	(void)state;
	mask_parse("1", &n1);
	mask_parse("1", &n1b);
	mask_parse("1-2", &n12);
	mask_parse("0", &n0);
	assert_int_equal(mover_pin_action(true, false, &n0, &n1), MOVER_PIN_SET);
	/* already there: kept */
	assert_int_equal(mover_pin_action(true, true, &n1, &n1b), MOVER_PIN_KEEP);
	/* another target: moved */
	assert_int_equal(mover_pin_action(true, true, &n1, &n12), MOVER_PIN_SET);
	assert_int_equal(mover_pin_action(true, true, &n12, &n1), MOVER_PIN_SET);
	assert_int_equal(mover_pin_action(true, true, &n0, &n1), MOVER_PIN_SET);
	/* workers_on_target turned off: back to its own CPUs, once */
	assert_int_equal(mover_pin_action(false, true, &n1, &n1), MOVER_PIN_RESTORE);
	assert_int_equal(mover_pin_action(false, false, &n1, &n1), MOVER_PIN_NONE);
}

/* Write jobs (mover_spec.write: a start binding's cpuset.mems write, off
 * the engine thread): the worker calls the function once; its return
 * gives the job's end; queued, the job can be cancelled and then the
 * function never runs. Real worker threads, no page is moved. */
struct wctx {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int calls;
	bool hold;          /* block inside the call until cleared */
	bool inside;
	int ret;
};

static int wfn(void *ctx, char *msg, size_t msgsz)
{
	struct wctx *w = ctx;

	pthread_mutex_lock(&w->lock);
	w->calls++;
	w->inside = true;
	pthread_cond_broadcast(&w->cv);
	while (w->hold)
		pthread_cond_wait(&w->cv, &w->lock);
	pthread_mutex_unlock(&w->lock);
	if (w->ret < 0)
		snprintf(msg, msgsz, "write refused");
	return w->ret;
}

static uint64_t wsubmit(struct mover *m, const char *guest, struct wctx *w)
{
	struct mover_spec spec;

	memset(&spec, 0, sizeof(spec));
	snprintf(spec.guest, sizeof(spec.guest), "%s", guest);
	snprintf(spec.cause, sizeof(spec.cause), "place");
	mask_set(&spec.to, 1);
	spec.bytes = 4 << 20;
	spec.first = -1;
	spec.write = wfn;
	spec.write_ctx = w;
	return mover_submit(m, &spec);
}

static const struct mover_job_info *wfind(const struct mover_job_info *v, unsigned n, uint64_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i].id == id)
			return &v[i];
	fail_msg("job %llu not finished", (unsigned long long)id);
	return NULL;
}

static void test_write_jobs(void **state)
{
	struct mover_config cfg = { .workers = 1, .chunk_ms = 20, .job_timeout_s = 60 };
	struct host_paths hp;
	struct mover *m;
	struct mover_job_info *fin;
	const struct mover_job_info *j;
	struct wctx ok = { .ret = 0 }, gone = { .ret = -ENOENT }, bad = { .ret = -EACCES },
		    held = { .ret = 0, .hold = true }, never = { .ret = 0 };
	struct wctx *all[] = { &ok, &gone, &bad, &held, &never };
	uint64_t a, b, c, d, e;
	unsigned n;

	(void)state;
	for (unsigned i = 0; i < 5; i++) {
		pthread_mutex_init(&all[i]->lock, NULL);
		pthread_cond_init(&all[i]->cv, NULL);
	}
	host_paths_default(&hp);
	assert_int_equal(mover_new(&cfg, &hp, &m), 0);
	a = wsubmit(m, "ga", &ok);
	b = wsubmit(m, "gb", &gone);
	c = wsubmit(m, "gc", &bad);
	assert_true(mover_wait_idle(m, 30));
	n = mover_take_finished(m, &fin);
	assert_int_equal(n, 3);
	j = wfind(fin, n, a);
	assert_int_equal(j->state, MJ_DONE);
	assert_true(j->write);
	assert_int_equal(j->chunks, 0);
	assert_int_equal(j->bytes_done, 0);
	assert_int_equal(mover_job_left(j), 0);
	assert_int_equal(wfind(fin, n, b)->state, MJ_VANISHED);
	j = wfind(fin, n, c);
	assert_int_equal(j->state, MJ_FAILED);
	assert_string_equal(j->msg, "write refused");
	free(fin);
	assert_int_equal(ok.calls + gone.calls + bad.calls, 3);

	/* One worker, held inside a write: the next job stays queued and a
	 * cancel ends it before its write is made; the running one cannot
	 * be stopped and ends done once its write returns. */
	d = wsubmit(m, "gd", &held);
	pthread_mutex_lock(&held.lock);
	while (!held.inside)
		pthread_cond_wait(&held.cv, &held.lock);
	pthread_mutex_unlock(&held.lock);
	e = wsubmit(m, "ge", &never);
	assert_int_equal(mover_cancel(m, e, MJ_CANCELLED), 0);
	assert_int_equal(mover_cancel(m, d, MJ_CANCELLED), 0);
	pthread_mutex_lock(&held.lock);
	held.hold = false;
	pthread_cond_broadcast(&held.cv);
	pthread_mutex_unlock(&held.lock);
	assert_true(mover_wait_idle(m, 30));
	n = mover_take_finished(m, &fin);
	assert_int_equal(n, 2);
	assert_int_equal(wfind(fin, n, e)->state, MJ_CANCELLED);
	assert_int_equal(wfind(fin, n, d)->state, MJ_DONE);
	free(fin);
	assert_int_equal(never.calls, 0);
	assert_int_equal(held.calls, 1);
	mover_free(m);
}

/* The test build's relocate_all (tests/hooks/moverfixture_hooks.c): off
 * by default, as the shipped mover always is, so a split job keeps its
 * FIRST node; turned on, a job moves every page and has none. The jobs
 * stay queued behind a held write (one worker) and are cancelled. */
static uint64_t split_submit(struct mover *m, const char *guest)
{
	struct mover_spec spec;
	pid_t self = getpid();

	memset(&spec, 0, sizeof(spec));
	snprintf(spec.guest, sizeof(spec.guest), "%s", guest);
	snprintf(spec.cause, sizeof(spec.cause), "split");
	spec.npids = 1;
	spec.pids = &self;
	mask_parse("0-1", &spec.to);
	spec.bytes = 4 << 20;
	spec.first = 1;
	spec.first_bytes = 1 << 20;
	return mover_submit(m, &spec);
}

static bool listed_has_first(struct mover *m, uint64_t id)
{
	struct mover_job_info *v;
	unsigned n = mover_list(m, &v);
	bool has = false, seen = false;

	for (unsigned i = 0; i < n; i++)
		if (v[i].id == id) {
			seen = true;
			has = v[i].has_first;
		}
	free(v);
	assert_true(seen);
	return has;
}

static void test_relocate_all_hook(void **state)
{
	struct mover_config cfg = { .workers = 1, .chunk_ms = 20, .job_timeout_s = 60 };
	struct host_paths hp;
	struct mover *m;
	struct mover_job_info *fin;
	struct wctx held = { .ret = 0, .hold = true };
	uint64_t plain, all;

	(void)state;
	pthread_mutex_init(&held.lock, NULL);
	pthread_cond_init(&held.cv, NULL);
	host_paths_default(&hp);
	assert_int_equal(mover_new(&cfg, &hp, &m), 0);
	wsubmit(m, "gheld", &held);
	pthread_mutex_lock(&held.lock);
	while (!held.inside)
		pthread_cond_wait(&held.cv, &held.lock);
	pthread_mutex_unlock(&held.lock);
	assert_false(moverfx_relocate_all());
	plain = split_submit(m, "gplain");
	moverfx_set_relocate_all(true);
	assert_true(moverfx_relocate_all());
	all = split_submit(m, "gall");
	moverfx_set_relocate_all(false);
	assert_true(listed_has_first(m, plain));
	assert_false(listed_has_first(m, all));
	assert_int_equal(mover_cancel(m, plain, MJ_CANCELLED), 0);
	assert_int_equal(mover_cancel(m, all, MJ_CANCELLED), 0);
	pthread_mutex_lock(&held.lock);
	held.hold = false;
	pthread_cond_broadcast(&held.cv);
	pthread_mutex_unlock(&held.lock);
	assert_true(mover_wait_idle(m, 30));
	assert_int_equal(mover_take_finished(m, &fin), 3);
	free(fin);
	mover_free(m);
	pthread_mutex_destroy(&held.lock);
	pthread_cond_destroy(&held.cv);
}

/* A pod split over its containers: one job whose processes go to
 * different targets (mover_spec.pid_to). Its target groups are walked at
 * once, each by a worker of its own, so each container's memory moves
 * while the other's does — one worker walking them in turn left every
 * container but the first waiting for all of the first's memory. Real
 * processes and real move_pages(2) calls (relocate_all: every page moves,
 * onto its own node, which each target holds); the rate budget spreads
 * each walk over several calls, and the test build's hook records whose
 * calls ran in which order. */
#define POD_CALLS_MAX 4096
struct pod_calls {
	pthread_mutex_t lock;
	unsigned n;
	pid_t pid[POD_CALLS_MAX];
};

static void pod_on_move(void *ctx, pid_t pid, size_t entries)
{
	struct pod_calls *c = ctx;

	(void)entries;
	pthread_mutex_lock(&c->lock);
	if (c->n < POD_CALLS_MAX)
		c->pid[c->n++] = pid;
	pthread_mutex_unlock(&c->lock);
}

/* A child holding MIB of touched anonymous memory until killed, or -1
 * when it cannot start. Not a fork of this process: this test's build
 * (ASan) reserves terabytes of shadow mappings, which a walk would take
 * hours over; a python3 holds the memory instead. */
static pid_t pod_child(unsigned mib)
{
	char code[200], c;
	int fds[2];
	pid_t pid;

	snprintf(code, sizeof(code),
		 "import sys, time\nb = b'\\x01' * (%u << 20)\nsys.stdout.write('x')\nsys.stdout.flush()\n"
		 "time.sleep(1e6)\n", mib);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* gone with the test, whichever way it ends */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execlp("python3", "python3", "-c", code, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) != 1) {
		close(fds[0]);
		waitpid(pid, NULL, 0);
		return -1;
	}
	close(fds[0]);
	return pid;
}

static uint64_t pod_submit(struct mover *m, const char *guest, const pid_t *pids)
{
	struct mover_spec spec;
	nodemask_t pid_to[2];

	memset(&spec, 0, sizeof(spec));
	snprintf(spec.guest, sizeof(spec.guest), "%s", guest);
	snprintf(spec.cause, sizeof(spec.cause), "place");
	spec.npids = 2;
	spec.pids = pids;
	/* Two containers' targets, each holding node 0 (this host's one
	 * node: relocate_all moves each page onto its own node). */
	mask_parse("0-1", &spec.to);
	mask_parse("0", &pid_to[0]);
	mask_parse("0-1", &pid_to[1]);
	spec.pid_to = pid_to;
	spec.bytes = 64 << 20;
	spec.first = -1;
	return mover_submit(m, &spec);
}

/* Index of PID's first (LAST false) or last call in C, -1 if none. */
static int pod_call_at(const struct pod_calls *c, pid_t pid, bool last)
{
	int at = -1;

	for (unsigned i = 0; i < c->n; i++)
		if (c->pid[i] == pid && (last || at < 0))
			at = (int)i;
	return at;
}

static void test_pod_walks_at_once(void **state)
{
	/* 64 MiB/s: a slice is at most 100 ms of the budget (6.4 MiB), so
	 * each 32 MiB process takes five calls or more. */
	struct mover_config cfg = { .workers = 2, .rate_mib = 64, .chunk_ms = 20, .job_timeout_s = 60 };
	struct pod_calls calls = { .n = 0 };
	struct host_paths hp;
	struct mover *m;
	struct mover_job_info *fin;
	pid_t pids[2];
	uint64_t id;
	unsigned n;
	int a_first, a_last, b_first, b_last;

	(void)state;
	pthread_mutex_init(&calls.lock, NULL);
	pids[0] = pod_child(32);
	pids[1] = pod_child(32);
	if (pids[0] < 0 || pids[1] < 0) {
		print_message("SKIP: test_pod_walks_at_once: cannot start python3 to hold a process's memory\n");
		for (unsigned i = 0; i < 2; i++)
			if (pids[i] > 0) {
				kill(pids[i], SIGKILL);
				waitpid(pids[i], NULL, 0);
			}
		pthread_mutex_destroy(&calls.lock);
		skip();
	}
	host_paths_default(&hp);
	assert_int_equal(mover_new(&cfg, &hp, &m), 0);
	moverfx_set_on_move(pod_on_move, &calls);
	moverfx_set_relocate_all(true);
	id = pod_submit(m, "pod", pids);
	moverfx_set_relocate_all(false);
	assert_true(mover_wait_idle(m, 30));
	moverfx_set_on_move(NULL, NULL);

	/* One record for the job, ended done, every call in it. */
	n = mover_take_finished(m, &fin);
	assert_int_equal(n, 1);
	assert_int_equal(fin[0].id, id);
	assert_int_equal(fin[0].state, MJ_DONE);
	assert_int_equal(fin[0].chunks, calls.n);
	assert_true(fin[0].bytes_done >= (uint64_t)60 << 20);
	assert_false(isnan(fin[0].stall_p99_ms));
	free(fin);

	/* Both walks progressed before either ended. */
	a_first = pod_call_at(&calls, pids[0], false);
	a_last = pod_call_at(&calls, pids[0], true);
	b_first = pod_call_at(&calls, pids[1], false);
	b_last = pod_call_at(&calls, pids[1], true);
	assert_true(a_first >= 0 && b_first >= 0);
	assert_true(a_last - a_first >= 2 && b_last - b_first >= 2);
	if (b_first > a_last || a_first > b_last)
		fail_msg("the walks ran one after the other: process A's calls %d-%d, B's %d-%d of %u", a_first,
			 a_last, b_first, b_last, calls.n);

	/* Cancelled while both walk: one record, cancelled, both stop. */
	calls.n = 0;
	moverfx_set_relocate_all(true);
	id = pod_submit(m, "pod2", pids);
	moverfx_set_relocate_all(false);
	moverfx_set_on_move(pod_on_move, &calls);
	for (int t = 0; t < 2000; t++) {
		bool both;

		pthread_mutex_lock(&calls.lock);
		both = pod_call_at(&calls, pids[0], false) >= 0 && pod_call_at(&calls, pids[1], false) >= 0;
		pthread_mutex_unlock(&calls.lock);
		if (both)
			break;
		usleep(1000);
	}
	assert_int_equal(mover_cancel(m, id, MJ_CANCELLED), 0);
	assert_true(mover_wait_idle(m, 30));
	moverfx_set_on_move(NULL, NULL);
	n = mover_take_finished(m, &fin);
	assert_int_equal(n, 1);
	assert_int_equal(fin[0].state, MJ_CANCELLED);
	assert_true(fin[0].bytes_done < (uint64_t)64 << 20);
	free(fin);

	mover_free(m);
	for (unsigned i = 0; i < 2; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
	pthread_mutex_destroy(&calls.lock);
}

/* The mover's measured rate: bytes over the time at least one job ran.
 * Two jobs side by side count together (the workers' sum), one after a
 * pause does not count the pause, a write job (no bytes) or a job
 * without a run time says nothing, and only the last MOVER_RATE_JOBS
 * jobs count. */
static void test_mover_rate(void **state)
{
	const int64_t s = 1000000000LL, t0 = 1000 * s;
	struct mover_rate r;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_true(mover_rate_mibs(&r) == 0.0);
	mover_rate_add(&r, t0, t0 + 2 * s, 0);            /* a write job */
	mover_rate_add(&r, t0, t0, 100 * MIB);            /* no run time */
	mover_rate_add(&r, 0, t0, 100 * MIB);             /* never started */
	assert_true(mover_rate_mibs(&r) == 0.0);
	/* 200 MiB and 200 MiB at once over 2 s: 200 MiB/s for the host */
	mover_rate_add(&r, t0, t0 + 2 * s, 200 * MIB);
	mover_rate_add(&r, t0, t0 + 2 * s, 200 * MIB);
	assert_true(fabs(mover_rate_mibs(&r) - 200.0) < 1e-9);
	/* then, after 60 s idle, 100 MiB in 2 s: 500 MiB in 4 s busy */
	mover_rate_add(&r, t0 + 62 * s, t0 + 64 * s, 100 * MIB);
	assert_true(fabs(mover_rate_mibs(&r) - 125.0) < 1e-9);
	/* overlapping in part: [t0+100, t0+104] and [t0+102, t0+106]: 6 s */
	for (unsigned k = 0; k < MOVER_RATE_JOBS; k++)
		mover_rate_add(&r, t0 + 100 * s + (k % 2) * 2 * s, t0 + 104 * s + (k % 2) * 2 * s, 30 * MIB);
	assert_true(fabs(mover_rate_mibs(&r) - 240.0 / 6.0) < 1e-9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_jobs),
		cmocka_unit_test(test_pod_walks_at_once),
		cmocka_unit_test(test_relocate_all_hook),
		cmocka_unit_test(test_parse_maps),
		cmocka_unit_test(test_parse_smaps_large),
		cmocka_unit_test(test_census_prune),
		cmocka_unit_test(test_parse_smaps),
		cmocka_unit_test(test_query_plan),
		cmocka_unit_test(test_chunks_cover_every_page_once),
		cmocka_unit_test(test_plan_window),
		cmocka_unit_test(test_fill_window),
		cmocka_unit_test(test_guess_failed),
		cmocka_unit_test(test_verify_after_move),
		cmocka_unit_test(test_window_moved),
		cmocka_unit_test(test_window_left),
		cmocka_unit_test(test_settle_step),
		cmocka_unit_test(test_sweep_nodes),
		cmocka_unit_test(test_sweep_cap),
		cmocka_unit_test(test_stall_p99),
		cmocka_unit_test(test_numamaps_anon),
		cmocka_unit_test(test_hugetlb_mappings),
		cmocka_unit_test(test_assign_first),
		cmocka_unit_test(test_adapt_chunk),
		cmocka_unit_test(test_cost_next),
		cmocka_unit_test(test_slice),
		cmocka_unit_test(test_second_pass),
		cmocka_unit_test(test_drop_refused),
		cmocka_unit_test(test_pick_target),
		cmocka_unit_test(test_flows),
		cmocka_unit_test(test_room_ok),
		cmocka_unit_test(test_room_wait_peers),
		cmocka_unit_test(test_job_same_move),
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_sources_census_and_moves),
		cmocka_unit_test(test_sources_overflow),
		cmocka_unit_test(test_buf_grow),
		cmocka_unit_test(test_vmas_pages),
		cmocka_unit_test(test_pin_action),
		cmocka_unit_test(test_mover_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
