// The oneDNN matmul wrapper against a plain reference loop: transposed
// weights, bias, fused activations and residual adds, batched products
// over strided heads, A read transposed in place, and threads; the public
// s2s_matmul, and the library still working after s2s_shutdown, on every
// thread.
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops/matmul.h"
#include "ops/ops.h"
#include "reference.h"
#include "s2s/s2s.h"

typedef struct shape {
    int m, k, n;
    int act;  // s2s_mm_act
    int bias, accumulate;
} shape;

ParameterizedTestParameters(matmul, linear_matches_reference) {
    static shape shapes[] = {
        {1, 1, 1, S2S_MM_NONE, 0, 0},   {1, 128, 128, S2S_MM_NONE, 1, 0},
        {7, 33, 65, S2S_MM_RELU, 1, 0}, {32, 64, 256, S2S_MM_GELU, 1, 0},
        {5, 48, 17, S2S_MM_NONE, 1, 1}, {64, 128, 500, S2S_MM_NONE, 1, 0},
        {3, 16, 16, S2S_MM_RELU, 0, 1}, {100, 24, 72, S2S_MM_GELU, 0, 0},
    };
    return cr_make_param_array(shape, shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(shape *s, matmul, linear_matches_reference) {
    int64_t m = s->m, k = s->k, n = s->n;
    float *x = malloc(sizeof(float) * m * k), *w = malloc(sizeof(float) * n * k);
    float *b = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * m * n);
    float *want = malloc(sizeof(float) * m * n);
    ref_fill(x, m * k, 1, 1.0f);
    ref_fill(w, n * k, 2, 0.5f);
    ref_fill(b, n, 3, 1.0f);
    ref_fill(y, m * n, 4, 1.0f);
    ref_fill(want, m * n, 4, 1.0f);  // same start for the accumulating case
    const float *bias = s->bias ? b : NULL;
    // W is (N, K) row-major as in nn.Linear: B(k, n) = W[n*K + k].
    s2s_mm_args ref = {
        .b0 = 1, .b1 = 1, .m = m, .k = k, .n = n,
        .sa = {0, 0, k, 1}, .sb = {0, 0, 1, k}, .sc = {0, 0, n, 1},
        .alpha = 1.0f, .bias = bias, .accumulate = s->accumulate, .act = (s2s_mm_act)s->act,
    };
    ref_mm(want, x, w, &ref);
    cr_assert_eq(s2s_linear(y, x, w, false, bias, m, k, n, (s2s_mm_act)s->act, s->accumulate),
                 S2S_OK);
    cr_assert_lt(ref_max_diff(y, want, m * n), 1e-4f, "m=%d k=%d n=%d", s->m, s->k, s->n);
    // the same with W^T (K, N) given, as decoding's copy holds it
    float *wt = malloc(sizeof(float) * n * k);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < k; j++) wt[j * n + i] = w[i * k + j];
    ref_fill(y, m * n, 4, 1.0f);
    cr_assert_eq(s2s_linear(y, x, wt, true, bias, m, k, n, (s2s_mm_act)s->act, s->accumulate),
                 S2S_OK);
    cr_assert_lt(ref_max_diff(y, want, m * n), 1e-4f, "transposed: m=%d k=%d n=%d", s->m, s->k, s->n);
    free(x), free(w), free(wt), free(b), free(y), free(want);
}

// ---- int8 and bf16 products against dequantise-then-fp32 loops ----

// The reference quantiser, written out plainly: s = max |v| / 127,
// q = round-half-even(v / s). Returns s.
static float ref_quant(int8_t *q, const float *v, int64_t n, int64_t stride) {
    double amax = 0;
    for (int64_t i = 0; i < n; i++) amax = fmax(amax, fabs(v[i * stride]));
    float s = amax > 0 ? (float)amax / 127.0f : 1.0f;
    for (int64_t i = 0; i < n; i++) q[i * stride] = (int8_t)nearbyintf(v[i * stride] * (1.0f / s));
    return s;
}

// A bf16 value as a float: the nearest with 8 mantissa bits, ties to even.
static float ref_bf16(float v) {
    int e;
    double f = frexp(v, &e);                  // v = f * 2^e, 0.5 <= |f| < 1
    double r = nearbyint(ldexp(f, 8));        // 8 significant bits
    return (float)ldexp(r, e - 8);
}

ParameterizedTestParameters(matmul, quantised_linear_matches_dequantised_reference) {
    static shape shapes[] = {
        {1, 128, 384, S2S_MM_NONE, 1, 0}, {4, 128, 512, S2S_MM_RELU, 1, 0},
        {7, 512, 128, S2S_MM_NONE, 1, 1}, {32, 128, 500, S2S_MM_NONE, 1, 0},
        {3, 33, 65, S2S_MM_GELU, 0, 1},   {1, 1, 1, S2S_MM_NONE, 0, 0},
    };
    return cr_make_param_array(shape, shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(shape *s, matmul, quantised_linear_matches_dequantised_reference) {
    int64_t m = s->m, k = s->k, n = s->n;
    float *x = malloc(sizeof(float) * m * k), *w = malloc(sizeof(float) * k * n);
    float *b = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * m * n);
    float *want = malloc(sizeof(float) * m * n), *exact = malloc(sizeof(float) * m * n);
    float *xd = malloc(sizeof(float) * m * k), *wd = malloc(sizeof(float) * k * n);
    int8_t *qw = malloc((size_t)(k * n)), *qx = malloc((size_t)(m * k));
    uint16_t *bw = malloc(sizeof(uint16_t) * k * n);
    float *scale = malloc(sizeof(float) * n);
    ref_fill(x, m * k, 11, 1.0f);
    ref_fill(w, k * n, 12, 0.1f);  // W^T (K, N), as decoding's copy holds it
    ref_fill(b, n, 13, 1.0f);
    const float *bias = s->bias ? b : NULL;
    s2s_mm_act act = (s2s_mm_act)s->act;
    s2s_mm_args p = {
        .b0 = 1, .b1 = 1, .m = m, .k = k, .n = n,
        .sa = {0, 0, k, 1}, .sb = {0, 0, n, 1}, .sc = {0, 0, n, 1},
        .alpha = 1.0f, .bias = bias, .accumulate = s->accumulate, .act = act,
    };
    ref_fill(exact, m * n, 14, 1.0f);
    ref_mm(exact, x, w, &p);

    // int8: the weights by the library's quantiser, checked against the
    // reference one; activations per row in the kernel
    s2s_quantize_cols_int8(qw, scale, w, k, n);
    int8_t *rq = malloc((size_t)(k * n));
    for (int64_t j = 0; j < n; j++) {
        cr_assert_float_eq(ref_quant(rq + j, w + j, k, n), scale[j], 1e-9f, "column %lld", (long long)j);
    }
    cr_assert_eq(memcmp(rq, qw, (size_t)(k * n)), 0);
    free(rq);
    for (int64_t i = 0; i < k * n; i++) wd[i] = (float)qw[i] * scale[i % n];
    for (int64_t r = 0; r < m; r++) {
        float sx = ref_quant(qx + r * k, x + r * k, k, 1);
        for (int64_t i = 0; i < k; i++) xd[r * k + i] = (float)qx[r * k + i] * sx;
    }
    ref_fill(want, m * n, 14, 1.0f);
    ref_mm(want, xd, wd, &p);
    ref_fill(y, m * n, 14, 1.0f);
    int32_t *comp = malloc(sizeof(int32_t) * n);
    s2s_int8_compensation(comp, qw, k, n);
    for (int64_t j = 0; j < n; j++) {  // against a plain sum
        int32_t sum = 0;
        for (int64_t i = 0; i < k; i++) sum += qw[i * n + j];
        cr_assert_eq(comp[j], 128 * sum);
    }
    s2s_wmat wi = {S2S_COMPUTE_INT8, qw, scale, comp};
    cr_assert_eq(s2s_linear_w(y, x, &wi, bias, m, k, n, act, s->accumulate), S2S_OK);
    cr_assert_lt(ref_max_diff(y, want, m * n), 1e-4f, "int8 m=%d k=%d n=%d", s->m, s->k, s->n);
    // and near the fp32 product: an error of a few per cent of a sum's size
    float tol = 0.03f * sqrtf((float)k) * 0.1f + 1e-3f;
    cr_assert_lt(ref_max_diff(y, exact, m * n), tol, "int8 vs fp32 m=%d", s->m);

    // bf16: both operands rounded, sums in fp32
    s2s_to_bf16(bw, w, (size_t)(k * n));
    for (int64_t i = 0; i < k * n; i++) {
        s2s_from_bf16(&wd[i], &bw[i], 1);
        cr_assert_eq(wd[i], ref_bf16(w[i]), "bf16 of %g", (double)w[i]);
    }
    for (int64_t i = 0; i < m * k; i++) xd[i] = ref_bf16(x[i]);
    ref_fill(want, m * n, 14, 1.0f);
    ref_mm(want, xd, wd, &p);
    ref_fill(y, m * n, 14, 1.0f);
    s2s_wmat wb = {S2S_COMPUTE_BF16, bw, NULL, NULL};
    cr_assert_eq(s2s_linear_w(y, x, &wb, bias, m, k, n, act, s->accumulate), S2S_OK);
    cr_assert_lt(ref_max_diff(y, want, m * n), 1e-4f, "bf16 m=%d k=%d n=%d", s->m, s->k, s->n);

    // fp32 through the same entry point
    ref_fill(y, m * n, 14, 1.0f);
    s2s_wmat wf = {S2S_COMPUTE_FP32, w, NULL, NULL};
    cr_assert_eq(s2s_linear_w(y, x, &wf, bias, m, k, n, act, s->accumulate), S2S_OK);
    cr_assert_lt(ref_max_diff(y, exact, m * n), 1e-4f);
    free(x), free(w), free(b), free(y), free(want), free(exact), free(xd), free(wd);
    free(qw), free(qx), free(bw), free(scale), free(comp);
}

Test(matmul, quantisers_edge_cases) {
    // an all-zero row has scale 1 and zeros; the largest |v| maps to +-127
    float z[4] = {0, 0, 0, 0}, v[4] = {0.5f, -2.0f, 1.0f, 0.0f};
    int8_t q[4];
    cr_assert_eq(s2s_quantize_row_int8(q, z, 4), 1.0f);
    for (int i = 0; i < 4; i++) cr_assert_eq(q[i], 0);
    cr_assert_float_eq(s2s_quantize_row_int8(q, v, 4), 2.0f / 127.0f, 1e-9f);
    cr_assert_eq(q[1], -127);
    cr_assert_eq(q[0], 32);  // 0.5 * 63.5 = 31.75
    // bf16: ties to even, NaN stays NaN, infinities stay infinite
    float in[4] = {1.0f + 1.0f / 256.0f, 1.0f + 3.0f / 256.0f, NAN, -INFINITY}, out[4];
    uint16_t h[4];
    s2s_to_bf16(h, in, 4);
    s2s_from_bf16(out, h, 4);
    cr_assert_eq(out[0], 1.0f);
    cr_assert_eq(out[1], 1.0f + 4.0f / 256.0f);
    cr_assert(isnan(out[2]));
    cr_assert(isinf(out[3]) && out[3] < 0);
}

// A float's bf16 bits by the definition: NaN quieted (bit 6 set, sign and
// top payload kept), else the nearest bf16 with ties to even, denormals
// rounded like any value (ref_bf16 in double).
static uint16_t ref_bf16_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    if (isnan(v)) return (uint16_t)((u >> 16) | 0x40);
    // below FLT_MIN bf16's steps are 2^-133 apart (7 stored bits)
    float r = fabsf(v) < FLT_MIN ? (float)ldexp(nearbyint(ldexp(v, 133)), -133) : ref_bf16(v);
    memcpy(&u, &r, sizeof u);
    return (uint16_t)(u >> 16);
}

// s2s_to_bf16 over runs long enough for its AVX512_BF16 path (32 values a
// step, where the CPU has it) and their tails: the same bits as the
// definition, denormals (which that instruction takes as zero), NaNs,
// infinities and ties included, in blocks with and without them.
Test(matmul, bf16_rounding_matches_definition_on_every_path) {
    enum { N = 32 * 9 + 7 };
    float x[N];
    uint16_t h[N];
    ref_fill(x, N, 41, 3.0f);
    const uint32_t special[] = {0x00000001u, 0x807fffffu, 0x00408000u, 0x00018000u,
                                0x7fc00001u, 0xff812345u, 0x7f800000u, 0xff800000u,
                                0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x007fff80u};
    // block 1 and the tail get specials; block 3 gets only ties and infinities
    for (int i = 0; i < 12; i++) memcpy(&x[32 + 3 * i], &special[i], 4);
    for (int i = 0; i < 7; i++) memcpy(&x[N - 7 + i], &special[i], 4);
    for (int i = 6; i < 11; i++) memcpy(&x[96 + i], &special[i], 4);
    for (size_t off = 0; off < 3; off++) {  // unaligned starts as well
        s2s_to_bf16(h, x + off, N - off);
        for (size_t i = 0; i < N - off; i++)
            cr_assert_eq(h[i], ref_bf16_bits(x[off + i]), "value %zu (%a): 0x%04x", i,
                         (double)x[off + i], h[i]);
    }
}

Test(matmul, strided_heads_batched) {
    // scores (B, H, Tq, Tk) = Q·K^T read in place from a fused (B, T, 3D) buffer
    int64_t B = 3, H = 4, dh = 8, d = H * dh, T = 11;
    float *qkv = malloc(sizeof(float) * B * T * 3 * d);
    float *got = malloc(sizeof(float) * B * H * T * T), *want = malloc(sizeof(float) * B * H * T * T);
    ref_fill(qkv, B * T * 3 * d, 9, 1.0f);
    s2s_mm_args p = {
        .b0 = B, .b1 = H, .m = T, .k = dh, .n = T,
        .sa = {T * 3 * d, dh, 3 * d, 1},
        .sb = {T * 3 * d, dh, 1, 3 * d},
        .sc = {H * T * T, T * T, T, 1},
        .alpha = 0.25f,
    };
    ref_mm(want, qkv, qkv + d, &p);
    cr_assert_eq(s2s_mm(got, qkv, qkv + d, &p), S2S_OK);
    cr_assert_lt(ref_max_diff(got, want, B * H * T * T), 1e-4f);
    free(qkv), free(got), free(want);
}

Test(matmul, strided_output_into_concatenated_heads) {
    // ctx (B, Tq, D) written per head from probs (B, H, Tq, Tk) · V (B, Tk, 2D)
    int64_t B = 2, H = 3, dh = 5, d = H * dh, tq = 4, tk = 6;
    float *probs = malloc(sizeof(float) * B * H * tq * tk), *kv = malloc(sizeof(float) * B * tk * 2 * d);
    float *got = calloc((size_t)(B * tq * d), sizeof(float)), *want = calloc((size_t)(B * tq * d), sizeof(float));
    ref_fill(probs, B * H * tq * tk, 5, 1.0f);
    ref_fill(kv, B * tk * 2 * d, 6, 1.0f);
    s2s_mm_args p = {
        .b0 = B, .b1 = H, .m = tq, .k = tk, .n = dh,
        .sa = {H * tq * tk, tq * tk, tk, 1},
        .sb = {tk * 2 * d, dh, 2 * d, 1},
        .sc = {tq * d, dh, d, 1},
        .alpha = 1.0f,
    };
    ref_mm(want, probs, kv + d, &p);
    cr_assert_eq(s2s_mm(got, probs, kv + d, &p), S2S_OK);
    cr_assert_lt(ref_max_diff(got, want, B * tq * d), 1e-4f);
    free(probs), free(kv), free(got), free(want);
}

// s2s_mm with .bf16 against the plain loop on bf16-rounded operands, for
// the views decoding uses: K^T read in place, a strided output, broadcast
// B with accumulate; and a transposed A. Each with A, B or both handed in
// bf16 already (a_is_bf16, b_is_bf16), as training's products take them.
Test(matmul, bf16_products_match_reference_on_rounded_operands) {
    int64_t B = 3, H = 4, dh = 8, d = H * dh, T = 11;
    size_t n_qkv = (size_t)(B * T * 3 * d), n_out = (size_t)(B * H * T * d);
    float *qkv = malloc(sizeof(float) * n_qkv), *rounded = malloc(sizeof(float) * n_qkv);
    float *got = malloc(sizeof(float) * n_out), *want = malloc(sizeof(float) * n_out);
    ref_fill(qkv, (int64_t)n_qkv, 21, 1.0f);
    for (size_t i = 0; i < n_qkv; i++) rounded[i] = ref_bf16(qkv[i]);
    uint16_t *qkv16 = malloc(sizeof(uint16_t) * n_qkv);
    s2s_to_bf16(qkv16, qkv, n_qkv);
    s2s_mm_args cases[4] = {
        {.b0 = B, .b1 = H, .m = T, .k = dh, .n = T,  // scores, K^T in place
         .sa = {T * 3 * d, dh, 3 * d, 1}, .sb = {T * 3 * d, dh, 1, 3 * d},
         .sc = {H * T * T, T * T, T, 1}, .alpha = 0.25f},
        {.b0 = B, .b1 = H, .m = T, .k = T, .n = dh,  // context into (B, T, D)
         .sa = {T * 3 * d, 0, 3 * d, 1}, .sb = {T * 3 * d, dh, 3 * d, 1},
         .sc = {T * d, dh, d, 1}, .alpha = 1.0f},
        {.b0 = B, .b1 = 1, .m = T, .k = d, .n = 2 * d,  // broadcast B, accumulating
         .sa = {T * 3 * d, 0, 3 * d, 1}, .sb = {0, 0, 3 * d, 1},
         .sc = {T * 2 * d, 0, 2 * d, 1}, .alpha = 1.0f, .accumulate = true},
        {.b0 = B, .b1 = H, .m = dh, .k = T, .n = dh,  // Q^T · K: A transposed in place
         .sa = {T * 3 * d, dh, 1, 3 * d}, .sb = {T * 3 * d, dh, 3 * d, 1},
         .sc = {H * dh * dh, dh * dh, dh, 1}, .alpha = 1.0f},
    };
    for (int c = 0; c < 4; c++) {
        s2s_mm_args p = cases[c];
        p.bf16 = true;
        ref_fill(want, (int64_t)n_out, 22, 1.0f);
        ref_fill(got, (int64_t)n_out, 22, 1.0f);
        ref_mm(want, rounded, rounded + d, &p);
        cr_assert_eq(s2s_mm(got, qkv, qkv + d, &p), S2S_OK, "%s", s2s_last_error());
        cr_assert_lt(ref_max_diff(got, want, (int64_t)n_out), 1e-4f, "case %d", c);
        // B given in bf16 already, read through the same strides
        s2s_mm_args pb = p;
        pb.b_is_bf16 = true;
        ref_fill(got, (int64_t)n_out, 22, 1.0f);
        cr_assert_eq(s2s_mm(got, qkv, (const float *)(const void *)(qkv16 + d), &pb), S2S_OK);
        cr_assert_lt(ref_max_diff(got, want, (int64_t)n_out), 1e-4f, "case %d, B in bf16", c);
        // A in bf16 (transposed in case 3), then both: the same values
        s2s_mm_args pa = p;
        pa.a_is_bf16 = true;
        ref_fill(got, (int64_t)n_out, 22, 1.0f);
        cr_assert_eq(s2s_mm(got, (const float *)(const void *)qkv16, qkv + d, &pa), S2S_OK);
        cr_assert_lt(ref_max_diff(got, want, (int64_t)n_out), 1e-4f, "case %d, A in bf16", c);
        pa.b_is_bf16 = true;
        ref_fill(got, (int64_t)n_out, 22, 1.0f);
        cr_assert_eq(s2s_mm(got, (const float *)(const void *)qkv16,
                            (const float *)(const void *)(qkv16 + d), &pa), S2S_OK);
        cr_assert_lt(ref_max_diff(got, want, (int64_t)n_out), 1e-4f, "case %d, both bf16", c);
        // and not the fp32 product: the rounding did happen
        ref_fill(want, (int64_t)n_out, 22, 1.0f);
        ref_mm(want, qkv, qkv + d, &p);
        cr_assert_gt(ref_max_diff(got, want, (int64_t)n_out), 1e-4f, "case %d", c);
    }
    free(qkv), free(rounded), free(got), free(want), free(qkv16);
}

Test(matmul, threads_give_the_same_result) {
    int64_t m = 64, k = 96, n = 80;
    float *x = malloc(sizeof(float) * m * k), *w = malloc(sizeof(float) * n * k);
    float *y1 = malloc(sizeof(float) * m * n), *y2 = malloc(sizeof(float) * m * n);
    ref_fill(x, m * k, 21, 1.0f);
    ref_fill(w, n * k, 22, 1.0f);
    s2s_set_num_threads(1);
    cr_assert_eq(s2s_get_num_threads(), 1);
    cr_assert_eq(s2s_linear(y1, x, w, false, NULL, m, k, n, S2S_MM_NONE, false), S2S_OK);
    s2s_set_num_threads(2);
    cr_assert_eq(s2s_linear(y2, x, w, false, NULL, m, k, n, S2S_MM_NONE, false), S2S_OK);
    cr_assert_lt(ref_max_diff(y1, y2, m * n), 1e-5f);
    free(x), free(w), free(y1), free(y2);
}

Test(matmul, transposed_a_read_in_place) {
    // Backward-pass products: dW (N, K) += dY^T (N, R) · X (R, K) with dY
    // read in place as (R, N) rows, and dV (B, H, Tk, Dh) = P^T · dO over
    // strided heads, with P (B, H, Tq, Tk) read transposed.
    int64_t r = 37, k = 24, n = 40;
    float *dy = malloc(sizeof(float) * r * n), *x = malloc(sizeof(float) * r * k);
    float *got = malloc(sizeof(float) * n * k), *want = malloc(sizeof(float) * n * k);
    ref_fill(dy, r * n, 31, 1.0f);
    ref_fill(x, r * k, 32, 1.0f);
    ref_fill(got, n * k, 33, 1.0f);
    ref_fill(want, n * k, 33, 1.0f);
    s2s_mm_args p = {
        .b0 = 1, .b1 = 1, .m = n, .k = r, .n = k,
        .sa = {0, 0, 1, n}, .sb = {0, 0, k, 1}, .sc = {0, 0, k, 1},
        .alpha = 1.0f, .accumulate = true, .act = S2S_MM_NONE,
    };
    ref_mm(want, dy, x, &p);
    cr_assert_eq(s2s_mm(got, dy, x, &p), S2S_OK);
    cr_assert_lt(ref_max_diff(got, want, n * k), 1e-4f);
    free(dy), free(x), free(got), free(want);

    int64_t B = 2, H = 3, dh = 4, d = H * dh, tq = 5, tk = 7;
    float *probs = malloc(sizeof(float) * B * H * tq * tk), *dctx = malloc(sizeof(float) * B * tq * d);
    float *dkv = calloc((size_t)(B * tk * 3 * d), sizeof(float));
    float *want_kv = calloc((size_t)(B * tk * 3 * d), sizeof(float));
    ref_fill(probs, B * H * tq * tk, 34, 1.0f);
    ref_fill(dctx, B * tq * d, 35, 1.0f);
    s2s_mm_args q = {
        .b0 = B, .b1 = H, .m = tk, .k = tq, .n = dh,
        .sa = {H * tq * tk, tq * tk, 1, tk},
        .sb = {tq * d, dh, d, 1},
        .sc = {tk * 3 * d, dh, 3 * d, 1},
        .alpha = 0.5f,
    };
    ref_mm(want_kv + 2 * d, probs, dctx, &q);
    cr_assert_eq(s2s_mm(dkv + 2 * d, probs, dctx, &q), S2S_OK);
    cr_assert_lt(ref_max_diff(dkv, want_kv, B * tk * 3 * d), 1e-5f);
    free(probs), free(dctx), free(dkv), free(want_kv);
}

// y = x·W + b by plain loops, W (K, N) as s2s_matmul takes it.
static void ref_xw(float *y, const float *x, const float *w, const float *b, int m, int k, int n) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double acc = b ? b[j] : 0.0;
            for (int l = 0; l < k; l++) acc += (double)x[i * k + l] * w[l * n + j];
            y[i * n + j] = (float)acc;
        }
}

// s2s_matmul on 17 x 40 -> 23 against ref_xw; the largest difference.
static float public_matmul_error(void) {
    enum { M = 17, K = 40, N = 23 };
    static float x[M * K], w[K * N], b[N], y[M * N], want[M * N];
    ref_fill(x, M * K, 11, 1.0f);
    ref_fill(w, K * N, 12, 0.5f);
    ref_fill(b, N, 13, 1.0f);
    ref_xw(want, x, w, b, M, K, N);
    cr_assert_eq(s2s_matmul(y, x, w, b, M, K, N), S2S_OK, "%s", s2s_last_error());
    return ref_max_diff(y, want, M * N);
}

static void *matmul_on_a_thread(void *arg) {
    *(float *)arg = public_matmul_error();
    return NULL;
}

// A feed-forward block's two bf16 products with the hidden layer kept in
// bf16 (oneDNN rounding it) give the same bits as two s2s_linear_w calls
// (the hidden written in fp32 and rounded by s2s_to_bf16), for ReLU and
// GELU, one row and several; with fp32 weights it is those two calls.
Test(matmul, bf16_feed_forward_pair_equals_two_products) {
    enum { K = 48, F = 80, N = 40, MAXR = 33 };
    static float x[MAXR * K], w1[K * F], w2[F * N], b1[F], b2[N];
    static float y[MAXR * N], want[MAXR * N], h[MAXR * F];
    static uint16_t q1[K * F], q2[F * N];
    ref_fill(x, MAXR * K, 21, 2.0f);
    ref_fill(w1, K * F, 22, 0.3f);
    ref_fill(w2, F * N, 23, 0.3f);
    ref_fill(b1, F, 24, 1.0f);
    ref_fill(b2, N, 25, 1.0f);
    s2s_to_bf16(q1, w1, K * F);
    s2s_to_bf16(q2, w2, F * N);
    s2s_wmat m1 = {S2S_COMPUTE_BF16, q1, NULL, NULL}, m2 = {S2S_COMPUTE_BF16, q2, NULL, NULL};
    s2s_wmat f1 = {S2S_COMPUTE_FP32, w1, NULL, NULL}, f2 = {S2S_COMPUTE_FP32, w2, NULL, NULL};
    int rows[] = {1, 3, MAXR};
    for (int r = 0; r < 3; r++)
        for (int a = 0; a < 2; a++)
            for (int bf = 0; bf < 2; bf++) {
                int64_t R = rows[r];
                s2s_mm_act act = a ? S2S_MM_GELU : S2S_MM_RELU;
                const s2s_wmat *p1 = bf ? &m1 : &f1, *p2 = bf ? &m2 : &f2;
                ref_fill(want, R * N, 26, 1.0f);  // accumulated into
                cr_assert_eq(s2s_linear_w(h, x, p1, b1, R, K, F, act, false), S2S_OK);
                cr_assert_eq(s2s_linear_w(want, h, p2, b2, R, F, N, S2S_MM_NONE, true), S2S_OK);
                ref_fill(y, R * N, 26, 1.0f);
                memset(h, 0xff, sizeof h);  // NaN: the pair must write what it reads
                cr_assert_eq(s2s_linear_pair_w(y, h, x, p1, b1, p2, b2, R, K, F, N, act), S2S_OK);
                cr_assert_eq(memcmp(y, want, sizeof(float) * (size_t)(R * N)), 0,
                             "rows %lld, %s, %s", (long long)R, a ? "gelu" : "relu",
                             bf ? "bf16" : "fp32");
            }
}

Test(matmul, public_matmul_matches_reference_and_survives_shutdown) {
    cr_assert_lt(public_matmul_error(), 1e-4f);
    float y[6] = {9, 9, 9, 9, 9, 9}, b[3] = {1, 2, 3};
    cr_assert_eq(s2s_matmul(y, NULL, NULL, b, 2, 0, 3), S2S_OK, "K = 0: y = bias");
    for (int i = 0; i < 6; i++) cr_assert_eq(y[i], b[i % 3]);
    cr_assert_eq(s2s_matmul(y, NULL, NULL, NULL, -1, 2, 3), S2S_ERR_INVALID);

    // Another thread's stream and memory objects are released too, and
    // both threads multiply again afterwards (on a new engine).
    float err = 1;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, matmul_on_a_thread, &err), 0);
    pthread_join(t, NULL);
    cr_assert_lt(err, 1e-4f);
    s2s_shutdown();
    s2s_shutdown();  // twice is harmless
    cr_assert_lt(public_matmul_error(), 1e-4f, "after s2s_shutdown");
    err = 1;
    cr_assert_eq(pthread_create(&t, NULL, matmul_on_a_thread, &err), 0);
    pthread_join(t, NULL);
    cr_assert_lt(err, 1e-4f, "on a new thread after s2s_shutdown");
    s2s_shutdown();
}
