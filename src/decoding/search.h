// Pieces shared by greedy/sampling, beam search and scoring (internal).
// The entry points (translate.c) call down into these; nothing here calls
// back up.
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

// Which maps p asks for (S2S_MAPS_* bits).
unsigned s2s_maps_wanted(const s2s_decode_params *p);

// Fills st->ids (B, S) and st->src_len for the sentences order[0..B) and
// runs the encoder (keeping its attention maps with maps).
s2s_status s2s_encode_batch(s2s_state *st, const s2s_order *order, int B,
                            const int *const *src, const int *src_len, int64_t S, bool maps);

// The start both searches share (greedy.c, beam.c).
typedef struct s2s_search_start {
    int64_t S, T;        // the longest source with </s>; the largest target limit
    unsigned maps;       // the maps p asks for (S2S_MAPS_* bits)
    unsigned step_maps;  // the maps each step writes: maps, and cross-attention
                         // when no_immediate_repeat reads the source token a <unk> copies
    int copy_layer, copy_head;  // the plane that tells it (s2s_copy_plane)
} s2s_search_start;

// Fills *s for the batch order[0..B) of K sequences a sentence, reserves
// the state for it and encodes the sources (with their self-attention maps
// when p asks for them).
s2s_status s2s_search_begin(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                            int B, int K, const int *const *src, const int *src_len,
                            s2s_search_start *s);

// Allocates h for up to `rows` outputs over n_src source rows, with the
// maps asked for (S2S_MAPS_* bits).
s2s_status s2s_hyp_alloc(s2s_hypothesis *h, const s2s_model *m, int rows, int n_src,
                         unsigned maps);

// Attention maps in the state are (L, NB, H, R, src_cols): R query rows for
// each of NB sentences or sequences. A hypothesis keeps (L, H, rows, cols).
typedef struct s2s_map_src {
    const float *p;
    int64_t layers, nb, heads, r, cols;
} s2s_map_src;

// Copies `count` rows of entry b, from state row r0, into rows t0.. of
// dst (rows x cols): min(cols, src.cols) values a row.
void s2s_copy_maps(float *dst, int64_t rows, int64_t cols, int64_t t0, s2s_map_src src,
                   int64_t b, int64_t r0, int64_t count);

// Shrinks the maps of h from `rows` allocated rows (and, for self_attn,
// columns) to n_out.
void s2s_compact_maps(s2s_hypothesis *h, int rows);

// Copies sentence b's encoder maps from the state into h->enc_attn.
void s2s_copy_encoder_maps(s2s_hypothesis *h, const s2s_state *st, int64_t b, int64_t B,
                           int64_t S);

// Tokens a search may produce at step t: never <pad> or <s>, and </s> only
// once min_len tokens are out. Sets the others to -inf in a log-prob row.
void s2s_mask_row(float *logprobs, int64_t V, int64_t t, int min_len);

// NaN log-probs (from non-finite weights or activations) become -inf, so
// that no search picks them. Returns whether any token of the row is still
// finite; when none is, the search fails with s2s_not_finite.
bool s2s_finite_row(float *logprobs, int64_t V);
// S2S_ERR_INVALID: sentence (from 1) has no finite log-prob at step t.
s2s_status s2s_not_finite(int sentence, int64_t t);

// The repetition guard (s2s/decode.h) on one row of raw logits, for a
// hypothesis holding prev[0..t): repetition_penalty on each distinct id of
// prev, then -inf on each token that would repeat an n-gram of
// no_repeat_ngram_size. A no-op with both off.
void s2s_guard_row(float *logits, const int *prev, int64_t t, const s2s_decode_params *p);
static inline bool s2s_guard_on(const s2s_decode_params *p) {
    return p->decode.repetition_penalty != 1.0f || p->decode.no_repeat_ngram_size > 0;
}

// What no_immediate_repeat needs of a hypothesis besides its tokens.
typedef struct s2s_repeat_ctx {
    bool src_repeats;  // its source holds an immediate repeat (s2s_source_repeats)
    int last_copy;     // the source token its last output copies when that is a <unk>, else -1
    int copy_now;      // the source token a <unk> at this step copies (-1: not known)
} s2s_repeat_ctx;

// no_immediate_repeat (s2s/decode.h) for a hypothesis holding prev[0..t):
// -inf on the immediate repeat it forbids, if any, in a row of log-probs
// or of logits whose log-sum-exp is taken. A mask, as s2s_mask_row: the
// log-probs of the other tokens stay the model's, so that a translation's
// scores are those s2s_score gives it. A no-op when off.
void s2s_mask_repeat(float *row, const int *prev, int64_t t, const s2s_decode_params *p,
                     const s2s_repeat_ctx *r);

// Whether ids[0..n) holds two equal adjacent tokens other than <unk>: the
// immediate repeat that lets a translation repeat a token. Source and
// target vocabularies differ, so which word repeats is not compared; two
// <unk>s are two unknown words, not known to be one.
bool s2s_source_repeats(const int *ids, int n);

// The cross-attention plane that says which source token a <unk> copies
// (replace_unknowns): the model's alignment head, else layer = head = -1,
// the sum of every layer and head.
void s2s_copy_plane(const s2s_model *m, int *layer, int *head);

// The source token, from 0 to n_src - 1, with the most weight in one query
// row of cross-attention maps: in the plane (layer, head), a negative
// layer or head summing them all (in layer, then head order); the first of
// equal ones; -1 when n_src < 1. row is that query row's in layer 0, head
// 0; layer l, head h's starts at row + l * layer_stride + h * head_stride.
int s2s_copied_source(const float *row, int64_t layer_stride, int64_t head_stride, int layers,
                      int heads, int layer, int head, int n_src);

// Most tokens sentence i may get (</s> included) under p and the model.
int s2s_length_limit(const s2s_decode_params *p, const s2s_model *m, int src_len);

// A continuation beam search ranks.
typedef struct s2s_beam_cand {
    float score;  // total log-prob with this token
    int seq, token;
} s2s_beam_cand;

// Offers (base + (row[v] - lse), seq, v) for every v whose log-prob
// row[v] - lse is finite (not -inf, not NaN), v ascending, to
// list[0..*n), sorted by score, best first, of at most cap entries; an
// entry enters only by beating a kept one, so ties keep the earlier offer
// (earlier seq, then token) first. With row a row of logits and lse its
// s2s_log_sum_exp_row, that is log_softmax's log-probs, to the bit,
// without writing them.
void s2s_keep_best_row(s2s_beam_cand *list, int *n, int cap, const float *row, int64_t V,
                       float lse, float base, int seq);

// One batch of B sentences (order[0..B)); results go to out[index * n_best].
s2s_status s2s_greedy_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                            int B, const int *const *src, const int *src_len,
                            s2s_hypothesis *out);
s2s_status s2s_beam_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                          int B, const int *const *src, const int *src_len, s2s_hypothesis *out);
// Forced decoding of one batch: out[index] gets the log-probs of tgt.
s2s_status s2s_score_batch(s2s_state *st, const s2s_decode_params *p, const s2s_order *order,
                           int B, const int *const *src, const int *src_len,
                           const int *const *tgt, const int *tgt_len, s2s_hypothesis *out);

#endif
