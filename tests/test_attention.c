// Tests for src/layers: multi-head attention against a naive per-head
// loop, with key padding and causal masks; the encoder layer's permutation
// equivariance without positions (and its loss with them).
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoding/state.h"
#include "layers/attention.h"
#include "layers/transformer.h"
#include "model/model_internal.h"
#include "reference.h"
#include "s2s/s2s.h"

typedef struct case_ {
    int B, H, dh, tq, tk, causal, pos0;
    s2s_attn_type kind;  // of the heads in `heads`
    int span;
    unsigned heads;
} case_;

ParameterizedTestParameters(attention, matches_reference) {
    static case_ cases[] = {
        {1, 1, 4, 1, 1, 0, -1, S2S_ATTN_FULL, 0, 0},
        {2, 4, 8, 5, 7, 0, -1, S2S_ATTN_FULL, 0, 0},
        {3, 2, 16, 6, 6, 1, 0, S2S_ATTN_FULL, 0, 0},
        {2, 4, 8, 1, 9, 1, 8, S2S_ATTN_FULL, 0, 0},
        {1, 8, 4, 3, 12, 1, 9, S2S_ATTN_FULL, 0, 0},
        {4, 3, 5, 10, 3, 0, -1, S2S_ATTN_FULL, 0, 0},
        // the variants, on every head or some
        {2, 4, 8, 7, 7, 0, 0, S2S_ATTN_LOCAL, 1, 0xf},
        {2, 4, 8, 6, 6, 1, 0, S2S_ATTN_LOCAL, 2, 0xe},
        {2, 4, 8, 1, 9, 1, 8, S2S_ATTN_LOCAL, 3, 0xf},
        {3, 2, 8, 9, 9, 0, 0, S2S_ATTN_BLOCK, 4, 0x3},
        {2, 2, 8, 9, 9, 1, 0, S2S_ATTN_BLOCK, 2, 0x2},
        {2, 4, 8, 11, 11, 0, 0, S2S_ATTN_STRIDED, 3, 0xf},
        {2, 3, 8, 10, 10, 1, 0, S2S_ATTN_STRIDED, 2, 0x5},
        {2, 4, 8, 5, 7, 0, -1, S2S_ATTN_LINEAR, 0, 0xf},
        {3, 4, 8, 6, 6, 1, 0, S2S_ATTN_LINEAR, 0, 0x5},
        {2, 4, 8, 1, 9, 1, 8, S2S_ATTN_LINEAR, 0, 0xf},
    };
    return cr_make_param_array(case_, cases, sizeof cases / sizeof cases[0]);
}

// Runs one case with block (s2s_attn_shape.block) NULL or given.
static void check_attention(const case_ *c, float *block, float *block_ctx) {
    int64_t B = c->B, H = c->H, dh = c->dh, d = H * dh, tq = c->tq, tk = c->tk;
    // Q in a (B, Tq, 3D) buffer and K/V in a (B, Tk, 2D) one, as in the engine
    float *q = malloc(sizeof(float) * B * tq * 3 * d), *kv = malloc(sizeof(float) * B * tk * 2 * d);
    float *ctx = malloc(sizeof(float) * B * tq * d), *probs = malloc(sizeof(float) * B * H * tq * tk);
    float *want_ctx = malloc(sizeof(float) * tq * d), *want_p = malloc(sizeof(float) * H * tq * tk);
    int *klen = malloc(sizeof(int) * B);
    ref_fill(q, B * tq * 3 * d, 1, 2.0f);
    ref_fill(kv, B * tk * 2 * d, 2, 2.0f);
    for (int64_t b = 0; b < B; b++) klen[b] = (int)(tk - b % tk);  // padding differs per sentence
    s2s_attn_shape s = {
        .batch = B, .heads = H, .head_dim = dh, .tq = tq, .tk = tk,
        .mask = {.pattern = {.kind = c->kind, .span = c->span, .heads = c->heads,
                             .causal = c->causal},
                 .k_len = klen, .q_pos0 = c->pos0},
        .block = block, .block_ctx = block_ctx,
    };
    // the engine's queries and keys through the features (the reference
    // takes phi itself)
    float *qf = malloc(sizeof(float) * B * tq * 3 * d), *kvf = malloc(sizeof(float) * B * tk * 2 * d);
    memcpy(qf, q, sizeof(float) * B * tq * 3 * d);
    memcpy(kvf, kv, sizeof(float) * B * tk * 2 * d);
    s2s_attention_features((s2s_rows){.p = qf, .bs = tq * 3 * d, .rs = 3 * d}, B, tq,
                           &s.mask.pattern, H, dh, true);
    s2s_attention_features((s2s_rows){.p = kvf, .bs = tk * 2 * d, .rs = 2 * d}, B, tk,
                           &s.mask.pattern, H, dh, false);
    s2s_view qv = {.p = qf, .bs = tq * 3 * d, .rs = 3 * d},
             kview = {.p = kvf, .bs = tk * 2 * d, .rs = 2 * d},
             vview = {.p = kvf + d, .bs = tk * 2 * d, .rs = 2 * d};
    memset(ctx, 0xff, sizeof(float) * B * tq * d);  // NaN: every element must be written
    // the queries' places in the block hold anything before a call (NaN
    // here), the rest zeros, which must stay
    for (int64_t i = 0; block && tq == 1 && i < B * H * d; i++)
        if (i % d / dh == i / d % H) block[i] = NAN;
    cr_assert_eq(s2s_attention(ctx, probs, qv, kview, vview, &s), S2S_OK);
    for (int64_t i = 0; block && i < B * H * tq * d; i++)
        if (i % d / dh != i / d % H)
            cr_assert_eq(block[i], 0.0f, "a zero overwritten at %lld", (long long)i);
    for (int64_t b = 0; b < B; b++) {
        ref_attention(want_ctx, want_p, q + b * tq * 3 * d, 3 * d, kv + b * tk * 2 * d,
                      kv + b * tk * 2 * d + d, 2 * d, H, dh, tq, tk, &s.mask, b);
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
            if (sum > 0) cr_assert_float_eq(sum, 1.0, 1e-5);  // a row may see no key
        }
    }
    free(q), free(kv), free(qf), free(kvf), free(ctx), free(probs), free(want_ctx), free(want_p),
        free(klen);
}

ParameterizedTest(case_ *c, attention, matches_reference) {
    check_attention(c, NULL, NULL);  // a product per head
    // one per sentence, on block-diagonal queries (decoding steps)
    size_t n = (size_t)(c->B * c->H * c->tq * c->H * c->dh);
    float *block = calloc(n, sizeof(float)), *block_ctx = malloc(n * sizeof(float));
    check_attention(c, block, block_ctx);
    free(block), free(block_ctx);
}

// Training's layout (train/graph.c): Q, K and V each a (B, T, D) block,
// the queries scaled already, the per-head products on fixed shapes in
// calls of 16 sentences, the last overlapping (B = 37: two whole calls and
// one that starts at sentence 21). The forward pass against the plain
// loop; the backward pass against the same pass on run-time shapes (other
// oneDNN kernels, one call), in fp32 and bf16.
Test(attention, fixed_shapes_in_calls_of_sixteen_match) {
    enum { B = 37, H = 4, DH = 8, D = H * DH, TQ = 5, TK = 7 };
    float *q = malloc(sizeof(float) * B * TQ * D), *qs = malloc(sizeof(float) * B * TQ * D);
    float *k = malloc(sizeof(float) * B * TK * D), *v = malloc(sizeof(float) * B * TK * D);
    float *ctx = malloc(sizeof(float) * B * TQ * D), *probs = malloc(sizeof(float) * B * H * TQ * TK);
    float *want_ctx = malloc(sizeof(float) * TQ * D), *want_p = malloc(sizeof(float) * H * TQ * TK);
    float *dctx = malloc(sizeof(float) * B * TQ * D), *dprobs = malloc(sizeof(float) * B * H * TQ * TK);
    float *grads[2];  // dq | dk | dv, fixed and run-time
    int klen[B];
    for (int i = 0; i < B; i++) klen[i] = TK - i % 3;
    ref_fill(q, B * TQ * D, 3, 2.0f);
    ref_fill(k, B * TK * D, 4, 2.0f);
    ref_fill(v, B * TK * D, 5, 2.0f);
    ref_fill(dctx, B * TQ * D, 6, 1.0f);
    for (int i = 0; i < B * TQ * D; i++) qs[i] = q[i] / sqrtf((float)DH);
    for (int bf16 = 0; bf16 < 2; bf16++) {
        for (int fixed = 1; fixed >= 0; fixed--) {
            s2s_attn_shape s = {
                .batch = B, .heads = H, .head_dim = DH, .tq = TQ, .tk = TK,
                .mask = {.pattern = {.kind = S2S_ATTN_FULL}, .k_len = klen, .q_pos0 = -1},
                .bf16 = bf16, .fixed = fixed, .q_scaled = true,
            };
            s2s_view qv = {.p = qs, .bs = TQ * D, .rs = D}, kv = {.p = k, .bs = TK * D, .rs = D},
                     vv = {.p = v, .bs = TK * D, .rs = D};
            cr_assert_eq(s2s_attention(ctx, probs, qv, kv, vv, &s), S2S_OK);
            for (int64_t b = 0; b < B && fixed; b++) {
                ref_attention(want_ctx, want_p, q + b * TQ * D, D, k + b * TK * D,
                              v + b * TK * D, D, H, DH, TQ, TK, &s.mask, b);
                float tol = bf16 ? 0.05f : 1e-5f;
                cr_assert_lt(ref_max_diff(ctx + b * TQ * D, want_ctx, TQ * D), tol, "b=%lld",
                             (long long)b);
                cr_assert_lt(ref_max_diff(probs + b * H * TQ * TK, want_p, H * TQ * TK), tol);
            }
            float *g = grads[fixed] = malloc(sizeof(float) * B * (TQ + 2 * TK) * D);
            s2s_attn_saved f = {.q = qv, .k = kv, .v = vv, .probs = probs};
            cr_assert_eq(s2s_attention_backward((s2s_rows){g, TQ * D, D},
                                                (s2s_rows){g + B * TQ * D, TK * D, D},
                                                (s2s_rows){g + B * (TQ + TK) * D, TK * D, D},
                                                dprobs, dctx, &f, &s, NULL, 0),
                         S2S_OK);
        }
        float diff = ref_max_diff(grads[1], grads[0], B * (TQ + 2 * TK) * D);
        cr_assert_lt(diff, bf16 ? 1e-3f : 1e-5f, "bf16 %d: %g", bf16, (double)diff);
        free(grads[0]), free(grads[1]);
    }
    free(q), free(qs), free(k), free(v), free(ctx), free(probs), free(want_ctx), free(want_p),
        free(dctx), free(dprobs);
}

// ---- encoder layer: permutation equivariance ----

// Self-attention sees its keys as a set and every other part of the layer
// works row by row, so without positions the layer commutes with any
// reordering of the rows: f(Px) = P f(x). Adding the position table breaks
// it, which is what positions are for (the whole encoder's counterpart is
// in test_decoding.c).

typedef struct layer_arch {
    int d, heads, ffn;
    s2s_norm norm;
    s2s_activation act;
} layer_arch;

static const layer_arch LAYER_ARCHS[] = {
    {16, 2, 32, S2S_NORM_PRE, S2S_ACT_RELU},  {16, 4, 24, S2S_NORM_POST, S2S_ACT_GELU},
    {32, 8, 48, S2S_NORM_PRE, S2S_ACT_GELU},  {24, 3, 40, S2S_NORM_POST, S2S_ACT_RELU},
    {12, 1, 20, S2S_NORM_PRE, S2S_ACT_RELU},
};

enum { PB = 2, PS = 11 };  // sentences, rows
static const int P_LEN[PB] = {PS, PS - 3};  // the second one padded

// A one-layer model whose every weight is random: biases and norm gains too
// (s2s_model_init leaves them 0 and 1, which would hide a mix-up of rows).
// enc: its encoder's attention (NULL: full); the weights depend on a and
// seed alone.
static s2s_model *random_layer_model(const layer_arch *a, uint64_t seed,
                                     const s2s_attention_config *enc) {
    s2s_config c;
    s2s_config_default(&c);
    c.model.d_model = a->d;
    c.model.heads = a->heads;
    c.model.ffn_dim = a->ffn;
    c.model.norm = a->norm;
    c.model.activation = a->act;
    c.model.encoder_layers = c.model.decoder_layers = 1;
    c.model.max_len = PS;
    if (enc) c.model.encoder_attention = *enc;
    snprintf(c.vocab.src, sizeof c.vocab.src, "%s/ref/src.txt", S2S_TEST_DATA);
    snprintf(c.vocab.tgt, sizeof c.vocab.tgt, "%s/ref/tgt.txt", S2S_TEST_DATA);
    s2s_model *m = NULL;
    cr_assert_eq(s2s_model_init(&m, &c, seed), S2S_OK, "%s", s2s_last_error());
    for (int i = 0; i < m->n_tensors; i++) {
        s2s_param *t = &m->tensors[i];
        int64_t n = t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
        if (t->kind == S2S_PARAM_MATRIX) continue;  // Glorot-random already
        ref_fill(t->data, n, seed * 31 + (uint64_t)i, 0.5f);
        if (t->kind == S2S_PARAM_NORM_W)
            for (int64_t j = 0; j < n; j++) t->data[j] += 1.0f;
    }
    return m;
}

// A random permutation of 0..n-1 (Fisher-Yates on a small LCG).
static void random_perm(int *p, int n, uint64_t seed) {
    uint64_t s = seed * 6364136223846793005ULL + 1;
    for (int i = 0; i < n; i++) p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int j = (int)((s >> 33) % (uint64_t)(i + 1));
        int t = p[i];
        p[i] = p[j], p[j] = t;
    }
}

// y = the layer applied to x (PB, PS, D); pe (PS, D) is added first unless NULL.
static void run_layer(float *y, const float *x, const float *pe, const s2s_model *m) {
    int64_t d = m->cfg.model.d_model, f = m->cfg.model.ffn_dim;
    int64_t rows = PB * PS;
    // the weights, or a variant's fast path's scratch (transformer.h)
    s2s_scratch s = {
        .h = malloc(sizeof(float) * rows * d), .q = malloc(sizeof(float) * rows * 3 * d),
        .ctx = malloc(sizeof(float) * rows * d), .ffn = malloc(sizeof(float) * rows * f),
        .probs = malloc(sizeof(float) * s2s_encoder_scratch_floats(m, PB, PS, S2S_SPARSE_AUTO)),
    };
    memcpy(y, x, sizeof(float) * rows * d);
    if (pe)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < d; k++) y[r * d + k] += pe[r % PS * d + k];
    cr_assert_eq(s2s_encoder_layer(y, &s, m, 0, &m->enc[0], PB, PS, P_LEN, NULL), S2S_OK, "%s",
                 s2s_last_error());
    free(s.h), free(s.q), free(s.ctx), free(s.ffn), free(s.probs);
}

// Largest |b[row i] - a[row perm(i)]| over the valid rows; padded rows,
// which stay in place, are compared with themselves.
static float perm_diff(const float *a, const float *b, int perm[PB][PS], int64_t d) {
    float worst = 0;
    for (int bi = 0; bi < PB; bi++)
        for (int i = 0; i < PS; i++) {
            int from = i < P_LEN[bi] ? perm[bi][i] : i;
            float e = ref_max_diff(b + (bi * PS + i) * d, a + (bi * PS + from) * d, d);
            worst = e > worst ? e : worst;
        }
    return worst;
}

// s2s_attn_mask_keys is the fast form of s2s_attn_mask_sees: for every
// pattern, the range holds every key the definition sees, and exactly
// those where s2s_attn_mask_exact says so; heads outside the pattern's
// are full.
Test(attention, mask_range_is_the_keys_the_mask_sees) {
    static const int k_len[3] = {7, 3, 0};
    enum { TK = 7, TQ = 9, HEADS = 2 };
    for (int kind = 0; kind < S2S_ATTN_TYPE_COUNT; kind++)
        for (int causal = 0; causal < 2; causal++)
            for (int span = 1; span <= 4; span++)
                for (int padded = 0; padded < 2; padded++)
                    for (int64_t pos0 = 0; pos0 < 4; pos0++) {
                        s2s_attn_mask m = {
                            .pattern = {.kind = (s2s_attn_type)kind,
                                        .span = kind == S2S_ATTN_STRIDED ? span + 1 : span,
                                        .heads = 2, .causal = causal},
                            .k_len = padded ? k_len : NULL, .q_pos0 = pos0};
                        for (int64_t h = 0; h < HEADS; h++)
                            for (int64_t b = 0; b < 3; b++)
                                for (int64_t i = 0; i < TQ; i++) {
                                    s2s_key_range r = s2s_attn_mask_keys(&m, TK, b, h, i);
                                    for (int64_t j = 0; j < TK; j++) {
                                        bool sees = s2s_attn_mask_sees(&m, TK, b, h, i, j);
                                        bool in = j >= r.lo && j < r.hi;
                                        cr_assert(s2s_attn_mask_exact(&m, h) ? sees == in
                                                                             : !sees || in,
                                                  "kind %d causal %d span %d padded %d pos0 "
                                                  "%lld head %lld b %lld i %lld key %lld",
                                                  kind, causal, span, padded, (long long)pos0,
                                                  (long long)h, (long long)b, (long long)i,
                                                  (long long)j);
                                    }
                                }
                    }
}

Test(encoder_layer, is_permutation_equivariant_without_positions) {
    int n_arch = (int)(sizeof LAYER_ARCHS / sizeof LAYER_ARCHS[0]);
    for (int a = 0; a < n_arch; a++) {
        s2s_model *m = random_layer_model(&LAYER_ARCHS[a], 70 + (uint64_t)a, NULL);
        int64_t d = LAYER_ARCHS[a].d, n = PB * PS * d;
        float *x = malloc(sizeof(float) * n), *px = malloc(sizeof(float) * n);
        float *y = malloc(sizeof(float) * n), *py = malloc(sizeof(float) * n);
        for (int trial = 0; trial < 3; trial++) {
            uint64_t seed = 1000 + 10 * (uint64_t)a + (uint64_t)trial;
            ref_fill(x, n, seed, 1.0f);
            ref_fill(x + PB * PS * d - 3 * d, 3 * d, seed + 7, 9.0f);  // padding: anything
            int perm[PB][PS];
            for (int bi = 0; bi < PB; bi++) random_perm(perm[bi], P_LEN[bi], seed * 3 + bi);
            memcpy(px, x, sizeof(float) * n);
            for (int bi = 0; bi < PB; bi++)  // px row i = x row perm(i)
                for (int i = 0; i < P_LEN[bi]; i++)
                    memcpy(px + (bi * PS + i) * d, x + (bi * PS + perm[bi][i]) * d,
                           sizeof(float) * d);
            cr_assert_gt(ref_max_diff(x, px, n), 0.1f, "arch %d: the permutation moved nothing", a);

            run_layer(y, x, NULL, m);
            run_layer(py, px, NULL, m);
            float e = perm_diff(y, py, perm, d);
            cr_assert_leq(e, 1e-5f, "arch %d trial %d: f(Px) and P f(x) differ by %g", a, trial, e);

            // The positions follow the slot, not the token: f(Px + E) != P f(x + E).
            run_layer(y, x, m->pe, m);
            run_layer(py, px, m->pe, m);
            e = perm_diff(y, py, perm, d);
            cr_assert_gt(e, 1e-2f, "arch %d trial %d: positions made no difference (%g)", a,
                         trial, e);
        }
        free(x), free(px), free(y), free(py);
        s2s_model_free(m);
    }
}

// ---- the seeds' properties of the variants ----

// A table of type with its span (0: the defaults'; the others ignore it).
static s2s_attention_config attn(s2s_attn_type type, int span) {
    if (!span) span = 16;
    return (s2s_attention_config){.type = type, .window = span, .block = span,
                                  .stride = span < 2 ? 2 : span};
}

// x (PB, PS, D) with random rows; the padding of the second sentence too.
static void random_rows(float *x, int64_t d, uint64_t seed) { ref_fill(x, PB * PS * d, seed, 1.0f); }

// A variant that reaches every key of the sentence is full attention:
// local with a window, strided with a stride of at least the length - 1,
// block with a block of at least the length.
Test(encoder_layer, variants_reaching_every_key_equal_full) {
    const layer_arch *a = &LAYER_ARCHS[1];
    int64_t d = a->d, n = PB * PS * d;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n),
          *want = malloc(sizeof(float) * n);
    random_rows(x, d, 5);
    s2s_model *full = random_layer_model(a, 90, NULL);
    run_layer(want, x, full->pe, full);
    s2s_attn_type kinds[] = {S2S_ATTN_LOCAL, S2S_ATTN_BLOCK, S2S_ATTN_STRIDED};
    for (int k = 0; k < 3; k++)
        for (int span = PS - 1; span <= PS + 1; span++) {
            s2s_attention_config c = attn(kinds[k], span);
            s2s_model *m = random_layer_model(a, 90, &c);
            run_layer(y, x, m->pe, m);
            float e = ref_max_diff(y, want, n);
            // a window or stride of PS - 1 reaches across (a stride reaches
            // its own distance); a block from PS
            bool reaches = kinds[k] != S2S_ATTN_BLOCK || span >= PS;
            if (reaches)
                cr_assert_leq(e, 1e-6f, "kind %d span %d: %g from full", kinds[k], span, e);
            else
                cr_assert_gt(e, 1e-3f, "kind %d span %d: the same as full", kinds[k], span);
            s2s_model_free(m);
        }
    s2s_model_free(full);
    free(x), free(y), free(want);
}

// Linear attention, like full, weighs the keys as a set: without positions
// the layer is permutation-equivariant. Local, block and strided see keys
// by position, so it is not.
Test(encoder_layer, only_full_and_linear_are_permutation_equivariant) {
    const layer_arch *a = &LAYER_ARCHS[2];
    int64_t d = a->d, n = PB * PS * d;
    float *x = malloc(sizeof(float) * n), *px = malloc(sizeof(float) * n);
    float *y = malloc(sizeof(float) * n), *py = malloc(sizeof(float) * n);
    s2s_attention_config cases[] = {attn(S2S_ATTN_FULL, 0), attn(S2S_ATTN_LINEAR, 0),
                                    attn(S2S_ATTN_LOCAL, 2), attn(S2S_ATTN_BLOCK, 3),
                                    attn(S2S_ATTN_STRIDED, 3)};
    for (int k = 0; k < 5; k++) {
        s2s_model *m = random_layer_model(a, 120, &cases[k]);
        random_rows(x, d, 7 + (uint64_t)k);
        int perm[PB][PS];
        for (int bi = 0; bi < PB; bi++) random_perm(perm[bi], P_LEN[bi], 40 + (uint64_t)bi);
        memcpy(px, x, sizeof(float) * n);
        for (int bi = 0; bi < PB; bi++)
            for (int i = 0; i < P_LEN[bi]; i++)
                memcpy(px + (bi * PS + i) * d, x + (bi * PS + perm[bi][i]) * d, sizeof(float) * d);
        run_layer(y, x, NULL, m);
        run_layer(py, px, NULL, m);
        float e = perm_diff(y, py, perm, d);
        if (k < 2)
            cr_assert_leq(e, 1e-5f, "%s: f(Px) and P f(x) differ by %g",
                          k ? "linear" : "full", e);
        else
            cr_assert_gt(e, 1e-2f, "type %d: permutation-equivariant (%g)", cases[k].type, e);
        s2s_model_free(m);
    }
    free(x), free(px), free(y), free(py);
}

// Local and block attention are shift-equivariant away from the edges:
// moving the rows by k (any k for local, a multiple of the block for
// block) moves the output rows whose keys stay inside the sentence.
// Strided is not at the layer level: its residue class reaches both ends
// of the sentence from every row. Its pattern is, like the other two's:
// sees(i + k, j + k) == sees(i, j) for keys away from the edges.
Test(encoder_layer, local_and_block_are_shift_equivariant_away_from_the_edges) {
    const layer_arch *a = &LAYER_ARCHS[0];
    int64_t d = a->d, n = PB * PS * d, len = P_LEN[0];
    float *x = malloc(sizeof(float) * n), *sx = malloc(sizeof(float) * n);
    float *y = malloc(sizeof(float) * n), *sy = malloc(sizeof(float) * n);
    struct { s2s_attention_config c; int shift; } cases[] = {
        {attn(S2S_ATTN_LOCAL, 2), 1}, {attn(S2S_ATTN_LOCAL, 1), 3}, {attn(S2S_ATTN_BLOCK, 3), 3},
    };
    for (int k = 0; k < 3; k++) {
        s2s_model *m = random_layer_model(a, 150, &cases[k].c);
        int sh = cases[k].shift, w = cases[k].c.window, b = cases[k].c.block;
        bool local = cases[k].c.type == S2S_ATTN_LOCAL;
        random_rows(x, d, 9 + (uint64_t)k);
        random_rows(sx, d, 99 + (uint64_t)k);
        memcpy(sx, x + sh * d, sizeof(float) * (size_t)((len - sh) * d));  // sx row i = x row i + sh
        run_layer(y, x, NULL, m);
        run_layer(sy, sx, NULL, m);
        int compared = 0;
        for (int64_t i = 0; i + sh < len; i++) {
            // the keys row i sees in sx, and row i + sh in x, all inside sx's copy of x
            int64_t lo = local ? i - w : i / b * b, hi = local ? i + w + 1 : i / b * b + b;
            if (lo < 0 || hi > len - sh) continue;
            float e = ref_max_diff(sy + i * d, y + (i + sh) * d, d);
            cr_assert_leq(e, 1e-5f, "case %d row %lld: %g", k, (long long)i, e);
            compared++;
        }
        cr_assert_geq(compared, 3, "case %d compared %d rows", k, compared);
        // and the rows that meet an edge differ: the layer is not shift-invariant
        cr_assert_gt(ref_max_diff(sy, y + sh * d, (len - sh) * d), 1e-3f, "case %d", k);
        s2s_model_free(m);
    }
    // the patterns themselves, strided's included
    for (int kind = S2S_ATTN_LOCAL; kind <= S2S_ATTN_STRIDED; kind++) {
        s2s_attn_mask mk = {.pattern = {.kind = (s2s_attn_type)kind, .span = 3, .heads = 1}};
        int step = kind == S2S_ATTN_BLOCK ? 3 : 1;
        for (int64_t s = step; s <= 6; s += step)
            for (int64_t i = 0; i < 20; i++)
                for (int64_t j = 0; j < 20; j++)
                    cr_assert_eq(s2s_attn_mask_sees(&mk, 40, 0, 0, i + s, j + s),
                                 s2s_attn_mask_sees(&mk, 40, 0, 0, i, j), "kind %d shift %lld",
                                 kind, (long long)s);
    }
    free(x), free(sx), free(y), free(sy);
}

// ---- the encoder's fast paths (attention_sparse.c) ----

typedef struct sparse_case {
    int B, H, dh, S;
    s2s_attn_type kind;  // of every head
    int span;
} sparse_case;

ParameterizedTestParameters(attention, fast_path_matches_generic) {
    static sparse_case cases[] = {
        {1, 1, 4, 1, S2S_ATTN_LOCAL, 1},     // one row
        {2, 4, 8, 75, S2S_ATTN_LOCAL, 5},    // chunks of 32, the last one partial
        {2, 4, 8, 300, S2S_ATTN_LOCAL, 16},  // groups of 36 chunks (fixed shape), then 8
        {1, 2, 8, 203, S2S_ATTN_LOCAL, 20},  // chunks of 2w = 40 rows against 80 keys
        {3, 1, 8, 33, S2S_ATTN_LOCAL, 1},    // a row past the last chunk of 32
        {3, 2, 16, 40, S2S_ATTN_LOCAL, 3},
        {2, 2, 8, 70, S2S_ATTN_LOCAL, 40},   // chunks of the window
        {2, 3, 8, 9, S2S_ATTN_LOCAL, 16},    // a window past the length: full
        {2, 4, 8, 11, S2S_ATTN_BLOCK, 4},
        {2, 2, 8, 50, S2S_ATTN_BLOCK, 16},
        {2, 2, 8, 100, S2S_ATTN_BLOCK, 7},   // chunks of 5 blocks, the last one partial
        {2, 4, 8, 520, S2S_ATTN_BLOCK, 32},  // full groups of chunks, then the rest
        {2, 4, 8, 20, S2S_ATTN_BLOCK, 64},   // a block past the length: full
        {2, 4, 8, 11, S2S_ATTN_STRIDED, 3},
        {2, 2, 8, 70, S2S_ATTN_STRIDED, 8},
        {3, 4, 8, 13, S2S_ATTN_STRIDED, 2},
        {2, 3, 8, 4, S2S_ATTN_STRIDED, 4},   // the stride is the length
        {2, 4, 8, 20, S2S_ATTN_STRIDED, 50}, // past it: full
        {2, 4, 8, 9, S2S_ATTN_LINEAR, 0},
        {3, 2, 16, 70, S2S_ATTN_LINEAR, 0},
    };
    return cr_make_param_array(sparse_case, cases, sizeof cases / sizeof cases[0]);
}

// s2s_attention_sparse's context equals s2s_attention's (itself checked
// against the definition above) on every row, padded ones included, with
// key padding that differs per sentence (a sentence of one key among
// them) and without.
static void check_fast_path(const sparse_case *c) {
    int64_t B = c->B, H = c->H, dh = c->dh, d = H * dh, S = c->S;
    float *q = malloc(sizeof(float) * B * S * 3 * d);
    float *ctx = malloc(sizeof(float) * B * S * d), *want = malloc(sizeof(float) * B * S * d);
    float *probs = malloc(sizeof(float) * B * H * S * S);
    int *klen = malloc(sizeof(int) * B);
    for (int64_t b = 0; b < B; b++) klen[b] = (int)(b == 0 ? S : b == 1 ? S - S / 3 : 1);
    ref_fill(q, B * S * 3 * d, 11 + (uint64_t)S, 2.0f);
    s2s_attn_shape s = {
        .batch = B, .heads = H, .head_dim = dh, .tq = S, .tk = S,
        .mask = {.pattern = {.kind = c->kind, .span = c->span, .heads = ~(uint64_t)0}},
    };
    // the engine's layout: Q, K, V side by side in rows of 3D, through the features
    s2s_attention_features((s2s_rows){.p = q, .bs = S * 3 * d, .rs = 3 * d}, B, S,
                           &s.mask.pattern, H, dh, true);
    s2s_attention_features((s2s_rows){.p = q + d, .bs = S * 3 * d, .rs = 3 * d}, B, S,
                           &s.mask.pattern, H, dh, false);
    s2s_view qv = {.p = q, .bs = S * 3 * d, .rs = 3 * d},
             kv = {.p = q + d, .bs = S * 3 * d, .rs = 3 * d},
             vv = {.p = q + 2 * d, .bs = S * 3 * d, .rs = 3 * d};
    cr_assert(s2s_attention_sparse_fits(&s));
    size_t n = s2s_attention_sparse_floats(&s);
    cr_assert_gt(n, 0);
    float *scratch = malloc(n * sizeof(float));
    for (int padded = 0; padded < 2; padded++) {
        s.mask.k_len = padded ? klen : NULL;
        cr_assert_eq(s2s_attention(want, probs, qv, kv, vv, &s), S2S_OK);
        memset(ctx, 0xff, sizeof(float) * B * S * d);      // NaN: every element must be written
        memset(scratch, 0xff, n * sizeof(float));          // and nothing read before it is
        cr_assert_eq(s2s_attention_sparse(ctx, scratch, qv, kv, vv, &s), S2S_OK, "%s",
                     s2s_last_error());
        float e = ref_max_diff(ctx, want, B * S * d);
        cr_assert_lt(e, 1e-5f, "kind %d span %d S %d padded %d: off by %g", c->kind, c->span,
                     c->S, padded, e);
    }
    // in bf16 (compute type bf16): the banded paths round the same operands
    // as the generic one (observed: within 3e-7); linear heads' products
    // are others, phi(K)^T [V 1] rounded among them (observed: 3.4e-3)
    s.bf16 = true;
    cr_assert_eq(s2s_attention(want, probs, qv, kv, vv, &s), S2S_OK);
    cr_assert_eq(s2s_attention_sparse(ctx, scratch, qv, kv, vv, &s), S2S_OK, "%s",
                 s2s_last_error());
    float e = ref_max_diff(ctx, want, B * S * d), tol = c->kind == S2S_ATTN_LINEAR ? 1e-2f : 1e-5f;
    cr_assert_lt(e, tol, "bf16, kind %d span %d S %d: off by %g", c->kind, c->span, c->S, e);
    free(q), free(ctx), free(want), free(probs), free(klen), free(scratch);
}

ParameterizedTest(sparse_case *c, attention, fast_path_matches_generic) { check_fast_path(c); }

// Local windows 1 to 12 make 24 shapes of full groups' products, past the
// 16 that get primitives of their own (s2s_mm_args.fixed): the rest run
// with run-time sizes, and every one gives the generic path's context.
Test(attention, fast_path_past_the_fixed_shapes) {
    for (int w = 1; w <= 12; w++) check_fast_path(&(sparse_case){4, 4, 8, 300, S2S_ATTN_LOCAL, w});
}

// Which shapes take the fast path: every head of the one kind, and
// neither a causal cut nor queries that are not the keys.
Test(attention, fast_path_takes_whole_layers_of_one_kind) {
    s2s_attn_shape s = {
        .batch = 2, .heads = 4, .head_dim = 8, .tq = 10, .tk = 10,
        .mask = {.pattern = {.kind = S2S_ATTN_LOCAL, .span = 3, .heads = 0xf}},
    };
    cr_assert(s2s_attention_sparse_fits(&s));
    for (int kind = 0; kind < S2S_ATTN_TYPE_COUNT; kind++) {
        s.mask.pattern.kind = (s2s_attn_type)kind;
        cr_assert_eq(s2s_attention_sparse_fits(&s), kind != S2S_ATTN_FULL, "kind %d", kind);
    }
    s.mask.pattern.kind = S2S_ATTN_BLOCK;
    s.mask.pattern.heads = 0x7;  // head 3 full
    cr_assert_not(s2s_attention_sparse_fits(&s));
    s.mask.pattern.heads = 0xf;
    s.mask.pattern.causal = true;
    cr_assert_not(s2s_attention_sparse_fits(&s));
    s.mask.pattern.causal = false;
    s.tq = 1;
    cr_assert_not(s2s_attention_sparse_fits(&s));
    s.tq = 10;
    s.mask.q_pos0 = 3;
    cr_assert_not(s2s_attention_sparse_fits(&s));
    // and where it pays: a band of at most half the row, or any stride or linear
    s.mask.q_pos0 = 0;
    s.mask.pattern.kind = S2S_ATTN_LOCAL;  // chunks of 10 rows + 2 * 3
    cr_assert_not(s2s_attention_sparse_pays(&s));
    s.tq = s.tk = 75;  // chunks of 32 + 2 * 3
    cr_assert_not(s2s_attention_sparse_pays(&s));
    s.tq = s.tk = 76;
    cr_assert(s2s_attention_sparse_pays(&s));
    s.tq = s.tk = 200;
    s.mask.pattern.kind = S2S_ATTN_BLOCK;
    s.mask.pattern.span = 101;
    cr_assert_not(s2s_attention_sparse_pays(&s));
    s.mask.pattern.span = 100;
    cr_assert(s2s_attention_sparse_pays(&s));
    s.mask.pattern.span = 7;  // chunks of 5 blocks, 35 rows
    s.tq = s.tk = 69;
    cr_assert_not(s2s_attention_sparse_pays(&s));
    s.tq = s.tk = 70;
    cr_assert(s2s_attention_sparse_pays(&s));
    s.tq = s.tk = 5;
    s.mask.pattern.kind = S2S_ATTN_STRIDED;
    cr_assert(s2s_attention_sparse_pays(&s));
    s.mask.pattern.kind = S2S_ATTN_LINEAR;
    cr_assert(s2s_attention_sparse_pays(&s));
}

// ---- the encoder with its fast paths, against it without ----

typedef struct enc_variant {
    s2s_attn_type kind;
    int span;
    unsigned layers;  // bit l: layer l follows kind (0: every layer)
} enc_variant;

// A two-layer model of the test vocabularies whose encoder runs v, every
// weight random (as random_layer_model).
static s2s_model *variant_model(const enc_variant *v, int max_len, uint64_t seed) {
    s2s_config c;
    s2s_config_default(&c);
    c.model.d_model = 32;
    c.model.heads = 4;
    c.model.ffn_dim = 48;
    c.model.encoder_layers = c.model.decoder_layers = 2;
    c.model.max_len = max_len;
    s2s_attention_config *a = &c.model.encoder_attention;
    a->type = v->kind;
    if (v->kind == S2S_ATTN_LOCAL) a->window = v->span;
    if (v->kind == S2S_ATTN_BLOCK) a->block = v->span;
    if (v->kind == S2S_ATTN_STRIDED) a->stride = v->span;
    for (int l = 0; l < 2; l++)
        if (v->layers >> l & 1) a->layers.v[a->layers.n++] = l;
    snprintf(c.vocab.src, sizeof c.vocab.src, "%s/ref/src.txt", S2S_TEST_DATA);
    snprintf(c.vocab.tgt, sizeof c.vocab.tgt, "%s/ref/tgt.txt", S2S_TEST_DATA);
    s2s_model *m = NULL;
    cr_assert_eq(s2s_model_init(&m, &c, seed), S2S_OK, "%s", s2s_last_error());
    for (int i = 0; i < m->n_tensors; i++) {
        s2s_param *t = &m->tensors[i];
        int64_t n = t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
        if (t->kind == S2S_PARAM_MATRIX) continue;
        ref_fill(t->data, n, seed * 31 + (uint64_t)i, 0.5f);
        if (t->kind == S2S_PARAM_NORM_W)
            for (int64_t j = 0; j < n; j++) t->data[j] += 1.0f;
    }
    return m;
}

// Encodes two sentences of S rows (the second padded) and returns the
// memory (2, S, D) and the state's bytes.
static size_t encode_two(float *memory, const s2s_model *m, int S, s2s_sparse_mode mode) {
    int64_t d = m->cfg.model.d_model, V = s2s_vocab_size(m->src_vocab);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    st->scratch.sparse = mode;
    cr_assert_eq(s2s_state_reserve(st, 2, 1, S, 1, 1, false), S2S_OK, "%s", s2s_last_error());
    for (int i = 0; i < 2 * S; i++) st->ids[i] = (int)((i * 7919 + 13) % V);
    st->src_len[0] = S;
    st->src_len[1] = S - S / 3;
    cr_assert_eq(s2s_encode(st, 2, S, false), S2S_OK, "%s", s2s_last_error());
    memcpy(memory, st->memory, sizeof(float) * 2 * S * d);
    size_t bytes = s2s_state_bytes(st);
    s2s_state_free(st);
    return bytes;
}

Test(encoder_layer, fast_paths_give_the_memory_of_the_generic_path) {
    static const enc_variant variants[] = {
        {S2S_ATTN_LOCAL, 3, 0},   {S2S_ATTN_LOCAL, 40, 0}, {S2S_ATTN_BLOCK, 8, 0},
        {S2S_ATTN_STRIDED, 5, 0}, {S2S_ATTN_LINEAR, 0, 0}, {S2S_ATTN_LOCAL, 4, 2},  // layer 1 only
    };
    enum { S = 67 };
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        s2s_model *m = variant_model(&variants[i], S, 300 + i);
        int64_t n = 2 * S * m->cfg.model.d_model;
        float *fast = malloc(sizeof(float) * n), *dense = malloc(sizeof(float) * n);
        encode_two(fast, m, S, S2S_SPARSE_ALWAYS);
        encode_two(dense, m, S, S2S_SPARSE_NEVER);
        float e = ref_max_diff(fast, dense, n);
        cr_assert_lt(e, 1e-5f, "variant %zu: the memories differ by %g", i, e);
        free(fast), free(dense);
        s2s_model_free(m);
    }
}

// The state's scratch follows the path: with a local encoder it no longer
// holds (B, H, S, S) weights, so that its size grows as S.
Test(encoder_layer, fast_path_scratch_grows_linearly) {
    enc_variant local = {S2S_ATTN_LOCAL, 4, 0};
    s2s_model *m = variant_model(&local, 1024, 7);
    int64_t H = m->cfg.model.heads;
    size_t small = s2s_encoder_scratch_floats(m, 2, 256, S2S_SPARSE_AUTO);
    size_t large = s2s_encoder_scratch_floats(m, 2, 1024, S2S_SPARSE_AUTO);
    cr_assert_eq(s2s_encoder_scratch_floats(m, 2, 1024, S2S_SPARSE_NEVER),
                 (size_t)(2 * H * 1024 * 1024));
    // where the band (chunks of 32 rows, 40 keys) is not under half the
    // row, the generic path pays
    cr_assert_eq(s2s_encoder_scratch_floats(m, 2, 79, S2S_SPARSE_AUTO),
                 (size_t)(2 * H * 79 * 79));
    cr_assert_neq(s2s_encoder_scratch_floats(m, 2, 80, S2S_SPARSE_AUTO),
                  (size_t)(2 * H * 80 * 80));
    cr_assert_leq(large, 4 * small + 4096, "%zu floats at 256 rows, %zu at 1024", small, large);
    cr_assert_lt(large, (size_t)(2 * H * 1024 * 1024) / 8);
    float *memory = malloc(sizeof(float) * 2 * 1024 * m->cfg.model.d_model);
    size_t fast = encode_two(memory, m, 1024, S2S_SPARSE_AUTO);
    size_t dense = encode_two(memory, m, 1024, S2S_SPARSE_NEVER);
    cr_assert_lt(fast + sizeof(float) * (size_t)(2 * H * 1024 * 1024) / 2, dense,
                 "state bytes: %zu with the fast path, %zu without", fast, dense);
    free(memory);
    s2s_model_free(m);
}
