// Training checkpoints: one safetensors file with the model, the Adam
// moments and the loop state (see checkpoint.h).
#include "train/checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/safetensors.h"
#include "ops/ops.h"

#define CKPT_FORMAT "2"  // 1: a separate BASE.optim.safetensors tied by a weight hash

s2s_status s2s_checkpoint_save(const char *path, const s2s_model *m, const float *am,
                               const float *av, const s2s_loop_state *ls) {
    char step[32], epoch[32], batch[32], rng[96], best[40], best_step[32], bad[32], pairs[32];
    snprintf(step, sizeof step, "%d", ls->step);
    snprintf(epoch, sizeof epoch, "%d", ls->epoch);
    snprintf(batch, sizeof batch, "%d", ls->batch);
    snprintf(rng, sizeof rng, "%016" PRIx64 " %016" PRIx64 " %016" PRIx64 " %016" PRIx64,
             ls->rng.s[0], ls->rng.s[1], ls->rng.s[2], ls->rng.s[3]);
    if (isnan(ls->best)) snprintf(best, sizeof best, "nan");
    else snprintf(best, sizeof best, "%.17g", ls->best);
    snprintf(best_step, sizeof best_step, "%d", ls->best_step);
    snprintf(bad, sizeof bad, "%d", ls->bad);
    snprintf(pairs, sizeof pairs, "%d", ls->train_pairs);
    int64_t n = (int64_t)m->n_params;
    s2s_st_tensor ts[2] = {
        {.name = "train.adam.m", .ndim = 1, .shape = {n}, .data = am},
        {.name = "train.adam.v", .ndim = 1, .shape = {n}, .data = av},
    };
    s2s_st_meta meta[] = {
        {"s2s.train.format", CKPT_FORMAT},  {"s2s.train.step", step},
        {"s2s.train.epoch", epoch},         {"s2s.train.batch", batch},
        {"s2s.train.rng", rng},             {"s2s.train.best", best},
        {"s2s.train.best_step", best_step}, {"s2s.train.bad_validations", bad},
        {"s2s.train.train_pairs", pairs},
        {"s2s.train.log_line", ls->log_line ? ls->log_line : ""},
    };
    int n_meta = (int)(sizeof meta / sizeof meta[0]) - !(ls->log_line && ls->log_line[0]);
    return s2s_model_save_extra(m, path, ts, 2, meta, n_meta);
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

s2s_status s2s_checkpoint_load(const char *path, const s2s_model *m, float *am, float *av,
                               s2s_loop_state *ls) {
    s2s_st_file *f;
    S2S_TRY(s2s_st_open(&f, path));
    s2s_status st = S2S_OK;
    const char *fmt = s2s_st_meta_get(f, "s2s.train.format");
    const s2s_st_tensor *tm = s2s_st_find(f, "train.adam.m"), *tv = s2s_st_find(f, "train.adam.v");
    const char *rng = s2s_st_meta_get(f, "s2s.train.rng");
    const char *best = s2s_st_meta_get(f, "s2s.train.best");
    size_t n = m->n_params;
    if (!fmt || strcmp(fmt, CKPT_FORMAT) != 0 || !tm || !tv || !rng || !best ||
        !meta_int(f, "s2s.train.step", 0, &ls->step) ||
        !meta_int(f, "s2s.train.epoch", 1, &ls->epoch) ||
        !meta_int(f, "s2s.train.batch", 0, &ls->batch) ||
        !meta_int(f, "s2s.train.best_step", 0, &ls->best_step) ||
        !meta_int(f, "s2s.train.bad_validations", 0, &ls->bad) ||
        !meta_int(f, "s2s.train.train_pairs", 0, &ls->train_pairs)) {
        st = s2s_fail(S2S_ERR_FORMAT, "%s: not an s2s training checkpoint (format %s)", path,
                      CKPT_FORMAT);
    } else if (tm->dtype != S2S_ST_F32 || tv->dtype != S2S_ST_F32) {
        // The copy below reads 4 bytes a value: an I8 or BF16 tensor of n
        // values holds n or 2n bytes.
        const s2s_st_tensor *t = tm->dtype != S2S_ST_F32 ? tm : tv;
        st = s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' is %s; Adam moments must be F32", path,
                      t->name, s2s_st_dtype_name(t->dtype));
    } else if (tm->ndim != 1 || tv->ndim != 1 || (size_t)tm->shape[0] != n ||
               (size_t)tv->shape[0] != n) {
        const s2s_st_tensor *t = tm->ndim != 1 || (size_t)tm->shape[0] != n ? tm : tv;
        st = s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' has %d dimensions and %lld values; the "
                      "model has %zu weights, one Adam moment each", path, t->name, t->ndim,
                      (long long)t->shape[0], n);
    } else if (sscanf(rng, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64, &ls->rng.s[0],
                      &ls->rng.s[1], &ls->rng.s[2], &ls->rng.s[3]) != 4) {
        st = s2s_fail(S2S_ERR_FORMAT, "%s: bad s2s.train.rng", path);
    } else {
        ls->best = strcmp(best, "nan") == 0 ? NAN : strtod(best, NULL);
        // Optional (a checkpoint saved with no step run has none); a line
        // with a newline is not put back.
        const char *line = s2s_st_meta_get(f, "s2s.train.log_line");
        free(ls->log_line);
        ls->log_line = line && line[0] && !strchr(line, '\n') ? strdup(line) : NULL;
        if (line && line[0] && !strchr(line, '\n') && !ls->log_line)
            st = s2s_fail(S2S_ERR_NOMEM, "out of memory");
        // Unaligned on read: copy bytes.
        memcpy(am, tm->data, n * sizeof(float));
        memcpy(av, tv->data, n * sizeof(float));
        // A NaN, an infinity or a negative second moment makes every
        // weight it touches NaN at the first resumed step.
        size_t jm = s2s_first_nonfinite(am, n), jv = s2s_first_nonfinite(av, n);
        for (size_t j = 0; jv == n && j < n; j++)
            if (av[j] < 0) jv = j;
        if (jm < n || jv < n) {
            const s2s_st_tensor *t = jm < n ? tm : tv;
            size_t j = jm < n ? jm : jv;
            st = s2s_fail(S2S_ERR_FORMAT, "%s: tensor '%s' holds %g at index %zu; Adam moments "
                          "must be finite (and the second ones not negative)", path, t->name,
                          (double)(jm < n ? am[j] : av[j]), j);
        }
    }
    s2s_st_close(f);
    return st;
}
