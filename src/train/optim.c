// Adam/AdamW, gradient clipping and learning-rate schedules.
#include "train/optim.h"

#include <math.h>

static const double pi = 3.14159265358979323846;

// Compiled with -fno-math-errno (CMakeLists.txt), so that the loop vectorises.
void s2s_adam_step(float *p, float *m, float *v, const float *g, size_t n, double lr,
                   const s2s_adam_params *a, int64_t t) {
    const float b1 = a->beta1, b2 = a->beta2, eps = a->eps;
    // Scalars in double, as torch computes them on the host.
    const double bc1 = 1.0 - pow((double)b1, (double)t);
    const double bc2 = 1.0 - pow((double)b2, (double)t);
    const float step_size = (float)(lr / bc1);
    const float bc2_sqrt = (float)sqrt(bc2);
    const float decay = (float)(1.0 - lr * (double)a->weight_decay);
    const int decoupled = a->weight_decay > 0;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        float pw = decoupled ? p[i] * decay : p[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] = pw - step_size * (mi / (sqrtf(vi) / bc2_sqrt + eps));
    }
}

double s2s_grad_norm(const float *g, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)g[i] * (double)g[i];
    return sqrt(s);
}

double s2s_clip_grad_norm(float *g, size_t n, double clip) {
    double norm = s2s_grad_norm(g, n);
    if (clip > 0 && norm > clip) {
        float scale = (float)(clip / (norm + 1e-6));
        for (size_t i = 0; i < n; i++) g[i] *= scale;
    }
    return norm;
}

double s2s_lr_at(s2s_schedule kind, double lr, int64_t t, int warmup, int d_model,
                 int64_t max_steps) {
    double T = (double)(t < 1 ? 1 : t);
    double w = warmup;
    switch (kind) {
    case S2S_SCHEDULE_NOAM: {
        if (w < 1) w = 1;
        double a = 1.0 / sqrt(T), b = T * pow(w, -1.5);
        return lr / sqrt((double)d_model) * (a < b ? a : b);
    }
    case S2S_SCHEDULE_INVERSE_SQRT:
        if (w < 1) w = 1;
        return T < w ? lr * T / w : lr * sqrt(w / T);
    case S2S_SCHEDULE_COSINE: {
        if (T < w) return lr * T / w;
        double span = (double)max_steps - w;
        if (span <= 0) return lr;
        double x = (T - w) / span;
        if (x > 1) x = 1;
        return lr * 0.5 * (1.0 + cos(pi * x));
    }
    case S2S_SCHEDULE_CONSTANT:
    default: return lr;
    }
}
