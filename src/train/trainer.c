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
#include "s2s/decode.h"
#include "s2s/train.h"
#include "train/checkpoint.h"
#include "train/data.h"
#include "train/evaluate.h"
#include "train/graph.h"
#include "train/optim.h"
#include "train/outputs.h"
#include "train/train_log.h"

s2s_train_params s2s_train_default_params(void) { return (s2s_train_params){0}; }

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
static s2s_status save_checkpoint(trainer *t) {
    t->ls.train_pairs = t->train->n;
    S2S_TRY(wrote(t, s2s_checkpoint_save(t->files.ckpt, t->m, t->am, t->av, &t->ls)));
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
    t->ls.best = NAN;
    if (!cfg->data.train[0])
        return s2s_fail(S2S_ERR_CONFIG, "data.train is not set: training needs a TSV file");
    if (cfg->train.max_steps < 1)
        return s2s_fail(S2S_ERR_CONFIG, "train.max_steps must be at least 1");
    // Every output is checked before the first step, not at the first save.
    S2S_TRY(s2s_train_outputs_make(&t->files, cfg, p));

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
    if (st == S2S_OK)
        st = s2s_dataset_load(&t->train, cfg->data.train, t->m->src_vocab, t->m->tgt_vocab,
                              max_len, keep);
    if (st == S2S_OK && tc->unk_replace > 0.0f) st = unk_setup(t);
    if (st == S2S_OK && cfg->data.dev[0])
        st = s2s_dataset_load(&t->dev, cfg->data.dev, t->m->src_vocab, t->m->tgt_vocab, max_len,
                              S2S_DATA_REFS);
    if (st == S2S_OK) {
        t->block = s2s_calloc(3 * t->n, sizeof(float));
        if (!t->block) st = S2S_ERR_NOMEM;
    }
    if (st == S2S_OK) {
        t->grads = t->block;
        t->am = t->block + t->n;
        t->av = t->block + 2 * t->n;
        st = s2s_graph_new(&t->g, t->m);
    }
    if (st == S2S_OK && t->dev) st = s2s_state_new(&t->st, t->m);
    if (st == S2S_OK && p->resume) {
        st = s2s_checkpoint_load(ckpt, t->m, t->am, t->av, &t->ls);
        if (st == S2S_OK && t->ls.train_pairs != t->train->n)
            st = s2s_fail(S2S_ERR_INVALID,
                          "%s: the checkpoint was trained on %d sentence pairs, data.train has "
                          "%d (resuming needs the same data)", ckpt, t->ls.train_pairs,
                          t->train->n);
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
    free(ckpt);
    S2S_TRY(st);
    return s2s_train_log_open(&t->log, t->files.log, p->resume ? t->ls.step : -1);
}

static s2s_status teardown(trainer *t) {
    s2s_status st = s2s_train_log_close(&t->log);
    s2s_batch_plan_free(&t->plan);
    s2s_batch_buf_free(&t->bb);
    s2s_graph_free(t->g);
    s2s_state_free(t->st);
    free(t->block);
    s2s_dataset_free(t->train);
    s2s_dataset_free(t->dev);
    free(t->unk_src);
    free(t->unk_tgt);
    s2s_model_free(t->m);
    s2s_train_outputs_free(&t->files);
    return st;
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
    int b = t->ls.batch++;
    const int *idx = t->plan.order + t->plan.start[b];
    S2S_TRY(s2s_batch_fill(&t->bb, t->train, idx, t->plan.start[b + 1] - t->plan.start[b]));
    if (t->unk_src) {
        s2s_unk_replace u = {.rate = t->cfg->train.unk_replace,
                             .seed = (uint64_t)(uint32_t)t->cfg->train.seed,
                             .epoch = t->ls.epoch, .src_word = t->unk_src,
                             .tgt_word = t->unk_tgt};
        s2s_batch_unk_replace(&t->bb.b, t->train, idx, &u);
    }
    return S2S_OK;
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
        S2S_TRY(s2s_forward_backward(t->g, b, &opts, &t->ls.rng, t->grads, &ls));
        if (!isfinite(ls.loss + ls.guided + ls.coref))
            return s2s_fail(S2S_ERR_INVALID, "step %d: the loss is %g; try a lower train.lr "
                            "or set train.clip_norm", step, ls.loss + ls.guided + ls.coref);
        double norm = s2s_clip_grad_norm(t->grads, t->n, tc->clip_norm);
        s2s_adam_step(t->m->params, t->am, t->av, t->grads, t->n, lr, &adam, step);
        s2s_model_touch(t->m);

        int tokens = b->src_tokens + b->n_tokens - b->n;
        tokens_run += tokens;
        double now = now_sec(), el = now - t0;
        step_time += now - ts;
        s2s_train_progress pr = {
            .step = step, .max_steps = tc->max_steps, .loss = ls.loss, .lr = lr,
            .grad_norm = norm, .tokens = tokens, .sentences = b->n, .epoch = t->ls.epoch,
            .elapsed = el, .tokens_per_sec = step_time > 0 ? (double)tokens_run / step_time : 0,
        };
        s2s_valid_result vr;
        bool stop_early = false;
        if (t->dev && tc->valid_every > 0 && step % tc->valid_every == 0) {
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
        // The log line goes first: a run killed before the checkpoint below
        // leaves extra lines, which a resume drops (s2s_train_log_open).
        s2s_train_log_guided lg = {.guided_on = tc->guided_alignment.layer >= 0,
                                   .coref_on = tc->guided_coref.layer >= 0,
                                   .guided = ls.guided, .coref = ls.coref};
        S2S_TRY(wrote(t, s2s_train_log_step(&t->log, &pr, &lg)));
        bool interrupted = p->stop && *p->stop;  // read once: the handler may set it any time
        saved = false;
        if ((tc->save_every > 0 && step % tc->save_every == 0) || interrupted || stop_early ||
            step == tc->max_steps) {
            S2S_TRY(save_checkpoint(t));
            saved = true;
        }
        pr.saved = saved;
        if (p->on_step) p->on_step(&pr, p->user);
        sum->early_stopped = stop_early;
        sum->interrupted = interrupted;
        if (stop_early || interrupted) break;
    }
    // No step ran (resumed at max_steps): still write OUT and its checkpoint.
    if (!saved) S2S_TRY(save_checkpoint(t));
    sum->steps = t->ls.step;
    sum->best_score = t->ls.best;
    sum->best_step = t->ls.best_step;
    sum->tokens_per_sec = step_time > 0 ? (double)tokens_run / step_time : 0;
    return S2S_OK;
}

s2s_status s2s_train(const s2s_config *cfg, const s2s_train_params *p, s2s_train_summary *out) {
    memset(out, 0, sizeof *out);
    out->best_score = NAN;
    trainer t = {0};
    s2s_status st = setup(&t, cfg, p);
    if (st == S2S_OK) st = run(&t, p, out);
    s2s_status closed = teardown(&t);
    if (st == S2S_OK && closed != S2S_OK) {
        t.write_failed = true;
        st = closed;
    }
    out->write_failed = t.write_failed;
    return st;
}
