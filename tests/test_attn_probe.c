// Tests for the attention probes (s2s/probe.h, src/align/probe.c): the
// scale table on random scores (std of QK^T as sqrt(d_k), of the scaled
// scores near 1), the scale figures recovered from weights against a
// plain recomputation from the scores, the head figures against plain
// loops over a model's maps, the labels of a hand-built model whose heads
// are made local, previous-token, next-token and </s>-only, and the
// encoder's permutation equivariance.
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "s2s/s2s.h"

// ---- helpers ----

static s2s_model *load_model(const char *yaml, void (*edit)(s2s_config *), uint64_t seed) {
    s2s_config c;
    s2s_config_default(&c);
    cr_assert_eq(s2s_config_load_file(&c, yaml), S2S_OK, "%s", s2s_last_error());
    if (edit) edit(&c);
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, &c, seed), S2S_OK, "%s", s2s_last_error());
    return m;
}

static s2s_model *ref_model(uint64_t seed) {
    return load_model(S2S_TEST_DATA "/ref/pre_relu_tied.yaml", NULL, seed);
}

// A hypothesis of src scored against tgt with every map.
static s2s_hypothesis score_maps(s2s_model *m, const char *src, const char *tgt) {
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_tokens s = {0}, t = {0};
    cr_assert_eq(s2s_tokenize(s2s_model_src_vocab(m), src, &s), S2S_OK);
    cr_assert_eq(s2s_tokenize(s2s_model_tgt_vocab(m), tgt, &t), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(m);
    p.want_attention = p.want_self_attention = true;
    const int *sp[1] = {s.ids}, *tp[1] = {t.ids};
    s2s_hypothesis h;
    cr_assert_eq(s2s_score(st, &p, sp, &s.n, tp, &t.n, 1, &h), S2S_OK, "%s", s2s_last_error());
    s2s_tokens_free(&s);
    s2s_tokens_free(&t);
    s2s_state_free(st);
    return h;
}

static double gauss(uint64_t *x) {
    double u[2];
    for (int k = 0; k < 2; k++) {
        *x = *x * 6364136223846793005ULL + 1442695040888963407ULL;
        u[k] = ((double)(*x >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
    }
    return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

// ---- the scale table ----

Test(attn_probe, random_scores_spread_as_sqrt_dk_and_scaled_ones_as_one) {
    double prev_max = 0.0;
    for (int d = 32; d <= 256; d *= 2) {
        s2s_scale_stats r, again, other;
        cr_assert_eq(s2s_scale_random(&r, d, 256, 1), S2S_OK);
        cr_assert_eq(r.d_k, d);
        cr_assert_eq(r.rows, 256);
        double ratio = r.std_unscaled / sqrt((double)d);
        cr_assert(ratio > 0.9 && ratio < 1.1, "d_k %d: std %g is %g x sqrt(d_k)", d,
                  r.std_unscaled, ratio);
        cr_assert(fabs(r.std_scaled - 1.0) < 0.1, "d_k %d: scaled std %g", d, r.std_scaled);
        // unscaled softmax saturates more as d_k grows; scaled stays spread
        cr_assert(r.max_weight_unscaled > prev_max, "d_k %d: max weight %g after %g", d,
                  r.max_weight_unscaled, prev_max);
        prev_max = r.max_weight_unscaled;
        cr_assert(r.max_weight_scaled < 0.1, "d_k %d: scaled max weight %g", d, r.max_weight_scaled);
        cr_assert(r.entropy_unscaled < r.entropy_scaled);
        cr_assert(r.entropy_scaled <= log(256.0) + 1e-9);
        cr_assert_eq(s2s_scale_random(&again, d, 256, 1), S2S_OK);
        cr_assert(memcmp(&r, &again, sizeof r) == 0, "the same seed gives the same figures");
        cr_assert_eq(s2s_scale_random(&other, d, 256, 2), S2S_OK);
        cr_assert_neq(r.std_unscaled, other.std_unscaled);
    }
    s2s_scale_stats r;
    cr_assert_eq(s2s_scale_random(&r, 1, 256, 1), S2S_ERR_INVALID);
}

// Plain figures of one row of unscaled scores s (n) at scale a: softmax
// of a*s, its largest weight and entropy.
static void plain_softmax(const double *s, int n, double a, double *max_w, double *entropy) {
    double mx = -INFINITY, z = 0.0;
    for (int j = 0; j < n; j++) mx = fmax(mx, a * s[j]);
    for (int j = 0; j < n; j++) z += exp(a * s[j] - mx);
    *max_w = 0.0, *entropy = 0.0;
    for (int j = 0; j < n; j++) {
        double w = exp(a * s[j] - mx) / z;
        *max_w = fmax(*max_w, w);
        if (w > 0) *entropy -= w * log(w);
    }
}

Test(attn_probe, scale_from_weights_equals_a_plain_recomputation_from_the_scores) {
    s2s_model *m = ref_model(3);  // d_model 32, 4 heads: d_k 8
    s2s_attn_probe *p;
    cr_assert_eq(s2s_attn_probe_new(&p, m), S2S_OK);
    enum { N = 9 };
    double s[N * N], ref[6] = {0};  // var, var scaled, max w x2, entropy x2
    float w[N * N];
    uint64_t x = 42;
    const double dk = 8.0;
    for (int i = 0; i < N * N; i++) s[i] = sqrt(dk) * gauss(&x);
    for (int i = 0; i < N; i++) {
        const double *row = s + i * N;
        double mean = 0, ss = 0, mw, h;
        for (int j = 0; j < N; j++) mean += row[j] / N;
        for (int j = 0; j < N; j++) ss += (row[j] - mean) * (row[j] - mean);
        ref[0] += ss / (N - 1) / N;
        ref[1] += ss / (N - 1) / dk / N;
        plain_softmax(row, N, 1.0, &mw, &h);
        ref[2] += mw / N, ref[4] += h / N;
        plain_softmax(row, N, 1.0 / sqrt(dk), &mw, &h);
        ref[3] += mw / N, ref[5] += h / N;
        double mx = -INFINITY, z = 0;
        for (int j = 0; j < N; j++) mx = fmax(mx, row[j] / sqrt(dk));
        for (int j = 0; j < N; j++) z += exp(row[j] / sqrt(dk) - mx);
        for (int j = 0; j < N; j++) w[i * N + j] = (float)(exp(row[j] / sqrt(dk) - mx) / z);
    }
    cr_assert_eq(s2s_attn_probe_add_plane(p, S2S_ATTN_MAP_ENC, 0, 0, w, N, N), S2S_OK);
    s2s_scale_stats r;
    cr_assert(s2s_attn_probe_scale(p, S2S_ATTN_MAP_ENC, 0, 0, &r));
    cr_assert_eq(r.d_k, 8);
    cr_assert_eq(r.rows, N);
    double got[6] = {r.std_unscaled * r.std_unscaled, r.std_scaled * r.std_scaled,
                     r.max_weight_unscaled, r.max_weight_scaled, r.entropy_unscaled,
                     r.entropy_scaled};
    for (int k = 0; k < 6; k++)
        cr_assert(fabs(got[k] - ref[k]) <= 1e-4 * fmax(1.0, fabs(ref[k])), "figure %d: %g, plain %g",
                  k, got[k], ref[k]);
    // a row with a weight of 0 is left out and counted
    w[0] = 0.0f;
    cr_assert_eq(s2s_attn_probe_add_plane(p, S2S_ATTN_MAP_ENC, 0, 1, w, N, N), S2S_OK);
    cr_assert(s2s_attn_probe_scale(p, S2S_ATTN_MAP_ENC, 0, 1, &r));
    cr_assert_eq(r.rows, N - 1);
    cr_assert_eq(r.underflow_rows, 1);
    cr_assert_eq(s2s_attn_probe_add_plane(p, S2S_ATTN_MAP_ENC, 2, 0, w, N, N), S2S_ERR_INVALID);
    cr_assert_not(s2s_attn_probe_scale(p, S2S_ATTN_MAP_ENC, 0, 4, &r));
    s2s_attn_probe_free(p);
    s2s_model_free(m);
}

// ---- head figures against plain loops ----

// The fewest weights holding 95% of the row, picking the largest left
// each time (no sort).
static int plain_width95(const float *w, const bool *seen, int n) {
    bool used[64] = {0};
    double total = 0, run = 0;
    for (int j = 0; j < n; j++) total += seen[j] ? w[j] : 0;
    int k = 0;
    while (run < 0.95 * total) {
        int best = -1;
        for (int j = 0; j < n; j++)
            if (seen[j] && !used[j] && (best < 0 || w[j] > w[best])) best = j;
        if (best < 0) break;
        used[best] = true, run += w[best], k++;
    }
    return k;
}

// Plain figures of a plane: [distance, entropy, special, width95, previous].
static void plain_head(const float *w, int rows, int cols, bool causal, int special,
                       double out[5]) {
    double sum[5] = {0};
    int n = 0, n_prev = 0;
    for (int i = 0; i < rows; i++) {
        bool seen[64];
        int keys = 0;
        for (int j = 0; j < cols; j++) keys += seen[j] = !causal || j <= i;
        if (keys < 2) continue;
        const float *r = w + (size_t)i * cols;
        for (int j = 0; j < cols; j++) {
            if (!seen[j]) continue;
            sum[0] += (double)r[j] * abs(i - j);
            if (r[j] > 0) sum[1] -= r[j] * log((double)r[j]);
        }
        sum[2] += r[special];
        sum[3] += plain_width95(r, seen, cols);
        if (i >= 1) sum[4] += r[i - 1], n_prev++;
        n++;
    }
    for (int k = 0; k < 4; k++) out[k] = sum[k] / n;
    out[4] = sum[4] / n_prev;
}

Test(attn_probe, head_figures_equal_plain_loops_over_the_maps) {
    s2s_model *m = ref_model(11);
    s2s_hypothesis h = score_maps(m, "der hund sitzt auf der matte die katze", "the dog sits on the mat");
    s2s_attn_probe *p;
    cr_assert_eq(s2s_attn_probe_new(&p, m), S2S_OK);
    cr_assert_eq(s2s_attn_probe_add(p, &h), S2S_OK, "%s", s2s_last_error());
    struct { s2s_attn_map map; const float *maps; int layers, rows, cols; } maps[] = {
        {S2S_ATTN_MAP_ENC, h.enc_attn, h.enc_layers, h.n_src, h.n_src},
        {S2S_ATTN_MAP_SELF, h.self_attn, h.layers, h.n_out, h.n_out},
        {S2S_ATTN_MAP_CROSS, h.cross_attn, h.layers, h.n_out, h.n_src},
    };
    for (int k = 0; k < 3; k++)
        for (int l = 0; l < maps[k].layers; l++)
            for (int hd = 0; hd < h.heads; hd++) {
                size_t plane = (size_t)maps[k].rows * maps[k].cols;
                const float *w = maps[k].maps + ((size_t)l * h.heads + hd) * plane;
                bool self = maps[k].map == S2S_ATTN_MAP_SELF;
                double ref[5];
                plain_head(w, maps[k].rows, maps[k].cols, self, self ? 0 : maps[k].cols - 1, ref);
                s2s_head_stats hs;
                cr_assert(s2s_attn_probe_head(p, maps[k].map, l, hd, &hs));
                double got[5] = {hs.distance, hs.entropy, hs.special, hs.width95, hs.previous};
                for (int f = 0; f < 5; f++)
                    cr_assert(fabs(got[f] - ref[f]) < 1e-7, "map %d layer %d head %d figure %d: %g, plain %g",
                              k, l, hd, f, got[f], ref[f]);
                cr_assert_eq(hs.label, s2s_head_label_of(&hs));
                cr_assert_eq(isnan(hs.next), self, "next is NaN exactly where no row sees i + 1");
            }
    s2s_attn_probe_free(p);
    s2s_hypothesis_free(&h);
    s2s_model_free(m);
}

// ---- a model built to have each kind of head ----

// Post-norm (the first layer's attention reads E[ids] * sqrt(D) + PE
// unnormalised), 4 heads of 8 over d_model 32, one encoder layer.
static void four_heads(s2s_config *c) {
    c->model.heads = 4;
    c->model.encoder_layers = 1;
}

static void set_tensor(s2s_model *m, const char *name, const float *v, size_t n) {
    s2s_tensor_info t = s2s_model_find_tensor(m, name);
    cr_assert_not_null(t.data, "%s", name);
    size_t size = (size_t)t.shape[0] * (size_t)(t.ndim > 1 ? t.shape[1] : 1);
    cr_assert_eq(size, n, "%s", name);
    cr_assert_eq(s2s_model_set_tensor(m, name, v, n), S2S_OK, "%s", s2s_last_error());
}

// The positional encoding's pairs 0-3 (dims 0-7: sin, cos of position
// times w_k = 10000^(-2k/32)) drive heads 0, 1 and 3: a head whose query
// is a * PE_0..7(i + shift) and key PE_0..7(j) scores a * sum_k cos(w_k
// (i + shift - j)), which peaks at j = i + shift (4 there, 3.32 one step
// off). Head 0: shift 0, a mild (weight spread over i - 1, i, i + 1):
// local. Head 1: shift -1, a large: previous token. Head 3: shift +1:
// next token. Head 2: a constant query (its bias) against the key
// x[31], which is cos(w_15 j) ~ 1 for every token (their embeddings are
// 0) and 1 + sqrt(32) for </s> (its embedding is 1 there): </s> only.
static s2s_model *hand_built(void) {
    s2s_model *m = load_model(S2S_TEST_DATA "/ref/post_gelu_untied.yaml", four_heads, 5);
    enum { D = 32 };
    s2s_tensor_info e = s2s_model_find_tensor(m, "src_embed.weight");
    size_t ne = (size_t)e.shape[0] * D;
    float *emb = calloc(ne, sizeof *emb), wq[D * D] = {0}, wk[D * D] = {0}, bq[D] = {0};
    emb[3 * D + 31] = 1.0f;  // </s>
    struct { int head, shift; float a; } pos[] = {{0, 0, 2.0f}, {1, -1, 20.0f}, {3, 1, 20.0f}};
    for (int k = 0; k < 3; k++) {
        float a = pos[k].a * sqrtf(8.0f) / 1.0f;  // the score divides by sqrt(8)
        int o = pos[k].head * 8;
        for (int f = 0; f < 4; f++) {
            double w = pow(10000.0, -2.0 * f / D), c = cos(w * pos[k].shift),
                   s = sin(w * pos[k].shift);
            // sin(w(i + t)) = sin(wi) cos(wt) + cos(wi) sin(wt); cos(w(i + t)) = cos cos - sin sin
            wq[(o + 2 * f) * D + 2 * f] = a * (float)c, wq[(o + 2 * f) * D + 2 * f + 1] = a * (float)s;
            wq[(o + 2 * f + 1) * D + 2 * f] = -a * (float)s, wq[(o + 2 * f + 1) * D + 2 * f + 1] = a * (float)c;
            wk[(o + 2 * f) * D + 2 * f] = wk[(o + 2 * f + 1) * D + 2 * f + 1] = 1.0f;
        }
    }
    bq[16] = 10.0f;
    wk[16 * D + 31] = 1.0f;
    set_tensor(m, "src_embed.weight", emb, ne);
    set_tensor(m, "encoder.layers.0.self_attn.q_proj.weight", wq, D * D);
    set_tensor(m, "encoder.layers.0.self_attn.k_proj.weight", wk, D * D);
    set_tensor(m, "encoder.layers.0.self_attn.q_proj.bias", bq, D);
    memset(bq, 0, sizeof bq);
    set_tensor(m, "encoder.layers.0.self_attn.k_proj.bias", bq, D);
    free(emb);
    return m;
}

Test(attn_probe, hand_built_heads_get_their_labels) {
    s2s_model *m = hand_built();
    s2s_attn_probe *p;
    cr_assert_eq(s2s_attn_probe_new(&p, m), S2S_OK);
    const char *src[] = {"der hund sitzt auf der matte die katze sitzt auf das",
                         "die katze", "der hund der hund der hund der hund der hund der hund"};
    for (int k = 0; k < 3; k++) {
        s2s_hypothesis h = score_maps(m, src[k], "the dog");
        cr_assert_eq(s2s_attn_probe_add(p, &h), S2S_OK, "%s", s2s_last_error());
        s2s_hypothesis_free(&h);
    }
    s2s_head_label want[4] = {S2S_HEAD_LOCAL, S2S_HEAD_PREVIOUS, S2S_HEAD_SPECIAL, S2S_HEAD_NEXT};
    for (int hd = 0; hd < 4; hd++) {
        s2s_head_stats hs;
        cr_assert(s2s_attn_probe_head(p, S2S_ATTN_MAP_ENC, 0, hd, &hs));
        cr_assert_eq(hs.label, want[hd],
                     "head %d: %s (distance %.3f, </s> %.3f, prev %.3f, next %.3f, local %.3f "
                     "against uniform %.3f), want %s", hd, s2s_head_label_name(hs.label),
                     hs.distance, hs.special, hs.previous, hs.next, hs.local, hs.local_uniform,
                     s2s_head_label_name(want[hd]));
    }
    s2s_head_stats hs;
    s2s_attn_probe_head(p, S2S_ATTN_MAP_ENC, 0, 1, &hs);
    cr_assert(hs.previous > 0.99, "previous-token head: %g on i - 1", hs.previous);
    s2s_attn_probe_head(p, S2S_ATTN_MAP_ENC, 0, 2, &hs);
    cr_assert(hs.special > 0.99 && hs.width95 < 1.01, "</s> head: %g, width %g", hs.special, hs.width95);
    cr_assert_str_eq(s2s_head_label_name(S2S_HEAD_SPECIAL), "</s>");
    cr_assert_null(s2s_head_label_name(S2S_HEAD_LABEL_COUNT));
    s2s_attn_probe_free(p);
    s2s_model_free(m);
}

// ---- permutation equivariance ----

Test(attn_probe, encoder_commutes_with_a_permutation_only_without_positions) {
    s2s_model *m = ref_model(9);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_tokens t = {0};
    cr_assert_eq(s2s_tokenize(s2s_model_src_vocab(m), "der hund sitzt auf der matte", &t), S2S_OK);
    s2s_equivariance e, again;
    int perm[7], perm2[7];
    cr_assert_eq(s2s_probe_equivariance(st, t.ids, t.n, 1, perm, &e), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(e.n, t.n + 1);
    bool moved = false, hit[7] = {0};
    for (int i = 0; i < e.n; i++) moved |= perm[i] != i, hit[perm[i]] = true;
    for (int i = 0; i < e.n; i++) cr_assert(hit[i], "perm is a permutation");
    cr_assert(moved);
    cr_assert(e.without_positions < 1e-5, "without positions: %g", e.without_positions);
    cr_assert(e.with_positions > 1e-2, "with positions: %g", e.with_positions);
    cr_assert(e.largest > 0.1);
    cr_assert_eq(s2s_probe_equivariance(st, t.ids, t.n, 1, perm2, &again), S2S_OK);
    cr_assert(memcmp(perm, perm2, sizeof perm) == 0, "the same seed, the same permutation");
    cr_assert_eq(s2s_probe_equivariance(st, t.ids, 0, 1, NULL, &e), S2S_ERR_INVALID);
    // the state decodes with positions again: a score after the probe
    // equals one on a fresh state
    s2s_state *fresh;
    cr_assert_eq(s2s_state_new(&fresh, m), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(m);
    const int *sp[1] = {t.ids}, *tp[1] = {t.ids};
    s2s_hypothesis a, b;
    cr_assert_eq(s2s_score(st, &p, sp, &t.n, tp, &t.n, 1, &a), S2S_OK);
    cr_assert_eq(s2s_score(fresh, &p, sp, &t.n, tp, &t.n, 1, &b), S2S_OK);
    cr_assert_eq(a.logprob, b.logprob);
    s2s_hypothesis_free(&a);
    s2s_hypothesis_free(&b);
    s2s_state_free(fresh);
    s2s_tokens_free(&t);
    s2s_state_free(st);
    s2s_model_free(m);
}

static void local_encoder(s2s_config *c) {
    c->model.encoder_attention = (s2s_attention_config){
        .type = S2S_ATTN_LOCAL, .window = 2, .block = 1, .stride = 2, .heads = {1, {1}}};
}

Test(attn_probe, equivariance_refuses_heads_that_see_by_position) {
    s2s_model *m = load_model(S2S_TEST_DATA "/ref/pre_relu_tied.yaml", local_encoder, 1);
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    int ids[3] = {4, 5, 6};
    s2s_equivariance e;
    cr_assert_eq(s2s_probe_equivariance(st, ids, 3, 1, NULL, &e), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "local"), "%s", s2s_last_error());
    s2s_state_free(st);
    s2s_model_free(m);
}
