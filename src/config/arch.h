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

#include "s2s/config.h"

// Which keys an attention's queries see, besides key padding: the type a
// config gives (s2s_attn_type, s2s/config.h), so that the two cannot drift
// apart and a config's type is a pattern's kind as it stands.
typedef s2s_attn_type s2s_attn_kind;

typedef struct s2s_attn_pattern {
    s2s_attn_kind kind;
    bool causal;  // and none after the query's own position
} s2s_attn_pattern;

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
    s2s_attn_pattern pattern;  // an attention's
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

// The index of s's first sublayer of that kind, or -1.
int s2s_stack_find(const s2s_stack *s, s2s_sub_kind kind);

// Whether sublayer kind k is an attention.
static inline bool s2s_sub_is_attention(s2s_sub_kind k) { return k != S2S_SUB_FFN; }

// The matrix weights of one layer of s (attention: Q, K, V and out, D x D
// each; FFN: D x F twice), in double: a lower bound of its size that no
// config overflows.
double s2s_stack_matrix_weights(const s2s_stack *s, double d, double f);

#endif
