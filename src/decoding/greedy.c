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

// A batch's search: the shared start, then per sentence b its last token,
// length limit, whether it is done, its sampling stream and its repetition
// context; live[k] is the sentence row k of the state holds. Finished rows
// leave the state once they are a quarter of it (s2s_state_keep), so later
// steps run on fewer rows; everything per sentence stays indexed by b.
typedef struct greedy {
    s2s_state *st;
    const s2s_decode_params *p;
    const s2s_order *order;
    const int *src_len;
    s2s_hypothesis *out;
    s2s_search_start s;
    int B;
    int64_t V;
    int *prev, *limit, *live, *keep;
    bool *done;
    s2s_rng *rngs;
    cand *work;  // (V) sampling's candidates
    s2s_repeat_ctx *rep;
} greedy;

static s2s_status greedy_alloc(greedy *g, int B) {
    g->prev = s2s_calloc((size_t)B, sizeof(int));
    g->limit = s2s_calloc((size_t)B, sizeof(int));
    g->live = s2s_calloc((size_t)B, sizeof(int));
    g->keep = s2s_calloc((size_t)B, sizeof(int));
    g->done = s2s_calloc((size_t)B, sizeof(bool));
    g->rngs = s2s_calloc((size_t)B, sizeof(s2s_rng));
    g->work = s2s_calloc((size_t)g->V, sizeof(cand));
    g->rep = s2s_calloc((size_t)B, sizeof *g->rep);
    bool got = g->prev && g->limit && g->live && g->keep && g->done && g->rngs && g->work && g->rep;
    return got ? S2S_OK : S2S_ERR_NOMEM;
}

static void greedy_free(greedy *g) {
    free(g->prev), free(g->limit), free(g->live), free(g->keep);
    free(g->done), free(g->rngs), free(g->work), free(g->rep);
}

// Sentence b's hypothesis (with its encoder maps when asked for), first
// token, limit, repetition context and sampling stream.
static s2s_status start_sentence(greedy *g, int b, const int *const *src) {
    const s2s_model *m = g->st->m;
    const s2s_decode_params *p = g->p;
    int i = g->order[b].index;
    s2s_hypothesis *h = &g->out[i * p->decode.n_best];
    S2S_TRY(s2s_hyp_alloc(h, m, (int)g->s.T, g->src_len[i] + 1, g->s.maps));
    if (g->s.maps & S2S_MAPS_SELF) s2s_copy_encoder_maps(h, g->st, b, g->B, g->s.S);
    g->prev[b] = S2S_BOS;
    g->limit[b] = s2s_length_limit(p, m, g->src_len[i]);
    g->rep[b] = (s2s_repeat_ctx){s2s_source_repeats(src[i], g->src_len[i]), -1, -1};
    g->live[b] = b;
    // each sentence its own stream, from the seed and its words: a
    // sample does not depend on batching or on the other sentences
    uint64_t key = (uint64_t)p->decode.seed * 0x9E3779B97F4A7C15ULL + (uint64_t)g->src_len[i];
    for (int j = 0; j < g->src_len[i]; j++) key = s2s_fnv1a_word(key, (uint64_t)src[i][j]);
    s2s_rng_seed(&g->rngs[b], key);
    return S2S_OK;
}

// The next token of the sentence in state row k of n at step t: its
// log-prob, its maps, whether it ends the sentence. -1 when no token of
// the row is finite.
static int step_row(greedy *g, int k, int n, int64_t t) {
    const s2s_decode_params *p = g->p;
    const s2s_model_config *c = &g->st->m->cfg.model;
    int b = g->live[k];
    int64_t S = g->s.S, V = g->V;
    s2s_hypothesis *h = &g->out[g->order[b].index * p->decode.n_best];
    float *row = g->st->logits + k * V;
    // the source token a <unk> here copies: row k of (L, n, H, 1, S)
    if (p->decode.no_immediate_repeat)
        g->rep[b].copy_now = s2s_copied_source(g->st->cross_probs + k * c->heads * S,
                                               n * c->heads * S, S, c->decoder_layers, c->heads,
                                               g->s.copy_layer, g->s.copy_head,
                                               g->src_len[g->order[b].index]);
    if (s2s_guard_on(p)) s2s_guard_row(row, h->ids, t, p);  // h->n == t while live
    int next;
    float lp;
    if (sampling(p)) {
        s2s_log_softmax_row(row, V);
        s2s_mask_row(row, V, t, p->decode.min_len);
        s2s_mask_repeat(row, h->ids, t, p, &g->rep[b]);
        next = s2s_finite_row(row, V) ? sample(row, V, p, &g->rngs[b], g->work) : -1;
        lp = next >= 0 ? row[next] : 0.0f;
    } else {  // the same log-probs, read rather than written (as beam.c)
        float lse = s2s_log_sum_exp_row(row, V);
        s2s_mask_row(row, V, t, p->decode.min_len);
        s2s_mask_repeat(row, h->ids, t, p, &g->rep[b]);
        next = argmax_logprob(row, V, lse);
        lp = next >= 0 ? row[next] - lse : 0.0f;
    }
    if (next < 0) return -1;
    h->token_logprobs[t] = lp;
    h->logprob += lp;
    int64_t T = g->s.T;
    s2s_map_src cross = {g->st->cross_probs, c->decoder_layers, n, c->heads, 1, S};
    s2s_map_src self = {g->st->self_probs, c->decoder_layers, n, c->heads, 1, t + 1};
    if (h->cross_attn) s2s_copy_maps(h->cross_attn, T, h->n_src, t, cross, k, 0, 1);
    if (h->self_attn) s2s_copy_maps(h->self_attn, T, T, t, self, k, 0, 1);
    h->n_out = (int)t + 1;
    if (next == S2S_EOS || t + 1 >= g->limit[b]) g->done[b] = true;
    if (next != S2S_EOS) h->ids[h->n++] = next;
    g->prev[b] = next;
    g->rep[b].last_copy = next == S2S_UNK ? g->rep[b].copy_now : -1;
    return next;
}

s2s_status s2s_greedy_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                            int B, const int *const *src, const int *src_len,
                            s2s_hypothesis *out) {
    greedy g = {.st = st, .p = p, .order = order, .src_len = src_len, .out = out, .B = B,
                .V = s2s_vocab_size(st->m->tgt_vocab)};
    S2S_TRY(s2s_search_begin(st, p, order, B, /*K=*/1, src, src_len, &g.s));
    int64_t S = g.s.S, T = g.s.T;
    s2s_status status = greedy_alloc(&g, B);
    for (int b = 0; b < B && status == S2S_OK; b++) status = start_sentence(&g, b, src);
    int n = B, remaining = B;
    for (int64_t t = 0; t < T && remaining > 0 && status == S2S_OK; t++) {
        n = s2s_state_drop_done(st, g.done, g.live, g.keep, n, remaining, /*K=*/1, S, t, T);
        for (int k = 0; k < n; k++) st->ids[k] = g.prev[g.live[k]];
        s2s_state_count_rows(st, n);
        s2s_dec_pos pos = {.t0 = t, .tq = 1, .t_alloc = T, .beams = 1};
        status = s2s_decode_rows(st, n, S, pos, g.s.step_maps);
        for (int k = 0; k < n && status == S2S_OK; k++) {
            int b = g.live[k];
            if (g.done[b]) continue;
            if (step_row(&g, k, n, t) < 0) status = s2s_not_finite(order[b].index + 1, t);
            else if (g.done[b]) remaining--;
        }
    }
    for (int b = 0; b < B && status == S2S_OK; b++) {
        s2s_hypothesis *h = &out[order[b].index * p->decode.n_best];
        h->score = h->logprob / powf((float)h->n_out, p->decode.length_penalty);
        s2s_compact_maps(h, (int)T);
    }
    greedy_free(&g);
    return status;
}
