// The MPI side of data-parallel training (internal): dist_mpi.c is built
// as a module of its own (libs2s_mpi.so, linked with MPI) that dist.c opens
// only when a launcher started several processes. Linked into libs2s, MPI
// and its seven libraries cost every s2s command about 1 ms of start-up.
//
// The module names nothing of libs2s (a static libs2s exports nothing to
// it): each call returns 0, or -1 with a message in err (S2S_MPI_ERR
// bytes); dist.c turns that into an s2s_status.
#ifndef S2S_TRAIN_DIST_MPI_H
#define S2S_TRAIN_DIST_MPI_H

#include <stdbool.h>
#include <stddef.h>

#define S2S_MPI_ERR 512
#define S2S_MPI_MODULE "libs2s_mpi.so"
#define S2S_MPI_SYMBOL "s2s_mpi_module"

typedef struct s2s_mpi_api {
    int (*init)(int *rank, int *size, char *err);  // MPI_COMM_WORLD, errors returned
    void (*abort)(int code);
    void (*finalize)(void);
    int (*bcast)(void *p, size_t bytes, char *err);  // from rank 0
    int (*barrier)(char *err);
    int (*allreduce_sum)(void *x, size_t n, bool f64, char *err);  // in place, float or double
    int (*allgather_f64)(double *all, const double *mine, int k, char *err);
} s2s_mpi_api;

#endif
