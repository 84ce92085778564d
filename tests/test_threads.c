// Decoding on threads: the promises of s2s/decode.h that ThreadSanitizer
// checks (scripts/test.sh --tsan). One model, read-only once loaded, is
// shared by every thread; each thread decodes with its own s2s_state.
//   - a batch split across OpenMP threads (p.threads = 2) translates as on
//     one thread;
//   - pthreads, each with its own state on the same model, translate as the
//     calling thread does, greedy, beam and forced decoding, with attention.
// A plain C program, not Criterion: Criterion's shared-memory arena cannot
// be mapped under ThreadSanitizer's memory layout.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s2s/s2s.h"

#define N_SENT 16
#define N_THREADS 3

static int pass, fail;
#define CHECK(cond, ...)                                                             \
    do {                                                                            \
        if (cond) {                                                                 \
            pass++;                                                                 \
        } else {                                                                    \
            fail++;                                                                 \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                             \
            printf(__VA_ARGS__);                                                    \
            printf("\n");                                                           \
        }                                                                           \
    } while (0)

static s2s_model *model;
static s2s_tokens src[N_SENT], tgt[N_SENT];
static const int *src_ids[N_SENT], *tgt_ids[N_SENT];
static int src_len[N_SENT], tgt_len[N_SENT];

// The first N_SENT pairs of the test set, tokenized.
static int load_sentences(void) {
    FILE *f = fopen(S2S_SOURCE_DIR "/data/corpus/test.zh-en.tsv", "r");
    if (!f) return -1;
    char line[4096];
    for (int i = 0; i < N_SENT; i++) {
        if (!fgets(line, sizeof line, f)) return fclose(f), -1;
        char *tab = strchr(line, '\t');
        if (!tab) return fclose(f), -1;
        *tab = '\0';
        char *end = strchr(tab + 1, '\t');
        if (end) *end = '\0';
        if (s2s_tokenize(s2s_model_src_vocab(model), line, &src[i]) != S2S_OK ||
            s2s_tokenize(s2s_model_tgt_vocab(model), tab + 1, &tgt[i]) != S2S_OK)
            return fclose(f), -1;
        src_ids[i] = src[i].ids, src_len[i] = src[i].n;
        tgt_ids[i] = tgt[i].ids, tgt_len[i] = tgt[i].n;
    }
    fclose(f);
    return 0;
}

typedef enum run_kind { RUN_GREEDY, RUN_BEAM, RUN_SCORE, RUN_COUNT } run_kind;

static s2s_decode_params params(run_kind k, int threads) {
    s2s_decode_params p = s2s_decode_default_params(model);
    p.threads = threads;
    p.max_batch = 4;
    p.want_attention = true;
    if (k == RUN_BEAM) p.decode.beam_size = 3;
    return p;
}

// Decodes the sentences with a state of its own; NULL on failure.
static s2s_hypothesis *run(run_kind k, int threads) {
    s2s_state *st;
    if (s2s_state_new(&st, model) != S2S_OK) return NULL;
    s2s_decode_params p = params(k, threads);
    s2s_hypothesis *h = calloc(N_SENT, sizeof *h);
    s2s_status status =
        !h ? S2S_ERR_NOMEM
        : k == RUN_SCORE ? s2s_score(st, &p, src_ids, src_len, tgt_ids, tgt_len, N_SENT, h)
                         : s2s_translate(st, &p, src_ids, src_len, N_SENT, h);
    s2s_state_free(st);
    if (status != S2S_OK) {
        printf("decode failed: %s\n", s2s_last_error());
        free(h);
        return NULL;
    }
    return h;
}

static void free_all(s2s_hypothesis *h) {
    for (int i = 0; h && i < N_SENT; i++) s2s_hypothesis_free(&h[i]);
    free(h);
}

// Same tokens; log-probs and attention within tol.
static int same(const s2s_hypothesis *a, const s2s_hypothesis *b, float tol) {
    if (a->n != b->n || a->n_out != b->n_out || memcmp(a->ids, b->ids, sizeof(int) * (size_t)a->n))
        return 0;
    if (!(a->logprob - b->logprob <= tol && b->logprob - a->logprob <= tol)) return 0;
    size_t cells = (size_t)a->layers * (size_t)a->heads * (size_t)a->n_out * (size_t)a->n_src;
    if (!a->cross_attn || !b->cross_attn || a->n_src != b->n_src) return 0;
    for (size_t c = 0; c < cells; c++) {
        float d = a->cross_attn[c] - b->cross_attn[c];
        if (!(d <= tol && -d <= tol)) return 0;
    }
    return 1;
}

static s2s_hypothesis *ref[RUN_COUNT];
static const char *kind_name[RUN_COUNT] = {"greedy", "beam 3", "score"};

typedef struct worker {
    pthread_t id;
    int mismatches;  // hypotheses unlike the reference, over every kind
    int failed;      // decodes that returned an error
} worker;

static void *work(void *arg) {
    worker *w = arg;
    s2s_set_threads(1);
    for (int k = 0; k < RUN_COUNT; k++) {
        s2s_hypothesis *h = run(k, 1);
        if (!h) {
            w->failed++;
            continue;
        }
        for (int i = 0; i < N_SENT; i++) w->mismatches += !same(&h[i], &ref[k][i], 1e-5f);
        free_all(h);
    }
    return NULL;
}

int main(void) {
    if (s2s_model_load(&model, S2S_SOURCE_DIR "/models/zh-en.safetensors") != S2S_OK ||
        load_sentences() != 0) {
        printf("set-up failed: %s\n", s2s_last_error());
        return 1;
    }
    s2s_set_threads(1);
    for (int k = 0; k < RUN_COUNT; k++) {
        ref[k] = run(k, 1);
        CHECK(ref[k], "%s on one thread", kind_name[k]);
        if (!ref[k]) return 1;
    }
    CHECK(ref[RUN_GREEDY][0].n > 3, "the first sentence translates to %d tokens", ref[RUN_GREEDY][0].n);

    // One batch over two OpenMP threads, each taking every other sentence.
    for (int k = 0; k < RUN_COUNT; k++) {
        s2s_hypothesis *h = run(k, 2);
        int bad = 0;
        for (int i = 0; h && i < N_SENT; i++) bad += !same(&h[i], &ref[k][i], 1e-4f);
        CHECK(h && bad == 0, "%s on 2 threads: %d of %d sentences differ", kind_name[k], bad, N_SENT);
        free_all(h);
    }

    // Several pthreads share the model, each with its own state.
    worker w[N_THREADS] = {{0}};
    for (int t = 0; t < N_THREADS; t++)
        CHECK(pthread_create(&w[t].id, NULL, work, &w[t]) == 0, "pthread_create %d", t);
    for (int t = 0; t < N_THREADS; t++) {
        pthread_join(w[t].id, NULL);
        CHECK(w[t].failed == 0 && w[t].mismatches == 0,
              "thread %d: %d decodes failed, %d hypotheses differ", t, w[t].failed, w[t].mismatches);
    }

    for (int k = 0; k < RUN_COUNT; k++) free_all(ref[k]);
    for (int i = 0; i < N_SENT; i++) s2s_tokens_free(&src[i]), s2s_tokens_free(&tgt[i]);
    s2s_model_free(model);
    printf("threads: %d passed, %d failed\n", pass, fail);
    return fail != 0;
}
