// s2s/config.h — typed configuration, filled from YAML.
//
// One schema (src/config/schema.c: nested tables of keys, each with its
// type, default, range and help text, and a table of cross-field rules)
// drives the loader, validation, `s2s config show`, `s2s config diff` and
// docs/config.md (`s2s config reference`). Nothing else in s2s reads YAML.
//
//     s2s_config cfg;
//     s2s_config_default(&cfg);
//     if (s2s_config_load_file(&cfg, "configs/zh-en.yaml") != S2S_OK)
//         fprintf(stderr, "%s\n", s2s_last_error());   // file:line:col: ...
#ifndef S2S_CONFIG_H
#define S2S_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "s2s/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// The largest model s2s makes or loads: 2^32 weights (16 GiB of floats;
// decoding needs about as much again for its copy) in at most 2^20
// tensors. `s2s config check` refuses a config whose layers alone pass the
// first; the model layout refuses any model beyond either before anything
// is allocated.
#define S2S_MAX_WEIGHTS ((size_t)1 << 32)
#define S2S_MAX_TENSORS (1 << 20)

#define S2S_PATH_MAX 1024
// The largest config file (and base: file) read: larger ones, and endless
// streams such as /dev/zero or a pipe from `yes`, are refused with one line
// naming the file (S2S_ERR_CONFIG).
#define S2S_CONFIG_MAX_BYTES (1 << 20)

// Bounds of decoding, from any source (a model file's decode: section, a
// config, a flag, a server request): the schema refuses more, and
// s2s_translate checks them again. A beam (and n-best list) of at most 64
// hypotheses per sentence, a length ratio of at most 100, and at most
// 4096 sentences decoded together (`--batch`, `s2s serve --max-batch`).
#define S2S_MAX_BEAM 64
#define S2S_MAX_LEN_RATIO 100
#define S2S_MAX_BATCH 4096

typedef enum s2s_norm { S2S_NORM_PRE, S2S_NORM_POST, S2S_NORM_COUNT } s2s_norm;
typedef enum s2s_activation { S2S_ACT_RELU, S2S_ACT_GELU, S2S_ACT_COUNT } s2s_activation;

// Which keys an attention's queries see (docs/attention.md), of those not
// padded and, in the decoder's self-attention, not after the query's own
// position; positions count from 0 and include </s>.
typedef enum s2s_attn_type {
    S2S_ATTN_FULL,     // every key
    S2S_ATTN_LOCAL,    // |i - j| <= window
    S2S_ATTN_BLOCK,    // i / block == j / block
    S2S_ATTN_STRIDED,  // |i - j| < stride, or (i - j) % stride == 0
    S2S_ATTN_LINEAR,   // every key, weighted by phi(q).phi(k), phi = elu + 1
    S2S_ATTN_TYPE_COUNT
} s2s_attn_type;

// The three attentions of the network, and the three kinds of attention
// map a hypothesis holds (s2s/decode.h).
typedef enum s2s_attn_map {
    S2S_ATTN_MAP_CROSS,  // cross_attn: outputs x source tokens and </s>
    S2S_ATTN_MAP_SELF,   // self_attn: decoder inputs x decoder inputs
    S2S_ATTN_MAP_ENC,    // enc_attn: source tokens and </s> x the same
    S2S_ATTN_MAP_COUNT
} s2s_attn_map;

// The most entries of an index list (s2s_index_list), and the largest
// index one holds: the heads and layers an attention variant applies to.
#define S2S_MAX_INDICES 64

// A list of distinct indices in [0, S2S_MAX_INDICES), written [0, 2, 3].
// n == 0 (the default, or []): every index.
typedef struct s2s_index_list {
    int n;
    int v[S2S_MAX_INDICES];
} s2s_index_list;

// The attention one kind of sublayer runs (model.encoder_attention,
// .decoder_attention, .cross_attention): the heads in `heads` of the layers
// in `layers` follow `type`; the others are full.
typedef struct s2s_attention_config {
    s2s_attn_type type;
    int window;  // local
    int block;   // block
    int stride;  // strided
    s2s_index_list heads;
    s2s_index_list layers;
} s2s_attention_config;

// The architecture. Everything here is stored in a model file.
typedef struct s2s_model_config {
    int d_model;            // width of every residual stream
    int heads;              // attention heads; d_model % heads == 0
    int encoder_layers;
    int decoder_layers;
    int ffn_dim;            // inner width of the feed-forward blocks
    s2s_activation activation;
    s2s_norm norm;
    float layer_norm_eps;
    float dropout;          // training only
    float attention_dropout;  // on attention weights; training only
    bool tie_output;        // logits use tgt_embed.weight
    int max_len;            // longest sequence (positions 0..max_len-1)
    s2s_attention_config encoder_attention;  // the encoder's self-attention
    s2s_attention_config decoder_attention;  // the decoder's causal self-attention
    s2s_attention_config cross_attention;    // full or linear only
} s2s_model_config;

typedef struct s2s_vocab_config {
    char src[S2S_PATH_MAX];  // resolved against the config file's folder
    char tgt[S2S_PATH_MAX];
} s2s_vocab_config;

// The number type of decoding's matrix products (CTranslate2's
// compute_type): weights int8 or bf16 made at load, activations quantised
// per product; auto picks the fastest the CPU runs well (s2s/model.h).
typedef enum s2s_compute_type {
    S2S_COMPUTE_FP32,
    S2S_COMPUTE_INT8,
    S2S_COMPUTE_BF16,
    S2S_COMPUTE_AUTO,
    S2S_COMPUTE_COUNT
} s2s_compute_type;

typedef struct s2s_decode_config {
    int max_len;          // most target tokens generated (</s> included)
    int beam_size;        // 1 = greedy
    int n_best;           // hypotheses returned per sentence
    float length_penalty; // beams ranked by logprob / length^length_penalty
    int min_len;          // </s> not produced before this many tokens
    float max_len_ratio;  // > 0: at most ceil(ratio * source tokens) + 1 tokens
    int sampling_topk;    // 1 = greedy, 0 = sample from all, k = from the top k
    float sampling_topp;  // nucleus mass (1 = off)
    float temperature;    // sampling temperature
    int seed;             // sampling: each sentence draws from a stream of (seed, its ids)
    // The repetition guard, with CTranslate2's meaning, in every search:
    // before a step, the logit of each token id the hypothesis already holds
    // is divided by repetition_penalty when positive, multiplied when not
    // (1: off); a token that would complete an n-gram of no_repeat_ngram_size
    // tokens already in the hypothesis is never chosen (0: off). Log-probs
    // and scores are those of the guarded logits.
    float repetition_penalty;
    int no_repeat_ngram_size;
    // No stutter: a token never directly follows itself unless the source
    // holds two equal adjacent tokens (<unk>s aside), and a <unk> never
    // directly follows a <unk> that copies the same source token (the most
    // attended one, as for unk_src), in every search. A mask, as min_len's:
    // the log-probs and scores stay the model's.
    bool no_immediate_repeat;
    // Fill s2s_hypothesis.unk_src: for each <unk> produced, the source token
    // the model's alignment head (s2s_model_head, S2S_HEAD_ALIGN; else the
    // mean of every layer and head) attends to most at that step.
    bool replace_unknowns;
    s2s_compute_type compute_type;  // decoding's matrix products
} s2s_decode_config;

typedef enum s2s_schedule {
    S2S_SCHEDULE_CONSTANT,
    S2S_SCHEDULE_NOAM,
    S2S_SCHEDULE_INVERSE_SQRT,
    S2S_SCHEDULE_COSINE,
    S2S_SCHEDULE_COUNT
} s2s_schedule;

typedef enum s2s_best_metric {
    S2S_BEST_BLEU,
    S2S_BEST_LOSS,
    S2S_BEST_EXACT_MATCH,
    S2S_BEST_COUNT
} s2s_best_metric;

// What training keeps for the backward pass (train.checkpoint_activations).
typedef enum s2s_checkpointing {
    S2S_CHECKPOINT_NONE,   // every activation
    S2S_CHECKPOINT_LAYER,  // each layer's input; its sublayers run again in the backward pass
    S2S_CHECKPOINT_COUNT
} s2s_checkpointing;

// The number type of training's matrix products (train.compute_type):
// the weights, gradients, Adam moments, softmax, LayerNorm and loss are
// fp32 either way.
typedef enum s2s_train_compute {
    S2S_TRAIN_FP32,
    S2S_TRAIN_BF16,  // products on bf16 copies of their operands, summed in fp32
    S2S_TRAIN_COMPUTE_COUNT
} s2s_train_compute;

// Training data: TSV files of source<TAB>target[<TAB>alignment[<TAB>coref]] lines.
typedef struct s2s_data_config {
    char train[S2S_PATH_MAX];  // resolved against the config file's folder
    char dev[S2S_PATH_MAX];    // unset: no validation
} s2s_data_config;

// The heads a model has a use for, each in one attention: the alignment
// head (a decoder layer's cross-attention head, whose weights align target
// words with source words) and the coreference head (an encoder layer's
// self-attention head, attending from source pronouns to their
// antecedents). Training can guide each (s2s_train_config.guided), and a
// model stores the ones calibrated to do it best (s2s_model_head).
typedef enum s2s_head_role {
    S2S_HEAD_ALIGN,  // decoder cross-attention (S2S_ATTN_MAP_CROSS)
    S2S_HEAD_COREF,  // encoder self-attention (S2S_ATTN_MAP_ENC)
    S2S_HEAD_ROLE_COUNT
} s2s_head_role;

// One guided head: an extra cross-entropy loss pulling one attention head
// towards gold links. Guided alignment (Marian's --guided-alignment,
// train.guided_alignment) pulls a cross-attention head towards the gold
// word alignments of the training TSV's third column; guided coreference
// (train.guided_coref) an encoder self-attention head from each source
// pronoun to its gold antecedent (fourth column). In a config, a nested
// mapping of layer, head and weight; the stack is no key but the role's,
// which s2s_config_default sets (validation refuses another).
typedef struct s2s_guided_head {
    s2s_attn_map stack;  // the role's attention: CROSS (alignment), ENC (coreference)
    int layer;           // layer of that stack, from 0; -1: off
    int head;            // head of that layer's attention, from 0
    float weight;        // factor of the guided loss added to the cross-entropy
} s2s_guided_head;

// How `s2s train` trains (s2s/train.h).
typedef struct s2s_train_config {
    float lr;
    s2s_schedule schedule;
    int warmup_steps;
    int batch_tokens;           // padded source + target tokens per batch
    int seed;                   // init, data order, dropout
    bool shuffle;
    int max_steps;
    int valid_every;            // 0: never
    int save_every;             // 0: only at the end
    int grad_norms_every;       // the log's grad_norms every N steps; 0: never
    int patience;               // 0: no early stopping
    float label_smoothing;
    float adam_betas[2];
    float adam_eps;
    float weight_decay;         // decoupled (AdamW)
    float clip_norm;            // 0: off
    char log[S2S_PATH_MAX];     // "": train.log beside the output
    s2s_best_metric best_metric;
    char output[S2S_PATH_MAX];  // the model `s2s train` writes (-o overrides)
    // Indexed by s2s_head_role: train.guided_alignment, train.guided_coref.
    s2s_guided_head guided[S2S_HEAD_ROLE_COUNT];
    float unk_replace;          // share of 1-1 aligned word pairs made <unk>; 0: off
    s2s_checkpointing checkpoint_activations;
    s2s_train_compute compute_type;
    int attention_chunk;        // keys per block of exact chunked attention; 0: off
} s2s_train_config;

typedef struct s2s_config {
    s2s_model_config model;
    s2s_vocab_config vocab;
    s2s_decode_config decode;
    s2s_data_config data;
    s2s_train_config train;
} s2s_config;

// Fills every field with its schema default.
S2S_API void s2s_config_default(s2s_config *cfg);

// Parses a YAML file over the values already in cfg (usually the defaults).
// Relative paths in it are joined to the file's folder and cleaned of "./"
// and "dir/.." (see s2s_config_absolute_paths). A file larger than
// S2S_CONFIG_MAX_BYTES is refused with S2S_ERR_CONFIG.
// On failure returns S2S_ERR_CONFIG (or S2S_ERR_IO) and s2s_last_error()
// holds every problem found, one per line, as "file:line:col: message",
// each followed by the offending source line and a caret. cfg may then be
// partly written.
//
// A top-level `base: other.yaml` (relative to the file's folder) is read
// first, so the file's own keys override it; bases chain, and a cycle is
// an error reported at the `base:` value that closes it.
S2S_API s2s_status s2s_config_load_file(s2s_config *cfg, const char *path);

// s2s_config_load_file, then the overrides sets[0..n_sets) ("section.key=
// value", as --set gives them) in order, then the cross-field checks on
// the result, so the precedence is base < file < overrides and an override
// can fix what the file alone would fail. Problems in the file and in the
// overrides are reported together.
S2S_API s2s_status s2s_config_load_file_set(s2s_config *cfg, const char *path,
                                            const char *const *sets, int n_sets);

// The same for YAML text; `name` stands for the file name in messages and
// relative paths resolve against `base_dir` (NULL: leave them as written).
S2S_API s2s_status s2s_config_load_string(s2s_config *cfg, const char *text,
                                          const char *name, const char *base_dir);

// Applies one override "section.key=value" (as --set does), validated like
// a file value; a nested key is "train.guided_alignment.layer=1". Errors
// name the override (with a did-you-mean at the misspelt level).
S2S_API s2s_status s2s_config_set(s2s_config *cfg, const char *assignment);

// Cross-field checks (d_model % heads, odd d_model, ...).
S2S_API s2s_status s2s_config_validate(const s2s_config *cfg, const char *name);

// The effective config as YAML text, every key spelled out, a comment on
// each value equal to its default. Caller frees. NULL on out of memory.
S2S_API char *s2s_config_to_yaml(const s2s_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
