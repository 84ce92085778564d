// Plain, obviously-correct reference loops that the fast kernels are
// compared with. Double accumulation, no tricks, no oneDNN.
#ifndef S2S_TESTS_REFERENCE_H
#define S2S_TESTS_REFERENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "layers/mask.h"
#include "ops/matmul.h"

// The same contract as s2s_mm, element by element.
void ref_mm(float *c, const float *a, const float *b, const s2s_mm_args *p);

void ref_softmax(float *y, const float *x, int64_t n);
void ref_layernorm(float *y, const float *x, const float *w, const float *b, int64_t d,
                   float eps);

// y (R, D) = LayerNorm(x) * w + b in double, per row; y may alias x.
void ref_layernorm_rows(double *y, const double *x, const double *w, const double *b, int rows,
                        int d, double eps);

// Attention of sentence b, one head at a time: q (Tq, ldq), k, v (Tk, ldk)
// rows as projected (a linear head's phi is taken here); ctx (Tq, H*Dh)
// and probs (H, Tq, Tk). Query i of head h sees key j where
// s2s_attn_mask_sees says so (the mask's definition, key by key); a row
// that sees no key gets zeros.
void ref_attention(float *ctx, float *probs, const float *q, int64_t ldq, const float *k,
                   const float *v, int64_t ldk, int64_t H, int64_t dh, int64_t tq, int64_t tk,
                   const s2s_attn_mask *mask, int64_t b);

// y (R, out) = x (R, in) · W^T + b in double, W (out, in) as in nn.Linear.
void ref_linear(double *y, const double *x, const float *w, const float *b, int rows, int in,
                int out);

// Fills x with uniform values in [-scale, scale) from a fixed seed.
void ref_fill(float *x, int64_t n, uint64_t seed, float scale);

// Largest |a - b| over n values.
float ref_max_diff(const float *a, const float *b, int64_t n);

#endif
