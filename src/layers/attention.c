// Multi-head attention, both passes: two batched oneDNN products around
// a masked softmax (or, for linear heads, a normalisation of phi scores),
// with attention dropout between them in training, and the backward pass
// of the same; and linear heads' recurrent step for decoding. The
// encoder's fast paths, which never make the (B, H, S, S) scores, are in
// attention_sparse.c.
#include "layers/attention.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "ops/matmul.h"
#include "ops/ops.h"

// ---- per-head products ----
//
// Every product of either pass is one s2s_mm over (B, H) that reads head
// h's columns of a (B, T, ...) activation in place, and the (B, H, Tq, Tk)
// weights (or their gradient) whole. Strides (B, H, rows, cols):

typedef struct strides {
    int64_t s[4];
} strides;

// A head-strided view (rows of T), or its transpose read in place.
static strides heads_of(int64_t bs, int64_t rs, const s2s_attn_shape *s) {
    return (strides){{bs, s->head_dim, rs, 1}};
}
static strides heads_t(int64_t bs, int64_t rs, const s2s_attn_shape *s) {
    return (strides){{bs, s->head_dim, 1, rs}};
}
// The contiguous (B, Tq, D) context (or its gradient), as heads.
static strides context_of(const s2s_attn_shape *s) {
    int64_t d = s->heads * s->head_dim;
    return (strides){{s->tq * d, s->head_dim, d, 1}};
}
// The weights (B, H, Tq, Tk), or their transpose (B, H, Tk, Tq) in place.
static strides weights_of(const s2s_attn_shape *s) {
    return (strides){{s->heads * s->tq * s->tk, s->tq * s->tk, s->tk, 1}};
}
static strides weights_t(const s2s_attn_shape *s) {
    return (strides){{s->heads * s->tq * s->tk, s->tq * s->tk, 1, s->tk}};
}

// Which operands of a bf16 product are in bf16 already (uint16_t).
enum { IN_F32 = 0, A_BF16 = 1, B_BF16 = 2 };

// Whether a (B, H, R, C) operand of strides st has no gaps: its strides,
// ordered, are those of a dense tensor of its sizes (dims of size 1 aside).
static bool gap_free(strides st, int64_t b, int64_t h, int64_t r, int64_t c) {
    int64_t size[4] = {b, h, r, c}, want = 1;
    bool done[4] = {false};
    for (int n = 0; n < 4; n++) {
        int at = -1;  // the smallest stride not yet taken
        for (int i = 0; i < 4; i++)
            if (!done[i] && size[i] > 1 && (at < 0 || st.s[i] < st.s[at])) at = i;
        if (at < 0) break;
        if (st.s[at] != want) return false;
        want *= size[at];
        done[at] = true;
    }
    return true;
}

// Sentences per call of a fixed-shape product: a batch's go in calls of
// FIXED_BATCH, the last overlapping the one before so that every call has
// the same shape (it writes some sentences' results twice, the same values:
// no product here accumulates, and none writes what it reads). So the
// primitives of a (Tq, Tk) serve every batch of more sentences, however
// many: about 100 KB each (oneDNN's kernels for that shape), they would
// otherwise be made anew for every number of sentences a batch has.
enum { FIXED_BATCH = 16 };

// c (B, H, M, N) = alpha a (B, H, M, K) · b (B, H, K, N); with bf16, `in`
// says which of a and b hold bf16 values already. Fixed shapes with
// s->fixed where the operands have no gaps (the dense bf16 copy s2s_mm
// packs of an fp32 operand has none).
static s2s_status per_head_in(float *c, strides sc, const void *a, strides sa, const void *b,
                              strides sb, const s2s_attn_shape *s, int64_t m, int64_t k,
                              int64_t n, float alpha, bool bf16, int in) {
    s2s_mm_args args = {
        .b0 = s->batch, .b1 = s->heads, .m = m, .k = k, .n = n,
        .alpha = alpha, .bf16 = bf16,
        .a_is_bf16 = bf16 && (in & A_BF16), .b_is_bf16 = bf16 && (in & B_BF16),
    };
    memcpy(args.sa, sa.s, sizeof sa.s);
    memcpy(args.sb, sb.s, sizeof sb.s);
    memcpy(args.sc, sc.s, sizeof sc.s);
    int64_t B = s->batch, H = s->heads;
    bool pack_a = bf16 && !args.a_is_bf16, pack_b = bf16 && !args.b_is_bf16;
    args.fixed = s->fixed && (pack_a || gap_free(sa, B, H, m, k)) &&
                 (pack_b || gap_free(sb, B, H, k, n)) && gap_free(sc, B, H, m, n);
    if (!args.fixed || B <= FIXED_BATCH) return s2s_mm(c, a, b, &args);
    size_t ea = args.a_is_bf16 ? sizeof(uint16_t) : sizeof(float);
    size_t eb = args.b_is_bf16 ? sizeof(uint16_t) : sizeof(float);
    args.b0 = FIXED_BATCH;
    for (int64_t first = 0; first < B; first += FIXED_BATCH) {
        int64_t at = first + FIXED_BATCH > B ? B - FIXED_BATCH : first;
        S2S_TRY(s2s_mm(c + at * sc.s[0], (const void *)((const char *)a + at * sa.s[0] * ea),
                       (const void *)((const char *)b + at * sb.s[0] * eb), &args));
    }
    return S2S_OK;
}

// v's rows as a product reads them: their bf16 copy where there is one
// and the product is bf16 (adding `flag` to *in), else v.p.
static const void *rows_of(s2s_view v, const s2s_attn_shape *s, int flag, int *in) {
    if (!s->bf16 || !v.p16) return v.p;
    *in |= flag;
    return v.p16;
}

float s2s_attention_scale(const s2s_attn_shape *s) {
    return s2s_pattern_linear(&s->mask.pattern) || s->q_scaled
               ? 1.0f
               : 1.0f / sqrtf((float)s->head_dim);
}

// ---- linear heads' features ----

void s2s_attention_features(s2s_rows x, int64_t B, int64_t T, const s2s_attn_pattern *p,
                            int64_t heads, int64_t head_dim, bool queries) {
    if (!s2s_pattern_linear(p)) return;
    float scale = 1.0f / sqrtf((float)head_dim);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            for (int64_t h = 0; h < heads; h++) {
                float *r = x.p + b * x.bs + t * x.rs + h * head_dim;
                if (s2s_pattern_head(p, h) == S2S_ATTN_LINEAR)
                    s2s_elu1_row(r, head_dim);  // phi
                else if (queries)
                    for (int64_t c = 0; c < head_dim; c++) r[c] *= scale;
            }
}

void s2s_attention_features_backward(s2s_rows dx, s2s_view fx, int64_t B, int64_t T,
                                     const s2s_attn_pattern *p, int64_t heads,
                                     int64_t head_dim, bool queries) {
    if (!s2s_pattern_linear(p)) return;
    float scale = 1.0f / sqrtf((float)head_dim);
    for (int64_t h = 0; h < heads; h++) {
        bool linear = s2s_pattern_head(p, h) == S2S_ATTN_LINEAR;
        if (!linear && !queries) continue;
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < T; t++) {
                float *d = dx.p + b * dx.bs + t * dx.rs + h * head_dim;
                const float *f = fx.p + b * fx.bs + t * fx.rs + h * head_dim;
                for (int64_t c = 0; c < head_dim; c++)
                    d[c] *= linear ? fminf(f[c], 1.0f) : scale;
            }
    }
}

// ---- weights from scores ----

// The sum linear attention adds to each row's total (docs/attention.md).
static const float linear_eps = 1e-6f;

// Rows a call of s2s_softmax_rows takes in weigh.
enum { SOFTMAX_ROWS = 64 };

// In place on scores (B, H, Tq, Tk): each row's weights over the keys it
// sees; s->norms (when set) gets linear rows' 1 / (sum + eps). Softmax
// rows go SOFTMAX_ROWS at a time (s2s_softmax_rows, as the encoder's
// fast paths run theirs).
static void weigh(float *probs, const s2s_attn_shape *s) {
    int64_t B = s->batch, H = s->heads, tq = s->tq, tk = s->tk;
    const s2s_attn_mask *m = &s->mask;
    s2s_key_span keys[SOFTMAX_ROWS];
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            bool linear = s2s_pattern_head(&m->pattern, h) == S2S_ATTN_LINEAR;
            bool exact = s2s_attn_mask_exact(m, h);
            for (int64_t i0 = 0; i0 < tq; i0 += SOFTMAX_ROWS) {
                int64_t n = tq - i0 < SOFTMAX_ROWS ? tq - i0 : SOFTMAX_ROWS;
                float *x0 = probs + ((b * H + h) * tq + i0) * tk;
                for (int64_t r = 0; r < n; r++) {
                    int64_t i = i0 + r;
                    float *x = x0 + r * tk;
                    s2s_key_range k = keys[r] = s2s_attn_mask_keys(m, tk, b, h, i);
                    if (!exact)
                        for (int64_t j = k.lo; j < k.hi; j++)
                            if (!s2s_attn_mask_sees(m, tk, b, h, i, j)) x[j] = -INFINITY;
                    if (!linear) continue;
                    float inv = s2s_normalize_row(x, k.lo, k.hi, tk, linear_eps);
                    if (s->norms) s->norms[(b * H + h) * tq + i] = inv;
                }
                if (!linear) s2s_softmax_rows(x0, n, tk, keys);
            }
        }
}

// ---- forward ----

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
    if (block_scores(s)) {
        // (B, H, Tk) = block queries (B, H, D) · K^T (B, D, Tk): the zeros
        // leave row h head h's dot products only
        int64_t d = H * dh;
        s2s_mm_args one = {
            .b0 = B, .b1 = 1, .m = H, .k = d, .n = tk,
            .sa = {H * d, 0, d, 1}, .sb = {k.bs, 0, 1, k.rs}, .sc = {H * tk, 0, tk, 1},
            .alpha = s2s_attention_scale(s), .bf16 = s->bf16,
        };
        block_queries(s, q);
        S2S_TRY(s2s_mm(probs, s->block, k.p, &one));
    } else {
        // scores (B, H, Tq, Tk) = Q (B, H, Tq, Dh) · K^T (B, H, Dh, Tk) / sqrt(Dh)
        int in = IN_F32;
        const void *qa = rows_of(q, s, A_BF16, &in), *kb = rows_of(k, s, B_BF16, &in);
        S2S_TRY(per_head_in(probs, weights_of(s), qa, heads_of(q.bs, q.rs, s), kb,
                            heads_t(k.bs, k.rs, s), s, tq, dh, tk, s2s_attention_scale(s), s->bf16, in));
    }
    weigh(probs, s);
    return S2S_OK;
}

s2s_status s2s_attention_context(float *ctx, const float *weights, s2s_view v,
                                 const s2s_attn_shape *s) {
    int64_t B = s->batch, H = s->heads, dh = s->head_dim, tq = s->tq, tk = s->tk;
    int64_t d = H * dh;
    // ctx (B, H, Tq, Dh) written as (B, Tq, D) = weights · V (B, H, Tk, Dh)
    if (!block_context(s)) {
        int in = s->bf16 && s->w16 ? A_BF16 : IN_F32;
        const void *vb = rows_of(v, s, B_BF16, &in);
        return per_head_in(ctx, context_of(s), in & A_BF16 ? (const void *)s->w16 : weights,
                           weights_of(s), vb, heads_of(v.bs, v.rs, s), s, tq, tk, dh, 1.0f,
                           s->bf16, in);
    }
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

// ---- causal linear attention, a step at a time ----

s2s_status s2s_linear_attention_step(float *ctx, float *state, float *num, s2s_view q,
                                     s2s_view k, s2s_view v, int64_t B, int64_t heads,
                                     int64_t head_dim) {
    int64_t H = heads, dh = head_dim, w = dh + 1, hs = dh * w, d = H * dh;
    // S_h[:, 0..Dh) += phi(k_h)^T (Dh, 1) · v_h (1, Dh): a product of inner size 1
    s2s_mm_args update = {
        .b0 = B, .b1 = H, .m = dh, .k = 1, .n = dh,
        .sa = {k.bs, dh, 1, 1}, .sb = {v.bs, dh, dh, 1}, .sc = {H * hs, hs, w, 1},
        .alpha = 1.0f, .accumulate = true,
    };
    S2S_TRY(s2s_mm(state, k.p, v.p, &update));
    // S_h[:, Dh] += phi(k_h): the normaliser z, in the column of [v | 1]'s 1
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            float *z = state + (b * H + h) * hs + dh;
            const float *kh = k.p + b * k.bs + h * dh;
            for (int64_t i = 0; i < dh; i++) z[i * w] += kh[i];
        }
    // num (B, H, 1, Dh + 1) = phi(q_h) (1, Dh) · S_h (Dh, Dh + 1)
    s2s_mm_args read = {
        .b0 = B, .b1 = H, .m = 1, .k = dh, .n = w,
        .sa = {q.bs, dh, dh, 1}, .sb = {H * hs, hs, w, 1}, .sc = {H * w, w, w, 1},
        .alpha = 1.0f,
    };
    S2S_TRY(s2s_mm(num, q.p, state, &read));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            const float *n = num + (b * H + h) * w;
            float inv = 1.0f / (n[dh] + linear_eps);
            for (int64_t i = 0; i < dh; i++) ctx[b * d + h * dh + i] = n[i] * inv;
        }
    return S2S_OK;
}

// ---- training ----

s2s_status s2s_attention_train(float *ctx, float *probs, float *pdrop, uint8_t *keep,
                               s2s_view q, s2s_view k, s2s_view v, const s2s_attn_shape *s,
                               float p, s2s_rng *rng) {
    int64_t n = s->batch * s->heads * s->tq * s->tk;
    S2S_TRY(s2s_attention_probs(probs, q, k, s));
    const float *w = probs;
    if (p > 0.0f) {
        memcpy(pdrop, probs, (size_t)n * sizeof *pdrop);
        // one draw keys the whole mask (s2s_dropout_keeps), which the
        // chunked passes replay element by element (train/attention_chunked.c)
        s2s_dropout_keyed(pdrop, keep, n, p, s2s_rng_next(rng), 0);
        w = pdrop;
    }
    if (s->bf16 && s->w16) s2s_to_bf16(s->w16, w, (size_t)n);
    return s2s_attention_context(ctx, w, v, s);
}

s2s_status s2s_attention_backward(s2s_rows dq, s2s_rows dk, s2s_rows dv, float *dprobs,
                                  const float *dctx, const s2s_attn_saved *f,
                                  const s2s_attn_shape *s, const float *dhead, int64_t head) {
    int64_t B = s->batch, H = s->heads, dh = s->head_dim, tq = s->tq, tk = s->tk;
    int64_t n = B * H * tq * tk, nd = B * tq * H * dh;
    const float *w = f->p > 0.0f ? f->pdrop : f->probs;
    // bf16: dO, then dS, rounded once for their two products each
    uint16_t *r16 = NULL;
    const void *dO = dctx, *dS = dprobs;
    if (s->bf16) {
        r16 = s2s_bf16_scratch((size_t)(n > nd ? n : nd));
        if (!r16) return s2s_fail(S2S_ERR_NOMEM, "out of memory (bf16 attention gradients)");
        s2s_to_bf16(r16, dctx, (size_t)nd);
        dO = dS = r16;
    }

    // dPd (B, H, Tq, Tk) = dO (B, H, Tq, Dh) · V^T
    int in = A_BF16;
    const void *vb = rows_of(f->v, s, B_BF16, &in);
    S2S_TRY(per_head_in(dprobs, weights_of(s), dO, context_of(s), vb,
                        heads_t(f->v.bs, f->v.rs, s), s, tq, dh, tk, 1.0f, s->bf16, in));
    // dV (B, H, Tk, Dh) = Pd^T · dO, Pd from its bf16 copy where there is one
    in = s->bf16 && s->w16 ? A_BF16 | B_BF16 : B_BF16;
    S2S_TRY(per_head_in(dv.p, heads_of(dv.bs, dv.rs, s), in & A_BF16 ? (const void *)s->w16 : w,
                        weights_t(s), dO, context_of(s), s, tk, tq, dh, 1.0f, s->bf16, in));

    s2s_dropout_backward(dprobs, dprobs, f->keep, n, f->p);
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
        for (int64_t h = 0; h < H; h++) {
            bool linear = s2s_pattern_head(&s->mask.pattern, h) == S2S_ATTN_LINEAR;
            for (int64_t i = 0; i < tq; i++) {
                int64_t row = (b * H + h) * tq + i;
                float *d = dprobs + row * tk;
                const float *y = f->probs + row * tk;
                s2s_key_range r = s2s_attn_mask_keys(&s->mask, tk, b, h, i);
                if (linear)
                    s2s_normalize_backward_row(d, d, y, f->norms[row], r.lo, r.hi, tk);
                else
                    s2s_softmax_backward_row(d, d, y, r.lo, r.hi, tk);
            }
        }

    if (r16) s2s_to_bf16(r16, dprobs, (size_t)n);
    // dQ (B, H, Tq, Dh) = alpha dS · K
    in = A_BF16;
    const void *kb = rows_of(f->k, s, B_BF16, &in);
    S2S_TRY(per_head_in(dq.p, heads_of(dq.bs, dq.rs, s), dS, weights_of(s), kb,
                        heads_of(f->k.bs, f->k.rs, s), s, tq, tk, dh, s2s_attention_scale(s), s->bf16, in));
    // dK (B, H, Tk, Dh) = alpha dS^T · Q
    in = A_BF16;
    const void *qb = rows_of(f->q, s, B_BF16, &in);
    return per_head_in(dk.p, heads_of(dk.bs, dk.rs, s), dS, weights_t(s), qb,
                       heads_of(f->q.bs, f->q.rs, s), s, tk, tq, dh, s2s_attention_scale(s), s->bf16, in);
}
