// The gradient norm of each attention and feed-forward matrix (internal):
// the training log's "grad_norms" (train_log.c), written every
// train.grad_norms_every steps.
//
// The matrices are the model's tensors of kind S2S_PARAM_MATRIX inside a
// layer: "<stack>.layers.<l>.<attention>.{q,k,v,out}_proj.weight" and
// "<stack>.layers.<l>.ffn.{fc1,fc2}.weight" (docs/model-format.md), so the
// count is encoder_layers * (4 * attentions + 2) + decoder_layers * (4 *
// attentions + 2) for the layers' attentions (1 in the encoder, 2 in the
// decoder of the usual model). Q, K and V are three tensors in the file
// and three slices of one stacked block in memory: each gets its own norm.
// Each key is the tensor's name without ".weight".
#ifndef S2S_TRAIN_GRAD_NORMS_H
#define S2S_TRAIN_GRAD_NORMS_H

#include "model/model_internal.h"

typedef struct s2s_grad_norms {
    int n;               // matrices
    const char **name;   // (n) the tensor names, borrowed from the model
    size_t *off, *size;  // (n) each one's place in the parameter block
    double *norm;        // (n) filled by s2s_grad_norms_fill
} s2s_grad_norms;

// The matrices of m, in file order. S2S_ERR_NOMEM.
s2s_status s2s_grad_norms_init(s2s_grad_norms *g, const s2s_model *m);
// The L2 norm of each matrix's slice of grads (m->n_params floats, in the
// parameter block's order), summed in double.
void s2s_grad_norms_fill(s2s_grad_norms *g, const float *grads);
void s2s_grad_norms_free(s2s_grad_norms *g);

#endif
