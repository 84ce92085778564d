// The network, described once (internal). Made from `model:`, it says for
// each stack which sublayers a layer has, in order, and for each attention
// which keys its queries see (its pattern; layers/mask.h applies it).
// Whatever walks the network reads it: the weight layout (model/model.c)
// and the weight-count rule (config/schema.c), the inference layers
// (layers/transformer.c), the decoding state's sizes (decoding/state.c)
// and the training graph (train/graph.c).
//
// Every layer of a stack has one LayerNorm per sublayer, and its tensors
// are named "<stack>.layers.<l>.<sublayer>.*" and "<stack>.layers.<l>.<norm>.*"
// (docs/model-format.md).
#ifndef S2S_CONFIG_ARCH_H
#define S2S_CONFIG_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "s2s/config.h"

// Which keys an attention's queries see, besides key padding, and how
// they weigh them: in one layer, the heads in `heads` follow `kind` and
// the others are full (s2s_pattern_head); every head keeps the causal cut.
typedef struct s2s_attn_pattern {
    s2s_attn_type kind;
    int span;        // local: the window; block: the block; strided: the stride
    uint64_t heads;  // bit h: head h follows kind
    bool causal;     // and no key after the query's own position
} s2s_attn_pattern;

// The kind head h of a layer with pattern p runs.
static inline s2s_attn_type s2s_pattern_head(const s2s_attn_pattern *p, int64_t h) {
    return h < 64 && (p->heads >> h & 1) ? p->kind : S2S_ATTN_FULL;
}

// Whether any head of p is linear (its queries and keys go through phi).
static inline bool s2s_pattern_linear(const s2s_attn_pattern *p) {
    return p->kind == S2S_ATTN_LINEAR && p->heads;
}

typedef enum s2s_sub_kind {
    S2S_SUB_SELF_ATTN,   // queries, keys and values from the stack's own stream
    S2S_SUB_CROSS_ATTN,  // keys and values from the encoder's output
    S2S_SUB_FFN,         // the feed-forward block
} s2s_sub_kind;

enum { S2S_ARCH_MAX_SUBS = 3 };

typedef struct s2s_sublayer {
    s2s_sub_kind kind;
    const char *name;          // in its tensors' names: "self_attn", "cross_attn", "ffn"
    const char *norm;          // its LayerNorm's: "norm1", "norm2", "norm3"
    s2s_attn_pattern pattern;  // an attention's, in the layers of `layers`
    uint64_t layers;           // bit l: layer l follows pattern; the others are full
} s2s_sublayer;

typedef struct s2s_stack {
    const char *name;  // "encoder", "decoder"
    int layers;
    int n_subs;
    s2s_sublayer subs[S2S_ARCH_MAX_SUBS];  // in the order they run
} s2s_stack;

typedef struct s2s_arch {
    s2s_stack enc, dec;
} s2s_arch;

// The description of a network configured by c.
s2s_arch s2s_arch_make(const s2s_model_config *c);

// The pattern of sublayer sub in layer l.
s2s_attn_pattern s2s_sub_pattern(const s2s_sublayer *sub, int l);

// The index of s's first sublayer of that kind, or -1.
int s2s_stack_find(const s2s_stack *s, s2s_sub_kind kind);

// The stack whose attention map `map` shows (the encoder for
// S2S_ATTN_MAP_ENC, else the decoder), and in *sub the index of that
// attention's sublayer there (-1: none).
const s2s_stack *s2s_arch_map_stack(const s2s_arch *a, s2s_attn_map map, int *sub);

// What names a head role (s2s_head_role) and where its head is: the one
// table that the guided losses (config, batch, graph, log) and a model's
// calibrated heads (metadata) read.
typedef struct s2s_role {
    s2s_attn_map stack;  // the attention its head is in
    const char *name;    // in messages: "alignment", "coreference"
    const char *key;     // its guided loss's config table: "train.guided_alignment"
    const char *log;     // its guided term in the training log: "guided", "coref"
    const char *meta;    // its plane's metadata prefix in a model file: "s2s.alignment"
} s2s_role;
extern const s2s_role s2s_roles[S2S_HEAD_ROLE_COUNT];

// Whether sublayer kind k is an attention.
static inline bool s2s_sub_is_attention(s2s_sub_kind k) { return k != S2S_SUB_FFN; }

// The weights of a sublayer (its LayerNorm aside), in the order a model's
// layout and file hold them: the one description of them, which the model's
// layout walk (model/model.c) lays out and s2s_stack_matrix_weights counts.
// Sizes are in units of D (d_model) and F (ffn_dim); cols 0: a vector.
typedef enum s2s_dim { S2S_DIM_NONE, S2S_DIM_D, S2S_DIM_F } s2s_dim;
typedef struct s2s_sub_weight {
    const char *suffix;  // after the sublayer's name: ".q_proj.weight"
    s2s_dim rows, cols;
} s2s_sub_weight;
enum { S2S_SUB_MAX_WEIGHTS = 8 };
// The weights of a sublayer of kind k: *n of them.
const s2s_sub_weight *s2s_sub_weight_list(s2s_sub_kind k, int *n);

// The matrix weights of one layer of s (the matrices of s2s_sub_weight_list:
// attention's Q, K, V and out, D x D each; FFN's D x F twice), in double: a
// lower bound of its size that no config overflows.
double s2s_stack_matrix_weights(const s2s_stack *s, double d, double f);

#endif
