// Tests for src/train (graph.c, backward_ops.c) and the training side of
// src/layers/attention.c and src/ops: the training forward pass,
// the label-smoothed loss and every gradient.
//
// Gradients are checked against central differences of an independent
// double-precision implementation of the architecture written here from
// the pinned definitions (issue 2) and PyTorch's CrossEntropyLoss with
// label smoothing: perturbing one float parameter by h = 1e-4 and reading
// the loss in double leaves only the O(h^2) truncation error, so the
// analytic float gradient must agree to about 1e-4 of the gradient scale.
// Each kernel is checked alone (LayerNorm, activations, softmax, attention
// with both masks and with dropout, FFN, embeddings), then whole tiny
// models (pre/post norm, relu/gelu, tied/untied, label smoothing 0 and
// 0.1) on a padded batch of three sentences of different lengths, also
// with the guided alignment loss on one cross-attention head and the
// guided coreference loss on one encoder self-attention head.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoding/state.h"
#include "model/model_internal.h"
#include "ops/matmul.h"
#include "ops/ops.h"
#include "reference.h"
#include "s2s/s2s.h"
#include "layers/attention.h"
#include "train/attention_chunked.h"
#include "train/backward_ops.h"
#include "train/graph.h"

// ---- helpers ----

// The guided heads' roles, as indices of s2s_batch.guide, s2s_loss_stats
// and s2s_train_opts: alignment, coreference.
enum { AL = S2S_HEAD_ALIGN, CO = S2S_HEAD_COREF };
// s2s_train_opts.guided entries: guided alignment on head h of decoder
// layer l, guided coreference on head h of encoder layer l, weight w.
#define ALIGN_HEAD(l, h, w) [S2S_HEAD_ALIGN] = {S2S_ATTN_MAP_CROSS, (l), (h), (w)}
#define COREF_HEAD(l, h, w) [S2S_HEAD_COREF] = {S2S_ATTN_MAP_ENC, (l), (h), (w)}

// One thread: the determinism the graph promises is per thread count, and
// on a loaded machine OpenMP's fork/join costs far more than these tiny
// products.
static void one_thread(void) { s2s_set_num_threads(1); }
TestSuite(graph, .init = one_thread);

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {  // xorshift64
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static double rnd_sym(void) { return (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }

static void fill(float *x, int64_t n, double scale) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(scale * rnd_sym());
}

static double dot_fd(const double *a, const float *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += a[i] * (double)b[i];
    return s;
}

// Agreement of an analytic gradient with a finite difference: within
// rtol of the value or atol of the scale of that gradient.
#define ASSERT_GRAD(an, fd, scale, rtol, atol, ...)                               \
    cr_assert(fabs((double)(an) - (fd)) <= (rtol) * fabs(fd) + (atol) * (scale),   \
              "analytic %.8g vs numeric %.8g (scale %.3g): " __VA_ARGS__, (double)(an), \
              (double)(fd), (double)(scale))

// ---- LayerNorm, activations, softmax, dropout, embeddings ----

Test(graph, layernorm_backward_matches_finite_differences) {
    enum { R = 5, D = 7 };
    float x[R * D], w[D], b[D], dy[R * D], y[R * D], y_inf[R * D], xhat[R * D], rstd[R];
    fill(x, R * D, 2.0);
    fill(w, D, 1.0);
    fill(b, D, 1.0);
    fill(dy, R * D, 1.0);
    float eps = 1e-5f;
    s2s_layernorm_fwd(y, xhat, rstd, x, w, b, R, D, eps);
    s2s_layernorm(y_inf, x, w, b, R, D, eps);
    cr_assert(memcmp(y, y_inf, sizeof y) == 0, "training LayerNorm differs from inference");

    float dx[R * D], dw[D] = {0}, db[D] = {0};
    s2s_layernorm_backward(dx, dw, db, dy, xhat, rstd, w, R, D, false);

    // loss = sum(dy * LN(x)) in double; perturb x, w, b
    double X[R * D], W[D], B[D], Y[R * D], h = 1e-5;
    for (int i = 0; i < R * D; i++) X[i] = x[i];
    for (int i = 0; i < D; i++) W[i] = w[i], B[i] = b[i];
    double *params[3] = {X, W, B};
    float *grads[3] = {dx, dw, db};
    int sizes[3] = {R * D, D, D};
    for (int t = 0; t < 3; t++) {
        for (int i = 0; i < sizes[t]; i++) {
            double keep = params[t][i];
            params[t][i] = keep + h;
            ref_layernorm_rows(Y, X, W, B, R, D, eps);
            double lp = dot_fd(Y, dy, R * D);
            params[t][i] = keep - h;
            ref_layernorm_rows(Y, X, W, B, R, D, eps);
            double lm = dot_fd(Y, dy, R * D);
            params[t][i] = keep;
            ASSERT_GRAD(grads[t][i], (lp - lm) / (2 * h), 1.0, 1e-4, 1e-5, "tensor %d [%d]", t, i);
        }
    }

    // accumulate adds to what is there, in place (dx aliasing dy) overwrites
    float acc[R * D], inplace[R * D], dw2[D] = {0}, db2[D] = {0};
    for (int i = 0; i < R * D; i++) acc[i] = 1.0f, inplace[i] = dy[i];
    s2s_layernorm_backward(acc, dw2, db2, dy, xhat, rstd, w, R, D, true);
    for (int i = 0; i < R * D; i++) cr_assert_float_eq(acc[i], 1.0f + dx[i], 1e-6);
    for (int i = 0; i < D; i++) cr_assert_eq(dw2[i], dw[i]);
    s2s_layernorm_backward(inplace, dw2, db2, inplace, xhat, rstd, w, R, D, false);
    cr_assert(memcmp(inplace, dx, sizeof dx) == 0);
    for (int i = 0; i < D; i++) cr_assert_float_eq(dw2[i], 2 * dw[i], 1e-5, "dw accumulates");
}

static double gelu_d(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

Test(graph, activation_backward_matches_derivatives) {
    enum { N = 41 };
    float x[N], y[N], dy[N], dx[N];
    for (int i = 0; i < N; i++) x[i] = -4.0f + 0.2f * (float)i + 0.013f;  // never exactly 0
    fill(dy, N, 1.0);
    s2s_gelu(y, x, N);
    s2s_gelu_backward(dx, dy, x, N);
    for (int i = 0; i < N; i++) {
        cr_assert_float_eq(y[i], gelu_d(x[i]), 1e-6, "gelu(%g)", (double)x[i]);
        double h = 1e-5, fd = (gelu_d(x[i] + h) - gelu_d(x[i] - h)) / (2 * h);
        ASSERT_GRAD(dx[i], dy[i] * fd, 1.0, 1e-5, 1e-6, "gelu' at %g", (double)x[i]);
    }
    s2s_relu(y, x, N);
    s2s_relu_backward(dx, dy, x, N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(y[i], x[i] > 0 ? x[i] : 0.0f);
        cr_assert_eq(dx[i], x[i] > 0 ? dy[i] : 0.0f);
    }
    // in place, as graph.c uses it
    memcpy(dx, dy, sizeof dx);
    s2s_gelu_backward(dx, dx, x, N);
    float want[N];
    s2s_gelu_backward(want, dy, x, N);
    cr_assert(memcmp(dx, want, sizeof dx) == 0);
}

Test(graph, masked_softmax_backward_matches_finite_differences) {
    enum { N = 9, VALID = 6 };
    float x[N], y[N], dy[N], dx[N];
    fill(x, N, 3.0);
    fill(dy, N, 1.0);
    memcpy(y, x, sizeof y);
    s2s_softmax_row(y, 0, VALID, N);
    s2s_softmax_backward_row(dx, dy, y, 0, VALID, N);
    for (int i = 0; i < N; i++) {
        if (i >= VALID) {
            cr_assert_eq(dx[i], 0.0f, "masked key %d gets a gradient", i);
            continue;
        }
        double lp = 0, lm = 0, h = 1e-6;
        for (int s = 0; s < 2; s++) {
            double z[N], mx = -1e300, sum = 0, l = 0;
            for (int j = 0; j < VALID; j++) z[j] = x[j] + (j == i ? (s ? -h : h) : 0);
            for (int j = 0; j < VALID; j++) mx = z[j] > mx ? z[j] : mx;
            for (int j = 0; j < VALID; j++) sum += exp(z[j] - mx);
            for (int j = 0; j < VALID; j++) l += dy[j] * exp(z[j] - mx) / sum;
            *(s ? &lm : &lp) = l;
        }
        ASSERT_GRAD(dx[i], (lp - lm) / (2 * h), 1.0, 1e-4, 1e-6, "key %d", i);
    }
}

Test(graph, dropout_keeps_one_minus_p_scaled_and_is_reproducible) {
    enum { N = 20000 };
    float *x = malloc(sizeof(float) * N), *x2 = malloc(sizeof(float) * N);
    uint8_t *keep = malloc(N), *keep2 = malloc(N);
    for (int i = 0; i < N; i++) x[i] = x2[i] = 1.0f + (float)(i % 7);
    s2s_rng r1, r2;
    s2s_rng_seed(&r1, 5);
    s2s_rng_seed(&r2, 5);
    float p = 0.25f;
    s2s_dropout(x, keep, N, p, &r1);
    s2s_dropout(x2, keep2, N, p, &r2);
    cr_assert(memcmp(x, x2, sizeof(float) * N) == 0 && memcmp(keep, keep2, N) == 0);
    int kept = 0;
    for (int i = 0; i < N; i++) {
        float orig = 1.0f + (float)(i % 7);
        kept += keep[i];
        cr_assert_float_eq(x[i], keep[i] ? orig / (1 - p) : 0.0f, 1e-5);
    }
    // 3 standard deviations of a binomial(20000, 0.75)
    cr_assert(fabs(kept - 0.75 * N) < 3 * sqrt(N * 0.75 * 0.25), "kept %d of %d", kept, N);
    float *dx = malloc(sizeof(float) * N);
    s2s_dropout_backward(dx, x2, keep, N, p);  // the same mask and scale
    for (int i = 0; i < N; i++) cr_assert_float_eq(dx[i], keep[i] ? x2[i] / (1 - p) : 0.0f, 1e-5);
    // p = 0 changes nothing and draws nothing
    s2s_rng before = r1;
    memcpy(x2, x, sizeof(float) * N);
    s2s_dropout(x, NULL, N, 0.0f, &r1);
    cr_assert(memcmp(x, x2, sizeof(float) * N) == 0 && memcmp(&before, &r1, sizeof r1) == 0);
    free(x), free(x2), free(keep), free(keep2), free(dx);
}

// s2s_dropout compares in integers: its masks and values are the plain
// loop's over s2s_dropout_keeps (uniform >= p in double) for one draw of
// the generator, the key.
Test(graph, dropout_masks_are_the_plain_loops) {
    enum { N = 4099 };
    const float ps[] = {0.1f, 0.25f, 0.5f, 0.3f, 1e-7f, 0.999f};
    float *x = malloc(sizeof(float) * N), *want = malloc(sizeof(float) * N);
    uint8_t *keep = malloc(N), *want_keep = malloc(N);
    for (size_t c = 0; c < sizeof ps / sizeof *ps; c++) {
        float p = ps[c], scale = 1.0f / (1.0f - p);
        s2s_rng r, ref;
        s2s_rng_seed(&r, 11 + c);
        ref = r;
        for (int i = 0; i < N; i++) x[i] = want[i] = (float)(i % 13) - 6.5f;
        s2s_dropout(x, keep, N, p, &r);
        uint64_t key = s2s_rng_next(&ref);
        for (int i = 0; i < N; i++) {
            want_keep[i] = s2s_dropout_keeps(key, (uint64_t)i, p);
            want[i] = want_keep[i] ? want[i] * scale : 0.0f;
        }
        cr_assert(memcmp(keep, want_keep, N) == 0, "p %g", (double)p);
        cr_assert(memcmp(x, want, sizeof(float) * N) == 0, "p %g", (double)p);
        cr_assert(memcmp(&r, &ref, sizeof r) == 0, "p %g", (double)p);
    }
    free(x), free(want), free(keep), free(want_keep);
}

Test(graph, embedding_backward_scatters_with_the_scale) {
    enum { V = 6, D = 4, R = 5 };
    int ids[R] = {2, 0, 2, 5, 2};  // repeated ids accumulate; pad (0) like any id
    float dx[R * D], demb[V * D], want[V * D];
    fill(dx, R * D, 1.0);
    fill(demb, V * D, 1.0);
    memcpy(want, demb, sizeof want);
    float scale = 2.0f;
    for (int r = 0; r < R; r++)
        for (int i = 0; i < D; i++) want[ids[r] * D + i] += scale * dx[r * D + i];
    s2s_embedding_backward(demb, dx, ids, R, D, scale);
    cr_assert_lt(ref_max_diff(demb, want, V * D), 1e-6f);
}

// ---- attention ----

// ctx (Tq, H*Dh) of sentence b in double, its queries seeing the keys
// mask says (s2s_attn_mask_sees, the definition); a linear head weighs
// them by phi(q).phi(k) / (sum + 1e-6) with phi = elu + 1 taken here.
// keep (H, Tq, Tk) and scale apply attention dropout when keep is not
// NULL. probs_out (H, Tq, Tk), when not NULL, gets the weights before
// dropout (0 where masked).
static double r_phi(double x) { return x > 0 ? x + 1 : exp(x); }

static void r_attend(double *ctx, const double *q, int ldq, const double *k, const double *v,
                     int ldk, int tq, int tk, int H, int dh, const s2s_attn_mask *mask, int b,
                     const uint8_t *keep, double scale, double *probs_out) {
    double *p = malloc(sizeof(double) * (size_t)tk);
    for (int h = 0; h < H; h++) {
        bool linear = s2s_pattern_head(&mask->pattern, h) == S2S_ATTN_LINEAR;
        for (int i = 0; i < tq; i++) {
            double mx = -1e300, sum = 0;
            for (int j = 0; j < tk; j++) {
                if (!s2s_attn_mask_sees(mask, tk, b, h, i, j)) {
                    p[j] = NAN;
                    continue;
                }
                double s = 0;
                for (int c = 0; c < dh; c++) {
                    double qc = q[i * ldq + h * dh + c], kc = k[j * ldk + h * dh + c];
                    s += linear ? r_phi(qc) * r_phi(kc) : qc * kc;
                }
                p[j] = linear ? s : s / sqrt((double)dh);
                mx = p[j] > mx ? p[j] : mx;
            }
            for (int j = 0; j < tk; j++)
                if (p[j] == p[j]) sum += linear ? p[j] : (p[j] = exp(p[j] - mx));
            if (linear) sum += 1e-6;
            for (int j = 0; j < tk; j++) p[j] = p[j] == p[j] ? p[j] / sum : 0.0;
            for (int j = 0; j < tk && probs_out; j++) probs_out[(h * tq + i) * tk + j] = p[j];
            for (int j = 0; j < tk && keep; j++) p[j] *= keep[(h * tq + i) * tk + j] ? scale : 0.0;
            for (int c = 0; c < dh; c++) {
                double acc = 0;
                for (int j = 0; j < tk; j++) acc += p[j] * v[j * ldk + h * dh + c];
                ctx[i * H * dh + h * dh + c] = acc;
            }
        }
    }
    free(p);
}

typedef struct attn_case {
    int B, H, dh, tq, tk;
    int klen[2];
    int pos0;     // -1: no causal mask
    float p;      // attention dropout
    s2s_attn_type kind;  // of the heads in `heads`
    int span;
    unsigned heads;
} attn_case;

ParameterizedTestParameters(graph, attention_backward_matches_finite_differences) {
    static attn_case cases[] = {
        {2, 2, 3, 4, 5, {5, 3}, -1, 0.0f, S2S_ATTN_FULL, 0, 0},  // cross-attention: key padding
        {2, 2, 3, 5, 5, {5, 2}, 0, 0.0f, S2S_ATTN_FULL, 0, 0},   // both masks at once
        {1, 3, 2, 4, 4, {4, 0}, 0, 0.0f, S2S_ATTN_FULL, 0, 0},   // causal only, three heads
        {2, 2, 3, 4, 5, {4, 5}, 0, 0.3f, S2S_ATTN_FULL, 0, 0},   // with attention dropout
        // the variants: local on one head of two, block, strided with
        // padding, linear alone, beside a softmax head and with dropout
        {2, 2, 3, 6, 6, {6, 4}, -1, 0.0f, S2S_ATTN_LOCAL, 1, 0x2},
        {2, 2, 3, 6, 6, {6, 5}, 0, 0.0f, S2S_ATTN_LOCAL, 2, 0x3},
        {1, 2, 3, 7, 7, {7, 0}, -1, 0.0f, S2S_ATTN_BLOCK, 3, 0x3},
        {2, 2, 3, 7, 7, {7, 5}, 0, 0.0f, S2S_ATTN_STRIDED, 3, 0x3},
        {2, 2, 3, 4, 5, {5, 3}, -1, 0.0f, S2S_ATTN_LINEAR, 0, 0x3},
        {2, 2, 3, 5, 5, {5, 2}, 0, 0.0f, S2S_ATTN_LINEAR, 0, 0x1},
        {2, 2, 3, 4, 5, {4, 5}, 0, 0.3f, S2S_ATTN_LINEAR, 0, 0x2},
    };
    return cr_make_param_array(attn_case, cases, sizeof cases / sizeof cases[0]);
}

// q, k, v as column blocks of one (B*T, 3D) buffer when Tq = Tk (self-
// attention) and as separate buffers otherwise (cross); loss = sum(r * ctx).
ParameterizedTest(attn_case *c, graph, attention_backward_matches_finite_differences) {
    int B = c->B, H = c->H, dh = c->dh, tq = c->tq, tk = c->tk, d = H * dh;
    bool fused = tq == tk;
    int ldq = fused ? 3 * d : d, ldk = fused ? 3 * d : 2 * d;
    int nq = B * tq * ldq, nk = fused ? 0 : B * tk * ldk;
    float *qb = malloc(sizeof(float) * (size_t)nq), *kb = nk ? malloc(sizeof(float) * (size_t)nk) : NULL;
    fill(qb, nq, 1.5);
    if (kb) fill(kb, nk, 1.5);
    int klen[2] = {c->klen[0], c->klen[1]};
    s2s_attn_shape sh = {
        .batch = B, .heads = H, .head_dim = dh, .tq = tq, .tk = tk,
        .mask = {.pattern = {.kind = c->kind, .span = c->span, .heads = c->heads,
                             .causal = c->pos0 >= 0},
                 .k_len = c->klen[1] ? klen : NULL, .q_pos0 = c->pos0 >= 0 ? c->pos0 : 0},
    };
    // the kernels take the queries and keys through the features (linear
    // heads'), the reference takes them as projected: qf, kf
    float *qf = malloc(sizeof(float) * (size_t)nq), *kf = nk ? malloc(sizeof(float) * (size_t)nk) : NULL;
    memcpy(qf, qb, sizeof(float) * (size_t)nq);
    if (kf) memcpy(kf, kb, sizeof(float) * (size_t)nk);
    const float *kfbase = fused ? qf + d : kf;
    s2s_attention_features((s2s_rows){.p = qf, .bs = tq * ldq, .rs = ldq}, B, tq,
                           &sh.mask.pattern, H, dh, true);
    s2s_attention_features((s2s_rows){.p = (float *)kfbase, .bs = tk * ldk, .rs = ldk}, B, tk,
                           &sh.mask.pattern, H, dh, false);
    s2s_view q = {.p = qf, .bs = tq * ldq, .rs = ldq}, k = {.p = kfbase, .bs = tk * ldk, .rs = ldk},
             v = {.p = kfbase + d, .bs = tk * ldk, .rs = ldk};
    float *norms = malloc(sizeof(float) * B * H * tq);
    sh.norms = norms;
    int64_t np = (int64_t)B * H * tq * tk;
    float *ctx = malloc(sizeof(float) * B * tq * d), *probs = malloc(sizeof(float) * np);
    float *pdrop = malloc(sizeof(float) * np), *dprobs = malloc(sizeof(float) * np);
    uint8_t *keep = malloc((size_t)np);
    s2s_rng rng;
    s2s_rng_seed(&rng, 77);
    cr_assert_eq(s2s_attention_train(ctx, probs, c->p > 0 ? pdrop : probs, keep, q, k, v, &sh,
                                     c->p, &rng), S2S_OK);
    if (c->p == 0) {  // the same as the inference kernel
        float *ctx2 = malloc(sizeof(float) * B * tq * d), *probs2 = malloc(sizeof(float) * np);
        cr_assert_eq(s2s_attention(ctx2, probs2, q, k, v, &sh), S2S_OK);
        cr_assert(memcmp(ctx, ctx2, sizeof(float) * B * tq * d) == 0);
        free(ctx2), free(probs2);
    }
    float *r = malloc(sizeof(float) * B * tq * d);
    fill(r, B * tq * d, 1.0);
    // A second loss term reading the last head's weights before dropout
    // directly, as guided alignment does: sum of rh * probs[:, H-1].
    float *rh = malloc(sizeof(float) * B * tq * tk);
    fill(rh, B * tq * tk, 1.0);
    double *ph = malloc(sizeof(double) * H * tq * tk);
    for (int with_head = 0; with_head < 2; with_head++) {
        float *dqb = calloc((size_t)nq, sizeof(float)), *dkb = nk ? calloc((size_t)nk, sizeof(float)) : NULL;
        float *dkbase = fused ? dqb + d : dkb;
        s2s_rows dq = {.p = dqb, .bs = tq * ldq, .rs = ldq},
                 dk = {.p = dkbase, .bs = tk * ldk, .rs = ldk},
                 dv = {.p = dkbase + d, .bs = tk * ldk, .rs = ldk};
        s2s_attn_saved f = {.q = q, .k = k, .v = v, .probs = probs, .pdrop = pdrop, .keep = keep,
                            .p = c->p, .norms = norms};
        cr_assert_eq(s2s_attention_backward(dq, dk, dv, dprobs, r, &f, &sh, with_head ? rh : NULL,
                                            H - 1), S2S_OK);
        s2s_attention_features_backward(dq, q, B, tq, &sh.mask.pattern, H, dh, true);
        s2s_attention_features_backward(dk, k, B, tk, &sh.mask.pattern, H, dh, false);

        // loss in double over every sentence
        double *Q = malloc(sizeof(double) * (size_t)nq), *K = nk ? malloc(sizeof(double) * (size_t)nk) : NULL;
        double *out = malloc(sizeof(double) * tq * d);
        for (int i = 0; i < nq; i++) Q[i] = qb[i];
        for (int i = 0; i < nk; i++) K[i] = kb[i];
        double scale = c->p > 0 ? 1.0 / (1.0 - (double)c->p) : 1.0;
    #define ATT_LOSS(res)                                                                   \
        do {                                                                                \
            res = 0;                                                                        \
            for (int b = 0; b < B; b++) {                                                   \
                const double *kk = fused ? Q + b * tq * ldq + d : K + b * tk * ldk;         \
                r_attend(out, Q + b * tq * ldq, ldq, kk, kk + d, ldk, tq, tk, H, dh, &sh.mask, \
                         b, c->p > 0 ? keep + (int64_t)b * H * tq * tk : NULL, scale, ph);  \
                res += dot_fd(out, r + b * tq * d, tq * d);                                 \
                if (with_head)                                                              \
                    res += dot_fd(ph + (H - 1) * tq * tk, rh + b * tq * tk, tq * tk);       \
            }                                                                               \
        } while (0)
        double h = 1e-5;
        double *bufs[2] = {Q, K};
        float *grads[2] = {dqb, dkb};
        int sizes[2] = {nq, nk};
        int checked = 0;
        for (int t = 0; t < 2; t++)
            for (int i = 0; i < sizes[t]; i++) {
                double keepv = bufs[t][i], lp, lm;
                bufs[t][i] = keepv + h;
                ATT_LOSS(lp);
                bufs[t][i] = keepv - h;
                ATT_LOSS(lm);
                bufs[t][i] = keepv;
                ASSERT_GRAD(grads[t][i], (lp - lm) / (2 * h), 1.0, 1e-3, 2e-5, "buffer %d [%d]", t, i);
                checked++;
            }
        cr_assert_eq(checked, nq + nk);
    #undef ATT_LOSS
        free(dqb), free(dkb), free(Q), free(K), free(out);
    }
    free(qb), free(kb), free(qf), free(kf), free(norms), free(ctx), free(probs), free(pdrop);
    free(dprobs), free(keep), free(r), free(rh), free(ph);
}

// ---- FFN through s2s_linear_backward ----

typedef struct ffn_case {
    int act;  // s2s_activation
} ffn_case;

ParameterizedTestParameters(graph, ffn_backward_matches_finite_differences) {
    static ffn_case cases[] = {{S2S_ACT_RELU}, {S2S_ACT_GELU}};
    return cr_make_param_array(ffn_case, cases, 2);
}

static void r_ffn_rows(double *y, const double *x, const double *w1, const double *b1,
                       const double *w2, const double *b2, int R, int d, int f, bool gelu) {
    double *a = malloc(sizeof(double) * (size_t)f);
    for (int r = 0; r < R; r++) {
        for (int j = 0; j < f; j++) {
            double s = b1[j];
            for (int i = 0; i < d; i++) s += x[r * d + i] * w1[j * d + i];
            a[j] = gelu ? gelu_d(s) : (s > 0 ? s : 0);
        }
        for (int i = 0; i < d; i++) {
            double s = b2[i];
            for (int j = 0; j < f; j++) s += a[j] * w2[i * f + j];
            y[r * d + i] = s;
        }
    }
    free(a);
}

// y = fc2(act(fc1(x))) forward on s2s_linear, backward on
// s2s_linear_backward (dW = dY^T X on the transposed-A product) and the
// activation kernels, as graph.c composes them; loss = sum(r * y).
ParameterizedTest(ffn_case *c, graph, ffn_backward_matches_finite_differences) {
    enum { R = 6, D = 5, F = 9 };
    bool gelu = c->act == S2S_ACT_GELU;
    float x[R * D], w1[F * D], b1[F], w2[D * F], b2[D], r[R * D];
    fill(x, R * D, 1.5), fill(w1, F * D, 0.8), fill(b1, F, 0.5), fill(w2, D * F, 0.8);
    fill(b2, D, 0.5), fill(r, R * D, 1.0);
    float a1[R * F], act[R * F];
    cr_assert_eq(s2s_linear(a1, x, w1, false, b1, R, D, F, S2S_MM_NONE, false), S2S_OK);
    if (gelu) s2s_gelu(act, a1, R * F);
    else s2s_relu(act, a1, R * F);
    float dx[R * D], dw1[F * D] = {0}, db1[F] = {0}, dw2[D * F] = {0}, db2[D] = {0}, dff[R * F];
    for (int i = 0; i < R * D; i++) dx[i] = 0.5f;  // accumulating into a residual gradient
    cr_assert_eq(s2s_linear_backward(dff, dw2, db2, r, act, w2, NULL, R, F, D, false), S2S_OK);
    if (gelu) s2s_gelu_backward(dff, dff, a1, R * F);
    else s2s_relu_backward(dff, dff, a1, R * F);
    cr_assert_eq(s2s_linear_backward(dx, dw1, db1, dff, x, w1, NULL, R, D, F, true), S2S_OK);

    double X[R * D], W1[F * D], B1[F], W2[D * F], B2[D], Y[R * D];
    for (int i = 0; i < R * D; i++) X[i] = x[i];
    for (int i = 0; i < F * D; i++) W1[i] = w1[i], W2[i] = w2[i];
    for (int i = 0; i < F; i++) B1[i] = b1[i];
    for (int i = 0; i < D; i++) B2[i] = b2[i];
    double *params[5] = {X, W1, B1, W2, B2};
    float *grads[5] = {dx, dw1, db1, dw2, db2};
    int sizes[5] = {R * D, F * D, F, D * F, D};
    double h = 1e-6;
    for (int t = 0; t < 5; t++)
        for (int i = 0; i < sizes[t]; i++) {
            double keep = params[t][i];
            params[t][i] = keep + h;
            r_ffn_rows(Y, X, W1, B1, W2, B2, R, D, F, gelu);
            double lp = dot_fd(Y, r, R * D);
            params[t][i] = keep - h;
            r_ffn_rows(Y, X, W1, B1, W2, B2, R, D, F, gelu);
            double lm = dot_fd(Y, r, R * D);
            params[t][i] = keep;
            double want = (lp - lm) / (2 * h) + (t == 0 ? 0.5 : 0.0);
            ASSERT_GRAD(grads[t][i], want, 1.0, 1e-4, 1e-5, "%s tensor %d [%d]",
                        gelu ? "gelu" : "relu", t, i);
        }
}

// ---- tiny models ----

static const char *const SRC_TOKENS[] = {"<pad>", "<unk>", "<s>", "</s>", "a", "b",
                                         "c", "d", "e", "f", "g", "h"};
static const char *const TGT_TOKENS[] = {"<pad>", "<unk>", "<s>", "</s>", "u", "v",
                                         "w", "x", "y", "z", "q"};
#define VS 12
#define VT 11
#define MAX_LEN 16

typedef struct arch {
    int d, heads, ffn, enc_layers, dec_layers;
    int norm, act;  // s2s_norm, s2s_activation
    int tie;
    float smoothing;
} arch;

static void write_lines(const char *path, const char *const *lines, int n) {
    FILE *f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    for (int i = 0; i < n; i++) fprintf(f, "%s\n", lines[i]);
    fclose(f);
}

// The attention variants of a model under test (model.*_attention).
typedef struct attn_tables {
    s2s_attention_config enc, dec, cross;
} attn_tables;

// A random model with vocabularies of 12 and 11 tokens and attentions t
// (NULL: full); every 1-D tensor is perturbed so a missing bias or norm
// weight cannot hide.
static s2s_model *make_model_with(const arch *a, uint64_t seed, const attn_tables *at) {
    char dir[] = "/tmp/s2s_test_graph_XXXXXX";
    cr_assert(mkdtemp(dir));
    char src[64], tgt[64];
    snprintf(src, sizeof src, "%s/src.txt", dir);
    snprintf(tgt, sizeof tgt, "%s/tgt.txt", dir);
    write_lines(src, SRC_TOKENS, VS);
    write_lines(tgt, TGT_TOKENS, VT);
    s2s_config c;
    s2s_config_default(&c);
    c.model.d_model = a->d;
    c.model.heads = a->heads;
    c.model.encoder_layers = a->enc_layers;
    c.model.decoder_layers = a->dec_layers;
    c.model.ffn_dim = a->ffn;
    c.model.activation = (s2s_activation)a->act;
    c.model.norm = (s2s_norm)a->norm;
    c.model.tie_output = a->tie;
    c.model.max_len = MAX_LEN;
    if (at) {
        c.model.encoder_attention = at->enc;
        c.model.decoder_attention = at->dec;
        c.model.cross_attention = at->cross;
    }
    snprintf(c.vocab.src, sizeof c.vocab.src, "%s", src);
    snprintf(c.vocab.tgt, sizeof c.vocab.tgt, "%s", tgt);
    s2s_model *m = NULL;
    s2s_status st = s2s_model_init(&m, &c, seed);
    unlink(src), unlink(tgt), rmdir(dir);
    cr_assert_eq(st, S2S_OK, "%s", s2s_last_error());
    for (int i = 0; i < s2s_model_tensor_count(m); i++) {
        s2s_tensor_info t = s2s_model_tensor(m, i);
        float *w = m->params + (t.data - m->params);
        if (t.ndim == 1)
            for (int64_t j = 0; j < t.shape[0]; j++) w[j] += (float)(0.3 * rnd_sym());
    }
    return m;
}

static s2s_model *make_model(const arch *a, uint64_t seed) { return make_model_with(a, seed, NULL); }

// Sentences as token ids without </s>.
typedef struct corpus {
    int n;
    const int *src[4], *tgt[4];
    int src_len[4], tgt_len[4];
    const int *links[4];  // gold alignment (source, target) pairs, for guided alignment
    int n_links[4];
    bool aligned;         // batches carry alignments
    const int *coref[4];  // gold (pronoun, antecedent) pairs on the source side, sorted
    int n_coref[4];
    bool corefd;          // batches carry coreference rows
} corpus;

static const int S0[] = {4, 5, 6, 7}, S1[] = {8}, S2[] = {9, 10, 11, 4, 5, 6};
static const int T0[] = {4, 5, 6}, T1[] = {7, 8, 9, 10, 4}, T2[] = {0};
// Three sentences of different lengths on both sides; the last target is
// empty (only </s> is predicted).
static const corpus THREE = {.n = 3, .src = {S0, S1, S2}, .tgt = {T0, T1, T2},
                             .src_len = {4, 1, 6}, .tgt_len = {3, 5, 0}};
// THREE with gold alignments: target 0 of sentence 0 has two links (0.5
// each), target 2 none; sentence 1's only source token links to targets 0
// and 3; sentence 2 has no links. Guided rows: 2 + 2.
static const int L0[] = {0, 0, 1, 0, 2, 1, 3, 1}, L1[] = {0, 0, 0, 3};
static const corpus THREE_ALIGNED = {.n = 3, .src = {S0, S1, S2}, .tgt = {T0, T1, T2},
                                     .src_len = {4, 1, 6}, .tgt_len = {3, 5, 0},
                                     .links = {L0, L1, NULL}, .n_links = {4, 2, 0},
                                     .aligned = true};
// THREE_ALIGNED with coreference: in sentence 0 pronoun 2 has antecedent
// 0 and pronoun 3 has two (0.5 each); sentence 1 has none; in sentence 2
// pronoun 4 has antecedent 1. Coreference rows: 2 + 0 + 1.
static const int C0[] = {2, 0, 3, 0, 3, 1}, C2[] = {4, 1};
static const corpus THREE_COREF = {.n = 3, .src = {S0, S1, S2}, .tgt = {T0, T1, T2},
                                   .src_len = {4, 1, 6}, .tgt_len = {3, 5, 0},
                                   .links = {L0, L1, NULL}, .n_links = {4, 2, 0},
                                   .aligned = true, .coref = {C0, NULL, C2},
                                   .n_coref = {3, 0, 1}, .corefd = true};

static void make_batch(s2s_batch *b, const corpus *c, int first, int n) {
    int S = 0, T = 0;
    for (int i = first; i < first + n; i++) {
        S = c->src_len[i] + 1 > S ? c->src_len[i] + 1 : S;
        T = c->tgt_len[i] + 1 > T ? c->tgt_len[i] + 1 : T;
    }
    *b = (s2s_batch){.n = n, .S = S, .T = T};
    b->src = calloc((size_t)(n * S), sizeof(int));
    b->tgt_in = calloc((size_t)(n * T), sizeof(int));
    b->tgt_out = calloc((size_t)(n * T), sizeof(int));
    b->src_len = calloc((size_t)n, sizeof(int));
    b->tgt_len = calloc((size_t)n, sizeof(int));
    for (int k = 0; k < n; k++) {
        int i = first + k, sl = c->src_len[i], tl = c->tgt_len[i];
        memcpy(b->src + k * S, c->src[i], sizeof(int) * (size_t)sl);
        b->src[k * S + sl] = S2S_EOS;
        b->tgt_in[k * T] = S2S_BOS;
        memcpy(b->tgt_in + k * T + 1, c->tgt[i], sizeof(int) * (size_t)tl);
        memcpy(b->tgt_out + k * T, c->tgt[i], sizeof(int) * (size_t)tl);
        b->tgt_out[k * T + tl] = S2S_EOS;
        b->src_len[k] = sl + 1;
        b->tgt_len[k] = tl + 1;
        b->n_tokens += tl + 1;
        b->src_tokens += sl;
    }
    if (c->corefd) {
        b->guide[CO] = calloc((size_t)(n * S * S), sizeof(float));
        for (int k = 0; k < n; k++) {
            const int *l = c->coref[first + k];
            for (int p = 0; p < S; p++) {
                int cnt = 0;
                for (int e = 0; e < c->n_coref[first + k]; e++) cnt += l[2 * e] == p;
                for (int e = 0; e < c->n_coref[first + k]; e++)
                    if (l[2 * e] == p)
                        b->guide[CO][(k * S + p) * S + l[2 * e + 1]] = 1.0f / (float)cnt;
                b->n_guided[CO] += cnt > 0;
            }
        }
    }
    if (!c->aligned) return;
    b->guide[AL] = calloc((size_t)(n * T * S), sizeof(float));
    for (int k = 0; k < n; k++) {
        const int *l = c->links[first + k];
        for (int j = 0; j < T; j++) {
            int cnt = 0;
            for (int e = 0; e < c->n_links[first + k]; e++) cnt += l[2 * e + 1] == j;
            for (int e = 0; e < c->n_links[first + k]; e++)
                if (l[2 * e + 1] == j) b->guide[AL][(k * T + j) * S + l[2 * e]] = 1.0f / (float)cnt;
            b->n_guided[AL] += cnt > 0;
        }
    }
}

static void free_batch(s2s_batch *b) {
    free(b->src), free(b->tgt_in), free(b->tgt_out), free(b->src_len), free(b->tgt_len);
    free(b->guide[AL]);
    free(b->guide[CO]);
}

// ---- the architecture in double, from the definitions ----

static const float *P(const s2s_model *m, const char *fmt, int i, const char *suffix) {
    char name[128], base[96];
    snprintf(base, sizeof base, fmt, i);
    snprintf(name, sizeof name, "%s%s", base, suffix);
    s2s_tensor_info t = s2s_model_find_tensor(m, name);
    cr_assert(t.data, "no tensor %s", name);
    return t.data;
}


static void r_ln(double *y, const double *x, const s2s_model *m, const char *fmt, int i, int R) {
    int d = m->cfg.model.d_model;
    const float *w = P(m, fmt, i, ".weight"), *b = P(m, fmt, i, ".bias");
    double *W = malloc(sizeof(double) * (size_t)d), *B = malloc(sizeof(double) * (size_t)d);
    for (int k = 0; k < d; k++) W[k] = w[k], B[k] = b[k];
    ref_layernorm_rows(y, x, W, B, R, d, m->cfg.model.layer_norm_eps);
    free(W), free(B);
}

// out (Tq, D) = MHA of xq over xkv, weights "<prefix>.{q,k,v,out}_proj";
// probs_out (H, Tq, Tk): the attention weights, when not NULL.
static void r_mha(double *out, const double *xq, int tq, const double *xkv, int tk,
                  const s2s_model *m, const char *prefix, int layer,
                  const s2s_attn_mask *mask, double *probs_out) {
    int d = m->cfg.model.d_model, H = m->cfg.model.heads;
    char fmt[96];
    snprintf(fmt, sizeof fmt, prefix, layer);
    // calloc: gcc cannot see that r_linear fills them and warns otherwise.
    double *q = calloc((size_t)(tq * d), sizeof(double)), *k = calloc((size_t)(tk * d), sizeof(double));
    double *v = calloc((size_t)(tk * d), sizeof(double)), *ctx = malloc(sizeof(double) * (size_t)(tq * d));
    ref_linear(q, xq, P(m, fmt, 0, ".q_proj.weight"), P(m, fmt, 0, ".q_proj.bias"), tq, d, d);
    ref_linear(k, xkv, P(m, fmt, 0, ".k_proj.weight"), P(m, fmt, 0, ".k_proj.bias"), tk, d, d);
    ref_linear(v, xkv, P(m, fmt, 0, ".v_proj.weight"), P(m, fmt, 0, ".v_proj.bias"), tk, d, d);
    r_attend(ctx, q, d, k, v, d, tq, tk, H, d / H, mask, 0, NULL, 1.0, probs_out);
    ref_linear(out, ctx, P(m, fmt, 0, ".out_proj.weight"), P(m, fmt, 0, ".out_proj.bias"), tq, d, d);
    free(q), free(k), free(v), free(ctx);
}

static void r_ffn(double *out, const double *x, int R, const s2s_model *m, const char *prefix,
                  int layer) {
    int d = m->cfg.model.d_model, f = m->cfg.model.ffn_dim;
    double *a = malloc(sizeof(double) * (size_t)(R * f));
    ref_linear(a, x, P(m, prefix, layer, ".ffn.fc1.weight"), P(m, prefix, layer, ".ffn.fc1.bias"), R,
             d, f);
    for (int i = 0; i < R * f; i++)
        a[i] = m->cfg.model.activation == S2S_ACT_GELU ? gelu_d(a[i]) : (a[i] > 0 ? a[i] : 0);
    ref_linear(out, a, P(m, prefix, layer, ".ffn.fc2.weight"), P(m, prefix, layer, ".ffn.fc2.bias"), R,
             f, d);
    free(a);
}

static void r_embed(double *x, const int *ids, int n, const float *table, int d) {
    for (int p = 0; p < n; p++)
        for (int i = 0; i < d; i += 2) {
            double angle = p / pow(10000.0, (double)i / d);
            x[p * d + i] = table[ids[p] * d + i] * sqrt((double)d) + sin(angle);
            x[p * d + i + 1] = table[ids[p] * d + i + 1] * sqrt((double)d) + cos(angle);
        }
}

// Residual sublayer: kind 0 self-attention (pos0 causal), 1 cross, 2 FFN.
// probs_out: an attention sublayer's weights (H, R, keys), when not NULL.
static void r_sub(double *x, int R, const double *mem, int S, const s2s_model *m,
                  const char *layer_fmt, int layer, int kind, int pos0, const char *norm,
                  double *probs_out) {
    int d = m->cfg.model.d_model;
    bool pre = m->cfg.model.norm == S2S_NORM_PRE;
    char nfmt[96], afmt[96];
    snprintf(nfmt, sizeof nfmt, "%s.%s", layer_fmt, norm);
    snprintf(afmt, sizeof afmt, "%s.%s", layer_fmt, kind == 1 ? "cross_attn" : "self_attn");
    double *h = malloc(sizeof(double) * (size_t)(R * d)), *y = malloc(sizeof(double) * (size_t)(R * d));
    if (pre) r_ln(h, x, m, nfmt, layer, R);
    else memcpy(h, x, sizeof(double) * (size_t)(R * d));
    // the layer's pattern, from the model's description of itself
    const s2s_stack *st = pos0 >= 0 || kind == 1 ? &m->arch.dec : &m->arch.enc;
    s2s_attn_mask mask = {
        .pattern = s2s_sub_pattern(&st->subs[kind == 1 ? 1 : 0], layer),
        .q_pos0 = pos0 >= 0 ? pos0 : 0,
    };
    if (kind == 2) r_ffn(y, h, R, m, layer_fmt, layer);
    else r_mha(y, h, R, kind == 1 ? mem : h, kind == 1 ? S : R, m, afmt, layer, &mask, probs_out);
    for (int i = 0; i < R * d; i++) x[i] += y[i];
    if (!pre) {
        r_ln(h, x, m, nfmt, layer, R);
        memcpy(x, h, sizeof(double) * (size_t)(R * d));
    }
    free(h), free(y);
}

// Guided alignment for the reference: a sentence's links as (source,
// target) pairs pull head `head` of decoder layer `layer`'s cross-attention.
typedef struct r_guide {
    int layer, head;
    const int *links;  // (2 * n_links)
    int n_links;
    double sum;        // adds -sum_s A[j,s] log(P[j,s] + 1e-6) over guided rows j
    int rows;          // adds the guided rows
} r_guide;

// The guided term of one sentence from its cross-attention weights P
// (H, T, S), straight from the definition: target token j with k links
// gives each linked source token 1/k.
static void r_guided(r_guide *gd, const double *P, int T, int S) {
    for (int j = 0; j < T - 1; j++) {  // </s> (row T-1) has no links
        int k = 0;
        for (int l = 0; l < gd->n_links; l++) k += gd->links[2 * l + 1] == j;
        if (!k) continue;
        gd->rows++;
        for (int l = 0; l < gd->n_links; l++)
            if (gd->links[2 * l + 1] == j)
                gd->sum -= log(P[(gd->head * T + j) * S + gd->links[2 * l]] + 1e-6) / k;
    }
}

// The coreference term of one sentence from its encoder self-attention
// weights P (H, S, S), with gd's links as (pronoun, antecedent) pairs:
// pronoun p with k antecedents gives each 1/k.
static void r_coref(r_guide *gd, const double *P, int S) {
    for (int p = 0; p < S; p++) {
        int k = 0;
        for (int l = 0; l < gd->n_links; l++) k += gd->links[2 * l] == p;
        if (!k) continue;
        gd->rows++;
        for (int l = 0; l < gd->n_links; l++)
            if (gd->links[2 * l] == p)
                gd->sum -= log(P[(gd->head * S + p) * S + gd->links[2 * l + 1]] + 1e-6) / k;
    }
}

// One sentence alone: the sum of its per-position smoothed losses; adds
// the nll and the number of argmax hits, the guided term to gd and the
// coreference term to cg (NULL: none).
static double r_sentence(const s2s_model *m, const int *src, int sl, const int *tgt, int tl,
                         double eps, double *nll, int *correct, r_guide *gd, r_guide *cg) {
    const s2s_model_config *c = &m->cfg.model;
    int d = c->d_model, S = sl + 1, T = tl + 1, V = VT;
    bool pre = c->norm == S2S_NORM_PRE;
    int ids[MAX_LEN], out_ids[MAX_LEN];
    memcpy(ids, src, sizeof(int) * (size_t)sl);
    ids[sl] = S2S_EOS;
    double *mem = malloc(sizeof(double) * (size_t)(S * d));
    r_embed(mem, ids, S, P(m, "src_embed", 0, ".weight"), d);
    double *self = malloc(sizeof(double) * (size_t)(c->heads * S * S));
    for (int l = 0; l < c->encoder_layers; l++) {
        bool guided = cg && l == cg->layer;
        r_sub(mem, S, NULL, 0, m, "encoder.layers.%d", l, 0, -1, "norm1", guided ? self : NULL);
        r_sub(mem, S, NULL, 0, m, "encoder.layers.%d", l, 2, -1, "norm2", NULL);
        if (guided) r_coref(cg, self, S);
    }
    free(self);
    if (pre) {
        double *t = malloc(sizeof(double) * (size_t)(S * d));
        r_ln(t, mem, m, "encoder.norm", 0, S);
        memcpy(mem, t, sizeof(double) * (size_t)(S * d));
        free(t);
    }
    ids[0] = S2S_BOS;
    memcpy(ids + 1, tgt, sizeof(int) * (size_t)tl);
    memcpy(out_ids, tgt, sizeof(int) * (size_t)tl);
    out_ids[tl] = S2S_EOS;
    double *x = malloc(sizeof(double) * (size_t)(T * d)), *h = malloc(sizeof(double) * (size_t)(T * d));
    r_embed(x, ids, T, P(m, "tgt_embed", 0, ".weight"), d);
    double *cross = malloc(sizeof(double) * (size_t)(c->heads * T * S));
    for (int l = 0; l < c->decoder_layers; l++) {
        bool guided = gd && l == gd->layer;
        r_sub(x, T, mem, S, m, "decoder.layers.%d", l, 0, 0, "norm1", NULL);
        r_sub(x, T, mem, S, m, "decoder.layers.%d", l, 1, -1, "norm2", guided ? cross : NULL);
        r_sub(x, T, mem, S, m, "decoder.layers.%d", l, 2, -1, "norm3", NULL);
        if (guided) r_guided(gd, cross, T, S);
    }
    free(cross);
    if (pre) r_ln(h, x, m, "decoder.norm", 0, T);
    else memcpy(h, x, sizeof(double) * (size_t)(T * d));
    const float *W = P(m, c->tie_output ? "tgt_embed" : "generator", 0, ".weight");
    double *logits = malloc(sizeof(double) * (size_t)(T * V));
    ref_linear(logits, h, W, P(m, "generator", 0, ".bias"), T, d, V);
    double total = 0;
    for (int t = 0; t < T; t++) {
        const double *z = logits + t * V;
        double mx = z[0], se = 0, mean = 0;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (z[v] > z[best]) best = v;
        mx = z[best];
        for (int v = 0; v < V; v++) se += exp(z[v] - mx), mean += z[v] / V;
        double lse = mx + log(se), g = lse - z[out_ids[t]];
        total += (1 - eps) * g + eps * (lse - mean);
        *nll += g;
        *correct += best == out_ids[t];
    }
    free(mem), free(x), free(h), free(logits);
    return total;
}

// The guided terms of the reference: alignment (gd) and coreference (cg),
// each with its layer, head and weight; NULL: off.
typedef struct r_guides {
    const r_guide *gd;
    double weight;
    const r_guide *cg;
    double cweight;
} r_guides;

// The batch's mean smoothed loss; with gs->gd (layer, head, weight),
// *guided gets the guided term weight * sum / rows over the corpus's
// links, and with gs->cg *coref the coreference term likewise.
static double r_loss_all(const s2s_model *m, const corpus *c, double eps, double *nll,
                         int *correct, const r_guides *gs, double *guided, double *coref) {
    double sum = 0, nsum = 0;
    int n = 0, hits = 0;
    r_guide g = gs->gd ? *gs->gd : (r_guide){0}, k = gs->cg ? *gs->cg : (r_guide){0};
    g.sum = 0, g.rows = 0, k.sum = 0, k.rows = 0;
    for (int i = 0; i < c->n; i++) {
        g.links = c->links[i], g.n_links = c->n_links[i];
        k.links = c->coref[i], k.n_links = c->n_coref[i];
        sum += r_sentence(m, c->src[i], c->src_len[i], c->tgt[i], c->tgt_len[i], eps, &nsum, &hits,
                          gs->gd ? &g : NULL, gs->cg ? &k : NULL);
        n += c->tgt_len[i] + 1;
    }
    if (nll) *nll = nsum / n;
    if (correct) *correct = hits;
    if (guided) *guided = g.rows ? gs->weight * g.sum / g.rows : 0.0;
    if (coref) *coref = k.rows ? gs->cweight * k.sum / k.rows : 0.0;
    return sum / n;
}

static double r_loss_guided(const s2s_model *m, const corpus *c, double eps, double *nll,
                            int *correct, const r_guide *gd, double weight, double *guided) {
    return r_loss_all(m, c, eps, nll, correct, &(r_guides){gd, weight, NULL, 0}, guided, NULL);
}

static double r_loss(const s2s_model *m, const corpus *c, double eps, double *nll, int *correct) {
    return r_loss_guided(m, c, eps, nll, correct, NULL, 0.0, NULL);
}

// ---- whole-model gradient checks ----

static float *grad_of(const s2s_model *m, float *grads, const s2s_tensor_info *t) {
    return grads + (t->data - m->params);
}

// t's weights, writable as the optimizer writes them (training reads the
// model's own block, not the decoding copy).
static float *weights_of(s2s_model *m, const s2s_tensor_info *t) {
    return m->params + (t->data - m->params);
}

static int64_t numel(const s2s_tensor_info *t) {
    return t->ndim == 2 ? t->shape[0] * t->shape[1] : t->shape[0];
}

// Up to k coordinates of t; rows of embedding tables are taken from ids
// that occur in the corpus (other rows have no gradient, checked apart).
static int pick(int64_t *out, const s2s_tensor_info *t, int k, bool src_side) {
    int64_t n = numel(t);
    if (n <= k) {
        for (int64_t i = 0; i < n; i++) out[i] = i;
        return (int)n;
    }
    bool embed = strstr(t->name, "embed") != NULL;
    for (int i = 0; i < k; i++) {
        if (embed && i % 4 != 3) {
            // first three tokens of the two longer sentences on that side
            const int *sent = src_side ? THREE.src[rnd() % 2 ? 0 : 2] : THREE.tgt[rnd() % 2];
            int row = sent[rnd() % 3];
            if (rnd() % 4 == 0) row = src_side ? S2S_EOS : S2S_BOS;
            out[i] = row * t->shape[1] + (int64_t)(rnd() % (uint64_t)t->shape[1]);
        } else {
            out[i] = (int64_t)(rnd() % (uint64_t)n);
        }
    }
    return k;
}

static const arch ARCHS[] = {
    {8, 2, 16, 1, 1, S2S_NORM_PRE, S2S_ACT_RELU, 1, 0.0f},
    {8, 2, 12, 2, 1, S2S_NORM_POST, S2S_ACT_GELU, 0, 0.1f},
    {12, 2, 16, 1, 2, S2S_NORM_PRE, S2S_ACT_GELU, 0, 0.1f},
    {16, 2, 24, 2, 2, S2S_NORM_POST, S2S_ACT_RELU, 1, 0.0f},
    {8, 2, 16, 1, 1, S2S_NORM_PRE, S2S_ACT_RELU, 1, 0.1f},
    {8, 2, 16, 1, 1, S2S_NORM_POST, S2S_ACT_GELU, 0, 0.0f},
};
#define N_ARCHS ((int)(sizeof ARCHS / sizeof ARCHS[0]))

// The loss the gradient is of: the smoothed cross-entropy plus the guided
// terms that are on.
static double r_objective(const s2s_model *m, const corpus *c, double eps, const r_guides *gs) {
    double guided = 0, coref = 0;
    double ce = r_loss_all(m, c, eps, NULL, NULL, gs, &guided, &coref);
    return ce + guided + coref;
}

// Central differences of r_objective against grads on about 400
// coordinates of m (at least 4 per tensor); returns how many were checked
// and the worst absolute and scaled errors.
static int check_model_grads(s2s_model *m, const float *grads, const corpus *c, double eps,
                             const r_guides *gs, double *worst_out, double *worst_rel_out,
                             double *gmax_out) {
    double gmax = 0;
    for (size_t i = 0; i < m->n_params; i++) gmax = fmax(gmax, fabs(grads[i]));
    cr_assert(gmax > 1e-3 && isfinite(gmax));
    double worst = 0, worst_rel = 0;
    int checked = 0;
    for (int ti = 0; ti < s2s_model_tensor_count(m); ti++) {
        s2s_tensor_info t = s2s_model_tensor(m, ti);
        const float *gt = grads + (t.data - m->params);
        // about 400 coordinates per model, at least 4 per tensor
        int per = 400 / s2s_model_tensor_count(m);
        per = per < 4 ? 4 : per > 10 ? 10 : per;
        int64_t idx[10];
        int k = pick(idx, &t, per, strncmp(t.name, "src", 3) == 0);
        double tmax = 0;
        for (int64_t i = 0; i < numel(&t); i++) tmax = fmax(tmax, fabs(gt[i]));
        float *w = weights_of(m, &t);
        for (int j = 0; j < k; j++) {
            float w0 = w[idx[j]], wp = w0 + 1e-4f, wm = w0 - 1e-4f;
            w[idx[j]] = wp;
            double lp = r_objective(m, c, eps, gs);
            w[idx[j]] = wm;
            double lm = r_objective(m, c, eps, gs);
            w[idx[j]] = w0;
            double fd = (lp - lm) / ((double)wp - (double)wm), an = gt[idx[j]];
            double err = fabs(an - fd) / (fabs(fd) + 1e-2 * tmax + 1e-3 * gmax);
            worst = fmax(worst, fabs(an - fd));
            worst_rel = fmax(worst_rel, err);
            // 1e-3 of the value, with a floor at 1e-5 of the tensor's and
            // 1e-6 of the model's largest gradient (observed: < 1e-4 of that)
            ASSERT_GRAD(an, fd, 1e-2 * tmax + 1e-3 * gmax, 1e-3, 1e-3, "%s[%lld]", t.name,
                        (long long)idx[j]);
            checked++;
        }
    }
    *worst_out = worst;
    *worst_rel_out = worst_rel;
    *gmax_out = gmax;
    return checked;
}

ParameterizedTestParameters(graph, model_gradients_match_finite_differences) {
    return cr_make_param_array(arch, (void *)ARCHS, N_ARCHS);
}

ParameterizedTest(arch *a, graph, model_gradients_match_finite_differences) {
    s2s_model *m = make_model(a, 1000 + (uint64_t)a->d * 10 + (uint64_t)a->norm * 3 + (uint64_t)a->tie);
    s2s_batch b;
    make_batch(&b, &THREE, 0, 3);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    float *grads = malloc(sizeof(float) * m->n_params);
    s2s_train_opts o = {.label_smoothing = a->smoothing};
    s2s_loss_stats st;
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK, "%s", s2s_last_error());

    double nll;
    int correct;
    double want = r_loss(m, &THREE, a->smoothing, &nll, &correct);
    cr_assert(fabs(st.loss - want) <= 1e-5 * want, "loss %.9g, reference %.9g", st.loss, want);
    cr_assert(fabs(st.nll - nll) <= 1e-5 * nll, "nll %.9g, reference %.9g", st.nll, nll);
    cr_assert_eq(st.n_tokens, b.n_tokens);
    cr_assert_eq(st.n_correct, correct);

    double worst, worst_rel, gmax;
    int checked = check_model_grads(m, grads, &THREE, a->smoothing, &(r_guides){0}, &worst,
                                    &worst_rel, &gmax);
    cr_log_info("d=%d %s %s %s eps=%.1f: loss %.6f, %d coordinates, max |an-fd| %.2e, "
                "max scaled error %.2e, max |grad| %.3f",
                a->d, a->norm == S2S_NORM_PRE ? "pre" : "post",
                a->act == S2S_ACT_GELU ? "gelu" : "relu", a->tie ? "tied" : "untied",
                (double)a->smoothing, st.loss, checked, worst, worst_rel, gmax);
    cr_assert_gt(checked, 300);

    // Embedding rows of ids that occur nowhere in the batch get nothing;
    // <pad> included: padding contributes no gradient.
    const int unused_src[] = {S2S_PAD, S2S_UNK, S2S_BOS}, unused_tgt[] = {S2S_PAD, S2S_UNK, 0};
    s2s_tensor_info se = s2s_model_find_tensor(m, "src_embed.weight");
    s2s_tensor_info te = s2s_model_find_tensor(m, "tgt_embed.weight");
    for (int u = 0; u < 3; u++)
        for (int i = 0; i < a->d; i++) {
            cr_assert_eq(grad_of(m, grads, &se)[unused_src[u] * a->d + i], 0.0f);
            if (u < 2 && !a->tie)
                cr_assert_eq(grad_of(m, grads, &te)[unused_tgt[u] * a->d + i], 0.0f);
        }
    free(grads);
    free_batch(&b);
    s2s_graph_free(g);
    s2s_model_free(m);
}

// The same for the attention variants, one or several per model, on
// some heads and layers or all (gelu: no relu kink under a difference).
typedef struct variant_case {
    arch a;
    attn_tables t;
} variant_case;

#define ATTN(type_, span_, ...) \
    {.type = S2S_ATTN_##type_, .window = span_, .block = span_, .stride = span_ < 2 ? 2 : span_, \
     __VA_ARGS__}

ParameterizedTestParameters(graph, variant_gradients_match_finite_differences) {
    static variant_case cases[] = {
        {{8, 2, 16, 1, 2, S2S_NORM_PRE, S2S_ACT_GELU, 0, 0.1f},
         {ATTN(LOCAL, 1), ATTN(LOCAL, 1, .layers = {1, {1}}), ATTN(FULL, 1)}},
        {{8, 2, 16, 1, 1, S2S_NORM_POST, S2S_ACT_GELU, 1, 0.0f},
         {ATTN(STRIDED, 2), ATTN(BLOCK, 2), ATTN(LINEAR, 1, .heads = {1, {1}})}},
        {{8, 2, 16, 1, 1, S2S_NORM_PRE, S2S_ACT_GELU, 0, 0.0f},
         {ATTN(LINEAR, 1), ATTN(LINEAR, 1), ATTN(LINEAR, 1)}},
        {{8, 2, 16, 2, 1, S2S_NORM_PRE, S2S_ACT_GELU, 1, 0.1f},
         {ATTN(LOCAL, 1, .heads = {1, {1}}, .layers = {1, {1}}), ATTN(STRIDED, 2), ATTN(FULL, 1)}},
    };
    return cr_make_param_array(variant_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(variant_case *vc, graph, variant_gradients_match_finite_differences) {
    s2s_model *m = make_model_with(&vc->a, 4242, &vc->t);
    s2s_batch b;
    make_batch(&b, &THREE, 0, 3);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    float *grads = malloc(sizeof(float) * m->n_params);
    s2s_train_opts o = {.label_smoothing = vc->a.smoothing};
    s2s_loss_stats st;
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK, "%s", s2s_last_error());
    double nll;
    int correct;
    double want = r_loss(m, &THREE, vc->a.smoothing, &nll, &correct);
    cr_assert(fabs(st.loss - want) <= 1e-5 * want, "loss %.9g, reference %.9g", st.loss, want);
    // and the variants change what is computed
    s2s_model *full = make_model(&vc->a, 4242);
    double full_nll;
    cr_assert(fabs(r_loss(full, &THREE, vc->a.smoothing, &full_nll, &correct) - want) > 1e-6);
    double worst, worst_rel, gmax;
    int checked = check_model_grads(m, grads, &THREE, vc->a.smoothing, &(r_guides){0}, &worst,
                                    &worst_rel, &gmax);
    cr_assert_gt(checked, 300);
    free(grads);
    free_batch(&b);
    s2s_graph_free(g);
    s2s_model_free(m);
    s2s_model_free(full);
}

// ---- guided alignment ----

typedef struct guided_case {
    arch a;
    int layer, head;
    float weight;
} guided_case;

// gelu only: a relu kink crossed by a finite difference would hide the
// check (it happens now and then with relu models and any loss).
static const guided_case GUIDED[] = {
    {{12, 2, 16, 1, 2, S2S_NORM_PRE, S2S_ACT_GELU, 0, 0.1f}, 1, 1, 0.7f},  // the last layer
    {{16, 2, 24, 2, 2, S2S_NORM_POST, S2S_ACT_GELU, 1, 0.0f}, 0, 0, 0.5f}, // the first of two
    {{8, 2, 16, 1, 1, S2S_NORM_POST, S2S_ACT_GELU, 0, 0.0f}, 0, 1, 1.0f},  // the only one
};

ParameterizedTestParameters(graph, guided_alignment_gradients_match_finite_differences) {
    return cr_make_param_array(guided_case, (void *)GUIDED, sizeof GUIDED / sizeof GUIDED[0]);
}

// The gradient of cross-entropy + guided loss against central differences
// of the double reference with the guided term computed from the links.
ParameterizedTest(guided_case *gc, graph, guided_alignment_gradients_match_finite_differences) {
    const arch *a = &gc->a;
    s2s_model *m = make_model(a, 6000 + (uint64_t)a->d);
    s2s_batch b;
    make_batch(&b, &THREE_ALIGNED, 0, 3);
    cr_assert_eq(b.n_guided[AL], 4);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    float *grads = malloc(sizeof(float) * m->n_params), *plain = malloc(sizeof(float) * m->n_params);
    s2s_train_opts o = {.label_smoothing = a->smoothing,
                        .guided = {ALIGN_HEAD(gc->layer, gc->head, gc->weight)}};
    s2s_train_opts off = {.label_smoothing = a->smoothing};
    s2s_loss_stats st, st0;
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_forward_backward(g, &b, &off, NULL, plain, &st0), S2S_OK);

    r_guide gd = {.layer = gc->layer, .head = gc->head};
    double guided;
    double ce = r_loss_guided(m, &THREE_ALIGNED, a->smoothing, NULL, NULL, &gd, gc->weight, &guided);
    cr_assert(fabs(st.loss - ce) <= 1e-5 * ce, "loss %.9g, reference %.9g", st.loss, ce);
    cr_assert_eq(st.loss, st0.loss, "loss stays the cross-entropy");
    cr_assert(guided > 0.1 && fabs(st.guided[AL] - guided) <= 1e-5 * guided,
              "guided %.9g, reference %.9g", st.guided[AL], guided);
    cr_assert_eq(st.n_guided[AL], 4);
    cr_assert_eq(st0.guided[AL], 0.0);

    // The guided term reaches the gradient only through its layer's
    // cross-attention: the generator and the later layers see no change.
    bool changed = false;
    for (size_t i = 0; i < m->n_params; i++) changed |= grads[i] != plain[i];
    cr_assert(changed);
    s2s_tensor_info gen = s2s_model_find_tensor(m, "generator.bias");
    cr_assert(memcmp(grads + (gen.data - m->params), plain + (gen.data - m->params),
                     sizeof(float) * (size_t)gen.shape[0]) == 0);
    for (int ti = 0; ti < s2s_model_tensor_count(m); ti++) {
        s2s_tensor_info t = s2s_model_tensor(m, ti);
        int l;
        if (sscanf(t.name, "decoder.layers.%d.", &l) != 1 || l <= gc->layer) continue;
        cr_assert(memcmp(grads + (t.data - m->params), plain + (t.data - m->params),
                         sizeof(float) * (size_t)numel(&t)) == 0, "%s", t.name);
    }

    double worst, worst_rel, gmax;
    int checked = check_model_grads(m, grads, &THREE_ALIGNED, a->smoothing,
                                    &(r_guides){&gd, gc->weight, NULL, 0}, &worst, &worst_rel,
                                    &gmax);
    cr_log_info("guided layer %d head %d weight %.1f: ce %.6f guided %.6f, %d coordinates, "
                "max |an-fd| %.2e, max scaled error %.2e", gc->layer, gc->head,
                (double)gc->weight, st.loss, st.guided[AL], checked, worst, worst_rel);
    cr_assert_gt(checked, 300);
    free(grads), free(plain);
    free_batch(&b);
    s2s_graph_free(g);
    s2s_model_free(m);
}

// With the guided layer's queries zeroed every cross-attention row is
// uniform over its sentence's source rows (</s> included), so the guided
// loss is a hand computation: each guided row's weights sum to 1.
Test(graph, guided_loss_by_hand) {
    arch a = {8, 2, 16, 1, 1, S2S_NORM_PRE, S2S_ACT_RELU, 0, 0.0f};
    s2s_model *m = make_model(&a, 6100);
    s2s_tensor_info qw = s2s_model_find_tensor(m, "decoder.layers.0.cross_attn.q_proj.weight");
    s2s_tensor_info qb = s2s_model_find_tensor(m, "decoder.layers.0.cross_attn.q_proj.bias");
    cr_assert(qw.data && qb.data);
    memset(weights_of(m, &qw), 0, sizeof(float) * (size_t)numel(&qw));
    memset(weights_of(m, &qb), 0, sizeof(float) * (size_t)numel(&qb));
    s2s_batch b;
    // Sentence 0: 4 source tokens + </s>, 2 guided rows; sentence 1: 1 + </s>, 2 guided rows.
    make_batch(&b, &THREE_ALIGNED, 0, 2);
    cr_assert_eq(b.n_guided[AL], 4);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    float *grads = malloc(sizeof(float) * m->n_params);
    double w = 0.3;
    double want = w * (2 * -log(1.0 / 5 + 1e-6) + 2 * -log(1.0 / 2 + 1e-6)) / 4;
    for (int head = 0; head < 2; head++) {
        s2s_train_opts o = {.guided = {ALIGN_HEAD(0, head, (float)w)}};
        s2s_loss_stats st;
        cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK, "%s",
                     s2s_last_error());
        cr_assert(fabs(st.guided[AL] - want) < 1e-6, "head %d: %.9f vs %.9f", head, st.guided[AL],
                  want);
        cr_assert_eq(st.n_guided[AL], 4);
    }
    // A batch without alignments, or weight 0: no guided term.
    s2s_batch plain;
    make_batch(&plain, &THREE, 0, 2);
    s2s_train_opts o = {.guided = {ALIGN_HEAD(0, 1, (float)w)}};
    s2s_loss_stats st;
    cr_assert_eq(s2s_forward_backward(g, &plain, &o, NULL, grads, &st), S2S_OK);
    cr_assert_eq(st.guided[AL], 0.0);
    o.guided[AL].weight = 0;
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK);
    cr_assert_eq(st.guided[AL], 0.0);
    // Options naming a head the model lacks are refused.
    o = (s2s_train_opts){.guided = {ALIGN_HEAD(1, 0, 1)}};
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    cr_assert_str_eq(s2s_last_error(), "guided alignment: layer 1, head 0; the model has 1 "
                                       "decoder layers of 2 heads");
    o = (s2s_train_opts){.guided = {ALIGN_HEAD(0, 0, -1)}};
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    // So is a head outside its role's attention: alignments are (T, S),
    // what no encoder head's weights are.
    o = (s2s_train_opts){.guided = {[AL] = {S2S_ATTN_MAP_ENC, 0, 0, 1}}};
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    cr_assert_str_eq(s2s_last_error(), "guided alignment: stack 2; the alignment head is in "
                                       "attention 0");
    // An alignment outside the sentence is a bad batch: here on the row
    // that predicts </s> (the source </s> column is allowed: "no link").
    int eos_row = b.tgt_len[0] - 1;
    b.guide[AL][((int64_t)0 * b.T + eos_row) * b.S + 0] = 0.5f;
    o = (s2s_train_opts){.guided = {ALIGN_HEAD(0, 0, 1)}};
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    char msg[64];
    snprintf(msg, sizeof msg, "alignment weight 0.5 at target %d, source 0", eos_row);
    cr_assert_not_null(strstr(s2s_last_error(), msg), "%s", s2s_last_error());
    free(grads);
    free_batch(&b);
    free_batch(&plain);
    s2s_graph_free(g);
    s2s_model_free(m);
}

// ---- guided coreference ----

typedef struct coref_case {
    arch a;
    int layer, head;
    float weight;
    int align_layer;  // >= 0: guided alignment on too (head 0, weight 0.3)
} coref_case;

// gelu only, as above; heads of 2 and 4, the first, the last and the only
// encoder layer, pre- and post-norm, alone and beside guided alignment.
static const coref_case COREF[] = {
    {{12, 2, 16, 1, 2, S2S_NORM_PRE, S2S_ACT_GELU, 0, 0.1f}, 0, 1, 0.7f, -1},  // the only one
    {{16, 2, 24, 2, 2, S2S_NORM_POST, S2S_ACT_GELU, 1, 0.0f}, 1, 0, 0.5f, -1}, // the last of two
    {{16, 4, 24, 2, 1, S2S_NORM_PRE, S2S_ACT_GELU, 0, 0.1f}, 0, 3, 1.0f, -1},  // the first of two
    {{16, 4, 24, 2, 2, S2S_NORM_PRE, S2S_ACT_GELU, 1, 0.0f}, 1, 2, 0.5f, 1},   // with alignment
};

ParameterizedTestParameters(graph, guided_coref_gradients_match_finite_differences) {
    return cr_make_param_array(coref_case, (void *)COREF, sizeof COREF / sizeof COREF[0]);
}

// The gradient of cross-entropy + coreference term (+ guided alignment)
// against central differences of the double reference, whose coreference
// term comes from the pronoun rows of its own encoder self-attention.
ParameterizedTest(coref_case *cc, graph, guided_coref_gradients_match_finite_differences) {
    const arch *a = &cc->a;
    s2s_model *m = make_model(a, 7000 + (uint64_t)a->d + (uint64_t)cc->layer);
    s2s_batch b;
    make_batch(&b, &THREE_COREF, 0, 3);
    cr_assert_eq(b.n_guided[CO], 3);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    float *grads = malloc(sizeof(float) * m->n_params), *plain = malloc(sizeof(float) * m->n_params);
    bool align = cc->align_layer >= 0;
    s2s_train_opts off = {.label_smoothing = a->smoothing,
                          .guided = {ALIGN_HEAD(cc->align_layer, 0, align ? 0.3f : 0.0f)}};
    s2s_train_opts o = off;
    o.guided[CO] = (s2s_guided_head){S2S_ATTN_MAP_ENC, cc->layer, cc->head, cc->weight};
    s2s_loss_stats st, st0;
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_forward_backward(g, &b, &off, NULL, plain, &st0), S2S_OK);

    r_guide gd = {.layer = cc->align_layer, .head = 0}, cg = {.layer = cc->layer, .head = cc->head};
    r_guides gs = {align ? &gd : NULL, 0.3, &cg, cc->weight};
    double guided, coref;
    double ce = r_loss_all(m, &THREE_COREF, a->smoothing, NULL, NULL, &gs, &guided, &coref);
    cr_assert(fabs(st.loss - ce) <= 1e-5 * ce, "loss %.9g, reference %.9g", st.loss, ce);
    cr_assert_eq(st.loss, st0.loss, "loss stays the cross-entropy");
    cr_assert(coref > 0.1 && fabs(st.guided[CO] - coref) <= 1e-5 * coref,
              "coref %.9g, reference %.9g", st.guided[CO], coref);
    cr_assert_eq(st.n_guided[CO], 3);
    cr_assert_eq(st0.guided[CO], 0.0);
    cr_assert_eq(st.guided[AL], st0.guided[AL], "the alignment term does not move");
    if (align) cr_assert(fabs(st.guided[AL] - guided) <= 1e-5 * guided);

    // The term reaches the gradient only through the encoder up to its
    // layer: the decoder, the generator, the later encoder layers and the
    // final encoder norm see no change.
    bool changed = false;
    for (size_t i = 0; i < m->n_params; i++) changed |= grads[i] != plain[i];
    cr_assert(changed);
    for (int ti = 0; ti < s2s_model_tensor_count(m); ti++) {
        s2s_tensor_info t = s2s_model_tensor(m, ti);
        int l;
        bool later = sscanf(t.name, "encoder.layers.%d.", &l) == 1 && l > cc->layer;
        bool upstream = strncmp(t.name, "encoder.layers.", 15) == 0 ||
                        strncmp(t.name, "src_embed", 9) == 0;
        if (upstream && !later) continue;
        cr_assert(memcmp(grads + (t.data - m->params), plain + (t.data - m->params),
                         sizeof(float) * (size_t)numel(&t)) == 0, "%s", t.name);
    }

    double worst, worst_rel, gmax;
    int checked = check_model_grads(m, grads, &THREE_COREF, a->smoothing, &gs, &worst, &worst_rel,
                                    &gmax);
    cr_log_info("coref layer %d head %d weight %.1f%s: ce %.6f coref %.6f, %d coordinates, "
                "max |an-fd| %.2e, max scaled error %.2e", cc->layer, cc->head,
                (double)cc->weight, align ? " + alignment" : "", st.loss, st.guided[CO], checked,
                worst, worst_rel);
    cr_assert_gt(checked, 300);
    free(grads), free(plain);
    free_batch(&b);
    s2s_graph_free(g);
    s2s_model_free(m);
}

// With the coreference layer's queries zeroed every self-attention row is
// uniform over its sentence's source rows (</s> included): the term is a
// hand computation.
Test(graph, guided_coref_loss_by_hand) {
    arch a = {8, 2, 16, 1, 1, S2S_NORM_PRE, S2S_ACT_RELU, 0, 0.0f};
    s2s_model *m = make_model(&a, 7100);
    s2s_tensor_info qw = s2s_model_find_tensor(m, "encoder.layers.0.self_attn.q_proj.weight");
    s2s_tensor_info qb = s2s_model_find_tensor(m, "encoder.layers.0.self_attn.q_proj.bias");
    cr_assert(qw.data && qb.data);
    memset(weights_of(m, &qw), 0, sizeof(float) * (size_t)numel(&qw));
    memset(weights_of(m, &qb), 0, sizeof(float) * (size_t)numel(&qb));
    s2s_batch b;
    // Sentence 0: 4 tokens + </s>, pronoun 2 (one antecedent) and pronoun
    // 3 (two, 0.5 each); sentence 2: 6 + </s>, pronoun 4. Padded to 7 rows.
    make_batch(&b, &THREE_COREF, 0, 3);
    cr_assert_eq(b.n_guided[CO], 3);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    float *grads = malloc(sizeof(float) * m->n_params);
    double w = 0.4;
    double want = w * (-log(1.0 / 5 + 1e-6) + 2 * 0.5 * -log(1.0 / 5 + 1e-6) +
                       -log(1.0 / 7 + 1e-6)) / 3;
    for (int head = 0; head < 2; head++) {
        s2s_train_opts o = {.guided = {COREF_HEAD(0, head, (float)w)}};
        s2s_loss_stats st;
        cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK, "%s",
                     s2s_last_error());
        cr_assert(fabs(st.guided[CO] - want) < 1e-6, "head %d: %.9f vs %.9f", head, st.guided[CO],
                  want);
        cr_assert_eq(st.n_guided[CO], 3);
        cr_assert_eq(st.guided[AL], 0.0);
    }
    // A batch without coreference rows, or weight 0: no term.
    s2s_batch plain;
    make_batch(&plain, &THREE_ALIGNED, 0, 3);
    s2s_train_opts o = {.guided = {COREF_HEAD(0, 1, (float)w)}};
    s2s_loss_stats st;
    cr_assert_eq(s2s_forward_backward(g, &plain, &o, NULL, grads, &st), S2S_OK);
    cr_assert_eq(st.guided[CO], 0.0);
    o.guided[CO].weight = 0;
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK);
    cr_assert_eq(st.guided[CO], 0.0);
    // Options naming a head the model lacks are refused.
    o = (s2s_train_opts){.guided = {COREF_HEAD(1, 0, 1)}};
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    cr_assert_str_eq(s2s_last_error(), "guided coreference: layer 1, head 0; the model has 1 "
                                       "encoder layers of 2 heads");
    o = (s2s_train_opts){.guided = {COREF_HEAD(0, 2, 1)}};
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    o = (s2s_train_opts){.guided = {COREF_HEAD(0, 0, NAN)}};
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    // A weight on the </s> row, or on a padded column, is a bad batch.
    o = (s2s_train_opts){.guided = {COREF_HEAD(0, 0, 1)}};
    b.guide[CO][(int64_t)0 * b.S * b.S + 4 * b.S + 0] = 0.5f;  // sentence 0's </s> is row 4
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    cr_assert_not_null(strstr(s2s_last_error(), "coreference weight 0.5 at pronoun 4, "
                                                "antecedent 0"), "%s", s2s_last_error());
    b.guide[CO][4 * b.S + 0] = 0.0f;
    b.guide[CO][2 * b.S + 6] = 1.0f;  // column 6: padding in sentence 0
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    b.guide[CO][2 * b.S + 6] = 0.0f;
    b.n_guided[CO] = 2;
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_ERR_INVALID);
    cr_assert_str_eq(s2s_last_error(), "training batch: n_guided[S2S_HEAD_COREF] is 2, the "
                                       "coreference rows have 3 guided rows");
    free(grads);
    free_batch(&b);
    free_batch(&plain);
    s2s_graph_free(g);
    s2s_model_free(m);
}

// ---- loss against the inference engine and by hand ----

// s2s_score's token log-probs (eps = 0) and the inference engine's full
// distributions (eps = 0.1) give the same loss as the training graph.
Test(graph, loss_equals_the_inference_engine_log_probs) {
    for (int ai = 0; ai < 4; ai++) {
        s2s_model *m = make_model(&ARCHS[ai], 2000 + (uint64_t)ai);
        s2s_batch b;
        make_batch(&b, &THREE, 0, 3);
        s2s_graph *g;
        cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
        s2s_state *state;
        cr_assert_eq(s2s_state_new(&state, m), S2S_OK);
        s2s_decode_params dp = s2s_decode_default_params(m);
        dp.max_batch = 1;  // alone, so st->logits holds this sentence's rows
        double sum_lp = 0, smooth = 0, eps = 0.1;
        int n = 0;
        for (int i = 0; i < 3; i++) {
            s2s_hypothesis hyp;
            cr_assert_eq(s2s_score(state, &dp, &THREE.src[i], &THREE.src_len[i], &THREE.tgt[i],
                                   &THREE.tgt_len[i], 1, &hyp), S2S_OK, "%s", s2s_last_error());
            cr_assert_eq(hyp.n_out, THREE.tgt_len[i] + 1);
            for (int t = 0; t < hyp.n_out; t++) {
                sum_lp += hyp.token_logprobs[t];
                // full distribution of row t; log-softmax again is harmless
                const float *z = state->logits + (int64_t)t * VT;
                double mx = z[0], se = 0, mean = 0;
                for (int v = 1; v < VT; v++) mx = z[v] > mx ? z[v] : mx;
                for (int v = 0; v < VT; v++) se += exp(z[v] - mx), mean += z[v] / VT;
                int gold = t < THREE.tgt_len[i] ? THREE.tgt[i][t] : S2S_EOS;
                double lse = mx + log(se);
                cr_assert(fabs((z[gold] - lse) - hyp.token_logprobs[t]) < 1e-5);
                smooth += (1 - eps) * (lse - z[gold]) + eps * (lse - mean);
                n++;
            }
            s2s_hypothesis_free(&hyp);
        }
        cr_assert_eq(n, b.n_tokens);
        s2s_loss_stats st;
        cr_assert_eq(s2s_forward_loss(g, &b, 0.0f, &st), S2S_OK);
        cr_assert(fabs(st.loss - (-sum_lp / n)) < 1e-5 * st.loss, "arch %d: %.8f vs %.8f", ai,
                  st.loss, -sum_lp / n);
        cr_assert_eq(st.loss, st.nll);
        cr_assert_eq(s2s_forward_loss(g, &b, (float)eps, &st), S2S_OK);
        cr_assert(fabs(st.loss - smooth / n) < 1e-5 * st.loss, "arch %d: %.8f vs %.8f", ai,
                  st.loss, smooth / n);
        cr_assert(fabs(st.nll - (-sum_lp / n)) < 1e-5 * st.nll);
        s2s_state_free(state);
        s2s_graph_free(g);
        free_batch(&b);
        s2s_model_free(m);
    }
}

// With generator.weight = 0 the logits are generator.bias at every row, so
// the loss and its gradient are a hand computation, and nothing else in
// the model gets a gradient.
Test(graph, loss_and_bias_gradient_by_hand) {
    arch a = {8, 2, 16, 1, 1, S2S_NORM_POST, S2S_ACT_RELU, 0, 0.0f};
    s2s_model *m = make_model(&a, 3000);
    memset(m->gen_w, 0, sizeof(float) * VT * 8);
    // bias: token v has logit log(v + 1), so p[v] = (v + 1) / 66
    for (int v = 0; v < VT; v++) m->gen_b[v] = logf((float)(v + 1));
    static const int s[] = {4}, t[] = {7};
    corpus c = {.n = 1, .src = {s}, .tgt = {t}, .src_len = {1}, .tgt_len = {1}};  // predicts 7 then </s> (3)
    s2s_batch b;
    make_batch(&b, &c, 0, 1);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    float *grads = malloc(sizeof(float) * m->n_params);
    double eps = 0.1, Z = 66.0;
    double mean_logit = 0;
    for (int v = 0; v < VT; v++) mean_logit += log(v + 1.0) / VT;
    double lse = log(Z);
    double nll7 = lse - log(8.0), nll3 = lse - log(4.0);
    double want = 0.5 * ((1 - eps) * (nll7 + nll3) + 2 * eps * (lse - mean_logit));
    s2s_train_opts o = {.label_smoothing = (float)eps};
    s2s_loss_stats st;
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK);
    cr_assert(fabs(st.loss - want) < 1e-6, "%.9f vs %.9f", st.loss, want);
    cr_assert(fabs(st.nll - 0.5 * (nll7 + nll3)) < 1e-6);
    cr_assert_eq(st.n_tokens, 2);
    cr_assert_eq(st.n_correct, 0);  // argmax is the last token, 10
    const float *gb = grads + (m->gen_b - m->params);
    for (int v = 0; v < VT; v++) {
        // two rows: (p - (1-eps) onehot - eps/V) / 2 each
        double p = (v + 1) / Z;
        double gv = (2 * p - 2 * eps / VT - (1 - eps) * ((v == 7) + (v == 3))) / 2;
        cr_assert(fabs(gb[v] - gv) < 1e-6, "bias %d: %g vs %g", v, (double)gb[v], gv);
    }
    size_t gen_w_off = (size_t)(m->gen_w - m->params), gen_b_off = (size_t)(m->gen_b - m->params);
    for (size_t i = 0; i < m->n_params; i++) {
        bool generator = (i >= gen_w_off && i < gen_w_off + VT * 8) ||
                         (i >= gen_b_off && i < gen_b_off + VT);
        if (!generator) cr_assert_eq(grads[i], 0.0f, "parameter %zu", i);
    }
    free(grads);
    free_batch(&b);
    s2s_graph_free(g);
    s2s_model_free(m);
}

// ---- padding, determinism, dropout, growth ----

Test(graph, padded_batch_equals_sentences_alone) {
    for (int ai = 0; ai < 4; ai++) {
        s2s_model *m = make_model(&ARCHS[ai], 4000 + (uint64_t)ai);
        s2s_graph *g;
        cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
        size_t np = m->n_params;
        float *grads = malloc(sizeof(float) * np);
        double *sum = calloc(np, sizeof(double)), *batch = calloc(np, sizeof(double));
        s2s_train_opts o = {.label_smoothing = 0.1f};
        s2s_loss_stats st;
        double loss_sum = 0;
        for (int i = 0; i < 3; i++) {
            s2s_batch b;
            make_batch(&b, &THREE, i, 1);
            cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK);
            loss_sum += st.loss * st.n_tokens;
            for (size_t k = 0; k < np; k++) sum[k] += (double)grads[k] * st.n_tokens;
            free_batch(&b);
        }
        s2s_batch b;
        make_batch(&b, &THREE, 0, 3);
        cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, grads, &st), S2S_OK);
        cr_assert(fabs(st.loss * st.n_tokens - loss_sum) < 1e-5 * loss_sum, "%.8f vs %.8f",
                  st.loss * st.n_tokens, loss_sum);
        double scale = 0, err = 0;
        for (size_t k = 0; k < np; k++) {
            batch[k] = (double)grads[k] * st.n_tokens;
            scale = fmax(scale, fabs(sum[k]));
            err = fmax(err, fabs(batch[k] - sum[k]));
        }
        cr_assert(err < 1e-5 * scale, "arch %d: summed gradients differ by %g (scale %g)", ai,
                  err, scale);
        free_batch(&b);
        free(grads), free(sum), free(batch);
        s2s_graph_free(g);
        s2s_model_free(m);
    }
}

Test(graph, dropout_is_reproducible_from_the_rng_state) {
    s2s_model *m = make_model(&ARCHS[1], 5000);
    s2s_batch b;
    make_batch(&b, &THREE, 0, 3);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    size_t np = m->n_params;
    float *g1 = malloc(sizeof(float) * np), *g2 = malloc(sizeof(float) * np);
    float *g3 = malloc(sizeof(float) * np);
    s2s_train_opts o = {.dropout = 0.2f, .attention_dropout = 0.1f, .label_smoothing = 0.1f};
    s2s_loss_stats s1, s2, s3, s0;
    s2s_rng r1, r2, r3;
    s2s_rng_seed(&r1, 42), s2s_rng_seed(&r2, 42), s2s_rng_seed(&r3, 43);
    cr_assert_eq(s2s_forward_backward(g, &b, &o, &r1, g1, &s1), S2S_OK);
    cr_assert_eq(s2s_forward_backward(g, &b, &o, &r2, g2, &s2), S2S_OK);
    cr_assert_eq(s2s_forward_backward(g, &b, &o, &r3, g3, &s3), S2S_OK);
    cr_assert_eq(s1.loss, s2.loss);
    cr_assert(memcmp(g1, g2, sizeof(float) * np) == 0, "same seed, different gradients");
    cr_assert(memcmp(&r1, &r2, sizeof r1) == 0);
    cr_assert_neq(s1.loss, s3.loss);
    cr_assert(memcmp(g1, g3, sizeof(float) * np) != 0, "another seed, the same gradients");
    cr_assert_eq(s2s_forward_loss(g, &b, 0.1f, &s0), S2S_OK);
    cr_assert_neq(s0.loss, s1.loss, "dropout changed nothing");

    // dropout 0: the same loss as s2s_forward_loss, to the bit, and the
    // rng is not touched (it may even be NULL)
    s2s_train_opts none = {.label_smoothing = 0.1f};
    s2s_rng before = r1;
    cr_assert_eq(s2s_forward_backward(g, &b, &none, &r1, g1, &s1), S2S_OK);
    cr_assert_eq(s1.loss, s0.loss);
    cr_assert_eq(s1.nll, s0.nll);
    cr_assert(memcmp(&before, &r1, sizeof r1) == 0);
    cr_assert_eq(s2s_forward_backward(g, &b, &none, NULL, g2, &s2), S2S_OK);
    cr_assert(memcmp(g1, g2, sizeof(float) * np) == 0, "no-dropout gradients not repeatable");
    cr_assert_eq(s2s_forward_backward(g, &b, &o, NULL, g2, &s2), S2S_ERR_INVALID);
    free(g1), free(g2), free(g3);
    free_batch(&b);
    s2s_graph_free(g);
    s2s_model_free(m);
}

// With the masks frozen (the same rng state for every evaluation), the
// loss is a smooth function of the weights whose gradient the backward
// pass must give, dropout scaling included. Float forward here, so a
// larger step and an aggregate tolerance per tensor; gelu models, as a
// step of 1e-2 would often push a relu unit across 0.
Test(graph, gradients_with_frozen_dropout_masks_match_finite_differences) {
    for (int ai = 0; ai < 2; ai++) {
        const arch *a = &ARCHS[ai == 0 ? 2 : 1];
        s2s_model *m = make_model(a, 6000 + (uint64_t)ai);
        s2s_batch b;
        make_batch(&b, &THREE, 0, 3);
        s2s_graph *g;
        cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
        size_t np = m->n_params;
        float *grads = malloc(sizeof(float) * np), *scratch = malloc(sizeof(float) * np);
        s2s_train_opts o = {.dropout = 0.3f, .attention_dropout = 0.3f, .label_smoothing = 0.1f};
        s2s_rng seed;
        s2s_rng_seed(&seed, 9);
        s2s_rng r = seed;
        s2s_loss_stats st;
        cr_assert_eq(s2s_forward_backward(g, &b, &o, &r, grads, &st), S2S_OK);
        double worst = 0, gmax = 0;
        for (size_t i = 0; i < np; i++) gmax = fmax(gmax, fabs(grads[i]));
        for (int ti = 0; ti < s2s_model_tensor_count(m); ti++) {
            s2s_tensor_info t = s2s_model_tensor(m, ti);
            float *gt = grad_of(m, grads, &t);
            int64_t idx[4];
            int k = pick(idx, &t, 4, strncmp(t.name, "src", 3) == 0);
            double num = 0, den = 0;
            float *w = weights_of(m, &t);
            for (int j = 0; j < k; j++) {
                float w0 = w[idx[j]], wp = w0 + 1e-2f, wm = w0 - 1e-2f;
                s2s_loss_stats sp, sm;
                w[idx[j]] = wp;
                r = seed;
                cr_assert_eq(s2s_forward_backward(g, &b, &o, &r, scratch, &sp), S2S_OK);
                w[idx[j]] = wm;
                r = seed;
                cr_assert_eq(s2s_forward_backward(g, &b, &o, &r, scratch, &sm), S2S_OK);
                w[idx[j]] = w0;
                double fd = (sp.loss - sm.loss) / ((double)wp - (double)wm);
                num += (fd - gt[idx[j]]) * (fd - gt[idx[j]]);
                den += fd * fd;
            }
            // k_proj.bias has a zero gradient (a softmax ignores a shift of
            // its row), so the floor is a share of the model's gradients
            double rel = sqrt(num) / (sqrt(den) + 1e-2 * gmax * sqrt((double)k));
            worst = fmax(worst, rel);
            cr_assert_lt(rel, 2e-2, "%s: relative error %.3g", t.name, rel);
        }
        cr_log_info("frozen dropout masks, arch %d: worst per-tensor relative error %.2e",
                    ai, worst);
        free(grads), free(scratch);
        free_batch(&b);
        s2s_graph_free(g);
        s2s_model_free(m);
    }
}

Test(graph, blocks_grow_and_shrink_without_changing_results) {
    s2s_model *m = make_model(&ARCHS[2], 7000);
    size_t np = m->n_params;
    s2s_batch small, big;
    make_batch(&small, &THREE, 0, 1);
    make_batch(&big, &THREE, 0, 3);
    s2s_graph *fresh, *reused;
    cr_assert_eq(s2s_graph_new(&fresh, m), S2S_OK);
    cr_assert_eq(s2s_graph_new(&reused, m), S2S_OK);
    float *want = malloc(sizeof(float) * np), *got = malloc(sizeof(float) * np);
    s2s_train_opts o = {.label_smoothing = 0.1f};
    s2s_loss_stats a, b2;
    cr_assert_eq(s2s_forward_backward(fresh, &small, &o, NULL, want, &a), S2S_OK);
    cr_assert_eq(s2s_forward_backward(reused, &small, &o, NULL, got, &b2), S2S_OK);
    cr_assert_eq(s2s_forward_backward(reused, &big, &o, NULL, got, &b2), S2S_OK);
    cr_assert_eq(s2s_forward_backward(reused, &small, &o, NULL, got, &b2), S2S_OK);
    cr_assert_eq(a.loss, b2.loss);
    float err = ref_max_diff(want, got, (int64_t)np);
    cr_assert(err < 1e-6f, "gradients after growing differ by %g", (double)err);
    free(want), free(got);
    free_batch(&small), free_batch(&big);
    s2s_graph_free(fresh), s2s_graph_free(reused);
    s2s_model_free(m);
}

Test(graph, bad_batches_are_refused_with_a_message) {
    s2s_model *m = make_model(&ARCHS[0], 8000);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    s2s_loss_stats st;
    s2s_batch b;
    make_batch(&b, &THREE, 0, 3);
    b.src[1] = VS;  // id out of range
    cr_assert_eq(s2s_forward_loss(g, &b, 0, &st), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "source id"), "%s", s2s_last_error());
    b.src[1] = 5;
    b.n_tokens++;
    cr_assert_eq(s2s_forward_loss(g, &b, 0, &st), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "n_tokens"), "%s", s2s_last_error());
    b.n_tokens--;
    b.tgt_len[0] = b.T + 1;
    cr_assert_eq(s2s_forward_loss(g, &b, 0, &st), S2S_ERR_INVALID);
    b.tgt_len[0] = 4;
    cr_assert_eq(s2s_forward_loss(g, &b, 1.5f, &st), S2S_ERR_INVALID);
    s2s_train_opts o = {.dropout = 1.0f};
    s2s_rng r;
    s2s_rng_seed(&r, 1);
    float *grads = malloc(sizeof(float) * m->n_params);
    cr_assert_eq(s2s_forward_backward(g, &b, &o, &r, grads, &st), S2S_ERR_INVALID);
    cr_assert_eq(s2s_forward_loss(g, &b, 0, &st), S2S_OK);
    free(grads);
    free_batch(&b);
    s2s_graph_free(g);
    s2s_model_free(m);
}

// Data-parallel training's premise: shares of a batch whose loss terms are
// averaged over the whole batch's counts (norm_*) give gradients, losses
// and guided terms that add up to the whole batch's, with label smoothing,
// guided alignment and guided coreference on; each share has rows of both.
Test(graph, shares_with_the_whole_batchs_counts_add_up_to_the_whole) {
    const arch a = {16, 4, 24, 2, 2, S2S_NORM_PRE, S2S_ACT_GELU, 1, 0.1f};
    s2s_model *m = make_model(&a, 9100);
    s2s_batch whole, first, rest;
    make_batch(&whole, &THREE_COREF, 0, 3);
    make_batch(&first, &THREE_COREF, 0, 1);
    make_batch(&rest, &THREE_COREF, 1, 2);
    cr_assert(first.n_guided[AL] > 0 && rest.n_guided[AL] > 0 && first.n_guided[CO] > 0 &&
              rest.n_guided[CO] > 0);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    size_t n = m->n_params;
    float *gw = malloc(sizeof(float) * n), *g1 = malloc(sizeof(float) * n),
          *g2 = malloc(sizeof(float) * n);
    s2s_train_opts o = {.label_smoothing = a.smoothing,
                        .guided = {ALIGN_HEAD(1, 2, 0.4f), COREF_HEAD(0, 1, 0.6f)}};
    s2s_loss_stats sw, s1, s2;
    cr_assert_eq(s2s_forward_backward(g, &whole, &o, NULL, gw, &sw), S2S_OK, "%s", s2s_last_error());
    o.norm_tokens = whole.n_tokens;
    memcpy(o.norm_guided, whole.n_guided, sizeof o.norm_guided);
    cr_assert_eq(s2s_forward_backward(g, &first, &o, NULL, g1, &s1), S2S_OK);
    cr_assert_eq(s2s_forward_backward(g, &rest, &o, NULL, g2, &s2), S2S_OK);
    cr_assert(fabs(s1.loss + s2.loss - sw.loss) <= 1e-6 * sw.loss, "loss %.9g + %.9g, whole %.9g",
              s1.loss, s2.loss, sw.loss);
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++)
        cr_assert(fabs(s1.guided[r] + s2.guided[r] - sw.guided[r]) <= 1e-6 * sw.guided[r] &&
                  sw.guided[r] > 0, "role %d", r);
    double big = 0, worst = 0;
    for (size_t i = 0; i < n; i++) big = fmax(big, fabs(gw[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)g1[i] + g2[i] - gw[i]));
    cr_assert(big > 1e-3 && worst <= 1e-5 * big, "largest difference %g of %g", worst, big);
    // Without the whole batch's counts each share is its own mean: not a sum.
    o = (s2s_train_opts){.label_smoothing = a.smoothing};
    cr_assert_eq(s2s_forward_backward(g, &first, &o, NULL, g1, &s1), S2S_OK);
    cr_assert_eq(s2s_forward_backward(g, &rest, &o, NULL, g2, &s2), S2S_OK);
    cr_assert_gt(fabs(s1.loss + s2.loss - sw.loss), 0.1 * sw.loss);
    free(gw), free(g1), free(g2);
    s2s_graph_free(g);
    free_batch(&whole), free_batch(&first), free_batch(&rest);
    s2s_model_free(m);
}

// largest |a - b| over the largest |b| (at least 1e-3)
static double rel_diff(const float *a, const float *b, int64_t n) {
    double big = 1e-3, worst = 0;
    for (int64_t i = 0; i < n; i++) {
        big = fmax(big, fabs((double)b[i]));
        worst = fmax(worst, fabs((double)a[i] - b[i]));
    }
    return worst / big;
}

// A graph built with opts `var` against the plain graph, on model m and the
// three-sentence batch with coreference links: both dropouts and both
// guided terms on, three steps running (the graphs are reused), then
// validation. With tol 0 the loss terms and every gradient are equal to
// the bit; else the guided terms and the gradients (against the largest)
// within tol, the loss within tol / 10. The dropout generators stay in
// step. Both arenas are as their plans say; the plans go to pp and pv.
// Returns the batch's source length.
static int64_t against_plain(s2s_model *m, const arch *a, const s2s_graph_opts *var,
                             uint64_t seed, double tol, s2s_graph_plan_bytes *pp,
                             s2s_graph_plan_bytes *pv) {
    s2s_batch b;
    make_batch(&b, &THREE_COREF, 0, 3);
    s2s_graph_opts plain_o = s2s_graph_default_opts();
    s2s_graph *gp, *gv;
    cr_assert_eq(s2s_graph_new_opts(&gp, m, &plain_o), S2S_OK);
    cr_assert_eq(s2s_graph_new_opts(&gv, m, var), S2S_OK, "%s", s2s_last_error());
    size_t n = m->n_params;
    float *g0 = malloc(sizeof(float) * n), *g1 = malloc(sizeof(float) * n);
    s2s_train_opts o = {.dropout = 0.2f, .attention_dropout = 0.15f,
                        .label_smoothing = a->smoothing,
                        .guided = {ALIGN_HEAD(a->dec_layers - 1, 1, 0.5f),
                                   COREF_HEAD(a->enc_layers - 1, 0, 0.7f)}};
    s2s_rng r0, r1;
    s2s_rng_seed(&r0, seed);
    r1 = r0;
    for (int step = 0; step < 3; step++) {
        s2s_loss_stats s0, s1;
        cr_assert_eq(s2s_forward_backward(gp, &b, &o, &r0, g0, &s0), S2S_OK, "%s",
                     s2s_last_error());
        cr_assert_eq(s2s_forward_backward(gv, &b, &o, &r1, g1, &s1), S2S_OK, "%s",
                     s2s_last_error());
        cr_assert(fabs(s0.loss - s1.loss) <= tol / 10 * s0.loss &&
                      fabs(s0.guided[AL] - s1.guided[AL]) <= tol * s0.guided[AL] &&
                      fabs(s0.guided[CO] - s1.guided[CO]) <= tol * s0.guided[CO],
                  "step %d: loss %.9g/%.9g guided %.9g/%.9g coref %.9g/%.9g", step, s0.loss,
                  s1.loss, s0.guided[AL], s1.guided[AL], s0.guided[CO], s1.guided[CO]);
        cr_assert(s0.guided[AL] > 0 && s0.guided[CO] > 0);
        if (tol == 0) {
            cr_assert(memcmp(g0, g1, sizeof(float) * n) == 0, "step %d: gradients differ", step);
        } else {
            double r = rel_diff(g1, g0, (int64_t)n);
            cr_assert(r < tol, "step %d: gradients off by %g of the largest", step, r);
        }
        cr_assert(memcmp(&r0, &r1, sizeof r0) == 0, "step %d: generators differ", step);
    }
    s2s_loss_stats v0, v1;
    cr_assert_eq(s2s_forward_loss(gp, &b, 0.1f, &v0), S2S_OK);
    cr_assert_eq(s2s_forward_loss(gv, &b, 0.1f, &v1), S2S_OK);
    cr_assert(fabs(v0.loss - v1.loss) <= tol / 10 * v0.loss, "validation %.9g/%.9g", v0.loss,
              v1.loss);
    cr_assert_eq(s2s_graph_plan(pp, m, &plain_o, b.n, b.S, b.T, true), S2S_OK);
    cr_assert_eq(s2s_graph_plan(pv, m, var, b.n, b.S, b.T, true), S2S_OK);
    cr_assert_eq(pp->total, s2s_graph_bytes(gp), "plan %zu, graph %zu", pp->total,
                 s2s_graph_bytes(gp));
    cr_assert_eq(pv->total, s2s_graph_bytes(gv), "plan %zu, graph %zu", pv->total,
                 s2s_graph_bytes(gv));
    free(g0);
    free(g1);
    s2s_graph_free(gp);
    s2s_graph_free(gv);
    int64_t S = b.S;
    free_batch(&b);
    return S;
}

// ---- activation checkpointing ----

typedef struct ckpt_case {
    arch a;
    bool linear;  // linear heads in every attention (their row norms are recomputed too)
} ckpt_case;

static const ckpt_case CKPT[] = {
    {{12, 2, 16, 2, 2, S2S_NORM_PRE, S2S_ACT_GELU, 1, 0.1f}, false},
    {{16, 2, 24, 3, 2, S2S_NORM_POST, S2S_ACT_RELU, 0, 0.0f}, false},
    {{8, 2, 16, 2, 3, S2S_NORM_PRE, S2S_ACT_RELU, 0, 0.1f}, true},
};

ParameterizedTestParameters(graph, checkpointed_layers_give_the_same_gradients_bit_for_bit) {
    return cr_make_param_array(ckpt_case, (void *)CKPT, sizeof CKPT / sizeof CKPT[0]);
}

// checkpoint_layers runs each layer again in the backward pass with the
// dropout generator as it was: with both dropouts and both guided terms
// on, the loss terms, every gradient and the generator's end state equal
// the plain graph's exactly, three steps running (the graph is reused), and
// its arena is smaller, as its plan says.
ParameterizedTest(ckpt_case *cc, graph, checkpointed_layers_give_the_same_gradients_bit_for_bit) {
    const arch *a = &cc->a;
    // a linear head (head 1 of every layer) beside a softmax one
    s2s_attention_config lin = {.type = S2S_ATTN_LINEAR, .window = 1, .block = 1, .stride = 2,
                                .heads = {.n = 1, .v = {1}}};
    attn_tables at = {lin, lin, lin};
    s2s_model *m = make_model_with(a, 7100 + (uint64_t)a->d, cc->linear ? &at : NULL);
    s2s_graph_opts ckpt_o = s2s_graph_default_opts();
    ckpt_o.checkpoint_layers = true;
    s2s_graph_plan_bytes pp, pc;
    against_plain(m, a, &ckpt_o, 99, 0.0, &pp, &pc);
    size_t sum = 0;
    for (int k = 0; k < S2S_GRAPH_PART_COUNT; k++) sum += pc.bytes[k];
    cr_assert_eq(sum, pc.total);
    cr_assert_lt(pc.total, pp.total);
    cr_assert_lt(pc.bytes[S2S_GRAPH_ATTENTION], pp.bytes[S2S_GRAPH_ATTENTION]);
    cr_assert_eq(pc.bytes[S2S_GRAPH_SCRATCH], pp.bytes[S2S_GRAPH_SCRATCH]);
    s2s_model_free(m);
}

// ---- bf16 products ----

static void bf16_within_rounding(const arch *a);

// compute_type bf16: the loss and every gradient within bf16's rounding
// (8 bits of mantissa; the sums stay fp32) of the fp32 graph's, and not
// equal to them (the products did run in bf16). With checkpointing and
// with chunked attention too; pre-norm with GELU and post-norm with ReLU.
Test(graph, bf16_products_give_the_loss_and_gradients_within_bf16_rounding) {
    for (int post = 0; post < 2; post++) {
        arch a = {16, 2, 32, 2, 2, post ? S2S_NORM_POST : S2S_NORM_PRE,
                  post ? S2S_ACT_RELU : S2S_ACT_GELU, 1, 0.1f};
        bf16_within_rounding(&a);
    }
}

static void bf16_within_rounding(const arch *a) {
    s2s_model *m = make_model(a, 7300);
    s2s_batch b;
    make_batch(&b, &THREE_COREF, 0, 3);
    s2s_graph_opts fo = s2s_graph_default_opts(), bo = fo;
    bo.bf16 = true;
    size_t n = m->n_params;
    float *g0 = malloc(sizeof(float) * n), *g1 = malloc(sizeof(float) * n);
    s2s_train_opts o = {.label_smoothing = 0.1f,
                        .guided = {ALIGN_HEAD(1, 1, 0.5f), COREF_HEAD(1, 0, 0.5f)}};
    for (int ck = 0; ck < 3; ck++) {  // plain, checkpointed, chunked attention
        bo.checkpoint_layers = ck == 1;
        bo.attention_chunk = ck == 2 ? 2 : 0;
        s2s_graph *gf, *gb;
        cr_assert_eq(s2s_graph_new_opts(&gf, m, &fo), S2S_OK);
        cr_assert_eq(s2s_graph_new_opts(&gb, m, &bo), S2S_OK);
        s2s_loss_stats s0, s1;
        cr_assert_eq(s2s_forward_backward(gf, &b, &o, NULL, g0, &s0), S2S_OK, "%s",
                     s2s_last_error());
        cr_assert_eq(s2s_forward_backward(gb, &b, &o, NULL, g1, &s1), S2S_OK, "%s",
                     s2s_last_error());
        cr_assert(fabs(s1.loss - s0.loss) <= 1e-2 * s0.loss, "loss %.6g vs %.6g", s1.loss,
                  s0.loss);
        cr_assert(fabs(s1.guided[AL] - s0.guided[AL]) <= 2e-2 * s0.guided[AL],
                  "guided %.6g vs %.6g", s1.guided[AL], s0.guided[AL]);
        double d2 = 0, n2 = 0;
        for (size_t i = 0; i < n; i++) {
            d2 += ((double)g1[i] - g0[i]) * ((double)g1[i] - g0[i]);
            n2 += (double)g0[i] * g0[i];
        }
        double rel = sqrt(d2 / n2);
        // bf16 keeps 8 bits: each operand off by up to 2^-9 relative; the
        // gradient as a whole within a few percent, and not exact.
        cr_assert(rel < 3e-2 && rel > 1e-5, "relative gradient difference %.3g", rel);
        s2s_graph_free(gf);
        s2s_graph_free(gb);
    }
    free(g0);
    free(g1);
    free_batch(&b);
    s2s_model_free(m);
}

// ---- chunked attention (train.attention_chunk) ----

typedef struct chunk_case {
    attn_case a;
    int chunk;
    int head;  // guided head, -1: none
} chunk_case;

ParameterizedTestParameters(graph, chunked_attention_kernels_equal_the_plain_ones) {
    static chunk_case cases[] = {
        // cross-attention with key padding, blocks not dividing the keys
        {{2, 2, 4, 13, 17, {17, 9}, -1, 0.0f, S2S_ATTN_FULL, 0, 0}, 5, 1},
        // causal self-attention with dropout and padding, one key a block
        {{2, 3, 4, 11, 11, {11, 6}, 0, 0.25f, S2S_ATTN_FULL, 0, 0}, 1, -1},
        {{2, 2, 4, 19, 19, {19, 0}, 0, 0.2f, S2S_ATTN_FULL, 0, 0}, 4, 0},
        // the variants beside full heads, with padding and dropout
        {{2, 2, 4, 23, 23, {23, 15}, -1, 0.1f, S2S_ATTN_LOCAL, 3, 0x2}, 6, 1},
        {{2, 2, 4, 21, 21, {21, 14}, 0, 0.3f, S2S_ATTN_BLOCK, 4, 0x3}, 7, 0},
        {{2, 2, 4, 25, 25, {25, 18}, -1, 0.2f, S2S_ATTN_STRIDED, 3, 0x3}, 8, 1},
        {{1, 2, 4, 9, 9, {9, 0}, 0, 0.0f, S2S_ATTN_STRIDED, 2, 0x1}, 64, -1},
    };
    return cr_make_param_array(chunk_case, cases, sizeof cases / sizeof cases[0]);
}

// On random inputs the chunked passes give s2s_attention_train's context
// and s2s_attention_backward's gradients (the plain kernels, which keep the
// weights) within fp32 rounding: the same dropout mask replayed, the same
// masks, the guided head's weights and its loss gradient.
ParameterizedTest(chunk_case *cc, graph, chunked_attention_kernels_equal_the_plain_ones) {
    const attn_case *c = &cc->a;
    int64_t B = c->B, H = c->H, dh = c->dh, tq = c->tq, tk = c->tk, d = H * dh;
    int64_t nq = B * tq * d, nk = B * tk * d, np = B * H * tq * tk, nh = B * tq * tk;
    int klen[2] = {c->klen[0], c->klen[1]};
    s2s_attn_shape sh = {
        .batch = B, .heads = H, .head_dim = dh, .tq = tq, .tk = tk,
        .mask = {.pattern = {.kind = c->kind, .span = c->span, .heads = c->heads,
                             .causal = c->pos0 >= 0},
                 .k_len = c->klen[1] ? klen : NULL},
    };
    float *qb = malloc(sizeof(float) * nq), *kb = malloc(sizeof(float) * nk),
          *vb = malloc(sizeof(float) * nk), *dctx = malloc(sizeof(float) * nq),
          *dhead = malloc(sizeof(float) * nh);
    fill(qb, nq, 2.0), fill(kb, nk, 2.0), fill(vb, nk, 1.0), fill(dctx, nq, 1.0);
    fill(dhead, nh, 1.0);
    s2s_view q = {qb, tq * d, d, NULL}, k = {kb, tk * d, d, NULL}, v = {vb, tk * d, d, NULL};
    // plain
    float *ctx0 = malloc(sizeof(float) * nq), *probs = malloc(sizeof(float) * np),
          *pdrop = malloc(sizeof(float) * np), *dprobs = malloc(sizeof(float) * np);
    uint8_t *keep = malloc((size_t)np);
    s2s_rng r0, r1;
    s2s_rng_seed(&r0, 4242);
    r1 = r0;
    cr_assert_eq(s2s_attention_train(ctx0, probs, c->p > 0 ? pdrop : probs, keep, q, k, v, &sh,
                                     c->p, &r0), S2S_OK, "%s", s2s_last_error());
    float *dq0 = malloc(sizeof(float) * nq), *dk0 = malloc(sizeof(float) * nk),
          *dv0 = malloc(sizeof(float) * nk);
    s2s_attn_saved f = {.q = q, .k = k, .v = v, .probs = probs, .pdrop = pdrop, .keep = keep,
                        .p = c->p};
    cr_assert_eq(s2s_attention_backward((s2s_rows){dq0, tq * d, d}, (s2s_rows){dk0, tk * d, d},
                                        (s2s_rows){dv0, tk * d, d}, dprobs, dctx, &f, &sh,
                                        cc->head >= 0 ? dhead : NULL, cc->head), S2S_OK);
    // chunked, its scratch poisoned
    int64_t C = cc->chunk, ns = B * H * tq * C;
    float *ctx1 = malloc(sizeof(float) * nq), *lse = malloc(sizeof(float) * B * H * tq),
          *phead = malloc(sizeof(float) * nh), *dq1 = malloc(sizeof(float) * nq),
          *dk1 = malloc(sizeof(float) * nk), *dv1 = malloc(sizeof(float) * nk);
    s2s_chunk_scratch w = {.chunk = C, .s = malloc(sizeof(float) * ns),
                           .pd = malloc(sizeof(float) * ns), .dp = malloc(sizeof(float) * ns),
                           .rows = malloc(sizeof(float) * B * H * tq)};
    fill(w.s, ns, 1e3), fill(w.pd, ns, 1e3), fill(w.dp, ns, 1e3), fill(dq1, nq, 1e3);
    fill(dk1, nk, 1e3), fill(dv1, nk, 1e3), fill(ctx1, nq, 1e3);
    uint64_t key = c->p > 0 ? s2s_rng_next(&r1) : 0;
    cr_assert(memcmp(&r0, &r1, sizeof r0) == 0, "one draw each");
    cr_assert(s2s_chunked_fits(&sh));
    cr_assert_eq(s2s_chunked_attention_fwd(ctx1, lse, q, k, v, &sh, c->p, key, &w), S2S_OK);
    cr_assert(rel_diff(ctx1, ctx0, nq) < 1e-5, "context off by %g", rel_diff(ctx1, ctx0, nq));
    if (cc->head >= 0) {
        cr_assert_eq(s2s_chunked_attention_head(phead, lse, q, k, &sh, cc->head), S2S_OK);
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < tq * tk; i++)
                cr_assert(fabsf(phead[b * tq * tk + i] - probs[(b * H + cc->head) * tq * tk + i])
                              < 1e-6f, "head weight %lld", (long long)i);
    }
    s2s_chunk_saved cs = {.q = q, .k = k, .v = v, .ctx = ctx1, .lse = lse, .p = c->p, .key = key,
                          .dhead = cc->head >= 0 ? dhead : NULL, .phead = phead,
                          .head = cc->head};
    cr_assert_eq(s2s_chunked_attention_bwd((s2s_rows){dq1, tq * d, d}, (s2s_rows){dk1, tk * d, d},
                                           (s2s_rows){dv1, tk * d, d}, dctx, &cs, &sh, &w),
                 S2S_OK);
    cr_assert(rel_diff(dq1, dq0, nq) < 1e-5, "dq off by %g", rel_diff(dq1, dq0, nq));
    cr_assert(rel_diff(dk1, dk0, nk) < 1e-5, "dk off by %g", rel_diff(dk1, dk0, nk));
    cr_assert(rel_diff(dv1, dv0, nk) < 1e-5, "dv off by %g", rel_diff(dv1, dv0, nk));
    // dropout did drop, and padded keys get no gradient
    if (c->p > 0) {
        int64_t dropped = 0;
        for (int64_t i = 0; i < np; i++) dropped += probs[i] > 0 && !keep[i];
        cr_assert_gt(dropped, 0);
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = c->klen[1] ? klen[b] : tk; j < tk; j++)
            for (int64_t x = 0; x < d; x++)
                cr_assert(dk1[(b * tk + j) * d + x] == 0 && dv1[(b * tk + j) * d + x] == 0);
    free(qb), free(kb), free(vb), free(dctx), free(dhead), free(ctx0), free(probs), free(pdrop);
    free(dprobs), free(keep), free(dq0), free(dk0), free(dv0), free(ctx1), free(lse), free(phead);
    free(dq1), free(dk1), free(dv1), free(w.s), free(w.pd), free(w.dp), free(w.rows);
}

typedef struct chunk_model_case {
    arch a;
    attn_tables t;
    int chunk;
    bool ckpt;     // with checkpoint_layers too
    bool linear;   // t has linear heads: those layers keep their weights
} chunk_model_case;

ParameterizedTestParameters(graph, chunked_attention_gives_the_plain_gradients) {
    static chunk_model_case cases[] = {
        {{12, 2, 16, 2, 2, S2S_NORM_PRE, S2S_ACT_GELU, 1, 0.1f},
         {ATTN(FULL, 1), ATTN(FULL, 1), ATTN(FULL, 1)}, 2, false, false},
        {{16, 2, 24, 2, 2, S2S_NORM_POST, S2S_ACT_RELU, 0, 0.0f},
         {ATTN(LOCAL, 1, .heads = {1, {1}}), ATTN(BLOCK, 2), ATTN(FULL, 1)}, 3, true, false},
        {{8, 2, 16, 2, 2, S2S_NORM_PRE, S2S_ACT_GELU, 1, 0.1f},
         {ATTN(STRIDED, 2, .heads = {1, {0}}), ATTN(LOCAL, 1),
          ATTN(LINEAR, 1, .heads = {1, {1}}, .layers = {1, {1}})}, 4, false, true},
        {{8, 2, 16, 2, 2, S2S_NORM_PRE, S2S_ACT_GELU, 1, 0.1f},
         {ATTN(LINEAR, 1, .heads = {1, {1}}, .layers = {1, {0}}), ATTN(FULL, 1), ATTN(FULL, 1)},
         1, true, true},
    };
    return cr_make_param_array(chunk_model_case, cases, sizeof cases / sizeof cases[0]);
}

// A whole model with attention_chunk against the plain graph, both
// dropouts and both guided terms on, three steps running: the loss terms
// and every gradient within fp32 rounding, the dropout generators in step;
// the arena is as planned and its attention part smaller.
ParameterizedTest(chunk_model_case *cc, graph, chunked_attention_gives_the_plain_gradients) {
    const arch *a = &cc->a;
    s2s_model *m = make_model_with(a, 7400 + (uint64_t)a->d, &cc->t);
    s2s_graph_opts ch_o = s2s_graph_default_opts();
    ch_o.attention_chunk = cc->chunk;
    ch_o.checkpoint_layers = cc->ckpt;
    s2s_graph_plan_bytes pp, pc;
    int64_t S = against_plain(m, a, &ch_o, 98, 1e-5, &pp, &pc);
    if (!cc->linear && cc->chunk < S)
        cr_assert_lt(pc.bytes[S2S_GRAPH_ATTENTION], pp.bytes[S2S_GRAPH_ATTENTION]);
    s2s_model_free(m);
}

Test(graph, a_negative_attention_chunk_is_refused) {
    arch a = {8, 2, 16, 1, 1, S2S_NORM_PRE, S2S_ACT_RELU, 1, 0.0f};
    s2s_model *m = make_model(&a, 7500);
    s2s_graph_opts o = s2s_graph_default_opts();
    o.attention_chunk = -1;
    s2s_graph *g = (s2s_graph *)&o;
    cr_assert_eq(s2s_graph_new_opts(&g, m, &o), S2S_ERR_INVALID);
    cr_assert_null(g);
    cr_assert(strstr(s2s_last_error(), "attention_chunk"), "%s", s2s_last_error());
    s2s_model_free(m);
}

// A graph made without a guided term's buffers holds less and refuses the
// term; the other term still runs.
Test(graph, a_graph_without_guided_buffers_refuses_the_term) {
    arch a = {8, 2, 16, 1, 1, S2S_NORM_PRE, S2S_ACT_RELU, 1, 0.0f};
    s2s_model *m = make_model(&a, 7600);
    s2s_batch b;
    make_batch(&b, &THREE_COREF, 0, 3);
    s2s_graph_opts full = s2s_graph_default_opts(), o = full;
    o.no_guided[AL] = true;
    o.attention_chunk = 2;
    s2s_graph_plan_bytes pf, po;
    cr_assert_eq(s2s_graph_plan(&pf, m, &full, b.n, b.S, b.T, false), S2S_OK);
    cr_assert_eq(s2s_graph_plan(&po, m, &o, b.n, b.S, b.T, false), S2S_OK);
    cr_assert_lt(po.bytes[S2S_GRAPH_SCRATCH], pf.bytes[S2S_GRAPH_SCRATCH]);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new_opts(&g, m, &o), S2S_OK);
    float *grads = malloc(sizeof(float) * m->n_params);
    s2s_loss_stats st;
    s2s_train_opts to = {.guided = {ALIGN_HEAD(0, 1, 0.5f)}};
    cr_assert_eq(s2s_forward_backward(g, &b, &to, NULL, grads, &st), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "guided alignment"), "%s", s2s_last_error());
    to = (s2s_train_opts){.guided = {COREF_HEAD(0, 1, 0.5f)}};
    cr_assert_eq(s2s_forward_backward(g, &b, &to, NULL, grads, &st), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert_gt(st.guided[CO], 0);
    free(grads);
    s2s_graph_free(g);
    free_batch(&b);
    s2s_model_free(m);
}
