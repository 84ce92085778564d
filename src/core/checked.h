// Checked size arithmetic (internal), for every size computed from a file,
// a config or a caller's batch.
//
// Saturating: a result that does not fit in size_t is SIZE_MAX, and SIZE_MAX
// stays SIZE_MAX through further sums and products (with nonzero factors),
// so a chain of them is checked once, at the end:
//
//     size_t n = s2s_size_add(S2S_SIZE(rows, cols), extra);
//     if (n == SIZE_MAX) return s2s_fail(S2S_ERR_FORMAT, "... too large");
//
// Check before allocating: sanitizers abort on a request for SIZE_MAX bytes
// instead of returning NULL.
#ifndef S2S_CORE_CHECKED_H
#define S2S_CORE_CHECKED_H

#include <stddef.h>
#include <stdint.h>

static inline size_t s2s_size_mul(size_t a, size_t b) {
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

static inline size_t s2s_size_add(size_t a, size_t b) {
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

// The product of n factors (an int64_t each, as sizes are held in s2s);
// SIZE_MAX when one is negative or the product does not fit.
static inline size_t s2s_size_prod(int n, const int64_t *factors) {
    size_t r = 1;
    for (int i = 0; i < n; i++)
        if (factors[i] < 0 || __builtin_mul_overflow(r, factors[i], &r)) return SIZE_MAX;
    return r;
}

// s2s_size_prod of its arguments, each converted to int64_t:
// S2S_SIZE(rows, 3, d).
#define S2S_SIZE(...)                                                         \
    s2s_size_prod((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                  (int64_t[]){__VA_ARGS__})

#endif
