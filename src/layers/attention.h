// Multi-head scaled dot-product attention (internal).
//
// Dimension letters: B sentences, H heads, Dh head width, D = H*Dh,
// Tq query rows, Tk key rows. Head j reads columns [j*Dh, (j+1)*Dh) of
// Q, K and V in place through strided views; nothing is transposed.
#ifndef S2S_LAYERS_ATTENTION_H
#define S2S_LAYERS_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "s2s/status.h"

// Rows of a (B, T, ...) activation: row (b, i) starts at p + b*bs + i*rs.
typedef struct s2s_view {
    const float *p;
    int64_t bs, rs;
} s2s_view;

typedef struct s2s_attn_shape {
    int64_t batch, heads, head_dim, tq, tk;
    const int *k_len;  // (B) valid keys per sentence (key padding); NULL: all Tk
    int64_t causal_pos0;  // query i sits at position causal_pos0 + i and sees
                          // keys 0..causal_pos0+i; -1 for no causal mask
    bool bf16;            // both products in bf16 (s2s_mm_args.bf16)
    // NULL, or room for one product per sentence instead of one per head:
    // block (B, H, D) for block-diagonal queries when Tq is 1 (head h's row
    // holds zeros outside head h's columns), zero outside those columns on
    // entry (which calls leave so); block_ctx (B, H*Tq, D) for the context
    // of every head over all D columns, of which head h's are kept. Each
    // product does H times the arithmetic in 1/H the calls, which pays
    // where a head's products are a few rows and short (decoding steps):
    // oneDNN's cost there is per call (tests/bench_attention_products.c;
    // the rules in attention.c).
    float *block, *block_ctx;
} s2s_attn_shape;

// ctx (B, Tq, D) contiguous = concat_h softmax(mask(Q_h·K_h^T / sqrt(Dh))) · V_h
// probs (B, H, Tq, Tk) receives the attention weights (masked ones are 0).
s2s_status s2s_attention(float *ctx, float *probs, s2s_view q, s2s_view k, s2s_view v,
                         const s2s_attn_shape *s);

// The two halves of s2s_attention (training puts dropout between them):
// probs (B, H, Tq, Tk) = masked softmax of the scaled scores, and
// ctx (B, Tq, D) = weights (B, H, Tq, Tk) · V per head.
s2s_status s2s_attention_probs(float *probs, s2s_view q, s2s_view k, const s2s_attn_shape *s);
s2s_status s2s_attention_context(float *ctx, const float *weights, s2s_view v,
                                 const s2s_attn_shape *s);

// Keys query row i of sentence b sees: the key-padding length, cut by the
// causal mask.
int64_t s2s_attention_valid_keys(const s2s_attn_shape *s, int64_t b, int64_t i);

#endif
