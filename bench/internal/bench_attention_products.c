// Time per call of a decoding step's attention (s2s_attention, layers/
// attention.h) with a product per head and with one per sequence on
// block-diagonal queries (s2s_attn_shape.block), at 1 thread, for one
// query row per sequence against Tk cached keys. Best of 5 timed loops, in
// us. Given a block, attention.c takes it only where it pays (its rule):
// beyond that both columns run a product per head. Internal API, so it
// lives in bench/internal/ like bench_linear_types.
//
//   bench_attention_products [SEQS H D]   (default 128 4 128: beam 4 x 32
//                                          sequences on configs/bench.yaml)
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "layers/attention.h"
#include "s2s/s2s.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double time_call(float *ctx, float *probs, s2s_view q, s2s_view k, s2s_view v,
                        const s2s_attn_shape *s) {
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double t = now();
        for (int i = 0; i < 50; i++)
            if (s2s_attention(ctx, probs, q, k, v, s) != S2S_OK) {
                fprintf(stderr, "bench_attention_products: %s\n", s2s_last_error());
                exit(1);
            }
        double dt = (now() - t) / 50;
        best = dt < best ? dt : best;
    }
    return best * 1e6;
}

int main(int argc, char **argv) {
    int64_t B = argc > 3 ? atoll(argv[1]) : 128, H = argc > 3 ? atoll(argv[2]) : 4,
            d = argc > 3 ? atoll(argv[3]) : 128;
    if (B < 1 || H < 1 || d < H || d % H) {
        fprintf(stderr, "usage: bench_attention_products [SEQS H D] (D a multiple of H)\n");
        return 2;
    }
    enum { TMAX = 128 };
    s2s_set_threads(1);
    // Q rows as the decoder's fused projections (3D wide), K/V as its cache
    float *q = calloc((size_t)(B * 3 * d), sizeof(float));
    float *kv = calloc((size_t)(B * TMAX * 2 * d), sizeof(float));
    float *ctx = malloc(sizeof(float) * (size_t)(B * d));
    float *probs = malloc(sizeof(float) * (size_t)(B * H * TMAX));
    float *block = calloc((size_t)(B * H * d), sizeof(float));
    float *block_ctx = malloc(sizeof(float) * (size_t)(B * H * d));
    if (!q || !kv || !ctx || !probs || !block || !block_ctx) return 1;
    for (int64_t i = 0; i < B * 3 * d; i++) q[i] = (float)(i % 7) * 0.1f;
    for (int64_t i = 0; i < B * TMAX * 2 * d; i++) kv[i] = (float)(i % 11) * 0.05f;
    printf("%lld sequences, %lld heads, d_model %lld, 1 query row each, 1 thread\n\n",
           (long long)B, (long long)H, (long long)d);
    printf("| keys | per head (us) | block given (us) | per head / block given |\n");
    printf("|---:|---:|---:|---:|\n");
    static const int64_t tks[] = {4, 8, 16, 32, 64, 128};
    for (size_t i = 0; i < sizeof tks / sizeof tks[0]; i++) {
        int64_t tk = tks[i];
        s2s_view qv = {.p = q, .bs = 3 * d, .rs = 3 * d},
                 kview = {.p = kv, .bs = TMAX * 2 * d, .rs = 2 * d},
                 vview = {.p = kv + d, .bs = TMAX * 2 * d, .rs = 2 * d};
        s2s_attn_shape s = {
            .batch = B, .heads = H, .head_dim = d / H, .tq = 1, .tk = tk,
            .mask = {.pattern = {.causal = true}, .q_pos0 = tk - 1},
        };
        double head = time_call(ctx, probs, qv, kview, vview, &s);
        s.block = block, s.block_ctx = block_ctx;
        double one = time_call(ctx, probs, qv, kview, vview, &s);
        printf("| %lld | %.1f | %.1f | %.2f |\n", (long long)tk, head, one, head / one);
    }
    free(q), free(kv), free(ctx), free(probs), free(block), free(block_ctx);
    s2s_shutdown();
    return 0;
}
