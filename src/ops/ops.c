// Element-wise kernels: softmax, LayerNorm, embeddings, positions.
#include "ops/ops.h"

#include <math.h>
#include <stddef.h>

void s2s_softmax_row(float *x, int64_t valid, int64_t n) {
    float mx = x[0];
    for (int64_t j = 1; j < valid; j++) mx = x[j] > mx ? x[j] : mx;
    float sum = 0.0f;
    for (int64_t j = 0; j < valid; j++) {
        x[j] = expf(x[j] - mx);  // largest term is exp(0): never overflows
        sum += x[j];
    }
    float inv = 1.0f / sum;
    for (int64_t j = 0; j < valid; j++) x[j] *= inv;
    for (int64_t j = valid; j < n; j++) x[j] = 0.0f;
}

void s2s_layernorm_fwd(float *y, float *xhat, float *rstd, const float *x, const float *w,
                       const float *b, int64_t rows, int64_t d, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        float mean = 0.0f;
        for (int64_t i = 0; i < d; i++) mean += xr[i];
        mean /= (float)d;
        float var = 0.0f;
        for (int64_t i = 0; i < d; i++) {
            float t = xr[i] - mean;
            var += t * t;
        }
        var /= (float)d;
        float rs = 1.0f / sqrtf(var + eps);
        if (!xhat) {
            for (int64_t i = 0; i < d; i++) yr[i] = (xr[i] - mean) * rs * w[i] + b[i];
            continue;
        }
        // the same float operations, keeping what the backward pass needs
        float *hr = xhat + r * d;
        rstd[r] = rs;
        for (int64_t i = 0; i < d; i++) {
            hr[i] = (xr[i] - mean) * rs;
            yr[i] = hr[i] * w[i] + b[i];
        }
    }
}

void s2s_layernorm(float *y, const float *x, const float *w, const float *b,
                   int64_t rows, int64_t d, float eps) {
    s2s_layernorm_fwd(y, NULL, NULL, x, w, b, rows, d, eps);
}

void s2s_add(float *y, const float *x, const float *r, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] + r[i];
}

void s2s_positional_table(float *out, int64_t positions, int64_t d) {
    for (int64_t p = 0; p < positions; p++) {
        for (int64_t i = 0; i < d / 2; i++) {
            // double: positions up to max_len keep full float accuracy
            double angle = (double)p / pow(10000.0, (double)(2 * i) / (double)d);
            out[p * d + 2 * i] = (float)sin(angle);
            out[p * d + 2 * i + 1] = (float)cos(angle);
        }
    }
}

void s2s_embed_row(float *y, const float *emb, int id, float scale, const float *pe, int64_t d) {
    const float *e = emb + (int64_t)id * d;
    for (int64_t i = 0; i < d; i++) y[i] = e[i] * scale + pe[i];
}

void s2s_log_softmax_row(float *x, int64_t n) {
    float mx = x[0];
    for (int64_t j = 1; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    float sum = 0.0f;
    for (int64_t j = 0; j < n; j++) sum += expf(x[j] - mx);
    float lse = mx + logf(sum);
    for (int64_t j = 0; j < n; j++) x[j] -= lse;
}
