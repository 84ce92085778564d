// The layer recipe (internal): the few layout and order decisions that
// decoding (layers/transformer.c) and training (train/graph.c) must make
// the same way, kept here once so the two cannot drift apart.
//
//   - the fused weight [W_q; W_k; W_v] (3D, D) and its bias, of which
//     cross-attention's keys and values come from rows D..3D, its queries
//     from rows 0..D;
//   - where decoding's Q, K and V sit: one fused projection (rows, 3D)
//     holds Q|K|V of self-attention, a (rows, 2D) buffer K|V of
//     cross-attention (and the decoder's self-attention cache); head j
//     reads columns [j*Dh, (j+1)*Dh) of each part through strided views.
//     (Training keeps each of Q, K and V in a block of its own, which its
//     per-head products need: train/graph.c qkv_blocks.)
//   - the norm placement: pre-norm x = x + Sub(LN(x)) with a final
//     LayerNorm after each stack; post-norm x = LN(x + Sub(x)), no final
//     LayerNorm.
//
// Dimension letters: B sequences, T rows per sequence, D model width.
#ifndef S2S_LAYERS_RECIPE_H
#define S2S_LAYERS_RECIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "layers/attention.h"
#include "model/model_internal.h"

// Whether c normalises sublayer inputs (pre-norm, with final stack norms)
// rather than residual sums (post-norm).
static inline bool s2s_recipe_pre_norm(const s2s_model_config *c) {
    return c->norm == S2S_NORM_PRE;
}

// Q, K and V of one attention, as head-strided views.
typedef struct s2s_qkv {
    s2s_view q, k, v;
} s2s_qkv;

// Part `part` (width D) of rows `parts`*D wide, T rows per sequence.
static inline s2s_view s2s_recipe_part(const float *base, int parts, int part, int64_t T,
                                       int64_t d) {
    return (s2s_view){.p = base + part * d, .bs = T * parts * d, .rs = parts * d};
}

// Self-attention: Q|K|V of one fused (B, T, 3D) projection.
static inline s2s_qkv s2s_recipe_self_qkv(const float *qkv, int64_t T, int64_t d) {
    return (s2s_qkv){.q = s2s_recipe_part(qkv, 3, 0, T, d),
                     .k = s2s_recipe_part(qkv, 3, 1, T, d),
                     .v = s2s_recipe_part(qkv, 3, 2, T, d)};
}

// Queries (B, Tq, q_parts*D; Q is part 0) against keys and values held as
// K|V in kv (B, Tk, 2D): cross-attention (q_parts 1), or decoding's
// self-attention over its cache (q_parts 3, the fused projection).
static inline s2s_qkv s2s_recipe_cached_qkv(const float *q, int q_parts, int64_t tq,
                                            const float *kv, int64_t tk, int64_t d) {
    return (s2s_qkv){.q = s2s_recipe_part(q, q_parts, 0, tq, d),
                     .k = s2s_recipe_part(kv, 2, 0, tk, d),
                     .v = s2s_recipe_part(kv, 2, 1, tk, d)};
}

// The cross-attention K/V slice: rows D..3D of the fused weight (3D, D)
// and of its bias (3D).
static inline const float *s2s_recipe_kv_weight(const float *w_qkv, int64_t d) {
    return w_qkv + d * d;
}
static inline const float *s2s_recipe_kv_bias(const float *b_qkv, int64_t d) {
    return b_qkv + d;
}

#endif
