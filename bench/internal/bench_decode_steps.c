// Decoding speed against the position in the target: the time of each
// greedy step (s2s_decode_rows, one sentence, one row) of a sentence of T
// target tokens, as tokens/s at positions around 16 and around 1,000,
// and the state the steps keep (s2s_state_bytes). Random ids stand in for
// the search's tokens: a step's cost does not depend on them. Medians of
// the steps of a window, over several sentences after a first one. Internal API, so it
// lives in bench/internal/ like bench_attention_products.
//
//   bench_decode_steps MODEL [T] [REPEAT]   (default 1040 3; 1 thread)
//
// Models of configs/bench.yaml with model.max_len 2048 and each decoder
// attention (docs/attention.md, "Decoding state"):
//   s2s init configs/bench.yaml -o full.s2s --set model.max_len=2048
//   s2s init configs/bench.yaml -o local.s2s --set model.max_len=2048
//       --set model.decoder_attention.type=local --set model.decoder_attention.window=16
//   s2s init configs/bench.yaml -o linear.s2s --set model.max_len=2048
//       --set model.decoder_attention.type=linear
// (each one line).
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "decoding/state.h"
#include "s2s/s2s.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void check(s2s_status s, const char *what) {
    if (s == S2S_OK) return;
    fprintf(stderr, "bench_decode_steps: %s: %s\n", what, s2s_last_error());
    exit(1);
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// Median of the step times of positions [lo, hi) over every repeat.
static double median(const double *dt, int T, int repeat, int lo, int hi) {
    int n = 0;
    double *v = malloc(sizeof(double) * (size_t)(repeat * (hi - lo)));
    for (int r = 0; r < repeat; r++)
        for (int t = lo; t < hi; t++) v[n++] = dt[r * T + t];
    qsort(v, (size_t)n, sizeof *v, by_value);
    double m = v[n / 2];
    free(v);
    return m;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_decode_steps MODEL [T] [REPEAT]\n");
        return 2;
    }
    int T = argc > 2 ? atoi(argv[2]) : 1040, repeat = argc > 3 ? atoi(argv[3]) : 3;
    enum { S = 16 };
    if (T < 1024 + 16 || repeat < 1) {
        fprintf(stderr, "bench_decode_steps: T must be at least 1040\n");
        return 2;
    }
    s2s_set_threads(1);
    s2s_model *m;
    check(s2s_model_load(&m, argv[1]), argv[1]);
    s2s_state *st;
    check(s2s_state_new(&st, m), "state");
    int V = s2s_vocab_size(s2s_model_tgt_vocab(m)), Vs = s2s_vocab_size(s2s_model_src_vocab(m));
    double *dt = malloc(sizeof(double) * (size_t)(repeat * T));
    unsigned seed = 1;
    for (int r = -1; r < repeat; r++) {  // r = -1: a warm-up (oneDNN makes its kernels)
        check(s2s_state_reserve(st, 1, 1, S, T, 1, false), "reserve");
        for (int j = 0; j < S - 1; j++) st->ids[j] = S2S_NUM_SPECIALS + (int)(rand_r(&seed) % (unsigned)(Vs - S2S_NUM_SPECIALS));
        st->ids[S - 1] = S2S_EOS;
        st->src_len[0] = S;
        check(s2s_encode(st, 1, S, false), "encode");
        for (int t = 0; t < T; t++) {
            st->ids[0] = t == 0 ? S2S_BOS : S2S_NUM_SPECIALS + (int)(rand_r(&seed) % (unsigned)(V - S2S_NUM_SPECIALS));
            s2s_dec_pos pos = {.t0 = t, .tq = 1, .t_alloc = T, .beams = 1};
            double t0 = now();
            check(s2s_decode_rows(st, 1, S, pos, 0), "decode");
            if (r >= 0) dt[r * T + t] = now() - t0;
        }
    }
    double early = median(dt, T, repeat, 8, 25), late = median(dt, T, repeat, 992, 1009);
    static const char *kinds[S2S_SELF_STATE_COUNT] = {"full", "ring", "linear"};
    printf("%s: tokens/s at 8..24 %.0f, at 992..1008 %.0f (%.0f%%); state %zu bytes for T %d; "
           "layers' self-attention states:", argv[1], 1 / early, 1 / late, 100 * early / late,
           s2s_state_bytes(st), T);
    for (int l = 0; l < s2s_model_get_config(m)->model.decoder_layers; l++)
        printf(" %s", kinds[st->bounded ? s2s_self_state_of(m, l) : S2S_SELF_FULL]);
    printf("\n");
    free(dt);
    s2s_state_free(st);
    s2s_model_free(m);
    return 0;
}
