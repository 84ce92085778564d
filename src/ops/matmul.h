// Matrix products on oneDNN (internal). Every product in s2s goes through
// s2s_mm; src/ops/dnnl_matmul.c is the only file that calls oneDNN.
//
// Dimension letters: B0, B1 outer batch dims, M rows, K inner, N columns.
// Operands are row-major views with explicit strides (in floats), so
// attention heads and weight transposes are read in place.
#ifndef S2S_OPS_MATMUL_H
#define S2S_OPS_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "s2s/status.h"

typedef enum s2s_mm_act {
    S2S_MM_NONE,
    S2S_MM_RELU,
    S2S_MM_GELU,  // exact, with erf
    S2S_MM_ACT_COUNT
} s2s_mm_act;

typedef struct s2s_mm_args {
    int64_t b0, b1, m, k, n;  // sizes; b0 = b1 = 1 for a plain product
    int64_t sa[4];  // strides of A (B0, B1, M, K); sa[3] == 1, or sa[2] == 1 for a
                    // transposed A read in place (dY^T, P^T)
    int64_t sb[4];  // strides of B (B0, B1, K, N); sb[3] == 1 or sb[2] == 1
    int64_t sc[4];  // strides of C (B0, B1, M, N); sc[3] == 1
    float alpha;        // C = alpha * A·B
    const float *bias;  // (N) added after the scale, or NULL; only when B0 = B1 = 1
    bool accumulate;    // C += (...) instead of C = (...)
    s2s_mm_act act;     // applied last
} s2s_mm_args;

// C = act(alpha * A·B + bias [+ C]). Primitives are created on first use of
// each (A layout, B layout, bias, accumulate, act, alpha) combination with
// runtime sizes and strides, and reused for every shape after that.
s2s_status s2s_mm(float *c, const float *a, const float *b, const s2s_mm_args *args);

// nn.Linear: y (rows, N) (+)= act(x (rows, K) · W^T + bias), W (N, K)
// row-major, or W^T (K, N) row-major when in_out (decoding's copy:
// model_internal.h). Rows are contiguous.
s2s_status s2s_linear(float *y, const float *x, const float *w, bool in_out, const float *bias,
                      int64_t rows, int64_t k, int64_t n, s2s_mm_act act, bool accumulate);

// Threads that large products on this thread may use from now on (<= 0:
// all cores). Small products always run on one thread.
void s2s_set_num_threads(int n);
int s2s_get_num_threads(void);

// s2s_shutdown (s2s/s2s.h) releases the engine, the primitives and every
// thread's stream and memory objects.

#endif
