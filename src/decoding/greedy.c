// Greedy decoding and sampling: one sequence per sentence, one new row per
// step against the self-attention cache (the prefix is never re-run).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "decoding/search.h"
#include "ops/ops.h"

static bool sampling(const s2s_decode_params *p) {
    const s2s_decode_config *d = &p->decode;
    return d->temperature > 0 && (d->sampling_topk != 1 || d->sampling_topp < 1);
}

// The first token of the largest log-prob x[v] - lse, as log_softmax makes
// it (NaN never chosen), without writing the row; -1 when none is finite.
static int argmax_logprob(const float *x, int64_t V, float lse) {
    int best = -1;
    float top = -INFINITY;
    for (int64_t v = 0; v < V; v++) {
        float lp = x[v] - lse;
        if (lp > top) top = lp, best = (int)v;
    }
    return best;
}

typedef struct cand {
    float logit;
    int id;
} cand;

static int by_logit_desc(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id - y->id;
}

// Draws a token from the masked log-probs: temperature, then the top k,
// then the smallest prefix holding top-p of the mass. work has V entries;
// at least one log-prob must be finite (s2s_finite_row).
static int sample(const float *logprobs, int64_t V, const s2s_decode_params *p, s2s_rng *rng,
                  cand *work) {
    int n = 0;
    for (int64_t v = 0; v < V; v++)
        if (logprobs[v] > -INFINITY)
            work[n++] = (cand){logprobs[v] / p->decode.temperature, (int)v};
    S2S_ASSERT(n > 0);
    qsort(work, (size_t)n, sizeof *work, by_logit_desc);
    if (p->decode.sampling_topk > 0 && p->decode.sampling_topk < n) n = p->decode.sampling_topk;
    double total = 0;
    for (int i = 0; i < n; i++) total += exp((double)work[i].logit - work[0].logit);
    if (p->decode.sampling_topp < 1) {  // keep the smallest prefix reaching topp
        double mass = 0;
        for (int i = 0; i < n; i++) {
            mass += exp((double)work[i].logit - work[0].logit) / total;
            if (mass >= p->decode.sampling_topp) {
                n = i + 1;
                break;
            }
        }
        total = 0;
        for (int i = 0; i < n; i++) total += exp((double)work[i].logit - work[0].logit);
    }
    double u = s2s_rng_uniform(rng) * total, acc = 0;
    for (int i = 0; i < n; i++) {
        acc += exp((double)work[i].logit - work[0].logit);
        if (u < acc) return work[i].id;
    }
    return work[n - 1].id;
}

s2s_status s2s_greedy_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                            int B, const int *const *src, const int *src_len,
                            s2s_hypothesis *out) {
    const s2s_model *m = st->m;
    int64_t V = s2s_vocab_size(m->tgt_vocab);
    int64_t S = order[0].len + 1;
    int64_t T = s2s_length_limit(p, m, order[0].len);
    for (int b = 1; b < B; b++) {
        int limit = s2s_length_limit(p, m, order[b].len);
        if (limit > T) T = limit;
    }
    unsigned maps = s2s_maps_wanted(p);
    // no_immediate_repeat reads which source token each step's <unk> would
    // copy from the step's cross-attention, asked for or not
    bool no_stutter = p->decode.no_immediate_repeat;
    unsigned step_maps = maps | (no_stutter ? S2S_MAPS_CROSS : 0u);
    const s2s_model_config *c = &m->cfg.model;
    int layer, head;
    s2s_copy_plane(m, &layer, &head);
    S2S_TRY(s2s_state_reserve_maps(st, B, 1, S, T, 1, step_maps));
    S2S_TRY(s2s_encode_batch(st, order, B, src, src_len, S, maps & S2S_MAPS_SELF));

    int *prev = s2s_calloc((size_t)B, sizeof(int)), *limit = s2s_calloc((size_t)B, sizeof(int));
    bool *done = s2s_calloc((size_t)B, sizeof(bool));
    s2s_rng *rngs = s2s_calloc((size_t)B, sizeof(s2s_rng));
    cand *work = s2s_calloc((size_t)V, sizeof(cand));
    s2s_repeat_ctx *rep = s2s_calloc((size_t)B, sizeof *rep);
    s2s_status status = prev && limit && done && rngs && work && rep ? S2S_OK : S2S_ERR_NOMEM;
    for (int b = 0; b < B && status == S2S_OK; b++) {
        int i = order[b].index;
        status = s2s_hyp_alloc(&out[i * p->decode.n_best], m, (int)T, src_len[i] + 1, maps);
        if (status == S2S_OK && (maps & S2S_MAPS_SELF))
            s2s_copy_encoder_maps(&out[i * p->decode.n_best], st, b, B, S);
        prev[b] = S2S_BOS;
        limit[b] = s2s_length_limit(p, m, src_len[i]);
        rep[b] = (s2s_repeat_ctx){s2s_source_repeats(src[i], src_len[i]), -1, -1};
        // each sentence its own stream, from the seed and its words: a
        // sample does not depend on batching or on the other sentences
        uint64_t key = (uint64_t)p->decode.seed * 0x9E3779B97F4A7C15ULL + (uint64_t)src_len[i];
        for (int j = 0; j < src_len[i]; j++) key = s2s_fnv1a_word(key, (uint64_t)src[i][j]);
        s2s_rng_seed(&rngs[b], key);
    }
    // live[k]: which sentence row k of the state holds. Finished rows leave
    // the state once they are a quarter of it (s2s_state_keep), so later
    // steps run on fewer rows; everything per sentence stays indexed by b.
    int *live = s2s_calloc((size_t)B, sizeof(int)), *keep = s2s_calloc((size_t)B, sizeof(int));
    if ((!live || !keep) && status == S2S_OK) status = S2S_ERR_NOMEM;
    for (int b = 0; b < B && live; b++) live[b] = b;
    int n = B, remaining = B;
    for (int64_t t = 0; t < T && remaining > 0 && status == S2S_OK; t++) {
        n = s2s_state_drop_done(st, done, live, keep, n, remaining, /*K=*/1, S, t, T);
        for (int k = 0; k < n; k++) st->ids[k] = prev[live[k]];
        st->row_steps += n;
        s2s_dec_pos pos = {.t0 = t, .tq = 1, .t_alloc = T, .beams = 1};
        status = s2s_decode_rows(st, n, S, pos, step_maps);
        s2s_map_src cross = {st->cross_probs, c->decoder_layers, n, c->heads, 1, S};
        s2s_map_src self = {st->self_probs, c->decoder_layers, n, c->heads, 1, t + 1};
        for (int k = 0; k < n && status == S2S_OK; k++) {
            int b = live[k];
            if (done[b]) continue;
            s2s_hypothesis *h = &out[order[b].index * p->decode.n_best];
            float *row = st->logits + k * V;
            // the source token a <unk> here copies: row k of (L, n, H, 1, S)
            if (no_stutter)
                rep[b].copy_now = s2s_copied_source(st->cross_probs + k * c->heads * S,
                                                    n * c->heads * S, S, c->decoder_layers,
                                                    c->heads, layer, head, src_len[order[b].index]);
            if (s2s_guard_on(p)) s2s_guard_row(row, h->ids, t, p);  // h->n == t while live
            int next;
            float lp;
            if (sampling(p)) {
                s2s_log_softmax_row(row, V);
                s2s_mask_row(row, V, t, p->decode.min_len);
                s2s_mask_repeat(row, h->ids, t, p, &rep[b]);
                next = s2s_finite_row(row, V) ? sample(row, V, p, &rngs[b], work) : -1;
                lp = next >= 0 ? row[next] : 0.0f;
            } else {  // the same log-probs, read rather than written (as beam.c)
                float lse = s2s_log_sum_exp_row(row, V);
                s2s_mask_row(row, V, t, p->decode.min_len);
                s2s_mask_repeat(row, h->ids, t, p, &rep[b]);
                next = argmax_logprob(row, V, lse);
                lp = next >= 0 ? row[next] - lse : 0.0f;
            }
            if (next < 0) {
                status = s2s_not_finite(order[b].index + 1, t);
                break;
            }
            h->token_logprobs[t] = lp;
            h->logprob += lp;
            if (h->cross_attn) s2s_copy_maps(h->cross_attn, T, h->n_src, t, cross, k, 0, 1);
            if (h->self_attn) s2s_copy_maps(h->self_attn, T, T, t, self, k, 0, 1);
            h->n_out = (int)t + 1;
            if (next == S2S_EOS || t + 1 >= limit[b]) {
                done[b] = true;
                remaining--;
            }
            if (next != S2S_EOS) h->ids[h->n++] = next;
            prev[b] = next;
            rep[b].last_copy = next == S2S_UNK ? rep[b].copy_now : -1;
        }
    }
    free(live), free(keep);
    for (int b = 0; b < B && status == S2S_OK; b++) {
        s2s_hypothesis *h = &out[order[b].index * p->decode.n_best];
        h->score = h->logprob / powf((float)h->n_out, p->decode.length_penalty);
        s2s_compact_maps(h, (int)T);
    }
    free(prev), free(limit), free(done), free(rngs), free(work), free(rep);
    return status;
}
