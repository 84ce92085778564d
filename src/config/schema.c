// The config schema: the nested key tables, their lookups and the list of
// leaves built from them, and the cross-field rules that validation and
// docs/config.md both read. The value operations are in values.c.
#include "config/schema.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "config/arch.h"
#include "core/error.h"
#include "s2s/s2s.h"
#include "config/command.h"
#include "core/util.h"

// ENUM fields are written through an int pointer.
_Static_assert(sizeof(s2s_norm) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_activation) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_schedule) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_best_metric) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_attn_type) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_checkpointing) == sizeof(int), "enum fields must be int-sized");
_Static_assert(sizeof(s2s_train_compute) == sizeof(int), "enum fields must be int-sized");

// A field of struct T: its offset and size.
#define FIELD(T, f) .offset = offsetof(T, f), .size = sizeof(((T *)0)->f)
#define TABLE(keys) {keys, (int)(sizeof keys / sizeof keys[0])}

static const char *const activation_names[] = {
    [S2S_ACT_RELU] = "relu", [S2S_ACT_GELU] = "gelu", [S2S_ACT_COUNT] = NULL};
static const char *const compute_type_names[] = {
    [S2S_COMPUTE_FP32] = "fp32", [S2S_COMPUTE_INT8] = "int8", [S2S_COMPUTE_BF16] = "bf16",
    [S2S_COMPUTE_AUTO] = "auto", [S2S_COMPUTE_COUNT] = NULL};
static const char *const norm_names[] = {
    [S2S_NORM_PRE] = "pre", [S2S_NORM_POST] = "post", [S2S_NORM_COUNT] = NULL};
static const char *const schedule_names[] = {
    [S2S_SCHEDULE_CONSTANT] = "constant", [S2S_SCHEDULE_NOAM] = "noam",
    [S2S_SCHEDULE_INVERSE_SQRT] = "inverse_sqrt", [S2S_SCHEDULE_COSINE] = "cosine",
    [S2S_SCHEDULE_COUNT] = NULL};
static const char *const attn_type_names[] = {
    [S2S_ATTN_FULL] = "full", [S2S_ATTN_LOCAL] = "local", [S2S_ATTN_BLOCK] = "block",
    [S2S_ATTN_STRIDED] = "strided", [S2S_ATTN_LINEAR] = "linear",
    [S2S_ATTN_TYPE_COUNT] = NULL};

const char *s2s_attn_type_name(s2s_attn_type t) {
    return t >= 0 && t < S2S_ATTN_TYPE_COUNT ? attn_type_names[t] : NULL;
}

const char *s2s_attn_type_param(s2s_attn_type t) {
    return t == S2S_ATTN_LOCAL ? "window" : t == S2S_ATTN_BLOCK ? "block"
           : t == S2S_ATTN_STRIDED ? "stride" : NULL;
}

static const char *const best_metric_names[] = {
    [S2S_BEST_BLEU] = "bleu", [S2S_BEST_LOSS] = "loss",
    [S2S_BEST_EXACT_MATCH] = "exact_match", [S2S_BEST_COUNT] = NULL};
static const char *const checkpointing_names[] = {
    [S2S_CHECKPOINT_NONE] = "none", [S2S_CHECKPOINT_LAYER] = "layer",
    [S2S_CHECKPOINT_COUNT] = NULL};
static const char *const train_compute_names[] = {
    [S2S_TRAIN_FP32] = "fp32", [S2S_TRAIN_BF16] = "bf16", [S2S_TRAIN_COMPUTE_COUNT] = NULL};

// ---- the tables ----
// Keys are written in table order. New sections go at the end of the root.

// One attention head pulled towards a target (s2s_guided_head): shared by
// every key of that shape, so a second one is one row in train_keys.
static const s2s_cfg_key head_pull_keys[] = {
    {.name = "layer", .type = S2S_CFG_INT, FIELD(s2s_guided_head, layer), .def = "-1",
     .bounds = S2S_CFG_MIN, .min = -1,
     .help = "Layer of the head, from 0 (a decoder layer for `guided_alignment`, an "
             "encoder layer for `guided_coref`); -1 turns the loss off."},
    {.name = "head", .type = S2S_CFG_INT, FIELD(s2s_guided_head, head), .def = "0",
     .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Head of that layer's attention (cross-attention for `guided_alignment`, "
             "self-attention for `guided_coref`), from 0."},
    {.name = "weight", .type = S2S_CFG_FLOAT, FIELD(s2s_guided_head, weight),
     .def = "0.1", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Factor of this loss, added to the cross-entropy."},
};
static const s2s_cfg_table head_pull_table = TABLE(head_pull_keys);

// The attention one kind of sublayer runs (s2s_attention_config): shared by
// model.encoder_attention, .decoder_attention and .cross_attention, so the
// three read and print alike. The largest index of a head or layer list is
// S2S_MAX_INDICES - 1; the rules below bound it by the model's own counts.
// (The help says abs(i - j), not |i - j|: a '|' would split a cell of
// docs/config.md's tables.)
static const s2s_cfg_key attention_keys[] = {
    {.name = "type", .type = S2S_CFG_ENUM, FIELD(s2s_attention_config, type), .def = "full",
     .names = attn_type_names,
     .help = "Which keys a query sees, of those it may see at all: positions count from 0 "
             "over the sequence including `</s>`, padded keys never count, and in the "
             "decoder's self-attention a query i never sees a key j > i. `full`: every "
             "key. `local`: keys with abs(i - j) <= `window` (in the decoder, i - `window` <= "
             "j <= i). `block`: keys with floor(i / `block`) = floor(j / `block`). "
             "`strided`: keys with abs(i - j) < `stride` or (i - j) mod `stride` = 0, the "
             "union of the Sparse Transformer's two strided heads. `linear`: every key, "
             "weighted without a softmax: phi(x) = elu(x) + 1 on the projected queries "
             "and keys of each head (no 1/sqrt(d)), o_i = sum_j phi(q_i).phi(k_j) v_j / "
             "(sum_j phi(q_i).phi(k_j) + 1e-6), the sums over the keys the query may "
             "see; its weights a_ij = phi(q_i).phi(k_j) / sum_j' phi(q_i).phi(k_j') are "
             "what the attention maps, alignments and probes show. `cross_attention` "
             "takes `full` or `linear` only."},
    {.name = "window", .type = S2S_CFG_INT, FIELD(s2s_attention_config, window), .def = "16",
     .bounds = S2S_CFG_MIN, .min = 1,
     .help = "`local` only: how far a query sees on each side (in the decoder, back)."},
    {.name = "block", .type = S2S_CFG_INT, FIELD(s2s_attention_config, block), .def = "64",
     .bounds = S2S_CFG_MIN, .min = 1,
     .help = "`block` only: the size of the blocks of positions that see each other."},
    {.name = "stride", .type = S2S_CFG_INT, FIELD(s2s_attention_config, stride), .def = "8",
     .bounds = S2S_CFG_MIN, .min = 2,
     .help = "`strided` only: the stride; at least 2, since a stride of 1 is `full`."},
    {.name = "heads", .type = S2S_CFG_INDEX_LIST, FIELD(s2s_attention_config, heads),
     .def = "[]", .bounds = S2S_CFG_MIN | S2S_CFG_MAX, .min = 0, .max = S2S_MAX_INDICES - 1,
     .help = "Heads that follow `type`, from 0 and each < `model.heads`; the other heads "
             "are `full`. `[]` (the default): every head."},
    {.name = "layers", .type = S2S_CFG_INDEX_LIST, FIELD(s2s_attention_config, layers),
     .def = "[]", .bounds = S2S_CFG_MIN | S2S_CFG_MAX, .min = 0, .max = S2S_MAX_INDICES - 1,
     .help = "Layers whose `heads` follow `type`, from 0 and each < the stack's layers "
             "(`model.encoder_layers` for `encoder_attention`, `model.decoder_layers` "
             "for the other two); the other layers are `full`. `[]` (the default): every "
             "layer."},
};
static const s2s_cfg_table attention_table = TABLE(attention_keys);

static const s2s_cfg_key model_keys[] = {
    {.name = "d_model", .type = S2S_CFG_INT, FIELD(s2s_model_config, d_model),
     .def = "512", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Width of every residual stream (embeddings, attention, "
             "layer outputs). Must be even and divisible by `model.heads`."},
    {.name = "heads", .type = S2S_CFG_INT, FIELD(s2s_model_config, heads),
     .def = "8", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Attention heads per attention block; each head is "
             "`d_model / heads` wide."},
    {.name = "encoder_layers", .type = S2S_CFG_INT,
     FIELD(s2s_model_config, encoder_layers), .def = "6", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Number of encoder layers."},
    {.name = "decoder_layers", .type = S2S_CFG_INT,
     FIELD(s2s_model_config, decoder_layers), .def = "6", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Number of decoder layers."},
    {.name = "ffn_dim", .type = S2S_CFG_INT, FIELD(s2s_model_config, ffn_dim),
     .def = "2048", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Inner width of the feed-forward blocks."},
    {.name = "activation", .type = S2S_CFG_ENUM, FIELD(s2s_model_config, activation),
     .def = "relu", .names = activation_names,
     .help = "Activation inside the feed-forward blocks."},
    {.name = "norm", .type = S2S_CFG_ENUM, FIELD(s2s_model_config, norm),
     .def = "pre", .names = norm_names,
     .help = "Where layer normalisation sits: `pre` normalises the input of "
             "each sublayer (and the stack output), `post` normalises after "
             "each residual addition, as in the original Transformer."},
    {.name = "layer_norm_eps", .type = S2S_CFG_FLOAT,
     FIELD(s2s_model_config, layer_norm_eps), .def = "1e-5",
     .bounds = S2S_CFG_MIN | S2S_CFG_MIN_EXCL, .min = 0,
     .help = "Epsilon added to the variance in layer normalisation."},
    {.name = "dropout", .type = S2S_CFG_FLOAT, FIELD(s2s_model_config, dropout),
     .def = "0.1", .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL,
     .min = 0, .max = 1, .flags = S2S_CFG_NOT_ARCH,
     .help = "Dropout probability; used in training only."},
    {.name = "attention_dropout", .type = S2S_CFG_FLOAT,
     FIELD(s2s_model_config, attention_dropout), .def = "0.0",
     .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL, .min = 0, .max = 1,
     .flags = S2S_CFG_NOT_ARCH,
     .help = "Dropout probability on the attention weights (after the "
             "softmax); used in training only."},
    {.name = "tie_output", .type = S2S_CFG_BOOL, FIELD(s2s_model_config, tie_output),
     .def = "true",
     .help = "Compute the output logits with the target embedding matrix "
             "(`tgt_embed.weight`) instead of a separate projection."},
    {.name = "max_len", .type = S2S_CFG_INT, FIELD(s2s_model_config, max_len),
     .def = "256", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Longest sequence the model handles; positions run from 0 to "
             "`max_len - 1`."},
    {.name = "encoder_attention", .type = S2S_CFG_TABLE,
     FIELD(s2s_model_config, encoder_attention), .sub = &attention_table,
     .help = "The attention of the encoder's self-attention sublayers: `type` (and its "
             "`window`, `block` or `stride`) in the heads `heads` of the layers `layers`, "
             "every other head full softmax attention. The default is `full` everywhere, "
             "which is also what a model file written before these keys existed holds. "
             "Written as a mapping (`{type: local, window: 3, heads: [1, 2, 3]}`); keys "
             "left out keep their values, and `--set "
             "model.encoder_attention.heads=[1,2,3]` sets one."},
    {.name = "decoder_attention", .type = S2S_CFG_TABLE,
     FIELD(s2s_model_config, decoder_attention), .sub = &attention_table,
     .help = "The attention of the decoder's masked self-attention sublayers, as "
             "`encoder_attention`: a query never sees a later key, so `local` sees the "
             "`window` keys before it and itself. `layers` are decoder layers."},
    {.name = "cross_attention", .type = S2S_CFG_TABLE,
     FIELD(s2s_model_config, cross_attention), .sub = &attention_table,
     .help = "The attention of the decoder's cross-attention sublayers over the source, "
             "as `encoder_attention` but `full` or `linear` only: every target word may "
             "need any source word, so no local pattern fits it. `layers` are decoder "
             "layers. The guided-alignment head must not be a linear one."},
};

static const s2s_cfg_key vocab_keys[] = {
    {.name = "src", .type = S2S_CFG_PATH, FIELD(s2s_vocab_config, src), .def = "",
     .help = "Source-language vocabulary file."},
    {.name = "tgt", .type = S2S_CFG_PATH, FIELD(s2s_vocab_config, tgt), .def = "",
     .help = "Target-language vocabulary file."},
};

static const s2s_cfg_key decode_keys[] = {
    {.name = "max_len", .type = S2S_CFG_INT, FIELD(s2s_decode_config, max_len),
     .def = "128", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Most target tokens generated per sentence, `</s>` included."},
    {.name = "beam_size", .type = S2S_CFG_INT, FIELD(s2s_decode_config, beam_size),
     .def = "1", .bounds = S2S_CFG_MIN | S2S_CFG_MAX, .min = 1, .max = S2S_MAX_BEAM,
     .help = "Beam width; 1 decodes greedily."},
    {.name = "n_best", .type = S2S_CFG_INT, FIELD(s2s_decode_config, n_best),
     .def = "1", .bounds = S2S_CFG_MIN | S2S_CFG_MAX, .min = 1, .max = S2S_MAX_BEAM,
     .help = "Hypotheses returned per sentence, best first; at most "
             "`beam_size` (`s2s translate --n-best` raises the beam to match)."},
    {.name = "length_penalty", .type = S2S_CFG_FLOAT, FIELD(s2s_decode_config, length_penalty),
     .def = "1.0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Beam hypotheses are ranked by `logprob / length^length_penalty` "
             "(length counts `</s>`), as in CTranslate2 and fairseq; 0 ranks by "
             "log-probability alone."},
    {.name = "min_len", .type = S2S_CFG_INT, FIELD(s2s_decode_config, min_len),
     .def = "0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "`</s>` is not produced before this many tokens (CTranslate2's "
             "`min_decoding_length`)."},
    {.name = "max_len_ratio", .type = S2S_CFG_FLOAT, FIELD(s2s_decode_config, max_len_ratio),
     .def = "0.0", .bounds = S2S_CFG_MIN | S2S_CFG_MAX, .min = 0, .max = S2S_MAX_LEN_RATIO,
     .help = "When above 0, a sentence of n source tokens gets at most "
             "`ceil(max_len_ratio * n) + 1` tokens (and never more than `max_len`)."},
    {.name = "sampling_topk", .type = S2S_CFG_INT, FIELD(s2s_decode_config, sampling_topk),
     .def = "1", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "With `beam_size: 1`: 1 decodes greedily, 0 samples from the "
             "whole distribution, k > 1 from the k most likely tokens."},
    {.name = "sampling_topp", .type = S2S_CFG_FLOAT, FIELD(s2s_decode_config, sampling_topp),
     .def = "1.0", .bounds = S2S_CFG_MIN | S2S_CFG_MIN_EXCL | S2S_CFG_MAX, .min = 0, .max = 1,
     .help = "Sampling keeps the smallest set of most likely tokens holding "
             "this much probability (nucleus sampling); 1 keeps all."},
    {.name = "temperature", .type = S2S_CFG_FLOAT, FIELD(s2s_decode_config, temperature),
     .def = "1.0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Sampling temperature; 0 decodes greedily."},
    {.name = "seed", .type = S2S_CFG_INT, FIELD(s2s_decode_config, seed),
     .def = "0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Sampling seed: the same seed gives the same samples; each "
             "sentence draws from a stream of the seed and its tokens."},
    {.name = "repetition_penalty", .type = S2S_CFG_FLOAT,
     FIELD(s2s_decode_config, repetition_penalty), .def = "1.05", .bounds = S2S_CFG_MIN,
     .min = 1,
     .help = "CTranslate2's `repetition_penalty`: before each step, the logit of every "
             "token the hypothesis already holds is divided by this when positive and "
             "multiplied by it when not; 1 turns it off. Greedy, sampling and beam search."},
    {.name = "no_repeat_ngram_size", .type = S2S_CFG_INT,
     FIELD(s2s_decode_config, no_repeat_ngram_size), .def = "7", .bounds = S2S_CFG_MIN,
     .min = 0,
     .help = "CTranslate2's `no_repeat_ngram_size`: a token that would complete an n-gram "
             "of this size already in the hypothesis is never chosen; 0 turns it off."},
    {.name = "no_immediate_repeat", .type = S2S_CFG_BOOL,
     FIELD(s2s_decode_config, no_immediate_repeat), .def = "true",
     .help = "No stutter: a token never directly follows itself (*didn't didn't*, `，，`) "
             "unless the source has two equal adjacent tokens (很 很, *very very*; two "
             "`<unk>`s, two unknown words, do not count), and a `<unk>` never directly "
             "follows a `<unk>` that copies the same source word (the one "
             "`replace_unknowns` prints). A mask, as `min_len`'s: scores stay the model's "
             "log-probabilities. Greedy, sampling and beam search; `s2s score` ignores it. "
             "Turn it off for a target vocabulary that spells a word with a repeated token "
             "(a character vocabulary for Chinese: 妈 妈, 谢 谢)."},
    {.name = "replace_unknowns", .type = S2S_CFG_BOOL,
     FIELD(s2s_decode_config, replace_unknowns), .def = "true",
     .help = "Each `<unk>` in a translation is printed as the source word (as typed, after "
             "normalisation) that the model's alignment head attends to most at that step "
             "(CTranslate2's `replace_unknowns`); `false` prints `<unk>`."},
    {.name = "compute_type", .type = S2S_CFG_ENUM, FIELD(s2s_decode_config, compute_type),
     .def = "fp32", .names = compute_type_names,
     .help = "Number type of decoding's matrix products (CTranslate2's `compute_type`): "
             "`fp32`; `int8` (weights s8 with a scale per output channel, activations "
             "quantised per row, sums in int32); `bf16` (sums in fp32); `auto` picks bf16 "
             "where the CPU has AVX512_BF16, else int8 where it has VNNI, else fp32. "
             "Training always runs in fp32."},
};

static const s2s_cfg_key data_keys[] = {
    {.name = "train", .type = S2S_CFG_PATH, FIELD(s2s_data_config, train), .def = "",
     .help = "Training pairs. A line without a tab, invalid UTF-8 or a side "
             "longer than `model.max_len - 1` tokens is an error naming the "
             "file and line."},
    {.name = "dev", .type = S2S_CFG_PATH, FIELD(s2s_data_config, dev), .def = "",
     .help = "Validation pairs; unset: no validation, no best model, no "
             "early stopping."},
};

static const s2s_cfg_key train_keys[] = {
    {.name = "lr", .type = S2S_CFG_FLOAT, FIELD(s2s_train_config, lr), .def = "0.0005",
     .bounds = S2S_CFG_MIN | S2S_CFG_MIN_EXCL, .min = 0,
     .help = "Peak learning rate (for `noam`, the factor in front of "
             "`d_model^-0.5 * min(t^-0.5, t * warmup^-1.5)`)."},
    {.name = "schedule", .type = S2S_CFG_ENUM, FIELD(s2s_train_config, schedule),
     .def = "inverse_sqrt", .names = schedule_names,
     .help = "Learning rate at step t (from 1): `constant`; `noam`; "
             "`inverse_sqrt`: linear warmup to `lr`, then `lr * sqrt(warmup / t)`; "
             "`cosine`: linear warmup, then a half cosine down to 0 at "
             "`train.max_steps`."},
    {.name = "warmup_steps", .type = S2S_CFG_INT, FIELD(s2s_train_config, warmup_steps),
     .def = "4000", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Steps of linear warmup (0: none)."},
    {.name = "batch_tokens", .type = S2S_CFG_INT, FIELD(s2s_train_config, batch_tokens),
     .def = "4096", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Tokens per batch, counted as sentences x (padded source length "
             "+ padded target length), `</s>` and `<s>` included; a longer "
             "sentence gets a batch of its own."},
    {.name = "seed", .type = S2S_CFG_INT, FIELD(s2s_train_config, seed), .def = "1",
     .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Seed of the initial weights (without `--init`), the data order "
             "and the dropout masks."},
    {.name = "shuffle", .type = S2S_CFG_BOOL, FIELD(s2s_train_config, shuffle), .def = "true",
     .help = "Bucket sentences by length and shuffle the batches every epoch; "
             "`false` keeps the file order."},
    {.name = "max_steps", .type = S2S_CFG_INT, FIELD(s2s_train_config, max_steps),
     .def = "100000", .bounds = S2S_CFG_MIN, .min = 1,
     .help = "Updates to make (a resumed run counts the steps already made)."},
    {.name = "valid_every", .type = S2S_CFG_INT, FIELD(s2s_train_config, valid_every),
     .def = "1000", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Validate on `data.dev` every this many steps (0: never): loss, "
             "token accuracy, BLEU and exact match of greedy translations."},
    {.name = "save_every", .type = S2S_CFG_INT, FIELD(s2s_train_config, save_every),
     .def = "1000", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Write a checkpoint every this many steps (0: only at the end)."},
    {.name = "grad_norms_every", .type = S2S_CFG_INT, FIELD(s2s_train_config, grad_norms_every),
     .def = "100", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Every this many steps the log line also holds `grad_norms`: the "
             "L2 norm of the gradient of each attention's Q, K, V and output "
             "matrix and each feed-forward matrix, by layer, summed over the "
             "ranks and before clipping (0: never; docs/training.md)."},
    {.name = "patience", .type = S2S_CFG_INT, FIELD(s2s_train_config, patience), .def = "0",
     .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Stop after this many validations without a better "
             "`train.best_metric` (0: never stop early)."},
    {.name = "label_smoothing", .type = S2S_CFG_FLOAT,
     FIELD(s2s_train_config, label_smoothing), .def = "0.1",
     .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL, .min = 0, .max = 1,
     .help = "Label smoothing eps: the loss is `(1-eps) * -log p[gold] + eps * "
             "mean over the vocabulary of -log p[v]`, as PyTorch's "
             "`CrossEntropyLoss(label_smoothing=eps)`."},
    {.name = "adam_betas", .type = S2S_CFG_FLOAT_PAIR, FIELD(s2s_train_config, adam_betas),
     .def = "[0.9, 0.98]", .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL,
     .min = 0, .max = 1,
     .help = "Adam's beta1 and beta2."},
    {.name = "adam_eps", .type = S2S_CFG_FLOAT, FIELD(s2s_train_config, adam_eps), .def = "1e-9",
     .bounds = S2S_CFG_MIN | S2S_CFG_MIN_EXCL, .min = 0,
     .help = "Adam's epsilon."},
    {.name = "weight_decay", .type = S2S_CFG_FLOAT, FIELD(s2s_train_config, weight_decay),
     .def = "0.0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Decoupled weight decay (AdamW: `p -= lr * weight_decay * p` "
             "each step); 0: plain Adam."},
    {.name = "clip_norm", .type = S2S_CFG_FLOAT, FIELD(s2s_train_config, clip_norm), .def = "0.0",
     .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Clip the global gradient norm to this (0: no clipping)."},
    {.name = "log", .type = S2S_CFG_STRING, FIELD(s2s_train_config, log), .def = "",
     .flags = S2S_CFG_OUTPUT,
     .help = "JSON-lines log, one object per step (`step`, `loss`, `guided` and "
             "`coref` when those losses are on, `lr`, `tokens`, `grad_norm`, and "
             "`valid` on validation steps), appended "
             "run after run; unset, or with `-o`: `BASE.train.log` beside the "
             "output. Relative to the config file's folder, and must stay in "
             "it unless `--allow-outside`."},
    {.name = "best_metric", .type = S2S_CFG_ENUM, FIELD(s2s_train_config, best_metric),
     .def = "bleu", .names = best_metric_names,
     .help = "Validation score that picks the best model "
             "(`OUT.best.safetensors`) and drives early stopping; `loss` is "
             "better when lower."},
    {.name = "output", .type = S2S_CFG_STRING, FIELD(s2s_train_config, output), .def = "",
     .flags = S2S_CFG_OUTPUT,
     .help = "Model file `s2s train` writes (`-o` overrides); the checkpoint "
             "(`BASE.ckpt.safetensors`) goes beside it. Relative to the config "
             "file's folder, and must stay in it unless `--allow-outside`."},
    {.name = "guided_alignment", .type = S2S_CFG_TABLE, FIELD(s2s_train_config, guided[S2S_HEAD_ALIGN]),
     .sub = &head_pull_table,
     .help = "Guided alignment, as in Marian: with `layer` >= 0, head `head` of "
             "decoder layer `layer`'s cross-attention is pulled towards the gold "
             "alignments of the TSV's third column (Pharaoh `i-j`, source token i, "
             "target token j, from 0; `ipj` counts as a link too) by adding "
             "`weight * -sum A log(P + 1e-6) / rows` to the loss. A holds each "
             "target token's links normalised to sum to 1; a target token the gold "
             "leaves unaligned is guided to the source `</s>` (the \"no link\" "
             "column, which `s2s align` reads as no alignment). P is that head's "
             "attention weights and `rows` the target tokens, `</s>` excluded, of "
             "the batch's lines that have links; lines without a third column are "
             "not guided. `layer: -1` (the default) turns it off and the third "
             "column is not read. Written as a mapping (`{layer: 1, head: 0}`); keys left "
             "out keep their values, and `--set train.guided_alignment.layer=1` "
             "sets one."},
    {.name = "unk_replace", .type = S2S_CFG_FLOAT, FIELD(s2s_train_config, unk_replace),
     .def = "0.0", .bounds = S2S_CFG_MIN | S2S_CFG_MAX | S2S_CFG_MAX_EXCL, .min = 0, .max = 1,
     .help = "Teaches the model `<unk>`: this share of the candidate word pairs "
             "of each epoch become `<unk>` on both sides, their alignment link "
             "kept, so the guided head learns where an `<unk>` comes from "
             "(`decode.replace_unknowns` relies on it). A candidate is a source "
             "and a target token linked to each other and to nothing else in "
             "the third column, both ordinary words: not a special, not "
             "punctuation, and not a function word (a token the gold alignment "
             "of `data.train` links one-to-one in fewer than half of its "
             "occurrences, as it does articles, auxiliaries, measure words and "
             "particles). Which pairs "
             "is a hash of `train.seed`, the epoch, the line and the link, so a "
             "resumed run replaces the same ones. Lines without links are left "
             "as they are; data without any link is an error. 0 turns it off."},
    {.name = "guided_coref", .type = S2S_CFG_TABLE, FIELD(s2s_train_config, guided[S2S_HEAD_COREF]),
     .sub = &head_pull_table,
     .help = "Guided coreference (in the manner of LISA, Strubell et al. 2018): "
             "with `layer` >= 0, head `head` of encoder layer `layer`'s "
             "self-attention is pulled from each source pronoun to its gold "
             "antecedent, given by the source side of the TSV's fourth column "
             "(`SRC|TGT`, each side `p-a` links from pronoun token p to "
             "antecedent token a, from 0), by adding `weight * -sum C log(P + "
             "1e-6) / pronouns` to the loss. C holds each pronoun's antecedents "
             "normalised to sum to 1, P is that head's attention weights and "
             "`pronouns` the batch's source tokens that have a link. Lines "
             "without a fourth column are not guided (the term is 0 on data "
             "without any). `layer: -1` (the default) turns it off and the "
             "fourth column is not read. Written as a mapping like "
             "`guided_alignment`."},
    {.name = "checkpoint_activations", .type = S2S_CFG_ENUM,
     FIELD(s2s_train_config, checkpoint_activations), .def = "none",
     .names = checkpointing_names,
     .help = "What the forward pass keeps for the backward pass (fairseq's "
             "`checkpoint_activations`, Marian's `--gradient-checkpointing`): `none` "
             "keeps every activation; `layer` keeps each layer's input and the "
             "dropout generator's state there, and the backward pass runs the "
             "layer's sublayers again, drawing the same dropout masks, so the "
             "weights are the same bit for bit with less memory and about a "
             "third more arithmetic (`s2s train --plan` shows the bytes)."},
    {.name = "compute_type", .type = S2S_CFG_ENUM, FIELD(s2s_train_config, compute_type),
     .def = "fp32", .names = train_compute_names,
     .help = "Number type of the matrix products of training's forward and "
             "backward passes: `fp32`, or `bf16` (each product's operands "
             "rounded to bfloat16, summed in fp32 on oneDNN's bf16 kernels, which "
             "need AVX512_BF16 to be fast: docs/training.md). The weights, "
             "gradients, Adam moments, softmax, LayerNorm and loss stay fp32, "
             "and the model file is fp32 either way."},
    {.name = "attention_chunk", .type = S2S_CFG_INT, FIELD(s2s_train_config, attention_chunk),
     .def = "0", .bounds = S2S_CFG_MIN, .min = 0,
     .help = "Exact chunked attention in training (Rabe & Staats 2021, "
             "FlashAttention): with N > 0 every attention takes its keys in "
             "blocks of N with a running maximum and sum, keeps one log-sum-exp "
             "per query row instead of its (heads x rows x keys) weights, and the "
             "backward pass computes each block's scores again; attention "
             "dropout's mask is replayed from its seed, not stored. The weights "
             "equal the plain trainer's within fp32 rounding, with far less "
             "memory at long sequences (`s2s train --plan` shows the bytes). "
             "Layers with linear heads (which have no softmax) keep their "
             "weights as before; guided alignment and coreference still read "
             "their head's weights. 0 (the default): off."},
};

static const s2s_cfg_table model_table = TABLE(model_keys);
static const s2s_cfg_table vocab_table = TABLE(vocab_keys);
static const s2s_cfg_table decode_table = TABLE(decode_keys);
static const s2s_cfg_table data_table = TABLE(data_keys);
static const s2s_cfg_table train_table = TABLE(train_keys);

static const s2s_cfg_key sections[] = {
    {.name = "model", .type = S2S_CFG_TABLE, FIELD(s2s_config, model), .sub = &model_table,
     .help = "The architecture. Everything in this section is stored in a "
             "model file, so a model always decodes the way it was trained."},
    {.name = "vocab", .type = S2S_CFG_TABLE, FIELD(s2s_config, vocab), .sub = &vocab_table,
     .help = "Vocabulary files. Relative paths are resolved against the "
             "folder of the config file; a path that is set must exist."},
    {.name = "decode", .type = S2S_CFG_TABLE, FIELD(s2s_config, decode), .sub = &decode_table,
     .help = "How translations are generated."},
    {.name = "data", .type = S2S_CFG_TABLE, FIELD(s2s_config, data), .sub = &data_table,
     .help = "Training data for `s2s train`: TSV files with one "
             "`source<TAB>target[<TAB>alignment[<TAB>coreference]]` pair per line, "
             "tokenized with "
             "the model's vocabularies. Relative paths are resolved against the "
             "folder of the config file; a path that is set must exist."},
    {.name = "train", .type = S2S_CFG_TABLE, FIELD(s2s_config, train), .sub = &train_table,
     .help = "How `s2s train` trains: optimizer, learning-rate schedule, "
             "batching, validation and checkpoints (see include/s2s/train.h "
             "for the files it writes)."},
};
const s2s_cfg_table s2s_cfg_root = TABLE(sections);

// ---- lookups ----

int s2s_cfg_find(const s2s_cfg_table *t, const char *name, size_t n) {
    for (int i = 0; i < t->n_keys; i++) {
        const char *k = t->keys[i].name;
        if (strlen(k) == n && memcmp(k, name, n) == 0) return i;
    }
    return -1;
}

void s2s_cfg_list_names(s2s_buf *b, const s2s_cfg_table *t) {
    for (int i = 0; i < t->n_keys; i++)
        s2s_buf_printf(b, "%s%s", i == 0 ? "" : i == t->n_keys - 1 ? " or " : ", ",
                       t->keys[i].name);
}

const char *s2s_cfg_suggest(const s2s_cfg_table *t, const char *name, size_t n) {
    s2s_suggest s = s2s_suggest_start(name, n);
    for (int i = 0; i < t->n_keys; i++) s2s_suggest_offer(&s, t->keys[i].name);
    return s.best;
}

void s2s_cfg_quote(s2s_buf *b, const char *s, size_t n, size_t max) {
    char q[256 + 4];
    if (max > 256) max = 256;
    s2s_buf_printf(b, "'%s'", s2s_quote(q, max + 4, s, n));
}

// ---- leaves ----
// Built once from the tables: the flat list that defaults, validation,
// printing and diffs iterate, each leaf with its full path.

enum { MAX_LEAVES = 128, MAX_PATH = 96 };
static s2s_cfg_leaf leaves[MAX_LEAVES];
static char leaf_paths[MAX_LEAVES][MAX_PATH];
static int n_leaves;
static pthread_once_t leaves_once = PTHREAD_ONCE_INIT;

static void add_leaves(const s2s_cfg_table *t, const char *prefix, size_t offset, int section) {
    for (int i = 0; i < t->n_keys; i++) {
        const s2s_cfg_key *k = &t->keys[i];
        char path[MAX_PATH];
        int n = snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", k->name);
        S2S_ASSERT(n > 0 && n < MAX_PATH);
        int s = section < 0 ? i : section;
        if (k->type == S2S_CFG_TABLE) {
            add_leaves(k->sub, path, offset + k->offset, s);
            continue;
        }
        S2S_ASSERT(n_leaves < MAX_LEAVES && section >= 0);
        memcpy(leaf_paths[n_leaves], path, (size_t)n + 1);
        leaves[n_leaves] = (s2s_cfg_leaf){.key = k, .path = leaf_paths[n_leaves],
                                          .offset = offset + k->offset, .section = s};
        n_leaves++;
    }
}

static void build_leaves(void) { add_leaves(&s2s_cfg_root, "", 0, -1); }

int s2s_cfg_n_leaves(void) {
    pthread_once(&leaves_once, build_leaves);
    return n_leaves;
}

const s2s_cfg_leaf *s2s_cfg_leaf_get(int i) {
    S2S_ASSERT(i >= 0 && i < s2s_cfg_n_leaves());
    return &leaves[i];
}

int s2s_cfg_find_leaf(const char *path, size_t n) {
    for (int i = 0; i < s2s_cfg_n_leaves(); i++)
        if (strlen(leaves[i].path) == n && memcmp(leaves[i].path, path, n) == 0) return i;
    return -1;
}

int s2s_cfg_leaf_at(size_t offset) {
    for (int i = 0; i < s2s_cfg_n_leaves(); i++)
        if (leaves[i].offset == offset) return i;
    return -1;
}

void *s2s_cfg_field(s2s_config *cfg, const s2s_cfg_leaf *l) {
    return (char *)cfg + l->offset;
}

const void *s2s_cfg_field_const(const s2s_config *cfg, const s2s_cfg_leaf *l) {
    return (const char *)cfg + l->offset;
}

// ---- cross-field rules ----

static bool d_model_even(const s2s_cfg_rule *r, const s2s_config *cfg, s2s_buf *why) {
    (void)r;
    if (cfg->model.d_model % 2 == 0) return true;
    s2s_buf_printf(why, "model.d_model: %d must be even (sinusoidal positions come in sin/cos "
                   "pairs)", cfg->model.d_model);
    return false;
}

static bool heads_divide_d_model(const s2s_cfg_rule *r, const s2s_config *cfg, s2s_buf *why) {
    (void)r;
    if (cfg->model.d_model % cfg->model.heads == 0) return true;
    s2s_buf_printf(why, "model.d_model: %d is not divisible by model.heads (%d)",
                   cfg->model.d_model, cfg->model.heads);
    return false;
}

// The struct of the table at path `arg`, found from its leaf `key`, which
// sits `offset` bytes into it.
static const void *table_at(const s2s_config *cfg, const char *arg, const char *key,
                            size_t offset) {
    char path[MAX_PATH];
    int n = snprintf(path, sizeof path, "%s.%s", arg, key);
    int i = s2s_cfg_find_leaf(path, (size_t)n);
    S2S_ASSERT(i >= 0);
    return (const char *)s2s_cfg_field_const(cfg, s2s_cfg_leaf_get(i)) - offset;
}

// The guided head of the table at path `arg` ("train.guided_alignment").
static const s2s_guided_head *guided_at(const s2s_config *cfg, const char *arg) {
    return table_at(cfg, arg, "layer", offsetof(s2s_guided_head, layer));
}

// What the rules say of the attention a guided head is in (its stack,
// S2S_ATTN_MAP_*): its config table and the model key of its layers.
static const struct {
    const char *attention, *layers;
} map_keys[S2S_ATTN_MAP_COUNT] = {
    [S2S_ATTN_MAP_CROSS] = {"model.cross_attention", "decoder_layers"},
    [S2S_ATTN_MAP_SELF] = {"model.decoder_attention", "decoder_layers"},
    [S2S_ATTN_MAP_ENC] = {"model.encoder_attention", "encoder_layers"},
};

// Whether g's stack is its role's (only a program setting it can break it).
static bool guided_stack_ok(const s2s_guided_head *g, const char *arg, s2s_buf *why) {
    for (int k = 0; k < S2S_HEAD_ROLE_COUNT; k++)
        if (strcmp(s2s_roles[k].key, arg) == 0 && g->stack != s2s_roles[k].stack) {
            s2s_buf_printf(why, "%s: stack %d is not the %s head's attention (%d)", arg,
                           (int)g->stack, s2s_roles[k].name, (int)s2s_roles[k].stack);
            return false;
        }
    return true;
}

static bool guided_layer_exists(const s2s_cfg_rule *r, const s2s_config *cfg, s2s_buf *why) {
    const s2s_guided_head *g = guided_at(cfg, r->arg);
    if (!guided_stack_ok(g, r->arg, why)) return false;
    bool enc = g->stack == S2S_ATTN_MAP_ENC;
    int n = enc ? cfg->model.encoder_layers : cfg->model.decoder_layers;
    if (g->layer < n) return true;
    s2s_buf_printf(why, "%s.layer: %d is out of range; model.%s is %d (layers count from 0)",
                   r->arg, g->layer, map_keys[g->stack].layers, n);
    return false;
}

static bool head_exists(const s2s_cfg_rule *r, const s2s_config *cfg, s2s_buf *why) {
    const s2s_guided_head *g = guided_at(cfg, r->arg);
    if (g->layer < 0 || g->head < cfg->model.heads) return true;
    s2s_buf_printf(why, "%s.head: %d is out of range; model.heads is %d (heads count from 0)",
                   r->arg, g->head, cfg->model.heads);
    return false;
}

// The weights of the layers alone (encoder: Q, K, V, out and the FFN;
// decoder: self- and cross-attention and the FFN; biases, norms and
// embeddings left out) are a lower bound of the model's size. In double: no
// config overflows it, and it is exact wherever the sum is near 2^32.
static bool layers_fit(const s2s_cfg_rule *r, const s2s_config *cfg, s2s_buf *why) {
    (void)r;
    const s2s_model_config *m = &cfg->model;
    s2s_arch a = s2s_arch_make(m);
    double d = m->d_model, f = m->ffn_dim;
    double n = a.enc.layers * s2s_stack_matrix_weights(&a.enc, d, f) +
               a.dec.layers * s2s_stack_matrix_weights(&a.dec, d, f);
    if (n <= (double)S2S_MAX_WEIGHTS) return true;
    s2s_buf_printf(why, "model.d_model %d, model.ffn_dim %d, model.encoder_layers %d and "
                   "model.decoder_layers %d make more than %zu weights (the most a model may "
                   "have)", m->d_model, m->ffn_dim, m->encoder_layers, m->decoder_layers,
                   S2S_MAX_WEIGHTS);
    return false;
}

// ---- the attention variants' rules ----

// The attention config of the table at path `arg` ("model.encoder_attention").
static const s2s_attention_config *attention_at(const s2s_config *cfg, const char *arg) {
    return table_at(cfg, arg, "type", offsetof(s2s_attention_config, type));
}

// Whether index i is in list l; an empty list holds every index.
static bool index_listed(const s2s_index_list *l, int i) {
    if (l->n == 0) return true;
    for (int j = 0; j < l->n; j++)
        if (l->v[j] == i) return true;
    return false;
}

// The first index of l that is >= n, or -1.
static int index_past(const s2s_index_list *l, int n) {
    for (int j = 0; j < l->n; j++)
        if (l->v[j] >= n) return l->v[j];
    return -1;
}

static bool cross_attention_full_or_linear(const s2s_cfg_rule *r, const s2s_config *cfg,
                                           s2s_buf *why) {
    (void)r;
    s2s_attn_type t = cfg->model.cross_attention.type;
    if (t == S2S_ATTN_FULL || t == S2S_ATTN_LINEAR) return true;
    s2s_buf_printf(why, "model.cross_attention.type: %s is not allowed; cross-attention is "
                   "full or linear (a target word may need any source word)",
                   attn_type_names[t]);
    return false;
}

static bool attention_heads_exist(const s2s_cfg_rule *r, const s2s_config *cfg, s2s_buf *why) {
    int bad = index_past(&attention_at(cfg, r->arg)->heads, cfg->model.heads);
    if (bad < 0) return true;
    s2s_buf_printf(why, "%s.heads: %d is out of range; model.heads is %d (heads count from 0)",
                   r->arg, bad, cfg->model.heads);
    return false;
}

static bool attention_layers_below(const s2s_cfg_rule *r, const s2s_config *cfg, s2s_buf *why,
                                   int n, const char *what) {
    int bad = index_past(&attention_at(cfg, r->arg)->layers, n);
    if (bad < 0) return true;
    s2s_buf_printf(why, "%s.layers: %d is out of range; model.%s is %d (layers count from 0)",
                   r->arg, bad, what, n);
    return false;
}

static bool enc_attention_layers_exist(const s2s_cfg_rule *r, const s2s_config *cfg,
                                       s2s_buf *why) {
    return attention_layers_below(r, cfg, why, cfg->model.encoder_layers, "encoder_layers");
}

static bool dec_attention_layers_exist(const s2s_cfg_rule *r, const s2s_config *cfg,
                                       s2s_buf *why) {
    return attention_layers_below(r, cfg, why, cfg->model.decoder_layers, "decoder_layers");
}

// The guided head of table r->arg is not a linear head of its attention: a
// guided loss pulls the head's n x n weights, which a linear head never
// forms (it computes phi(Q) (phi(K)^T V) instead).
static bool guided_head_not_linear(const s2s_cfg_rule *r, const s2s_config *cfg,
                                   s2s_buf *why) {
    const s2s_guided_head *g = guided_at(cfg, r->arg);
    if (!guided_stack_ok(g, r->arg, why)) return true;  // guided_layer_exists says so
    const char *attn = map_keys[g->stack].attention;
    const s2s_attention_config *a = attention_at(cfg, attn);
    if (g->layer < 0 || a->type != S2S_ATTN_LINEAR || !index_listed(&a->heads, g->head) ||
        !index_listed(&a->layers, g->layer))
        return true;
    s2s_buf_printf(why, "%s.head: head %d of %s layer %d is a linear head (%s.type is linear "
                   "and its heads and layers include it); a guided head must be a softmax "
                   "head", r->arg, g->head, g->stack == S2S_ATTN_MAP_ENC ? "encoder" : "decoder",
                   g->layer, attn);
    return false;
}

const s2s_cfg_rule s2s_cfg_rules[] = {
    {"`model.d_model` is even: sinusoidal positions fill the embedding in sin/cos pairs.",
     d_model_even, NULL, {"model.d_model"}},
    {"`model.d_model` is divisible by `model.heads`: each head gets `d_model / heads` "
     "dimensions.",
     heads_divide_d_model, NULL, {"model.d_model", "model.heads"}},
    {"`train.guided_alignment.layer` < `model.decoder_layers`.", guided_layer_exists,
     "train.guided_alignment", {"train.guided_alignment.layer", "model.decoder_layers"}},
    {"`train.guided_alignment.head` < `model.heads` when `train.guided_alignment.layer` is "
     "not -1.",
     head_exists, "train.guided_alignment",
     {"train.guided_alignment.head", "train.guided_alignment.layer", "model.heads"}},
    {"`train.guided_coref.layer` < `model.encoder_layers`.", guided_layer_exists,
     "train.guided_coref", {"train.guided_coref.layer", "model.encoder_layers"}},
    {"`train.guided_coref.head` < `model.heads` when `train.guided_coref.layer` is not -1.",
     head_exists, "train.guided_coref",
     {"train.guided_coref.head", "train.guided_coref.layer", "model.heads"}},
    {"The layers' weights (`encoder_layers * (4 d^2 + 2 d ffn_dim) + decoder_layers * (8 d^2 "
     "+ 2 d ffn_dim)` with `d = d_model`) are at most 2^32, the most a model may have.",
     layers_fit, NULL, {"model.d_model", "model.ffn_dim", "model.encoder_layers"}},
    {"`model.cross_attention.type` is `full` or `linear`: a target word may need any source "
     "word, so no local pattern fits cross-attention.",
     cross_attention_full_or_linear, NULL, {"model.cross_attention.type"}},
    {"Every index of `model.encoder_attention.heads` is < `model.heads`.",
     attention_heads_exist, "model.encoder_attention",
     {"model.encoder_attention.heads", "model.heads"}},
    {"Every index of `model.encoder_attention.layers` is < `model.encoder_layers`.",
     enc_attention_layers_exist, "model.encoder_attention",
     {"model.encoder_attention.layers", "model.encoder_layers"}},
    {"Every index of `model.decoder_attention.heads` is < `model.heads`.",
     attention_heads_exist, "model.decoder_attention",
     {"model.decoder_attention.heads", "model.heads"}},
    {"Every index of `model.decoder_attention.layers` is < `model.decoder_layers`.",
     dec_attention_layers_exist, "model.decoder_attention",
     {"model.decoder_attention.layers", "model.decoder_layers"}},
    {"Every index of `model.cross_attention.heads` is < `model.heads`.",
     attention_heads_exist, "model.cross_attention",
     {"model.cross_attention.heads", "model.heads"}},
    {"Every index of `model.cross_attention.layers` is < `model.decoder_layers`.",
     dec_attention_layers_exist, "model.cross_attention",
     {"model.cross_attention.layers", "model.decoder_layers"}},
    {"When `train.guided_alignment.layer` is not -1, `train.guided_alignment.head` is not a "
     "linear head of `model.cross_attention` in that layer (a head is linear when `type` is "
     "`linear`, `heads` is `[]` or holds the head and `layers` is `[]` or holds the layer): "
     "the guided loss pulls the head's weights, which a linear head never forms.",
     guided_head_not_linear, "train.guided_alignment",
     {"train.guided_alignment.head", "train.guided_alignment.layer",
      "model.cross_attention.type"}},
    {"When `train.guided_coref.layer` is not -1, `train.guided_coref.head` is not a linear "
     "head of `model.encoder_attention` in that layer (as for `train.guided_alignment`).",
     guided_head_not_linear, "train.guided_coref",
     {"train.guided_coref.head", "train.guided_coref.layer", "model.encoder_attention.type"}},
};
const int s2s_cfg_n_rules = (int)(sizeof s2s_cfg_rules / sizeof s2s_cfg_rules[0]);
