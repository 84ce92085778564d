// Data-parallel training on MPI (the S2S_MPI build): MPI_COMM_WORLD, with
// errors returned rather than fatal so that a failed call becomes an
// s2s_status naming the operation. MPI is initialised only under a
// launcher: a plain `s2s train` makes no MPI call at all.
#include <mpi.h>
#include <string.h>

#include "core/error.h"
#include "train/dist.h"

static bool inited;
static int rank_, size_ = 1;

static s2s_status check(int rc, const char *what) {
    if (rc == MPI_SUCCESS) return S2S_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return s2s_fail(S2S_ERR_IO, "rank %d: %s failed: %s", rank_, what, msg);
}

s2s_status s2s_dist_init(void) {
    int want = s2s_dist_launched_size();
    if (inited || want <= 1) return S2S_OK;
    int provided = 0;
    // Only the calling thread makes MPI calls (OpenMP threads never do).
    S2S_TRY(check(MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided), "MPI_Init"));
    inited = true;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (size_ != want)
        return s2s_fail(S2S_ERR_CONFIG, "the launcher started %d processes but MPI sees %d: "
                        "was s2s started by another MPI's mpirun?", want, size_);
    return S2S_OK;
}

int s2s_dist_rank(void) { return rank_; }
int s2s_dist_size(void) { return size_; }

void s2s_dist_abort(int code) {
    if (inited && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

void s2s_dist_finalize(void) {
    if (inited) MPI_Finalize();
    inited = false;
}

// MPI counts are ints: large buffers go in pieces of at most 1 GiB.
#define CHUNK (1u << 30)

s2s_status s2s_dist_bcast(void *p, size_t bytes) {
    if (size_ <= 1) return S2S_OK;
    for (size_t at = 0; at < bytes; at += CHUNK) {
        size_t n = bytes - at < CHUNK ? bytes - at : CHUNK;
        S2S_TRY(check(MPI_Bcast((char *)p + at, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD),
                      "MPI_Bcast"));
    }
    return S2S_OK;
}

s2s_status s2s_dist_barrier(void) {
    return size_ <= 1 ? S2S_OK : check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

static s2s_status allreduce(void *x, size_t n, size_t size, MPI_Datatype type) {
    if (size_ <= 1) return S2S_OK;
    size_t per = CHUNK / size;
    for (size_t at = 0; at < n; at += per) {
        size_t k = n - at < per ? n - at : per;
        S2S_TRY(check(MPI_Allreduce(MPI_IN_PLACE, (char *)x + at * size, (int)k, type, MPI_SUM,
                                    MPI_COMM_WORLD), "MPI_Allreduce"));
    }
    return S2S_OK;
}

s2s_status s2s_dist_allreduce_sum_f32(float *x, size_t n) {
    return allreduce(x, n, sizeof *x, MPI_FLOAT);
}

s2s_status s2s_dist_allreduce_sum_f64(double *x, size_t n) {
    return allreduce(x, n, sizeof *x, MPI_DOUBLE);
}

s2s_status s2s_dist_allgather_f64(double *all, const double *mine, int k) {
    if (size_ <= 1) {
        memmove(all, mine, (size_t)k * sizeof *all);
        return S2S_OK;
    }
    return check(MPI_Allgather(mine, k, MPI_DOUBLE, all, k, MPI_DOUBLE, MPI_COMM_WORLD),
                 "MPI_Allgather");
}
