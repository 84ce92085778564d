// Training kernels: LayerNorm, activations, embeddings and linear layers
// backward.
#include "train/backward_ops.h"

#include <math.h>
#include <string.h>

#include "core/checked.h"
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
        for (int64_t i = 0; i < d; i++) {  // in order (the sums' rounding)
            float g = dyr[i] * w[i];
            sg += g;
            sgx += g * hr[i];
        }
        for (int64_t i = 0; i < d; i++) {  // element-wise: vectorised, the same values
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
                               const float *x, const float *w, const s2s_bf16_operands *b16,
                               int64_t rows, int64_t k, int64_t n, bool accumulate_dx) {
    bool bf16 = b16 != NULL, x16 = bf16 && b16->x;
    const void *a_in = dy;
    if (bf16 && b16->dy) {
        a_in = b16->dy;
    } else if (bf16 && (dx || dw) && rows > 0 && n > 0) {
        uint16_t *dy16 = s2s_bf16_scratch(S2S_SIZE(rows, n));
        if (!dy16) return s2s_fail(S2S_ERR_NOMEM, "out of memory (bf16 gradient copy)");
        s2s_to_bf16(dy16, dy, (size_t)(rows * n));
        a_in = dy16;
    }
    if (dx) {
        // dx (R, K) = dy (R, N) · W (N, K)
        s2s_mm_args a = {
            .b0 = 1, .b1 = 1, .m = rows, .k = n, .n = k,
            .sa = {0, 0, n, 1}, .sb = {0, 0, k, 1}, .sc = {0, 0, k, 1},
            .alpha = 1.0f, .accumulate = accumulate_dx,
            .bf16 = bf16, .a_is_bf16 = bf16, .b_is_bf16 = bf16,
        };
        S2S_TRY(s2s_mm(dx, a_in, bf16 ? (const void *)b16->w : w, &a));
    }
    if (dw) {
        // dW (N, K) += dy^T (N, R) · x (R, K), dy read transposed in place
        s2s_mm_args a = {
            .b0 = 1, .b1 = 1, .m = n, .k = rows, .n = k,
            .sa = {0, 0, 1, n}, .sb = {0, 0, k, 1}, .sc = {0, 0, k, 1},
            .alpha = 1.0f, .accumulate = true,
            .bf16 = bf16, .a_is_bf16 = bf16, .b_is_bf16 = x16,
        };
        S2S_TRY(s2s_mm(dw, a_in, x16 ? (const void *)b16->x : x, &a));
    }
    if (db) s2s_colsum(db, dy, rows, n);
    return S2S_OK;
}
