// Pieces shared by greedy/sampling, beam search and scoring (internal).
#ifndef S2S_DECODING_SEARCH_H
#define S2S_DECODING_SEARCH_H

#include "core/util.h"
#include "decoding/state.h"

typedef struct s2s_order {
    int len, index;  // source length, input position
} s2s_order;

// Sentences sorted by source length, longest first (ties in input order).
s2s_status s2s_sort_sentences(s2s_order **out, const int *len, int n);

// Checks lengths against the model's max_len and ids against the vocab.
s2s_status s2s_check_ids(const s2s_model *m, bool target, const int *const *ids,
                         const int *len, int n);

// Fills st->ids (B, S) and st->src_len for the sentences order[0..B) and
// runs the encoder.
s2s_status s2s_encode_batch(s2s_state *st, const s2s_order *order, int B,
                            const int *const *src, const int *src_len, int64_t S);

// Allocates h for up to `rows` outputs over n_src source rows.
s2s_status s2s_hyp_alloc(s2s_hypothesis *h, const s2s_model *m, int rows, int n_src,
                         bool want_attention);

// Cross-attention maps: the state keeps (L, B, H, R, S) for R rows per
// sentence; a map buffer is (L, H, rows, n_src). Copies `count` rows of
// sentence b starting at state row r0 into rows t0.. of dst.
void s2s_copy_maps(float *dst, int64_t rows, int64_t n_src, int64_t t0, const s2s_state *st,
                   int64_t b, int64_t B, int64_t R, int64_t S, int64_t r0, int64_t count);

// Shrinks h->cross_attn from (L, H, rows, n_src) to (L, H, n_out, n_src).
void s2s_compact_maps(s2s_hypothesis *h, int rows);

// Tokens a search may produce at step t: never <pad> or <s>, and </s> only
// once min_len tokens are out. Sets the others to -inf in a log-prob row.
void s2s_mask_row(float *logprobs, int64_t V, int64_t t, int min_len);

// Most tokens sentence i may get (</s> included) under p and the model.
int s2s_length_limit(const s2s_decode_params *p, const s2s_model *m, int src_len);

// One batch of B sentences (order[0..B)); results go to out[index * n_best].
s2s_status s2s_greedy_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                            int B, const int *const *src, const int *src_len,
                            s2s_hypothesis *out);
s2s_status s2s_beam_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                          int B, const int *const *src, const int *src_len, s2s_hypothesis *out);

#endif
