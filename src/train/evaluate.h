// Evaluation on a dev or test set (internal): validation during training
// and s2s_evaluate share it.
#ifndef S2S_TRAIN_EVALUATE_H
#define S2S_TRAIN_EVALUATE_H

#include "s2s/decode.h"
#include "s2s/train.h"
#include "train/data.h"
#include "train/graph.h"

// Teacher-forced loss (label_smoothing) and token accuracy over batches of
// about batch_tokens, then corpus BLEU and exact match of the translations
// p makes (its best hypothesis) on d, loaded with keep_refs. g and st_dec
// are scratch for m; bb is the caller's batch buffer.
s2s_status s2s_evaluate_dataset(const s2s_model *m, s2s_graph *g, s2s_state *st_dec,
                                s2s_batch_buf *bb, const s2s_dataset *d, int batch_tokens,
                                float label_smoothing, const s2s_decode_params *p,
                                s2s_valid_result *r);

#endif
