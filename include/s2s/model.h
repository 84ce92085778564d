// s2s/model.h — a Transformer translation model: weights, vocabularies and
// config in one safetensors file (docs/model-format.md).
//
// A model is read-only once loaded; decoding state lives in s2s_state
// (s2s/decode.h), so several threads can decode with one model.
//
//     s2s_model *m;
//     if (s2s_model_load(&m, "models/zh-en.safetensors") != S2S_OK) ...
//     ...
//     s2s_model_free(m);
#ifndef S2S_MODEL_H
#define S2S_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s2s/config.h"
#include "s2s/status.h"
#include "s2s/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

#define S2S_FORMAT_VERSION "1"

typedef struct s2s_model s2s_model;

// A randomly initialised model for cfg: Glorot-uniform matrices, zero
// biases, LayerNorm weights 1. The vocabularies are read from
// cfg->vocab.src and cfg->vocab.tgt. Same seed, same weights.
s2s_status s2s_model_init(s2s_model **out, const s2s_config *cfg, uint64_t seed);

// Reads a model file. Refuses (S2S_ERR_FORMAT, message naming the file)
// truncated or corrupt files, a wrong format version, missing tensors,
// wrong shapes and unknown tensors.
s2s_status s2s_model_load(s2s_model **out, const char *path);

// Writes the model atomically (temp file, fsync, rename).
s2s_status s2s_model_save(const s2s_model *m, const char *path);

void s2s_model_free(s2s_model *m);

const s2s_config *s2s_model_get_config(const s2s_model *m);
const s2s_vocab *s2s_model_src_vocab(const s2s_model *m);
const s2s_vocab *s2s_model_tgt_vocab(const s2s_model *m);

// Tensors in file order, for inspection and for independent
// re-computation in tests. data may be written; decoding, though,
// multiplies by its own transposed copy of some matrices, made again by
// the first decoding call after a call to s2s_model_tensor or
// s2s_model_find_tensor. So take the view after the last decoding call
// (or take one again) and write before the next.
typedef struct s2s_tensor_info {
    const char *name;
    int ndim;
    int64_t shape[4];
    float *data;
} s2s_tensor_info;

// The decoder layer and head whose cross-attention aligns best, as stored
// by `s2s align --calibrate` (metadata s2s.alignment_layer / _head); -1
// stands for the average over all layers or heads. Returns false when the
// model has none.
bool s2s_model_alignment_head(const s2s_model *m, int *layer, int *head);
// Sets them (saved with the model; -1: average). Fails on out-of-range values.
s2s_status s2s_model_set_alignment_head(s2s_model *m, int layer, int head);

int s2s_model_tensor_count(const s2s_model *m);
// The i-th tensor (0 <= i < count).
s2s_tensor_info s2s_model_tensor(const s2s_model *m, int i);
// The tensor of that name; data is NULL when there is none.
s2s_tensor_info s2s_model_find_tensor(const s2s_model *m, const char *name);
size_t s2s_model_param_count(const s2s_model *m);

#ifdef __cplusplus
}
#endif
#endif
