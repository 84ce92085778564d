// The public entry points of decoding: parameters, s2s_translate and
// s2s_score. Both sort their sentences by length, cut them into batches and
// split the batches across threads with one runner; the searches
// (greedy.c, beam.c) and forced decoding (score.c) each do one batch.
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/error.h"
#include "decoding/search.h"
#include "ops/matmul.h"

s2s_decode_params s2s_decode_default_params(const s2s_model *m) {
    return s2s_decode_params_from_config(s2s_model_get_config(m));
}

s2s_decode_params s2s_decode_params_from_config(const s2s_config *cfg) {
    s2s_decode_params p = {.decode = cfg->decode, .max_batch = 32};
    if (p.decode.beam_size < p.decode.n_best) p.decode.beam_size = p.decode.n_best;
    return p;
}

void s2s_set_threads(int n) { s2s_set_num_threads(n); }

// ---- the runner ----

// One call's work: translations when tgt is NULL, forced scores otherwise.
typedef struct job {
    const s2s_decode_params *p;
    const int *const *src;
    const int *src_len;
    const int *const *tgt;
    const int *tgt_len;
    s2s_hypothesis *out;
} job;

static s2s_status run_batch(s2s_state *st, const job *j, const s2s_order *order, int B) {
    if (j->tgt)
        return s2s_score_batch(st, j->p, order, B, j->src, j->src_len, j->tgt, j->tgt_len, j->out);
    if (j->p->decode.beam_size > 1)
        return s2s_beam_batch(st, j->p, order, B, j->src, j->src_len, j->out);
    return s2s_greedy_batch(st, j->p, order, B, j->src, j->src_len, j->out);
}

// Runs the sentences order[0..n) batch by batch with st.
static s2s_status run_batches(s2s_state *st, const job *j, const s2s_order *order, int n) {
    for (int at = 0; at < n; at += j->p->max_batch) {
        int B = n - at < j->p->max_batch ? n - at : j->p->max_batch;
        S2S_TRY(run_batch(st, j, order + at, B));
    }
    return S2S_OK;
}

// Runs n sentences (n > 0, ids checked) whose results fill
// j->out[0 .. n * per_sentence); on failure frees them all.
//
// A batch splits across threads by sentence: thread k takes every
// threads-th sentence of the sorted order, so lengths stay balanced, and
// runs its products on one thread. A single sentence keeps the threads for
// its products instead.
static s2s_status run(s2s_state *st, const job *j, int n, int per_sentence) {
    s2s_order *order;
    S2S_TRY(s2s_sort_sentences(&order, j->src_len, n));
    if (s2s_model_acquire(st->m) != S2S_OK) {  // the weights stay put until release
        free(order);
        return S2S_ERR_BUSY;
    }
    int caller_threads = s2s_get_num_threads();
    int threads = j->p->threads > 0 ? j->p->threads : caller_threads;
    if (threads > n) threads = n;
    if (threads > 64) threads = 64;
    s2s_status status = S2S_OK;
    if (threads <= 1) {
        status = run_batches(st, j, order, n);
    } else {
        int per = (n + threads - 1) / threads;
        s2s_order *part = s2s_calloc((size_t)threads * per, sizeof *part);
        if (!part) status = S2S_ERR_NOMEM;
        int counts[64] = {0};
        for (int i = 0; i < n && part; i++) {
            int k = i % threads;
            part[k * per + counts[k]++] = order[i];
        }
        s2s_status results[64];
        char errors[64][256];
#pragma omp parallel for num_threads(threads) schedule(static, 1)
        for (int k = 0; k < threads; k++) {
            results[k] = S2S_OK;
            if (!part) continue;
            s2s_set_num_threads(1);
            s2s_state *mine = st;
            if (k > 0) results[k] = s2s_state_new(&mine, st->m);
            if (k > 0 && results[k] == S2S_OK) mine->debug = st->debug;  // tests' hooks: every thread
            if (results[k] == S2S_OK) results[k] = run_batches(mine, j, part + k * per, counts[k]);
            if (results[k] != S2S_OK) snprintf(errors[k], sizeof errors[k], "%s", s2s_last_error());
            if (k > 0) s2s_state_free(mine);
        }
        for (int k = 0; k < threads && status == S2S_OK; k++)
            if (results[k] != S2S_OK) status = s2s_fail(results[k], "%s", errors[k]);
        free(part);
        s2s_set_num_threads(caller_threads);
    }
    s2s_model_release(st->m);
    free(order);
    if (status != S2S_OK)
        for (int i = 0; i < n * per_sentence; i++) s2s_hypothesis_free(&j->out[i]);
    return status;
}

// ---- entry points ----

static s2s_status check_batch(const s2s_decode_params *p) {
    if (p->max_batch < 1 || p->max_batch > S2S_MAX_BATCH)
        return s2s_fail(S2S_ERR_INVALID, "decode: max_batch must be from 1 to %d", S2S_MAX_BATCH);
    return S2S_OK;
}

static s2s_status check_params(const s2s_decode_params *p) {
    const s2s_decode_config *d = &p->decode;
    if (d->max_len < 1) return s2s_fail(S2S_ERR_INVALID, "decode: max_len must be at least 1");
    S2S_TRY(check_batch(p));
    if (d->beam_size < 1 || d->beam_size > S2S_MAX_BEAM)
        return s2s_fail(S2S_ERR_INVALID, "decode: beam_size must be from 1 to %d", S2S_MAX_BEAM);
    if (d->n_best < 1 || d->n_best > d->beam_size)
        return s2s_fail(S2S_ERR_INVALID, "decode: n_best must be between 1 and beam_size (%d)",
                        d->beam_size);
    if (d->sampling_topk < 0 || d->sampling_topp <= 0 || d->sampling_topp > 1 ||
        d->temperature < 0)
        return s2s_fail(S2S_ERR_INVALID,
                        "decode: sampling_topk >= 0, 0 < sampling_topp <= 1, temperature >= 0");
    if (d->min_len < 0 || !(d->max_len_ratio >= 0 && d->max_len_ratio <= S2S_MAX_LEN_RATIO))
        return s2s_fail(S2S_ERR_INVALID, "decode: min_len must be >= 0 and max_len_ratio "
                        "from 0 to %d", S2S_MAX_LEN_RATIO);
    if (!(d->repetition_penalty > 0) || d->no_repeat_ngram_size < 0)
        return s2s_fail(S2S_ERR_INVALID,
                        "decode: repetition_penalty must be > 0 and no_repeat_ngram_size >= 0");
    return S2S_OK;
}

// ---- replacing unknown words ----

static bool has_unk(const s2s_hypothesis *h) {
    for (int t = 0; t < h->n; t++)
        if (h->ids[t] == S2S_UNK) return true;
    return false;
}

// h->unk_src from maps (layers, heads, rows, n_src) whose row t predicted
// ids[t] (rows >= 1): the source token each <unk> copies (s2s_copied_source,
// the last column, the source </s>, left out) in the plane (layer, head).
static s2s_status unk_from_maps(s2s_hypothesis *h, const float *maps, int rows, int layer,
                                int head) {
    h->unk_src = s2s_calloc((size_t)h->n, sizeof(int));
    if (!h->unk_src) return S2S_ERR_NOMEM;
    int64_t plane = (int64_t)rows * h->n_src;
    for (int t = 0; t < h->n; t++) {
        h->unk_src[t] = -1;
        if (h->ids[t] != S2S_UNK || t >= rows) continue;
        h->unk_src[t] = s2s_copied_source(maps + (int64_t)t * h->n_src, h->heads * plane, plane,
                                          h->layers, h->heads, layer, head, h->n_src - 1);
    }
    return S2S_OK;
}

// Fills unk_src for the hypotheses out[0..n*n_best) holding a <unk>: from
// their cross_attn when the caller asked for it, else from one forced
// decode of their tokens with attention, which gives the rows the search
// saw (the same model on the same prefix) at no cost to the lines without
// a <unk>. A hypothesis of the model's max_len tokens (cut, no </s>) is
// forced on all but its last, whose row is then the forced </s> row: the
// same prefix, so the same attention.
static s2s_status fill_unk_src(s2s_state *st, const s2s_decode_params *p, const int *const *src,
                               const int *src_len, int n, s2s_hypothesis *out) {
    int layer, head;
    s2s_copy_plane(st->m, &layer, &head);
    int total = n * p->decode.n_best, k = 0, max_tgt = st->m->cfg.model.max_len - 1;
    int *which = s2s_calloc((size_t)total + 1, sizeof(int));
    const int **fs = s2s_calloc((size_t)total + 1, sizeof *fs), **ft = s2s_calloc((size_t)total + 1, sizeof *ft);
    int *fsl = s2s_calloc((size_t)total + 1, sizeof(int)), *ftl = s2s_calloc((size_t)total + 1, sizeof(int));
    s2s_hypothesis *forced = s2s_calloc((size_t)total + 1, sizeof *forced);
    s2s_status status = which && fs && ft && fsl && ftl && forced ? S2S_OK : S2S_ERR_NOMEM;
    for (int i = 0; i < total && status == S2S_OK; i++) {
        s2s_hypothesis *h = &out[i];
        if (!h->ids || !has_unk(h)) continue;
        if (h->cross_attn) {
            status = unk_from_maps(h, h->cross_attn, h->n_out, layer, head);
            continue;
        }
        which[k] = i;
        fs[k] = src[i / p->decode.n_best], fsl[k] = src_len[i / p->decode.n_best];
        ft[k] = h->ids, ftl[k] = h->n < max_tgt ? h->n : max_tgt;
        k++;
    }
    if (status == S2S_OK && k > 0) {
        s2s_decode_params fp = *p;
        fp.want_attention = true;
        fp.want_self_attention = false;
        status = s2s_score(st, &fp, fs, fsl, ft, ftl, k, forced);
        for (int f = 0; f < k && status == S2S_OK; f++) {
            s2s_hypothesis *h = &out[which[f]];
            status = unk_from_maps(h, forced[f].cross_attn, forced[f].n_out, layer, head);
        }
        for (int f = 0; f < k; f++) s2s_hypothesis_free(&forced[f]);
    }
    free(which), free(fs), free(ft), free(fsl), free(ftl), free(forced);
    return status;
}

s2s_status s2s_translate(s2s_state *st, const s2s_decode_params *p, const int *const *src,
                         const int *src_len, int n, s2s_hypothesis *out) {
    S2S_TRY(check_params(p));
    // out[i * n_best + j] and the loops over n * n_best are ints
    if (n < 0 || S2S_SIZE(n, p->decode.n_best) > INT_MAX)
        return s2s_fail(S2S_ERR_INVALID, "%d sentences of %d hypotheses each are too many for "
                        "one call", n, p->decode.n_best);
    memset(out, 0, (size_t)n * (size_t)p->decode.n_best * sizeof *out);
    if (n == 0) return S2S_OK;
    S2S_TRY(s2s_check_ids(st->m, false, src, src_len, n));
    job j = {.p = p, .src = src, .src_len = src_len, .out = out};
    S2S_TRY(run(st, &j, n, p->decode.n_best));
    if (!p->decode.replace_unknowns) return S2S_OK;
    s2s_status status = fill_unk_src(st, p, src, src_len, n, out);
    if (status != S2S_OK)
        for (int i = 0; i < n * p->decode.n_best; i++) s2s_hypothesis_free(&out[i]);
    return status;
}

s2s_status s2s_score(s2s_state *st, const s2s_decode_params *p, const int *const *src,
                     const int *src_len, const int *const *tgt, const int *tgt_len, int n,
                     s2s_hypothesis *out) {
    memset(out, 0, (size_t)n * sizeof *out);
    if (n == 0) return S2S_OK;
    S2S_TRY(check_batch(p));
    S2S_TRY(s2s_check_ids(st->m, false, src, src_len, n));
    S2S_TRY(s2s_check_ids(st->m, true, tgt, tgt_len, n));
    job j = {.p = p, .src = src, .src_len = src_len, .tgt = tgt, .tgt_len = tgt_len, .out = out};
    return run(st, &j, n, 1);
}
