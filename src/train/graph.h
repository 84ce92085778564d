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
    // Guided alignment (train.guided_alignment), on when guided_weight > 0
    // and the batch carries alignments (s2s_batch.align): the loss gains
    //   guided_weight * sum over guided rows (i, j) and source rows s of
    //   -A[i,j,s] log(P[i,j,s] + 1e-6) / b->n_guided,
    // P being head guided_head of decoder layer guided_layer's
    // cross-attention weights before attention dropout. Zero (the default
    // of a designated initializer) is off.
    float guided_weight;
    int guided_layer;         // from 0, < decoder_layers
    int guided_head;          // from 0, < heads
    // Guided coreference (train.guided_coref), on when coref_weight > 0 and
    // the batch carries coreference rows (s2s_batch.coref): the loss gains
    //   coref_weight * sum over guided rows (i, p) and source rows a of
    //   -C[i,p,a] log(P[i,p,a] + 1e-6) / b->n_coref,
    // P being head coref_head of encoder layer coref_layer's self-attention
    // weights before attention dropout.
    float coref_weight;
    int coref_layer;          // from 0, < encoder_layers
    int coref_head;           // from 0, < heads
    // What the loss, the guided alignment and the guided coreference terms
    // are averaged over instead of the batch's n_tokens, n_guided and
    // n_coref; 0 (the default) is the batch's own. Data-parallel training
    // gives each rank's share of a global batch the global batch's counts,
    // so that the ranks' gradients add up to the global batch's gradient.
    int norm_tokens, norm_guided, norm_coref;
} s2s_train_opts;

typedef struct s2s_loss_stats {
    double loss;      // mean over the batch's n_tokens target positions (or norm_tokens)
    double nll;       // mean -log p[gold] (no smoothing), for perplexity
    int n_tokens;
    int n_correct;    // argmax == gold
    // The guided alignment term (weight included), added to `loss` in the
    // gradient but not in `loss` itself; 0 when off or without guided rows.
    double guided;
    int n_guided;     // rows it averages over
    double coref;     // the guided coreference term, likewise
    int n_coref;      // pronoun rows it averages over
} s2s_loss_stats;

typedef struct s2s_graph s2s_graph;

// Scratch for training m; grows with the batches it sees.
s2s_status s2s_graph_new(s2s_graph **out, const s2s_model *m);
void s2s_graph_free(s2s_graph *g);

// grads (n_params) = d (loss + guided + coref) / d params (overwritten, not accumulated).
// Dropout masks come from rng (advanced deterministically); with both
// dropouts 0 rng is not used. The tied output weight gets both gradients.
s2s_status s2s_forward_backward(s2s_graph *g, const s2s_batch *b, const s2s_train_opts *o,
                                s2s_rng *rng, float *grads, s2s_loss_stats *stats);

// The loss alone, no dropout (for validation and finite differences).
s2s_status s2s_forward_loss(s2s_graph *g, const s2s_batch *b, float label_smoothing,
                            s2s_loss_stats *stats);

#endif
