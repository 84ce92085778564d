// Exact chunked attention for training, both passes side by side (the
// formulas: attention_chunked.h).
#include "train/attention_chunked.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "ops/matmul.h"
#include "ops/ops.h"

bool s2s_chunked_fits(const s2s_attn_shape *s) { return !s2s_pattern_linear(&s->mask.pattern); }

// ---- one block of keys ----

// Keys [j0, j1) and the query rows [qlo, qhi) that see at least one of
// them in some sentence and head (empty: qlo == qhi).
typedef struct block {
    int64_t j0, j1, qlo, qhi;
} block;

static block block_at(const s2s_attn_shape *s, int64_t j0, int64_t chunk) {
    block k = {.j0 = j0, .j1 = j0 + chunk < s->tk ? j0 + chunk : s->tk, .qlo = s->tq, .qhi = 0};
    for (int64_t i = 0; i < s->tq; i++)
        for (int64_t bh = 0; bh < s->batch * s->heads; bh++) {
            s2s_key_range r = s2s_attn_mask_keys(&s->mask, s->tk, bh / s->heads,
                                                 bh % s->heads, i);
            if (r.lo < r.hi && r.lo < k.j1 && r.hi > k.j0) {
                if (i < k.qlo) k.qlo = i;
                k.qhi = i + 1;
                break;
            }
        }
    if (k.qlo > k.qhi) k.qlo = k.qhi;
    return k;
}

// Query row r of a block, counting (B, H, qlo..qhi) in order: sentence b,
// head h, query i, its index in the (B, H, Tq) row arrays and its scores
// in the (B, H, M, C) scratch.
typedef struct block_row {
    int64_t b, h, i, row, at;
} block_row;

static int64_t block_rows(const s2s_attn_shape *s, block k) {
    return s->batch * s->heads * (k.qhi - k.qlo);
}

static block_row block_row_at(const s2s_attn_shape *s, const s2s_chunk_scratch *w, block k,
                              int64_t r) {
    int64_t m = k.qhi - k.qlo, bh = r / m;
    block_row x = {.b = bh / s->heads, .h = bh % s->heads, .i = k.qlo + r % m};
    x.row = bh * s->tq + x.i;
    x.at = (bh * s->tq + x.i - k.qlo) * w->chunk;
    return x;
}

// A (B, H, M, C) block of scratch, or its transpose (B, H, C, M) in place.
static void scratch_strides(int64_t st[4], const s2s_attn_shape *s, int64_t chunk, bool t) {
    st[0] = s->heads * s->tq * chunk;
    st[1] = s->tq * chunk;
    st[2] = t ? 1 : chunk;
    st[3] = t ? chunk : 1;
}

// Head-strided rows of a view from row r0, or their transpose.
static void view_strides(int64_t st[4], int64_t bs, int64_t rs, const s2s_attn_shape *s, bool t) {
    st[0] = bs;
    st[1] = s->head_dim;
    st[2] = t ? 1 : rs;
    st[3] = t ? rs : 1;
}

// c (B, H, m, n) (+)= alpha a (B, H, m, k) · b (B, H, k, n), strides given.
static s2s_status mm(float *c, const int64_t sc[4], const float *a, const int64_t sa[4],
                     const float *b, const int64_t sb[4], const s2s_attn_shape *s, int64_t m,
                     int64_t k, int64_t n, float alpha, bool acc) {
    s2s_mm_args args = {.b0 = s->batch, .b1 = s->heads, .m = m, .k = k, .n = n,
                        .alpha = alpha, .accumulate = acc, .bf16 = s->bf16};
    memcpy(args.sa, sa, sizeof args.sa);
    memcpy(args.sb, sb, sizeof args.sb);
    memcpy(args.sc, sc, sizeof args.sc);
    return s2s_mm(c, a, b, &args);
}

// w->s (B, H, M, C) = alpha Q[qlo..qhi) K[j0..j1)^T.
static s2s_status block_scores(const s2s_attn_shape *s, const s2s_chunk_scratch *w, block k,
                               s2s_view q, s2s_view kv) {
    int64_t sc[4], sa[4], sb[4];
    scratch_strides(sc, s, w->chunk, false);
    view_strides(sa, q.bs, q.rs, s, false);
    view_strides(sb, kv.bs, kv.rs, s, true);
    return mm(w->s, sc, q.p + k.qlo * q.rs, sa, kv.p + k.j0 * kv.rs, sb, s, k.qhi - k.qlo,
              s->head_dim, k.j1 - k.j0, s2s_attention_scale(s), false);
}

// Row i of head h of sentence b in the block: x its scores (C), the part
// [lo, hi) of the block the row sees (relative to j0), strided heads'
// unseen keys there set to -inf. Returns false when it sees none of it.
static bool row_seen(float *x, const s2s_attn_shape *s, block k, int64_t b, int64_t h,
                     int64_t i, int64_t *lo, int64_t *hi) {
    s2s_key_range r = s2s_attn_mask_keys(&s->mask, s->tk, b, h, i);
    *lo = (r.lo > k.j0 ? r.lo : k.j0) - k.j0;
    *hi = (r.hi < k.j1 ? r.hi : k.j1) - k.j0;
    if (*lo >= *hi) return false;
    if (!s2s_attn_mask_exact(&s->mask, h))
        for (int64_t j = *lo; j < *hi; j++)
            if (!s2s_attn_mask_sees(&s->mask, s->tk, b, h, i, k.j0 + j)) x[j] = -INFINITY;
    return true;
}

// x[0, n) = exp(x - shift) on [lo, hi) (-inf gives 0), 0 elsewhere; the sum.
static float exp_part(float *x, int64_t lo, int64_t hi, int64_t n, float shift) {
    float sum = s2s_exp_shift_row(x + lo, hi - lo, shift);
    memset(x, 0, (size_t)lo * sizeof *x);
    memset(x + hi, 0, (size_t)(n - hi) * sizeof *x);
    return sum;
}

// pd[0, n) = drop(x) with the mask at weights row `row` from key j0.
static void drop_row(float *pd, const float *x, int64_t n, float p, uint64_t key, int64_t row,
                     const s2s_attn_shape *s, int64_t j0) {
    float scale = 1.0f / (1.0f - p);
    uint64_t first = (uint64_t)(row * s->tk + j0);
    for (int64_t j = 0; j < n; j++)
        pd[j] = s2s_dropout_keeps(key, first + (uint64_t)j, p) ? x[j] * scale : 0.0f;
}

// Multiplies head h's columns of rows [0, n) of the (B, Tq, D) context
// from row (b, i) by f.
static void scale_head(float *ctx, const s2s_attn_shape *s, int64_t b, int64_t h, int64_t i,
                       float f) {
    float *o = ctx + (b * s->tq + i) * s->heads * s->head_dim + h * s->head_dim;
    for (int64_t c = 0; c < s->head_dim; c++) o[c] *= f;
}

// ---- forward ----

// The online softmax of one block over its rows: mx (B, H, Tq) running
// maxima, l (B, H, Tq) running sums; w->s becomes e^(S - m'), w->pd its
// dropped copy; the context rows are rescaled to the new maxima.
static void fwd_rows(float *ctx, float *l, const s2s_attn_shape *s, const s2s_chunk_scratch *w,
                     block k, float p, uint64_t key) {
    int64_t n = k.j1 - k.j0;
    for (int64_t r = 0; r < block_rows(s, k); r++) {
        block_row q = block_row_at(s, w, k, r);
        float *x = w->s + q.at, *mx = w->rows + q.row, m_new;
        int64_t lo, hi;
        if (!row_seen(x, s, k, q.b, q.h, q.i, &lo, &hi) ||
            (m_new = s2s_max_row(x + lo, hi - lo)) == -INFINITY) {
            memset(x, 0, (size_t)n * sizeof *x);
        } else {
            if (m_new < *mx) m_new = *mx;
            float corr = *mx == -INFINITY ? 0.0f : expf(*mx - m_new);
            l[q.row] = l[q.row] * corr + exp_part(x, lo, hi, n, m_new);
            if (corr != 1.0f) scale_head(ctx, s, q.b, q.h, q.i, corr);
            *mx = m_new;
        }
        if (p > 0.0f) drop_row(w->pd + q.at, x, n, p, key, q.row, s, k.j0);
    }
}

// ctx rows [qlo, qhi) += weights (w->pd or w->s) · V[j0..j1).
static s2s_status block_context(float *ctx, const s2s_attn_shape *s, const s2s_chunk_scratch *w,
                                block k, s2s_view v, float p) {
    int64_t d = s->heads * s->head_dim, sc[4] = {s->tq * d, s->head_dim, d, 1}, sa[4], sb[4];
    scratch_strides(sa, s, w->chunk, false);
    view_strides(sb, v.bs, v.rs, s, false);
    return mm(ctx + k.qlo * d, sc, p > 0.0f ? w->pd : w->s, sa, v.p + k.j0 * v.rs, sb, s,
              k.qhi - k.qlo, k.j1 - k.j0, s->head_dim, 1.0f, true);
}

s2s_status s2s_chunked_attention_fwd(float *ctx, float *lse, s2s_view q, s2s_view k,
                                     s2s_view v, const s2s_attn_shape *s, float p,
                                     uint64_t key, const s2s_chunk_scratch *w) {
    S2S_ASSERT(s2s_chunked_fits(s) && w->chunk >= 1);
    int64_t H = s->heads, rows = s->batch * H * s->tq, d = H * s->head_dim;
    memset(ctx, 0, (size_t)(s->batch * s->tq * d) * sizeof *ctx);
    for (int64_t r = 0; r < rows; r++) {
        w->rows[r] = -INFINITY;
        lse[r] = 0.0f;  // the running sums, until the end
    }
    for (int64_t j0 = 0; j0 < s->tk; j0 += w->chunk) {
        block b = block_at(s, j0, w->chunk);
        if (b.qlo == b.qhi) continue;
        S2S_TRY(block_scores(s, w, b, q, k));
        fwd_rows(ctx, lse, s, w, b, p, key);
        S2S_TRY(block_context(ctx, s, w, b, v, p));
    }
    for (int64_t r = 0; r < rows; r++) {
        int64_t b = r / (H * s->tq), h = r / s->tq % H, i = r % s->tq;
        float l = lse[r];
        if (l > 0.0f) scale_head(ctx, s, b, h, i, 1.0f / l);
        lse[r] = l > 0.0f ? w->rows[r] + logf(l) : -INFINITY;
    }
    return S2S_OK;
}

s2s_status s2s_chunked_attention_head(float *probs, const float *lse, s2s_view q, s2s_view k,
                                      const s2s_attn_shape *s, int64_t head) {
    int64_t H = s->heads, dh = s->head_dim, tq = s->tq, tk = s->tk;
    S2S_ASSERT(head >= 0 && head < H);
    s2s_mm_args a = {
        .b0 = s->batch, .b1 = 1, .m = tq, .k = dh, .n = tk,
        .sa = {q.bs, 0, q.rs, 1}, .sb = {k.bs, 0, 1, k.rs}, .sc = {tq * tk, 0, tk, 1},
        .alpha = s2s_attention_scale(s), .bf16 = s->bf16,
    };
    S2S_TRY(s2s_mm(probs, q.p + head * dh, k.p + head * dh, &a));
    block all = {.j0 = 0, .j1 = tk};
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t i = 0; i < tq; i++) {
            float *x = probs + (b * tq + i) * tk, shift = lse[(b * H + head) * tq + i];
            int64_t lo, hi;
            if (!row_seen(x, s, all, b, head, i, &lo, &hi) || shift == -INFINITY)
                memset(x, 0, (size_t)tk * sizeof *x);
            else
                exp_part(x, lo, hi, tk, shift);
        }
    return S2S_OK;
}

// ---- backward ----

// w->rows (B, H, Tq) = rowsum(dO o O) per head, plus rowsum(P o dhead) on
// the guided head's rows.
static void bwd_row_dots(const float *dctx, const s2s_chunk_saved *f, const s2s_attn_shape *s,
                         const s2s_chunk_scratch *w) {
    int64_t H = s->heads, dh = s->head_dim, tq = s->tq, tk = s->tk;
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < tq; i++) {
                int64_t at = (b * tq + i) * H * dh + h * dh;
                float dot = 0.0f;
                for (int64_t c = 0; c < dh; c++) dot += dctx[at + c] * f->ctx[at + c];
                if (f->dhead && h == f->head) {
                    const float *pr = f->phead + (b * tq + i) * tk;
                    const float *dr = f->dhead + (b * tq + i) * tk;
                    for (int64_t j = 0; j < tk; j++) dot += pr[j] * dr[j];
                }
                w->rows[(b * H + h) * tq + i] = dot;
            }
}

// The block's weights again: w->s = P = e^(S - lse), w->pd = drop(P).
static void bwd_weights(const s2s_chunk_saved *f, const s2s_attn_shape *s,
                        const s2s_chunk_scratch *w, block k) {
    int64_t n = k.j1 - k.j0;
    for (int64_t r = 0; r < block_rows(s, k); r++) {
        block_row q = block_row_at(s, w, k, r);
        float *x = w->s + q.at;
        int64_t lo, hi;
        if (!row_seen(x, s, k, q.b, q.h, q.i, &lo, &hi) || f->lse[q.row] == -INFINITY)
            memset(x, 0, (size_t)n * sizeof *x);
        else
            exp_part(x, lo, hi, n, f->lse[q.row]);
        if (f->p > 0.0f) drop_row(w->pd + q.at, x, n, f->p, f->key, q.row, s, k.j0);
    }
}

// w->dp = dS = P o (drop'(dPd) + dhead - Dr), from w->dp = dPd.
static void bwd_scores(const s2s_chunk_saved *f, const s2s_attn_shape *s,
                       const s2s_chunk_scratch *w, block k) {
    int64_t n = k.j1 - k.j0;
    float scale = f->p > 0.0f ? 1.0f / (1.0f - f->p) : 1.0f;
    for (int64_t r = 0; r < block_rows(s, k); r++) {
        block_row q = block_row_at(s, w, k, r);
        const float *pr = w->s + q.at;
        float *d = w->dp + q.at, dr = w->rows[q.row];
        const float *gh = f->dhead && q.h == f->head
                              ? f->dhead + (q.b * s->tq + q.i) * s->tk + k.j0 : NULL;
        uint64_t first = (uint64_t)(q.row * s->tk + k.j0);
        for (int64_t j = 0; j < n; j++) {
            float dp = d[j];
            if (f->p > 0.0f)
                dp = s2s_dropout_keeps(f->key, first + (uint64_t)j, f->p) ? dp * scale : 0.0f;
            if (gh) dp += gh[j];
            d[j] = pr[j] * (dp - dr);
        }
    }
}

// Rows [r0, r1) of a head-strided gradient view, every head: 0.
static void zero_rows(s2s_rows x, const s2s_attn_shape *s, int64_t r0, int64_t r1) {
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t r = r0; r < r1; r++)
            memset(x.p + b * x.bs + r * x.rs, 0,
                   (size_t)(s->heads * s->head_dim) * sizeof(float));
}

// The four products of a block: dV_j, dPd (then dS), dQ, dK_j.
static s2s_status bwd_block(s2s_rows dq, s2s_rows dk, s2s_rows dv, const float *dctx,
                            const s2s_chunk_saved *f, const s2s_attn_shape *s,
                            const s2s_chunk_scratch *w, block k) {
    int64_t d = s->heads * s->head_dim, dh = s->head_dim, m = k.qhi - k.qlo, n = k.j1 - k.j0;
    int64_t so[4] = {s->tq * d, dh, d, 1}, sw[4], swt[4], sx[4], sy[4];
    const float *o = dctx + k.qlo * d;
    float al = s2s_attention_scale(s);
    scratch_strides(sw, s, w->chunk, false);
    scratch_strides(swt, s, w->chunk, true);
    S2S_TRY(block_scores(s, w, k, f->q, f->k));
    bwd_weights(f, s, w, k);
    // dV_j (B, H, C, Dh) = drop(P)^T · dO
    view_strides(sx, dv.bs, dv.rs, s, false);
    S2S_TRY(mm(dv.p + k.j0 * dv.rs, sx, f->p > 0.0f ? w->pd : w->s, swt, o, so, s, n, m, dh,
               1.0f, false));
    // dPd (B, H, M, C) = dO · V_j^T
    view_strides(sy, f->v.bs, f->v.rs, s, true);
    S2S_TRY(mm(w->dp, sw, o, so, f->v.p + k.j0 * f->v.rs, sy, s, m, dh, n, 1.0f, false));
    bwd_scores(f, s, w, k);
    // dQ (B, H, M, Dh) += alpha dS · K_j
    view_strides(sx, dq.bs, dq.rs, s, false);
    view_strides(sy, f->k.bs, f->k.rs, s, false);
    S2S_TRY(mm(dq.p + k.qlo * dq.rs, sx, w->dp, sw, f->k.p + k.j0 * f->k.rs, sy, s, m, n, dh,
               al, true));
    // dK_j (B, H, C, Dh) = alpha dS^T · Q
    view_strides(sx, dk.bs, dk.rs, s, false);
    view_strides(sy, f->q.bs, f->q.rs, s, false);
    return mm(dk.p + k.j0 * dk.rs, sx, w->dp, swt, f->q.p + k.qlo * f->q.rs, sy, s, n, m, dh, al,
              false);
}

s2s_status s2s_chunked_attention_bwd(s2s_rows dq, s2s_rows dk, s2s_rows dv, const float *dctx,
                                     const s2s_chunk_saved *f, const s2s_attn_shape *s,
                                     const s2s_chunk_scratch *w) {
    S2S_ASSERT(s2s_chunked_fits(s) && w->chunk >= 1);
    bwd_row_dots(dctx, f, s, w);
    zero_rows(dq, s, 0, s->tq);
    for (int64_t j0 = 0; j0 < s->tk; j0 += w->chunk) {
        block b = block_at(s, j0, w->chunk);
        if (b.qlo == b.qhi) {
            zero_rows(dk, s, b.j0, b.j1);
            zero_rows(dv, s, b.j0, b.j1);
            continue;
        }
        S2S_TRY(bwd_block(dq, dk, dv, dctx, f, s, w, b));
    }
    return S2S_OK;
}
