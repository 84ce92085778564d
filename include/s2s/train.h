// s2s/train.h — training a model from a TSV corpus, and building vocabularies.
//
// s2s_train runs the whole loop of `s2s train`: data loading and batching,
// forward/backward, Adam, the learning-rate schedule, validation,
// checkpoints, early stopping and resuming. It never prints: progress goes
// to an optional callback (the CLI draws the live line) and, one JSON
// object per step, to the log file BASE.train.log.
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
//   BASE.ckpt.safetensors       the checkpoint, ONE file: the model (it loads as one),
//                               tensors train.adam.m and train.adam.v (n_params each)
//                               and metadata s2s.train.* (step, epoch, batch index in
//                               the epoch, dropout rng state, best metric, patience
//                               count, training pairs)
//   BASE.best.safetensors       the model with the best validation score so far
//   BASE.train.log              JSON lines, one per step, appended run after run
//                               (train.log in the config names another file)
// Every model file is written atomically (temp file, fsync, rename). The
// checkpoint is written before OUT, and --resume reads the checkpoint alone,
// so a run killed at any moment resumes from the last complete checkpoint.
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
    // Data-parallel training (`mpirun -np N s2s train`, docs/training.md;
    // tokens and sentences above are the global batch's):
    int ranks;
    int rank_tokens_min, rank_tokens_max;  // the smallest and largest rank's share of tokens
    double allreduce_sec;  // the step's gradient sum across ranks (0 with one process)
} s2s_train_progress;

typedef void (*s2s_train_callback)(const s2s_train_progress *p, void *user);

// What a training run holds, in bytes, by part (s2s_train_plan; a run
// reports it through s2s_train_params.on_plan before its first step).
// The activation parts are the training graph's arena, planned for the
// largest batch shape the run's first epoch (and the dev set's batches)
// bring: the most sentences, the longest source and the longest target of
// any batch (the arena grows in each of the three apart, so it reaches
// all three at once). The run allocates that arena before its first step.
typedef struct s2s_train_memory {
    int batch_sentences, src_rows, tgt_rows;  // the batch shape planned for
    size_t weights;      // fp32 parameters (with compute_type bf16, and their bf16 copy)
    size_t gradients;    // one fp32 gradient per parameter
    size_t adam;         // the two fp32 moments
    size_t activations;  // what the forward pass keeps, bar the attention weights
    size_t attention;    // attention weights, their dropout copies and gradient
    size_t scratch;      // the backward pass's other buffers
    size_t total;
} s2s_train_memory;

typedef struct s2s_train_params {
    const char *output;  // OUT (see above); NULL: the config's train.output
    const char *log;     // the log; NULL: the config's train.log, or BASE.train.log
    const char *init;    // start from this model's weights; NULL: fresh init with train.seed
    const char *resume;  // continue from the checkpoint of this OUT (or this BASE.ckpt.safetensors)
    // The folder the config's relative paths resolved against: train.output
    // (when output is NULL) and train.log (when log is NULL) must lie
    // inside it unless allow_outside. NULL: no such check (a config built
    // in code).
    const char *config_dir;
    bool allow_outside;
    bool overwrite;      // allow an output that is the init file itself
    s2s_train_callback on_step;
    // Called once before the first step (rank 0) with what the run holds.
    void (*on_plan)(const s2s_train_memory *mem, void *user);
    void *user;
    // When *stop becomes non-zero the current step finishes, a checkpoint is
    // written and s2s_train returns with summary.interrupted set; before the
    // first step (while the data loads) it returns so with nothing written. Set it from
    // a thread that takes the signals with sigwait(), as `s2s train` does,
    // rather than from a handler: a handler that runs on a thread inside
    // oneDNN 2.6's AVX-512 sgemm writes its frame into a heap block
    // (docs/reliability.md "Signals").
    volatile sig_atomic_t *stop;
} s2s_train_params;

S2S_API s2s_train_params s2s_train_default_params(void);

// What s2s_train(cfg, p) would hold (s2s_train_memory), found by loading
// the model (fresh, p->init or p->resume's checkpoint) and the data and
// laying out the batches, without training or writing anything.
S2S_API s2s_status s2s_train_plan(const s2s_config *cfg, const s2s_train_params *p,
                                  s2s_train_memory *out);

typedef struct s2s_train_summary {
    int steps;                  // the last step done
    bool interrupted;           // stopped by *stop
    bool early_stopped;         // train.patience validations without improvement
    double best_score;          // best value of train.best_metric (NAN: never validated)
    int best_step;
    s2s_valid_result last_valid;
    double tokens_per_sec;      // source + target tokens per second of training steps
    bool write_failed;          // the run failed writing its log or a model file
    size_t arena_bytes;         // the training graph's arena at the end (s2s_train_memory's
                                // activations + attention + scratch, unless a batch outgrew it)
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
// Before the first step it opens the log and checks that OUT's folder takes
// new files, that the config's outputs stay in p->config_dir (unless
// p->allow_outside) and that OUT is not p->init (unless p->overwrite). A
// failed write of the log or of a model file fails the run with
// S2S_ERR_IO and summary.write_failed set.
//
// The log (train.log, or BASE.train.log) gets one JSON object per
// step: {"step", "loss" (the step's batch, before the update), "guided"
// and "coref" (the guided alignment and coreference terms, when on), "lr",
// "tokens" (source + target tokens, no </s> or padding), "grad_norm"
// (before clipping), every train.grad_norms_every steps "grad_norms" (each
// attention and feed-forward matrix's gradient norm, keyed by its tensor
// name without ".weight", after the MPI sum and before clipping;
// docs/training.md), and on validation steps "valid": {"loss", "nll",
// "token_accuracy", "bleu", "exact_match", "sentences", "best"}}, and
// "checkpoint": true on a step whose checkpoint is written (the line comes
// after it). A new run appends its lines after an earlier run's (its steps
// start again at 1), first dropping the last run's lines after its last
// checkpoint (a killed run's); a resumed run first drops the last run's
// lines after its checkpoint's step.
// Under MPI (several ranks) "tokens" is the global batch's, every line adds
// "rank_tokens": [smallest, largest rank's share] and "allreduce_ms", and a
// run's first line "ranks": N.
S2S_API s2s_status s2s_train(const s2s_config *cfg, const s2s_train_params *p,
                             s2s_train_summary *out);

// Evaluates m on a source<TAB>target TSV file as validation does: the
// label-smoothed loss (train.label_smoothing of m's config) and token
// accuracy under teacher forcing, then corpus BLEU and exact match of the
// translations p makes (its best hypothesis). Errors name the file and line.
S2S_API s2s_status s2s_evaluate(const s2s_model *m, const char *tsv, const s2s_decode_params *p,
                                s2s_valid_result *out);
// The same on n >= 1 pairs already tokenized (s2s_tokenize of each side,
// possibly cut shorter by lowering .n). The target pieces are the
// references. A side of max_len tokens or more gives S2S_ERR_FORMAT.
S2S_API s2s_status s2s_evaluate_tokens(const s2s_model *m, const s2s_tokens *src,
                                       const s2s_tokens *tgt, int n, const s2s_decode_params *p,
                                       s2s_valid_result *out);

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
S2S_API s2s_status s2s_vocab_build(const char *tsv_path, const s2s_vocab_build_params *p,
                                   const char *out_path, int *n_tokens);

#ifdef __cplusplus
}
#endif
#endif
