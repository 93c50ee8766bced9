#include "topo.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../orchestrator/base/fs.h"
#include "../orchestrator/base/parse.h"
#include "../orchestrator/base/xalloc.h"
#include "../orchestrator/base/log.h"
#include "../orchestrator/base/mask.h"

/* Node meminfo is ~1.5 KiB; /proc/meminfo ~1.5 KiB. /proc/stat on a big
 * host with thousands of IRQs can run to megabytes because of the intr
 * line, which we never look at but must still read past. */
#define MEMINFO_MAX  (1u << 20)
#define PROCSTAT_MAX (64u << 20)
/* A distance row is at most MASK_MAX_NODES numbers of a few digits. */
#define DISTANCE_BUFSZ (MASK_MAX_NODES * 5 + 16)

static int path_fmt(char *buf, size_t sz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int path_fmt(char *buf, size_t sz, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sz, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= sz ? -ENAMETOOLONG : 0;
}

static int node_dir(const struct host_paths *hp, char *buf, size_t sz)
{
	return path_fmt(buf, sz, "%s/devices/system/node", hp->sysfs);
}

static int node_file(const struct host_paths *hp, int id, const char *leaf,
		     char *buf, size_t sz)
{
	return path_fmt(buf, sz, "%s/devices/system/node/node%d/%s", hp->sysfs, id, leaf);
}

/* mask_parse reports numbers past its 24-bit guard as -ERANGE; for us
 * that is just a CPU or node id we cannot hold. */
static int list_parse_cpus(const char *path, const char *s, cpumask_t *m)
{
	int r = mask_parse(s, m);

	if (r == -ERANGE)
		r = -E2BIG;
	if (r < 0)
		log_debug("topo: %s: bad list \"%s\": %s", path, s, strerror(-r));
	return r;
}

static int list_parse_nodes(const char *path, const char *s, nodemask_t *m)
{
	int r = mask_parse(s, m);

	if (r == -ERANGE)
		r = -E2BIG;
	if (r < 0)
		log_debug("topo: %s: bad list \"%s\": %s", path, s, strerror(-r));
	return r;
}

static int read_cpu_online(const struct host_paths *hp, cpumask_t *online)
{
	char path[PATH_MAX];
	char *buf;
	int r;

	r = path_fmt(path, sizeof(path), "%s/devices/system/cpu/online", hp->sysfs);
	if (r < 0)
		return r;
	buf = xmalloc(CPULIST_BUFSZ);
	r = fs_read_line(path, buf, CPULIST_BUFSZ);
	if (r == -EFBIG)
		r = -EINVAL;
	if (r < 0)
		log_debug("topo: %s: %s", path, strerror(-r));
	else
		r = list_parse_cpus(path, buf, online);
	free(buf);
	return r;
}

/* Parse MemTotal/MemFree out of a meminfo buffer (modified in place).
 * node >= 0: per-node format, every line "Node <node> Key: value kB";
 * node < 0: /proc/meminfo format, "Key: value kB". */
static int parse_meminfo(const char *path, char *buf, int node,
			 uint64_t *total, uint64_t *free_b)
{
	bool have_total = false, have_free = false;
	uint64_t t = 0, f = 0;
	char *line, *next;

	for (line = buf; line && *line; line = next) {
		char *p, *val, *end;
		bool is_total;
		uint64_t v;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		p = line;
		if (node >= 0) {
			char *idend;
			unsigned long id;

			if (strncmp(p, "Node ", 5) != 0)
				goto bad;
			p += 5;
			if (*p < '0' || *p > '9')
				goto bad;
			id = strtoul(p, &idend, 10);
			if (id != (unsigned long)node || *idend != ' ')
				goto bad;
			p = idend;
			while (*p == ' ')
				p++;
		}
		if (strncmp(p, "MemTotal:", 9) == 0) {
			is_total = true;
			p += 9;
		} else if (strncmp(p, "MemFree:", 8) == 0) {
			is_total = false;
			p += 8;
		} else {
			continue;
		}
		while (*p == ' ')
			p++;
		val = p;
		end = strchr(val, ' ');
		if (!end || strcmp(end, " kB") != 0)
			goto bad;
		*end = '\0';
		if (parse_u64(val, &v) < 0 || v > UINT64_MAX / 1024)
			goto bad;
		if (is_total) {
			if (have_total)
				goto bad;
			have_total = true;
			t = v * 1024;
		} else {
			if (have_free)
				goto bad;
			have_free = true;
			f = v * 1024;
		}
		/* They are the first two lines; the rest is not ours to judge. */
		if (have_total && have_free)
			break;
	}
	if (!have_total || !have_free)
		goto bad;
	*total = t;
	*free_b = f;
	return 0;
bad:
	log_debug("topo: %s: malformed meminfo", path);
	return -EINVAL;
}

static int read_meminfo_file(const char *path, int node, uint64_t *total, uint64_t *free_b)
{
	char *buf;
	int r;

	r = fs_read_file(path, MEMINFO_MAX, &buf, NULL);
	if (r < 0) {
		log_debug("topo: %s: %s", path, strerror(-r));
		return r;
	}
	r = parse_meminfo(path, buf, node, total, free_b);
	free(buf);
	return r;
}

static int read_node_meminfo(const struct host_paths *hp, int id, uint64_t *total,
			     uint64_t *free_b)
{
	char path[PATH_MAX];
	int r;

	r = node_file(hp, id, "meminfo", path, sizeof(path));
	if (r < 0)
		return r;
	return read_meminfo_file(path, id, total, free_b);
}

static int read_proc_meminfo(const struct host_paths *hp, uint64_t *total, uint64_t *free_b)
{
	char path[PATH_MAX];
	int r;

	r = path_fmt(path, sizeof(path), "%s/meminfo", hp->procfs);
	if (r < 0)
		return r;
	return read_meminfo_file(path, -1, total, free_b);
}

/* Node ID's hugetlb pools (node<N>/hugepages/hugepages-<size>kB), by
 * page size, into POOLS[SNAP_HP_MAX] and *NR. No hugepages directory is no pool (a kernel without
 * hugetlb); a pool whose counts cannot be read is left out (logged at
 * debug): the pools say what the other memory cannot, and the node is no
 * less usable without them. */
static int read_node_hpools(const struct host_paths *hp, int id, unsigned *nr, struct snap_hpool *pools)
{
	char dir[PATH_MAX], path[PATH_MAX];
	static const char *const leaf[3] = { "nr_hugepages", "free_hugepages", "surplus_hugepages" };
	struct dirent *de;
	DIR *d;
	int r;

	*nr = 0;
	r = node_file(hp, id, "hugepages", dir, sizeof(dir));
	if (r < 0)
		return r;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	while ((de = readdir(d))) {
		struct snap_hpool pool = { 0 };
		uint64_t v[3], kb;
		char num[24], *k;
		unsigned j;

		if (strncmp(de->d_name, "hugepages-", 10) != 0)
			continue;
		snprintf(num, sizeof(num), "%s", de->d_name + 10);
		k = strstr(num, "kB");
		if (!k || k[2])
			continue;
		*k = '\0';
		if (parse_u64(num, &kb) < 0 || !kb || kb > (UINT64_MAX >> 10))
			continue;
		for (j = 0; j < 3; j++) {
			r = path_fmt(path, sizeof(path), "%s/%s/%s", dir, de->d_name, leaf[j]);
			if (r == 0)
				r = fs_read_u64(path, &v[j]);
			if (r < 0) {
				log_debug("topo: %s: %s", path, strerror(-r));
				break;
			}
		}
		if (j < 3)
			continue;
		if (*nr == SNAP_HP_MAX) {
			log_debug("topo: %s: more than %d page sizes", dir, SNAP_HP_MAX);
			break;
		}
		pool.page = kb << 10;
		pool.total = v[0];
		pool.free = v[1];
		pool.surplus = v[2];
		/* Insertion keeps them by size: readdir's order is the fs's. */
		j = (*nr)++;
		while (j > 0 && pools[j - 1].page > pool.page) {
			pools[j] = pools[j - 1];
			j--;
		}
		pools[j] = pool;
	}
	closedir(d);
	return 0;
}

/* Node ids from the node<N> directories, limited to the kernel's
 * online list where it has one. */
static int scan_node_ids(const char *dir, nodemask_t *ids)
{
	char path[PATH_MAX], buf[NODELIST_BUFSZ];
	nodemask_t found, online;
	struct dirent *de;
	DIR *d;
	int r = 0;

	mask_zero(&found);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		const char *p = de->d_name;
		unsigned long id = 0;

		if (strncmp(p, "node", 4) != 0 || p[4] < '0' || p[4] > '9')
			continue;
		for (p += 4; *p >= '0' && *p <= '9'; p++) {
			id = id * 10 + (unsigned long)(*p - '0');
			if (id >= MASK_MAX_NODES) {
				r = -E2BIG;
				break;
			}
		}
		if (r < 0) {
			log_debug("topo: %s/%s: node id out of range", dir, de->d_name);
			break;
		}
		if (*p)
			continue;
		mask_set(&found, id);
	}
	closedir(d);
	if (r < 0)
		return r;

	r = path_fmt(path, sizeof(path), "%s/online", dir);
	if (r < 0)
		return r;
	r = fs_read_line(path, buf, sizeof(buf));
	if (r == 0) {
		r = list_parse_nodes(path, buf, &online);
		if (r < 0)
			return r;
		mask_and(&found, &found, &online);
	} else if (r != -ENOENT) {
		log_debug("topo: %s: %s", path, strerror(-r));
		return r == -EFBIG ? -EINVAL : r;
	}
	if (mask_empty(&found)) {
		log_debug("topo: %s: no online node directories", dir);
		return -EINVAL;
	}
	*ids = found;
	return 0;
}

static int read_node_cpus(const struct host_paths *hp, int id, const cpumask_t *online,
			  char *buf, cpumask_t *out)
{
	char path[PATH_MAX];
	cpumask_t m;
	int r;

	r = node_file(hp, id, "cpulist", path, sizeof(path));
	if (r < 0)
		return r;
	r = fs_read_line(path, buf, CPULIST_BUFSZ);
	if (r < 0) {
		log_debug("topo: %s: %s", path, strerror(-r));
		return r == -EFBIG ? -EINVAL : r;
	}
	r = list_parse_cpus(path, buf, &m);
	if (r < 0)
		return r;
	mask_and(out, &m, online);
	return 0;
}

/* One row of the distance matrix: exactly nr positive numbers. */
static int read_node_distance(const struct host_paths *hp, int id, unsigned nr,
			      char *buf, unsigned *row)
{
	char path[PATH_MAX];
	unsigned n = 0;
	char *p, *save = NULL;
	int r;

	r = node_file(hp, id, "distance", path, sizeof(path));
	if (r < 0)
		return r;
	r = fs_read_line(path, buf, DISTANCE_BUFSZ);
	if (r < 0) {
		log_debug("topo: %s: %s", path, strerror(-r));
		return r == -EFBIG ? -EINVAL : r;
	}
	for (p = strtok_r(buf, " \t", &save); p; p = strtok_r(NULL, " \t", &save)) {
		uint64_t v;

		if (n == nr || parse_u64(p, &v) < 0 || v == 0 || v > UINT32_MAX)
			goto bad;
		row[n++] = (unsigned)v;
	}
	if (n != nr)
		goto bad;
	return 0;
bad:
	log_debug("topo: %s: malformed distance row (want %u entries)", path, nr);
	return -EINVAL;
}

/* Kernel built without NUMA: one node 0 with everything. */
static int read_nonuma(const struct host_paths *hp, const cpumask_t *online,
		       struct snap_node **nodes, unsigned *nr, unsigned **distance)
{
	uint64_t total, free_b;
	struct snap_node *n;
	int r;

	r = read_proc_meminfo(hp, &total, &free_b);
	if (r < 0)
		return r;
	n = xcalloc(1, sizeof(*n));
	n->id = 0;
	n->cpus = *online;
	n->nr_cpus = mask_count(online);
	n->mem_total = total;
	n->mem_free = free_b;
	n->busy = NAN;
	n->agent_cpus = NAN;
	*nodes = n;
	*nr = 1;
	*distance = xcalloc(1, sizeof(unsigned));
	(*distance)[0] = 10;
	return 0;
}

int topo_read_nodes(const struct host_paths *hp, struct snap_node **nodes,
		    unsigned *nr, unsigned **distance)
{
	char dir[PATH_MAX], sysdir[PATH_MAX];
	struct snap_node *ns = NULL;
	unsigned *dist = NULL, n = 0, i = 0;
	cpumask_t *online;
	nodemask_t ids;
	char *buf = NULL;
	int r;

	r = path_fmt(sysdir, sizeof(sysdir), "%s/devices/system", hp->sysfs);
	if (r < 0)
		return r;
	if (!fs_is_dir(sysdir)) {
		log_debug("topo: %s: not a directory", sysdir);
		return -ENOENT;
	}
	r = node_dir(hp, dir, sizeof(dir));
	if (r < 0)
		return r;

	/* cpumask_t is 1 KiB; keep it off the stack of every caller. */
	online = xmalloc(sizeof(*online));
	r = read_cpu_online(hp, online);
	if (r < 0)
		goto out;
	if (!fs_is_dir(dir)) {
		r = read_nonuma(hp, online, nodes, nr, distance);
		goto out;
	}

	r = scan_node_ids(dir, &ids);
	if (r < 0)
		goto out;
	n = mask_count(&ids);
	ns = xcalloc(n, sizeof(*ns));
	dist = xcalloc((size_t)n * n, sizeof(*dist));
	buf = xmalloc(CPULIST_BUFSZ > DISTANCE_BUFSZ ? CPULIST_BUFSZ : DISTANCE_BUFSZ);

	mask_foreach(id, &ids) {
		struct snap_node *nd = &ns[i];

		nd->id = id;
		nd->busy = NAN;
		nd->agent_cpus = NAN;
		r = read_node_cpus(hp, id, online, buf, &nd->cpus);
		if (r < 0)
			goto out;
		nd->nr_cpus = mask_count(&nd->cpus);
		r = read_node_meminfo(hp, id, &nd->mem_total, &nd->mem_free);
		if (r < 0)
			goto out;
		r = read_node_hpools(hp, id, &nd->nr_hpools, nd->hpools);
		if (r < 0)
			goto out;
		r = read_node_distance(hp, id, n, buf, &dist[(size_t)i * n]);
		if (r < 0)
			goto out;
		i++;
	}
	*nodes = ns;
	*nr = n;
	*distance = dist;
	ns = NULL;
	dist = NULL;
out:
	free(ns);
	free(dist);
	free(buf);
	free(online);
	return r;
}

int topo_read_meminfo(const struct host_paths *hp, struct snap_node *nodes, unsigned nr)
{
	char dir[PATH_MAX];
	struct snap_hpool *pools;
	unsigned *npools;
	uint64_t *tf;
	int r;

	r = node_dir(hp, dir, sizeof(dir));
	if (r < 0)
		return r;
	/* Nodes are updated together or not at all. */
	tf = xcalloc((size_t)nr * 2, sizeof(*tf));
	pools = xcalloc((size_t)nr * SNAP_HP_MAX, sizeof(*pools));
	npools = xcalloc(nr, sizeof(*npools));
	if (!fs_is_dir(dir)) {
		if (nr != 1 || nodes[0].id != 0) {
			r = -ENOENT;
			goto out;
		}
		r = read_proc_meminfo(hp, &tf[0], &tf[1]);
		if (r < 0)
			goto out;
	} else {
		for (unsigned i = 0; i < nr; i++) {
			r = read_node_meminfo(hp, nodes[i].id, &tf[2 * i], &tf[2 * i + 1]);
			if (r < 0)
				goto out;
			r = read_node_hpools(hp, nodes[i].id, &npools[i], &pools[(size_t)i * SNAP_HP_MAX]);
			if (r < 0)
				goto out;
		}
	}
	for (unsigned i = 0; i < nr; i++) {
		nodes[i].mem_total = tf[2 * i];
		nodes[i].mem_free = tf[2 * i + 1];
		nodes[i].nr_hpools = npools[i];
		memcpy(nodes[i].hpools, &pools[(size_t)i * SNAP_HP_MAX], sizeof(nodes[i].hpools));
	}
out:
	free(tf);
	free(pools);
	free(npools);
	return r;
}

/* Next space-separated decimal field of a stat line. Returns 1 and
 * advances on a number, 0 at end of line, -EINVAL on anything else. */
static int next_field(const char **sp, uint64_t *v)
{
	const char *s = *sp;
	uint64_t x = 0;

	if (*s != ' ')
		return *s == '\n' || *s == '\0' ? 0 : -EINVAL;
	while (*s == ' ')
		s++;
	if (*s == '\n' || *s == '\0') {
		*sp = s;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -EINVAL;
		x = x * 10 + d;
	}
	*sp = s;
	*v = x;
	return 1;
}

enum { ST_USER, ST_NICE, ST_SYSTEM, ST_IDLE, ST_IOWAIT, ST_IRQ, ST_SOFTIRQ, ST_STEAL,
       ST_NR };

/* One pass over the buffer. The kernel prints the aggregate "cpu " line,
 * then one "cpuN" line per online CPU, then everything else; we stop at
 * the first line after the CPU block so the (possibly huge) intr line is
 * never scanned. */
static int parse_stat(const char *path, const char *buf, struct topo_cpustat *out)
{
	unsigned cap = 0, nr = 0;
	uint64_t *busy = NULL, *total = NULL;
	bool seen_cpu = false;
	const char *s = buf;
	int r;

	while (*s) {
		uint64_t f[ST_NR] = { 0 };
		unsigned long id = 0;
		unsigned nf = 0;

		if (strncmp(s, "cpu", 3) != 0) {
			if (seen_cpu)
				break;
			goto skip;
		}
		seen_cpu = true;
		s += 3;
		if (*s == ' ')
			goto skip; /* the aggregate line */
		if (*s < '0' || *s > '9')
			goto bad;
		for (; *s >= '0' && *s <= '9'; s++) {
			id = id * 10 + (unsigned long)(*s - '0');
			if (id >= MASK_MAX_CPUS) {
				log_debug("topo: %s: cpu id beyond %u", path, MASK_MAX_CPUS);
				r = -E2BIG;
				goto fail;
			}
		}
		/* guest and guest_nice (fields 9, 10) are already counted in
		 * user and nice; anything past steal is read and dropped. */
		for (;;) {
			uint64_t v;

			r = next_field(&s, &v);
			if (r < 0)
				goto bad;
			if (r == 0)
				break;
			if (nf < ST_NR)
				f[nf] = v;
			nf++;
		}
		/* user nice system idle have been there since Linux 2.4. */
		if (nf < 4)
			goto bad;
		if (id >= cap) {
			unsigned ncap = cap ? cap : 64;

			while (ncap <= id)
				ncap *= 2;
			busy = xrealloc(busy, ncap * sizeof(*busy));
			total = xrealloc(total, ncap * sizeof(*total));
			memset(busy + cap, 0, (ncap - cap) * sizeof(*busy));
			memset(total + cap, 0, (ncap - cap) * sizeof(*total));
			cap = ncap;
		}
		if (id < nr && total[id] != 0)
			goto bad; /* duplicate line */
		busy[id] = f[ST_USER] + f[ST_NICE] + f[ST_SYSTEM] + f[ST_IRQ] +
			   f[ST_SOFTIRQ] + f[ST_STEAL];
		total[id] = busy[id] + f[ST_IDLE] + f[ST_IOWAIT];
		if (id + 1 > nr)
			nr = (unsigned)id + 1;
skip:
		s = strchr(s, '\n');
		if (!s)
			break;
		s++;
	}
	if (nr == 0)
		goto bad;
	out->nr = nr;
	out->busy = busy;
	out->total = total;
	return 0;
bad:
	log_debug("topo: %s: malformed per-CPU line", path);
	r = -EINVAL;
fail:
	free(busy);
	free(total);
	return r;
}

int topo_read_cpustat(const struct host_paths *hp, struct topo_cpustat *out)
{
	char path[PATH_MAX];
	char *buf;
	int r;

	r = path_fmt(path, sizeof(path), "%s/stat", hp->procfs);
	if (r < 0)
		return r;
	r = fs_read_file(path, PROCSTAT_MAX, &buf, NULL);
	if (r < 0) {
		log_debug("topo: %s: %s", path, strerror(-r));
		return r;
	}
	r = parse_stat(path, buf, out);
	free(buf);
	return r;
}

void topo_cpustat_free(struct topo_cpustat *c)
{
	if (!c)
		return;
	free(c->busy);
	free(c->total);
	c->busy = NULL;
	c->total = NULL;
	c->nr = 0;
}

void topo_node_busy(struct snap_node *nodes, unsigned nr,
		    const struct topo_cpustat *prev, const struct topo_cpustat *cur)
{
	for (unsigned i = 0; i < nr; i++) {
		uint64_t sb = 0, st = 0;

		nodes[i].busy = NAN;
		if (!prev || !cur)
			continue;
		mask_foreach(c, &nodes[i].cpus) {
			unsigned u = (unsigned)c;

			if (u >= prev->nr || u >= cur->nr)
				continue;
			/* A CPU missing from either sample (offline then) has
			 * no window, and one whose counters went backwards
			 * (NO_HZ iowait accounting) has no trustworthy one;
			 * counting since-boot ticks would swamp the rest. */
			if (prev->total[u] == 0 || cur->total[u] == 0 ||
			    cur->total[u] < prev->total[u] || cur->busy[u] < prev->busy[u])
				continue;
			sb += cur->busy[u] - prev->busy[u];
			st += cur->total[u] - prev->total[u];
		}
		if (st == 0)
			continue;
		/* idle can step back while busy steps forward. */
		nodes[i].busy = sb >= st ? 1.0 : (double)sb / (double)st;
	}
}

/* The lowest CPU of the list in file PATH, or -1 (absent, malformed,
 * empty). M is scratch. */
static int list_lowest(const char *path, char *buf, cpumask_t *m)
{
	int r = fs_read_line(path, buf, CPULIST_BUFSZ);

	if (r < 0) {
		if (r != -ENOENT)
			log_debug("topo: %s: %s", path, strerror(-r));
		return -1;
	}
	mask_zero(m);
	if (list_parse_cpus(path, buf, m) < 0)
		return -1;
	return mask_first(m->w, MASK_BITS(m));
}

/* CPU's highest-level cache: the lowest CPU sharing it, or -1. */
static int cpu_llc(const struct host_paths *hp, int cpu, char *buf, cpumask_t *m)
{
	char path[PATH_MAX];
	uint64_t level, best = 0;
	int llc = -1;

	for (unsigned i = 0; i < 16; i++) {
		int low;

		if (path_fmt(path, sizeof(path), "%s/devices/system/cpu/cpu%d/cache/index%u/level",
			     hp->sysfs, cpu, i) < 0 || fs_read_u64(path, &level) < 0)
			break;
		if (level < best)
			continue;
		if (path_fmt(path, sizeof(path), "%s/devices/system/cpu/cpu%d/cache/index%u/shared_cpu_list",
			     hp->sysfs, cpu, i) < 0)
			break;
		low = list_lowest(path, buf, m);
		if (low < 0)
			continue;
		best = level;
		llc = low;
	}
	return llc;
}

void topo_read_cputopo(const struct host_paths *hp, const struct snap_node *nodes, unsigned nr,
		       struct topo_cputopo *out)
{
	char path[PATH_MAX];
	cpumask_t *all = xcalloc(1, sizeof(*all)), *m = xmalloc(sizeof(*m));
	char *buf = xmalloc(CPULIST_BUFSZ);
	bool any = false;
	int last = -1;

	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < nr; i++)
		mask_or(all, all, &nodes[i].cpus);
	mask_foreach(c, all)
		last = c;
	if (last < 0)
		goto out;
	out->nr = (unsigned)last + 1;
	out->core = xmalloc(out->nr * sizeof(int));
	out->llc = xmalloc(out->nr * sizeof(int));
	for (unsigned c = 0; c < out->nr; c++)
		out->core[c] = out->llc[c] = -1;
	mask_foreach(c, all) {
		int core = -1;

		if (path_fmt(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/core_cpus_list",
			     hp->sysfs, c) == 0)
			core = list_lowest(path, buf, m);
		if (core < 0 && path_fmt(path, sizeof(path),
					 "%s/devices/system/cpu/cpu%d/topology/thread_siblings_list", hp->sysfs, c) == 0)
			core = list_lowest(path, buf, m);
		out->core[c] = core;
		out->llc[c] = cpu_llc(hp, c, buf, m);
		any |= core >= 0;
	}
	if (!any)
		topo_cputopo_free(out);
out:
	free(all);
	free(m);
	free(buf);
}

void topo_cputopo_free(struct topo_cputopo *t)
{
	free(t->core);
	free(t->llc);
	memset(t, 0, sizeof(*t));
}
