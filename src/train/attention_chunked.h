// Exact attention in blocks of keys, for training (train.attention_chunk;
// internal). The forward pass keeps one log-sum-exp per query row instead
// of the (B, H, Tq, Tk) weights; the backward pass computes each block's
// scores again (Rabe & Staats 2021; FlashAttention, Dao et al. 2022):
//
//   forward, block j:  S_j = alpha Q K_j^T   m' = max(m, rowmax S_j)
//                      l = l e^(m - m') + rowsum e^(S_j - m')
//                      O = O e^(m - m') + drop(e^(S_j - m')) V_j
//   at the end:        O = O / l   lse = m + log l
//   backward:          Dr = rowsum(dO o O) (the guided head adds rowsum(P o dhead))
//                      P_j = e^(S_j - lse)   dV_j = drop(P_j)^T dO
//                      dP_j = drop'(dO V_j^T) (+ dhead_j)   dS_j = P_j o (dP_j - Dr)
//                      dQ += alpha dS_j K_j   dK_j = alpha dS_j^T Q
//
// Attention dropout is s2s_dropout_keeps keyed by one rng draw per
// attention, at each weight's place in (B, H, Tq, Tk), exactly the mask
// s2s_attention_train draws, replayed rather than stored. Masks are the
// s2s_attn_mask of layers/mask.h (padding, causal cut, local, block and
// strided heads); a block's products take only the query rows that see a
// key of it. Layers with linear heads have no softmax and take the plain
// path (s2s_attention_train): s2s_chunked_fits says which.
//
// Dimension letters: B sentences, H heads, Dh head width, D = H*Dh, Tq
// query rows, Tk key rows, C keys per block. Every product is one s2s_mm
// over (B, H) reading heads in place: 2 per block forward, 4 backward.
#ifndef S2S_TRAIN_ATTENTION_CHUNKED_H
#define S2S_TRAIN_ATTENTION_CHUNKED_H

#include <stdbool.h>
#include <stdint.h>

#include "layers/attention.h"

// Scratch, shared by every attention of a pass.
typedef struct s2s_chunk_scratch {
    int64_t chunk;     // C, keys per block (>= 1)
    float *s, *pd, *dp;  // (B, H, Tq, C) each: scores/weights, dropped weights
                         // (with dropout), their gradient (backward)
    float *rows;       // (B, H, Tq): running maxima, then rowsum(dO o O)
} s2s_chunk_scratch;

// Whether s runs chunked: no linear head in its pattern.
bool s2s_chunked_fits(const s2s_attn_shape *s);

// ctx (B, Tq, D) contiguous = s2s_attention_train's context, and lse
// (B, H, Tq) the log-sum-exp of each row's visible scores (-inf for a row
// that sees no key: its context is 0). p: attention dropout, key its mask's
// key (unused when p == 0). w->pd is needed only when p > 0.
s2s_status s2s_chunked_attention_fwd(float *ctx, float *lse, s2s_view q, s2s_view k,
                                     s2s_view v, const s2s_attn_shape *s, float p,
                                     uint64_t key, const s2s_chunk_scratch *w);

// probs (B, Tq, Tk) = the weights of head `head` (before dropout), from the
// forward pass's lse: what the guided terms read.
s2s_status s2s_chunked_attention_head(float *probs, const float *lse, s2s_view q, s2s_view k,
                                      const s2s_attn_shape *s, int64_t head);

// What the backward pass reads besides the shape.
typedef struct s2s_chunk_saved {
    s2s_view q, k, v;
    const float *ctx;  // (B, Tq, D) the forward pass's output
    const float *lse;  // (B, H, Tq)
    float p;           // attention dropout
    uint64_t key;      // its mask's key
    // The guided term of head `head` (or NULL): dhead (B, Tq, Tk) = d loss /
    // d its weights before dropout, phead (B, Tq, Tk) those weights
    // (s2s_chunked_attention_head).
    const float *dhead, *phead;
    int64_t head;
} s2s_chunk_saved;

// dq, dk, dv (overwritten, head-strided views shaped like q, k, v) from
// dctx (B, Tq, D) contiguous: s2s_attention_backward's gradients.
s2s_status s2s_chunked_attention_bwd(s2s_rows dq, s2s_rows dk, s2s_rows dv, const float *dctx,
                                     const s2s_chunk_saved *f, const s2s_attn_shape *s,
                                     const s2s_chunk_scratch *w);

#endif
