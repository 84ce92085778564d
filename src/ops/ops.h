// Element-wise kernels in plain C (internal). Outputs first, then inputs,
// then sizes. Written as simple loops over contiguous rows so that gcc
// vectorises them (-O2 -ftree-vectorize).
//
// Dimension letters: R rows, D width, V vocab, P positions.
#ifndef S2S_OPS_OPS_H
#define S2S_OPS_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

// ---- the softmax of a row of attention scores, and dropout ----

// In place, per row of length n: x[lo:hi] = softmax(x[lo:hi]), every other
// x[j] = 0 (masked keys get no weight). Keys inside [lo, hi) may be
// hidden by -inf. A row that sees no key (lo >= hi, or all -inf) becomes
// zeros, never NaN. 0 <= lo, hi <= n.
void s2s_softmax_row(float *x, int64_t lo, int64_t hi, int64_t n);

// The same for `rows` rows of length n one after another, row r over
// keys[r].lo .. keys[r].hi - 1: one call for many short rows (the
// encoder's local and block fast paths: layers/attention_sparse.c), the
// same values as a call of s2s_softmax_row per row.
typedef struct s2s_key_span {
    int64_t lo, hi;
} s2s_key_span;
void s2s_softmax_rows(float *x, int64_t rows, int64_t n, const s2s_key_span *keys);

// The two halves of a softmax whose keys are not one range (the encoder's
// strided fast path, layers/attention_sparse.c): the largest x[j] (-inf when n is
// 0), and in place x[j] = exp(x[j] - shift) (0 where x[j] is -inf),
// returning their sum. shift >= every x[j].
float s2s_max_row(const float *x, int64_t n);
float s2s_exp_shift_row(float *x, int64_t n, float shift);
// sum of x[j], in LANES float partial sums (the training loss's mean logit)
float s2s_sum_row(const float *x, int64_t n);

// Backward of s2s_softmax_row given its output y: dx (n) = y * (dy -
// sum(y * dy)) over [lo, hi), 0 elsewhere. dx may alias dy.
void s2s_softmax_backward_row(float *dx, const float *dy, const float *y, int64_t lo, int64_t hi,
                              int64_t n);

// In place, per row of length n of scores >= 0 (linear attention's):
// x[lo:hi] = x[lo:hi] / (sum(x[lo:hi]) + eps), every other x[j] = 0.
// Returns 1 / (sum + eps), which the backward takes.
float s2s_normalize_row(float *x, int64_t lo, int64_t hi, int64_t n, float eps);

// Backward of s2s_normalize_row given its output y and what it returned:
// dx (n) = inv * (dy - sum(y * dy)) over [lo, hi), 0 elsewhere. dx may
// alias dy.
void s2s_normalize_backward_row(float *dx, const float *dy, const float *y, float inv,
                                int64_t lo, int64_t hi, int64_t n);

// x (n) = elu(x) + 1 in place: x + 1 where x > 0, else exp(x) (0 below
// -87): linear attention's feature map, vectorised.
void s2s_elu1_row(float *x, int64_t n);

// Inverted dropout in place: keep[i] = (uniform >= p), x[i] = keep ?
// x[i] / (1 - p) : 0, with the mask of s2s_dropout_keeps(key, i, p) for
// one rng draw key (s2s_dropout_keyed). p == 0 leaves x and keep alone and
// does not touch rng. 0 <= p < 1.
void s2s_dropout(float *x, uint8_t *keep, int64_t n, float p, s2s_rng *rng);
// dx = keep ? dy / (1 - p) : 0 (dx = dy when p == 0). dx may alias dy.
void s2s_dropout_backward(float *dx, const float *dy, const uint8_t *keep, int64_t n, float p);

// Dropout's mask as a function of a key and an element's index
// (counter-based: splitmix64's finaliser of key + index * golden ratio,
// whose top 53 bits make the uniform), so that a pass can replay any part
// of it without storing it (attention_chunk), and so that the loop making
// a mask vectorises: element idx is kept when its uniform >= p. The key
// is one rng draw per mask (s2s_dropout; s2s_attention_train, train/
// attention_chunked.c); idx is the element's place in it, for attention
// (B, H, Tq, Tk).
static inline uint64_t s2s_dropout_bits(uint64_t key, uint64_t idx) {
    uint64_t z = key + idx * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return (z ^ (z >> 31)) >> 11;
}
static inline bool s2s_dropout_keeps(uint64_t key, uint64_t idx, float p) {
    return (double)s2s_dropout_bits(key, idx) * 0x1.0p-53 >= (double)p;
}
// s2s_dropout with the mask of s2s_dropout_keeps(key, first + i, p).
void s2s_dropout_keyed(float *x, uint8_t *keep, int64_t n, float p, uint64_t key,
                       uint64_t first);

// y (R, D) = LayerNorm(x) * w + b, biased variance. y may alias x.
void s2s_layernorm(float *y, const float *x, const float *w, const float *b,
                   int64_t rows, int64_t d, float eps);
// The same, also keeping xhat (R, D) = (x - mean) * rstd and rstd (R) for
// the backward pass (both NULL: s2s_layernorm). Bit-identical outputs.
void s2s_layernorm_fwd(float *y, float *xhat, float *rstd, const float *x, const float *w,
                       const float *b, int64_t rows, int64_t d, float eps);

// y (R, D) = x + r (y may alias x).
void s2s_add(float *y, const float *x, const float *r, int64_t n);

// out (P, D): sinusoidal table, PE[p,2i] = sin(p/10000^(2i/D)),
// PE[p,2i+1] = cos(...). D even.
void s2s_positional_table(float *out, int64_t positions, int64_t d);

// The index of the first NaN or infinity in x (n), or n if there is none.
size_t s2s_first_nonfinite(const float *x, size_t n);

// y (D) = E[id] * scale + pe (D).
void s2s_embed_row(float *y, const float *emb, int id, float scale, const float *pe, int64_t d);

// x (n) = log_softmax(x), in place: x - s2s_log_sum_exp_row(x).
void s2s_log_softmax_row(float *x, int64_t n);

// log(sum of exp(x[j])), taken from the largest x[j] (NaN if any is).
float s2s_log_sum_exp_row(const float *x, int64_t n);

// ---- low precision (ops/matmul.h s2s_wmat) ----

// q (K) = round(x / s) in [-127, 127] with s = max |x| / 127; returns s
// (1 when x is all zeros). The one rounding rule of every int8 quantiser.
float s2s_quantize_row_int8(int8_t *q, const float *x, int64_t k);

// q (K, N) and scale (N) from w (K, N): each column quantised as
// s2s_quantize_row_int8 does a row, so that W[k][n] ~ q[k][n] * scale[n].
void s2s_quantize_cols_int8(int8_t *q, float *scale, const float *w, int64_t k, int64_t n);

// comp (N) = 128 * sum over K of q (K, N): what int8 products subtract
// after running on activations shifted to u8 (q + 128), the form VNNI's
// u8 x s8 instruction takes without oneDNN adding a compensation per call.
void s2s_int8_compensation(int32_t *comp, const int8_t *q, int64_t k, int64_t n);

// dst (n) = src rounded to bf16 (nearest even; NaN stays NaN), and back.
void s2s_to_bf16(uint16_t *dst, const float *src, size_t n);
void s2s_from_bf16(float *dst, const uint16_t *src, size_t n);

#endif
