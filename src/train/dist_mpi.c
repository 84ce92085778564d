// The module libs2s_mpi.so (train/dist_mpi.h): the collectives on
// MPI_COMM_WORLD, with errors returned rather than fatal so that a failed
// call becomes a message naming the operation.
#include "train/dist_mpi.h"

#include <mpi.h>
#include <stdio.h>

static int rank_;

static int check(int rc, const char *what, char *err) {
    if (rc == MPI_SUCCESS) return 0;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    snprintf(err, S2S_MPI_ERR, "rank %d: %s failed: %s", rank_, what, msg);
    return -1;
}

static int init(int *rank, int *size, char *err) {
    int provided = 0;
    // Only the calling thread makes MPI calls (OpenMP threads never do).
    if (check(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided), "MPI_Init", err))
        return -1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    *rank = rank_;
    return 0;
}

static void abort_all(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
static void finalize(void) { MPI_Finalize(); }

// MPI counts are ints: large buffers go in pieces of at most 1 GiB.
#define CHUNK (1u << 30)

static int bcast(void *p, size_t bytes, char *err) {
    for (size_t at = 0; at < bytes; at += CHUNK) {
        size_t n = bytes - at < CHUNK ? bytes - at : CHUNK;
        if (check(MPI_Bcast((char *)p + at, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast",
                  err))
            return -1;
    }
    return 0;
}

static int barrier(char *err) { return check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", err); }

static int allreduce_sum(void *x, size_t n, bool f64, char *err) {
    size_t size = f64 ? sizeof(double) : sizeof(float), per = CHUNK / size;
    for (size_t at = 0; at < n; at += per) {
        size_t k = n - at < per ? n - at : per;
        if (check(MPI_Allreduce(MPI_IN_PLACE, (char *)x + at * size, (int)k,
                                f64 ? MPI_DOUBLE : MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                  "MPI_Allreduce", err))
            return -1;
    }
    return 0;
}

static int allgather_f64(double *all, const double *mine, int k, char *err) {
    return check(MPI_Allgather(mine, k, MPI_DOUBLE, all, k, MPI_DOUBLE, MPI_COMM_WORLD),
                 "MPI_Allgather", err);
}

__attribute__((visibility("default"))) const s2s_mpi_api s2s_mpi_module = {
    init, abort_all, finalize, bcast, barrier, allreduce_sum, allgather_f64};
