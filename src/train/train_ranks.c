// What the ranks of a data-parallel run exchange each step (dist.h): the
// global batch's counts, the gradient and loss sums, and after a
// validation a check that the weights are still equal everywhere.
#include <math.h>

#include "core/error.h"
#include "core/util.h"
#include "model/model_internal.h"
#include "train/dist.h"
#include "train/trainer.h"

s2s_status s2s_trainer_share_counts(trainer *t, const s2s_batch *b, s2s_share *sh) {
    double mine[SHARE_K] = {b->n_tokens};
    for (int k = 0; k < S2S_HEAD_ROLE_COUNT; k++) mine[1 + k] = b->n_guided[k];
    mine[SHARE_TOKENS] = b->src_tokens + b->n_tokens - b->n;
    mine[SHARE_TOKENS + 1] = b->n;
    S2S_TRY(s2s_dist_allgather_f64(t->gather, mine, SHARE_K));
    double sum[SHARE_K] = {0}, lo = INFINITY, hi = 0;
    for (int r = 0; r < t->ranks; r++) {
        const double *x = t->gather + SHARE_K * r;
        for (int k = 0; k < SHARE_K; k++) sum[k] += x[k];
        lo = fmin(lo, x[SHARE_TOKENS]);
        hi = fmax(hi, x[SHARE_TOKENS]);
    }
    *sh = (s2s_share){.n_tokens = (int)sum[0], .tokens = (int)sum[SHARE_TOKENS],
                      .sentences = (int)sum[SHARE_TOKENS + 1], .tokens_min = (int)lo,
                      .tokens_max = (int)hi};
    for (int k = 0; k < S2S_HEAD_ROLE_COUNT; k++) sh->n_guided[k] = (int)sum[1 + k];
    return S2S_OK;
}

s2s_status s2s_trainer_sum_ranks(trainer *t, s2s_loss_stats *ls, bool *interrupted, double *sec) {
    enum { GUIDED = 2, STOP = GUIDED + S2S_HEAD_ROLE_COUNT };
    double x[STOP + 1] = {ls->loss, ls->nll};
    for (int k = 0; k < S2S_HEAD_ROLE_COUNT; k++) x[GUIDED + k] = ls->guided[k];
    x[STOP] = *interrupted;
    S2S_TRY(s2s_dist_barrier());
    double t0 = s2s_trainer_now();
    S2S_TRY(s2s_dist_allreduce_sum_f32(t->grads, t->n));
    *sec = s2s_trainer_now() - t0;
    S2S_TRY(s2s_dist_allreduce_sum_f64(x, STOP + 1));
    ls->loss = x[0];
    ls->nll = x[1];
    for (int k = 0; k < S2S_HEAD_ROLE_COUNT; k++) ls->guided[k] = x[GUIDED + k];
    *interrupted = x[STOP] > 0;
    return S2S_OK;
}

s2s_status s2s_trainer_check_ranks(trainer *t, int step, bool *stop_early) {
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
