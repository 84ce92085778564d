// Decoding state: one block of buffers, encoder pass, decoder rows.
#include "decoding/state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "core/util.h"
#include "ops/matmul.h"
#include "ops/ops.h"

s2s_status s2s_state_new(s2s_state **out, const s2s_model *m) {
    s2s_state *st = s2s_calloc(1, sizeof *st);
    if (!st) return S2S_ERR_NOMEM;
    st->m = m;
    *out = st;
    return S2S_OK;
}

static void release(s2s_state *st);

void s2s_state_free(s2s_state *st) {
    if (!st) return;
    release(st);
    free(st);
}

// ---- the self-attention states ----

// Floats decoder layer l's self-attention state takes per sequence for up
// to T positions: bounded, the state of its s2s_self_state_of; else its
// K/V cache.
static int64_t layer_floats(const s2s_model *m, bool bounded, int l, int64_t T) {
    s2s_self_state k = bounded ? s2s_self_state_of(m, l) : S2S_SELF_FULL;
    return s2s_self_state_floats(m, l, k, T);
}

// Of those, the floats that hold something after t positions (a cache's
// first t rows; all of a bounded state).
static int64_t layer_used(const s2s_model *m, bool bounded, int l, int64_t t, int64_t T) {
    bool full = !bounded || s2s_self_state_of(m, l) == S2S_SELF_FULL;
    return full ? t * 2 * m->cfg.model.d_model : layer_floats(m, bounded, l, T);
}

// Where layer l's states start in st->self_kv for n sequences.
static float *layer_states(const s2s_state *st, int l, int64_t n, int64_t T) {
    int64_t off = 0;
    for (int i = 0; i < l; i++) off += layer_floats(st->m, st->bounded, i, T);
    return st->self_kv + n * off;
}

// The floats of each buffer of a state for B sentences of S source rows,
// K sequences each of up to T target rows, Tq in a pass (the table of
// S2S_STATE_BUFFERS entries, caches last), then the ints of ids and of
// src_len, with room for the maps of the S2S_MAPS_* bits in maps. false
// when a total is too large to address.
static bool state_sizes(const s2s_model *m, int64_t B, int64_t K, int64_t S, int64_t T,
                        int64_t Tq, unsigned maps, bool bounded, s2s_sparse_mode sparse,
                        size_t sizes[S2S_STATE_BUFFERS + 2]) {
    bool self = maps & S2S_MAPS_SELF, cross = maps & S2S_MAPS_CROSS;
    const s2s_model_config *c = &m->cfg.model;
    int64_t d = c->d_model, f = c->ffn_dim, H = c->heads, L = c->decoder_layers;
    int64_t L_enc = c->encoder_layers;
    int64_t V = s2s_vocab_size(m->tgt_vocab);
    // Sizes from the caller's batch and the config: checked (core/checked.h).
    size_t seqs = S2S_SIZE(B, K);
    size_t enc_rows = S2S_SIZE(B, S), dec_rows = s2s_size_mul(seqs, (size_t)Tq);
    size_t R = enc_rows > dec_rows ? enc_rows : dec_rows;  // rows of the widest pass
    // one layer's attention maps: the encoder's, the decoder's self- and
    // cross-attention's; the scratch holds the largest of the attentions
    // the network has, and for the encoder what a pass without maps needs
    // (its fast paths' scratch grows as S, not S^2: transformer.h).
    // The self-attention states: each layer's floats per sequence, the most
    // of any layer (what a beam reorder saves), the widest weights of a row
    // (a linear state's step needs (H, Dh + 1) floats of scratch instead).
    size_t state = 0, state_max = 0, self_keys = 0;
    for (int l = 0; l < L; l++) {
        size_t fl = (size_t)layer_floats(m, bounded, l, T);
        s2s_self_state k = bounded ? s2s_self_state_of(m, l) : S2S_SELF_FULL;
        size_t keys = k == S2S_SELF_LINEAR ? (size_t)(d / H + 1)
                                           : (size_t)s2s_self_state_keys(m, l, k, T);
        state = s2s_size_add(state, fl);
        state_max = fl > state_max ? fl : state_max;
        self_keys = keys > self_keys ? keys : self_keys;
    }
    size_t enc_p = S2S_SIZE(B, H, S, S),
           self_p = s2s_size_mul(seqs, s2s_size_mul(S2S_SIZE(H, Tq), self_keys)),
           cross_p = S2S_SIZE(B, H, K, Tq, S), probs = 0;
    size_t enc_scratch = s2s_encoder_scratch_floats(m, B, S, sparse);
    const s2s_stack *stacks[] = {&m->arch.enc, &m->arch.dec};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < stacks[k]->n_subs; i++) {
            s2s_sub_kind kind = stacks[k]->subs[i].kind;
            size_t p = kind == S2S_SUB_FFN ? 0 : k == 0 ? enc_scratch
                                              : kind == S2S_SUB_SELF_ATTN ? self_p : cross_p;
            probs = p > probs ? p : probs;
        }

    // Two blocks: the buffers every pass touches whole (s2s_big_alloc, on
    // huge pages), then the self-attention caches, on malloc's small pages:
    // a sequence's T rows are touched one step at a time, and most stop
    // well before T (on huge pages, the shipped zh-en model's beam 4 x 32
    // peaked at 43.5 MB instead of 34.5).
    size_t table[S2S_STATE_BUFFERS + 2] = {
        s2s_size_mul(R, (size_t)d),           // x
        s2s_size_mul(R, (size_t)d),           // h
        s2s_size_mul(R, (size_t)(3 * d)),     // q
        s2s_size_mul(R, (size_t)d),           // ctx
        s2s_size_mul(R, (size_t)f),           // ffn
        probs,                                // probs
        s2s_size_mul(seqs, S2S_SIZE(H, d)),   // block
        s2s_size_mul(seqs, S2S_SIZE(H, d)),   // block_ctx
        S2S_SIZE(B, S, d),                    // memory
        S2S_SIZE(L, B, S, 2, d),              // cross_kv
        self ? s2s_size_mul((size_t)L_enc, enc_p) : 0,  // enc_probs
        self ? s2s_size_mul((size_t)L, self_p) : 0,     // self_probs (never bounded)
        cross ? s2s_size_mul((size_t)L, cross_p) : 0,   // cross_probs
        s2s_size_mul(dec_rows, (size_t)V),    // logits
        s2s_size_mul(seqs, state),                            // self_kv: the second block
        K > 1 ? s2s_size_mul(seqs, state_max) : 0,            // kv_tmp
        R,                                    // ids (ints)
        (size_t)B,                            // src_len (ints)
    };
    memcpy(sizes, table, sizeof table);
    size_t total = 0, caches = 0;
    for (size_t i = 0; i < S2S_STATE_BUFFERS - 2; i++) total = s2s_size_add(total, sizes[i]);
    for (size_t i = S2S_STATE_BUFFERS - 2; i < S2S_STATE_BUFFERS; i++)
        caches = s2s_size_add(caches, sizes[i]);
    return s2s_size_mul(total, sizeof(float)) != SIZE_MAX &&
           s2s_size_mul(caches, sizeof(float)) != SIZE_MAX &&
           s2s_size_mul(R, sizeof(int)) != SIZE_MAX;
}

// Bytes of the buffers of sizes (state_sizes' table).
static size_t sizes_bytes(const size_t sizes[S2S_STATE_BUFFERS + 2]) {
    size_t floats = 0;
    for (size_t i = 0; i < S2S_STATE_BUFFERS; i++) floats = s2s_size_add(floats, sizes[i]);
    size_t ints = s2s_size_add(sizes[S2S_STATE_BUFFERS], sizes[S2S_STATE_BUFFERS + 1]);
    return s2s_size_add(s2s_size_mul(floats, sizeof(float)), s2s_size_mul(ints, sizeof(int)));
}

size_t s2s_state_bytes_for(const s2s_model *m, int64_t B, int64_t K, int64_t S, int64_t T,
                           int64_t Tq, bool maps) {
    size_t sizes[S2S_STATE_BUFFERS + 2];
    if (!state_sizes(m, B, K, S, T, Tq, maps ? S2S_MAPS_CROSS | S2S_MAPS_SELF : 0u,
                     Tq == 1 && !maps, S2S_SPARSE_AUTO, sizes))
        return SIZE_MAX;
    size_t fold = s2s_cross_fold_pays(m, B, S)
                      ? s2s_size_mul((size_t)m->cfg.model.decoder_layers,
                                     (size_t)s2s_cross_fold_size(m, B, S))
                      : 0;
    return s2s_size_add(sizes_bytes(sizes), s2s_size_mul(fold, sizeof(float)));
}

size_t s2s_state_bytes_per_sentence(const s2s_model *m, int src_len, int tgt_len, int beam) {
    return s2s_state_bytes_for(m, 1, beam, (int64_t)src_len + 1, tgt_len, 1, false);
}

size_t s2s_state_bytes(const s2s_state *st) {
    return s2s_size_add(sizes_bytes(st->cap), (size_t)st->fold_cap * sizeof(float));
}

// Frees the buffers of st (the state stays usable: it has room for nothing).
static void release(s2s_state *st) {
    s2s_big_free(st->block, st->block_n, sizeof(float));
    free(st->cache_block);
    free(st->ids);
    free(st->src_len);
    free(st->fold);
    s2s_big_free(st->fold_block, (size_t)st->fold_cap, sizeof(float));
    st->block = st->cache_block = st->fold_block = NULL;
    st->ids = st->src_len = NULL;
    st->fold = NULL;
    st->block_n = 0;
    st->fold_cap = 0;
    memset(st->cap, 0, sizeof st->cap);
    float **bufs[] = {&st->x, &st->scratch.h, &st->scratch.q, &st->scratch.ctx,
                      &st->scratch.ffn, &st->scratch.probs, &st->scratch.block,
                      &st->scratch.block_ctx, &st->memory, &st->cross_kv, &st->enc_probs,
                      &st->self_probs, &st->cross_probs, &st->logits, &st->self_kv, &st->kv_tmp};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) *bufs[i] = NULL;
}

bool s2s_state_trim(s2s_state *st, size_t max_bytes) {
    if (s2s_state_bytes(st) <= max_bytes) return false;
    release(st);
    return true;
}

s2s_status s2s_state_reserve(s2s_state *st, int64_t B, int64_t K, int64_t S, int64_t T,
                             int64_t Tq, bool maps) {
    return s2s_state_reserve_maps(st, B, K, S, T, Tq,
                                  maps ? S2S_MAPS_CROSS | S2S_MAPS_SELF : 0u);
}

s2s_status s2s_state_reserve_maps(s2s_state *st, int64_t B, int64_t K, int64_t S, int64_t T,
                                  int64_t Tq, unsigned maps) {
    enum { N = S2S_STATE_BUFFERS, CACHES = N - 2 };
    size_t sizes[N + 2];
    bool full = st->debug && st->debug->full_self_cache;  // a test's reference path
    st->bounded = Tq == 1 && !(maps & S2S_MAPS_SELF) && !full;
    if (!state_sizes(st->m, B, K, S, T, Tq, maps, st->bounded, st->scratch.sparse, sizes))
        return s2s_fail(S2S_ERR_NOMEM, "a batch of %lld sentences of %lld and %lld tokens is too "
                        "large to address", (long long)B, (long long)S, (long long)T);
    // Each buffer keeps the most any pass needed of it: a beam of 64 on one
    // sentence then 32 sentences greedily need 64 and 32 sequences, not 32
    // x 64 (issue 27: the sizes were once kept per dimension and multiplied).
    bool fits = true;
    for (size_t i = 0; i < N + 2; i++) {
        fits = fits && sizes[i] <= st->cap[i];
        if (sizes[i] < st->cap[i]) sizes[i] = st->cap[i];
    }
    st->res_b = B, st->res_k = K, st->res_t = T, st->res_tq = Tq;
    if (fits) return S2S_OK;
    size_t total = 0, caches = 0;
    for (size_t i = 0; i < CACHES; i++) total = s2s_size_add(total, sizes[i]);
    for (size_t i = CACHES; i < N; i++) caches = s2s_size_add(caches, sizes[i]);
    float *block = s2s_big_alloc(total, sizeof(float));
    float *cache_block = malloc(caches * sizeof(float) + 1);
    int *ids = malloc(sizes[N] * sizeof(int) + 1);
    int *src_len = malloc(sizes[N + 1] * sizeof(int) + 1);
    if (!block || !cache_block || !ids || !src_len) {
        s2s_big_free(block, total, sizeof(float));
        free(cache_block);
        free(ids);
        free(src_len);
        st->res_b = st->res_k = st->res_t = st->res_tq = 0;
        return s2s_fail(S2S_ERR_NOMEM, "out of memory for a batch of %lld sentences",
                        (long long)B);
    }
    s2s_big_free(st->block, st->block_n, sizeof(float));
    free(st->cache_block);
    free(st->ids);
    free(st->src_len);
    st->block = block;
    st->block_n = total;
    st->cache_block = cache_block;
    st->ids = ids;
    st->src_len = src_len;
    float **dst[N] = {&st->x, &st->scratch.h, &st->scratch.q, &st->scratch.ctx,
                      &st->scratch.ffn, &st->scratch.probs, &st->scratch.block,
                      &st->scratch.block_ctx, &st->memory, &st->cross_kv,
                      &st->enc_probs, &st->self_probs, &st->cross_probs, &st->logits,
                      &st->self_kv, &st->kv_tmp};
    for (size_t i = 0, at = 0; i < N; i++) {
        *dst[i] = (i < CACHES ? block : cache_block) + at;
        at = i + 1 == CACHES ? 0 : at + sizes[i];
    }
    // scratch.block's zeros (transformer.h) are the block's: s2s_big_alloc zeroes it
    memcpy(st->cap, sizes, sizeof st->cap);
    return S2S_OK;
}

void s2s_state_reorder(s2s_state *st, const int *parent, int64_t n_seqs, int64_t t,
                       int64_t t_alloc) {
    const s2s_model_config *c = &st->m->cfg.model;
    S2S_ASSERT(st->res_k > 1);  // kv_tmp is there for beams only
    // Only sequences that take another's state change. A source that is
    // itself overwritten (parent[p] != p) is first saved to its own slot of
    // kv_tmp, once; the other sources are read in place. No order of the
    // copies then matters, cycles included.
    int64_t copied = 0;  // cache positions copied (the test hooks' count)
    for (int l = 0; l < c->decoder_layers; l++) {
        int64_t row = layer_floats(st->m, st->bounded, l, t_alloc);
        size_t bytes = (size_t)layer_used(st->m, st->bounded, l, t, t_alloc) * sizeof(float);
        float *kv = layer_states(st, l, n_seqs, t_alloc);
        for (int64_t i = 0; i < n_seqs; i++) {
            int p = parent[i];
            if (p == i || parent[p] == p) continue;
            // p is overwritten and read by i: saved by its first reader only
            int64_t j = 0;
            while (parent[j] != p) j++;
            if (j < i) continue;
            memcpy(st->kv_tmp + p * row, kv + p * row, bytes);
            copied += t;
        }
        for (int64_t i = 0; i < n_seqs; i++) {
            int p = parent[i];
            if (p == i) continue;
            const float *from = parent[p] != p ? st->kv_tmp + p * row : kv + p * row;
            memcpy(kv + i * row, from, bytes);
            copied += t;
        }
    }
    if (st->debug) atomic_fetch_add_explicit(&st->debug->reorder_rows, copied, memory_order_relaxed);
}

void s2s_state_spread(s2s_state *st, int64_t B, int64_t K, int64_t t, int64_t t_alloc) {
    const s2s_model_config *c = &st->m->cfg.model;
    // Entry b of layer l goes to entries b*K + j of the layer's K-fold
    // states: never below where it is (layer l's states start at
    // B*off_l and go to B*K*off_l), so going down from the last layer's
    // last entry reads each source before anything lands on it.
    for (int l = c->decoder_layers - 1; l >= 0; l--) {
        int64_t row = layer_floats(st->m, st->bounded, l, t_alloc);
        size_t bytes = (size_t)layer_used(st->m, st->bounded, l, t, t_alloc) * sizeof(float);
        float *from = layer_states(st, l, B, t_alloc), *to = layer_states(st, l, B * K, t_alloc);
        for (int64_t b = B - 1; b >= 0; b--)
            for (int64_t j = K - 1; j >= 0; j--)
                if (to + (b * K + j) * row != from + b * row)
                    memmove(to + (b * K + j) * row, from + b * row, bytes);
    }
}

// Entries of `planes` blocks of B entries, each of K parts of `size`
// floats (`used` of them meaningful), become blocks of n: entry i of block
// k takes entry keep[i]. Destinations never pass their sources
// (keep[i] >= i), so going up in place is safe.
static void keep_entries(float *p, int64_t planes, int64_t B, const int *keep, int64_t n,
                         int64_t K, int64_t size, int64_t used) {
    for (int64_t k = 0; k < planes; k++)
        for (int64_t i = 0; i < n; i++)
            if (k * n + i != k * B + keep[i])
                for (int64_t j = 0; j < K; j++)
                    memmove(p + ((k * n + i) * K + j) * size,
                            p + ((k * B + keep[i]) * K + j) * size, (size_t)used * sizeof(float));
}

void s2s_state_keep(s2s_state *st, const int *keep, int64_t n, int64_t B, int64_t K, int64_t S,
                    int64_t t, int64_t t_alloc) {
    const s2s_model_config *c = &st->m->cfg.model;
    int64_t d = c->d_model, H = c->heads, L = c->decoder_layers;
    // layer by layer, each layer's states moving down to where n sentences put them
    for (int l = 0; l < L; l++) {
        int64_t row = layer_floats(st->m, st->bounded, l, t_alloc);
        int64_t used = layer_used(st->m, st->bounded, l, t, t_alloc);
        float *from = layer_states(st, l, B * K, t_alloc), *to = layer_states(st, l, n * K, t_alloc);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < K; j++)
                if (to + (i * K + j) * row != from + (keep[i] * K + j) * row)
                    memmove(to + (i * K + j) * row, from + (keep[i] * K + j) * row,
                            (size_t)used * sizeof(float));
    }
    keep_entries(st->cross_kv, L, B, keep, n, 1, S * 2 * d, S * 2 * d);
    if (st->folded)
        for (int64_t l = 0; l < L; l++) {  // each layer's arrays stay where they are
            keep_entries(st->fold[l].qk, 1, B, keep, n, 1, H * S * d, H * S * d);
            keep_entries(st->fold[l].vo, 1, B, keep, n, 1, H * S * d, H * S * d);
            keep_entries(st->fold[l].qb, H, B, keep, n, 1, S, S);
        }
    for (int64_t i = 0; i < n; i++) st->src_len[i] = st->src_len[keep[i]];
}

int s2s_state_drop_done(s2s_state *st, const bool *done, int *live, int *keep, int n,
                        int remaining, int64_t K, int64_t S, int64_t t, int64_t t_alloc) {
    if (s2s_state_no_shrink(st) || (n - remaining) * 4 < n) return n;
    int kept = 0;
    for (int k = 0; k < n; k++)
        if (!done[live[k]]) keep[kept] = k, live[kept++] = live[k];
    s2s_state_keep(st, keep, kept, n, K, S, t, t_alloc);
    return kept;
}

// x (B, Tq, D) = E[ids] * sqrt(D) + PE[t0 + i]; without positions (a
// probe's, st->no_positions) E[ids] * sqrt(D) alone.
static void embed(float *x, const s2s_model *m, const float *table, const int *ids, int64_t B,
                  int64_t tq, int64_t t0, bool positions) {
    int64_t d = m->cfg.model.d_model;
    float scale = sqrtf((float)d);
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < tq; i++) {
            float *y = x + (b * tq + i) * d;
            if (positions) {
                s2s_embed_row(y, table, ids[b * tq + i], scale, m->pe + (t0 + i) * d, d);
                continue;
            }
            const float *e = table + (int64_t)ids[b * tq + i] * d;
            for (int64_t k = 0; k < d; k++) y[k] = e[k] * scale;
        }
}

// Decoder layer l's cross-attention weights, in the decoding copy.
static const s2s_attn_weights *cross_weights(const s2s_state *st, int l) {
    return &st->w->dec[l].sub[s2s_stack_find(&st->m->arch.dec, S2S_SUB_CROSS_ATTN)].attn;
}

// Folds every layer's cross-attention when that pays (or a test says so).
static s2s_status fold_cross(s2s_state *st, int64_t B, int64_t S) {
    const s2s_model *m = st->m;
    int L = m->cfg.model.decoder_layers;
    int64_t d = m->cfg.model.d_model, H = m->cfg.model.heads;
    s2s_fold_mode mode = st->debug ? st->debug->fold_mode : S2S_FOLD_AUTO;
    st->folded = mode == S2S_FOLD_ALWAYS ? s2s_cross_fold_works(m)
                 : mode == S2S_FOLD_AUTO && s2s_cross_fold_pays(m, B, S);
    if (!st->folded) return S2S_OK;
    int64_t per_layer = s2s_cross_fold_size(m, B, S), need = L * per_layer;
    if (need > st->fold_cap) {
        float *block = s2s_big_alloc((size_t)need, sizeof(float));
        s2s_cross_folded *fold = st->fold ? st->fold : malloc((size_t)L * sizeof *fold);
        if (!block || !fold) {
            s2s_big_free(block, (size_t)need, sizeof(float));
            if (fold != st->fold) free(fold);
            return s2s_fail(S2S_ERR_NOMEM, "out of memory for a batch of %lld sentences",
                            (long long)B);
        }
        s2s_big_free(st->fold_block, (size_t)st->fold_cap, sizeof(float));
        st->fold_block = block, st->fold = fold, st->fold_cap = need;
    }
    for (int l = 0; l < L; l++) {
        float *p = st->fold_block + l * per_layer;
        st->fold[l] = (s2s_cross_folded){.qk = p, .qb = p + 2 * B * H * S * d,
                                         .vo = p + B * H * S * d};
        S2S_TRY(s2s_cross_fold(&st->fold[l], st->cross_kv + (int64_t)l * B * S * 2 * d, m,
                               cross_weights(st, l), B, S));
    }
    return S2S_OK;
}

s2s_status s2s_encode_stack(s2s_state *st, int64_t B, int64_t S, bool maps) {
    const s2s_model *m = st->m;
    const s2s_model_config *c = &m->cfg.model;
    int64_t d = c->d_model;
    S2S_TRY(s2s_model_decode_weights(m, &st->w));
    embed(st->memory, m, m->src_embed, st->ids, B, S, 0, !st->no_positions);
    int64_t H = c->heads;
    for (int l = 0; l < c->encoder_layers; l++) {
        float *probs = maps ? st->enc_probs + (int64_t)l * B * H * S * S : NULL;
        S2S_TRY(s2s_encoder_layer(st->memory, &st->scratch, m, l, &st->w->enc[l], B, S,
                                  st->src_len, probs));
    }
    if (c->norm == S2S_NORM_PRE)
        s2s_layernorm(st->memory, st->memory, m->enc_norm.w, m->enc_norm.b, B * S, d,
                      c->layer_norm_eps);
    return S2S_OK;
}

s2s_status s2s_encode(s2s_state *st, int64_t B, int64_t S, bool maps) {
    const s2s_model *m = st->m;
    int64_t d = m->cfg.model.d_model;
    S2S_TRY(s2s_encode_stack(st, B, S, maps));
    for (int l = 0; l < m->cfg.model.decoder_layers; l++)
        S2S_TRY(s2s_cross_kv(st->cross_kv + (int64_t)l * B * S * 2 * d, st->memory, m, l,
                             cross_weights(st, l), B, S));
    return fold_cross(st, B, S);
}

s2s_status s2s_decode_rows(s2s_state *st, int64_t B, int64_t S, s2s_dec_pos pos, unsigned maps) {
    const s2s_model *m = st->m;
    const s2s_model_config *c = &m->cfg.model;
    int64_t d = c->d_model, H = c->heads, V = s2s_vocab_size(m->tgt_vocab);
    int64_t seqs = B * pos.beams, rows = seqs * pos.tq;
    S2S_ASSERT(B <= st->res_b && pos.beams <= st->res_k && pos.tq <= st->res_tq &&
               pos.t0 + pos.tq <= pos.t_alloc && pos.t_alloc <= st->res_t);
    embed(st->x, m, m->tgt_embed, st->ids, seqs, pos.tq, pos.t0, true);
    pos.bounded = st->bounded;
    S2S_ASSERT(!pos.bounded || (pos.tq == 1 && !(maps & S2S_MAPS_SELF)));
    for (int l = 0; l < c->decoder_layers; l++) {
        float *self_kv = layer_states(st, l, seqs, pos.t_alloc);
        const float *cross_kv = st->cross_kv + (int64_t)l * B * S * 2 * d;
        float *cross = maps & S2S_MAPS_CROSS ? st->cross_probs + (int64_t)l * rows * H * S : NULL;
        float *self = maps & S2S_MAPS_SELF
                          ? st->self_probs + (int64_t)l * rows * H * (pos.t0 + pos.tq)
                          : NULL;
        const s2s_cross_folded *folded = st->folded ? &st->fold[l] : NULL;
        S2S_TRY(s2s_decoder_layer(st->x, &st->scratch, m, l, &st->w->dec[l], self_kv, pos, cross_kv,
                                  folded, S, st->src_len, B, self, cross));
    }
    const float *h = st->x;
    if (c->norm == S2S_NORM_PRE) {
        s2s_layernorm(st->scratch.h, st->x, m->dec_norm.w, m->dec_norm.b, rows, d,
                      c->layer_norm_eps);
        h = st->scratch.h;
    }
    return s2s_linear_w(st->logits, h, &st->w->gen, m->gen_b, rows, d, V, S2S_MM_NONE, false);
}
