// Small shared helpers (internal): random numbers, files, paths.
#ifndef S2S_CORE_UTIL_H
#define S2S_CORE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "s2s/status.h"

// xoshiro256** seeded through splitmix64: fast, and the same stream on
// every machine for a given seed.
typedef struct s2s_rng {
    uint64_t s[4];
} s2s_rng;

void s2s_rng_seed(s2s_rng *r, uint64_t seed);
uint64_t s2s_rng_next(s2s_rng *r);
// Uniform in [0, 1).
double s2s_rng_uniform(s2s_rng *r);

// Reads a whole file into a NUL-terminated buffer. Caller frees.
s2s_status s2s_read_file(char **out, size_t *len, const char *path);

// calloc that records an out-of-memory message; NULL on failure.
void *s2s_calloc(size_t n, size_t size);

#endif
