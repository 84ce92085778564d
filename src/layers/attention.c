// Multi-head attention: two batched oneDNN products around a masked softmax.
// Training (src/train/backward_ops.c) runs the same two halves with
// attention dropout between them.
#include "layers/attention.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "ops/matmul.h"
#include "ops/ops.h"

int64_t s2s_attention_valid_keys(const s2s_attn_shape *s, int64_t b, int64_t i) {
    int64_t valid = s->k_len ? s->k_len[b] : s->tk;
    if (s->causal_pos0 >= 0 && s->causal_pos0 + i + 1 < valid) valid = s->causal_pos0 + i + 1;
    return valid;
}

// Whether s runs one product per sentence instead of one per head
// (attention.h): where each head's products are a few rows and the H-fold
// arithmetic stays small. bench_attention_products at 1 thread, one row:
// 1.1-1.8x as fast with H*D*Tk up to 65536 (4 heads of 128 up to 128
// keys), 0.7-0.9x beyond (8 heads of 512 from 32 keys). With 4 rows (a
// sentence's beams in cross-attention) the scores are slower that way at
// any length, the context faster up to about 32 keys of 4 heads of 128.
static bool block_scores(const s2s_attn_shape *s) {
    return s->block && s->tq == 1 && s->heads * s->heads * s->head_dim * s->tk <= 65536;
}

static bool block_context(const s2s_attn_shape *s) {
    return s->block_ctx && s->heads * s->heads * s->head_dim * s->tq * s->tk <= 65536;
}

// Head h of sentence b's query into row (b, h) of s->block, at head h's
// columns. Every call writes the same places (one row per sentence), so
// the zeros around them stay.
static void block_queries(const s2s_attn_shape *s, s2s_view q) {
    int64_t H = s->heads, dh = s->head_dim, d = H * dh;
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < H; h++)
            memcpy(s->block + (b * H + h) * d + h * dh, q.p + b * q.bs + h * dh,
                   (size_t)dh * sizeof(float));
}

s2s_status s2s_attention_probs(float *probs, s2s_view q, s2s_view k, const s2s_attn_shape *s) {
    int64_t B = s->batch, H = s->heads, dh = s->head_dim, tq = s->tq, tk = s->tk;
    // scores (B, H, Tq, Tk) = Q (B, H, Tq, Dh) · K^T (B, H, Dh, Tk) / sqrt(Dh)
    s2s_mm_args scores = {
        .b0 = B, .b1 = H, .m = tq, .k = dh, .n = tk,
        .sa = {q.bs, dh, q.rs, 1},
        .sb = {k.bs, dh, 1, k.rs},
        .sc = {H * tq * tk, tq * tk, tk, 1},
        .alpha = 1.0f / sqrtf((float)dh),
        .bf16 = s->bf16,
    };
    if (block_scores(s)) {
        // (B, H, Tk) = block queries (B, H, D) · K^T (B, D, Tk): the zeros
        // leave row h head h's dot products only
        int64_t d = H * dh;
        s2s_mm_args one = {
            .b0 = B, .b1 = 1, .m = H, .k = d, .n = tk,
            .sa = {H * d, 0, d, 1}, .sb = {k.bs, 0, 1, k.rs}, .sc = {H * tk, 0, tk, 1},
            .alpha = scores.alpha, .bf16 = s->bf16,
        };
        block_queries(s, q);
        S2S_TRY(s2s_mm(probs, s->block, k.p, &one));
    } else {
        S2S_TRY(s2s_mm(probs, q.p, k.p, &scores));
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < tq; i++)
                s2s_softmax_row(probs + ((b * H + h) * tq + i) * tk,
                                s2s_attention_valid_keys(s, b, i), tk);
    return S2S_OK;
}

s2s_status s2s_attention_context(float *ctx, const float *weights, s2s_view v,
                                 const s2s_attn_shape *s) {
    int64_t B = s->batch, H = s->heads, dh = s->head_dim, tq = s->tq, tk = s->tk;
    int64_t d = H * dh;
    // ctx (B, H, Tq, Dh) written as (B, Tq, D) = weights · V (B, H, Tk, Dh)
    s2s_mm_args context = {
        .b0 = B, .b1 = H, .m = tq, .k = tk, .n = dh,
        .sa = {H * tq * tk, tq * tk, tk, 1},
        .sb = {v.bs, dh, v.rs, 1},
        .sc = {tq * d, dh, d, 1},
        .alpha = 1.0f,
        .bf16 = s->bf16,
    };
    if (!block_context(s)) return s2s_mm(ctx, weights, v.p, &context);
    // r (B, H*Tq, D) = weights (B, H*Tq, Tk) · V (B, Tk, D); head h of ctx
    // row (b, i) is head h's columns of r's row (b, h, i)
    float *r = s->block_ctx;
    s2s_mm_args one = {
        .b0 = B, .b1 = 1, .m = H * tq, .k = tk, .n = d,
        .sa = {H * tq * tk, 0, tk, 1}, .sb = {v.bs, 0, v.rs, 1}, .sc = {H * tq * d, 0, d, 1},
        .alpha = 1.0f, .bf16 = s->bf16,
    };
    S2S_TRY(s2s_mm(r, weights, v.p, &one));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < tq; i++)
                memcpy(ctx + (b * tq + i) * d + h * dh, r + ((b * H + h) * tq + i) * d + h * dh,
                       (size_t)dh * sizeof(float));
    return S2S_OK;
}

s2s_status s2s_attention(float *ctx, float *probs, s2s_view q, s2s_view k, s2s_view v,
                         const s2s_attn_shape *s) {
    S2S_TRY(s2s_attention_probs(probs, q, k, s));
    return s2s_attention_context(ctx, probs, v, s);
}
