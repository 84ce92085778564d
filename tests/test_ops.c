// Element-wise kernels against reference loops and stated properties.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "ops/ops.h"
#include "reference.h"

Test(ops, softmax_matches_reference_and_sums_to_one) {
    float x[37], want[37];
    ref_fill(x, 37, 1, 5.0f);
    ref_softmax(want, x, 37);
    s2s_softmax_row(x, 0, 37, 37);
    cr_assert_lt(ref_max_diff(x, want, 37), 1e-6f);
    double sum = 0;
    for (int i = 0; i < 37; i++) sum += x[i];
    cr_assert_float_eq(sum, 1.0, 1e-5);
}

Test(ops, softmax_large_logits_stay_finite) {
    float x[4] = {1e30f, -1e30f, 88.0f, 1e30f};
    s2s_softmax_row(x, 0, 4, 4);
    for (int i = 0; i < 4; i++) cr_assert(isfinite(x[i]), "x[%d] = %g", i, x[i]);
    cr_assert_float_eq(x[0], 0.5f, 1e-6);
    cr_assert_float_eq(x[3], 0.5f, 1e-6);
    cr_assert_eq(x[1], 0.0f);
}

Test(ops, softmax_masks_keys_past_valid) {
    float x[6] = {1, 2, 3, 100, 100, 100}, want[3];
    float in[3] = {1, 2, 3};
    ref_softmax(want, in, 3);
    s2s_softmax_row(x, 0, 3, 6);
    cr_assert_lt(ref_max_diff(x, want, 3), 1e-6f);
    for (int i = 3; i < 6; i++) cr_assert_eq(x[i], 0.0f);
}

Test(ops, softmax_of_a_key_range_zeroes_the_rest) {
    float x[12], want[5];
    ref_fill(x, 12, 4, 6.0f);
    ref_softmax(want, x + 4, 5);
    s2s_softmax_row(x, 4, 9, 12);
    cr_assert_lt(ref_max_diff(x + 4, want, 5), 1e-6f);
    for (int i = 0; i < 12; i++)
        if (i < 4 || i >= 9) cr_assert_eq(x[i], 0.0f, "x[%d] = %g outside [4, 9)", i, x[i]);
}

Test(ops, softmax_of_a_row_that_sees_no_key_is_zeros) {
    float empty[5] = {1, 2, 3, 4, 5}, hidden[4] = {-INFINITY, -INFINITY, 7, 8};
    s2s_softmax_row(empty, 3, 3, 5);   // lo == hi
    s2s_softmax_row(hidden, 0, 2, 4);  // every key of the range at -inf
    for (int i = 0; i < 5; i++) cr_assert_eq(empty[i], 0.0f, "empty[%d] = %g", i, empty[i]);
    for (int i = 0; i < 4; i++) cr_assert_eq(hidden[i], 0.0f, "hidden[%d] = %g", i, hidden[i]);
}

// The multi-row softmax (the encoder's banded fast paths): each row over
// its own range against the reference loop, zeros outside, and the same
// bits as a call of s2s_softmax_row per row (the generic path's values).
Test(ops, softmax_rows_each_over_its_range) {
    enum { ROWS = 6, N = 21 };
    const s2s_key_span keys[ROWS] = {{0, 21}, {3, 20}, {5, 6}, {9, 9}, {0, 8}, {13, 21}};
    float x[ROWS * N], y[ROWS * N];
    ref_fill(x, ROWS * N, 7, 4.0f);
    for (int i = 0; i < ROWS * N; i++) y[i] = x[i];
    s2s_softmax_rows(x, ROWS, N, keys);
    for (int r = 0; r < ROWS; r++) {
        int64_t lo = keys[r].lo, hi = keys[r].hi;
        float want[N];
        if (hi > lo) ref_softmax(want, y + r * N + lo, (int)(hi - lo));
        for (int64_t j = 0; j < N; j++) {
            float got = x[r * N + j];
            if (j < lo || j >= hi) cr_assert_eq(got, 0.0f, "row %d key %lld", r, (long long)j);
            else cr_assert_float_eq(got, want[j - lo], 1e-6, "row %d key %lld", r, (long long)j);
        }
        s2s_softmax_row(y + r * N, lo, hi, N);
    }
    for (int i = 0; i < ROWS * N; i++) cr_assert_eq(x[i], y[i], "element %d", i);
}

Test(ops, softmax_backward_of_a_key_range_matches_the_formula) {
    enum { N = 10, LO = 2, HI = 7 };
    float x[N], dy[N], dx[N];
    ref_fill(x, N, 5, 3.0f);
    ref_fill(dy, N, 6, 1.0f);
    s2s_softmax_row(x, LO, HI, N);
    s2s_softmax_backward_row(dx, dy, x, LO, HI, N);
    double dot = 0;
    for (int j = LO; j < HI; j++) dot += (double)x[j] * dy[j];
    for (int j = 0; j < N; j++) {
        double want = j >= LO && j < HI ? x[j] * (dy[j] - dot) : 0.0;
        cr_assert_float_eq(dx[j], want, 1e-6, "dx[%d]", j);
    }
}

Test(ops, log_softmax_is_log_of_softmax) {
    float x[50], p[50];
    ref_fill(x, 50, 3, 20.0f);
    ref_softmax(p, x, 50);
    s2s_log_softmax_row(x, 50);
    for (int i = 0; i < 50; i++) cr_assert_float_eq(expf(x[i]), p[i], 1e-6);
}

Test(ops, layernorm_matches_reference) {
    int64_t rows = 5, d = 48;
    float *x = malloc(sizeof(float) * rows * d), *y = malloc(sizeof(float) * rows * d);
    float *want = malloc(sizeof(float) * rows * d), w[48], b[48];
    ref_fill(x, rows * d, 4, 3.0f);
    for (int64_t i = 0; i < rows * d; i++) x[i] += 10.0f;  // an offset the mean must remove
    ref_fill(w, d, 5, 1.0f);
    ref_fill(b, d, 6, 1.0f);
    for (int64_t r = 0; r < rows; r++) ref_layernorm(want + r * d, x + r * d, w, b, d, 1e-5f);
    s2s_layernorm(y, x, w, b, rows, d, 1e-5f);
    cr_assert_lt(ref_max_diff(y, want, rows * d), 1e-5f);
    s2s_layernorm(x, x, w, b, rows, d, 1e-5f);  // in place
    cr_assert_lt(ref_max_diff(x, want, rows * d), 1e-5f);
    free(x), free(y), free(want);
}

Test(ops, positional_table_is_interleaved_sin_cos) {
    int64_t P = 50, d = 16;
    float *pe = malloc(sizeof(float) * P * d);
    s2s_positional_table(pe, P, d);
    for (int64_t p = 0; p < P; p++)
        for (int64_t i = 0; i < d / 2; i++) {
            // the same double arithmetic as the model's table, so equal bits
            double angle = p / pow(10000.0, 2.0 * i / d);
            cr_assert_eq(pe[p * d + 2 * i], (float)sin(angle));
            cr_assert_eq(pe[p * d + 2 * i + 1], (float)cos(angle));
        }
    cr_assert_eq(pe[0], 0.0f);
    cr_assert_eq(pe[1], 1.0f);
    free(pe);
}

// Model loading's check for NaN and infinities, against a plain loop: none,
// one at each place around the 64-float blocks, and two (the first found).
Test(ops, first_nonfinite_matches_a_plain_loop) {
    enum { N = 300 };
    float x[N];
    const float bad[] = {NAN, -NAN, INFINITY, -INFINITY};
    for (size_t n = 0; n <= N; n += n < 140 ? 1 : 37) {
        for (size_t at = 0; at <= n; at++) {
            for (size_t i = 0; i < N; i++) x[i] = (float)i * 0.5f - 70.0f;
            x[N - 1] = 3.4e38f;  // large but finite
            if (at < n) x[at] = bad[at % 4];
            if (at + 70 < n) x[at + 70] = NAN;
            size_t want = n;
            for (size_t i = 0; i < n; i++)
                if (!isfinite(x[i])) {
                    want = i;
                    break;
                }
            cr_assert_eq(s2s_first_nonfinite(x, n), want, "n %zu, at %zu", n, at);
        }
    }
}

Test(ops, embed_scales_and_adds_position) {
    float emb[3 * 4] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, pe[4] = {1, 1, 1, 1}, y[4];
    s2s_embed_row(y, emb, 2, 2.0f, pe, 4);
    for (int i = 0; i < 4; i++) cr_assert_eq(y[i], emb[8 + i] * 2.0f + 1.0f);
}
