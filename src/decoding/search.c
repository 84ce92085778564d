// Translation entry point and the pieces every search shares: sorting and
// batching sentences, encoding, masks, length limits, attention maps, and
// splitting a batch across threads.
#include "decoding/search.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "ops/matmul.h"

s2s_decode_params s2s_decode_default_params(const s2s_model *m) {
    return s2s_decode_params_from_config(s2s_model_get_config(m));
}

s2s_decode_params s2s_decode_params_from_config(const s2s_config *cfg) {
    const s2s_decode_config *d = &cfg->decode;
    return (s2s_decode_params){
        .max_len = d->max_len,
        .max_len_ratio = d->max_len_ratio,
        .min_len = d->min_len,
        .beam_size = d->beam_size > d->n_best ? d->beam_size : d->n_best,
        .n_best = d->n_best,
        .length_penalty = d->length_penalty,
        .sampling_topk = d->sampling_topk,
        .sampling_topp = d->sampling_topp,
        .temperature = d->temperature,
        .seed = (unsigned long long)d->seed,
        .max_batch = 32,
    };
}

void s2s_set_threads(int n) { s2s_set_num_threads(n); }

void s2s_hypothesis_free(s2s_hypothesis *h) {
    if (!h) return;
    free(h->ids);
    free(h->token_logprobs);
    free(h->cross_attn);
    free(h->self_attn);
    free(h->enc_attn);
    memset(h, 0, sizeof *h);
}

// ---- shared pieces ----

static int by_len_desc(const void *a, const void *b) {
    const s2s_order *x = a, *y = b;
    if (x->len != y->len) return y->len - x->len;
    return x->index - y->index;
}

s2s_status s2s_sort_sentences(s2s_order **out, const int *len, int n) {
    s2s_order *order = s2s_calloc((size_t)n, sizeof *order);
    if (!order) return S2S_ERR_NOMEM;
    for (int i = 0; i < n; i++) order[i] = (s2s_order){len[i], i};
    qsort(order, (size_t)n, sizeof *order, by_len_desc);
    *out = order;
    return S2S_OK;
}

s2s_status s2s_check_ids(const s2s_model *m, bool target, const int *const *ids,
                         const int *len, int n) {
    int v = s2s_vocab_size(target ? m->tgt_vocab : m->src_vocab), max_len = m->cfg.model.max_len;
    const char *what = target ? "target" : "sentence";
    for (int i = 0; i < n; i++) {
        if (len[i] < 0 || len[i] + 1 > max_len)
            return s2s_fail(S2S_ERR_INVALID, "%s %d has %d tokens; the model takes at most %d",
                            what, i + 1, len[i], max_len - 1);
        for (int j = 0; j < len[i]; j++)
            if (ids[i][j] < 0 || ids[i][j] >= v)
                return s2s_fail(S2S_ERR_INVALID, "%s %d: token id %d out of range", what, i + 1,
                                ids[i][j]);
    }
    return S2S_OK;
}

unsigned s2s_maps_wanted(const s2s_decode_params *p) {
    return (p->want_attention ? S2S_MAPS_CROSS : 0u) | (p->want_self_attention ? S2S_MAPS_SELF : 0u);
}

s2s_status s2s_encode_batch(s2s_state *st, const s2s_order *order, int B,
                            const int *const *src, const int *src_len, int64_t S, bool maps) {
    for (int b = 0; b < B; b++) {
        int i = order[b].index, n = src_len[i];
        int *row = st->ids + (int64_t)b * S;
        if (n > 0) memcpy(row, src[i], (size_t)n * sizeof(int));  // src[i] may be NULL then
        row[n] = S2S_EOS;
        for (int64_t j = n + 1; j < S; j++) row[j] = S2S_PAD;
        st->src_len[b] = n + 1;
    }
    return s2s_encode(st, B, S, maps);
}

s2s_status s2s_hyp_alloc(s2s_hypothesis *h, const s2s_model *m, int rows, int n_src,
                         unsigned maps) {
    memset(h, 0, sizeof *h);
    h->ids = s2s_calloc((size_t)rows, sizeof(int));
    h->token_logprobs = s2s_calloc((size_t)rows, sizeof(float));
    if (!h->ids || !h->token_logprobs) return S2S_ERR_NOMEM;
    h->layers = m->cfg.model.decoder_layers;
    h->enc_layers = m->cfg.model.encoder_layers;
    h->heads = m->cfg.model.heads;
    h->n_src = n_src;
    size_t lh = (size_t)h->layers * h->heads;
    if (maps & S2S_MAPS_CROSS) {
        h->cross_attn = s2s_calloc(lh * rows * n_src, sizeof(float));
        if (!h->cross_attn) return S2S_ERR_NOMEM;
    }
    if (maps & S2S_MAPS_SELF) {
        h->self_attn = s2s_calloc(lh * rows * rows, sizeof(float));
        h->enc_attn = s2s_calloc((size_t)h->enc_layers * h->heads * n_src * n_src, sizeof(float));
        if (!h->self_attn || !h->enc_attn) return S2S_ERR_NOMEM;
    }
    return S2S_OK;
}

void s2s_copy_maps(float *dst, int64_t rows, int64_t cols, int64_t t0, s2s_map_src src,
                   int64_t b, int64_t r0, int64_t count) {
    int64_t n = cols < src.cols ? cols : src.cols;
    for (int64_t l = 0; l < src.layers; l++)
        for (int64_t h = 0; h < src.heads; h++)
            for (int64_t i = 0; i < count && t0 + i < rows; i++) {
                const float *from =
                    src.p + (((l * src.nb + b) * src.heads + h) * src.r + r0 + i) * src.cols;
                float *to = dst + ((l * src.heads + h) * rows + t0 + i) * cols;
                memcpy(to, from, (size_t)n * sizeof(float));
            }
}

// (planes, rows, cols) -> (planes, n_rows, n_cols), in place.
static void shrink(float *p, int64_t planes, int64_t rows, int64_t cols, int64_t n_rows,
                   int64_t n_cols) {
    for (int64_t k = 0; k < planes; k++)
        for (int64_t i = 0; i < n_rows; i++)
            memmove(p + (k * n_rows + i) * n_cols, p + (k * rows + i) * cols,
                    (size_t)n_cols * sizeof(float));
}

void s2s_compact_maps(s2s_hypothesis *h, int rows) {
    int64_t lh = (int64_t)h->layers * h->heads;
    if (h->cross_attn) shrink(h->cross_attn, lh, rows, h->n_src, h->n_out, h->n_src);
    if (h->self_attn) shrink(h->self_attn, lh, rows, rows, h->n_out, h->n_out);
}

void s2s_copy_encoder_maps(s2s_hypothesis *h, const s2s_state *st, int64_t b, int64_t B,
                           int64_t S) {
    s2s_map_src enc = {st->enc_probs, h->enc_layers, B, h->heads, S, S};
    s2s_copy_maps(h->enc_attn, h->n_src, h->n_src, 0, enc, b, 0, h->n_src);
}

void s2s_mask_row(float *logprobs, int64_t V, int64_t t, int min_len) {
    logprobs[S2S_PAD] = -INFINITY;
    logprobs[S2S_BOS] = -INFINITY;
    if (t < min_len) logprobs[S2S_EOS] = -INFINITY;
}

int s2s_length_limit(const s2s_decode_params *p, const s2s_model *m, int src_len) {
    int limit = p->max_len < m->cfg.model.max_len ? p->max_len : m->cfg.model.max_len;
    if (p->max_len_ratio > 0) {
        int by_ratio = (int)ceil(p->max_len_ratio * src_len) + 1;
        if (by_ratio < limit) limit = by_ratio;
    }
    return limit;
}

// ---- entry point ----

static s2s_status check_params(const s2s_decode_params *p) {
    if (p->max_len < 1) return s2s_fail(S2S_ERR_INVALID, "decode: max_len must be at least 1");
    if (p->max_batch < 1) return s2s_fail(S2S_ERR_INVALID, "decode: max_batch must be at least 1");
    if (p->beam_size < 1) return s2s_fail(S2S_ERR_INVALID, "decode: beam_size must be at least 1");
    if (p->n_best < 1 || p->n_best > p->beam_size)
        return s2s_fail(S2S_ERR_INVALID, "decode: n_best must be between 1 and beam_size (%d)",
                        p->beam_size);
    if (p->sampling_topk < 0 || p->sampling_topp <= 0 || p->sampling_topp > 1 ||
        p->temperature < 0)
        return s2s_fail(S2S_ERR_INVALID,
                        "decode: sampling_topk >= 0, 0 < sampling_topp <= 1, temperature >= 0");
    if (p->min_len < 0 || p->max_len_ratio < 0)
        return s2s_fail(S2S_ERR_INVALID, "decode: min_len and max_len_ratio must be >= 0");
    return S2S_OK;
}

// Decodes the sentences order[0..n) batch by batch with st.
static s2s_status run_batches(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                              int n, const int *const *src, const int *src_len,
                              s2s_hypothesis *out) {
    for (int at = 0; at < n; at += p->max_batch) {
        int B = n - at < p->max_batch ? n - at : p->max_batch;
        S2S_TRY(p->beam_size > 1 ? s2s_beam_batch(st, p, order + at, B, src, src_len, out)
                                 : s2s_greedy_batch(st, p, order + at, B, src, src_len, out));
    }
    return S2S_OK;
}

s2s_status s2s_translate(s2s_state *st, const s2s_decode_params *p, const int *const *src,
                         const int *src_len, int n, s2s_hypothesis *out) {
    S2S_TRY(check_params(p));
    memset(out, 0, (size_t)n * (size_t)p->n_best * sizeof *out);
    if (n == 0) return S2S_OK;
    S2S_TRY(s2s_check_ids(st->m, false, src, src_len, n));
    s2s_order *order;
    S2S_TRY(s2s_sort_sentences(&order, src_len, n));
    if (s2s_model_acquire(st->m) != S2S_OK) {  // the weights stay put until release
        free(order);
        return S2S_ERR_BUSY;
    }

    // A batch splits across threads by sentence: thread j takes every
    // threads-th sentence of the sorted order, so lengths stay balanced, and
    // runs its products on one thread. A single sentence keeps the threads
    // for its products instead.
    int caller_threads = s2s_get_num_threads();
    int threads = p->threads > 0 ? p->threads : caller_threads;
    if (threads > n) threads = n;
    s2s_status status = S2S_OK;
    if (threads <= 1) {
        status = run_batches(st, p, order, n, src, src_len, out);
    } else {
        s2s_order *part = s2s_calloc((size_t)n, sizeof *part);
        if (!part) status = S2S_ERR_NOMEM;
        int counts[64] = {0};
        if (threads > 64) threads = 64;
        for (int i = 0; i < n && part; i++) {
            int j = i % threads, per = (n + threads - 1) / threads;
            part[j * per + counts[j]++] = order[i];
        }
        int per = (n + threads - 1) / threads;
        s2s_status results[64];
        char errors[64][256];
#pragma omp parallel for num_threads(threads) schedule(static, 1)
        for (int j = 0; j < threads; j++) {
            results[j] = S2S_OK;
            if (!part) continue;
            s2s_set_num_threads(1);
            s2s_state *mine = st;
            if (j > 0) results[j] = s2s_state_new(&mine, st->m);
            if (results[j] == S2S_OK)
                results[j] = run_batches(mine, p, part + j * per, counts[j], src, src_len, out);
            if (results[j] != S2S_OK) snprintf(errors[j], sizeof errors[j], "%s", s2s_last_error());
            if (j > 0) s2s_state_free(mine);
        }
        for (int j = 0; j < threads && status == S2S_OK; j++)
            if (results[j] != S2S_OK) status = s2s_fail(results[j], "%s", errors[j]);
        free(part);
        s2s_set_num_threads(caller_threads);
    }
    s2s_model_release(st->m);
    free(order);
    if (status != S2S_OK)
        for (int i = 0; i < n * p->n_best; i++) s2s_hypothesis_free(&out[i]);
    return status;
}
