// Tests for src/decoding: properties every correct Transformer decoder has
// (causal masking, permutation-equivariant encoder without positions,
// padding-independence of batches (finished sentences leaving one
// included), KV-cached steps equal to the full causal
// pass, attention rows that are distributions), the cross-attention of a
// tiny model recomputed with plain loops, input validation, what greedy
// search may emit, and beam search's pieces against plain references (its
// top-k, cache reorder, attention maps rebuilt from parents, and dropping
// finished sentences). Models are small and random (s2s_model_init).
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoding/search.h"
#include "model/model_internal.h"
#include "reference.h"
#include "s2s/s2s.h"
#include "support.h"

// ---- models ----

typedef struct arch {
    int d, heads, ffn, layers;
    s2s_norm norm;
    s2s_activation act;
    bool tie;
} arch;

// Pre and post norm, both activations, tied and untied, 2..4 heads.
static const arch ARCHS[] = {
    {16, 2, 32, 2, S2S_NORM_PRE, S2S_ACT_RELU, true},
    {16, 4, 24, 2, S2S_NORM_POST, S2S_ACT_GELU, false},
    {32, 4, 48, 2, S2S_NORM_PRE, S2S_ACT_GELU, false},
    {24, 3, 40, 2, S2S_NORM_POST, S2S_ACT_RELU, true},
};
#define N_ARCHS ((int)(sizeof ARCHS / sizeof ARCHS[0]))

#define MAX_LEN 32

// The config of a random model of arch a, sequences up to max_len.
static s2s_config arch_config(const arch *a, int max_len) {
    s2s_config c;
    s2s_config_default(&c);
    c.model.d_model = a->d;
    c.model.heads = a->heads;
    c.model.encoder_layers = a->layers;
    c.model.decoder_layers = a->layers;
    c.model.ffn_dim = a->ffn;
    c.model.activation = a->act;
    c.model.norm = a->norm;
    c.model.tie_output = a->tie;
    c.model.max_len = max_len;
    snprintf(c.vocab.src, sizeof c.vocab.src, "%s/ref/src.txt", S2S_TEST_DATA);
    snprintf(c.vocab.tgt, sizeof c.vocab.tgt, "%s/ref/tgt.txt", S2S_TEST_DATA);
    return c;
}

static s2s_model *make_model(const arch *a, uint64_t seed) {
    s2s_config c = arch_config(a, MAX_LEN);
    c.decode.max_len = 12;
    s2s_model *m = NULL;
    cr_assert_eq(s2s_model_init(&m, &c, seed), S2S_OK, "%s", s2s_last_error());
    return m;
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {  // xorshift64
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static float rnd_unit(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0); }

// Init leaves biases 0 and LayerNorm weights 1, which would hide a missing
// bias or norm weight: give every 1-D tensor random values.
static void jitter(float *v, size_t n, void *arg) {
    for (size_t j = 0; j < n; j++) v[j] += 0.4f * (rnd_unit() - 0.5f);
}

static void scramble_vectors(s2s_model *m) {
    for (int i = 0; i < s2s_model_tensor_count(m); i++)
        if (s2s_model_tensor(m, i).ndim == 1) tensor_edit(m, i, jitter, NULL);
}

// Random real (non-special) token ids.
static void fill_ids(int *ids, int n, int vocab) {
    for (int i = 0; i < n; i++) ids[i] = S2S_NUM_SPECIALS + (int)(rnd() % (uint64_t)(vocab - S2S_NUM_SPECIALS));
}

static float max_abs_diff(const float *a, const float *b, int64_t n) {
    float mx = 0;
    for (int64_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= mx)) mx = d;  // NaN counts as a difference
    }
    return mx;
}

static int vs_of(const s2s_model *m) { return s2s_vocab_size(s2s_model_src_vocab(m)); }
static int vt_of(const s2s_model *m) { return s2s_vocab_size(s2s_model_tgt_vocab(m)); }

static s2s_decode_params params(const s2s_model *m, int max_batch, bool attn) {
    s2s_decode_params p = s2s_decode_default_params(m);
    p.max_batch = max_batch;
    p.want_attention = attn;
    // plain search: the tests compare it with forced decoding (test_search
    // checks the repetition guard and the no-stutter rule)
    p.decode.repetition_penalty = 1.0f;
    p.decode.no_repeat_ngram_size = 0;
    p.decode.no_immediate_repeat = false;
    return p;
}

static void score1(s2s_state *st, const s2s_decode_params *p, const int *src, int slen,
                   const int *tgt, int tlen, s2s_hypothesis *h) {
    const int *s[1] = {src}, *t[1] = {tgt};
    cr_assert_eq(s2s_score(st, p, s, &slen, t, &tlen, 1, h), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(h->n_out, tlen + 1);
}

// ---- causal masking ----

// After scoring one sentence, row t of the state's logits is the
// distribution over token t; taken as log-probs here (log-softmax is
// idempotent, so it does not matter whether the engine applied it).
static void logprob_rows(float *out, const s2s_state *st, int rows, int V) {
    for (int t = 0; t < rows; t++) {
        const float *r = st->logits + (int64_t)t * V;
        double mx = r[0], sum = 0;
        for (int v = 1; v < V; v++) mx = r[v] > mx ? r[v] : mx;
        for (int v = 0; v < V; v++) sum += exp((double)r[v] - mx);
        for (int v = 0; v < V; v++) out[(int64_t)t * V + v] = (float)((double)r[v] - mx - log(sum));
    }
}

Test(decoding, prediction_of_token_k_sees_only_tokens_before_k) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 100 + (uint64_t)a);
        scramble_vectors(m);
        s2s_state *st;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        s2s_decode_params p = params(m, 1, false);
        int V = vt_of(m), src[6], A[8], B[8], n = 8;
        fill_ids(src, 6, vs_of(m));
        fill_ids(A, n, V);
        float *la = malloc(sizeof(float) * (size_t)(n + 1) * V);
        float *lb = malloc(sizeof(float) * (size_t)(n + 1) * V);
        int ks[] = {0, 1, 4, n - 1};
        for (int ki = 0; ki < 4; ki++) {
            int k = ks[ki];
            memcpy(B, A, sizeof A);
            B[k] = A[k] + 1 < V ? A[k] + 1 : S2S_NUM_SPECIALS;
            s2s_hypothesis ha, hb;
            score1(st, &p, src, 6, A, n, &ha);
            logprob_rows(la, st, n + 1, V);
            score1(st, &p, src, 6, B, n, &hb);
            logprob_rows(lb, st, n + 1, V);
            for (int t = 0; t <= n; t++) {
                float d = max_abs_diff(la + (int64_t)t * V, lb + (int64_t)t * V, V);
                if (t <= k)
                    cr_assert_leq(d, 1e-6f, "arch %d, change at %d: row %d moved by %g", a, k,
                                  t, d);
                else
                    cr_assert_gt(d, 1e-5f, "arch %d, change at %d: row %d did not see it", a,
                                 k, t);
            }
            for (int t = 0; t < k; t++)
                cr_assert_float_eq(ha.token_logprobs[t], hb.token_logprobs[t], 1e-6);
            // The token log-probs are read from those rows.
            for (int t = 0; t <= n; t++) {
                int gold = t < n ? B[t] : S2S_EOS;
                cr_assert_float_eq(hb.token_logprobs[t], lb[(int64_t)t * V + gold], 1e-5);
            }
            s2s_hypothesis_free(&ha);
            s2s_hypothesis_free(&hb);
        }
        free(la);
        free(lb);
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

// ---- encoder symmetry ----

static void encode_ids(s2s_state *st, const int *ids, int S, float *memory, int d) {
    cr_assert_eq(s2s_state_reserve(st, 1, 1, S, 1, 1, false), S2S_OK);
    memcpy(st->ids, ids, (size_t)S * sizeof(int));
    st->src_len[0] = S;
    cr_assert_eq(s2s_encode(st, 1, S, false), S2S_OK, "%s", s2s_last_error());
    memcpy(memory, st->memory, (size_t)S * d * sizeof(float));
}

Test(decoding, encoder_without_positions_is_permutation_equivariant) {
    enum { S = 9 };
    const int perm[S] = {3, 8, 0, 5, 1, 7, 2, 6, 4};
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 200 + (uint64_t)a);
        scramble_vectors(m);
        int d = ARCHS[a].d;
        s2s_state *st;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        int ids[S], pids[S];
        fill_ids(ids, S - 1, vs_of(m));
        ids[S - 1] = S2S_EOS;
        for (int i = 0; i < S; i++) pids[i] = ids[perm[i]];
        float *m1 = malloc(sizeof(float) * S * d), *m2 = malloc(sizeof(float) * S * d);

        // With positions the order matters (so the check below can fail) ...
        encode_ids(st, ids, S, m1, d);
        encode_ids(st, pids, S, m2, d);
        float worst = 0;
        for (int i = 0; i < S; i++) {
            float e = max_abs_diff(m2 + i * d, m1 + perm[i] * d, d);
            worst = e > worst ? e : worst;
        }
        cr_assert_gt(worst, 1e-2f, "arch %d: positions made no difference", a);

        // ... without them, permuting the input permutes the output rows.
        memset(m->pe, 0, sizeof(float) * MAX_LEN * (size_t)d);
        encode_ids(st, ids, S, m1, d);
        encode_ids(st, pids, S, m2, d);
        for (int i = 0; i < S; i++) {
            float e = max_abs_diff(m2 + i * d, m1 + perm[i] * d, d);
            cr_assert_leq(e, 1e-5f, "arch %d: row %d differs from row %d by %g", a, i, perm[i],
                          e);
        }
        free(m1);
        free(m2);
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

// ---- batches ----

enum { NB = 5 };
static const int SRC_LEN[NB] = {5, 11, 1, 8, 3};
static const int TGT_LEN[NB] = {6, 2, 9, 4, 7};

typedef struct corpus {
    int src[NB][16], tgt[NB][16];
    const int *s[NB], *t[NB];
} corpus;

static void make_corpus(corpus *c, const s2s_model *m) {
    for (int i = 0; i < NB; i++) {
        fill_ids(c->src[i], SRC_LEN[i], vs_of(m));
        fill_ids(c->tgt[i], TGT_LEN[i], vt_of(m));
        c->s[i] = c->src[i];
        c->t[i] = c->tgt[i];
    }
}

// Architecture a's model with scrambled vectors, a state for it and a
// corpus of its vocabularies: what most tests here start from.
static s2s_state *setup(int a, uint64_t seed, s2s_model **m, corpus *c) {
    *m = make_model(&ARCHS[a], seed);
    scramble_vectors(*m);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, *m), S2S_OK);
    make_corpus(c, *m);
    return st;
}

static void assert_same_hyp(const s2s_hypothesis *x, const s2s_hypothesis *y, int i) {
    cr_assert_eq(x->n, y->n, "sentence %d: %d vs %d tokens", i, x->n, y->n);
    cr_assert_eq(x->n_out, y->n_out);
    cr_assert_eq(x->n_src, y->n_src);
    for (int t = 0; t < x->n; t++) cr_assert_eq(x->ids[t], y->ids[t], "sentence %d token %d", i, t);
    float e = max_abs_diff(x->token_logprobs, y->token_logprobs, x->n_out);
    cr_assert_leq(e, 1e-5f, "sentence %d: token log-probs differ by %g", i, e);
    cr_assert_float_eq(x->logprob, y->logprob, 1e-4);
    if (x->cross_attn) {
        cr_assert_not_null(y->cross_attn);
        int64_t n = (int64_t)x->layers * x->heads * x->n_out * x->n_src;
        e = max_abs_diff(x->cross_attn, y->cross_attn, n);
        cr_assert_leq(e, 1e-5f, "sentence %d: attention differs by %g", i, e);
    }
}

Test(decoding, padded_batch_equals_sentences_alone) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m;
        corpus c;
        s2s_state *st = setup(a, 300 + (uint64_t)a, &m, &c);
        s2s_hypothesis batch[NB], alone[NB], pairs[NB];
        int batches[] = {NB, 2};  // one padded batch; batches of 2, 2 and 1
        for (int bi = 0; bi < 2; bi++) {
            s2s_decode_params pb = params(m, batches[bi], true), p1 = params(m, 1, true);

            cr_assert_eq(s2s_score(st, &pb, c.s, SRC_LEN, c.t, TGT_LEN, NB, batch), S2S_OK);
            for (int i = 0; i < NB; i++)
                score1(st, &p1, c.src[i], SRC_LEN[i], c.tgt[i], TGT_LEN[i], &alone[i]);
            cr_assert_eq(s2s_score(st, &p1, c.s, SRC_LEN, c.t, TGT_LEN, NB, pairs), S2S_OK);
            for (int i = 0; i < NB; i++) {
                // input order: each result is the scoring of its own target
                cr_assert_eq(batch[i].n, TGT_LEN[i]);
                cr_assert_eq(batch[i].n_src, SRC_LEN[i] + 1);
                cr_assert_eq(memcmp(batch[i].ids, c.tgt[i], sizeof(int) * TGT_LEN[i]), 0);
                assert_same_hyp(&batch[i], &alone[i], i);
                assert_same_hyp(&pairs[i], &alone[i], i);
                s2s_hypothesis_free(&batch[i]);
                s2s_hypothesis_free(&alone[i]);
                s2s_hypothesis_free(&pairs[i]);
            }

            cr_assert_eq(s2s_translate(st, &pb, c.s, SRC_LEN, NB, batch), S2S_OK);
            for (int i = 0; i < NB; i++) {
                cr_assert_eq(s2s_translate(st, &p1, &c.s[i], &SRC_LEN[i], 1, &alone[i]),
                             S2S_OK);
                cr_assert_eq(batch[i].n_src, SRC_LEN[i] + 1);
                assert_same_hyp(&batch[i], &alone[i], i);
                s2s_hypothesis_free(&batch[i]);
                s2s_hypothesis_free(&alone[i]);
            }
        }
        // Different sources do get different translations, so the order
        // check above means something.
        s2s_decode_params p = params(m, NB, false);
        cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, batch), S2S_OK);
        int distinct = 0;
        for (int i = 1; i < NB; i++)
            distinct += batch[i].n != batch[0].n ||
                        memcmp(batch[i].ids, batch[0].ids, sizeof(int) * batch[0].n) != 0 ||
                        batch[i].logprob != batch[0].logprob;
        cr_assert_gt(distinct, 0, "arch %d: every sentence translated alike", a);
        for (int i = 0; i < NB; i++) s2s_hypothesis_free(&batch[i]);
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

// Greedy search drops finished sentences from the batch (s2s_state_keep).
// 32 sentences whose length limits (max_len_ratio) end them anywhere from
// step 2 to step 25, with both kinds of maps, greedy and sampling with the
// repetition guard, plain and folded cross-attention: each sentence must
// come out as it does alone (batch 1) and as in a batch that keeps its
// finished rows (s2s_state_debug.no_shrink), maps and scores included.
enum { NS = 32 };

static void assert_same_maps(const float *x, const float *y, int64_t n, int i, const char *what) {
    cr_assert(x && y, "sentence %d: %s missing", i, what);
    float e = max_abs_diff(x, y, n);
    cr_assert_leq(e, 1e-5f, "sentence %d: %s differ by %g", i, what, e);
}

// NS random sources of 1 to 24 tokens.
typedef struct sources {
    int src[NS][24], len[NS];
    const int *s[NS];
} sources;

static void random_sources(sources *x, const s2s_model *m) {
    for (int i = 0; i < NS; i++) {
        x->len[i] = 1 + (int)(rnd() % 24);
        fill_ids(x->src[i], x->len[i], vs_of(m));
        x->s[i] = x->src[i];
    }
}

// A random model says </s> always or never: raises its bias until search
// with a beam of K (1: greedy) ends some sentences with </s> and some at
// their limit (max_len_ratio 1), at steps at least 10 apart. Returns
// whether it got there.
static bool ends_spread(s2s_model *m, const sources *x, int K) {
    for (int k = 0; k < 40; k++) {
        tensor_add(m, "generator.bias", S2S_EOS, 0.1f);
        s2s_decode_params p = params(m, NS, false);
        p.decode.max_len = MAX_LEN - 1, p.decode.max_len_ratio = 1.0f;
        p.decode.beam_size = K, p.decode.n_best = 1;
        s2s_state *st;
        s2s_hypothesis h[NS];
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        cr_assert_eq(s2s_translate(st, &p, x->s, x->len, NS, h), S2S_OK, "%s", s2s_last_error());
        int eos = 0, lo = MAX_LEN, hi = 0;
        for (int i = 0; i < NS; i++) {
            eos += h[i].n_out > h[i].n;
            lo = h[i].n_out < lo ? h[i].n_out : lo;
            hi = h[i].n_out > hi ? h[i].n_out : hi;
            s2s_hypothesis_free(&h[i]);
        }
        s2s_state_free(st);
        if (eos >= 4 && eos <= NS - 4 && hi - lo >= 10) return true;
    }
    return false;
}

static void assert_same_full(const s2s_hypothesis *x, const s2s_hypothesis *y, int i) {
    assert_same_hyp(x, y, i);
    cr_assert_float_eq(x->score, y->score, 1e-5, "sentence %d: scores %g vs %g", i, x->score,
                       y->score);
    int64_t lh = (int64_t)x->layers * x->heads;
    assert_same_maps(x->cross_attn, y->cross_attn, lh * x->n_out * x->n_src, i, "cross maps");
    assert_same_maps(x->self_attn, y->self_attn, lh * x->n_out * x->n_out, i, "self maps");
    assert_same_maps(x->enc_attn, y->enc_attn,
                     (int64_t)x->enc_layers * x->heads * x->n_src * x->n_src, i, "encoder maps");
}

// The test hooks (s2s_state_debug) reach the states of translate's worker
// threads, and their counts sum every thread's: two threads run, each
// sentence a batch of its own, the rows one thread runs, on the forced
// path (no_shrink: every beam at step 0) as on the usual one.
Test(decoding, test_hooks_reach_every_thread) {
    s2s_model *m = make_model(&ARCHS[0], 371);
    scramble_vectors(m);
    sources x;
    random_sources(&x, m);
    for (int beam = 1; beam <= 3; beam += 2) {
        int64_t rows[2][2];  // [threads - 1][no_shrink]
        for (int threads = 1; threads <= 2; threads++)
            for (int keep = 0; keep < 2; keep++) {
                s2s_decode_params p = params(m, 1, false);
                p.threads = threads;
                p.decode.beam_size = beam, p.decode.n_best = 1;
                p.decode.max_len = MAX_LEN - 1, p.decode.max_len_ratio = 1.0f;
                s2s_state *st;
                cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
                s2s_state_debug hooks = {.no_shrink = keep};
                st->debug = &hooks;
                s2s_hypothesis h[NS];
                cr_assert_eq(s2s_translate(st, &p, x.s, x.len, NS, h), S2S_OK, "%s",
                             s2s_last_error());
                for (int i = 0; i < NS; i++) s2s_hypothesis_free(&h[i]);
                s2s_state_free(st);
                rows[threads - 1][keep] = hooks.row_steps;
            }
        for (int keep = 0; keep < 2; keep++)
            cr_assert_eq(rows[1][keep], rows[0][keep], "beam %d, no_shrink %d: %lld rows on 2 "
                         "threads, %lld on 1", beam, keep, (long long)rows[1][keep],
                         (long long)rows[0][keep]);
        if (beam > 1) cr_assert_gt(rows[0][1], rows[0][0], "no_shrink runs every beam at step 0");
        else cr_assert_eq(rows[0][1], rows[0][0], "one sentence a batch: nothing to drop");
    }
    s2s_model_free(m);
}

Test(decoding, greedy_dropping_finished_rows_equals_keeping_them_and_alone) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 370 + (uint64_t)a);
        scramble_vectors(m);
        sources x;
        random_sources(&x, m);
        const int *const *s = x.s, *len = x.len;
        cr_assert(ends_spread(m, &x, 1), "arch %d: no </s> bias spreads the sentence ends", a);
        for (int mode = 0; mode < 4; mode++) {
            s2s_decode_params p = params(m, NS, true), p1;
            p.want_self_attention = true;
            p.threads = 1;
            p.decode.max_len = MAX_LEN - 1;
            p.decode.max_len_ratio = 1.0f;  // limits 2..25 by source length
            if (mode & 1) {  // sampling with the repetition guard
                p.decode.temperature = 0.8f, p.decode.sampling_topk = 0, p.decode.seed = 7;
                p.decode.repetition_penalty = 1.3f, p.decode.no_repeat_ngram_size = 2;
            }
            p1 = p, p1.max_batch = 1;
            s2s_hypothesis h[3][NS];  // dropping, keeping, alone
            int64_t steps[2];
            for (int r = 0; r < 3; r++) {
                s2s_state *st;
                cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
                s2s_state_debug hooks = {.fold_mode = mode & 2 ? S2S_FOLD_ALWAYS : S2S_FOLD_NEVER,
                                         .no_shrink = r == 1};
                st->debug = &hooks;
                cr_assert_eq(s2s_translate(st, r == 2 ? &p1 : &p, s, len, NS, h[r]), S2S_OK,
                             "%s", s2s_last_error());
                if (r < 2) steps[r] = hooks.row_steps;
                s2s_state_free(st);
            }
            int lo = MAX_LEN, hi = 0, eos = 0;
            for (int i = 0; i < NS; i++) {
                eos += h[0][i].n_out > h[0][i].n;
                assert_same_full(&h[0][i], &h[1][i], i);
                assert_same_full(&h[0][i], &h[2][i], i);
                lo = h[0][i].n_out < lo ? h[0][i].n_out : lo;
                hi = h[0][i].n_out > hi ? h[0][i].n_out : hi;
            }
            cr_assert_geq(hi - lo, 10, "sentences end at steps %d..%d only", lo, hi);
            cr_assert(eos > 0 && eos < NS, "%d of %d sentences end with </s>", eos, NS);
            // the rows did leave: fewer row-steps than 32 per step
            cr_assert_eq(steps[1], (int64_t)NS * hi);
            cr_assert_lt(steps[0], steps[1] * 3 / 4, "%lld of %lld row-steps",
                         (long long)steps[0], (long long)steps[1]);
            for (int r = 0; r < 3; r++)
                for (int i = 0; i < NS; i++) s2s_hypothesis_free(&h[r][i]);
        }
        s2s_model_free(m);
    }
}

// Folded cross-attention (layers/transformer.h) against the plain path:
// scoring, greedy and beam search, each over a padded batch with maps.
Test(decoding, folded_cross_attention_equals_the_plain_one) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m;
        corpus c;
        s2s_state *st = setup(a, 350 + (uint64_t)a, &m, &c);
        enum { K = 3 };
        s2s_hypothesis h[2][3][NB * K];
        const s2s_fold_mode modes[2] = {S2S_FOLD_NEVER, S2S_FOLD_ALWAYS};
        s2s_state_debug hooks = {0};
        st->debug = &hooks;
        for (int f = 0; f < 2; f++) {
            hooks.fold_mode = modes[f];
            s2s_decode_params p = params(m, NB, true);
            cr_assert_eq(s2s_score(st, &p, c.s, SRC_LEN, c.t, TGT_LEN, NB, h[f][0]), S2S_OK);
            cr_assert_eq(st->folded, f == 1);
            cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, h[f][1]), S2S_OK);
            p.decode.beam_size = K, p.decode.n_best = K;
            cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, h[f][2]), S2S_OK, "%s",
                         s2s_last_error());
        }
        for (int i = 0; i < NB; i++) {
            assert_same_hyp(&h[0][0][i], &h[1][0][i], i);
            assert_same_hyp(&h[0][1][i], &h[1][1][i], i);
        }
        for (int i = 0; i < NB * K; i++) assert_same_hyp(&h[0][2][i], &h[1][2][i], i);
        for (int f = 0; f < 2; f++) {
            for (int i = 0; i < NB; i++) {
                s2s_hypothesis_free(&h[f][0][i]);
                s2s_hypothesis_free(&h[f][1][i]);
            }
            for (int i = 0; i < NB * K; i++) s2s_hypothesis_free(&h[f][2][i]);
        }
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

// Beam search drops finished sentences too (s2s_state_keep with K beams)
// and runs step 0 on beam 0 alone (s2s_state_spread). 32 sentences ending
// anywhere from step 2 to step 25, n-best lists with cross-attention maps,
// plain and folded cross-attention, beams of 4 and 3: every hypothesis
// must come out as it does alone (batch 1) and as in a batch that keeps
// its finished sentences and runs every beam at step 0 (s2s_state_debug.no_shrink).
Test(decoding, beam_dropping_finished_sentences_equals_keeping_them_and_alone) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 390 + (uint64_t)a);
        scramble_vectors(m);
        sources x;
        random_sources(&x, m);
        const int *const *s = x.s, *len = x.len;
        cr_assert(ends_spread(m, &x, 4), "arch %d: no </s> bias spreads the sentence ends", a);
        for (int mode = 0; mode < 4; mode++) {
            enum { NBEST = 3 };
            s2s_decode_params p = params(m, NS, true), p1;
            p.threads = 1;
            p.decode.max_len = MAX_LEN - 1;
            p.decode.max_len_ratio = 1.0f;  // limits 2..25 by source length
            p.decode.beam_size = mode & 1 ? 3 : 4;
            p.decode.n_best = NBEST;
            p.decode.length_penalty = mode & 1 ? 0.6f : 1.0f;
            p1 = p, p1.max_batch = 1;
            s2s_hypothesis h[3][NS * NBEST];  // dropping, keeping, alone
            int64_t steps[2];
            for (int r = 0; r < 3; r++) {
                s2s_state *st;
                cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
                s2s_state_debug hooks = {.fold_mode = mode & 2 ? S2S_FOLD_ALWAYS : S2S_FOLD_NEVER,
                                         .no_shrink = r == 1};
                st->debug = &hooks;
                cr_assert_eq(s2s_translate(st, r == 2 ? &p1 : &p, s, len, NS, h[r]), S2S_OK,
                             "%s", s2s_last_error());
                if (r < 2) steps[r] = hooks.row_steps;
                s2s_state_free(st);
            }
            int lo = MAX_LEN, hi = 0, eos = 0, n_hyp = 0;
            for (int i = 0; i < NS * NBEST; i++) {
                for (int r = 1; r < 3; r++) {
                    cr_assert_eq(h[0][i].ids != NULL, h[r][i].ids != NULL, "hypothesis %d", i);
                    if (!h[0][i].ids) continue;
                    assert_same_hyp(&h[0][i], &h[r][i], i);
                    cr_assert_float_eq(h[0][i].score, h[r][i].score, 1e-5, "hypothesis %d", i);
                }
                if (!h[0][i].ids) continue;
                n_hyp++;
                eos += h[0][i].n_out > h[0][i].n;
                lo = h[0][i].n_out < lo ? h[0][i].n_out : lo;
                hi = h[0][i].n_out > hi ? h[0][i].n_out : hi;
            }
            cr_assert_geq(n_hyp, NS * 2, "only %d hypotheses", n_hyp);
            cr_assert_geq(hi - lo, 10, "hypotheses end at steps %d..%d only", lo, hi);
            cr_assert(eos > 0 && eos < n_hyp, "%d of %d hypotheses end with </s>", eos, n_hyp);
            // sentences did leave, and step 0 ran one beam: fewer row-steps
            cr_assert_lt(steps[0], steps[1] * 3 / 4, "%lld of %lld row-steps",
                         (long long)steps[0], (long long)steps[1]);
            for (int r = 0; r < 3; r++)
                for (int i = 0; i < NS * NBEST; i++) s2s_hypothesis_free(&h[r][i]);
        }
        s2s_model_free(m);
    }
}

// s2s_keep_best_row (one pass, chunks skipped) against sorting every
// finite offer, stable, by score: rows with many ties, -inf and NaN,
// lengths around the 32-token chunks, several beams into one list.
static int by_offer(const void *a, const void *b) {
    const s2s_beam_cand *x = a, *y = b;
    if (x->score != y->score) return x->score < y->score ? 1 : -1;
    return x->seq != y->seq ? x->seq - y->seq : x->token - y->token;
}

Test(decoding, beam_top_k_equals_sorting_every_offer) {
    enum { MAXV = 300, BEAMS = 4 };
    static float rows[BEAMS][MAXV];
    static s2s_beam_cand all[BEAMS * MAXV];
    for (int c = 0; c < 400; c++) {
        int V = 1 + (int)(rnd() % MAXV), cap = 1 + (int)(rnd() % 10), beams = 1 + c % BEAMS;
        int levels = c % 3 == 0 ? 3 : 1000;  // few distinct values: ties everywhere
        float base[BEAMS];
        int n_all = 0, n = 0;
        s2s_beam_cand list[10];
        for (int k = 0; k < beams; k++) {
            base[k] = k == 1 && c % 4 == 0 ? 0.0f : -(float)(rnd() % 3);  // equal bases too
            // logits and their log-sum-exp (any value here: the offers are
            // base + (logit - lse)); a NaN logit is never offered
            float lse = c % 5 == 0 ? 0.0f : (float)(rnd() % 9) * 0.375f - 1.0f;
            for (int v = 0; v < V; v++) {
                rows[k][v] = -(float)(rnd() % (uint64_t)levels) * 0.25f;
                if (rnd() % 5 == 0 || (c % 7 == 0 && v < V / 2)) rows[k][v] = -INFINITY;
                if (c % 11 == 0 && rnd() % 7 == 0) rows[k][v] = NAN;
                float lp = rows[k][v] - lse;
                if (lp > -INFINITY) all[n_all++] = (s2s_beam_cand){base[k] + lp, k, v};
            }
            s2s_keep_best_row(list, &n, cap, rows[k], V, lse, base[k], k);
        }
        qsort(all, (size_t)n_all, sizeof *all, by_offer);
        int want = n_all < cap ? n_all : cap;
        cr_assert_eq(n, want, "case %d: %d of %d kept", c, n, want);
        for (int i = 0; i < n; i++)
            cr_assert(list[i].score == all[i].score && list[i].seq == all[i].seq &&
                          list[i].token == all[i].token,
                      "case %d entry %d: (%g, %d, %d) vs (%g, %d, %d)", c, i, list[i].score,
                      list[i].seq, list[i].token, all[i].score, all[i].seq, all[i].token);
    }
}

// A search's state (Tq = 1) holds one row of logits and of activations
// per sequence; forced scoring's (Tq = T) holds all T rows. The difference
// is counted from the sizes.
Test(decoding, a_search_state_holds_only_what_its_steps_touch) {
    s2s_model *m = make_model(&ARCHS[0], 43);
    enum { B = 2, S = 3, T = 40 };
    int64_t d = m->cfg.model.d_model, f = m->cfg.model.ffn_dim, H = m->cfg.model.heads;
    int64_t V = s2s_vocab_size(m->tgt_vocab);
    size_t n[2];
    for (int forced = 0; forced < 2; forced++) {
        s2s_state *st;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        cr_assert_eq(s2s_state_reserve(st, B, 1, S, T, forced ? T : 1, false), S2S_OK);
        n[forced] = st->block_n;
        s2s_state_free(st);
    }
    // rows: B*T against B*S (the encoder's, more than B*1); per row the
    // residual, LayerNorm, QKV, context and feed-forward widths, and logits
    int64_t rows = B * T - B * S, per_row = d + d + 3 * d + d + f;
    int64_t probs = B * H * T * T - B * H * 1 * T;  // a layer's self-attention map: Tq rows of T
    int64_t logits = B * (T - 1) * V;
    cr_assert_eq((int64_t)(n[1] - n[0]), rows * per_row + probs + logits,
                 "%zu vs %zu floats", n[1], n[0]);
    s2s_model_free(m);
}

// s2s_state_reorder copies only the sequences that change; against a
// plain copy of every sequence's cache through a second buffer, for
// identity, permutations, cycles, swaps, many-to-one and random parents,
// over fewer sequences than the state holds.
Test(decoding, cache_reorder_equals_copying_everything) {
    s2s_model *m = make_model(&ARCHS[0], 41);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    enum { NSEQ = 12, TA = 7 };
    cr_assert_eq(s2s_state_reserve(st, 4, 4, 5, TA, 1, false), S2S_OK);
    int64_t L = m->cfg.model.decoder_layers, row = TA * 2 * m->cfg.model.d_model;
    size_t floats = (size_t)(L * NSEQ * row);
    float *before = malloc(floats * sizeof(float)), *want = malloc(floats * sizeof(float));
    cr_assert(before && want);
    for (int c = 0; c < 60; c++) {
        int n = c < 30 ? NSEQ : 1 + (int)(rnd() % NSEQ), t = 1 + (int)(rnd() % TA), parent[NSEQ];
        int kind = c % 6;
        for (int i = 0; i < n; i++) parent[i] = i;
        if (kind == 1)  // a random permutation
            for (int i = n - 1; i > 0; i--) {
                int j = (int)(rnd() % (uint64_t)(i + 1)), x = parent[i];
                parent[i] = parent[j], parent[j] = x;
            }
        if (kind == 2)
            for (int i = 0; i < n; i++) parent[i] = (i + 1) % n;  // one cycle
        if (kind == 3)
            for (int i = 0; i + 1 < n; i += 2) parent[i] = i + 1, parent[i + 1] = i;  // swaps
        if (kind == 4)  // many to one: beams of groups of 4 all taking one of their group
            for (int i = 0; i < n; i++) parent[i] = i / 4 * 4 + (c / 6) % 4 < n ? i / 4 * 4 + (c / 6) % 4 : i;
        if (kind == 5)
            for (int i = 0; i < n; i++) parent[i] = (int)(rnd() % (uint64_t)n);
        for (size_t j = 0; j < floats; j++) before[j] = rnd_unit();
        memcpy(st->self_kv, before, floats * sizeof(float));
        memcpy(want, before, floats * sizeof(float));
        for (int64_t l = 0; l < L; l++)  // the caches of n sequences, laid out per layer
            for (int i = 0; i < n; i++)
                memcpy(want + (l * n + i) * row, before + (l * n + parent[i]) * row,
                       (size_t)(t * 2 * m->cfg.model.d_model) * sizeof(float));
        int changed = 0;
        for (int i = 0; i < n; i++) changed += parent[i] != i;
        s2s_state_debug hooks = {0};
        st->debug = &hooks;
        s2s_state_reorder(st, parent, n, t, TA);
        st->debug = NULL;
        cr_assert_eq(memcmp(st->self_kv, want, floats * sizeof(float)), 0,
                     "case %d (kind %d, %d sequences, %d rows)", c, kind, n, t);
        // only what changes is copied, sources that are also overwritten once more
        int64_t copied = hooks.reorder_rows;
        cr_assert_geq(copied, (int64_t)L * changed * t);
        cr_assert_leq(copied, (int64_t)L * 2 * changed * t);
        if (kind == 0) cr_assert_eq(copied, 0);
    }
    free(before), free(want);
    s2s_state_free(st);
    s2s_model_free(m);
}

// The cross-attention maps of every n-best hypothesis (rebuilt by walking
// each step's parents) against the maps of the same output forced through
// s2s_score, which runs the full causal pass without caches or beams.
Test(decoding, beam_attention_maps_equal_those_of_forced_decoding) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m;
        corpus c;
        s2s_state *st = setup(a, 420 + (uint64_t)a, &m, &c);
        enum { K = 4 };
        s2s_hypothesis h[NB * K];
        s2s_decode_params p = params(m, NB, true);
        p.decode.beam_size = K, p.decode.n_best = K, p.decode.length_penalty = 0.6f;
        cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, h), S2S_OK, "%s", s2s_last_error());
        s2s_decode_params ps = params(m, 1, true);
        int walked = 0;
        for (int i = 0; i < NB * K; i++) {
            const s2s_hypothesis *x = &h[i];
            if (!x->ids) continue;
            s2s_hypothesis f;
            score1(st, &ps, c.src[i / K], SRC_LEN[i / K], x->ids, x->n, &f);
            cr_assert_eq(f.n_src, x->n_src);
            int64_t lh = (int64_t)x->layers * x->heads;
            float e = 0;
            for (int64_t k = 0; k < lh; k++)
                for (int r = 0; r < x->n_out; r++) {
                    float d = max_abs_diff(x->cross_attn + (k * x->n_out + r) * x->n_src,
                                           f.cross_attn + (k * f.n_out + r) * f.n_src, x->n_src);
                    e = d > e ? d : e;
                }
            cr_assert_leq(e, 1e-5f, "arch %d hypothesis %d: maps differ by %g", a, i, e);
            walked += x->n_out;
            s2s_hypothesis_free(&f);
        }
        cr_assert_gt(walked, NB * K, "arch %d: too few map rows compared", a);
        for (int i = 0; i < NB * K; i++) s2s_hypothesis_free(&h[i]);
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

// ---- incremental decoding ----

static int best_allowed(const float *row, int V) {
    int best = -1;
    for (int v = 0; v < V; v++)
        if (v != S2S_PAD && v != S2S_BOS && (best < 0 || row[v] > row[best])) best = v;
    return best;
}

Test(decoding, cached_steps_equal_the_full_causal_pass) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 400 + (uint64_t)a);
        scramble_vectors(m);
        s2s_state *st, *st2;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        cr_assert_eq(s2s_state_new(&st2, m), S2S_OK);
        int V = vt_of(m), H = ARCHS[a].heads, L = ARCHS[a].layers;
        corpus c;
        make_corpus(&c, m);
        s2s_decode_params p = params(m, NB, true), p1 = params(m, 1, true);
        p.decode.max_len = 10;
        s2s_hypothesis hyp[NB];
        cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, hyp), S2S_OK, "%s",
                     s2s_last_error());
        float *rows = malloc(sizeof(float) * (size_t)(p.decode.max_len + 1) * V);
        for (int i = 0; i < NB; i++) {
            s2s_hypothesis *g = &hyp[i], sc;
            cr_assert(g->n_out == g->n + 1 || (g->n_out == g->n && g->n == p.decode.max_len));
            cr_assert_eq(g->layers, L);
            cr_assert_eq(g->heads, H);
            score1(st2, &p1, c.src[i], SRC_LEN[i], g->ids, g->n, &sc);
            logprob_rows(rows, st2, sc.n_out, V);
            for (int t = 0; t < g->n_out; t++) {
                cr_assert_float_eq(g->token_logprobs[t], sc.token_logprobs[t], 1e-4,
                                   "arch %d sentence %d step %d: %g vs %g", a, i, t,
                                   g->token_logprobs[t], sc.token_logprobs[t]);
                // greedy took the best token the full pass offers
                int want = best_allowed(rows + (int64_t)t * V, V);
                int got = t < g->n ? g->ids[t] : S2S_EOS;
                cr_assert_eq(got, want, "arch %d sentence %d step %d", a, i, t);
            }
            float lp = 0;
            for (int t = 0; t < g->n_out; t++) lp += g->token_logprobs[t];
            cr_assert_float_eq(g->logprob, lp, 1e-4);
            cr_assert_eq(sc.n_src, g->n_src);
            for (int l = 0; l < L; l++)
                for (int h = 0; h < H; h++)
                    for (int t = 0; t < g->n_out; t++) {
                        const float *x = g->cross_attn +
                                         (((int64_t)l * H + h) * g->n_out + t) * g->n_src;
                        const float *y = sc.cross_attn +
                                         (((int64_t)l * H + h) * sc.n_out + t) * sc.n_src;
                        float e = max_abs_diff(x, y, g->n_src);
                        cr_assert_leq(e, 1e-5f, "arch %d sentence %d layer %d head %d row %d: %g",
                                      a, i, l, h, t, e);
                    }
            s2s_hypothesis_free(&sc);
            s2s_hypothesis_free(g);
        }
        free(rows);
        s2s_state_free(st);
        s2s_state_free(st2);
        s2s_model_free(m);
    }
}

// ---- attention maps ----

static void assert_rows_are_distributions(const s2s_hypothesis *h, int i) {
    cr_assert_not_null(h->cross_attn);
    for (int64_t r = 0; r < (int64_t)h->layers * h->heads * h->n_out; r++) {
        const float *row = h->cross_attn + r * h->n_src;
        double sum = 0;
        for (int j = 0; j < h->n_src; j++) {
            // every column is a real source position: none is masked out
            cr_assert(row[j] > 0.0f && row[j] <= 1.0f, "sentence %d row %lld col %d: %g", i,
                      (long long)r, j, row[j]);
            sum += row[j];
        }
        cr_assert_float_eq(sum, 1.0, 1e-5, "sentence %d row %lld sums to %g", i, (long long)r,
                           sum);
    }
}

Test(decoding, cross_attention_rows_are_distributions_over_the_source) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 500 + (uint64_t)a);
        s2s_state *st;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        corpus c;
        make_corpus(&c, m);
        s2s_decode_params p = params(m, NB, true);
        s2s_hypothesis h[NB];
        cr_assert_eq(s2s_score(st, &p, c.s, SRC_LEN, c.t, TGT_LEN, NB, h), S2S_OK);
        for (int i = 0; i < NB; i++) {
            cr_assert_eq(h[i].layers, ARCHS[a].layers);
            cr_assert_eq(h[i].heads, ARCHS[a].heads);
            cr_assert_eq(h[i].n_src, SRC_LEN[i] + 1);
            assert_rows_are_distributions(&h[i], i);
            s2s_hypothesis_free(&h[i]);
        }
        cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, h), S2S_OK);
        for (int i = 0; i < NB; i++) {
            cr_assert_eq(h[i].n_src, SRC_LEN[i] + 1);
            assert_rows_are_distributions(&h[i], i);
            s2s_hypothesis_free(&h[i]);
        }
        // Without want_attention no maps are made.
        p.want_attention = false;
        cr_assert_eq(s2s_score(st, &p, c.s, SRC_LEN, c.t, TGT_LEN, NB, h), S2S_OK);
        for (int i = 0; i < NB; i++) {
            cr_assert_null(h[i].cross_attn);
            s2s_hypothesis_free(&h[i]);
        }
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

// ---- cross-attention recomputed with plain loops ----

static const float *W(const s2s_model *m, const char *name) {
    s2s_tensor_info t = s2s_model_find_tensor(m, name);
    cr_assert_not_null(t.data, "no tensor '%s'", name);
    return t.data;
}


// ref_layernorm_rows with the model's float weights
static void layer_norm(double *y, const double *x, const float *w, const float *b, int n, int d,
                       double eps) {
    double *wd = malloc(sizeof(double) * (size_t)d), *bd = malloc(sizeof(double) * (size_t)d);
    for (int k = 0; k < d; k++) wd[k] = w[k], bd[k] = b[k];
    ref_layernorm_rows(y, x, wd, bd, n, d, eps);
    free(wd), free(bd);
}

// probs (H, tq, tk) = softmax(q_h · k_h^T / sqrt(dh)), query i seeing keys
// 0..i when causal; ctx (tq, d) = probs · v.
static void attend(double *ctx, double *probs, const double *q, const double *k, const double *v,
                   int tq, int tk, int d, int H, bool causal) {
    int dh = d / H;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < tq; i++) {
            double *p = probs + ((int64_t)h * tq + i) * tk;
            int nk = causal ? i + 1 : tk;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < tk; j++) {
                p[j] = 0;
                if (j >= nk) continue;
                for (int c = 0; c < dh; c++) p[j] += q[i * d + h * dh + c] * k[j * d + h * dh + c];
                p[j] /= sqrt((double)dh);
                mx = p[j] > mx ? p[j] : mx;
            }
            for (int j = 0; j < nk; j++) sum += (p[j] = exp(p[j] - mx));
            for (int j = 0; j < nk; j++) p[j] /= sum;
            for (int c = 0; c < dh; c++) {
                double acc = 0;
                for (int j = 0; j < nk; j++) acc += p[j] * v[j * d + h * dh + c];
                ctx[i * d + h * dh + c] = acc;
            }
        }
}

static void check_naive_cross_attention(s2s_norm norm, s2s_fold_mode fold) {
    const arch a = {8, 2, 12, 1, norm, S2S_ACT_GELU, false};
    s2s_model *m = make_model(&a, 600 + (uint64_t)norm);
    scramble_vectors(m);
    const int d = a.d, H = a.heads, n = 6, slen = 5, T = n + 1, S = slen + 1;
    const bool pre = norm == S2S_NORM_PRE;
    const double eps = s2s_model_get_config(m)->model.layer_norm_eps;
    int src[5], tgt[6];
    fill_ids(src, slen, vs_of(m));
    fill_ids(tgt, n, vt_of(m));
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_state_debug hooks = {.fold_mode = fold};
    st->debug = &hooks;
    s2s_decode_params p = params(m, 1, true);
    s2s_hypothesis h;
    score1(st, &p, src, slen, tgt, n, &h);
    cr_assert_eq(h.n_src, S);
    cr_assert_eq(st->folded, fold == S2S_FOLD_ALWAYS);

    double *x = calloc((size_t)T * d, sizeof(double)), *in = calloc((size_t)T * d, sizeof(double));
    double *q = calloc((size_t)T * d, sizeof(double)), *k = calloc((size_t)S * d, sizeof(double));
    double *v = calloc((size_t)S * d, sizeof(double)), *ctx = calloc((size_t)T * d, sizeof(double));
    double *o = calloc((size_t)T * d, sizeof(double)), *mem = calloc((size_t)S * d, sizeof(double));
    double *probs = calloc((size_t)H * T * (T > S ? T : S), sizeof(double));

    // decoder input: <s> y0 .. y(n-1), embedding * sqrt(d) + sinusoid
    const float *emb = W(m, "tgt_embed.weight");
    for (int t = 0; t < T; t++) {
        int id = t == 0 ? S2S_BOS : tgt[t - 1];
        for (int i = 0; i < d / 2; i++) {
            double angle = t / pow(10000.0, 2.0 * i / d);
            x[t * d + 2 * i] = emb[id * d + 2 * i] * sqrt((double)d) + sin(angle);
            x[t * d + 2 * i + 1] = emb[id * d + 2 * i + 1] * sqrt((double)d) + cos(angle);
        }
    }
    // masked self-attention
    const char *sa = "decoder.layers.0.self_attn", *ca = "decoder.layers.0.cross_attn";
    char nm[128];
#define WN(pre_, what) (snprintf(nm, sizeof nm, "%s.%s", pre_, what), W(m, nm))
    if (pre)
        layer_norm(in, x, WN("decoder.layers.0", "norm1.weight"),
                   WN("decoder.layers.0", "norm1.bias"), T, d, eps);
    else
        memcpy(in, x, sizeof(double) * T * d);
    double *sk = calloc((size_t)T * d, sizeof(double)), *sv = calloc((size_t)T * d, sizeof(double));
    ref_linear(q, in, WN(sa, "q_proj.weight"), WN(sa, "q_proj.bias"), T, d, d);
    ref_linear(sk, in, WN(sa, "k_proj.weight"), WN(sa, "k_proj.bias"), T, d, d);
    ref_linear(sv, in, WN(sa, "v_proj.weight"), WN(sa, "v_proj.bias"), T, d, d);
    attend(ctx, probs, q, sk, sv, T, T, d, H, /*causal=*/true);
    ref_linear(o, ctx, WN(sa, "out_proj.weight"), WN(sa, "out_proj.bias"), T, d, d);
    for (int i = 0; i < T * d; i++) x[i] += o[i];
    if (!pre)
        layer_norm(x, x, WN("decoder.layers.0", "norm1.weight"),
                   WN("decoder.layers.0", "norm1.bias"), T, d, eps);
    // cross-attention against the engine's encoder output
    if (pre)
        layer_norm(in, x, WN("decoder.layers.0", "norm2.weight"),
                   WN("decoder.layers.0", "norm2.bias"), T, d, eps);
    else
        memcpy(in, x, sizeof(double) * T * d);
    for (int i = 0; i < S * d; i++) mem[i] = st->memory[i];
    ref_linear(q, in, WN(ca, "q_proj.weight"), WN(ca, "q_proj.bias"), T, d, d);
    ref_linear(k, mem, WN(ca, "k_proj.weight"), WN(ca, "k_proj.bias"), S, d, d);
    ref_linear(v, mem, WN(ca, "v_proj.weight"), WN(ca, "v_proj.bias"), S, d, d);
    attend(ctx, probs, q, k, v, T, S, d, H, /*causal=*/false);
#undef WN

    double worst = 0;
    for (int hd = 0; hd < H; hd++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < S; j++) {
                double e = fabs(h.cross_attn[((int64_t)hd * T + t) * S + j] -
                                probs[((int64_t)hd * T + t) * S + j]);
                worst = e > worst ? e : worst;
            }
    cr_assert_leq(worst, 1e-4, "%s-norm: cross-attention differs by %g",
                  pre ? "pre" : "post", worst);
    // The maps are not uniform, so the comparison has teeth.
    double spread = 0;
    for (int j = 0; j < S; j++) spread += fabs(probs[j] - 1.0 / S);
    cr_assert_gt(spread, 1e-3);

    free(x), free(in), free(q), free(k), free(v), free(ctx), free(o), free(mem), free(probs);
    free(sk), free(sv);
    s2s_hypothesis_free(&h);
    s2s_state_free(st);
    s2s_model_free(m);
}

Test(decoding, cross_attention_matches_plain_loops_pre_norm) {
    check_naive_cross_attention(S2S_NORM_PRE, S2S_FOLD_NEVER);
    check_naive_cross_attention(S2S_NORM_PRE, S2S_FOLD_ALWAYS);
}

Test(decoding, cross_attention_matches_plain_loops_post_norm) {
    check_naive_cross_attention(S2S_NORM_POST, S2S_FOLD_NEVER);
    check_naive_cross_attention(S2S_NORM_POST, S2S_FOLD_ALWAYS);
}

// ---- bad inputs ----

Test(decoding, bad_inputs_are_refused_with_a_message) {
    s2s_model *m = make_model(&ARCHS[0], 700);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_decode_params p = params(m, 4, false);
    p.decode.max_len = 4;
    int ids[MAX_LEN + 1], tgt[3] = {4, 5, 6}, tlen = 3;
    fill_ids(ids, MAX_LEN + 1, vs_of(m));
    const int *src[1] = {ids}, *tg[1] = {tgt};
    s2s_hypothesis h;

    // max_len - 1 tokens fit (with </s>: max_len positions); one more does not
    int len = MAX_LEN - 1;
    cr_assert_eq(s2s_translate(st, &p, src, &len, 1, &h), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(h.n_src, MAX_LEN);
    s2s_hypothesis_free(&h);
    cr_assert_eq(s2s_score(st, &p, src, &len, tg, &tlen, 1, &h), S2S_OK);
    s2s_hypothesis_free(&h);
    len = MAX_LEN;
    cr_assert_eq(s2s_translate(st, &p, src, &len, 1, &h), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "31"), "%s", s2s_last_error());
    cr_assert_null(h.ids);
    cr_assert_eq(s2s_score(st, &p, src, &len, tg, &tlen, 1, &h), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "31"), "%s", s2s_last_error());
    // a target too long to score
    int slen = 3;
    len = MAX_LEN;
    const int *longt[1] = {ids};
    cr_assert_eq(s2s_score(st, &p, src, &slen, longt, &len, 1, &h), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "31"), "%s", s2s_last_error());
    // negative lengths
    len = -1;
    cr_assert_eq(s2s_translate(st, &p, src, &len, 1, &h), S2S_ERR_INVALID);

    // token ids out of range, in the second of two sentences
    int good[2] = {4, 5}, bad[2] = {4, 5}, lens[2] = {2, 2};
    const int *two[2] = {good, bad};
    int bad_ids[] = {vs_of(m), -1, 1 << 30};
    s2s_hypothesis hh[2];
    for (int k = 0; k < 3; k++) {
        bad[1] = bad_ids[k];
        cr_assert_eq(s2s_translate(st, &p, two, lens, 2, hh), S2S_ERR_INVALID);
        cr_assert(strstr(s2s_last_error(), "out of range"), "%s", s2s_last_error());
        cr_assert_null(hh[0].ids);
        cr_assert_null(hh[1].ids);
    }
    bad[1] = 5;
    int tbad[2] = {4, vt_of(m)};
    const int *tt[2] = {good, tbad};
    cr_assert_eq(s2s_score(st, &p, two, lens, tt, lens, 2, hh), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "out of range"), "%s", s2s_last_error());
    // the source vocab is larger than the target one: a source id valid as
    // a source id is refused as a target id
    cr_assert_gt(vs_of(m), vt_of(m));
    tbad[1] = vt_of(m);
    good[1] = vt_of(m);
    tt[0] = tgt;
    cr_assert_eq(s2s_score(st, &p, two, lens, tt, lens, 2, hh), S2S_ERR_INVALID);

    // bad parameters
    s2s_decode_params q = p;
    q.max_batch = 0;
    good[1] = 5;
    cr_assert_eq(s2s_translate(st, &q, two, lens, 2, hh), S2S_ERR_INVALID);
    cr_assert_neq(s2s_last_error()[0], '\0');
    q = p;
    q.decode.max_len = 0;
    cr_assert_eq(s2s_translate(st, &q, two, lens, 2, hh), S2S_ERR_INVALID);
    // past the documented bounds (s2s/config.h), whatever set them
    struct { int beam, n_best, batch; float ratio; } past[] = {
        {S2S_MAX_BEAM + 1, 1, 32, 0}, {(1 << 30) + 1, (1 << 30) + 1, 32, 0},
        {4, 4, S2S_MAX_BATCH + 1, 0}, {4, 4, 32, 4e8f}, {4, 4, 32, NAN}};
    for (size_t k = 0; k < sizeof past / sizeof past[0]; k++) {
        q = p;
        q.decode.beam_size = past[k].beam, q.decode.n_best = past[k].n_best;
        q.max_batch = past[k].batch, q.decode.max_len_ratio = past[k].ratio;
        cr_assert_eq(s2s_translate(st, &q, two, lens, 2, hh), S2S_ERR_INVALID, "case %zu", k);
        cr_assert(strstr(s2s_last_error(), "decode:"), "%s", s2s_last_error());
    }
    // n * n_best hypotheses must be countable in an int: refused before
    // anything is read or written (out and src are never touched)
    q = p;
    q.decode.beam_size = q.decode.n_best = S2S_MAX_BEAM;
    cr_assert_eq(s2s_translate(st, &q, NULL, NULL, 1 << 26, NULL), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "too many"), "%s", s2s_last_error());

    // nothing to do is fine
    cr_assert_eq(s2s_translate(st, &p, NULL, NULL, 0, hh), S2S_OK);
    cr_assert_eq(s2s_score(st, &p, NULL, NULL, NULL, NULL, 0, hh), S2S_OK);

    // the state still works after all that
    cr_assert_eq(s2s_translate(st, &p, two, lens, 2, hh), S2S_OK, "%s", s2s_last_error());
    s2s_hypothesis_free(&hh[0]);
    s2s_hypothesis_free(&hh[1]);
    s2s_state_free(st);
    s2s_model_free(m);
}

// A ratio times a source length beyond INT_MAX (issue 27: 4e8 cut a line to
// one word) still gives max_len; a plain loop of the rule otherwise.
Test(decoding, length_limit_follows_the_rule_for_every_ratio) {
    s2s_model *m = make_model(&ARCHS[0], 700);
    s2s_decode_params p = params(m, 1, false);
    p.decode.max_len = 20;
    float ratios[] = {0, 0.5f, 1.25f, 3, 100, 4e8f, 1e9f, 3e38f};  // exact products
    for (size_t k = 0; k < sizeof ratios / sizeof ratios[0]; k++)
        for (int len = 0; len <= 40; len++) {
            p.decode.max_len_ratio = ratios[k];
            long long want = p.decode.max_len < MAX_LEN ? p.decode.max_len : MAX_LEN;
            if (ratios[k] > 0 && ceil((double)ratios[k] * len) + 1 < (double)want)
                want = (long long)ceil((double)ratios[k] * len) + 1;
            cr_assert_eq(s2s_length_limit(&p, m, len), want, "ratio %g, %d tokens", ratios[k],
                         len);
        }
    s2s_model_free(m);
}

Test(decoding, empty_source_and_target_are_fine) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 800 + (uint64_t)a);
        s2s_state *st;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        s2s_decode_params p = params(m, 3, true);
        p.decode.max_len = 6;
        int empty[1] = {0}, one[1] = {5}, lens[3] = {0, 1, 0};
        const int *src[3] = {empty, one, empty};
        s2s_hypothesis h[3];
        cr_assert_eq(s2s_translate(st, &p, src, lens, 3, h), S2S_OK, "%s", s2s_last_error());
        for (int i = 0; i < 3; i += 2) {
            cr_assert_eq(h[i].n_src, 1);
            cr_assert_geq(h[i].n_out, 1);
            cr_assert_leq(h[i].n_out, 6);
            // one source position (</s>) takes all the attention
            for (int64_t r = 0; r < (int64_t)h[i].layers * h[i].heads * h[i].n_out; r++)
                cr_assert_float_eq(h[i].cross_attn[r], 1.0f, 1e-6);
        }
        assert_same_hyp(&h[0], &h[2], 2);
        for (int i = 0; i < 3; i++) s2s_hypothesis_free(&h[i]);

        // scoring an empty target: only </s> is predicted
        int tl[3] = {0, 0, 0};
        cr_assert_eq(s2s_score(st, &p, src, lens, src, tl, 3, h), S2S_OK, "%s",
                     s2s_last_error());
        for (int i = 0; i < 3; i++) {
            cr_assert_eq(h[i].n, 0);
            cr_assert_eq(h[i].n_out, 1);
            cr_assert_lt(h[i].token_logprobs[0], 0.0f);
            cr_assert_float_eq(h[i].logprob, h[i].token_logprobs[0], 1e-6);
            s2s_hypothesis_free(&h[i]);
        }
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

// ---- what greedy may emit ----

Test(decoding, greedy_never_emits_pad_or_bos) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 900 + (uint64_t)a);
        s2s_state *st;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        corpus c;
        make_corpus(&c, m);
        s2s_decode_params p = params(m, NB, false);
        p.decode.max_len = 8;
        // Make <pad> and <s> by far the likeliest outputs.
        tensor_add(m, "generator.bias", S2S_PAD, 40.0f);
        tensor_add(m, "generator.bias", S2S_BOS, 40.0f);
        s2s_hypothesis h[NB];
        cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, h), S2S_OK);
        for (int i = 0; i < NB; i++) {
            for (int t = 0; t < h[i].n; t++) {
                cr_assert_neq(h[i].ids[t], S2S_PAD, "sentence %d token %d", i, t);
                cr_assert_neq(h[i].ids[t], S2S_BOS, "sentence %d token %d", i, t);
                cr_assert_neq(h[i].ids[t], S2S_EOS, "</s> inside sentence %d", i);
                cr_assert_lt(h[i].ids[t], vt_of(m));
            }
            // the bias took effect: what was emitted is now unlikely
            for (int t = 0; t < h[i].n_out; t++) cr_assert_lt(h[i].token_logprobs[t], -20.0f);
            s2s_hypothesis_free(&h[i]);
        }
        // With </s> likeliest of all, every translation is empty.
        tensor_add(m, "generator.bias", S2S_EOS, 80.0f);
        cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, h), S2S_OK);
        for (int i = 0; i < NB; i++) {
            cr_assert_eq(h[i].n, 0);
            cr_assert_eq(h[i].n_out, 1);
            cr_assert_float_eq(h[i].logprob, h[i].token_logprobs[0], 1e-6);
            cr_assert_gt(h[i].logprob, -1e-3f);
            s2s_hypothesis_free(&h[i]);
        }
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

Test(decoding, greedy_stops_at_max_len_without_eos) {
    s2s_model *m = make_model(&ARCHS[1], 1000);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    tensor_add(m, "generator.bias", S2S_EOS, -80.0f);  // </s> never wins
    corpus c;
    make_corpus(&c, m);
    s2s_decode_params p = params(m, NB, true);
    p.decode.max_len = 7;
    s2s_hypothesis h[NB];
    cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, h), S2S_OK);
    for (int i = 0; i < NB; i++) {
        cr_assert_eq(h[i].n, 7);
        cr_assert_eq(h[i].n_out, 7);
        assert_rows_are_distributions(&h[i], i);
        s2s_hypothesis_free(&h[i]);
    }
    s2s_state_free(st);
    s2s_model_free(m);
}

// Decoding multiplies by its own transposed copy of some matrices
// (model_internal.h): a write with s2s_model_set_tensor after an earlier
// decoding call must still reach the next one.
static void score_after_writes(s2s_model *m, bool decode_first, float *lp, int n_lp) {
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_decode_params p = params(m, 1, false);
    int src[4] = {5, 6, 7, 8}, tgt[3] = {5, 6, 7};
    s2s_hypothesis h;
    if (decode_first) {
        score1(st, &p, src, 4, tgt, 3, &h);
        s2s_hypothesis_free(&h);
    }
    const char *names[] = {"encoder.layers.0.ffn.fc1.weight",
                           "decoder.layers.1.self_attn.q_proj.weight",
                           "decoder.layers.0.ffn.fc2.weight", "generator.weight"};
    for (int i = 0; i < 4; i++)
        if (s2s_model_find_tensor(m, names[i]).data) tensor_add(m, names[i], 3, 0.5f);  // tied: none
    score1(st, &p, src, 4, tgt, 3, &h);
    cr_assert_eq(h.n_out, n_lp);
    memcpy(lp, h.token_logprobs, sizeof(float) * (size_t)n_lp);
    s2s_hypothesis_free(&h);
    s2s_state_free(st);
}

Test(decoding, weights_written_after_decoding_reach_the_next_call) {
    for (int a = 0; a < N_ARCHS; a++) {
        float fresh[4], after[4], before[4];
        s2s_model *m = make_model(&ARCHS[a], 900 + (uint64_t)a);
        score_after_writes(m, false, fresh, 4);
        s2s_model_free(m);
        m = make_model(&ARCHS[a], 900 + (uint64_t)a);
        s2s_state *st;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        s2s_decode_params p = params(m, 1, false);
        s2s_hypothesis h;
        score1(st, &p, (int[]){5, 6, 7, 8}, 4, (int[]){5, 6, 7}, 3, &h);
        memcpy(before, h.token_logprobs, sizeof before);
        s2s_hypothesis_free(&h);
        s2s_state_free(st);
        score_after_writes(m, true, after, 4);
        s2s_model_free(m);
        cr_assert_gt(max_abs_diff(fresh, before, 4), 1e-4f, "arch %d: the writes changed nothing",
                     a);
        cr_assert_leq(max_abs_diff(fresh, after, 4), 1e-6f, "arch %d: decoding used stale weights",
                      a);
    }
}

// ---- non-finite models ----

// A weight that is NaN or +Inf makes every log-prob row NaN. Every search
// must then fail with S2S_ERR_INVALID (decode.h), read nothing out of
// bounds (the suite runs under ASan) and leave no half-made hypothesis.
// The bad value goes straight into the model's block (model_internal.h),
// before the first decoding call makes its copy, so no loader is involved.
Test(decoding, non_finite_weights_fail_every_search_cleanly) {
    static const float bad[] = {NAN, INFINITY};
    static const struct {
        const char *name;
        int beam, topk;
        float temperature;
    } searches[] = {{"greedy", 1, 1, 1.0f}, {"sampling top-0", 1, 0, 1.0f},
                    {"sampling top-3", 1, 3, 0.7f}, {"beam 3", 3, 1, 1.0f}};
    for (int k = 0; k < 2; k++) {
        s2s_model *m = make_model(&ARCHS[0], 1100 + (uint64_t)k);
        m->gen_b[5] = bad[k];
        s2s_state *st;
        cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
        corpus c;
        make_corpus(&c, m);
        for (size_t s = 0; s < sizeof searches / sizeof searches[0]; s++) {
            s2s_decode_params p = params(m, 2, s < 3);
            p.decode.beam_size = searches[s].beam;
            p.decode.n_best = searches[s].beam > 1 ? 2 : 1;
            p.decode.sampling_topk = searches[s].topk;
            p.decode.temperature = searches[s].temperature;
            s2s_hypothesis h[NB * 2];
            memset(h, 0x5a, sizeof h);
            cr_assert_eq(s2s_translate(st, &p, c.s, SRC_LEN, NB, h), S2S_ERR_INVALID,
                         "%s, weight %g", searches[s].name, (double)bad[k]);
            cr_assert(strstr(s2s_last_error(), "no finite log-prob"), "%s", s2s_last_error());
            for (int i = 0; i < NB * p.decode.n_best; i++) {
                cr_assert_null(h[i].ids, "%s: hypothesis %d kept", searches[s].name, i);
                cr_assert_null(h[i].cross_attn);
            }
        }
        s2s_decode_params p = params(m, 2, false);
        s2s_hypothesis h[NB];
        cr_assert_eq(s2s_score(st, &p, c.s, SRC_LEN, c.t, TGT_LEN, NB, h), S2S_ERR_INVALID);
        for (int i = 0; i < NB; i++) cr_assert_null(h[i].ids);
        s2s_state_free(st);
        s2s_model_free(m);
    }
}

// Compute type bf16 runs products of more than one row in bf16 (the
// encoder's attention, cross-attention's K/V, Q and output, the fold,
// forced decoding's self-attention; layers/transformer.c):
// forced-decoding log-probs stay within bf16's rounding of fp32's, and are
// not fp32's (the products did change), folded or not; beam search runs.
Test(decoding, bf16_products_stay_near_fp32) {
    for (int a = 0; a < N_ARCHS; a++) {
        s2s_model *m = make_model(&ARCHS[a], 610 + (uint64_t)a);
        scramble_vectors(m);
        int src[NS][20], tgt[NS][12], slen[NS], tlen[NS];
        const int *s[NS], *t[NS];
        for (int i = 0; i < NS; i++) {
            slen[i] = 2 + (int)(rnd() % 18), tlen[i] = 2 + (int)(rnd() % 10);
            fill_ids(src[i], slen[i], vs_of(m));
            fill_ids(tgt[i], tlen[i], vt_of(m));
            s[i] = src[i], t[i] = tgt[i];
        }
        for (int fold = 0; fold < 2; fold++) {
            s2s_hypothesis h[2][NS];
            s2s_decode_params p = params(m, NS, true);
            for (int type = 0; type < 2; type++) {
                cr_assert_eq(s2s_model_set_compute_type(m, type ? S2S_COMPUTE_BF16 : S2S_COMPUTE_FP32),
                             S2S_OK);
                s2s_state *st;
                cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
                s2s_state_debug hooks = {.fold_mode = fold ? S2S_FOLD_ALWAYS : S2S_FOLD_NEVER};
                st->debug = &hooks;
                cr_assert_eq(s2s_score(st, &p, s, slen, t, tlen, NS, h[type]), S2S_OK, "%s",
                             s2s_last_error());
                if (type) {  // beams, with their cross-attention of K rows
                    s2s_decode_params pb = p;
                    pb.decode.beam_size = 4;
                    s2s_hypothesis hb[NS];
                    cr_assert_eq(s2s_translate(st, &pb, s, slen, NS, hb), S2S_OK, "%s",
                                 s2s_last_error());
                    for (int i = 0; i < NS; i++) {
                        cr_assert_gt(hb[i].n_out, 0);
                        cr_assert(isfinite(hb[i].score));
                        s2s_hypothesis_free(&hb[i]);
                    }
                }
                s2s_state_free(st);
            }
            float worst = 0, most = 0;
            for (int i = 0; i < NS; i++) {
                for (int j = 0; j < h[0][i].n_out; j++) {
                    float x = h[0][i].token_logprobs[j], y = h[1][i].token_logprobs[j];
                    cr_assert_leq(fabsf(x - y), 0.05f + 0.02f * fabsf(x),
                                  "arch %d fold %d sentence %d token %d: %g vs %g", a, fold, i, j,
                                  (double)x, (double)y);
                    worst = fabsf(x - y) > worst ? fabsf(x - y) : worst;
                }
                int64_t n = (int64_t)h[0][i].layers * h[0][i].heads * h[0][i].n_out * h[0][i].n_src;
                float e = max_abs_diff(h[0][i].cross_attn, h[1][i].cross_attn, n);
                most = e > most ? e : most;
                s2s_hypothesis_free(&h[0][i]);
                s2s_hypothesis_free(&h[1][i]);
            }
            cr_assert_gt(worst, 1e-6f, "arch %d fold %d: bf16 gave fp32's log-probs", a, fold);
            cr_assert_leq(most, 0.05f, "arch %d fold %d: cross-attention maps differ by %g", a,
                          fold, (double)most);
        }
        s2s_model_free(m);
    }
}

// ---- text in, text out (s2s_line_prepare, s2s_translate_lines) ----

#define ZH_EN_MODEL S2S_SOURCE_DIR "/models/zh-en.safetensors"
#define EN_ZH_MODEL S2S_SOURCE_DIR "/models/en-zh.safetensors"

// Translates text as one sentence with s2s_translate: what each sentence
// of a split line must give.
static void translate_alone(const s2s_model *m, s2s_state *st, const s2s_decode_params *p,
                            const char *text, s2s_hypothesis *out, s2s_tokens *t) {
    cr_assert_eq(s2s_tokenize(s2s_model_src_vocab(m), text, t), S2S_OK);
    const int *src[1] = {t->ids};
    cr_assert_eq(s2s_translate(st, p, src, &t->n, 1, out), S2S_OK);
}

// A line of two sentences gives each sentence's translation alone, joined
// by a space (English target); its j-th hypothesis joins the sentences'
// j-th and sums their scores; an empty line gets none.
Test(decoding, a_line_is_its_sentences_translated_alone_and_joined) {
    s2s_model *m;
    s2s_state *st;
    cr_assert_eq(s2s_model_load(&m, ZH_EN_MODEL), S2S_OK);
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(m);
    p.decode.beam_size = 4;
    p.decode.n_best = 2;
    const char *pieces[2] = {"我爱吃苹果。", "他明天看书吗？"};
    s2s_line l[3];
    cr_assert_eq(s2s_line_prepare(m, "我爱吃苹果。他明天看书吗？", /*split=*/true, &l[0]), S2S_OK);
    cr_assert_eq(s2s_line_prepare(m, "", /*split=*/true, &l[1]), S2S_OK);
    cr_assert_eq(s2s_line_prepare(m, "我爱吃苹果。他明天看书吗？", /*split=*/false, &l[2]), S2S_OK);
    cr_assert_eq(l[0].n_sentences, 2);
    cr_assert_eq(l[1].n_sentences, 1);
    cr_assert_eq(l[2].n_sentences, 1);
    cr_assert_eq(l[0].sentences[1].span.start, strlen(pieces[0]));
    cr_assert_eq(s2s_translate_lines(st, &p, l, 3), S2S_OK);

    s2s_hypothesis alone[2][2] = {0};
    s2s_tokens t[2] = {0};
    for (int i = 0; i < 2; i++) translate_alone(m, st, &p, pieces[i], alone[i], &t[i]);
    const s2s_vocab *tv = s2s_model_tgt_vocab(m);
    cr_assert_eq(l[0].n_hyps, 2);
    for (int j = 0; j < 2; j++) {
        char *a = s2s_detokenize(tv, alone[0][j].ids, alone[0][j].n);
        char *b = s2s_detokenize(tv, alone[1][j].ids, alone[1][j].n);
        char want[512];
        snprintf(want, sizeof want, "%s %s", a, b);
        cr_assert_str_eq(l[0].out[j].text, want);
        cr_assert_str_eq(l[0].sentences[0].out[j].text, a);
        cr_assert_eq(l[0].sentences[1].hyps[j].n, alone[1][j].n);
        cr_assert_eq(l[0].out[j].n, alone[0][j].n + alone[1][j].n);
        cr_assert_float_eq(l[0].out[j].score, (double)alone[0][j].score + alone[1][j].score, 1e-4);
        free(a);
        free(b);
    }
    cr_assert_str_eq(l[0].out[0].text, "I love to eat apples. Will he read books tomorrow?");
    cr_assert_eq(l[1].n_hyps, 0, "an empty line has no hypotheses");
    cr_assert_eq(l[1].sentences[0].n_hyps, 0);
    cr_assert_eq(l[2].sentences[0].src.n, t[0].n + t[1].n, "without split: one sentence");
    cr_assert_str_neq(l[2].out[0].text, l[0].out[0].text, "decoded whole, the line is merged");

    // Translating again replaces the results.
    p.decode.n_best = p.decode.beam_size = 1;
    cr_assert_eq(s2s_translate_lines(st, &p, l, 1), S2S_OK);
    cr_assert_eq(l[0].n_hyps, 1);
    cr_assert_str_eq(l[0].out[0].text, "I love to eat apples. Will he read books tomorrow?");
    for (int i = 0; i < 3; i++) s2s_line_free(&l[i]);
    for (int i = 0; i < 2; i++) {
        s2s_tokens_free(&t[i]);
        for (int j = 0; j < 2; j++) s2s_hypothesis_free(&alone[i][j]);
    }
    s2s_state_free(st);
    s2s_model_free(m);
}

// Chinese sentences join without a space; an unknown word is copied
// into both the text and the tokens (replace_unknowns); a sentence longer
// than the model takes fails the call and leaves no hypotheses.
Test(decoding, lines_join_chinese_without_a_space_and_copy_unknown_words) {
    s2s_model *m;
    s2s_state *st;
    cr_assert_eq(s2s_model_load(&m, EN_ZH_MODEL), S2S_OK);
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(m);
    s2s_line l;
    cr_assert_eq(s2s_line_prepare(m, "I love apples. I love pizza.", /*split=*/true, &l), S2S_OK);
    cr_assert_eq(l.n_sentences, 2);
    cr_assert_eq(s2s_translate_lines(st, &p, &l, 1), S2S_OK);
    char want[512];
    snprintf(want, sizeof want, "%s%s", l.sentences[0].out[0].text, l.sentences[1].out[0].text);
    cr_assert_str_eq(l.out[0].text, want);
    cr_assert(strstr(l.out[0].text, "pizza"), "%s", l.out[0].text);
    bool copied = false;
    for (int x = 0; x < l.out[0].n; x++) copied = copied || !strcmp(l.out[0].tokens[x], "pizza");
    cr_assert(copied, "the copied word is a token of the line too");
    s2s_line_free(&l);

    char *longer = malloc(4096);
    strcpy(longer, "I");
    for (int k = 0; k < 100; k++) strcat(longer, " love");
    cr_assert_eq(s2s_line_prepare(m, longer, /*split=*/true, &l), S2S_OK);
    cr_assert_gt(l.sentences[0].src.n, s2s_model_get_config(m)->model.max_len - 1);
    cr_assert_eq(s2s_translate_lines(st, &p, &l, 1), S2S_ERR_INVALID);
    cr_assert_eq(l.n_hyps, 0);
    cr_assert_null(l.sentences[0].hyps);
    s2s_line_free(&l);
    free(longer);
    cr_assert_eq(s2s_line_prepare(m, "bad \xff utf-8", /*split=*/true, &l), S2S_ERR_INVALID);
    s2s_line_free(&l);
    s2s_state_free(st);
    s2s_model_free(m);
}

// A line in the model's other language is said to be so, once
// (looks_like, language_warning); a line of the source language with an
// unknown word, a line of punctuation and an empty line are not.
Test(decoding, a_line_in_the_other_language_says_so) {
    s2s_model *zh_en, *en_zh;
    cr_assert_eq(s2s_model_load(&zh_en, ZH_EN_MODEL), S2S_OK);
    cr_assert_eq(s2s_model_load(&en_zh, EN_ZH_MODEL), S2S_OK);
    s2s_line l;
    cr_assert_eq(s2s_line_prepare(zh_en, "I love to eat apples. Will he read books tomorrow?",
                                  /*split=*/true, &l), S2S_OK);
    cr_assert_eq(l.looks_like, S2S_LANG_EN);
    cr_assert_str_eq(l.language_warning,
                     "this looks like English; the model translates Chinese \xE2\x86\x92 English");
    cr_assert_eq(l.n_words, 10, "the two sentences' words, punctuation aside: %d", l.n_words);
    cr_assert_geq(2 * l.n_unknown, l.n_words);
    s2s_line_free(&l);
    cr_assert_null(l.language_warning);

    cr_assert_eq(s2s_line_prepare(en_zh, "我爱吃苹果。他明天看书吗？", /*split=*/true, &l), S2S_OK);
    cr_assert_eq(l.looks_like, S2S_LANG_ZH);
    cr_assert_str_eq(l.language_warning,
                     "this looks like Chinese; the model translates English \xE2\x86\x92 Chinese");
    s2s_line_free(&l);

    // the source language, one word unknown; punctuation alone; nothing
    const char *not_other[] = {"我爱吃巧克力。", "？！。", ""};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(s2s_line_prepare(zh_en, not_other[k], /*split=*/true, &l), S2S_OK);
        cr_assert_eq(l.looks_like, S2S_LANG_NONE, "%s", not_other[k]);
        cr_assert_null(l.language_warning, "%s", not_other[k]);
        s2s_line_free(&l);
    }
    cr_assert_eq(s2s_line_prepare(zh_en, "我爱吃巧克力。", /*split=*/true, &l), S2S_OK);
    cr_assert_eq(l.n_words, 4);
    cr_assert_eq(l.n_unknown, 1);
    s2s_line_free(&l);
    // unknown to both vocabs (a made-up word in Latin letters): not the other language either
    cr_assert_eq(s2s_line_prepare(zh_en, "xqzvw blorptik", /*split=*/true, &l), S2S_OK);
    cr_assert_eq(l.n_unknown, 2);
    cr_assert_eq(l.looks_like, S2S_LANG_NONE);
    s2s_line_free(&l);
    s2s_model_free(zh_en);
    s2s_model_free(en_zh);
}

// ---- bounded self-attention states ----
//
// Steps keep a ring of w + 1 keys in a decoder layer that is local on
// every head, and a (H, Dh, Dh + 1) state in one that is linear on every
// head (layers/transformer.h). Against the full cache (s2s_state_debug.full_self_cache):
// greedy, sampling and beam search over 40+ steps (a ring of 4 wraps ten
// times), batches whose sentences leave at different steps, n-best lists
// with cross-attention maps; and the state of a bounded decoder does not
// grow with the target.

enum { LONG_LEN = 64, LONG_STEPS = 50 };

typedef struct dec_variant {
    const char *name;
    s2s_attn_type type;
    int window;
    int heads[4], n_heads;    // n_heads 0: every head
    int layers[4], n_layers;  // n_layers 0: every layer
    bool bounded[2];          // which of the two layers keep a bounded state
} dec_variant;

static const dec_variant DEC_VARIANTS[] = {
    {"local 3", S2S_ATTN_LOCAL, 3, {0}, 0, {0}, 0, {true, true}},
    {"linear", S2S_ATTN_LINEAR, 0, {0}, 0, {0}, 0, {true, true}},
    {"local 2 on heads 0, 1", S2S_ATTN_LOCAL, 2, {0, 1}, 2, {0}, 0, {false, false}},
    {"linear on heads 1, 3", S2S_ATTN_LINEAR, 0, {1, 3}, 2, {0}, 0, {false, false}},
    {"local 5 in layer 0", S2S_ATTN_LOCAL, 5, {0}, 0, {0}, 1, {true, false}},
    {"linear in layer 1", S2S_ATTN_LINEAR, 0, {0}, 0, {1}, 1, {false, true}},
};
#define N_DEC_VARIANTS ((int)(sizeof DEC_VARIANTS / sizeof DEC_VARIANTS[0]))

static s2s_model *make_variant_model(const arch *a, const dec_variant *v, uint64_t seed) {
    s2s_config c = arch_config(a, LONG_LEN);
    s2s_attention_config *d = &c.model.decoder_attention;
    d->type = v->type;
    if (v->type == S2S_ATTN_LOCAL) d->window = v->window;
    d->heads.n = v->n_heads;
    memcpy(d->heads.v, v->heads, sizeof v->heads);
    d->layers.n = v->n_layers;
    memcpy(d->layers.v, v->layers, sizeof v->layers);
    s2s_model *m = NULL;
    cr_assert_eq(s2s_model_init(&m, &c, seed), S2S_OK, "%s: %s", v->name, s2s_last_error());
    scramble_vectors(m);
    for (int l = 0; l < a->layers; l++)
        cr_assert_eq(s2s_self_state_of(m, l) != S2S_SELF_FULL, v->bounded[l], "%s, layer %d",
                     v->name, l);
    return m;
}

// Tokens equal, log-probs within 1e-4 (the ring sums its keys in another
// order, the linear state its products), cross maps within 1e-4.
static void assert_close_hyp(const s2s_hypothesis *x, const s2s_hypothesis *y, const char *what,
                             int i) {
    cr_assert_eq(x->ids != NULL, y->ids != NULL, "%s, hypothesis %d", what, i);
    if (!x->ids) return;
    cr_assert_eq(x->n, y->n, "%s, hypothesis %d: %d vs %d tokens", what, i, x->n, y->n);
    cr_assert_eq(x->n_out, y->n_out, "%s, hypothesis %d", what, i);
    for (int t = 0; t < x->n; t++)
        cr_assert_eq(x->ids[t], y->ids[t], "%s, hypothesis %d token %d", what, i, t);
    float e = max_abs_diff(x->token_logprobs, y->token_logprobs, x->n_out);
    cr_assert_leq(e, 1e-4f, "%s, hypothesis %d: token log-probs differ by %g", what, i, e);
    cr_assert_float_eq(x->logprob, y->logprob, 1e-3, "%s, hypothesis %d", what, i);
    cr_assert_eq(x->cross_attn != NULL, y->cross_attn != NULL);
    if (x->cross_attn) {
        e = max_abs_diff(x->cross_attn, y->cross_attn,
                         (int64_t)x->layers * x->heads * x->n_out * x->n_src);
        cr_assert_leq(e, 1e-4f, "%s, hypothesis %d: cross maps differ by %g", what, i, e);
    }
    if (x->self_attn) {
        e = max_abs_diff(x->self_attn, y->self_attn,
                         (int64_t)x->layers * x->heads * x->n_out * x->n_out);
        cr_assert_leq(e, 1e-4f, "%s, hypothesis %d: self maps differ by %g", what, i, e);
    }
}

enum { NLONG = 6 };

Test(decoding, bounded_self_attention_states_equal_the_full_cache) {
    const int archs[] = {1, 2};
    const int src_len[NLONG] = {20, 3, 14, 7, 24, 1};
    for (int ai = 0; ai < 2; ai++)
        for (int vi = 0; vi < N_DEC_VARIANTS; vi++) {
            const dec_variant *v = &DEC_VARIANTS[vi];
            s2s_model *m = make_variant_model(&ARCHS[archs[ai]], v, 500 + (uint64_t)(ai * 10 + vi));
            tensor_add(m, "generator.bias", S2S_EOS, -2.0f);  // long outputs, some </s>
            int src[NLONG][24];
            const int *s[NLONG];
            for (int i = 0; i < NLONG; i++) fill_ids(src[i], src_len[i], vs_of(m)), s[i] = src[i];
            // greedy, sampling with the guard, greedy with self maps (the
            // full cache either way), beams of 4 with 3-best and cross maps,
            // beams of 3 keeping finished sentences
            for (int mode = 0; mode < 5; mode++) {
                s2s_decode_params p = params(m, NLONG, mode == 2 || mode == 3);
                p.threads = 1;
                p.decode.max_len = LONG_STEPS;
                p.decode.max_len_ratio = 2.5f;  // limits 4..50 by source length: sentences leave
                p.decode.replace_unknowns = false;  // its forced pass would leave the state full
                if (mode == 1) {
                    p.decode.temperature = 0.8f, p.decode.sampling_topk = 0, p.decode.seed = 11;
                    p.decode.repetition_penalty = 1.3f, p.decode.no_repeat_ngram_size = 2;
                }
                p.want_self_attention = mode == 2;
                if (mode >= 3)
                    p.decode.beam_size = mode == 3 ? 4 : 3, p.decode.n_best = mode == 3 ? 3 : 1;
                int nh = NLONG * p.decode.n_best;
                s2s_hypothesis h[2][NLONG * 3];
                size_t bytes[2];
                for (int r = 0; r < 2; r++) {
                    s2s_state *st;
                    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
                    s2s_state_debug hooks = {.no_shrink = mode == 4, .full_self_cache = r == 1};
                    st->debug = &hooks;
                    cr_assert_eq(s2s_translate(st, &p, s, src_len, NLONG, h[r]), S2S_OK, "%s",
                                 s2s_last_error());
                    cr_assert_eq(st->bounded, r == 0 && mode != 2, "%s, mode %d", v->name, mode);
                    bytes[r] = s2s_state_bytes(st);
                    s2s_state_free(st);
                }
                char what[96];
                snprintf(what, sizeof what, "arch %d, %s, mode %d", archs[ai], v->name, mode);
                int longest = 0;
                for (int i = 0; i < nh; i++) {
                    assert_close_hyp(&h[0][i], &h[1][i], what, i);
                    if (h[0][i].ids && h[0][i].n_out > longest) longest = h[0][i].n_out;
                }
                cr_assert_geq(longest, 40, "%s: %d steps at most", what, longest);
                // a bounded state holds less than the cache of 50 positions
                if (mode != 2 && (v->bounded[0] || v->bounded[1]))
                    cr_assert_lt(bytes[0], bytes[1], "%s: %zu vs %zu bytes", what, bytes[0],
                                 bytes[1]);
                for (int r = 0; r < 2; r++)
                    for (int i = 0; i < nh; i++) s2s_hypothesis_free(&h[r][i]);
            }
            s2s_model_free(m);
        }
}

// The state of a sentence's steps (greedy and a beam of 4, no maps):
// constant in the target length where every layer is bounded, growing by
// each full layer's K/V of 2D floats a position (a sequence) otherwise;
// forced scoring and self-attention maps keep the full caches.
Test(decoding, bounded_decoder_state_does_not_grow_with_the_target) {
    for (int vi = 0; vi < N_DEC_VARIANTS; vi++) {
        const dec_variant *v = &DEC_VARIANTS[vi];
        s2s_model *m = make_variant_model(&ARCHS[2], v, 600 + (uint64_t)vi);
        int64_t d = m->cfg.model.d_model;
        int full_layers = !v->bounded[0] + !v->bounded[1];
        for (int K = 1; K <= 4; K += 3) {
            size_t b16 = s2s_state_bytes_for(m, 1, K, 10, 16, 1, false);
            size_t b512 = s2s_state_bytes_for(m, 1, K, 10, 512, 1, false);
            size_t b1024 = s2s_state_bytes_for(m, 1, K, 10, 1024, 1, false);
            if (full_layers == 0) {
                cr_assert_eq(b1024, b16, "%s, beam %d: %zu -> %zu bytes", v->name, K, b16, b1024);
                continue;
            }
            // a position of a full layer: K/V for each sequence, beam
            // reorder's copy, and a weight per head (of 4) and sequence
            size_t per_pos = (size_t)(full_layers * K * 2 * d + (K > 1 ? K * 2 * d : 0) + K * 4) *
                             sizeof(float);
            cr_assert_eq(b1024 - b512, per_pos * 512, "%s, beam %d: %zu -> %zu bytes", v->name,
                         K, b512, b1024);
        }
        // maps or forced scoring: every layer's cache grows
        cr_assert_gt(s2s_state_bytes_for(m, 1, 1, 10, 1024, 1, true),
                     s2s_state_bytes_for(m, 1, 1, 10, 16, 1, true) +
                         (size_t)(2 * 1008 * 2 * d) * sizeof(float));
        s2s_model_free(m);
    }
}
