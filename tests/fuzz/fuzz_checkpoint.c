// Checkpoint files on resume (src/train/checkpoint.c): the bytes as the
// BASE.ckpt.safetensors that `s2s train --resume` reads. As the trainer
// does, the model is read from it first; then the Adam moments and the
// loop state into buffers of that model's size, and one Adam step is taken
// over them, as the first resumed step would.
#include <math.h>
#include <stdlib.h>

#include "fuzz.h"
#include "s2s/s2s.h"
#include "train/checkpoint.h"
#include "train/optim.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    s2s_set_threads(1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = s2s_fuzz_file(data, size);
    s2s_model *m;
    if (s2s_model_load(&m, path) != S2S_OK) return 0;
    size_t n = m->n_params;
    float *block = calloc(3 * n + 1, sizeof(float));  // grads, m, v as the trainer's block
    if (!block) abort();
    float *grads = block, *am = block + n, *av = block + 2 * n;
    s2s_loop_state ls = {0};
    if (s2s_checkpoint_load(path, m, am, av, &ls) == S2S_OK) {
        // What the loader promises: the loop state in range, the moments usable.
        if (ls.step < 0 || ls.epoch < 1 || ls.batch < 0 || ls.best_step < 0 || ls.bad < 0 ||
            ls.train_pairs < 0)
            abort();
        for (size_t j = 0; j < n; j++)
            if (!isfinite(am[j]) || !isfinite(av[j]) || av[j] < 0) abort();
        for (size_t j = 0; j < n; j++) grads[j] = (float)((j % 7) - 3) * 0.01f;
        const s2s_adam_params a = {.beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-9f};
        s2s_adam_step(m->params, am, av, grads, n, 1e-3, &a, (int64_t)ls.step + 1);
    }
    free(ls.log_line);
    free(block);
    s2s_model_free(m);
    return 0;
}
