// s2s/train.h — training a model from a TSV corpus, and building vocabularies.
//
// s2s_train runs the whole loop of `s2s train`: data loading and batching,
// forward/backward, Adam, the learning-rate schedule, validation,
// checkpoints, early stopping and resuming. It never prints: progress goes
// to an optional callback (the CLI draws the live line) and, one JSON
// object per step, to the log file train.log.
//
//     s2s_config cfg;  s2s_config_default(&cfg);
//     s2s_config_load_file(&cfg, "configs/copy.yaml");
//     s2s_train_params p = s2s_train_default_params();
//     p.output = "copy.safetensors";
//     s2s_train_summary sum;
//     if (s2s_train(&cfg, &p, &sum) != S2S_OK) fprintf(stderr, "%s\n", s2s_last_error());
//
// Files written for output OUT (BASE = OUT without a ".safetensors" ending):
//   OUT                         the model at the last checkpoint (s2s_model_save format)
//   BASE.optim.safetensors      optimizer and loop state of that checkpoint:
//                               tensors adam.m and adam.v (n_params each), and
//                               metadata s2s.train.* (step, epoch, batch index in the
//                               epoch, dropout rng state, best metric, patience count,
//                               a hash of the weights it belongs with)
//   BASE.best.safetensors       the model with the best validation score so far
//   train.log (train.log key)   JSON lines, one per step
// Every file is written atomically (temp file, fsync, rename).
#ifndef S2S_TRAIN_H
#define S2S_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "s2s/config.h"
#include "s2s/decode.h"
#include "s2s/model.h"
#include "s2s/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// Validation results on data.dev.
typedef struct s2s_valid_result {
    double loss;            // label-smoothed loss per target token (</s> included)
    double nll;             // -log p[gold] per target token, no smoothing
    double token_accuracy;  // teacher-forced argmax == gold, per target token, in [0, 1]
    double bleu;            // corpus BLEU of greedy translations, 0..100 (sacreBLEU's definition)
    double exact_match;     // share of sentences translated token for token, in [0, 1]
    int sentences;
} s2s_valid_result;

// What the callback receives after every step.
typedef struct s2s_train_progress {
    int step, max_steps;
    double loss;           // that step's batch, before the update
    double lr;             // learning rate used by the step
    double grad_norm;      // global gradient norm before clipping
    int tokens;            // source + target tokens of the batch (no </s>, no padding)
    int sentences;
    int epoch;             // from 1
    double elapsed;        // seconds since this process started training
    double tokens_per_sec; // over this process's training steps (validation and saving excluded)
    const s2s_valid_result *valid;  // non-NULL on validation steps
    bool best;             // this validation improved the best metric
    bool saved;            // a checkpoint was written after this step
} s2s_train_progress;

typedef void (*s2s_train_callback)(const s2s_train_progress *p, void *user);

typedef struct s2s_train_params {
    const char *output;  // OUT (see above); NULL: the config's train.output
    const char *init;    // start from this model's weights; NULL: fresh init with train.seed
    const char *resume;  // continue from this checkpoint (OUT of an earlier run); NULL: no
    s2s_train_callback on_step;
    void *user;
    // When *stop becomes non-zero (a signal handler sets it) the current step
    // finishes, a checkpoint is written and s2s_train returns with
    // summary.interrupted set.
    volatile sig_atomic_t *stop;
} s2s_train_params;

s2s_train_params s2s_train_default_params(void);

typedef struct s2s_train_summary {
    int steps;                  // the last step done
    bool interrupted;           // stopped by *stop
    bool early_stopped;         // train.patience validations without improvement
    double best_score;          // best value of train.best_metric (NAN: never validated)
    int best_step;
    s2s_valid_result last_valid;
    double tokens_per_sec;      // source + target tokens per second of training steps
} s2s_train_summary;

// Trains as cfg says: the data and train sections, model.dropout and
// model.attention_dropout, and (for validation) decode.max_len. Without
// p->init or p->resume the model is a fresh s2s_model_init(cfg, train.seed);
// with them the weights and vocabularies come from that file, whose
// architecture must match cfg's model section (S2S_ERR_CONFIG otherwise).
// A resumed run continues exactly where the checkpoint stopped, given the
// same config, data and thread count. Returns S2S_ERR_IO or S2S_ERR_FORMAT
// for unreadable or malformed data ("file:line: problem"), S2S_ERR_CONFIG
// when something needed is unset, S2S_ERR_INVALID when the loss diverges.
//
// The log (train.log, or train.log in OUT's folder) gets one JSON object per
// step: {"step", "loss" (the step's batch, before the update), "lr",
// "tokens" (source + target tokens, no </s> or padding), "grad_norm"
// (before clipping), and on validation steps "valid": {"loss", "nll",
// "token_accuracy", "bleu", "exact_match", "sentences", "best"}}. A resumed
// run first drops the lines after its checkpoint's step.
s2s_status s2s_train(const s2s_config *cfg, const s2s_train_params *p, s2s_train_summary *out);

// Evaluates m on a source<TAB>target TSV file as validation does: the
// label-smoothed loss (train.label_smoothing of m's config) and token
// accuracy under teacher forcing, then corpus BLEU and exact match of the
// translations p makes (its best hypothesis). Errors name the file and line.
s2s_status s2s_evaluate(const s2s_model *m, const char *tsv, const s2s_decode_params *p,
                        s2s_valid_result *out);
// The same on n >= 1 pairs already tokenized (s2s_tokenize of each side,
// possibly cut shorter by lowering .n). The target pieces are the
// references. A side of max_len tokens or more gives S2S_ERR_FORMAT.
s2s_status s2s_evaluate_tokens(const s2s_model *m, const s2s_tokens *src, const s2s_tokens *tgt,
                               int n, const s2s_decode_params *p, s2s_valid_result *out);

// ---- vocabularies ----

typedef struct s2s_vocab_build_params {
    int column;     // 0: source, 1: target column of the TSV
    int min_count;  // keep tokens seen at least this often (>= 1)
    int max_size;   // most lines in the file, specials included (0: no limit)
} s2s_vocab_build_params;

// Writes a vocab file for one column of a source<TAB>target TSV: the four
// specials, then tokens by count (descending), ties by byte order. Tokens
// are what s2s_tokenize makes of the text against a vocab holding only the
// specials: lower-cased words and punctuation for spaced text, single
// characters for CJK runs (a Chinese vocab built this way is
// character-level; longest-match segmentation needs multi-character
// entries, which can be added by hand). Errors name the file and line.
s2s_status s2s_vocab_build(const char *tsv_path, const s2s_vocab_build_params *p,
                           const char *out_path, int *n_tokens);

#ifdef __cplusplus
}
#endif
#endif
