// Multi-head attention: two batched oneDNN products around a masked softmax.
// Training (src/train/backward_ops.c) runs the same two halves with
// attention dropout between them.
#include "layers/attention.h"

#include <math.h>

#include "core/error.h"
#include "ops/matmul.h"
#include "ops/ops.h"

int64_t s2s_attention_valid_keys(const s2s_attn_shape *s, int64_t b, int64_t i) {
    int64_t valid = s->k_len ? s->k_len[b] : s->tk;
    if (s->causal_pos0 >= 0 && s->causal_pos0 + i + 1 < valid) valid = s->causal_pos0 + i + 1;
    return valid;
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
    S2S_TRY(s2s_mm(probs, q.p, k.p, &scores));
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
    return s2s_mm(ctx, weights, v.p, &context);
}

s2s_status s2s_attention(float *ctx, float *probs, s2s_view q, s2s_view k, s2s_view v,
                         const s2s_attn_shape *s) {
    S2S_TRY(s2s_attention_probs(probs, q, k, s));
    return s2s_attention_context(ctx, probs, v, s);
}
