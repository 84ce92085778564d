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

#include "s2s/config.h"
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
    bool bf16;          // A and B rounded to bf16 (dense copies), summed in f32
    bool a_is_bf16;     // with bf16: A holds bf16 values already (uint16_t), read in place
    bool b_is_bf16;     // with bf16: B holds bf16 values already, read in place
    // The sizes and strides are made into the primitive (one per shape, made
    // on first use, about 1.3 ms each, at most 1,024 shapes a process; past
    // that the product runs as if not fixed): where every operand is a
    // permutation of a dense tensor, oneDNN then runs many small products
    // in one call on its brgemm kernels, two to three times as fast as the
    // run-time shapes' gemm per product (the local attention's chunks:
    // layers/attention_sparse.c; training's per-head products:
    // s2s_attn_shape.fixed). For shapes that recur, not for shapes that
    // follow the input.
    bool fixed;
} s2s_mm_args;

// C = act(alpha * A·B + bias [+ C]). Primitives are created on first use of
// each (A layout, B layout, bias, accumulate, act, alpha) combination with
// runtime sizes and strides, and reused for every shape after that (but
// with args->fixed).
// With args->bf16 the product runs on oneDNN's bf16 kernels: decoding in
// compute type bf16 does so for its products of more than one row (but
// beams' cross-attention and batches' block-diagonal attention scores:
// layers/transformer.c), so that greedy decoding never makes oneDNN
// generate its fp32 gemm kernels (about 25 to 30 ms, once per process:
// docs/benchmarks.md); one-row products run on fp32 gemv kernels and
// those scores on a small-N one, which cost little to make.
s2s_status s2s_mm(float *c, const float *a, const float *b, const s2s_mm_args *args);

// This thread's buffer of at least n bf16 values for an operand its caller
// rounds once and hands to several s2s_mm calls (a_is_bf16 / b_is_bf16):
// s2s_mm's own copies never use it. Contents are not kept from one caller
// to the next; NULL when out of memory (no error message set).
uint16_t *s2s_bf16_scratch(size_t n);

// nn.Linear: y (rows, N) (+)= act(x (rows, K) · W^T + bias), W (N, K)
// row-major, or W^T (K, N) row-major when transposed (decoding's copy:
// model_internal.h). Rows are contiguous.
s2s_status s2s_linear(float *y, const float *x, const float *w, bool transposed, const float *bias,
                      int64_t rows, int64_t k, int64_t n, s2s_mm_act act, bool accumulate);

// A weight matrix as decoding multiplies it: W^T (K, N) row-major, in fp32,
// int8 (s8 with one scale per output column N: W[k][n] ~ w[k][n] * scale[n])
// or bf16 (the high 16 bits of the fp32 values, rounded to nearest even).
typedef struct s2s_wmat {
    s2s_compute_type type;  // S2S_COMPUTE_FP32, _INT8 or _BF16
    const void *w;          // (K, N): float, int8_t or uint16_t
    const float *scale;     // (N) int8 only
    const int32_t *comp;    // (N) int8 only: 128 * sum over K of w (s2s_int8_compensation)
} s2s_wmat;

// y (rows, N) (+)= act(x (rows, K) · W + bias) with W in w's type. int8
// quantises each row of x to s8 with its own scale (max |x| / 127), sums
// in s32 and dequantises in f32; bf16 rounds x to bf16 and sums in f32.
s2s_status s2s_linear_w(float *y, const float *x, const s2s_wmat *w, const float *bias,
                        int64_t rows, int64_t k, int64_t n, s2s_mm_act act, bool accumulate);

// y (rows, N) += act(x (rows, K) · W1 + b1) · W2 + b2, a feed-forward
// block, through h (rows, F) floats of scratch. With W1 and W2 both bf16
// the hidden layer stays bf16: oneDNN writes it rounded (to nearest even,
// as s2s_to_bf16) into h and the second product reads it there, where two
// s2s_linear_w calls write it in fp32, read it back and round it. The
// same values either way.
s2s_status s2s_linear_pair_w(float *y, float *h, const float *x, const s2s_wmat *w1,
                             const float *b1, const s2s_wmat *w2, const float *b2, int64_t rows,
                             int64_t k, int64_t f, int64_t n, s2s_mm_act act);

// Whether oneDNN runs type t on this CPU with its fast instructions: int8
// with VNNI (AVX-512 or AVX2), bf16 with AVX512_BF16; fp32 always.
bool s2s_cpu_has(s2s_compute_type t);

// Threads that large products on this thread may use from now on (<= 0:
// all cores). Small products always run on one thread.
void s2s_set_num_threads(int n);
int s2s_get_num_threads(void);

// s2s_shutdown (s2s/s2s.h) releases the engine, the primitives and every
// thread's stream and memory objects.

#endif
