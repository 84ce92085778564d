// Training kernels (internal): the backward passes of LayerNorm, the
// activations, the embeddings and the linear layers, and the forward
// activations they pair with (kept apart from the products). The softmax
// and dropout have theirs in ops/ops.h, the heads of layers/ theirs beside
// their forward passes. src/train/graph.c strings them together; tests/test_graph.c
// checks each one against finite differences.
//
// Dimension letters: R rows, D width, K inner, N outputs. Outputs first; a
// buffer named dX holds d loss / d X. Parameter gradients (dw, db, dW)
// are always accumulated (+=), so a caller zeroes them once per step and
// tied or shared weights collect every contribution.
#ifndef S2S_TRAIN_BACKWARD_OPS_H
#define S2S_TRAIN_BACKWARD_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/util.h"
#include "ops/matmul.h"

// ---- LayerNorm ----

// dx (R, D) (+)= d/dx, dw (D) += sum_r dy * xhat, db (D) += sum_r dy.
// dx may alias dy when not accumulating.
void s2s_layernorm_backward(float *dx, float *dw, float *db, const float *dy,
                            const float *xhat, const float *rstd, const float *w, int64_t rows,
                            int64_t d, bool accumulate);

// ---- activations (n values; dx may alias dy) ----

void s2s_relu(float *y, const float *x, int64_t n);
void s2s_relu_backward(float *dx, const float *dy, const float *x, int64_t n);
// Exact gelu, 0.5 x (1 + erf(x / sqrt 2)).
void s2s_gelu(float *y, const float *x, int64_t n);
// dx = dy * (Phi(x) + x phi(x)), x the pre-activation.
void s2s_gelu_backward(float *dx, const float *dy, const float *x, int64_t n);

// ---- embeddings and biases ----

// demb (V, D) += scale * dx[r] at row ids[r], for every row r < R.
void s2s_embedding_backward(float *demb, const float *dx, const int *ids, int64_t rows,
                            int64_t d, float scale);

// db (N) += column sums of dy (R, N).
void s2s_colsum(float *db, const float *dy, int64_t rows, int64_t n);

// ---- products (oneDNN through s2s_mm) ----

// bf16 copies of a linear layer's operands for s2s_linear_backward: W's
// (laid out like W), and x's and dy's where the caller has them already
// (x kept from the forward pass, dy made where it was produced); NULL:
// rounded here (dy, once for both products) or by s2s_mm (x).
typedef struct s2s_bf16_operands {
    const uint16_t *w, *x, *dy;
} s2s_bf16_operands;

// For y (R, N) = x (R, K) · W^T + b with W (N, K), all contiguous:
// dx (R, K) (+)= dy · W, dW (N, K) += dy^T · x, db (N) += colsum(dy).
// Any of dx, dw, db may be NULL. b16: NULL (fp32 products), or the bf16
// copies above: both products then run on oneDNN's bf16 kernels
// (s2s_mm_args.bf16), summed (and accumulated) in fp32.
s2s_status s2s_linear_backward(float *dx, float *dw, float *db, const float *dy,
                               const float *x, const float *w, const s2s_bf16_operands *b16,
                               int64_t rows, int64_t k, int64_t n, bool accumulate_dx);

#endif
