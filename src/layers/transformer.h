// Encoder and decoder layers (internal). Each takes the residual stream x,
// updates it in place, and uses caller-owned scratch; nothing allocates.
//
// Dimension letters: B sentences, S source rows, T target rows held by the
// self-attention cache, Tq rows computed now (at positions t0..t0+Tq-1),
// D model width, F FFN width, H heads.
#ifndef S2S_LAYERS_TRANSFORMER_H
#define S2S_LAYERS_TRANSFORMER_H

#include "model/model_internal.h"

// When the encoder's self-attention, keeping no weights, takes its fast
// path (s2s_attention_sparse, layers/attention.h): where it pays, the
// default; never (a test's reference); wherever it fits (a test's).
typedef enum s2s_sparse_mode {
    S2S_SPARSE_AUTO,
    S2S_SPARSE_NEVER,
    S2S_SPARSE_ALWAYS,
    S2S_SPARSE_MODE_COUNT
} s2s_sparse_mode;

typedef struct s2s_scratch {
    float *h;      // (B*Tq, D) normed input of a sublayer (pre-norm)
    float *q;      // (B*Tq, 3D) projections
    float *ctx;    // (B*Tq, D) attention output before out_proj
    float *ffn;    // (B*Tq, F) FFN hidden
    float *probs;  // (B, H, Tq, max(Tk)) attention weights; the encoder's fast
                   // paths' scratch (s2s_encoder_scratch_floats)
    float *block;      // (B*K*H, D) zeros (but where attention writes), and
    float *block_ctx;  // (B*K*H, D): steps' attention (s2s_attn_shape.block), Tq = 1
    // Which encoder layers take the fast path (s2s_sparse_mode).
    s2s_sparse_mode sparse;
} s2s_scratch;

// Floats of s2s_scratch.probs an encoder layer of m needs for B sentences
// of S rows when it keeps no weights (probs NULL): (B, H, S, S) for a
// layer whose self-attention runs s2s_attention, what
// s2s_attention_sparse_floats says for one that takes the fast path (as
// mode decides); the most any layer needs. SIZE_MAX when that does not
// fit in a size_t.
size_t s2s_encoder_scratch_floats(const s2s_model *m, int64_t B, int64_t S,
                                  s2s_sparse_mode mode);

// x (B, S, D). src_len (B) masks padded keys. probs (B, H, S, S) receives
// the self-attention weights, or NULL to keep them in scratch; with NULL,
// a layer whose every self-attention head is local, block, strided or
// linear takes the fast path (layers/attention.h), whose weights are
// nowhere.
s2s_status s2s_encoder_layer(float *x, s2s_scratch *s, const s2s_model *m, int l,
                             const s2s_layer_weights *w, int64_t B, int64_t S,
                             const int *src_len, float *probs);

// kv (B, S, 2D) = memory · [W_k; W_v]^T + [b_k; b_v]: decoder layer l's
// cross-attention keys (through s2s_attention_features) and values,
// computed once per sentence.
s2s_status s2s_cross_kv(float *kv, const float *memory, const s2s_model *m, int l,
                        const s2s_attn_weights *a, int64_t B, int64_t S);

// Cross-attention folded ahead (s2s_cross_fold): per sentence and head, the
// query projection is multiplied into the keys and the output projection
// into the values,
//   scores_h = x · (W_q,h^T K_h^T) + b_q,h · K_h^T,   out = Σ_h P_h · (V_h W_out,h^T)
// so a decoding step makes two products instead of four and never reads
// W_q or W_out. It reads H*S*D floats per sentence and product instead of
// S*D plus the D*D weights: it pays for few sentences of short sources.
typedef struct s2s_cross_folded {
    float *qk;  // (B, H, S, D) W_q,h^T k_s / sqrt(Dh)
    float *qb;  // (H, B, S) b_q,h · k_s / sqrt(Dh)
    float *vo;  // (B, H, S, D) v_s W_out,h^T + b_out / H (rows of P sum to 1)
} s2s_cross_folded;

// Whether folding pays for B sentences of S source rows (each step reads
// (H-1)*S*D more floats per sentence, and D*D fewer per product).
// Only a model without linear cross-attention heads folds.
bool s2s_cross_fold_pays(const s2s_model *m, int64_t B, int64_t S);
bool s2s_cross_fold_works(const s2s_model *m);

// Floats s2s_cross_fold writes for B sentences of S rows, per layer.
int64_t s2s_cross_fold_size(const s2s_model *m, int64_t B, int64_t S);

// Fills f (laid out in s2s_cross_fold_size floats at f->qk) from kv.
s2s_status s2s_cross_fold(const s2s_cross_folded *f, const float *kv, const s2s_model *m,
                          const s2s_attn_weights *a, int64_t B, int64_t S);

// ---- the decoder's self-attention state ----
//
// What a decoder layer's self-attention keeps of the positions before a
// step, per sequence (docs/attention.md, "Decoding state"). Steps of one
// row per sequence (s2s_dec_pos.bounded) keep the bounded states of
// layers whose self-attention is local or linear on every head; the other
// layers, and passes of several rows (forced scoring), keep every
// position's keys and values.
typedef enum s2s_self_state {
    S2S_SELF_FULL,    // K|V of every position: (T, 2D)
    S2S_SELF_RING,    // local on every head, window w: K|V of the last R = min(w + 1, T)
                      // positions, position j in slot j % R: (R, 2D)
    S2S_SELF_LINEAR,  // linear on every head: per head phi(K)^T [V | 1] summed over the
                      // positions so far: (H, Dh, Dh + 1) (s2s_linear_attention_step)
    S2S_SELF_STATE_COUNT
} s2s_self_state;

// The bounded state decoder layer l's self-attention can keep in steps
// (S2S_SELF_FULL: none).
s2s_self_state s2s_self_state_of(const s2s_model *m, int l);

// Floats of state kind k of layer l per sequence, for up to T positions.
int64_t s2s_self_state_floats(const s2s_model *m, int l, s2s_self_state k, int64_t T);

// Keys a step's query row of layer l weighs with state kind k, for up to
// T positions: the width of its attention weights (0 for linear, which
// keeps none).
int64_t s2s_self_state_keys(const s2s_model *m, int l, s2s_self_state k, int64_t T);

typedef struct s2s_dec_pos {
    int64_t t0;        // position of the first row computed now
    int64_t tq;        // rows computed now
    int64_t t_alloc;   // rows of the self-attention cache per sequence
    int64_t beams;     // sequences per sentence (beam search), 1 otherwise
    bool bounded;      // tq == 1, and layers keep their s2s_self_state_of state
} s2s_dec_pos;

// x (B, K, Tq, D) with K = pos.beams sequences per sentence. self_kv
// (B*K, T_alloc, 2D) receives this layer's keys and values for positions
// t0..t0+Tq-1 and must hold those before t0; with pos.bounded, it is
// (B*K, s2s_self_state_floats) of the layer's s2s_self_state_of instead,
// which the step updates (a linear state is cleared at t0 = 0), and
// self_probs must be NULL. cross_kv (B, S, 2D) is shared
// by a sentence's K sequences: cross-attention runs per sentence with K*Tq
// query rows; with folded (or NULL) from s2s_cross_fold of the same kv, it
// runs folded. self_probs (B*K, H, Tq, t0+Tq) and cross_probs
// (B, H, K*Tq, S) receive the attention weights, or NULL to keep them in
// scratch.
s2s_status s2s_decoder_layer(float *x, s2s_scratch *s, const s2s_model *m, int l,
                             const s2s_layer_weights *w, float *self_kv, s2s_dec_pos pos,
                             const float *cross_kv, const s2s_cross_folded *folded, int64_t S,
                             const int *src_len, int64_t B, float *self_probs,
                             float *cross_probs);

#endif
