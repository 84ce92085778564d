// Data-parallel training without MPI: one process, every collective a
// copy or nothing. A launcher that started several copies of this build is
// refused: N independent runs each writing the same files would look like
// one that worked.
#include <string.h>

#include "core/error.h"
#include "train/dist.h"

s2s_status s2s_dist_init(void) {
    int n = s2s_dist_launched_size();
    if (n > 1)
        return s2s_fail(S2S_ERR_CONFIG, "started as %d processes (mpirun?), but this s2s was "
                        "built without MPI: each would train alone and write the same files. "
                        "Rebuild with MPI (libopenmpi-dev, -DS2S_MPI=ON) or run one process", n);
    return S2S_OK;
}

int s2s_dist_rank(void) { return 0; }
int s2s_dist_size(void) { return 1; }
void s2s_dist_abort(int code) { (void)code; }
void s2s_dist_finalize(void) {}

s2s_status s2s_dist_bcast(void *p, size_t bytes) {
    (void)p;
    (void)bytes;
    return S2S_OK;
}

s2s_status s2s_dist_barrier(void) { return S2S_OK; }

s2s_status s2s_dist_allreduce_sum_f32(float *x, size_t n) {
    (void)x;
    (void)n;
    return S2S_OK;
}

s2s_status s2s_dist_allreduce_sum_f64(double *x, size_t n) {
    (void)x;
    (void)n;
    return S2S_OK;
}

s2s_status s2s_dist_allgather_f64(double *all, const double *mine, int k) {
    memmove(all, mine, (size_t)k * sizeof *all);
    return S2S_OK;
}
