/* mask.h — fixed-size CPU and node bitmaps and the kernel's list format
 * ("0-3,8,10-11").
 *
 * Sizes follow Debian's kernel config (NR_CPUS=8192, NODES_SHIFT=10). A
 * host beyond that is refused at topology time with -E2BIG rather than
 * silently truncated.
 *
 * This is the one parser of CPU/node lists in the project. libnuma's
 * numa_parse_*string() validate against the *live* host, which is wrong
 * for fixture trees, so they are not used for parsing.
 */
#ifndef NUMAORCH_MASK_H
#define NUMAORCH_MASK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MASK_MAX_CPUS  8192
#define MASK_MAX_NODES 1024

typedef struct { uint64_t w[MASK_MAX_CPUS / 64]; } cpumask_t;
typedef struct { uint64_t w[MASK_MAX_NODES / 64]; } nodemask_t;

/* Generic operations over nwords 64-bit words; use the typed wrappers. */
int mask_parse_list(const char *s, uint64_t *w, unsigned nbits);
/* Format into buf; returns 0 or -ENOSPC. An empty mask formats as "". */
int mask_format_list(const uint64_t *w, unsigned nbits, char *buf, size_t bufsz);
unsigned mask_weight(const uint64_t *w, unsigned nwords);
int mask_first(const uint64_t *w, unsigned nbits);
int mask_next(const uint64_t *w, unsigned nbits, int prev);

#define MASK_WORDS(m) (sizeof((m)->w) / sizeof((m)->w[0]))
#define MASK_BITS(m)  ((unsigned)(sizeof((m)->w) * 8))

/* (m)->w in sizeof: a pointer to a pointer to a mask does not compile
 * (it would silently zero or compare 8 bytes). */
#define mask_zero(m)        memset((m), 0, sizeof(*(m)) + 0 * sizeof((m)->w))
#define mask_set(m, b)      ((m)->w[(unsigned)(b) / 64] |= (1ULL << ((unsigned)(b) % 64)))
#define mask_clear(m, b)    ((m)->w[(unsigned)(b) / 64] &= ~(1ULL << ((unsigned)(b) % 64)))
#define mask_test(m, b)     ((unsigned)(b) < MASK_BITS(m) && \
			     ((m)->w[(unsigned)(b) / 64] >> ((unsigned)(b) % 64) & 1))
#define mask_count(m)       mask_weight((m)->w, MASK_WORDS(m))
#define mask_empty(m)       (mask_count(m) == 0)
#define mask_equal(a, b)    (memcmp((a), (b), sizeof(*(a)) + 0 * sizeof((a)->w) + 0 * sizeof((b)->w)) == 0)
#define mask_parse(s, m)    mask_parse_list((s), (m)->w, MASK_BITS(m))
#define mask_format(m, buf, sz) mask_format_list((m)->w, MASK_BITS(m), (buf), (sz))
#define mask_foreach(b, m) \
	for (int b = mask_first((m)->w, MASK_BITS(m)); b >= 0; b = mask_next((m)->w, MASK_BITS(m), b))

/* dst = a op b */
#define mask_and(dst, a, b) do { for (size_t _i = 0; _i < MASK_WORDS(dst); _i++) \
	(dst)->w[_i] = (a)->w[_i] & (b)->w[_i]; } while (0)
#define mask_or(dst, a, b)  do { for (size_t _i = 0; _i < MASK_WORDS(dst); _i++) \
	(dst)->w[_i] = (a)->w[_i] | (b)->w[_i]; } while (0)
#define mask_andnot(dst, a, b) do { for (size_t _i = 0; _i < MASK_WORDS(dst); _i++) \
	(dst)->w[_i] = (a)->w[_i] & ~(b)->w[_i]; } while (0)
/* true if every bit of a is in b */
bool mask_subset_words(const uint64_t *a, const uint64_t *b, unsigned nwords);
#define mask_subset(a, b) mask_subset_words((a)->w, (b)->w, MASK_WORDS(a))
bool mask_intersects_words(const uint64_t *a, const uint64_t *b, unsigned nwords);
#define mask_intersects(a, b) mask_intersects_words((a)->w, (b)->w, MASK_WORDS(a))

/* Buffers big enough for any formatted mask. */
#define CPULIST_BUFSZ 40000
#define NODELIST_BUFSZ 5000

#endif
