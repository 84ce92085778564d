// Data-parallel training across processes (internal): the few collective
// operations the trainer needs (dist.c): on one process a copy or
// nothing, under a launcher on MPI_COMM_WORLD through the module
// libs2s_mpi.so (dist_mpi.h, the S2S_MPI build), so the trainer has no
// #ifdef.
//
// The collectives (bcast to allgather) are made by all ranks, in the same
// order, with the same sizes. With one process each is a copy or nothing.
#ifndef S2S_TRAIN_DIST_H
#define S2S_TRAIN_DIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "s2s/train.h"

// Process control, which the s2s command calls around s2s_train.
//
// Under a launcher (`mpirun -np N s2s train CONFIG`), s2s_train runs one
// synchronous data-parallel training across the N processes: every rank
// starts from rank 0's weights, takes its share of each global batch of
// train.batch_tokens (so a config means the same training for any N) and
// the gradients are summed before each update. Rank 0 alone validates and
// writes the log and the model files; every rank must see the data files
// (and --init's or --resume's file). The command calls s2s_dist_init before
// s2s_train and s2s_dist_finalize after it; s2s_dist_abort ends every rank
// after an error on one (the others would wait for it forever).

// Joins the launcher's processes; nothing without a launcher. A build
// without MPI started as several processes gets S2S_ERR_CONFIG (they would
// train alone, each writing the same files).
s2s_status s2s_dist_init(void);
int s2s_dist_rank(void);  // from 0; 0 without a launcher
int s2s_dist_size(void);  // processes; 1 without a launcher
// Ends every process of the job with exit status code (MPI_Abort); nothing
// with one process.
void s2s_dist_abort(int code);
void s2s_dist_finalize(void);

// bytes at p on every rank = rank 0's.
s2s_status s2s_dist_bcast(void *p, size_t bytes);
// Returns when every rank has called it.
s2s_status s2s_dist_barrier(void);
// x (n) on every rank = the sum over ranks of x, in place.
s2s_status s2s_dist_allreduce_sum_f32(float *x, size_t n);
s2s_status s2s_dist_allreduce_sum_f64(double *x, size_t n);
// all (size * k) = every rank's mine (k), in rank order.
s2s_status s2s_dist_allgather_f64(double *all, const double *mine, int k);

// The number of processes a launcher (mpirun, mpiexec, srun with PMI)
// started, from the variables it sets; 1 without one.
static inline int s2s_dist_launched_size(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                       "MV2_COMM_WORLD_SIZE", "PMIX_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 1) return n > 1 << 20 ? 1 << 20 : (int)n;
    }
    return 1;
}

#endif
