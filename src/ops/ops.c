// Element-wise kernels: softmax (and its backward), dropout, LayerNorm,
// embeddings, positions.
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// The hot loops below are compiled three times, for AVX-512, AVX2 and
// x86-64's baseline (4-float vectors), and the CPU's best is picked when
// the library loads (gcc's target_clones, an ifunc). C11 mode contracts no
// a*b+c into an FMA (-ffp-contract=off), so every clone gives the same bits.
// clang 14 (the TSan and fuzz builds) is left out: its clones of a function
// with external linkage are not emitted under the function's own name, so
// libs2s.so is left with undefined references to it.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef VECTOR_CLONES
#define VECTOR_CLONES
#endif

// s2s_to_bf16 with AVX512_BF16's conversion where the CPU has it (checked
// at each call: __builtin_cpu_supports reads a word set at load), gcc only
// (as above).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define BF16_INSTRUCTION
#endif

// Reductions run in LANES independent partial sums (or maxima), combined
// at the end: gcc vectorises such loops without reordering float
// operations itself, so results are the same on every machine.
#define LANES 8

static inline float lane_combine(const float acc[LANES]) {
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static inline float lane_max(const float *x, int64_t n) {
    float acc[LANES];
    for (int j = 0; j < LANES; j++) acc[j] = x[0];
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    for (; i < n; i++) acc[0] = x[i] > acc[0] ? x[i] : acc[0];
    float mx = acc[0];
    for (int j = 1; j < LANES; j++) mx = acc[j] > mx ? acc[j] : mx;
    return mx;
}

// LANES floats as one vector (gcc's vector extension, which clang has
// too): left to itself gcc vectorises the loop over a partial-sum array
// across lanes, with a shuffle per element (LayerNorm ran at 93 ns a row
// of 128 on AVX-512, 32-38 this way). Element j of a vector is lane j, so
// the sums are the same as the plain loop's.
typedef float lanes_v __attribute__((vector_size(LANES * sizeof(float))));

// (Through a pointer: a vector return value would change the ABI where
// the build does not enable AVX, which gcc warns of, -Wpsabi.)
static inline void lanes_load(lanes_v *v, const float *p) { memcpy(v, p, sizeof *v); }

// sum of (x - shift)^power, power 1 or 2
static inline float lane_sum(const float *x, float shift, int power, int64_t n) {
    lanes_v sum = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        lanes_v t;
        lanes_load(&t, x + i);
        t -= shift;
        sum += power == 2 ? t * t : t;
    }
    float acc[LANES];
    memcpy(acc, &sum, sizeof acc);
    for (; i < n; i++) {
        float t = x[i] - shift;
        acc[i - (n / LANES) * LANES] += power == 2 ? t * t : t;
    }
    return lane_combine(acc);
}

// exp(x) for x <= 0 without libm, branch-free so that loops of it
// vectorise: x = n ln2 + r with |r| <= ln2/2, exp(r) by Cephes' degree-6
// polynomial (about 1 ulp), 2^n put in the exponent bits. Below -87
// (exp < 2^-126) it returns 0; NaN stays NaN.
static inline float exp_nonpositive(float x) {
    float c = x >= -87.0f ? x : -87.0f;  // NaN too: keeps the conversion below defined
    const float round = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    float n = (c * 1.44269504088896341f + round) - round;
    float r = c - n * 0.693359375f + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    union { int32_t i; float f; } scale = {.i = ((int32_t)n + 127) << 23};
    return x >= -87.0f ? p * scale.f : x < -87.0f ? 0.0f : x;
}

// Sum of exp(x[j] - shift), also stored in y[j] when store (y may alias
// x). Two loops rather than a test inside one, which would stop gcc
// vectorising it.
static inline float exp_sum(float *y, const float *x, float shift, int64_t n, bool store) {
    float acc[LANES] = {0};
    int64_t i = 0, full = n / LANES * LANES;
    if (store) {
        for (; i < full; i += LANES)
            for (int j = 0; j < LANES; j++) acc[j] += y[i + j] = exp_nonpositive(x[i + j] - shift);
    } else {
        for (; i < full; i += LANES)
            for (int j = 0; j < LANES; j++) acc[j] += exp_nonpositive(x[i + j] - shift);
    }
    for (; i < n; i++) {
        float e = exp_nonpositive(x[i] - shift);
        if (store) y[i] = e;
        acc[i - full] += e;
    }
    return lane_combine(acc);
}

// Zeroes x outside [lo, hi).
static void zero_outside(float *x, int64_t lo, int64_t hi, int64_t n) {
    int64_t head = lo < n ? lo : n, tail = hi > lo ? hi : lo;
    if (head > 0) memset(x, 0, (size_t)head * sizeof *x);
    if (tail < n) memset(x + tail, 0, (size_t)(n - tail) * sizeof *x);
}

static inline void softmax_row(float *x, int64_t lo, int64_t hi, int64_t n) {
    zero_outside(x, lo, hi, n);
    if (lo >= hi) return;
    float *y = x + lo;
    int64_t len = hi - lo;
    float mx = lane_max(y, len);  // largest term is exp(0): never overflows
    if (mx == -INFINITY) {  // every key hidden
        memset(y, 0, (size_t)len * sizeof *y);
        return;
    }
    float inv = 1.0f / exp_sum(y, y, mx, len, true);
    for (int64_t j = 0; j < len; j++) y[j] *= inv;
}

VECTOR_CLONES void s2s_softmax_row(float *x, int64_t lo, int64_t hi, int64_t n) {
    softmax_row(x, lo, hi, n);
}

VECTOR_CLONES void s2s_softmax_rows(float *x, int64_t rows, int64_t n, const s2s_key_span *keys) {
    for (int64_t r = 0; r < rows; r++) softmax_row(x + r * n, keys[r].lo, keys[r].hi, n);
}

VECTOR_CLONES float s2s_exp_shift_row(float *x, int64_t n, float shift) {
    return n > 0 ? exp_sum(x, x, shift, n, true) : 0.0f;
}

VECTOR_CLONES void s2s_elu1_row(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] + 1.0f : exp_nonpositive(x[i]);
}

float s2s_max_row(const float *x, int64_t n) { return n > 0 ? lane_max(x, n) : -INFINITY; }

VECTOR_CLONES float s2s_sum_row(const float *x, int64_t n) { return lane_sum(x, 0.0f, 1, n); }

void s2s_softmax_backward_row(float *dx, const float *dy, const float *y, int64_t lo, int64_t hi,
                              int64_t n) {
    float dot = 0.0f;
    for (int64_t j = lo; j < hi; j++) dot += y[j] * dy[j];
    for (int64_t j = lo; j < hi; j++) dx[j] = y[j] * (dy[j] - dot);
    zero_outside(dx, lo, hi, n);
}

float s2s_normalize_row(float *x, int64_t lo, int64_t hi, int64_t n, float eps) {
    zero_outside(x, lo, hi, n);
    float sum = 0.0f;
    for (int64_t j = lo; j < hi; j++) sum += x[j];
    float inv = 1.0f / (sum + eps);
    for (int64_t j = lo; j < hi; j++) x[j] *= inv;
    return inv;
}

void s2s_normalize_backward_row(float *dx, const float *dy, const float *y, float inv,
                                int64_t lo, int64_t hi, int64_t n) {
    float dot = 0.0f;
    for (int64_t j = lo; j < hi; j++) dot += y[j] * dy[j];
    for (int64_t j = lo; j < hi; j++) dx[j] = inv * (dy[j] - dot);
    zero_outside(dx, lo, hi, n);
}

void s2s_dropout(float *x, uint8_t *keep, int64_t n, float p, s2s_rng *rng) {
    if (p == 0.0f) return;
    s2s_dropout_keyed(x, keep, n, p, s2s_rng_next(rng), 0);
}

// The mask first, in integers (a loop the compiler vectorises), then the
// scaling. s2s_dropout_keeps in integers: bits * 2^-53 >= p holds exactly
// when bits >= ceil(p * 2^53) (both sides exact in double).
void s2s_dropout_keyed(float *x, uint8_t *keep, int64_t n, float p, uint64_t key,
                       uint64_t first) {
    if (p == 0.0f) return;
    float scale = 1.0f / (1.0f - p);
    uint64_t min = (uint64_t)ceil((double)p * 0x1.0p53);
    for (int64_t i = 0; i < n; i++) keep[i] = s2s_dropout_bits(key, first + (uint64_t)i) >= min;
    for (int64_t i = 0; i < n; i++) x[i] = keep[i] ? x[i] * scale : 0.0f;
}

void s2s_dropout_backward(float *dx, const float *dy, const uint8_t *keep, int64_t n, float p) {
    if (p == 0.0f) {
        if (dx != dy) memcpy(dx, dy, (size_t)n * sizeof *dx);
        return;
    }
    float scale = 1.0f / (1.0f - p);
    for (int64_t i = 0; i < n; i++) dx[i] = keep[i] ? dy[i] * scale : 0.0f;
}

VECTOR_CLONES void s2s_layernorm_fwd(float *y, float *xhat, float *rstd, const float *x, const float *w,
                       const float *b, int64_t rows, int64_t d, float eps) {
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        float mean = lane_sum(xr, 0.0f, 1, d) / (float)d;
        float var = lane_sum(xr, mean, 2, d) / (float)d;
        float rs = 1.0f / sqrtf(var + eps);
        if (!xhat) {
            for (int64_t i = 0; i < d; i++) yr[i] = (xr[i] - mean) * rs * w[i] + b[i];
            continue;
        }
        // the same float operations, keeping what the backward pass needs
        float *hr = xhat + r * d;
        rstd[r] = rs;
        for (int64_t i = 0; i < d; i++) {
            hr[i] = (xr[i] - mean) * rs;
            yr[i] = hr[i] * w[i] + b[i];
        }
    }
}

void s2s_layernorm(float *y, const float *x, const float *w, const float *b,
                   int64_t rows, int64_t d, float eps) {
    s2s_layernorm_fwd(y, NULL, NULL, x, w, b, rows, d, eps);
}

VECTOR_CLONES void s2s_add(float *y, const float *x, const float *r, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] + r[i];
}

void s2s_positional_table(float *out, int64_t positions, int64_t d) {
    for (int64_t i = 0; i < d / 2; i++) {
        // double: positions up to max_len keep full float accuracy; one
        // pow per column, not per entry
        double wavelength = pow(10000.0, (double)(2 * i) / (double)d);
        for (int64_t p = 0; p < positions; p++) {
            double angle = (double)p / wavelength;
            out[p * d + 2 * i] = (float)sin(angle);
            out[p * d + 2 * i + 1] = (float)cos(angle);
        }
    }
}

// In blocks of 64 whose exponent bits are tested without a branch (the
// loop vectorises), then the block that has one scanned.
VECTOR_CLONES size_t s2s_first_nonfinite(const float *x, size_t n) {
    enum { BLOCK = 64 };
    size_t i = 0;
    for (; i + BLOCK <= n; i += BLOCK) {
        uint32_t bad = 0;
        for (size_t j = 0; j < BLOCK; j++) {
            uint32_t u;
            memcpy(&u, &x[i + j], sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
        if (bad) break;
    }
    for (; i < n; i++)
        if (!isfinite(x[i])) return i;
    return n;
}

VECTOR_CLONES void s2s_embed_row(float *y, const float *emb, int id, float scale, const float *pe, int64_t d) {
    const float *e = emb + (int64_t)id * d;
    for (int64_t i = 0; i < d; i++) y[i] = e[i] * scale + pe[i];
}

VECTOR_CLONES float s2s_log_sum_exp_row(const float *x, int64_t n) {
    float mx = lane_max(x, n);
    return mx + logf(exp_sum(NULL, x, mx, n, false));
}

VECTOR_CLONES void s2s_log_softmax_row(float *x, int64_t n) {
    float lse = s2s_log_sum_exp_row(x, n);
    for (int64_t j = 0; j < n; j++) x[j] -= lse;
}

// ---- low precision ----

// One value of a row quantised with 1/scale, clamped to [-127, 127] (NaN
// to -127) and rounded half to even, as rintf does in the default rounding
// mode, by adding and taking off 1.5 * 2^23 (rintf is a libm call on
// x86-64's baseline ISA, which keeps the loops from vectorising).
static inline int8_t q8(float v, float inv) {
    const float round = 12582912.0f;
    float c = v * inv;
    c = c >= -127.0f ? c : -127.0f;
    c = c <= 127.0f ? c : 127.0f;
    return (int8_t)((c + round) - round);
}

// max |x| over n values, in LANES partial maxima (vectorised; fmaxf is a
// libm call). NaN is skipped.
static inline float abs_max(const float *x, int64_t n) {
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) {
            float a = fabsf(x[i + j]);
            acc[j] = a > acc[j] ? a : acc[j];
        }
    for (; i < n; i++) {
        float a = fabsf(x[i]);
        acc[0] = a > acc[0] ? a : acc[0];
    }
    float m = acc[0];
    for (int j = 1; j < LANES; j++) m = acc[j] > m ? acc[j] : m;
    return m;
}

VECTOR_CLONES float s2s_quantize_row_int8(int8_t *q, const float *x, int64_t k) {
    float amax = abs_max(x, k);
    float scale = amax > 0.0f ? amax / 127.0f : 1.0f, inv = 1.0f / scale;
    for (int64_t i = 0; i < k; i++) q[i] = q8(x[i], inv);
    return scale;
}

void s2s_quantize_cols_int8(int8_t *q, float *scale, const float *w, int64_t k, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        float amax = 0.0f;
        for (int64_t i = 0; i < k; i++) {
            float a = fabsf(w[i * n + j]);
            amax = a > amax ? a : amax;
        }
        scale[j] = amax > 0.0f ? amax / 127.0f : 1.0f;
    }
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) q[i * n + j] = q8(w[i * n + j], 1.0f / scale[j]);
}

void s2s_int8_compensation(int32_t *comp, const int8_t *q, int64_t k, int64_t n) {
    for (int64_t j = 0; j < n; j++) comp[j] = 0;
    for (int64_t i = 0; i < k; i++)
        for (int64_t j = 0; j < n; j++) comp[j] += 128 * q[i * n + j];
}

static VECTOR_CLONES void to_bf16_loop(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &src[i], sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u) dst[i] = (uint16_t)((u >> 16) | 0x40);  // quiet NaN
        else dst[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
}

#ifdef BF16_INSTRUCTION
// 32 values per AVX512_BF16 vcvtne2ps2bf16: rounded to nearest even, a NaN
// quieted the same way as the loop above (Intel's pseudo-code of the
// instruction is that loop), but a denormal input is taken as zero: a
// block of 32 holding one goes through the loop. So the same bits. Returns
// how many values it did (a multiple of 32).
__attribute__((target("avx512f,avx512bw,avx512bf16")))
static size_t to_bf16_instruction(uint16_t *dst, const float *src, size_t n) {
    const __m512i expo = _mm512_set1_epi32(0x7f800000), mant = _mm512_set1_epi32(0x007fffff);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512i a = _mm512_loadu_si512(src + i), b = _mm512_loadu_si512(src + i + 16);
        __mmask16 da = _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(a, expo), a, mant);
        __mmask16 db = _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(b, expo), b, mant);
        if (da | db) {
            to_bf16_loop(dst + i, src + i, 32);
            continue;
        }
        __m512bh r = _mm512_cvtne2ps_pbh(_mm512_castsi512_ps(b), _mm512_castsi512_ps(a));
        _mm512_storeu_si512(dst + i, (__m512i)r);
    }
    return i;
}
#endif

void s2s_to_bf16(uint16_t *dst, const float *src, size_t n) {
    size_t done = 0;
#ifdef BF16_INSTRUCTION
    if (n >= 32 && __builtin_cpu_supports("avx512bf16")) done = to_bf16_instruction(dst, src, n);
#endif
    to_bf16_loop(dst + done, src + done, n - done);
}

void s2s_from_bf16(float *dst, const uint16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)src[i] << 16;
        memcpy(&dst[i], &u, sizeof u);
    }
}
