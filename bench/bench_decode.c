// Decoding benchmark: greedy sentences/s and target tokens/s at batch 1
// and 32 on a model and an input file, and matmul GFLOP/s at the model's
// shapes. A program that prints figures, not a timed test.
//
//   bench_decode -m MODEL -i FILE [--threads N] [--max-len N] [--min-len N]
//                [--beam K] [--repeat N] [--dump FILE] [--compute-type T]
//                [--no-matmul]
//
// --compute-type decodes in fp32, int8, bf16 or auto (s2s/model.h);
// --no-matmul leaves out the matmul table and the roofline: the decoder's
// matrix FLOPs per target token (K rows of them for a beam of K) at the
// best fp32 GFLOP/s of the table, beside each row's measured tokens/s.
// --min-len forces every sentence to run that many steps (random models
// rarely emit </s>); --dump writes the greedy translations as tokens.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

// GFLOP/s of y (M, N) = x (M, K) · W + b, W (K, N) as decoding holds it,
// best of a few timed runs.
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
            if (s2s_matmul(y, x, w, b, m, k, n) != S2S_OK) die("matmul");
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
                  int n, int repeat, FILE *dump, const s2s_vocab *tv) {
    s2s_hypothesis *h = calloc((size_t)n, sizeof *h);
    result r = {0};
    for (int rep = 0; rep < repeat; rep++) {
        double t = now();
        if (s2s_translate(st, &p, src, len, n, h) != S2S_OK) die("translate");
        r.seconds += now() - t;
        for (int i = 0; i < n; i++) {
            r.tokens += h[i].n_out;
            if (dump && rep == 0) {
                char *text = s2s_join_tokens(tv, h[i].ids, h[i].n);
                fprintf(dump, "%s\n", text ? text : "");
                free(text);
            }
            s2s_hypothesis_free(&h[i]);
        }
        r.sentences += n;
    }
    free(h);
    return r;
}

// Matmul FLOPs of one decoder step per sequence at position t with S
// source rows: projections, attention, FFN and logits.
static double flops_per_token(const s2s_config *c, int64_t V, double t, double S) {
    double d = c->model.d_model, f = c->model.ffn_dim, L = c->model.decoder_layers;
    double layer = 2 * d * 3 * d + 2 * d * d   // self-attention QKV and out
                   + 2 * d * d + 2 * d * d     // cross-attention Q and out
                   + 2 * 2 * d * f             // FFN
                   + 2 * 2 * d * t             // self scores and context
                   + 2 * 2 * d * S;            // cross scores and context
    return L * layer + 2 * d * (double)V;
}

int main(int argc, char **argv) {
    const char *model = NULL, *input = NULL;
    int threads = 1, max_len = 0, min_len = 0, beam = 4, repeat = 3;
    const char *dump_path = NULL, *compute = NULL;
    bool matmul_table = true;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--no-matmul")) {
            matmul_table = false, i--;
            continue;
        }
        if (i + 1 == argc) break;
        if (!strcmp(argv[i], "-m")) model = argv[i + 1];
        else if (!strcmp(argv[i], "-i")) input = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--max-len")) max_len = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--min-len")) min_len = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--beam")) beam = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dump")) dump_path = argv[i + 1];
        else if (!strcmp(argv[i], "--repeat")) repeat = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--compute-type")) compute = argv[i + 1];
    }
    if (!model || !input || threads < 1 || repeat < 1 || beam < 1) {
        fprintf(stderr, "usage: bench_decode -m MODEL -i FILE [--threads N] [--max-len N] "
                        "[--min-len N] [--beam K] [--repeat N] [--dump FILE] "
                        "[--compute-type fp32|int8|bf16|auto] [--no-matmul]\n");
        return 2;
    }
    s2s_set_threads(threads);
    s2s_model *m;
    s2s_state *st;
    if (s2s_model_load(&m, model) != S2S_OK) die(model);
    if (s2s_state_new(&st, m) != S2S_OK) die("state");
    if (compute) {
        static const char *const names[] = {"fp32", "int8", "bf16", "auto"};
        int t = 0;
        while (t < S2S_COMPUTE_COUNT && strcmp(names[t], compute)) t++;
        if (t == S2S_COMPUTE_COUNT || s2s_model_set_compute_type(m, (s2s_compute_type)t) != S2S_OK) {
            fprintf(stderr, "bench_decode: --compute-type %s: fp32, int8, bf16 or auto\n", compute);
            return 2;
        }
    }

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
    if (max_len) p.decode.max_len = max_len;
    p.decode.min_len = min_len;
    p.threads = threads;
    printf("model %s: d_model %d, heads %d, layers %d+%d, ffn %d, vocab %d/%d\n", model,
           c->model.d_model, c->model.heads, c->model.encoder_layers, c->model.decoder_layers,
           c->model.ffn_dim, s2s_vocab_size(s2s_model_src_vocab(m)),
           s2s_vocab_size(s2s_model_tgt_vocab(m)));
    static const char *const type_names[] = {"fp32", "int8", "bf16", "auto"};
    printf("machine: %ld cores online; oneDNN threads: %d; compute type %s\n",
           sysconf(_SC_NPROCESSORS_ONLN), threads, type_names[s2s_model_compute_type(m)]);
    printf("input %s: %d sentences, %ld source tokens; max_len %d, min_len %d\n\n", input, n,
           src_tokens, p.decode.max_len, p.decode.min_len);

    const s2s_vocab *tv = s2s_model_tgt_vocab(m);
    FILE *dump = dump_path ? fopen(dump_path, "w") : NULL;
    if (dump_path && !dump) {
        fprintf(stderr, "bench_decode: %s: cannot write\n", dump_path);
        return 2;
    }
    run(st, p, src, len, n < 4 ? n : 4, 1, NULL, tv);  // warm up: primitives, buffers
    printf("| search | batch | sentences/s | target tokens/s | ms/sentence |\n");
    printf("|---|---:|---:|---:|---:|\n");
    struct { const char *name; int beam, batch; } rows[4] = {
        {"greedy", 1, 1}, {"greedy", 1, 32}, {"beam", beam, 1}, {"beam", beam, 32}};
    double ms_of[4] = {0}, tok_s[4] = {0}, token_s = 0;
    long tokens_b1 = 0;
    for (int k = 0; k < 4; k++) {
        p.decode.beam_size = rows[k].beam;
        p.max_batch = rows[k].batch;
        result r = run(st, p, src, len, n, repeat, k == 0 ? dump : NULL, tv);
        double ms = 1e3 * r.seconds / r.sentences;
        ms_of[k] = ms;
        tok_s[k] = r.tokens / r.seconds;
        if (k == 0) token_s = r.seconds / r.tokens, tokens_b1 = r.tokens / r.sentences;
        printf("| %s %d | %d | %.1f | %.0f | %.3f |\n", rows[k].name, rows[k].beam, rows[k].batch,
               r.sentences / r.seconds, r.tokens / r.seconds, ms);
        fprintf(stderr, "tokens per pass: %s %d x %d: %ld\n", rows[k].name, rows[k].beam,
                rows[k].batch, r.tokens / repeat);
    }
    if (dump) fclose(dump);
    printf("\nbeam %d / greedy time per sentence at batch 1: %.2fx\n", beam, ms_of[2] / ms_of[0]);
    if (!matmul_table) return 0;

    int64_t d = c->model.d_model, ff = c->model.ffn_dim, V = s2s_vocab_size(s2s_model_tgt_vocab(m));
    printf("\n| matmul (M x K -> N) | GFLOP/s |\n|---|---:|\n");
    int64_t shapes[][3] = {{1, d, 3 * d}, {1, d, ff}, {1, ff, d}, {1, d, V},
                           {32, d, 3 * d}, {32, d, ff}, {32, ff, d}, {32, d, V},
                           {512, d, 3 * d}, {512, d, ff}};
    double peak = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        double g = linear_gflops(shapes[i][0], shapes[i][1], shapes[i][2]);
        peak = g > peak ? g : peak;
        printf("| %lld x %lld -> %lld | %.1f |\n", (long long)shapes[i][0],
               (long long)shapes[i][1], (long long)shapes[i][2], g);
    }
    // Roofline: the decoder's matmul FLOPs per token (at the mean position
    // and source length) at the best GFLOP/s measured above.
    double S = (double)src_tokens / n + 1, t = tokens_b1 / 2.0;
    double fl = flops_per_token(c, V, t, S);
    printf("\ndecoder FLOPs per token: %.2f M; at %.1f GFLOP/s that is %.2f us.\n", fl * 1e-6,
           peak, fl / (peak * 1e3));
    printf("measured greedy batch 1: %.2f us per target token (encoder included): %.1fx the "
           "roofline\n", token_s * 1e6, token_s * 1e6 / (fl / (peak * 1e3)));
    // Per row: a beam of K runs K decoder rows per target token.
    printf("\n| search | batch | roofline tokens/s | measured | fraction |\n|---|---:|---:|---:|---:|\n");
    for (int k = 0; k < 4; k++) {
        double roof = peak * 1e9 / (fl * rows[k].beam);
        printf("| %s %d | %d | %.0f | %.0f | %.3f |\n", rows[k].name, rows[k].beam, rows[k].batch,
               roof, tok_s[k], tok_s[k] / roof);
    }

    for (int i = 0; i < n; i++) s2s_tokens_free(&toks[i]);
    free(toks), free(src), free(len);
    s2s_state_free(st);
    s2s_model_free(m);
    s2s_shutdown();
    return 0;
}
