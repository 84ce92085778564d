// A training batch (internal): padded id matrices ready for the model.
//
// Dimension letters: N sentences, S source rows (</s> included), T target
// rows (<s> + target as input, target + </s> as output).
#ifndef S2S_TRAIN_BATCH_H
#define S2S_TRAIN_BATCH_H

#include <stdint.h>

#include "s2s/config.h"

typedef struct s2s_batch {
    int n;          // sentences
    int S, T;       // padded lengths
    int *src;       // (N, S) source ids + </s>, padded with <pad>
    int *src_len;   // (N) valid source rows, </s> included
    int *tgt_in;    // (N, T) <s> + target ids, padded with <pad>
    int *tgt_out;   // (N, T) target ids + </s>, padded with <pad> (ignored by the loss)
    int *tgt_len;   // (N) predicted positions, </s> included
    int n_tokens;   // sum of tgt_len: the loss is averaged over these
    int src_tokens; // sum of src_len - n (without </s>), for throughput figures
    // The guides of the guided heads, by s2s_head_role (train.guided);
    // NULL/0 when the data has none. A row of zeros is not guided.
    // S2S_HEAD_ALIGN, (N, T, S): row j of sentence i is the gold alignment
    // of target token j (the one decoder row j predicts) as a distribution
    // over source rows 0..src_len-2, or </s> for an unaligned token (zeros:
    // no links, </s>, padding).
    // S2S_HEAD_COREF, (N, S, S): row p of sentence i is the gold antecedent
    // of source token p (a pronoun) as a distribution over source rows
    // 0..src_len-2 (zeros: not a pronoun, or no link).
    float *guide[S2S_HEAD_ROLE_COUNT];
    int n_guided[S2S_HEAD_ROLE_COUNT];  // rows of guide[r] that are not all zero
} s2s_batch;

#endif
