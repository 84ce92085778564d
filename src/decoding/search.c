// The pieces every search shares: sorting sentences, checking ids,
// encoding a batch, masks, length limits and attention maps. Nothing here
// calls up into the entry points (translate.c).
#include "decoding/search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

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

s2s_status s2s_search_begin(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                            int B, int K, const int *const *src, const int *src_len,
                            s2s_search_start *s) {
    const s2s_model *m = st->m;
    *s = (s2s_search_start){.S = order[0].len + 1, .maps = s2s_maps_wanted(p)};
    for (int b = 0; b < B; b++) {
        int limit = s2s_length_limit(p, m, order[b].len);
        if (limit > s->T) s->T = limit;
    }
    s->step_maps = s->maps | (p->decode.no_immediate_repeat ? S2S_MAPS_CROSS : 0u);
    s2s_copy_plane(m, &s->copy_layer, &s->copy_head);
    S2S_TRY(s2s_state_reserve_maps(st, B, K, s->S, s->T, 1, s->step_maps));
    return s2s_encode_batch(st, order, B, src, src_len, s->S, s->maps & S2S_MAPS_SELF);
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

void s2s_hypothesis_free(s2s_hypothesis *h) {
    if (!h) return;
    free(h->ids);
    free(h->token_logprobs);
    free(h->cross_attn);
    free(h->self_attn);
    free(h->enc_attn);
    free(h->unk_src);
    memset(h, 0, sizeof *h);
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

bool s2s_finite_row(float *logprobs, int64_t V) {
    bool any = false;
    for (int64_t v = 0; v < V; v++) {
        if (isnan(logprobs[v])) logprobs[v] = -INFINITY;
        else if (logprobs[v] > -INFINITY) any = true;
    }
    return any;
}

s2s_status s2s_not_finite(int sentence, int64_t t) {
    return s2s_fail(S2S_ERR_INVALID,
                    "sentence %d: no finite log-prob at output %lld (the model's weights or "
                    "activations are not finite)", sentence, (long long)t + 1);
}

void s2s_guard_row(float *logits, const int *prev, int64_t t, const s2s_decode_params *p) {
    float pen = p->decode.repetition_penalty;
    if (pen != 1.0f)
        for (int64_t i = 0; i < t; i++) {
            int64_t j = 0;
            while (j < i && prev[j] != prev[i]) j++;
            if (j < i) continue;  // penalised once, however often it occurs
            float *x = &logits[prev[i]];
            *x = *x > 0 ? *x / pen : *x * pen;
        }
    int64_t n = p->decode.no_repeat_ngram_size;
    if (n <= 0 || t + 1 < n) return;
    // The last n-1 tokens; each earlier occurrence bans the token after it.
    const int *tail = prev + t - (n - 1);
    for (int64_t i = 0; i + n - 1 < t; i++)
        if (n == 1 || memcmp(prev + i, tail, (size_t)(n - 1) * sizeof(int)) == 0)
            logits[prev[i + n - 1]] = -INFINITY;
}

// A known token is a word of the target, which the source licenses to
// repeat only by repeating one itself (很 很, very very); a <unk> stands for
// the source word it copies, and copying one word twice in a row is a
// stutter whatever the source says.
void s2s_mask_repeat(float *row, const int *prev, int64_t t, const s2s_decode_params *p,
                     const s2s_repeat_ctx *r) {
    if (!p->decode.no_immediate_repeat || t == 0) return;
    int last = prev[t - 1];
    if (last != S2S_UNK) {
        if (!r->src_repeats) row[last] = -INFINITY;
    } else if (r->copy_now >= 0 && r->copy_now == r->last_copy) {
        row[S2S_UNK] = -INFINITY;
    }
}

bool s2s_source_repeats(const int *ids, int n) {
    for (int j = 0; j + 1 < n; j++)
        if (ids[j] == ids[j + 1] && ids[j] != S2S_UNK) return true;
    return false;
}

void s2s_copy_plane(const s2s_model *m, int *layer, int *head) {
    if (!s2s_model_head(m, S2S_HEAD_ALIGN, layer, head)) *layer = *head = -1;
}

int s2s_copied_source(const float *row, int64_t layer_stride, int64_t head_stride, int layers,
                      int heads, int layer, int head, int n_src) {
    int best = -1;
    float top = -1;
    for (int j = 0; j < n_src; j++) {
        float w = 0;
        for (int l = 0; l < layers; l++)
            for (int k = 0; k < heads; k++)
                if ((layer < 0 || l == layer) && (head < 0 || k == head))
                    w += row[l * layer_stride + k * head_stride + j];
        if (w > top) top = w, best = j;
    }
    return best;
}

int s2s_length_limit(const s2s_decode_params *p, const s2s_model *m, int src_len) {
    int limit = p->decode.max_len < m->cfg.model.max_len ? p->decode.max_len : m->cfg.model.max_len;
    if (p->decode.max_len_ratio > 0) {
        // compared before the conversion: a ratio times a length may pass INT_MAX
        double by_ratio = ceil(p->decode.max_len_ratio * src_len) + 1;
        if (by_ratio < limit) limit = (int)by_ratio;
    }
    return limit;
}
