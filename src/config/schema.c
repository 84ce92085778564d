// The config schema: every key of s2s_config with its type, default, range
// and help text, plus the per-type value operations that the loader,
// s2s_config_default, s2s_config_to_yaml and docs/config.md share.
#include "config/schema.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

// ENUM fields are written through an int pointer.
_Static_assert(sizeof(s2s_norm) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_activation) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_schedule) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_best_metric) == sizeof(int), "enum fields must be int-sized");

#define FIELD(f) .offset = offsetof(s2s_config, f), .size = sizeof(((s2s_config *)0)->f)

static const char *const activation_names[] = {
    [S2S_ACT_RELU] = "relu", [S2S_ACT_GELU] = "gelu", [S2S_ACT_COUNT] = NULL};
static const char *const norm_names[] = {
    [S2S_NORM_PRE] = "pre", [S2S_NORM_POST] = "post", [S2S_NORM_COUNT] = NULL};
static const char *const schedule_names[] = {
    [S2S_SCHEDULE_CONSTANT] = "constant", [S2S_SCHEDULE_NOAM] = "noam",
    [S2S_SCHEDULE_INVERSE_SQRT] = "inverse_sqrt", [S2S_SCHEDULE_COSINE] = "cosine",
    [S2S_SCHEDULE_COUNT] = NULL};
static const char *const best_metric_names[] = {
    [S2S_BEST_BLEU] = "bleu", [S2S_BEST_LOSS] = "loss",
    [S2S_BEST_EXACT_MATCH] = "exact_match", [S2S_BEST_COUNT] = NULL};

// ---- the table ----
// Sections in the order they are written; keys grouped by section in the
// same order. New sections (data, train, align) go at the end of both.

const s2s_cfg_section s2s_cfg_sections[] = {
    {"model", "The architecture. Everything in this section is stored in a "
              "model file, so a model always decodes the way it was trained."},
    {"vocab", "Vocabulary files. Relative paths are resolved against the "
              "folder of the config file; a path that is set must exist."},
    {"decode", "How translations are generated."},
    {"data", "Training data for `s2s train`: TSV files with one "
             "`source<TAB>target[<TAB>alignment]` pair per line, tokenized with "
             "the model's vocabularies. Relative paths are resolved against the "
             "folder of the config file; a path that is set must exist."},
    {"train", "How `s2s train` trains: optimizer, learning-rate schedule, "
              "batching, validation and checkpoints (see include/s2s/train.h "
              "for the files it writes)."},
};
const int s2s_cfg_n_sections =
    (int)(sizeof s2s_cfg_sections / sizeof s2s_cfg_sections[0]);

const s2s_cfg_key s2s_cfg_keys[] = {
    {.key = "model.d_model", .type = S2S_CFG_INT, FIELD(model.d_model),
     .def = "512", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Width of every residual stream (embeddings, attention, "
             "layer outputs). Must be even and divisible by `model.heads`."},
    {.key = "model.heads", .type = S2S_CFG_INT, FIELD(model.heads),
     .def = "8", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Attention heads per attention block; each head is "
             "`d_model / heads` wide."},
    {.key = "model.encoder_layers", .type = S2S_CFG_INT,
     FIELD(model.encoder_layers), .def = "6", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Number of encoder layers."},
    {.key = "model.decoder_layers", .type = S2S_CFG_INT,
     FIELD(model.decoder_layers), .def = "6", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Number of decoder layers."},
    {.key = "model.ffn_dim", .type = S2S_CFG_INT, FIELD(model.ffn_dim),
     .def = "2048", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Inner width of the feed-forward blocks."},
    {.key = "model.activation", .type = S2S_CFG_ENUM, FIELD(model.activation),
     .def = "relu", .names = activation_names,
     .help = "Activation inside the feed-forward blocks."},
    {.key = "model.norm", .type = S2S_CFG_ENUM, FIELD(model.norm),
     .def = "pre", .names = norm_names,
     .help = "Where layer normalisation sits: `pre` normalises the input of "
             "each sublayer (and the stack output), `post` normalises after "
             "each residual addition, as in the original Transformer."},
    {.key = "model.layer_norm_eps", .type = S2S_CFG_FLOAT,
     FIELD(model.layer_norm_eps), .def = "1e-5",
     .bounds = S2S_CFG_MIN | S2S_CFG_MIN_EXCL, .min = 0,
     .help = "Epsilon added to the variance in layer normalisation."},
    {.key = "model.dropout", .type = S2S_CFG_FLOAT, FIELD(model.dropout),
     .def = "0.1", .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL,
     .min = 0, .max = 1, .flags = S2S_CFG_NOT_ARCH,
     .help = "Dropout probability; used in training only."},
    {.key = "model.attention_dropout", .type = S2S_CFG_FLOAT,
     FIELD(model.attention_dropout), .def = "0.0",
     .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL, .min = 0, .max = 1,
     .flags = S2S_CFG_NOT_ARCH,
     .help = "Dropout probability on the attention weights (after the "
             "softmax); used in training only."},
    {.key = "model.tie_output", .type = S2S_CFG_BOOL, FIELD(model.tie_output),
     .def = "true",
     .help = "Compute the output logits with the target embedding matrix "
             "(`tgt_embed.weight`) instead of a separate projection."},
    {.key = "model.max_len", .type = S2S_CFG_INT, FIELD(model.max_len),
     .def = "256", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Longest sequence the model handles; positions run from 0 to "
             "`max_len - 1`."},
    {.key = "vocab.src", .type = S2S_CFG_PATH, FIELD(vocab.src), .def = "",
     .help = "Source-language vocabulary file."},
    {.key = "vocab.tgt", .type = S2S_CFG_PATH, FIELD(vocab.tgt), .def = "",
     .help = "Target-language vocabulary file."},
    {.key = "decode.max_len", .type = S2S_CFG_INT, FIELD(decode.max_len),
     .def = "128", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Most target tokens generated per sentence, `</s>` included."},
    {.key = "decode.beam_size", .type = S2S_CFG_INT, FIELD(decode.beam_size),
     .def = "1", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Beam width; 1 decodes greedily."},
    {.key = "decode.n_best", .type = S2S_CFG_INT, FIELD(decode.n_best),
     .def = "1", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Hypotheses returned per sentence, best first; at most "
             "`beam_size` (`s2s translate --n-best` raises the beam to match)."},
    {.key = "decode.length_penalty", .type = S2S_CFG_FLOAT, FIELD(decode.length_penalty),
     .def = "1.0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Beam hypotheses are ranked by `logprob / length^length_penalty` "
             "(length counts `</s>`), as in CTranslate2 and fairseq; 0 ranks by "
             "log-probability alone."},
    {.key = "decode.min_len", .type = S2S_CFG_INT, FIELD(decode.min_len),
     .def = "0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "`</s>` is not produced before this many tokens (CTranslate2's "
             "`min_decoding_length`)."},
    {.key = "decode.max_len_ratio", .type = S2S_CFG_FLOAT, FIELD(decode.max_len_ratio),
     .def = "0.0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "When above 0, a sentence of n source tokens gets at most "
             "`ceil(max_len_ratio * n) + 1` tokens (and never more than `max_len`)."},
    {.key = "decode.sampling_topk", .type = S2S_CFG_INT, FIELD(decode.sampling_topk),
     .def = "1", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "With `beam_size: 1`: 1 decodes greedily, 0 samples from the "
             "whole distribution, k > 1 from the k most likely tokens."},
    {.key = "decode.sampling_topp", .type = S2S_CFG_FLOAT, FIELD(decode.sampling_topp),
     .def = "1.0", .bounds = S2S_CFG_MIN | S2S_CFG_MIN_EXCL | S2S_CFG_MAX, .min = 0, .max = 1,
     .help = "Sampling keeps the smallest set of most likely tokens holding "
             "this much probability (nucleus sampling); 1 keeps all."},
    {.key = "decode.temperature", .type = S2S_CFG_FLOAT, FIELD(decode.temperature),
     .def = "1.0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Sampling temperature; 0 decodes greedily."},
    {.key = "decode.seed", .type = S2S_CFG_INT, FIELD(decode.seed),
     .def = "0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Sampling seed: the same seed gives the same samples; each "
             "sentence draws from a stream of the seed and its tokens."},
    {.key = "data.train", .type = S2S_CFG_PATH, FIELD(data.train), .def = "",
     .help = "Training pairs. A line without a tab, invalid UTF-8 or a side "
             "longer than `model.max_len - 1` tokens is an error naming the "
             "file and line."},
    {.key = "data.dev", .type = S2S_CFG_PATH, FIELD(data.dev), .def = "",
     .help = "Validation pairs; unset: no validation, no best model, no "
             "early stopping."},
    {.key = "train.lr", .type = S2S_CFG_FLOAT, FIELD(train.lr), .def = "0.0005",
     .bounds = S2S_CFG_MIN | S2S_CFG_MIN_EXCL, .min = 0,
     .help = "Peak learning rate (for `noam`, the factor in front of "
             "`d_model^-0.5 * min(t^-0.5, t * warmup^-1.5)`)."},
    {.key = "train.schedule", .type = S2S_CFG_ENUM, FIELD(train.schedule),
     .def = "inverse_sqrt", .names = schedule_names,
     .help = "Learning rate at step t (from 1): `constant`; `noam`; "
             "`inverse_sqrt`: linear warmup to `lr`, then `lr * sqrt(warmup / t)`; "
             "`cosine`: linear warmup, then a half cosine down to 0 at "
             "`train.max_steps`."},
    {.key = "train.warmup_steps", .type = S2S_CFG_INT, FIELD(train.warmup_steps),
     .def = "4000", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Steps of linear warmup (0: none)."},
    {.key = "train.batch_tokens", .type = S2S_CFG_INT, FIELD(train.batch_tokens),
     .def = "4096", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Tokens per batch, counted as sentences x (padded source length "
             "+ padded target length), `</s>` and `<s>` included; a longer "
             "sentence gets a batch of its own."},
    {.key = "train.seed", .type = S2S_CFG_INT, FIELD(train.seed), .def = "1",
     .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Seed of the initial weights (without `--init`), the data order "
             "and the dropout masks."},
    {.key = "train.shuffle", .type = S2S_CFG_BOOL, FIELD(train.shuffle), .def = "true",
     .help = "Bucket sentences by length and shuffle the batches every epoch; "
             "`false` keeps the file order."},
    {.key = "train.max_steps", .type = S2S_CFG_INT, FIELD(train.max_steps),
     .def = "100000", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Updates to make (a resumed run counts the steps already made)."},
    {.key = "train.valid_every", .type = S2S_CFG_INT, FIELD(train.valid_every),
     .def = "1000", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Validate on `data.dev` every this many steps (0: never): loss, "
             "token accuracy, BLEU and exact match of greedy translations."},
    {.key = "train.save_every", .type = S2S_CFG_INT, FIELD(train.save_every),
     .def = "1000", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Write a checkpoint every this many steps (0: only at the end)."},
    {.key = "train.patience", .type = S2S_CFG_INT, FIELD(train.patience), .def = "0",
     .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Stop after this many validations without a better "
             "`train.best_metric` (0: never stop early)."},
    {.key = "train.label_smoothing", .type = S2S_CFG_FLOAT,
     FIELD(train.label_smoothing), .def = "0.1",
     .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL, .min = 0, .max = 1,
     .help = "Label smoothing eps: the loss is `(1-eps) * -log p[gold] + eps * "
             "mean over the vocabulary of -log p[v]`, as PyTorch's "
             "`CrossEntropyLoss(label_smoothing=eps)`."},
    {.key = "train.adam_betas", .type = S2S_CFG_FLOAT_PAIR, FIELD(train.adam_betas),
     .def = "[0.9, 0.98]", .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL,
     .min = 0, .max = 1,
     .help = "Adam's beta1 and beta2."},
    {.key = "train.adam_eps", .type = S2S_CFG_FLOAT, FIELD(train.adam_eps), .def = "1e-9",
     .bounds = S2S_CFG_MIN | S2S_CFG_MIN_EXCL, .min = 0,
     .help = "Adam's epsilon."},
    {.key = "train.weight_decay", .type = S2S_CFG_FLOAT, FIELD(train.weight_decay),
     .def = "0.0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Decoupled weight decay (AdamW: `p -= lr * weight_decay * p` "
             "each step); 0: plain Adam."},
    {.key = "train.clip_norm", .type = S2S_CFG_FLOAT, FIELD(train.clip_norm), .def = "0.0",
     .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Clip the global gradient norm to this (0: no clipping)."},
    {.key = "train.log", .type = S2S_CFG_STRING, FIELD(train.log), .def = "",
     .flags = S2S_CFG_OUTPUT,
     .help = "JSON-lines log, one object per step (`step`, `loss`, `lr`, "
             "`tokens`, `grad_norm`, and `valid` on validation steps), appended "
             "run after run; unset, or with `-o`: `BASE.train.log` beside the "
             "output. Relative to the config file's folder, and must stay in "
             "it unless `--allow-outside`."},
    {.key = "train.best_metric", .type = S2S_CFG_ENUM, FIELD(train.best_metric),
     .def = "bleu", .names = best_metric_names,
     .help = "Validation score that picks the best model "
             "(`OUT.best.safetensors`) and drives early stopping; `loss` is "
             "better when lower."},
    {.key = "train.output", .type = S2S_CFG_STRING, FIELD(train.output), .def = "",
     .flags = S2S_CFG_OUTPUT,
     .help = "Model file `s2s train` writes (`-o` overrides); the checkpoint "
             "(`BASE.ckpt.safetensors`) goes beside it. Relative to the config "
             "file's folder, and must stay in it unless `--allow-outside`."},
    {.key = "train.guided_alignment", .type = S2S_CFG_GUIDED,
     FIELD(train.guided_alignment), .def = "{layer: -1, head: 0, weight: 0.1}",
     .help = "Guided alignment, as in Marian: with `layer` >= 0, head `head` of "
             "decoder layer `layer`'s cross-attention (both from 0) is pulled "
             "towards the gold alignments of the TSV's third column (Pharaoh "
             "`i-j`, source token i, target token j, from 0; `ipj` counts as a "
             "link too) by adding `weight * -sum A log(P + 1e-6) / rows` to the "
             "loss, where A holds each target token's links normalised to sum "
             "to 1, P that head's attention weights and `rows` the target tokens "
             "with links in the batch (unaligned tokens and `</s>` are not "
             "guided). `layer: -1` turns it off and the third column is not "
             "read. Written as a mapping; fields left out keep their values, "
             "and `--set train.guided_alignment.layer=1` sets one field."},
};
const int s2s_cfg_n_keys = (int)(sizeof s2s_cfg_keys / sizeof s2s_cfg_keys[0]);

// S2S_CFG_GUIDED: the fields of s2s_guided_alignment in printed order.
static const char *const guided_fields[] = {"layer", "head", "weight", NULL};

// ---- growable string ----

void s2s_cfg_quote(s2s_buf *b, const char *s, size_t n, size_t max) {
    bool cut = n > max;
    if (cut) {
        n = max;
        // Do not split a UTF-8 character.
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
    }
    s2s_buf_puts(b, "'");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char ch = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
        s2s_buf_append(b, &ch, 1);
    }
    s2s_buf_puts(b, cut ? "...'" : "'");
}

// ---- lookups ----

int s2s_cfg_find_section(const char *name, size_t n) {
    for (int i = 0; i < s2s_cfg_n_sections; i++) {
        const char *s = s2s_cfg_sections[i].name;
        if (strlen(s) == n && memcmp(s, name, n) == 0) return i;
    }
    return -1;
}

static size_t section_len(const s2s_cfg_key *k) {
    const char *dot = strchr(k->key, '.');
    S2S_ASSERT(dot != NULL);
    return (size_t)(dot - k->key);
}

int s2s_cfg_key_section(const s2s_cfg_key *k) {
    int s = s2s_cfg_find_section(k->key, section_len(k));
    S2S_ASSERT(s >= 0);
    return s;
}

const char *s2s_cfg_key_name(const s2s_cfg_key *k) {
    return k->key + section_len(k) + 1;
}

int s2s_cfg_find_key(int section, const char *name, size_t n) {
    for (int i = 0; i < s2s_cfg_n_keys; i++) {
        const s2s_cfg_key *k = &s2s_cfg_keys[i];
        if (s2s_cfg_key_section(k) != section) continue;
        const char *kn = s2s_cfg_key_name(k);
        if (strlen(kn) == n && memcmp(kn, name, n) == 0) return i;
    }
    return -1;
}

// Optimal string alignment distance (Levenshtein plus adjacent swaps, so
// "hedas" is one edit from "heads"). b is a short schema name.
static int edit_distance(const char *a, size_t n, const char *b, size_t m) {
    enum { MAXLEN = 64 };
    if (m >= MAXLEN) return INT_MAX;
    int rows[3][MAXLEN + 1];
    int *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= m; j++) prev[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        cur[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int d = prev[j] + 1;
            if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
            if (prev[j - 1] + cost < d) d = prev[j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < d)
                d = prev2[j - 2] + 1;
            cur[j] = d;
        }
        int *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[m];
}

static void consider(const char *name, size_t n, const char *cand,
                     const char **best, int *best_d) {
    size_t m = strlen(cand);
    int limit = 1 + (int)m / 4;
    if (limit > 3) limit = 3;
    // Skips huge names cheaply: they cannot be within `limit` edits.
    if ((n > m ? n - m : m - n) > (size_t)limit) return;
    int d = edit_distance(name, n, cand, m);
    if (d <= limit && d < (int)m && d < *best_d) {
        *best = cand;
        *best_d = d;
    }
}

const char *s2s_cfg_suggest(int section, const char *name, size_t n) {
    const char *best = NULL;
    int best_d = INT_MAX;
    if (section < 0) {
        for (int i = 0; i < s2s_cfg_n_sections; i++)
            consider(name, n, s2s_cfg_sections[i].name, &best, &best_d);
    } else {
        for (int i = 0; i < s2s_cfg_n_keys; i++)
            if (s2s_cfg_key_section(&s2s_cfg_keys[i]) == section)
                consider(name, n, s2s_cfg_key_name(&s2s_cfg_keys[i]), &best, &best_d);
    }
    return best;
}

// ---- values ----

void *s2s_cfg_field(s2s_config *cfg, const s2s_cfg_key *k) {
    return (char *)cfg + k->offset;
}

const void *s2s_cfg_field_const(const s2s_config *cfg, const s2s_cfg_key *k) {
    return (const char *)cfg + k->offset;
}

void s2s_cfg_describe_type(s2s_buf *b, const s2s_cfg_key *k) {
    switch (k->type) {
    case S2S_CFG_INT: s2s_buf_puts(b, "an integer"); break;
    case S2S_CFG_FLOAT: s2s_buf_puts(b, "a number"); break;
    case S2S_CFG_BOOL: s2s_buf_puts(b, "true or false"); break;
    case S2S_CFG_ENUM: {
        int n = 0;
        while (k->names[n]) n++;
        for (int i = 0; i < n; i++)
            s2s_buf_printf(b, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
                               k->names[i]);
        break;
    }
    case S2S_CFG_PATH: s2s_buf_puts(b, "a path"); break;
    case S2S_CFG_STRING: s2s_buf_puts(b, "a string"); break;
    case S2S_CFG_FLOAT_PAIR: s2s_buf_puts(b, "a list of two numbers"); break;
    case S2S_CFG_GUIDED:
        s2s_buf_puts(b, "a mapping such as {layer: 1, head: 0, weight: 0.1}");
        break;
    default: S2S_ASSERT(0);
    }
}

// ">= 1", "> 0", ">= 0 and < 1"; nothing when unbounded.
static void describe_bounds(s2s_buf *b, const s2s_cfg_key *k) {
    if (k->bounds & S2S_CFG_MIN)
        s2s_buf_printf(b, "%s %g", (k->bounds & S2S_CFG_MIN_EXCL) ? ">" : ">=", k->min);
    if ((k->bounds & S2S_CFG_MIN) && (k->bounds & S2S_CFG_MAX))
        s2s_buf_puts(b, " and ");
    if (k->bounds & S2S_CFG_MAX)
        s2s_buf_printf(b, "%s %g", (k->bounds & S2S_CFG_MAX_EXCL) ? "<" : "<=", k->max);
}

static bool in_bounds(const s2s_cfg_key *k, double v) {
    if (k->bounds & S2S_CFG_MIN) {
        if ((k->bounds & S2S_CFG_MIN_EXCL) ? !(v > k->min) : !(v >= k->min)) return false;
    }
    if (k->bounds & S2S_CFG_MAX) {
        if ((k->bounds & S2S_CFG_MAX_EXCL) ? !(v < k->max) : !(v <= k->max)) return false;
    }
    return true;
}

static bool type_error(const s2s_cfg_key *k, const char *text, bool quoted,
                       s2s_buf *why) {
    s2s_buf_puts(why, "expected ");
    s2s_cfg_describe_type(why, k);
    s2s_buf_puts(why, quoted ? ", got the quoted string " : ", got ");
    s2s_cfg_quote(why, text, strlen(text), 60);
    return false;
}

static bool range_error(const s2s_cfg_key *k, const char *shown, s2s_buf *why) {
    s2s_buf_append(why, shown, strlen(shown) > 60 ? 60 : strlen(shown));
    s2s_buf_puts(why, " is out of range; must be ");
    describe_bounds(why, k);
    if (k->type == S2S_CFG_FLOAT_PAIR) s2s_buf_puts(why, ", each");
    return false;
}

// Plain decimal numbers only: strtol/strtof would also take leading blanks,
// hex, "inf" and "nan", none of which a config should contain.
static bool is_decimal_int(const char *s) {
    if (*s == '+' || *s == '-') s++;
    if (!*s) return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return false;
    return true;
}

static bool is_decimal_float(const char *s) {
    bool digits = false;
    if (*s == '+' || *s == '-') s++;
    for (; *s >= '0' && *s <= '9'; s++) digits = true;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++) digits = true;
    if (!digits) return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-') s++;
        if (!(*s >= '0' && *s <= '9')) return false;
        while (*s >= '0' && *s <= '9') s++;
    }
    return *s == '\0';
}

// "[a, b]" or "a, b" (the loader turns a YAML sequence into the first;
// --set may give either), each a plain decimal number.
static bool parse_pair(const char *text, float v[2]) {
    size_t n = strlen(text);
    const char *s = text, *end = text + n;
    while (s < end && *s == ' ') s++;
    while (end > s && end[-1] == ' ') end--;
    if (s < end && *s == '[') {
        if (end[-1] != ']') return false;
        s++;
        end--;
    }
    for (int i = 0; i < 2; i++) {
        const char *stop = i == 0 ? memchr(s, ',', (size_t)(end - s)) : end;
        if (!stop) return false;
        const char *a = s, *b = stop;
        while (a < b && *a == ' ') a++;
        while (b > a && b[-1] == ' ') b--;
        char num[64];
        if (b - a <= 0 || b - a >= (ptrdiff_t)sizeof num) return false;
        memcpy(num, a, (size_t)(b - a));
        num[b - a] = '\0';
        if (!is_decimal_float(num)) return false;
        v[i] = strtof(num, NULL);
        s = stop + 1;
    }
    return true;
}

// ---- mapping-valued keys (S2S_CFG_GUIDED) ----

const char *const *s2s_cfg_field_names(const s2s_cfg_key *k) {
    return k->type == S2S_CFG_GUIDED ? guided_fields : NULL;
}

// The lower bound of each field: layer -1 (off), head 0, weight 0.
static const int guided_min[] = {-1, 0, 0};

// Appends why a stored s2s_guided_alignment is out of range; true if it is not.
static bool check_guided(const s2s_guided_alignment *g, s2s_buf *why) {
    if (g->layer < guided_min[0]) {
        s2s_buf_printf(why, "layer %d is out of range; must be >= %d", g->layer, guided_min[0]);
        return false;
    }
    if (g->head < guided_min[1]) {
        s2s_buf_printf(why, "head %d is out of range; must be >= %d", g->head, guided_min[1]);
        return false;
    }
    if (!isfinite(g->weight) || !(g->weight >= 0.0f)) {
        s2s_buf_printf(why, "weight %g is out of range; must be >= 0", (double)g->weight);
        return false;
    }
    return true;
}

int s2s_cfg_parse_field(const s2s_cfg_key *k, const char *name, size_t n, const char *text,
                        void *field, s2s_buf *why) {
    S2S_ASSERT(k->type == S2S_CFG_GUIDED);
    int f = -1;
    for (int i = 0; guided_fields[i]; i++)
        if (strlen(guided_fields[i]) == n && memcmp(guided_fields[i], name, n) == 0) f = i;
    if (f < 0) {
        s2s_buf_puts(why, "unknown field ");
        s2s_cfg_quote(why, name, n, 60);
        s2s_buf_puts(why, " (expected layer, head or weight");
        const char *best = NULL;
        int best_d = INT_MAX;
        for (int i = 0; guided_fields[i]; i++) consider(name, n, guided_fields[i], &best, &best_d);
        if (best) s2s_buf_printf(why, "; did you mean '%s'?", best);
        s2s_buf_puts(why, ")");
        return -1;
    }
    s2s_guided_alignment *g = field;
    if (f < 2) {
        long long v = 0;
        bool ok = is_decimal_int(text);
        if (ok) {
            errno = 0;
            v = strtoll(text, NULL, 10);
            ok = errno != ERANGE && v >= INT_MIN && v <= INT_MAX;
        }
        if (!ok) {
            s2s_buf_printf(why, "%s must be an integer, got ", guided_fields[f]);
            s2s_cfg_quote(why, text, strlen(text), 60);
            return -1;
        }
        if (v < guided_min[f]) {
            s2s_buf_printf(why, "%s %lld is out of range; must be >= %d%s", guided_fields[f],
                               v, guided_min[f], f == 0 ? " (-1: off)" : "");
            return -1;
        }
        if (f == 0) g->layer = (int)v;
        else g->head = (int)v;
        return f;
    }
    float v = is_decimal_float(text) ? strtof(text, NULL) : NAN;
    if (!isfinite(v)) {
        s2s_buf_puts(why, "weight must be a number, got ");
        s2s_cfg_quote(why, text, strlen(text), 60);
        return -1;
    }
    if (!(v >= 0.0f)) {
        s2s_buf_puts(why, "weight ");
        s2s_buf_append(why, text, strlen(text) > 60 ? 60 : strlen(text));
        s2s_buf_puts(why, " is out of range; must be >= 0");
        return -1;
    }
    g->weight = v;
    return f;
}

// "{layer: 1, head: 0, weight: 0.5}" (the braces may be left out, as may
// fields: those keep the value already in field). The loader hands YAML
// mappings over field by field instead, to report each at its position;
// this text form is what --set and the schema defaults give. Nothing is
// stored unless every field parses.
static bool parse_guided(const s2s_cfg_key *k, const char *text, bool quoted, void *field,
                         s2s_buf *why) {
    if (quoted) return type_error(k, text, quoted, why);
    s2s_guided_alignment v;
    memcpy(&v, field, sizeof v);
    const char *s = text, *end = text + strlen(text);
    while (s < end && *s == ' ') s++;
    while (end > s && end[-1] == ' ') end--;
    bool braces = s < end && *s == '{';
    if (braces) {
        if (end - s < 2 || end[-1] != '}') return type_error(k, text, quoted, why);
        s++;
        end--;
        while (s < end && *s == ' ') s++;
        while (end > s && end[-1] == ' ') end--;
        if (s == end) return true;  // {}: nothing changes
    } else if (s == end) {
        return type_error(k, text, quoted, why);
    }
    bool seen[3] = {false};
    for (;;) {
        const char *stop = memchr(s, ',', (size_t)(end - s));
        if (!stop) stop = end;
        const char *colon = memchr(s, ':', (size_t)(stop - s));
        if (!colon) return type_error(k, text, quoted, why);
        const char *na = s, *nb = colon, *va = colon + 1, *vb = stop;
        while (na < nb && *na == ' ') na++;
        while (nb > na && nb[-1] == ' ') nb--;
        while (va < vb && *va == ' ') va++;
        while (vb > va && vb[-1] == ' ') vb--;
        char *num = malloc((size_t)(vb - va) + 1);
        if (!num) {
            why->oom = true;
            return false;
        }
        memcpy(num, va, (size_t)(vb - va));
        num[vb - va] = '\0';
        int f = s2s_cfg_parse_field(k, na, (size_t)(nb - na), num, &v, why);
        free(num);
        if (f < 0) return false;
        if (seen[f]) {
            s2s_buf_printf(why, "%s given twice", guided_fields[f]);
            return false;
        }
        seen[f] = true;
        if (stop == end) break;
        s = stop + 1;
    }
    memcpy(field, &v, sizeof v);
    return true;
}

bool s2s_cfg_parse_value(const s2s_cfg_key *k, const char *text, bool quoted,
                         void *field, s2s_buf *why) {
    switch (k->type) {
    case S2S_CFG_INT: {
        if (quoted || !is_decimal_int(text)) return type_error(k, text, quoted, why);
        errno = 0;
        long long v = strtoll(text, NULL, 10);
        if (errno == ERANGE || v < INT_MIN || v > INT_MAX) {
            s2s_buf_append(why, text, strlen(text) > 60 ? 60 : strlen(text));
            s2s_buf_puts(why, " does not fit in an int");
            return false;
        }
        if (!in_bounds(k, (double)v)) return range_error(k, text, why);
        *(int *)field = (int)v;
        return true;
    }
    case S2S_CFG_FLOAT: {
        if (quoted || !is_decimal_float(text)) return type_error(k, text, quoted, why);
        // strtof, not strtod then a cast: rounding twice can miss the float
        // that s2s_cfg_format_value printed, breaking the round trip.
        float v = strtof(text, NULL);
        if (!isfinite(v)) {
            s2s_buf_append(why, text, strlen(text) > 60 ? 60 : strlen(text));
            s2s_buf_puts(why, " does not fit in a float");
            return false;
        }
        if (!in_bounds(k, v)) return range_error(k, text, why);
        *(float *)field = v;
        return true;
    }
    case S2S_CFG_BOOL: {
        static const char *const yes[] = {"true", "True", "TRUE"};
        static const char *const no[] = {"false", "False", "FALSE"};
        if (!quoted)
            for (int i = 0; i < 3; i++) {
                if (strcmp(text, yes[i]) == 0) { *(bool *)field = true; return true; }
                if (strcmp(text, no[i]) == 0) { *(bool *)field = false; return true; }
            }
        return type_error(k, text, quoted, why);
    }
    case S2S_CFG_ENUM:
        for (int i = 0; k->names[i]; i++)
            if (strcmp(text, k->names[i]) == 0) {
                *(int *)field = i;
                return true;
            }
        return type_error(k, text, false, why);
    case S2S_CFG_PATH:
    case S2S_CFG_STRING: {
        size_t n = strlen(text);
        if (n >= k->size) {
            s2s_buf_printf(why, "%s is longer than %zu bytes",
                               k->type == S2S_CFG_PATH ? "path" : "string", k->size - 1);
            return false;
        }
        memcpy(field, text, n + 1);
        return true;
    }
    case S2S_CFG_GUIDED: return parse_guided(k, text, quoted, field, why);
    case S2S_CFG_FLOAT_PAIR: {
        float v[2];
        if (quoted || !parse_pair(text, v)) return type_error(k, text, quoted, why);
        for (int i = 0; i < 2; i++)
            if (!isfinite(v[i]) || !in_bounds(k, v[i])) return range_error(k, text, why);
        memcpy(field, v, sizeof v);
        return true;
    }
    default: S2S_ASSERT(0);
    }
    return false;
}

bool s2s_cfg_check_value(const s2s_cfg_key *k, const void *field, s2s_buf *why) {
    switch (k->type) {
    case S2S_CFG_INT: {
        int v = *(const int *)field;
        if (in_bounds(k, v)) return true;
        char shown[32];
        snprintf(shown, sizeof shown, "%d", v);
        return range_error(k, shown, why);
    }
    case S2S_CFG_FLOAT: {
        float v = *(const float *)field;
        if (isfinite(v) && in_bounds(k, v)) return true;
        s2s_buf shown = {0};
        s2s_cfg_format_value(&shown, k, field);
        if (!isfinite(v) && !k->bounds) {
            s2s_buf_printf(why, "%s is not a finite number", shown.s ? shown.s : "?");
            s2s_buf_free(&shown);
            return false;
        }
        range_error(k, shown.s ? shown.s : "?", why);
        s2s_buf_free(&shown);
        return false;
    }
    case S2S_CFG_BOOL: {
        // Read the byte, not the bool: a stray value in a bool is undefined.
        unsigned char c;
        memcpy(&c, field, 1);
        if (c <= 1) return true;
        s2s_buf_printf(why, "%u is not a valid bool", (unsigned)c);
        return false;
    }
    case S2S_CFG_ENUM: {
        int v = *(const int *)field, n = 0;
        while (k->names[n]) n++;
        if (v >= 0 && v < n) return true;
        s2s_buf_printf(why, "%d is not a valid value (expected ", v);
        s2s_cfg_describe_type(why, k);
        s2s_buf_puts(why, ")");
        return false;
    }
    case S2S_CFG_PATH:
    case S2S_CFG_STRING:
        if (memchr(field, '\0', k->size)) return true;
        s2s_buf_puts(why, "is not NUL-terminated");
        return false;
    case S2S_CFG_GUIDED: {
        s2s_guided_alignment g;
        memcpy(&g, field, sizeof g);
        return check_guided(&g, why);
    }
    case S2S_CFG_FLOAT_PAIR: {
        float v[2];
        memcpy(v, field, sizeof v);
        if (isfinite(v[0]) && isfinite(v[1]) && in_bounds(k, v[0]) && in_bounds(k, v[1]))
            return true;
        s2s_buf shown = {0};
        s2s_cfg_format_value(&shown, k, field);
        range_error(k, shown.s ? shown.s : "?", why);
        s2s_buf_free(&shown);
        return false;
    }
    default: S2S_ASSERT(0);
    }
    return false;
}

// A double-quoted YAML scalar, so paths with ': ', '#', quotes or leading
// blanks read back unchanged.
static void format_quoted(s2s_buf *b, const char *s) {
    s2s_buf_puts(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') s2s_buf_printf(b, "\\%c", c);
        else if (c == '\n') s2s_buf_puts(b, "\\n");
        else if (c == '\t') s2s_buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f) s2s_buf_printf(b, "\\x%02x", c);
        else s2s_buf_append(b, s, 1);
    }
    s2s_buf_puts(b, "\"");
}

// The shortest %g text that reads back (through strtof) as the same float,
// written with a '.' so that YAML 1.1 readers such as PyYAML see a float.
static void format_float(s2s_buf *b, float v) {
    if (isnan(v)) { s2s_buf_puts(b, ".nan"); return; }
    if (isinf(v)) { s2s_buf_puts(b, v < 0 ? "-.inf" : ".inf"); return; }
    char text[48];
    for (int prec = 6; prec <= 9; prec++) {
        snprintf(text, sizeof text, "%.*g", prec, (double)v);
        float back = strtof(text, NULL);
        if (memcmp(&back, &v, sizeof v) == 0) break;
    }
    char *e = strchr(text, 'e');
    if (!strchr(text, '.')) {
        char out[56];
        if (e) snprintf(out, sizeof out, "%.*s.0%s", (int)(e - text), text, e);
        else snprintf(out, sizeof out, "%s.0", text);
        s2s_buf_puts(b, out);
        return;
    }
    s2s_buf_puts(b, text);
}

void s2s_cfg_format_value(s2s_buf *b, const s2s_cfg_key *k, const void *field) {
    switch (k->type) {
    case S2S_CFG_INT: s2s_buf_printf(b, "%d", *(const int *)field); break;
    case S2S_CFG_FLOAT: format_float(b, *(const float *)field); break;
    case S2S_CFG_BOOL: {
        unsigned char c;
        memcpy(&c, field, 1);
        s2s_buf_puts(b, c ? "true" : "false");
        break;
    }
    case S2S_CFG_ENUM: {
        int v = *(const int *)field, n = 0;
        while (k->names[n]) n++;
        if (v >= 0 && v < n) s2s_buf_puts(b, k->names[v]);
        else s2s_buf_printf(b, "%d", v);  // invalid; validation says so
        break;
    }
    case S2S_CFG_PATH:
    case S2S_CFG_STRING: {
        // Bounded, in case the field lacks its NUL (validation reports it).
        const char *s = field;
        size_t n = strnlen(s, k->size);
        if (n == k->size) { format_quoted(b, ""); break; }
        format_quoted(b, s);
        break;
    }
    case S2S_CFG_FLOAT_PAIR: {
        float v[2];
        memcpy(v, field, sizeof v);
        s2s_buf_puts(b, "[");
        format_float(b, v[0]);
        s2s_buf_puts(b, ", ");
        format_float(b, v[1]);
        s2s_buf_puts(b, "]");
        break;
    }
    case S2S_CFG_GUIDED: {
        s2s_guided_alignment g;
        memcpy(&g, field, sizeof g);
        s2s_buf_printf(b, "{layer: %d, head: %d, weight: ", g.layer, g.head);
        format_float(b, g.weight);
        s2s_buf_puts(b, "}");
        break;
    }
    default: S2S_ASSERT(0);
    }
}

bool s2s_cfg_value_equal(const s2s_cfg_key *k, const void *a, const void *b) {
    switch (k->type) {
    case S2S_CFG_INT:
    case S2S_CFG_ENUM: return *(const int *)a == *(const int *)b;
    case S2S_CFG_FLOAT: return memcmp(a, b, sizeof(float)) == 0;
    case S2S_CFG_BOOL: return memcmp(a, b, 1) == 0;
    case S2S_CFG_PATH:
    case S2S_CFG_STRING: return strncmp(a, b, k->size) == 0;
    case S2S_CFG_FLOAT_PAIR: return memcmp(a, b, 2 * sizeof(float)) == 0;
    case S2S_CFG_GUIDED: {
        s2s_guided_alignment x, y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        return x.layer == y.layer && x.head == y.head &&
               memcmp(&x.weight, &y.weight, sizeof x.weight) == 0;
    }
    default: S2S_ASSERT(0);
    }
    return false;
}

// ---- documentation ----

static const char *type_name(s2s_cfg_type t) {
    static const char *const names[S2S_CFG_TYPE_COUNT] = {
        [S2S_CFG_INT] = "int",    [S2S_CFG_FLOAT] = "float",
        [S2S_CFG_BOOL] = "bool",  [S2S_CFG_ENUM] = "enum",
        [S2S_CFG_PATH] = "path",  [S2S_CFG_STRING] = "string",
        [S2S_CFG_FLOAT_PAIR] = "[float, float]",
        [S2S_CFG_GUIDED] = "{layer, head, weight}",
    };
    return names[t];
}

char *s2s_config_reference_md(void) {
    s2s_buf b = {0};
    s2s_buf_puts(
        &b,
        "# Configuration reference\n"
        "\n"
        "<!-- Generated by s2s_config_reference_md() from the schema in "
        "src/config/schema.c.\n"
        "     Do not edit by hand; tests/test_config.c checks that it is up to "
        "date. -->\n"
        "\n"
        "An s2s config is a YAML file whose top level is a mapping of sections; "
        "each\n"
        "section is a mapping of keys. Every key is optional: a key left out "
        "keeps its\n"
        "default. Any key can also be set on the command line with\n"
        "`--set section.key=value`. `s2s config show` prints the effective "
        "config,\n"
        "marking values equal to their default with `# default`.\n"
        "\n"
        "A config can build on another: a top-level `base: other.yaml` (a path "
        "relative\n"
        "to the file that names it) is read first, and every key of the file "
        "overrides\n"
        "it. Bases can chain, but not in a cycle. `--set` overrides come last, "
        "so the\n"
        "precedence is base < file < `--set`. `s2s config diff A B` lists the "
        "keys whose\n"
        "effective values differ.\n"
        "\n"
        "Problems are reported as `file:line:col: message`, followed by the "
        "source\n"
        "line and a caret under the column; all problems in a file are "
        "reported at\n"
        "once. Unknown keys are errors (with a suggestion when the name is "
        "close to a\n"
        "known one), as are values of the wrong type, values out of range and "
        "keys\n"
        "given twice.\n"
        "\n"
        "```yaml\n"
        "base: small.yaml   # optional: start from another config\n"
        "model:\n"
        "  d_model: 256\n"
        "  heads: 4\n"
        "vocab:\n"
        "  src: vocab/zh.txt\n"
        "  tgt: vocab/en.txt\n"
        "```\n");
    for (int s = 0; s < s2s_cfg_n_sections; s++) {
        s2s_buf_printf(&b, "\n## `%s`\n\n%s\n\n", s2s_cfg_sections[s].name,
                           s2s_cfg_sections[s].help);
        s2s_buf_puts(&b, "| Key | Type | Default | Allowed | Description |\n"
                             "|-----|------|---------|---------|-------------|\n");
        for (int i = 0; i < s2s_cfg_n_keys; i++) {
            const s2s_cfg_key *k = &s2s_cfg_keys[i];
            if (s2s_cfg_key_section(k) != s) continue;
            s2s_buf_printf(&b, "| `%s` | %s | ", k->key, type_name(k->type));
            if (k->def[0]) s2s_buf_printf(&b, "`%s`", k->def);
            else s2s_buf_puts(&b, "unset");
            s2s_buf_puts(&b, " | ");
            switch (k->type) {
            case S2S_CFG_ENUM:
                for (int j = 0; k->names[j]; j++)
                    s2s_buf_printf(&b, "%s`%s`", j ? ", " : "", k->names[j]);
                break;
            case S2S_CFG_BOOL: s2s_buf_puts(&b, "`true`, `false`"); break;
            case S2S_CFG_PATH: s2s_buf_puts(&b, "an existing file"); break;
            case S2S_CFG_GUIDED:
                s2s_buf_puts(&b, "`layer` >= -1, `head` >= 0, `weight` >= 0");
                break;
            default:
                if (k->bounds) describe_bounds(&b, k);
                else s2s_buf_puts(&b, "any");
                if (k->type == S2S_CFG_FLOAT_PAIR) s2s_buf_puts(&b, ", each");
            }
            s2s_buf_printf(&b, " | %s |\n", k->help);
        }
    }
    s2s_buf_puts(
        &b,
        "\n## Checks across keys\n"
        "\n"
        "Once every key is read (after the `--set` overrides, too), the config "
        "must also satisfy:\n"
        "\n"
        "- `model.d_model` is even: sinusoidal positions fill the embedding "
        "in sin/cos pairs.\n"
        "- `model.d_model` is divisible by `model.heads`: each head gets "
        "`d_model / heads` dimensions.\n"
        "- `train.guided_alignment`: when `layer` is not -1, `layer` < "
        "`model.decoder_layers` and `head` < `model.heads`.\n");
    return s2s_buf_take(&b);
}
