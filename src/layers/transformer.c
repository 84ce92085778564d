// Encoder and decoder layers, pre-norm and post-norm.
//
//   pre:  x = x + Sublayer(LN(x))     post: x = LN(x + Sublayer(x))
//
// The Q/K/V layout, the cross-attention K/V slice and the norm placement
// come from layers/recipe.h, which training (train/graph.c) uses too.
// Residual adds are fused into the output projections (oneDNN sum
// post-op), so every sublayer ends with one product accumulating into x.
#include "layers/transformer.h"

#include <math.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "layers/attention.h"
#include "layers/recipe.h"
#include "ops/matmul.h"
#include "ops/ops.h"

static s2s_mm_act ffn_act(const s2s_model *m) {
    return m->cfg.model.activation == S2S_ACT_GELU ? S2S_MM_GELU : S2S_MM_RELU;
}

static bool pre_norm(const s2s_model *m) { return s2s_recipe_pre_norm(&m->cfg.model); }

// Whether a's decoding copy is in compute type bf16.
static bool bf16_copy(const s2s_attn_weights *a) {
    return a->qkv.type == S2S_COMPUTE_BF16 && a->qkv.w;
}

// Whether a decoding product of `rows` rows runs in bf16: in compute type
// bf16 (the decoding copy's), when it has more than one row (matmul.h).
// Not a step's cross-attention products: beams give them K rows, but
// their other operand (K/V or the fold) is the same at every step, and
// rounding it again at every step cost beam search at batch 1 a third of
// its speed; beam search pays for oneDNN's fp32 gemm kernels instead.
static bool bf16_rows(const s2s_attn_weights *a, int64_t rows) {
    return bf16_copy(a) && rows > 1;
}

// y (R, N) (+)= act(x (R, K) · W^T + b): the decoding copy's W in its
// compute type when there is one (s2s_decode_weights), else the fp32 w.
static s2s_status linear(float *y, const float *x, const s2s_wmat *wm, const float *w,
                         bool transposed, const float *b, int64_t rows, int64_t k, int64_t n,
                         s2s_mm_act act, bool accumulate) {
    if (wm->w) return s2s_linear_w(y, x, wm, b, rows, k, n, act, accumulate);
    return s2s_linear(y, x, w, transposed, b, rows, k, n, act, accumulate);
}

// Input of a sublayer: LN(x) into scratch for pre-norm, x itself for post.
static const float *sublayer_in(float *x, s2s_scratch *s, const s2s_model *m,
                                const s2s_norm_weights *n, int64_t rows) {
    if (!pre_norm(m)) return x;
    int64_t d = m->cfg.model.d_model;
    s2s_layernorm(s->h, x, n->w, n->b, rows, d, m->cfg.model.layer_norm_eps);
    return s->h;
}

// Closes a sublayer: post-norm normalises the sum in place.
static void sublayer_out(float *x, const s2s_model *m, const s2s_norm_weights *n, int64_t rows) {
    if (pre_norm(m)) return;
    int64_t d = m->cfg.model.d_model;
    s2s_layernorm(x, x, n->w, n->b, rows, d, m->cfg.model.layer_norm_eps);
}

// x (R, D) += fc2(act(fc1(in)))
static s2s_status ffn(float *x, s2s_scratch *s, const s2s_model *m, const s2s_ffn_weights *w,
                      const s2s_norm_weights *n, int64_t rows) {
    int64_t d = m->cfg.model.d_model, f = m->cfg.model.ffn_dim;
    const float *in = sublayer_in(x, s, m, n, rows);
    if (w->m1.w && w->m2.w) {  // the decoding copy
        S2S_TRY(s2s_linear_pair_w(x, s->ffn, in, &w->m1, w->b1, &w->m2, w->b2, rows, d, f, d,
                                  ffn_act(m)));
    } else {
        S2S_TRY(linear(s->ffn, in, &w->m1, w->w1, w->transposed, w->b1, rows, d, f, ffn_act(m),
                       false));
        S2S_TRY(linear(x, s->ffn, &w->m2, w->w2, w->transposed, w->b2, rows, f, d, S2S_MM_NONE,
                       /*accumulate=*/true));
    }
    sublayer_out(x, m, n, rows);
    return S2S_OK;
}

// x (R, D) += ctx · W_out^T + b_out
static s2s_status attn_out(float *x, s2s_scratch *s, const s2s_model *m,
                           const s2s_attn_weights *w, int64_t rows) {
    int64_t d = m->cfg.model.d_model;
    return linear(x, s->ctx, &w->out, w->w_out, w->transposed, w->b_out, rows, d, d, S2S_MM_NONE,
                  /*accumulate=*/true);
}

// Linear heads' features (s2s_attention_features) on `rows` projected
// rows of queries (and the keys after them, `stride` floats apart).
static void features(float *q, int64_t stride, int64_t rows, const s2s_attn_pattern *p,
                     const s2s_model *m, bool keys_too) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads;
    s2s_rows r = {.p = q, .bs = 0, .rs = stride};
    s2s_attention_features(r, 1, rows, p, H, d / H, true);
    if (!keys_too) return;
    r.p = q + d;
    s2s_attention_features(r, 1, rows, p, H, d / H, false);
}

// The shape of the encoder's self-attention over B sentences of S rows.
static s2s_attn_shape encoder_shape(const s2s_model *m, const s2s_attn_mask *mask, int64_t B,
                                    int64_t S, bool bf16) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads;
    return (s2s_attn_shape){
        .batch = B, .heads = H, .head_dim = d / H, .tq = S, .tk = S, .mask = *mask,
        .bf16 = bf16,
    };
}

// Whether the encoder's self-attention of shape sh, keeping its weights
// in probs or not (NULL), takes the fast path.
static bool encoder_fast(const s2s_attn_shape *sh, const float *probs, s2s_sparse_mode mode) {
    if (probs || mode == S2S_SPARSE_NEVER) return false;
    return mode == S2S_SPARSE_ALWAYS ? s2s_attention_sparse_fits(sh)
                                     : s2s_attention_sparse_pays(sh);
}

size_t s2s_encoder_scratch_floats(const s2s_model *m, int64_t B, int64_t S,
                                  s2s_sparse_mode mode) {
    const s2s_stack *st = &m->arch.enc;
    int64_t H = m->cfg.model.heads;
    size_t most = 0;
    for (int i = 0; i < st->n_subs; i++) {
        if (st->subs[i].kind != S2S_SUB_SELF_ATTN) continue;
        for (int l = 0; l < st->layers; l++) {
            s2s_attn_mask mask = {.pattern = s2s_sub_pattern(&st->subs[i], l)};
            s2s_attn_shape sh = encoder_shape(m, &mask, B, S, false);
            size_t n = encoder_fast(&sh, NULL, mode) ? s2s_attention_sparse_floats(&sh)
                                                     : S2S_SIZE(B, H, S, S);
            most = n > most ? n : most;
        }
    }
    return most;
}

// x (B*S, D) += self-attention of a stack without a cache (the encoder's).
static s2s_status self_attention(float *x, s2s_scratch *s, const s2s_model *m,
                                 const s2s_sub_weights *w, const s2s_attn_mask *mask,
                                 int64_t B, int64_t S, float *probs) {
    int64_t d = m->cfg.model.d_model, rows = B * S;
    const float *in = sublayer_in(x, s, m, &w->norm, rows);
    const s2s_attn_weights *sa = &w->attn;
    S2S_TRY(linear(s->q, in, &sa->qkv, sa->w_qkv, sa->transposed, sa->b_qkv, rows, d, 3 * d,
                   S2S_MM_NONE, false));
    s2s_attn_shape shape = encoder_shape(m, mask, B, S, bf16_rows(sa, S));
    s2s_qkv a = s2s_recipe_self_qkv(s->q, S, d);
    features(s->q, 3 * d, rows, &mask->pattern, m, true);
    if (encoder_fast(&shape, probs, s->sparse))
        S2S_TRY(s2s_attention_sparse(s->ctx, s->probs, a.q, a.k, a.v, &shape));
    else
        S2S_TRY(s2s_attention(s->ctx, probs ? probs : s->probs, a.q, a.k, a.v, &shape));
    S2S_TRY(attn_out(x, s, m, sa, rows));
    sublayer_out(x, m, &w->norm, rows);
    return S2S_OK;
}

s2s_status s2s_encoder_layer(float *x, s2s_scratch *s, const s2s_model *m, int l,
                             const s2s_layer_weights *w, int64_t B, int64_t S,
                             const int *src_len, float *probs) {
    const s2s_stack *st = &m->arch.enc;
    for (int i = 0; i < st->n_subs; i++) {
        const s2s_sublayer *sub = &st->subs[i];
        S2S_ASSERT(sub->kind != S2S_SUB_CROSS_ATTN);  // the encoder has no memory to attend to
        if (sub->kind == S2S_SUB_FFN) {
            S2S_TRY(ffn(x, s, m, &w->sub[i].ffn, &w->sub[i].norm, B * S));
            continue;
        }
        s2s_attn_mask mask = {.pattern = s2s_sub_pattern(sub, l), .k_len = src_len};
        S2S_TRY(self_attention(x, s, m, &w->sub[i], &mask, B, S, probs));
    }
    return S2S_OK;
}

// Decoder layer l's cross-attention pattern.
static s2s_attn_pattern cross_pattern(const s2s_model *m, int l) {
    const s2s_stack *st = &m->arch.dec;
    return s2s_sub_pattern(&st->subs[s2s_stack_find(st, S2S_SUB_CROSS_ATTN)], l);
}

s2s_status s2s_cross_kv(float *kv, const float *memory, const s2s_model *m, int l,
                        const s2s_attn_weights *a, int64_t B, int64_t S) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads;
    S2S_ASSERT(!a->transposed);  // the K/V slice is rows of the untransposed weight
    const float *bias = s2s_recipe_kv_bias(a->b_qkv, d);
    if (a->kv.w)
        S2S_TRY(s2s_linear_w(kv, memory, &a->kv, bias, B * S, d, 2 * d, S2S_MM_NONE, false));
    else
        S2S_TRY(s2s_linear(kv, memory, s2s_recipe_kv_weight(a->w_qkv, d), false, bias, B * S, d,
                           2 * d, S2S_MM_NONE, false));
    s2s_attn_pattern p = cross_pattern(m, l);
    s2s_attention_features((s2s_rows){.p = kv, .rs = 2 * d}, 1, B * S, &p, H, d / H, false);
    return S2S_OK;
}

bool s2s_cross_fold_works(const s2s_model *m) {
    return !s2s_pattern_linear(&m->arch.dec.subs[s2s_stack_find(&m->arch.dec,
                                                                S2S_SUB_CROSS_ATTN)].pattern);
}

bool s2s_cross_fold_pays(const s2s_model *m, int64_t B, int64_t S) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads;
    return s2s_cross_fold_works(m) && B * (H - 1) * S <= d;
}

int64_t s2s_cross_fold_size(const s2s_model *m, int64_t B, int64_t S) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads;
    return B * H * S * (2 * d + 1);
}

s2s_status s2s_cross_fold(const s2s_cross_folded *f, const float *kv, const s2s_model *m,
                          const s2s_attn_weights *a, int64_t B, int64_t S) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads, dh = d / H;
    S2S_ASSERT(!a->transposed);
    float scale = 1.0f / sqrtf((float)dh);
    // qb (H, B*S): b_q,h (1, Dh) · K_h^T (Dh, B*S), every sentence at once
    s2s_mm_args qb = {
        .b0 = 1, .b1 = H, .m = 1, .k = dh, .n = B * S,
        .sa = {0, dh, dh, 1}, .sb = {0, dh, 1, 2 * d}, .sc = {0, B * S, B * S, 1},
        .alpha = scale,
    };
    S2S_TRY(s2s_mm(f->qb, a->b_qkv, kv, &qb));
    // per sentence (broadcast weights need a fixed batch size in oneDNN 2.6):
    // qk (H, S, D) = K_h (S, Dh) · W_q,h (Dh, D)
    // vo (H, S, D) = V_h (S, Dh) · W_out[:, h]^T (Dh, D)
    s2s_mm_args qk = {
        .b0 = 1, .b1 = H, .m = S, .k = dh, .n = d,
        .sa = {0, dh, 2 * d, 1}, .sb = {0, dh * d, d, 1}, .sc = {0, S * d, d, 1},
        .alpha = scale,
    };
    s2s_mm_args vo = qk;
    vo.sb[1] = dh, vo.sb[2] = 1, vo.sb[3] = d, vo.alpha = 1.0f;
    const void *wq = a->w_qkv, *wo = a->w_out;
    if (bf16_rows(a, S)) {
        // the bf16 copy's W_q^T and W_out^T (D, D), read the other way round
        wq = a->qkv.w, wo = a->out.w;
        qk.bf16 = vo.bf16 = qk.b_is_bf16 = vo.b_is_bf16 = true;
        int64_t sq[4] = {0, dh, 1, d}, so[4] = {0, dh * d, d, 1};
        memcpy(qk.sb, sq, sizeof sq);
        memcpy(vo.sb, so, sizeof so);
    }
    for (int64_t b = 0; b < B; b++) {
        const float *kv_b = kv + b * S * 2 * d;
        float *qk_b = f->qk + b * H * S * d, *vo_b = f->vo + b * H * S * d;
        S2S_TRY(s2s_mm(qk_b, kv_b, wq, &qk));
        S2S_TRY(s2s_mm(vo_b, kv_b + d, wo, &vo));
        for (int64_t r = 0; r < H * S; r++)
            for (int64_t i = 0; i < d; i++) vo_b[r * d + i] += a->b_out[i] / (float)H;
    }
    return S2S_OK;
}

// x (B, K*Tq, D) += cross-attention over folded (see s2s_cross_folded).
// The weights go to scratch laid out (B, K*Tq, H, S), so that a row's heads
// are one product's inner dimension, and to probs (B, H, K*Tq, S) if asked.
static s2s_status cross_folded(float *x, const float *in, float *scratch, float *probs,
                               const s2s_cross_folded *f, const s2s_model *m, int64_t B,
                               int64_t tc, int64_t S, const s2s_attn_mask *mask) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads, hs = H * S;
    s2s_mm_args scores = {
        .b0 = B, .b1 = 1, .m = tc, .k = d, .n = hs,
        .sa = {tc * d, 0, d, 1}, .sb = {hs * d, 0, 1, d}, .sc = {tc * hs, 0, hs, 1},
        .alpha = 1.0f,
    };
    S2S_TRY(s2s_mm(scratch, in, f->qk, &scores));
    for (int64_t b = 0; b < B; b++)
        for (int64_t r = 0; r < tc; r++)
            for (int64_t h = 0; h < H; h++) {
                float *row = scratch + ((b * tc + r) * H + h) * S;
                const float *bias = f->qb + (h * B + b) * S;
                s2s_key_range k = s2s_attn_mask_keys(mask, S, b, h, r);
                for (int64_t j = k.lo; j < k.hi; j++) row[j] += bias[j];
                s2s_softmax_row(row, k.lo, k.hi, S);
                if (probs)
                    memcpy(probs + ((b * H + h) * tc + r) * S, row, (size_t)S * sizeof(float));
            }
    s2s_mm_args context = {
        .b0 = B, .b1 = 1, .m = tc, .k = hs, .n = d,
        .sa = {tc * hs, 0, hs, 1}, .sb = {hs * d, 0, d, 1}, .sc = {tc * d, 0, d, 1},
        .alpha = 1.0f, .accumulate = true,
    };
    return s2s_mm(x, scratch, f->vo, &context);
}

// A step's heads in one product per sequence (attention.h; the scratch
// holds one row per sequence), for the attentions of a step (one row)
// with weights a. oneDNN generates kernels for them on first use: 1-2 ms
// for the scores', about 30 ms for the context's (its fp32 gemm). bf16's
// greedy search, which otherwise needs neither (bf16_rows), takes the
// first for batches only (a lone sentence's first line would wait for it)
// and never the second. (Cross-attention's weights have a bf16 copy
// exactly when self-attention's do.)
static void step_blocks(s2s_attn_shape *sh, s2s_scratch *s, const s2s_attn_weights *a,
                        s2s_dec_pos pos, int64_t seqs) {
    bool gemm_f32 = !(bf16_copy(a) && pos.beams == 1);
    sh->block = pos.tq == 1 && (gemm_f32 || seqs > 1) ? s->block : NULL;
    sh->block_ctx = pos.tq == 1 && gemm_f32 ? s->block_ctx : NULL;
}

// x (B, K*Tq, D) += masked self-attention over the cache: one fused QKV
// product, then K and V of the new rows copied into the cache.
static s2s_status cached_self_attention(float *x, s2s_scratch *s, const s2s_model *m,
                                        const s2s_sub_weights *w, const s2s_attn_mask *mask,
                                        float *self_kv, s2s_dec_pos pos, int64_t B,
                                        float *probs) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads, tq = pos.tq;
    int64_t seqs = B * pos.beams, rows = seqs * tq;
    const float *in = sublayer_in(x, s, m, &w->norm, rows);
    const s2s_attn_weights *a = &w->attn;
    S2S_TRY(linear(s->q, in, &a->qkv, a->w_qkv, a->transposed, a->b_qkv, rows, d, 3 * d,
                   S2S_MM_NONE, false));
    features(s->q, 3 * d, rows, &mask->pattern, m, true);
    for (int64_t i = 0; i < seqs; i++)
        for (int64_t t = 0; t < tq; t++)
            memcpy(self_kv + (i * pos.t_alloc + pos.t0 + t) * 2 * d, s->q + (i * tq + t) * 3 * d + d,
                   (size_t)(2 * d) * sizeof(float));
    s2s_attn_shape self = {
        .batch = seqs, .heads = H, .head_dim = d / H, .tq = tq, .tk = pos.t0 + tq,
        .mask = *mask, .bf16 = bf16_rows(a, tq),
    };
    step_blocks(&self, s, a, pos, seqs);
    s2s_qkv qkv = s2s_recipe_cached_qkv(s->q, 3, tq, self_kv, pos.t_alloc, d);
    S2S_TRY(s2s_attention(s->ctx, probs ? probs : s->probs, qkv.q, qkv.k, qkv.v, &self));
    S2S_TRY(attn_out(x, s, m, a, rows));
    sublayer_out(x, m, &w->norm, rows);
    return S2S_OK;
}

// ---- the decoder's self-attention state ----

// Decoder layer l's self-attention pattern.
static s2s_attn_pattern self_pattern(const s2s_model *m, int l) {
    const s2s_stack *st = &m->arch.dec;
    return s2s_sub_pattern(&st->subs[s2s_stack_find(st, S2S_SUB_SELF_ATTN)], l);
}

s2s_self_state s2s_self_state_of(const s2s_model *m, int l) {
    s2s_attn_pattern p = self_pattern(m, l);
    if (p.kind != S2S_ATTN_LOCAL && p.kind != S2S_ATTN_LINEAR) return S2S_SELF_FULL;
    for (int64_t h = 0; h < m->cfg.model.heads; h++)  // mixed heads keep every position
        if (s2s_pattern_head(&p, h) != p.kind) return S2S_SELF_FULL;
    return p.kind == S2S_ATTN_LOCAL ? S2S_SELF_RING : S2S_SELF_LINEAR;
}

// Slots of layer l's ring for up to T positions.
static int64_t ring_slots(const s2s_model *m, int l, int64_t T) {
    int64_t r = (int64_t)self_pattern(m, l).span + 1;
    return r < T ? r : T;
}

int64_t s2s_self_state_floats(const s2s_model *m, int l, s2s_self_state k, int64_t T) {
    int64_t d = m->cfg.model.d_model, dh = d / m->cfg.model.heads;
    switch (k) {
    case S2S_SELF_RING: return ring_slots(m, l, T) * 2 * d;
    case S2S_SELF_LINEAR: return d * (dh + 1);
    default: return T * 2 * d;
    }
}

int64_t s2s_self_state_keys(const s2s_model *m, int l, s2s_self_state k, int64_t T) {
    return k == S2S_SELF_RING ? ring_slots(m, l, T) : k == S2S_SELF_LINEAR ? 0 : T;
}

// x (B*K, D) += a step's self-attention of a layer that is local on every
// head, over its ring: the row's K|V go to slot t0 % R, then the row
// attends to every slot filled so far (slot order is not position order;
// softmax does not care), with the window applied by what the ring holds.
static s2s_status ring_self_attention(float *x, s2s_scratch *s, const s2s_model *m, int l,
                                      const s2s_sub_weights *w, float *ring, s2s_dec_pos pos,
                                      int64_t B) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads, seqs = B * pos.beams;
    int64_t R = ring_slots(m, l, pos.t_alloc), slot = pos.t0 % R;
    S2S_ASSERT(pos.tq == 1);
    const float *in = sublayer_in(x, s, m, &w->norm, seqs);
    const s2s_attn_weights *a = &w->attn;
    S2S_TRY(linear(s->q, in, &a->qkv, a->w_qkv, a->transposed, a->b_qkv, seqs, d, 3 * d,
                   S2S_MM_NONE, false));
    for (int64_t i = 0; i < seqs; i++)
        memcpy(ring + (i * R + slot) * 2 * d, s->q + i * 3 * d + d, (size_t)(2 * d) * sizeof(float));
    // every slot held is a key the row sees: no causal cut, no window
    s2s_attn_shape self = {
        .batch = seqs, .heads = H, .head_dim = d / H, .tq = 1,
        .tk = pos.t0 + 1 < R ? pos.t0 + 1 : R,
        .mask = {.pattern = {.kind = S2S_ATTN_FULL}},
    };
    step_blocks(&self, s, a, pos, seqs);
    s2s_qkv qkv = s2s_recipe_cached_qkv(s->q, 3, 1, ring, R, d);
    S2S_TRY(s2s_attention(s->ctx, s->probs, qkv.q, qkv.k, qkv.v, &self));
    S2S_TRY(attn_out(x, s, m, a, seqs));
    sublayer_out(x, m, &w->norm, seqs);
    return S2S_OK;
}

// x (B*K, D) += a step's self-attention of a layer that is linear on every
// head, through its state (B*K, H, Dh, Dh + 1), cleared at position 0.
static s2s_status linear_self_attention(float *x, s2s_scratch *s, const s2s_model *m,
                                        const s2s_sub_weights *w, const s2s_attn_pattern *p,
                                        float *state, s2s_dec_pos pos, int64_t B) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads, dh = d / H;
    int64_t seqs = B * pos.beams;
    S2S_ASSERT(pos.tq == 1);
    if (pos.t0 == 0) memset(state, 0, (size_t)(seqs * d * (dh + 1)) * sizeof(float));
    const float *in = sublayer_in(x, s, m, &w->norm, seqs);
    const s2s_attn_weights *a = &w->attn;
    S2S_TRY(linear(s->q, in, &a->qkv, a->w_qkv, a->transposed, a->b_qkv, seqs, d, 3 * d,
                   S2S_MM_NONE, false));
    features(s->q, 3 * d, seqs, p, m, true);
    s2s_qkv qkv = s2s_recipe_self_qkv(s->q, 1, d);
    // the scratch's weights have room for (B*K, H, Dh + 1) (decoding/state.c)
    S2S_TRY(s2s_linear_attention_step(s->ctx, state, s->probs, qkv.q, qkv.k, qkv.v, seqs, H,
                                      dh));
    S2S_TRY(attn_out(x, s, m, a, seqs));
    sublayer_out(x, m, &w->norm, seqs);
    return S2S_OK;
}

// x (B, K*Tq, D) += cross-attention over the encoder output, a sentence's
// sequences together: folded when given the fold.
static s2s_status cross_attention(float *x, s2s_scratch *s, const s2s_model *m,
                                  const s2s_sub_weights *w, const s2s_attn_mask *mask,
                                  const float *cross_kv, const s2s_cross_folded *folded,
                                  s2s_dec_pos pos, int64_t B, int64_t S, float *probs) {
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads;
    int64_t tc = pos.beams * pos.tq, rows = B * tc;
    const float *in = sublayer_in(x, s, m, &w->norm, rows);
    if (folded) {
        S2S_TRY(cross_folded(x, in, s->probs, probs, folded, m, B, tc, S, mask));
        sublayer_out(x, m, &w->norm, rows);
        return S2S_OK;
    }
    const s2s_attn_weights *a = &w->attn;
    if (a->qkv.w) S2S_TRY(s2s_linear_w(s->q, in, &a->qkv, a->b_qkv, rows, d, d, S2S_MM_NONE, false));
    else S2S_TRY(s2s_linear(s->q, in, a->w_qkv, false, a->b_qkv, rows, d, d, S2S_MM_NONE, false));
    features(s->q, d, rows, &mask->pattern, m, false);
    s2s_attn_shape cross = {
        .batch = B, .heads = H, .head_dim = d / H, .tq = tc, .tk = S, .mask = *mask,
    };
    step_blocks(&cross, s, a, pos, B * pos.beams);
    s2s_qkv qkv = s2s_recipe_cached_qkv(s->q, 1, tc, cross_kv, S, d);
    S2S_TRY(s2s_attention(s->ctx, probs ? probs : s->probs, qkv.q, qkv.k, qkv.v, &cross));
    S2S_TRY(attn_out(x, s, m, a, rows));
    sublayer_out(x, m, &w->norm, rows);
    return S2S_OK;
}

s2s_status s2s_decoder_layer(float *x, s2s_scratch *s, const s2s_model *m, int l,
                             const s2s_layer_weights *w, float *self_kv, s2s_dec_pos pos,
                             const float *cross_kv, const s2s_cross_folded *folded, int64_t S,
                             const int *src_len, int64_t B, float *self_probs,
                             float *cross_probs) {
    const s2s_stack *st = &m->arch.dec;
    for (int i = 0; i < st->n_subs; i++) {
        const s2s_sublayer *sub = &st->subs[i];
        const s2s_sub_weights *sw = &w->sub[i];
        if (sub->kind == S2S_SUB_SELF_ATTN) {
            s2s_attn_mask mask = {.pattern = s2s_sub_pattern(sub, l), .q_pos0 = pos.t0};
            s2s_self_state k = pos.bounded ? s2s_self_state_of(m, l) : S2S_SELF_FULL;
            S2S_ASSERT(k == S2S_SELF_FULL || !self_probs);
            if (k == S2S_SELF_RING)
                S2S_TRY(ring_self_attention(x, s, m, l, sw, self_kv, pos, B));
            else if (k == S2S_SELF_LINEAR)
                S2S_TRY(linear_self_attention(x, s, m, sw, &mask.pattern, self_kv, pos, B));
            else
                S2S_TRY(cached_self_attention(x, s, m, sw, &mask, self_kv, pos, B, self_probs));
        } else if (sub->kind == S2S_SUB_CROSS_ATTN) {
            s2s_attn_mask mask = {.pattern = s2s_sub_pattern(sub, l), .k_len = src_len};
            S2S_TRY(cross_attention(x, s, m, sw, &mask, cross_kv, folded, pos, B, S,
                                    cross_probs));
        } else {
            S2S_TRY(ffn(x, s, m, &sw->ffn, &sw->norm, B * pos.beams * pos.tq));
        }
    }
    return S2S_OK;
}
