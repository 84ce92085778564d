// Time per call of decoding's products in each compute type: y (M, N) =
// x (M, K) · W + b through s2s_linear_w (ops/matmul.h), at 1 thread, for
// the rows a decoding step has (1: greedy batch 1; 4: a beam; 32, 128:
// batches) and the bench model's shapes. Best of 5 timed loops, in us.
// Internal API, so it lives in bench/internal/ (bench/*.c use the public
// one: tests/public_headers_test.sh); built against src/, not installed.
//
//   bench_linear_types [D F V]      (default 128 512 500: configs/bench.yaml)
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

static double time_call(float *y, const float *x, const s2s_wmat *w, const float *b, int64_t m,
                        int64_t k, int64_t n) {
    int iters = (int)(2e7 / (2.0 * (double)(m * k * n))) + 20;
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t = now();
        for (int i = 0; i < iters; i++)
            if (s2s_linear_w(y, x, w, b, m, k, n, S2S_MM_NONE, false) != S2S_OK) {
                fprintf(stderr, "bench_linear_types: %s\n", s2s_last_error());
                exit(1);
            }
        double dt = (now() - t) / iters;
        best = dt < best ? dt : best;
    }
    return best * 1e6;
}

int main(int argc, char **argv) {
    int64_t d = argc > 3 ? atoll(argv[1]) : 128, f = argc > 3 ? atoll(argv[2]) : 512;
    int64_t v = argc > 3 ? atoll(argv[3]) : 500;
    s2s_set_num_threads(1);
    int64_t rows[] = {1, 2, 4, 8, 16, 32, 128}, kn[][2] = {{d, 3 * d}, {d, f}, {f, d}, {d, v}};
    printf("| M x K -> N | fp32 us | int8 us | bf16 us |\n|---|---:|---:|---:|\n");
    for (int a = 0; a < (int)(sizeof rows / sizeof rows[0]); a++)
        for (int s = 0; s < 4; s++) {
            int64_t m = rows[a], k = kn[s][0], n = kn[s][1];
            float *x = malloc(sizeof(float) * (size_t)(m * k));
            float *w = malloc(sizeof(float) * (size_t)(k * n));
            float *y = malloc(sizeof(float) * (size_t)(m * n)), *b = calloc((size_t)n, 4);
            float *scale = malloc(sizeof(float) * (size_t)n);
            int8_t *q = malloc((size_t)(k * n));
            uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(k * n));
            for (int64_t i = 0; i < m * k; i++) x[i] = (float)(i % 13) * 0.1f - 0.6f;
            for (int64_t i = 0; i < k * n; i++) w[i] = (float)(i % 7) * 0.01f - 0.03f;
            s2s_quantize_cols_int8(q, scale, w, k, n);
            int32_t *comp = malloc(sizeof(int32_t) * (size_t)n);
            s2s_int8_compensation(comp, q, k, n);
            s2s_to_bf16(h, w, (size_t)(k * n));
            s2s_wmat ws[3] = {{S2S_COMPUTE_FP32, w, NULL, NULL}, {S2S_COMPUTE_INT8, q, scale, comp},
                              {S2S_COMPUTE_BF16, h, NULL, NULL}};
            printf("| %lld x %lld -> %lld |", (long long)m, (long long)k, (long long)n);
            for (int t = 0; t < 3; t++) printf(" %.2f |", time_call(y, x, &ws[t], b, m, k, n));
            printf("\n");
            free(x), free(w), free(y), free(b), free(scale), free(q), free(h), free(comp);
        }
    s2s_shutdown();
    return 0;
}
