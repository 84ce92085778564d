// Cost against length of one model's attention (issue 29): the time of an
// encoder pass over one sentence of S rows, or of a greedy decode of T
// target tokens, and the process's peak resident memory. One measurement
// per process, so that the peak is that measurement's:
// bench/attention_cost.py runs it for every variant and length,
// interleaved, and prints the tables (docs/attention.md). Internal API
// (the encoder stack alone), so it lives in bench/internal/.
//
//   bench_attention_cost -m MODEL --encoder S [--min-time SEC]
//   bench_attention_cost -m MODEL --encode S [--min-time SEC]
//   bench_attention_cost -m MODEL --decode T [--src S] [--min-time SEC]
//
// --encoder: S rows (S - 1 random source tokens and </s>) through the
// encoder stack alone (s2s_encode_stack: the embedding, the layers and
// the final LayerNorm), what the encoder target names. --encode:
// the same rows through s2s_score with an empty target, which runs the
// encoder, every decoder layer's cross-attention K/V and one decoder
// row: the public API's nearest to an encoder pass. --decode: greedy
// s2s_translate of an S-row source (default 16) forced to exactly T
// target tokens, without replace_unknowns. All at 1 thread; after one
// untimed call (oneDNN's kernels, the state's buffers), calls are timed
// until --min-time seconds (default 1) have passed, at least one. Prints
// one line of key=value: the median seconds per call, wall and the
// process's CPU time, the calls, and getrusage's peak RSS after loading
// the model and at the end, in KiB.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "decoding/state.h"
#include "s2s/s2s.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
// The process's CPU time: on a loaded machine, what the call cost
// rather than how long it waited.
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void die(const char *what) {
    fprintf(stderr, "bench_attention_cost: %s: %s\n", what, s2s_last_error());
    exit(1);
}

static long peak_rss_kib(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

typedef enum mode { ENCODER, ENCODE, DECODE } mode;

// One call: the encoder stack (ENCODER), an encoder pass through
// s2s_score (ENCODE) or a forced greedy decode of T tokens (DECODE).
static void call(s2s_state *st, const s2s_decode_params *p, const int *src, int n, mode how,
                 int T) {
    if (how == ENCODER) {
        if (s2s_state_reserve(st, 1, 1, n + 1, 1, 1, false) != S2S_OK) die("reserve");
        memcpy(st->ids, src, (size_t)n * sizeof *src);
        st->ids[n] = S2S_EOS;
        st->src_len[0] = n + 1;
        if (s2s_encode_stack(st, 1, n + 1, false) != S2S_OK) die("encoder");
        return;
    }
    s2s_hypothesis h;
    const int *srcs[1] = {src}, *tgts[1] = {src};
    int lens[1] = {n}, tgt_len[1] = {0};
    s2s_status s = how == DECODE ? s2s_translate(st, p, srcs, lens, 1, &h)
                                 : s2s_score(st, p, srcs, lens, tgts, tgt_len, 1, &h);
    if (s != S2S_OK) die(how == DECODE ? "translate" : "score");
    if (how == DECODE && h.n_out != T) {
        fprintf(stderr, "bench_attention_cost: decoded %d tokens, not %d\n", h.n_out, T);
        exit(1);
    }
    s2s_hypothesis_free(&h);
}

int main(int argc, char **argv) {
    const char *model = NULL;
    static const char *const names[] = {"encoder", "encode", "decode"};
    mode how = ENCODER;
    int size = 0, modes = 0, src_rows = 16;
    double min_time = 1.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) model = argv[i + 1];
        for (mode k = ENCODER; k <= DECODE; k++)
            if (argv[i][0] == '-' && argv[i][1] == '-' && !strcmp(argv[i] + 2, names[k]))
                how = k, size = atoi(argv[i + 1]), modes++;
        if (!strcmp(argv[i], "--src")) src_rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--src")) src_rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-time")) min_time = atof(argv[i + 1]);
    }
    if (!model || modes != 1 || size < 1 || src_rows < 1) {
        fprintf(stderr, "usage: bench_attention_cost -m MODEL (--encoder S | --encode S |"
                        " --decode T [--src S]) [--min-time SEC]\n");
        return 2;
    }
    s2s_set_threads(1);
    s2s_model *m;
    s2s_state *st;
    if (s2s_model_load(&m, model) != S2S_OK) die(model);
    long rss_model = peak_rss_kib();
    if (s2s_state_new(&st, m) != S2S_OK) die("state");

    int dec_tokens = how == DECODE ? size : 0;
    int rows = how == DECODE ? src_rows : size, n = rows - 1;  // + </s>
    int V = s2s_vocab_size(s2s_model_src_vocab(m));
    int *src = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    uint64_t x = 88172645463325252ULL;
    for (int i = 0; i < n; i++) {  // xorshift: ordinary tokens, no specials
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        src[i] = S2S_NUM_SPECIALS + (int)(x % (uint64_t)(V - S2S_NUM_SPECIALS));
    }
    s2s_decode_params p = s2s_decode_default_params(m);
    p.threads = 1;
    p.decode.beam_size = 1;
    p.decode.n_best = 1;
    p.max_batch = 1;
    p.decode.max_len_ratio = 0;
    if (dec_tokens) p.decode.min_len = p.decode.max_len = dec_tokens;
    // A random model emits <unk> now and then, and replacing it rescores
    // the whole hypothesis with its maps (all T rows at once): the decode
    // alone is measured, whatever tokens each variant's model happens to pick.
    p.decode.replace_unknowns = false;

    call(st, &p, src, n, how, dec_tokens);  // untimed: kernels and buffers
    int cap = 1024, calls = 0;
    double *t = malloc(sizeof(double) * (size_t)cap), *cpu = malloc(sizeof(double) * (size_t)cap);
    double start = now();
    while (calls < cap && (calls == 0 || now() - start < min_time)) {
        double t0 = now(), c0 = cpu_now();
        call(st, &p, src, n, how, dec_tokens);
        cpu[calls] = cpu_now() - c0;
        t[calls++] = now() - t0;
    }
    printf("%s=%d rows=%d seconds=%.6g cpu_seconds=%.6g calls=%d rss_model_kib=%ld "
           "rss_peak_kib=%ld\n",
           names[how], size, rows,
           median(t, calls), median(cpu, calls), calls, rss_model, peak_rss_kib());
    free(t);
    free(cpu);
    free(src);
    s2s_state_free(st);
    s2s_model_free(m);
    s2s_shutdown();
    return 0;
}
