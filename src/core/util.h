// Small shared helpers (internal): random numbers, hashing, files.
#ifndef S2S_CORE_UTIL_H
#define S2S_CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "s2s/status.h"

// xoshiro256** seeded through splitmix64: fast, and the same stream on
// every machine for a given seed.
typedef struct s2s_rng {
    uint64_t s[4];
} s2s_rng;

void s2s_rng_seed(s2s_rng *r, uint64_t seed);

// Inline, so that a loop of draws (dropout masks) keeps the state in
// registers.
static inline uint64_t s2s_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t s2s_rng_next(s2s_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = s2s_rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s2s_rotl64(s[3], 45);
    return result;
}

// Uniform in [0, 1): the top 53 bits of a draw, times 2^-53.
static inline double s2s_rng_uniform(s2s_rng *r) {
    return (double)(s2s_rng_next(r) >> 11) * 0x1.0p-53;
}

// FNV-1a (64-bit), for hash tables and for tying files together; not for
// input an adversary picks. s2s_fnv1a hashes n bytes at p; s2s_fnv1a_word
// takes a 64-bit value as one symbol (a key made of integers costs one step
// per integer, the same on every machine). Both continue from h: start
// from S2S_FNV1A_INIT.
#define S2S_FNV1A_INIT 0xcbf29ce484222325ULL

static inline uint64_t s2s_fnv1a_word(uint64_t h, uint64_t x) {
    return (h ^ x) * 0x100000001b3ULL;
}

static inline uint64_t s2s_fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) h = s2s_fnv1a_word(h, b[i]);
    return h;
}

// Opens path for reading without ever blocking in open(2): a FIFO that no
// program writes to made fopen wait forever. A FIFO with no writer is
// refused (errno ENXIO, *why "a FIFO with no writer"); with regular_only,
// so is anything but a regular file (EINVAL, "not a regular file"). Other
// failures leave errno as open(2) set it and *why NULL. Reads block as
// usual afterwards (a pipe's writer sets the pace).
FILE *s2s_open_read(const char *path, bool regular_only, const char **why);

// The error of an s2s_read_line that returned r < 0 after `line` lines of
// path: a line with no end (-2) is bad data, S2S_ERR_FORMAT
// "PATH:LINE+1: ..."; a read error (-1) S2S_ERR_IO "PATH: ...".
s2s_status s2s_read_line_fail(const char *path, int line, int r);

// Reads a whole file into a NUL-terminated buffer. Caller frees.
s2s_status s2s_read_file(char **out, size_t *len, const char *path);
// The same for a file of at most max bytes: a larger one (or an endless
// stream) is read only that far and refused, S2S_ERR_FORMAT "PATH: larger
// than MAX bytes, the limit for WHAT".
s2s_status s2s_read_file_max(char **out, size_t *len, const char *path, size_t max,
                             const char *what);

// calloc that records an out-of-memory message; NULL on failure.
void *s2s_calloc(size_t n, size_t size);

// s2s_calloc for blocks of 2 MB and more (weights, their decoding copy,
// decoding state): mapped on their own and, on Linux, advised onto
// transparent huge pages, so that first touching them takes one page
// fault per 2 MB instead of one per 4 KB (docs/benchmarks.md). Freed with
// s2s_big_free, given the same n and size.
void *s2s_big_alloc(size_t n, size_t size);
void s2s_big_free(void *p, size_t n, size_t size);

// "Did you mean": the closest of several candidate names to a mistyped one
// (a config key, a command-line option), by optimal string alignment
// distance (Levenshtein plus adjacent swaps: "hedas" is one edit from
// "heads"), within 1 + len/4 edits (at most 3) of the candidate and fewer
// edits than it has characters:
//
//     s2s_suggest s = s2s_suggest_start(name, strlen(name));
//     for (...) s2s_suggest_offer(&s, candidate);
//     if (s.best) ... "did you mean '%s'?", s.best
typedef struct s2s_suggest {
    const char *name;  // the mistyped name, name[0..n)
    size_t n;
    const char *best;  // the closest candidate so far, or NULL
    int best_d;
} s2s_suggest;

s2s_suggest s2s_suggest_start(const char *name, size_t n);
// Considers cand (NUL-terminated); an earlier candidate wins a tie.
void s2s_suggest_offer(s2s_suggest *s, const char *cand);

#endif
