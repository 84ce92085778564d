// Reference loops for the tests (see reference.h).
#include "reference.h"

#include <math.h>

void ref_mm(float *c, const float *a, const float *b, const s2s_mm_args *p) {
    for (int64_t i0 = 0; i0 < p->b0; i0++)
        for (int64_t i1 = 0; i1 < p->b1; i1++)
            for (int64_t m = 0; m < p->m; m++)
                for (int64_t n = 0; n < p->n; n++) {
                    double acc = 0.0;
                    for (int64_t k = 0; k < p->k; k++)
                        acc += (double)a[i0 * p->sa[0] + i1 * p->sa[1] + m * p->sa[2] +
                                         k * p->sa[3]] *
                               (double)b[i0 * p->sb[0] + i1 * p->sb[1] + k * p->sb[2] +
                                         n * p->sb[3]];
                    acc *= p->alpha;
                    if (p->bias) acc += p->bias[n];
                    float *out = &c[i0 * p->sc[0] + i1 * p->sc[1] + m * p->sc[2] + n * p->sc[3]];
                    if (p->accumulate) acc += *out;
                    if (p->act == S2S_MM_RELU) acc = acc > 0 ? acc : 0;
                    if (p->act == S2S_MM_GELU) acc = 0.5 * acc * (1.0 + erf(acc / sqrt(2.0)));
                    *out = (float)acc;
                }
}

void ref_softmax(float *y, const float *x, int64_t n) {
    double mx = x[0], sum = 0;
    for (int64_t i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    for (int64_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);
    for (int64_t i = 0; i < n; i++) y[i] = (float)(exp((double)x[i] - mx) / sum);
}

void ref_layernorm(float *y, const float *x, const float *w, const float *b, int64_t d,
                   float eps) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < d; i++) mean += x[i];
    mean /= (double)d;
    for (int64_t i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
    var /= (double)d;
    for (int64_t i = 0; i < d; i++) y[i] = (float)((x[i] - mean) / sqrt(var + eps) * w[i] + b[i]);
}

void ref_layernorm_rows(double *y, const double *x, const double *w, const double *b, int rows,
                        int d, double eps) {
    for (int r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int i = 0; i < d; i++) mean += x[r * d + i];
        mean /= d;
        for (int i = 0; i < d; i++) var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
        var /= d;
        for (int i = 0; i < d; i++)
            y[r * d + i] = (x[r * d + i] - mean) / sqrt(var + eps) * w[i] + b[i];
    }
}

static double ref_phi(double x) { return x > 0 ? x + 1 : exp(x); }

void ref_attention(float *ctx, float *probs, const float *q, int64_t ldq, const float *k,
                   const float *v, int64_t ldk, int64_t H, int64_t dh, int64_t tq, int64_t tk,
                   const s2s_attn_mask *mask, int64_t b) {
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < tq; i++) {
            bool linear = s2s_pattern_head(&mask->pattern, h) == S2S_ATTN_LINEAR;
            double s[4096], mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j < tk; j++) {
                bool visible = s2s_attn_mask_sees(mask, tk, b, h, i, j);
                double dot = 0;
                for (int64_t c = 0; c < dh; c++) {
                    double qc = q[i * ldq + h * dh + c], kc = k[j * ldk + h * dh + c];
                    dot += linear ? ref_phi(qc) * ref_phi(kc) : qc * kc;
                }
                s[j] = !visible ? -INFINITY : linear ? dot : dot / sqrt((double)dh);
                if (s[j] > mx) mx = s[j];
            }
            for (int64_t j = 0; j < tk; j++)
                sum += s[j] == -INFINITY ? 0 : linear ? s[j] : exp(s[j] - mx);
            float *p = probs + (h * tq + i) * tk;
            for (int64_t j = 0; j < tk; j++)
                p[j] = s[j] == -INFINITY ? 0.0f
                       : linear          ? (float)(s[j] / (sum + 1e-6))
                                         : (float)(exp(s[j] - mx) / sum);
            for (int64_t c = 0; c < dh; c++) {
                double acc = 0;
                for (int64_t j = 0; j < tk; j++) acc += (double)p[j] * v[j * ldk + h * dh + c];
                ctx[i * H * dh + h * dh + c] = (float)acc;
            }
        }
}

void ref_linear(double *y, const double *x, const float *w, const float *b, int rows, int in,
                int out) {
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double acc = b[o];
            for (int i = 0; i < in; i++) acc += x[r * in + i] * (double)w[o * in + i];
            y[r * out + o] = acc;
        }
}

void ref_fill(float *x, int64_t n, uint64_t seed, float scale) {
    uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = scale * (2.0f * (float)((s >> 40) & 0xffffff) / 16777216.0f - 1.0f);
    }
}

float ref_max_diff(const float *a, const float *b, int64_t n) {
    float mx = 0;
    for (int64_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (d > mx || d != d) mx = d != d ? INFINITY : d;
    }
    return mx;
}
