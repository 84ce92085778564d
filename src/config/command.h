// The config layer's functions for the s2s command (internal): the
// reference and schema it prints, presets, commented configs, diffs and
// the checks of `s2s config check`. A program using the library has
// s2s/config.h.
#ifndef S2S_CONFIG_COMMAND_H
#define S2S_CONFIG_COMMAND_H

#include <stdbool.h>
#include <stddef.h>

#include "s2s/config.h"

// The config name of t: "full", "local", "block", "strided" or "linear";
// NULL out of range.
const char *s2s_attn_type_name(s2s_attn_type t);

// Whether every key of a and b holds the same value, compared key by key
// with each type's own comparison (never bytewise, so struct padding does
// not matter; paths are equal when they name the same file).
bool s2s_config_equal(const s2s_config *a, const s2s_config *b);

// The key of t's parameter in its table: "window" (local), "block"
// (block), "stride" (strided); NULL for full, linear and out of range.
const char *s2s_attn_type_param(s2s_attn_type t);

// What a command needs of a config beyond its being valid: the keys a
// valid config may leave unset but the command refuses to run without.
typedef enum s2s_config_use {
    S2S_CONFIG_FOR_INIT,   // a fresh model (s2s init, s2s train): vocab.src, vocab.tgt
    S2S_CONFIG_FOR_TRAIN,  // a fresh training run: data.train, then INIT's keys
    S2S_CONFIG_FOR_COUNT,
} s2s_config_use;

// The keys `use` needs that cfg leaves unset, written into buf as a list
// ("data.train, vocab.src and vocab.tgt"; "" when none; cut to size).
// Returns how many. s2s_model_init and s2s_train refuse a config for which
// this is not 0, so `s2s config check` can say beforehand which commands a
// config is complete for. (train.output is left out: -o OUT stands for it.)
int s2s_config_unset_keys(const s2s_config *cfg, s2s_config_use use, char *buf, size_t size);

// Makes every path of cfg (vocab, data, train outputs) absolute against the
// working directory and canonical: no "./", no repeated '/', no "dir/.."
// (unless dir is a symbolic link). S2S_OK, or S2S_ERR_CONFIG when a path
// would not fit in S2S_PATH_MAX, S2S_ERR_IO without a working directory.
s2s_status s2s_config_absolute_paths(s2s_config *cfg);

// docs/config.md: every section and key with type, default, range and help,
// then the cross-field rules, as Markdown. Caller frees; NULL on out of memory.
char *s2s_config_reference(void);

// The JSON Schema (draft 2020-12) of a config file, generated from the same
// schema: every section and key with its type, enum, range, default and
// help, `base:`, and no other keys (additionalProperties: false). The
// cross-field rules stay with s2s_config_validate. Pretty-printed JSON
// ending in a newline (docs/config.schema.json); caller frees, NULL on out
// of memory.
char *s2s_config_json_schema(void);

// cfg as a starting config for a person to edit (`s2s config init`): every
// key spelled out, with a comment above it giving its meaning (the help),
// type, allowed values and default, and each section's help above it. The
// text loads back to cfg. `header` (NULL: none) becomes comment lines at
// the top. Caller frees; NULL on out of memory.
char *s2s_config_to_commented_yaml(const s2s_config *cfg, const char *header);

// Writes s2s_config_to_commented_yaml(cfg, header) to path safely (a
// reader sees the old file or the new one, never half; devices and FIFOs
// are written in place). S2S_ERR_IO naming path when the write fails.
s2s_status s2s_config_write_commented(const s2s_config *cfg, const char *header,
                                      const char *path);

// Fills cfg with the preset `name`: "demo", "zh-en" or "bench", the shapes
// (model, decode and train values) of configs/<name>.yaml (the file itself,
// embedded at build time) without its file paths, so a config made from it
// loads anywhere. S2S_ERR_CONFIG for another name (the message lists the
// presets).
s2s_status s2s_config_preset(s2s_config *cfg, const char *name);

// One key's entry of the reference, as plain text: "model.d_model: int
// (>= 1); default 512", its help, the keys of a table, and the cross-field
// rules that read it. key is a full path ("train.guided_alignment.layer"),
// a key name only one table has ("d_model"), or one that only one section
// has as its own key ("heads": model.heads, not the nested
// model.encoder_attention.heads). S2S_ERR_CONFIG for an
// unknown key, with a did-you-mean when a key is close; on success
// *out_text is the caller's to free.
s2s_status s2s_config_explain(const char *key, char **out_text);

// Only the sections a model file stores: `model:` (the architecture) and
// `decode:` (how it translates by default). Training, data and vocab paths
// belong to the machine that trained it. Caller frees.
char *s2s_config_model_to_yaml(const s2s_config *cfg);

// How b differs from a: one line per key whose values differ, in schema
// order, as "model.d_model: 64 -> 128\n" (values spelled as in YAML);
// "" when they are equal (paths naming the same file are equal).
// model_only: compare the `model:` section only.
// *out_text is the caller's to free. Returns S2S_OK or S2S_ERR_NOMEM.
s2s_status s2s_config_diff(const s2s_config *a, const s2s_config *b, bool model_only,
                           char **out_text);

// Whether a and b describe the same architecture: every `model:` key that
// changes what the network computes is equal (model.dropout may differ, as
// may every other section).
bool s2s_config_same_arch(const s2s_config *a, const s2s_config *b);

// S2S_OK when the config stored in a model file (`stored`, from the file
// named model_name) has the architecture of the `model:` section of
// `wanted` (from config_name); otherwise S2S_ERR_CONFIG with a message
// listing each key that differs:
//   "m.safetensors: the model's architecture differs from c.yaml:
//      model.d_model: 64 in the model, 128 in the config"
s2s_status s2s_config_check_arch(const s2s_config *stored, const char *model_name,
                                 const s2s_config *wanted, const char *config_name);

#endif
