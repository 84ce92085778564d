// The model's weights as the layers see them (internal).
//
// All parameters live in one block (params). q_proj, k_proj and v_proj of
// an attention block are stored next to each other, so the stacked
// (3D, D) matrix serves one fused QKV product, and rows D..3D the fused
// K/V product of cross-attention.
#ifndef S2S_MODEL_INTERNAL_H
#define S2S_MODEL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/arch.h"
#include "model/safetensors.h"
#include "ops/matmul.h"
#include "s2s/model.h"

typedef struct s2s_attn_weights {
    float *w_qkv;  // (3D, D) q_proj, k_proj, v_proj weights stacked
    float *b_qkv;  // (3D)
    float *w_out;  // (D, D)
    float *b_out;  // (D)
    bool transposed;  // w_qkv and w_out transposed, (D, 3D) and (D, D): s2s_decode_weights
    // s2s_decode_weights: W_qkv^T and W_out^T in the compute type (the
    // transposed fp32 copy above for fp32); w NULL in the model's own.
    // Cross-attention's in bf16 only: qkv then holds W_q^T (D, D) and kv
    // W_kv^T (D, 2D).
    s2s_wmat qkv, out, kv;
} s2s_attn_weights;

typedef struct s2s_norm_weights {
    float *w, *b;  // (D)
} s2s_norm_weights;

typedef struct s2s_ffn_weights {
    float *w1, *b1;  // (F, D), (F)
    float *w2, *b2;  // (D, F), (D)
    bool transposed;  // w1 and w2 transposed, (D, F) and (F, D): s2s_decode_weights
    s2s_wmat m1, m2; // s2s_decode_weights: W1^T, W2^T in the compute type, as for attention
} s2s_ffn_weights;

// One sublayer's weights: its LayerNorm and, by its kind, its attention or
// its feed-forward block.
typedef struct s2s_sub_weights {
    s2s_norm_weights norm;
    s2s_attn_weights attn;  // an attention's
    s2s_ffn_weights ffn;    // a feed-forward block's
} s2s_sub_weights;

// One layer of a stack: its sublayers in the order of the stack's
// description (config/arch.h; s2s_model.arch).
typedef struct s2s_layer_weights {
    s2s_sub_weights sub[S2S_ARCH_MAX_SUBS];
} s2s_layer_weights;

typedef enum s2s_param_kind {
    S2S_PARAM_MATRIX,   // Glorot-uniform
    S2S_PARAM_BIAS,     // zeros
    S2S_PARAM_NORM_W,   // ones
    S2S_PARAM_COUNT
} s2s_param_kind;

typedef struct s2s_param {
    char name[64];
    int ndim;
    int64_t shape[2];
    s2s_param_kind kind;
    float *data;
} s2s_param;

struct s2s_model {
    s2s_config cfg;
    s2s_arch arch;  // the network cfg.model describes
    s2s_vocab *src_vocab, *tgt_vocab;

    float *params;  // every weight, one block
    size_t n_params;
    s2s_param *tensors;  // (n_tensors) file order
    int n_tensors;

    float *src_embed;  // (Vs, D)
    float *tgt_embed;  // (Vt, D)
    float *gen_w;      // (Vt, D): generator.weight, or tgt_embed when tied
    float *gen_b;      // (Vt)
    s2s_layer_weights *enc;  // (encoder_layers)
    s2s_layer_weights *dec;  // (decoder_layers)
    s2s_norm_weights enc_norm, dec_norm;  // pre-norm only

    float *pe;  // (max_len, D) sinusoidal positions, not a parameter

    // The calibrated heads by s2s_head_role (s2s_model_head): the alignment
    // head by `s2s align --calibrate`, the coreference head by `s2s probe
    // coref --calibrate`.
    struct s2s_role_head {
        bool set;
        int layer, head;  // -1: the average over layers / heads
    } heads[S2S_HEAD_ROLE_COUNT];
    float align_share;    // s2s_model_alignment_share; 1 when not calibrated

    uint64_t generation;                // bumped whenever the weights change
    struct s2s_decode_weights *decode;  // made from some generation, or NULL
    s2s_compute_type compute;           // of decoding's products; never AUTO

    // Held for reading by every running decode (s2s_model_acquire), for
    // writing by s2s_model_set_tensor, which therefore fails instead of
    // changing weights, and freeing the decoding copy, under a decode.
    pthread_rwlock_t use;
};

// Marks m in use by a decode (s2s_translate, s2s_score) until the matching
// s2s_model_release; several decodes may hold it at once. Waits while
// s2s_model_set_tensor is copying weights (a memcpy). Fails only when the
// system runs out of read locks.
s2s_status s2s_model_acquire(const s2s_model *m);
void s2s_model_release(const s2s_model *m);

// s2s_model_save with extra tensors and metadata in the same file (a
// training checkpoint: src/train/checkpoint.c). Extra tensor names must
// start with "train.", which s2s_model_load skips.
s2s_status s2s_model_save_extra(const s2s_model *m, const char *path, const s2s_st_tensor *extra,
                                int n_extra, const s2s_st_meta *extra_meta, int n_extra_meta);

// s2s_model_save_extra with the model's own tensors given as `own`
// (n_tensors, in m's order; NULL: m's F32 weights): a quantised copy.
s2s_status s2s_model_save_as(const s2s_model *m, const char *path, const s2s_st_tensor *own,
                             const s2s_st_tensor *extra, int n_extra,
                             const s2s_st_meta *extra_meta, int n_extra_meta);

// The weights as decoding reads them (src/model/decode_weights.c): the
// self-attention, feed-forward and generator matrices transposed to
// (in, out), which oneDNN multiplies faster than nn.Linear's (out, in)
// when a product has few rows, as a decoding step's have (greedy batch 1
// about 7% faster, beams of 4 about 18%: docs/benchmarks.md). Every other
// pointer, cross-attention's included, is the model's own.
//
// With an int8 or bf16 compute type the products of self-attention, the
// feed-forward blocks and the generator read s2s_wmat copies in that type
// (made from the transposed fp32 matrices, which are then dropped, and
// the fp32 pointers point back at the model's own matrices).
// Cross-attention stays fp32 but in bf16 (where every product of more
// than one row runs in bf16: ops/matmul.h): its K/V are made once per
// sentence and, at small batches, folded into per-step products that no
// longer read its weights.
typedef struct s2s_decode_weights {
    s2s_layer_weights *enc;    // (encoder_layers)
    s2s_layer_weights *dec;    // (decoder_layers)
    const float *gen_w;        // (D, Vt) fp32: with an int8 or bf16 copy, unused
    s2s_wmat gen;              // (D, Vt) in the compute type
    void *block;               // the transposed matrices, in the compute type
    size_t block_n;            // elements in block (s2s_big_alloc)
    float *scales;             // int8: every matrix's column scales
    int32_t *comps;            // int8: and column compensations
    uint64_t generation;       // of the weights they were made from
    s2s_compute_type compute;  // FP32, INT8 or BF16
} s2s_decode_weights;

// The decoding copy of m's weights, made on first use and made again when
// m's generation moved on. Thread-safe; the copy stays valid until the
// weights change.
s2s_status s2s_model_decode_weights(const s2s_model *m, const s2s_decode_weights **out);

// Records that m's weights changed (an optimizer step writing m->params):
// decoding makes its copy again. The caller must hold m exclusively, as
// training does: no decode may be running (s2s_model_set_tensor is the
// public, checked way to write).
void s2s_model_touch(const s2s_model *m);

void s2s_decode_weights_free(s2s_decode_weights *w);

// The number of weights of m (every tensor's values).
size_t s2s_model_param_count(const s2s_model *m);

#endif
