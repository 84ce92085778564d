// Training forward and backward pass (internal).
//
// s2s_forward_backward runs the model on a batch keeping every activation
// the backward pass needs, computes the label-smoothed cross-entropy and
// writes d(loss)/d(param) for every parameter into a block laid out like
// the model's parameters (weight w's gradient is at grads + (w - m->params)).
// Every matrix product, forward and backward, goes through s2s_mm /
// s2s_linear (oneDNN).
#ifndef S2S_TRAIN_GRAPH_H
#define S2S_TRAIN_GRAPH_H

#include "core/util.h"
#include "model/model_internal.h"
#include "train/batch.h"

typedef struct s2s_train_opts {
    float dropout;            // embeddings and sublayer outputs (model.dropout)
    float attention_dropout;  // attention weights (model.attention_dropout)
    float label_smoothing;    // train.label_smoothing
    // The guided heads (train.guided), by s2s_head_role. Head r is on when
    // guided[r].weight > 0 and the batch carries its guide
    // (s2s_batch.guide[r]): the loss gains
    //   weight * sum over guided rows (i, q) and key rows k of
    //   -A[i,q,k] log(P[i,q,k] + 1e-6) / b->n_guided[r],
    // P being head `head` of layer `layer`'s attention guided[r].stack (the
    // role's: decoder cross-attention for the alignment, encoder
    // self-attention for coreference), its weights before attention
    // dropout. Zero (the default of a designated initializer) is off.
    s2s_guided_head guided[S2S_HEAD_ROLE_COUNT];
    // What the loss and the guided terms are averaged over instead of the
    // batch's n_tokens and n_guided[r]; 0 (the default) is the batch's own.
    // Data-parallel training gives each rank's share of a global batch the
    // global batch's counts, so that the ranks' gradients add up to the
    // global batch's gradient.
    int norm_tokens, norm_guided[S2S_HEAD_ROLE_COUNT];
} s2s_train_opts;

typedef struct s2s_loss_stats {
    double loss;      // mean over the batch's n_tokens target positions (or norm_tokens)
    double nll;       // mean -log p[gold] (no smoothing), for perplexity
    int n_tokens;
    int n_correct;    // argmax == gold
    // The guided terms by s2s_head_role (weight included), added to `loss`
    // in the gradient but not in `loss` itself; 0 when off or without
    // guided rows.
    double guided[S2S_HEAD_ROLE_COUNT];
    int n_guided[S2S_HEAD_ROLE_COUNT];  // rows each averages over
} s2s_loss_stats;

typedef struct s2s_graph s2s_graph;

// How the graph trades memory and time (train.checkpoint_activations,
// train.compute_type). The defaults (s2s_graph_default_opts) keep every
// activation and multiply in fp32.
typedef struct s2s_graph_opts {
    // Keep only each layer's input (and the dropout generator's state
    // there); the backward pass runs the layer's sublayers again, in one
    // set of activations that every layer shares. The gradients are the
    // plain graph's bit for bit (the same products on the same values).
    bool checkpoint_layers;
    // Every matrix product of both passes (projections, attention, FFN,
    // logits, and their gradients) on bf16 copies of its operands, summed
    // and accumulated in fp32 (s2s_mm_args.bf16); the weights, gradients,
    // softmax, LayerNorm and loss stay fp32.
    bool bf16;
    // 0, or keys per block of exact chunked attention
    // (train/attention_chunked.h): every attention without linear heads
    // keeps one log-sum-exp per query row instead of its weights, and the
    // backward pass computes each block's scores again. The gradients equal
    // the plain graph's within fp32 rounding; the dropout masks are the same.
    int attention_chunk;
    // The runs this graph serves have no guided term of role r
    // (no_guided[r]): the buffers of its head's weights and their gradient
    // (N, T, S) or (N, S, S) are not laid out, and s2s_forward_backward
    // refuses that term.
    bool no_guided[S2S_HEAD_ROLE_COUNT];
} s2s_graph_opts;

s2s_graph_opts s2s_graph_default_opts(void);

// Scratch for training m; grows with the batches it sees.
s2s_status s2s_graph_new(s2s_graph **out, const s2s_model *m);  // default opts
s2s_status s2s_graph_new_opts(s2s_graph **out, const s2s_model *m, const s2s_graph_opts *o);
void s2s_graph_free(s2s_graph *g);

// The graph's arena by part. Activations: the residual stream, LayerNorm
// and FFN values, dropout masks, Q/K/V and contexts, logits (with
// checkpoint_layers: the layers' inputs and one layer's set). Attention:
// the weights (N, H, Tq, Tk) of every attention kept, their dropout copy
// and mask, and the backward pass's gradient of them; with attention_chunk,
// a log-sum-exp per query row instead, the blocks' scratch (N, H, Tq, C)
// and the guided heads' weights (N, T, S) and (N, S, S). Scratch: the rest
// of the backward pass's buffers.
typedef enum s2s_graph_part {
    S2S_GRAPH_ACTIVATIONS,
    S2S_GRAPH_ATTENTION,
    S2S_GRAPH_SCRATCH,
    S2S_GRAPH_PART_COUNT
} s2s_graph_part;

typedef struct s2s_graph_plan_bytes {
    int64_t n, S, T;                      // the batch shape planned for
    size_t bytes[S2S_GRAPH_PART_COUNT];
    size_t total;                         // their sum
} s2s_graph_plan_bytes;

// The bytes a graph of m with options o holds for batches of up to n
// sentences of S source and T target rows (with attention dropout or
// not): the plan s2s_graph_reserve allocates, counted without allocating.
s2s_status s2s_graph_plan(s2s_graph_plan_bytes *out, const s2s_model *m,
                          const s2s_graph_opts *o, int64_t n, int64_t S, int64_t T,
                          bool attention_dropout);
// Grows g's arena to that shape now (batches grow it anyway; this makes
// the first step's allocation the run's).
s2s_status s2s_graph_reserve(s2s_graph *g, int64_t n, int64_t S, int64_t T,
                             bool attention_dropout);
// The bytes g's arena holds now.
size_t s2s_graph_bytes(const s2s_graph *g);

// grads (n_params) = d (loss + the guided terms) / d params (overwritten, not accumulated).
// Dropout masks come from rng (advanced deterministically); with both
// dropouts 0 rng is not used. The tied output weight gets both gradients.
s2s_status s2s_forward_backward(s2s_graph *g, const s2s_batch *b, const s2s_train_opts *o,
                                s2s_rng *rng, float *grads, s2s_loss_stats *stats);

// The loss alone, no dropout (for validation and finite differences).
s2s_status s2s_forward_loss(s2s_graph *g, const s2s_batch *b, float label_smoothing,
                            s2s_loss_stats *stats);

#endif
