// Decoding state (internal): every buffer a forward pass writes, sized
// for the largest batch seen so far and grown in one block when needed.
#ifndef S2S_DECODING_STATE_H
#define S2S_DECODING_STATE_H

#include "layers/transformer.h"
#include "s2s/decode.h"

struct s2s_state {
    const s2s_model *m;
    int64_t cap_b, cap_s, cap_t;  // sizes the block was made for

    float *block;      // every buffer below
    float *x;          // (B, max(S, T), D) residual stream
    s2s_scratch scratch;
    float *memory;     // (B, S, D) encoder output
    float *cross_kv;   // (L_dec, B, S, 2D)
    float *self_kv;    // (L_dec, B, T, 2D)
    float *cross_probs;  // (L_dec, B, H, T, S) when attention is wanted
    float *logits;     // (B, T, V)

    int *ids;          // (B, max(S, T)) token ids of the rows being computed
    int *src_len;      // (B) source lengths with </s>
};

// Makes room for a batch of B sentences, S source rows, T target rows.
s2s_status s2s_state_reserve(s2s_state *st, int64_t B, int64_t S, int64_t T);

// Runs the encoder over st->ids (B, S) with st->src_len, fills st->memory
// and every layer's cross-attention K/V.
s2s_status s2s_encode(s2s_state *st, int64_t B, int64_t S);

// Runs the decoder for rows t0..t0+Tq-1 of each sentence, whose input ids
// are st->ids (B, Tq); leaves log-probabilities... logits (B, Tq, V) in
// st->logits. The self-attention caches must hold positions < t0; the
// layout of the caches is (B, T_alloc, 2D).
s2s_status s2s_decode_rows(s2s_state *st, int64_t B, int64_t S, s2s_dec_pos pos,
                           bool want_attention);

#endif
