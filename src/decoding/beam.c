// Beam search. Each sentence keeps K sequences; all B*K run as one batch
// per step. The encoder output and cross-attention K/V are computed once
// per sentence and shared by its beams (cross-attention runs per sentence
// with K query rows); only the self-attention caches follow the beams.
//
// Per step, the 2K best continuations of a sentence's beams are ranked by
// total log-prob. A </s> among the first K ends a hypothesis; the best K
// others become the next beams. A sentence is done when it has K finished
// hypotheses or reaches its length limit (its beams then end without
// </s>). Hypotheses are ranked by logprob / n_out^length_penalty, as in
// fairseq and CTranslate2. NaN log-probs are never continued; a sentence
// left with no finite continuation fails (s2s/decode.h).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "decoding/search.h"
#include "ops/ops.h"

typedef struct beam_cand {
    float score;  // total log-prob with this token
    int seq, token;
} beam_cand;

// Sequence buffers of all B*K beams: (seqs, T) tokens and log-probs,
// (seqs, L*H*T*S) attention maps.
typedef struct beams {
    int *tok;
    float *lps, *score, *maps;
} beams;

typedef struct search {
    s2s_state *st;
    const s2s_decode_params *p;
    const s2s_order *order;  // (B) the batch's sentences
    int B, K;
    int64_t S, T, V, map_size;  // map_size: floats of one sequence's maps
    beams cur, next;
    s2s_hypothesis *fin;  // (B, 3K) finished hypotheses
    int *n_fin;
    int *parent;          // (seqs)
    beam_cand *cands;     // (2K)
} search;

static s2s_status beams_alloc(beams *b, int64_t seqs, int64_t T, int64_t map_size) {
    b->tok = s2s_calloc((size_t)(seqs * T), sizeof(int));
    b->lps = s2s_calloc((size_t)(seqs * T), sizeof(float));
    b->score = s2s_calloc((size_t)seqs, sizeof(float));
    b->maps = map_size ? s2s_calloc((size_t)(seqs * map_size), sizeof(float)) : NULL;
    return b->tok && b->lps && b->score && (b->maps || !map_size) ? S2S_OK : S2S_ERR_NOMEM;
}

static void beams_free(beams *b) { free(b->tok), free(b->lps), free(b->score), free(b->maps); }

// Inserts c into the sorted list of the best `cap` candidates.
static void keep_best(beam_cand *list, int *n, int cap, beam_cand c) {
    if (*n == cap && c.score <= list[cap - 1].score) return;
    int i = *n < cap ? (*n)++ : cap - 1;
    while (i > 0 && list[i - 1].score < c.score) {
        list[i] = list[i - 1];
        i--;
    }
    list[i] = c;
}

// A finished hypothesis of sentence b from sequence `seq` of `from`, whose
// first n tokens are kept; with eos_lp finite, </s> follows them. Maps of
// rows 0..n-1 come from the sequence; the </s> row, if any, from the state
// (row r of the sentence's K query rows).
static s2s_status finish(search *s, int b, const beams *from, int seq, int n, float eos_lp,
                         int r) {
    const s2s_model *m = s->st->m;
    bool eos = eos_lp > -INFINITY;
    int n_out = n + eos, n_src = s->st->src_len[b];
    s2s_hypothesis *h = &s->fin[b * 3 * s->K + s->n_fin[b]++];
    S2S_TRY(s2s_hyp_alloc(h, m, n_out > 0 ? n_out : 1, n_src, s2s_maps_wanted(s->p)));
    memcpy(h->ids, from->tok + (int64_t)seq * s->T, (size_t)n * sizeof(int));
    memcpy(h->token_logprobs, from->lps + (int64_t)seq * s->T, (size_t)n * sizeof(float));
    if (eos) h->token_logprobs[n] = eos_lp;
    h->n = n;
    h->n_out = n_out;
    for (int t = 0; t < n_out; t++) h->logprob += h->token_logprobs[t];
    h->score = h->logprob / powf((float)n_out, s->p->length_penalty);
    if (h->cross_attn) {
        int64_t L = h->layers, H = h->heads, T = s->T, S = s->S;
        const float *src = from->maps + (int64_t)seq * s->map_size;  // (L, H, T, S)
        for (int64_t lh = 0; lh < L * H; lh++)
            for (int t = 0; t < n; t++)
                memcpy(h->cross_attn + (lh * n_out + t) * n_src, src + (lh * T + t) * S,
                       (size_t)n_src * sizeof(float));
        s2s_map_src cross = {s->st->cross_probs, L, s->B, H, s->K, S};
        if (eos) s2s_copy_maps(h->cross_attn, n_out, n_src, n, cross, b, r, 1);
    }
    return S2S_OK;
}

// Moves beam `parent` of cur into slot i of next, extended by token at t.
static void extend(search *s, int i, int parent, int token, float lp, float score, int64_t t) {
    int64_t T = s->T;
    memcpy(s->next.tok + i * T, s->cur.tok + parent * T, (size_t)t * sizeof(int));
    memcpy(s->next.lps + i * T, s->cur.lps + parent * T, (size_t)t * sizeof(float));
    s->next.tok[i * T + t] = token;
    s->next.lps[i * T + t] = lp;
    s->next.score[i] = score;
    s->parent[i] = parent;
    if (s->next.maps) {
        int b = i / s->K;
        float *dst = s->next.maps + i * s->map_size;
        memcpy(dst, s->cur.maps + parent * s->map_size, (size_t)s->map_size * sizeof(float));
        const s2s_model_config *c = &s->st->m->cfg.model;
        // row t of every (layer, head) plane from the parent's query row
        for (int64_t lh = 0; lh < (int64_t)c->decoder_layers * c->heads; lh++) {
            int64_t l = lh / c->heads, h = lh % c->heads;
            const float *from = s->st->cross_probs +
                                (((l * s->B + b) * c->heads + h) * s->K + parent % s->K) * s->S;
            memcpy(dst + (lh * T + t) * s->S, from, (size_t)s->S * sizeof(float));
        }
    }
}

// One step for sentence b: rank continuations, finish hypotheses, fill the
// next beams. Returns whether the sentence is done.
static s2s_status step_sentence(search *s, int b, int64_t t, int limit, bool *done) {
    int K = s->K, n = 0;
    int64_t V = s->V;
    for (int k = 0; k < K; k++) {
        int seq = b * K + k;
        float base = s->cur.score[seq];
        if (base == -INFINITY) continue;
        float *row = s->st->logits + seq * V;
        if (s2s_guard_on(s->p)) s2s_guard_row(row, s->cur.tok + seq * s->T, t, s->p);
        s2s_log_softmax_row(row, V);
        s2s_mask_row(row, V, t, s->p->min_len);
        s2s_finite_row(row, V);
        for (int64_t v = 0; v < V; v++)
            if (row[v] > -INFINITY) keep_best(s->cands, &n, 2 * K, (beam_cand){base + row[v], seq, (int)v});
    }
    // A live beam always has a finite continuation unless the model is not finite.
    if (n == 0) return s2s_not_finite(s->order[b].index + 1, t);
    int kept = 0;
    for (int r = 0; r < n && kept < K; r++) {
        beam_cand c = s->cands[r];
        float lp = s->st->logits[c.seq * V + c.token];
        if (c.token == S2S_EOS) {
            if (r < K) S2S_TRY(finish(s, b, &s->cur, c.seq, (int)t, lp, c.seq % K));
            continue;
        }
        extend(s, b * K + kept++, c.seq, c.token, lp, c.score, t);
    }
    for (int k = kept; k < K; k++) {  // fewer live continuations than beams
        s->next.score[b * K + k] = -INFINITY;
        s->parent[b * K + k] = b * K + k;
    }
    *done = s->n_fin[b] >= K || kept == 0;
    if (!*done && t + 1 >= limit) {
        for (int k = 0; k < kept; k++) S2S_TRY(finish(s, b, &s->next, b * K + k, (int)t + 1, -INFINITY, 0));
        *done = true;
    }
    return S2S_OK;
}

static int by_score_desc(const void *a, const void *b) {
    const s2s_hypothesis *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return 0;
}

s2s_status s2s_beam_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                          int B, const int *const *src, const int *src_len, s2s_hypothesis *out) {
    const s2s_model *m = st->m;
    int K = p->beam_size;
    search s = {.st = st, .p = p, .order = order, .B = B, .K = K, .S = order[0].len + 1,
                .V = s2s_vocab_size(m->tgt_vocab)};
    s.T = 0;
    for (int b = 0; b < B; b++) {
        int limit = s2s_length_limit(p, m, order[b].len);
        if (limit > s.T) s.T = limit;
    }
    int64_t seqs = (int64_t)B * K;
    const s2s_model_config *c = &m->cfg.model;
    s.map_size = p->want_attention ? (int64_t)c->decoder_layers * c->heads * s.T * s.S : 0;
    if (p->want_self_attention)
        return s2s_fail(S2S_ERR_INVALID, "beam search returns cross-attention only; "
                                         "use greedy decoding or scoring for self-attention");
    S2S_TRY(s2s_state_reserve(st, B, K, s.S, s.T, p->want_attention));
    S2S_TRY(s2s_encode_batch(st, order, B, src, src_len, s.S, false));

    bool *done = s2s_calloc((size_t)B, sizeof(bool));
    s.fin = s2s_calloc((size_t)(B * 3 * K), sizeof(s2s_hypothesis));
    s.n_fin = s2s_calloc((size_t)B, sizeof(int));
    s.parent = s2s_calloc((size_t)seqs, sizeof(int));
    s.cands = s2s_calloc((size_t)(2 * K), sizeof(beam_cand));
    s2s_status status = done && s.fin && s.n_fin && s.parent && s.cands ? S2S_OK : S2S_ERR_NOMEM;
    if (status == S2S_OK) status = beams_alloc(&s.cur, seqs, s.T, s.map_size);
    if (status == S2S_OK) status = beams_alloc(&s.next, seqs, s.T, s.map_size);
    for (int64_t i = 0; i < seqs && status == S2S_OK; i++)  // one live beam to start
        s.cur.score[i] = i % K == 0 ? 0.0f : -INFINITY;

    int remaining = B;
    for (int64_t t = 0; t < s.T && remaining > 0 && status == S2S_OK; t++) {
        for (int64_t i = 0; i < seqs; i++) st->ids[i] = t == 0 ? S2S_BOS : s.cur.tok[i * s.T + t - 1];
        s2s_dec_pos pos = {.t0 = t, .tq = 1, .t_alloc = s.T, .beams = K};
        status = s2s_decode_rows(st, B, s.S, pos, s2s_maps_wanted(p));
        for (int64_t i = 0; i < seqs; i++) s.parent[i] = (int)i;
        for (int b = 0; b < B && status == S2S_OK; b++) {
            if (done[b]) continue;
            status = step_sentence(&s, b, t, s2s_length_limit(p, m, order[b].len), &done[b]);
            if (done[b]) remaining--;
        }
        for (int b = 0; b < B; b++)  // done sentences: their beams stop counting
            if (done[b])
                for (int k = 0; k < K; k++) s.next.score[b * K + k] = -INFINITY;
        s2s_state_reorder(st, s.parent, seqs, t + 1, s.T);
        beams tmp = s.cur;
        s.cur = s.next;
        s.next = tmp;
    }

    for (int b = 0; b < B; b++) {
        s2s_hypothesis *fin = s.fin + b * 3 * K;
        if (status == S2S_OK) {
            qsort(fin, (size_t)s.n_fin[b], sizeof *fin, by_score_desc);
            for (int j = 0; j < p->n_best && j < s.n_fin[b]; j++) {
                out[order[b].index * p->n_best + j] = fin[j];
                memset(&fin[j], 0, sizeof fin[j]);
            }
        }
        for (int j = 0; j < s.n_fin[b]; j++) s2s_hypothesis_free(&fin[j]);
    }
    beams_free(&s.cur);
    beams_free(&s.next);
    free(done), free(s.fin), free(s.n_fin), free(s.parent), free(s.cands);
    return status;
}
