// Tests for training (src/train): Adam/AdamW, clipping and LR schedules
// against hand-computed numbers, BLEU against worked examples, TSV errors
// and batching properties, gold alignments for guided alignment, the
// label-smoothed loss against log-probs from s2s_score, learning the
// reverse task (also with guided alignment), and resume equivalence.
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "s2s/decode.h"
#include "s2s/train.h"
#include "model/model_internal.h"
#include "model/safetensors.h"
#include "train/data.h"
#include "train/graph.h"
#include "train/metrics.h"
#include "train/optim.h"
#include "support.h"

#define DIR S2S_TEST_DATA "/train"
#define FIX(name) DIR "/" name

// ---- helpers ----

static void assert_near(double got, double want, double rel, const char *what) {
    double tol = rel * fmax(1.0, fabs(want));
    cr_assert(fabs(got - want) <= tol, "%s: got %.10g, want %.10g", what, got, want);
}

// One thread: these matrices are small, and a busy 2-core CI machine makes
// two threads wait on each other many times slower.
static void make_tmpdir(void) {
    tmpdir_make();
    s2s_set_threads(1);
}

static s2s_vocab *digits(void) {
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_load(&v, FIX("digits.txt")), S2S_OK, "%s", s2s_last_error());
    return v;
}

// ---- Adam, clipping, schedules ----

Test(optim, adam_two_steps_match_hand_computation) {
    float p[3] = {1.0f, -2.0f, 0.5f}, m[3] = {0}, v[3] = {0};
    const float g1[3] = {0.1f, -0.2f, 0.3f}, g2[3] = {0.2f, 0.0f, -0.3f};
    s2s_adam_params a = {.beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f, .weight_decay = 0};
    s2s_adam_step(p, m, v, g1, 3, 0.01, &a, 1);
    // Step 1: m_hat = g, v_hat = g^2, so each weight moves by lr against sign(g).
    const double want1[3] = {0.99, -1.99, 0.49};
    for (int i = 0; i < 3; i++) assert_near(p[i], want1[i], 1e-6, "step 1");
    assert_near(m[0], 0.01, 1e-6, "m after step 1");
    assert_near(v[2], 0.0018, 1e-6, "v after step 1");
    s2s_adam_step(p, m, v, g2, 3, 0.01, &a, 2);
    // By hand: m = (0.029, -0.018, -0.003), v = (0.000996, 0.000784, 0.003564),
    // bias corrections 0.19 and 0.0396.
    const double want2[3] = {0.980375852, -1.983267002, 0.490526316};
    for (int i = 0; i < 3; i++) assert_near(p[i], want2[i], 1e-6, "step 2");
}

Test(optim, adamw_decays_before_the_update) {
    float p[3] = {1.0f, -2.0f, 0.5f}, m[3] = {0}, v[3] = {0};
    const float g[3] = {0.1f, -0.2f, 0.3f};
    s2s_adam_params a = {.beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f, .weight_decay = 0.1f};
    s2s_adam_step(p, m, v, g, 3, 0.01, &a, 1);
    // p * (1 - lr*wd) - lr*sign(g)
    const double want[3] = {0.999 - 0.01, -1.998 + 0.01, 0.4995 - 0.01};
    for (int i = 0; i < 3; i++) assert_near(p[i], want[i], 1e-6, "adamw");
}

Test(optim, clipping_scales_to_the_norm_like_torch) {
    float g[2] = {3, 4};
    cr_assert_float_eq(s2s_clip_grad_norm(g, 2, 1.0), 5.0, 1e-9);
    assert_near(g[0], 3 / (5 + 1e-6), 1e-7, "clipped g0");
    assert_near(g[1], 4 / (5 + 1e-6), 1e-7, "clipped g1");
    float h[2] = {3, 4};
    s2s_clip_grad_norm(h, 2, 10.0);  // under the limit: untouched
    cr_assert(h[0] == 3 && h[1] == 4);
    s2s_clip_grad_norm(h, 2, 0.0);  // 0 = off
    cr_assert(h[0] == 3 && h[1] == 4);
}

Test(optim, schedules_match_their_formulas) {
    // noam: lr * d^-0.5 * min(t^-0.5, t * w^-1.5), lr 2, d 512, warmup 4000.
    assert_near(s2s_lr_at(S2S_SCHEDULE_NOAM, 2, 1, 4000, 512, 0), 3.493856214843422e-07, 1e-9, "noam 1");
    assert_near(s2s_lr_at(S2S_SCHEDULE_NOAM, 2, 4000, 4000, 512, 0), 0.0013975424859373686, 1e-9,
                "noam peak");
    assert_near(s2s_lr_at(S2S_SCHEDULE_NOAM, 2, 16000, 4000, 512, 0), 0.0006987712429686843, 1e-9,
                "noam decay");
    // inverse_sqrt: linear warmup to lr at t = warmup, then lr * sqrt(warmup / t).
    assert_near(s2s_lr_at(S2S_SCHEDULE_INVERSE_SQRT, 1e-3, 50, 100, 0, 0),
                5e-4, 1e-12, "isqrt 50");
    assert_near(s2s_lr_at(S2S_SCHEDULE_INVERSE_SQRT, 1e-3, 100, 100, 0, 0),
                1e-3, 1e-12, "isqrt 100");
    assert_near(s2s_lr_at(S2S_SCHEDULE_INVERSE_SQRT, 1e-3, 400, 100, 0, 0),
                5e-4, 1e-12, "isqrt 400");
    // cosine: warmup 10, then half a cosine down to 0 at max_steps 110.
    assert_near(s2s_lr_at(S2S_SCHEDULE_COSINE, 1e-3, 5, 10, 0, 110), 5e-4, 1e-12, "cos 5");
    assert_near(s2s_lr_at(S2S_SCHEDULE_COSINE, 1e-3, 10, 10, 0, 110), 1e-3, 1e-12, "cos 10");
    assert_near(s2s_lr_at(S2S_SCHEDULE_COSINE, 1e-3, 60, 10, 0, 110), 5e-4, 1e-12, "cos 60");
    assert_near(s2s_lr_at(S2S_SCHEDULE_COSINE, 1e-3, 110, 10, 0, 110), 0, 1e-12, "cos end");
    assert_near(s2s_lr_at(S2S_SCHEDULE_CONSTANT, 1e-3, 12345, 10, 0, 110), 1e-3, 1e-12, "constant");
}

// ---- BLEU ----

static double bleu_of(const char *hyp, const char *ref) {
    // Whitespace-separated test sentences, one pair.
    char hb[256], rb[256];
    const char *h[32], *r[32];
    int nh = 0, nr = 0;
    snprintf(hb, sizeof hb, "%s", hyp);
    snprintf(rb, sizeof rb, "%s", ref);
    for (char *t = strtok(hb, " "); t; t = strtok(NULL, " ")) h[nh++] = t;
    for (char *t = strtok(rb, " "); t; t = strtok(NULL, " ")) r[nr++] = t;
    s2s_bleu_stats s = {0};
    cr_assert_eq(s2s_bleu_add(&s, h, nh, r, nr), S2S_OK);
    return s2s_bleu_score(&s);
}

Test(metrics, bleu_perfect_match_is_100) {
    assert_near(bleu_of("the cat sat on the mat", "the cat sat on the mat"), 100, 1e-12, "bleu");
}

Test(metrics, bleu_partial_match_by_hand) {
    // p1 = 5/6, p2 = 3/5, p3 = 1/4, p4 = 0/3 -> smoothed 1/(2*3); BP = 1.
    assert_near(bleu_of("the cat sat on the mat", "the cat is on the mat"), 37.99178428257963,
                1e-9, "bleu");
}

Test(metrics, bleu_brevity_penalty) {
    // Every n-gram matches; 4 tokens against 6: BP = exp(1 - 6/4).
    assert_near(bleu_of("the cat sat on", "the cat sat on the mat"), 60.653065971263345, 1e-9,
                "bleu");
}

Test(metrics, bleu_clips_repeated_ngrams) {
    // p1 = 1/4 (one "the" in the reference), then 0/3, 0/2, 0/1 smoothed as
    // 1/(2*3), 1/(4*2), 1/(8*1): 100 * (1/1536)^(1/4).
    assert_near(bleu_of("the the the the", "the cat"), 15.97357760615681, 1e-9, "bleu");
}

Test(metrics, bleu_sums_counts_over_the_corpus) {
    // Alone the second pair has no 3-grams (BLEU 0); in the corpus its
    // counts add to the first pair's and every precision is 1.
    const char *a[] = {"a", "b", "c", "d"}, *b[] = {"a", "b"};
    s2s_bleu_stats s = {0};
    s2s_bleu_add(&s, a, 4, a, 4);
    s2s_bleu_add(&s, b, 2, b, 2);
    assert_near(s2s_bleu_score(&s), 100, 1e-12, "corpus");
    assert_near(bleu_of("a b", "a b"), 0, 1e-12, "alone");
    s2s_bleu_stats empty = {0};
    assert_near(s2s_bleu_score(&empty), 0, 1e-12, "empty");
}

Test(metrics, exact_match_compares_every_token) {
    const char *a[] = {"x", "y"}, *b[] = {"x", "z"};
    cr_assert(s2s_tokens_match(a, 2, a, 2));
    cr_assert(!s2s_tokens_match(a, 2, b, 2));
    cr_assert(!s2s_tokens_match(a, 1, a, 2));
}

// ---- data ----

static void expect_load_error(const char *path, s2s_status want, const char *needle) {
    s2s_vocab *v = digits();
    s2s_dataset *d = NULL;
    s2s_status st = s2s_dataset_load(&d, path, v, v, 16, 0);
    cr_assert_eq(st, want, "%s: status %d: %s", path, st, s2s_last_error());
    cr_assert_null(d);
    cr_assert_not_null(strstr(s2s_last_error(), needle), "message '%s' lacks '%s'",
                       s2s_last_error(), needle);
    s2s_vocab_free(v);
}

Test(data, missing_file_is_named) {
    expect_load_error(FIX("no_such.tsv"), S2S_ERR_IO, "no_such.tsv: cannot open");
}

Test(data, line_without_tab_names_file_and_line) {
    expect_load_error(FIX("bad_no_tab.tsv"), S2S_ERR_FORMAT,
                      "bad_no_tab.tsv:3: expected source<TAB>target");
}

Test(data, invalid_utf8_names_file_and_line) {
    expect_load_error(FIX("bad_utf8.tsv"), S2S_ERR_FORMAT, "bad_utf8.tsv:2: target: invalid UTF-8");
}

Test(data, over_long_line_names_file_and_line) {
    expect_load_error(FIX("bad_too_long.tsv"), S2S_ERR_FORMAT,
                      "bad_too_long.tsv:2: source has 16 tokens; model.max_len 16 allows at most 15");
}

Test(data, reads_ids_and_references) {
    s2s_vocab *v = digits();
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, FIX("reverse_dev.tsv"), v, v, 16, S2S_DATA_REFS), S2S_OK);
    cr_assert_eq(d->n, 100);
    // Line 1 is "0 4 5 3 4 9<TAB>9 4 3 5 4 0": digit k has id k + 4.
    const s2s_example *e = &d->ex[0];
    cr_assert_eq(e->src_len, 6);
    cr_assert_eq(d->ids[e->src + 1], 4 + 4);
    cr_assert_eq(d->ids[e->tgt + 5], 0 + 4);
    cr_assert_str_eq(d->ref_tokens[e->ref], "9");
    cr_assert_str_eq(d->ref_tokens[d->ex[1].ref + 1], "4");
    cr_assert_eq(d->ex[99].line, 100);
    s2s_dataset_free(d);
    s2s_vocab_free(v);
}

// Every sentence once per epoch, every batch within budget (or a single
// sentence), the same plan for the same (seed, epoch), another for another epoch.
Test(data, batches_cover_the_epoch_within_the_budget) {
    s2s_vocab *v = digits();
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, FIX("reverse_train.tsv"), v, v, 16, 0), S2S_OK);
    s2s_batch_plan p = {0}, q = {0}, r = {0};
    cr_assert_eq(s2s_batch_plan_make(&p, d, 300, true, 7, 1), S2S_OK);
    cr_assert_eq(s2s_batch_plan_make(&q, d, 300, true, 7, 1), S2S_OK);
    cr_assert_eq(s2s_batch_plan_make(&r, d, 300, true, 7, 2), S2S_OK);
    cr_assert_eq(p.n_batches, q.n_batches);
    cr_assert(memcmp(p.order, q.order, (size_t)d->n * sizeof(int)) == 0);
    cr_assert(memcmp(p.order, r.order, (size_t)d->n * sizeof(int)) != 0);
    char *seen = calloc((size_t)d->n, 1);
    s2s_batch_buf bb = {0};
    int spread = 0;
    for (int b = 0; b < p.n_batches; b++) {
        int n = p.start[b + 1] - p.start[b];
        cr_assert_gt(n, 0);
        cr_assert_eq(s2s_batch_fill(&bb, d, p.order + p.start[b], n), S2S_OK);
        cr_assert(n == 1 || n * (bb.b.S + bb.b.T) <= 300, "batch %d: %d x (%d + %d)", b, n,
                  bb.b.S, bb.b.T);
        int lo = 99, hi = 0;
        for (int i = 0; i < n; i++) {
            int k = p.order[p.start[b] + i];
            cr_assert(!seen[k]);
            seen[k] = 1;
            int len = d->ex[k].src_len + d->ex[k].tgt_len;
            lo = len < lo ? len : lo;
            hi = len > hi ? len : hi;
        }
        spread += hi - lo;
    }
    for (int i = 0; i < d->n; i++) cr_assert(seen[i], "sentence %d not in the epoch", i);
    // Bucketing: lengths within a batch are close (6..12 overall).
    cr_assert_lt(spread, p.n_batches, "batches mix lengths: total spread %d", spread);
    // Batch contents: <s> first, </s> after the last source and target token.
    const s2s_example *e = &d->ex[p.order[0]];
    cr_assert_eq(s2s_batch_fill(&bb, d, p.order, 1), S2S_OK);
    cr_assert_eq(bb.b.src[e->src_len], S2S_EOS);
    cr_assert_eq(bb.b.tgt_in[0], S2S_BOS);
    cr_assert_eq(bb.b.tgt_out[e->tgt_len], S2S_EOS);
    cr_assert_eq(bb.b.tgt_in[1], bb.b.tgt_out[0]);
    cr_assert_eq(bb.b.n_tokens, e->tgt_len + 1);
    free(seen);
    s2s_batch_buf_free(&bb);
    s2s_batch_plan_free(&p);
    s2s_batch_plan_free(&q);
    s2s_batch_plan_free(&r);
    s2s_dataset_free(d);
    s2s_vocab_free(v);
}

// Data-parallel shares (s2s_batch_share): for 1 to 5 ranks and every batch
// of an epoch, the shares are contiguous, in rank order, cover the batch
// once, and each is within one sentence of an equal share of the tokens.
Test(data, rank_shares_partition_each_batch_and_balance_tokens) {
    s2s_vocab *v = digits();
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, FIX("reverse_train.tsv"), v, v, 16, 0), S2S_OK);
    s2s_batch_plan p = {0};
    cr_assert_eq(s2s_batch_plan_make(&p, d, 300, true, 3, 1), S2S_OK);
    for (int size = 1; size <= 5; size++) {
        for (int b = 0; b < p.n_batches; b++) {
            const int *idx = p.order + p.start[b];
            int n = p.start[b + 1] - p.start[b], next = 0, widest = 0;
            long total = 0;
            for (int i = 0; i < n; i++) {
                int w = d->ex[idx[i]].src_len + d->ex[idx[i]].tgt_len + 2;
                total += w;
                widest = w > widest ? w : widest;
            }
            for (int r = 0; r < size; r++) {
                int lo, hi;
                s2s_batch_share(d, idx, n, r, size, &lo, &hi);
                cr_assert_eq(lo, next, "batch %d, rank %d of %d: starts at %d, not %d", b, r,
                             size, lo, next);
                cr_assert_geq(hi, lo);
                long tokens = 0;
                for (int i = lo; i < hi; i++)
                    tokens += d->ex[idx[i]].src_len + d->ex[idx[i]].tgt_len + 2;
                cr_assert_leq(labs(tokens * size - total), (long)widest * size,
                              "batch %d, rank %d of %d: %ld of %ld tokens", b, r, size, tokens,
                              total);
                next = hi;
            }
            cr_assert_eq(next, n, "batch %d, %d ranks: the shares end at %d of %d", b, size,
                         next, n);
        }
    }
    // Fewer sentences than ranks: some shares are empty, none overlap.
    int lo, hi, covered = 0;
    for (int r = 0; r < 4; r++) {
        s2s_batch_share(d, p.order, 2, r, 4, &lo, &hi);
        covered += hi - lo;
    }
    cr_assert_eq(covered, 2);
    s2s_batch_plan_free(&p);
    s2s_dataset_free(d);
    s2s_vocab_free(v);
}

Test(data, no_shuffle_keeps_file_order) {
    s2s_vocab *v = digits();
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, FIX("reverse_dev.tsv"), v, v, 16, 0), S2S_OK);
    s2s_batch_plan p = {0};
    cr_assert_eq(s2s_batch_plan_make(&p, d, 200, false, 7, 3), S2S_OK);
    for (int i = 0; i < d->n; i++) cr_assert_eq(p.order[i], i);
    cr_assert_gt(p.n_batches, 1);
    s2s_batch_plan_free(&p);
    s2s_dataset_free(d);
    s2s_vocab_free(v);
}

// ---- gold alignments (guided alignment) ----

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

Test(data, alignments_become_normalised_rows, .init = make_tmpdir, .fini = tmpdir_remove) {
    // Digit k has id k + 4. Line 2 has no third column: no guidance; line
    // 3 has a possible link ("1p0", a link too) and a repeated one; its
    // unaligned target token is guided to the source </s> (column 2).
    const char *path = tmp_path("a.tsv");
    write_text(path, "1 2 3\t3 2 1\t0-2 1-1 2-0 2-1\n"
                     "4 5\t5 4\n"
                     "6 7\t7 6 6\t1p0 0-2 0-2\n");
    s2s_vocab *v = digits();
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_ALIGN), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(d->ex[0].n_links, 4);
    cr_assert_eq(d->ex[1].n_links, 0);
    cr_assert_eq(d->ex[2].n_links, 2);
    s2s_batch_buf bb = {0};
    int idx[] = {0, 1, 2};
    cr_assert_eq(s2s_batch_fill(&bb, d, idx, 3), S2S_OK);
    const s2s_batch *b = &bb.b;
    cr_assert_eq(b->S, 4);
    cr_assert_eq(b->T, 4);
    cr_assert_not_null(b->guide[S2S_HEAD_ALIGN]);
    cr_assert_eq(b->n_guided[S2S_HEAD_ALIGN], 3 + 0 + 3);
    // want[i][j][s]: sentence i, target token j (the row that predicts it), source s.
    static const float want[3][4][4] = {
        {{0, 0, 1, 0}, {0, 0.5f, 0.5f, 0}, {1, 0, 0, 0}, {0}},  // row 3 predicts </s>
        {{0}},
        {{0, 1, 0, 0}, {0, 0, 1, 0}, {1, 0, 0, 0}, {0}},
    };
    const float *A = b->guide[S2S_HEAD_ALIGN];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int s = 0; s < 4; s++)
                cr_assert_eq(A[(i * 4 + j) * 4 + s], want[i][j][s], "sentence %d, "
                             "target %d, source %d: %g", i, j, s,
                             (double)A[(i * 4 + j) * 4 + s]);
    // A batch of the unaligned line alone still carries (empty) alignments.
    cr_assert_eq(s2s_batch_fill(&bb, d, idx + 1, 1), S2S_OK);
    cr_assert_not_null(bb.b.guide[S2S_HEAD_ALIGN]);
    cr_assert_eq(bb.b.n_guided[S2S_HEAD_ALIGN], 0);
    s2s_dataset_free(d);

    // Not asked for: the column is not read, and batches have no alignments.
    cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, 0), S2S_OK);
    cr_assert_null(d->links);
    cr_assert_eq(s2s_batch_fill(&bb, d, idx, 3), S2S_OK);
    cr_assert_null(bb.b.guide[S2S_HEAD_ALIGN]);
    cr_assert_eq(bb.b.n_guided[S2S_HEAD_ALIGN], 0);
    s2s_dataset_free(d);
    s2s_batch_buf_free(&bb);
    s2s_vocab_free(v);
}

Test(data, bad_alignment_names_file_and_line, .init = make_tmpdir, .fini = tmpdir_remove) {
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"1 2\t2 1\t0-0 1-1\n1 2\t2 1\t0-0 1-x\n",
         "a.tsv:2: bad alignment link '1-x' (expected i-j, or ipj for possible)"},
        {"1 2\t2 1\t0-0 1--1\n", "a.tsv:1: bad alignment link '1--1'"},
        {"1 2\t2 1\t0-0 99999999999-1\n", "a.tsv:1: bad alignment link '99999999999-1'"},
        // Indices count tokens from 0 without </s>: 1 source, 1 target token here.
        {"1 2\t2 1\t1-1\n3\t3\t0-1\n",
         "a.tsv:2: alignment link 0-1 out of range (1 source, 1 target tokens)"},
        {"3\t3\t1-0\n", "a.tsv:1: alignment link 1-0 out of range (1 source, 1 target tokens)"},
    };
    s2s_vocab *v = digits();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *path = tmp_path("a.tsv");
        write_text(path, cases[c].text);
        s2s_dataset *d = NULL;
        cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_ALIGN), S2S_ERR_FORMAT, "%s",
                     cases[c].text);
        cr_assert_null(d);
        const char *msg = s2s_last_error();
        cr_assert_eq(strncmp(msg, path, strlen(path) - strlen("a.tsv")), 0, "%s", msg);
        cr_assert_not_null(strstr(msg, cases[c].msg), "'%s' lacks '%s'", msg, cases[c].msg);
        // Without guided alignment the column is not read.
        cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, 0), S2S_OK);
        s2s_dataset_free(d);
    }
    s2s_vocab_free(v);
}

Test(data, coreference_becomes_pronoun_rows, .init = make_tmpdir, .fini = tmpdir_remove) {
    // Line 1: source pronoun 2 has two antecedents (0.5 each), the target
    // side is read and checked but not kept; line 2 has neither column;
    // line 3 an empty alignment and one link; line 4 an empty column.
    const char *path = tmp_path("c.tsv");
    write_text(path, "1 2 3\t3 2 1\t0-2 1-1 2-0\t2-1 2-0|2-0\n"
                     "4 5\t5 4\n"
                     "6 7\t7 6\t\t1-0|\n"
                     "8 9\t9 8\t0-1\t\n");
    s2s_vocab *v = digits();
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_ALIGN | S2S_DATA_COREF), S2S_OK,
                 "%s", s2s_last_error());
    static const int n_coref[] = {2, 0, 1, 0}, n_links[] = {3, 0, 0, 1};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(d->ex[i].n_coref, n_coref[i], "line %d", i + 1);
        cr_assert_eq(d->ex[i].n_links, n_links[i], "line %d: the fourth column is cut off", i + 1);
    }
    const int *c = d->coref + 2 * d->ex[0].coref;
    cr_assert(c[0] == 2 && c[1] == 0 && c[2] == 2 && c[3] == 1, "sorted (pronoun, antecedent)");
    s2s_batch_buf bb = {0};
    int idx[] = {0, 1, 2, 3};
    cr_assert_eq(s2s_batch_fill(&bb, d, idx, 4), S2S_OK);
    const s2s_batch *b = &bb.b;
    cr_assert_eq(b->S, 4);
    cr_assert_not_null(b->guide[S2S_HEAD_COREF]);
    cr_assert_eq(b->n_guided[S2S_HEAD_COREF], 1 + 0 + 1 + 0);
    for (int i = 0; i < 4; i++)
        for (int p = 0; p < 4; p++)
            for (int a = 0; a < 4; a++) {
                float want = i == 0 && p == 2 && a < 2 ? 0.5f : i == 2 && p == 1 && a == 0 ? 1.0f
                                                                                          : 0.0f;
                cr_assert_eq(b->guide[S2S_HEAD_COREF][(i * 4 + p) * 4 + a], want,
                             "sentence %d, row %d, col %d", i, p, a);
            }
    s2s_dataset_free(d);

    // Alignments alone: the fourth column does not reach the third.
    cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_ALIGN), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert_null(d->coref);
    cr_assert_eq(d->ex[0].n_links, 3);
    cr_assert_eq(s2s_batch_fill(&bb, d, idx, 4), S2S_OK);
    cr_assert_null(bb.b.guide[S2S_HEAD_COREF]);
    cr_assert_eq(bb.b.n_guided[S2S_HEAD_COREF], 0);
    s2s_dataset_free(d);
    s2s_batch_buf_free(&bb);

    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"1 2\t2 1\t\t0-1\n", "c.tsv:1: bad coreference column '0-1' (expected SRC|TGT)"},
        {"1 2\t2 1\n1 2\t2 1\t\t1-x|\n", "c.tsv:2: bad alignment link '1-x'"},
        {"1 2\t2 1\t\t0-2|\n", "c.tsv:1: coreference link 0-2 out of range (the source has 2 "
                               "tokens)"},
        {"1 2\t2 1 3\t\t|2-3\n", "c.tsv:1: coreference link 2-3 out of range (the target has 3 "
                                 "tokens)"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        write_text(path, bad[k].text);
        cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_COREF), S2S_ERR_FORMAT, "%s",
                     bad[k].text);
        cr_assert_null(d);
        cr_assert_not_null(strstr(s2s_last_error(), bad[k].msg), "'%s' lacks '%s'",
                           s2s_last_error(), bad[k].msg);
        // Not asked for: not read.
        cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_ALIGN), S2S_OK);
        s2s_dataset_free(d);
    }
    s2s_vocab_free(v);
}

// The words <unk> replacement may pick, by hand: 1-1 links in at least
// half of a token's occurrences, punctuation and specials never.
Test(data, unk_words_are_mostly_one_to_one_and_not_punctuation, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    const char *path = tmp_path("u.tsv");
    write_text(path, "the cat is .\tcat is .\t1-0 2-1 3-2\n"
                     "the dog is .\tdog .\t1-0 2-0 3-1\n"
                     "the cat is , dog .\tcat , dog is .\t1-0 2-3 3-1 4-2 5-4\n"
                     "the dog is .\tdog .\t1-0 2-0 3-1\n"
                     "the dog is .\tdog .\t1-0 2-0 3-1\n");
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_from_string(&v, "<pad>\n<unk>\n<s>\n</s>\nthe\ncat\ndog\nis\n,\n.",
                                       "v"), S2S_OK, "%s", s2s_last_error());
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_ALIGN), S2S_OK, "%s",
                 s2s_last_error());
    uint8_t *src, *tgt;
    cr_assert_eq(s2s_unk_words(&src, v, d, 0), S2S_OK);
    cr_assert_eq(s2s_unk_words(&tgt, v, d, 1), S2S_OK);
    // the: never linked; cat: 2 of 2; dog: 1 of 4; is: 2 of 5 on the
    // source side, 2 of 2 on the target side; "," is linked 1-1 but punctuation.
    static const char *const names[] = {"<pad>", "<unk>", "<s>", "</s>", "the", "cat",
                                        "dog", "is", ",", "."};
    static const uint8_t want_src[] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    static const uint8_t want_tgt[] = {0, 0, 0, 0, 0, 1, 0, 1, 0, 0};
    for (int id = 0; id < 10; id++) {
        cr_assert_eq(src[id], want_src[id], "source %s", names[id]);
        cr_assert_eq(tgt[id], want_tgt[id], "target %s", names[id]);
    }
    free(src), free(tgt);
    s2s_dataset_free(d);
    s2s_vocab_free(v);
}

// 200 lines over words w0..w199: the even lines have two candidate pairs
// (w_i and w_j, 1-1 both ways), the odd ones none (w_j is linked twice,
// and so is w_i's target). What is replaced depends on (seed, epoch, line,
// link) alone, never on how the lines are batched.
Test(data, unk_replacement_is_a_function_of_seed_epoch_and_line, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    const char *path = tmp_path("w.tsv");
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    char vtext[4096] = "<pad>\n<unk>\n<s>\n</s>\nthe\n.";
    for (int i = 0; i < 200; i++) {
        int j = (i + 1) % 200;
        fprintf(f, "the w%d w%d .\tw%d w%d .\t%s\n", i, j, i, j,
                i % 2 ? "1-0 2-1 2-0 3-2" : "1-0 2-1 3-2");
        snprintf(vtext + strlen(vtext), sizeof vtext - strlen(vtext), "\nw%d", i);
    }
    fclose(f);
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_from_string(&v, vtext, "v"), S2S_OK, "%s", s2s_last_error());
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_ALIGN), S2S_OK, "%s",
                 s2s_last_error());
    uint8_t *sw, *tw;
    cr_assert_eq(s2s_unk_words(&sw, v, d, 0), S2S_OK);
    cr_assert_eq(s2s_unk_words(&tw, v, d, 1), S2S_OK);
    int idx[200], rev[200];
    for (int i = 0; i < 200; i++) idx[i] = i, rev[i] = 199 - i;
    s2s_batch_buf bb = {0}, bb2 = {0};
    s2s_unk_replace u = {.rate = 1.0f, .seed = 1, .epoch = 1, .src_word = sw, .tgt_word = tw};

    // Rate 1: exactly the candidates, on both sides, with tgt_in one row
    // later, and the alignment rows untouched.
    cr_assert_eq(s2s_batch_fill(&bb, d, idx, 200), S2S_OK);
    const s2s_batch *b = &bb.b;
    size_t acells = (size_t)200 * b->T * b->S;
    float *align = malloc(acells * sizeof(float));
    memcpy(align, b->guide[S2S_HEAD_ALIGN], acells * sizeof(float));
    cr_assert_eq(s2s_batch_unk_replace(&bb.b, d, idx, &u), 200);
    cr_assert(memcmp(align, b->guide[S2S_HEAD_ALIGN], acells * sizeof(float)) == 0);
    free(align);
    for (int i = 0; i < 200; i++) {
        bool even = i % 2 == 0;
        const int *src = b->src + i * b->S, *to = b->tgt_out + i * b->T, *ti = b->tgt_in + i * b->T;
        cr_assert_eq(src[0] == S2S_UNK, false, "line %d: the (unlinked) stays", i + 1);
        cr_assert_eq(src[1] == S2S_UNK, even, "line %d", i + 1);
        cr_assert_eq(src[2] == S2S_UNK, even, "line %d", i + 1);
        cr_assert_eq(src[3] == S2S_UNK, false, "line %d: . stays", i + 1);
        for (int t = 0; t < 3; t++) {
            cr_assert_eq(to[t] == S2S_UNK, even && t < 2, "line %d, target %d", i + 1, t);
            cr_assert_eq(ti[t + 1], to[t], "line %d: tgt_in is tgt_out one row later", i + 1);
        }
    }

    // A fraction: about rate of the candidates, the same whatever the
    // batches, different in another epoch or with another seed.
    u.rate = 0.25f;
    cr_assert_eq(s2s_batch_fill(&bb, d, idx, 200), S2S_OK);
    int n = s2s_batch_unk_replace(&bb.b, d, idx, &u);
    cr_assert(n >= 25 && n <= 75, "%d of 200 pairs at rate 0.25", n);
    for (int start = 0; start < 200; start += 7) {
        int k = start + 7 <= 200 ? 7 : 200 - start;
        cr_assert_eq(s2s_batch_fill(&bb2, d, rev + start, k), S2S_OK);
        s2s_batch_unk_replace(&bb2.b, d, rev + start, &u);
        for (int r = 0; r < k; r++) {
            int i = rev[start + r];
            cr_assert(memcmp(bb.b.src + i * bb.b.S, bb2.b.src + r * bb2.b.S, 4 * sizeof(int)) == 0
                          && memcmp(bb.b.tgt_out + i * bb.b.T, bb2.b.tgt_out + r * bb2.b.T,
                                    3 * sizeof(int)) == 0,
                      "line %d: another batching replaced other words", i + 1);
        }
    }
    int differ[2] = {0, 0};
    for (int variant = 0; variant < 2; variant++) {
        s2s_unk_replace w = u;
        if (variant == 0) w.epoch = 2;
        else w.seed = 2;
        cr_assert_eq(s2s_batch_fill(&bb2, d, idx, 200), S2S_OK);
        s2s_batch_unk_replace(&bb2.b, d, idx, &w);
        for (int i = 0; i < 200 * bb.b.S; i++) differ[variant] += bb.b.src[i] != bb2.b.src[i];
    }
    cr_assert(differ[0] > 0 && differ[1] > 0, "epoch 2: %d, seed 2: %d tokens differ", differ[0],
              differ[1]);
    // Rate 0: nothing.
    u.rate = 0.0f;
    cr_assert_eq(s2s_batch_fill(&bb2, d, idx, 200), S2S_OK);
    cr_assert_eq(s2s_batch_unk_replace(&bb2.b, d, idx, &u), 0);
    free(sw), free(tw);
    s2s_batch_buf_free(&bb);
    s2s_batch_buf_free(&bb2);
    s2s_dataset_free(d);
    s2s_vocab_free(v);
}

// An empty source (or target) side is a sentence of </s> alone. The first
// line's empty source once copied 0 ids from a NULL buffer (issue 14, item
// 4; UBSan's nonnull-attribute check caught it).
Test(data, empty_side_is_end_of_sentence_alone, .init = make_tmpdir, .fini = tmpdir_remove) {
    const char *path = tmp_path("empty.tsv");
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("\t1 2\n3 4\t4 3\n\t\n", f);
    fclose(f);
    s2s_vocab *v = digits();
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, path, v, v, 16, S2S_DATA_REFS), S2S_OK, "%s",
                 s2s_last_error());
    cr_assert_eq(d->n, 3);
    cr_assert_eq(d->ex[0].src_len, 0);
    cr_assert_eq(d->ex[0].tgt_len, 2);
    cr_assert_eq(d->ids[d->ex[0].tgt], 1 + 4);  // digit k has id k + 4
    cr_assert_eq(d->ex[2].src_len, 0);
    cr_assert_eq(d->ex[2].tgt_len, 0);
    int idx[3] = {0, 1, 2};
    s2s_batch_buf bb = {0};
    cr_assert_eq(s2s_batch_fill(&bb, d, idx, 3), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(bb.b.src_len[0], 1);
    cr_assert_eq(bb.b.src[0], S2S_EOS);
    cr_assert_eq(bb.b.tgt_len[2], 1);
    s2s_batch_buf_free(&bb);
    s2s_dataset_free(d);
    s2s_vocab_free(v);
}

// ---- the loss ----

static s2s_config reverse_config(void) {
    s2s_config cfg;
    s2s_config_default(&cfg);
    cr_assert_eq(s2s_config_load_file(&cfg, FIX("reverse.yaml")), S2S_OK, "%s", s2s_last_error());
    return cfg;
}

// s2s_forward_loss against log-probs of every vocab entry at every position,
// got from s2s_score by forcing prefix + v:
// (1-eps) * -log p[gold] + eps * mean_v -log p[v], averaged over positions.
Test(loss, label_smoothed_loss_matches_scored_log_probs) {
    s2s_config cfg = reverse_config();
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, &cfg, 5), S2S_OK, "%s", s2s_last_error());
    s2s_dataset *d;
    cr_assert_eq(s2s_dataset_load(&d, FIX("reverse_dev.tsv"), s2s_model_src_vocab(m),
                                  s2s_model_tgt_vocab(m), 16, 0), S2S_OK);
    int idx[3] = {0, 1, 2};  // different lengths: padding in the batch
    s2s_batch_buf bb = {0};
    cr_assert_eq(s2s_batch_fill(&bb, d, idx, 3), S2S_OK);
    s2s_graph *g;
    cr_assert_eq(s2s_graph_new(&g, m), S2S_OK);
    const float eps = 0.1f;
    s2s_loss_stats ls;
    cr_assert_eq(s2s_forward_loss(g, &bb.b, eps, &ls), S2S_OK, "%s", s2s_last_error());

    s2s_state *st;
    cr_assert_eq(s2s_state_new(&st, m), S2S_OK);
    s2s_decode_params dp = s2s_decode_default_params(m);
    int V = s2s_vocab_size(s2s_model_tgt_vocab(m));
    double total = 0, nll = 0;
    int positions = 0;
    for (int k = 0; k < 3; k++) {
        const s2s_example *e = &d->ex[idx[k]];
        const int *src = d->ids + e->src;
        for (int t = 0; t <= e->tgt_len; t++) {
            int gold = t < e->tgt_len ? d->ids[e->tgt + t] : S2S_EOS;
            double sum_all = 0, lp_gold = 0;
            int tgt[32];
            memcpy(tgt, d->ids + e->tgt, (size_t)t * sizeof(int));
            for (int v = 0; v < V; v++) {
                s2s_hypothesis h;
                double lp;
                if (v == S2S_EOS) {
                    // </s> at t: the final log-prob of scoring the prefix alone.
                    const int *tp = tgt;
                    cr_assert_eq(s2s_score(st, &dp, &src, &e->src_len, &tp, &t, 1, &h), S2S_OK);
                    lp = h.token_logprobs[t];
                } else {
                    tgt[t] = v;
                    const int *tp = tgt;
                    int n = t + 1;
                    cr_assert_eq(s2s_score(st, &dp, &src, &e->src_len, &tp, &n, 1, &h), S2S_OK,
                                 "%s", s2s_last_error());
                    lp = h.token_logprobs[t];
                }
                s2s_hypothesis_free(&h);
                sum_all += -lp;
                if (v == gold) lp_gold = lp;
            }
            total += (1 - eps) * -lp_gold + eps * sum_all / V;
            nll += -lp_gold;
            positions++;
        }
    }
    cr_assert_eq(ls.n_tokens, positions);
    assert_near(ls.loss, total / positions, 1e-4, "smoothed loss");
    assert_near(ls.nll, nll / positions, 1e-4, "nll");
    s2s_state_free(st);
    s2s_graph_free(g);
    s2s_batch_buf_free(&bb);
    s2s_dataset_free(d);
    s2s_model_free(m);
}

// ---- training ----

// Under AddressSanitizer the graph runs several times slower: S2S_TEST_QUICK
// shortens the runs (the assertions stay).
static bool quick(void) { return getenv("S2S_TEST_QUICK") != NULL; }

Test(trainer, learns_to_reverse_digits, .init = make_tmpdir, .fini = tmpdir_remove,
     .timeout = 600) {
    s2s_config cfg = reverse_config();
    if (quick()) cfg.train.max_steps = 300;
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("rev.safetensors");
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(sum.steps, cfg.train.max_steps);
    cr_assert_eq(sum.last_valid.sentences, 100);
    double want = quick() ? 0.5 : 0.99;
    cr_assert_geq(sum.last_valid.exact_match, want, "exact match %.3f after %d steps (BLEU %.1f)",
                  sum.last_valid.exact_match, sum.steps, sum.last_valid.bleu);
    cr_assert_geq(sum.best_score, sum.last_valid.exact_match);
    // The files the run promises: model, checkpoint (a model too), best model, log.
    s2s_model *m;
    cr_assert_eq(s2s_model_load(&m, tmp_path("rev.best.safetensors")), S2S_OK);
    s2s_model_free(m);
    cr_assert_eq(s2s_model_load(&m, tmp_path("rev.ckpt.safetensors")), S2S_OK, "%s",
                 s2s_last_error());
    s2s_model_free(m);
    size_t n;
    unsigned char *log = slurp(tmp_path("rev.train.log"), &n);
    int lines = 0;
    for (size_t i = 0; i < n; i++) lines += log[i] == '\n';
    cr_assert_eq(lines, cfg.train.max_steps);
    free(log);
}

// N steps in one run, or N/2 then --resume to N: the same weights, byte for
// byte, and the same log. Dropout and shuffling are on, so the dropout
// generator, the epoch order and the position in it must all be restored.
// Drops the marks of checkpointed steps (", \"checkpoint\": true") from a
// log of n bytes: a run stopped and resumed at step k marks line k, which
// an uninterrupted run need not. Returns the new length.
static size_t without_checkpoint_marks(unsigned char *log, size_t n) {
    static const char mark[] = ", \"checkpoint\": true";
    size_t k = sizeof mark - 1, out = 0;
    for (size_t i = 0; i < n;) {
        if (i + k <= n && memcmp(log + i, mark, k) == 0) {
            i += k;
            continue;
        }
        log[out++] = log[i++];
    }
    return out;
}

static void check_resume(s2s_config cfg) {
    cfg.model.dropout = 0.1f;
    cfg.model.attention_dropout = 0.1f;
    cfg.train.batch_tokens = 200;  // several epochs' worth of positions in few steps
    cfg.train.max_steps = quick() ? 16 : 40;
    cfg.train.valid_every = 10;
    cfg.train.save_every = 0;
    s2s_train_summary sum;
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("full.safetensors");
    snprintf(cfg.train.log, sizeof cfg.train.log, "%s", tmp_path("full.log"));
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());

    int total = cfg.train.max_steps;
    cfg.train.max_steps = total / 2;
    snprintf(cfg.train.log, sizeof cfg.train.log, "%s", tmp_path("half.log"));
    p.output = tmp_path("half.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(sum.steps, total / 2);
    cfg.train.max_steps = total;
    p.resume = tmp_path("half.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(sum.steps, total);

    // The files' metadata hold each run's config (log path, max_steps); the
    // weights must agree bit for bit.
    s2s_model *ma, *mb;
    cr_assert_eq(s2s_model_load(&ma, tmp_path("full.safetensors")), S2S_OK);
    cr_assert_eq(s2s_model_load(&mb, tmp_path("half.safetensors")), S2S_OK);
    for (int i = 0; i < s2s_model_tensor_count(ma); i++) {
        s2s_tensor_info ta = s2s_model_tensor(ma, i), tb = s2s_model_tensor(mb, i);
        size_t n = (size_t)ta.shape[0] * (size_t)(ta.ndim == 2 ? ta.shape[1] : 1);
        cr_assert(memcmp(ta.data, tb.data, n * sizeof(float)) == 0, "%s differs after resume",
                  ta.name);
    }
    s2s_model_free(ma);
    s2s_model_free(mb);
    size_t na, nb;
    unsigned char *a, *b;
    a = slurp(tmp_path("full.log"), &na);
    b = slurp(tmp_path("half.log"), &nb);
    na = without_checkpoint_marks(a, na);
    nb = without_checkpoint_marks(b, nb);
    cr_assert(na == nb && memcmp(a, b, na) == 0, "resumed loss curve differs");
    free(a);
    free(b);
}

Test(trainer, resume_gives_identical_weights, .init = make_tmpdir, .fini = tmpdir_remove,
     .timeout = 600) {
    check_resume(reverse_config());
}

// reverse_train.tsv with gold columns: alignment i-(n-1-i) and, on the
// source side, the last digit as a "pronoun" whose antecedent is the first.
static const char *write_gold_reverse(void) {
    FILE *in = fopen(FIX("reverse_train.tsv"), "r");
    const char *path = tmp_path("gold.tsv");
    FILE *out = fopen(path, "w");
    cr_assert(in && out);
    char line[256];
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = '\0';
        int n = 1;
        for (char *c = line; *c != '\t'; c++) n += *c == ' ';
        fputs(line, out);
        for (int i = 0; i < n; i++) fprintf(out, "%c%d-%d", i ? ' ' : '\t', i, n - 1 - i);
        fprintf(out, "\t%d-0|\n", n - 1);
    }
    fclose(in);
    fclose(out);
    return path;
}

// <unk> replacement and guided coreference keep a resumed run identical.
Test(trainer, resume_with_unk_replace_and_coref_gives_identical_weights, .init = make_tmpdir,
     .fini = tmpdir_remove, .timeout = 600) {
    s2s_config cfg = reverse_config();
    snprintf(cfg.data.train, sizeof cfg.data.train, "%s", write_gold_reverse());
    cfg.train.unk_replace = 0.2f;
    cfg.train.guided[S2S_HEAD_COREF] = (s2s_guided_head){.stack = S2S_ATTN_MAP_ENC,
                                                         .layer = 0, .head = 1, .weight = 0.5f};
    check_resume(cfg);
}

// reverse_config with two layers a stack, both dropouts 0.1, 20 steps,
// no validation: the runs that compare a memory option with plain training.
static s2s_config dropout_config(void) {
    s2s_config cfg = reverse_config();
    cfg.model.encoder_layers = 2;
    cfg.model.decoder_layers = 2;
    cfg.model.dropout = 0.1f;
    cfg.model.attention_dropout = 0.1f;
    cfg.train.max_steps = 20;
    cfg.train.valid_every = 0;
    cfg.train.save_every = 0;
    return cfg;
}

// train.checkpoint_activations: layer: 20 steps with dropout on end with
// the weights of the plain trainer, bit for bit; and it resumes.
Test(trainer, checkpointed_layers_train_the_same_weights, .init = make_tmpdir,
     .fini = tmpdir_remove, .timeout = 600) {
    s2s_config cfg = dropout_config();
    const char *out[2] = {tmp_path("plain.safetensors"), tmp_path("ckpt.safetensors")};
    for (int k = 0; k < 2; k++) {
        cfg.train.checkpoint_activations = k ? S2S_CHECKPOINT_LAYER : S2S_CHECKPOINT_NONE;
        s2s_train_params p = s2s_train_default_params();
        p.output = out[k];
        s2s_train_summary sum;
        cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
        cr_assert_eq(sum.steps, 20);
    }
    s2s_model *ma, *mb;
    cr_assert_eq(s2s_model_load(&ma, out[0]), S2S_OK);
    cr_assert_eq(s2s_model_load(&mb, out[1]), S2S_OK);
    for (int i = 0; i < s2s_model_tensor_count(ma); i++) {
        s2s_tensor_info ta = s2s_model_tensor(ma, i), tb = s2s_model_tensor(mb, i);
        size_t n = (size_t)ta.shape[0] * (size_t)(ta.ndim == 2 ? ta.shape[1] : 1);
        cr_assert(memcmp(ta.data, tb.data, n * sizeof(float)) == 0,
                  "%s differs with checkpoint_activations: layer", ta.name);
    }
    s2s_model_free(ma);
    s2s_model_free(mb);
    check_resume(cfg);
}

static void keep_plan(const s2s_train_memory *m, void *user);

// train.attention_chunk: 20 steps with both dropouts and guided
// coreference on end with the plain trainer's weights within 1e-5 of each
// tensor's largest (fp32 rounding: the sums run in another order; measured
// under 5e-7), every tensor but the key biases (below), alone
// and with checkpoint_activations: layer; the run's arena is its plan, with
// a smaller attention part; and it resumes.
Test(trainer, chunked_attention_trains_the_same_weights, .init = make_tmpdir,
     .fini = tmpdir_remove, .timeout = 600) {
    s2s_config cfg = dropout_config();
    cfg.train.guided[S2S_HEAD_COREF] = (s2s_guided_head){.stack = S2S_ATTN_MAP_ENC,
                                                         .layer = 1, .head = 1, .weight = 0.5f};
    const char *out[3] = {tmp_path("plain.safetensors"), tmp_path("chunk.safetensors"),
                          tmp_path("both.safetensors")};
    s2s_train_memory mem[3], run = {0};
    for (int k = 0; k < 3; k++) {
        cfg.train.attention_chunk = k ? 3 : 0;
        cfg.train.checkpoint_activations = k == 2 ? S2S_CHECKPOINT_LAYER : S2S_CHECKPOINT_NONE;
        s2s_train_params p = s2s_train_default_params();
        p.output = out[k];
        cr_assert_eq(s2s_train_plan(&cfg, &p, &mem[k]), S2S_OK, "%s", s2s_last_error());
        p.on_plan = keep_plan;
        p.user = &run;
        s2s_train_summary sum;
        cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
        cr_assert_eq(sum.steps, 20);
        cr_assert(memcmp(&run, &mem[k], sizeof run) == 0, "the run's plan differs from --plan's");
        cr_assert_eq(sum.arena_bytes, mem[k].activations + mem[k].attention + mem[k].scratch);
    }
    cr_assert_lt(mem[1].attention, mem[0].attention);
    cr_assert_lt(mem[2].total, mem[1].total);
    s2s_model *ma;
    cr_assert_eq(s2s_model_load(&ma, out[0]), S2S_OK);
    for (int k = 1; k < 3; k++) {
        s2s_model *mb;
        cr_assert_eq(s2s_model_load(&mb, out[k]), S2S_OK);
        for (int i = 0; i < s2s_model_tensor_count(ma); i++) {
            s2s_tensor_info ta = s2s_model_tensor(ma, i), tb = s2s_model_tensor(mb, i);
            // A key bias adds one constant to a query row's scores, which
            // the softmax ignores: its gradient is 0 but for rounding, which
            // Adam scales up to steps of lr, so both runs hold noise there.
            if (strstr(ta.name, "k_proj.bias")) continue;
            size_t n = (size_t)ta.shape[0] * (size_t)(ta.ndim == 2 ? ta.shape[1] : 1);
            double big = 1e-6, worst = 0;
            for (size_t j = 0; j < n; j++) {
                big = fmax(big, fabs((double)ta.data[j]));
                worst = fmax(worst, fabs((double)ta.data[j] - tb.data[j]));
            }
            cr_assert(worst <= 1e-5 * big, "%s: %g off, largest %g (run %d)", ta.name, worst,
                      big, k);
        }
        s2s_model_free(mb);
    }
    s2s_model_free(ma);
    check_resume(cfg);
}

static void logged_term(const char *log_path, const char *key, int steps, double *first,
                        double *last);

// train.compute_type: bf16 learns (the loss of the last steps well below
// the first's, as in fp32) and resumes bit for bit.
Test(trainer, bf16_products_train_and_resume, .init = make_tmpdir, .fini = tmpdir_remove,
     .timeout = 600) {
    s2s_config cfg = reverse_config();
    cfg.train.compute_type = S2S_TRAIN_BF16;
    cfg.train.max_steps = 200;
    cfg.train.valid_every = 200;
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("bf16.safetensors");
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    double first, last;
    logged_term(tmp_path("bf16.train.log"), "\"loss\": ", 200, &first, &last);
    cr_assert(last < 0.5 * first, "loss %.4f at step 1, %.4f at step 200", first, last);
    cr_assert_gt(sum.last_valid.token_accuracy, 0.5);
    check_resume(cfg);
}

static void keep_plan(const s2s_train_memory *m, void *user) { *(s2s_train_memory *)user = *m; }

// The plan a run reports before its first step is s2s_train_plan's, adds
// up, and is the arena the run holds after several epochs and
// validations; checkpointing makes it smaller.
Test(trainer, plan_is_what_the_run_allocates, .init = make_tmpdir, .fini = tmpdir_remove,
     .timeout = 600) {
    s2s_config cfg = reverse_config();
    cfg.model.attention_dropout = 0.1f;
    cfg.train.batch_tokens = 400;
    cfg.train.max_steps = 150;  // about two epochs of reverse_train.tsv (70 batches each)
    cfg.train.valid_every = 50;
    s2s_train_memory mem[2], run = {0};
    for (int k = 0; k < 2; k++) {
        cfg.train.checkpoint_activations = k ? S2S_CHECKPOINT_LAYER : S2S_CHECKPOINT_NONE;
        s2s_train_params p = s2s_train_default_params();
        p.output = tmp_path("plan.safetensors");
        cr_assert_eq(s2s_train_plan(&cfg, &p, &mem[k]), S2S_OK, "%s", s2s_last_error());
        const s2s_train_memory *m = &mem[k];
        cr_assert_eq(m->total, m->weights + m->gradients + m->adam + m->activations +
                                   m->attention + m->scratch);
        cr_assert_eq(m->weights, m->gradients);
        cr_assert_eq(m->adam, 2 * m->weights);
        cr_assert(m->batch_sentences > 1 && m->src_rows == 7 && m->tgt_rows == 7,
                  "%d sentences, %d x %d rows", m->batch_sentences, m->src_rows, m->tgt_rows);
        p.on_plan = keep_plan;
        p.user = &run;
        s2s_train_summary sum;
        cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
        cr_assert(memcmp(&run, m, sizeof run) == 0, "the run's plan differs from --plan's");
        cr_assert_eq(sum.arena_bytes, m->activations + m->attention + m->scratch,
                     "arena %zu, plan %zu", sum.arena_bytes,
                     m->activations + m->attention + m->scratch);
    }
    cr_assert_lt(mem[1].activations, mem[0].activations);
    cr_assert_lt(mem[1].attention, mem[0].attention);
}

// --resume reads the checkpoint file: without it, or with a plain model in
// its place, it refuses, naming the file.
Test(trainer, resume_needs_the_checkpoint_file, .init = make_tmpdir, .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.max_steps = 2;
    cfg.train.valid_every = 0;
    s2s_train_params p = s2s_train_default_params();
    s2s_train_summary sum;
    p.output = tmp_path("a.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cfg.train.max_steps = 4;
    p.resume = tmp_path("a.safetensors");
    cr_assert_eq(rename(tmp_path("a.ckpt.safetensors"), tmp_path("kept.safetensors")), 0);
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_ERR_IO);
    cr_assert_not_null(strstr(s2s_last_error(), "a.ckpt.safetensors"), "%s", s2s_last_error());
    // A plain model where the checkpoint should be.
    cr_assert_eq(link(tmp_path("a.safetensors"), tmp_path("a.ckpt.safetensors")), 0);
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_ERR_FORMAT);
    cr_assert_not_null(strstr(s2s_last_error(), "not an s2s training checkpoint"), "%s",
                       s2s_last_error());
    // The checkpoint itself may be named, and resumes.
    cr_assert_eq(rename(tmp_path("kept.safetensors"), tmp_path("k.ckpt.safetensors")), 0);
    p.resume = tmp_path("k.ckpt.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(sum.steps, 4);
}

// Rewrites the checkpoint ckpt as out with the Adam moment `which` stored
// as dtype (its other tensors and metadata kept).
static void write_moment_as(const char *ckpt, const char *out, const char *which,
                            s2s_st_dtype dtype, float at5) {
    s2s_model *m;
    cr_assert_eq(s2s_model_load(&m, ckpt), S2S_OK, "%s", s2s_last_error());
    s2s_st_file *f;
    cr_assert_eq(s2s_st_open(&f, ckpt), S2S_OK, "%s", s2s_last_error());
    static const char *const keys[] = {
        "s2s.train.format", "s2s.train.step", "s2s.train.epoch", "s2s.train.batch",
        "s2s.train.rng", "s2s.train.best", "s2s.train.best_step", "s2s.train.bad_validations",
        "s2s.train.train_pairs"};
    s2s_st_meta meta[9];
    for (int i = 0; i < 9; i++) {
        meta[i] = (s2s_st_meta){keys[i], s2s_st_meta_get(f, keys[i])};
        cr_assert_not_null(meta[i].value, "%s", keys[i]);
    }
    s2s_st_tensor ts[2] = {*s2s_st_find(f, "train.adam.m"), *s2s_st_find(f, "train.adam.v")};
    size_t n = m->n_params;
    float *small = calloc(n, sizeof(float));  // I8, BF16: n values in n or 2n bytes
    cr_assert_not_null(small);
    if (dtype == S2S_ST_F32) {  // the checkpoint's values, value 5 made at5
        memcpy(small, (strcmp(which, "train.adam.m") == 0 ? &ts[0] : &ts[1])->data,
               n * sizeof(float));
        small[5] = at5;
    }
    s2s_st_tensor *t = strcmp(which, "train.adam.m") == 0 ? &ts[0] : &ts[1];
    t->raw = small;
    t->dtype = dtype;
    cr_assert_eq(s2s_model_save_extra(m, out, ts, 2, meta, 9), S2S_OK, "%s", s2s_last_error());
    free(small);
    s2s_st_close(f);
    s2s_model_free(m);
}

// Issue 27, item 3: a checkpoint whose Adam moments are I8 or BF16 (n
// values in n or 2n bytes) was copied as n floats, reading past the tensor
// (ASan: heap-buffer-overflow). Refused, naming the file and the tensor;
// so are moments that would make the first resumed step NaN.
Test(trainer, resume_refuses_adam_moments_that_are_not_f32, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.max_steps = 2;
    cfg.train.valid_every = 0;
    s2s_train_params p = s2s_train_default_params();
    s2s_train_summary sum;
    p.output = tmp_path("a.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    const struct {
        const char *tensor;
        s2s_st_dtype dtype;
        float at5;
        const char *file, *says;
    } cases[] = {{"train.adam.m", S2S_ST_I8, 0, "i8.ckpt.safetensors", "is I8"},
                 {"train.adam.v", S2S_ST_BF16, 0, "bf16.ckpt.safetensors", "is BF16"},
                 {"train.adam.m", S2S_ST_BF16, 0, "bf16m.ckpt.safetensors", "is BF16"},
                 // F32 but NaN, or a negative second moment: NaN weights at the first step
                 {"train.adam.m", S2S_ST_F32, NAN, "nan.ckpt.safetensors", "holds nan at index 5"},
                 {"train.adam.v", S2S_ST_F32, -1, "neg.ckpt.safetensors", "holds -1 at index 5"}};
    cfg.train.max_steps = 4;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *path = strdup(tmp_path(cases[i].file));
        write_moment_as(tmp_path("a.ckpt.safetensors"), path, cases[i].tensor, cases[i].dtype,
                        cases[i].at5);
        p.output = tmp_path("b.safetensors");
        p.resume = path;
        cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_ERR_FORMAT, "%s resumed", cases[i].file);
        const char *msg = s2s_last_error();
        cr_assert(strstr(msg, path) && strstr(msg, cases[i].tensor) &&
                      strstr(msg, cases[i].says) && !strchr(msg, '\n'),
                  "%s", msg);
        free(path);
    }
    // The F32 checkpoint itself still resumes.
    p.resume = tmp_path("a.ckpt.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(sum.steps, 4);
}

// Saves a fresh model of cfg as init.safetensors in the test's folder.
static void save_init_model(const s2s_config *cfg) {
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, cfg, 1), S2S_OK);
    cr_assert_eq(s2s_model_save(m, tmp_path("init.safetensors")), S2S_OK);
    s2s_model_free(m);
}

// The log is appended run after run; a resume cuts only the last run's
// lines past its checkpoint (here a line the "killed" run wrote after it),
// never an earlier run's. Constant schedule: two runs of 4 steps log the
// same lines whether they stop at 2 or 4.
Test(trainer, resume_cuts_only_the_last_runs_log_lines, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.schedule = S2S_SCHEDULE_CONSTANT;
    cfg.train.max_steps = 4;
    cfg.train.valid_every = 0;
    s2s_train_params p = s2s_train_default_params();
    s2s_train_summary sum;
    p.output = tmp_path("a.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    size_t na;
    unsigned char *a = slurp(tmp_path("a.train.log"), &na);

    // The same run twice into one log: the second stops at 2, "killed"
    // after logging step 3.
    snprintf(cfg.train.log, sizeof cfg.train.log, "%s", tmp_path("a.train.log"));
    cfg.train.max_steps = 2;
    p.output = tmp_path("b.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    FILE *f = fopen(tmp_path("a.train.log"), "a");
    cr_assert_not_null(f);
    fputs("{\"step\": 3, \"loss\": 1}\n", f);
    fclose(f);
    cfg.train.max_steps = 4;
    p.resume = tmp_path("b.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());

    size_t nl;
    unsigned char *log = slurp(tmp_path("a.train.log"), &nl);
    cr_assert(nl > na && memcmp(log, a, na) == 0, "the first run's lines changed");
    // The resumed run marks step 2, where it stopped, as checkpointed.
    size_t nr = without_checkpoint_marks(log + na, nl - na), nw = without_checkpoint_marks(a, na);
    cr_assert_eq(nr, nw, "%zu bytes, want a run of %zu", nr, nw);
    cr_assert(memcmp(log + na, a, nw) == 0, "the resumed run's lines differ from a whole run's");
    free(log);
    free(a);
}

// A checkpointed step's line is written after its checkpoint; killed in
// between, the log lacks it. The checkpoint stores the line and a resume
// puts it back: the log equals the one of a resume with the line there.
Test(trainer, resume_puts_back_the_checkpoints_own_line, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.max_steps = 2;
    cfg.train.valid_every = 0;
    // Two layers a stack and grad_norms on the checkpoint's line: longer
    // than the 1 kB the checkpoint once kept of it.
    cfg.model.encoder_layers = cfg.model.decoder_layers = 2;
    cfg.train.grad_norms_every = 2;
    s2s_train_params p = s2s_train_default_params();
    s2s_train_summary sum;
    size_t n[2];
    unsigned char *log[2];
    for (int k = 0; k < 2; k++) {
        char name[32], ckpt[32];
        snprintf(name, sizeof name, "r%d.safetensors", k);
        snprintf(ckpt, sizeof ckpt, "r%d.train.log", k);
        char *out = strdup(tmp_path(name)), *logp = strdup(tmp_path(ckpt));
        cfg.train.max_steps = 2;
        p.output = out;
        p.resume = NULL;
        cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
        if (k == 1) {  // the kill: line 2 never written
            size_t len;
            unsigned char *text = slurp(logp, &len);
            char *nl = strchr((char *)text, '\n');
            cr_assert(nl && strstr(nl + 1, "\"checkpoint\": true"), "%s", text);
            cr_assert(strstr(nl + 1, "\"grad_norms\": {") && strlen(nl + 1) > 1024, "%s", nl + 1);
            cr_assert_eq(truncate(logp, (off_t)(nl + 1 - (char *)text)), 0);
            free(text);
        }
        cfg.train.max_steps = 4;
        p.resume = out;
        cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
        log[k] = slurp(logp, &n[k]);
        free(out);
        free(logp);
    }
    cr_assert(n[0] == n[1] && memcmp(log[0], log[1], n[0]) == 0, "%s\n---\n%s", log[0], log[1]);
    free(log[0]);
    free(log[1]);
}

// The log's grad_norms: on every train.grad_norms_every-th line only, one
// key per attention Q, K, V and output matrix and feed-forward matrix of
// every layer, each norm positive and their squares summing to less than
// the global norm's square (which also has embeddings, biases and norms).
// Their values against finite differences: tests/train_reference_test.py.
Test(trainer, grad_norms_on_every_nth_line, .init = make_tmpdir, .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.model.encoder_layers = 2;
    cfg.model.decoder_layers = 3;
    cfg.train.max_steps = 5;
    cfg.train.valid_every = 0;
    cfg.train.grad_norms_every = 2;
    s2s_train_params p = s2s_train_default_params();
    s2s_train_summary sum;
    p.output = tmp_path("g.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    FILE *f = fopen(tmp_path("g.train.log"), "r");
    cr_assert_not_null(f);
    char line[8192];
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t err;
        json_t *o = json_loads(line, 0, &err);
        cr_assert_not_null(o, "%s: %s", line, err.text);
        int step = (int)json_integer_value(json_object_get(o, "step"));
        json_t *gn = json_object_get(o, "grad_norms"), *v;
        cr_assert_eq(gn != NULL, step % 2 == 0, "step %d: %s", step, line);
        if (gn) {
            cr_assert_eq(json_object_size(gn), 2 * 6 + 3 * 10, "%s", line);
            cr_assert_not_null(json_object_get(gn, "encoder.layers.1.ffn.fc2"));
            cr_assert_not_null(json_object_get(gn, "decoder.layers.2.cross_attn.v_proj"));
            double sq = 0, global = json_real_value(json_object_get(o, "grad_norm"));
            const char *key;
            json_object_foreach(gn, key, v) {
                cr_assert(json_real_value(v) > 0, "%s: %s", key, line);
                sq += json_real_value(v) * json_real_value(v);
            }
            cr_assert(sqrt(sq) < global, "%g against %g", sqrt(sq), global);
        }
        json_decref(o);
        lines++;
    }
    fclose(f);
    cr_assert_eq(lines, 5);
}

// A run killed before its first checkpoint left its lines in the log, and
// a new run appended to them (issue 27): the log differed from an unkilled
// run's. A new run drops the last run's lines after its last checkpoint
// (the whole run when it has none), and keeps every finished run's.
Test(trainer, new_run_drops_a_killed_runs_lines_after_its_checkpoint, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.schedule = S2S_SCHEDULE_CONSTANT;
    cfg.train.max_steps = 4;
    cfg.train.save_every = 2;
    cfg.train.valid_every = 0;
    s2s_train_params p = s2s_train_default_params();
    s2s_train_summary sum;
    p.output = tmp_path("a.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    size_t na;
    unsigned char *a = slurp(tmp_path("a.train.log"), &na);
    cr_assert_not_null(strstr((char *)a, "\"checkpoint\": true}\n{\"step\": 3"), "%s", a);

    const char *killed[] = {
        // before its first checkpoint: every line goes
        "{\"step\": 1, \"loss\": 1}\n",
        // after its checkpoint at 2: line 3 goes, lines 1 and 2 stay
        "{\"step\": 1, \"loss\": 1}\n{\"step\": 2, \"loss\": 1, \"checkpoint\": true}\n"
        "{\"step\": 3, \"loss\": 1}\n{\"step\": 4, \"lo",
    };
    const size_t kept[] = {0, 66};
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(tmp_path("a.train.log"), "w");
        cr_assert_not_null(f);
        fwrite(a, 1, na, f);
        fputs(killed[k], f);
        fclose(f);
        cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
        size_t nl;
        unsigned char *log = slurp(tmp_path("a.train.log"), &nl);
        cr_assert_eq(nl, 2 * na + kept[k], "case %d: %zu bytes, want %zu", k, nl,
                     2 * na + kept[k]);
        cr_assert(memcmp(log, a, na) == 0, "case %d: the first run's lines changed", k);
        cr_assert(memcmp(log + na, killed[k], kept[k]) == 0, "case %d: kept lines changed", k);
        cr_assert(memcmp(log + na + kept[k], a, na) == 0, "case %d: the new run's lines", k);
        free(log);
    }
    free(a);
}

// --init X with output X is refused (compared as files, not as strings)
// unless overwrite, before anything is written.
Test(trainer, init_is_not_overwritten_without_overwrite, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    save_init_model(&cfg);
    size_t n0;
    unsigned char *before = slurp(tmp_path("init.safetensors"), &n0);
    cfg.train.max_steps = 1;
    cfg.train.valid_every = 0;
    s2s_train_params p = s2s_train_default_params();
    p.init = tmp_path("init.safetensors");
    char other[512];
    snprintf(other, sizeof other, "%s/./init.safetensors", tmpdir);
    p.output = other;
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_ERR_CONFIG);
    cr_assert_not_null(strstr(s2s_last_error(), "is the --init model"), "%s", s2s_last_error());
    size_t n1;
    unsigned char *after = slurp(tmp_path("init.safetensors"), &n1);
    cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "the init model changed");
    cr_assert_neq(access(tmp_path("init.train.log"), F_OK), 0, "a log was started");
    free(after);
    p.overwrite = true;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    after = slurp(tmp_path("init.safetensors"), &n1);
    cr_assert(n0 != n1 || memcmp(before, after, n0) != 0, "overwrite did not train the file");
    free(after);
    free(before);
}

Test(trainer, same_seed_same_loss_curve, .init = make_tmpdir, .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.model.dropout = 0.1f;
    cfg.train.max_steps = 8;
    cfg.train.valid_every = 0;
    s2s_train_params p = s2s_train_default_params();
    s2s_train_summary sum;
    p.output = tmp_path("a.safetensors");
    snprintf(cfg.train.log, sizeof cfg.train.log, "%s", tmp_path("a.log"));
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    p.output = tmp_path("b.safetensors");
    snprintf(cfg.train.log, sizeof cfg.train.log, "%s", tmp_path("b.log"));
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    size_t na, nb;
    unsigned char *a = slurp(tmp_path("a.log"), &na), *b = slurp(tmp_path("b.log"), &nb);
    cr_assert(na == nb && memcmp(a, b, na) == 0, "two runs with one seed differ");
    free(a);
    free(b);
}

// A learning rate too small to change a float32 weight: validation scores
// repeat, so patience 2 stops the run at the third validation.
Test(trainer, early_stopping_after_patience_validations, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.lr = 1e-12f;
    cfg.train.schedule = S2S_SCHEDULE_CONSTANT;
    cfg.train.max_steps = 100;
    cfg.train.valid_every = 2;
    cfg.train.patience = 2;
    cfg.train.best_metric = S2S_BEST_LOSS;
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("e.safetensors");
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert(sum.early_stopped);
    cr_assert_eq(sum.steps, 6);
    cr_assert_eq(sum.best_step, 2);
    s2s_model *m;
    cr_assert_eq(s2s_model_load(&m, tmp_path("e.safetensors")), S2S_OK, "checkpoint at the stop");
    s2s_model_free(m);
}

static volatile sig_atomic_t stop_flag;

static void stop_at_3(const s2s_train_progress *pr, void *user) {
    (void)user;
    if (pr->step == 3) stop_flag = 1;  // as a SIGINT handler would, between steps
}

Test(trainer, stop_flag_finishes_the_step_and_checkpoints, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.max_steps = 1000;
    cfg.train.save_every = 0;
    cfg.train.valid_every = 0;
    stop_flag = 0;
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("i.safetensors");
    p.stop = &stop_flag;
    p.on_step = stop_at_3;
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert(sum.interrupted);
    // Set during step 3's callback: step 4 runs, sees the flag, saves and stops.
    cr_assert_eq(sum.steps, 4);
    s2s_model *m;
    cr_assert_eq(s2s_model_load(&m, tmp_path("i.safetensors")), S2S_OK);
    s2s_model_free(m);
    // ... and it resumes.
    stop_flag = 0;
    cfg.train.max_steps = 6;
    p.resume = tmp_path("i.safetensors");
    p.on_step = NULL;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(sum.steps, 6);
    cr_assert(!sum.interrupted);
}

// A stop while the data loads (here: set before the run) ends the run
// before its first step with nothing written: no model, checkpoint or log.
// It used to go on loading, and then ran a step and saved it.
Test(trainer, stop_flag_while_loading_stops_before_the_first_step, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.max_steps = 10;
    cfg.train.valid_every = 0;
    stop_flag = 1;
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("s.safetensors");
    p.stop = &stop_flag;
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    cr_assert(sum.interrupted);
    cr_assert_eq(sum.steps, 0);
    const char *files[] = {"s.safetensors", "s.ckpt.safetensors", "s.train.log"};
    for (int i = 0; i < 3; i++)
        cr_assert_neq(access(tmp_path(files[i]), F_OK), 0, "%s was written", files[i]);
    stop_flag = 0;
}

Test(trainer, init_must_match_the_configs_architecture, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    save_init_model(&cfg);
    cfg.model.ffn_dim = 48;
    cfg.train.max_steps = 1;
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("o.safetensors");
    p.init = tmp_path("init.safetensors");
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_ERR_CONFIG);
    cr_assert_not_null(strstr(s2s_last_error(), "model.ffn_dim"), "%s", s2s_last_error());
    cfg.model.ffn_dim = 64;
    cfg.model.dropout = 0.3f;  // not architecture
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
}

// Guided alignment on the reverse task, whose gold alignment is the
// anti-diagonal: the guided loss is logged every step and falls as the
// head learns it; without it the log has no "guided" key.
// The loss of a guided term, step by step, from a train.log of `steps`
// lines; key "\"coref\": ".
static void logged_term(const char *log_path, const char *key, int steps, double *first,
                        double *last) {
    size_t n;
    char *log = (char *)slurp(log_path, &n);
    log[n] = '\0';  // read_bytes leaves room for it
    *first = *last = 0;
    int step = 0;
    for (char *l = log; *l; step++) {
        char *g = strstr(l, key);
        char *nl = strchr(l, '\n');
        cr_assert(g && nl && g < nl, "step %d has no %s: %.80s", step + 1, key, l);
        double v = strtod(g + strlen(key), NULL);
        cr_assert(isfinite(v) && v > 0, "%.80s", l);
        if (step < 10) *first += v / 10;
        if (step >= steps - 10) *last += v / 10;
        l = nl + 1;
    }
    cr_assert_eq(step, steps);
    free(log);
}

Test(trainer, guided_alignment_is_learned_and_logged, .init = make_tmpdir,
     .fini = tmpdir_remove, .timeout = 600) {
    s2s_config cfg = reverse_config();
    snprintf(cfg.data.train, sizeof cfg.data.train, "%s", write_gold_reverse());
    cfg.data.dev[0] = '\0';
    cfg.train.max_steps = 120;
    cfg.train.guided[S2S_HEAD_ALIGN] = (s2s_guided_head){.stack = S2S_ATTN_MAP_CROSS,
                                                         .layer = 0, .head = 2, .weight = 1.0f};
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("g.safetensors");
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    double first, last;
    logged_term(tmp_path("g.train.log"), "\"guided\": ", cfg.train.max_steps, &first, &last);
    cr_log_info("guided loss: %.3f over the first 10 steps, %.3f over the last 10", first, last);
    cr_assert_lt(last, 0.5 * first, "guided loss %.3f over the first 10 steps, %.3f over the last",
                 first, last);
    // The model loads; its file keeps the model: and decode: sections only.
    s2s_model *m;
    cr_assert_eq(s2s_model_load(&m, tmp_path("g.safetensors")), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_model_get_config(m)->train.guided[S2S_HEAD_ALIGN].layer, -1);
    s2s_model_free(m);

    // Off: no key.
    cfg.train.guided[S2S_HEAD_ALIGN].layer = -1;
    cfg.train.max_steps = 2;
    p.output = tmp_path("g2.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    size_t n;
    char *log = (char *)slurp(tmp_path("g2.train.log"), &n);
    log[n] = '\0';
    cr_assert_null(strstr(log, "guided"), "%s", log);
    free(log);
}

Test(trainer, guided_coref_is_learned_and_logged, .init = make_tmpdir, .fini = tmpdir_remove,
     .timeout = 600) {
    s2s_config cfg = reverse_config();
    snprintf(cfg.data.train, sizeof cfg.data.train, "%s", write_gold_reverse());
    cfg.data.dev[0] = '\0';
    cfg.train.max_steps = 120;
    cfg.train.guided[S2S_HEAD_COREF] = (s2s_guided_head){.stack = S2S_ATTN_MAP_ENC,
                                                         .layer = 0, .head = 1, .weight = 1.0f};
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("c.safetensors");
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    double first, last;
    logged_term(tmp_path("c.train.log"), "\"coref\": ", cfg.train.max_steps, &first, &last);
    cr_log_info("coref loss: %.3f over the first 10 steps, %.3f over the last 10", first, last);
    cr_assert_lt(last, 0.5 * first, "coref loss %.3f over the first 10 steps, %.3f over the last",
                 first, last);

    // Off: no key. A layer the model lacks is refused before the first step.
    cfg.train.guided[S2S_HEAD_COREF].layer = -1;
    cfg.train.max_steps = 2;
    p.output = tmp_path("c2.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_OK, "%s", s2s_last_error());
    size_t n;
    char *log = (char *)slurp(tmp_path("c2.train.log"), &n);
    log[n] = '\0';
    cr_assert_null(strstr(log, "coref"), "%s", log);
    free(log);
    cfg.train.guided[S2S_HEAD_COREF].layer = 1;
    p.output = tmp_path("c3.safetensors");
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_ERR_CONFIG);
    cr_assert_not_null(strstr(s2s_last_error(), "train.guided_coref.layer: 1 is out of range; "
                                                "model.encoder_layers is 1"), "%s",
                       s2s_last_error());
}

// unk_replace needs the gold alignment to pick pairs from.
Test(trainer, unk_replace_without_alignments_is_refused, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    cfg.train.unk_replace = 0.03f;
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("u.safetensors");
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_ERR_CONFIG);
    cr_assert_not_null(strstr(s2s_last_error(), "train.unk_replace is 0.03, but "),
                       "%s", s2s_last_error());
    cr_assert_not_null(strstr(s2s_last_error(), "reverse_train.tsv has no gold alignment (third "
                                                "column)"), "%s", s2s_last_error());
    cr_assert_neq(access(tmp_path("u.safetensors"), F_OK), 0, "no model after the error");
}

Test(trainer, bad_data_file_is_reported_with_its_line, .init = make_tmpdir,
     .fini = tmpdir_remove) {
    s2s_config cfg = reverse_config();
    snprintf(cfg.data.train, sizeof cfg.data.train, "%s", FIX("bad_no_tab.tsv"));
    s2s_train_params p = s2s_train_default_params();
    p.output = tmp_path("x.safetensors");
    s2s_train_summary sum;
    cr_assert_eq(s2s_train(&cfg, &p, &sum), S2S_ERR_FORMAT);
    cr_assert_not_null(strstr(s2s_last_error(), "bad_no_tab.tsv:3:"), "%s", s2s_last_error());
    cr_assert_neq(access(tmp_path("x.safetensors"), F_OK), 0, "no model after a data error");
}

// ---- vocab build ----

Test(vocab_build, counts_sorts_and_limits, .init = make_tmpdir, .fini = tmpdir_remove) {
    FILE *f = fopen(tmp_path("c.tsv"), "w");
    fputs("b a b\tX\nc b\tY y\n猫猫狗\tz\n", f);
    fclose(f);
    s2s_vocab_build_params p = {.column = 0, .min_count = 1, .max_size = 0};
    int n;
    cr_assert_eq(s2s_vocab_build(tmp_path("c.tsv"), &p, tmp_path("v.txt"), &n), S2S_OK, "%s",
                 s2s_last_error());
    size_t len;
    char *text = (char *)slurp(tmp_path("v.txt"), &len);
    text[len] = '\0';
    // b x3, 猫 x2, then a, c, 狗 (once each) in byte order.
    cr_assert_str_eq(text, "<pad>\n<unk>\n<s>\n</s>\nb\n猫\na\nc\n狗\n");
    cr_assert_eq(n, 9);
    free(text);
    p = (s2s_vocab_build_params){.column = 1, .min_count = 2, .max_size = 0};
    cr_assert_eq(s2s_vocab_build(tmp_path("c.tsv"), &p, tmp_path("t.txt"), &n), S2S_OK);
    text = (char *)slurp(tmp_path("t.txt"), &len);
    text[len] = '\0';
    cr_assert_str_eq(text, "<pad>\n<unk>\n<s>\n</s>\ny\n");  // X, z once; Y and y lower-cased
    free(text);
    p = (s2s_vocab_build_params){.column = 0, .min_count = 1, .max_size = 5};
    cr_assert_eq(s2s_vocab_build(tmp_path("c.tsv"), &p, tmp_path("s.txt"), &n), S2S_OK);
    cr_assert_eq(n, 5);
    // The file loads as a vocab.
    s2s_vocab *v;
    cr_assert_eq(s2s_vocab_load(&v, tmp_path("v.txt")), S2S_OK, "%s", s2s_last_error());
    s2s_vocab_free(v);
    // A line without a tab.
    f = fopen(tmp_path("bad.tsv"), "w");
    fputs("a\tb\nno tab here\n", f);
    fclose(f);
    cr_assert_eq(s2s_vocab_build(tmp_path("bad.tsv"), &p, tmp_path("s.txt"), &n), S2S_ERR_FORMAT);
    cr_assert_not_null(strstr(s2s_last_error(), "bad.tsv:2: expected"), "%s", s2s_last_error());
}

// s2s_evaluate_tokens (what `s2s eval` calls after its own line checks)
// gives what s2s_evaluate gives on the file it read, and its dataset holds
// what s2s_dataset_load makes of the same lines.
Test(eval, tokens_give_what_the_file_gives) {
    s2s_set_threads(1);
    s2s_config cfg = reverse_config();
    s2s_model *m;
    cr_assert_eq(s2s_model_init(&m, &cfg, 9), S2S_OK, "%s", s2s_last_error());
    const s2s_vocab *sv = s2s_model_src_vocab(m), *tv = s2s_model_tgt_vocab(m);
    FILE *f = fopen(FIX("reverse_dev.tsv"), "r");
    cr_assert_not_null(f);
    s2s_tokens src[100] = {0}, tgt[100] = {0};
    char line[256];
    int n = 0;
    while (n < 100 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *tab = strchr(line, '\t');
        cr_assert_not_null(tab);
        *tab = '\0';
        cr_assert_eq(s2s_tokenize(sv, line, &src[n]), S2S_OK);
        cr_assert_eq(s2s_tokenize(tv, tab + 1, &tgt[n]), S2S_OK);
        n++;
    }
    fclose(f);
    cr_assert_eq(n, 100);

    s2s_dataset *a, *b;
    cr_assert_eq(s2s_dataset_load(&a, FIX("reverse_dev.tsv"), sv, tv, 16, S2S_DATA_REFS), S2S_OK);
    cr_assert_eq(s2s_dataset_from_tokens(&b, src, tgt, n, 16, true), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(a->n, b->n);
    for (int i = 0; i < n; i++) {
        const s2s_example *x = &a->ex[i], *y = &b->ex[i];
        cr_assert_eq(x->src_len, y->src_len);
        cr_assert_eq(x->tgt_len, y->tgt_len);
        cr_assert_eq(y->line, i + 1);
        for (int j = 0; j < x->src_len; j++) cr_assert_eq(a->ids[x->src + j], b->ids[y->src + j]);
        for (int j = 0; j < x->tgt_len; j++) {
            cr_assert_eq(a->ids[x->tgt + j], b->ids[y->tgt + j]);
            cr_assert_str_eq(a->ref_tokens[x->ref + j], b->ref_tokens[y->ref + j]);
        }
    }
    s2s_dataset_free(a);
    s2s_dataset_free(b);

    s2s_decode_params p = s2s_decode_default_params(m);
    s2s_valid_result rf, rt;
    cr_assert_eq(s2s_evaluate(m, FIX("reverse_dev.tsv"), &p, &rf), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(s2s_evaluate_tokens(m, src, tgt, n, &p, &rt), S2S_OK, "%s", s2s_last_error());
    cr_assert_eq(rf.sentences, rt.sentences);
    cr_assert_eq(rf.bleu, rt.bleu);
    cr_assert_eq(rf.exact_match, rt.exact_match);
    cr_assert_eq(rf.token_accuracy, rt.token_accuracy);
    cr_assert_eq(rf.loss, rt.loss);
    cr_assert_eq(s2s_evaluate_tokens(m, src, tgt, 0, &p, &rt), S2S_ERR_INVALID);  // no pairs
    for (int i = 0; i < n; i++) {
        s2s_tokens_free(&src[i]);
        s2s_tokens_free(&tgt[i]);
    }
    s2s_model_free(m);
}
