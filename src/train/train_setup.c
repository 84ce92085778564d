// A training run's setup and teardown (trainer.h): the model, the data,
// the buffers, a resumed checkpoint, and the memory plan that `s2s train
// --plan` prints (s2s_train_plan).
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/command.h"
#include "core/error.h"
#include "core/util.h"
#include "model/model_internal.h"
#include "ops/matmul.h"
#include "train/checkpoint.h"
#include "train/dist.h"
#include "train/trainer.h"

// ---- the memory plan ----

static s2s_graph_opts graph_opts(const s2s_config *cfg) {
    s2s_graph_opts go = s2s_graph_default_opts();
    go.checkpoint_layers = cfg->train.checkpoint_activations == S2S_CHECKPOINT_LAYER;
    go.bf16 = cfg->train.compute_type == S2S_TRAIN_BF16;
    go.attention_chunk = cfg->train.attention_chunk;
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        const s2s_guided_head *gh = &cfg->train.guided[r];
        go.no_guided[r] = !(gh->layer >= 0 && gh->weight > 0.0f);
    }
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

// The loaded model takes the config's dropout, decoding and training, and
// the guided heads are checked against it: the config was validated
// against its own model: section; an --init or --resume model may differ.
static s2s_status setup_model(trainer *t) {
    const s2s_config *cfg = t->cfg;
    // The file's weights and vocabularies; the config's dropout, decoding and training.
    t->m->cfg.model.dropout = cfg->model.dropout;
    t->m->cfg.model.attention_dropout = cfg->model.attention_dropout;
    t->m->cfg.decode = cfg->decode;
    t->m->cfg.data = cfg->data;  // the file records the run that wrote it
    t->m->cfg.train = cfg->train;
    t->n = t->m->n_params;
    const s2s_model_config *mc = &t->m->cfg.model;
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        const s2s_guided_head *gh = &cfg->train.guided[r];
        int sub;
        const s2s_stack *st = s2s_arch_map_stack(&t->m->arch, gh->stack, &sub);
        if (gh->layer >= 0 && (gh->layer >= st->layers || gh->head >= mc->heads))
            return s2s_fail(S2S_ERR_CONFIG, "%s: layer %d, head %d; the model has %d %s layers "
                            "of %d heads", s2s_roles[r].key, gh->layer, gh->head, st->layers,
                            st->name, mc->heads);
    }
    return S2S_OK;
}

// data.train (with the links the guided losses and unk_replace read),
// unk_replace's words and, on rank 0, data.dev.
static s2s_status setup_data(trainer *t, const volatile sig_atomic_t *stop) {
    const s2s_config *cfg = t->cfg;
    const s2s_train_config *tc = &cfg->train;
    int max_len = t->m->cfg.model.max_len;
    bool align = tc->guided[S2S_HEAD_ALIGN].layer >= 0 || tc->unk_replace > 0.0f;
    int keep = (align ? S2S_DATA_ALIGN : 0) |
               (tc->guided[S2S_HEAD_COREF].layer >= 0 ? S2S_DATA_COREF : 0);
    S2S_TRY(s2s_dataset_load_until(&t->train, cfg->data.train, t->m->src_vocab, t->m->tgt_vocab,
                                   max_len, keep, stop));
    if (tc->unk_replace > 0.0f) S2S_TRY(unk_setup(t));
    if (cfg->data.dev[0] && t->rank == 0)
        S2S_TRY(s2s_dataset_load_until(&t->dev, cfg->data.dev, t->m->src_vocab, t->m->tgt_vocab,
                                       max_len, S2S_DATA_REFS, stop));
    return S2S_OK;
}

// The gradient and Adam block, the graph, validation's decoding state,
// and the loop's state: the checkpoint's (--resume) or a first epoch's.
static s2s_status setup_state(trainer *t, const s2s_train_params *p, const char *ckpt) {
    const s2s_config *cfg = t->cfg;
    t->block = s2s_calloc(3 * t->n, sizeof(float));
    t->gather = s2s_calloc(SHARE_K * (size_t)t->ranks, sizeof(double));
    if (!t->block || !t->gather) return S2S_ERR_NOMEM;
    t->grads = t->block;
    t->am = t->block + t->n;
    t->av = t->block + 2 * t->n;
    s2s_graph_opts go = graph_opts(cfg);
    S2S_TRY(s2s_graph_new_opts(&t->g, t->m, &go));
    if (t->dev) S2S_TRY(s2s_state_new(&t->st, t->m));
    if (t->rank == 0) S2S_TRY(s2s_grad_norms_init(&t->gn, t->m));
    if (p->resume) {
        S2S_TRY(s2s_checkpoint_load(ckpt, t->m, t->am, t->av, &t->ls));
        if (t->ls.train_pairs != t->train->n)
            return s2s_fail(S2S_ERR_INVALID,
                            "%s: the checkpoint was trained on %d sentence pairs, data.train has "
                            "%d (resuming needs the same data)", ckpt, t->ls.train_pairs,
                            t->train->n);
        // Rank 0's weights and moments: equal on every rank from the start.
        S2S_TRY(s2s_dist_bcast(t->am, 2 * t->n * sizeof(float)));
    } else {
        t->ls.epoch = 1;
        // Its own stream: dropout masks must not repeat the init's numbers.
        s2s_rng_seed(&t->ls.rng, (uint64_t)(uint32_t)cfg->train.seed ^ 0xd509a0c7ULL);
    }
    S2S_TRY(s2s_batch_plan_make(&t->plan, t->train, cfg->train.batch_tokens, cfg->train.shuffle,
                                (uint64_t)(uint32_t)cfg->train.seed, t->ls.epoch));
    if (t->ls.batch > t->plan.n_batches)
        return s2s_fail(S2S_ERR_FORMAT, "%s: batch %d of an epoch of %d batches (was "
                        "train.batch_tokens changed?)", ckpt, t->ls.batch, t->plan.n_batches);
    return S2S_OK;
}

// oneDNN 2.6 runs bf16 products with AVX-512 (AVX512_BF16 natively, plain
// AVX-512 emulated, about 3 times slower than fp32) and has none below it:
// one tiny product says which, before any step.
static s2s_status check_bf16(const s2s_config *cfg) {
    if (cfg->train.compute_type != S2S_TRAIN_BF16) return S2S_OK;
    float a[4] = {1, 2, 3, 4}, c[4];
    s2s_mm_args mm = {.b0 = 1, .b1 = 1, .m = 2, .k = 2, .n = 2, .sa = {0, 0, 2, 1},
                      .sb = {0, 0, 2, 1}, .sc = {0, 0, 2, 1}, .alpha = 1.0f, .bf16 = true};
    if (s2s_mm(c, a, a, &mm) != S2S_OK)
        return s2s_fail(S2S_ERR_CONFIG, "train.compute_type is bf16, but oneDNN runs no bf16 "
                        "matrix product on this CPU (it needs AVX-512; %s); use fp32",
                        s2s_last_error());
    return S2S_OK;
}

// After the model and data: the state, the bf16 check, the arena of the
// largest batch (what --plan prints) and rank 0's weights everywhere.
static s2s_status setup_run(trainer *t, const s2s_train_params *p, const char *ckpt) {
    S2S_TRY(setup_state(t, p, ckpt));
    S2S_TRY(check_bf16(t->cfg));
    S2S_TRY(plan_memory(t));
    S2S_TRY(s2s_graph_reserve(t->g, t->mem.batch_sentences, t->mem.src_rows, t->mem.tgt_rows,
                              t->cfg->model.attention_dropout > 0.0f));
    S2S_TRY(s2s_dist_bcast(t->m->params, t->n * sizeof(float)));
    s2s_model_touch(t->m);
    return S2S_OK;
}

s2s_status s2s_trainer_setup(trainer *t, const s2s_config *cfg, const s2s_train_params *p) {
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
    // With several ranks all stop together, after a step (sum_ranks); one
    // stopping alone in its load would leave the others waiting for it.
    const volatile sig_atomic_t *stop = t->ranks == 1 ? p->stop : NULL;
    s2s_status st = load_model(t, p, ckpt);
    if (st != S2S_OK) {
        free(ckpt);
        return st;
    }
    st = setup_model(t);
    if (st == S2S_OK) st = setup_data(t, stop);
    // A signal while the data loads (a big file, a pipe that goes on) ends
    // the run here, before its first step: nothing is written.
    if (stop && *stop) {
        t->stopped = true;
        free(ckpt);
        return S2S_OK;
    }
    if (st == S2S_OK) st = setup_run(t, p, ckpt);
    free(ckpt);
    S2S_TRY(st);
    if (t->rank != 0) return S2S_OK;
    return s2s_trainer_wrote(t, s2s_train_log_open(&t->log, t->files.log,
                                                   p->resume ? t->ls.step : -1,
                                                   p->resume ? t->ls.log_line : NULL));
}

s2s_status s2s_trainer_teardown(trainer *t) {
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
