// Multi-head scaled dot-product attention (internal): the forward pass
// decoding runs, the training forward with dropout on the weights, and
// the backward pass.
//
// Dimension letters: B sentences, H heads, Dh head width, D = H*Dh,
// Tq query rows, Tk key rows. Head j reads columns [j*Dh, (j+1)*Dh) of
// Q, K and V in place through strided views; nothing is transposed.
#ifndef S2S_LAYERS_ATTENTION_H
#define S2S_LAYERS_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/util.h"
#include "layers/mask.h"
#include "s2s/status.h"

// Rows of a (B, T, ...) activation: row (b, i) starts at p + b*bs + i*rs.
typedef struct s2s_view {
    const float *p;
    int64_t bs, rs;
    // NULL, or the same rows rounded to bf16 at the same offsets (training
    // in bf16 rounds Q, K and V once as they are made): with
    // s2s_attn_shape.bf16 the products read them there.
    const uint16_t *p16;
} s2s_view;

// A writable s2s_view.
typedef struct s2s_rows {
    float *p;
    int64_t bs, rs;
} s2s_rows;

// Build it with designated initialisers only.
typedef struct s2s_attn_shape {
    int64_t batch, heads, head_dim, tq, tk;
    s2s_attn_mask mask;   // which keys each query row sees
    bool bf16;            // both products in bf16 (s2s_mm_args.bf16)
    // NULL, or with bf16 room for the weights (B, H, Tq, Tk) rounded to
    // bf16: s2s_attention_train rounds the weights it multiplies V by into
    // it, and s2s_attention_backward reads them there.
    uint16_t *w16;
    // NULL, or room for one product per sentence instead of one per head:
    // block (B, H, D) for block-diagonal queries when Tq is 1 (head h's row
    // holds zeros outside head h's columns), zero outside those columns on
    // entry (which calls leave so); block_ctx (B, H*Tq, D) for the context
    // of every head over all D columns, of which head h's are kept. Each
    // product does H times the arithmetic in 1/H the calls, which pays
    // where a head's products are a few rows and short (decoding steps):
    // oneDNN's cost there is per call (bench/internal/bench_attention_products.c;
    // the rules in attention.c).
    float *block, *block_ctx;
    // NULL, or (B, H, Tq): what each row of a linear head was divided by,
    // as 1 / (sum + 1e-6) (s2s_normalize_row); training keeps it for the
    // backward pass.
    float *norms;
    // The per-head products on primitives of fixed shapes
    // (s2s_mm_args.fixed) where every operand is a permutation of a dense
    // tensor (no gaps between its rows; oneDNN 2.6 takes its brgemm kernels
    // only then): training's Q, K and V blocks (train/graph.c), whose batch
    // shapes recur from step to step. Not for shapes that follow the input.
    bool fixed;
    // The queries come divided by sqrt(Dh) already (training's: so every
    // per-head product has alpha 1, and the few products of a batch shape
    // share their fixed-shape primitives): the score product scales nothing.
    // A layer with linear heads scales nothing there either
    // (s2s_attention_features).
    bool q_scaled;
} s2s_attn_shape;

// The alpha of the score product Q · K^T: 1/sqrt(Dh), or 1 where the
// queries come scaled already (q_scaled) or the layer has linear heads,
// whose softmax heads' queries s2s_attention_features scales.
float s2s_attention_scale(const s2s_attn_shape *s);

// Linear attention's feature map phi(x) = elu(x) + 1, in place on queries
// or keys as they are projected: in a layer with linear heads
// (s2s_pattern_linear), those heads' queries and keys become phi(q) and
// phi(k), the other heads' queries q / sqrt(Dh), and the score product
// scales nothing. x: (B, T) rows of D = H*Dh.
void s2s_attention_features(s2s_rows x, int64_t B, int64_t T, const s2s_attn_pattern *p,
                            int64_t heads, int64_t head_dim, bool queries);
// Its backward in place on dx (B, T) given its output fx: phi'(x) =
// min(phi(x), 1).
void s2s_attention_features_backward(s2s_rows dx, s2s_view fx, int64_t B, int64_t T,
                                     const s2s_attn_pattern *p, int64_t heads,
                                     int64_t head_dim, bool queries);

// ctx (B, Tq, D) contiguous = concat_h softmax(mask(Q_h·K_h^T / sqrt(Dh))) · V_h
// for a softmax head, and concat_h normalize(mask(Q_h·K_h^T)) · V_h for a
// linear one (its Q and K through s2s_attention_features).
// probs (B, H, Tq, Tk) receives the attention weights (masked ones are 0;
// a row that sees no key is all 0).
s2s_status s2s_attention(float *ctx, float *probs, s2s_view q, s2s_view k, s2s_view v,
                         const s2s_attn_shape *s);

// The two halves of s2s_attention (training puts dropout between them):
// probs (B, H, Tq, Tk) = masked softmax of the scaled scores, and
// ctx (B, Tq, D) = weights (B, H, Tq, Tk) · V per head.
s2s_status s2s_attention_probs(float *probs, s2s_view q, s2s_view k, const s2s_attn_shape *s);
s2s_status s2s_attention_context(float *ctx, const float *weights, s2s_view v,
                                 const s2s_attn_shape *s);

// ---- causal linear attention, a step at a time ----
//
// Linear heads as a recurrence ("Transformers are RNNs", Katharopoulos et
// al. 2020): a head's state S = sum_j phi(k_j) [v_j | 1]^T (Dh, Dh + 1)
// over the positions so far gives a query row phi(q)^T S, whose first Dh
// values over its last (+ 1e-6) are s2s_attention's linear row over those
// keys, at O(Dh^2) a step whatever the length.
//
// One row for each of B sequences: state (B, H, Dh, Dh + 1) += phi(k) [v | 1]^T
// (the row's own key first: a query sees its own position), then
// ctx (B, D) head h = num_h[0..Dh) / (num_h[Dh] + 1e-6) with
// num (B, H, Dh + 1) = phi(q)_h · S_h, scratch. q and k have been through
// s2s_attention_features; q, k and v are rows (b, 0) of their views.
s2s_status s2s_linear_attention_step(float *ctx, float *state, float *num, s2s_view q,
                                     s2s_view k, s2s_view v, int64_t B, int64_t heads,
                                     int64_t head_dim);

// ---- the encoder's fast paths (attention_sparse.c) ----
//
// Self-attention whose every head follows one local, block, strided or
// linear pattern, computed without its (B, H, S, S) weights: local, block
// and strided rows as products of chunks of query rows against the band
// of keys around them (and, strided, of each residue class against
// itself), linear heads as phi(Q) (phi(K)^T V). Time grows as S (local,
// block, linear) or S^2 / stride (strided), not S^2; scratch likewise,
// but for local and block, whose chunks go a cache-sized group at a time
// through a scratch that does not grow with S. The context equals
// s2s_attention's within rounding (tests/test_attention.c).

// Whether s2s_attention_sparse takes s: Tq == Tk, no causal cut, query 0
// at position 0, and every head of the pattern's kind (key padding is
// allowed).
bool s2s_attention_sparse_fits(const s2s_attn_shape *s);

// Whether it also pays for s (the encoder takes it then): a local or
// block row's band (c + 2w keys for a chunk of c rows: c = 32 for windows
// up to 16, 2w beyond; whole blocks of at least 32 rows) is at most half
// the row's S keys; strided and linear always. At 4 heads of 32 and 32
// sentences, 1 thread, local w 16 took 0.98x the
// generic path's time at 64 rows, 0.85x at 96, 0.78x at 128 (where it
// starts) and 0.42x at 256; w 4, 1.1x at 48 rows, 0.95x at 80 (where it
// starts), 0.8x at 100. Strided (stride 64) 0.5-0.7x from 32 rows (the
// generic path hides its keys one by one), linear the same at 32 rows and
// less after.
bool s2s_attention_sparse_pays(const s2s_attn_shape *s);

// Floats of scratch s2s_attention_sparse needs for s (0 when it does not
// fit); SIZE_MAX when that does not fit in a size_t.
size_t s2s_attention_sparse_floats(const s2s_attn_shape *s);

// ctx (B, S, D) contiguous = s2s_attention's context, for s that fits,
// through scratch (s2s_attention_sparse_floats(s) floats). q and k have
// been through s2s_attention_features. The weights are not kept.
s2s_status s2s_attention_sparse(float *ctx, float *scratch, s2s_view q, s2s_view k, s2s_view v,
                                const s2s_attn_shape *s);

// ---- training ----
//
// For one head (S scores, P weights, Pd dropped weights):
//   S = alpha Q K^T (masked)   P = softmax(S)   Pd = drop(P)   O = Pd V
//   dPd = dO V^T   dV = Pd^T dO   dP = drop'(dPd)   dS = P (dP - rowsum(P dP))
// (a linear head: P = S / (rowsum(S) + 1e-6) = S * inv, dS = inv (dP - rowsum(P dP)))
//   dQ = alpha dS K   dK = alpha dS^T Q
// Every product is one batched s2s_mm over (B, H) reading heads in place.

// s2s_attention with dropout p on the weights after the softmax:
// probs (B, H, Tq, Tk) gets the softmax, pdrop (same shape) the dropped
// weights that multiply V, keep (same shape) the mask: s2s_dropout_keeps
// keyed by one draw of rng, element (b, h, i, j) at its place in the
// weights. With p == 0, pdrop may be probs and keep NULL; rng is then not
// used.
s2s_status s2s_attention_train(float *ctx, float *probs, float *pdrop, uint8_t *keep,
                               s2s_view q, s2s_view k, s2s_view v, const s2s_attn_shape *s,
                               float p, s2s_rng *rng);

// What s2s_attention_backward reads besides the shape: the forward pass's
// inputs and kept weights, and the gradient of its output.
typedef struct s2s_attn_saved {
    s2s_view q, k, v;
    const float *probs;   // (B, H, Tq, Tk) softmax
    const float *pdrop;   // after dropout (when p > 0)
    const uint8_t *keep;  // dropout mask (when p > 0)
    const float *norms;   // (B, H, Tq) when the layer has linear heads (s2s_attn_shape)
    float p;              // attention dropout
} s2s_attn_saved;

// Backward of s2s_attention_train given dctx (B, Tq, D) contiguous. dq,
// dk, dv are overwritten through head-strided views shaped like q, k, v
// (they may be column blocks of one (rows, 3D) buffer); dprobs (B, H, Tq,
// Tk) is scratch. When the loss also reads the weights of one head
// directly (guided alignment), dhead (B, Tq, Tk) = d loss / d probs of
// head `head` (before dropout) joins the gradient that comes back through
// dropout and V before the softmax backward; dhead NULL: none. With
// s->bf16 dctx, and then the scores' gradient, are rounded to bf16 once
// each for their two products (s2s_bf16_scratch).
s2s_status s2s_attention_backward(s2s_rows dq, s2s_rows dk, s2s_rows dv, float *dprobs,
                                  const float *dctx, const s2s_attn_saved *f,
                                  const s2s_attn_shape *s, const float *dhead, int64_t head);

#endif
