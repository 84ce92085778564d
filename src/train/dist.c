// Data-parallel training's collectives (train/dist.h). Without a launcher
// (one process) each is a copy or nothing and MPI is never loaded. Under
// one, the MPI build opens its module libs2s_mpi.so (train/dist_mpi.h)
// from the folder libs2s (or the s2s command, which links the library
// statically) was loaded from, the library folder beside that one, or the
// installed library folder, and runs them on MPI_COMM_WORLD. A build without MPI
// refuses to start under a launcher: N independent runs each writing the
// same files would look like one that worked.
#define _GNU_SOURCE  // dladdr
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "train/dist.h"
#include "train/dist_mpi.h"

static const s2s_mpi_api *mpi;  // set while MPI runs
static int rank_, size_ = 1;

#ifdef S2S_MPI
// The folder of the file this function was loaded from, into dir (cap
// bytes): libs2s.so, or the s2s command, which links the library
// statically (dladdr then names the program as started: /proc/self/exe
// when that has no folder). False when it is unknown.
static bool self_dir(char *dir, size_t cap) {
    Dl_info self;
    char exe[4096];
    const char *name = NULL;
    if (dladdr((void *)self_dir, &self) && self.dli_fname && strchr(self.dli_fname, '/')) {
        name = self.dli_fname;
    } else {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n > 0) exe[n] = '\0', name = exe;
    }
    size_t len = name ? (size_t)(strrchr(name, '/') - name) : 0;
    if (!name || len >= cap) return false;
    memcpy(dir, name, len);
    dir[len] = '\0';
    return true;
}

// The module beside libs2s (or the command), in the library folder of the
// command's prefix (bin/../lib), else in the installed library folder.
// tried: why each path failed.
static const s2s_mpi_api *open_module(char tried[2 * S2S_MPI_ERR]) {
    char self[4096], path[4096 + 64];
    bool known = self_dir(self, sizeof self);
    const char *const formats[3] = {"%s/%s", "%s/../" S2S_INSTALL_LIBDIR_REL "/%s", NULL};
    for (int i = 0; i < 3; i++) {
        if (i < 2 && !known) continue;
        if (i < 2)
            snprintf(path, sizeof path, formats[i], self, S2S_MPI_MODULE);
        else
            snprintf(path, sizeof path, "%s/%s", S2S_INSTALL_LIBDIR, S2S_MPI_MODULE);
        void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        const s2s_mpi_api *api = lib ? dlsym(lib, S2S_MPI_SYMBOL) : NULL;
        if (api) return api;
        size_t used = strlen(tried);
        snprintf(tried + used, 2 * S2S_MPI_ERR - used, "%s%s", used ? "; " : "", dlerror());
    }
    return NULL;
}
#endif

s2s_status s2s_dist_init(void) {
    int want = s2s_dist_launched_size();
    if (mpi || want <= 1) return S2S_OK;
#ifndef S2S_MPI
    return s2s_fail(S2S_ERR_CONFIG, "started as %d processes (mpirun?), but this s2s was "
                    "built without MPI: each would train alone and write the same files. "
                    "Rebuild with MPI (libopenmpi-dev, -DS2S_MPI=ON) or run one process", want);
#else
    char tried[2 * S2S_MPI_ERR] = "", err[S2S_MPI_ERR];
    const s2s_mpi_api *api = open_module(tried);
    if (!api)
        return s2s_fail(S2S_ERR_CONFIG, "started as %d processes (mpirun?), but cannot load "
                        "%s: %s", want, S2S_MPI_MODULE, tried);
    if (api->init(&rank_, &size_, err)) return s2s_fail(S2S_ERR_IO, "%s", err);
    mpi = api;
    if (size_ != want)
        return s2s_fail(S2S_ERR_CONFIG, "the launcher started %d processes but MPI sees %d: "
                        "was s2s started by another MPI's mpirun?", want, size_);
    return S2S_OK;
#endif
}

int s2s_dist_rank(void) { return rank_; }
int s2s_dist_size(void) { return size_; }

void s2s_dist_abort(int code) {
    if (mpi && size_ > 1) mpi->abort(code);
}

void s2s_dist_finalize(void) {
    if (mpi) mpi->finalize();
    mpi = NULL;
}

// Each collective: nothing to do on one process, else the module's call.
#define COLLECTIVE(call)                                      \
    do {                                                      \
        if (!mpi || size_ <= 1) return S2S_OK;                \
        char err[S2S_MPI_ERR];                                \
        return call ? s2s_fail(S2S_ERR_IO, "%s", err) : S2S_OK; \
    } while (0)

s2s_status s2s_dist_bcast(void *p, size_t bytes) { COLLECTIVE(mpi->bcast(p, bytes, err)); }
s2s_status s2s_dist_barrier(void) { COLLECTIVE(mpi->barrier(err)); }

s2s_status s2s_dist_allreduce_sum_f32(float *x, size_t n) {
    COLLECTIVE(mpi->allreduce_sum(x, n, false, err));
}

s2s_status s2s_dist_allreduce_sum_f64(double *x, size_t n) {
    COLLECTIVE(mpi->allreduce_sum(x, n, true, err));
}

s2s_status s2s_dist_allgather_f64(double *all, const double *mine, int k) {
    if (!mpi || size_ <= 1) {
        memmove(all, mine, (size_t)k * sizeof *all);
        return S2S_OK;
    }
    COLLECTIVE(mpi->allgather_f64(all, mine, k, err));
}
