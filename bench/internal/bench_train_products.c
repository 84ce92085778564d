// Time per call of training's matrix products in fp32 and in bf16, at 1
// thread, for the shapes of one step of a model: each linear layer's
// forward product x · W^T and its two backward products dy · W and
// dy^T · x over R rows, and an attention's three kinds of per-head
// product over B sentences of T rows. bf16 gets its operands rounded already, as training hands them to
// s2s_mm (train/graph.c): the figures are the products alone. Best of 7
// timed loops, in ms. The default shapes are configs/zh-en.yaml's (d 128,
// FFN 256, 579 target words, 4 heads) at about one batch of its 4,096
// tokens; docs/training.md reads them. The attention has 4 heads of D/4.
//
//   bench_train_products [D F V R B T]   (default 128 256 579 2048 100 20)
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ops/matmul.h"
#include "ops/ops.h"
#include "s2s/s2s.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// Best of 7 loops of s2s_mm(c, a, b, p), ms per call; with bf16 a and b
// are bf16 values.
static double time_mm(s2s_mm_args p, bool bf16, float *c, const void *a, const void *b) {
    p.bf16 = p.a_is_bf16 = p.b_is_bf16 = bf16;
    double best = 1e30;
    for (int rep = 0; rep < 7; rep++) {
        double t = now();
        for (int i = 0; i < 10; i++)
            if (s2s_mm(c, a, b, &p) != S2S_OK) {
                fprintf(stderr, "bench_train_products: %s\n", s2s_last_error());
                exit(1);
            }
        double dt = (now() - t) / 10;
        best = dt < best ? dt : best;
    }
    return best * 1e3;
}

typedef struct operands {
    float *a, *b, *c;
    uint16_t *a16, *b16;
} operands;

static double sum32, sum16;

// Prints one row of the table, ms in fp32 and bf16, and adds them to the sums.
static void report(const char *what, double f, double h) {
    sum32 += f;
    sum16 += h;
    printf("| %s | %.3f | %.3f | %.2fx |\n", what, f, h, f / h);
}

// One row of the table: the product p in both types.
static void row(const char *what, s2s_mm_args p, const operands *o, size_t b_offset) {
    report(what, time_mm(p, false, o->c, o->a, o->b + b_offset),
           time_mm(p, true, o->c, o->a16, o->b16 + b_offset));
}

// A linear layer y (R, N) = x (R, K) · W^T: forward, dx, dW.
static void linear_rows(const operands *o, int64_t r, int64_t k, int64_t n) {
    char what[96];
    snprintf(what, sizeof what, "%lld x %lld -> %lld: x · W^T", (long long)r, (long long)k,
             (long long)n);
    row(what, (s2s_mm_args){.b0 = 1, .b1 = 1, .m = r, .k = k, .n = n, .sa = {0, 0, k, 1},
                            .sb = {0, 0, 1, k}, .sc = {0, 0, n, 1}, .alpha = 1.0f}, o, 0);
    snprintf(what, sizeof what, "%lld x %lld -> %lld: dy · W", (long long)r, (long long)k,
             (long long)n);
    row(what, (s2s_mm_args){.b0 = 1, .b1 = 1, .m = r, .k = n, .n = k, .sa = {0, 0, n, 1},
                            .sb = {0, 0, k, 1}, .sc = {0, 0, k, 1}, .alpha = 1.0f}, o, 0);
    snprintf(what, sizeof what, "%lld x %lld -> %lld: dy^T · x", (long long)r, (long long)k,
             (long long)n);
    row(what, (s2s_mm_args){.b0 = 1, .b1 = 1, .m = n, .k = r, .n = k, .sa = {0, 0, 1, n},
                            .sb = {0, 0, k, 1}, .sc = {0, 0, k, 1}, .alpha = 1.0f,
                            .accumulate = true}, o, 0);
}

// A per-head product as training runs it (layers/attention.c): fixed
// shapes, FIXED_BATCH = 16 sentences a call, the last call overlapping.
static void fixed_row(const char *what, s2s_mm_args p, const operands *o, int64_t bs) {
    int64_t sa = p.sa[0], sb = p.sb[0], sc = p.sc[0];
    p.fixed = true;
    p.b0 = bs < 16 ? bs : 16;
    double t[2];
    for (int bf16 = 0; bf16 < 2; bf16++) {
        double sum = 0;
        for (int64_t first = 0; first < bs; first += p.b0) {
            int64_t at = first + p.b0 > bs ? bs - p.b0 : first;
            sum += bf16 ? time_mm(p, true, o->c + at * sc, o->a16 + at * sa, o->b16 + at * sb)
                        : time_mm(p, false, o->c + at * sc, o->a + at * sa, o->b + at * sb);
        }
        t[bf16] = sum;
    }
    report(what, t[0], t[1]);
}

// An attention's per-head products over bs sentences of t rows, h heads,
// as training runs them: Q, K, V and the context's gradient dO each a
// (bs, t, D) block (train/graph.c), the weights P (bs, h, t, t) dense.
// Beside them, not summed: the scores read in place from rows of a fused
// Q|K|V at run-time shapes, as training did before.
static void attention_rows(const operands *o, int64_t bs, int64_t t, int64_t h, int64_t dh) {
    int64_t d = h * dh;
    char what[128];
    snprintf(what, sizeof what, "%lld x %lld heads, %lld rows: Q · K^T (and dO · V^T)",
             (long long)bs, (long long)h, (long long)t);
    fixed_row(what, (s2s_mm_args){.b1 = h, .m = t, .k = dh, .n = t, .sa = {t * d, dh, d, 1},
                                  .sb = {t * d, dh, 1, d}, .sc = {h * t * t, t * t, t, 1},
                                  .alpha = 1.0f}, o, bs);
    snprintf(what, sizeof what, "%lld x %lld heads, %lld rows: P · V (and dS · K)",
             (long long)bs, (long long)h, (long long)t);
    fixed_row(what, (s2s_mm_args){.b1 = h, .m = t, .k = t, .n = dh,
                                  .sa = {h * t * t, t * t, t, 1}, .sb = {t * d, dh, d, 1},
                                  .sc = {t * d, dh, d, 1}, .alpha = 1.0f}, o, bs);
    snprintf(what, sizeof what, "%lld x %lld heads, %lld rows: P^T · dO (and dS^T · Q)",
             (long long)bs, (long long)h, (long long)t);
    fixed_row(what, (s2s_mm_args){.b1 = h, .m = t, .k = t, .n = dh,
                                  .sa = {h * t * t, t * t, 1, t}, .sb = {t * d, dh, d, 1},
                                  .sc = {t * d, dh, d, 1}, .alpha = 1.0f}, o, bs);
    double s32 = sum32, s16 = sum16;
    snprintf(what, sizeof what, "(before: Q · K^T from rows of Q|K|V, run-time shape)");
    row(what, (s2s_mm_args){.b0 = bs, .b1 = h, .m = t, .k = dh, .n = t,
                            .sa = {t * 3 * d, dh, 3 * d, 1}, .sb = {t * 3 * d, dh, 1, 3 * d},
                            .sc = {h * t * t, t * t, t, 1}, .alpha = 1.0f}, o, (size_t)d);
    sum32 = s32, sum16 = s16;
}

int main(int argc, char **argv) {
    int64_t a[6] = {128, 256, 579, 2048, 100, 20};
    for (int i = 0; i < 6 && i + 1 < argc; i++) a[i] = atoll(argv[i + 1]);
    int64_t d = a[0], f = a[1], v = a[2], r = a[3], bs = a[4], t = a[5];
    s2s_set_num_threads(1);
    size_t n = (size_t)(r * (v > 3 * d ? v : 3 * d) + bs * t * 3 * d + bs * 4 * t * t + d * f);
    operands o = {malloc(n * 4), malloc(n * 4), malloc(n * 4), malloc(n * 2), malloc(n * 2)};
    if (!o.a || !o.b || !o.c || !o.a16 || !o.b16) return 1;
    for (size_t i = 0; i < n; i++) {
        o.a[i] = (float)(i % 13) * 0.1f - 0.6f;
        o.b[i] = (float)(i % 7) * 0.01f - 0.03f;
    }
    s2s_to_bf16(o.a16, o.a, n);
    s2s_to_bf16(o.b16, o.b, n);
    printf("| product | fp32 ms | bf16 ms | fp32 / bf16 |\n|---|---:|---:|---:|\n");
    int64_t kn[][2] = {{d, 3 * d}, {d, d}, {d, 2 * d}, {d, f}, {f, d}, {d, v}};
    for (int s = 0; s < 6; s++) linear_rows(&o, r, kn[s][0], kn[s][1]);
    attention_rows(&o, bs, t, 4, d / 4);
    printf("| all of the above | %.2f | %.2f | %.2fx |\n", sum32, sum16, sum32 / sum16);
    free(o.a), free(o.b), free(o.c), free(o.a16), free(o.b16);
    s2s_shutdown();
    return 0;
}
