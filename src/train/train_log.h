// The training log (internal): one JSON object per step, appended to
// BASE.train.log (or train.log), written through jansson. Every write is
// checked: a failed one is an error, not a silently shorter log.
#ifndef S2S_TRAIN_LOG_H
#define S2S_TRAIN_LOG_H

#include <stdbool.h>
#include <stdio.h>

#include "s2s/train.h"

typedef struct s2s_train_log {
    FILE *f;
    const char *path;  // borrowed
    bool wrote;        // this run has written a line
} s2s_train_log;

// Opens path for appending (created if missing): a new run's lines go after
// an earlier run's. Runs are told apart by their steps: a line whose step is
// not above the previous line's starts a new run. Lines a run wrote after
// its last checkpoint (a killed run's) go first: resume_step >= 0 cuts the
// last run's lines after that step, so the resumed run continues the same
// numbering, and writes resume_line (the checkpoint's own line) when the
// kill came before it; resume_step < 0 (a new run) cuts the last run after
// its last line marked "checkpoint": true, the whole run when it has none,
// so a run killed before its first checkpoint leaves nothing behind.
// S2S_ERR_IO names the file.
s2s_status s2s_train_log_open(s2s_train_log *log, const char *path, int resume_step,
                              const char *resume_line);

// The guided terms of a step (s2s_loss_stats), each logged when its loss is on.
// By s2s_head_role; each logged under its role's name (s2s_roles[r].log).
typedef struct s2s_train_log_guided {
    bool on[S2S_HEAD_ROLE_COUNT];
    double term[S2S_HEAD_ROLE_COUNT];
} s2s_train_log_guided;

struct s2s_grad_norms;  // train/grad_norms.h

// p's line, without its newline: {"step", "loss", ["guided" when guided_on],
// ["coref" when coref_on], "lr", "tokens", "grad_norm", ["grad_norms": {...}
// when gn is not NULL: each matrix's norm keyed by its tensor name without
// ".weight", grad_norms.h], ["valid": {...}], ["checkpoint": true]};
// non-finite numbers as null. With p->ranks > 1 also
// "rank_tokens": [min, max] and "allreduce_ms", and on the run's first line
// "ranks". checkpoint: the step's checkpoint is on disk (so the line is
// written after it). Caller frees; NULL on out of memory.
char *s2s_train_log_line(const s2s_train_log *log, const s2s_train_progress *p,
                         const s2s_train_log_guided *g, const struct s2s_grad_norms *gn,
                         bool checkpoint);
// Appends line and a newline, flushed. A log never opened (ranks other
// than 0) takes nothing. S2S_ERR_IO (naming the file and the error) when
// the write fails.
s2s_status s2s_train_log_write(s2s_train_log *log, const char *line);

// Closes the file; S2S_ERR_IO when the last buffered bytes cannot be written.
s2s_status s2s_train_log_close(s2s_train_log *log);

#endif
