// The training loop: batches, forward/backward, clipping, Adam, the
// learning-rate schedule, validation, early stopping and resume. The run's
// state is trainer.h's, its setup, teardown and memory plan
// train_setup.c's, what the ranks exchange train_ranks.c's, the
// checkpoint file checkpoint.c's, the log train_log.c's, validation
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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model_internal.h"
#include "train/checkpoint.h"
#include "train/evaluate.h"
#include "train/trainer.h"

s2s_train_params s2s_train_default_params(void) { return (s2s_train_params){0}; }

static bool higher_is_better(s2s_best_metric m) { return m != S2S_BEST_LOSS; }

static double metric_of(const s2s_valid_result *v, s2s_best_metric m) {
    switch (m) {
    case S2S_BEST_LOSS: return v->loss;
    case S2S_BEST_EXACT_MATCH: return v->exact_match;
    case S2S_BEST_BLEU:
    default: return v->bleu;
    }
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
    S2S_TRY(s2s_trainer_wrote(t, s2s_checkpoint_save(t->files.ckpt, t->m, t->am, t->av, &t->ls)));
    if (line) S2S_TRY(s2s_trainer_wrote(t, s2s_train_log_write(&t->log, line)));
    return s2s_trainer_wrote(t, s2s_model_save(t->m, t->files.out));
}

// ---- validation ----

static s2s_status validate(trainer *t, s2s_valid_result *r) {
    s2s_decode_params p = s2s_decode_default_params(t->m);
    // Greedy, one hypothesis per sentence, whatever decode.beam_size says:
    // validation compares checkpoints, and beam search would cost beam_size times more.
    p.decode.beam_size = 1;
    p.decode.n_best = 1;
    p.decode.sampling_topk = 1;
    return s2s_evaluate_dataset(t->m, t->g, t->st, &t->bb, t->dev, t->cfg->train.batch_tokens,
                                t->cfg->train.label_smoothing, &p, r);
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

static s2s_train_opts train_opts(const s2s_config *cfg) {
    const s2s_train_config *tc = &cfg->train;
    s2s_train_opts o = {
        .dropout = cfg->model.dropout,
        .attention_dropout = cfg->model.attention_dropout,
        .label_smoothing = tc->label_smoothing,
    };
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        o.guided[r] = tc->guided[r];
        if (tc->guided[r].layer < 0) o.guided[r].weight = 0.0f;  // off: weight 0 tells the graph
    }
    return o;
}

// One step's batch, forward, backward, sums over the ranks, clipping and
// Adam update. *pr gets the step's figures but for the times; *ls its
// losses; *gn the gradient norms its log line shows (or NULL);
// *interrupted whether a stop was asked for (on any rank).
static s2s_status train_step(trainer *t, const s2s_train_params *p, const s2s_train_opts *opts,
                             s2s_train_progress *pr, s2s_loss_stats *ls,
                             const s2s_grad_norms **gn, bool *interrupted) {
    const s2s_train_config *tc = &t->cfg->train;
    S2S_TRY(next_batch(t));
    const s2s_batch *b = &t->bb.b;
    int step = ++t->ls.step;
    double lr = s2s_lr_at(tc->schedule, tc->lr, step, tc->warmup_steps,
                          t->m->cfg.model.d_model, tc->max_steps);
    s2s_share sh;
    S2S_TRY(s2s_trainer_share_counts(t, b, &sh));
    s2s_train_opts o = *opts;
    o.norm_tokens = sh.n_tokens;
    memcpy(o.norm_guided, sh.n_guided, sizeof o.norm_guided);
    s2s_rng rank_rng, *rng = &t->ls.rng;
    if (t->ranks > 1) {
        s2s_rng_seed(&rank_rng, s2s_rng_next(rng) ^ (0x9e3779b97f4a7c15ULL * (uint64_t)t->rank));
        rng = &rank_rng;
    }
    *ls = (s2s_loss_stats){0};
    if (b->n > 0) S2S_TRY(s2s_forward_backward(t->g, b, &o, rng, t->grads, ls));
    else memset(t->grads, 0, t->n * sizeof *t->grads);
    // Read once: the handler may set it any time. Every rank stops at
    // the same step: the flags are summed with the losses.
    *interrupted = p->stop && *p->stop;
    double allreduce_sec = 0;
    if (t->ranks > 1) S2S_TRY(s2s_trainer_sum_ranks(t, ls, interrupted, &allreduce_sec));
    double total = ls->loss;
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) total += ls->guided[r];
    if (!isfinite(total))
        return s2s_fail(S2S_ERR_INVALID, "step %d: the loss is %g; try a lower train.lr "
                        "or set train.clip_norm", step, total);
    *gn = log_norms(t, step);  // of the summed gradient, unclipped
    double norm = s2s_clip_grad_norm(t->grads, t->n, tc->clip_norm);
    const s2s_adam_params adam = {
        .beta1 = tc->adam_betas[0], .beta2 = tc->adam_betas[1],
        .eps = tc->adam_eps, .weight_decay = tc->weight_decay,
    };
    s2s_adam_step(t->m->params, t->am, t->av, t->grads, t->n, lr, &adam, step);
    s2s_model_touch(t->m);
    *pr = (s2s_train_progress){
        .step = step, .max_steps = tc->max_steps, .loss = ls->loss, .lr = lr,
        .grad_norm = norm, .tokens = sh.tokens, .sentences = sh.sentences, .epoch = t->ls.epoch,
        .ranks = t->ranks, .rank_tokens_min = sh.tokens_min, .rank_tokens_max = sh.tokens_max,
        .allreduce_sec = allreduce_sec,
    };
    return S2S_OK;
}

// Validation after the step, when it is due: rank 0 validates, keeps the
// best model and counts bad validations; *stop_early for patience.
static s2s_status valid_step(trainer *t, s2s_train_progress *pr, s2s_valid_result *vr,
                             s2s_train_summary *sum, bool *stop_early) {
    const s2s_train_config *tc = &t->cfg->train;
    int step = pr->step;
    *stop_early = false;
    if (!(t->cfg->data.dev[0] && tc->valid_every > 0 && step % tc->valid_every == 0))
        return S2S_OK;
    if (t->rank == 0) {
        S2S_TRY(validate(t, vr));
        double score = metric_of(vr, tc->best_metric);
        bool better = isnan(t->ls.best) || (higher_is_better(tc->best_metric)
                                                ? score > t->ls.best : score < t->ls.best);
        if (better) {
            t->ls.best = score;
            t->ls.best_step = step;
            t->ls.bad = 0;
            S2S_TRY(s2s_trainer_wrote(t, s2s_model_save(t->m, t->files.best)));
        } else {
            t->ls.bad++;
            *stop_early = tc->patience > 0 && t->ls.bad >= tc->patience;
        }
        pr->valid = vr;
        pr->best = better;
        sum->last_valid = *vr;
    }
    if (t->ranks > 1) S2S_TRY(s2s_trainer_check_ranks(t, step, stop_early));
    return S2S_OK;
}

// A step with no checkpoint logs at once: a run killed before the next
// checkpoint leaves such lines, which the next run drops
// (s2s_train_log_open). A checkpointed step's line, marked so, goes after
// the checkpoint: proof that the run got that far.
static s2s_status log_step(trainer *t, const s2s_train_progress *pr, const s2s_loss_stats *ls,
                           const s2s_grad_norms *gn, bool saved) {
    const s2s_train_config *tc = &t->cfg->train;
    s2s_train_log_guided lg;
    for (int r = 0; r < S2S_HEAD_ROLE_COUNT; r++) {
        lg.on[r] = tc->guided[r].layer >= 0;
        lg.term[r] = ls->guided[r];
    }
    char *line = s2s_train_log_line(&t->log, pr, &lg, gn, saved);
    if (!line) return s2s_trainer_wrote(t, S2S_ERR_NOMEM);
    s2s_status logged = saved ? save_checkpoint(t, line)
                              : s2s_trainer_wrote(t, s2s_train_log_write(&t->log, line));
    free(line);
    return logged;
}

static s2s_status run(trainer *t, const s2s_train_params *p, s2s_train_summary *sum) {
    const s2s_train_config *tc = &t->cfg->train;
    const s2s_train_opts opts = train_opts(t->cfg);
    double t0 = s2s_trainer_now(), step_time = 0;  // step_time: forward, backward, update only
    long long tokens_run = 0;
    bool saved = false;
    sum->best_score = t->ls.best;
    sum->best_step = t->ls.best_step;
    sum->last_valid = (s2s_valid_result){0};
    while (t->ls.step < tc->max_steps) {
        double ts = s2s_trainer_now();
        s2s_train_progress pr;
        s2s_loss_stats ls;
        const s2s_grad_norms *gn = NULL;
        bool interrupted, stop_early;
        S2S_TRY(train_step(t, p, &opts, &pr, &ls, &gn, &interrupted));
        tokens_run += pr.tokens;
        double now = s2s_trainer_now();
        step_time += now - ts;
        pr.elapsed = now - t0;
        pr.tokens_per_sec = step_time > 0 ? (double)tokens_run / step_time : 0;
        s2s_valid_result vr;
        S2S_TRY(valid_step(t, &pr, &vr, sum, &stop_early));
        saved = (tc->save_every > 0 && pr.step % tc->save_every == 0) || interrupted ||
                stop_early || pr.step == tc->max_steps;
        S2S_TRY(log_step(t, &pr, &ls, gn, saved));
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

s2s_status s2s_train(const s2s_config *cfg, const s2s_train_params *p, s2s_train_summary *out) {
    memset(out, 0, sizeof *out);
    out->best_score = NAN;
    trainer t = {0};
    s2s_status st = s2s_trainer_setup(&t, cfg, p);
    if (st == S2S_OK && t.stopped) {
        out->interrupted = true;
        out->steps = t.ls.step;
    } else if (st == S2S_OK) {
        if (p->on_plan && t.rank == 0) p->on_plan(&t.mem, p->user);
        st = run(&t, p, out);
    }
    if (t.g) out->arena_bytes = s2s_graph_bytes(t.g);
    s2s_status closed = s2s_trainer_teardown(&t);
    if (st == S2S_OK && closed != S2S_OK) {
        t.write_failed = true;
        st = closed;
    }
    out->write_failed = t.write_failed;
    return st;
}
