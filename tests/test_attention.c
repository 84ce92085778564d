// Multi-head attention against a naive per-head loop, with key padding
// and causal masks.
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>

#include "layers/attention.h"
#include "reference.h"

typedef struct case_ {
    int B, H, dh, tq, tk, causal, pos0;
} case_;

ParameterizedTestParameters(attention, matches_reference) {
    static case_ cases[] = {
        {1, 1, 4, 1, 1, 0, -1},  {2, 4, 8, 5, 7, 0, -1}, {3, 2, 16, 6, 6, 1, 0},
        {2, 4, 8, 1, 9, 1, 8},   {1, 8, 4, 3, 12, 1, 9}, {4, 3, 5, 10, 3, 0, -1},
    };
    return cr_make_param_array(case_, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(case_ *c, attention, matches_reference) {
    int64_t B = c->B, H = c->H, dh = c->dh, d = H * dh, tq = c->tq, tk = c->tk;
    // Q in a (B, Tq, 3D) buffer and K/V in a (B, Tk, 2D) one, as in the engine
    float *q = malloc(sizeof(float) * B * tq * 3 * d), *kv = malloc(sizeof(float) * B * tk * 2 * d);
    float *ctx = malloc(sizeof(float) * B * tq * d), *probs = malloc(sizeof(float) * B * H * tq * tk);
    float *want_ctx = malloc(sizeof(float) * tq * d), *want_p = malloc(sizeof(float) * H * tq * tk);
    int *klen = malloc(sizeof(int) * B);
    ref_fill(q, B * tq * 3 * d, 1, 2.0f);
    ref_fill(kv, B * tk * 2 * d, 2, 2.0f);
    for (int64_t b = 0; b < B; b++) klen[b] = (int)(tk - b % tk);  // padding differs per sentence
    s2s_attn_shape s = {B, H, dh, tq, tk, klen, c->causal ? c->pos0 : -1};
    s2s_view qv = {q, tq * 3 * d, 3 * d}, kview = {kv, tk * 2 * d, 2 * d},
             vview = {kv + d, tk * 2 * d, 2 * d};
    cr_assert_eq(s2s_attention(ctx, probs, qv, kview, vview, &s), S2S_OK);
    for (int64_t b = 0; b < B; b++) {
        ref_attention(want_ctx, want_p, q + b * tq * 3 * d, 3 * d, kv + b * tk * 2 * d,
                      kv + b * tk * 2 * d + d, 2 * d, H, dh, tq, tk, klen[b], c->causal, c->pos0);
        cr_assert_lt(ref_max_diff(ctx + b * tq * d, want_ctx, tq * d), 1e-5f, "b=%lld", (long long)b);
        cr_assert_lt(ref_max_diff(probs + b * H * tq * tk, want_p, H * tq * tk), 1e-6f);
        for (int64_t r = 0; r < H * tq; r++) {  // rows sum to one; masked keys get nothing
            double sum = 0;
            for (int64_t j = 0; j < tk; j++) {
                float p = probs[(b * H * tq + r) * tk + j];
                int64_t i = r % tq;
                if (j >= klen[b] || (c->causal && j > c->pos0 + i)) cr_assert_eq(p, 0.0f);
                sum += p;
            }
            cr_assert_float_eq(sum, 1.0, 1e-5);
        }
    }
    free(q), free(kv), free(ctx), free(probs), free(want_ctx), free(want_p), free(klen);
}
