// Data-parallel training across processes (internal): the few collective
// operations the trainer needs (dist.c): on one process a copy or
// nothing, under a launcher on MPI_COMM_WORLD through the module
// libs2s_mpi.so (dist_mpi.h, the S2S_MPI build), so the trainer has no
// #ifdef. The public part (init, rank, size, abort, finalize) is declared
// in s2s/train.h.
//
// Every call here is collective: all ranks make it, in the same order,
// with the same sizes. With one process each is a copy or nothing.
#ifndef S2S_TRAIN_DIST_H
#define S2S_TRAIN_DIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "s2s/train.h"

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
