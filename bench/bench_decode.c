// Decoding benchmark: greedy sentences/s and target tokens/s at batch 1
// and 32 on a model and an input file, and matmul GFLOP/s at the model's
// shapes. A program that prints figures, not a timed test.
//
//   bench_decode -m MODEL -i FILE [--threads N] [--max-len N] [--repeat N]
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/model_internal.h"
#include "ops/matmul.h"
#include "s2s/s2s.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "bench_decode: %s: %s\n", what, s2s_last_error());
    exit(1);
}

// GFLOP/s of y (M, N) = x (M, K) · W^T + b, best of a few timed runs.
static double linear_gflops(int64_t m, int64_t k, int64_t n) {
    float *x = calloc((size_t)(m * k), sizeof(float)), *w = calloc((size_t)(n * k), sizeof(float));
    float *b = calloc((size_t)n, sizeof(float)), *y = calloc((size_t)(m * n), sizeof(float));
    for (int64_t i = 0; i < m * k; i++) x[i] = (float)(i % 7) * 0.1f;
    for (int64_t i = 0; i < n * k; i++) w[i] = (float)(i % 5) * 0.1f;
    double flops = 2.0 * (double)m * (double)k * (double)n, best = 1e30;
    int iters = (int)(2e8 / flops) + 10;
    for (int rep = 0; rep < 3; rep++) {
        double t = now();
        for (int i = 0; i < iters; i++)
            if (s2s_linear((s2s_rows){y, 0, n}, (s2s_rows){x, 0, k}, w, b, 1, m, k, n,
                           S2S_MM_NONE, false) != S2S_OK)
                die("matmul");
        double dt = (now() - t) / iters;
        best = dt < best ? dt : best;
    }
    free(x), free(w), free(b), free(y);
    return flops / best * 1e-9;
}

typedef struct result {
    double seconds;
    long sentences, tokens;
} result;

static result run(s2s_state *st, s2s_decode_params p, const int *const *src, const int *len,
                  int n, int repeat) {
    s2s_hypothesis *h = calloc((size_t)n, sizeof *h);
    result r = {0};
    for (int rep = 0; rep < repeat; rep++) {
        double t = now();
        if (s2s_translate(st, &p, src, len, n, h) != S2S_OK) die("translate");
        r.seconds += now() - t;
        for (int i = 0; i < n; i++) {
            r.tokens += h[i].n_out;
            s2s_hypothesis_free(&h[i]);
        }
        r.sentences += n;
    }
    free(h);
    return r;
}

int main(int argc, char **argv) {
    const char *model = NULL, *input = NULL;
    int threads = 1, max_len = 0, repeat = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) model = argv[i + 1];
        else if (!strcmp(argv[i], "-i")) input = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-len")) max_len = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
    }
    if (!model || !input || threads < 1 || repeat < 1) {
        fprintf(stderr, "usage: bench_decode -m MODEL -i FILE [--threads N] [--max-len N] [--repeat N]\n");
        return 2;
    }
    s2s_set_threads(threads);
    s2s_model *m;
    s2s_state *st;
    if (s2s_model_load(&m, model) != S2S_OK) die(model);
    if (s2s_state_new(&st, m) != S2S_OK) die("state");

    FILE *f = fopen(input, "r");
    if (!f) {
        fprintf(stderr, "bench_decode: %s: cannot open\n", input);
        return 2;
    }
    int n = 0, cap = 0;
    s2s_tokens *toks = NULL;
    char *line = NULL;
    size_t lcap = 0;
    ssize_t got;
    while ((got = getline(&line, &lcap, f)) > 0) {
        if (line[got - 1] == '\n') line[got - 1] = '\0';
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            toks = realloc(toks, (size_t)cap * sizeof *toks);
        }
        toks[n] = (s2s_tokens){0};
        if (s2s_tokenize(s2s_model_src_vocab(m), line, &toks[n]) != S2S_OK) die(input);
        n++;
    }
    free(line);
    fclose(f);
    const int **src = calloc((size_t)n, sizeof *src);
    int *len = calloc((size_t)n, sizeof *len);
    long src_tokens = 0;
    for (int i = 0; i < n; i++) src[i] = toks[i].ids, len[i] = toks[i].n, src_tokens += toks[i].n;

    const s2s_config *c = s2s_model_get_config(m);
    s2s_decode_params p = s2s_decode_default_params(m);
    if (max_len) p.max_len = max_len;
    printf("model %s: d_model %d, heads %d, layers %d+%d, ffn %d, vocab %d/%d\n", model,
           c->model.d_model, c->model.heads, c->model.encoder_layers, c->model.decoder_layers,
           c->model.ffn_dim, s2s_vocab_size(s2s_model_src_vocab(m)),
           s2s_vocab_size(s2s_model_tgt_vocab(m)));
    printf("machine: %ld cores online; oneDNN threads: %d\n", sysconf(_SC_NPROCESSORS_ONLN),
           s2s_get_num_threads());
    printf("input %s: %d sentences, %ld source tokens; max_len %d\n\n", input, n, src_tokens,
           p.max_len);

    run(st, p, src, len, n < 4 ? n : 4, 1);  // warm up: primitives, buffers
    printf("| greedy | batch | sentences/s | target tokens/s | ms/sentence |\n");
    printf("|---|---:|---:|---:|---:|\n");
    int batches[2] = {1, 32};
    for (int b = 0; b < 2; b++) {
        p.max_batch = batches[b];
        result r = run(st, p, src, len, n, repeat);
        printf("| greedy | %d | %.1f | %.0f | %.3f |\n", batches[b], r.sentences / r.seconds,
               r.tokens / r.seconds, 1e3 * r.seconds / r.sentences);
    }

    int64_t d = c->model.d_model, ff = c->model.ffn_dim, V = s2s_vocab_size(s2s_model_tgt_vocab(m));
    printf("\n| matmul (M x K -> N) | GFLOP/s |\n|---|---:|\n");
    int64_t shapes[][3] = {{1, d, 3 * d}, {1, d, ff}, {1, ff, d}, {1, d, V},
                           {32, d, 3 * d}, {32, d, ff}, {32, ff, d}, {32, d, V},
                           {512, d, 3 * d}, {512, d, ff}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        printf("| %lld x %lld -> %lld | %.1f |\n", (long long)shapes[i][0],
               (long long)shapes[i][1], (long long)shapes[i][2],
               linear_gflops(shapes[i][0], shapes[i][1], shapes[i][2]));

    for (int i = 0; i < n; i++) s2s_tokens_free(&toks[i]);
    free(toks), free(src), free(len);
    s2s_state_free(st);
    s2s_model_free(m);
    s2s_backend_shutdown();
    return 0;
}
