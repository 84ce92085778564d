// Greedy decoding and forced decoding (scoring) over batches of sentences.
//
// Sentences are sorted by source length and cut into batches, so padding
// stays small; results land in input order. Each decoding step computes one
// new row per sentence against the self-attention cache: the prefix is
// never re-run.
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/util.h"
#include "decoding/state.h"
#include "ops/matmul.h"
#include "ops/ops.h"

s2s_decode_params s2s_decode_default_params(const s2s_model *m) {
    return (s2s_decode_params){
        .max_len = s2s_model_get_config(m)->decode.max_len,
        .max_batch = 32,
        .want_attention = false,
    };
}

void s2s_set_threads(int n) { s2s_set_num_threads(n); }

void s2s_hypothesis_free(s2s_hypothesis *h) {
    if (!h) return;
    free(h->ids);
    free(h->token_logprobs);
    free(h->cross_attn);
    memset(h, 0, sizeof *h);
}

// ---- batching ----

typedef struct order_item {
    int len, index;
} order_item;

static int by_len_desc(const void *a, const void *b) {
    const order_item *x = a, *y = b;
    if (x->len != y->len) return y->len - x->len;
    return x->index - y->index;
}

static s2s_status check_sources(const s2s_model *m, const int *const *src, const int *src_len,
                                int n) {
    int vs = s2s_vocab_size(m->src_vocab), max_len = m->cfg.model.max_len;
    for (int i = 0; i < n; i++) {
        if (src_len[i] < 0 || src_len[i] + 1 > max_len)
            return s2s_fail(S2S_ERR_INVALID,
                            "sentence %d has %d tokens; the model takes at most %d", i + 1,
                            src_len[i], max_len - 1);
        for (int j = 0; j < src_len[i]; j++)
            if (src[i][j] < 0 || src[i][j] >= vs)
                return s2s_fail(S2S_ERR_INVALID, "sentence %d: token id %d out of range", i + 1,
                                src[i][j]);
    }
    return S2S_OK;
}

// Fills ids (B, S) and src_len for the sentences order[0..B) and encodes.
static s2s_status encode_batch(s2s_state *st, const order_item *order, int B,
                               const int *const *src, const int *src_len, int64_t S) {
    for (int b = 0; b < B; b++) {
        int i = order[b].index, n = src_len[i];
        int *row = st->ids + (int64_t)b * S;
        memcpy(row, src[i], (size_t)n * sizeof(int));
        row[n] = S2S_EOS;
        for (int64_t j = n + 1; j < S; j++) row[j] = S2S_PAD;
        st->src_len[b] = n + 1;
    }
    return s2s_encode(st, B, S);
}

static s2s_status alloc_hyp(s2s_hypothesis *h, const s2s_model *m, int rows, int n_src,
                            bool want_attention) {
    memset(h, 0, sizeof *h);
    h->ids = s2s_calloc((size_t)rows, sizeof(int));
    h->token_logprobs = s2s_calloc((size_t)rows, sizeof(float));
    if (!h->ids || !h->token_logprobs) return S2S_ERR_NOMEM;
    h->layers = m->cfg.model.decoder_layers;
    h->heads = m->cfg.model.heads;
    h->n_src = n_src;
    if (want_attention) {
        h->cross_attn = s2s_calloc((size_t)h->layers * h->heads * rows * n_src, sizeof(float));
        if (!h->cross_attn) return S2S_ERR_NOMEM;
    }
    return S2S_OK;
}

// Copies rows [t0, t0+tq) of sentence b's cross-attention from the state
// (L, B, H, Tq, S) into h->cross_attn laid out (L, H, rows, n_src); rows
// past `rows` (padding of a shorter target) are left out.
static void copy_attention(s2s_hypothesis *h, const s2s_state *st, int b, int64_t B, int64_t S,
                           int64_t t0, int64_t tq, int64_t rows) {
    int64_t H = h->heads;
    for (int64_t l = 0; l < h->layers; l++)
        for (int64_t hd = 0; hd < H; hd++)
            for (int64_t i = 0; i < tq && t0 + i < rows; i++) {
                const float *from = st->cross_probs + (((l * B + b) * H + hd) * tq + i) * S;
                float *to = h->cross_attn + ((l * H + hd) * rows + t0 + i) * h->n_src;
                memcpy(to, from, (size_t)h->n_src * sizeof(float));
            }
}

// Shrinks (L, H, rows, n_src) to (L, H, n_out, n_src) in place.
static void compact_attention(s2s_hypothesis *h, int rows) {
    if (!h->cross_attn || h->n_out == rows) return;
    int64_t plane = (int64_t)h->n_out * h->n_src;
    for (int64_t lh = 0; lh < (int64_t)h->layers * h->heads; lh++)
        memmove(h->cross_attn + lh * plane, h->cross_attn + lh * rows * h->n_src,
                (size_t)plane * sizeof(float));
}

static s2s_status sort_sentences(order_item **out, const int *len, int n) {
    order_item *order = s2s_calloc((size_t)n, sizeof *order);
    if (!order) return S2S_ERR_NOMEM;
    for (int i = 0; i < n; i++) order[i] = (order_item){len[i], i};
    qsort(order, (size_t)n, sizeof *order, by_len_desc);
    *out = order;
    return S2S_OK;
}

static void free_hyps(s2s_hypothesis *out, int n) {
    for (int i = 0; i < n; i++) s2s_hypothesis_free(&out[i]);
}

// ---- greedy ----

// The most likely token that may be generated: never <pad> or <s>.
static int next_token(const float *logprobs, int64_t V) {
    int best = S2S_UNK;
    for (int64_t v = S2S_UNK; v < V; v++)
        if (v != S2S_BOS && logprobs[v] > logprobs[best]) best = (int)v;
    return best;
}

static s2s_status greedy_batch(s2s_state *st, const s2s_decode_params *p, const order_item *order,
                               int B, const int *const *src, const int *src_len,
                               s2s_hypothesis *out) {
    const s2s_model *m = st->m;
    int64_t V = s2s_vocab_size(m->tgt_vocab);
    int64_t S = order[0].len + 1;
    int64_t T = p->max_len < m->cfg.model.max_len ? p->max_len : m->cfg.model.max_len;
    S2S_TRY(s2s_state_reserve(st, B, S, T));
    S2S_TRY(encode_batch(st, order, B, src, src_len, S));

    int *prev = s2s_calloc((size_t)B, sizeof(int));
    bool *done = s2s_calloc((size_t)B, sizeof(bool));
    s2s_status status = prev && done ? S2S_OK : S2S_ERR_NOMEM;
    for (int b = 0; b < B && status == S2S_OK; b++) {
        int i = order[b].index;
        status = alloc_hyp(&out[i], m, (int)T, src_len[i] + 1, p->want_attention);
        prev[b] = S2S_BOS;
    }
    int remaining = B;
    for (int64_t t = 0; t < T && remaining > 0 && status == S2S_OK; t++) {
        memcpy(st->ids, prev, (size_t)B * sizeof(int));
        s2s_dec_pos pos = {.t0 = t, .tq = 1, .t_alloc = T};
        status = s2s_decode_rows(st, B, S, pos, p->want_attention);
        for (int b = 0; b < B && status == S2S_OK; b++) {
            if (done[b]) continue;
            s2s_hypothesis *h = &out[order[b].index];
            float *row = st->logits + b * V;
            s2s_log_softmax_row(row, V);
            int next = next_token(row, V);
            h->token_logprobs[t] = row[next];
            h->logprob += row[next];
            if (p->want_attention) copy_attention(h, st, b, B, S, t, 1, T);
            h->n_out = (int)t + 1;
            if (next == S2S_EOS) {
                done[b] = true;
                remaining--;
            } else {
                h->ids[h->n++] = next;
            }
            prev[b] = next;
        }
    }
    for (int b = 0; b < B && status == S2S_OK; b++)
        compact_attention(&out[order[b].index], (int)T);
    free(prev);
    free(done);
    return status;
}

s2s_status s2s_translate(s2s_state *st, const s2s_decode_params *p, const int *const *src,
                         const int *src_len, int n, s2s_hypothesis *out) {
    memset(out, 0, (size_t)n * sizeof *out);
    if (n == 0) return S2S_OK;
    if (p->max_len < 1 || p->max_batch < 1)
        return s2s_fail(S2S_ERR_INVALID, "max_len and max_batch must be at least 1");
    S2S_TRY(check_sources(st->m, src, src_len, n));
    order_item *order;
    S2S_TRY(sort_sentences(&order, src_len, n));
    s2s_status status = S2S_OK;
    for (int at = 0; at < n && status == S2S_OK; at += p->max_batch) {
        int B = n - at < p->max_batch ? n - at : p->max_batch;
        status = greedy_batch(st, p, order + at, B, src, src_len, out);
    }
    free(order);
    if (status != S2S_OK) free_hyps(out, n);
    return status;
}

// ---- forced decoding ----

static s2s_status score_batch(s2s_state *st, const s2s_decode_params *p, const order_item *order,
                              int B, const int *const *src, const int *src_len,
                              const int *const *tgt, const int *tgt_len, s2s_hypothesis *out) {
    const s2s_model *m = st->m;
    int64_t V = s2s_vocab_size(m->tgt_vocab);
    int64_t S = 0, T = 0;
    for (int b = 0; b < B; b++) {
        int i = order[b].index;
        if (src_len[i] + 1 > S) S = src_len[i] + 1;
        if (tgt_len[i] + 1 > T) T = tgt_len[i] + 1;
    }
    S2S_TRY(s2s_state_reserve(st, B, S, T));
    // order is sorted by source length: re-fill ids with S from the max above
    S2S_TRY(encode_batch(st, order, B, src, src_len, S));

    for (int b = 0; b < B; b++) {  // decoder input: <s> + target, padded
        int i = order[b].index;
        int *row = st->ids + (int64_t)b * T;
        row[0] = S2S_BOS;
        memcpy(row + 1, tgt[i], (size_t)tgt_len[i] * sizeof(int));
        for (int64_t j = tgt_len[i] + 1; j < T; j++) row[j] = S2S_PAD;
    }
    s2s_dec_pos pos = {.t0 = 0, .tq = T, .t_alloc = T};
    S2S_TRY(s2s_decode_rows(st, B, S, pos, p->want_attention));

    for (int b = 0; b < B; b++) {
        int i = order[b].index, n = tgt_len[i];
        s2s_hypothesis *h = &out[i];
        S2S_TRY(alloc_hyp(h, m, n + 1, src_len[i] + 1, p->want_attention));
        memcpy(h->ids, tgt[i], (size_t)n * sizeof(int));
        h->n = n;
        h->n_out = n + 1;
        for (int t = 0; t <= n; t++) {
            float *row = st->logits + ((int64_t)b * T + t) * V;
            s2s_log_softmax_row(row, V);
            int gold = t < n ? tgt[i][t] : S2S_EOS;
            h->token_logprobs[t] = row[gold];
            h->logprob += row[gold];
        }
        if (p->want_attention) copy_attention(h, st, b, B, S, 0, T, n + 1);
    }
    return S2S_OK;
}

s2s_status s2s_score(s2s_state *st, const s2s_decode_params *p, const int *const *src,
                     const int *src_len, const int *const *tgt, const int *tgt_len, int n,
                     s2s_hypothesis *out) {
    memset(out, 0, (size_t)n * sizeof *out);
    if (n == 0) return S2S_OK;
    if (p->max_batch < 1) return s2s_fail(S2S_ERR_INVALID, "max_batch must be at least 1");
    const s2s_model *m = st->m;
    S2S_TRY(check_sources(m, src, src_len, n));
    int vt = s2s_vocab_size(m->tgt_vocab);
    for (int i = 0; i < n; i++) {
        if (tgt_len[i] < 0 || tgt_len[i] + 1 > m->cfg.model.max_len)
            return s2s_fail(S2S_ERR_INVALID,
                            "target %d has %d tokens; the model takes at most %d", i + 1,
                            tgt_len[i], m->cfg.model.max_len - 1);
        for (int j = 0; j < tgt_len[i]; j++)
            if (tgt[i][j] < 0 || tgt[i][j] >= vt)
                return s2s_fail(S2S_ERR_INVALID, "target %d: token id %d out of range", i + 1,
                                tgt[i][j]);
    }
    order_item *order;
    S2S_TRY(sort_sentences(&order, src_len, n));
    s2s_status status = S2S_OK;
    for (int at = 0; at < n && status == S2S_OK; at += p->max_batch) {
        int B = n - at < p->max_batch ? n - at : p->max_batch;
        status = score_batch(st, p, order + at, B, src, src_len, tgt, tgt_len, out);
    }
    free(order);
    if (status != S2S_OK) free_hyps(out, n);
    return status;
}
