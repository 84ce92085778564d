// Training checkpoints (internal).
//
// A checkpoint is ONE file, BASE.ckpt.safetensors beside the output OUT
// (BASE = OUT without a ".safetensors" ending): the model as s2s_model_save
// writes it (so it also loads as a model), the Adam moments as tensors
// train.adam.m and train.adam.v (n_params each), and the loop state as
// metadata s2s.train.* (step, epoch, batch index in the epoch, dropout rng
// state, best score and its step, bad validations, training pairs, the
// step's log line). It is
// written atomically (temp file, fsync, rename), so whenever the process
// dies the file is the previous checkpoint or the new one, complete:
// --resume never sees weights and moments from different steps.
#ifndef S2S_TRAIN_CHECKPOINT_H
#define S2S_TRAIN_CHECKPOINT_H

#include "core/util.h"
#include "model/model_internal.h"

// Where the loop stands: what a resumed run needs besides weights and moments.
typedef struct s2s_loop_state {
    int step, epoch, batch;  // batch: the next batch of the epoch's plan
    s2s_rng rng;             // dropout masks
    double best;             // NAN until the first validation
    int best_step, bad;
    int train_pairs;         // size of data.train (resuming needs the same data)
    // The log line of the checkpoint's step (NULL for none; malloc'd, the
    // owner frees it), stored with it: the line is written after the
    // checkpoint, and a resume puts it back when a kill came in between
    // (s2s_train_log_open). Its grad_norms make it several kB long.
    char *log_line;
} s2s_loop_state;

// Writes m, the moments am and av (m->n_params each) and ls to path.
s2s_status s2s_checkpoint_save(const char *path, const s2s_model *m, const float *am,
                               const float *av, const s2s_loop_state *ls);

// Reads the moments (into am, av: m->n_params each) and the loop state of
// the checkpoint at path, m being the model s2s_model_load read from it
// (ls->log_line, NULL or malloc'd, replaces the one ls had, which it frees).
// S2S_ERR_FORMAT names the file when it is not a checkpoint of m's size.
s2s_status s2s_checkpoint_load(const char *path, const s2s_model *m, float *am, float *av,
                               s2s_loop_state *ls);

#endif
