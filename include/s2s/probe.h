// s2s/probe.h — what attention does, measured: the √d_k scale of the
// scores, each head's pattern, and what the positional encoding breaks
// (docs/attention-lab.md).
//
//     s2s_scale_stats r;
//     s2s_scale_random(&r, 64, 256, /*seed=*/1);   // r.std_unscaled ≈ 8, r.std_scaled ≈ 1
//
//     s2s_attn_probe *p;
//     s2s_attn_probe_new(&p, m);
//     // decode with want_attention and want_self_attention, then per sentence:
//     s2s_attn_probe_add(p, &h);
//     s2s_head_stats hs;
//     s2s_attn_probe_head(p, S2S_ATTN_MAP_ENC, 0, 2, &hs);  // hs.label: S2S_HEAD_PREVIOUS, ...
//
// Positions: row i of a map is query position i and column j key
// position j, as in a hypothesis (s2s/decode.h): source positions for the
// encoder, decoder positions (<s> at 0) for the decoder's self-attention,
// output t against source position j for cross-attention (whose |i - j|
// is the distance from the diagonal).
#ifndef S2S_PROBE_H
#define S2S_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "s2s/align.h"
#include "s2s/decode.h"
#include "s2s/status.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- the scale of the scores ----

// The scores of softmax rows with and without 1/√d_k. Each row is
// measured over the keys its query sees; every figure is a mean over rows.
// std is the pooled within-row standard deviation, sqrt(mean over rows of
// the row's unbiased variance): softmax only sees a row's differences,
// and a row's constant is not known from its weights. Entropies in nats.
typedef struct s2s_scale_stats {
    int d_k;
    long long rows;            // rows measured (each sees 2 keys or more)
    long long underflow_rows;  // rows left out: a weight of 0 (scores recovered from weights only)
    double std_unscaled, std_scaled;                // of Q·Kᵀ and Q·Kᵀ / √d_k
    double max_weight_unscaled, max_weight_scaled;  // a row's largest softmax weight
    double entropy_unscaled, entropy_scaled;        // a row's softmax entropy
} s2s_scale_stats;

// The figures for n queries and n keys of d_k values each, drawn from
// N(0, 1) by a generator seeded with seed (the same seed gives the same
// figures). S2S_ERR_INVALID when d_k or n < 2, S2S_ERR_NOMEM.
S2S_API s2s_status s2s_scale_random(s2s_scale_stats *out, int d_k, int n, uint64_t seed);

// ---- the heads of a model ----

typedef enum s2s_head_label {
    S2S_HEAD_SPECIAL,   // "</s>": at least half the weight on the special token
    S2S_HEAD_PREVIOUS,  // "previous": at least half on key i - 1
    S2S_HEAD_NEXT,      // "next": at least half on key i + 1
    S2S_HEAD_LOCAL,     // "local": at least 0.6 on keys |i - j| <= 1, twice what uniform weights give
    S2S_HEAD_CONTENT,   // "content": none of these; where it looks depends on the words
    S2S_HEAD_LABEL_COUNT
} s2s_head_label;

// "</s>", "previous", "next", "local", "content"; NULL out of range.
S2S_API const char *s2s_head_label_name(s2s_head_label l);

// One head's pattern over the rows of every sentence added: each figure a
// mean over the rows that see 2 keys or more (a decoder's first row sees
// only <s>).
typedef struct s2s_head_stats {
    long long rows;
    double distance;  // sum_j w_ij |i - j|
    double entropy;   // -sum_j w_ij ln w_ij, nats
    double special;   // weight on the special token: </s> (encoder, cross), <s> (decoder self)
    double width95;   // the fewest keys holding 95% of the row's weight
    double previous;  // weight on j = i - 1 over the rows that see it; NaN when none does
    double next;      // weight on j = i + 1 likewise (NaN in decoder self-attention)
    double local;     // weight on |i - j| <= 1
    double local_uniform;  // what uniform weights over the seen keys put there
    s2s_head_label label;  // the first rule of s2s_head_label that holds
} s2s_head_stats;

// The label of h's figures, by the rules of s2s_head_label in its order.
S2S_API s2s_head_label s2s_head_label_of(const s2s_head_stats *h);

// Every head of every map of a model, measured over sentences: the figures
// of s2s_head_stats and of s2s_scale_stats, the latter from the weights
// alone: log w_ij = s_ij / √d_k - log sum_j exp(s_ij / √d_k), so a row's
// log-weights are its scaled scores less a constant, exactly, and the
// unscaled row is √d_k times them (d_k: the model's head width). A row
// with a weight of 0 (exp underflowed) is left out of these figures and
// counted. Linear heads (no softmax) have no scale figures.
typedef struct s2s_attn_probe s2s_attn_probe;

S2S_API s2s_status s2s_attn_probe_new(s2s_attn_probe **out, const s2s_model *m);
S2S_API void s2s_attn_probe_free(s2s_attn_probe *p);

// Adds one sentence: every map h holds (cross_attn, and self_attn and
// enc_attn with want_self_attention). S2S_ERR_INVALID when h's layers or
// heads are not the model's, or it holds no map; S2S_ERR_NOMEM.
S2S_API s2s_status s2s_attn_probe_add(s2s_attn_probe *p, const s2s_hypothesis *h);

// Adds one plane w (rows, cols) of map `map`, layer, head: the weights of
// the keys its head's pattern lets each row see (s2s_head_pattern_sees;
// causal for decoder self-attention), each row summing to 1. The special
// token is column cols - 1 (enc, cross) or 0 (self). S2S_ERR_INVALID for a
// plane out of range, S2S_ERR_NOMEM.
S2S_API s2s_status s2s_attn_probe_add_plane(s2s_attn_probe *p, s2s_attn_map map, int layer,
                                            int head, const float *w, int rows, int cols);

// The maps the probe has sentences of (a hypothesis without self_attn
// leaves the encoder's and the decoder's self-attention out).
S2S_API bool s2s_attn_probe_has(const s2s_attn_probe *p, s2s_attn_map map);

// A head's figures. False for a plane out of range, and for scale on a
// linear head.
S2S_API bool s2s_attn_probe_head(const s2s_attn_probe *p, s2s_attn_map map, int layer, int head,
                                 s2s_head_stats *out);
S2S_API bool s2s_attn_probe_scale(const s2s_attn_probe *p, s2s_attn_map map, int layer, int head,
                                  s2s_scale_stats *out);

// ---- permutation equivariance ----

// Self-attention without positions commutes with permuting its rows:
// f(P x) = P f(x). With the positional encoding added, it does not.
typedef struct s2s_equivariance {
    int n;                     // rows permuted: the source tokens and </s>
    double without_positions;  // max |f(P x) - P f(x)| over the encoder's output, no positions
    double with_positions;     // the same with the positional encoding
    double largest;            // max |f(x)| without positions (for scale)
} s2s_equivariance;

// Runs st's model's encoder (all its layers and final norm) on the n
// source ids and </s>, and on them permuted by a random permutation drawn
// with seed (perm, n + 1 ints or NULL, receives it: row i of P x is row
// perm[i] of x), with and without the positional encoding. A model whose
// encoder self-attention is not full on every head is refused
// (S2S_ERR_INVALID): a local, block or strided head sees keys by position
// whatever the encoding, and is not equivariant. S2S_ERR_INVALID when n
// < 1 or too long for the model; the encoder's errors.
S2S_API s2s_status s2s_probe_equivariance(s2s_state *st, const int *ids, int n, uint64_t seed,
                                          int *perm, s2s_equivariance *out);

#ifdef __cplusplus
}
#endif
#endif
