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

// S2S_MAX_WEIGHTS and S2S_MAX_TENSORS, the largest model s2s makes or
// loads, are in s2s/config.h, whose checks refuse a config beyond them.
// The sinusoidal position table (model.max_len x model.d_model floats) may
// be as large as the weights, or as S2S_POSITION_TABLE_MIN floats if that
// is more: so the floats a model file makes the loader allocate are backed
// by the file's own data, and a small model may still take long inputs.
#define S2S_POSITION_TABLE_MIN ((size_t)1 << 20)

typedef struct s2s_model s2s_model;

// A randomly initialised model for cfg: Glorot-uniform matrices, zero
// biases, LayerNorm weights 1. The vocabularies are read from
// cfg->vocab.src and cfg->vocab.tgt. Same seed, same weights. Refuses
// (S2S_ERR_CONFIG) a config beyond the limits above.
S2S_API s2s_status s2s_model_init(s2s_model **out, const s2s_config *cfg, uint64_t seed);

// Reads a model file. Refuses (S2S_ERR_FORMAT, one line naming the file)
// truncated or corrupt files, a wrong format version, a stored config
// beyond the limits above, missing tensors, wrong shapes, unknown tensors,
// and weights that are not finite (NaN, Inf), naming the tensor. Every
// tensor the stored config implies is checked against the file before
// anything is allocated for it.
S2S_API s2s_status s2s_model_load(s2s_model **out, const char *path);

// Writes the model atomically (temp file, fsync, rename).
S2S_API s2s_status s2s_model_save(const s2s_model *m, const char *path);

// Writes m with the matrices decoding multiplies (self-attention, feed-
// forward, an untied generator) stored as I8 with one F32 scale per row
// (tensor NAME_scale) or as BF16, atomically (docs/model-format.md).
// s2s_model_load reads such a file back, dequantised; quantising it again
// to the same type gives the same bytes. t is S2S_COMPUTE_INT8 or _BF16.
S2S_API s2s_status s2s_model_save_quantized(const s2s_model *m, const char *path,
                                            s2s_compute_type t);

S2S_API void s2s_model_free(s2s_model *m);

S2S_API const s2s_config *s2s_model_get_config(const s2s_model *m);
S2S_API const s2s_vocab *s2s_model_src_vocab(const s2s_model *m);
S2S_API const s2s_vocab *s2s_model_tgt_vocab(const s2s_model *m);

// What compute type t means on this CPU: t itself, or for
// S2S_COMPUTE_AUTO bf16 where the CPU has AVX512_BF16, else int8 where it
// has VNNI, else fp32 (docs/benchmarks.md has the measurements).
S2S_API s2s_compute_type s2s_compute_type_resolve(s2s_compute_type t);

// The number type of m's decoding products: the resolved decode.compute_type
// of its config at load, or as last set. Never S2S_COMPUTE_AUTO.
S2S_API s2s_compute_type s2s_model_compute_type(const s2s_model *m);

// Decodes from now on in type t (resolved as above); the int8 or bf16
// copy of the weights is made on the next decode. Fails with S2S_ERR_BUSY
// while the model is decoded, S2S_ERR_INVALID for an unknown t.
S2S_API s2s_status s2s_model_set_compute_type(s2s_model *m, s2s_compute_type t);

// A read-only view of one tensor, for inspection and for independent
// re-computation. Taking views never changes the model, so any thread may
// take and read them while others decode; data stays valid, and shows the
// current weights, until the model is freed. Weights change only through
// s2s_model_set_tensor, which no decode overlaps; a thread reading a view
// while another writes that tensor races with it, as with any memory.
typedef struct s2s_tensor_info {
    const char *name;
    int ndim;
    int64_t shape[4];
    const float *data;  // shape[0] x shape[1] (1-D: shape[0]) floats, row-major
} s2s_tensor_info;

// The layer and head of the model's head for role (s2s_head_role), as a
// calibration stored them: for S2S_HEAD_ALIGN the decoder cross-attention
// plane that aligns best (`s2s align --calibrate`, metadata
// s2s.alignment_layer / _head), for S2S_HEAD_COREF the encoder
// self-attention plane that finds pronouns' antecedents best (`s2s probe
// coref --calibrate`, s2s.coref_layer / _head); -1 stands for the average
// over all layers or heads. Returns false when the model has none (or role
// is not a role).
S2S_API bool s2s_model_head(const s2s_model *m, s2s_head_role role, int *layer, int *head);
// Sets them (saved with the model; -1: average). Fails on out-of-range
// values (the layers of the role's stack, the model's heads).
S2S_API s2s_status s2s_model_set_head(s2s_model *m, s2s_head_role role, int layer, int head);
// The share of a row's largest weight from which the hard alignment also
// links other source words (s2s_hard_align's share), as `s2s align --calibrate`
// chose it with the head (metadata s2s.alignment_share); 1 (the largest
// alone) when the model has none.
S2S_API float s2s_model_alignment_share(const s2s_model *m);
// Sets it (saved with the alignment head); fails outside (0, 1].
S2S_API s2s_status s2s_model_set_alignment_share(s2s_model *m, float share);

S2S_API int s2s_model_tensor_count(const s2s_model *m);
// The i-th tensor (0 <= i < count).
S2S_API s2s_tensor_info s2s_model_tensor(const s2s_model *m, int i);
// The tensor of that name; data is NULL when there is none.
S2S_API s2s_tensor_info s2s_model_find_tensor(const s2s_model *m, const char *name);

// Copies count floats into the tensor of that name (count = its number of
// values, row-major); decoding uses them from its next call on. Returns
// S2S_ERR_INVALID when there is no such tensor or count is not its size,
// and S2S_ERR_BUSY, changing nothing, while another thread decodes with m
// (s2s_translate, s2s_score): writing then would change weights under a
// running decode. Values are copied as given, NaN included.
S2S_API s2s_status s2s_model_set_tensor(s2s_model *m, const char *name, const float *data,
                                        size_t count);

#ifdef __cplusplus
}
#endif
#endif
