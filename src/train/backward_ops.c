// Training kernels: LayerNorm, activations, softmax, dropout, embeddings
// and linear layers backward; attention forward with dropout and backward.
//
// For one head of attention (S scores, P weights, Pd dropped weights):
//   S = alpha Q K^T (masked)   P = softmax(S)   Pd = drop(P)   O = Pd V
//   dPd = dO V^T   dV = Pd^T dO   dP = drop'(dPd)   dS = P (dP - rowsum(P dP))
//   dQ = alpha dS K   dK = alpha dS^T Q
// Every product is one batched s2s_mm over (B, H) reading heads in place.
#include "train/backward_ops.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "ops/ops.h"

// ---- LayerNorm ----

void s2s_layernorm_backward(float *dx, float *dw, float *db, const float *dy,
                            const float *xhat, const float *rstd, const float *w, int64_t rows,
                            int64_t d, bool accumulate) {
    // With g = dy * w: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)).
    for (int64_t r = 0; r < rows; r++) {
        const float *dyr = dy + r * d, *hr = xhat + r * d;
        float *dxr = dx + r * d;
        float sg = 0.0f, sgx = 0.0f;
        for (int64_t i = 0; i < d; i++) {
            float g = dyr[i] * w[i];
            sg += g;
            sgx += g * hr[i];
            dw[i] += dyr[i] * hr[i];
            db[i] += dyr[i];
        }
        float mg = sg / (float)d, mgx = sgx / (float)d, rs = rstd[r];
        if (accumulate) {
            for (int64_t i = 0; i < d; i++) dxr[i] += rs * (dyr[i] * w[i] - mg - hr[i] * mgx);
        } else {
            for (int64_t i = 0; i < d; i++) dxr[i] = rs * (dyr[i] * w[i] - mg - hr[i] * mgx);
        }
    }
}

// ---- activations ----

void s2s_relu(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void s2s_relu_backward(float *dx, const float *dy, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

#define INV_SQRT2 0.70710678118654752f

void s2s_gelu(float *y, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * INV_SQRT2));
}

void s2s_gelu_backward(float *dx, const float *dy, const float *x, int64_t n) {
    const float inv_sqrt_2pi = 0.3989422804014327f;
    for (int64_t i = 0; i < n; i++) {
        float cdf = 0.5f * (1.0f + erff(x[i] * INV_SQRT2));
        float pdf = inv_sqrt_2pi * expf(-0.5f * x[i] * x[i]);
        dx[i] = dy[i] * (cdf + x[i] * pdf);
    }
}

void s2s_softmax_backward_row(float *dx, const float *dy, const float *y, int64_t valid,
                              int64_t n) {
    float dot = 0.0f;
    for (int64_t j = 0; j < valid; j++) dot += y[j] * dy[j];
    for (int64_t j = 0; j < valid; j++) dx[j] = y[j] * (dy[j] - dot);
    for (int64_t j = valid; j < n; j++) dx[j] = 0.0f;
}

// ---- dropout ----

void s2s_dropout(float *x, uint8_t *keep, int64_t n, float p, s2s_rng *rng) {
    if (p == 0.0f) return;
    float scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < n; i++) {
        keep[i] = s2s_rng_uniform(rng) >= (double)p;
        x[i] = keep[i] ? x[i] * scale : 0.0f;
    }
}

void s2s_dropout_backward(float *dx, const float *dy, const uint8_t *keep, int64_t n, float p) {
    if (p == 0.0f) {
        if (dx != dy) memcpy(dx, dy, (size_t)n * sizeof *dx);
        return;
    }
    float scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < n; i++) dx[i] = keep[i] ? dy[i] * scale : 0.0f;
}

// ---- embeddings and biases ----

void s2s_embedding_backward(float *demb, const float *dx, const int *ids, int64_t rows,
                            int64_t d, float scale) {
    for (int64_t r = 0; r < rows; r++) {
        float *e = demb + (int64_t)ids[r] * d;
        const float *g = dx + r * d;
        for (int64_t i = 0; i < d; i++) e[i] += scale * g[i];
    }
}

void s2s_colsum(float *db, const float *dy, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        const float *g = dy + r * n;
        for (int64_t j = 0; j < n; j++) db[j] += g[j];
    }
}

// ---- products ----

s2s_status s2s_linear_backward(float *dx, float *dw, float *db, const float *dy,
                               const float *x, const float *w, int64_t rows, int64_t k,
                               int64_t n, bool accumulate_dx) {
    if (dx) {
        // dx (R, K) = dy (R, N) · W (N, K)
        s2s_mm_args a = {
            .b0 = 1, .b1 = 1, .m = rows, .k = n, .n = k,
            .sa = {0, 0, n, 1}, .sb = {0, 0, k, 1}, .sc = {0, 0, k, 1},
            .alpha = 1.0f, .accumulate = accumulate_dx,
        };
        S2S_TRY(s2s_mm(dx, dy, w, &a));
    }
    if (dw) {
        // dW (N, K) += dy^T (N, R) · x (R, K), dy read transposed in place
        s2s_mm_args a = {
            .b0 = 1, .b1 = 1, .m = n, .k = rows, .n = k,
            .sa = {0, 0, 1, n}, .sb = {0, 0, k, 1}, .sc = {0, 0, k, 1},
            .alpha = 1.0f, .accumulate = true,
        };
        S2S_TRY(s2s_mm(dw, dy, x, &a));
    }
    if (db) s2s_colsum(db, dy, rows, n);
    return S2S_OK;
}

s2s_status s2s_attention_train(float *ctx, float *probs, float *pdrop, uint8_t *keep,
                               s2s_view q, s2s_view k, s2s_view v, const s2s_attn_shape *s,
                               float p, s2s_rng *rng) {
    int64_t n = s->batch * s->heads * s->tq * s->tk;
    S2S_TRY(s2s_attention_probs(probs, q, k, s));
    const float *w = probs;
    if (p > 0.0f) {
        memcpy(pdrop, probs, (size_t)n * sizeof *pdrop);
        s2s_dropout(pdrop, keep, n, p, rng);
        w = pdrop;
    }
    return s2s_attention_context(ctx, w, v, s);
}

s2s_status s2s_attention_backward(s2s_rows dq, s2s_rows dk, s2s_rows dv, float *dprobs,
                                  const float *dctx, const float *probs, const float *pdrop,
                                  const uint8_t *keep, float p, s2s_view q, s2s_view k,
                                  s2s_view v, const s2s_attn_shape *s) {
    return s2s_attention_backward_head(dq, dk, dv, dprobs, dctx, probs, pdrop, keep, p, q, k, v,
                                       s, NULL, 0);
}

s2s_status s2s_attention_backward_head(s2s_rows dq, s2s_rows dk, s2s_rows dv, float *dprobs,
                                       const float *dctx, const float *probs, const float *pdrop,
                                       const uint8_t *keep, float p, s2s_view q, s2s_view k,
                                       s2s_view v, const s2s_attn_shape *s, const float *dhead,
                                       int64_t head) {
    int64_t B = s->batch, H = s->heads, dh = s->head_dim, tq = s->tq, tk = s->tk;
    int64_t d = H * dh, n = B * H * tq * tk;
    float alpha = 1.0f / sqrtf((float)dh);
    const float *w = p > 0.0f ? pdrop : probs;

    // dPd (B, H, Tq, Tk) = dO (B, H, Tq, Dh) · V^T
    s2s_mm_args dp = {
        .b0 = B, .b1 = H, .m = tq, .k = dh, .n = tk,
        .sa = {tq * d, dh, d, 1},
        .sb = {v.bs, dh, 1, v.rs},
        .sc = {H * tq * tk, tq * tk, tk, 1},
        .alpha = 1.0f,
    };
    S2S_TRY(s2s_mm(dprobs, dctx, v.p, &dp));
    // dV (B, H, Tk, Dh) = Pd^T · dO, Pd read transposed
    s2s_mm_args dvv = {
        .b0 = B, .b1 = H, .m = tk, .k = tq, .n = dh,
        .sa = {H * tq * tk, tq * tk, 1, tk},
        .sb = {tq * d, dh, d, 1},
        .sc = {dv.bs, dh, dv.rs, 1},
        .alpha = 1.0f,
    };
    S2S_TRY(s2s_mm(dv.p, w, dctx, &dvv));

    s2s_dropout_backward(dprobs, dprobs, keep, n, p);
    if (dhead) {
        S2S_ASSERT(head >= 0 && head < H);
        // The guided loss reads the weights before dropout: its gradient
        // joins after the dropout backward.
        for (int64_t b = 0; b < B; b++) {
            float *dst = dprobs + (b * H + head) * tq * tk;
            const float *src = dhead + b * tq * tk;
            for (int64_t i = 0; i < tq * tk; i++) dst[i] += src[i];
        }
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < tq; i++) {
                int64_t off = ((b * H + h) * tq + i) * tk;
                s2s_softmax_backward_row(dprobs + off, dprobs + off, probs + off,
                                         s2s_attention_valid_keys(s, b, i), tk);
            }

    // dQ (B, H, Tq, Dh) = alpha dS · K
    s2s_mm_args dqq = {
        .b0 = B, .b1 = H, .m = tq, .k = tk, .n = dh,
        .sa = {H * tq * tk, tq * tk, tk, 1},
        .sb = {k.bs, dh, k.rs, 1},
        .sc = {dq.bs, dh, dq.rs, 1},
        .alpha = alpha,
    };
    S2S_TRY(s2s_mm(dq.p, dprobs, k.p, &dqq));
    // dK (B, H, Tk, Dh) = alpha dS^T · Q
    s2s_mm_args dkk = {
        .b0 = B, .b1 = H, .m = tk, .k = tq, .n = dh,
        .sa = {H * tq * tk, tq * tk, 1, tk},
        .sb = {q.bs, dh, q.rs, 1},
        .sc = {dk.bs, dh, dk.rs, 1},
        .alpha = alpha,
    };
    return s2s_mm(dk.p, dprobs, q.p, &dkk);
}
