// Beam search, n-best lists and sampling: stated properties against greedy
// decoding and forced decoding (s2s_score), on small random models.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoding/search.h"
#include "s2s/s2s.h"

#define N_SENT 12

typedef struct fixture {
    s2s_model *m;
    s2s_state *st;
    int ids[N_SENT][10], len[N_SENT];
    const int *src[N_SENT];
} fixture;

static fixture fx;

// generator.bias = a fixed pattern over the target vocabulary, then token
// `favour` (if >= 0) at favour_bias and <unk> at unk_bias (unless NaN).
static void set_output_bias(int favour, float favour_bias, float unk_bias) {
    s2s_tensor_info gb = s2s_model_find_tensor(fx.m, "generator.bias");
    float bias[4096];
    cr_assert_leq(gb.shape[0], 4096);
    for (int64_t v = 0; v < gb.shape[0]; v++) bias[v] = (float)((v * 7919) % 13) * 0.3f;
    if (favour >= 0) bias[favour] = favour_bias;
    if (!isnan(unk_bias)) bias[S2S_UNK] = unk_bias;
    cr_assert_eq(s2s_model_set_tensor(fx.m, gb.name, bias, (size_t)gb.shape[0]), S2S_OK);
}

// A random model from a test config; biases and norms jittered so that the
// distributions are peaked enough for searches to differ.
static void setup(const char *config, uint64_t seed) {
    s2s_config c;
    s2s_config_default(&c);
    char path[512];
    snprintf(path, sizeof path, "%s/ref/%s", S2S_TEST_DATA, config);
    cr_assert_eq(s2s_config_load_file(&c, path), S2S_OK, "%s", s2s_last_error());
    c.decode.max_len = 10;
    cr_assert_eq(s2s_model_init(&fx.m, &c, seed), S2S_OK, "%s", s2s_last_error());
    set_output_bias(-1, 0.0f, NAN);
    cr_assert_eq(s2s_state_new(&fx.st, fx.m), S2S_OK);
    int vs = s2s_vocab_size(s2s_model_src_vocab(fx.m));
    for (int i = 0; i < N_SENT; i++) {
        fx.len[i] = 1 + (i * 5) % 9;
        for (int j = 0; j < fx.len[i]; j++) fx.ids[i][j] = 4 + (i * 31 + j * 17) % (vs - 4);
        fx.src[i] = fx.ids[i];
    }
}

static void setup_default(void) { setup("pre_relu_tied.yaml", 7); }

static void teardown(void) {
    s2s_state_free(fx.st);
    s2s_model_free(fx.m);
}

TestSuite(search, .init = setup_default, .fini = teardown);

static s2s_hypothesis *translate(s2s_decode_params p) {
    s2s_hypothesis *h = calloc((size_t)(N_SENT * p.decode.n_best), sizeof *h);
    cr_assert_eq(s2s_translate(fx.st, &p, fx.src, fx.len, N_SENT, h), S2S_OK, "%s",
                 s2s_last_error());
    return h;
}

static void free_all(s2s_hypothesis *h, int n) {
    for (int i = 0; i < n; i++) s2s_hypothesis_free(&h[i]);
    free(h);
}

static void assert_same(const s2s_hypothesis *a, const s2s_hypothesis *b, float tol, int i) {
    cr_assert_eq(a->n, b->n, "sentence %d: %d vs %d tokens", i, a->n, b->n);
    cr_assert_eq(a->n_out, b->n_out, "sentence %d", i);
    for (int t = 0; t < a->n; t++) cr_assert_eq(a->ids[t], b->ids[t], "sentence %d token %d", i, t);
    for (int t = 0; t < a->n_out; t++)
        cr_assert_float_eq(a->token_logprobs[t], b->token_logprobs[t], tol, "sentence %d", i);
}

// The config's decoding without the repetition guard, the no-stutter rule
// and <unk> replacing, which tests below turn on themselves.
static s2s_decode_params base(void) {
    s2s_decode_params p = s2s_decode_default_params(fx.m);
    p.threads = 1;
    p.decode.repetition_penalty = 1.0f;
    p.decode.no_repeat_ngram_size = 0;
    p.decode.no_immediate_repeat = false;
    p.decode.replace_unknowns = false;
    return p;
}

// s2s_translate sends beam_size 1 to the greedy loop; this runs the beam
// search code itself with one beam and compares it with greedy decoding.
static void assert_one_beam_is_greedy(const s2s_decode_params *p) {
    s2s_hypothesis *g = translate(*p);
    s2s_hypothesis *b = calloc(N_SENT, sizeof *b);
    s2s_order *order;
    cr_assert_eq(s2s_sort_sentences(&order, fx.len, N_SENT), S2S_OK);
    cr_assert_eq(s2s_beam_batch(fx.st, p, order, N_SENT, fx.src, fx.len, b), S2S_OK, "%s",
                 s2s_last_error());
    for (int i = 0; i < N_SENT; i++) assert_same(&g[i], &b[i], 1e-5f, i);
    free(order);
    free_all(g, N_SENT);
    free_all(b, N_SENT);
}

Test(search, beam_1_equals_greedy) {
    s2s_decode_params p = base();
    assert_one_beam_is_greedy(&p);
}

Test(search, beam_scores_at_least_greedy_under_the_same_length_penalty) {
    for (int k = 2; k <= 5; k += 3) {
        s2s_decode_params g = base(), b = base();
        g.decode.length_penalty = b.decode.length_penalty = 1.0f;
        b.decode.beam_size = k;
        s2s_hypothesis *hg = translate(g), *hb = translate(b);
        double sum_g = 0, sum_b = 0;
        int better_or_equal = 0;
        for (int i = 0; i < N_SENT; i++) {
            sum_g += hg[i].score;
            sum_b += hb[i].score;
            better_or_equal += hb[i].score >= hg[i].score - 1e-5f;
        }
        cr_assert_geq(sum_b, sum_g - 1e-4, "beam %d: mean %g vs greedy %g", k, sum_b, sum_g);
        cr_assert_geq(better_or_equal, N_SENT - 1, "beam %d better on %d of %d", k,
                      better_or_equal, N_SENT);
        free_all(hg, N_SENT);
        free_all(hb, N_SENT);
    }
}

Test(search, n_best_is_sorted_and_matches_forced_decoding) {
    s2s_decode_params p = base();
    p.decode.beam_size = 4;
    p.decode.n_best = 4;
    p.decode.length_penalty = 0.6f;
    s2s_hypothesis *h = translate(p);
    for (int i = 0; i < N_SENT; i++) {
        for (int j = 0; j < 4; j++) {
            s2s_hypothesis *a = &h[i * 4 + j];
            cr_assert_not_null(a->ids, "sentence %d has %d hypotheses", i, j);
            if (j > 0) cr_assert_geq(h[i * 4 + j - 1].score, a->score, "sentence %d", i);
            cr_assert_float_eq(a->score, a->logprob / powf((float)a->n_out, 0.6f), 1e-5);
            // the same hypothesis forced through s2s_score: same log-probs
            s2s_hypothesis f;
            const int *tgt[1] = {a->ids};
            s2s_decode_params sp = base();
            cr_assert_eq(s2s_score(fx.st, &sp, &fx.src[i], &fx.len[i], tgt, &a->n, 1, &f), S2S_OK);
            bool ended = a->n_out == a->n + 1;
            for (int t = 0; t < a->n_out; t++)
                cr_assert_float_eq(a->token_logprobs[t], f.token_logprobs[t], 1e-4,
                                   "sentence %d hyp %d token %d", i, j, t);
            if (ended) cr_assert_float_eq(a->logprob, f.logprob, 1e-3);
            s2s_hypothesis_free(&f);
        }
        for (int j = 1; j < 4; j++) {  // distinct hypotheses
            s2s_hypothesis *a = &h[i * 4], *b = &h[i * 4 + j];
            cr_assert(a->n != b->n || memcmp(a->ids, b->ids, sizeof(int) * (size_t)a->n) != 0,
                      "sentence %d: hypotheses 0 and %d are equal", i, j);
        }
    }
    free_all(h, N_SENT * 4);
}

Test(search, batched_equals_unbatched_for_every_strategy) {
    s2s_decode_params ps[3] = {base(), base(), base()};
    ps[1].decode.beam_size = 3;
    ps[1].decode.n_best = 2;
    ps[2].decode.sampling_topk = 0;
    ps[2].decode.seed = 5;
    for (int s = 0; s < 3; s++) {
        s2s_decode_params one = ps[s], many = ps[s];
        one.max_batch = 1;
        many.max_batch = 5;
        s2s_hypothesis *a = translate(one), *b = translate(many);
        for (int i = 0; i < N_SENT * one.decode.n_best; i++) assert_same(&a[i], &b[i], 1e-4f, i);
        free_all(a, N_SENT * one.decode.n_best);
        free_all(b, N_SENT * one.decode.n_best);
    }
}

// 5 threads do not divide 12 sentences: the last threads get fewer.
Test(search, threads_split_a_batch_without_changing_results) {
    static const int threads[] = {2, 5};
    for (int k = 0; k < 2; k++) {
        s2s_decode_params one = base(), many = base();
        one.decode.beam_size = many.decode.beam_size = 3;
        many.threads = threads[k];
        s2s_hypothesis *a = translate(one), *b = translate(many);
        for (int i = 0; i < N_SENT; i++) assert_same(&a[i], &b[i], 1e-4f, i);
        free_all(a, N_SENT);
        free_all(b, N_SENT);
    }
}

// s2s_score splits across threads with the same runner as s2s_translate.
Test(search, threads_split_scoring_without_changing_results) {
    s2s_decode_params one = base(), many = base();
    many.threads = 5;
    int vt = s2s_vocab_size(s2s_model_tgt_vocab(fx.m)), tgt[N_SENT][10];
    const int *t[N_SENT];
    for (int i = 0; i < N_SENT; i++) {
        for (int j = 0; j < fx.len[i]; j++) tgt[i][j] = 4 + fx.ids[i][j] % (vt - 4);
        t[i] = tgt[i];
    }
    s2s_hypothesis a[N_SENT], b[N_SENT];
    cr_assert_eq(s2s_score(fx.st, &one, fx.src, fx.len, t, fx.len, N_SENT, a), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert_eq(s2s_score(fx.st, &many, fx.src, fx.len, t, fx.len, N_SENT, b), S2S_OK);
    for (int i = 0; i < N_SENT; i++) {
        assert_same(&a[i], &b[i], 1e-5f, i);
        s2s_hypothesis_free(&a[i]);
        s2s_hypothesis_free(&b[i]);
    }
}

// NaN log-probs are never picked; a row with nothing finite is reported.
Test(search, finite_row_drops_nan_and_says_when_nothing_is_left) {
    float row[5] = {-1.0f, NAN, -INFINITY, -2.5f, NAN};
    cr_assert(s2s_finite_row(row, 5));
    cr_assert(row[1] == -INFINITY && row[4] == -INFINITY);
    cr_assert(row[0] == -1.0f && row[3] == -2.5f && row[2] == -INFINITY);
    float none[3] = {NAN, -INFINITY, NAN};
    cr_assert_not(s2s_finite_row(none, 3));
    for (int v = 0; v < 3; v++) cr_assert(none[v] == -INFINITY);
}

Test(search, sampling_repeats_with_a_seed_and_varies_without) {
    s2s_decode_params p = base();
    p.decode.sampling_topk = 0;
    p.decode.temperature = 2.0f;
    p.decode.seed = 11;
    s2s_hypothesis *a = translate(p), *b = translate(p);
    p.decode.seed = 12;
    s2s_hypothesis *c = translate(p);
    int differ = 0;
    for (int i = 0; i < N_SENT; i++) {
        assert_same(&a[i], &b[i], 0, i);
        differ += a[i].n != c[i].n || memcmp(a[i].ids, c[i].ids, sizeof(int) * (size_t)a[i].n);
    }
    cr_assert_gt(differ, N_SENT / 2, "another seed changed only %d of %d", differ, N_SENT);
    free_all(a, N_SENT), free_all(b, N_SENT), free_all(c, N_SENT);
}

Test(search, sampling_at_temperature_near_zero_is_greedy) {
    s2s_decode_params g = base(), p = base();
    p.decode.sampling_topk = 0;
    p.decode.temperature = 1e-4f;
    p.decode.seed = 3;
    s2s_hypothesis *a = translate(g), *b = translate(p);
    for (int i = 0; i < N_SENT; i++) assert_same(&a[i], &b[i], 1e-6f, i);
    free_all(a, N_SENT), free_all(b, N_SENT);
}

Test(search, topk_1_and_topp_tiny_are_greedy) {
    s2s_decode_params g = base(), p = base();
    p.decode.sampling_topk = 0;
    p.decode.sampling_topp = 1e-6f;
    p.decode.seed = 9;
    s2s_hypothesis *a = translate(g), *b = translate(p);
    for (int i = 0; i < N_SENT; i++) assert_same(&a[i], &b[i], 1e-6f, i);
    free_all(a, N_SENT), free_all(b, N_SENT);
}

Test(search, length_limits_and_min_len) {
    s2s_decode_params p = base();
    p.decode.beam_size = 3;
    p.decode.min_len = 4;
    p.decode.max_len_ratio = 1.0f;
    s2s_hypothesis *h = translate(p);
    for (int i = 0; i < N_SENT; i++) {
        int limit = fx.len[i] + 1 < 10 ? fx.len[i] + 1 : 10;
        cr_assert_leq(h[i].n_out, limit, "sentence %d: %d outputs over the limit %d", i, h[i].n_out, limit);
        if (h[i].n_out == h[i].n + 1) cr_assert_geq(h[i].n, p.decode.min_len, "sentence %d", i);
    }
    free_all(h, N_SENT);
}

Test(search, bad_parameters_are_refused) {
    s2s_hypothesis h[N_SENT * 4];
    s2s_decode_params p = base();
    p.decode.n_best = 3;  // more than beam_size 1
    cr_assert_eq(s2s_translate(fx.st, &p, fx.src, fx.len, N_SENT, h), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "n_best"));
    p = base();
    p.decode.sampling_topp = 0;
    cr_assert_eq(s2s_translate(fx.st, &p, fx.src, fx.len, N_SENT, h), S2S_ERR_INVALID);
}

Test(search, self_attention_maps_of_steps_equal_those_of_the_full_pass) {
    s2s_decode_params p = base();
    p.want_attention = p.want_self_attention = true;
    p.max_batch = 4;
    s2s_hypothesis *g = translate(p);
    for (int i = 0; i < N_SENT; i++) {
        s2s_hypothesis f;
        const int *tgt[1] = {g[i].ids};
        cr_assert_eq(s2s_score(fx.st, &p, &fx.src[i], &fx.len[i], tgt, &g[i].n, 1, &f), S2S_OK);
        // greedy may stop at max_len without </s>: then the forced pass has
        // one row more, and the greedy rows are its first n
        int n = g[i].n_out, nf = f.n_out, ns = g[i].n_src;
        int64_t self = (int64_t)g[i].layers * g[i].heads * n * n;
        int64_t enc = (int64_t)g[i].enc_layers * g[i].heads * ns * ns;
        for (int64_t plane = 0; plane < self / (n * n); plane++)
            for (int r = 0; r < n; r++)
                for (int c = 0; c < n; c++)
                    cr_assert_float_eq(g[i].self_attn[(plane * n + r) * n + c],
                                       f.self_attn[(plane * nf + r) * nf + c], 1e-5,
                                       "sentence %d", i);
        for (int64_t k = 0; k < enc; k++)
            cr_assert_float_eq(g[i].enc_attn[k], f.enc_attn[k], 1e-5, "sentence %d", i);
        for (int64_t r = 0; r < self / n; r++) {  // rows: distributions over 0..t
            double sum = 0;
            int t = (int)(r % n);
            for (int j = 0; j < n; j++) {
                float w = g[i].self_attn[r * n + j];
                if (j > t) cr_assert_eq(w, 0.0f, "sentence %d row %d col %d", i, t, j);
                sum += w;
            }
            cr_assert_float_eq(sum, 1.0, 1e-5);
        }
        for (int64_t r = 0; r < enc / ns; r++) {
            double sum = 0;
            for (int j = 0; j < ns; j++) sum += g[i].enc_attn[r * ns + j];
            cr_assert_float_eq(sum, 1.0, 1e-5);
        }
        s2s_hypothesis_free(&f);
    }
    free_all(g, N_SENT);
}

Test(search, beam_search_refuses_self_attention_maps) {
    s2s_decode_params p = base();
    p.decode.beam_size = 2;
    p.want_self_attention = true;
    s2s_hypothesis h[N_SENT];
    cr_assert_eq(s2s_translate(fx.st, &p, fx.src, fx.len, N_SENT, h), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "cross-attention only"));
}

// ---- the repetition guard ----

// CTranslate2's two rules, written out plainly over a double row.
static void ref_guard(double *row, int V, const int *prev, int t, float penalty, int ngram) {
    for (int v = 0; v < V; v++) {
        bool seen = false;
        for (int i = 0; i < t; i++) seen = seen || prev[i] == v;
        if (seen && penalty != 1.0f) row[v] = row[v] > 0 ? row[v] / penalty : row[v] * penalty;
    }
    if (ngram <= 0) return;
    for (int v = 0; v < V; v++) {
        // would prev[t-n+1..t) + v be an n-gram already in prev?
        if (t + 1 < ngram) continue;
        for (int i = 0; i + ngram <= t; i++) {
            bool same = prev[i + ngram - 1] == v;
            for (int k = 0; k < ngram - 1 && same; k++) same = prev[i + k] == prev[t - ngram + 1 + k];
            if (same) row[v] = -INFINITY;
        }
    }
}

// Greedy decoding of sentence i with the guard, re-running the decoder over
// the whole prefix at every step (no self-attention cache). Returns the
// tokens (</s> left out) in ids and their log-probs, </s>'s included.
static int ref_greedy(const s2s_decode_params *p, int i, int *ids, float *lps, int *n_out) {
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, fx.m), S2S_OK);
    int V = s2s_vocab_size(s2s_model_tgt_vocab(fx.m)), S = fx.len[i] + 1;
    int T = s2s_length_limit(p, fx.m, fx.len[i]);
    cr_assert_eq(s2s_state_reserve(st, 1, 1, S, T, T, false), S2S_OK);
    s2s_order o = {fx.len[i], i};
    cr_assert_eq(s2s_encode_batch(st, &o, 1, fx.src, fx.len, S, false), S2S_OK);
    double *row = malloc(sizeof(double) * (size_t)V);
    int n = 0;
    *n_out = 0;
    for (int t = 0; t < T; t++) {
        st->ids[0] = S2S_BOS;
        for (int k = 0; k < t; k++) st->ids[k + 1] = ids[k];
        s2s_dec_pos pos = {.t0 = 0, .tq = t + 1, .t_alloc = T, .beams = 1};
        cr_assert_eq(s2s_decode_rows(st, 1, S, pos, 0), S2S_OK);
        for (int v = 0; v < V; v++) row[v] = st->logits[(int64_t)t * V + v];
        ref_guard(row, V, ids, t, p->decode.repetition_penalty, p->decode.no_repeat_ngram_size);
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++) mx = row[v] > mx ? row[v] : mx;
        for (int v = 0; v < V; v++) sum += exp(row[v] - mx);
        int best = -1;
        // no_immediate_repeat for known tokens, after the log-probs (a mask)
        bool src_repeats = false;
        for (int j = 0; j + 1 < fx.len[i]; j++)
            src_repeats = src_repeats || (fx.src[i][j] == fx.src[i][j + 1] && fx.src[i][j] != S2S_UNK);
        int banned = p->decode.no_immediate_repeat && t > 0 && ids[t - 1] != S2S_UNK && !src_repeats
                         ? ids[t - 1] : -1;
        for (int v = 0; v < V; v++) {
            row[v] -= mx + log(sum);
            bool allowed = v != S2S_PAD && v != S2S_BOS &&
                           (v != S2S_EOS || t >= p->decode.min_len) && v != banned;
            if (allowed && (best < 0 || row[v] > row[best])) best = v;
        }
        lps[(*n_out)++] = (float)row[best];
        if (best == S2S_EOS) break;
        ids[n++] = best;
    }
    free(row);
    s2s_state_free(st);
    return n;
}

static bool has_repeated_ngram(const int *ids, int n, int size) {
    for (int a = 0; a + size <= n; a++)
        for (int b = a + 1; b + size <= n; b++)
            if (!memcmp(ids + a, ids + b, sizeof(int) * (size_t)size)) return true;
    return false;
}

Test(search, repetition_guard_matches_a_plain_loop_without_the_cache) {
    static const struct { float penalty; int ngram; } cases[] = {{1.5f, 0}, {1.0f, 2}, {1.3f, 3}, {1.0f, 1}};
    s2s_decode_params off = base();
    off.decode.max_len = 12;
    s2s_hypothesis *plain = translate(off);
    int changed = 0;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        s2s_decode_params p = off;
        p.decode.repetition_penalty = cases[c].penalty;
        p.decode.no_repeat_ngram_size = cases[c].ngram;
        s2s_hypothesis *h = translate(p);
        for (int i = 0; i < N_SENT; i++) {
            int ids[16], n_out;
            float lps[16];
            int n = ref_greedy(&p, i, ids, lps, &n_out);
            cr_assert_eq(h[i].n, n, "case %zu sentence %d: %d vs %d tokens", c, i, h[i].n, n);
            cr_assert_eq(h[i].n_out, n_out, "case %zu sentence %d", c, i);
            for (int t = 0; t < n; t++) cr_assert_eq(h[i].ids[t], ids[t], "case %zu sentence %d token %d", c, i, t);
            for (int t = 0; t < n_out; t++)
                cr_assert_float_eq(h[i].token_logprobs[t], lps[t], 1e-4, "case %zu sentence %d token %d", c, i, t);
            if (cases[c].ngram) cr_assert_not(has_repeated_ngram(h[i].ids, h[i].n, cases[c].ngram));
            changed += h[i].n != plain[i].n || memcmp(h[i].ids, plain[i].ids, sizeof(int) * (size_t)h[i].n);
        }
        free_all(h, N_SENT);
    }
    cr_assert_gt(changed, 0, "the guard changed no translation: the test proves nothing");
    free_all(plain, N_SENT);
}

Test(search, repetition_guard_in_beam_and_sampling) {
    s2s_decode_params p = base();
    p.decode.max_len = 12;
    p.decode.repetition_penalty = 1.4f;
    p.decode.no_repeat_ngram_size = 2;
    assert_one_beam_is_greedy(&p);  // the guard in the beam code, as in greedy
    s2s_hypothesis *g = translate(p);
    // every hypothesis of a wide beam and every sample obeys the n-gram rule
    p.decode.beam_size = 4;
    p.decode.n_best = 4;
    s2s_hypothesis *nb = translate(p);
    for (int i = 0; i < N_SENT * 4; i++)
        if (nb[i].ids) cr_assert_not(has_repeated_ngram(nb[i].ids, nb[i].n, 2), "hypothesis %d", i);
    free_all(nb, N_SENT * 4);
    p.decode.beam_size = p.decode.n_best = 1;
    p.decode.sampling_topk = 0;
    p.decode.temperature = 1.5f;
    for (int seed = 1; seed <= 5; seed++) {
        p.decode.seed = (int)seed;
        s2s_hypothesis *s = translate(p);
        for (int i = 0; i < N_SENT; i++) cr_assert_not(has_repeated_ngram(s[i].ids, s[i].n, 2));
        free_all(s, N_SENT);
    }
    // near-zero temperature samples what guarded greedy picks
    p.decode.temperature = 1e-4f;
    s2s_hypothesis *cold = translate(p);
    for (int i = 0; i < N_SENT; i++) assert_same(&g[i], &cold[i], 1e-5f, i);
    free_all(cold, N_SENT);
    free_all(g, N_SENT);
}

// ---- no stutter (decode.no_immediate_repeat) ----

static bool immediate_repeat(const int *ids, int n, bool unk_too) {
    for (int t = 0; t + 1 < n; t++)
        if (ids[t] == ids[t + 1] && (unk_too || ids[t] != S2S_UNK)) return true;
    return false;
}

// Fills row (V) with 0 and applies the rule; returns the tokens it banned
// as a bit set.
static unsigned banned_by_rule(const int *prev, int t, bool on, s2s_repeat_ctx r) {
    float row[16];
    for (int v = 0; v < 16; v++) row[v] = 0.0f;
    s2s_decode_params p = base();
    p.decode.no_immediate_repeat = on;
    s2s_mask_repeat(row, prev, t, &p, &r);
    unsigned bits = 0;
    for (int v = 0; v < 16; v++) {
        cr_assert(row[v] == 0.0f || row[v] == -INFINITY);
        if (row[v] == -INFINITY) bits |= 1u << v;
    }
    return bits;
}

Test(search, no_immediate_repeat_on_one_row) {
    int prev[] = {7, 9}, unk[] = {7, S2S_UNK};
    s2s_repeat_ctx plain = {false, -1, -1}, src_repeats = {true, -1, -1};
    cr_assert_eq(banned_by_rule(prev, 2, true, plain), 1u << 9, "the last token, only it");
    cr_assert_eq(banned_by_rule(prev, 2, false, plain), 0u, "off");
    cr_assert_eq(banned_by_rule(prev, 2, true, src_repeats), 0u, "the source repeats a token");
    cr_assert_eq(banned_by_rule(prev, 0, true, plain), 0u, "nothing before the first token");
    cr_assert_eq(banned_by_rule(prev, 1, true, plain), 1u << 7);
    // a <unk> after a <unk> copying the same source token, whatever the source
    cr_assert_eq(banned_by_rule(unk, 2, true, (s2s_repeat_ctx){false, 3, 3}), 1u << S2S_UNK);
    cr_assert_eq(banned_by_rule(unk, 2, true, (s2s_repeat_ctx){true, 3, 3}), 1u << S2S_UNK);
    cr_assert_eq(banned_by_rule(unk, 2, true, (s2s_repeat_ctx){false, 3, 4}), 0u, "another word");
    cr_assert_eq(banned_by_rule(unk, 2, true, (s2s_repeat_ctx){false, -1, 3}), 0u);
    cr_assert_eq(banned_by_rule(unk, 2, false, (s2s_repeat_ctx){false, 3, 3}), 0u);

    // what counts as the source repeating: two equal adjacent tokens, not <unk>s
    static const struct { int ids[4], n; bool repeats; } src[] = {
        {{5, 6, 5}, 3, false}, {{5, 5}, 2, true}, {{6, 7, 7}, 3, true},
        {{S2S_UNK, S2S_UNK}, 2, false}, {{5, S2S_UNK, S2S_UNK, 6}, 4, false}, {{5}, 0, false}};
    for (size_t k = 0; k < sizeof src / sizeof *src; k++)
        cr_assert_eq(s2s_source_repeats(src[k].ids, src[k].n), src[k].repeats, "case %zu", k);

    // which source token a <unk> copies: (L=2, H=2, S=3) maps of one query row
    float maps[2][2][3] = {{{0.1f, 0.8f, 0.1f}, {0.7f, 0.2f, 0.1f}},
                           {{0.2f, 0.2f, 0.6f}, {0.6f, 0.3f, 0.1f}}};
    const float *row = &maps[0][0][0];
    cr_assert_eq(s2s_copied_source(row, 6, 3, 2, 2, 1, 0, 3), 2, "plane (1, 0)");
    cr_assert_eq(s2s_copied_source(row, 6, 3, 2, 2, 0, 0, 3), 1, "plane (0, 0)");
    cr_assert_eq(s2s_copied_source(row, 6, 3, 2, 2, -1, -1, 3), 0, "all planes: 1.6, 1.5, 0.9");
    cr_assert_eq(s2s_copied_source(row, 6, 3, 2, 2, 1, 0, 2), 0, "past n_src left out; ties: the first");
    cr_assert_eq(s2s_copied_source(row, 6, 3, 2, 2, 1, 1, 0), -1, "no source token");
}

// One target token far likelier than any other: every plain search
// repeats it. Under the rule none does, unless the source repeats a token,
// when the rule lets every search through unchanged.
Test(search, no_immediate_repeat_unless_the_source_repeats) {
    // known tokens only here (the <unk> rule: the next test)
    int X = s2s_vocab_size(s2s_model_tgt_vocab(fx.m)) - 1;
    set_output_bias(X, 9.0f, -30.0f);
    int twice[N_SENT][11], twice_len[N_SENT];
    const int *twice_src[N_SENT];
    for (int i = 0; i < N_SENT; i++) {
        cr_assert_not(s2s_source_repeats(fx.src[i], fx.len[i]), "source %d repeats", i);
        twice[i][0] = fx.ids[i][0];  // the first token twice, then the sentence
        memcpy(twice[i] + 1, fx.ids[i], sizeof(int) * (size_t)fx.len[i]);
        twice_len[i] = fx.len[i] + 1;
        twice_src[i] = twice[i];
    }
    for (int mode = 0; mode < 3; mode++) {  // greedy, beam 4 with 4 best, sampling
        s2s_decode_params off = base();
        off.decode.max_len = 12;
        if (mode == 1) off.decode.beam_size = off.decode.n_best = 4;
        if (mode == 2)
            off.decode.sampling_topk = 0, off.decode.temperature = 1.5f, off.decode.seed = 3;
        s2s_decode_params on = off;
        on.decode.no_immediate_repeat = true;
        int nh = N_SENT * off.decode.n_best, plain_repeats = 0;
        s2s_hypothesis *plain = translate(off), *ruled = translate(on);
        for (int i = 0; i < nh; i++) {
            if (!plain[i].ids) continue;
            plain_repeats += immediate_repeat(plain[i].ids, plain[i].n, true);
            cr_assert_not(immediate_repeat(ruled[i].ids, ruled[i].n, true),
                          "mode %d hypothesis %d repeats a token", mode, i);
        }
        cr_assert_gt(plain_repeats, N_SENT / 2, "mode %d: only %d plain repeats: the test proves "
                     "little", mode, plain_repeats);
        // a mask: the log-probs of what the rule lets through are the model's
        for (int i = 0; mode == 1 && i < nh; i++) {
            s2s_hypothesis f;
            const int *tgt[1] = {ruled[i].ids};
            cr_assert_eq(s2s_score(fx.st, &off, &fx.src[i / 4], &fx.len[i / 4], tgt, &ruled[i].n,
                                   1, &f), S2S_OK);
            for (int t = 0; t < ruled[i].n_out; t++)
                cr_assert_float_eq(ruled[i].token_logprobs[t], f.token_logprobs[t], 1e-4,
                                   "hypothesis %d token %d", i, t);
            s2s_hypothesis_free(&f);
        }
        free_all(plain, nh), free_all(ruled, nh);

        // a source with an immediate repeat: the same translations either way
        plain = calloc((size_t)nh, sizeof *plain), ruled = calloc((size_t)nh, sizeof *ruled);
        cr_assert_eq(s2s_translate(fx.st, &off, twice_src, twice_len, N_SENT, plain), S2S_OK);
        cr_assert_eq(s2s_translate(fx.st, &on, twice_src, twice_len, N_SENT, ruled), S2S_OK);
        plain_repeats = 0;
        for (int i = 0; i < nh; i++) {
            if (!plain[i].ids) continue;
            plain_repeats += immediate_repeat(plain[i].ids, plain[i].n, true);
            assert_same(&plain[i], &ruled[i], 0, i);
        }
        cr_assert_gt(plain_repeats, N_SENT / 2, "mode %d", mode);
        free_all(plain, nh), free_all(ruled, nh);
    }
    // greedy under the rule is the plain loop that bans the last token
    s2s_decode_params on = base();
    on.decode.max_len = 12;
    on.decode.no_immediate_repeat = true;
    s2s_hypothesis *h = translate(on);
    for (int i = 0; i < N_SENT; i++) {
        int ids[16], n_out;
        float lps[16];
        int n = ref_greedy(&on, i, ids, lps, &n_out);
        cr_assert_eq(h[i].n, n, "sentence %d: %d vs %d tokens", i, h[i].n, n);
        for (int t = 0; t < n; t++) cr_assert_eq(h[i].ids[t], ids[t], "sentence %d token %d", i, t);
        for (int t = 0; t < n_out; t++)
            cr_assert_float_eq(h[i].token_logprobs[t], lps[t], 1e-4, "sentence %d token %d", i, t);
    }
    free_all(h, N_SENT);
}

// ---- replacing unknown words ----

// The source token (</s> left out) with the most weight in row t of the
// (layer, head) plane of h's cross-attention; -1 selects the mean.
static int most_attended(const s2s_hypothesis *h, int t, int layer, int head) {
    int best = -1;
    double best_w = -1;
    for (int j = 0; j < h->n_src - 1; j++) {
        double w = 0;
        for (int l = 0; l < h->layers; l++)
            for (int k = 0; k < h->heads; k++)
                if ((layer < 0 || l == layer) && (head < 0 || k == head))
                    w += h->cross_attn[(((int64_t)l * h->heads + k) * h->n_out + t) * h->n_src + j];
        if (w > best_w) best_w = w, best = j;
    }
    return best;
}

Test(search, replace_unknowns_names_the_most_attended_source_token) {
    // make <unk> likely, so that the searches produce it now and then
    set_output_bias(-1, 0.0f, 3.4f);
    static const int heads[][2] = {{1, 0}, {0, 1}, {-1, -1}};
    int unks = 0;
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(s2s_model_set_head(fx.m, S2S_HEAD_ALIGN, heads[k][0], heads[k][1]), S2S_OK,
                     "%s", s2s_last_error());
        for (int beam = 1; beam <= 3; beam += 2) {
            s2s_decode_params p = base(), q;
            p.decode.max_len = 12;
            p.decode.beam_size = beam;
            p.decode.n_best = beam == 1 ? 1 : 2;
            p.decode.replace_unknowns = true;
            q = p;
            q.decode.replace_unknowns = false;
            q.want_attention = true;
            s2s_decode_params both = q;
            both.decode.replace_unknowns = true;
            int nh = N_SENT * p.decode.n_best;
            s2s_hypothesis *r = translate(p), *a = translate(q), *ra = translate(both);
            for (int i = 0; i < nh; i++) {
                if (!a[i].ids) continue;
                assert_same(&r[i], &a[i], 1e-4f, i);
                int here = 0;
                for (int t = 0; t < a[i].n; t++) {
                    if (a[i].ids[t] != S2S_UNK) continue;
                    here++;
                    int want = most_attended(&a[i], t, heads[k][0], heads[k][1]);
                    cr_assert_eq(r[i].unk_src[t], want, "head %d beam %d hyp %d step %d", k, beam, i, t);
                    cr_assert_eq(ra[i].unk_src[t], want, "head %d beam %d hyp %d step %d", k, beam, i, t);
                }
                if (!here) cr_assert_null(r[i].unk_src, "hyp %d has no <unk>", i);
                for (int t = 0; here && t < a[i].n; t++)
                    if (a[i].ids[t] != S2S_UNK) cr_assert_eq(r[i].unk_src[t], -1);
                unks += here;
            }
            free_all(r, nh), free_all(a, nh), free_all(ra, nh);
        }
    }
    cr_assert_gt(unks, 5, "only %d <unk> produced: the test proves little", unks);
}

// <unk> far likelier than any other token: plain searches copy one source
// token twice in a row. Under the rule no two adjacent <unk>s copy the same
// source token, in the maps the search returns (the model's alignment
// head) and in what replace_unknowns prints (unk_src), while two adjacent
// <unk>s that copy different tokens stay allowed.
Test(search, no_unk_copies_one_source_token_twice_in_a_row) {
    set_output_bias(-1, 0.0f, 9.0f);
    static const int heads[][2] = {{1, 0}, {0, 1}};
    int plain_pairs = 0, other_pairs = 0;
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(s2s_model_set_head(fx.m, S2S_HEAD_ALIGN, heads[k][0], heads[k][1]),
                     S2S_OK);
        for (int beam = 1; beam <= 3; beam += 2) {
            s2s_decode_params off = base();
            off.decode.max_len = 12;
            off.decode.beam_size = beam;
            off.decode.n_best = beam == 1 ? 1 : 2;
            off.want_attention = true;
            s2s_decode_params on = off, printed = off;
            on.decode.no_immediate_repeat = printed.decode.no_immediate_repeat = true;
            printed.want_attention = false;  // the rule reads the maps all the same
            printed.decode.replace_unknowns = true;
            int nh = N_SENT * off.decode.n_best;
            s2s_hypothesis *plain = translate(off), *ruled = translate(on), *shown = translate(printed);
            for (int i = 0; i < nh; i++) {
                s2s_hypothesis *a = &plain[i], *r = &ruled[i], *s = &shown[i];
                for (int t = 0; a->ids && t + 1 < a->n; t++)
                    plain_pairs += a->ids[t] == S2S_UNK && a->ids[t + 1] == S2S_UNK &&
                                   most_attended(a, t, heads[k][0], heads[k][1]) ==
                                       most_attended(a, t + 1, heads[k][0], heads[k][1]);
                if (!r->ids) continue;
                assert_same(r, s, 1e-5f, i);
                for (int t = 0; t + 1 < r->n; t++) {
                    if (r->ids[t] != S2S_UNK || r->ids[t + 1] != S2S_UNK) continue;
                    int from = most_attended(r, t, heads[k][0], heads[k][1]);
                    cr_assert_neq(from, most_attended(r, t + 1, heads[k][0], heads[k][1]),
                                  "head %d beam %d hyp %d: <unk>s %d and %d copy token %d", k,
                                  beam, i, t, t + 1, from);
                    cr_assert_neq(s->unk_src[t], s->unk_src[t + 1], "printed twice: hyp %d", i);
                    other_pairs++;
                }
            }
            free_all(plain, nh), free_all(ruled, nh), free_all(shown, nh);
        }
    }
    cr_assert_gt(plain_pairs, 5, "only %d plain <unk> stutters: the test proves little", plain_pairs);
    cr_assert_gt(other_pairs, 0, "the rule left no <unk> pair copying two tokens");
}
