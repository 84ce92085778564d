// Beam search. Each sentence keeps K sequences; all live ones run as one
// batch per step. The encoder output and cross-attention K/V are computed
// once per sentence and shared by its beams (cross-attention runs per
// sentence with K query rows); only the self-attention caches follow the
// beams. A beam's first continuation stays in its slot, so that only a
// second or later one is copied, into the slot of a beam with none
// (s2s_state_reorder). Step 0 runs beam 0 alone (all beams start alike)
// and spreads its cache to the K beams; finished sentences leave the
// state once they are a quarter of it (s2s_state_keep), as in greedy.c.
//
// Per step, the 2K best continuations of a sentence's beams are ranked by
// total log-prob (one pass over each beam's row, chunks that cannot enter
// the list skipped). A </s> among the first K ends a hypothesis; the best K
// others become the next beams. A sentence is done when it has K finished
// hypotheses or reaches its length limit (its beams then end without
// </s>). Hypotheses are ranked by logprob / n_out^length_penalty, as in
// fairseq and CTranslate2. NaN log-probs are never continued; a sentence
// left with no finite continuation fails (s2s/decode.h). Attention maps
// are kept per step with each beam's parent, and a hypothesis's rebuilt
// when it finishes.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "decoding/search.h"
#include "ops/ops.h"

// Sequence buffers of all B*K beams, indexed by sentence (b*K + k): (seqs,
// T) tokens and log-probs, (seqs) total log-probs and, when the last token
// is a <unk>, the source token it copies (else -1: no_immediate_repeat).
typedef struct beams {
    int *tok;
    float *lps, *score;
    int *copy;
} beams;

// Rows of the state hold the live sentences only: row k holds sentence
// live[k] (row[b] the other way), each as kr sequences (1 at step 0, when
// only beam 0 is live, then K). Everything per sentence stays indexed by b.
typedef struct search {
    s2s_state *st;
    const s2s_decode_params *p;
    const s2s_order *order;  // (B) the batch's sentences
    int B, K;
    int64_t S, T, V, lh;  // lh: layers * heads
    beams cur, next;
    s2s_hypothesis *fin;  // (B, 3K) finished hypotheses
    int *n_fin;
    int *anc;             // (T, seqs) at step t, the seq of cur each seq of next extends
    int *row;             // (B) state row of each live sentence
    int kr;               // sequences per sentence in the state this step
    // With maps: at step t, each seq's cross-attention row, (T, seqs, L*H, S).
    // A hypothesis's maps are rebuilt by walking anc back from its last step.
    float *hist;
    s2s_beam_cand *cands;  // (3K): 2K ranked, then K continuing
    bool *taken;           // (K) slots of a sentence's next beams taken
    int *slot;             // (K) the slot of each continuing candidate
    float *lse;            // (K) log-sum-exp of each beam's row of the sentence at hand
    // no_immediate_repeat: whether each source repeats a token (B); the
    // source token a <unk> would copy at this step, for each beam of the
    // sentence at hand (K); the plane that says so; sentences in the state
    bool *src_repeats;
    int *copy_now;
    int copy_layer, copy_head, n_rows;
    unsigned step_maps;  // the maps each step writes (s2s_search_start)
    bool *done;         // (B) sentences finished
    int *live, *keep;   // (B) the sentence of each state row; s2s_state_drop_done's scratch
    int *parent;        // (seqs) the state row each next row extends, for s2s_state_reorder
} search;

static s2s_status beams_alloc(beams *b, int64_t seqs, int64_t T) {
    b->tok = s2s_calloc((size_t)(seqs * T), sizeof(int));
    b->lps = s2s_calloc((size_t)(seqs * T), sizeof(float));
    b->score = s2s_calloc((size_t)seqs, sizeof(float));
    b->copy = s2s_calloc((size_t)seqs, sizeof(int));
    return b->tok && b->lps && b->score && b->copy ? S2S_OK : S2S_ERR_NOMEM;
}

static void beams_free(beams *b) { free(b->tok), free(b->lps), free(b->score), free(b->copy); }

// Inserts c into the sorted list of the best `cap` candidates (after those
// of equal score: earlier seqs and tokens first).
static void keep_best(s2s_beam_cand *list, int *n, int cap, s2s_beam_cand c) {
    if (*n == cap && c.score <= list[cap - 1].score) return;
    int i = *n < cap ? (*n)++ : cap - 1;
    while (i > 0 && list[i - 1].score < c.score) {
        list[i] = list[i - 1];
        i--;
    }
    list[i] = c;
}

// Once the list is full, a chunk none of whose scores beats its last entry
// is skipped after a comparison that vectorises.
void s2s_keep_best_row(s2s_beam_cand *list, int *n, int cap, const float *row, int64_t V,
                       float lse, float base, int seq) {
    enum { CHUNK = 32 };
    for (int64_t v0 = 0; v0 < V; v0 += CHUNK) {
        int64_t end = v0 + CHUNK < V ? v0 + CHUNK : V;
        if (*n == cap) {
            float floor = list[cap - 1].score;
            int any = 0;
            for (int64_t v = v0; v < end; v++) any |= base + (row[v] - lse) > floor;
            if (!any) continue;
        }
        for (int64_t v = v0; v < end; v++) {
            float lp = row[v] - lse;
            if (lp > -INFINITY) keep_best(list, n, cap, (s2s_beam_cand){base + lp, seq, (int)v});
        }
    }
}

// The logits of seq b*K + k.
static float *logits_of(const search *s, int b, int k) {
    return s->st->logits + ((int64_t)s->row[b] * s->kr + k) * s->V;
}

// The log-prob of token after seq b*K + k, once step_sentence took its
// row's log-sum-exp.
static float logprob_of(const search *s, int b, int k, int token) {
    return logits_of(s, b, k)[token] - s->lse[k];
}

// Row u of h's (L, H, n_out, n_src) maps: seq's map at step u.
static void copy_step_maps(const search *s, s2s_hypothesis *h, int u, int seq) {
    const float *src = s->hist + ((int64_t)u * s->B * s->K + seq) * s->lh * s->S;
    for (int64_t lh = 0; lh < s->lh; lh++)
        memcpy(h->cross_attn + (lh * h->n_out + u) * h->n_src, src + lh * s->S,
               (size_t)h->n_src * sizeof(float));
}

// A finished hypothesis of sentence b from sequence `seq` of `from`, whose
// first n tokens are kept; with eos_lp finite, </s> follows them (from is
// then cur, and its row n is this step's map of seq).
static s2s_status finish(search *s, int b, const beams *from, int seq, int n, float eos_lp) {
    const s2s_model *m = s->st->m;
    bool eos = eos_lp > -INFINITY;
    int n_out = n + eos, n_src = s->order[b].len + 1;
    s2s_hypothesis *h = &s->fin[b * 3 * s->K + s->n_fin[b]++];
    S2S_TRY(s2s_hyp_alloc(h, m, n_out > 0 ? n_out : 1, n_src, s2s_maps_wanted(s->p)));
    memcpy(h->ids, from->tok + (int64_t)seq * s->T, (size_t)n * sizeof(int));
    memcpy(h->token_logprobs, from->lps + (int64_t)seq * s->T, (size_t)n * sizeof(float));
    if (eos) h->token_logprobs[n] = eos_lp;
    h->n = n;
    h->n_out = n_out;
    for (int t = 0; t < n_out; t++) h->logprob += h->token_logprobs[t];
    h->score = h->logprob / powf((float)n_out, s->p->decode.length_penalty);
    if (h->cross_attn) {
        if (eos) copy_step_maps(s, h, n, seq);  // this step's row of seq
        // rows n-1..0: walk back from the sequence seq was after step n-1
        for (int u = n - 1; u >= 0; u--) {
            seq = s->anc[(int64_t)u * s->B * s->K + seq];
            copy_step_maps(s, h, u, seq);
        }
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
    s->next.copy[i] = token == S2S_UNK ? s->copy_now[parent % s->K] : -1;
    s->anc[t * s->B * s->K + i] = parent;
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
        S2S_ASSERT(k < s->kr);  // step 0 runs beam 0 alone: the others are not live
        float *row = logits_of(s, b, k);
        s->copy_now[k] = -1;
        if (s->p->decode.no_immediate_repeat) {
            // query row k of sentence row[b] in the step's (L, n_rows, H, kr, S) maps
            const s2s_model_config *c = &s->st->m->cfg.model;
            int64_t kS = (int64_t)s->kr * s->S;
            s->copy_now[k] = s2s_copied_source(
                s->st->cross_probs + ((int64_t)s->row[b] * c->heads) * kS + k * s->S,
                s->n_rows * c->heads * kS, kS, c->decoder_layers, c->heads, s->copy_layer,
                s->copy_head, s->order[b].len);
        }
        if (s2s_guard_on(s->p)) s2s_guard_row(row, s->cur.tok + seq * s->T, t, s->p);
        // log-probs row - lse, as s2s_log_softmax_row makes them, read
        // where ranked rather than written (the tokens masked after
        // log-softmax in greedy.c are masked in the logits here: -inf
        // either way)
        s->lse[k] = s2s_log_sum_exp_row(row, V);
        s2s_mask_row(row, V, t, s->p->decode.min_len);
        s2s_repeat_ctx rep = {s->src_repeats[b], s->cur.copy[seq], s->copy_now[k]};
        s2s_mask_repeat(row, s->cur.tok + seq * s->T, t, s->p, &rep);
        s2s_keep_best_row(s->cands, &n, 2 * K, row, V, s->lse[k], base, seq);
    }
    // A live beam always has a finite continuation unless the model is not finite.
    if (n == 0) return s2s_not_finite(s->order[b].index + 1, t);
    // The best K others continue, each in its parent's slot when it is the
    // parent's first (so that its cache stays where it is) and else in a
    // slot no beam continues from, where the parent's cache is copied.
    s2s_beam_cand *go = s->cands + 2 * K;  // (K) the continuing candidates
    int kept = 0;
    for (int r = 0; r < n && kept < K; r++) {
        s2s_beam_cand c = s->cands[r];
        if (c.token != S2S_EOS) go[kept++] = c;
        else if (r < K)
            S2S_TRY(finish(s, b, &s->cur, c.seq, (int)t, logprob_of(s, b, c.seq - b * K, c.token)));
    }
    bool *taken = s->taken;
    int *slot = s->slot;
    for (int k = 0; k < K; k++) taken[k] = false;
    for (int j = 0; j < kept; j++) {
        int ps = go[j].seq - b * K;
        slot[j] = taken[ps] ? -1 : ps;
        taken[ps] = true;
    }
    for (int j = 0, f = 0; j < kept; j++) {
        if (slot[j] >= 0) continue;
        while (taken[f]) f++;
        slot[j] = f;
        taken[f] = true;
    }
    for (int j = 0; j < kept; j++) {
        s2s_beam_cand c = go[j];
        extend(s, b * K + slot[j], c.seq, c.token, logprob_of(s, b, c.seq - b * K, c.token),
               c.score, t);
    }
    for (int k = 0; k < K; k++)  // fewer live continuations than beams
        if (!taken[k]) s->next.score[b * K + k] = -INFINITY;
    *done = s->n_fin[b] >= K || kept == 0;
    if (!*done && t + 1 >= limit) {
        for (int j = 0; j < kept; j++)
            S2S_TRY(finish(s, b, &s->next, b * K + slot[j], (int)t + 1, -INFINITY));
        *done = true;
    }
    return S2S_OK;
}

static int by_score_desc(const void *a, const void *b) {
    const s2s_hypothesis *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return 0;
}

// This step's cross-attention rows of the live sentences' sequences, into
// s->hist at step t.
static void keep_maps(search *s, const int *live, int n, int64_t t) {
    const s2s_model_config *c = &s->st->m->cfg.model;
    int64_t H = c->heads, S = s->S, seqs = (int64_t)s->B * s->K;
    for (int k = 0; k < n; k++)
        for (int kk = 0; kk < s->kr; kk++) {
            float *dst = s->hist + (t * seqs + (int64_t)live[k] * s->K + kk) * s->lh * S;
            for (int64_t lh = 0; lh < s->lh; lh++) {
                int64_t l = lh / H, h = lh % H;
                const float *from = s->st->cross_probs + (((l * n + k) * H + h) * s->kr + kk) * S;
                memcpy(dst + lh * S, from, (size_t)S * sizeof(float));
            }
        }
}

// The buffers of a batch of s->B sentences, s->K beams each, and the first
// beams (one live beam per sentence: the others start at -inf).
static s2s_status search_alloc(search *s, const int *const *src) {
    int B = s->B, K = s->K;
    int64_t seqs = (int64_t)B * K;
    s->done = s2s_calloc((size_t)B, sizeof(bool));
    s->fin = s2s_calloc((size_t)(B * 3 * K), sizeof(s2s_hypothesis));
    s->n_fin = s2s_calloc((size_t)B, sizeof(int));
    s->anc = s2s_calloc((size_t)(s->T * seqs), sizeof(int));
    s->row = s2s_calloc((size_t)B, sizeof(int));
    s->cands = s2s_calloc((size_t)(3 * K), sizeof(s2s_beam_cand));
    s->taken = s2s_calloc((size_t)K, sizeof(bool));
    s->slot = s2s_calloc((size_t)K, sizeof(int));
    s->lse = s2s_calloc((size_t)K, sizeof(float));
    s->src_repeats = s2s_calloc((size_t)B, sizeof(bool));
    s->copy_now = s2s_calloc((size_t)K, sizeof(int));
    s->live = s2s_calloc((size_t)B, sizeof(int));
    s->keep = s2s_calloc((size_t)B, sizeof(int));
    s->parent = s2s_calloc((size_t)seqs, sizeof(int));
    bool maps = s->p->want_attention;
    if (maps) s->hist = s2s_calloc((size_t)(s->T * seqs * s->lh * s->S), sizeof(float));
    if (!(s->done && s->fin && s->n_fin && s->anc && s->row && s->cands && s->taken && s->slot &&
          s->lse && s->src_repeats && s->copy_now && s->live && s->keep && s->parent &&
          (s->hist || !maps)))
        return S2S_ERR_NOMEM;
    S2S_TRY(beams_alloc(&s->cur, seqs, s->T));
    S2S_TRY(beams_alloc(&s->next, seqs, s->T));
    for (int64_t i = 0; i < seqs; i++) {  // one live beam to start
        s->cur.score[i] = i % K == 0 ? 0.0f : -INFINITY;
        s->cur.copy[i] = -1;
    }
    for (int b = 0; b < B; b++) {
        s->src_repeats[b] = s2s_source_repeats(src[s->order[b].index], s->order[b].len);
        s->live[b] = b;
    }
    return S2S_OK;
}

static void search_free(search *s) {
    beams_free(&s->cur);
    beams_free(&s->next);
    free(s->done), free(s->fin), free(s->n_fin), free(s->anc), free(s->row), free(s->cands);
    free(s->taken), free(s->slot), free(s->lse), free(s->src_repeats), free(s->copy_now);
    free(s->live), free(s->keep), free(s->parent), free(s->hist);
}

// Step t of the n live sentences: runs their kr sequences each, extends
// their beams, and moves the state's self-attention caches after them.
static s2s_status search_step(search *s, int n, int64_t t, int *remaining) {
    s2s_state *st = s->st;
    int K = s->K;
    int64_t seqs = (int64_t)s->B * K;
    const int *live = s->live;
    s->kr = t == 0 && !s2s_state_no_shrink(st) ? 1 : K;
    for (int k = 0; k < n; k++) {
        s->row[live[k]] = k;
        for (int kk = 0; kk < s->kr; kk++)
            st->ids[k * s->kr + kk] =
                t == 0 ? S2S_BOS : s->cur.tok[((int64_t)live[k] * K + kk) * s->T + t - 1];
    }
    s2s_state_count_rows(st, (int64_t)n * s->kr);
    s2s_dec_pos pos = {.t0 = t, .tq = 1, .t_alloc = s->T, .beams = s->kr};
    s->n_rows = n;
    S2S_TRY(s2s_decode_rows(st, n, s->S, pos, s->step_maps));
    if (s->hist) keep_maps(s, live, n, t);
    int *anc = s->anc + t * seqs;
    for (int64_t i = 0; i < seqs; i++) anc[i] = (int)i;
    for (int k = 0; k < n; k++) {
        int b = live[k];
        if (s->done[b]) continue;
        int limit = s2s_length_limit(s->p, st->m, s->order[b].len);
        S2S_TRY(step_sentence(s, b, t, limit, &s->done[b]));
        if (s->done[b]) (*remaining)--;
    }
    for (int b = 0; b < s->B; b++)  // done sentences: their beams stop counting
        if (s->done[b])
            for (int k = 0; k < K; k++) s->next.score[b * K + k] = -INFINITY;
    if (s->kr == 1) {  // every beam extends beam 0
        s2s_state_spread(st, n, K, t + 1, s->T);
    } else {
        for (int k = 0; k < n; k++)
            for (int kk = 0; kk < K; kk++)
                s->parent[k * K + kk] = k * K + anc[(int64_t)live[k] * K + kk] - live[k] * K;
        s2s_state_reorder(st, s->parent, (int64_t)n * K, t + 1, s->T);
    }
    beams tmp = s->cur;
    s->cur = s->next;
    s->next = tmp;
    return S2S_OK;
}

s2s_status s2s_beam_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                          int B, const int *const *src, const int *src_len, s2s_hypothesis *out) {
    if (p->want_self_attention)
        return s2s_fail(S2S_ERR_INVALID, "beam search returns cross-attention only; "
                                         "use greedy decoding or scoring for self-attention");
    const s2s_model_config *c = &st->m->cfg.model;
    int K = p->decode.beam_size;
    s2s_search_start start;
    S2S_TRY(s2s_search_begin(st, p, order, B, K, src, src_len, &start));
    search s = {.st = st, .p = p, .order = order, .B = B, .K = K, .S = start.S, .T = start.T,
                .V = s2s_vocab_size(st->m->tgt_vocab), .lh = (int64_t)c->decoder_layers * c->heads,
                .step_maps = start.step_maps, .copy_layer = start.copy_layer,
                .copy_head = start.copy_head};
    s2s_status status = search_alloc(&s, src);
    int n = B, remaining = B;
    for (int64_t t = 0; t < s.T && remaining > 0 && status == S2S_OK; t++) {
        n = s2s_state_drop_done(st, s.done, s.live, s.keep, n, remaining, K, s.S, t, s.T);
        status = search_step(&s, n, t, &remaining);
    }
    for (int b = 0; b < B; b++) {
        s2s_hypothesis *fin = s.fin ? s.fin + b * 3 * K : NULL;
        int n_fin = s.n_fin ? s.n_fin[b] : 0;
        if (status == S2S_OK) {
            qsort(fin, (size_t)n_fin, sizeof *fin, by_score_desc);
            for (int j = 0; j < p->decode.n_best && j < n_fin; j++) {
                out[order[b].index * p->decode.n_best + j] = fin[j];
                memset(&fin[j], 0, sizeof fin[j]);
            }
        }
        for (int j = 0; j < n_fin; j++) s2s_hypothesis_free(&fin[j]);
    }
    search_free(&s);
    return status;
}
