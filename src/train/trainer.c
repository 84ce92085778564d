// The training loop: batches, forward/backward, clipping, Adam, the
// learning-rate schedule, validation, checkpoints, early stopping, resume
// and the JSON-lines log.
//
// Determinism: everything random comes from three seeded generators: the
// model init (s2s_model_init with train.seed), the epoch order (a pure
// function of train.seed and the epoch number, data.c) and the dropout
// masks (one s2s_rng advanced by s2s_forward_backward). A checkpoint stores
// the dropout generator's state, the epoch and the batch index within it,
// the Adam moments and the step, so a resumed run takes exactly the steps
// the uninterrupted run would have taken.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/util.h"
#include "model/model_internal.h"
#include "model/safetensors.h"
#include "s2s/decode.h"
#include "s2s/train.h"
#include "train/data.h"
#include "train/graph.h"
#include "train/metrics.h"
#include "train/optim.h"

#define OPTIM_FORMAT "1"

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
    s2s_rng rng;       // dropout masks
    int step, epoch, batch;  // batch: the next batch of the epoch's plan
    s2s_batch_plan plan;
    s2s_batch_buf bb;
    double best;       // NAN until the first validation
    int best_step, bad;
    char *out, *optim_path, *best_path, *log_path;
    FILE *log;
} trainer;

// ---- small helpers ----

static double now_sec(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static char *str_printf(const char *fmt, const char *a, const char *b) {
    size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, fmt, a, b);
    return s;
}

// FNV-1a over the weight bytes: ties an optimizer file to its model file.
static uint64_t weights_hash(const float *p, size_t n) {
    return s2s_fnv1a(S2S_FNV1A_INIT, p, n * sizeof(float));
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

// ---- paths ----

// BASE + suffix, BASE being path without a ".safetensors" ending.
static char *sibling(const char *path, const char *suffix) {
    const char *ext = ".safetensors";
    size_t n = strlen(path), e = strlen(ext);
    size_t base = n >= e && strcmp(path + n - e, ext) == 0 ? n - e : n;
    char *s = malloc(base + strlen(suffix) + 1);
    if (!s) return NULL;
    memcpy(s, path, base);
    memcpy(s + base, suffix, strlen(suffix) + 1);
    return s;
}

static s2s_status make_paths(trainer *t, const char *out) {
    t->out = str_printf("%s%s", out, "");
    t->optim_path = sibling(out, ".optim.safetensors");
    t->best_path = sibling(out, ".best.safetensors");
    if (t->cfg->train.log[0]) {
        t->log_path = str_printf("%s%s", t->cfg->train.log, "");
    } else {
        // train.log in the output's folder.
        const char *slash = strrchr(out, '/');
        size_t dn = slash ? (size_t)(slash - out) + 1 : 0;
        t->log_path = malloc(dn + sizeof "train.log");
        if (t->log_path) {
            memcpy(t->log_path, out, dn);
            memcpy(t->log_path + dn, "train.log", sizeof "train.log");
        }
    }
    if (!t->out || !t->optim_path || !t->best_path || !t->log_path)
        return s2s_fail(S2S_ERR_NOMEM, "out of memory");
    return S2S_OK;
}

// ---- checkpoints ----

static s2s_status save_checkpoint(trainer *t) {
    char step[32], epoch[32], batch[32], rng[96], best[40], best_step[32], bad[32], hash[32],
        n_train[32];
    snprintf(step, sizeof step, "%d", t->step);
    snprintf(epoch, sizeof epoch, "%d", t->epoch);
    snprintf(batch, sizeof batch, "%d", t->batch);
    snprintf(rng, sizeof rng, "%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64,
             t->rng.s[0], t->rng.s[1], t->rng.s[2], t->rng.s[3]);
    if (isnan(t->best)) snprintf(best, sizeof best, "nan");
    else snprintf(best, sizeof best, "%.17g", t->best);
    snprintf(best_step, sizeof best_step, "%d", t->best_step);
    snprintf(bad, sizeof bad, "%d", t->bad);
    snprintf(hash, sizeof hash, "%016" PRIx64, weights_hash(t->m->params, t->n));
    snprintf(n_train, sizeof n_train, "%d", t->train->n);
    s2s_st_tensor ts[2] = {
        {.name = "adam.m", .ndim = 1, .shape = {(int64_t)t->n}, .data = t->am},
        {.name = "adam.v", .ndim = 1, .shape = {(int64_t)t->n}, .data = t->av},
    };
    s2s_st_meta meta[] = {
        {"s2s.train.format", OPTIM_FORMAT},   {"s2s.train.step", step},
        {"s2s.train.epoch", epoch},           {"s2s.train.batch", batch},
        {"s2s.train.rng", rng},               {"s2s.train.best", best},
        {"s2s.train.best_step", best_step},   {"s2s.train.bad_validations", bad},
        {"s2s.train.weights_fnv1a", hash},    {"s2s.train.train_pairs", n_train},
    };
    // The optimizer state first: if the model write then fails, the hash
    // check refuses to pair the new optimizer file with the old model.
    S2S_TRY(s2s_st_write(t->optim_path, ts, 2, meta, (int)(sizeof meta / sizeof meta[0])));
    return s2s_model_save(t->m, t->out);
}

static bool meta_int(const s2s_st_file *f, const char *key, long long lo, int *out) {
    const char *v = s2s_st_meta_get(f, key);
    if (!v) return false;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > 2000000000LL) return false;
    *out = (int)x;
    return true;
}

static s2s_status load_optim(trainer *t, const char *model_path, const char *path) {
    s2s_st_file *f;
    S2S_TRY(s2s_st_open(&f, path));
    s2s_status st = S2S_OK;
    const char *fmt = s2s_st_meta_get(f, "s2s.train.format");
    const s2s_st_tensor *m = s2s_st_find(f, "adam.m"), *v = s2s_st_find(f, "adam.v");
    const char *rng = s2s_st_meta_get(f, "s2s.train.rng");
    const char *best = s2s_st_meta_get(f, "s2s.train.best");
    const char *hash = s2s_st_meta_get(f, "s2s.train.weights_fnv1a");
    int pairs = 0;
    if (!fmt || strcmp(fmt, OPTIM_FORMAT) != 0 || !m || !v || !rng || !best || !hash ||
        !meta_int(f, "s2s.train.step", 0, &t->step) ||
        !meta_int(f, "s2s.train.epoch", 1, &t->epoch) ||
        !meta_int(f, "s2s.train.batch", 0, &t->batch) ||
        !meta_int(f, "s2s.train.best_step", 0, &t->best_step) ||
        !meta_int(f, "s2s.train.bad_validations", 0, &t->bad) ||
        !meta_int(f, "s2s.train.train_pairs", 0, &pairs)) {
        st = s2s_fail(S2S_ERR_FORMAT, "%s: not an s2s optimizer checkpoint (format %s)", path,
                      OPTIM_FORMAT);
        goto done;
    }
    if (m->ndim != 1 || v->ndim != 1 || (size_t)m->shape[0] != t->n ||
        (size_t)v->shape[0] != t->n) {
        st = s2s_fail(S2S_ERR_FORMAT, "%s: Adam moments have %lld values, %s has %zu weights",
                      path, (long long)m->shape[0], model_path, t->n);
        goto done;
    }
    char want[32];
    snprintf(want, sizeof want, "%016" PRIx64, weights_hash(t->m->params, t->n));
    if (strcmp(want, hash) != 0) {
        st = s2s_fail(S2S_ERR_FORMAT,
                      "%s does not belong with %s (the weights differ from the ones it was "
                      "saved with)", path, model_path);
        goto done;
    }
    if (sscanf(rng, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64, &t->rng.s[0], &t->rng.s[1],
               &t->rng.s[2], &t->rng.s[3]) != 4) {
        st = s2s_fail(S2S_ERR_FORMAT, "%s: bad s2s.train.rng", path);
        goto done;
    }
    t->best = strcmp(best, "nan") == 0 ? NAN : strtod(best, NULL);
    if (pairs != t->train->n) {
        st = s2s_fail(S2S_ERR_INVALID,
                      "%s: the checkpoint was trained on %d sentence pairs, data.train has %d "
                      "(resuming needs the same data)", path, pairs, t->train->n);
        goto done;
    }
    // Unaligned on read: copy bytes.
    memcpy(t->am, m->data, t->n * sizeof(float));
    memcpy(t->av, v->data, t->n * sizeof(float));
done:
    s2s_st_close(f);
    return st;
}

// ---- the log ----

static void log_num(FILE *f, const char *key, double v) {
    if (isfinite(v)) fprintf(f, "\"%s\": %.9g", key, v);
    else fprintf(f, "\"%s\": null", key);
}

// guided: the step's guided alignment loss, logged when it is on.
static void log_step(trainer *t, const s2s_train_progress *p, double guided) {
    FILE *f = t->log;
    fprintf(f, "{\"step\": %d, ", p->step);
    log_num(f, "loss", p->loss);
    fputs(", ", f);
    if (t->cfg->train.guided_alignment.layer >= 0) {
        log_num(f, "guided", guided);
        fputs(", ", f);
    }
    log_num(f, "lr", p->lr);
    fprintf(f, ", \"tokens\": %d, ", p->tokens);
    log_num(f, "grad_norm", p->grad_norm);
    if (p->valid) {
        const s2s_valid_result *v = p->valid;
        fputs(", \"valid\": {", f);
        log_num(f, "loss", v->loss);
        fputs(", ", f);
        log_num(f, "nll", v->nll);
        fputs(", ", f);
        log_num(f, "token_accuracy", v->token_accuracy);
        fputs(", ", f);
        log_num(f, "bleu", v->bleu);
        fputs(", ", f);
        log_num(f, "exact_match", v->exact_match);
        fprintf(f, ", \"sentences\": %d, \"best\": %s}", v->sentences, p->best ? "true" : "false");
    }
    fputs("}\n", f);
    fflush(f);
}

// On resume, drops log lines past the checkpoint's step (written after it
// by the interrupted run) so the log reads as one run.
static s2s_status open_log(trainer *t, bool resume) {
    if (!resume) {
        t->log = fopen(t->log_path, "w");
    } else {
        char *text = NULL;
        size_t len = 0;
        if (s2s_read_file(&text, &len, t->log_path) != S2S_OK) text = NULL;
        t->log = fopen(t->log_path, "w");
        if (t->log && text) {
            char *line = text;
            while (*line) {
                char *nl = strchr(line, '\n');
                size_t n = nl ? (size_t)(nl - line) + 1 : strlen(line);
                int step;
                if (sscanf(line, "{\"step\": %d", &step) == 1 && step <= t->step)
                    fwrite(line, 1, n, t->log);
                line += n;
            }
        }
        free(text);
    }
    if (!t->log)
        return s2s_fail(S2S_ERR_IO, "%s: cannot open for writing: %s", t->log_path,
                        strerror(errno));
    return S2S_OK;
}

// ---- validation ----

// Teacher-forced loss and token accuracy, then corpus BLEU and exact match
// of the translations p makes, on dataset d (loaded with keep_refs).
static s2s_status evaluate(const s2s_model *m, s2s_graph *g, s2s_state *st_dec, s2s_batch_buf *bb,
                           const s2s_dataset *d, int batch_tokens, float label_smoothing,
                           const s2s_decode_params *p, s2s_valid_result *r) {
    memset(r, 0, sizeof *r);
    r->sentences = d->n;
    s2s_batch_plan plan = {0};
    S2S_TRY(s2s_batch_plan_make(&plan, d, batch_tokens, /*shuffle=*/false, 0, 1));
    double loss = 0, nll = 0;
    long long toks = 0, correct = 0;
    s2s_status st = S2S_OK;
    for (int b = 0; b < plan.n_batches && st == S2S_OK; b++) {
        st = s2s_batch_fill(bb, d, plan.order + plan.start[b],
                            plan.start[b + 1] - plan.start[b]);
        s2s_loss_stats ls = {0};
        if (st == S2S_OK) st = s2s_forward_loss(g, &bb->b, label_smoothing, &ls);
        loss += ls.loss * ls.n_tokens;
        nll += ls.nll * ls.n_tokens;
        toks += ls.n_tokens;
        correct += ls.n_correct;
    }
    s2s_batch_plan_free(&plan);
    if (st != S2S_OK) return st;
    r->loss = toks ? loss / (double)toks : 0;
    r->nll = toks ? nll / (double)toks : 0;
    r->token_accuracy = toks ? (double)correct / (double)toks : 0;

    // Greedy translations, compared as token strings with the references.
    const int **src = s2s_calloc((size_t)d->n, sizeof *src);
    int *len = s2s_calloc((size_t)d->n, sizeof *len);
    s2s_hypothesis *h = s2s_calloc((size_t)d->n, sizeof *h);
    const char **toks_h = NULL;
    size_t cap_h = 0;
    if (!src || !len || !h) st = S2S_ERR_NOMEM;
    for (int i = 0; st == S2S_OK && i < d->n; i++) {
        src[i] = d->ids + d->ex[i].src;
        len[i] = d->ex[i].src_len;
    }
    s2s_decode_params one = *p;
    one.n_best = 1;  // the best hypothesis is the translation
    if (st == S2S_OK) st = s2s_translate(st_dec, &one, src, len, d->n, h);
    bool translated = st == S2S_OK;  // s2s_translate frees its results when it fails
    if (st == S2S_OK) {
        s2s_bleu_stats bs = {0};
        int exact = 0;
        const s2s_vocab *tv = s2s_model_tgt_vocab(m);
        for (int i = 0; i < d->n && st == S2S_OK; i++) {
            if ((size_t)h[i].n + 1 > cap_h) {
                cap_h = (size_t)h[i].n + 1;
                const char **nh = realloc(toks_h, cap_h * sizeof *nh);
                if (!nh) { st = s2s_fail(S2S_ERR_NOMEM, "out of memory"); break; }
                toks_h = nh;
            }
            for (int j = 0; j < h[i].n; j++) toks_h[j] = s2s_vocab_token(tv, h[i].ids[j]);
            const char *const *ref = d->ref_tokens + d->ex[i].ref;
            st = s2s_bleu_add(&bs, toks_h, h[i].n, ref, d->ex[i].tgt_len);
            exact += s2s_tokens_match(toks_h, h[i].n, ref, d->ex[i].tgt_len);
        }
        r->bleu = s2s_bleu_score(&bs);
        r->exact_match = d->n ? (double)exact / d->n : 0;
    }
    if (translated)
        for (int i = 0; i < d->n; i++) s2s_hypothesis_free(&h[i]);
    free(toks_h);
    free(h);
    free(src);
    free(len);
    return st;
}

static s2s_status validate(trainer *t, s2s_valid_result *r) {
    s2s_decode_params p = s2s_decode_default_params(t->m);
    // Greedy, one hypothesis per sentence, whatever decode.beam_size says:
    // validation compares checkpoints, and beam search would cost beam_size times more.
    p.beam_size = 1;
    p.n_best = 1;
    p.sampling_topk = 1;
    return evaluate(t->m, t->g, t->st, &t->bb, t->dev, t->cfg->train.batch_tokens,
                    t->cfg->train.label_smoothing, &p, r);
}

// Evaluates m on dataset d (if loading it went well) and frees d.
static s2s_status evaluate_dataset(const s2s_model *m, s2s_status status, s2s_dataset *d,
                                   const s2s_decode_params *p, s2s_valid_result *out) {
    const s2s_config *cfg = s2s_model_get_config(m);
    s2s_graph *g = NULL;
    s2s_state *st = NULL;
    s2s_batch_buf bb = {0};
    if (status == S2S_OK) status = s2s_graph_new(&g, m);
    if (status == S2S_OK) status = s2s_state_new(&st, m);
    if (status == S2S_OK)
        status = evaluate(m, g, st, &bb, d, cfg->train.batch_tokens, cfg->train.label_smoothing, p, out);
    s2s_batch_buf_free(&bb);
    s2s_state_free(st);
    s2s_graph_free(g);
    s2s_dataset_free(d);
    return status;
}

s2s_status s2s_evaluate(const s2s_model *m, const char *tsv, const s2s_decode_params *p,
                        s2s_valid_result *out) {
    s2s_dataset *d = NULL;
    s2s_status status = s2s_dataset_load(&d, tsv, s2s_model_src_vocab(m), s2s_model_tgt_vocab(m),
                                         s2s_model_get_config(m)->model.max_len,
                                         /*keep_refs=*/true, /*keep_align=*/false);
    return evaluate_dataset(m, status, d, p, out);
}

s2s_status s2s_evaluate_tokens(const s2s_model *m, const s2s_tokens *src, const s2s_tokens *tgt,
                               int n, const s2s_decode_params *p, s2s_valid_result *out) {
    if (n < 1) return s2s_fail(S2S_ERR_INVALID, "s2s_evaluate_tokens: no sentence pairs");
    s2s_dataset *d = NULL;
    s2s_status status = s2s_dataset_from_tokens(&d, src, tgt, n,
                                                s2s_model_get_config(m)->model.max_len,
                                                /*keep_refs=*/true);
    return evaluate_dataset(m, status, d, p, out);
}

// ---- setup ----

static s2s_status setup(trainer *t, const s2s_config *cfg, const s2s_train_params *p) {
    t->cfg = cfg;
    t->best = NAN;
    const char *out = p->output ? p->output : cfg->train.output;
    if (!out || !out[0])
        return s2s_fail(S2S_ERR_CONFIG, "no output model: set train.output or pass -o OUT");
    if (!cfg->data.train[0])
        return s2s_fail(S2S_ERR_CONFIG, "data.train is not set: training needs a TSV file");
    if (cfg->train.max_steps < 1)
        return s2s_fail(S2S_ERR_CONFIG, "train.max_steps must be at least 1");
    S2S_TRY(make_paths(t, out));

    const char *from = p->resume ? p->resume : p->init;
    if (from) {
        S2S_TRY(s2s_model_load(&t->m, from));
        // Training a file that is not the model the config describes is
        // almost always a mistake (a stale --init, the wrong config).
        S2S_TRY(s2s_config_check_arch(&t->m->cfg, from, cfg, "the config"));
    } else {
        S2S_TRY(s2s_model_init(&t->m, cfg, (uint64_t)(uint32_t)cfg->train.seed));
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
    // --resume model may differ, so check the guided head against the file.
    const s2s_guided_alignment *ga = &cfg->train.guided_alignment;
    bool guided = ga->layer >= 0;
    if (guided && (ga->layer >= t->m->cfg.model.decoder_layers || ga->head >= t->m->cfg.model.heads))
        return s2s_fail(S2S_ERR_CONFIG, "train.guided_alignment: layer %d, head %d; the model "
                        "has %d decoder layers of %d heads", ga->layer, ga->head,
                        t->m->cfg.model.decoder_layers, t->m->cfg.model.heads);
    S2S_TRY(s2s_dataset_load(&t->train, cfg->data.train, t->m->src_vocab, t->m->tgt_vocab,
                             max_len, /*keep_refs=*/false, /*keep_align=*/guided));
    if (cfg->data.dev[0])
        S2S_TRY(s2s_dataset_load(&t->dev, cfg->data.dev, t->m->src_vocab, t->m->tgt_vocab,
                                 max_len, /*keep_refs=*/true, /*keep_align=*/false));

    t->block = s2s_calloc(3 * t->n, sizeof(float));
    if (!t->block) return S2S_ERR_NOMEM;
    t->grads = t->block;
    t->am = t->block + t->n;
    t->av = t->block + 2 * t->n;
    S2S_TRY(s2s_graph_new(&t->g, t->m));
    if (t->dev) S2S_TRY(s2s_state_new(&t->st, t->m));

    if (p->resume) {
        char *op = sibling(p->resume, ".optim.safetensors");
        if (!op) return S2S_ERR_NOMEM;
        s2s_status st = load_optim(t, p->resume, op);
        free(op);
        S2S_TRY(st);
    } else {
        t->epoch = 1;
        // Its own stream: dropout masks must not repeat the init's numbers.
        s2s_rng_seed(&t->rng, (uint64_t)(uint32_t)cfg->train.seed ^ 0xd509a0c7ULL);
    }
    S2S_TRY(s2s_batch_plan_make(&t->plan, t->train, cfg->train.batch_tokens, cfg->train.shuffle,
                                (uint64_t)(uint32_t)cfg->train.seed, t->epoch));
    if (t->batch > t->plan.n_batches)
        return s2s_fail(S2S_ERR_FORMAT, "%s: batch %d of an epoch of %d batches (was "
                        "train.batch_tokens changed?)", p->resume, t->batch, t->plan.n_batches);
    return open_log(t, p->resume != NULL);
}

static void teardown(trainer *t) {
    if (t->log) fclose(t->log);
    s2s_batch_plan_free(&t->plan);
    s2s_batch_buf_free(&t->bb);
    s2s_graph_free(t->g);
    s2s_state_free(t->st);
    free(t->block);
    s2s_dataset_free(t->train);
    s2s_dataset_free(t->dev);
    s2s_model_free(t->m);
    free(t->out);
    free(t->optim_path);
    free(t->best_path);
    free(t->log_path);
}

// ---- the loop ----

static s2s_status next_batch(trainer *t) {
    if (t->batch >= t->plan.n_batches) {
        t->epoch++;
        t->batch = 0;
        S2S_TRY(s2s_batch_plan_make(&t->plan, t->train, t->cfg->train.batch_tokens,
                                    t->cfg->train.shuffle,
                                    (uint64_t)(uint32_t)t->cfg->train.seed, t->epoch));
    }
    int b = t->batch++;
    return s2s_batch_fill(&t->bb, t->train, t->plan.order + t->plan.start[b],
                          t->plan.start[b + 1] - t->plan.start[b]);
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
    };
    const s2s_adam_params adam = {
        .beta1 = tc->adam_betas[0], .beta2 = tc->adam_betas[1],
        .eps = tc->adam_eps, .weight_decay = tc->weight_decay,
    };
    const s2s_lr_kind kinds[S2S_SCHEDULE_COUNT] = {
        [S2S_SCHEDULE_CONSTANT] = S2S_SCHED_CONSTANT, [S2S_SCHEDULE_NOAM] = S2S_SCHED_NOAM,
        [S2S_SCHEDULE_INVERSE_SQRT] = S2S_SCHED_INVERSE_SQRT,
        [S2S_SCHEDULE_COSINE] = S2S_SCHED_COSINE,
    };
    double t0 = now_sec(), step_time = 0;  // step_time: forward, backward, update only
    long long tokens_run = 0;
    bool saved = false;
    sum->best_score = t->best;
    sum->best_step = t->best_step;
    sum->last_valid = (s2s_valid_result){0};
    while (t->step < tc->max_steps) {
        double ts = now_sec();
        S2S_TRY(next_batch(t));
        const s2s_batch *b = &t->bb.b;
        int step = ++t->step;
        double lr = s2s_lr_at(kinds[tc->schedule], tc->lr, step, tc->warmup_steps,
                              t->m->cfg.model.d_model, tc->max_steps);
        s2s_loss_stats ls = {0};
        S2S_TRY(s2s_forward_backward(t->g, b, &opts, &t->rng, t->grads, &ls));
        if (!isfinite(ls.loss) || !isfinite(ls.guided))
            return s2s_fail(S2S_ERR_INVALID, "step %d: the loss is %g; try a lower train.lr "
                            "or set train.clip_norm", step, ls.loss + ls.guided);
        double norm = s2s_clip_grad_norm(t->grads, t->n, tc->clip_norm);
        s2s_adam_step(t->m->params, t->am, t->av, t->grads, t->n, lr, &adam, step);
        s2s_model_touch(t->m);

        int tokens = b->src_tokens + b->n_tokens - b->n;
        tokens_run += tokens;
        double now = now_sec(), el = now - t0;
        step_time += now - ts;
        s2s_train_progress pr = {
            .step = step, .max_steps = tc->max_steps, .loss = ls.loss, .lr = lr,
            .grad_norm = norm, .tokens = tokens, .sentences = b->n, .epoch = t->epoch,
            .elapsed = el, .tokens_per_sec = step_time > 0 ? (double)tokens_run / step_time : 0,
        };
        s2s_valid_result vr;
        bool stop_early = false;
        if (t->dev && tc->valid_every > 0 && step % tc->valid_every == 0) {
            S2S_TRY(validate(t, &vr));
            double score = metric_of(&vr, tc->best_metric);
            bool better = isnan(t->best) || (higher_is_better(tc->best_metric)
                                                 ? score > t->best : score < t->best);
            if (better) {
                t->best = score;
                t->best_step = step;
                t->bad = 0;
                S2S_TRY(s2s_model_save(t->m, t->best_path));
            } else {
                t->bad++;
                stop_early = tc->patience > 0 && t->bad >= tc->patience;
            }
            pr.valid = &vr;
            pr.best = better;
            sum->last_valid = vr;
        }
        // The log line goes first: a run killed before the checkpoint below
        // leaves extra lines, which a resume drops (open_log).
        log_step(t, &pr, ls.guided);
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
    // No step ran (resumed at max_steps): still write OUT and its optimizer file.
    if (!saved) S2S_TRY(save_checkpoint(t));
    sum->steps = t->step;
    sum->best_score = t->best;
    sum->best_step = t->best_step;
    sum->tokens_per_sec = step_time > 0 ? (double)tokens_run / step_time : 0;
    return S2S_OK;
}

s2s_status s2s_train(const s2s_config *cfg, const s2s_train_params *p, s2s_train_summary *out) {
    memset(out, 0, sizeof *out);
    out->best_score = NAN;
    trainer t = {0};
    s2s_status st = setup(&t, cfg, p);
    if (st == S2S_OK) st = run(&t, p, out);
    teardown(&t);
    return st;
}
