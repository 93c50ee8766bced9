/* parse.h — strict parsing of numbers and booleans from text (no I/O;
 * policies/ may use it). 0 or -EINVAL; *out written only on success. */
#ifndef NUMAORCH_PARSE_H
#define NUMAORCH_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* The whole string must be consumed. */
int parse_u64(const char *s, uint64_t *out);
int parse_double(const char *s, double *out);
int parse_bool(const char *s, bool *out);

#endif
