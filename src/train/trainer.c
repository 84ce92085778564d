// The training loop: batches, forward/backward, clipping, Adam, the
// learning-rate schedule, validation, early stopping and resume. The
// checkpoint file is checkpoint.c's, the log train_log.c's, validation
// evaluate.c's and the output paths outputs.c's.
//
// Determinism: everything random comes from three seeded generators: the
// model init (s2s_model_init with train.seed), the epoch order (a pure
// function of train.seed and the epoch number, data.c) and the dropout
// masks (one s2s_rng advanced by s2s_forward_backward). A checkpoint stores
// the dropout generator's state, the epoch and the batch index within it,
// the Adam moments and the step, so a resumed run takes exactly the steps
// the uninterrupted run would have taken.
//
// Data parallelism (dist.h): every rank holds the whole model and the
// same plan of global batches; it trains on its share of each batch
// (s2s_batch_share), with the loss averaged over the global batch's
// counts, so the sum of the ranks' gradients is the global batch's
// gradient up to rounding. After that sum every rank clips and steps Adam
// alike, and the weights stay equal without being sent again. Rank 0
// alone validates and writes files. Dropout masks come, with several
// ranks, from one draw of the shared generator per step mixed with the
// rank: they differ from a one-process run's (equal runs need dropout 0).
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/util.h"
#include "model/model_internal.h"
#include "ops/matmul.h"
#include "s2s/decode.h"
#include "s2s/train.h"
#include "train/checkpoint.h"
#include "train/data.h"
#include "train/dist.h"
#include "train/evaluate.h"
#include "train/graph.h"
#include "train/grad_norms.h"
#include "train/optim.h"
#include "train/outputs.h"
#include "train/train_log.h"

s2s_train_params s2s_train_default_params(void) { return (s2s_train_params){0}; }

enum { SHARE_K = 5 };  // counts per rank gathered each step (share_counts)

typedef struct trainer {
    const s2s_config *cfg;
    s2s_model *m;
    s2s_dataset *train, *dev;
    s2s_graph *g;
    s2s_state *st;     // greedy decoding for validation
    float *block;      // grads, adam m, adam v: 3 * n_params
    float *grads, *am, *av;
    size_t n;
    s2s_loop_state ls;
    s2s_batch_plan plan;
    s2s_batch_buf bb;
    s2s_train_outputs files;
    s2s_train_log log;
    uint8_t *unk_src, *unk_tgt;  // train.unk_replace's candidate words (s2s_unk_words)
    bool write_failed;  // a log or model write failed
    bool stopped;       // *stop was set before the first step (setup)
    int rank, ranks;    // s2s_dist_rank(), s2s_dist_size()
    s2s_train_memory mem;  // what the run holds (plan_memory)
    double *gather;     // (ranks, SHARE_K) every rank's counts (s2s_dist_allgather_f64)
    s2s_grad_norms gn;  // the log's grad_norms (rank 0)
} trainer;

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool higher_is_better(s2s_best_metric m) { return m != S2S_BEST_LOSS; }

static double metric_of(const s2s_valid_result *v, s2s_best_metric m) {
    switch (m) {
    case S2S_BEST_LOSS: return v->loss;
    case S2S_BEST_EXACT_MATCH: return v->exact_match;
    case S2S_BEST_BLEU:
    default: return v->bleu;
    }
}

// A failed write of a file the run promises (log, checkpoint, model).
static s2s_status wrote(trainer *t, s2s_status st) {
    if (st != S2S_OK) t->write_failed = true;
    return st;
}

// The checkpoint (one file, all or nothing), then OUT, the plain model. A
// kill between the two leaves OUT a checkpoint behind; --resume reads the
// checkpoint file, never OUT's weights.
// line: the step's log line, written once the checkpoint is on disk, so
// that a line marked "checkpoint" always has one behind it. NULL: no step
// ran (resumed at max_steps), the resumed checkpoint's line is kept.
static s2s_status save_checkpoint(trainer *t, const char *line) {
    if (t->rank != 0) return S2S_OK;
    t->ls.train_pairs = t->train->n;
    if (line) {
        char *copy = strdup(line);
        if (!copy) return s2s_fail(S2S_ERR_NOMEM, "out of memory");
        free(t->ls.log_line);
        t->ls.log_line = copy;
    }
    S2S_TRY(wrote(t, s2s_checkpoint_save(t->files.ckpt, t->m, t->am, t->av, &t->ls)));
    if (line) S2S_TRY(wrote(t, s2s_train_log_write(&t->log, line)));
    return wrote(t, s2s_model_save(t->m, t->files.out));
}

// ---- validation ----

static s2s_status validate(trainer *t, s2s_valid_result *r) {
    s2s_decode_params p = s2s_decode_default_params(t->m);
    // Greedy, one hypothesis per sentence, whatever decode.beam_size says:
    // validation compares checkpoints, and beam search would cost beam_size times more.
    p.beam_size = 1;
    p.n_best = 1;
    p.sampling_topk = 1;
    return s2s_evaluate_dataset(t->m, t->g, t->st, &t->bb, t->dev, t->cfg->train.batch_tokens,
                                t->cfg->train.label_smoothing, &p, r);
}

// ---- the memory plan ----

static s2s_graph_opts graph_opts(const s2s_config *cfg) {
    s2s_graph_opts go = s2s_graph_default_opts();
    go.checkpoint_layers = cfg->train.checkpoint_activations == S2S_CHECKPOINT_LAYER;
    go.bf16 = cfg->train.compute_type == S2S_TRAIN_BF16;
    go.attention_chunk = cfg->train.attention_chunk;
    go.no_guided = !(cfg->train.guided_alignment.layer >= 0 &&
                     cfg->train.guided_alignment.weight > 0.0f);
    go.no_coref = !(cfg->train.guided_coref.layer >= 0 && cfg->train.guided_coref.weight > 0.0f);
    return go;
}

// The largest (sentences, source rows, target rows) of the batches of plan
// over d, each cut to this rank's share when shared.
static void widen_shape(int shape[3], const s2s_dataset *d, const s2s_batch_plan *plan,
                        int rank, int ranks, bool shared) {
    for (int b = 0; b < plan->n_batches; b++) {
        const int *idx = plan->order + plan->start[b];
        int lo = 0, hi = plan->start[b + 1] - plan->start[b];
        if (shared) s2s_batch_share(d, idx, hi, rank, ranks, &lo, &hi);
        if (hi - lo > shape[0]) shape[0] = hi - lo;
        for (int i = lo; i < hi; i++) {
            const s2s_example *e = &d->ex[idx[i]];
            if (e->src_len + 1 > shape[1]) shape[1] = e->src_len + 1;
            if (e->tgt_len + 1 > shape[2]) shape[2] = e->tgt_len + 1;
        }
    }
}

// t->mem for the batches of t->plan and of the dev set.
static s2s_status plan_memory(trainer *t) {
    const s2s_config *cfg = t->cfg;
    int shape[3] = {1, 1, 1};
    widen_shape(shape, t->train, &t->plan, t->rank, t->ranks, true);
    if (t->dev) {
        s2s_batch_plan dp = {0};
        S2S_TRY(s2s_batch_plan_make(&dp, t->dev, cfg->train.batch_tokens, /*shuffle=*/false, 0,
                                    1));
        widen_shape(shape, t->dev, &dp, 0, 1, false);
        s2s_batch_plan_free(&dp);
    }
    s2s_graph_opts go = graph_opts(cfg);
    s2s_graph_plan_bytes gp;
    S2S_TRY(s2s_graph_plan(&gp, t->m, &go, shape[0], shape[1], shape[2],
                           cfg->model.attention_dropout > 0.0f));
    size_t w = t->m->n_params * sizeof(float);
    t->mem = (s2s_train_memory){
        .batch_sentences = shape[0], .src_rows = shape[1], .tgt_rows = shape[2],
        .weights = w, .gradients = w, .adam = 2 * w,
        .activations = gp.bytes[S2S_GRAPH_ACTIVATIONS],
        .attention = gp.bytes[S2S_GRAPH_ATTENTION], .scratch = gp.bytes[S2S_GRAPH_SCRATCH],
    };
    t->mem.total = 4 * w + gp.total;
    return S2S_OK;
}

// ---- setup ----

// The model to train: the checkpoint's (--resume), --init's, or a fresh one.
static s2s_status load_model(trainer *t, const s2s_train_params *p, const char *ckpt) {
    const s2s_config *cfg = t->cfg;
    const char *from = p->resume ? ckpt : p->init;
    if (!from) return s2s_model_init(&t->m, cfg, (uint64_t)(uint32_t)cfg->train.seed);
    if (p->resume && access(ckpt, F_OK) != 0)
        return s2s_fail(S2S_ERR_IO, "--resume %s: no checkpoint %s to resume from (%s)",
                        p->resume, ckpt, strerror(errno));
    S2S_TRY(s2s_model_load(&t->m, from));
    // Training a file that is not the model the config describes is
    // almost always a mistake (a stale --init, the wrong config).
    return s2s_config_check_arch(&t->m->cfg, from, cfg, "the config");
}

// train.unk_replace: its candidate words, and the links it needs.
static s2s_status unk_setup(trainer *t) {
    if (t->train->n_links == 0)
        return s2s_fail(S2S_ERR_CONFIG, "train.unk_replace is %g, but %s has no gold alignment "
                        "(third column) to pick the word pairs from; set it to 0",
                        (double)t->cfg->train.unk_replace, t->cfg->data.train);
    S2S_TRY(s2s_unk_words(&t->unk_src, t->m->src_vocab, t->train, 0));
    return s2s_unk_words(&t->unk_tgt, t->m->tgt_vocab, t->train, 1);
}

static s2s_status setup(trainer *t, const s2s_config *cfg, const s2s_train_params *p) {
    t->cfg = cfg;
    t->rank = s2s_dist_rank();
    t->ranks = s2s_dist_size();
    t->ls.best = NAN;
    // The keys of S2S_CONFIG_FOR_TRAIN (as `config check` reports them): data
    // here, the vocabularies in s2s_model_init for a fresh model.
    if (!cfg->data.train[0])
        return s2s_fail(S2S_ERR_CONFIG, "data.train is not set: training needs a TSV file");
    if (cfg->train.max_steps < 1)
        return s2s_fail(S2S_ERR_CONFIG, "train.max_steps must be at least 1");
    // Every output is checked before the first step, not at the first save.
    // A folder that cannot take the files is a failed write (exit 1, as for
    // `init -o` and `vocab build -o`), found early; a path the config may
    // not use (S2S_ERR_CONFIG) is bad usage.
    s2s_status made = s2s_train_outputs_make(&t->files, cfg, p);
    if (made == S2S_ERR_IO) t->write_failed = true;
    S2S_TRY(made);

    char *ckpt = p->resume ? s2s_checkpoint_path(p->resume) : NULL;
    if (p->resume && !ckpt) return S2S_ERR_NOMEM;
    s2s_status st = load_model(t, p, ckpt);
    if (st != S2S_OK) {
        free(ckpt);
        return st;
    }
    // The file's weights and vocabularies; the config's dropout, decoding and training.
    t->m->cfg.model.dropout = cfg->model.dropout;
    t->m->cfg.model.attention_dropout = cfg->model.attention_dropout;
    t->m->cfg.decode = cfg->decode;
    t->m->cfg.data = cfg->data;  // the file records the run that wrote it
    t->m->cfg.train = cfg->train;
    t->n = t->m->n_params;

    int max_len = t->m->cfg.model.max_len;
    // The config was validated against its own model: section; an --init or
    // --resume model may differ, so check the guided heads against the file.
    const s2s_train_config *tc = &cfg->train;
    const s2s_model_config *mc = &t->m->cfg.model;
    const s2s_guided_alignment *ga = &tc->guided_alignment, *gc = &tc->guided_coref;
    if (ga->layer >= 0 && (ga->layer >= mc->decoder_layers || ga->head >= mc->heads))
        st = s2s_fail(S2S_ERR_CONFIG, "train.guided_alignment: layer %d, head %d; the model "
                      "has %d decoder layers of %d heads", ga->layer, ga->head,
                      mc->decoder_layers, mc->heads);
    if (st == S2S_OK && gc->layer >= 0 && (gc->layer >= mc->encoder_layers || gc->head >= mc->heads))
        st = s2s_fail(S2S_ERR_CONFIG, "train.guided_coref: layer %d, head %d; the model has %d "
                      "encoder layers of %d heads", gc->layer, gc->head, mc->encoder_layers,
                      mc->heads);
    int keep = (ga->layer >= 0 || tc->unk_replace > 0.0f ? S2S_DATA_ALIGN : 0) |
               (gc->layer >= 0 ? S2S_DATA_COREF : 0);
    // With several ranks all stop together, after a step (sum_ranks); one
    // stopping alone in its load would leave the others waiting for it.
    const volatile sig_atomic_t *stop = t->ranks == 1 ? p->stop : NULL;
    if (st == S2S_OK)
        st = s2s_dataset_load_until(&t->train, cfg->data.train, t->m->src_vocab,
                                    t->m->tgt_vocab, max_len, keep, stop);
    if (st == S2S_OK && tc->unk_replace > 0.0f) st = unk_setup(t);
    if (st == S2S_OK && cfg->data.dev[0] && t->rank == 0)
        st = s2s_dataset_load_until(&t->dev, cfg->data.dev, t->m->src_vocab, t->m->tgt_vocab,
                                    max_len, S2S_DATA_REFS, stop);
    // A signal while the data loads (a big file, a pipe that goes on) ends
    // the run here, before its first step: nothing is written.
    if (stop && *stop) {
        t->stopped = true;
        free(ckpt);
        return S2S_OK;
    }
    if (st == S2S_OK) {
        t->block = s2s_calloc(3 * t->n, sizeof(float));
        t->gather = s2s_calloc(SHARE_K * (size_t)t->ranks, sizeof(double));
        if (!t->block || !t->gather) st = S2S_ERR_NOMEM;
    }
    if (st == S2S_OK) {
        t->grads = t->block;
        t->am = t->block + t->n;
        t->av = t->block + 2 * t->n;
        s2s_graph_opts go = graph_opts(cfg);
        st = s2s_graph_new_opts(&t->g, t->m, &go);
    }
    if (st == S2S_OK && t->dev) st = s2s_state_new(&t->st, t->m);
    if (st == S2S_OK && t->rank == 0) st = s2s_grad_norms_init(&t->gn, t->m);
    if (st == S2S_OK && p->resume) {
        st = s2s_checkpoint_load(ckpt, t->m, t->am, t->av, &t->ls);
        if (st == S2S_OK && t->ls.train_pairs != t->train->n)
            st = s2s_fail(S2S_ERR_INVALID,
                          "%s: the checkpoint was trained on %d sentence pairs, data.train has "
                          "%d (resuming needs the same data)", ckpt, t->ls.train_pairs,
                          t->train->n);
        // Rank 0's weights and moments: equal on every rank from the start.
        if (st == S2S_OK) st = s2s_dist_bcast(t->am, 2 * t->n * sizeof(float));
    } else if (st == S2S_OK) {
        t->ls.epoch = 1;
        // Its own stream: dropout masks must not repeat the init's numbers.
        s2s_rng_seed(&t->ls.rng, (uint64_t)(uint32_t)cfg->train.seed ^ 0xd509a0c7ULL);
    }
    if (st == S2S_OK)
        st = s2s_batch_plan_make(&t->plan, t->train, cfg->train.batch_tokens, cfg->train.shuffle,
                                 (uint64_t)(uint32_t)cfg->train.seed, t->ls.epoch);
    if (st == S2S_OK && t->ls.batch > t->plan.n_batches)
        st = s2s_fail(S2S_ERR_FORMAT, "%s: batch %d of an epoch of %d batches (was "
                      "train.batch_tokens changed?)", ckpt, t->ls.batch, t->plan.n_batches);
    // oneDNN 2.6 runs bf16 products with AVX-512 (AVX512_BF16 natively,
    // plain AVX-512 emulated, about 3 times slower than fp32) and has
    // none below it: one tiny product says which, before any step.
    if (st == S2S_OK && cfg->train.compute_type == S2S_TRAIN_BF16) {
        float a[4] = {1, 2, 3, 4}, c[4];
        s2s_mm_args mm = {.b0 = 1, .b1 = 1, .m = 2, .k = 2, .n = 2, .sa = {0, 0, 2, 1},
                          .sb = {0, 0, 2, 1}, .sc = {0, 0, 2, 1}, .alpha = 1.0f, .bf16 = true};
        if (s2s_mm(c, a, a, &mm) != S2S_OK)
            st = s2s_fail(S2S_ERR_CONFIG, "train.compute_type is bf16, but oneDNN runs no bf16 "
                          "matrix product on this CPU (it needs AVX-512; %s); use fp32",
                          s2s_last_error());
    }
    // The arena of the largest batch, allocated now: what --plan prints.
    if (st == S2S_OK) st = plan_memory(t);
    if (st == S2S_OK)
        st = s2s_graph_reserve(t->g, t->mem.batch_sentences, t->mem.src_rows, t->mem.tgt_rows,
                               cfg->model.attention_dropout > 0.0f);
    if (st == S2S_OK) st = s2s_dist_bcast(t->m->params, t->n * sizeof(float));
    if (st == S2S_OK) s2s_model_touch(t->m);
    free(ckpt);
    S2S_TRY(st);
    if (t->rank != 0) return S2S_OK;
    return wrote(t, s2s_train_log_open(&t->log, t->files.log, p->resume ? t->ls.step : -1,
                                       p->resume ? t->ls.log_line : NULL));
}

static s2s_status teardown(trainer *t) {
    s2s_status st = s2s_train_log_close(&t->log);
    s2s_batch_plan_free(&t->plan);
    s2s_batch_buf_free(&t->bb);
    s2s_graph_free(t->g);
    s2s_state_free(t->st);
    free(t->block);
    free(t->gather);
    free(t->ls.log_line);
    s2s_grad_norms_free(&t->gn);
    s2s_dataset_free(t->train);
    s2s_dataset_free(t->dev);
    free(t->unk_src);
    free(t->unk_tgt);
    s2s_model_free(t->m);
    s2s_train_outputs_free(&t->files);
    return st;
}

// ---- across ranks ----

// The global batch's counts, from every rank's share.
typedef struct share {
    int n_tokens, n_guided, n_coref;  // what the loss terms average over
    int tokens, sentences;            // source + target tokens (no </s>), sentences
    int tokens_min, tokens_max;       // the smallest and largest rank's tokens
} share;

static s2s_status share_counts(trainer *t, const s2s_batch *b, share *sh) {
    const double mine[SHARE_K] = {b->n_tokens, b->n_guided, b->n_coref,
                                  b->src_tokens + b->n_tokens - b->n, b->n};
    S2S_TRY(s2s_dist_allgather_f64(t->gather, mine, SHARE_K));
    double sum[SHARE_K] = {0}, lo = INFINITY, hi = 0;
    for (int r = 0; r < t->ranks; r++) {
        const double *x = t->gather + SHARE_K * r;
        for (int k = 0; k < SHARE_K; k++) sum[k] += x[k];
        lo = fmin(lo, x[3]);
        hi = fmax(hi, x[3]);
    }
    *sh = (share){.n_tokens = (int)sum[0], .n_guided = (int)sum[1], .n_coref = (int)sum[2],
                  .tokens = (int)sum[3], .sentences = (int)sum[4], .tokens_min = (int)lo,
                  .tokens_max = (int)hi};
    return S2S_OK;
}

// The gradients, the loss terms (each rank's part of the global means)
// and the stop flags summed over the ranks. *sec: the gradient sum alone,
// after a barrier, so that waiting for the slowest rank is not counted.
static s2s_status sum_ranks(trainer *t, s2s_loss_stats *ls, bool *interrupted, double *sec) {
    double x[5] = {ls->loss, ls->nll, ls->guided, ls->coref, *interrupted};
    S2S_TRY(s2s_dist_barrier());
    double t0 = now_sec();
    S2S_TRY(s2s_dist_allreduce_sum_f32(t->grads, t->n));
    *sec = now_sec() - t0;
    S2S_TRY(s2s_dist_allreduce_sum_f64(x, 5));
    ls->loss = x[0];
    ls->nll = x[1];
    ls->guided = x[2];
    ls->coref = x[3];
    *interrupted = x[4] > 0;
    return S2S_OK;
}

// After a validation: every rank's weights hash as rank 0's, and rank 0's
// early-stopping verdict becomes everyone's.
static s2s_status check_ranks(trainer *t, int step, bool *stop_early) {
    uint64_t h = s2s_fnv1a(S2S_FNV1A_INIT, t->m->params, t->n * sizeof *t->m->params);
    const double mine[3] = {(double)(h >> 32), (double)(h & 0xffffffffu), *stop_early};
    S2S_TRY(s2s_dist_allgather_f64(t->gather, mine, 3));
    *stop_early = t->gather[2] != 0;
    const double *g = t->gather;
    for (int r = 1; r < t->ranks; r++)
        if (g[3 * r] != g[0] || g[3 * r + 1] != g[1])
            return s2s_fail(S2S_ERR_INVALID, "after step %d the weights of rank %d differ from "
                            "rank 0's (FNV-1a %08llx%08llx against %08llx%08llx): the ranks no "
                            "longer train one model", step, r, (unsigned long long)g[3 * r],
                            (unsigned long long)g[3 * r + 1], (unsigned long long)g[0],
                            (unsigned long long)g[1]);
    return S2S_OK;
}

// ---- the loop ----

static s2s_status next_batch(trainer *t) {
    if (t->ls.batch >= t->plan.n_batches) {
        t->ls.epoch++;
        t->ls.batch = 0;
        S2S_TRY(s2s_batch_plan_make(&t->plan, t->train, t->cfg->train.batch_tokens,
                                    t->cfg->train.shuffle,
                                    (uint64_t)(uint32_t)t->cfg->train.seed, t->ls.epoch));
    }
    int b = t->ls.batch++, lo, hi;
    const int *idx = t->plan.order + t->plan.start[b];
    s2s_batch_share(t->train, idx, t->plan.start[b + 1] - t->plan.start[b], t->rank, t->ranks,
                    &lo, &hi);
    idx += lo;
    S2S_TRY(s2s_batch_fill(&t->bb, t->train, idx, hi - lo));
    if (t->unk_src) {
        s2s_unk_replace u = {.rate = t->cfg->train.unk_replace,
                             .seed = (uint64_t)(uint32_t)t->cfg->train.seed,
                             .epoch = t->ls.epoch, .src_word = t->unk_src,
                             .tgt_word = t->unk_tgt};
        s2s_batch_unk_replace(&t->bb.b, t->train, idx, &u);
    }
    return S2S_OK;
}

// The norms of the step's line (rank 0, every train.grad_norms_every
// steps), filled from t->grads; NULL on other steps.
static const s2s_grad_norms *log_norms(trainer *t, int step) {
    int every = t->cfg->train.grad_norms_every;
    if (t->rank != 0 || every <= 0 || step % every != 0) return NULL;
    s2s_grad_norms_fill(&t->gn, t->grads);
    return &t->gn;
}

static s2s_status run(trainer *t, const s2s_train_params *p, s2s_train_summary *sum) {
    const s2s_train_config *tc = &t->cfg->train;
    const s2s_train_opts opts = {
        .dropout = t->cfg->model.dropout,
        .attention_dropout = t->cfg->model.attention_dropout,
        .label_smoothing = tc->label_smoothing,
        // layer -1 is off: weight 0 tells the graph so.
        .guided_weight = tc->guided_alignment.layer >= 0 ? tc->guided_alignment.weight : 0.0f,
        .guided_layer = tc->guided_alignment.layer,
        .guided_head = tc->guided_alignment.head,
        .coref_weight = tc->guided_coref.layer >= 0 ? tc->guided_coref.weight : 0.0f,
        .coref_layer = tc->guided_coref.layer,
        .coref_head = tc->guided_coref.head,
    };
    const s2s_adam_params adam = {
        .beta1 = tc->adam_betas[0], .beta2 = tc->adam_betas[1],
        .eps = tc->adam_eps, .weight_decay = tc->weight_decay,
    };
    double t0 = now_sec(), step_time = 0;  // step_time: forward, backward, update only
    long long tokens_run = 0;
    bool saved = false;
    sum->best_score = t->ls.best;
    sum->best_step = t->ls.best_step;
    sum->last_valid = (s2s_valid_result){0};
    while (t->ls.step < tc->max_steps) {
        double ts = now_sec();
        S2S_TRY(next_batch(t));
        const s2s_batch *b = &t->bb.b;
        int step = ++t->ls.step;
        double lr = s2s_lr_at(tc->schedule, tc->lr, step, tc->warmup_steps,
                              t->m->cfg.model.d_model, tc->max_steps);
        s2s_loss_stats ls = {0};
        share sh;
        S2S_TRY(share_counts(t, b, &sh));
        s2s_train_opts o = opts;
        o.norm_tokens = sh.n_tokens;
        o.norm_guided = sh.n_guided;
        o.norm_coref = sh.n_coref;
        s2s_rng rank_rng, *rng = &t->ls.rng;
        if (t->ranks > 1) {
            s2s_rng_seed(&rank_rng, s2s_rng_next(rng) ^ (0x9e3779b97f4a7c15ULL * (uint64_t)t->rank));
            rng = &rank_rng;
        }
        if (b->n > 0) S2S_TRY(s2s_forward_backward(t->g, b, &o, rng, t->grads, &ls));
        else memset(t->grads, 0, t->n * sizeof *t->grads);
        // Read once: the handler may set it any time. Every rank stops at
        // the same step: the flags are summed with the losses.
        bool interrupted = p->stop && *p->stop;
        double allreduce_sec = 0;
        if (t->ranks > 1) S2S_TRY(sum_ranks(t, &ls, &interrupted, &allreduce_sec));
        if (!isfinite(ls.loss + ls.guided + ls.coref))
            return s2s_fail(S2S_ERR_INVALID, "step %d: the loss is %g; try a lower train.lr "
                            "or set train.clip_norm", step, ls.loss + ls.guided + ls.coref);
        const s2s_grad_norms *gn = log_norms(t, step);  // of the summed gradient, unclipped
        double norm = s2s_clip_grad_norm(t->grads, t->n, tc->clip_norm);
        s2s_adam_step(t->m->params, t->am, t->av, t->grads, t->n, lr, &adam, step);
        s2s_model_touch(t->m);

        int tokens = sh.tokens;
        tokens_run += tokens;
        double now = now_sec(), el = now - t0;
        step_time += now - ts;
        s2s_train_progress pr = {
            .step = step, .max_steps = tc->max_steps, .loss = ls.loss, .lr = lr,
            .grad_norm = norm, .tokens = tokens, .sentences = sh.sentences, .epoch = t->ls.epoch,
            .elapsed = el, .tokens_per_sec = step_time > 0 ? (double)tokens_run / step_time : 0,
            .ranks = t->ranks, .rank_tokens_min = sh.tokens_min, .rank_tokens_max = sh.tokens_max,
            .allreduce_sec = allreduce_sec,
        };
        s2s_valid_result vr;
        bool stop_early = false;
        if (t->cfg->data.dev[0] && tc->valid_every > 0 && step % tc->valid_every == 0) {
            if (t->rank == 0) {
                S2S_TRY(validate(t, &vr));
                double score = metric_of(&vr, tc->best_metric);
                bool better = isnan(t->ls.best) || (higher_is_better(tc->best_metric)
                                                        ? score > t->ls.best : score < t->ls.best);
                if (better) {
                    t->ls.best = score;
                    t->ls.best_step = step;
                    t->ls.bad = 0;
                    S2S_TRY(wrote(t, s2s_model_save(t->m, t->files.best)));
                } else {
                    t->ls.bad++;
                    stop_early = tc->patience > 0 && t->ls.bad >= tc->patience;
                }
                pr.valid = &vr;
                pr.best = better;
                sum->last_valid = vr;
            }
            if (t->ranks > 1) S2S_TRY(check_ranks(t, step, &stop_early));
        }
        // A step with no checkpoint logs at once: a run killed before the
        // next checkpoint leaves such lines, which the next run drops
        // (s2s_train_log_open). A checkpointed step's line, marked so, goes
        // after the checkpoint: proof that the run got that far.
        s2s_train_log_guided lg = {.guided_on = tc->guided_alignment.layer >= 0,
                                   .coref_on = tc->guided_coref.layer >= 0,
                                   .guided = ls.guided, .coref = ls.coref};
        saved = (tc->save_every > 0 && step % tc->save_every == 0) || interrupted ||
                stop_early || step == tc->max_steps;
        char *line = s2s_train_log_line(&t->log, &pr, &lg, gn, saved);
        if (!line) return wrote(t, S2S_ERR_NOMEM);
        s2s_status logged = saved ? save_checkpoint(t, line)
                                  : wrote(t, s2s_train_log_write(&t->log, line));
        free(line);
        S2S_TRY(logged);
        pr.saved = saved;
        if (p->on_step) p->on_step(&pr, p->user);
        sum->early_stopped = stop_early;
        sum->interrupted = interrupted;
        if (stop_early || interrupted) break;
    }
    // No step ran (resumed at max_steps): still write OUT and its checkpoint.
    if (!saved) S2S_TRY(save_checkpoint(t, NULL));
    sum->steps = t->ls.step;
    sum->best_score = t->ls.best;
    sum->best_step = t->ls.best_step;
    sum->tokens_per_sec = step_time > 0 ? (double)tokens_run / step_time : 0;
    return S2S_OK;
}

s2s_status s2s_train_plan(const s2s_config *cfg, const s2s_train_params *p,
                          s2s_train_memory *out) {
    memset(out, 0, sizeof *out);
    trainer t = {.cfg = cfg, .rank = s2s_dist_rank(), .ranks = s2s_dist_size()};
    if (!cfg->data.train[0])
        return s2s_fail(S2S_ERR_CONFIG, "data.train is not set: training needs a TSV file");
    char *ckpt = p->resume ? s2s_checkpoint_path(p->resume) : NULL;
    if (p->resume && !ckpt) return S2S_ERR_NOMEM;
    s2s_status st = load_model(&t, p, ckpt);
    free(ckpt);
    int max_len = st == S2S_OK ? t.m->cfg.model.max_len : 0;
    if (st == S2S_OK)
        st = s2s_dataset_load(&t.train, cfg->data.train, t.m->src_vocab, t.m->tgt_vocab,
                              max_len, 0);
    if (st == S2S_OK && cfg->data.dev[0])
        st = s2s_dataset_load(&t.dev, cfg->data.dev, t.m->src_vocab, t.m->tgt_vocab, max_len, 0);
    if (st == S2S_OK)
        st = s2s_batch_plan_make(&t.plan, t.train, cfg->train.batch_tokens, cfg->train.shuffle,
                                 (uint64_t)(uint32_t)cfg->train.seed, 1);
    if (st == S2S_OK) st = plan_memory(&t);
    if (st == S2S_OK) *out = t.mem;
    s2s_batch_plan_free(&t.plan);
    s2s_dataset_free(t.train);
    s2s_dataset_free(t.dev);
    s2s_model_free(t.m);
    return st;
}

s2s_status s2s_train(const s2s_config *cfg, const s2s_train_params *p, s2s_train_summary *out) {
    memset(out, 0, sizeof *out);
    out->best_score = NAN;
    trainer t = {0};
    s2s_status st = setup(&t, cfg, p);
    if (st == S2S_OK && t.stopped) {
        out->interrupted = true;
        out->steps = t.ls.step;
    } else if (st == S2S_OK) {
        if (p->on_plan && t.rank == 0) p->on_plan(&t.mem, p->user);
        st = run(&t, p, out);
    }
    if (t.g) out->arena_bytes = s2s_graph_bytes(t.g);
    s2s_status closed = teardown(&t);
    if (st == S2S_OK && closed != S2S_OK) {
        t.write_failed = true;
        st = closed;
    }
    out->write_failed = t.write_failed;
    return st;
}
