// Training kernels (internal): the pieces of the backward pass, and the
// training-only forward pieces they pair with (dropout, LayerNorm that
// keeps its normalised input, activations kept apart from the products,
// attention with dropout on its weights). src/train/graph.c strings them
// together; tests/test_graph.c checks each one against finite differences.
//
// Dimension letters: R rows, D width, K inner, N outputs, B sentences,
// H heads, Dh head width, Tq query rows, Tk key rows. Outputs first; a
// buffer named dX holds d loss / d X. Parameter gradients (dw, db, dW)
// are always accumulated (+=), so a caller zeroes them once per step and
// tied or shared weights collect every contribution.
#ifndef S2S_TRAIN_BACKWARD_OPS_H
#define S2S_TRAIN_BACKWARD_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/util.h"
#include "layers/attention.h"
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

// Row of a masked softmax y = softmax(x[:valid]), zeros after: dx (n) =
// y * (dy - sum(y * dy)) over the valid part, 0 after it. dx may alias dy.
void s2s_softmax_backward_row(float *dx, const float *dy, const float *y, int64_t valid,
                              int64_t n);

// ---- dropout ----

// Inverted dropout in place: keep[i] = (uniform >= p), x[i] = keep ?
// x[i] / (1 - p) : 0. One rng draw per element, in order. p == 0 leaves x
// and keep alone and does not touch rng. 0 <= p < 1.
void s2s_dropout(float *x, uint8_t *keep, int64_t n, float p, s2s_rng *rng);
// dx = keep ? dy / (1 - p) : 0 (dx = dy when p == 0). dx may alias dy.
void s2s_dropout_backward(float *dx, const float *dy, const uint8_t *keep, int64_t n, float p);

// ---- embeddings and biases ----

// demb (V, D) += scale * dx[r] at row ids[r], for every row r < R.
void s2s_embedding_backward(float *demb, const float *dx, const int *ids, int64_t rows,
                            int64_t d, float scale);

// db (N) += column sums of dy (R, N).
void s2s_colsum(float *db, const float *dy, int64_t rows, int64_t n);

// ---- products (oneDNN through s2s_mm) ----

// For y (R, N) = x (R, K) · W^T + b with W (N, K), all contiguous:
// dx (R, K) (+)= dy · W, dW (N, K) += dy^T · x, db (N) += colsum(dy).
// Any of dx, dw, db may be NULL.
s2s_status s2s_linear_backward(float *dx, float *dw, float *db, const float *dy,
                               const float *x, const float *w, int64_t rows, int64_t k,
                               int64_t n, bool accumulate_dx);

// s2s_attention with dropout p on the weights after the softmax:
// probs (B, H, Tq, Tk) gets the softmax, pdrop (same shape) the dropped
// weights that multiply V, keep (same shape) the mask. With p == 0, pdrop
// may be probs and keep NULL; rng is then not used.
s2s_status s2s_attention_train(float *ctx, float *probs, float *pdrop, uint8_t *keep,
                               s2s_view q, s2s_view k, s2s_view v, const s2s_attn_shape *s,
                               float p, s2s_rng *rng);

// A writable s2s_view: row (b, i) starts at p + b*bs + i*rs.
typedef struct s2s_rows {
    float *p;
    int64_t bs;  // stride between blocks
    int64_t rs;  // stride between rows
} s2s_rows;

// Backward of s2s_attention_train given dctx (B, Tq, D) contiguous. dq,
// dk, dv are overwritten through head-strided views shaped like q, k, v
// (they may be column blocks of one (rows, 3D) buffer); dprobs (B, H, Tq,
// Tk) is scratch.
s2s_status s2s_attention_backward(s2s_rows dq, s2s_rows dk, s2s_rows dv, float *dprobs,
                                  const float *dctx, const float *probs, const float *pdrop,
                                  const uint8_t *keep, float p, s2s_view q, s2s_view k,
                                  s2s_view v, const s2s_attn_shape *s);

// s2s_attention_backward when the loss also reads the weights of one head
// directly (guided alignment): dhead (B, Tq, Tk) = d loss / d probs of head
// `head` (before dropout) is added to the gradient that comes back through
// dropout and V before the softmax backward. dhead NULL: exactly
// s2s_attention_backward.
s2s_status s2s_attention_backward_head(s2s_rows dq, s2s_rows dk, s2s_rows dv, float *dprobs,
                                       const float *dctx, const float *probs, const float *pdrop,
                                       const uint8_t *keep, float p, s2s_view q, s2s_view k,
                                       s2s_view v, const s2s_attn_shape *s, const float *dhead,
                                       int64_t head);

#endif
