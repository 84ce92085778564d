// The files s2s_train writes, and the checks made before the first step
// (internal): where they go, that they stay in the config's folder, that
// --init is not overwritten, and that every folder can take the files.
#ifndef S2S_TRAIN_OUTPUTS_H
#define S2S_TRAIN_OUTPUTS_H

#include "s2s/train.h"

typedef struct s2s_train_outputs {
    char *out;   // OUT: the model at the last checkpoint
    char *ckpt;  // BASE.ckpt.safetensors: model + optimizer state (checkpoint.h)
    char *best;  // BASE.best.safetensors
    char *log;   // train.log, or BASE.train.log
} s2s_train_outputs;

// Fills o from p->output (else cfg->train.output) and p->log (else
// cfg->train.log), and checks, before anything is trained:
//   - without p->allow_outside, that the config's output paths (train.output
//     when p->output is NULL, train.log when p->log is NULL) lie inside
//     p->config_dir;
//   - without p->overwrite, that OUT is not the file p->init names;
//   - that OUT's folder exists and takes a new file, and that OUT is not a
//     folder (the log is opened, for appending, before the first step too).
// S2S_ERR_CONFIG or S2S_ERR_IO with the path and the reason.
s2s_status s2s_train_outputs_make(s2s_train_outputs *o, const s2s_config *cfg,
                                  const s2s_train_params *p);
void s2s_train_outputs_free(s2s_train_outputs *o);

// BASE + suffix, BASE being path without a ".safetensors" ending. Caller
// frees; NULL on out of memory.
char *s2s_train_sibling(const char *path, const char *suffix);

// The checkpoint file for path: path itself when it ends in
// ".ckpt.safetensors", else BASE.ckpt.safetensors. Caller frees; NULL on
// out of memory.
char *s2s_checkpoint_path(const char *path);

// The log s2s_train(cfg, p) appends to: p->log, else the config's
// train.log, else BASE.train.log beside the output (p->output, else the
// config's train.output). Caller frees; NULL when there is no output to
// put it beside, or out of memory.
char *s2s_train_log_path(const s2s_config *cfg, const s2s_train_params *p);

#endif
