// The encoder's self-attention without its (S, S) scores (issue 29): local
// and block heads as products of chunks of query rows against the keys
// around them (Longformer's chunked layout), strided heads as banded
// products plus each residue class against itself, linear heads as
// phi(Q) · (phi(K)^T V). Every product is a batched oneDNN product over
// chunks; what lies between them is copies and row softmaxes, linear in S.
//
// Dimension letters (attention.h): B sentences, H heads, Dh head width,
// D = H*Dh, S rows (queries and keys alike); BH = B*H. Local, block and
// strided: chunks of c query rows, nc = ceil(S / c) of them per sentence
// and head, each against its band of kw = c + 2w keys, [t*c - w,
// t*c + c + w) for chunk t (w = 0 for block); a stride s has ns =
// ceil(S/s) rows per residue class.
#include "layers/attention.h"

#include <math.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "ops/matmul.h"
#include "ops/ops.h"

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// dst (n) = src (n), 8 floats at a time as one move each (memcpy of a
// constant size, inlined): a head's row is a few of them, where a call of
// memcpy per row (which gcc makes of a plain loop) costs more than the
// copy.
static inline void copy_row(float *restrict dst, const float *restrict src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) memcpy(dst + i, src + i, 8 * sizeof *dst);
    for (; i < n; i++) dst[i] = src[i];
}

// ---- which shapes take it, and their scratch ----

bool s2s_attention_sparse_fits(const s2s_attn_shape *s) {
    const s2s_attn_pattern *p = &s->mask.pattern;
    if (p->causal || s->tq != s->tk || s->mask.q_pos0 != 0 || s->heads < 1 || s->heads > 64)
        return false;
    uint64_t all = s->heads == 64 ? ~(uint64_t)0 : ((uint64_t)1 << s->heads) - 1;
    if ((p->heads & all) != all) return false;  // a full head among them
    return p->kind == S2S_ATTN_LOCAL || p->kind == S2S_ATTN_BLOCK ||
           p->kind == S2S_ATTN_STRIDED || p->kind == S2S_ATTN_LINEAR;
}

// A strided pattern's band of keys around each chunk of query rows.
typedef struct band {
    int64_t c, nc, w, kw;
    int64_t s, ns;  // s < S: the residue classes' products too; else 0
} band;

static band band_of(const s2s_attn_shape *s) {
    int64_t S = s->tk, span = s->mask.pattern.span;
    band b = {0};
    if (span >= S) {  // the band |i - j| < s is every key, and each class only i itself
        b.c = S;
    } else {
        b.c = b.s = span;
        b.w = span - 1;
    }
    b.nc = (S + b.c - 1) / b.c;
    b.kw = b.c + 2 * b.w;
    b.ns = b.s ? b.nc : 0;
    return b;
}

// Local and block heads, a group of chunks at a time (tiles). Chunk t of
// sentence b, its c query rows from t*c, sees keys from t*c - w on,
// kw = c + 2w of them at most (its band), in every head alike. A group of
// g chunks (one sentence's or several) is copied, each row of Q, K and V
// once for all its heads, into dense queries (g, H, c, Dh), keys and
// values (g, H, kw, Dh) each (rows outside [0, S) as zeros); its scores
// (g, H, c, kw) become weights in place and its context (g, H, c, Dh)
// goes back to the heads' columns. A group stays in the core's cache
// between its copies and its products, and dense operands of one fixed
// shape let oneDNN 2.6 run a group's products on its batched (brgemm)
// kernels. Operands read in place run no faster (docs/attention.md, "Cost
// against length"): Q and K where the projection leaves them (rows of 3D
// floats, every head's Q, K and V) go to its gemm, one small product
// after another, at about half the speed; blocks of Q and K in arrays of
// their own run on brgemm, but a fifth to a third slower than dense
// copies; the context written straight into the heads' columns slows its
// product by about what the copy back costs; overlapping bands it refuses.
typedef struct tiles {
    int64_t c, w, kw, nc, n;  // n = B * nc chunks
    int64_t g;                // chunks a group (fewer in the last)
    bool fixed;               // a full group's products have a fixed shape
} tiles;

// Query rows per chunk for local attention of half-width w: each row's
// scores cost c + 2w instead of its 2w + 1, the keys and values are
// copied (c + 2w) / c times, and each chunk's products are c rows high.
// At w 16, 4 heads of 32, 4,096 rows, 1 thread, in the encoder (CPU time
// on a loaded machine, +-10%): a layer's attention took about 3.7 ms with
// c = 16, 3.3 with 32, 3.6 with 48 and 3.8 with 64.
static int64_t local_chunk(int64_t w) { return 2 * w > 32 ? 2 * w : 32; }

// Chunks per group: about GROUP_FLOATS of copies, scores and context.
enum { GROUP_FLOATS = 131072 };
static int64_t tile_group(int64_t c, int64_t kw, int64_t heads, int64_t dh) {
    int64_t per = heads * (2 * c * dh + 2 * kw * dh + c * kw), g = GROUP_FLOATS / per;
    return g > 1 ? g : 1;
}

static tiles tiles_of(const s2s_attn_shape *s) {
    int64_t S = s->tk, span = s->mask.pattern.span;
    tiles t = {0};
    if (s->mask.pattern.kind == S2S_ATTN_LOCAL) {  // |i - j| <= w: w = S - 1 sees every key
        t.w = min64(span, S - 1);
        t.c = local_chunk(t.w);
    } else {  // block: whole blocks to a chunk, its keys its rows
        t.c = span >= 32 ? span : span * ((32 + span - 1) / span);
    }
    // One chunk of S rows: its band holds every key. Its shape follows the
    // input, so that its products get no fixed shape: a shape a length
    // would fill the primitive cache.
    t.fixed = t.c < S;
    t.c = min64(t.c, S);
    t.kw = t.c + 2 * t.w;
    t.nc = (S + t.c - 1) / t.c;
    t.n = s->batch * t.nc;
    t.g = tile_group(t.c, t.kw, s->heads, s->head_dim);
    return t;
}

bool s2s_attention_sparse_pays(const s2s_attn_shape *s) {
    if (!s2s_attention_sparse_fits(s)) return false;
    s2s_attn_type kind = s->mask.pattern.kind;
    if (kind == S2S_ATTN_STRIDED || kind == S2S_ATTN_LINEAR || s->tk == 0) return true;
    tiles t = tiles_of(s);
    return 2 * t.kw <= s->tk;
}

// The scratch of a band, in the order s2s_attention_sparse lays it out:
// queries (BH, nc, c, Dh), keys and values (BH, nc, kw, Dh) each, scores
// (BH, nc, c, kw), context (BH, nc, c, Dh), residue scores (BH, s, ns, ns).
static size_t band_floats(const s2s_attn_shape *s, const band *b, size_t part[6]) {
    int64_t bh = s->batch * s->heads, dh = s->head_dim;
    part[0] = S2S_SIZE(bh, b->nc, b->c, dh);
    part[1] = part[2] = S2S_SIZE(bh, b->nc, b->kw, dh);
    part[3] = S2S_SIZE(bh, b->nc, b->c, b->kw);
    part[4] = part[0];
    part[5] = S2S_SIZE(bh, b->s, b->ns, b->ns);
    size_t total = 0;
    for (int i = 0; i < 6; i++) total = s2s_size_add(total, part[i]);
    return total;
}

// Linear heads: values with a column of ones (B, S, H, Dh+1), then
// phi(K)^T [V 1] (B, H, Dh, Dh+1), then phi(Q) · that (B, S, H, Dh+1).
static size_t linear_floats(const s2s_attn_shape *s, size_t part[3]) {
    int64_t B = s->batch, H = s->heads, dh = s->head_dim, S = s->tk;
    part[0] = S2S_SIZE(B, S, H, dh + 1);
    part[1] = S2S_SIZE(B, H, dh, dh + 1);
    part[2] = part[0];
    return s2s_size_add(s2s_size_add(part[0], part[1]), part[2]);
}

// The scratch of tiles: a group's queries (g, H, c, Dh), keys and values
// (g, H, kw, Dh) each, scores (g, H, c, kw) and context (g, H, c, Dh).
static size_t tiles_floats(const s2s_attn_shape *s, const tiles *t, size_t part[5]) {
    int64_t gh = min64(t->g, t->n) * s->heads;
    part[0] = part[4] = S2S_SIZE(gh, t->c, s->head_dim);
    part[1] = part[2] = S2S_SIZE(gh, t->kw, s->head_dim);
    part[3] = S2S_SIZE(gh, t->c, t->kw);
    size_t total = 0;
    for (int i = 0; i < 5; i++) total = s2s_size_add(total, part[i]);
    return total;
}

size_t s2s_attention_sparse_floats(const s2s_attn_shape *s) {
    if (!s2s_attention_sparse_fits(s) || s->tk == 0 || s->batch == 0) return 0;
    s2s_attn_type kind = s->mask.pattern.kind;
    if (kind == S2S_ATTN_LINEAR) {
        size_t part[3];
        return linear_floats(s, part);
    }
    if (kind == S2S_ATTN_STRIDED) {
        band b = band_of(s);
        size_t part[6];
        return band_floats(s, &b, part);
    }
    tiles t = tiles_of(s);
    size_t part[5];
    return tiles_floats(s, &t, part);
}

// ---- local and block: groups of chunks against their bands (tiles) ----

// Rows first .. first+rows-1 of sentence b of src into the tiles of every
// head: row r of head h at dst + h*tile + r*Dh; rows outside [0, S) as
// zeros. Each source row holds every head's columns side by side.
static void tile_rows(float *restrict dst, int64_t tile, s2s_view src, const s2s_attn_shape *s,
                      int64_t b, int64_t first, int64_t rows) {
    int64_t H = s->heads, dh = s->head_dim;
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = first + r;
        float *restrict out = dst + r * dh;
        if (i < 0 || i >= s->tk) {
            for (int64_t h = 0; h < H; h++) memset(out + h * tile, 0, (size_t)dh * sizeof *out);
            continue;
        }
        const float *restrict in = src.p + b * src.bs + i * src.rs;
        for (int64_t h = 0; h < H; h++) copy_row(out + h * tile, in + h * dh, dh);
    }
}

// The weights of chunks u0 .. u0+g-1 in place of their scores sc (g, H, c,
// kw): row r of chunk u (sentence u / nc, first row t*c) is query i =
// t*c + r, its column j key t*c - w + j, and in every head it sees the
// keys s2s_attn_mask_keys gives (a range for local and block, the same in
// every head: each head follows the pattern); a row past S, none. Rows go
// to the softmax ROWS_A_CALL at a time, every head's.
enum { ROWS_A_CALL = 64 };
static void tile_weights(float *sc, const s2s_attn_shape *s, const tiles *t, int64_t u0,
                         int64_t g) {
    int64_t H = s->heads, c = t->c, kw = t->kw;
    s2s_key_span keys[ROWS_A_CALL];
    for (int64_t u = u0; u < u0 + g; u++) {
        int64_t b = u / t->nc, row0 = u % t->nc * c, base = row0 - t->w;
        for (int64_t r0 = 0; r0 < c; r0 += ROWS_A_CALL) {
            int64_t n = min64(ROWS_A_CALL, c - r0);
            for (int64_t r = 0; r < n; r++) {
                int64_t i = row0 + r0 + r, lo = 0, hi = 0;
                if (i < s->tk) {
                    s2s_key_range k = s2s_attn_mask_keys(&s->mask, s->tk, b, 0, i);
                    lo = min64(max64(k.lo - base, 0), kw), hi = min64(max64(k.hi - base, 0), kw);
                }
                keys[r] = (s2s_key_span){lo, hi};
            }
            for (int64_t h = 0; h < H; h++)
                s2s_softmax_rows(sc + (((u - u0) * H + h) * c + r0) * kw, n, kw, keys);
        }
    }
}

// c (g, m, n) = alpha a (g, m, k) · b (g, k, n), all dense, b read
// transposed (held as (g, n, k)) when b_t; a primitive of its own shape
// when fixed (s2s_mm_args.fixed).
static s2s_status items_product(float *c, const float *a, const float *b, int64_t g, int64_t m,
                                int64_t k, int64_t n, bool b_t, float alpha, bool fixed,
                                bool bf16) {
    s2s_mm_args args = {
        .b0 = 1, .b1 = g, .m = m, .k = k, .n = n,
        .sa = {g * m * k, m * k, k, 1},
        .sb = {g * k * n, k * n, b_t ? 1 : n, b_t ? k : 1},
        .sc = {g * m * n, m * n, n, 1},
        .alpha = alpha, .bf16 = bf16, .fixed = fixed,
    };
    return s2s_mm(c, a, b, &args);
}

// The context of chunks u0 .. u0+g-1, o (g, H, c, Dh), into ctx (B, S, D)
// at each head's columns: rows past S are a chunk's padding.
static void tile_context(float *restrict ctx, const float *restrict o, const s2s_attn_shape *s,
                         const tiles *t, int64_t u0, int64_t g) {
    int64_t H = s->heads, dh = s->head_dim, d = H * dh, S = s->tk, c = t->c;
    for (int64_t u = u0; u < u0 + g; u++) {
        int64_t b = u / t->nc, row0 = u % t->nc * c;
        const float *restrict in = o + (u - u0) * H * c * dh;
        for (int64_t r = 0; r < c && row0 + r < S; r++) {
            float *restrict out = ctx + (b * S + row0 + r) * d;
            for (int64_t h = 0; h < H; h++) copy_row(out + h * dh, in + (h * c + r) * dh, dh);
        }
    }
}

static s2s_status tiled(float *ctx, float *scratch, s2s_view q, s2s_view k, s2s_view v,
                        const s2s_attn_shape *s) {
    tiles t = tiles_of(s);
    int64_t c = t.c, kw = t.kw, dh = s->head_dim, H = s->heads;
    size_t part[5];
    tiles_floats(s, &t, part);
    float *qt = scratch, *kt = qt + part[0], *vt = kt + part[1], *sc = vt + part[2];
    float *o = sc + part[3];
    float alpha = 1.0f / sqrtf((float)dh);
    for (int64_t u0 = 0; u0 < t.n; u0 += t.g) {
        int64_t g = min64(t.g, t.n - u0);
        for (int64_t u = u0; u < u0 + g; u++) {
            int64_t b = u / t.nc, row0 = u % t.nc * c, j = (u - u0) * H;
            tile_rows(qt + j * c * dh, c * dh, q, s, b, row0, c);
            tile_rows(kt + j * kw * dh, kw * dh, k, s, b, row0 - t.w, kw);
            tile_rows(vt + j * kw * dh, kw * dh, v, s, b, row0 - t.w, kw);
        }
        bool fixed = t.fixed && g == t.g;  // the full groups: one shape, one primitive
        // scores (gH, c, kw) = queries (gH, c, Dh) · keys^T; weights; context (gH, c, Dh)
        S2S_TRY(items_product(sc, qt, kt, g * H, c, dh, kw, /*b_t=*/true, alpha, fixed, s->bf16));
        tile_weights(sc, s, &t, u0, g);
        S2S_TRY(items_product(o, sc, vt, g * H, c, kw, dh, /*b_t=*/false, 1.0f, fixed, s->bf16));
        tile_context(ctx, o, s, &t, u0, g);
    }
    return S2S_OK;
}

// ---- strided: a band and the residue classes ----

// dst (BH, nc, rows, Dh): chunk t of head h of sentence b holds rows
// t*c - lo .. t*c - lo + rows - 1 of head h of src; rows outside [0, S)
// are zeros, so that products over them stay finite (a zero weight times
// them is then zero).
static void chunk_rows(float *dst, s2s_view src, const s2s_attn_shape *s, const band *bd,
                       int64_t lo, int64_t rows) {
    int64_t H = s->heads, dh = s->head_dim, S = s->tk;
    size_t row_bytes = (size_t)dh * sizeof(float);
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < bd->nc; t++) {
                float *out = dst + (((b * H + h) * bd->nc + t) * rows) * dh;
                int64_t first = t * bd->c - lo;
                for (int64_t r = 0; r < rows; r++) {
                    int64_t i = first + r;
                    if (i < 0 || i >= S) memset(out + r * dh, 0, row_bytes);
                    else memcpy(out + r * dh, src.p + b * src.bs + i * src.rs + h * dh, row_bytes);
                }
            }
}

// c (b0, b1, M, N) (+)= alpha a · b with the given strides.
static s2s_status product(float *c, const int64_t sc[4], const float *a, const int64_t sa[4],
                          const float *b, const int64_t sb[4], int64_t b0, int64_t b1, int64_t m,
                          int64_t k, int64_t n, float alpha, bool accumulate, bool bf16) {
    s2s_mm_args args = {
        .b0 = b0, .b1 = b1, .m = m, .k = k, .n = n,
        .alpha = alpha, .accumulate = accumulate, .bf16 = bf16,
    };
    memcpy(args.sa, sa, sizeof args.sa);
    memcpy(args.sb, sb, sizeof args.sb);
    memcpy(args.sc, sc, sizeof args.sc);
    return s2s_mm(c, a, b, &args);
}

// The weights of query row i (chunk t, row r) of head h of sentence b
// with a stride past S: x (kw) its band's scores, whose column 0 is key
// t*c - w. Such a row sees every key of its sentence, the range
// s2s_attn_mask_keys gives.
static void band_row(float *x, const s2s_attn_shape *s, const band *bd, int64_t b, int64_t h,
                     int64_t t, int64_t r) {
    int64_t i = t * bd->c + r, base = t * bd->c - bd->w;
    if (i >= s->tk) {  // a chunk's padding: no query
        memset(x, 0, (size_t)bd->kw * sizeof *x);
        return;
    }
    s2s_key_range k = s2s_attn_mask_keys(&s->mask, s->tk, b, h, i);
    int64_t lo = min64(max64(k.lo - base, 0), bd->kw), hi = min64(max64(k.hi - base, 0), bd->kw);
    s2s_softmax_row(x, lo, hi, bd->kw);
}

// A strided row: the band |i - j| < s in x (kw, column 0 at key t*s - w)
// and its residue class j = i mod s in y (ns, column k at key k*s + r),
// one softmax over both. i itself is in both: the class counts it not.
static void strided_row(float *x, float *y, const s2s_attn_shape *s, const band *bd, int64_t b,
                        int64_t h, int64_t t, int64_t r) {
    int64_t i = t * bd->c + r, base = t * bd->c - bd->w;
    if (i >= s->tk) {
        memset(x, 0, (size_t)bd->kw * sizeof *x);
        memset(y, 0, (size_t)bd->ns * sizeof *y);
        return;
    }
    // every key this row may see at all (padding), as s2s_attn_mask_keys says
    s2s_key_range k = s2s_attn_mask_keys(&s->mask, s->tk, b, h, i);
    int64_t lo = max64(k.lo, i - bd->s + 1), hi = min64(k.hi, i + bd->s);
    lo = min64(max64(lo - base, 0), bd->kw), hi = min64(max64(hi - base, 0), bd->kw);
    if (lo > hi) lo = hi;
    for (int64_t j = 0; j < bd->ns; j++) {
        int64_t key = j * bd->s + r;
        if (j == t || key < k.lo || key >= k.hi) y[j] = -INFINITY;
    }
    float mx = fmaxf(s2s_max_row(x + lo, hi - lo), s2s_max_row(y, bd->ns));
    if (mx == -INFINITY) {  // no key
        memset(x, 0, (size_t)bd->kw * sizeof *x);
        memset(y, 0, (size_t)bd->ns * sizeof *y);
        return;
    }
    float inv = 1.0f / (s2s_exp_shift_row(x + lo, hi - lo, mx) + s2s_exp_shift_row(y, bd->ns, mx));
    for (int64_t j = 0; j < bd->kw; j++) x[j] = j >= lo && j < hi ? x[j] * inv : 0.0f;
    for (int64_t j = 0; j < bd->ns; j++) y[j] *= inv;
}

static s2s_status banded(float *ctx, float *scratch, s2s_view q, s2s_view k, s2s_view v,
                         const s2s_attn_shape *s) {
    int64_t B = s->batch, H = s->heads, dh = s->head_dim, d = H * dh, S = s->tk, bh = B * H;
    band bd = band_of(s);
    int64_t c = bd.c, nc = bd.nc, kw = bd.kw, sp = nc * c;  // sp: rows with the padding
    size_t part[6];
    band_floats(s, &bd, part);
    float *qc = scratch, *kc = qc + part[0], *vc = kc + part[1], *sc = vc + part[2];
    float *oc = sc + part[3], *rs = oc + part[4];
    float alpha = 1.0f / sqrtf((float)dh);

    chunk_rows(qc, q, s, &bd, 0, c);
    chunk_rows(kc, k, s, &bd, bd.w, kw);
    chunk_rows(vc, v, s, &bd, bd.w, kw);
    // scores (BH, nc, c, kw) = Q chunks (BH, nc, c, Dh) · their keys^T (BH, nc, Dh, kw)
    const int64_t s_q[4] = {sp * dh, c * dh, dh, 1}, s_kt[4] = {nc * kw * dh, kw * dh, 1, dh};
    const int64_t s_s[4] = {nc * c * kw, c * kw, kw, 1}, s_v[4] = {nc * kw * dh, kw * dh, dh, 1};
    S2S_TRY(product(sc, s_s, qc, s_q, kc, s_kt, bh, nc, c, dh, kw, alpha, false, s->bf16));
    // the residue classes (strided): scores (BH, s, ns, ns) = Q rows r, r+s, ...
    // (BH, s, ns, Dh) · keys r, r+s, ... ^T, read in the chunks' centres
    // (chunk t holds keys t*s .. t*s+s-1 at rows w .. w+s-1)
    int64_t st = bd.s, ns = bd.ns;
    const int64_t r_q[4] = {sp * dh, dh, st * dh, 1}, r_kt[4] = {nc * kw * dh, dh, 1, kw * dh};
    const int64_t r_s[4] = {st * ns * ns, ns * ns, ns, 1}, r_v[4] = {nc * kw * dh, dh, kw * dh, 1};
    if (st)
        S2S_TRY(product(rs, r_s, qc, r_q, kc + bd.w * dh, r_kt, bh, st, ns, dh, ns, alpha, false,
                        s->bf16));

    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t t = 0; t < nc; t++)
                for (int64_t r = 0; r < c; r++) {
                    float *x = sc + (((b * H + h) * nc + t) * c + r) * kw;
                    if (st)
                        strided_row(x, rs + (((b * H + h) * st + r) * ns + t) * ns, s, &bd, b, h,
                                    t, r);
                    else
                        band_row(x, s, &bd, b, h, t, r);
                }

    // context (BH, nc, c, Dh) = weights · the chunks' values, then the
    // residue classes' weights · their values added at their rows
    S2S_TRY(product(oc, s_q, sc, s_s, vc, s_v, bh, nc, c, kw, dh, 1.0f, false, s->bf16));
    if (st)
        S2S_TRY(product(oc, r_q, rs, r_s, vc + bd.w * dh, r_v, bh, st, ns, ns, dh, 1.0f, true,
                        s->bf16));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < S; i++)
                memcpy(ctx + (b * S + i) * d + h * dh, oc + ((b * H + h) * sp + i) * dh,
                       (size_t)dh * sizeof(float));
    return S2S_OK;
}

// ---- linear heads ----

// o_i = phi(q_i) · KV / (phi(q_i) · z + eps) with KV = sum_j phi(k_j) v_j^T
// and z = sum_j phi(k_j) over the keys of the sentence: one product for
// both, with [V 1] as the values (its last column sums z), whose padded
// rows are zeros. q and k hold phi(q) and phi(k) already
// (s2s_attention_features).
static s2s_status linear(float *ctx, float *scratch, s2s_view q, s2s_view k, s2s_view v,
                         const s2s_attn_shape *s) {
    int64_t B = s->batch, H = s->heads, dh = s->head_dim, d = H * dh, S = s->tk, e = dh + 1;
    size_t part[3];
    linear_floats(s, part);
    float *v1 = scratch, *kv = v1 + part[0], *num = kv + part[1];
    for (int64_t b = 0; b < B; b++) {
        int64_t len = s->mask.k_len ? s->mask.k_len[b] : S;
        for (int64_t j = 0; j < S; j++)
            for (int64_t h = 0; h < H; h++) {
                float *row = v1 + ((b * S + j) * H + h) * e;
                if (j >= len) {
                    memset(row, 0, (size_t)e * sizeof *row);
                    continue;
                }
                memcpy(row, v.p + b * v.bs + j * v.rs + h * dh, (size_t)dh * sizeof *row);
                row[dh] = 1.0f;
            }
    }
    // KV (B, H, Dh, Dh+1) = phi(K)^T (B, H, Dh, S), read in place, · [V 1] (B, H, S, Dh+1)
    const int64_t s_kt[4] = {k.bs, dh, 1, k.rs}, s_v1[4] = {S * H * e, e, H * e, 1};
    const int64_t s_kv[4] = {H * dh * e, dh * e, e, 1}, s_q[4] = {q.bs, dh, q.rs, 1};
    S2S_TRY(product(kv, s_kv, k.p, s_kt, v1, s_v1, B, H, dh, S, e, 1.0f, false, s->bf16));
    // num (B, H, S, Dh+1) laid out (B, S, H, Dh+1) = phi(Q) · KV
    S2S_TRY(product(num, s_v1, q.p, s_q, kv, s_kv, B, H, S, dh, e, 1.0f, false, s->bf16));
    for (int64_t r = 0; r < B * S; r++)
        for (int64_t h = 0; h < H; h++) {
            const float *n = num + (r * H + h) * e;
            float inv = 1.0f / (n[dh] + 1e-6f), *o = ctx + r * d + h * dh;
            for (int64_t i = 0; i < dh; i++) o[i] = n[i] * inv;
        }
    return S2S_OK;
}

s2s_status s2s_attention_sparse(float *ctx, float *scratch, s2s_view q, s2s_view k, s2s_view v,
                                const s2s_attn_shape *s) {
    S2S_ASSERT(s2s_attention_sparse_fits(s));
    if (s->batch == 0 || s->tk == 0) return S2S_OK;
    if (s->mask.pattern.kind == S2S_ATTN_LINEAR) return linear(ctx, scratch, q, k, v, s);
    if (s->mask.pattern.kind == S2S_ATTN_STRIDED) return banded(ctx, scratch, q, k, v, s);
    return tiled(ctx, scratch, q, k, v, s);
}
