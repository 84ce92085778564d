// The state of a training run (internal), shared by trainer.c (the loop),
// train_setup.c (setup, the memory plan, teardown) and train_ranks.c (what
// the ranks exchange each step).
#ifndef S2S_TRAIN_TRAINER_H
#define S2S_TRAIN_TRAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "s2s/decode.h"
#include "s2s/train.h"
#include "train/checkpoint.h"
#include "train/data.h"
#include "train/grad_norms.h"
#include "train/graph.h"
#include "train/optim.h"
#include "train/outputs.h"
#include "train/train_log.h"

// Counts per rank gathered each step (s2s_trainer_share_counts): target
// tokens, each guided head's rows, tokens, sentences.
enum { SHARE_TOKENS = 1 + S2S_HEAD_ROLE_COUNT, SHARE_K = SHARE_TOKENS + 2 };

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

static inline double s2s_trainer_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// A failed write of a file the run promises (log, checkpoint, model).
static inline s2s_status s2s_trainer_wrote(trainer *t, s2s_status st) {
    if (st != S2S_OK) t->write_failed = true;
    return st;
}

// ---- train_setup.c ----

// Everything a run needs before its first step: the outputs checked, the
// model loaded or made, the data loaded, the buffers and the graph's arena
// allocated, a checkpoint resumed, the log opened (rank 0). t->stopped when
// *p->stop was set while the data loaded (nothing written then).
s2s_status s2s_trainer_setup(trainer *t, const s2s_config *cfg, const s2s_train_params *p);
// Frees what setup made; the log's close status.
s2s_status s2s_trainer_teardown(trainer *t);

// ---- train_ranks.c ----

// The global batch's counts, from every rank's share.
typedef struct s2s_share {
    int n_tokens, n_guided[S2S_HEAD_ROLE_COUNT];  // what the loss terms average over
    int tokens, sentences;            // source + target tokens (no </s>), sentences
    int tokens_min, tokens_max;       // the smallest and largest rank's tokens
} s2s_share;

s2s_status s2s_trainer_share_counts(trainer *t, const s2s_batch *b, s2s_share *sh);
// The gradients, the loss terms (each rank's part of the global means)
// and the stop flags summed over the ranks. *sec: the gradient sum alone,
// after a barrier, so that waiting for the slowest rank is not counted.
s2s_status s2s_trainer_sum_ranks(trainer *t, s2s_loss_stats *ls, bool *interrupted, double *sec);
// After a validation: every rank's weights hash as rank 0's, and rank 0's
// early-stopping verdict becomes everyone's.
s2s_status s2s_trainer_check_ranks(trainer *t, int step, bool *stop_early);

#endif
