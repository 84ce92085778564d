// Tests for src/model/model.c: random init (seeding, Glorot bounds, biases,
// LayerNorm weights), the pinned tensor names and shapes, the save/load
// round trip bit for bit, the file read independently with jansson,
// refusals of truncated, corrupt, inconsistent and hostile files (issue 14's
// reproducers: sizes that overflow, configs the file does not back, NaN
// weights, a shifted header, control characters), and writing weights
// while other threads decode.
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/model_internal.h"
#include "model/safetensors.h"
#include "ops/ops.h"
#include "support.h"
#include "s2s/s2s.h"

TestSuite(model, .init = tmpdir_make, .fini = tmpdir_remove);

// ---- helpers ----


// A small config over the reference vocabularies (34 source, 33 target
// tokens); d and f differ so a transposed shape is a different shape.
static s2s_config small_cfg(s2s_norm norm, bool tie, int d, int layers) {
    s2s_config c;
    s2s_config_default(&c);
    c.model.d_model = d;
    c.model.heads = 2;
    c.model.encoder_layers = layers;
    c.model.decoder_layers = layers;
    c.model.ffn_dim = d + 4;
    c.model.activation = S2S_ACT_GELU;
    c.model.norm = norm;
    c.model.tie_output = tie;
    c.model.max_len = 16;
    c.decode.max_len = 10;
    snprintf(c.vocab.src, sizeof c.vocab.src, "%s/ref/src.txt", S2S_TEST_DATA);
    snprintf(c.vocab.tgt, sizeof c.vocab.tgt, "%s/ref/tgt.txt", S2S_TEST_DATA);
    return c;
}

static s2s_model *new_model(s2s_norm norm, bool tie, int d, int layers, uint64_t seed) {
    s2s_config c = small_cfg(norm, tie, d, layers);
    s2s_model *m = NULL;
    s2s_status st = s2s_model_init(&m, &c, seed);
    cr_assert_eq(st, S2S_OK, "init: %s", s2s_last_error());
    cr_assert_not_null(m);
    return m;
}

static size_t numel(const s2s_tensor_info *t) {
    size_t n = 1;
    for (int k = 0; k < t->ndim; k++) n *= (size_t)t->shape[k];
    return n;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

// ---- the pinned tensor list, written out independently of model.c ----

typedef struct want {
    char name[96];
    int ndim;
    int64_t shape[2];
} want;

typedef struct want_list {
    want w[512];
    int n;
} want_list;

static void add(want_list *L, int ndim, int64_t s0, int64_t s1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add(want_list *L, int ndim, int64_t s0, int64_t s1, const char *fmt, ...) {
    cr_assert_lt(L->n, 512);
    want *w = &L->w[L->n++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->name, sizeof w->name, fmt, ap);
    va_end(ap);
    w->ndim = ndim;
    w->shape[0] = s0;
    w->shape[1] = s1;
}

static void add_attn(want_list *L, int64_t d, const char *prefix) {
    const char *proj[] = {"q_proj", "k_proj", "v_proj", "out_proj"};
    for (int p = 0; p < 4; p++) {
        add(L, 2, d, d, "%s.%s.weight", prefix, proj[p]);
        add(L, 1, d, 0, "%s.%s.bias", prefix, proj[p]);
    }
}

static void add_norm(want_list *L, int64_t d, const char *prefix) {
    add(L, 1, d, 0, "%s.weight", prefix);
    add(L, 1, d, 0, "%s.bias", prefix);
}

static void add_ffn(want_list *L, int64_t d, int64_t f, const char *prefix) {
    add(L, 2, f, d, "%s.ffn.fc1.weight", prefix);
    add(L, 1, f, 0, "%s.ffn.fc1.bias", prefix);
    add(L, 2, d, f, "%s.ffn.fc2.weight", prefix);
    add(L, 1, d, 0, "%s.ffn.fc2.bias", prefix);
}

static void expected_tensors(want_list *L, const s2s_model_config *c, int64_t vs, int64_t vt) {
    int64_t d = c->d_model, f = c->ffn_dim;
    char p[64];
    L->n = 0;
    add(L, 2, vs, d, "src_embed.weight");
    add(L, 2, vt, d, "tgt_embed.weight");
    if (!c->tie_output) add(L, 2, vt, d, "generator.weight");
    add(L, 1, vt, 0, "generator.bias");
    for (int i = 0; i < c->encoder_layers; i++) {
        snprintf(p, sizeof p, "encoder.layers.%d.self_attn", i);
        add_attn(L, d, p);
        snprintf(p, sizeof p, "encoder.layers.%d.norm1", i);
        add_norm(L, d, p);
        snprintf(p, sizeof p, "encoder.layers.%d.norm2", i);
        add_norm(L, d, p);
        snprintf(p, sizeof p, "encoder.layers.%d", i);
        add_ffn(L, d, f, p);
    }
    if (c->norm == S2S_NORM_PRE) add_norm(L, d, "encoder.norm");
    for (int i = 0; i < c->decoder_layers; i++) {
        snprintf(p, sizeof p, "decoder.layers.%d.self_attn", i);
        add_attn(L, d, p);
        snprintf(p, sizeof p, "decoder.layers.%d.cross_attn", i);
        add_attn(L, d, p);
        for (int k = 1; k <= 3; k++) {
            snprintf(p, sizeof p, "decoder.layers.%d.norm%d", i, k);
            add_norm(L, d, p);
        }
        snprintf(p, sizeof p, "decoder.layers.%d", i);
        add_ffn(L, d, f, p);
    }
    if (c->norm == S2S_NORM_PRE) add_norm(L, d, "decoder.norm");
}

static void check_tensor_list(const s2s_model *m) {
    const s2s_config *c = s2s_model_get_config(m);
    want_list *L = calloc(1, sizeof *L);
    expected_tensors(L, &c->model, s2s_vocab_size(s2s_model_src_vocab(m)),
                     s2s_vocab_size(s2s_model_tgt_vocab(m)));
    cr_assert_eq(s2s_model_tensor_count(m), L->n, "%d tensors, expected %d",
                 s2s_model_tensor_count(m), L->n);
    size_t total = 0;
    for (int i = 0; i < L->n; i++) {
        s2s_tensor_info t = s2s_model_find_tensor(m, L->w[i].name);
        cr_assert_not_null(t.data, "no tensor '%s'", L->w[i].name);
        cr_assert_str_eq(t.name, L->w[i].name);
        cr_assert_eq(t.ndim, L->w[i].ndim, "'%s' has %d dims", t.name, t.ndim);
        for (int k = 0; k < t.ndim; k++)
            cr_assert_eq(t.shape[k], L->w[i].shape[k], "'%s' dim %d is %lld, expected %lld",
                         t.name, k, (long long)t.shape[k], (long long)L->w[i].shape[k]);
        total += numel(&t);
    }
    // Every tensor is listed once, and the parameter count is their sum.
    cr_assert_eq(s2s_model_param_count(m), total);
    for (int i = 0; i < s2s_model_tensor_count(m); i++)
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(s2s_model_tensor(m, i).name, s2s_model_tensor(m, j).name);
    free(L);
}

// ---- init ----

Test(model, tensor_names_and_shapes_are_pinned) {
    for (int norm = 0; norm < S2S_NORM_COUNT; norm++)
        for (int tie = 0; tie < 2; tie++) {
            s2s_model *m = new_model((s2s_norm)norm, tie, 8, 2, 1);
            check_tensor_list(m);
            bool pre = norm == S2S_NORM_PRE;
            cr_assert_eq(s2s_model_find_tensor(m, "encoder.norm.weight").data != NULL, pre);
            cr_assert_eq(s2s_model_find_tensor(m, "decoder.norm.bias").data != NULL, pre);
            cr_assert_eq(s2s_model_find_tensor(m, "generator.weight").data != NULL, !tie);
            cr_assert_not_null(s2s_model_find_tensor(m, "generator.bias").data);
            cr_assert_null(s2s_model_find_tensor(m, "encoder.layers.2.norm1.weight").data);
            cr_assert_null(s2s_model_find_tensor(m, "nonsense").data);
            s2s_model_free(m);
        }
}

Test(model, init_is_glorot_with_zero_biases_and_unit_norms) {
    for (int norm = 0; norm < S2S_NORM_COUNT; norm++) {
        s2s_model *m = new_model((s2s_norm)norm, false, 16, 2, 7);
        int matrices = 0, biases = 0, norms = 0;
        for (int i = 0; i < s2s_model_tensor_count(m); i++) {
            s2s_tensor_info t = s2s_model_tensor(m, i);
            size_t n = numel(&t);
            if (t.ndim == 2) {
                double bound = sqrt(6.0 / (double)(t.shape[0] + t.shape[1]));
                double mx = 0, sum = 0;
                for (size_t j = 0; j < n; j++) {
                    double a = fabs(t.data[j]);
                    cr_assert_leq(a, bound, "%s[%zu] = %g beyond %g", t.name, j, t.data[j],
                                  bound);
                    mx = a > mx ? a : mx;
                    sum += t.data[j];
                }
                // uniform over the whole range, centred on zero
                cr_assert_gt(mx, 0.8 * bound, "%s: largest |w| %g of bound %g", t.name, mx,
                             bound);
                cr_assert_lt(fabs(sum / (double)n), 0.25 * bound, "%s: mean %g", t.name,
                             sum / (double)n);
                matrices++;
            } else if (ends_with(t.name, ".bias")) {
                for (size_t j = 0; j < n; j++)
                    cr_assert_eq(t.data[j], 0.0f, "%s[%zu] = %g", t.name, j, t.data[j]);
                biases++;
            } else {
                cr_assert(strstr(t.name, "norm"), "unexpected 1-D tensor '%s'", t.name);
                for (size_t j = 0; j < n; j++)
                    cr_assert_eq(t.data[j], 1.0f, "%s[%zu] = %g", t.name, j, t.data[j]);
                norms++;
            }
        }
        cr_assert_gt(matrices, 0);
        cr_assert_gt(biases, 0);
        cr_assert_gt(norms, 0);
        s2s_model_free(m);
    }
}

Test(model, same_seed_same_weights_other_seed_other_weights) {
    s2s_model *a = new_model(S2S_NORM_PRE, false, 8, 2, 42);
    s2s_model *b = new_model(S2S_NORM_PRE, false, 8, 2, 42);
    s2s_model *c = new_model(S2S_NORM_PRE, false, 8, 2, 43);
    int differ = 0, matrices = 0;
    for (int i = 0; i < s2s_model_tensor_count(a); i++) {
        s2s_tensor_info ta = s2s_model_tensor(a, i), tb = s2s_model_tensor(b, i),
                        tc = s2s_model_tensor(c, i);
        size_t n = numel(&ta);
        cr_assert_eq(memcmp(ta.data, tb.data, n * sizeof(float)), 0, "'%s' differs", ta.name);
        if (ta.ndim == 2) {
            matrices++;
            size_t same = 0;
            for (size_t j = 0; j < n; j++) same += ta.data[j] == tc.data[j];
            if (same < n / 10 + 1) differ++;
        }
    }
    cr_assert_eq(differ, matrices, "only %d of %d matrices changed with the seed", differ,
                 matrices);
    // Different tensors get different values (the stream is not restarted).
    s2s_tensor_info q = s2s_model_find_tensor(a, "encoder.layers.0.self_attn.q_proj.weight");
    s2s_tensor_info k = s2s_model_find_tensor(a, "encoder.layers.0.self_attn.k_proj.weight");
    cr_assert_neq(memcmp(q.data, k.data, numel(&q) * sizeof(float)), 0);
    s2s_model_free(a);
    s2s_model_free(b);
    s2s_model_free(c);
}

Test(model, init_without_vocab_is_refused) {
    s2s_config c = small_cfg(S2S_NORM_PRE, true, 8, 1);
    c.vocab.tgt[0] = '\0';
    s2s_model *m = (s2s_model *)0x1;
    cr_assert_neq(s2s_model_init(&m, &c, 1), S2S_OK);
    cr_assert_null(m);
    cr_assert(strstr(s2s_last_error(), "vocab"), "%s", s2s_last_error());
}

// ---- round trip ----

static void assert_same_model(const s2s_model *a, const s2s_model *b) {
    const s2s_config *ca = s2s_model_get_config(a), *cb = s2s_model_get_config(b);
    cr_assert_eq(ca->model.d_model, cb->model.d_model);
    cr_assert_eq(ca->model.heads, cb->model.heads);
    cr_assert_eq(ca->model.encoder_layers, cb->model.encoder_layers);
    cr_assert_eq(ca->model.decoder_layers, cb->model.decoder_layers);
    cr_assert_eq(ca->model.ffn_dim, cb->model.ffn_dim);
    cr_assert_eq(ca->model.activation, cb->model.activation);
    cr_assert_eq(ca->model.norm, cb->model.norm);
    cr_assert_eq(ca->model.layer_norm_eps, cb->model.layer_norm_eps);
    cr_assert_eq(ca->model.dropout, cb->model.dropout);
    cr_assert_eq(ca->model.tie_output, cb->model.tie_output);
    cr_assert_eq(ca->model.max_len, cb->model.max_len);
    cr_assert_eq(ca->decode.max_len, cb->decode.max_len);
    cr_assert_eq(ca->decode.beam_size, cb->decode.beam_size);

    const s2s_vocab *vs[2][2] = {{s2s_model_src_vocab(a), s2s_model_src_vocab(b)},
                                 {s2s_model_tgt_vocab(a), s2s_model_tgt_vocab(b)}};
    for (int k = 0; k < 2; k++) {
        int n = s2s_vocab_size(vs[k][0]);
        cr_assert_eq(s2s_vocab_size(vs[k][1]), n);
        for (int i = 0; i < n; i++)
            cr_assert_str_eq(s2s_vocab_token(vs[k][0], i), s2s_vocab_token(vs[k][1], i));
    }

    cr_assert_eq(s2s_model_tensor_count(a), s2s_model_tensor_count(b));
    cr_assert_eq(s2s_model_param_count(a), s2s_model_param_count(b));
    for (int i = 0; i < s2s_model_tensor_count(a); i++) {
        s2s_tensor_info ta = s2s_model_tensor(a, i), tb = s2s_model_tensor(b, i);
        cr_assert_str_eq(ta.name, tb.name);
        cr_assert_eq(ta.ndim, tb.ndim);
        for (int k = 0; k < ta.ndim; k++) cr_assert_eq(ta.shape[k], tb.shape[k]);
        cr_assert_eq(memcmp(ta.data, tb.data, numel(&ta) * sizeof(float)), 0,
                     "'%s' changed in the round trip", ta.name);
    }
}

// Makes every weight distinct, including biases and norms (which init
// leaves constant), so a mixed-up tensor cannot go unnoticed.
static void scramble_one(float *v, size_t n, void *arg) {
    int i = *(const int *)arg;
    for (size_t j = 0; j < n; j++) v[j] += 1e-3f * (float)(i + 1) + 1e-6f * (float)j;
}

static void scramble(s2s_model *m) {
    for (int i = 0; i < s2s_model_tensor_count(m); i++) tensor_edit(m, i, scramble_one, &i);
}

// Values that text formats or conversions would lose.
static void awkward_values(float *v, size_t n, void *arg) {
    cr_assert_geq(n, 4);
    v[0] = -0.0f;
    v[1] = 1e-40f;  // subnormal
    v[2] = 3.4028235e38f;
    v[3] = 0.1f;
}

Test(model, save_load_round_trip_is_bit_exact) {
    for (int norm = 0; norm < S2S_NORM_COUNT; norm++)
        for (int tie = 0; tie < 2; tie++) {
            s2s_model *m = new_model((s2s_norm)norm, tie, 8, 2, 3);
            scramble(m);
            tensor_edit(m, 0, awkward_values, NULL);
            const char *p1 = tmp_path("m1.safetensors"), *p2 = tmp_path("m2.safetensors");
            cr_assert_eq(s2s_model_save(m, p1), S2S_OK, "%s", s2s_last_error());
            s2s_model *l = NULL;
            cr_assert_eq(s2s_model_load(&l, p1), S2S_OK, "%s", s2s_last_error());
            assert_same_model(m, l);
            check_tensor_list(l);
            cr_assert(signbit(s2s_model_tensor(l, 0).data[0]));
            // Saving the loaded model writes the same bytes.
            cr_assert_eq(s2s_model_save(l, p2), S2S_OK, "%s", s2s_last_error());
            size_t n1, n2;
            unsigned char *b1 = slurp(p1, &n1), *b2 = slurp(p2, &n2);
            cr_assert_eq(n1, n2);
            cr_assert_eq(memcmp(b1, b2, n1), 0);
            free(b1);
            free(b2);
            s2s_model_free(m);
            s2s_model_free(l);
        }
}

Test(model, save_overwrites_and_leaves_no_temp_files) {
    s2s_model *a = new_model(S2S_NORM_PRE, true, 8, 1, 1);
    s2s_model *b = new_model(S2S_NORM_POST, false, 8, 2, 2);
    const char *p = tmp_path("m.safetensors");
    cr_assert_eq(s2s_model_save(a, p), S2S_OK);
    cr_assert_eq(s2s_model_save(b, p), S2S_OK);
    s2s_model *l;
    cr_assert_eq(s2s_model_load(&l, p), S2S_OK, "%s", s2s_last_error());
    assert_same_model(b, l);
    s2s_model_free(l);
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    cr_assert_eq(n, 1, "%d files left in the folder", n);
    // An unwritable destination is an i/o error naming the path.
    const char *bad = "/nonexistent_dir_s2s/m.safetensors";
    cr_assert_eq(s2s_model_save(a, bad), S2S_ERR_IO);
    cr_assert(strstr(s2s_last_error(), bad), "%s", s2s_last_error());
    s2s_model_free(a);
    s2s_model_free(b);
}

// The calibrated planes travel in the file: the alignment head (decoder)
// and the coreference head (encoder), each range-checked against its stack.
Test(model, calibrated_heads_survive_save_and_load) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 8, 2, 1);
    int l, h;
    cr_assert(!s2s_model_head(m, S2S_HEAD_COREF, &l, &h));
    cr_assert_eq(s2s_model_set_head(m, S2S_HEAD_COREF, 2, 0), S2S_ERR_INVALID);  // 2 encoder layers
    cr_assert_eq(s2s_model_set_head(m, S2S_HEAD_COREF, 0, 2), S2S_ERR_INVALID);  // 2 heads
    cr_assert_eq(s2s_model_set_head(m, S2S_HEAD_COREF, 1, -1), S2S_OK);
    cr_assert_eq(s2s_model_set_head(m, S2S_HEAD_ROLE_COUNT, 0, 0), S2S_ERR_INVALID);  // no role
    cr_assert(!s2s_model_head(m, (s2s_head_role)-1, &l, &h));
    cr_assert_eq(s2s_model_set_head(m, S2S_HEAD_ALIGN, -1, 0), S2S_OK);
    const char *p = tmp_path("cal.safetensors");
    cr_assert_eq(s2s_model_save(m, p), S2S_OK, "%s", s2s_last_error());
    s2s_model *r;
    cr_assert_eq(s2s_model_load(&r, p), S2S_OK, "%s", s2s_last_error());
    cr_assert(s2s_model_head(r, S2S_HEAD_COREF, &l, &h) && l == 1 && h == -1, "coref %d/%d", l, h);
    cr_assert(s2s_model_head(r, S2S_HEAD_ALIGN, &l, &h) && l == -1 && h == 0, "alignment %d/%d",
              l, h);
    cr_assert_eq(s2s_model_alignment_share(r), 1.0f);  // not set: the largest weight alone
    s2s_model_free(r);
    // The share travels with the head; it must be in (0, 1].
    cr_assert_eq(s2s_model_set_alignment_share(m, 0.0f), S2S_ERR_INVALID);
    cr_assert_eq(s2s_model_set_alignment_share(m, 1.5f), S2S_ERR_INVALID);
    cr_assert_eq(s2s_model_set_alignment_share(m, 0.25f), S2S_OK);
    cr_assert_eq(s2s_model_save(m, p), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_model_load(&r, p), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_model_alignment_share(r), 0.25f);
    s2s_model_free(r);
    // A half-stored or out-of-range plane is a bad file, named as such.
    const s2s_st_meta bad[][2] = {
        {{"s2s.coref_layer", "0"}, {"s2s.other", "x"}},           // no head
        {{"s2s.coref_layer", "2"}, {"s2s.coref_head", "0"}},      // 2 encoder layers
        {{"s2s.coref_layer", "0"}, {"s2s.coref_head", "1x"}},     // not a number
        {{"s2s.coref_layer", "-9999999999"}, {"s2s.coref_head", "0"}},
    };
    s2s_model *plain = new_model(S2S_NORM_PRE, true, 8, 2, 1);
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(s2s_model_save_extra(plain, p, NULL, 0, bad[k], 2), S2S_OK, "%s", s2s_last_error());
        cr_assert_eq(s2s_model_load(&r, p), S2S_ERR_FORMAT, "case %d", k);
        cr_assert(strstr(s2s_last_error(), "bad s2s.coref_layer/s2s.coref_head metadata"), "%s",
                  s2s_last_error());
    }
    // A share out of range, not a number, or without a head.
    const s2s_st_meta bad_share[][3] = {
        {{"s2s.alignment_layer", "0"}, {"s2s.alignment_head", "0"}, {"s2s.alignment_share", "0"}},
        {{"s2s.alignment_layer", "0"}, {"s2s.alignment_head", "0"}, {"s2s.alignment_share", "x"}},
        {{"s2s.alignment_layer", "0"}, {"s2s.alignment_head", "0"}, {"s2s.alignment_share", "2"}},
        {{"s2s.other", "0"}, {"s2s.other2", "0"}, {"s2s.alignment_share", "0.5"}},
    };
    for (int k = 0; k < 4; k++) {
        cr_assert_eq(s2s_model_save_extra(plain, p, NULL, 0, bad_share[k], 3), S2S_OK, "%s",
                     s2s_last_error());
        cr_assert_eq(s2s_model_load(&r, p), S2S_ERR_FORMAT, "share case %d", k);
        cr_assert(strstr(s2s_last_error(), "bad s2s.alignment_share metadata"), "%s",
                  s2s_last_error());
    }
    s2s_model_free(plain);
    s2s_model_free(m);
}

// ---- the file read without s2s ----

// The vocab file's lines joined by "\n".
static char *vocab_joined(const char *path) {
    size_t n;
    char *text = (char *)slurp(path, &n);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r')) text[--n] = '\0';
    return text;
}

static uint64_t u64_le(const unsigned char *p) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | p[i];
    return n;
}

Test(model, file_is_plain_safetensors_with_s2s_metadata) {
    s2s_model *m = new_model(S2S_NORM_PRE, false, 8, 2, 5);
    scramble(m);
    const char *p = tmp_path("m.safetensors");
    cr_assert_eq(s2s_model_save(m, p), S2S_OK);
    size_t size;
    unsigned char *buf = slurp(p, &size);
    cr_assert_geq(size, 8);
    uint64_t hl = u64_le(buf);
    cr_assert_leq(hl, size - 8);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)buf + 8, hl, 0, &jerr);
    cr_assert_not_null(root, "header is not JSON: %s", jerr.text);
    cr_assert(json_is_object(root));

    json_t *meta = json_object_get(root, "__metadata__");
    cr_assert(json_is_object(meta));
    const char *ver = json_string_value(json_object_get(meta, "s2s.format_version"));
    cr_assert_not_null(ver);
    cr_assert_str_eq(ver, "1");
    cr_assert_str_eq(ver, S2S_FORMAT_VERSION);
    const char *yaml = json_string_value(json_object_get(meta, "s2s.config"));
    cr_assert_not_null(yaml);
    cr_assert(strstr(yaml, "model:"), "s2s.config: %s", yaml);
    // The stored config reads back as the model's config.
    s2s_config c;
    s2s_config_default(&c);
    cr_assert_eq(s2s_config_load_string(&c, yaml, "stored", NULL), S2S_OK, "%s",
                 s2s_last_error());
    const s2s_config *mc = s2s_model_get_config(m);
    cr_assert_eq(c.model.d_model, mc->model.d_model);
    cr_assert_eq(c.model.ffn_dim, mc->model.ffn_dim);
    cr_assert_eq(c.model.norm, mc->model.norm);
    cr_assert_eq(c.model.activation, mc->model.activation);
    cr_assert_eq(c.model.tie_output, mc->model.tie_output);
    cr_assert_eq(c.model.max_len, mc->model.max_len);
    const char *files[2] = {S2S_TEST_DATA "/ref/src.txt", S2S_TEST_DATA "/ref/tgt.txt"};
    const char *keys[2] = {"s2s.src_vocab", "s2s.tgt_vocab"};
    for (int k = 0; k < 2; k++) {
        const char *v = json_string_value(json_object_get(meta, keys[k]));
        cr_assert_not_null(v, "no %s", keys[k]);
        char *expected = vocab_joined(files[k]);
        cr_assert_str_eq(v, expected);
        free(expected);
    }

    // Every tensor: F32, the pinned shape, its bytes where data_offsets say.
    want_list *L = calloc(1, sizeof *L);
    expected_tensors(L, &mc->model, 34, 33);
    cr_assert_eq(json_object_size(root), (size_t)L->n + 1);
    const unsigned char *data = buf + 8 + hl;
    size_t data_size = size - 8 - hl;
    for (int i = 0; i < L->n; i++) {
        json_t *t = json_object_get(root, L->w[i].name);
        cr_assert(json_is_object(t), "no '%s' in the header", L->w[i].name);
        cr_assert_str_eq(json_string_value(json_object_get(t, "dtype")), "F32");
        json_t *shape = json_object_get(t, "shape");
        cr_assert_eq(json_array_size(shape), (size_t)L->w[i].ndim);
        for (int k = 0; k < L->w[i].ndim; k++)
            cr_assert_eq(json_integer_value(json_array_get(shape, (size_t)k)),
                         L->w[i].shape[k], "'%s' dim %d", L->w[i].name, k);
        json_t *off = json_object_get(t, "data_offsets");
        cr_assert_eq(json_array_size(off), 2);
        json_int_t b = json_integer_value(json_array_get(off, 0));
        json_int_t e = json_integer_value(json_array_get(off, 1));
        s2s_tensor_info mt = s2s_model_find_tensor(m, L->w[i].name);
        cr_assert_eq((size_t)(e - b), numel(&mt) * sizeof(float));
        cr_assert_leq((size_t)e, data_size);
        // little-endian floats, as on this machine
        cr_assert_eq(memcmp(data + b, mt.data, (size_t)(e - b)), 0, "'%s' bytes differ",
                     mt.name);
    }
    free(L);
    json_decref(root);
    free(buf);
    s2s_model_free(m);
}

// ---- refusals ----

// m saved at path, and the file's bytes (caller frees).
static unsigned char *saved_bytes(const s2s_model *m, const char *path, size_t *size) {
    cr_assert_eq(s2s_model_save(m, path), S2S_OK, "%s", s2s_last_error());
    return slurp(path, size);
}

// Loading path must fail with a file-format or i/o error, leave *out NULL,
// and say which file and (when given) what is wrong.
static void expect_refusal(const char *path, const char *word) {
    s2s_model *m = (s2s_model *)0x1;
    s2s_status st = s2s_model_load(&m, path);
    cr_assert(st == S2S_ERR_FORMAT || st == S2S_ERR_IO, "status %s (%d) for %s: %s",
              s2s_status_str(st), st, path, s2s_last_error());
    cr_assert_null(m);
    const char *e = s2s_last_error();
    cr_assert(strstr(e, path), "message does not name %s: %s", path, e);
    if (word) cr_assert(strstr(e, word), "expected '%s' in: %s", word, e);
}

Test(model, missing_file_is_an_io_error) {
    const char *p = tmp_path("absent.safetensors");
    s2s_model *m = (s2s_model *)0x1;
    cr_assert_eq(s2s_model_load(&m, p), S2S_ERR_IO);
    expect_refusal(p, "cannot open");
    // A folder is not a model either.
    expect_refusal(tmpdir, NULL);
}

Test(model, truncated_files_are_refused_at_every_length) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 2, 1, 9);
    const char *full = tmp_path("full.safetensors"), *cut = tmp_path("cut.safetensors");
    size_t size;
    unsigned char *buf = saved_bytes(m, full, &size);
    s2s_model *ok;
    cr_assert_eq(s2s_model_load(&ok, full), S2S_OK, "%s", s2s_last_error());
    s2s_model_free(ok);
    for (size_t len = 0; len < size; len++) {
        spit(cut, buf, len);
        expect_refusal(cut, "truncated");
    }
    free(buf);
    s2s_model_free(m);
}

Test(model, corrupt_headers_are_refused) {
    s2s_model *m = new_model(S2S_NORM_POST, false, 4, 1, 11);
    const char *full = tmp_path("full.safetensors"), *bad = tmp_path("bad.safetensors");
    size_t size;
    unsigned char *buf = saved_bytes(m, full, &size);
    unsigned char *copy = malloc(size);
    uint64_t hl = u64_le(buf);

    // A header length beyond the file.
    memcpy(copy, buf, size);
    copy[5] = 0x01;
    spit(bad, copy, size);
    expect_refusal(bad, "header length");
    // A header length that cuts the JSON short.
    memcpy(copy, buf, size);
    copy[0] = (unsigned char)(hl / 2), copy[1] = (unsigned char)(hl / 2 >> 8);
    for (int i = 2; i < 8; i++) copy[i] = 0;
    spit(bad, copy, size);
    expect_refusal(bad, "JSON");
    // Not JSON at all.
    memcpy(copy, buf, size);
    memset(copy + 8, 'x', 16);
    spit(bad, copy, size);
    expect_refusal(bad, "JSON");
    // A dtype s2s does not read.
    memcpy(copy, buf, size);
    char *f32 = strstr((char *)copy + 8, "\"F32\"");
    cr_assert_not_null(f32);
    memcpy(f32, "\"F64\"", 5);
    spit(bad, copy, size);
    expect_refusal(bad, "F64");

    // Any single header byte replaced by '}' or NUL: refused with the file
    // named, or (inside a string) still a loadable model; never a crash.
    int refused = 0;
    for (uint64_t i = 0; i < hl; i++)
        for (int k = 0; k < 2; k++) {
            memcpy(copy, buf, size);
            copy[8 + i] = k ? '}' : '\0';
            spit(bad, copy, size);
            s2s_model *l = NULL;
            s2s_status st = s2s_model_load(&l, bad);
            if (st == S2S_OK) {
                s2s_model_free(l);
                continue;
            }
            cr_assert_null(l);
            cr_assert(strstr(s2s_last_error(), bad), "byte %llu: message does not name the "
                      "file: %s", (unsigned long long)i, s2s_last_error());
            refused++;
        }
    cr_assert_gt(refused, (int)hl, "only %d of %llu corruptions refused", refused,
                 (unsigned long long)(2 * hl));
    free(copy);
    free(buf);
    s2s_model_free(m);
}

// The parts of a model file, to write variants with s2s_st_write.
typedef struct parts {
    s2s_st_tensor t[256];
    int nt;
    s2s_st_meta meta[8];
    int nm;
    char *yaml, *sv, *tv;
} parts;

static void parts_init(parts *p, const s2s_model *m) {
    memset(p, 0, sizeof *p);
    cr_assert_leq(s2s_model_tensor_count(m), 256);
    for (int i = 0; i < s2s_model_tensor_count(m); i++) {
        s2s_tensor_info t = s2s_model_tensor(m, i);
        p->t[p->nt++] = (s2s_st_tensor){.name = t.name, .ndim = t.ndim,
                                        .shape = {t.shape[0], t.shape[1]}, .data = t.data};
    }
    s2s_config c = *s2s_model_get_config(m);
    c.vocab.src[0] = c.vocab.tgt[0] = '\0';
    p->yaml = s2s_config_to_yaml(&c);
    p->sv = s2s_vocab_to_string(s2s_model_src_vocab(m));
    p->tv = s2s_vocab_to_string(s2s_model_tgt_vocab(m));
    cr_assert(p->yaml && p->sv && p->tv);
    p->meta[p->nm++] = (s2s_st_meta){"s2s.format_version", S2S_FORMAT_VERSION};
    p->meta[p->nm++] = (s2s_st_meta){"s2s.config", p->yaml};
    p->meta[p->nm++] = (s2s_st_meta){"s2s.src_vocab", p->sv};
    p->meta[p->nm++] = (s2s_st_meta){"s2s.tgt_vocab", p->tv};
}

static void parts_free(parts *p) {
    free(p->yaml);
    free(p->sv);
    free(p->tv);
}

static int find_tensor(const parts *p, const char *name) {
    for (int i = 0; i < p->nt; i++)
        if (!strcmp(p->t[i].name, name)) return i;
    cr_assert_fail("no tensor '%s'", name);
    return -1;
}

static int find_meta(const parts *p, const char *key) {
    for (int i = 0; i < p->nm; i++)
        if (!strcmp(p->meta[i].key, key)) return i;
    cr_assert_fail("no metadata '%s'", key);
    return -1;
}

static void drop_meta(parts *p, const char *key) {
    int i = find_meta(p, key);
    p->meta[i] = p->meta[--p->nm];
}

static void drop_tensor(parts *p, const char *name) {
    int i = find_tensor(p, name);
    memmove(&p->t[i], &p->t[i + 1], (size_t)(p->nt - i - 1) * sizeof p->t[0]);
    p->nt--;
}

static const char *write_parts(const parts *p, const char *name) {
    const char *path = tmp_path(name);
    cr_assert_eq(s2s_st_write(path, p->t, p->nt, p->meta, p->nm), S2S_OK, "%s",
                 s2s_last_error());
    return path;
}

Test(model, parts_written_by_hand_load) {
    // The helper itself writes loadable files, so the refusals below come
    // from the one thing each of them changes.
    s2s_model *m = new_model(S2S_NORM_PRE, false, 8, 2, 13);
    parts p;
    parts_init(&p, m);
    s2s_model *l;
    cr_assert_eq(s2s_model_load(&l, write_parts(&p, "ok.safetensors")), S2S_OK, "%s",
                 s2s_last_error());
    assert_same_model(m, l);
    s2s_model_free(l);
    // Tensor order in the file does not matter.
    s2s_st_tensor t = p.t[0];
    p.t[0] = p.t[p.nt - 1];
    p.t[p.nt - 1] = t;
    cr_assert_eq(s2s_model_load(&l, write_parts(&p, "swapped.safetensors")), S2S_OK, "%s",
                 s2s_last_error());
    assert_same_model(m, l);
    s2s_model_free(l);
    parts_free(&p);
    s2s_model_free(m);
}

Test(model, wrong_shapes_are_refused) {
    s2s_model *m = new_model(S2S_NORM_PRE, false, 8, 2, 13);  // d 8, f 12
    const char *names[] = {"decoder.layers.1.ffn.fc1.weight",  // [12, 8] as [8, 12]
                           "src_embed.weight", "generator.bias", "encoder.norm.weight"};
    for (int k = 0; k < 4; k++) {
        parts p;
        parts_init(&p, m);
        int i = find_tensor(&p, names[k]);
        s2s_st_tensor *t = &p.t[i];
        if (k == 0) {  // transposed: same byte count
            int64_t s0 = t->shape[0];
            t->shape[0] = t->shape[1];
            t->shape[1] = s0;
        } else if (k == 1) {  // one row fewer
            t->shape[0]--;
        } else if (k == 2) {  // 1-D stored as 2-D
            t->ndim = 2;
            t->shape[1] = 1;
        } else {  // 1-D stored as a shorter vector
            t->shape[0] = 4;
        }
        expect_refusal(write_parts(&p, "shape.safetensors"), names[k]);
        expect_refusal(tmp_path("shape.safetensors"), "shape");
        parts_free(&p);
    }
    s2s_model_free(m);
}

Test(model, missing_tensors_are_refused) {
    s2s_model *m = new_model(S2S_NORM_PRE, false, 8, 2, 13);
    const char *names[] = {"generator.weight", "decoder.norm.bias",
                           "encoder.layers.1.self_attn.v_proj.bias", "tgt_embed.weight"};
    for (int k = 0; k < 4; k++) {
        parts p;
        parts_init(&p, m);
        drop_tensor(&p, names[k]);
        const char *path = write_parts(&p, "missing.safetensors");
        expect_refusal(path, names[k]);
        expect_refusal(path, "missing");
        parts_free(&p);
    }
    s2s_model_free(m);
}

Test(model, unexpected_tensors_are_refused) {
    // A tied model with a generator.weight, and a post-norm model with a
    // final encoder norm: names valid elsewhere but not for this config.
    s2s_model *tied = new_model(S2S_NORM_POST, true, 8, 2, 13);
    s2s_model *untied_pre = new_model(S2S_NORM_PRE, false, 8, 2, 13);
    const char *extra[] = {"generator.weight", "encoder.norm.weight", "decoder.layers.2.norm1.bias",
                           "bogus"};
    for (int k = 0; k < 4; k++) {
        parts p;
        parts_init(&p, tied);
        s2s_tensor_info src = s2s_model_find_tensor(untied_pre, k < 2 ? extra[k] : "decoder.norm.bias");
        cr_assert_not_null(src.data);
        p.t[p.nt++] = (s2s_st_tensor){.name = extra[k], .ndim = src.ndim,
                                      .shape = {src.shape[0], src.shape[1]}, .data = src.data};
        const char *path = write_parts(&p, "extra.safetensors");
        expect_refusal(path, extra[k]);
        expect_refusal(path, "unexpected");
        parts_free(&p);
    }
    s2s_model_free(tied);
    s2s_model_free(untied_pre);
}

Test(model, wrong_or_missing_format_version_is_refused) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 8, 1, 13);
    parts p;
    parts_init(&p, m);
    p.meta[find_meta(&p, "s2s.format_version")].value = "2";
    const char *path = write_parts(&p, "v2.safetensors");
    expect_refusal(path, "version");
    expect_refusal(path, "2");
    p.meta[find_meta(&p, "s2s.format_version")].value = "";
    expect_refusal(write_parts(&p, "vempty.safetensors"), "version");
    drop_meta(&p, "s2s.format_version");
    expect_refusal(write_parts(&p, "v0.safetensors"), "s2s.format_version");
    // A plain safetensors file with no metadata at all.
    expect_refusal(s2s_st_write(tmp_path("plain.safetensors"), p.t, p.nt, NULL, 0) == S2S_OK
                       ? tmp_path("plain.safetensors")
                       : "write failed",
                   "s2s.format_version");
    parts_free(&p);
    s2s_model_free(m);
}

Test(model, missing_metadata_is_refused) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 8, 1, 13);
    const char *keys[] = {"s2s.config", "s2s.src_vocab", "s2s.tgt_vocab"};
    for (int k = 0; k < 3; k++) {
        parts p;
        parts_init(&p, m);
        drop_meta(&p, keys[k]);
        expect_refusal(write_parts(&p, "nometa.safetensors"), keys[k]);
        parts_free(&p);
    }
    s2s_model_free(m);
}

Test(model, bad_config_inside_the_file_is_refused) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 8, 1, 13);
    const struct {
        const char *yaml, *word;
    } cases[] = {
        {"model:\n  d_model: banana\n", "d_model"},
        {"model:\n  heads: 0\n", "heads"},
        {"model:\n  norm: sideways\n", "norm"},
        {"model: [\n", NULL},
        {"model:\n  d_model: 8\n  heads: 3\n", "heads"},  // 8 % 3 != 0
        {"model:\n  wings: 2\n", "wings"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        parts p;
        parts_init(&p, m);
        p.meta[find_meta(&p, "s2s.config")].value = cases[k].yaml;
        const char *path = write_parts(&p, "badcfg.safetensors");
        expect_refusal(path, cases[k].word);
        parts_free(&p);
    }
    // A valid config that does not match the tensors.
    parts p;
    parts_init(&p, m);
    p.meta[find_meta(&p, "s2s.config")].value =
        "model:\n  d_model: 8\n  heads: 2\n  encoder_layers: 1\n  decoder_layers: 1\n"
        "  ffn_dim: 16\n  norm: pre\n  tie_output: true\n  max_len: 16\n";
    expect_refusal(write_parts(&p, "mismatch.safetensors"), "ffn.fc1");
    parts_free(&p);
    s2s_model_free(m);
}

Test(model, bad_vocab_inside_the_file_is_refused) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 8, 1, 13);
    parts p;
    parts_init(&p, m);
    // A duplicate token, and a vocabulary whose size no longer matches.
    p.meta[find_meta(&p, "s2s.src_vocab")].value = "<pad>\n<unk>\n<s>\n</s>\ncat\ncat";
    expect_refusal(write_parts(&p, "dup.safetensors"), "cat");
    p.meta[find_meta(&p, "s2s.src_vocab")].value = "<pad>\n<unk>\n<s>\n</s>\ncat";
    expect_refusal(write_parts(&p, "small.safetensors"), "src_embed.weight");
    parts_free(&p);
    s2s_model_free(m);
}

// ---- hostile sizes (issue 14, items 2 and 6) ----

static double seconds_since(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

// init must fail with S2S_ERR_CONFIG, fast (nothing per weight or per
// layer), with `word` in the message.
static void expect_init_refused(const s2s_config *c, const char *word) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    s2s_model *m = (s2s_model *)0x1;
    s2s_status st = s2s_model_init(&m, c, 1);
    double dt = seconds_since(&t0);
    cr_assert_eq(st, S2S_ERR_CONFIG, "status %d: %s", st, s2s_last_error());
    cr_assert_null(m);
    cr_assert(strstr(s2s_last_error(), word), "expected '%s' in: %s", word, s2s_last_error());
    cr_assert_lt(dt, 2.0, "took %.1f s", dt);
}

Test(model, init_refuses_sizes_that_overflow_or_pass_the_limits) {
    // Issue 14's config: passed the config check, then wrote 8.7e9 floats
    // into a 0.9 MB block.
    s2s_config c = small_cfg(S2S_NORM_PRE, false, 8, 1);
    c.model.d_model = 1239840486;
    c.model.ffn_dim = 58647;
    expect_init_refused(&c, "more than 4294967296 weights");
    c.model.d_model = 2;
    c.model.ffn_dim = INT32_MAX;
    expect_init_refused(&c, "weights");
    // Five million layers (within the config's weight bound: 448 weights
    // each) stop at the tensor limit, not after a walk over all of them.
    c = small_cfg(S2S_NORM_PRE, false, 8, 1);
    c.model.encoder_layers = 5000000;
    expect_init_refused(&c, "tensors");
    // The position table: up to 2^20 floats for a small model, here
    // max_len 131072 at d_model 8.
    c = small_cfg(S2S_NORM_PRE, false, 8, 1);
    c.model.max_len = 250000000;
    expect_init_refused(&c, "max_len up to 131072");
    c.model.max_len = 131073;
    expect_init_refused(&c, "max_len 131073");
    c.model.max_len = 131072;
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, &c, 1), S2S_OK, "%s", s2s_last_error());
    s2s_model_free(m);
}

// Replaces the config stored by write_parts.
static void parts_set_config(parts *p, const s2s_config *c) {
    s2s_config copy = *c;
    copy.vocab.src[0] = copy.vocab.tgt[0] = '\0';
    free(p->yaml);
    p->yaml = s2s_config_to_yaml(&copy);
    cr_assert_not_null(p->yaml);
    p->meta[find_meta(p, "s2s.config")].value = p->yaml;
}

// Issue 14 item 6: a 7 kB file whose stored config asks for far more than
// its data made the loader allocate (3.9 GB for max_len 250000000) or walk
// (100000000 layers) for seconds before reading a tensor. (20000000 layers
// here: more would break the config's own weight bound first.)
Test(model, stored_config_is_checked_against_the_file_before_allocating) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 4, 1, 21);
    const struct {
        int d, ffn, enc, max_len;
        const char *word;
    } cases[] = {
        {4, 8, 1, 250000000, "max_len 250000000"},
        {4, 8, 20000000, 16, "missing tensor 'encoder.layers.1.self_attn.q_proj.weight'"},
        {1239840486, 58647, 1, 16, "more than 4294967296 weights"},
        {16384, 8, 1, 16, "'src_embed.weight' has shape [34, 4], the config needs [34, 16384]"},
        {4, 100000000, 1, 16, "encoder.layers.0.ffn.fc1.weight"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        parts p;
        parts_init(&p, m);
        s2s_config c = *s2s_model_get_config(m);
        c.model.d_model = cases[k].d;
        c.model.ffn_dim = cases[k].ffn;
        c.model.encoder_layers = cases[k].enc;
        c.model.max_len = cases[k].max_len;
        parts_set_config(&p, &c);
        const char *path = write_parts(&p, "big.safetensors");
        struct stat sb;
        cr_assert_eq(stat(path, &sb), 0);
        cr_assert_lt(sb.st_size, 16000, "the file is small");
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        expect_refusal(path, cases[k].word);
        cr_assert_lt(seconds_since(&t0), 2.0, "case %zu took %.1f s", k, seconds_since(&t0));
        parts_free(&p);
    }
    s2s_model_free(m);
}

// ---- silently wrong weights (items 1 and 7) ----

Test(model, non_finite_weights_are_refused_naming_the_tensor) {
    s2s_model *m = new_model(S2S_NORM_PRE, false, 8, 1, 23);
    const float bad[] = {NAN, INFINITY, -INFINITY};
    const char *shown[] = {"NaN", "an infinity", "an infinity"};
    for (int k = 0; k < 3; k++) {
        parts p;
        parts_init(&p, m);
        int i = find_tensor(&p, "decoder.layers.0.ffn.fc2.bias");
        float copy[8];
        cr_assert_eq(p.t[i].shape[0], 8);
        memcpy(copy, p.t[i].data, sizeof copy);
        copy[5] = bad[k];
        p.t[i].data = copy;
        expect_refusal(write_parts(&p, "nan.safetensors"),
                       "tensor 'decoder.layers.0.ffn.fc2.bias' holds");
        cr_assert(strstr(s2s_last_error(), shown[k]) && strstr(s2s_last_error(), "at index 5"),
                  "%s", s2s_last_error());
        parts_free(&p);
    }
    s2s_model_free(m);
}

// A header length that points into the JSON's padding shifts the data
// section: every tensor was read a byte off, and the load succeeded.
Test(model, header_length_off_by_some_bytes_is_refused) {
    s2s_model *m = new_model(S2S_NORM_POST, true, 4, 1, 25);
    const char *full = tmp_path("full.safetensors"), *bad = tmp_path("bad.safetensors");
    size_t size;
    unsigned char *buf = saved_bytes(m, full, &size);
    uint64_t hl = u64_le(buf);
    size_t json = (size_t)hl;
    while (json > 0 && buf[8 + json - 1] == ' ') json--;
    // The same file with 8 more bytes of padding, so that lengths inside
    // the padding exist whatever the JSON's length.
    size_t pad = (size_t)hl - json + 8, n = 8 + json + pad + (size - 8 - (size_t)hl);
    unsigned char *copy = malloc(n);
    memcpy(copy + 8, buf + 8, json);
    memset(copy + 8 + json, ' ', pad);
    memcpy(copy + 8 + json + pad, buf + 8 + hl, size - 8 - (size_t)hl);
    for (size_t len = json - 2; len <= json + pad + 2; len++) {
        for (int i = 0; i < 8; i++) copy[i] = (unsigned char)((uint64_t)len >> (8 * i));
        spit(bad, copy, n);
        s2s_model *l = NULL;
        s2s_status st = s2s_model_load(&l, bad);
        if (len == json + pad) {
            cr_assert_eq(st, S2S_OK, "the padded file: %s", s2s_last_error());
            assert_same_model(m, l);
            s2s_model_free(l);
        } else {
            cr_assert_eq(st, S2S_ERR_FORMAT, "length %zu of %zu loaded", len, json + pad);
            cr_assert_null(l);
            cr_assert(strstr(s2s_last_error(), bad), "%s", s2s_last_error());
            if (len > json && len < json + pad)
                cr_assert(strstr(s2s_last_error(), "belong to no tensor"), "%s",
                          s2s_last_error());
        }
    }
    free(copy);
    free(buf);
    s2s_model_free(m);
}

// ---- control characters from the file (item 9) ----

static void expect_refusal_escaped(const char *path, const char *quoted) {
    expect_refusal(path, quoted);
    for (const char *c = s2s_last_error(); *c; c++)
        cr_assert((unsigned char)*c >= 0x20 && *c != 0x7f, "control byte %#x in: %s", *c,
                  s2s_last_error());
}

Test(model, control_characters_from_the_file_are_escaped_in_messages) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 8, 1, 13);
    parts p;
    parts_init(&p, m);
    // A vocab token clearing the screen (refused: ESC is white space to the
    // tokenizer), and one with a C1 CSI (U+009B), twice.
    p.meta[find_meta(&p, "s2s.src_vocab")].value =
        "<pad>\n<unk>\n<s>\n</s>\n\x1b[2J\x1b[31mred";
    expect_refusal_escaped(write_parts(&p, "esc.safetensors"),
                           "token '\\x1b[2J\\x1b[31mred'");
    p.meta[find_meta(&p, "s2s.src_vocab")].value =
        "<pad>\n<unk>\n<s>\n</s>\na\xc2\x9b" "2J\na\xc2\x9b" "2J";
    expect_refusal_escaped(write_parts(&p, "esc.safetensors"),
                           "duplicate token 'a\\xc2\\x9b2J'");
    p.meta[find_meta(&p, "s2s.src_vocab")].value = p.sv;
    // A tensor name setting the terminal's title; a C1 CSI in the version.
    s2s_tensor_info src = s2s_model_tensor(m, 0);
    p.t[p.nt++] = (s2s_st_tensor){.name = "x\x1b]0;pwned\x07", .ndim = 1, .shape = {4},
                                  .data = src.data};
    expect_refusal_escaped(write_parts(&p, "esc.safetensors"),
                           "unexpected tensor 'x\\x1b]0;pwned\\x07'");
    p.nt--;
    p.meta[find_meta(&p, "s2s.format_version")].value = "\xc2\x9b" "2J";
    expect_refusal_escaped(write_parts(&p, "esc.safetensors"), "version '\\xc2\\x9b2J'");
    parts_free(&p);
    s2s_model_free(m);
}

// ---- writing weights (issue 13 move 5, issue 14 item 3) ----

Test(model, views_are_read_only_and_set_tensor_writes_through_them) {
    s2s_model *m = new_model(S2S_NORM_PRE, false, 8, 1, 31);
    s2s_tensor_info b = s2s_model_find_tensor(m, "generator.bias");
    size_t n = numel(&b);
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = 0.5f * (float)i - 3.0f;
    cr_assert_eq(s2s_model_set_tensor(m, "generator.bias", v, n), S2S_OK, "%s",
                 s2s_last_error());
    // A view taken before shows the new values.
    for (size_t i = 0; i < n; i++) cr_assert_eq(b.data[i], v[i]);
    cr_assert_eq(s2s_model_set_tensor(m, "generator.bias", v, n - 1), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "takes"), "%s", s2s_last_error());
    cr_assert_eq(s2s_model_set_tensor(m, "generator.bias", NULL, n), S2S_ERR_INVALID);
    cr_assert_eq(s2s_model_set_tensor(m, "nonsense", v, n), S2S_ERR_INVALID);
    cr_assert(strstr(s2s_last_error(), "no tensor 'nonsense'"), "%s", s2s_last_error());
    for (size_t i = 0; i < n; i++) cr_assert_eq(b.data[i], v[i], "a refused write changed %zu", i);

    // The write reaches decoding, also after a first decode made its copy:
    // with one target token far likelier than any other, greedy emits it.
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(m);
    p.threads = 1;
    p.decode.no_repeat_ngram_size = 0;  // the token repeats, as the guard would forbid
    p.decode.repetition_penalty = 1.0f;
    p.decode.no_immediate_repeat = false;  // and as the no-stutter rule would
    int src[3] = {5, 6, 7}, len = 3;
    const int *srcs[1] = {src};
    s2s_hypothesis h;
    for (int round = 0; round < 2; round++) {
        int token = round ? 9 : 8;
        memset(v, 0, n * sizeof *v);
        v[token] = 100.0f;
        cr_assert_eq(s2s_model_set_tensor(m, "generator.bias", v, n), S2S_OK);
        cr_assert_eq(s2s_translate(st, &p, srcs, &len, 1, &h), S2S_OK, "%s", s2s_last_error());
        cr_assert_gt(h.n, 0);
        for (int t = 0; t < h.n; t++) cr_assert_eq(h.ids[t], token, "round %d token %d", round, t);
        s2s_hypothesis_free(&h);
    }
    s2s_state_free(st);
    free(v);
    s2s_model_free(m);
}

// A thread that holds the model as a decode does, until told to let go.
typedef struct holder {
    const s2s_model *m;
    pthread_barrier_t held, done;
} holder;

static void *hold_model(void *arg) {
    holder *h = arg;
    cr_assert_eq(s2s_model_acquire(h->m), S2S_OK);
    pthread_barrier_wait(&h->held);
    pthread_barrier_wait(&h->done);
    s2s_model_release(h->m);
    return NULL;
}

Test(model, set_tensor_is_refused_while_a_decode_holds_the_model) {
    s2s_model *m = new_model(S2S_NORM_PRE, false, 8, 1, 33);
    s2s_tensor_info b = s2s_model_find_tensor(m, "generator.bias");
    size_t n = numel(&b);
    float *before = malloc(n * sizeof *before), *v = calloc(n, sizeof *v);
    memcpy(before, b.data, n * sizeof *before);
    holder h = {.m = m};
    pthread_barrier_init(&h.held, NULL, 2);
    pthread_barrier_init(&h.done, NULL, 2);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, hold_model, &h), 0);
    pthread_barrier_wait(&h.held);
    cr_assert_eq(s2s_model_set_tensor(m, "generator.bias", v, n), S2S_ERR_BUSY);
    cr_assert(strstr(s2s_last_error(), "being decoded"), "%s", s2s_last_error());
    cr_assert_eq(memcmp(b.data, before, n * sizeof *before), 0, "a refused write changed weights");
    pthread_barrier_wait(&h.done);
    pthread_join(t, NULL);
    cr_assert_eq(s2s_model_set_tensor(m, "generator.bias", v, n), S2S_OK, "%s", s2s_last_error());
    pthread_barrier_destroy(&h.held);
    pthread_barrier_destroy(&h.done);
    free(before);
    free(v);
    s2s_model_free(m);
}

// Issue 14 item 3: s2s_model_find_tensor while other threads decoded freed
// the decoding copy under them. Now two threads decode, one reads views
// and one tries to write: every decode succeeds, with the same output,
// every write is refused or done whole (the sanitizers watch the memory).
typedef struct race {
    s2s_model *m;
    int ref[16], ref_n;  // greedy output before the race
    const char *written_name;
    volatile int stop;
    int decodes, busy, written;
    int running;  // decode threads not yet done
} race;

static void *decode_loop(void *arg) {
    race *r = arg;
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, r->m), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(r->m);
    p.threads = 1;
    int src[4] = {5, 9, 6, 7}, len = 4;
    const int *srcs[1] = {src};
    // 40 decodes each, and on until the writer has met one (a busy machine
    // may not let a write and a decode overlap sooner), at most 20,000.
    for (int i = 0; i < 40 || (!__atomic_load_n(&r->busy, __ATOMIC_RELAXED) && i < 20000); i++) {
        s2s_hypothesis h;
        cr_assert_eq(s2s_translate(st, &p, srcs, &len, 1, &h), S2S_OK, "%s", s2s_last_error());
        cr_assert_eq(h.n, r->ref_n);
        cr_assert_eq(memcmp(h.ids, r->ref, sizeof(int) * (size_t)h.n), 0, "decode %d differs", i);
        s2s_hypothesis_free(&h);
        __atomic_add_fetch(&r->decodes, 1, __ATOMIC_RELAXED);
    }
    s2s_state_free(st);
    __atomic_sub_fetch(&r->running, 1, __ATOMIC_RELEASE);
    return NULL;
}

// Reads every tensor but the one being written (reading that one while it
// is written would race, as with any memory).
static void *read_loop(void *arg) {
    race *r = arg;
    volatile float sum = 0;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
        for (int i = 0; i < s2s_model_tensor_count(r->m); i++) {
            s2s_tensor_info t = s2s_model_find_tensor(r->m, s2s_model_tensor(r->m, i).name);
            if (strcmp(t.name, r->written_name)) sum += t.data[0];
        }
    return NULL;
}

Test(model, writes_while_threads_decode_are_refused_never_corrupting) {
    race r = {.m = new_model(S2S_NORM_PRE, false, 8, 1, 35)};
    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, r.m), S2S_OK);
    s2s_decode_params p = s2s_decode_default_params(r.m);
    int src[4] = {5, 9, 6, 7}, len = 4;
    const int *srcs[1] = {src};
    s2s_hypothesis h;
    cr_assert_eq(s2s_translate(st, &p, srcs, &len, 1, &h), S2S_OK);
    cr_assert_leq(h.n, 16);
    r.ref_n = h.n;
    memcpy(r.ref, h.ids, sizeof(int) * (size_t)h.n);
    s2s_hypothesis_free(&h);
    s2s_state_free(st);

    // Writes of the values already there: decoding must not change, and a
    // write that got through still makes decoding rebuild its copy.
    s2s_tensor_info w = s2s_model_find_tensor(r.m, "decoder.layers.0.ffn.fc1.weight");
    size_t n = numel(&w);
    float *same = malloc(n * sizeof *same);
    memcpy(same, w.data, n * sizeof *same);
    r.written_name = w.name;
    pthread_t dec[2], rd;
    r.running = 2;
    for (int i = 0; i < 2; i++) cr_assert_eq(pthread_create(&dec[i], NULL, decode_loop, &r), 0);
    cr_assert_eq(pthread_create(&rd, NULL, read_loop, &r), 0);
    while (__atomic_load_n(&r.running, __ATOMIC_ACQUIRE) > 0) {  // writes while they decode
        s2s_status s = s2s_model_set_tensor(r.m, w.name, same, n);
        cr_assert(s == S2S_OK || s == S2S_ERR_BUSY, "status %d: %s", s, s2s_last_error());
        if (s == S2S_OK) r.written++;
        else __atomic_add_fetch(&r.busy, 1, __ATOMIC_RELAXED);
    }
    cr_assert_geq(r.decodes, 80);
    for (int i = 0; i < 2; i++) pthread_join(dec[i], NULL);
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    pthread_join(rd, NULL);
    cr_assert_gt(r.busy, 0, "no write was refused in %d tries", r.busy + r.written);
    cr_assert_eq(s2s_model_set_tensor(r.m, w.name, same, n), S2S_OK, "%s", s2s_last_error());
    free(same);
    s2s_model_free(r.m);
}

// ---- quantised files and compute types ----

// The reference int8 rule, written out: per row s = max |w| / 127,
// q = round-half-even(w / s).
static float ref_row_scale(const float *w, int64_t n) {
    float amax = 0;
    for (int64_t j = 0; j < n; j++) amax = fabsf(w[j]) > amax ? fabsf(w[j]) : amax;
    return amax > 0 ? amax / 127.0f : 1.0f;
}

static bool is_decoding_matrix(const char *name) {
    return strstr(name, "self_attn.") || strstr(name, ".fc1.") || strstr(name, ".fc2.") ||
           strstr(name, "generator.");
}

Test(model, quantized_files_round_trip) {
    s2s_model *m = new_model(S2S_NORM_PRE, false, 8, 2, 3);
    scramble(m);
    const char *p8 = tmp_path("q8.safetensors"), *p8b = tmp_path("q8b.safetensors");
    const char *pb = tmp_path("qb.safetensors");
    cr_assert_eq(s2s_model_save_quantized(m, p8, S2S_COMPUTE_INT8), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_model_save_quantized(m, pb, S2S_COMPUTE_BF16), S2S_OK, "%s", s2s_last_error());
    cr_assert_neq(s2s_model_save_quantized(m, pb, S2S_COMPUTE_FP32), S2S_OK);
    // the file: decoding matrices I8 with F32 scales per row, the rest F32
    s2s_st_file *f;
    cr_assert_eq(s2s_st_open(&f, p8), S2S_OK, "%s", s2s_last_error());
    int n_i8 = 0;
    for (int i = 0; i < s2s_model_tensor_count(m); i++) {
        s2s_tensor_info t = s2s_model_tensor(m, i);
        const s2s_st_tensor *ft = s2s_st_find(f, t.name);
        bool q = t.ndim == 2 && is_decoding_matrix(t.name);
        cr_assert_eq(ft->dtype, q ? S2S_ST_I8 : S2S_ST_F32, "%s", t.name);
        char sn[96];
        snprintf(sn, sizeof sn, "%s_scale", t.name);
        const s2s_st_tensor *sc = s2s_st_find(f, sn);
        cr_assert_eq(sc != NULL, q, "%s", sn);
        if (q) cr_assert(sc->dtype == S2S_ST_F32 && sc->ndim == 1 && sc->shape[0] == t.shape[0]);
        n_i8 += q;
    }
    cr_assert_eq(n_i8, 2 * 2 * 6 + 1);  // 2+2 layers x (q, k, v, out, fc1, fc2), generator
    s2s_st_close(f);

    s2s_model *l8 = NULL, *lb = NULL;
    cr_assert_eq(s2s_model_load(&l8, p8), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_model_load(&lb, pb), S2S_OK, "%s", s2s_last_error());
    for (int i = 0; i < s2s_model_tensor_count(m); i++) {
        s2s_tensor_info t = s2s_model_tensor(m, i), a = s2s_model_tensor(l8, i),
                        b = s2s_model_tensor(lb, i);
        int64_t rows = t.shape[0], cols = t.ndim == 2 ? t.shape[1] : 1;
        bool q = t.ndim == 2 && is_decoding_matrix(t.name);
        for (int64_t r = 0; r < rows; r++) {
            float s = ref_row_scale(t.data + r * cols, cols);
            for (int64_t j = 0; j < cols; j++) {
                float w = t.data[r * cols + j];
                float want8 = q ? nearbyintf(w / s) * s : w;
                cr_assert_float_eq(a.data[r * cols + j], want8, 1e-6f * s + 1e-30f, "%s", t.name);
                if (!q) cr_assert_eq(b.data[r * cols + j], w, "%s", t.name);
                else cr_assert_float_eq(b.data[r * cols + j], w, fabsf(w) / 256.0f, "%s", t.name);
            }
        }
    }
    // quantising the dequantised model again writes the same bytes
    cr_assert_eq(s2s_model_save_quantized(l8, p8b, S2S_COMPUTE_INT8), S2S_OK);
    size_t n1, n2;
    unsigned char *b1 = slurp(p8, &n1), *b2 = slurp(p8b, &n2);
    cr_assert(n1 == n2 && memcmp(b1, b2, n1) == 0);
    free(b1), free(b2);
    s2s_model_free(l8), s2s_model_free(lb), s2s_model_free(m);
}

Test(model, compute_type_makes_the_decoding_copy_in_that_type) {
    s2s_model *m = new_model(S2S_NORM_PRE, true, 8, 1, 5);
    scramble(m);
    cr_assert_eq(s2s_model_compute_type(m), S2S_COMPUTE_FP32);
    cr_assert_neq(s2s_model_set_compute_type(m, S2S_COMPUTE_COUNT), S2S_OK);
    cr_assert_eq(s2s_model_set_compute_type(m, S2S_COMPUTE_INT8), S2S_OK);
    const s2s_decode_weights *w;
    cr_assert_eq(s2s_model_decode_weights(m, &w), S2S_OK);
    cr_assert_eq(w->compute, S2S_COMPUTE_INT8);
    // (decoder sublayers: 0 self-attention, 1 cross-attention, 2 FFN)
    // fc1 (F, D): the copy holds W1^T (D, F) in s8, one scale per column
    const s2s_ffn_weights *ffn = &w->dec[0].sub[2].ffn;
    int64_t d = 8, f = 12;
    cr_assert_eq(ffn->m1.type, S2S_COMPUTE_INT8);
    cr_assert_not_null(ffn->m1.comp);
    cr_assert_eq(ffn->w1, m->dec[0].sub[2].ffn.w1);  // fp32 pointers: the model's own
    const int8_t *q = ffn->m1.w;
    for (int64_t n = 0; n < f; n++) {
        const float *row = m->dec[0].sub[2].ffn.w1 + n * d;
        float s = ref_row_scale(row, d);
        cr_assert_float_eq(ffn->m1.scale[n], s, 1e-9f);
        for (int64_t k = 0; k < d; k++) cr_assert_eq(q[k * f + n], (int8_t)nearbyintf(row[k] / s));
    }
    cr_assert_eq(w->gen.type, S2S_COMPUTE_INT8);
    cr_assert_null(w->gen_w);
    cr_assert_null(w->dec[0].sub[1].attn.kv.w);  // cross-attention stays fp32 in int8
    cr_assert_eq(s2s_model_set_compute_type(m, S2S_COMPUTE_BF16), S2S_OK);
    cr_assert_eq(s2s_model_decode_weights(m, &w), S2S_OK);
    cr_assert_eq(w->compute, S2S_COMPUTE_BF16);
    cr_assert_eq(w->enc[0].sub[0].attn.qkv.type, S2S_COMPUTE_BF16);
    // bf16 only: cross-attention's W_q^T (D, D), W_kv^T (D, 2D), W_out^T (D, D)
    const s2s_attn_weights *ca = &w->dec[0].sub[1].attn, *mc = &m->dec[0].sub[1].attn;
    const s2s_wmat *cross[3] = {&ca->qkv, &ca->kv, &ca->out};
    const float *src[3] = {mc->w_qkv, mc->w_qkv + d * d, mc->w_out};
    int64_t cols[3] = {d, 2 * d, d};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(cross[i]->type, S2S_COMPUTE_BF16);
        const uint16_t *h = cross[i]->w;
        for (int64_t n = 0; n < cols[i]; n++)
            for (int64_t k = 0; k < d; k++) {
                float v = src[i][n * d + k], got;
                s2s_from_bf16(&got, &h[k * cols[i] + n], 1);
                cr_assert_leq(fabsf(got - v), fabsf(v) / 256.0f, "part %d (%lld, %lld)", i,
                              (long long)n, (long long)k);
            }
    }
    cr_assert_eq(ca->w_qkv, mc->w_qkv);  // the fold still reads the fp32 matrices
    // auto: what this CPU runs fastest (s2s_compute_type_resolve)
    cr_assert_eq(s2s_model_set_compute_type(m, S2S_COMPUTE_AUTO), S2S_OK);
    cr_assert_neq(s2s_model_compute_type(m), S2S_COMPUTE_AUTO);
    cr_assert_eq(s2s_model_compute_type(m), s2s_compute_type_resolve(S2S_COMPUTE_AUTO));
    s2s_model_free(m);
}
